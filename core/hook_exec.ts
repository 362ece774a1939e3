/**
 * How one hook or gate runs: the executor seam between the hook engine (`hooks.ts`: which hooks match,
 * when, how many at once) and what executes a hook, and the first executor, the shell (spec 2.5: "run
 * through `/bin/sh -c`"; `hook_command.ts` says when a hook needs no shell, or no process group).
 *
 * Several hooks of one event that the shell runs alone (builtins that never fork, `runsInShellOnly`)
 * start together from one `/bin/sh` that forks a subshell for each ({@linkcode BATCH_SCRIPT}): dockd
 * then spawns one process, not ten. Deno's spawn blocks the event loop until the child has exec'd
 * (~0.43 ms p50 each inside dockd on a quiet machine, more under load), so ten spawns in one tick
 * started the tenth hook 2.79× later than one (bench/hooks.ts); a fork of a small shell costs tens of
 * microseconds and runs the hook with no exec at all. Measured in one process with a 90 MB heap on a
 * shared 2-core machine (load 20–40), three rounds of 80: ten `echo … > FIFO` hooks all started in
 * 9.4–11.6 ms as ten spawns, 3.8–4.3 ms from one shell; one hook alone 1.1–1.4 ms.
 *
 * @module
 */
import type { HookConfig } from "../client/wire.ts";
import { parseDuration } from "../client/duration.ts";
import { run, type RunResult, track } from "./runner.ts";
import { directCommand, runsInShellOnly } from "./hook_command.ts";

/** Default hook timeout (spec 8). */
export const HOOK_TIMEOUT_MS = 60_000;
/** Default gate timeout (spec 8). */
export const GATE_TIMEOUT_MS = 30_000;

/** True for a gate (`before:<action>`). */
export function isGate(hook: HookConfig): boolean {
  return hook.on.startsWith("before:");
}

/** A hook's timeout in milliseconds: its own, else 1 m (30 s for gates). */
export function hookTimeoutMs(hook: HookConfig): number {
  if (hook.timeout) return parseDuration(hook.timeout);
  return isGate(hook) ? GATE_TIMEOUT_MS : HOOK_TIMEOUT_MS;
}

/** How one hook or gate run ended. Its output is for the gate's refusal message only, never logged. */
export interface HookResult {
  /** The exit code (0 allows a gate); null when it was killed. */
  code: number | null;
  timedOut: boolean;
  durationMs: number;
  /** What it wrote to stderr (a refusing gate's reason is its first line). */
  stderr: string;
}

/** Where a hook runs and what it gets. */
export interface HookRunContext {
  cwd?: string;
  /** A module hook's `module` is relative to this folder (the one holding the file that names it). */
  moduleBase?: string;
  /** The folder a module hook must stay inside (symlinks included): the repository, or `DOCK_HOME`. */
  moduleRoot?: string;
  /** The child's whole environment. */
  env: Record<string, string>;
  /** Aborts the run (the runner is closing). */
  signal?: AbortSignal;
}

/**
 * What runs one hook or gate: the seam between the engine (which hooks match, when, how many at once)
 * and the thing that executes a hook. `input` is the event or gate request as JSON. A run past the
 * hook's timeout must end with `timedOut`; a run that cannot start throws.
 */
export interface HookExecutor {
  run(hook: HookConfig, input: string, context: HookRunContext): Promise<HookResult>;
  /**
   * Runs several hooks of one event, all with the same input and context, and answers one result per
   * hook, in order (the engine calls it when more than one starts at once). Without it, `run` each.
   */
  runMany?(hooks: HookConfig[], input: string, context: HookRunContext): Promise<HookResult>[];
}

/**
 * What a hook the shell runs alone reads on stdin: the input as one line, ended by a newline, whether
 * it starts alone or with others (the batch's here-document always ends its text with one), so `read`
 * succeeds either way.
 */
function asLine(input: string): string {
  return input.endsWith("\n") ? input : `${input}\n`;
}

