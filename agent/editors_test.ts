import { assertEquals, assertRejects } from "../tests/assert.ts";
import { DockError } from "../client/errors.ts";
import type { Boxes } from "./boxes.ts";
import { type EditorsBackend, openEditor } from "./editors.ts";

Deno.test("openEditor: a name dock does not know is an unknown editor (400, the list), not a missing install", async () => {
  const agent = {
    boxes: {} as unknown as Boxes,
    home: "/nowhere",
    path: () => "/nowhere", // nothing installed: the known but missing one says so
  } satisfies EditorsBackend;
  const unknown = await assertRejects(
    () => openEditor(agent, { editor: "bogus", box: "b", location: "l" }),
    DockError,
  ) as DockError;
  assertEquals([unknown.status, unknown.code], [400, "unknown_editor"]);
  assertEquals(unknown.message, "unknown editor 'bogus': dock knows vscode, cursor, windsurf, zed, gateway");
  const missing = await assertRejects(
    () => openEditor(agent, { editor: "zed", box: "b", location: "l" }),
    DockError,
  ) as DockError;
  assertEquals([missing.status, missing.code], [422, "no_editor"]);
});
