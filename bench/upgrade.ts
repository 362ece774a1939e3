/**
 * Upgrades (issue 17; `deno task bench upgrade`, alone `deno run -A bench/upgrade.ts [--quick]`): a box
 * installed from a package, with a session and a service running, upgraded 20 times in a row between two
 * releases (`POST upgrade`). Each time: how long the API did not answer (the longest gap between answers
 * of `GET info`, polled every 10 ms from the upload until the new build answers; goal p50 ≤ 1 s), and
 * whether the session and the service are the same processes, once each (goal: none lost or doubled).
 * Every other round sends the package without its runtime: how long `POST upgrade` takes to answer
 * with each.
 *
 * @module
 */
import { join } from "node:path";
import { BoxClient } from "../client/box.ts";
import { buildPackage, hostTarget } from "../package/build.ts";
import { run } from "../core/runner.ts";
import { eventually, installPackage, makeDirs, makeRepo, processesWith, startBox } from "../tests/harness.ts";
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
    await eventually(async () => (await service()).state === "running");
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

if (import.meta.main) console.log(table(await benchUpgrade({ quick: Deno.args.includes("--quick") })));
