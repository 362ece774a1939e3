import { Hono } from "hono";
import type { AgentReport, DockEvent, EventAnnounce } from "../../client/wire.ts";
import type { RawEvent } from "../../core/events.ts";
import { errorResponse, mount } from "../../core/http.ts";
import { assertEquals } from "../../tests/assert.ts";
import { eventRoutes, type EventRoutesBackend } from "./events.ts";
import { STDERR_LOG } from "../../core/log.ts";

type Bus = EventRoutesBackend["bus"];

/** An event bus in memory: a journal array and its listeners. */
class MemoryBus implements Bus {
  readonly journal: DockEvent[] = [];
  #listeners = new Set<(event: DockEvent) => void>();

  publish(announce: EventAnnounce): DockEvent {
    const event: DockEvent = {
      id: this.journal.length + 1,
      time: "2024-01-01T00:00:00.000Z",
      type: announce.type,
      data: announce.data ?? {},
      ...(announce.origin ? { origin: announce.origin } : {}),
    };
    this.journal.push(event);
    for (const listener of this.#listeners) listener(event);
    return event;
  }

  announce(announce: EventAnnounce): Promise<DockEvent> {
    return Promise.resolve(this.publish(announce));
  }

  lastId(): number {
    return this.journal.length;
  }

  subscribe(listener: (event: DockEvent) => void): () => void {
    this.#listeners.add(listener);
    return () => this.#listeners.delete(listener);
  }

  sinceRaw(id: number, limit: number): RawEvent[] {
    return this.journal.filter((event) => event.id! > id).slice(0, limit).map((event) => ({
      id: event.id!,
      type: event.type,
      time: event.time,
      origin: event.origin ?? null,
      box: event.box ?? null,
      text: JSON.stringify(event.data ?? {}),
      data: null,
    }));
  }
}

/** The event routes in memory: the bus above, and agent state that takes each report once. */
function eventsApp() {
  const bus = new MemoryBus();
  const reports: AgentReport[] = [];
  const seen = new Set<string>();
  const app = new Hono();
  app.onError((error) => errorResponse(error, STDERR_LOG));
  mount(app, "/v1", [eventRoutes({
    bus,
    agentStates: {
      ingest: (report) => {
        reports.push(report);
        const key = `${report.type} ${report.time}`;
        if (report.time && seen.has(key)) return null;
        seen.add(key);
        return bus.publish({
          type: report.type,
          origin: report.origin,
          data: { ...report.data, session: "s1" },
        });
      },
    },
  })]);
  const announce = async (body: unknown, origin = "my-tool") => {
    const response = await app.request(
      new Request("http://box/v1/events", {
        method: "POST",
        headers: { "x-dock-origin": origin },
        body: JSON.stringify(body),
      }),
    );
    return { status: response.status, body: await response.json() };
  };
  return { app, bus, reports, announce };
}

Deno.test("events route: an agent report goes to the agent state; a second delivery is a duplicate", async () => {
  const { bus, reports, announce } = eventsApp();
  const report: AgentReport = {
    type: "agent.waiting",
    origin: "claude",
    data: { path: "/srv/app", agent: "claude", session_id: null },
    session: "s1",
    time: "2024-01-01T10:00:00Z",
  };
  const first = await announce(report);
  assertEquals(first.status, 201);
  assertEquals(first.body.data, { ...report.data, session: "s1" });
  assertEquals(await announce(report), { status: 200, body: { duplicate: true } });
  assertEquals(reports, [report, report]);
  assertEquals(bus.journal.length, 1);
  const partial = await announce({ type: "agent.waiting", data: { path: "/srv/app" } });
  assertEquals([partial.status, partial.body.error.code], [400, "invalid_request"]);
  assertEquals(reports.length, 2);
});

Deno.test("events route: any other announce is published, its own origin before the request's", async () => {
  const { bus, reports, announce } = eventsApp();
  assertEquals((await announce({ type: "build.finished", data: { ok: true } })).status, 201);
  assertEquals((await announce({ type: "build.started", origin: "ci" })).status, 201);
  assertEquals(bus.journal.map((e) => [e.type, e.origin, e.data]), [
    ["build.finished", "my-tool", { ok: true }],
    ["build.started", "ci", {}],
  ]);
  assertEquals(reports, []);
  const bad = await announce({ type: "Build Finished" });
  assertEquals([bad.status, bad.body.error.field], [400, "type"]);
  assertEquals(bus.journal.length, 2);
});

Deno.test("events route: GET replays the journal after Last-Event-ID, then live events", async () => {
  const { app, bus } = eventsApp();
  for (const n of [1, 2, 3]) bus.publish({ type: "build.step", data: { n } });
  const leave = new AbortController();
  const response = await app.request(
    new Request("http://box/v1/events", { headers: { "last-event-id": "1" }, signal: leave.signal }),
  );
  assertEquals(response.headers.get("content-type"), "text/event-stream");
  const reader = response.body!.pipeThrough(new TextDecoderStream()).getReader();
  const ids: string[] = [];
  let text = "";
  while (ids.length < 3) {
    const { value, done } = await reader.read();
    if (done) break;
    text += value;
    const frames = text.split("\n\n");
    text = frames.pop()!;
    for (const frame of frames) {
      const id = frame.match(/^id: (\d+)$/m)?.[1];
      if (id) ids.push(id);
    }
    // Once the journal is replayed, the next event arrives live.
    if (ids.length === 2) bus.publish({ type: "build.step", data: { n: 4 } });
  }
  assertEquals(ids, ["2", "3", "4"]);
  leave.abort();
  await reader.cancel();
});

/** The ids of the first `count` frames of an events answer (then it is left). */
async function firstIds(response: Response, count: number): Promise<string[]> {
  const reader = response.body!.pipeThrough(new TextDecoderStream()).getReader();
  const ids: string[] = [];
  let text = "";
  while (ids.length < count) {
    const { value, done } = await reader.read();
    if (done) break;
    text += value;
    const frames = text.split("\n\n");
    text = frames.pop()!;
    for (const frame of frames) {
      const id = frame.match(/^id: (\d+)$/m)?.[1];
      if (id) ids.push(id);
    }
  }
  await reader.cancel();
  return ids;
}

Deno.test("events route: ?after= past the last id is a 400 naming it; a Last-Event-ID past it starts over", async () => {
  const { app, bus } = eventsApp();
  for (const n of [1, 2, 3]) bus.publish({ type: "build.step", data: { n } });
  const get = (query: string, headers: Record<string, string> = {}) =>
    app.request(new Request(`http://box/v1/events${query}`, { headers }));

  const ahead = await get("?after=40");
  assertEquals(ahead.status, 400);
  const error = (await ahead.json()).error;
  assertEquals([error.code, error.field, error.last_id], ["after_last_event", "after", 3]);
  assertEquals(
    error.message,
    "after: 40 is beyond the journal: its last event id is 3 (ask for after=3 or less)",
  );

  // At the last id it streams (what comes next); below it, it replays.
  assertEquals(await firstIds(await get("?after=1"), 2), ["2", "3"]);
  const atLast = await get("?after=3");
  assertEquals(atLast.status, 200);
  await atLast.body!.cancel();

  // A reconnecting client's id past the journal came from one made anew: everything here is new to it.
  assertEquals(await firstIds(await get("", { "last-event-id": "40" }), 3), ["1", "2", "3"]);

  for (
    const [query, headers, field] of [
      ["?after=-1", {}, "after"],
      ["?after=1.5", {}, "after"],
      ["?after=1e3", {}, "after"],
      ["?after=99999999999999999999", {}, "after"],
      ["", { "last-event-id": "x" }, "Last-Event-ID"],
    ] as const
  ) {
    const bad = await get(query, headers);
    assertEquals(bad.status, 400, `${query} ${JSON.stringify(headers)}`);
    assertEquals((await bad.json()).error.field, field);
  }
});
