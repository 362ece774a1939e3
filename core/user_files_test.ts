import { z } from "zod";
import { join } from "node:path";
import { assert, assertEquals, assertRejects, assertThrows } from "../tests/assert.ts";
import {
  ConfigError,
  fieldPath,
  parseUserFile,
  readUserFile,
  readUserFileSync,
  validateUserFile,
  writeUserFile,
} from "./user_files.ts";

const SCHEMA = z.strictObject({
  $schema: z.string().optional(),
  enabled: z.boolean().default(false),
  memory_percent: z.number().max(100, "must be at most 100").default(90),
  mode: z.enum(["fast", "slow"]).optional(),
  sustain: z.string({ error: "must be a duration such as 30s" }).optional(),
  env: z.record(z.string().regex(/^[A-Z_]+$/, "must match [A-Z_]+"), z.string()).optional(),
  items: z.array(z.strictObject({ name: z.string() })).optional(),
});

/** A temporary folder, removed when `fn` ends. */
async function inTempDir(fn: (dir: string) => Promise<void>): Promise<void> {
  const dir = await Deno.makeTempDir({ prefix: "dock-user-files-" });
  try {
    await fn(dir);
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
}

Deno.test("readUserFile: JSON with comments and trailing commas", async () => {
  await inTempDir(async (dir) => {
    const path = join(dir, "guard.json");
    await Deno.writeTextFile(path, `{\n  // on for the big box\n  "enabled": true, /* why */\n}\n`);
    assertEquals(await readUserFile(path, SCHEMA, { missing: "absent" }), {
      enabled: true,
      memory_percent: 90,
    });
    assertEquals(readUserFileSync(path, SCHEMA, { missing: "absent" }), {
      enabled: true,
      memory_percent: 90,
    });
  });
});

Deno.test("readUserFile: a missing file is absent or the schema's defaults, as the caller says", async () => {
  await inTempDir(async (dir) => {
    const path = join(dir, "nope", "guard.json");
    assertEquals(await readUserFile(path, SCHEMA, { missing: "absent" }), undefined);
    assertEquals(await readUserFile(path, SCHEMA, { missing: "default" }), {
      enabled: false,
      memory_percent: 90,
    });
    assertEquals(readUserFileSync(path, SCHEMA, { missing: "absent" }), undefined);
    assertEquals(readUserFileSync(path, SCHEMA, { missing: "default" }), {
      enabled: false,
      memory_percent: 90,
    });
  });
});

Deno.test("readUserFile: a file that cannot be read is an error naming it", async () => {
  await inTempDir(async (dir) => {
    const path = join(dir, "guard.json");
    await Deno.mkdir(path);
    const error = await assertRejects(
      () => readUserFile(path, SCHEMA, { missing: "default", code: "invalid_guard" }),
      ConfigError,
      `${path}: cannot be read`,
    ) as ConfigError;
    assertEquals([error.code, error.status], ["invalid_guard", 422]);
    assertThrows(
      () => readUserFileSync(path, SCHEMA, { missing: "absent" }),
      ConfigError,
      `${path}: cannot be read`,
    );
  });
});

Deno.test("readUserFile: a syntax error names the file, line and column", async () => {
  await inTempDir(async (dir) => {
    const path = join(dir, "guard.json");
    await Deno.writeTextFile(path, `{\n  "enabled": true\n  "memory_percent": 80\n}`);
    const error = await assertRejects(
      () => readUserFile(path, SCHEMA, { missing: "absent", code: "invalid_guard" }),
      ConfigError,
    ) as ConfigError;
    assertEquals(error.message, `${path}:3:3: expected ',' or a closing bracket, found "memory_percent"`);
    assertEquals(error.code, "invalid_guard");
    assertEquals([error.detail?.file, error.detail?.field, error.detail?.line, error.detail?.column], [
      path,
      "",
      3,
      3,
    ]);
    await Deno.writeTextFile(path, "");
    assertThrows(
      () => readUserFileSync(path, SCHEMA, { missing: "default" }),
      ConfigError,
      `${path}:1:1: expected a value, found the end of the file`,
    );
  });
});

Deno.test("readUserFile: a wrong field is one error shape, naming file, field and value", async () => {
  await inTempDir(async (dir) => {
    const path = join(dir, "guard.json");
    await Deno.writeTextFile(path, `{ "memory_percent": 120 }`);
    const error = await assertRejects(
      () => readUserFile(path, SCHEMA, { missing: "default", code: "invalid_guard" }),
      ConfigError,
    ) as ConfigError;
    assertEquals(error.message, `${path}: memory_percent: must be at most 100, got 120`);
    assertEquals(error.name, "ConfigError");
    assertEquals([error.code, error.status], ["invalid_guard", 422]);
    const problem = { file: path, field: "memory_percent", message: "must be at most 100, got 120" };
    assertEquals(error.detail, { file: path, field: "memory_percent", problems: [problem] });
    assertEquals(error.problems, [problem]);
  });
});

Deno.test("validateUserFile: unknown fields are refused with a did-you-mean, or the known fields", () => {
  assertThrows(
    () => validateUserFile({ enabld: true }, "f.json", SCHEMA),
    ConfigError,
    'f.json: enabld: unknown field (did you mean "enabled"?)',
  );
  // Two letters swapped count as one slip.
  assertThrows(
    () => validateUserFile({ mdoe: "fast" }, "f.json", SCHEMA),
    ConfigError,
    'f.json: mdoe: unknown field (did you mean "mode"?)',
  );
  // $schema is allowed but never offered.
  assertThrows(
    () => validateUserFile({ colour: "red" }, "f.json", SCHEMA),
    ConfigError,
    "f.json: colour: unknown field; known fields: enabled, memory_percent, mode, sustain, env, items",
  );
  assertThrows(
    () => validateUserFile({ items: [{ name: "a", nme: "b" }] }, "f.json", SCHEMA),
    ConfigError,
    'f.json: items[0].nme: unknown field (did you mean "name"?)',
  );
});

Deno.test("validateUserFile: house wording for types and choices; a schema's own message wins", () => {
  const first = (value: unknown) =>
    (assertThrows(() => validateUserFile(value, "f", SCHEMA), ConfigError) as ConfigError).problems[0]
      .message;
  assertEquals(first({ enabled: "yes" }), 'must be true or false, got "yes"');
  assertEquals(first({ memory_percent: "90" }), 'must be a number, got "90"');
  assertEquals(first({ mode: "medium" }), 'must be one of fast, slow, got "medium"');
  assertEquals(first({ sustain: 30 }), "must be a duration such as 30s, got 30");
  assertEquals(first({ env: { "a-b": "x" } }), 'must match [A-Z_]+, got "a-b"');
  assertEquals(first({ items: [{}] }), "required");
  assertEquals(first([]), "must be an object, got []");
});

Deno.test("validateUserFile: every problem, in document order; a body is a 400", () => {
  const error = assertThrows(
    () =>
      validateUserFile({ mode: "x", enabled: 1, extra: true }, "body", SCHEMA, {
        code: "invalid_guard",
        status: 400,
      }),
    ConfigError,
  ) as ConfigError;
  assertEquals(error.problems.map((p) => p.field), ["mode", "enabled", "extra"]);
  assertEquals(error.message, 'body: mode: must be one of fast, slow, got "x" (and 2 more problems)');
  assertEquals([error.code, error.status], ["invalid_guard", 400]);
});

Deno.test("parseUserFile: parses and checks text", () => {
  assertEquals(parseUserFile(`{ "mode": "fast", }`, "f", SCHEMA), {
    enabled: false,
    memory_percent: 90,
    mode: "fast",
  });
  assertThrows(
    () => parseUserFile(`{ "mode": 1 }`, "f", SCHEMA),
    ConfigError,
    "f: mode: must be one of fast, slow",
  );
});

Deno.test("writeUserFile: creates the folder, writes pretty JSON atomically with the mode asked", async () => {
  await inTempDir(async (dir) => {
    const path = join(dir, "a", "b", "env.json");
    await writeUserFile(path, { env: { A: "1" } }, { mode: 0o600, dirMode: 0o700 });
    assertEquals(await Deno.readTextFile(path), '{\n  "env": {\n    "A": "1"\n  }\n}\n');
    if (Deno.build.os !== "windows") {
      assertEquals((await Deno.stat(path)).mode! & 0o777, 0o600);
      assertEquals((await Deno.stat(join(dir, "a"))).mode! & 0o777, 0o700);
    }
    await writeUserFile(path, { env: {} });
    const names = [];
    for await (const entry of Deno.readDir(join(dir, "a", "b"))) names.push(entry.name);
    assertEquals(names, ["env.json"], "no temporary file left behind");
    assert((await Deno.readTextFile(path)).endsWith("}\n"));
  });
});

Deno.test("fieldPath: dots for names, brackets for indexes and odd keys", () => {
  assertEquals(fieldPath(["services", 2, "name"]), "services[2].name");
  assertEquals(fieldPath(["env", "FOO"]), "env.FOO");
  assertEquals(fieldPath(["files", "bin/setup.sh"]), 'files["bin/setup.sh"]');
  assertEquals(fieldPath([]), "");
});

Deno.test("a NUL or an unpaired surrogate anywhere in a user file is a problem naming the field", () => {
  const error = assertThrows(
    () => validateUserFile({ env: { A: "x\0", B: "ok" }, items: [{ name: "\ud800" }] }, "f.json", SCHEMA),
    ConfigError,
  ) as ConfigError;
  assertEquals(error.problems.map((p) => p.field), ["env.A", "items[0].name"]);
  assert(error.problems[0].message.includes("NUL"), error.problems[0].message);
  assert(error.problems[1].message.includes("unpaired surrogate"), error.problems[1].message);
  // A key too.
  assertThrows(
    () => validateUserFile({ env: { "A\0": "x" } }, "f.json", SCHEMA),
    ConfigError,
    'env["A\\u0000"]',
  );
});

Deno.test("drop: a poisoned value where the reader allows it is dropped and reported; the rest applies", () => {
  const reported: string[] = [];
  const drop = {
    where: (path: readonly PropertyKey[]) => path[0] === "env",
    report: (problems: { file: string; field: string }[]) =>
      reported.push(...problems.map((p) => `${p.file}: ${p.field}`)),
  };
  assertEquals(
    validateUserFile({ enabled: true, env: { A: "1", B: "x\0y" } }, "f.json", SCHEMA, { drop }),
    { enabled: true, memory_percent: 90, env: { A: "1" } },
  );
  assertEquals(reported, ["f.json: env.B"]);
  // Anywhere else it still refuses the file, and a dropped value is listed with the other problems.
  const error = assertThrows(
    () => validateUserFile({ env: { B: "\0" }, items: [{ name: "\0" }] }, "f.json", SCHEMA, { drop }),
    ConfigError,
  ) as ConfigError;
  assertEquals(error.problems.map((p) => p.field), ["items[0].name", "env.B"]);
  assertEquals(reported.length, 1);
});

Deno.test("readUserFile: a file that is not UTF-8 is refused naming the line", async () => {
  await inTempDir(async (dir) => {
    const path = join(dir, "guard.json");
    const bytes = new TextEncoder().encode('{\n  "mode": "fast",\n  "sustain": "30s?"\n}\n');
    bytes[bytes.indexOf(0x3f)] = 0xff; // the "?" becomes a byte no UTF-8 text holds
    await Deno.writeFile(path, bytes);
    const error = await assertRejects(
      () => readUserFile(path, SCHEMA, { missing: "absent" }),
      ConfigError,
      `${path}:3:`,
    ) as ConfigError;
    assert(error.message.endsWith("is not UTF-8 text"), error.message);
    assertThrows(() => readUserFileSync(path, SCHEMA, { missing: "absent" }), ConfigError, "not UTF-8");
  });
});

Deno.test("parseUserFile: a file nested past 64 levels is refused naming where, never a stack overflow", () => {
  const deep = '{ "env": ' + "[".repeat(10_000) + "]".repeat(10_000) + " }";
  assertThrows(
    () => parseUserFile(deep, "env.json", SCHEMA),
    ConfigError,
    "env.json:1:73: nests deeper than 64 levels",
  );
  // Brackets in strings and comments are not nesting.
  const text = `{ // [[[[\n "sustain": "${"[".repeat(100)}" }`;
  assertEquals(parseUserFile(text, "f.json", SCHEMA).sustain, "[".repeat(100));
});
