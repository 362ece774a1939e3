import { assert, assertEquals } from "../tests/assert.ts";
import { MemoryLog } from "../core/log.ts";
import { FakeClock } from "../tests/fake_clock.ts";
import { until } from "../tests/wait.ts";
import { type Lane, LANE_HELLO_BYTES, LANE_HELLO_MS, laneAnswer, Lanes } from "./lanes.ts";
import { MAX_FETCH_BODY } from "./protocol.ts";

const encoder = new TextEncoder();

/** Dials the lanes' port and says `lines` (each a frame). */
async function dial(port: number, ...lines: string[]): Promise<Deno.TcpConn> {
  const conn = await Deno.connect({ hostname: "127.0.0.1", port });
  for (const line of lines) await conn.write(encoder.encode(line + "\n"));
  return conn;
}

/** What the peer says until it closes (null when it says nothing and closes). */
async function readToEnd(conn: Deno.Conn): Promise<string> {
  const chunks: string[] = [];
  const decoder = new TextDecoder();
  const buffer = new Uint8Array(4096);
  for (;;) {
    const n = await conn.read(buffer).catch(() => null);
    if (n === null) break;
    chunks.push(decoder.decode(buffer.subarray(0, n)));
  }
  conn.close();
  return chunks.join("");
}

Deno.test("a lane opens with its ticket's token and carries calls and answers both ways; presented again, a new lane opens", async () => {
  const lanes = new Lanes({ clock: new FakeClock(0), log: new MemoryLog() });
  try {
    // Each lane as its owner hears of it, in order.
    const opened: Promise<Lane>[] = [];
    const next: ((lane: Lane) => void)[] = [];
    for (let i = 0; i < 2; i++) {
      const { promise, resolve } = Promise.withResolvers<Lane>();
      opened.push(promise);
      next.push(resolve);
    }
    const { ticket } = lanes.ticket((lane) => next.shift()?.(lane));
    const conn = await dial(ticket.port, JSON.stringify({ t: "lane", token: ticket.token }));
    const lane = await opened[0];
    lane.send({ t: "call", id: 7, kind: "event", input: { type: "x" } });
    const buffer = new Uint8Array(4096);
    const n = await conn.read(buffer);
    assertEquals(JSON.parse(new TextDecoder().decode(buffer.subarray(0, n!))), {
      t: "call",
      id: 7,
      kind: "event",
      input: { type: "x" },
    });
    await conn.write(encoder.encode(JSON.stringify({ t: "result", id: 7, ok: true, value: null }) + "\n"));
    const said = await lane.messages().next();
    assertEquals(said.value, { t: "result", id: 7, ok: true, value: null });
    // A worker started again in the same epoch presents it again: its owner gets the new lane.
    const again = await dial(ticket.port, JSON.stringify({ t: "lane", token: ticket.token }));
    (await opened[1]).close();
    assertEquals(await readToEnd(again), "");
    lane.close();
    assertEquals(await readToEnd(conn), "");
    assert(lane.closed);
  } finally {
    lanes.close();
  }
});

Deno.test("a lane without a known token is closed: a wrong one, a revoked one, a frame that is not a hello, a hello too long", async () => {
  const lanes = new Lanes({ clock: new FakeClock(0), log: new MemoryLog() });
  try {
    const opened: Lane[] = [];
    const { ticket, revoke } = lanes.ticket((lane) => opened.push(lane));
    revoke();
    for (
      const hello of [
        JSON.stringify({ t: "lane", token: "0".repeat(48) }),
        JSON.stringify({ t: "lane", token: ticket.token }),
        JSON.stringify({ t: "result", id: 1, ok: true }),
        "not json",
      ]
    ) {
      assertEquals(await readToEnd(await dial(ticket.port, hello)), "", hello);
    }
    // Nor may it hold more than a hello's bytes while it has not proved itself.
    const long = await Deno.connect({ hostname: "127.0.0.1", port: ticket.port });
    await long.write(encoder.encode(`{"t":"lane","token":"${"f".repeat(LANE_HELLO_BYTES)}`));
    assertEquals(await readToEnd(long), "");
    assertEquals(opened.length, 0);
    await until(() => lanes.stats.open === 0);
  } finally {
    lanes.close();
  }
});

Deno.test("a silent connection is closed at its hello deadline (on the lanes' clock); past the cap one is closed at once", async () => {
  const clock = new FakeClock(0);
  const lanes = new Lanes({ clock, log: new MemoryLog(), max: 2 });
  try {
    const port = lanes.port();
    const silent = [await dial(port), await dial(port)];
    await until(() => lanes.stats.open === 2);
    const third = await dial(port);
    assertEquals(await readToEnd(third), "");
    assertEquals(lanes.stats.refused, 1);
    clock.advance(LANE_HELLO_MS);
    for (const conn of silent) assertEquals(await readToEnd(conn), "");
    assertEquals(lanes.stats.timedOut, 2);
    await until(() => lanes.stats.open === 0);
  } finally {
    lanes.close();
  }
});

Deno.test("laneAnswer takes a lane's answer as the host would: a fetch body within its limit, errors cut", () => {
  assertEquals(laneAnswer("event", { ok: true, value: { any: 1 } }), { ok: true, value: { any: 1 } });
  assertEquals(laneAnswer("gate", { ok: false, error: "x".repeat(3000) }).error?.length, 2000);
  const fine = { status: 200, headers: [], body: btoa("hi") };
  assertEquals(laneAnswer("fetch", { ok: true, value: fine }), { ok: true, value: fine });
  assertEquals(laneAnswer("fetch", { ok: true, value: { status: 200, headers: [] } }), {
    ok: false,
    error: "fetch answered no body",
  });
  assertEquals(laneAnswer("fetch", { ok: true, value: null }).ok, false);
  const over = laneAnswer("fetch", {
    ok: true,
    value: { status: 200, headers: [], body: "A".repeat(Math.ceil(MAX_FETCH_BODY / 3) * 4 + 4) },
  });
  assertEquals(over.ok, false);
  assert(over.error?.includes(`the limit is ${MAX_FETCH_BODY}`), over.error);
});
