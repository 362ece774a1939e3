import { assert, assertEquals, assertRejects } from "../tests/assert.ts";
import { BoxClient } from "./box.ts";
import { DockError } from "./errors.ts";

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
