import { assert, assertEquals, assertRejects } from "../tests/assert.ts";
import { BoxClient } from "./box.ts";
import { DockError, TransportError } from "./errors.ts";

/** A stand-in box that answers `POST …/send` with the statuses given, in turn, and records the keys. */
function standIn(statuses: number[]) {
  const keys: string[] = [];
  const server = Deno.serve({ hostname: "127.0.0.1", port: 0, onListen: () => {} }, async (request) => {
    const body = await request.json();
    keys.push(body.key);
    const status = statuses[Math.min(keys.length - 1, statuses.length - 1)];
    if (status === 200) return Response.json({ name: "s1", agent_state: "idle", exited: false });
    return Response.json(
      { error: { code: status === 502 ? "box_failed" : "box_unreachable", message: "x" } },
      {
        status,
      },
    );
  });
  const client = new BoxClient({ url: `http://127.0.0.1:${server.addr.port}` });
  return {
    keys,
    client,
    async [Symbol.asyncDispose]() {
      client.close();
      await server.shutdown();
    },
  };
}

Deno.test("sendOnce asks again with the same key after a 502, and after a 503 that follows one", async () => {
  await using box = standIn([502, 503, 200]);
  const session = await box.client.sendOnce("s1", "hello", { delayMs: 1 });
  assertEquals(session.name, "s1");
  assertEquals(box.keys.length, 3);
  assert(box.keys[0].startsWith("once-"), box.keys[0]);
  assertEquals(new Set(box.keys).size, 1, "one key for every attempt");
});

Deno.test("sendOnce throws a first 503 at once: nothing reached the box", async () => {
  await using box = standIn([503, 200]);
  const error = await assertRejects(
    () => box.client.sendOnce("s1", "hello", { delayMs: 1 }),
    DockError,
  ) as DockError;
  assertEquals(error.status, 503);
  assertEquals(box.keys.length, 1);
});

Deno.test("sendOnce gives up with send_unconfirmed and the key to send again", async () => {
  await using box = standIn([502]);
  const error = await assertRejects(
    () => box.client.sendOnce("s1", "hello", { delayMs: 1, retries: 2 }),
    DockError,
  ) as DockError;
  assertEquals([error.status, error.code], [502, "send_unconfirmed"]);
  assertEquals(box.keys.length, 3);
  assertEquals((error.detail as { key: string }).key, box.keys[0]);
  assert(error.message.includes(box.keys[0]));
});

Deno.test("keys and answer retry as sendOnce does, each with its own key's prefix and its own words", async () => {
  await using box = standIn([502, 200]);
  await box.client.keys("s1", ["y"], { delayMs: 1 });
  assertEquals(box.keys.length, 2);
  assert(box.keys[0].startsWith("keys-") && box.keys[1] === box.keys[0], box.keys.join());
  await using stuck = standIn([502]);
  const error = await assertRejects(
    () => stuck.client.answer("s1", "yes", { delayMs: 1, retries: 1 }),
    DockError,
  ) as DockError;
  assertEquals([error.code, stuck.keys.length], ["send_unconfirmed", 2]);
  assert(stuck.keys[0].startsWith("answer-"), stuck.keys[0]);
  assert(error.message.startsWith("the box did not confirm the answer after 2 tries"), error.message);
});

Deno.test("sendOnce: each call has its own key; a 4xx is thrown as it is", async () => {
  await using box = standIn([200]);
  await box.client.sendOnce("s1", "a");
  await box.client.sendOnce("s1", "b");
  assertEquals(new Set(box.keys).size, 2);
  await using refused = standIn([403]);
  const error = await assertRejects(
    () => refused.client.sendOnce("s1", "c", { delayMs: 1 }),
    DockError,
  ) as DockError;
  assertEquals(error.status, 403);
  assertEquals(refused.keys.length, 1);
});

