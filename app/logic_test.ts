import { assertEquals } from "../tests/assert.ts";
import { type Api, frames } from "./src/api.ts";
import type { DockEvent, Session } from "../client/wire.ts";
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

/** The agent's `GET /v1/sessions` entry for one box, online, read with `sessions`. */
function boardEntry(name: string, sessions: Session[]) {
  return {
    box: { name, online: true },
    sessions,
    read: "2026-11-26T00:00:00.000Z",
    stale: false,
    error: null,
  };
}

Deno.test("app: a sessions list read before an agent event does not put the old state back", async () => {
  const { boxes, Sync } = await import("./src/store.ts");
  const session = (state: string) => ({ name: "s1", agent_state: state }) as unknown as Session;
  // The agent's answers to `GET /v1/sessions?box=remote`, in the order they are asked for, each answered
  // when the test says. Anything else the store reads on the way (a screen's last line) answers empty.
  const answers: { resolve: (list: Session[]) => void }[] = [];
  const api = {
    agent: true,
    own: (path: string) => `/v1/${path}`,
    box: (box: string, path: string) => `/v1/boxes/${box}/api/${path}`,
    json: (path: string) =>
      path === "/v1/sessions?box=remote"
        ? new Promise((resolve) =>
          answers.push({ resolve: (list: Session[]) => resolve([boardEntry("remote", list)]) })
        )
        : Promise.resolve({ screen: "" }),
  } as unknown as Api;
  boxes.value = {
    remote: { status: {}, locations: [], sessions: [session("running")], git: [], ports: [], services: {} },
  } as unknown as typeof boxes.value;
  const sync = new Sync(api);
  const shown = () => boxes.value.remote.sessions[0].agent_state;
  const settled = () => new Promise((resolve) => setTimeout(resolve, 0));

  sync.reloadSessions("remote"); // under way, read before the change
  const event = { type: "agent.waiting", box: "remote", data: { session: "s1" } } as unknown as DockEvent;
  sync.apply(event);
  assertEquals(shown(), "waiting");
  answers[0].resolve([session("running")]); // the stale list arrives after the event
  await settled();
  assertEquals(shown(), "waiting");
  // The reload the event asked for brings what the box says now.
  assertEquals(answers.length, 2);
  answers[1].resolve([session("waiting")]);
  await settled();
  assertEquals(shown(), "waiting");
  // A list asked for after the event is the truth again, whatever it says.
  sync.reloadSessions("remote");
  answers[2].resolve([session("finished")]);
  await settled();
  assertEquals(shown(), "finished");
});

Deno.test("app: at start the board is one read of every box's sessions; details and the last lines wait for it", async () => {
  const { Sync, boxes } = await import("./src/store.ts");
  // Every read held until the test answers it, in the order the store asks.
  const asked: { path: string; resolve: (value: unknown) => void }[] = [];
  const api = {
    agent: true,
    own: (path: string) => `/v1/${path}`,
    box: (box: string, path: string) => `/v1/boxes/${box}/api/${path}`,
    boxes: () => Promise.reject(new Error("the agent's board names the boxes")),
    json: (path: string) => new Promise((resolve) => asked.push({ path, resolve })),
    board: () =>
      new Promise((resolve) => asked.push({ path: "/v1/sessions", resolve })).then((board) => ({
        board,
        after: null,
      })),
  } as unknown as Api;
  const settled = () => new Promise((resolve) => setTimeout(resolve, 0));
  const answer = async (path: string, value: unknown) => {
    asked.find((a) => a.path === path)!.resolve(value);
    await settled();
  };
  // Deno draws no frames: the details wait for the board's frame, so one is given at once.
  const frame = (globalThis as { requestAnimationFrame?: unknown }).requestAnimationFrame;
  (globalThis as { requestAnimationFrame?: unknown }).requestAnimationFrame = (draw: () => void) =>
    setTimeout(draw, 0);
  try {
    const names = ["b1", "b2", "b3"];
    new Sync(api).reloadAll();
    assertEquals(asked.map((a) => a.path).sort(), ["/v1/sessions", "/v1/status"]);
    await answer("/v1/status", { proxy: { enabled: false }, build: "x", boxes: [] });
    assertEquals(asked.length, 2, "nothing else before the board");
    const list = [{ name: "s1", agent_state: "running", state_time: "t", exited: false }] as Session[];
    await answer("/v1/sessions", names.map((name) => boardEntry(name, list)));
    assertEquals(Object.keys(boxes.value).sort(), names);
    assertEquals(names.map((name) => boxes.value[name].sessions.map((s) => s.name)), [["s1"], ["s1"], [
      "s1",
    ]]);
    // Then, and only through the agent's one read: no box's list asked through the relay.
    await settled();
    await settled();
    const after = asked.slice(2).map((a) => a.path);
    assertEquals(after.filter((p) => p.endsWith("/api/sessions")), []);
    assertEquals(after.filter((p) => p.endsWith("/screen")).length, 2, "the last lines, two at a time");
    // The details after the board's frame, two boxes at a time.
    for (const box of ["b1", "b2"]) {
      for (const what of ["locations", "worktrees", "services"]) {
        assertEquals(after.includes(`/v1/boxes/${box}/api/${what}`), true, `${box} ${what}: ${after}`);
      }
    }
    assertEquals(after.includes("/v1/boxes/b3/api/locations"), false, "the third box waits its turn");
  } finally {
    (globalThis as { requestAnimationFrame?: unknown }).requestAnimationFrame = frame;
  }
});

