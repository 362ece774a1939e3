/**
 * The tests' waits for processes to end, woken by the kernel: a pidfd per process (`pidfd_open`, Linux
 * 5.3), polled on one of Deno's blocking threads by a nonblocking FFI call, with an eventfd to end the
 * poll at the wait's deadline. Not a backoff over `/proc`: the wait wakes when one of the processes it
 * watches ends, and looks again for what is left. Where pidfds are not to be had, it backs off as
 * `until` does (tests/wait.ts).
 *
 * @module
 */
import { isAlive } from "../daemon/procs.ts";
import { until } from "./wait.ts";

/** Options of {@linkcode untilGone}. */
export interface UntilGoneOptions {
  /** @default {10_000} */
  timeoutMs?: number;
  /** What is awaited, for the error. */
  what?: string;
}

/** `pidfd_open` on Linux (the same number on x86_64 and aarch64). */
const SYS_PIDFD_OPEN = 434;
const POLLIN = 1;

const LIBC = {
  syscall: { parameters: ["i64", "i64", "i64"], result: "i64" },
  poll: { parameters: ["buffer", "u64", "i32"], result: "i32", nonblocking: true },
  eventfd: { parameters: ["u32", "i32"], result: "i32" },
  write: { parameters: ["i32", "buffer", "u64"], result: "i64" },
  close: { parameters: ["i32"], result: "i32" },
} as const;

type Libc = Deno.DynamicLibrary<typeof LIBC>["symbols"];

let libc: Libc | null | undefined;

/** libc's calls, opened on first use; null where it cannot be (not Linux, no glibc). */
function openLibc(): Libc | null {
  if (libc !== undefined) return libc;
  try {
    libc = Deno.build.os === "linux" ? Deno.dlopen("libc.so.6", LIBC).symbols : null;
  } catch {
    libc = null;
  }
  return libc;
}

/**
 * Resolves once the processes `pids` names have all ended: a list, or a `find` that names those still to
 * end (asked at once, then each time one it named last ends). Throws after `timeoutMs`, naming those still
 * running, or at once when `find` throws. A process that leaves `find`'s list without ending (an exec that
 * drops the marker it was found by) is seen only at the next end or the deadline: `find` names processes
 * that are to end.
 */
export async function untilGone(
  pids: number[] | (() => number[]),
  options: UntilGoneOptions = {},
): Promise<void> {
  const timeoutMs = options.timeoutMs ?? 10_000;
  const what = options.what ?? "processes";
  const find = Array.isArray(pids) ? () => pids : pids;
  // Ended as the kernel said (its pidfd readable, or none to be had for a pid gone): a zombie not yet
  // reaped, which `/proc` and `kill -0` still show, counts as gone.
  const ended = new Set<number>();
  const running = () => find().filter((pid) => !ended.has(pid));
  const started = performance.now();
  // Where pidfds are not to be had (not Linux, an old kernel, another user's process): `until`'s backoff,
  // for the time left.
  const backoff = () =>
    until(() => running().every((pid) => !isAlive(pid)), {
      timeoutMs: Math.max(0, timeoutMs - (performance.now() - started)),
      what: `${what} gone`,
    });
  const calls = openLibc();
  const cancel = calls ? calls.eventfd(0, 0) : -1;
  if (!calls || cancel < 0) return void await backoff();
  let timedOut = false;
  let polling: Promise<unknown> = Promise.resolve();
  const timer = setTimeout(() => {
    timedOut = true;
    // The eventfd turns readable: the poll in flight returns, and each after it at once.
    calls.write(cancel, new BigUint64Array([1n]), 8n);
  }, timeoutMs);
  try {
    for (let left = running(); left.length; left = running()) {
      if (timedOut) throw new Error(`${what} not gone in ${timeoutMs} ms: ${left.join(", ")} still running`);
      const watched: [pid: number, fd: number][] = [];
      for (const pid of left) {
        const fd = Number(calls.syscall(BigInt(SYS_PIDFD_OPEN), BigInt(pid), 0n));
        if (fd >= 0) watched.push([pid, fd]);
        else if (!isAlive(pid)) ended.add(pid);
        else {
          for (const [, open] of watched) calls.close(open);
          return void await backoff();
        }
      }
      if (watched.length === 0) continue;
      const set = new DataView(new ArrayBuffer(8 * (watched.length + 1)));
      [...watched.map(([, fd]) => fd), cancel].forEach((fd, i) => {
        set.setInt32(8 * i, fd, true);
        set.setInt16(8 * i + 4, POLLIN, true);
      });
      polling = calls.poll(new Uint8Array(set.buffer), BigInt(watched.length + 1), -1);
      await polling;
      watched.forEach(([pid, fd], i) => {
        if (set.getInt16(8 * i + 6, true) !== 0) ended.add(pid);
        calls.close(fd);
      });
    }
  } finally {
    clearTimeout(timer);
    await polling;
    calls.close(cancel);
  }
}