/** Reads one HTTP request from `conn` (head and a content-length body); returns its body. */
async function readRequest(conn: Deno.Conn): Promise<string> {
  const decoder = new TextDecoder();
  const buffer = new Uint8Array(64 * 1024);
  let text = "";
  while (true) {
    const count = await conn.read(buffer);
    if (count === null) return "";
    text += decoder.decode(buffer.subarray(0, count));
    const end = text.indexOf("\r\n\r\n");
    if (end < 0) continue;
    const length = Number(/content-length: *(\d+)/i.exec(text.slice(0, end))?.[1] ?? 0);
    if (text.length >= end + 4 + length) return text.slice(end + 4, end + 4 + length);
  }
}

Deno.test("sendOnce asks again with the same key when the connection broke after the request went out", async () => {
  // The first connection reads the prompt and hangs up unanswered; the next ones answer.
  const keys: string[] = [];
  const listener = Deno.listen({ hostname: "127.0.0.1", port: 0 });
  const serving = (async () => {
    for await (const conn of listener) {
      try {
        keys.push(JSON.parse(await readRequest(conn)).key);
        if (keys.length > 1) {
          const body = JSON.stringify({ name: "s1", agent_state: "idle", exited: false });
          await conn.write(new TextEncoder().encode(
            `HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: ${body.length}\r\n` +
              `connection: close\r\n\r\n${body}`,
          ));
        }
      } finally {
        conn.close();
      }
    }
  })();
  const client = new BoxClient({ url: `http://127.0.0.1:${(listener.addr as Deno.NetAddr).port}` });
  try {
    const session = await client.sendOnce("s1", "hello", { delayMs: 1 });
    assertEquals(session.name, "s1");
    assertEquals(keys.length, 2);
    assertEquals(new Set(keys).size, 1, "one key for every attempt");
  } finally {
    client.close();
    listener.close();
    await serving.catch(() => {});
  }
});

Deno.test("sendOnce throws a refused connection at once: nothing was sent", async () => {
  const listener = Deno.listen({ hostname: "127.0.0.1", port: 0 });
  const port = (listener.addr as Deno.NetAddr).port;
  listener.close();
  const client = new BoxClient({ url: `http://127.0.0.1:${port}` });
  try {
    const error = await assertRejects(() => client.sendOnce("s1", "hello", { delayMs: 1 }), TransportError);
    assertEquals((error as TransportError).neverSent, true);
  } finally {
    client.close();
  }
});

/** A box older than `unless_waiting`: refuses the field as unknown, and holds `s1` in `state`/`reason`. */
function olderBox(state: string, reason: string | null) {
  const typed: unknown[] = [];
  const server = Deno.serve({ hostname: "127.0.0.1", port: 0, onListen: () => {} }, async (request) => {
    const session = { name: "s1", agent: "claude", agent_state: state, reason, exited: false };
    if (request.method === "GET") return Response.json(session);
    const body = await request.json();
    if ("unless_waiting" in body) {
      return Response.json({
        error: { code: "invalid_request", message: "unless_waiting: unknown field", field: "unless_waiting" },
      }, { status: 400 });
    }
    typed.push(body);
    return Response.json(session);
  });
  const client = new BoxClient({ url: `http://127.0.0.1:${server.addr.port}` });
  return {
    typed,
    client,
    async [Symbol.asyncDispose]() {
      client.close();
      await server.shutdown();
    },
  };
}

Deno.test("send unlessWaiting to a box older than the field: its session read first, refused while it waits on a permission prompt", async () => {
  {
    await using box = olderBox("waiting", "permission");
    const error = await assertRejects(
      () => box.client.sendOnce("s1", "y", { unlessWaiting: "permission" }),
      DockError,
    ) as DockError;
    assertEquals([error.status, error.code], [409, "permission_prompt"]);
    assertEquals(box.typed, []);
  }
  {
    await using box = olderBox("running", null);
    await box.client.sendOnce("s1", "go on", { unlessWaiting: "permission", key: "k" });
    assertEquals(box.typed, [{ text: "go on", key: "k" }], "sent without the field it does not know");
  }
});
