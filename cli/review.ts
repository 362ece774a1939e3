/**
 * `review` (worktrees with work for a person to look at) and `preview` (show a worktree's dev server in
 * the dock app): `dockd review`, `dockd preview [--port N] [PATH]` inside a worktree; `dock review [BOX]`,
 * `dock preview BOX/LOC/WT` from the laptop, which prints the private URL; `diff` (one worktree's
 * commits ahead of its base and upstream, its diff against where it left its base, its untracked files):
 * `dockd diff LOC/WT`, `dock diff BOX/LOC/WT`, coloured on a terminal, plain into a pipe, `--json`.
 *
 * @module
 */
import type { Command } from "./commander.ts";
import { DockError } from "../client/errors.ts";
import type { Commit, WorktreeCommits, WorktreeDiff } from "../client/wire.ts";
import { printJson, table } from "./output.ts";
import { gather, listing, named, type Scope } from "./target.ts";

/** Adds `review` and `preview`. */
export function reviewCommands(program: Command, scope: Scope): void {
  listing(
    scope,
    program.command("review").description(
      "worktrees with work to review: commits ahead of their base, uncommitted changes, agents finished unseen",
    ).option("--all", "also those whose agents are still working").option("--json", "print JSON"),
    async (targets, o) => {
      const items = await gather(targets, (t) => t.client.review({ all: o.all }));
      if (o.json) return printJson(items);
      if (!items.length) return console.log("nothing to review");
      table(
        ["WORKTREE", "BRANCH", "AHEAD", "CHANGES", "AGENTS", "WHY"],
        items.map((item) => [
          named(item, `${item.location}/${item.worktree}`),
          item.branch,
          item.ahead === null ? "?" : `${item.ahead} (of ${item.base})`,
          item.dirty
            ? `${item.changes.staged + item.changes.modified} changed, ${item.changes.untracked} new`
            : "clean",
          item.sessions.map((s) => `${s.name}: ${s.agent_state}${s.unseen ? " (unseen)" : ""}`).join(", "),
          item.reasons.join(", ") + (item.working ? " (still working)" : ""),
        ]),
      );
    },
  );

  const diff = program.command("diff").description(
    "a worktree's review: commits ahead of its base and upstream, its diff (committed and not) against where it left its base, untracked files",
  ).argument(scope.arg("location/worktree"))
    .option("--path <path>", "only this file")
    .option("--stat", "files and line counts only")
    .option("--json", "print JSON: { commits, diff } with every page of patches");
  diff.action((spec: string, o: { path?: string; stat?: boolean; json?: boolean }) =>
    scope.run(async () => {
      const target = await scope.resolve(spec, "LOCATION/WORKTREE");
      const [location, worktree] = target.rest;
      const [commits, first] = await Promise.all([
        target.client.worktreeCommits(location, worktree),
        target.client.diff(location, worktree, { path: o.path }),
      ]);
      // Every page, so a pipe gets the whole diff; the box bounds each answer, not the total.
      const patches = [...first.patches];
      for (let offset = first.next_offset; offset !== null && !o.stat;) {
        const page = await target.client.diff(location, worktree, { path: o.path, offset });
        patches.push(...page.patches);
        offset = page.next_offset;
      }
      const all: WorktreeDiff = { ...first, patches, next_offset: null };
      if (o.json) return printJson({ commits, diff: all });
      const colour = Deno.stdout.isTerminal() && !Deno.env.get("NO_COLOR");
      Deno.stdout.writeSync(new TextEncoder().encode(diffText(commits, all, { colour, stat: o.stat })));
    })
  );

  const preview = program.command("preview").description(
    "open a worktree's dev server in the dock app (announces preview.open) and print its private URL",
  );
  if (scope.kind === "laptop") preview.argument(scope.arg("location/worktree"));
  preview.argument("[path]", "the page to open, e.g. /admin")
    .option("--port <port>", "the port it listens on (default: the worktree's DOCK_PORT)", Number)
    .option("--json", "print JSON");
  preview.action((...args: unknown[]) =>
    scope.run(async () => {
      const o = args.at(-2) as { port?: number; json?: boolean };
      let client, location: string, worktree: string, path: string | undefined;
      if (scope.kind === "laptop") {
        const target = await scope.resolve(args[0] as string, "LOCATION/WORKTREE");
        client = target.client;
        [location, worktree] = target.rest;
        path = args[1] as string | undefined;
      } else {
        // Inside a worktree: the DOCK_* variables its sessions and services get say which.
        location = Deno.env.get("DOCK_LOCATION") ?? "";
        worktree = Deno.env.get("DOCK_WORKTREE_NAME") ?? "";
        if (!location || !worktree) {
          throw new DockError("usage", "run dockd preview inside a dock worktree (DOCK_LOCATION is not set)");
        }
        client = (await scope.resolve(`${location}/${worktree}`, "LOCATION/WORKTREE")).client;
        path = args[0] as string | undefined;
      }
      const open = await client.preview({ location, worktree, port: o.port, path });
      if (o.json) return printJson(open);
      console.log(open.url);
    })
  );
}

