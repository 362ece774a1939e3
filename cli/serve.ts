/**
 * `dockd serve`: runs the box daemon in the foreground until SIGINT or SIGTERM.
 *
 * @module
 */
import type { Command } from "@commander-js/extra-typings";
import { BoxClient } from "../client/box.ts";
import { DockError } from "../client/errors.ts";
import { Box } from "../daemon/box.ts";
import { serveSocket } from "../daemon/api/server.ts";
import { boxPaths } from "../daemon/paths.ts";
import { guarded } from "./output.ts";

/** Adds `serve`. */
export function serveCommand(program: Command): void {
  program.command("serve").description("run the box daemon in the foreground").action(() =>
    guarded(serveBox)
  );
}

/** Runs the box daemon on this machine until SIGINT or SIGTERM. */
export async function serveBox(): Promise<void> {
  await (await startBox()).finished;
  // Services are detached children that outlive the daemon: exit without waiting for them.
  Deno.exit(0);
}

/**
 * Starts the box daemon in this process; resolves once its socket listens. `finished` resolves when a
 * SIGINT or SIGTERM has stopped it.
 */
export async function startBox(): Promise<{ finished: Promise<void> }> {
  const paths = boxPaths();
  await refuseSecondDaemon(paths.socket);
  const box = new Box(paths);
  await box.start({ watchMs: Number(Deno.env.get("DOCK_WATCH_MS") ?? 1000) });
  const stopping = new AbortController();
  const server = await serveSocket(box, { signal: stopping.signal });
  await box.replaySpool();
  console.error(`dockd: box '${box.settings.name}' serving on ${paths.socket}`);
  const stop = () => stopping.abort();
  Deno.addSignalListener("SIGINT", stop);
  Deno.addSignalListener("SIGTERM", stop);
  const finished = server.finished.then(async () => {
    await box.close();
    console.error("dockd: stopped");
  });
  return { finished };
}

async function refuseSecondDaemon(socket: string): Promise<void> {
  const client = new BoxClient({ socket });
  try {
    const info = await Promise.race([
      client.info(),
      new Promise<never>((_, reject) => setTimeout(() => reject(new Error("timeout")), 1000)),
    ]);
    throw new DockError("already_running", `a daemon for box '${info.name}' already serves ${socket}`);
  } catch (error) {
    if (error instanceof DockError && error.code === "already_running") throw error;
  } finally {
    client.close();
  }
}
