/**
 * The one wait of the tests: {@linkcode until} re-checks a condition whenever the box's or the agent's
 * event stream reports something, and only where no event source exists (a file, a process, a port) on a
 * plain backoff. It replaced `eventually` (a check every 50 ms whatever happened), `waitForEvent` and the
 * loops of `setTimeout` written in place.
 *
 * @module
 */
import { AgentClient } from "../client/agent.ts";
import type { DockEvent } from "../client/wire.ts";

/** Anything with the box's or the agent's event stream (`BoxClient`, `AgentClient`). */
export interface EventSource {
  events(options: { after?: number; signal?: AbortSignal }): AsyncGenerator<DockEvent>;
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
 * Resolves with `check`'s first value that is neither `undefined` nor `false`, checked at once and then on
 * each event of `options.on` (or on a backoff); throws after `timeoutMs` with the last error `check` threw.
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
          if (value !== undefined && value !== false) return resolve(value as T);
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
  (async () => {
    await run();
    if (source) {
      try {
        for await (const event of source.stream.events({ after: options.after ?? 0, signal: stop.signal })) {
          seen++;
          pending.push(event);
          void run();
        }
      } catch { /* the stream ended (aborted, or its daemon stopped): the backoff takes over */ }
    }
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
