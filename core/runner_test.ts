import { assert, assertEquals } from "../tests/assert.ts";
import { CGROUP_ENTRY_FAILED, run, shell, TailBuffer, which } from "./runner.ts";

Deno.test("TailBuffer keeps the newest bytes", () => {
  const tail = new TailBuffer(5);
  const enc = new TextEncoder();
  tail.push(enc.encode("abc"));
  assertEquals([tail.text(), tail.truncated], ["abc", false]);
  tail.push(enc.encode("defg"));
  assertEquals([tail.text(), tail.truncated], ["cdefg", true]);
  tail.push(enc.encode("0123456789"));
  assertEquals(tail.text(), "56789");
});

Deno.test("run captures output, exit code and stdin", async () => {
  const result = await run("sh", ["-c", "cat; echo err >&2; exit 4"], { stdin: "in\n" });
  assertEquals([result.code, result.stdout, result.stderr, result.timedOut], [4, "in\n", "err\n", false]);
  assertEquals(result.output, "in\nerr\n");
});

Deno.test("a timeout kills the whole process group", async () => {
  const dir = await Deno.makeTempDir();
  const result = await run("sh", ["-c", `sleep 20 & echo $! > ${dir}/pid; wait`], { timeoutMs: 300 });
  assertEquals(result.timedOut, true);
  assertEquals(result.signal, "SIGKILL");
  const pid = Number(await Deno.readTextFile(`${dir}/pid`));
  const state = await Deno.readTextFile(`/proc/${pid}/stat`).then((s) => s.split(" ")[2]).catch(() => "gone");
  assert(state === "gone" || state === "Z", `the background child is ${state}`);
  await Deno.remove(dir, { recursive: true });
});

Deno.test("a child that cannot enter its cgroup runs nothing and says why", async () => {
  const dir = await Deno.makeTempDir();
  // Not a cgroup: cgroup.procs cannot be created in a folder that does not exist.
  const result = await run("sh", ["-c", `touch ${dir}/ran`], { cgroup: `${dir}/missing` });
  assertEquals(result.code, CGROUP_ENTRY_FAILED);
  assert(result.stderr.includes(`${dir}/missing/cgroup.procs`), result.stderr);
  assertEquals(await Deno.stat(`${dir}/ran`).then(() => true, () => false), false);
  await Deno.remove(dir, { recursive: true });
});

Deno.test("an abort signal kills the child", async () => {
  const controller = new AbortController();
  setTimeout(() => controller.abort(), 100);
  const result = await run("sleep", ["20"], { signal: controller.signal });
  assertEquals(result.signal, "SIGKILL");
});

Deno.test("shell runs through a login shell; which finds commands", async () => {
  const result = await shell("echo $0", { env: { SHELL: "/bin/sh" } });
  assertEquals(result.code, 0);
  assert(which("sh")?.endsWith("/sh"));
  assertEquals(which("no-such-command-here"), null);
});

Deno.test("run: output read in many chunks keeps every chunk whole, across runs at once", async () => {
  // ~290 KB on stdout takes several reads of the pipe; a chunk handed to onOutput is kept by the
  // caller, so a read after it must not change it (the runner reads into a buffer it reuses).
  const expected = Array.from({ length: 50_000 }, (_, i) => `${i + 1}\n`).join("");
  const kept: Uint8Array[] = [];
  const [big, other] = await Promise.all([
    run("seq", ["1", "50000"], { group: false, onOutput: (chunk) => kept.push(chunk) }),
    run("sh", ["-c", "seq 1 50000 >&2"], { group: false }),
  ]);
  assert(kept.length > 1, `one chunk only (${kept.length}): the test needs several reads`);
  const decoder = new TextDecoder();
  assertEquals(kept.map((chunk) => decoder.decode(chunk)).join(""), expected);
  assertEquals(big.stdout, expected);
  assertEquals(other.stderr, expected);
  // The next runs take the buffers back: their output is theirs alone.
  const again = await Promise.all([
    run("echo", ["one"], { group: false }),
    run("echo", ["two"], { group: false }),
  ]);
  assertEquals(again.map((result) => result.stdout), ["one\n", "two\n"]);
  assertEquals(decoder.decode(kept[0]).slice(0, 8), "1\n2\n3\n4\n");
});

Deno.test("run: an onOutput that throws rejects the run with its error, and later runs are unharmed", async () => {
  const error = await run("seq", ["1", "50000"], {
    group: false,
    onOutput: () => {
      throw new Error("consumer failed");
    },
  }).then(() => null, (caught: Error) => caught);
  assertEquals(error?.message, "consumer failed");
  // The next run of the process still works (no buffer or pipe left in a bad state).
  assertEquals((await run("echo", ["after"], { group: false })).stdout, "after\n");
});
