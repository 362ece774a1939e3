/**
 * `plugin`: the plugins of this box (`dockd plugin …`) or of the laptop and its boxes (`dock plugin …`,
 * `--box B` for one box's): list them, show one with its log, enable one (showing what it is granted,
 * confirmed by `--yes` or at a prompt), disable one, and `plugin new ID` for a working skeleton with a
 * typed module hook and a test.
 *
 * @module
 */
import type { Command } from "./commander.ts";
import { DockError } from "../client/errors.ts";
import type {
  PluginConfig,
  PluginFile,
  PluginInfo,
  PluginPermissions,
  PluginTestEvent,
  PluginTestEventResult,
} from "../client/wire.ts";
import { load } from "./lazy.ts";
import { describePermissions, permissionLines } from "../client/plugin.ts";
import { printJson, table } from "./output.ts";
import type { Scope } from "./target.ts";

/** What the commands need of the box or the laptop: the same calls on both clients. */
interface PluginApi {
  plugins(): Promise<PluginInfo[]>;
  plugin(id: string, log?: number): Promise<PluginInfo>;
  enablePlugin(id: string, permissions: PluginPermissions): Promise<PluginInfo>;
  disablePlugin(id: string): Promise<PluginInfo>;
  pluginConfig(id: string): Promise<PluginConfig>;
  setPluginConfig(id: string, values: PluginConfig["values"]): Promise<PluginConfig>;
  pluginTestEvent(id: string, event: PluginTestEvent): Promise<PluginTestEventResult>;
  callPlugin(id: string, path: string, init?: { method?: string; body?: string }): Promise<Response>;
}

/** What installing needs besides: the files route and removal (both clients have them). */
interface PluginInstaller {
  installPlugin(id: string, files: PluginFile[]): Promise<PluginInfo>;
  removePlugin(id: string): Promise<{ id: string; where: string; removed: true }>;
}

/** How often `logs -f` and `dev` ask for new log lines. */
const FOLLOW_MS = 500;

