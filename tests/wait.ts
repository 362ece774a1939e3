/**
 * The one wait of the tests: {@linkcode until} re-checks a condition whenever the box's or the agent's
 * event stream reports something, a watched file or folder changes (inotify), or a test's own state says
 * it changed (`wake`), and only where none can tell on a plain backoff. It replaced `eventually` (a check every 50 ms whatever happened), `waitForEvent` and the
 * loops of `setTimeout` written in place.
 *
 * @module
 */
import { dirname } from "../core/posix_path.ts";
import { AgentClient } from "../client/agent.ts";
import type { DockEvent } from "../client/wire.ts";

/** Anything with the box's or the agent's event stream (`BoxClient`, `AgentClient`). */
export interface EventSource {
  events(options: { after?: number; signal?: AbortSignal }): AsyncGenerator<DockEvent>;
}

/** A test's own state saying it changed, for `until`'s `wake`: `changed()` re-checks the waits woken by it. */
export class Changes extends EventTarget {
  changed(): void {
    this.dispatchEvent(new Event("change"));
  }
}

/** What a wait re-checks on: an event source, a test box (its client), or a test agent (its URL and token). */
export type WaitOn = EventSource | { client: EventSource } | { url: string; token: string };

/** Options of {@linkcode until}. */
export interface UntilOptions {
  /**
   * Re-check whenever this reports an event (read from event `after`, so none that came before the stream
   * opened is missed; events that come while a check runs go together to the next one). Without it, or
   * once its stream ends (a daemon stopped), the condition is re-checked on a backoff.
   */
  on?: WaitOn;
  /**
   * Re-check whenever something changes in these folders, or in the folder of each file named (a file
   * written, made, renamed or removed there), as the kernel reports it (`Deno.watchFs`): for facts on disk
   * that no event announces. A path that names a folder, or ends in `/`, is watched itself; any other,
   * through its folder. A folder that does not exist yet is watched through the nearest one that does, and
   * deeper once it is made. Where nothing can be watched, the backoff takes over.
   */
  watch?: string | string[];
  /**
   * Re-check whenever this dispatches a `change` event ({@linkcode Changes}): for state a test holds itself
   * (a fake's record of what it was sent, a stream reader's events), whose writer says when it changed.
   */
  wake?: EventTarget;
  /** The event id the stream starts after. @default {0} */
  after?: number;
  /** @default {10_000} */
  timeoutMs?: number;
  /** What is awaited, for the error. */
  what?: string;
}

/**
 * A check: given the events that came since the previous check (none for the first, nor on the
 * backoff), its answer ends the wait with that value unless it is `undefined` or `false`.
 */
export type Check<T> = (events: DockEvent[]) => T | undefined | false | Promise<T | undefined | false>;

/** The first and the longest pause of the backoff: a condition met is seen at most 100 ms late. */
const BACKOFF_MS: [number, number] = [5, 100];

/**
 * Resolves with `check`'s first value that is neither `undefined` nor `false`, checked at once and then
 * whenever a wake source says something changed (`on`, `watch`, `wake`), or on a backoff where none is
 * given or once a stream or a watch ends; throws after `timeoutMs` with the last error `check` threw.
 */
export async function until<T>(check: Check<T>, options: UntilOptions = {}): Promise<T> {
  const timeoutMs = options.timeoutMs ?? 10_000;
  const stop = new AbortController();
  const { promise: done, resolve, reject } = Promise.withResolvers<T>();
  let last: unknown;
  let checks = 0;
  let seen = 0;
  let pending: DockEvent[] = [];
  let running = false;
  let due = false;
  let met = false;
  const run = async () => {
    if (running) return void (due = true); // coalesced: once more when this check ends
    running = true;
    try {
      do {
        due = false;
        checks++;
        const events = pending;
        pending = [];
        try {
          const value = await check(events);
          if (value !== undefined && value !== false) {
            met = true;
            return resolve(value as T);
          }
        } catch (error) {
          last = error;
        }
      } while (due && !stop.signal.aborted);
    } finally {
      running = false;
    }
  };
  const timer = setTimeout(() => {
    const events = options.on ? `, ${seen} events` : "";
    const why = last ? `: ${(last as Error).message}` : "";
    reject(
      new Error(
        `${options.what ?? "condition"} not met in ${timeoutMs} ms (${checks} checks${events})${why}`,
      ),
    );
  }, timeoutMs);
  const source = options.on ? eventSource(options.on) : undefined;
  let watching: ReturnType<typeof watchFolders> | undefined;
  const streamed = async () => {
    try {
      for await (const event of source!.stream.events({ after: options.after ?? 0, signal: stop.signal })) {
        seen++;
        pending.push(event);
        void run();
      }
    } catch { /* the stream ended (aborted, or its daemon stopped) */ }
  };
  const onWake = () => void run();
  options.wake?.addEventListener("change", onWake);
  (async () => {
    await run();
    if (met || stop.signal.aborted) return;
    if (options.watch !== undefined) {
      // Opened only for a wait the first check did not end (each watch is an inotify instance, of 128 a
      // user here), and checked once more: a change between that check and the watch is not missed.
      watching = watchFolders(options.watch, () => void run());
      if (stop.signal.aborted) watching.close(); // timed out during the first check
      await run();
    }
    // The backoff takes over once a stream or a watch ends (a daemon stopped, a watch failed), or at once
    // with no wake source at all; a `wake` never ends.
    const sources = [...(source ? [streamed()] : []), ...(watching ? [watching.ended] : [])];
    if (sources.length) await Promise.race(sources);
    else if (options.wake) return;
    for (let pause = BACKOFF_MS[0]; !stop.signal.aborted; pause = Math.min(pause * 2, BACKOFF_MS[1])) {
      await new Promise((r) => setTimeout(r, pause));
      if (!stop.signal.aborted) await run();
    }
  })();
  try {
    return await done;
  } finally {
    clearTimeout(timer);
    stop.abort();
    source?.close();
    watching?.close();
    options.wake?.removeEventListener("change", onWake);
  }
}

