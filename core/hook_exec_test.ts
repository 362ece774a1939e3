import { assert, assertEquals } from "../tests/assert.ts";
import { batchable, runBatch, shellExecutor } from "./hook_exec.ts";
import { HookRunner } from "./hooks.ts";
import { MemoryLog } from "./log.ts";

/** A hook that writes its parent's pid (field 4 of its own `/proc/self/stat`, read by the shell itself) to `file`. */
function parentOf(file: string): string {
  return `read -r stat < /proc/self/stat; set -- $stat; echo "$4" > ${file}`;
}

/** Reads the pid a {@linkcode parentOf} hook wrote. */
async function readParent(file: string): Promise<number> {
  return Number((await Deno.readTextFile(file)).trim());
}

Deno.test("batchable: builtin-only hooks, but none that reads its shell's pid", () => {
  assert(batchable(`echo "$DOCK_N" > out`));
  assert(batchable(`read -r line; printf '%s' "$line" > out`));
  assert(!batchable("echo $$ > pid"), "$$ names the shell's own process");
  assert(!batchable(`echo "$PPID" > pid`));
  assert(!batchable("tee -a out"), "a program");
  assert(!batchable("cat > in.json; echo done"));
});

Deno.test("shellExecutor.runMany: builtin-only hooks start from one shell, each with the event, env, folder and its own end", async () => {
  const dir = await Deno.realPath(await Deno.makeTempDir());
  try {
    const input = JSON.stringify({ type: "x", data: { text: "a $HOME `b` \\n" } });
    const hooks = [
      // What `/bin/sh -c RUN` shows: $0, no positional parameters, none of the launcher's variables.
      `read -r line; printf '%s|%s|%s|%s|%s|%s' "$line" "$HOOK_VAR" "$PWD" "$0" "$#" ` +
      `"\${dock_hook_input-unset}\${dock_hook_run-unset}\${dock_hook_n-unset}" > ${dir}/seen`,
      `${parentOf(`${dir}/p1`)}; exit 3`,
      parentOf(`${dir}/p2`),
      "tee -a nothing-here-runs-alone >/dev/null; exit 5", // not builtin-only: started alone
    ].map((run) => ({ on: "x", run }));
    const results = await Promise.all(
      shellExecutor.runMany!(hooks, input, { cwd: dir, env: { HOOK_VAR: "v", PATH: "/usr/bin:/bin" } }),
    );
    assertEquals(results.map((r) => [r.code, r.timedOut]), [[0, false], [3, false], [0, false], [5, false]]);
    assertEquals(
      await Deno.readTextFile(`${dir}/seen`),
      `${input}|v|${dir}|/bin/sh|0|unsetunsetunset`,
    );
    const [p1, p2] = [await readParent(`${dir}/p1`), await readParent(`${dir}/p2`)];
    assertEquals(p1, p2, "both forked by one launcher");
    assert(p1 !== Deno.pid, "not spawned one by one by this process");
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("shellExecutor: one builtin-only hook alone reads the same line as one started with others", async () => {
  const dir = await Deno.realPath(await Deno.makeTempDir());
  try {
    const run = (file: string) => ({ on: "x", run: `read -r line; echo "$?|$line" > ${dir}/${file}` });
    const context = { cwd: dir, env: {} };
    await shellExecutor.run(run("alone"), '{"type":"x"}', context);
    await Promise.all(shellExecutor.runMany!([run("a"), run("b")], '{"type":"x"}', context));
    const alone = await Deno.readTextFile(`${dir}/alone`);
    assertEquals(alone, '0|{"type":"x"}\n', "a whole line: read succeeds");
    assertEquals([await Deno.readTextFile(`${dir}/a`), await Deno.readTextFile(`${dir}/b`)], [alone, alone]);
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("runBatch: a blocked hook is killed at its own timeout; the others end at once; an abort kills the rest", async () => {
  const dir = await Deno.realPath(await Deno.makeTempDir());
  try {
    // Opening a FIFO nobody reads blocks the subshell itself.
    const fifo = `${dir}/nobody-reads`;
    assertEquals((await new Deno.Command("mkfifo", { args: [fifo] }).output()).code, 0);
    const [blocked, quick] = runBatch(
      [{ run: `echo x > ${fifo}`, timeoutMs: 300 }, { run: "exit 4", timeoutMs: 60_000 }],
      { cwd: dir, env: {}, input: "{}" },
    );
    const first = await Promise.race([blocked.then(() => "blocked"), quick.then(() => "quick")]);
    assertEquals(first, "quick", "a quick hook's end is not held back by a slow sibling");
    assertEquals((await quick).code, 4);
    const late = await blocked;
    assert(late.timedOut, "the blocked hook timed out");

    const controller = new AbortController();
    const held = runBatch(
      [{ run: `echo x > ${fifo}`, timeoutMs: 60_000 }, { run: `echo y > ${fifo}`, timeoutMs: 60_000 }],
      { cwd: dir, env: {}, input: "{}", signal: controller.signal },
    );
    controller.abort();
    const ended = await Promise.all(held);
    assertEquals(ended.map((r) => [r.code, r.timedOut]), [[null, false], [null, false]]);
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("HookRunner: builtin-only hooks of one event start from one shell; failures and timeouts still reported per hook", async () => {
  const dir = await Deno.realPath(await Deno.makeTempDir());
  const failures: { run: string; exitCode: number | null; timedOut: boolean }[] = [];
  const runner = new HookRunner({
    log: new MemoryLog(),
    onFailure: (job, outcome) =>
      failures.push({ run: job.hook.run!, exitCode: outcome.exitCode, timedOut: outcome.timedOut }),
  });
  try {
    const fifo = `${dir}/nobody-reads`;
    assertEquals((await new Deno.Command("mkfifo", { args: [fifo] }).output()).code, 0);
    const event = { id: 1, type: "t.x", time: new Date().toISOString(), data: {} };
    const env = { PATH: "/usr/bin:/bin" };
    const runs = [parentOf(`${dir}/p0`), parentOf(`${dir}/p1`), "exit 7", `echo x > ${fifo}`];
    runner.submit(...runs.map((run) => ({
      hook: { on: "t.*", run, ...(run.includes(fifo) ? { timeout: "300ms" } : {}) },
      source: "test",
      event,
      cwd: dir,
      env,
    })));
    await runner.idle();
    const [p0, p1] = [await readParent(`${dir}/p0`), await readParent(`${dir}/p1`)];
    assertEquals(p0, p1, "one launcher forked both");
    assert(p0 !== Deno.pid);
    assertEquals(
      failures.sort((a, b) => a.run.localeCompare(b.run)),
      [
        { run: `echo x > ${fifo}`, exitCode: null, timedOut: true },
        { run: "exit 7", exitCode: 7, timedOut: false },
      ],
    );
    assertEquals(runner.stats().started, 4);
  } finally {
    runner.close();
    await Deno.remove(dir, { recursive: true });
  }
});
