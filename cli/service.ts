/**
 * `service list|start|stop|restart|log LOC/WT [SERVICE]`, `pause|resume LOC/WT` and `ports` (from the
 * laptop: `dock service list devbox/app/wt`, `dock ports [devbox]`).
 *
 * @module
 */
import type { Command } from "./commander.ts";
import { DockError } from "../client/errors.ts";
import { printJson, table } from "./output.ts";
import { gather, listing, named, type Scope } from "./target.ts";

/** Adds the `service` family, `pause`, `resume` and `ports`. */
export function serviceCommands(program: Command, scope: Scope): void {
  const service = program.command("service").alias("svc").description("a worktree's services");

  service.command("list").alias("ls").description("list a worktree's services").argument(
    scope.arg("location/worktree"),
  )
    .option("--json", "print JSON").action((spec, o) =>
      scope.run(async () => {
        const { client, rest: [location, worktree] } = await scope.resolve(spec, "LOCATION/WORKTREE");
        const services = await client.services(location, worktree);
        if (o.json) return printJson(services);
        table(
          ["SERVICE", "STATE", "PID", "RESTARTS", "PORTS", "RUN"],
          services.map((s) => [s.name, s.state, s.pid, s.restarts, s.ports.join(",") || "-", s.run]),
        );
      })
    );

  for (const action of ["start", "stop", "restart"] as const) {
    service.command(action).description(`${action} one service, or all of the worktree's`)
      .argument(scope.arg("location/worktree")).argument("[service]").option("--json", "print JSON")
      .action((spec, name, o) =>
        scope.run(async () => {
          const { client, rest: [location, worktree] } = await scope.resolve(spec, "LOCATION/WORKTREE");
          const names = name ? [name] : (await client.services(location, worktree)).map((s) => s.name);
          for (const each of names) {
            const result = await client.serviceAction(location, worktree, each, action);
            if (o.json) printJson(result);
            else console.log(`${each}: ${result.state}${result.pid ? ` (pid ${result.pid})` : ""}`);
          }
        })
      );
  }

  service.command("log").description("print (or --follow) a service's output").argument(
    scope.arg("location/worktree"),
  )
    .argument("<service>").option("--follow", "keep printing what it writes").option(
      "--tail <lines>",
      "lines of history",
      Number,
    ).action((spec, name, o) =>
      scope.run(async () => {
        const { client, rest: [location, worktree] } = await scope.resolve(spec, "LOCATION/WORKTREE");
        for await (
          const line of client.serviceLog(location, worktree, name, { follow: o.follow, tail: o.tail })
        ) {
          if (line.line !== undefined) console.log(line.line);
          if (line.error) throw new DockError("log_failed", line.error);
        }
      })
    );

  for (const action of ["pause", "resume"] as const) {
    program.command(action).description(
      action === "pause"
        ? "stop every process of a worktree's services and sessions (SIGSTOP)"
        : "continue a paused worktree",
    ).argument(scope.arg("location/worktree")).action((spec) =>
      scope.run(async () => {
        const target = await scope.resolve(spec, "LOCATION/WORKTREE");
        const [location, worktree] = target.rest;
        const result = await target.client.pause(location, worktree, action);
        console.log(`${named(target, `${location}/${worktree}`)}: ${result.paused ? "paused" : "running"}`);
      })
    );
  }

  listing(
    scope,
    program.command("ports").description("listening TCP ports and the worktree each belongs to")
      .option("--json", "print JSON"),
    async (targets, o) => {
      const ports = await gather(targets, (t) => t.client.ports());
      if (o.json) return printJson(ports);
      table(
        ["PORT", "ADDRESS", "WORKTREE", "SERVICE", "PID", "COMMAND"],
        ports.map((p) => [
          p.port,
          p.address,
          p.location ? named(p, `${p.location}/${p.worktree}`) : p.box ?? "-",
          p.service,
          p.pid,
          p.command?.slice(0, 60),
        ]),
      );
    },
  );
}