/**
 * Calls `onChange` on each change the kernel reports in the folders of `paths` ({@linkcode folderOf}), each
 * watched where it exists or through its nearest existing ancestor until it does. `ended` resolves once
 * nothing can be watched (the caller backs off then), or once closed.
 */
function watchFolders(
  paths: string | string[],
  onChange: () => void,
): { ended: Promise<void>; close(): void } {
  const wanted = [...new Set((Array.isArray(paths) ? paths : [paths]).map(folderOf))];
  const { promise: ended, resolve: end } = Promise.withResolvers<void>();
  let watcher: Deno.FsWatcher | undefined;
  let closed = false;
  const open = (): string[] | undefined => {
    const folders = [...new Set(wanted.map(nearestFolder))];
    try {
      watcher = Deno.watchFs(folders, { recursive: false });
      return folders;
    } catch {
      return undefined;
    }
  };
  (async () => {
    let folders = open();
    while (folders && !closed) {
      // Watched through an ancestor: a folder waited for is not there yet.
      const early = wanted.some((folder) => !folders!.includes(folder));
      // A folder waited for was made: watch it instead of its ancestor. Looked at once the watch is on
      // too: one made between the look that chose the ancestor and the watch sent it no event.
      const made = () => early && wanted.some((folder) => !folders!.includes(nearestFolder(folder)));
      try {
        if (!made()) {
          for await (const _ of watcher!) {
            onChange();
            if (made()) break;
          }
        }
      } catch { /* closed, or the watch failed */ }
      if (closed) break;
      try {
        watcher?.close();
      } catch { /* closed */ }
      folders = open();
      onChange();
    }
    end();
  })();
  return {
    ended,
    close: () => {
      closed = true;
      try {
        watcher?.close();
      } catch { /* closed */ }
    },
  };
}

/** The folder a watch of `path` watches: the path itself when it is a folder or ends in `/`, else its folder. */
function folderOf(path: string): string {
  if (path.length > 1 && path.endsWith("/")) return path.slice(0, -1);
  try {
    if (Deno.statSync(path).isDirectory) return path;
  } catch { /* not there yet */ }
  return dirname(path);
}

/** `folder`, or its nearest ancestor that exists. */
function nearestFolder(folder: string): string {
  for (let at = folder;; at = dirname(at)) {
    try {
      if (Deno.statSync(at).isDirectory) return at;
    } catch { /* not there yet */ }
    if (at === dirname(at)) return at;
  }
}

/** Resolves with the first event (after event `after`, 0 unless told) that `predicate` accepts. */
export function untilEvent(
  on: WaitOn,
  predicate: (event: DockEvent) => boolean,
  options: Omit<UntilOptions, "on"> = {},
): Promise<DockEvent> {
  return until((events) => events.find(predicate), { what: "an event", ...options, on });
}

/** The event stream of `on`, and what closes the client made for it (an agent's). */
function eventSource(on: WaitOn): { stream: EventSource; close(): void } {
  if ("events" in on) return { stream: on, close: () => {} };
  if ("client" in on) return { stream: on.client, close: () => {} };
  const client = new AgentClient({ url: on.url, token: on.token, origin: "test" });
  return { stream: client, close: () => client.close() };
}