const SGR = {
  bold: "\x1b[1m",
  dim: "\x1b[2m",
  red: "\x1b[31m",
  green: "\x1b[32m",
  cyan: "\x1b[36m",
  yellow: "\x1b[33m",
  reset: "\x1b[0m",
};

/** What `dock diff` prints: commits, files, untracked files, then the patches (coloured for a terminal). */
export function diffText(
  commits: WorktreeCommits,
  diff: WorktreeDiff,
  options: { colour: boolean; stat?: boolean },
): string {
  const paint = (code: string, text: string) => options.colour ? `${code}${text}${SGR.reset}` : text;
  const out: string[] = [];
  const listCommits = (title: string, list: Commit[] | null) => {
    if (!list?.length) return;
    out.push(paint(SGR.bold, title));
    for (const c of list) out.push(`  ${paint(SGR.yellow, c.hash.slice(0, 10))} ${c.subject}`);
  };
  const ahead = commits.ahead === null
    ? `base ${commits.base} not found`
    : `${commits.ahead.length} ahead of ${commits.base}, ${commits.behind} behind`;
  out.push(
    paint(SGR.bold, `${diff.location}/${diff.worktree}`) + ` on ${commits.branch ?? "(detached)"}: ${ahead}` +
      (commits.upstream
        ? `; upstream ${commits.upstream}: ${commits.ahead_upstream?.length ?? 0} ahead, ${
          commits.behind_upstream ?? 0
        } behind`
        : "; no upstream"),
  );
  listCommits(`commits not on ${commits.base}:`, commits.ahead);
  if (commits.upstream) listCommits(`commits not pushed to ${commits.upstream}:`, commits.ahead_upstream);
  out.push(paint(SGR.bold, `${diff.files.length} files changed, +${diff.additions} -${diff.deletions}`));
  for (const f of diff.files) {
    const name = f.old_path ? `${f.old_path} → ${f.path}` : f.path;
    const counts = f.binary
      ? "binary"
      : `${paint(SGR.green, `+${f.additions}`)} ${paint(SGR.red, `-${f.deletions}`)}`;
    out.push(`  ${f.status.padEnd(8)} ${name} ${counts}`);
  }
  if (diff.untracked.length) {
    out.push(paint(SGR.bold, `${diff.untracked.length} untracked:`));
    for (const file of diff.untracked) out.push(`  ${file}`);
  }
  if (!options.stat) {
    for (const p of diff.patches) {
      out.push("");
      for (const line of p.patch.replace(/\n$/, "").split("\n")) out.push(colourLine(line, paint));
      if (p.truncated) out.push(paint(SGR.dim, `… ${p.path}: cut here, larger than a page`));
    }
  }
  return out.join("\n") + "\n";
}

function colourLine(line: string, paint: (code: string, text: string) => string): string {
  if (line.startsWith("diff --git") || line.startsWith("+++ ") || line.startsWith("--- ")) {
    return paint(SGR.bold, line);
  }
  if (line.startsWith("@@")) return paint(SGR.cyan, line);
  if (line.startsWith("+")) return paint(SGR.green, line);
  if (line.startsWith("-")) return paint(SGR.red, line);
  return line;
}
