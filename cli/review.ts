/**
 * `review` (worktrees with work for a person to look at) and `preview` (show a worktree's dev server in
 * the dock app): `dockd review`, `dockd preview [--port N] [PATH]` inside a worktree; `dock review [BOX]`,
 * `dock preview BOX/LOC/WT` from the laptop, which prints the private URL.
 *
 * @module
 */
import type { Command } from "./commander.ts";
import { DockError } from "../client/errors.ts";
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
