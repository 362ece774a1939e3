/**
 * The plugin host's limits: the defaults the supervisor runs calls within, and the knobs that change
 * them from the environment (tests shorten the idle time; a box short of memory lowers the heap cap).
 *
 * @module
 */
import { positiveFromEnv } from "../core/knobs.ts";

/** Failures in a row that make a plugin `failed`. */
export const FAILURES_TO_FAIL = 5;
/**
 * How long a worker lives after its last call answered, at most (as Cloudflare's `waitUntil` allows work
 * after a response, for a bounded time): then it is terminated, and its timers with it. Without a bound,
 * a timer left by a handler ran on for the 5 minutes a worker was kept warm. A cold start costs a worker
 * (not a process: the host is kept for {@linkcode HOST_IDLE_MS}).
 */
export const WORK_AFTER_RESPONSE_MS = 10_000;
/** How long the host process is kept with no worker (a worker's cold start then costs no process). */
export const HOST_IDLE_MS = 5 * 60_000;
/** Default calls one plugin runs at once. */
export const PLUGIN_CONCURRENCY = 4;
/** Default calls one plugin may have waiting (fetch, gates); past it a call is refused with 429. */
export const PLUGIN_BACKLOG = 1000;
/**
 * Events one plugin may have waiting; past it the oldest are dropped and counted. As many as the
 * journal keeps: a queued event is the bus's own object, shared by every plugin that waits for it.
 */
export const PLUGIN_EVENT_BACKLOG = 10_000;
/** Events one call carries at most. */
export const EVENT_BATCH = 64;
/** Deadline of a `fetch` call. */
export const FETCH_TIMEOUT_MS = 60_000;

/**
 * `DOCK_PLUGIN_IDLE_MS`, `DOCK_PLUGIN_MEMORY_MB`, `DOCK_PLUGIN_HOST_MEMORY_MB`, `DOCK_PLUGIN_CONCURRENCY`,
 * `DOCK_PLUGIN_SCAN_MS`, `DOCK_PLUGIN_DATA_QUOTA_MB`.
 */
export function pluginKnobs(): {
  idleMs?: number;
  memoryMb?: number;
  rssLimitMb?: number;
  concurrency?: number;
  scanMs?: number;
  dataQuotaMb?: number;
} {
  return {
    rssLimitMb: positiveFromEnv("DOCK_PLUGIN_HOST_MEMORY_MB"),
    idleMs: positiveFromEnv("DOCK_PLUGIN_IDLE_MS"),
    memoryMb: positiveFromEnv("DOCK_PLUGIN_MEMORY_MB"),
    concurrency: positiveFromEnv("DOCK_PLUGIN_CONCURRENCY"),
    scanMs: positiveFromEnv("DOCK_PLUGIN_SCAN_MS"),
    dataQuotaMb: positiveFromEnv("DOCK_PLUGIN_DATA_QUOTA_MB"),
  };
}
