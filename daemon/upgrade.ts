/**
 * `POST upgrade`: the box daemon replaced by the package in the body (`package/build.ts`), without
 * losing what runs. The package is checked (its target is this machine's, every file is the one its
 * manifest names, nothing more, no links; its version is not older than this one), unpacked beside the
 * others under `~/.dock/versions/`, and `~/.dock/current` switched to it. Then the hand-over:
 *
 * - Under a service manager (systemd's `INVOCATION_ID`, launchd's `XPC_SERVICE_NAME`), this daemon exits
 *   and the manager starts the unit again, which runs `~/.dock/bin/dockd`, now the new one.
 * - Otherwise this daemon starts the new one itself, detached; the new one loads its modules, says it is
 *   ready, and waits for this one to exit before it binds the socket: the API is down only between the
 *   two, never while the new one loads.
 *
 * What runs outlives both: sessions are tmux's, services are process groups of their own, the journal
 * and the queue are in files. `upgrade.json` in the daemon's state tells the new daemon it is one: it
 * announces `box.upgraded` once it serves, or, when it cannot start, switches `current` back, leaves
 * `upgrade-failed.json` for the old one (which announces `box.upgrade.failed`), starts it again and
 * exits. The laptop sees the result in `GET info`'s `build`. Once the new daemon serves, the releases
 * older than the one it replaced are removed from `~/.dock/versions/` (`pruneReleases`).
 *
 * @module
 */
import { DockError } from "../client/errors.ts";
import { BUILD } from "../client/version.ts";
import type { UpgradeStarted } from "../client/wire.ts";
import type { Clock } from "../core/clock.ts";
import type { EventBus } from "../core/events.ts";
import { exists, readJsonOrNull, readRange } from "../core/files.ts";
import type { Log } from "../core/log.ts";
import { isAlive, pollUntil } from "./procs.ts";
import type { BoxPaths } from "../core/paths.ts";
import { join } from "../core/posix_path.ts";
import { launch } from "../core/runner.ts";
import {
  installRelease,
  MAX_PACKAGE_BYTES,
  pruneReleases,
  runningFolder,
  switchCurrent,
} from "../package/install.ts";

export { MAX_PACKAGE_BYTES };

/** What `upgrade.json` says while a new daemon takes over. */
export interface UpgradeRecord {
  from: { build: string; folder: string };
  to: { build: string; folder: string };
  /** The daemon that hands over; the new one binds once it has exited. */
  pid: number;
  /** Who starts the new daemon: this one (`self`) or the service manager (`manager`). */
  mode: "self" | "manager";
}

/** Where the upgrade's files are, for one box. */
function files(paths: Pick<BoxPaths, "home" | "box">) {
  return {
    versions: join(paths.home, "versions"),
    current: join(paths.home, "current"),
    launcher: join(paths.home, "bin", "dockd"),
    record: join(paths.box, "upgrade.json"),
    failed: join(paths.box, "upgrade-failed.json"),
    ready: (pid: number) => join(paths.box, `upgrade-ready.${pid}`),
    log: join(paths.home, "dockd.log"),
  };
}

/** Options of {@linkcode Upgrades}. */
export interface UpgradesOptions {
  paths: Pick<BoxPaths, "home" | "box">;
  bus: Pick<EventBus, "publish">;
  /** Delays the hand-over until the answer has gone out. */
  clock: Pick<Clock, "after">;
}

/** The box's upgrades: taking a package, and the hand-over to the daemon it holds. */
export class Upgrades {
  #paths: Pick<BoxPaths, "home" | "box">;
  #bus: Pick<EventBus, "publish">;
  #clock: Pick<Clock, "after">;
  #stop: (() => void) | null = null;
  #busy = false;

  constructor(options: UpgradesOptions) {
    this.#paths = options.paths;
    this.#bus = options.bus;
    this.#clock = options.clock;
  }

  /** How this daemon stops (the composition root hands it in, once it serves). */
  attach(stop: () => void): void {
    this.#stop = stop;
  }

