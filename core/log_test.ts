import { assertEquals } from "../tests/assert.ts";
import { DockError } from "../client/errors.ts";
import { errorText, formatLine, MemoryLog } from "./log.ts";

Deno.test("formatLine quotes values with spaces and leaves out undefined fields", () => {
  assertEquals(
    formatLine("service stopped", { name: "web", reason: "exit 1 at once", pid: undefined }),
    'service stopped name=web reason="exit 1 at once"',
  );
  assertEquals(formatLine("plain"), "plain");
});

Deno.test("errorText names a DockError's code", () => {
  assertEquals(
    errorText(new DockError("not_found", "no such thing", { status: 404 })),
    "not_found: no such thing",
  );
  assertEquals(errorText(new Error("plain")), "plain");
  assertEquals(errorText("text"), "text");
});

Deno.test("MemoryLog keeps its last records only", () => {
  const log = new MemoryLog(2);
  log.info("a");
  log.warn("b");
  log.error("c", { n: 1 });
  assertEquals(log.records.map((r) => r.message), ["b", "c"]);
  assertEquals(log.records[1], { level: "error", message: "c", fields: { n: 1 } });
});
