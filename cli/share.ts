/**
 * `share open LOC/WT [--port N]`, `share list`, `share close ID` (`dock share … BOX/…` from the laptop):
 * a public URL for a worktree's port through the box's tunnel CLI, only when a person asks.
 *
 * @module
 */
import type { Command } from "./commander.ts";
import { printJson, table } from "./output.ts";
import { gather, listing, named, type Scope } from "./target.ts";

/** Adds `share`. */
export function shareCommands(program: Command, scope: Scope): void {
  const share = program.command("share").description(
    "public URLs for worktree ports (a tunnel CLI on the box)",
  );

  share.command("open").description("share a worktree's port publicly and print the URL")
    .argument(scope.arg("location/worktree")).option(
      "--port <port>",
      "default: the worktree's DOCK_PORT",
      Number,
    )
    .option("--json", "print JSON").action((spec, o) =>
      scope.run(async () => {
        const { client, rest: [location, worktree] } = await scope.resolve(spec, "LOCATION/WORKTREE");
        const opened = await client.share({ location, worktree, port: o.port });
        if (o.json) return printJson(opened);
        console.log(opened.url);
      })
    );

  listing(
    scope,
    share.command("list").alias("ls").description("the open shares").option("--json", "print JSON"),
    async (targets, o) => {
      const shares = await gather(targets, (t) => t.client.shares());
      if (o.json) return printJson(shares);
      table(
        ["ID", "WORKTREE", "PORT", "TOOL", "URL"],
        shares.map((s) => [named(s, s.id), `${s.location}/${s.worktree}`, s.port, s.tool, s.url]),
      );
    },
  );

  share.command("close").description("end a share").argument(scope.arg("id")).option("--json", "print JSON")
    .action((spec, o) =>
      scope.run(async () => {
        const { client, rest: [id] } = await scope.resolve(spec, "ID");
        const closed = await client.unshare(id);
        if (o.json) return printJson(closed);
        console.log(`closed ${closed.url ?? closed.id}`);
      })
    );
}
