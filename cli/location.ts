/**
 * `location …`: list, add, rm, clone, new, branches, scripts, config. `dockd location add app PATH`
 * on a box; `dock location add devbox/app PATH` from the laptop.
 *
 * @module
 */
import type { Command } from "./commander.ts";
import { DockError } from "../client/errors.ts";
import type { Location } from "../client/wire.ts";
import { printJson, table } from "./output.ts";
import { gather, listing, named, type Scope, type Target } from "./target.ts";
import { resolvePath } from "./cwd.ts";

/** Adds the `location` family. */
export function locationCommands(program: Command, scope: Scope): void {
  const location = program.command("location").alias("loc").description(
    scope.kind === "laptop" ? "repositories registered on the boxes" : "repositories registered on this box",
  );

  listing(
    scope,
    location.command("list").alias("ls").description("list locations").option("--json", "print JSON"),
    async (targets, o) => {
      const locations = await gather(targets, (t) => t.client.locations());
      if (o.json) return printJson(locations);
      printLocations(locations);
    },
  );

  location.command("add").description("register an existing repository").argument(scope.arg("name"))
    .argument("<path>").option("--json", "print JSON").action((spec, path, o) =>
      scope.run(async () => {
        const { client, rest: [name], box } = await scope.resolve(spec, "LOCATION");
        const added = await client.addLocation({ name, path: pathOnBox(scope, path) });
        if (o.json) return printJson(added);
        console.log(
          `added ${named({ box }, added.name)} (${added.path}), ${added.worktrees.length} worktree(s)`,
        );
      })
    );

  location.command("rm").alias("remove").description("forget a location (its files stay)")
    .argument(scope.arg("name")).action((spec) =>
      scope.run(async () => {
        const { client, rest: [name], box } = await scope.resolve(spec, "LOCATION");
        const removed = await client.removeLocation(name);
        console.log(`forgot ${named({ box }, removed.name)}; ${removed.path} is untouched`);
      })
    );

  const clone = location.command("clone").description("clone a repository and register it")
    .option("--name <name>", "location name (default: from the URL)")
    .option("--path <path>", "folder to clone into (default: ~/work/<name>)")
    .option("--json", "print the location as JSON when done");
  const cloneInto = async (target: Target, url: string, o: ReturnType<typeof clone.opts>) => {
    for await (
      const line of target.client.cloneLocation({
        url,
        name: o.name,
        path: o.path && pathOnBox(scope, o.path),
      })
    ) {
      if (line.line !== undefined && !o.json) console.error(line.line);
      if (line.error) throw new Error(line.error);
      if (line.location) {
        if (o.json) printJson(line.location);
        else console.log(`added ${named(target, line.location.name)} (${line.location.path})`);
      }
    }
  };
  // On the laptop the box comes first: a URL has slashes of its own.
  if (scope.kind === "laptop") {
    clone.argument("<box>").argument("<url>").action((box, url, o) =>
      scope.run(async () => cloneInto((await scope.each(box))[0], url, o))
    );
  } else {
    clone.argument("<url>").action((url, o) =>
      scope.run(async () => cloneInto((await scope.each(undefined))[0], url, o))
    );
  }

  location.command("new").description("create an empty repository and register it").argument(
    scope.arg("name"),
  )
    .option("--path <path>", "folder (default: ~/work/<name>)").option("--json", "print JSON")
    .action((spec, o) =>
      scope.run(async () => {
        const { client, rest: [name], box } = await scope.resolve(spec, "LOCATION");
        const created = await client.newLocation({ name, path: o.path && pathOnBox(scope, o.path) });
        if (o.json) return printJson(created);
        console.log(`created ${named({ box }, created.name)} (${created.path})`);
      })
    );

  location.command("branches").description("list a location's branches").argument(scope.arg("location"))
    .option("--json", "print JSON").action((spec, o) =>
      scope.run(async () => {
        const { client, rest: [name] } = await scope.resolve(spec, "LOCATION");
        const branches = await client.branches(name);
        if (o.json) return printJson(branches);
        table(
          ["BRANCH", "HEAD", "WORKTREE"],
          branches.map((b) => [`${b.current ? "* " : "  "}${b.name}`, b.head.slice(0, 10), b.worktree]),
        );
      })
    );

  location.command("scripts").description("set the box-level setup and archive scripts").argument(
    scope.arg("location"),
  )
    .option("--setup <command>", "setup script").option("--archive <command>", "archive script")
    .option("--clear", "clear both scripts").option("--json", "print JSON")
    .action((spec, o) =>
      scope.run(async () => {
        const { client, rest: [name] } = await scope.resolve(spec, "LOCATION");
        const scripts = o.clear ? { setup: null, archive: null } : { setup: o.setup, archive: o.archive };
        const config = await client.setScripts(name, scripts);
        if (o.json) return printJson(config);
        console.log(`setup:   ${config.effective.setup ?? "-"}\narchive: ${config.effective.archive ?? "-"}`);
      })
    );

  location.command("config").description("print every config layer and the effective config")
    .argument(scope.arg("location")).option("--json", "print JSON").action((spec, o) =>
      scope.run(async () => {
        const { client, rest: [name] } = await scope.resolve(spec, "LOCATION");
        const config = await client.config(name);
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
            `${scope.program}: ${problem.file}: ${
              problem.field ? `${problem.field}: ` : ""
            }${problem.message}`,
          );
        }
        if (config.errors?.length) Deno.exit(1);
      })
    );
}

/** Prints locations with their worktrees (on the laptop, each location named with its box). */
export function printLocations(locations: (Location & { box?: string })[]): void {
  table(
    ["LOCATION", "WORKTREE", "BRANCH", "PORTS", "SETUP", "PATH"],
    locations.flatMap((l) =>
      l.worktrees.map((w) => [
        named(l, l.name),
        w.main ? `${w.name} (main)` : w.name,
        w.branch,
        w.ports.length ? w.ports.join(",") : "-",
        w.setup.state,
        w.path,
      ])
    ),
  );
}

/**
 * A path as the box should read it: on the box, made absolute against the caller's directory; from
 * the laptop it names a folder on the box, so only an absolute path means anything.
 */
function pathOnBox(scope: Scope, path: string): string {
  if (scope.kind === "box") return resolvePath(path);
  if (!path.startsWith("/")) {
    throw new DockError("usage", `expected an absolute path on the box, got "${path}"`, { status: 400 });
  }
  return path;
}