/** Adds `plugin` to `dockd` (this box) or `dock` (the laptop, or `--box B`). */
export function pluginCommands(program: Command, scope: Scope): void {
  const plugin = program.command("plugin").description(
    scope.kind === "box" ? "the box's plugins (~/.dock/plugins)" : "the laptop's plugins, and its boxes'",
  );
  const where = async (box: string | undefined): Promise<PluginApi & PluginInstaller> => {
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
      if (info.permissions) console.log(`asks for: ${describePermissions(info.permissions, info)}`);
      if (info.granted) console.log(`granted: ${describePermissions(info.granted, info)}`);
      const c = info.counters;
      console.log(
        `calls ${c.calls}, failures ${c.failures}, timeouts ${c.timeouts}, restarts ${c.restarts}, ` +
          `cold starts ${c.cold_starts}, refused ${c.refused}, dropped ${c.dropped}`,
      );
      for (const line of info.log ?? []) console.log(`  ${line}`);
    })
  );

  const logs = plugin.command("logs").description("a plugin's newest log lines (-f: and those that follow)")
    .argument("<id>").option("-n, --lines <n>", "how many", "100").option("-f, --follow", "keep printing");
  if (scope.kind === "laptop") logs.option("--box <box>", "a box's plugin");
  logs.action((id, o: { lines: string; box?: string; follow?: boolean }) =>
    scope.run(async () => {
      const count = Number(o.lines);
      if (!Number.isInteger(count) || count < 0 || count > 500) {
        throw new DockError("usage", "--lines: a number from 0 to 500", { status: 400 });
      }
      const api = await where(o.box);
      const lines = (await api.plugin(id, count)).log ?? [];
      for (const line of lines) console.log(line);
      if (o.follow) await follow(api, id, lines.at(-1), () => {});
    })
  );

  const dev = plugin.command("dev").description(
    "follow a plugin while you edit it: its state as files change and reload, and its log",
  ).argument("<id>");
  if (scope.kind === "laptop") dev.option("--box <box>", "a box's plugin");
  dev.action((id, o: { box?: string }) =>
    scope.run(async () => {
      // The host scans plugin folders (every 500 ms by default) and reloads a changed one, a failed one
      // included: this shows that happen.
      const api = await where(o.box);
      const first = await api.plugin(id, 20);
      let said = stateLine(first);
      console.log(said);
      for (const line of first.log ?? []) console.log(line);
      await follow(api, id, first.log?.at(-1), (info) => {
        const now = stateLine(info);
        if (now !== said) console.log(said = now);
      });
    })
  );

  const call = plugin.command("call").description("call a plugin's fetch function and print its answer")
    .argument("<id>").argument("[path]", "the path under its fn/", "/")
    .option("--data <body>", "a body (JSON is sent as JSON); the method is then POST")
    .option("--method <method>", "GET, POST, PUT, PATCH or DELETE");
  if (scope.kind === "laptop") call.option("--box <box>", "a box's plugin");
  call.action((id, path: string, o: { data?: string; method?: string; box?: string }) =>
    scope.run(async () => {
      const method = o.method?.toUpperCase();
      if (method && !["GET", "POST", "PUT", "PATCH", "DELETE"].includes(method)) {
        throw new DockError("usage", "--method: GET, POST, PUT, PATCH or DELETE", { status: 400 });
      }
      const response = await (await where(o.box)).callPlugin(id, path, { method, body: o.data });
      const text = await response.text();
      if (text) console.log(text);
    })
  );

  const emit = plugin.command("emit").description(
    "send one test event to one plugin only (never to the bus), and say what its hooks did",
  ).argument("<id>").argument("<type>").argument(
    "[data...]",
    "key=value (a value that parses as JSON is JSON)",
  )
    .option("--json", "print JSON");
  if (scope.kind === "laptop") emit.option("--box <box>", "a box's plugin");
  emit.action((id, type: string, words: string[], o: { json?: boolean; box?: string }) =>
    scope.run(async () => {
      const data: Record<string, unknown> = {};
      for (const word of words ?? []) {
        const at = word.indexOf("=");
        if (at <= 0) throw new DockError("usage", `${word}: write key=value`, { status: 400 });
        const text = word.slice(at + 1);
        data[word.slice(0, at)] = jsonOr(text);
      }
      const result = await (await where(o.box)).pluginTestEvent(id, { type, data });
      if (o.json) return printJson(result);
      for (const { module, error } of result.delivered) {
        console.log(`${module}: ${error ? `failed: ${error}` : "ok"}`);
      }
      if (result.delivered.some((d) => d.error)) {
        throw new DockError("plugin_failed", `plugin '${id}' failed the test event`, { status: 422 });
      }
    })
  );

  const config = plugin.command("config").description(
    "a plugin's settings: show them, `set k=v…` or `unset k…` (a secret is set as a reference, env://NAME)",
  ).argument("<id>").argument("[change...]", "set k=v… | unset k…").option("--json", "print JSON");
  if (scope.kind === "laptop") config.option("--box <box>", "a box's plugin");
  config.action((id, change: string[], o: { json?: boolean; box?: string }) =>
    scope.run(async () => {
      const api = await where(o.box);
      let current = await api.pluginConfig(id);
      const [verb, ...words] = change ?? [];
      if (verb === "set" || verb === "unset") {
        if (words.length === 0) {
          throw new DockError("usage", `${verb}: name at least one setting`, { status: 400 });
        }
        const values = { ...current.values };
        if (verb === "set") {
          const { parseAssignments } = await load<typeof import("../plugins/plugin_config.ts")>(
            "../plugins/plugin_config.ts",
          );
          const schema = current.schema as Parameters<typeof parseAssignments>[0];
          Object.assign(values, parseAssignments(schema, words));
        } else for (const key of words) delete values[key];
        current = await api.setPluginConfig(id, values);
      } else if (verb !== undefined) {
        throw new DockError("usage", `${verb}: write set k=v… or unset k…`, { status: 400 });
      }
      if (o.json) return printJson(current);
      const properties = (current.schema?.properties ?? {}) as Record<
        string,
        { type: string; description?: string; secret?: boolean }
      >;
      if (Object.keys(properties).length === 0) return console.log(`${id} has no settings`);
      table(
        ["KEY", "TYPE", "VALUE", "DESCRIPTION"],
        Object.entries(properties).map(([key, p]) => [
          key,
          p.secret ? "secret" : p.type,
          key in current.values
            ? String(current.values[key])
            : key in current.effective
            ? `${current.effective[key]} (default)`
            : "",
          p.description ?? "",
        ]),
      );
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
      // One line a kind, each scope with what it can lead to and each command with its user: what is
      // confirmed here is what the enable call sends back, compared exactly.
      const lines = permissionLines(info.permissions, info);
      console.log(
        `${id} (${info.where}) asks for:${lines.length ? "" : " nothing beyond reading its own folder"}`,
      );
      for (const line of lines) console.log(`  ${line}`);
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

  // Installing: the files are read here, the consent asked here with the exact grants, and the box
  // is sent the files and then the enable with those grants (it checks them against what it read).
  const installer = (verb: "install" | "update") => {
    const command = plugin.command(verb).description(
      verb === "install"
        ? "install a plugin from a folder, a tarball or a git URL, and enable it (after you confirm its grants)"
        : "replace an installed plugin's files with a newer folder, tarball or git URL, and enable it again",
    );
    if (verb === "update") command.argument("<id>");
    command.argument("<source>", "a folder, a .tar.gz/.tgz, or a git URL").option(
      "--yes",
      "grant without asking",
    );
    if (scope.kind === "laptop") {
      command.option("--box <box>", "install on this box").option("--all", "install on every online box");
    }
    command.action(async (...args: unknown[]) => {
      const [expected, source, o] = (verb === "update" ? args : [undefined, ...args]) as [
        string | undefined,
        string,
        { yes?: boolean; box?: string; all?: boolean },
      ];
      await scope.run(async () => {
        if (o.box && o.all) throw new DockError("usage", "--box or --all, not both", { status: 400 });
        // Loaded here: the manifest's checks bring zod, which no other plugin command needs at start-up.
        const { readInstallable } = await load<typeof import("../plugins/install.ts")>(
          "../plugins/install.ts",
        );
        const plan = await readInstallable(source, expected);
        const { id, files } = plan;
        const targets: { name: string; api: PluginApi & PluginInstaller }[] = o.all
          ? (await scope.each(undefined)).map((t) => ({ name: t.box ?? "", api: t.client }))
          : [{ name: o.box ?? (scope.kind === "box" ? "this box" : "laptop"), api: await where(o.box) }];
        if (targets.length === 0) throw new DockError("no_box", "no box is online", { status: 409 });
        if (verb === "update") {
          for (const target of targets) await target.api.plugin(id, 0); // a 404 where it is not installed
        }
        const asked = plan.permissions;
        const lines = permissionLines(asked, plan.consent);
        console.log(
          `${id} ${plan.version} for ${targets.map((t) => t.name).join(", ")} asks for:${
            lines.length ? "" : " nothing beyond reading its own folder"
          }`,
        );
        for (const line of lines) console.log(`  ${line}`);
        if (!o.yes) {
          if (!Deno.stdin.isTerminal()) {
            throw new DockError("usage", "pass --yes to grant these permissions", { status: 400 });
          }
          const answer = prompt("Install it and grant them? [y/N]");
          if (!/^y(es)?$/i.test(answer?.trim() ?? "")) {
            throw new DockError("usage", "not installed", { status: 400 });
          }
        }
        for (const target of targets) {
          const installed = await target.api.installPlugin(id, files);
          if (!installed.permissions) {
            throw new DockError(
              "invalid_plugin",
              `${target.name}: ${installed.error ?? "it does not load"}`,
            );
          }
          const enabled = await target.api.enablePlugin(id, asked);
          console.log(
            `${
              verb === "install" ? "installed" : "updated"
            } ${id} ${plan.version} on ${target.name}: ${enabled.state}`,
          );
        }
      });
    });
  };
  installer("install");
  installer("update");

  const remove = plugin.command("remove").description("disable and remove a plugin (its data folder is kept)")
    .argument("<id>");
  if (scope.kind === "laptop") {
    remove.option("--box <box>", "a box's plugin").option("--all", "from every online box");
  }
  remove.action((id, o: { box?: string; all?: boolean }) =>
    scope.run(async () => {
      const targets: (PluginApi & PluginInstaller)[] = o.all
        ? (await scope.each(undefined)).map((t) => t.client)
        : [await where(o.box)];
      for (const api of targets) {
        const removed = await api.removePlugin(id);
        console.log(`removed ${removed.id} (${removed.where})`);
      }
    })
  );

  plugin.command("new").description("write a working plugin skeleton (a typed module hook and its test)")
    .argument("<id>").option("--dir <folder>", "where to write it (default ~/.dock/plugins/<id>)")
    .action((id, o) =>
      scope.run(async () => {
        const { newPlugin } = await import("./plugin_new.ts");
        const folder = await newPlugin(id, o.dir);
        console.log(
          `wrote ${folder}: edit main.ts, run \`deno test\` in it, then install or enable it`,
        );
      })
    );
}

/** `value` as JSON when it parses as JSON (a number, true, an object), else the text itself. */
function jsonOr(value: string): unknown {
  try {
    return JSON.parse(value);
  } catch {
    return value;
  }
}

/** One line of where a plugin stands, for `dev`. */
function stateLine(info: PluginInfo): string {
  return `${info.id} (${info.where}): ${info.state}${info.enabled ? "" : ", not enabled"}${
    info.error ? ` — ${info.error}` : ""
  }`;
}

/**
 * Prints a plugin's log lines as they come (asking every {@linkcode FOLLOW_MS}), after `last`, the
 * newest line printed; `each` sees the plugin at every ask. Ends only when interrupted or on an error.
 */
async function follow(
  api: PluginApi,
  id: string,
  last: string | undefined,
  each: (info: PluginInfo) => void,
): Promise<never> {
  while (true) {
    await new Promise((resolve) => setTimeout(resolve, FOLLOW_MS));
    const info = await api.plugin(id, 500);
    each(info);
    const lines = info.log ?? [];
    const at = last === undefined ? -1 : lines.lastIndexOf(last);
    for (const line of lines.slice(at + 1)) console.log(line);
    if (lines.length) last = lines.at(-1);
  }
}