/**
 * Runs a hook through `/bin/sh -c RUN` (or, when RUN is plain words naming a program, that program
 * directly: `hook_command.ts`), `input` on its stdin, killed with its group at its timeout (a shell that
 * runs only builtins forks nothing: it is started without a group and killed alone). Several that the
 * shell runs alone start from one shell ({@linkcode runBatch}).
 */
export const shellExecutor: HookExecutor = {
  async run(hook, input, context) {
    if (hook.run === undefined) throw new Error(`the module hook ${hook.module} needs the plugin host`);
    const shellOnly = runsInShellOnly(hook.run);
    const options = {
      cwd: context.cwd,
      env: context.env,
      clearEnv: true,
      stdin: shellOnly ? asLine(input) : input,
      timeoutMs: hookTimeoutMs(hook),
      signal: context.signal,
      maxOutput: 64 * 1024,
    };
    const direct = directCommand(hook.run);
    let result: RunResult | undefined;
    if (direct) {
      try {
        // What the shell would have exported: the folder it runs in.
        const env = { ...context.env, PWD: context.cwd ?? Deno.cwd() };
        result = await run(direct.cmd, direct.args, { ...options, env });
      } catch (error) {
        // A program not found: the shell's answer (127 and its message) rather than a failed start.
        if (!(error instanceof Deno.errors.NotFound)) throw error;
      }
    }
    // Only in-process builtins: the shell never forks, so it needs no group of its own to be killed whole.
    result ??= await run("/bin/sh", ["-c", hook.run], { ...options, group: !shellOnly });
    return {
      code: result.code,
      timedOut: result.timedOut,
      durationMs: result.durationMs,
      stderr: result.stderr,
    };
  },
  runMany(hooks, input, context) {
    const together = hooks.filter((hook) => hook.run !== undefined && batchable(hook.run));
    if (together.length < 2) return hooks.map((hook) => this.run(hook, input, context));
    const batch = runBatch(
      together.map((hook) => ({ run: hook.run!, timeoutMs: hookTimeoutMs(hook) })),
      { cwd: context.cwd, env: context.env, input, signal: context.signal },
    );
    let next = 0;
    return hooks.map((hook) => together.includes(hook) ? batch[next++] : this.run(hook, input, context));
  },
};

// ---------------------------------------------------------------------------------------------------
// Several builtin-only hooks from one shell

/**
 * Whether a hook can start in a batch: the shell runs it alone (`runsInShellOnly`), and it does not
 * read what names its shell's process (`$$`, `$PPID`), which in a batch would be the launcher's.
 */
export function batchable(run: string): boolean {
  return runsInShellOnly(run) && !run.includes("$$") && !run.includes("PPID");
}

/**
 * The launcher: `sh -c BATCH_SCRIPT /bin/sh RUN…` forks a subshell per RUN and says `s <index> <pid>`
 * for each, then `e <index> <status>` as each ends (its EXIT trap, on fd 3: the launcher's stdout; the
 * hook's own output goes to /dev/null, as a hook's output is never kept). In the subshell the hook sees
 * what `/bin/sh -c RUN` would: `$0` is `/bin/sh`, no positional parameters, none of the launcher's
 * variables; the input (`dock_hook_input`, lowercase so no event field's `DOCK_*` variable can be it,
 * and no secret: the event is in `DOCK_EVENT_*` already) arrives on stdin as a here-document.
 */
export const BATCH_SCRIPT = `dock_hook_n=0
for dock_hook_run; do
  (
    trap "echo e $dock_hook_n \\$? >&3" EXIT
    eval "unset dock_hook_input dock_hook_run dock_hook_n; set --; $dock_hook_run"
  ) 3>&1 >/dev/null 2>&1 <<DOCK_HOOK_INPUT &
$dock_hook_input
DOCK_HOOK_INPUT
  echo "s $dock_hook_n $!"
  dock_hook_n=$((dock_hook_n + 1))
done
wait
`;

/** The longest launcher line kept while its end has not come (`e 15 255` is 8 characters). */
const MAX_LINE = 256;

