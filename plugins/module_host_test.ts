import { assert, assertEquals, assertRejects } from "../tests/assert.ts";
import { SYSTEM_CLOCK } from "../core/clock.ts";
import { MemoryLog } from "../core/log.ts";
import { join } from "node:path";
import { CallError } from "./call_error.ts";
import { covers, unionGrant, workerThreads } from "./host_generation.ts";
import { CANCEL_ANSWER_MS, ModuleHost, ORPHAN_GRACE_MS } from "./module_host.ts";
import { FakeClock } from "../tests/fake_clock.ts";
import type { WorkerGrant, WorkerSpec } from "./protocol.ts";

const HOUR = 3_600_000;
const NONE: WorkerGrant = { read: [], write: [], net: [], env: [] };

async function fixture(files: Record<string, string>): Promise<string> {
  const dir = await Deno.makeTempDir({ prefix: "dock-modhost-" });
  for (const [name, text] of Object.entries(files)) await Deno.writeTextFile(join(dir, name), text);
  return await Deno.realPath(dir);
}

function spec(dir: string, module: string, grant: Partial<WorkerGrant> = {}): WorkerSpec {
  return {
    key: `${dir}/${module}`,
    module: join(dir, module),
    grant: { ...NONE, read: [dir], ...grant },
    label: `test:${module}`,
  };
}

function host(dir: string, requests: string[] = []): ModuleHost {
  return new ModuleHost({
    clock: SYSTEM_CLOCK,
    log: new MemoryLog(),
    dir: join(dir, ".host"),
    onRequest: (_spec, op, args) => {
      requests.push(`${op} ${JSON.stringify(args)}`);
      return Promise.resolve(op === "kv.get" ? 42 : null);
    },
  });
}

Deno.test("unionGrant merges and covers compares grants", () => {
  const a: WorkerGrant = { read: ["/a"], write: [], net: ["x.test:443"], env: ["A"] };
  const b: WorkerGrant = { read: ["/b", "/a"], write: ["/b/data"], net: [], env: [] };
  const union = unionGrant([a, b]);
  assertEquals(union, { read: ["/a", "/b"], write: ["/b/data"], net: ["x.test:443"], env: ["A"] });
  assert(covers(union, a) && covers(union, b));
  assert(covers({ ...NONE, read: ["/a"] }, { ...NONE, read: ["/a/deeper"] }));
  assert(!covers({ ...NONE, read: ["/a"] }, { ...NONE, read: ["/ab"] }));
  assert(covers({ ...NONE, net: ["x.test"] }, { ...NONE, net: ["x.test:443"] }));
  assert(!covers(a, { ...NONE, env: ["B"] }));
});

