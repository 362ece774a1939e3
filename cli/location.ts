/**
 * `dockd location …`: list, add, rm, clone, new, branches, scripts, config.
 *
 * @module
 */
import type { Command } from "@commander-js/extra-typings";
import type { Location } from "../client/wire.ts";
import { localBox } from "./client.ts";
import { guarded, printJson, table } from "./output.ts";

/** Adds the `location` family. */
export function locationCommands(program: Command): void {
  const location = program.command("location").alias("loc").description(
    "repositories registered on this box",
  );

  location.command("list").alias("ls").description("list locations").option("--json", "print JSON").action((
    o,
  ) =>
    guarded(async () => {
      const locations = await localBox().locations();
      if (o.json) return printJson(locations);
      printLocations(locations);
    })
  );

  location.command("add").description("register an existing repository").argument("<name>").argument("<path>")
    .option("--json", "print JSON").action((name, path, o) =>
      guarded(async () => {
        const added = await localBox().addLocation({ name, path: resolvePath(path) });
        if (o.json) return printJson(added);
        console.log(`added ${added.name} (${added.path}), ${added.worktrees.length} worktree(s)`);
      })
    );

  location.command("rm").alias("remove").description("forget a location (its files stay)").argument("<name>")
    .action((name) =>
      guarded(async () => {
        const removed = await localBox().removeLocation(name);
        console.log(`forgot ${removed.name}; ${removed.path} is untouched`);
      })
    );

  location.command("clone").description("clone a repository and register it").argument("<url>")
    .option("--name <name>", "location name (default: from the URL)")
    .option("--path <path>", "folder to clone into (default: ~/work/<name>)")
    .option("--json", "print the location as JSON when done")
    .action((url, o) =>
      guarded(async () => {
        for await (
          const line of localBox().cloneLocation({ url, name: o.name, path: o.path && resolvePath(o.path) })
        ) {
          if (line.line !== undefined && !o.json) console.error(line.line);
          if (line.error) throw new Error(line.error);
          if (line.location) {
            if (o.json) printJson(line.location);
            else console.log(`added ${line.location.name} (${line.location.path})`);
          }
        }
      })
    );

  location.command("new").description("create an empty repository and register it").argument("<name>")
    .option("--path <path>", "folder (default: ~/work/<name>)").option("--json", "print JSON")
    .action((name, o) =>
      guarded(async () => {
        const created = await localBox().newLocation({ name, path: o.path && resolvePath(o.path) });
        if (o.json) return printJson(created);
        console.log(`created ${created.name} (${created.path})`);
      })
    );

  location.command("branches").description("list a location's branches").argument("<location>")
    .option("--json", "print JSON").action((name, o) =>
      guarded(async () => {
        const branches = await localBox().branches(name);
        if (o.json) return printJson(branches);
        table(
          ["BRANCH", "HEAD", "WORKTREE"],
          branches.map((b) => [`${b.current ? "* " : "  "}${b.name}`, b.head.slice(0, 10), b.worktree]),
        );
      })
    );

  location.command("scripts").description("set the box-level setup and archive scripts").argument(
    "<location>",
  )
    .option("--setup <command>", "setup script").option("--archive <command>", "archive script")
    .option("--clear", "clear both scripts").option("--json", "print JSON")
    .action((name, o) =>
      guarded(async () => {
        const scripts = o.clear ? { setup: null, archive: null } : { setup: o.setup, archive: o.archive };
        const config = await localBox().setScripts(name, scripts);
        if (o.json) return printJson(config);
        console.log(`setup:   ${config.effective.setup ?? "-"}\narchive: ${config.effective.archive ?? "-"}`);
      })
    );

  location.command("config").description("print every config layer and the effective config")
    .argument("<location>").option("--json", "print JSON").action((name, o) =>
      guarded(async () => {
        const config = await localBox().config(name);
        if (o.json) printJson(config);
        else {
          for (
            const [layer, value] of Object.entries({
              repo: config.repo,
              kit: config.kit,
              local: config.local,
            })
          ) {
            console.log(`# ${layer}\n${value ? JSON.stringify(value, null, 2) : "(none)"}\n`);
          }
          console.log(`# effective\n${JSON.stringify(config.effective, null, 2)}`);
        }
        for (const problem of config.errors ?? []) {
          console.error(
            `dockd: ${problem.file}: ${problem.field ? `${problem.field}: ` : ""}${problem.message}`,
          );
        }
        if (config.errors?.length) Deno.exit(1);
      })
    );
}

/** Prints locations with their worktrees. */
export function printLocations(locations: Location[]): void {
  table(
    ["LOCATION", "WORKTREE", "BRANCH", "PORTS", "SETUP", "PATH"],
    locations.flatMap((l) =>
      l.worktrees.map((w) => [
        l.name,
        w.main ? `${w.name} (main)` : w.name,
        w.branch,
        w.ports.length ? w.ports.join(",") : "-",
        w.setup.state,
        w.path,
      ])
    ),
  );
}

/** Makes a CLI path absolute against the caller's directory (the daemon has its own). */
export function resolvePath(path: string): string {
  return path.startsWith("/") ? path : `${Deno.cwd()}/${path}`;
}