/** One hook of a batch: its command and its timeout. */
export interface BatchItem {
  run: string;
  timeoutMs: number;
}

/** Where a batch runs and what its hooks get. */
export interface BatchOptions {
  cwd?: string;
  /** The hooks' whole environment. */
  env: Record<string, string>;
  /** What each hook reads on stdin (as one line, see `asLine`). */
  input: string;
  /** Kills every hook of the batch. */
  signal?: AbortSignal;
}

/** One hook of a running batch: its pid once the launcher says it, and how it is to end. */
interface Member {
  pid?: number;
  done: boolean;
  timedOut: boolean;
  timer?: ReturnType<typeof setTimeout>;
  untrack?: () => void;
  resolve: (result: HookResult) => void;
  reject: (error: unknown) => void;
}

/**
 * Starts `items` from one `/bin/sh` ({@linkcode BATCH_SCRIPT}); answers one result per item, in order.
 * Each is killed alone at its timeout (it forks nothing, so it needs no group) and counted among the
 * runner's live children meanwhile. A hook that ends without the launcher reporting its status (killed
 * from outside) ends with code null.
 */
export function runBatch(items: BatchItem[], options: BatchOptions): Promise<HookResult>[] {
  const started = performance.now();
  const members: Member[] = [];
  const results = items.map((item) =>
    new Promise<HookResult>((resolve, reject) => {
      const member: Member = { done: false, timedOut: false, resolve, reject };
      member.timer = setTimeout(() => {
        member.timedOut = true;
        kill(member);
      }, item.timeoutMs);
      members.push(member);
    })
  );
  const finish = (member: Member, code: number | null) => {
    if (member.done) return;
    member.done = true;
    clearTimeout(member.timer);
    member.untrack?.();
    member.resolve({ code, timedOut: member.timedOut, durationMs: performance.now() - started, stderr: "" });
  };
  const kill = (member: Member) => {
    if (member.pid === undefined || member.done) return; // killed as soon as its pid is known
    try {
      Deno.kill(member.pid, "SIGKILL");
    } catch { /* already gone */ }
    finish(member, null);
  };
  const abort = () => members.forEach(kill);
  options.signal?.addEventListener("abort", abort, { once: true });
  const decoder = new TextDecoder();
  let partial = "";
  const onLine = (line: string) => {
    const [kind, index, value] = line.split(" ");
    const member = members[Number(index)];
    if (!member || !/^\d+$/.test(index ?? "") || !/^\d+$/.test(value ?? "")) return;
    if (kind === "s" && member.pid === undefined) {
      member.pid = Number(value);
      member.untrack = track(member.pid);
      if (member.timedOut || options.signal?.aborted) kill(member);
    } else if (kind === "e") finish(member, Number(value));
  };
  run("/bin/sh", ["-c", BATCH_SCRIPT, "/bin/sh", ...items.map((item) => item.run)], {
    cwd: options.cwd,
    env: { ...options.env, dock_hook_input: options.input },
    clearEnv: true,
    group: false,
    maxOutput: 64 * 1024,
    // Not the abort signal: the launcher is let finish its loop, so that every subshell it forks is
    // named and killed (killing it midway would orphan one it forked and not yet named).
    onOutput: (chunk, stream) => {
      if (stream !== "stdout") return;
      partial += decoder.decode(chunk, { stream: true });
      const lines = partial.split("\n");
      partial = lines.pop()!;
      // The launcher's lines are short; a longer one without its end is a hook writing to fd 3 (bounded).
      if (partial.length > MAX_LINE) partial = "";
      lines.forEach(onLine);
    },
  }).then(
    () => members.forEach((member) => finish(member, null)),
    (error) => {
      // The launcher did not start: every hook of the batch fails as a hook that cannot start does.
      for (const member of members) {
        member.done = true;
        clearTimeout(member.timer);
        member.reject(error);
      }
    },
  ).finally(() => options.signal?.removeEventListener("abort", abort));
  return results;
}
