import { stripVTControlCharacters as nodeStrip } from "node:util";
import { assertEquals } from "../tests/assert.ts";
import { EventEmitter, process, stripVTControlCharacters } from "./commander_shims.ts";

Deno.test("stripVTControlCharacters removes what node:util's does", () => {
  for (
    const text of [
      "plain",
      "\x1b[1mbold\x1b[22m and \x1b[38;5;245mgrey\x1b[0m",
      "\x1b]8;;https://example.com\x07link\x1b]8;;\x07",
      "\x1b]0;title\x1b\\after",
      "\x9b31mred",
    ]
  ) assertEquals(stripVTControlCharacters(text), nodeStrip(text), JSON.stringify(text));
});

Deno.test("the EventEmitter shim calls listeners in order and counts them", () => {
  const emitter = new EventEmitter();
  const calls: unknown[] = [];
  assertEquals(emitter.emit("option:x", 1), false);
  emitter.on("option:x", (value) => calls.push(["a", value])).on(
    "option:x",
    (value) => calls.push(["b", value]),
  );
  assertEquals(emitter.listenerCount("option:x"), 2);
  assertEquals(emitter.emit("option:x", 7), true);
  assertEquals(calls, [["a", 7], ["b", 7]]);
});

Deno.test("process.env answers `in` and reads as commander expects", () => {
  Deno.env.set("DOCK_SHIM_TEST", "1");
  try {
    assertEquals("DOCK_SHIM_TEST" in process.env, true);
    assertEquals(process.env.DOCK_SHIM_TEST, "1");
  } finally {
    Deno.env.delete("DOCK_SHIM_TEST");
  }
  assertEquals("DOCK_SHIM_TEST" in process.env, false);
});
