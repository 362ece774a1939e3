/**
 * `dock upgrade [BOX|--all]` (`POST /v1/boxes/{box}/upgrade`): sends this laptop's package to a box
 * that runs an older build and follows its hand-over (`daemon/upgrade.ts`) to the end, step by step:
 *
 * 1. `connect`: the box's OS, architecture and build (`GET info`).
 * 2. `package`: the package of this dock for that target (`agent/packages.ts`); nothing more happens
 *    when the box runs that build already, and a box on a newer version is left alone.
 * 3. `upload`: `POST upgrade` with the package; the box checks and installs it and starts the new daemon.
 *    The package goes without its Deno runtime first (the box links the one of a release it has); a box
 *    without that runtime answers 409 `runtime_missing`, and the whole package follows.
 * 4. `restart`: the box's journal, after the `box.upgrading` event the answer names, until
 *    `box.upgraded` (done) or `box.upgrade.failed` (rolled back: the box runs the old build, and says why).
 *
 * @module
 */
import type { BoxProgress, DockEvent, UpgradeStarted } from "../client/wire.ts";
import { DockError } from "../client/errors.ts";
import { compareVersions } from "../client/version.ts";
import { type Clock, sleep, timeoutSignal } from "../core/clock.ts";
import type { ClientPaths } from "../core/paths.ts";
import type { Boxes } from "./boxes.ts";
import { buildOf, megabytes, packageFor, targetOfMachine, upload } from "./packages.ts";

/** What upgrading a box uses of the agent. */
export interface UpgradeBackend {
  paths: Pick<ClientPaths, "client">;
  boxes: Boxes;
  /** Measures the hand-over's deadline and paces its retries. */
  clock: Clock;
}

/** How long the hand-over may take before the laptop stops waiting (the box goes on regardless). */
const HAND_OVER_MS = 120_000;

/** Refuses an unknown box (404) before anything streams. */
export function checkUpgrade(agent: UpgradeBackend, name: string): void {
  if (!agent.boxes.has(name)) throw new DockError("not_found", `no box named ${name}`, { status: 404 });
}

/**
 * Upgrades the box `name` to this laptop's build (checked first by {@linkcode checkUpgrade}), yielding
 * progress; the last line has `done`, with `box` or with `error` naming the step that failed.
 */
export async function* upgradeBox(agent: UpgradeBackend, name: string): AsyncGenerator<BoxProgress> {
  let step = "connect";
  try {
    const info = await agent.boxes.client(name).info();
    const target = targetOfMachine(info.os, info.arch);
    yield { step, line: `${name}: ${info.os} ${info.arch}, ${info.build}` };
    if (!target) throw new DockError("no_package", `dock has no package for ${info.os} ${info.arch}`);

    step = "package";
    const kept = await packageFor(agent.paths, target);
    const build = buildOf(kept.release);
    yield { step, line: `${build} for ${kept.release.target} (${megabytes(kept.bytes)})` };
    if (info.build === build) {
      yield { step, line: `${name} runs ${build} already` };
      yield { step, done: true, box: await status(agent, name) };
      return;
    }
    if (compareVersions(info.build, build) > 0) {
      throw new DockError("newer_box", `${name} runs ${info.build}, newer than this laptop's ${build}`);
    }

    step = "upload";
    const send = (data: ReadableStream<Uint8Array>) => agent.boxes.client(name).upgrade(data);
    let started: UpgradeStarted | undefined;
    if (kept.withoutRuntime) {
      // First without the runtime: a box on a release of the same Deno links its own (~3 MB, not ~43).
      yield { step, line: `without its Deno runtime (${megabytes(kept.withoutRuntime.bytes)})` };
      try {
        started = yield* upload(kept.withoutRuntime, send);
      } catch (error) {
        // 409 runtime_missing: the box has not got it. 400 bad_package: a box on a release from before
        // packages went without their runtime. Either way the whole package says the last word.
        if (!(error instanceof DockError) || !["runtime_missing", "bad_package"].includes(error.code)) {
          throw error;
        }
        yield { step, line: `${error.message}: sending the whole package` };
      }
    }
    started ??= yield* upload(kept, send);
    yield {
      step,
      line: `${started.from} → ${started.to} (${
        started.mode === "self" ? "dockd" : "its service manager"
      } restarts it)`,
    };

    step = "restart";
    const outcome = await handOver(agent, name, started.after);
    if (outcome.type === "box.upgrade.failed") {
      throw new DockError(
        "rolled_back",
        `the new daemon did not start, so the box went back to ${started.from}: ${outcome.data?.error}`,
      );
    }
    yield { step, line: `${name} runs ${started.to}` };
    yield { step, done: true, box: await status(agent, name) };
  } catch (error) {
    yield { step, error: `${step}: ${(error as Error).message}`, done: true };
  }
}

/**
 * The box's `box.upgraded` or `box.upgrade.failed` after event `after`. The daemon that answered goes
 * away during the hand-over, taking its stream and this laptop's pooled connection with it: each
 * failure drops the connection (`Boxes.reset`) and reads the journal again from the last event seen.
 */
async function handOver(agent: UpgradeBackend, name: string, after: number): Promise<DockEvent> {
  const clock = agent.clock;
  const deadline = clock.now() + HAND_OVER_MS;
  let seen = after;
  while (clock.now() < deadline) {
    const timeout = timeoutSignal(clock, Math.max(1, deadline - clock.now()));
    try {
      for await (const event of agent.boxes.client(name).events({ after: seen, signal: timeout.signal })) {
        seen = event.id ?? seen;
        if (event.type === "box.upgraded" || event.type === "box.upgrade.failed") return event;
      }
    } catch {
      agent.boxes.reset(name);
    } finally {
      timeout.cancel();
    }
    if (timeout.signal.aborted) break;
    // The new daemon binds its socket a moment after the old one left: try again shortly.
    await sleep(clock, 100);
  }
  throw new DockError(
    "upgrade_timeout",
    `${name} did not report the upgrade within ${HAND_OVER_MS / 1000} s`,
  );
}

/** The box's status, checked now (its build is the new one). */
async function status(agent: UpgradeBackend, name: string) {
  await agent.boxes.check(name);
  return agent.boxes.status().find((box) => box.name === name)!;
}