Deno.test("app: the event stream follows from the board's read, with no second read; a change between them shows", async () => {
  const { Sync, boxes, live } = await import("./src/store.ts");
  const session = (state: string) =>
    ({ name: "s1", agent_state: state, state_time: "t", exited: false }) as unknown as Session;
  const reads: string[] = [];
  let readAnswered!: (value: { board: unknown; after: string | null }) => void;
  const followed: {
    after: string | null | undefined;
    onOpen?: () => void;
    onEvent: (e: DockEvent) => void;
  }[] = [];
  const api = {
    agent: true,
    own: (path: string) => `/v1/${path}`,
    box: (box: string, path: string) => `/v1/boxes/${box}/api/${path}`,
    board: () => {
      reads.push("all");
      return new Promise((resolve) => readAnswered = resolve);
    },
    json: (path: string) =>
      path === "/v1/status"
        ? Promise.resolve({ proxy: { enabled: false }, build: "x", boxes: [] })
        : path === "/v1/sessions?box=remote"
        ? Promise.resolve([boardEntry("remote", [session("waiting")])])
        : new Promise(() => {}), // details, queue, screens: never answered here
    follow: async (
      onEvent: (event: DockEvent) => void,
      options: { signal: AbortSignal; after?: Promise<string | null>; onOpen?: () => void },
    ) => {
      const entry = { after: undefined as string | null | undefined, onOpen: options.onOpen, onEvent };
      followed.push(entry);
      entry.after = await options.after;
      options.onOpen?.();
    },
  } as unknown as Api;
  const frame = (globalThis as { requestAnimationFrame?: unknown }).requestAnimationFrame;
  (globalThis as { requestAnimationFrame?: unknown }).requestAnimationFrame = () => 0;
  const settled = () => new Promise((resolve) => setTimeout(resolve, 0));
  const stop = new AbortController();
  try {
    boxes.value = {};
    const started = new Sync(api).start(stop.signal);
    await settled();
    // The stream waits for the board's read: an event after it is one the read may not hold.
    assertEquals([reads, followed.length, followed[0]?.after], [["all"], 1, undefined]);
    readAnswered({ board: [boardEntry("remote", [session("running")])], after: "7" });
    await started;
    await settled();
    assertEquals(followed[0].after, "7", "the stream resumes after the newest event the read holds");
    assertEquals(live.value, true);
    assertEquals(reads, ["all"], "no second read of every box's sessions when the stream opens");
    assertEquals(boxes.value.remote.sessions[0].agent_state, "running");
    // The agent replays the change made between the read and the stream opening: it shows.
    followed[0].onEvent(
      {
        id: 8,
        type: "agent.waiting",
        box: "remote",
        data: { session: "s1", reason: "permission" },
      } as unknown as DockEvent,
    );
    assertEquals(boxes.value.remote.sessions[0].agent_state, "waiting");
    assertEquals(boxes.value.remote.sessions[0].reason, "permission");
  } finally {
    stop.abort();
    (globalThis as { requestAnimationFrame?: unknown }).requestAnimationFrame = frame;
  }
});

Deno.test("app: from an agent that names no event, the sessions are read again when the stream opens", async () => {
  const { Sync, boxes } = await import("./src/store.ts");
  const reads: string[] = [];
  const api = {
    agent: true,
    own: (path: string) => `/v1/${path}`,
    box: (box: string, path: string) => `/v1/boxes/${box}/api/${path}`,
    board: () => Promise.resolve({ board: [boardEntry("remote", [])], after: null }),
    json: (path: string) => {
      reads.push(path);
      return path === "/v1/status"
        ? Promise.resolve({ proxy: { enabled: false }, build: "x", boxes: [] })
        : path === "/v1/sessions"
        ? Promise.resolve([boardEntry("remote", [])])
        : new Promise(() => {});
    },
    follow: async (_: unknown, options: { after?: Promise<string | null>; onOpen?: () => void }) => {
      assertEquals(await options.after, null);
      options.onOpen?.();
    },
  } as unknown as Api;
  const frame = (globalThis as { requestAnimationFrame?: unknown }).requestAnimationFrame;
  (globalThis as { requestAnimationFrame?: unknown }).requestAnimationFrame = () => 0;
  const stop = new AbortController();
  try {
    boxes.value = {};
    await new Sync(api).start(stop.signal);
    await new Promise((resolve) => setTimeout(resolve, 0));
    assertEquals(reads.filter((path) => path === "/v1/sessions").length, 1);
  } finally {
    stop.abort();
    (globalThis as { requestAnimationFrame?: unknown }).requestAnimationFrame = frame;
  }
});
