/**
 * Upgrades (issue 17; `deno task bench upgrade`, alone `deno run -A bench/upgrade.ts [--quick]`): a box
 * installed from a package, with a session and a service running, upgraded 20 times in a row between two
 * releases (`POST upgrade`). Each time: how long the API did not answer (the longest gap between answers
 * of `GET info`, polled every 10 ms from the upload until the new build answers; goal p50 ≤ 1 s), and
 * whether the session and the service are the same processes, once each (goal: none lost or doubled).
 * Every other round sends the package without its runtime: how long `POST upgrade` takes to answer
 * with each. And `dock upgrade --all` of three boxes against copying and unpacking the package three
 * times (issue 33; {@linkcode benchUpgradeAll}, alone `deno run -A bench/upgrade.ts --all [--quick]`).
 *
 * @module
 */
import { join } from "node:path";
import { AgentClient } from "../client/agent.ts";
import { BoxClient } from "../client/box.ts";
import { keepInstalled } from "../agent/packages.ts";
import { buildPackage } from "../package/build.ts";
import { hostTarget } from "../package/release.ts";
import { sourceFingerprint } from "../package/sources.ts";
import { run } from "../core/runner.ts";
import {
  freePort,
  installPackage,
  laptopEnv,
  makeDirs,
  makeRepo,
  processesWith,
  runCli,
  startAgent,
  startBox,
  type TestBox,
} from "../tests/harness.ts";
import { until } from "../tests/wait.ts";
import { type Row, summarize, table } from "./stats.ts";

/** The figures. */
export async function benchUpgrade(options: { quick?: boolean } = {}): Promise<Row[]> {
  const rounds = options.quick ? 4 : 20;
  const target = hostTarget();
  if (!target) return [];
  const out = await Deno.makeTempDir({ prefix: "dock-bench-upgrade-" });
  const dirs = await makeDirs();
  try {
    const releases = [
      await buildPackage({ target, out: join(out, "a"), commit: "aaaaaaaaaaaa" }),
      await buildPackage({ target, out: join(out, "b"), commit: "bbbbbbbbbbbb" }),
    ];
    await installPackage(dirs.dockHome, releases[0]);
    await using box = await startBox({ dirs, launcher: join(dirs.dockHome, "bin", "dockd") });
    const { client } = box;
    const marker = `bench-upgrade-${Date.now() % 100000}`;
    const repo = await makeRepo(join(dirs.home, "work"), "app", {
      ".dock/config.json": JSON.stringify({
        services: [{ name: "ticker", run: `while true; do sleep 0.2; done # ${marker}`, autostart: true }],
      }),
    });
    await client.addLocation({ name: "app", path: repo });
    await client.createWorktree("app", { name: "w" });
    await client.createSession({ location: "app", command: "sh", name: "term" });
    const service = async () => (await client.services("app", "w")).find((s) => s.name === "ticker")!;
    await until(async () => (await service()).state === "running");
    const socket = join(dirs.state, "box", "tmux.sock");
    const panePid = async () =>
      (await run("tmux", ["-S", socket, "display-message", "-p", "-t", "=term:", "#{pane_pid}"])).stdout
        .trim();
    const first = { session: await panePid(), service: (await service()).pid };

    // A connection per question: a pooled one to the daemon that handed over would hang until its
    // timeout, and measure the client rather than the box.
    const probe = new BoxClient({ socket: join(dirs.state, "box", "dockd.sock"), oneShotReads: true });
    const gaps: number[] = [];
    // How long POST upgrade takes to answer (upload, check, unpack), the whole package and the one
    // without its runtime (which the box links from the release it runs), alternately.
    const answered = { whole: [] as number[], lean: [] as number[] };
    let lost = 0;
    let doubled = 0;
    for (let i = 0; i < rounds; i++) {
      const next = releases[(i + 1) % 2];
      const to = `${next.release.version}+${next.release.commit}`;
      // Polled from before the upload: the longest time between two answers is the time it was down.
      let last = performance.now();
      let longest = 0;
      let done = false;
      const poller = (async () => {
        while (!done) {
          const info = await probe.infoWithin(1000).catch(() => null);
          const now = performance.now();
          if (info) {
            longest = Math.max(longest, now - last);
            last = now;
            if (info.build === to) done = true;
          }
          await new Promise((resolve) => setTimeout(resolve, 10));
        }
      })();
      const lean = i % 2 === 1;
      const sentAt = performance.now();
      await client.upgrade((await Deno.open(lean ? next.withoutRuntime.file : next.file)).readable);
      answered[lean ? "lean" : "whole"].push(performance.now() - sentAt);
      await Promise.race([
        poller,
        new Promise((_, reject) => setTimeout(() => reject(new Error("no hand-over in 60 s")), 60_000)),
      ]);
      gaps.push(longest);
      const session = await panePid().catch(() => "");
      const services = processesWith("/bin/sh -c", marker).length;
      if (session !== first.session) lost++;
      if (services === 0 || (await service()).pid !== first.service) lost++;
      if (services > 1 || (await client.sessions()).filter((s) => s.name === "term").length > 1) doubled++;
    }
    probe.close();
    return [
      {
        label:
          `Upgrade: API unavailable during POST upgrade's hand-over, ${rounds} in a row (goal p50 ≤ 1 s)`,
        summary: summarize(gaps),
        note: `sessions or services lost: ${lost}, doubled: ${doubled} (goal 0 and 0)`,
      },
      {
        label: `Upgrade: POST upgrade answered (upload, check, unpack), the whole package`,
        summary: summarize(answered.whole),
        isBaseline: true,
        note: `${(releases[0].bytes / 1024 / 1024).toFixed(1)} MiB`,
      },
      {
        label: `Upgrade: the same without its runtime (the box links the one it runs)`,
        summary: summarize(answered.lean),
        baseline: summarize(answered.whole),
        note: `${(releases[0].withoutRuntime.bytes / 1024 / 1024).toFixed(1)} MiB`,
      },
    ];
  } finally {
    await Deno.remove(out, { recursive: true }).catch(() => {});
  }
}

