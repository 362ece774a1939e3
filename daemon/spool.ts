/**
 * The hook spool: events `dock hook` could not deliver because the daemon was down, slow or
 * restarting. Each is one JSON file in `<state>/box/spool/`, named so that lexical order is arrival
 * order and written under a dot-name first, so a half-written file is never read (the paths and names
 * are `core/hook_paths.ts`'s, which `dock hook` writes by). The daemon replays
 * it when it starts and again from time to time (a hook that timed out against a busy daemon spools
 * while the daemon is up).
 *
 * @module
 */
import { join } from "../core/posix_path.ts";
import type { AgentReport } from "../client/wire.ts";
import { AGENT_REPORT } from "../client/schemas.ts";
import { hookPaths, isSpooledName } from "../core/hook_paths.ts";

/** The spool folder of a state directory: `<state>/box/spool` (where `dock hook` writes: core/hook_paths.ts). */
export function spoolDir(stateDir: string): string {
  return hookPaths(stateDir).spool;
}

/**
 * Replays spooled reports oldest first and deletes each once ingested; returns how many were replayed.
 *
 * A file that is not a spooled event is moved to `<dir>/bad/` and skipped. When `ingest` throws, the
 * replay stops there and keeps that file and the later ones for the next replay, so the events still
 * arrive in order; `ingest` should therefore throw only for failures worth retrying.
 */
export async function replaySpool(
  dir: string,
  ingest: (report: AgentReport) => Promise<void>,
): Promise<number> {
  const names: string[] = [];
  try {
    for await (const entry of Deno.readDir(dir)) {
      // Dot-names are files a hook is still writing.
      if (entry.isFile && isSpooledName(entry.name)) names.push(entry.name);
    }
  } catch (error) {
    if (error instanceof Deno.errors.NotFound) return 0;
    throw error;
  }
  names.sort();
  let replayed = 0;
  for (const name of names) {
    const file = join(dir, name);
    let text: string;
    try {
      text = await Deno.readTextFile(file);
    } catch (error) {
      // Another replay took it first.
      if (error instanceof Deno.errors.NotFound) continue;
      throw error;
    }
    const event = parseSpooled(text);
    if (!event) {
      await moveAside(dir, name);
      continue;
    }
    await ingest(event);
    replayed++;
    await Deno.remove(file).catch(() => {});
  }
  return replayed;
}

// A spooled file is exactly the report `dock hook` would have posted (the same schema as the route's).
function parseSpooled(text: string): AgentReport | null {
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch {
    return null;
  }
  const parsed = AGENT_REPORT.safeParse(value);
  return parsed.success ? parsed.data : null;
}

async function moveAside(dir: string, name: string): Promise<void> {
  const bad = join(dir, "bad");
  await Deno.mkdir(bad, { recursive: true, mode: 0o700 });
  await Deno.rename(join(dir, name), join(bad, name));
}
