/**
 * The tests' wait for processes to end (process_exits.ts): woken when one ends, it looks again; one
 * already gone is no wait; past its deadline it names those still running and stops polling.
 */
import { assertEquals, assertRejects, assertStringIncludes } from "./assert.ts";
import { untilGone } from "./process_exits.ts";

function sleeper(): Deno.ChildProcess {
  return new Deno.Command("sleep", { args: ["30"], stdin: "null", stdout: "null", stderr: "null" }).spawn();
}

Deno.test("untilGone: wakes as each process ends, until none is left; one gone before is no wait", async () => {
  const [a, b] = [sleeper(), sleeper()];
  let looks = 0;
  const alive = new Set([a.pid, b.pid]);
  const waiting = untilGone(() => (looks++, [...alive]), { what: "two sleepers" });
  a.kill("SIGKILL");
  await a.status;
  alive.delete(a.pid);
  b.kill("SIGKILL");
  await b.status;
  alive.delete(b.pid);
  await waiting;
  // A look at the start, one per wake-up: no more than one per process that ended, and one more
  // when both ended before the first wake-up was seen.
  assertEquals(looks >= 2 && looks <= 3, true, `${looks} looks`);
  await untilGone([a.pid]); // reaped already: nothing to wait for
});

Deno.test("untilGone: at its deadline, names what still runs", async () => {
  const child = sleeper();
  try {
    const error = await assertRejects(() => untilGone([child.pid], { timeoutMs: 100, what: "the sleeper" }));
    assertStringIncludes(error.message, `the sleeper not gone in 100 ms: ${child.pid} still running`);
  } finally {
    child.kill("SIGKILL");
    await child.status;
  }
});
