import { assertEquals } from "../tests/assert.ts";
import { frames } from "./src/api.ts";
import { fill } from "./src/template.ts";

/** A body delivered in the given pieces, as a network would cut it. */
function body(pieces: string[]): ReadableStream<Uint8Array> {
  const encoder = new TextEncoder();
  return new ReadableStream({
    start(controller) {
      for (const piece of pieces) controller.enqueue(encoder.encode(piece));
      controller.close();
    },
  });
}

Deno.test("app: server-sent frames are read whole, whatever the cuts, comments and multi-byte text", async () => {
  const text = ': connected\n\nid: 1\ndata: {"type":"a"}\n\nid: 2\ndata: {"type":"é"}\n\n: keepalive\n\n';
  const bytes = new TextEncoder().encode(text);
  // Every cut point, including inside the two bytes of "é".
  for (let cut = 1; cut < bytes.length; cut++) {
    const stream = new ReadableStream<Uint8Array>({
      start(controller) {
        controller.enqueue(bytes.slice(0, cut));
        controller.enqueue(bytes.slice(cut));
        controller.close();
      },
    });
    const seen = [];
    for await (const frame of frames(stream)) {
      if (frame.data) seen.push([frame.id, JSON.parse(frame.data).type]);
    }
    assertEquals(seen, [["1", "a"], ["2", "é"]], `cut at ${cut}`);
  }
  const joined = [];
  for await (const frame of frames(body(["data: a\ndata: b\n\n"]))) joined.push(frame.data);
  assertEquals(joined, ["a\nb"]);
});

Deno.test("app: a template's variables fill its text; unknown ones stay as written", () => {
  assertEquals(fill("fix/{{name}}-{{ issue }}", { name: "x", issue: "42" }), "fix/x-42");
  assertEquals(fill("{{nope}} {{name}}", { name: "n" }), "{{nope}} n");
});