  /**
   * Takes the package `body` (a `.tar.gz`), checks and installs it, switches `current` to it and starts
   * the hand-over (after the answer has gone out). Refuses with 400 a package that is not a good one
   * for this machine, 409 when this daemon cannot be upgraded so (not installed as a package, another
   * upgrade under way, an older version, the same release).
   */
  async start(body: ReadableStream<Uint8Array>, origin: string): Promise<UpgradeStarted> {
    if (this.#busy) throw new DockError("upgrading", "an upgrade is under way already", { status: 409 });
    const from = await runningFolder(this.#paths.home);
    if (!from) {
      throw new DockError(
        "not_installed",
        "this dockd does not run from an installed package (~/.dock/versions/…): install it with `dock add ssh`",
        { status: 409 },
      );
    }
    this.#busy = true;
    try {
      const at = files(this.#paths);
      const { release, folder } = await installRelease(body, this.#paths.home, { from, what: "the box" });
      const to = `${release.version}+${release.commit}`;
      const mode = managed() ? "manager" : "self";
      const record: UpgradeRecord = {
        from: { build: BUILD, folder: from },
        to: { build: to, folder },
        pid: Deno.pid,
        mode,
      };
      await Deno.writeTextFile(at.record, JSON.stringify(record) + "\n");
      const announced = this.#bus.publish({ type: "box.upgrading", origin, data: { from: BUILD, to } });
      // After this answer has gone out.
      this.#clock.after(50, () => void this.#handOver(record).catch((error) => this.#failed(record, error)));
      return { from: BUILD, to, mode, after: announced.id! };
    } catch (error) {
      this.#busy = false;
      throw error;
    }
  }

  async #handOver(record: UpgradeRecord): Promise<void> {
    const at = files(this.#paths);
    if (record.mode === "manager") {
      // The manager starts `~/.dock/bin/dockd` again when this exits: that is the new daemon now.
      this.#stop?.();
      return;
    }
    const log = await Deno.open(at.log, { create: true, append: true });
    const from = (await log.stat()).size;
    log.close();
    const child = launch("/bin/sh", ["-c", 'exec "$@" >>"$0" 2>&1', at.log, at.launcher, "serve"]);
    // The new daemon loads everything first, then says so; only then does this one stop.
    // A file and a process, on real time (procs.ts `pollUntil`).
    const ready = await pollUntil(async () => {
      if (await exists(at.ready(child.pid))) return true;
      if (!alive(child.pid)) {
        throw new Error(
          `the new daemon exited before it was ready${await saidAtExit(at.log, from)} (see ${at.log})`,
        );
      }
      return false;
    }, { everyMs: 20, timeoutMs: 60_000 });
    if (ready) {
      await Deno.remove(at.ready(child.pid)).catch(() => {});
      this.#stop?.();
      return;
    }
    try {
      Deno.kill(child.pid, "SIGKILL");
    } catch { /* gone */ }
    throw new Error(`the new daemon was not ready in 60 s (see ${at.log})`);
  }

  /** The hand-over failed before this daemon stopped: `current` goes back, and this one serves on. */
  async #failed(record: UpgradeRecord, error: unknown): Promise<void> {
    const at = files(this.#paths);
    await switchCurrent(at.current, record.from.folder).catch(() => {});
    await Deno.remove(at.record).catch(() => {});
    this.#busy = false;
    this.#bus.publish({
      type: "box.upgrade.failed",
      origin: "dockd",
      data: { from: record.from.build, to: record.to.build, error: (error as Error).message },
    });
  }
}

/**
 * What a starting daemon does about an upgrade: when `upgrade.json` names one, it says it is ready and
 * waits for the old daemon to exit (self mode), then starts with `serve`; if that fails, it rolls back.
 * Announces `box.upgraded` (or the old daemon's `box.upgrade.failed`) once serving.
 */
export async function takeOver<T extends { bus: Pick<EventBus, "publish"> }>(
  paths: Pick<BoxPaths, "home" | "box">,
  serve: () => Promise<T>,
  options: { log: Log },
): Promise<T> {
  const at = files(paths);
  const record = await readJsonOrNull<UpgradeRecord>(at.record);
  const failed = await readJsonOrNull<{ from: string; to: string; error: string }>(at.failed);
  const mine = record !== null && record.to.folder === await runningFolder(paths.home);
  if (mine && record.mode === "self" && record.pid !== Deno.pid) {
    await Deno.writeTextFile(at.ready(Deno.pid), "");
    await pollUntil(() => !alive(record.pid), { everyMs: 10, timeoutMs: 60_000 });
  }
  let started: T;
  try {
    started = await serve();
  } catch (error) {
    if (mine) await rollBack(paths, record, error, options.log);
    throw error;
  }
  if (mine) {
    await Deno.remove(at.record).catch(() => {});
    // The new release started: releases older than the one it replaced go (a rollback needs only that one).
    await pruneReleases(paths.home, [record.to.folder, record.from.folder]).catch(() => []);
    started.bus.publish({
      type: "box.upgraded",
      origin: "dockd",
      data: { from: record.from.build, to: record.to.build },
    });
  } else if (record) {
    // Left by an upgrade this daemon is not the target of (a rollback restarted the old one).
    await Deno.remove(at.record).catch(() => {});
  }
  if (failed) {
    await Deno.remove(at.failed).catch(() => {});
    started.bus.publish({ type: "box.upgrade.failed", origin: "dockd", data: failed });
  }
  return started;
}

/** The new daemon could not start: the old release comes back, told why. */
async function rollBack(
  paths: Pick<BoxPaths, "home" | "box">,
  record: UpgradeRecord,
  error: unknown,
  log: Log,
) {
  const at = files(paths);
  await switchCurrent(at.current, record.from.folder);
  await Deno.remove(at.record).catch(() => {});
  await Deno.writeTextFile(
    at.failed,
    JSON.stringify({ from: record.from.build, to: record.to.build, error: (error as Error).message }) + "\n",
  );
  log.error(
    `dockd: ${record.to.build} could not start (${(error as Error).message}); back to ${record.from.build}`,
  );
  if (record.mode === "self") {
    launch("/bin/sh", ["-c", 'exec "$@" >>"$0" 2>&1', at.log, at.launcher, "serve"]);
  }
}

/** True when a service manager runs this daemon and will start it again when it exits. */
function managed(): boolean {
  return Boolean(Deno.env.get("INVOCATION_ID") || Deno.env.get("XPC_SERVICE_NAME")?.startsWith("dev.dock."));
}

/**
 * True while `pid` runs. A process that exited is a zombie until whoever inherited it reaps it (a
 * daemon started by the one before it is init's child once that one exits, and init may take a second):
 * where /proc tells, a zombie counts as gone, so the hand-over waits for the exit, not the reaping.
 */
function alive(pid: number): boolean {
  if (Deno.build.os === "linux") return isAlive(pid);
  try {
    Deno.kill(pid, "SIGCONT");
    return true;
  } catch {
    return false;
  }
}

/**
 * What a daemon that exited wrote last to `log` after byte `from` (": <its error>"), for the failure's
 * message: Deno's `error: …` line when there is one (an exception the module threw as it loaded), else
 * the last line. Reads at most the last 16 KiB.
 */
export async function saidAtExit(log: string, from: number): Promise<string> {
  try {
    const size = (await Deno.stat(log)).size;
    const start = Math.max(from, size - 16_384);
    const lines = new TextDecoder().decode(await readRange(log, start, size - start)).split("\n")
      .map((line) => line.trim()).filter(Boolean);
    const said = lines.find((line) => line.startsWith("error: ")) ?? lines.at(-1);
    return said ? `: ${said.replace(/^error: (Uncaught (\(in promise\) )?)?/, "").slice(0, 300)}` : "";
  } catch {
    return "";
  }
}
