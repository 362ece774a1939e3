/**
 * Unit tests of the tests' one wait (`wait.ts`): it re-checks on each event of a stream (read from event 0,
 * events that come during a check batched into the next), falls back to a backoff without a stream or once
 * it ends, and says what it waited for when time runs out.
 */
import { assert, assertEquals, assertRejects, assertStringIncludes } from "./assert.ts";
import type { DockEvent } from "../client/wire.ts";
import { Changes, until, untilEvent } from "./wait.ts";

/** A stream of events pushed by hand, replaying what was pushed before a reader came (as `after: 0` does). */
class Events {
  #events: DockEvent[] = [];
  #wake: (() => void) | undefined;
  #ended = false;
  afterAsked: number[] = [];

  push(type: string): void {
    this.#events.push({ id: this.#events.length + 1, type, time: new Date(0).toISOString() });
    this.#wake?.();
  }

  end(): void {
    this.#ended = true;
    this.#wake?.();
  }

  async *events(options: { after?: number; signal?: AbortSignal }): AsyncGenerator<DockEvent> {
    this.afterAsked.push(options.after ?? -1);
    let next = options.after ?? 0;
    const aborted = new Promise<void>((resolve) =>
      options.signal?.addEventListener("abort", () => resolve())
    );
    while (!options.signal?.aborted) {
      if (next < this.#events.length) {
        yield this.#events[next++];
        continue;
      }
      if (this.#ended) throw new Error("stream ended");
      await Promise.race([new Promise<void>((resolve) => this.#wake = resolve), aborted]);
    }
  }
}

Deno.test("until: checks at once, then on each event, and sees events from before the stream opened", async () => {
  const events = new Events();
  events.push("before"); // came before the wait began: replayed from event 0
  let state = 0;
  const seen: string[][] = [];
  const waiting = until((batch) => {
    seen.push(batch.map((e) => e.type));
    return state >= 2 && state;
  }, { on: events });
  await new Promise((r) => setTimeout(r, 0));
  state = 1;
  events.push("one");
  await new Promise((r) => setTimeout(r, 0));
  state = 2;
  events.push("two");
  assertEquals(await waiting, 2);
  assertEquals(events.afterAsked, [0]);
  assertEquals(seen[0], [], "the first check comes before any event");
  assertEquals(seen.flat(), ["before", "one", "two"], "every event reaches a check, none twice");
});

Deno.test("until: events that come while a check runs go together to one more check", async () => {
  const events = new Events();
  let release = () => {};
  let checks = 0;
  const batches: string[][] = [];
  const waiting = until(async (batch) => {
    checks++;
    batches.push(batch.map((e) => e.type));
    if (checks === 2) await new Promise<void>((resolve) => release = resolve); // a slow check
    return checks === 3 && "done";
  }, { on: events });
  events.push("a");
  while (checks < 2) await new Promise((r) => setTimeout(r, 0));
  for (const type of ["b", "c", "d"]) events.push(type);
  await new Promise((r) => setTimeout(r, 0));
  release();
  assertEquals(await waiting, "done");
  assertEquals(batches, [[], ["a"], ["b", "c", "d"]]);
});

Deno.test("until: without an event source, a backoff finds a condition met outside any stream", async () => {
  const started = performance.now();
  let checks = 0;
  const value = await until(() => ++checks === 4 && "met");
  assertEquals(value, "met");
  // Pauses of 5, 10 and 20 ms: well under four checks at the old fixed 50 ms.
  assert(performance.now() - started < 2000, "the backoff begins short");
});

Deno.test("until: a stream that ends hands over to the backoff", async () => {
  const events = new Events();
  let met = false;
  const waiting = until(() => met, { on: events });
  events.end();
  await new Promise((r) => setTimeout(r, 20));
  met = true; // no event tells of this: only the backoff can see it
  assertEquals(await waiting, true);
});

Deno.test("until: on time out it names what it waited for, how often it checked and the last error", async () => {
  const events = new Events();
  const error = await assertRejects(
    () =>
      until(() => {
        throw new Error("not yet: 3 of 4");
      }, { on: events, timeoutMs: 50, what: "four workers" }),
  );
  assertStringIncludes(error.message, "four workers not met in 50 ms (1 checks, 0 events): not yet: 3 of 4");
});

Deno.test("untilEvent: the first event the predicate accepts, from `after` on, none skipped by batching", async () => {
  const events = new Events();
  for (const type of ["a", "b", "c"]) events.push(type);
  const found = await untilEvent(events, (e) => e.type === "a" || e.type === "c", { after: 1 });
  assertEquals(found.type, "c");
  assertEquals(events.afterAsked, [1]);
});

Deno.test("until: with `watch`, a file written in the watched folder wakes the check; nothing else does", async () => {
  const dir = await Deno.makeTempDir();
  try {
    const file = `${dir}/out.txt`;
    let met = false;
    let checks = 0;
    const watchOpened = Promise.withResolvers<void>();
    // Checked at once, and once more as the watch opens (a change in between is not missed).
    const quiet = until(() => (++checks === 2 && watchOpened.resolve(), met), {
      watch: file,
      timeoutMs: 150,
      what: "quiet",
    });
    await watchOpened.promise;
    // Met after those checks, but nothing on disk changes: with a watch and no backoff, they are all.
    met = true;
    assertStringIncludes((await assertRejects(() => quiet)).message, "(2 checks)");
    const read = () => Deno.readTextFile(file).catch(() => "");
    const waiting = until(async () => (await read()).includes("done") && "seen", { watch: file });
    await Deno.writeTextFile(file, "working\n");
    await Deno.writeTextFile(file, "done\n", { append: true });
    assertEquals(await waiting, "seen");
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("until: a watched folder made after the wait began is watched once it exists", async () => {
  const dir = await Deno.makeTempDir();
  try {
    const deep = `${dir}/a/b`;
    let checks = 0;
    const waiting = until(async () => {
      checks++;
      return (await Deno.readTextFile(`${deep}/marker`).catch(() => "")) === "here" && checks;
    }, { watch: `${deep}/` });
    await Deno.mkdir(deep, { recursive: true });
    await Deno.writeTextFile(`${deep}/marker`, "here");
    assert(await waiting >= 2);
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("until: with `wake`, a `change` the test's own state dispatches wakes the check; nothing else does", async () => {
  const changes = new Changes();
  let state = 0;
  const quiet = until(() => state === 1, { wake: changes, timeoutMs: 150, what: "quiet" });
  state = 1; // changed, but nobody said so: no backoff re-checks it
  assertStringIncludes((await assertRejects(() => quiet)).message, "(1 checks)");
  state = 0;
  const waiting = until(() => state === 2 && "two", { wake: changes });
  state = 1;
  changes.changed();
  state = 2;
  changes.changed();
  assertEquals(await waiting, "two");
});
