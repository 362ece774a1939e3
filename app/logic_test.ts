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

Deno.test("app: a sessions list read before an agent event does not put the old state back", async () => {
  const { boxes, Sync } = await import("./src/store.ts");
  const session = (state: string) => ({ name: "s1", agent_state: state }) as unknown as Session;
  // The box's answers to `GET sessions`, in the order they are asked for, each answered when the test says.
  // Anything else the store reads on the way (a waiting session's last screen line) answers empty.
  const answers: { resolve: (list: Session[]) => void }[] = [];
  const api = {
    agent: true,
    box: (box: string, path: string) => `/v1/boxes/${box}/api/${path}`,
    json: (path: string) =>
      path.endsWith("/api/sessions")
        ? new Promise<Session[]>((resolve) => answers.push({ resolve }))
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

Deno.test("app: at start every box's sessions are asked first; the rest and the last lines wait for them", async () => {
  const { Sync } = await import("./src/store.ts");
  // Every read held until the test answers it, in the order the store asks.
  const asked: { path: string; resolve: (value: unknown) => void }[] = [];
  const api = {
    agent: true,
    own: (path: string) => `/v1/${path}`,
    box: (box: string, path: string) => `/v1/boxes/${box}/api/${path}`,
    boxes: () => new Promise((resolve) => asked.push({ path: "/v1/boxes", resolve })),
    json: (path: string) => new Promise((resolve) => asked.push({ path, resolve })),
  } as unknown as Api;
  const settled = () => new Promise((resolve) => setTimeout(resolve, 0));
  const answer = async (path: string, value: unknown) => {
    asked.find((a) => a.path === path)!.resolve(value);
    await settled();
  };
  const names = ["b1", "b2", "b3"];
  new Sync(api).reloadAll();
  await answer("/v1/status", { proxy: { enabled: false }, build: "x" });
  await answer("/v1/boxes", names.map((name) => ({ name, online: true })));
  const sessions = names.map((box) => `/v1/boxes/${box}/api/sessions`);
  assertEquals(asked.slice(2).map((a) => a.path), sessions);
  const list = [{ name: "s1", agent_state: "running", state_time: "t", exited: false }];
  await answer(sessions[0], list);
  await answer(sessions[1], list);
  // Two of three lists in: nothing else asked yet (no locations, git status, services or screens).
  assertEquals(asked.slice(2).map((a) => a.path), sessions);
  await answer(sessions[2], list);
  const after = asked.slice(5).map((a) => a.path);
  for (const box of names) {
    for (const what of ["locations", "worktrees", "services"]) {
      assertEquals(after.includes(`/v1/boxes/${box}/api/${what}`), true, `${box} ${what}: ${after}`);
    }
  }
  assertEquals(after.filter((p) => p.endsWith("/screen")).length, 2, "the last lines, two at a time");
});
