import { assertEquals } from "../tests/assert.ts";
import { selfCommand } from "./self_command.ts";

Deno.test("dock runs itself through its package's launcher when started from one, else this checkout", () => {
  const before = Deno.env.get("DOCK_BIN");
  try {
    Deno.env.delete("DOCK_BIN");
    const checkout = selfCommand("dockd", "serve");
    assertEquals(checkout.slice(0, 4), [Deno.execPath(), "run", "-A", "--cached-only"]);
    assertEquals(checkout.slice(4).map((part) => part.replace(/^.*\/cli\//, "cli/")), [
      "cli/dockd.ts",
      "serve",
    ]);
    Deno.env.set("DOCK_BIN", "/home/me/.dock/bin");
    assertEquals(selfCommand("dock", "agent"), ["/home/me/.dock/bin/dock", "agent"]);
  } finally {
    if (before === undefined) Deno.env.delete("DOCK_BIN");
    else Deno.env.set("DOCK_BIN", before);
  }
});
