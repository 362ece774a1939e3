/**
 * `worktree …`: list, new, rm, status, log, sync, setup-log. `dockd worktree new app feat` on a box;
 * `dock worktree new devbox/app feat` from the laptop.
 *
 * @module
 */
import type { Command } from "./commander.ts";
import type { BoxClient } from "../client/box.ts";
import { printJson, table } from "./output.ts";
import { gather, named, type Scope } from "./target.ts";

/** Adds the `worktree` family. */
export function worktreeCommands(program: Command, scope: Scope): void {
  const worktree = program.command("worktree").alias("wt").description("git worktrees of locations");

  worktree.command("list").alias("ls").description("list worktrees").argument(scope.optionalArg("location"))
    .option("--json", "print JSON").action((spec, o) =>
      scope.run(async () => {
        const targets = await scope.each(spec, "LOCATION");
        const worktrees = await gather(targets, async ({ client, rest: [location] }) => {
          const locations = location ? [await client.location(location)] : await client.locations();
          return locations.flatMap((l) => l.worktrees);
        });
        if (o.json) return printJson(worktrees);
        table(
          ["WORKTREE", "BRANCH", "PORTS", "ORIGIN", "SETUP", "PATH"],
          worktrees.map((
            w,
          ) => [
            named(w, `${w.location}/${w.name}`),
            w.branch,
            w.ports.join(","),
            w.origin,
            w.setup.state,
            w.path,
          ]),
        );
      })
    );

  worktree.command("new").description("create a worktree (runs setup)").argument(scope.arg("location"))
    .argument("<name>")
    .option("--branch <branch>", "branch to check out or create (default: the name)")
    .option("--base <ref>", "start point of a new branch (default: the default branch)")
    .option("--ref <ref>", "check out a ref (detached unless --branch)")
    .option("--pr <number>", "check out a pull request (needs gh on the box)", Number)
    .option("--follow", "follow the setup log until it ends").option("--json", "print JSON")
    .action((spec, name, o) =>
      scope.run(async () => {
        const target = await scope.resolve(spec, "LOCATION");
        const [location] = target.rest;
        const created = await target.client.createWorktree(location, {
          name,
          branch: o.branch,
          base: o.base,
          ref: o.ref,
          pr: o.pr,
        });
        if (o.json) printJson(created);
        else {console.log(
            `created ${named(target, `${location}/${created.name}`)} at ${created.path} (ports ${
              created.ports.join(",")
            })`,
          );}
        if (o.follow && created.setup.state !== "none") {
          await followSetup(scope, target.client, location, created.name);
        }
      })
    );

  worktree.command("rm").alias("remove").description("remove a worktree (stops it, runs archive)")
    .argument(scope.arg("location/worktree"))
    .option("--force", "remove even when archive fails or there are uncommitted changes (they are lost)")
    .action((spec, o) =>
      scope.run(async () => {
        const target = await scope.resolve(spec, "LOCATION/WORKTREE");
        const [location, name] = target.rest;
        const removed = await target.client.removeWorktree(location, name, { force: o.force });
        console.log(
          `removed ${named(target, `${location}/${removed.name}`)}; branch ${
            removed.branch ?? "(detached)"
          } is kept`,
        );
      })
    );

  worktree.command("status").description("git status of every worktree").argument(
    scope.optionalArg("location"),
  )
    .option("--json", "print JSON").action((spec, o) =>
      scope.run(async () => {
        const targets = await scope.each(spec, "LOCATION");
        const statuses = await gather(targets, ({ client, rest: [location] }) =>
          client.worktreeStatus(location));
        if (o.json) {
          return printJson(statuses);
        }
        table(
          ["WORKTREE", "BRANCH", "AHEAD", "BEHIND", "STAGED", "MODIFIED", "UNTRACKED"],
          statuses.map((
            s,
          ) => [
            named(s, `${s.location}/${s.name}`),
            s.branch,
            s.ahead,
            s.behind,
            s.staged,
            s.modified,
            s.untracked,
          ]),
        );
      })
    );

  worktree.command("log").description("a worktree's commits").argument(scope.arg("location/worktree"))
    .option("--limit <n>", "how many", Number).option("--json", "print JSON").action((spec, o) =>
      scope.run(async () => {
        const { client, rest: [location, name] } = await scope.resolve(spec, "LOCATION/WORKTREE");
        const commits = await client.log(location, name, o.limit);
        if (o.json) return printJson(commits);
        table(
          ["COMMIT", "WHEN", "AUTHOR", "SUBJECT"],
          commits.map((c) => [c.hash.slice(0, 10), c.time, c.author, c.subject]),
        );
      })
    );

  worktree.command("sync").description("rebase (or merge) a worktree onto its base").argument(
    scope.arg("location/worktree"),
  )
    .option("--merge", "merge instead of rebasing").option("--json", "print JSON").action((spec, o) =>
      scope.run(async () => {
        const { client, rest: [location, name] } = await scope.resolve(spec, "LOCATION/WORKTREE");
        const result = await client.sync(location, name, { mode: o.merge ? "merge" : "rebase" });
        if (o.json) printJson(result);
        else {console.log(
            result.output.trim() || `${result.mode} onto ${result.onto}: ${result.ok ? "done" : "failed"}`,
          );}
        if (!result.ok) Deno.exit(1);
      })
    );

  worktree.command("setup-log").description("print (or --follow) a worktree's setup output")
    .argument(scope.arg("location/worktree")).option("--follow", "follow until setup ends").action((
      spec,
      o,
    ) =>
      scope.run(async () => {
        const { client, rest: [location, name] } = await scope.resolve(spec, "LOCATION/WORKTREE");
        await followSetup(scope, client, location, name, o.follow ?? false);
      })
    );
}

async function followSetup(
  scope: Scope,
  box: BoxClient,
  location: string,
  name: string,
  follow = true,
): Promise<void> {
  let exit: number | undefined;
  for await (const line of box.setupLog(location, name, { follow })) {
    if (line.line !== undefined) console.log(line.line);
    if (line.done) exit = line.exit_code;
  }
  if (exit !== undefined && exit !== 0) {
    console.error(`${scope.program}: setup failed (exit ${exit})`);
    Deno.exit(1);
  }
}
