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
