import { assert, assertEquals } from "../tests/assert.ts";
import type { BoxStatus, DockEvent } from "../client/wire.ts";
import { BUILD } from "../client/version.ts";
import { EventBus } from "../core/events.ts";
import { Store } from "../core/store.ts";
import { FakeClock } from "../tests/fake_clock.ts";
import { Boxes } from "./boxes.ts";

/** Resolves with the next event of `type` the bus carries. */
function nextEvent(bus: EventBus, type: string): Promise<DockEvent> {
  return new Promise((resolve) => {
    const unsubscribe = bus.subscribe((event) => {
      if (event.type !== type) return;
      unsubscribe();
      resolve(event);
    });
  });
}

Deno.test("health: the loop checks a box on the agent's clock, backs off after a failure, and says so in events", async () => {
  const dir = await Deno.makeTempDir();
  const socket = `${dir}/box.sock`;
  // A box's `GET /v1/info` over its socket: answering, or failing with a 503, as `up` says.
  let up = true;
  let asked = 0;
  const server = Deno.serve({ path: socket, onListen: () => {} }, () => {
    asked++;
    return up
      ? Response.json({ build: BUILD })
      : Response.json({ error: { code: "down", message: "down for the test" } }, { status: 503 });
  });
  const store = new Store(`${dir}/agent.db`);
  const bus = new EventBus(store);
  const clock = new FakeClock(Date.parse("2026-01-01T00:00:00Z"));
  // No jitter: due at exactly healthMs, and retried at the middle of its backoff.
  const boxes = new Boxes(store, bus, { healthMs: 5000, clock, random: () => 0.5 });
  try {
    assertEquals((await boxes.add({ name: "b1", kind: "socket", address: socket }, "t")).online, true);
    boxes.start();
    up = false;
    clock.advance(4999);
    assertEquals(asked, 1, "not due before healthMs");
    const offline = nextEvent(bus, "box.offline");
    clock.advance(1);
    assertEquals((await offline).data?.box, "b1");
    assertEquals([asked, boxes.online("b1")], [2, false]);
    // The check's own bookkeeping ends a few microtasks after its event; the loop skips a box whose check
    // is under way, so let it end before the clock moves on.
    await new Promise((resolve) => setTimeout(resolve, 0));
    // The first retry is due 0.75–1.25 s after the failure (1 s with jitter).
    up = true;
    clock.advance(749);
    assertEquals(asked, 2, "backing off");
    const online = nextEvent(bus, "box.online");
    clock.advance(501);
    assertEquals((await online).data?.box, "b1");
    assertEquals([asked, boxes.online("b1")], [3, true]);
  } finally {
    boxes.close();
    await server.shutdown();
    store.close();
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("health: a box that comes back on another build is announced as box.changed with it (views reload on it)", async () => {
  const dir = await Deno.makeTempDir();
  const socket = `${dir}/box.sock`;
  let build = "0.0.9+aaaaaaaaaaaa";
  const server = Deno.serve({ path: socket, onListen: () => {} }, () => Response.json({ build }));
  const store = new Store(`${dir}/agent.db`);
  const bus = new EventBus(store);
  const boxes = new Boxes(store, bus, {
    healthMs: 5000,
    clock: new FakeClock(Date.parse("2026-01-01T00:00:00Z")),
  });
  try {
    await boxes.add({ name: "b1", kind: "socket", address: socket }, "t");
    await boxes.check("b1");
    const quiet = bus.since(0).filter((event) => event.type === "box.changed");
    assertEquals(quiet, [], "the same build again is no change");
    build = BUILD;
    const changed = nextEvent(bus, "box.changed");
    await boxes.check("b1");
    assertEquals((await changed).data, { box: "b1", address: socket, build: BUILD });
    assertEquals(boxes.status().find((box) => box.name === "b1")?.build, BUILD);
  } finally {
    boxes.close();
    await server.shutdown();
    store.close();
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("status: a box going offline and online again changes exactly its part, kept between changes", async () => {
  const dir = await Deno.makeTempDir();
  // Three boxes' `GET /v1/info` over their sockets; `down` names the one answering 503.
  let down = "";
  const servers = ["a", "b", "c"].map((name) =>
    Deno.serve(
      { path: `${dir}/${name}.sock`, onListen: () => {} },
      () =>
        down === name
          ? Response.json({ error: { code: "down", message: "down for the test" } }, { status: 503 })
          : Response.json({ build: BUILD }),
    )
  );
  const store = new Store(`${dir}/agent.db`);
  const bus = new EventBus(store);
  const boxes = new Boxes(store, bus, {
    healthMs: 5000,
    clock: new FakeClock(Date.parse("2026-01-01T00:00:00Z")),
  });
  /** The status as `GET /v1/status` sends it, each box's part by name. */
  const parts = () => Object.fromEntries(boxes.statusParts().map((part) => [part.name, part]));
  try {
    for (const name of ["c", "a", "b"]) {
      await boxes.add({ name, kind: "socket", address: `${dir}/${name}.sock` }, "t");
    }
    const before = parts();
    assertEquals(JSON.parse(boxes.statusJson()), boxes.status(), "the kept JSON is the status");
    assertEquals(boxes.status().map((box) => [box.name, box.online]), [["a", true], ["b", true], [
      "c",
      true,
    ]]);
    assert(boxes.statusParts() === boxes.statusParts(), "kept while nothing changes");

    down = "b";
    const offline = nextEvent(bus, "box.offline");
    await boxes.check("b");
    // Told synchronously: a listener reading the status on `box.offline` sees the box offline in it.
    assertEquals((await offline).data?.box, "b");
    const off = parts();
    assert(off.a === before.a && off.c === before.c, "the other boxes' parts are the ones kept");
    assertEquals(
      [JSON.parse(off.b.json).online, JSON.parse(off.b.json).error, off.b.online],
      [false, "down for the test", false],
    );
    assertEquals(JSON.parse(boxes.statusJson()), boxes.status());
    assertEquals(JSON.parse(boxes.statusJson()).map((box: BoxStatus) => box.online), [true, false, true]);

    down = "";
    await boxes.check("b");
    const on = parts();
    assert(on.a === before.a && on.c === before.c, "still the ones kept");
    assertEquals([JSON.parse(on.b.json).online, JSON.parse(on.b.json).error, on.b.online], [
      true,
      null,
      true,
    ]);
    assertEquals(JSON.parse(boxes.statusJson()), boxes.status());

    // A box forgotten leaves the status; the others' parts stay as kept.
    boxes.remove("a", "t");
    assertEquals(boxes.statusParts().map((part) => part.name), ["b", "c"]);
    assert(parts().c === before.c);
    assertEquals(JSON.parse(boxes.statusJson()), boxes.status());
  } finally {
    boxes.close();
    for (const server of servers) await server.shutdown();
    store.close();
    await Deno.remove(dir, { recursive: true });
  }
});
