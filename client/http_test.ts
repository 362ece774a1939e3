import { assertEquals, assertRejects } from "../tests/assert.ts";
import { Transport } from "./http.ts";

/** A server whose first `cuts` streams break after two events, as a server cutting off a slow client does. */
function sseServer(cuts: number) {
  const resumedFrom: (string | null)[] = [];
  let next = 1;
  const server = Deno.serve({ hostname: "127.0.0.1", port: 0, onListen() {} }, (request) => {
    resumedFrom.push(request.headers.get("last-event-id"));
    const broken = resumedFrom.length <= cuts;
    let sent = 0;
    const body = new ReadableStream<Uint8Array>({
      // One event per pull, so both are written before the stream ends or breaks.
      pull(controller) {
        if (sent++ < 2) {
          controller.enqueue(new TextEncoder().encode(`id: ${next}\ndata: {"n":${next++}}\n\n`));
        } else if (broken) controller.error(new Error("cut off"));
        else controller.close();
      },
    });
    return new Response(body, { headers: { "content-type": "text/event-stream" } });
  });
  return { server, resumedFrom, url: `http://127.0.0.1:${server.addr.port}` };
}

Deno.test("Transport.stream follows a stream that breaks after events again from the last one", async () => {
  const { server, resumedFrom, url } = sseServer(2);
  const transport = new Transport({ url });
  try {
    const seen: number[] = [];
    for await (const message of transport.stream<{ n: number }>("/v1/events", { after: 0 })) {
      seen.push(message.n);
    }
    assertEquals(seen, [1, 2, 3, 4, 5, 6]);
    assertEquals(resumedFrom, ["0", "2", "4"]);
  } finally {
    transport.close();
    await server.shutdown();
  }
});

Deno.test("Transport.stream: a stream that breaks before any event is the caller's error", async () => {
  const server = Deno.serve({ hostname: "127.0.0.1", port: 0, onListen() {} }, () => {
    const body = new ReadableStream<Uint8Array>({
      start: (controller) => controller.error(new Error("cut")),
    });
    return new Response(body, { headers: { "content-type": "text/event-stream" } });
  });
  const transport = new Transport({ url: `http://127.0.0.1:${server.addr.port}` });
  try {
    await assertRejects(async () => {
      for await (const _ of transport.stream("/v1/events")) { /* nothing arrives */ }
    });
  } finally {
    transport.close();
    await server.shutdown();
  }
});
