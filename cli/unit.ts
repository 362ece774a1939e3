/**
 * `unit list|show|add|start|stop|restart|log|rm` (`dock unit … BOX/…` from the laptop): the box's own
 * long-running processes, supervised as services are.
 *
 * @module
 */
import type { Command } from "./commander.ts";
import { keyValues, printJson, table } from "./output.ts";
import { gather, listing, named, type Scope } from "./target.ts";

/** Adds `unit`. */
export function unitCommands(program: Command, scope: Scope): void {
  const unit = program.command("unit").description("the box's own long-running processes (no worktree's)");

  listing(
    scope,
    unit.command("list").alias("ls").description("every unit").option("--json", "print JSON"),
    async (targets, o) => {
      const units = await gather(targets, (t) => t.client.units());
      if (o.json) return printJson(units);
      table(
        ["UNIT", "STATE", "PID", "RESTARTS", "AUTOSTART", "RUN"],
        units.map((
          u,
        ) => [
          named(u, u.name),
          u.state + (u.error ? ` (${u.error})` : ""),
          u.pid,
          u.restarts,
          u.autostart,
          u.run,
        ]),
      );
    },
  );

  unit.command("show").description("one unit").argument(scope.arg("name")).option("--json", "print JSON")
    .action((spec, o) =>
      scope.run(async () => {
        const { client, rest: [name] } = await scope.resolve(spec, "NAME");
        const shown = await client.unit(name);
        if (o.json) return printJson(shown);
        table(
          ["FIELD", "VALUE"],
          Object.entries(shown).map(([k, v]) => [k, typeof v === "object" ? JSON.stringify(v) : v]),
        );
      })
    );

  unit.command("add").description("define a unit and start it").argument(scope.arg("name"))
    .argument("<command...>", "what it runs (through a login shell, in the home folder)")
    .option("--env <KEY=VALUE...>", "its environment (values may be secret references)")
    .option("--autostart", "start it again when the daemon starts").option("--json", "print JSON")
    .action((spec, words, o) =>
      scope.run(async () => {
        const { client, rest: [name] } = await scope.resolve(spec, "NAME");
        const env = o.env
          ? Object.fromEntries(Object.entries(keyValues(o.env)).map(([k, v]) => [k, String(v)]))
          : undefined;
        const created = await client.createUnit({ name, run: words.join(" "), env, autostart: o.autostart });
        if (o.json) return printJson(created);
        console.log(`unit ${created.name}: ${created.state} (pid ${created.pid})`);
      })
    );

  for (const action of ["start", "stop", "restart"] as const) {
    unit.command(action).description(`${action} a unit`).argument(scope.arg("name")).option(
      "--json",
      "print JSON",
    )
      .action((spec, o) =>
        scope.run(async () => {
          const { client, rest: [name] } = await scope.resolve(spec, "NAME");
          const done = await client.unitAction(name, action);
          if (o.json) return printJson(done);
          console.log(`unit ${done.name}: ${done.state}`);
        })
      );
  }

  unit.command("log").description("a unit's output").argument(scope.arg("name"))
    .option("-n, --tail <lines>", "lines to show", Number).option(
      "-f, --follow",
      "keep printing what it writes",
    )
    .action((spec, o) =>
      scope.run(async () => {
        const { client, rest: [name] } = await scope.resolve(spec, "NAME");
        for await (const line of client.unitLog(name, { tail: o.tail, follow: o.follow })) {
          if (line.line !== undefined) console.log(line.line);
        }
      })
    );

  unit.command("rm").alias("remove").description("stop a unit and forget it").argument(scope.arg("name"))
    .action((spec) =>
      scope.run(async () => {
        const { client, rest: [name] } = await scope.resolve(spec, "NAME");
        await client.removeUnit(name);
        console.log(`removed unit ${name}`);
      })
    );
}
