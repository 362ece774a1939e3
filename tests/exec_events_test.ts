/**
 * Whole-system tests of exec, the box env file and secrets, and the event stream.
 */
import { join } from "node:path";
import { assert, assertEquals, assertRejects, assertStringIncludes } from "./assert.ts";
import { DockError } from "../client/errors.ts";
import type { DockEvent } from "../client/wire.ts";
import { makeRepo, startBox } from "./harness.ts";
import { untilEvent } from "./wait.ts";

Deno.test("exec returns the exit code and the newest 64 KB; a timeout kills the whole tree", async () => {
  await using box = await startBox();
  const repo = await makeRepo(join(box.dirs.home, "work"));
  await box.client.addLocation({ name: "app", path: repo });
  const ok = await box.client.exec({ location: "app", command: "echo out; echo err >&2; exit 7" });
  assertEquals(ok.exit_code, 7);
  assertEquals(ok.output, "out\nerr\n");
  assertEquals(ok.truncated, undefined);

  const big = await box.client.exec({ location: "app", command: "seq 1 40000; echo last" });
  assertEquals(big.truncated, true);
  assertEquals(new TextEncoder().encode(big.output).length, 64 * 1024);
  assert(big.output.endsWith("40000\nlast\n"));

  const started = Date.now();
  const slow = await box.client.exec({
    location: "app",
    command: "sleep 30 & echo $! > bg.pid; sleep 30; echo never",
    timeout: "1s",
  });
  assertEquals(slow.exit_code, 124);
  assertEquals(slow.timed_out, true);
  assert(Date.now() - started < 20_000);
  // The backgrounded sleep went with its group (a zombie waiting for a reaper counts as gone).
  const left = await box.client.exec({
    location: "app",
    command:
      'state=$(awk \'{print $3}\' /proc/$(cat bg.pid)/stat 2>/dev/null); [ -n "$state" ] && [ "$state" != Z ] && echo alive',
  });
  assertEquals(left.output.trim(), "");

  for (const timeout of ["2h", "0s", "soon"]) {
    const error = await assertRejects(
      () => box.client.exec({ location: "app", command: "true", timeout }),
      DockError,
      "timeout",
    );
    assertEquals((error as DockError).status, 400);
  }
  const missing = await assertRejects(
    () => box.client.exec({ location: "app/nope", command: "true" }),
    DockError,
  );
  assertEquals((missing as DockError).status, 404);
});

Deno.test("dockd exec streams output and exits with the command's code", async () => {
  await using box = await startBox();
  const repo = await makeRepo(join(box.dirs.home, "work"));
  await box.client.addLocation({ name: "app", path: repo });
  const result = await box.cli(["exec", "app", "--", "echo one; echo two; exit 3"]);
  assertEquals(result.code, 3);
  assertEquals(result.stdout, "one\ntwo\n");
  const ok = await box.cli(["exec", "app", "--", "pwd"]);
  assertEquals(ok.code, 0);
  assertEquals(ok.stdout.trim(), repo);
});

Deno.test("env.json and secret references: resolved for processes, never returned", async () => {
  await using box = await startBox({ env: { DOCK_TEST_SECRET: "s3cr3t-value" } });
  const repo = await makeRepo(join(box.dirs.home, "work"), "app", {
    ".dock/config.json": JSON.stringify({
      env: { FROM_CONFIG: "$SHARED/$DOCK_WORKTREE_NAME", TOKEN: "env://DOCK_TEST_SECRET" },
    }),
  });
  await box.client.addLocation({ name: "app", path: repo });
  const start = (await box.client.emit({ type: "test.mark" })).id!;
  await box.client.putEnv({
    env: { SHARED: "box-wide", API_KEY: "env://DOCK_TEST_SECRET", MISSING: "env://NOT_SET" },
  });
  const changed = await untilEvent(box.client, (e) => e.type === "config.changed", { after: start });
  assertEquals(changed.data?.file, "env.json");
  assertEquals((await box.client.env()).env.API_KEY, "env://DOCK_TEST_SECRET");
  const result = await box.client.exec({
    location: "app",
    command: 'echo "$SHARED $API_KEY $FROM_CONFIG $TOKEN ${MISSING-unset} $CONDUCTOR_WORKSPACE_NAME"',
  });
  assertEquals(result.output.trim(), "box-wide s3cr3t-value box-wide/app s3cr3t-value unset app");

  assertEquals(await box.client.testSecret("env://DOCK_TEST_SECRET"), { ok: true, length: 12 });
  const missing = await box.client.testSecret("env://NOT_SET");
  assertEquals(missing.ok, false);
  assertStringIncludes(missing.error!, "NOT_SET");
  const malformed = await box.client.testSecret("not a ref");
  assertEquals(malformed.ok, false);

  // The value appears in no answer, event or journal.
  const config = JSON.stringify(await box.client.config("app"));
  const last = await box.client.emit({ type: "test.mark" });
  const events = JSON.stringify(await collect(box.client, 0, (e) => e.id === last.id));
  for (const text of [config, events, JSON.stringify(await box.client.env())]) {
    assertEquals(text.includes("s3cr3t-value"), false);
  }
  const bad = await assertRejects(() => box.client.putEnv({ env: { "1BAD": "x" } }), DockError);
  assertEquals((bad as DockError).status, 400);
});

Deno.test("events resume from Last-Event-ID without loss, across a restart too", async () => {
  const first = await startBox();
  const a = await first.client.emit({ type: "build.started", data: { n: 1 } });
  const b = await first.client.emit({ type: "build.finished", data: { n: 2 } });
  assertEquals(b.id, a.id! + 1);
  assertEquals(b.origin, "test");
  const cli = await first.cli(["emit", "custom.thing", "key=value", "count=3", "--origin", "mytool"]);
  assertEquals(cli.code, 0, cli.stderr);
  await first.stop({ kill: true });

  await using box = await startBox({ dirs: first.dirs });
  // Up to the last event the first daemon journaled; the live part below shows nothing else follows.
  const replayed = await collect(box.client, a.id!, (e) => e.type === "custom.thing");
  assertEquals(replayed.map((e) => e.type), ["build.finished", "custom.thing"]);
  assertEquals(replayed[1].origin, "mytool");
  assertEquals(replayed[1].data, { key: "value", count: 3 });
  assert(!Number.isNaN(Date.parse(replayed[1].time)));

  // A live subscriber sees new events after the replay, each once.
  const controller = new AbortController();
  const seen: DockEvent[] = [];
  const reading = (async () => {
    for await (const event of box.client.events({ after: b.id!, signal: controller.signal })) {
      seen.push(event);
      if (event.type === "live.two") controller.abort();
    }
  })();
  await box.client.emit({ type: "live.one" });
  await box.client.emit({ type: "live.two" });
  await reading;
  assertEquals(seen.map((e) => e.type), ["custom.thing", "live.one", "live.two"]);

  const bad = await assertRejects(() => box.client.emit({ type: "Not A Type" }), DockError, "type");
  assertEquals((bad as DockError).status, 400);
});

/** The events after `after`, up to and including the first that `last` matches. */
async function collect(
  client: { events: (o: { after?: number; signal?: AbortSignal }) => AsyncGenerator<DockEvent> },
  after: number,
  last: (event: DockEvent) => boolean,
) {
  const events: DockEvent[] = [];
  for await (const event of client.events({ after, signal: AbortSignal.timeout(10_000) })) {
    events.push(event);
    if (last(event)) return events;
  }
  throw new Error(`the stream ended before the last event: ${JSON.stringify(events)}`);
}
