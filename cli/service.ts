/**
 * `dockd service list|start|stop|restart|log LOC/WT [SERVICE]`, `dockd pause|resume LOC/WT` and
 * `dockd ports`.
 *
 * @module
 */
import type { Command } from "@commander-js/extra-typings";
import { DockError } from "../client/errors.ts";
import { localBox } from "./client.ts";
import { guarded, printJson, splitWorktree, table } from "./output.ts";

/** Adds the `service` family, `pause`, `resume` and `ports`. */
export function serviceCommands(program: Command): void {
  const service = program.command("service").alias("svc").description("a worktree's services");

  service.command("list").alias("ls").description("list a worktree's services").argument(
    "<location/worktree>",
  )
    .option("--json", "print JSON").action((spec, o) =>
      guarded(async () => {
        const [location, worktree] = splitWorktree(spec);
        const services = await localBox().services(location, worktree);
        if (o.json) return printJson(services);
        table(
          ["SERVICE", "STATE", "PID", "RESTARTS", "PORTS", "RUN"],
          services.map((s) => [s.name, s.state, s.pid, s.restarts, s.ports.join(",") || "-", s.run]),
        );
      })
    );

  for (const action of ["start", "stop", "restart"] as const) {
    service.command(action).description(`${action} one service, or all of the worktree's`)
      .argument("<location/worktree>").argument("[service]").option("--json", "print JSON")
      .action((spec, name, o) =>
        guarded(async () => {
          const [location, worktree] = splitWorktree(spec);
          const box = localBox();
          const names = name ? [name] : (await box.services(location, worktree)).map((s) => s.name);
          for (const each of names) {
            const result = await box.serviceAction(location, worktree, each, action);
            if (o.json) printJson(result);
            else console.log(`${each}: ${result.state}${result.pid ? ` (pid ${result.pid})` : ""}`);
          }
        })
      );
  }

  service.command("log").description("print (or --follow) a service's output").argument("<location/worktree>")
    .argument("<service>").option("--follow", "keep printing what it writes").option(
      "--tail <lines>",
      "lines of history",
      Number,
    ).action((spec, name, o) =>
      guarded(async () => {
        const [location, worktree] = splitWorktree(spec);
        for await (
          const line of localBox().serviceLog(location, worktree, name, { follow: o.follow, tail: o.tail })
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
    ).argument("<location/worktree>").action((spec) =>
      guarded(async () => {
        const [location, worktree] = splitWorktree(spec);
        const result = await localBox().pause(location, worktree, action);
        console.log(`${location}/${worktree}: ${result.paused ? "paused" : "running"}`);
      })
    );
  }

  program.command("ports").description("listening TCP ports and the worktree each belongs to")
    .option("--json", "print JSON").action((o) =>
      guarded(async () => {
        const ports = await localBox().ports();
        if (o.json) return printJson(ports);
        table(
          ["PORT", "ADDRESS", "WORKTREE", "SERVICE", "PID", "COMMAND"],
          ports.map((p) => [
            p.port,
            p.address,
            p.location ? `${p.location}/${p.worktree}` : "-",
            p.service,
            p.pid,
            p.command?.slice(0, 60),
          ]),
        );
      })
    );
}
