/**
 * `plugin`: the plugins of this box (`dockd plugin …`) or of the laptop and its boxes (`dock plugin …`,
 * `--box B` for one box's): list them, show one with its log, enable one (showing what it is granted,
 * confirmed by `--yes` or at a prompt), disable one, and `plugin new ID` for a working skeleton with a
 * typed module hook and a test.
 *
 * @module
 */
import type { Command } from "./commander.ts";
import { join } from "../core/posix_path.ts";
import { DockError } from "../client/errors.ts";
import type { PluginInfo, PluginPermissions } from "../client/wire.ts";
import { describePermissions } from "../client/plugin.ts";
import { printJson, table } from "./output.ts";
import type { Scope } from "./target.ts";

/** What the commands need of the box or the laptop: the same four calls on both clients. */
interface PluginApi {
  plugins(): Promise<PluginInfo[]>;
  plugin(id: string, log?: number): Promise<PluginInfo>;
  enablePlugin(id: string, permissions: PluginPermissions): Promise<PluginInfo>;
  disablePlugin(id: string): Promise<PluginInfo>;
}

/** Adds `plugin` to `dockd` (this box) or `dock` (the laptop, or `--box B`). */
export function pluginCommands(program: Command, scope: Scope): void {
  const plugin = program.command("plugin").description(
    scope.kind === "box" ? "the box's plugins (~/.dock/plugins)" : "the laptop's plugins, and its boxes'",
  );
  const where = async (box: string | undefined): Promise<PluginApi> => {
    if (scope.kind === "box" || box === undefined) {
      return scope.kind === "box" ? (await scope.resolve("", "")).client : await scope.agent!();
    }
    return (await scope.resolve(box, "")).client;
  };
  plugin.command("list").description("every plugin, enabled or not, with its state").option(
    "--json",
    "print JSON",
  )
    .action((o) =>
      scope.run(async () => {
        const list = await (await where(undefined)).plugins();
        if (o.json) return printJson(list);
        if (list.length === 0) return console.log("no plugins (add one under ~/.dock/plugins/<id>/)");
        table(
          ["ID", "WHERE", "VERSION", "ENABLED", "STATE", "CALLS", "ERROR"],
          list.map((p) => [p.id, p.where, p.version, p.enabled, p.state, p.counters.calls, p.error]),
        );
      })
    );

  const show = plugin.command("show").description("one plugin: what it asks for, is granted, and its log")
    .argument("<id>").option("--json", "print JSON");
  if (scope.kind === "laptop") show.option("--box <box>", "a box's plugin");
  show.action((id, o: { json?: boolean; box?: string }) =>
    scope.run(async () => {
      const info = await (await where(o.box)).plugin(id, 20);
      if (o.json) return printJson(info);
      console.log(
        `${info.id} ${info.version ?? ""} (${info.where}): ${info.state}${
          info.enabled ? "" : ", not enabled"
        }`,
      );
      if (info.name) console.log(info.name);
      if (info.description) console.log(info.description);
      console.log(`folder: ${info.path}`);
      if (info.error) console.log(`error: ${info.error}`);
      if (info.permissions) console.log(`asks for: ${describePermissions(info.permissions)}`);
      if (info.granted) console.log(`granted: ${describePermissions(info.granted)}`);
      const c = info.counters;
      console.log(
        `calls ${c.calls}, failures ${c.failures}, timeouts ${c.timeouts}, restarts ${c.restarts}, ` +
          `cold starts ${c.cold_starts}, refused ${c.refused}, dropped ${c.dropped}`,
      );
      for (const line of info.log ?? []) console.log(`  ${line}`);
    })
  );

  const logs = plugin.command("logs").description("a plugin's newest log lines").argument("<id>")
    .option("-n, --lines <n>", "how many", "100");
  if (scope.kind === "laptop") logs.option("--box <box>", "a box's plugin");
  logs.action((id, o: { lines: string; box?: string }) =>
    scope.run(async () => {
      const count = Number(o.lines);
      if (!Number.isInteger(count) || count < 0 || count > 500) {
        throw new DockError("usage", "--lines: a number from 0 to 500", { status: 400 });
      }
      for (const line of (await (await where(o.box)).plugin(id, count)).log ?? []) console.log(line);
    })
  );

  const enable = plugin.command("enable").description("turn a plugin on, granting what it asks for")
    .argument("<id>").option("--yes", "grant without asking");
  if (scope.kind === "laptop") enable.option("--box <box>", "a box's plugin");
  enable.action((id, o: { yes?: boolean; box?: string }) =>
    scope.run(async () => {
      const api = await where(o.box);
      const info = await api.plugin(id, 0);
      if (!info.permissions) {
        throw new DockError("invalid_plugin", info.error ?? `plugin '${id}' does not load`);
      }
      console.log(`${id} asks for: ${describePermissions(info.permissions)}`);
      if (!o.yes) {
        if (!Deno.stdin.isTerminal()) {
          throw new DockError("usage", "pass --yes to grant these permissions", { status: 400 });
        }
        const answer = prompt("Grant them and enable it? [y/N]");
        if (!/^y(es)?$/i.test(answer?.trim() ?? "")) {
          throw new DockError("usage", "not enabled", { status: 400 });
        }
      }
      const enabled = await api.enablePlugin(id, info.permissions);
      console.log(`enabled ${enabled.id} (${enabled.where}): ${enabled.state}`);
    })
  );

  const disable = plugin.command("disable").description("turn a plugin off").argument("<id>");
  if (scope.kind === "laptop") disable.option("--box <box>", "a box's plugin");
  disable.action((id, o: { box?: string }) =>
    scope.run(async () => {
      const disabled = await (await where(o.box)).disablePlugin(id);
      console.log(`disabled ${disabled.id} (${disabled.where})`);
    })
  );

  plugin.command("new").description("write a working plugin skeleton (a typed module hook and its test)")
    .argument("<id>").option("--dir <folder>", "where to write it (default ~/.dock/plugins/<id>)")
    .action((id, o) =>
      scope.run(async () => {
        const { newPlugin } = await import("./plugin_new.ts");
        const folder = await newPlugin(id, o.dir);
        console.log(
          `wrote ${folder}: edit main.ts, run \`deno test ${join(folder, "main_test.ts")}\`, then enable it`,
        );
      })
    );
}
