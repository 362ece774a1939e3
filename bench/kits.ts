/**
 * Kits and review (issue 16; `deno task bench kits`, alone `deno run -A bench/kits.ts [--quick]`):
 *
 * 1. Applying a kit of 50 files to a location (`PUT locations/{name}/kit`), against copying the same
 *    files with `cp -r` plus one config write. Goal ≤ 2×.
 * 2. `GET review` on a box with 50 worktrees, against the git commands it needs (status and the count
 *    ahead of the base, per worktree) run one after the other as a script would. Goal ≤ 1.5×.
 *
 * @module
 */
import { join } from "node:path";
import type { Kit } from "../client/wire.ts";
import { run } from "../core/runner.ts";
import { makeDirs, makeRepo, startBox } from "../tests/harness.ts";
import { type Row, summarize, table } from "./stats.ts";

/** The figures. */
export async function benchKits(options: { quick?: boolean } = {}): Promise<Row[]> {
  const samples = options.quick ? 5 : 20;
  const worktrees = options.quick ? 10 : 50;
  const dirs = await makeDirs();
  await using box = await startBox({ dirs });
  const repo = await makeRepo(join(dirs.home, "work"), "app");
  await box.client.addLocation({ name: "app", path: repo });

  // 1. A kit of 50 files (a kilobyte each, a few folders deep) against cp -r and a config write.
  const files: Record<string, string> = {};
  for (let i = 0; i < 50; i++) files[`dir${i % 5}/sub${i % 3}/file${i}.txt`] = `${"x".repeat(1000)}${i}\n`;
  const kit: Kit = { id: "bench-kit", version: "1.0.0", config: { env: { A: "1" } }, files };
  const source = join(dirs.root, "kit-source");
  for (const [path, text] of Object.entries(files)) {
    await Deno.mkdir(join(source, path, ".."), { recursive: true });
    await Deno.writeTextFile(join(source, path), text);
  }
  const apply: number[] = [];
  const copy: number[] = [];
  for (let i = 0; i < samples + 2; i++) {
    let started = performance.now();
    await box.client.applyKit("app", { ...kit, version: `1.0.${i}` });
    if (i >= 2) apply.push(performance.now() - started);
    const target = join(dirs.root, `copy-${i}`);
    started = performance.now();
    const cp = await run("cp", ["-r", source, target]);
    if (cp.code !== 0) throw new Error(cp.stderr);
    await Deno.writeTextFile(join(dirs.root, `config-${i}.json`), JSON.stringify(kit.config));
    if (i >= 2) copy.push(performance.now() - started);
  }
  const baseline = summarize(copy);
  const rows: Row[] = [
    { label: "Kit files by hand: cp -r of 50 files + one config write", summary: baseline, isBaseline: true },
    {
      label: "Kit: PUT locations/{name}/kit with 50 files (goal ≤ 2× cp -r)",
      summary: summarize(apply),
      baseline,
      note: "checked, written into a fresh folder, renamed into place, events",
    },
  ];

  // 2. GET review with many worktrees, half with a commit, a quarter with changes.
  const made = [];
  for (let i = 0; i < worktrees; i++) made.push(await box.client.createWorktree("app", { name: `w${i}` }));
  for (const [i, w] of made.entries()) {
    if (i % 2 === 0) {
      await Deno.writeTextFile(join(w.path, "change.txt"), `${i}\n`);
      await run("git", ["add", "."], { cwd: w.path });
      await run("git", ["-c", "user.name=b", "-c", "user.email=b@b", "commit", "-qm", "c"], { cwd: w.path });
    }
    if (i % 4 === 1) await Deno.writeTextFile(join(w.path, "wip.txt"), "wip\n");
  }
  const review: number[] = [];
  const byHand: number[] = [];
  for (let i = 0; i < Math.max(3, Math.floor(samples / 2)) + 1; i++) {
    let started = performance.now();
    const items = await box.client.review();
    if (items.length < worktrees / 2) throw new Error(`review listed only ${items.length}`);
    if (i > 0) review.push(performance.now() - started);
    started = performance.now();
    for (const w of made) {
      await run("git", ["--no-optional-locks", "status", "--porcelain=v2", "--branch", "-z"], {
        cwd: w.path,
      });
      await run("git", ["rev-list", "--count", "main..HEAD"], { cwd: w.path });
    }
    if (i > 0) byHand.push(performance.now() - started);
  }
  const hand = summarize(byHand);
  rows.push(
    {
      label: `Review by hand: git status + rev-list --count in each of ${worktrees} worktrees`,
      summary: hand,
      isBaseline: true,
    },
    {
      label: `Review: GET review with ${worktrees} worktrees (goal ≤ 1.5×)`,
      summary: summarize(review),
      baseline: hand,
      note: "the same git questions, 8 worktrees at a time",
    },
  );
  return rows;
}

if (import.meta.main) console.log(table(await benchKits({ quick: Deno.args.includes("--quick") })));