Deno.test("a module's handlers run in a worker; the first call is a cold start", async () => {
  const dir = await fixture({
    "mod.ts": `export default {
      async event(ev, ctx) { await ctx.kv.set("last", ev.type); console.log("got", ev.type); },
      async gate(req, ctx) { return req.action === "exec" ? { allow: false, reason: "no exec here" } : undefined; },
      async fetch(req, ctx) { return new Response("hello " + new URL(req.url).pathname + " " + await ctx.kv.get("x"), { status: 201, headers: { "x-a": "b" } }); },
    };`,
  });
  const requests: string[] = [];
  const modules = host(dir, requests);
  try {
    const s = spec(dir, "mod.ts");
    const first = await modules.call(s, "event", { type: "agent.waiting" }, 10_000);
    assertEquals(first.value, null);
    assert(first.coldMs !== undefined, "the first call starts the worker");
    const gate = await modules.call(s, "gate", { action: "exec" }, 10_000);
    assertEquals(gate.value, { allow: false, reason: "no exec here" });
    assertEquals(gate.coldMs, undefined, "the worker is warm");
    const fetched = await modules.call(s, "fetch", { method: "GET", url: "http://p/x", headers: [] }, 10_000);
    const answer = fetched.value as { status: number; headers: [string, string][]; body: string };
    assertEquals(answer.status, 201);
    assertEquals(atob(answer.body), "hello /x 42");
    assert(answer.headers.some(([k, v]) => k === "x-a" && v === "b"));
    assert(requests.includes(`kv.set ["last","agent.waiting"]`), requests.join("\n"));
    assertEquals(modules.stats().workers, 1);
    modules.stop(s.key);
    assertEquals(modules.running(s.key), false);
  } finally {
    modules.close();
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("a worker gets only its grant: every escape is refused", async () => {
  const secret = await Deno.makeTempDir({ prefix: "dock-secret-" });
  await Deno.writeTextFile(join(secret, "token"), "s3cret");
  const dir = await fixture({
    "escape.ts": `
      const attempts = {
        readPasswd: () => Deno.readTextFile("/etc/passwd"),
        readSecret: () => Deno.readTextFile(${JSON.stringify(join(secret, "token"))}),
        importSecret: () => import(${JSON.stringify(join(secret, "token"))}),
        write: () => Deno.writeTextFile(${JSON.stringify(join(secret, "x"))}, "x"),
        command: () => new Deno.Command("/bin/true").output(),
        dlopen: () => Deno.dlopen("libc.so.6", {}),
        env: () => Deno.env.get("HOME"),
        sys: () => Deno.hostname(),
        net: () => fetch("http://127.0.0.1:8080/"),
        remoteImport: () => import("https://example.com/x.js"),
        npmImport: () => import("npm:left-pad"),
        widerWorker: () => new Worker(import.meta.url, { type: "module", deno: { permissions: { read: true } } }),
      };
      export default {
        async event() {
          const out = {};
          for (const [name, attempt] of Object.entries(attempts)) {
            try { await attempt(); out[name] = "allowed"; } catch (e) { out[name] = String(e).slice(0, 60); }
          }
          await (globalThis.__report = out);
          throw new Error(JSON.stringify(out));
        },
      };`,
  });
  const modules = host(dir);
  try {
    const error = await assertRejects(
      () => modules.call(spec(dir, "escape.ts"), "event", {}, 20_000),
      CallError,
    );
    const results = JSON.parse(error.message.slice(error.message.indexOf("{")));
    for (const [name, outcome] of Object.entries(results)) {
      // Refused by the sandbox itself, not by some other failure on the way.
      assert(/Requires|escalate|--no-npm/.test(String(outcome)), `${name}: ${outcome}`);
    }
    assertEquals(Object.keys(results).length, 12);
    assertEquals(await Deno.readTextFile(join(secret, "token")), "s3cret");
  } finally {
    modules.close();
    await Deno.remove(dir, { recursive: true });
    await Deno.remove(secret, { recursive: true });
  }
});

Deno.test("a synchronous loop is stopped at its deadline (on the host's clock) by ending its host; other modules go on", async () => {
  const dir = await fixture({
    // It says it is running (a kv write) before it spins, so the test moves the clock only then.
    "spin.ts":
      `export default { async event(ev, ctx) { await ctx.kv.set("spinning", true); while (true) {} } };`,
    "ok.ts": `export default { event() {} };`,
  });
  const clock = new FakeClock(0);
  const spinning = Promise.withResolvers<void>();
  const ended = Promise.withResolvers<number>();
  const modules = new ModuleHost({
    clock,
    log: new MemoryLog(),
    dir: join(dir, ".host"),
    onRequest: (_spec, op) => {
      if (op === "kv.set") spinning.resolve();
      return Promise.resolve(null);
    },
    onHostPhase: ({ generation, to }) => to === "ended" && ended.resolve(generation),
  });
  try {
    await modules.call(spec(dir, "ok.ts"), "event", {}, 10_000);
    const before = modules.stats();
    let settled = false;
    // An hour: only the host's clock can bring it within the test.
    const call = modules.call(spec(dir, "spin.ts"), "event", {}, HOUR);
    call.catch(() => {}).finally(() => settled = true);
    await spinning.promise;
    // Stuck in synchronous code, it is not failed before its deadline, however long the host takes.
    clock.advance(HOUR - 1);
    await new Promise((resolve) => setTimeout(resolve, 0));
    assertEquals(settled, false, "failed before its deadline");
    clock.advance(1);
    await new Promise((resolve) => setTimeout(resolve, 0));
    assertEquals(settled, true, "failed at its deadline on the host's clock");
    const error = await assertRejects(() => call, CallError) as CallError;
    assertEquals(error.failure, "timeout");
    // Another module is answered meanwhile.
    assertEquals((await modules.call(spec(dir, "ok.ts"), "event", {}, 10_000)).value, null);
    // The host did not stop the worker (terminate() cannot): past CANCEL_ANSWER_MS it is retired, and
    // with nothing else in flight, ended.
    clock.advance(CANCEL_ANSWER_MS);
    assertEquals(await ended.promise, before.generations);
    const oldPid = before.pid!;
    // A killed process gives no event: a short plain wait for the kernel to reap it.
    for (let i = 0; i < 200 && alive(oldPid); i++) await new Promise((r) => setTimeout(r, 25));
    assert(!alive(oldPid), `host ${oldPid} still runs`);
    // The next call goes to a new host.
    assertEquals((await modules.call(spec(dir, "ok.ts"), "event", {}, 10_000)).value, null);
    const after = modules.stats();
    assert(after.generations > before.generations, "a new host was started");
    assert(after.restarts > before.restarts, "the restart is counted");
  } finally {
    modules.close();
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("a memory bomb ends at the heap cap; a module that throws on load fails with its error", async () => {
  const dir = await fixture({
    "bomb.ts":
      `export default { event() { const a = []; while (true) a.push(new Array(1e5).fill(Math.random())); } };`,
    "broken.ts": `throw new Error("broken on purpose");`,
    "ok.ts": `export default { event() {} };`,
  });
  const modules = new ModuleHost({
    clock: SYSTEM_CLOCK,
    log: new MemoryLog(),
    dir: join(dir, ".host"),
    memoryMb: 64,
    onRequest: () => Promise.resolve(null),
  });
  try {
    const bomb = await assertRejects(
      () => modules.call(spec(dir, "bomb.ts"), "event", {}, 30_000),
      CallError,
    ) as CallError;
    assertEquals(bomb.failure, "crashed");
    const broken = await assertRejects(
      () => modules.call(spec(dir, "broken.ts"), "event", {}, 10_000),
      CallError,
    ) as CallError;
    assertEquals(broken.failure, "failed");
    assert(broken.message.includes("broken on purpose"), broken.message);
    assertEquals((await modules.call(spec(dir, "ok.ts"), "event", {}, 10_000)).value, null);
    assert(modules.stats().restarts >= 1);
  } finally {
    modules.close();
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("memory outside the heap (ArrayBuffers) ends the host at its resident limit", async () => {
  const dir = await fixture({
    "buffers.ts":
      `export default { event() { const held = []; while (true) held.push(new Uint8Array(32 << 20).fill(1)); } };`,
    "ok.ts": `export default { event() {} };`,
  });
  const modules = new ModuleHost({
    clock: SYSTEM_CLOCK,
    log: new MemoryLog(),
    dir: join(dir, ".host"),
    rssLimitMb: 400,
    onRequest: () => Promise.resolve(null),
  });
  try {
    const error = await assertRejects(
      () => modules.call(spec(dir, "buffers.ts"), "event", {}, 60_000),
      CallError,
    ) as CallError;
    assertEquals(error.failure, "crashed");
    assertEquals((await modules.call(spec(dir, "ok.ts"), "event", {}, 10_000)).value, null);
  } finally {
    modules.close();
    await Deno.remove(dir, { recursive: true });
  }
});

function alive(pid: number): boolean {
  try {
    Deno.kill(pid, "SIGCONT");
    // A zombie still answers kill: read its state.
    const stat = Deno.readTextFileSync(`/proc/${pid}/stat`);
    return !/\) Z /.test(stat);
  } catch {
    return false;
  }
}

Deno.test("a crash with several workers' calls in flight: each runs again in a host of its own, so only the bomb's fails", async () => {
  const dir = await fixture({
    // Slow enough to be in flight when the bomb goes off (it waits for the bomb's start, in the kv).
    "slow.ts": `export default { async event(ev, ctx) {
      while (!(await ctx.kv.get("bombing"))) await new Promise((r) => setTimeout(r, 20));
      await new Promise((r) => setTimeout(r, 200));
      return null;
    } };`,
    "bomb.ts": `export default { async event(ev, ctx) {
      await ctx.kv.set("bombing", true);
      const a = []; while (true) a.push(new Array(1e5).fill(Math.random()));
    } };`,
  });
  let bombing = false;
  const modules = new ModuleHost({
    clock: SYSTEM_CLOCK,
    log: new MemoryLog(),
    dir: join(dir, ".host"),
    memoryMb: 64,
    onRequest: (_spec, op) => {
      if (op === "kv.set") bombing = true;
      return Promise.resolve(op === "kv.get" ? bombing : null);
    },
  });
  try {
    const slow = [spec(dir, "slow.ts"), { ...spec(dir, "slow.ts"), key: "other-slow" }];
    const calls = slow.map((s) => modules.call(s, "event", {}, 30_000));
    const bomb = await assertRejects(
      () => modules.call(spec(dir, "bomb.ts"), "event", {}, 30_000),
      CallError,
    );
    assertEquals((bomb as CallError).failure, "crashed");
    for (const result of await Promise.all(calls)) assertEquals(result.value, null);
    assertEquals(
      modules.stats().restarts,
      1,
      "one crash of the shared host; quarantine hosts are not restarts",
    );
  } finally {
    modules.close();
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("a host whose worker threads outnumber its workers (a nested Worker spinning) is recycled after its grace, on its clock", async () => {
  const dir = await fixture({
    "spin.js": `while (true) {}`,
    "nest.ts": `export default { async event() {
      const { Worker } = await import("node:worker_threads");
      new Worker(new URL("./spin.js", import.meta.url));
      return null;
    } };`,
  });
  const lines: string[] = [];
  const clock = new FakeClock(0);
  let recycled = false;
  const modules = new ModuleHost({
    clock,
    log: new MemoryLog(),
    dir: join(dir, ".host"),
    onRequest: () => Promise.resolve(null),
    onHostOutput: (line) => lines.push(line),
    onHostPhase: ({ to }) => recycled ||= to === "ended",
  });
  try {
    const s = spec(dir, "nest.ts");
    await modules.call(s, "event", {}, 10_000);
    const pid = modules.stats().pid!;
    modules.stop(s.key);
    // The nested thread starts in the host on its own: /proc gives no event, so a plain bounded wait.
    for (let i = 0; i < 400 && workerThreads(pid) < 1; i++) await new Promise((r) => setTimeout(r, 25));
    assert(workerThreads(pid) >= 1, "the nested Worker's thread runs");
    // The watch reads /proc every 500 ms of its clock: within the grace the host is kept.
    for (let ms = 0; ms < ORPHAN_GRACE_MS; ms += 500) clock.advance(500);
    assertEquals(recycled, false, "recycled before its grace");
    // Past it (from the first tick that saw the thread), at the next tick: retired, and with no call
    // in flight, ended.
    clock.advance(1000);
    assertEquals(recycled, true, "recycled past its grace, on the host's clock");
    assert(lines.some((line) => line.includes("a nested Worker left running")), lines.join("\n"));
    const gone = () => {
      try {
        return Deno.readTextFileSync(`/proc/${pid}/status`).includes("State:\tZ");
      } catch {
        return true;
      }
    };
    // A killed process gives no event: a short plain wait for the kernel to reap it.
    for (let i = 0; i < 200 && !gone(); i++) await new Promise((r) => setTimeout(r, 25));
    assert(gone(), "the host with the spinning thread is gone");
  } finally {
    modules.close();
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("a worker stopped and called again at once runs its new module, and is known to run: the old one's end is told apart (epochs)", async () => {
  const version = (n: number) => `export default { step() { return "v${n}"; } };`;
  const dir = await fixture({ "mod.ts": version(0) });
  const modules = host(dir);
  try {
    const s = spec(dir, "mod.ts");
    assertEquals((await modules.call(s, "step", {}, 10_000)).value, "v0");
    for (let n = 1; n <= 4; n++) {
      // What the registry does when a plugin's file changes: stop its worker; the next call comes at once,
      // before the host has said the old worker ended.
      await Deno.writeTextFile(join(dir, "mod.ts"), version(n));
      modules.stop(s.key);
      const answer = await modules.call(s, "step", {}, 10_000);
      assertEquals(answer.value, `v${n}`, `after edit ${n}`);
      assert(answer.coldMs !== undefined, `edit ${n}: a new worker answered`);
      // The old worker's end, said after the new one started, must not make this one forgotten: a
      // forgotten worker is never stopped at the next edit, and serves its old module.
      assert(modules.running(s.key), `edit ${n}: the worker that answered is known to run`);
      assertEquals(modules.stats().workers, 1);
    }
  } finally {
    modules.close();
    await Deno.remove(dir, { recursive: true });
  }
});
