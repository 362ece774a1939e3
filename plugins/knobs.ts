/**
 * The plugin host's tuning knobs from the environment (tests shorten the idle time; a box short of
 * memory lowers the heap cap).
 *
 * @module
 */
import { positiveFromEnv } from "../core/knobs.ts";

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
