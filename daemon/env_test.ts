import { assertEquals, assertRejects } from "../tests/assert.ts";
import {
  buildEnv,
  dockVariables,
  expand,
  readEnvFile,
  readEnvForProcesses,
  slug,
  validateEnvFile,
  writeEnvFile,
} from "./env.ts";
import { SecretResolver } from "./secrets.ts";
import { SYSTEM_CLOCK } from "../core/clock.ts";
import { DockError } from "../client/errors.ts";
import { assertThrows } from "../tests/assert.ts";
import { MemoryLog } from "../core/log.ts";

const FACTS = {
  box: "devbox",
  location: "app",
  rootPath: "/w/app",
  name: "Feature-1",
  path: "/d/worktrees/app/Feature-1",
  branch: "feature-1",
  ports: [20010, 20011, 20012],
};

Deno.test("dockVariables names every port and the compatibility variables", () => {
  assertEquals(dockVariables(FACTS, "CONDUCTOR"), {
    DOCK_BOX: "devbox",
    DOCK_LOCATION: "app",
    DOCK_ROOT_PATH: "/w/app",
    DOCK_WORKTREE_PATH: "/d/worktrees/app/Feature-1",
    DOCK_WORKTREE_NAME: "Feature-1",
    DOCK_WORKTREE_SLUG: "feature_1",
    DOCK_BRANCH: "feature-1",
    DOCK_PORT: "20010",
    DOCK_PORT_1: "20011",
    DOCK_PORT_2: "20012",
    CONDUCTOR_ROOT_PATH: "/w/app",
    CONDUCTOR_WORKTREE_PATH: "/d/worktrees/app/Feature-1",
    CONDUCTOR_WORKSPACE_NAME: "Feature-1",
  });
  const off = dockVariables({ ...FACTS, branch: null, kitDir: "/k" }, "");
  assertEquals(Object.keys(off).some((k) => k.startsWith("CONDUCTOR")), false);
  assertEquals([off.DOCK_BRANCH, off.DOCK_KIT_DIR], ["", "/k"]);
});

Deno.test("slug is safe for database names", () => {
  assertEquals(slug("My Feature.2"), "my_feature_2");
  assertEquals(slug("2fast"), "w_2fast");
  assertEquals(slug("---"), "w");
});

Deno.test("expand handles $NAME, ${NAME}, $$ and unknown names", () => {
  const vars = { A: "1", LONG_NAME: "x" };
  assertEquals(expand("$A-${A}-$LONG_NAME-${LONG_NAME}s-$$A-$MISSING.", vars), "1-1-x-xs-$A-.");
  assertEquals(expand("no variables", vars), "no variables");
  assertEquals(expand("$1 stays", vars), "$1 stays");
});

Deno.test("buildEnv layers base, box env, DOCK_* and config env, resolving secrets", async () => {
  const secrets = new SecretResolver({
    clock: SYSTEM_CLOCK,
    env: (name) => ({ TOKEN: "t0k3n" } as Record<string, string>)[name],
  });
  const { env, problems } = await buildEnv({
    base: { PATH: "/bin", HOME: "/h", DOCK_PORT: "stale" },
    boxEnv: { SHARED: "box", SECRET: "env://TOKEN", BROKEN: "env://NOPE" },
    dock: { DOCK_PORT: "20000", DOCK_WORKTREE_NAME: "w" },
    config: {
      URL: "http://localhost:$DOCK_PORT/$SHARED",
      SHARED: "config",
      API: "env://TOKEN",
      AFTER: "$SHARED",
    },
    secrets,
  });
  assertEquals(env.DOCK_PORT, "20000");
  assertEquals(env.URL, "http://localhost:20000/box");
  assertEquals(env.SHARED, "config");
  assertEquals(env.AFTER, "config", "config keys see the ones before them");
  assertEquals([env.SECRET, env.API], ["t0k3n", "t0k3n"]);
  assertEquals("BROKEN" in env, false);
  assertEquals(problems.map((p) => p.key), ["BROKEN"]);
  assertEquals(JSON.stringify(problems).includes("t0k3n"), false);
});

