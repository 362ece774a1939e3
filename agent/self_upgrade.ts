/**
 * The laptop agent upgrading itself (`dock upgrade --self FILE`, `POST /v1/upgrade` with a package as the
 * body; issue 17): the same package boxes take (`package/build.ts`), installed the same way
 * (`package/install.ts`: checked, unpacked beside the others under `~/.dock/versions/`, `~/.dock/current`
 * switched). Then the agent stops, once the answer is out: under a service manager the manager starts
 * `~/.dock/bin/dock agent` again, now the new release; otherwise the next `dock` command finds no agent
 * and starts it, through the same launcher. The offline queue, the boxes and their pairings are in
 * `agent.db` and go on.
 *
 * @module
 */
import { DockError } from "../client/errors.ts";
import { BUILD } from "../client/version.ts";
import type { UpgradeStarted } from "../client/wire.ts";
import type { Clock } from "../core/clock.ts";
import type { EventBus } from "../core/events.ts";
import type { ClientPaths } from "../core/paths.ts";
import { installRelease, runningFolder } from "../package/install.ts";

/** What the agent's own upgrade uses. */
export interface SelfUpgradeOptions {
  paths: Pick<ClientPaths, "home">;
  bus: Pick<EventBus, "publish">;
  /** Stops the agent (its listeners; the process then exits). */
  stop: () => void;
  /** Delays the stop until the answer has gone out. */
  clock: Clock;
}

/** Installs `body` as this laptop's dock and stops the agent so the new one starts. */
export async function upgradeSelf(
  options: SelfUpgradeOptions,
  body: ReadableStream<Uint8Array>,
  origin: string,
): Promise<UpgradeStarted> {
  const from = await runningFolder(options.paths.home);
  if (!from) {
    throw new DockError(
      "not_installed",
      "this agent does not run from an installed package (~/.dock/versions/…): upgrade the checkout with git",
      { status: 409 },
    );
  }
  const { release } = await installRelease(body, options.paths.home, { from, what: "this laptop" });
  const to = `${release.version}+${release.commit}`;
  const announced = options.bus.publish({ type: "dock.upgrading", origin, data: { from: BUILD, to } });
  // After this answer has gone out: the listeners close, the process exits, the new one is started.
  options.clock.after(100, options.stop);
  const managed = Boolean(Deno.env.get("INVOCATION_ID") || Deno.env.get("XPC_SERVICE_NAME"));
  return { from: BUILD, to, mode: managed ? "manager" : "self", after: announced.id! };
}
