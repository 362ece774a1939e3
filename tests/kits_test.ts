/**
 * Whole-system tests of kits (issue 16): on a real box, a kit applied to a location becomes its kit
 * layer and a folder of files (`DOCK_KIT_DIR`), refused when a path or its config is wrong; through the
 * laptop agent, the library under `~/.dock/kits/`: add, preview, apply, installed (older versions
 * flagged), update, remove, rm, and the CLI.
 */
import { join } from "node:path";
import { assert, assertEquals, assertRejects, assertStringIncludes } from "./assert.ts";
import { DockError } from "../client/errors.ts";
import type { Kit } from "../client/wire.ts";
import { makeDirs, makeRepo, startBox, waitForEvent } from "./harness.ts";

const KIT: Kit = {
  id: "node-app",
  name: "Node app",
  version: "1.2.0",
  requires: [{ tool: "sh" }, { tool: "no-such-tool-here", hint: "apt install no-such-tool-here" }],
  config: { env: { FROM_KIT: "yes", SHARED: "kit" }, setup: "sh $DOCK_KIT_DIR/bin/setup.sh" },
  files: {
    "bin/setup.sh": "#!/bin/sh\necho kit setup\n",
    "templates/README.md": "# from the kit\n",
  },
};

Deno.test("a kit on a box: its layer in the merge, its files at DOCK_KIT_DIR, refused when wrong, removed whole", async () => {
  const dirs = await makeDirs();
  await using box = await startBox({ dirs });
  const { client } = box;
  const repo = await makeRepo(join(dirs.home, "work"), "app", {
    ".dock/config.json": JSON.stringify({ env: { SHARED: "repo", FROM_REPO: "yes" } }),
  });
  await client.addLocation({ name: "app", path: repo });
  await client.putConfig("app", { env: { SHARED: "box" } });
  const mark = (await client.emit({ type: "test.mark" })).id!;

  const installed = await client.applyKit("app", KIT);
  assertEquals([installed.id, installed.version, installed.files], ["node-app", "1.2.0", [
    "bin/setup.sh",
    "templates/README.md",
  ]]);
  assertEquals(installed.missing, [{ tool: "no-such-tool-here", hint: "apt install no-such-tool-here" }]);
  const applied = await waitForEvent(client, (e) => e.type === "kit.applied", { after: mark });
  assertEquals(applied.data?.kit, "node-app");
  await waitForEvent(client, (e) => e.type === "config.changed" && e.data?.layer === "kit", { after: mark });

  // The three layers, merged repository → kit → box.
  const config = await client.config("app");
  assertEquals(config.kit, KIT.config);
  assertEquals(config.effective.env, { SHARED: "box", FROM_REPO: "yes", FROM_KIT: "yes" });
  assertEquals(config.effective.setup, "sh $DOCK_KIT_DIR/bin/setup.sh");

  // Its files where DOCK_KIT_DIR says, the #! one executable.
  const ran = await client.exec({
    location: "app",
    command: 'echo "$DOCK_KIT_DIR"; "$DOCK_KIT_DIR/bin/setup.sh"',
  });
  const [dir, said] = ran.output.trim().split("\n");
  assertEquals([dir, said], [installed.dir, "kit setup"]);
  assertEquals((await Deno.stat(join(dir, "bin/setup.sh"))).mode! & 0o777, 0o755);
  assertEquals((await Deno.stat(join(dir, "templates/README.md"))).mode! & 0o777, 0o644);
  assertEquals((await client.kits()).installed.map((k) => [k.location, k.id]), [["app", "node-app"]]);

  // Applying again replaces the files whole: one gone is gone.
  await client.applyKit("app", {
    ...KIT,
    version: "1.3.0",
    files: { "bin/setup.sh": "#!/bin/sh\necho v2\n" },
  });
  assert(!(await exists(join(dir, "templates/README.md"))), "the old version's files are gone");
  assertEquals(await Deno.readTextFile(join(dir, "bin/setup.sh")), "#!/bin/sh\necho v2\n");

  // Paths that would leave the kit, and a config that breaks a rule: 400 naming the path or the field.
  for (const path of ["../escape.sh", "/etc/passwd", "a/../../b", "./x", "a//b"]) {
    const error = await assertRejects(
      () => client.applyKit("app", { id: "bad", files: { [path]: "x" } }),
      DockError,
    ) as DockError;
    assertEquals(error.status, 400, path);
    assertStringIncludes(error.message, "kit.json");
    assertStringIncludes(error.message, path);
  }
  const badConfig = await assertRejects(
    () => client.applyKit("app", { id: "bad", config: { ports: 11 } }),
    DockError,
  ) as DockError;
  assertEquals(badConfig.status, 400);
  assertStringIncludes(badConfig.message, "kit.json: config.ports");
  const badId = await assertRejects(() => client.applyKit("app", { id: "Bad Id" }), DockError) as DockError;
  assertStringIncludes(badId.message, "kit.json: id");
  assert(!(await exists(join(dirs.state, "escape.sh"))));
  assertEquals(
    (await assertRejects(() => client.applyKit("nope", KIT), DockError) as DockError).status,
    404,
  );

  // Removed: the layer and the files go; a second removal is a 404.
  await client.removeKit("app");
  assertEquals((await client.config("app")).kit, null);
  assert(!(await exists(dir)));
  assertEquals((await assertRejects(() => client.removeKit("app"), DockError) as DockError).status, 404);
});

async function exists(path: string): Promise<boolean> {
  try {
    await Deno.lstat(path);
    return true;
  } catch {
    return false;
  }
}