Deno.test("validateEnvFile names the file and the key", () => {
  assertEquals(validateEnvFile({ env: { A_1: "x" } }, "env.json"), { env: { A_1: "x" } });
  assertEquals(validateEnvFile({}, "env.json"), { env: {} });
  const bad = assertThrows(
    () => validateEnvFile({ env: { "9X": "x" } }, "/h/.dock/env.json"),
    DockError,
    "env.9X",
  );
  assertEquals((bad as DockError).status, 422);
  assertThrows(() => validateEnvFile({ env: { A: 1 } }, "f", 400), DockError, "env.A: must be a string");
  assertThrows(() => validateEnvFile([], "f"), DockError, "must be an object");
});

Deno.test("env.json: missing is empty; comments are fine; a misspelt field is refused naming it", async () => {
  const dir = await Deno.makeTempDir();
  try {
    const path = `${dir}/env.json`;
    assertEquals(await readEnvFile(path), {});
    await writeEnvFile(path, { env: { A: "1" } });
    assertEquals(await readEnvFile(path), { A: "1" });
    await Deno.writeTextFile(
      path,
      `{\n  // the token comes from the vault\n  "env": { "TOKEN": "env://T", },\n}`,
    );
    assertEquals(await readEnvFile(path), { TOKEN: "env://T" });
    await Deno.writeTextFile(path, `{ "evn": { "A": "1" } }`);
    const error = await assertRejects(
      () => readEnvFile(path),
      DockError,
      `${path}: evn: unknown field (did you mean "env"?)`,
    ) as DockError;
    assertEquals([error.code, error.status], ["invalid_env", 422]);
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("buildEnv leaves out a value holding a NUL, from any layer, and says which", async () => {
  // A secret whose value holds a NUL: the vault's answer reaches no file check.
  const secrets = new SecretResolver({
    clock: SYSTEM_CLOCK,
    env: (name) => ({ BIN: "a\0b" } as Record<string, string>)[name],
  });
  const { env, problems } = await buildEnv({
    base: { PATH: "/bin" },
    boxEnv: { FROM_VAULT: "env://BIN", KEPT: "1" },
    dock: { DOCK_BOX: "b" },
    config: { RAW: "x\0", ALSO: "$KEPT-2" },
    secrets,
  });
  assertEquals([env.KEPT, env.ALSO, "FROM_VAULT" in env, "RAW" in env], ["1", "1-2", false, false]);
  assertEquals(problems.map((p) => p.key), ["FROM_VAULT", "RAW"]);
  assertEquals(JSON.stringify(problems).includes("a\\u0000b"), false);
});

Deno.test("env.json for a process: a NUL drops that variable, logged once naming file and key; GET env refuses it", async () => {
  const dir = await Deno.makeTempDir();
  const log = new MemoryLog();
  try {
    const path = `${dir}/env.json`;
    await Deno.writeTextFile(path, '{ "env": { "A": "1", "BAD": "x\\u0000y" } }');
    assertEquals(await readEnvForProcesses(path, log), { A: "1" });
    assertEquals(await readEnvForProcesses(path, log), { A: "1" });
    const errors = log.records.map((record) => record.message);
    assertEquals(errors.length, 1, errors.join("\n"));
    assertEquals(errors[0].startsWith(`${path}: env.BAD: must not contain a NUL`), true, errors[0]);
    const error = await assertRejects(() => readEnvFile(path), DockError, `${path}: env.BAD`) as DockError;
    assertEquals([error.code, error.status], ["invalid_env", 422]);
    // Any other problem still refuses the file, for processes too.
    await Deno.writeTextFile(path, '{ "env": { "9A": "1" } }');
    await assertRejects(() => readEnvForProcesses(path, log), DockError, "env.9A");
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});
