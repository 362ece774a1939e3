import { assert, assertEquals, assertRejects } from "../tests/assert.ts";
import { MemoryLog } from "../core/log.ts";
import { join } from "node:path";
import { CallError } from "./call_error.ts";
import { ModuleHost } from "./module_host.ts";
import { FakeClock } from "../tests/fake_clock.ts";
import { until } from "../tests/wait.ts";
import type { WorkerSpec } from "./protocol.ts";

const HOUR = 3_600_000;

async function fixture(module: string): Promise<{ dir: string; spec: WorkerSpec }> {
  const dir = await Deno.realPath(await Deno.makeTempDir({ prefix: "dock-lane-" }));
  await Deno.writeTextFile(join(dir, "mod.ts"), module);
  const spec = {
    key: `${dir}/mod.ts`,
    module: join(dir, "mod.ts"),
    grant: { read: [dir], write: [], net: [], env: [] },
    label: "test:mod.ts",
  };
  return { dir, spec };
}

function host(dir: string, clock: FakeClock, onRequest: (op: string) => void = () => {}): ModuleHost {
  return new ModuleHost({
    clock,
    log: new MemoryLog(),
    dir: join(dir, ".host"),
    onRequest: (_spec, op) => {
      onRequest(op);
      return Promise.resolve(null);
    },
  });
}

Deno.test("warm calls take the worker's own lane; past its deadline the worker is stopped; one whose worker dies fails with why", async () => {
  const { dir, spec } = await fixture(`export default {
    async fetch(request) {
      return new Response("got " + request.method + " " + await request.text(), { status: 202, headers: { "x-a": "b" } });
    },
    async event(event, ctx) {
      if (event.type === "hang") {
        await ctx.kv.set("hanging", true);
        return new Promise(() => {});
      }
      if (event.type === "die") {
        setTimeout(() => { throw new Error("boom " + event.n); }, 0);
        return new Promise(() => {});
      }
    },
  };`);
  const clock = new FakeClock(0);
  const hanging = Promise.withResolvers<void>();
  const modules = host(dir, clock, (op) => op === "kv.set" && hanging.resolve());
  try {
    const cold = await modules.call(spec, "event", { type: "warm" }, HOUR);
    assert(cold.coldMs !== undefined, "the first call starts the worker, through the host");
    await until(() => modules.stats().lanes === 1);
    const sent = modules.stats().laneCalls;
    const fetched = await modules.call(
      spec,
      "fetch",
      { method: "POST", url: "http://p/", headers: [], body: btoa("ping") },
      HOUR,
    );
    const answer = fetched.value as { status: number; headers: [string, string][]; body: string };
    assertEquals([answer.status, atob(answer.body)], [202, "got POST ping"]);
    assert(answer.headers.some(([name, value]) => name === "x-a" && value === "b"));
    assertEquals(modules.stats().laneCalls, sent + 1, "it went on the lane");

    // Past its deadline a lane call's worker is stopped by the host, which never saw the call.
    const hung = modules.call(spec, "event", { type: "hang" }, 1000);
    await hanging.promise;
    assertEquals(modules.stats().laneCalls, sent + 2, "it went on the lane");
    clock.advance(1000);
    assertEquals((await assertRejects(() => hung, CallError) as CallError).failure, "timeout");
    await until(() => !modules.running(spec.key) && modules.stats().lanes === 0);
    const again = await modules.call(spec, "event", { type: "x" }, HOUR);
    assert(again.coldMs !== undefined, "a new worker answered");

    // A worker that dies with a lane call in flight: the call fails with why, not at its deadline.
    await until(() => modules.stats().lanes === 1);
    const died = await assertRejects(
      () => modules.call(spec, "event", { type: "die", n: 7 }, HOUR),
      CallError,
    );
    assertEquals((died as CallError).failure, "failed");
    assert(died.message.includes("boom 7"), died.message);
  } finally {
    modules.close();
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("the one port a worker may dial is its lanes'; without its token no lane opens, and a forged answer is not taken", async () => {
  const { dir, spec } = await fixture(`export default {
    async fetch(request) {
      const path = new URL(request.url).pathname;
      if (path === "/slow") {
        await new Promise((resolve) => setTimeout(resolve, 300));
        return new Response("slow");
      }
      // Every port but one is refused by the sandbox: that one is the lanes'.
      const open = [];
      let refusals = 0;
      for (let port = 1; port < 65536; port++) {
        try {
          (await Deno.connect({ hostname: "127.0.0.1", port })).close();
          open.push(port);
        } catch (error) {
          if (error instanceof Deno.errors.NotCapable) refusals++;
          else open.push(port);
        }
      }
      const said = [];
      for (const port of open) {
        const conn = await Deno.connect({ hostname: "127.0.0.1", port });
        const lines = [
          { t: "lane", token: "f".repeat(48) },
          { t: "result", id: Number(new URL(request.url).searchParams.get("id")), ok: true, value: { status: 200, headers: [], body: btoa("forged") } },
        ];
        await conn.write(new TextEncoder().encode(lines.map((line) => JSON.stringify(line) + "\\n").join("")));
        said.push(await conn.read(new Uint8Array(100)));
        conn.close();
      }
      return Response.json({ open: open.length, refusals, said });
    },
  };`);
  const clock = new FakeClock(0);
  const modules = host(dir, clock);
  try {
    await modules.call(spec, "fetch", { method: "GET", url: "http://p/slow", headers: [] }, HOUR);
    await until(() => modules.stats().lanes === 1);
    // A call in flight on the lane, whose id the forger guesses.
    const slow = modules.call(spec, "fetch", { method: "GET", url: "http://p/slow", headers: [] }, HOUR);
    const probe = await modules.call(
      spec,
      "fetch",
      { method: "GET", url: "http://p/scan?id=0", headers: [] },
      HOUR,
    );
    const found = JSON.parse(atob((probe.value as { body: string }).body));
    assertEquals(found.open, 1, "one port open to it");
    assertEquals(found.refusals, 65534);
    assertEquals(found.said, [null], "its forged hello was closed without a word");
    assertEquals(atob(((await slow).value as { body: string }).body), "slow", "the real answer was taken");
    assertEquals(modules.stats().lanes, 1, "its own lane is still open");
  } finally {
    modules.close();
    await Deno.remove(dir, { recursive: true });
  }
});