/** Boxes `dock upgrade --all` upgrades in {@linkcode benchUpgradeAll}. */
const FLEET = 3;

/**
 * `dock upgrade --all` of {@linkcode FLEET} boxes (issue 33; goal ≤ 10 s): real daemons on loopback, each
 * installed from an older package (as `dock add ssh` installs one) and paired to one agent by its `dockd
 * pair` link, the agent's package kept in its package cache as `deno task install` leaves it (what is
 * timed is the upgrade, not a build). Timed from the command's start until it exits, every box on the new
 * build (it waits for each hand-over). Beside it, the plain tool: copying the package the upgrade sent and
 * unpacking it with `tar`, once per box, one after the other. Fresh boxes each round (a box never takes an
 * older build back). A round in which the agent built its package again (the sources changed under it: a
 * shared checkout) is not counted, and said.
 */
export async function benchUpgradeAll(options: { quick?: boolean } = {}): Promise<Row[]> {
  const rounds = options.quick ? 1 : 3;
  const target = hostTarget();
  if (!target) return [];
  const out = await Deno.makeTempDir({ prefix: "dock-bench-upgrade-all-" });
  const laptop = await makeDirs();
  try {
    const old = await buildPackage({
      target,
      out: join(out, "old"),
      commit: "aaaaaaaaaaaa",
      version: "0.0.9",
    });
    const built = await buildPackage({ target, out: join(out, "new") });
    const build = `${built.release.version}+${built.release.commit}`;
    await using agent = await startAgent(laptop);
    const client = new AgentClient({ url: agent.url, token: agent.token, origin: "bench" });
    const paths = { client: join(laptop.state, "client") };
    const upgrades: number[] = [];
    const plain: number[] = [];
    let rebuilt = 0;
    try {
      for (let round = 0; round < rounds + rebuilt && round < rounds * 2; round++) {
        const boxes = await Promise.all(
          Array.from({ length: FLEET }, (_, i) => olderBox(`fleet${round}x${i}`, old)),
        );
        try {
          for (const box of boxes) {
            const link = /dock:\/\/[^\s']+/.exec((await box.cli(["pair", "--host", "127.0.0.1"])).stdout)
              ?.[0];
            if (!link) throw new Error("dockd pair printed no link");
            await client.pairBox(link);
          }
          // Kept as `deno task install` keeps it, for sources as they are now (the agent runs the checkout).
          await keepInstalled(paths, built, { sources: await sourceFingerprint() });
          const started = performance.now();
          const upgraded = await runCli("dock", ["upgrade", "--all", "--json"], {
            env: laptopEnv(laptop, agent),
            cwd: laptop.home,
          });
          const took = performance.now() - started;
          if (upgraded.code !== 0) {
            throw new Error(`dock upgrade --all: ${upgraded.stderr}${upgraded.stdout}`);
          }
          const kept = JSON.parse(
            await Deno.readTextFile(join(paths.client, "packages", `dock-${built.release.target}.kept.json`)),
          );
          if (kept.release.id !== built.release.id) {
            rebuilt++; // the agent packed the sources again: a build was timed, not an upgrade
            continue;
          }
          for (const box of boxes) {
            const now = await until(async () => (await box.client.info().catch(() => undefined))?.build);
            if (now !== build) throw new Error(`${box.name} runs ${now}, not ${build}`);
          }
          upgrades.push(took);
          plain.push(await copyAndUnpack(built.withoutRuntime.file, join(out, `plain${round}`)));
        } finally {
          for (const box of boxes) {
            await client.removeBox(box.name).catch(() => {});
            await box.box[Symbol.asyncDispose]();
          }
        }
      }
    } finally {
      client.close();
    }
    if (upgrades.length === 0) return [];
    const plainSummary = summarize(plain);
    return [
      {
        label: `Upgrade: copy + tar -xzf of the package it sends, ${FLEET} times in a row (plain tool)`,
        summary: plainSummary,
        isBaseline: true,
        note: `${(built.withoutRuntime.bytes / 1024 / 1024).toFixed(1)} MiB (without its runtime)`,
      },
      {
        label: `Upgrade: dock upgrade --all of ${FLEET} boxes, until each runs the new build`,
        summary: summarize(upgrades),
        baseline: plainSummary,
        note: `goal ≤ 10 s${
          rebuilt ? `; ${rebuilt} rounds left out (the sources changed: the agent rebuilt)` : ""
        }`,
      },
    ];
  } finally {
    await Deno.remove(out, { recursive: true }).catch(() => {});
    await Deno.remove(laptop.root, { recursive: true }).catch(() => {});
  }
}

/** A box called `name` on the older package, listening for laptops on a loopback port. */
async function olderBox(name: string, old: { file: string; release: { version: string; id: string } }) {
  const dirs = await makeDirs();
  await Deno.mkdir(dirs.dockHome, { recursive: true });
  await Deno.writeTextFile(join(dirs.dockHome, "box.json"), JSON.stringify({ name }));
  await installPackage(dirs.dockHome, old);
  const box: TestBox = await startBox({
    dirs,
    launcher: join(dirs.dockHome, "bin", "dockd"),
    // A port of its own that its next daemon binds again (a box that moved would be another test).
    env: { DOCK_LISTEN: `127.0.0.1:${freePort()}` },
  });
  return { name, box, client: box.client, cli: box.cli };
}

/** Copies `file` into `FLEET` folders under `into` and unpacks it in each, one after the other: ms. */
async function copyAndUnpack(file: string, into: string): Promise<number> {
  const started = performance.now();
  for (let i = 0; i < FLEET; i++) {
    const folder = join(into, String(i));
    await Deno.mkdir(folder, { recursive: true });
    const copy = await run("cp", [file, join(folder, "package.tar.gz")]);
    if (copy.code !== 0) throw new Error(`cp: ${copy.stderr}`);
    const unpacked = await run("tar", ["-xzf", join(folder, "package.tar.gz"), "-C", folder]);
    if (unpacked.code !== 0) throw new Error(`tar: ${unpacked.stderr}`);
  }
  return performance.now() - started;
}

if (import.meta.main) {
  const quick = Deno.args.includes("--quick");
  const all = Deno.args.includes("--all");
  console.log(table(all ? await benchUpgradeAll({ quick }) : await benchUpgrade({ quick })));
}
