/**
 * `flow`: the box's flows and their runs (spec 2.5, 4.2). `dockd flow list [LOC]`, `runs [--flow ID]`,
 * `show RUN`, `test LOC[/WT] ID [key=value…]` and `enable|disable ID [LOC]` on this box; `dock flow …` the
 * same with the box first (`list BOX[/LOC]`, `runs BOX`, `show BOX RUN`, `test BOX/LOC[/WT] ID`,
 * `enable|disable BOX[/LOC] ID`). Flows are edited in `~/.dock/flows.json` or a repository's
 * `.dock/config.json` (they take effect within a second).
 *
 * `enable`/`disable` write the box's side only, never a repository's file: a box flow's `enabled` in
 * `flows.json` (`PUT flows`), or for a repository's or kit's flow a replacement by id in the location's box
 * layer (`PUT locations/{name}/config`, spec 2.6). Both pass the `before:config.change` gates and announce
 * `config.changed`. Enabling again drops a replacement that only switched the flow off, so the
 * repository's own version is back in force rather than a copy frozen on the box.
 *
 * @module
 */
import type { Command } from "./commander.ts";
import { DockError } from "../client/errors.ts";
import type { BoxClient } from "../client/box.ts";
import type { DockConfig, FlowConfig, FlowInfo, FlowRun } from "../client/wire.ts";
import { excerpt, keyValues, printJson, table } from "./output.ts";
import type { Scope } from "./target.ts";

/** Adds `flow` to `dockd` (this box) or `dock` (a box named first). */
export function flowCommands(program: Command, scope: Scope): void {
  const box = scope.kind === "box";
  const flow = program.command("flow").description("the box's flows and their runs");

  flow.command("list").description("every flow with its scope, source and whether it is overridden")
    .argument(box ? "[location]" : "<box[/location]>").option("--json", "print JSON")
    .action((spec, o) =>
      scope.run(async () => {
        const [target] = await scope.each(spec, "LOCATION");
        const state = await target.client.flows();
        const location = target.rest[0];
        const flows = location
          ? state.flows.filter((f) => f.scope === "box" || f.scope === `repo:${location}`)
          : state.flows;
        if (o.json) return printJson({ ...state, flows });
        if (state.error) console.log(`${state.path}: ${state.error} (the last good flows stay in force)`);
        if (flows.length === 0) return console.log(`no flows (add them to ${state.path})`);
        table(
          ["ID", "SCOPE", "SOURCE", "ENABLED", "TRIGGER", "STEPS", "NAME"],
          flows.map((f) => [
            f.id,
            f.scope,
            f.overridden ? `${f.source} (overridden)` : f.source,
            f.enabled === true,
            JSON.stringify(f.trigger),
            f.steps.length,
            f.name,
          ]),
        );
        for (const f of flows) {
          if (f.inactive_reason) console.log(`${f.id} (${f.scope}) cannot run: ${f.inactive_reason}`);
        }
      })
    );

  const runs = flow.command("runs").description("recent runs, newest first")
    .option("--flow <id>", "one flow's").option("--limit <n>", "how many (at most 200)", "50")
    .option("--json", "print JSON");
  if (!box) runs.argument("<box>");
  runs.action((...args: unknown[]) =>
    scope.run(async () => {
      const spec = box ? "" : args[0] as string;
      const o = (box ? args[0] : args[1]) as { flow?: string; limit: string; json?: boolean };
      const { client } = await scope.resolve(spec, "");
      const list = await client.flowRuns({ flow: o.flow, limit: Number(o.limit) });
      if (o.json) return printJson(list);
      if (list.length === 0) return console.log("no runs");
      table(
        ["RUN", "FLOW", "STATUS", "TRIGGER", "WHERE", "START", "REASON"],
        list.map((r) => [r.id, r.flow, r.status, r.trigger, where(r), r.start, r.reason]),
      );
    })
  );

  const show = flow.command("show").description("one run with its steps");
  if (!box) show.argument("<box>");
  show.argument("<run>").option("--json", "print JSON");
  show.action((...args: unknown[]) =>
    scope.run(async () => {
      const [spec, id, o] = (box ? ["", ...args] : args) as [string, string, { json?: boolean }];
      const { client } = await scope.resolve(spec, "");
      const run = (await client.flowRuns({ limit: 200 })).find((r) => String(r.id) === id);
      if (!run) throw new DockError("not_found", `no run ${id} among the box's last 200`, { status: 404 });
      if (o.json) return printJson(run);
      printRun(run);
    })
  );

  flow.command("test").description("run a flow for real as if its trigger occurred there")
    .argument(scope.arg("location[/worktree]")).argument("<id>").argument(
      "[data...]",
      "event data as key=value",
    )
    .option("--json", "print JSON")
    .action((spec, id, data, o) =>
      scope.run(async () => {
        const { client, rest: [location, worktree] } = await scope.resolve(spec, "LOCATION[/WORKTREE]");
        const run = await client.testFlow(id, {
          scope: `repo:${location}`,
          data: { location, ...(worktree ? { worktree } : {}), ...keyValues(data) },
        });
        if (o.json) printJson(run);
        else printRun(run);
        if (run.status !== "succeeded") {
          throw new DockError(
            "flow_failed",
            `run ${run.id} ${run.status}${run.reason ? `: ${run.reason}` : ""}`,
            { status: 409 },
          );
        }
      })
    );

  for (const enabled of [true, false]) {
    const verb = flow.command(enabled ? "enable" : "disable").description(
      enabled
        ? "switch a flow on on this box (writes the box's side, never the repository's file)"
        : "switch a flow off on this box (writes the box's side, never the repository's file)",
    );
    if (box) verb.argument("<id>").argument("[location]", "only the flow of this location");
    else verb.argument("<box[/location]>").argument("<id>");
    verb.action((...args: unknown[]) =>
      scope.run(async () => {
        const [spec, id] = (box ? [args[1], args[0]] : [args[0], args[1]]) as [string | undefined, string];
        const [target] = await scope.each(spec, "LOCATION");
        for (const line of await switchFlow(target.client, id, { enabled, location: target.rest[0] })) {
          console.log(line);
        }
      })
    );
  }
}

/**
 * Switches flow `id` on or off on the box, in every scope it is in force in (or only `repo:<location>`);
 * answers one line per change. 404 when no flow in force has that id.
 */
export async function switchFlow(
  client: Pick<BoxClient, "flows" | "putFlows" | "config" | "putConfig">,
  id: string,
  options: { enabled: boolean; location?: string },
): Promise<string[]> {
  const { enabled, location } = options;
  const state = await client.flows();
  const inForce = state.flows.filter((f) =>
    f.id === id && !f.overridden && (location === undefined || f.scope === `repo:${location}`)
  );
  if (inForce.length === 0) {
    throw new DockError(
      "not_found",
      `no flow '${id}' in force on the box${location ? ` for location '${location}'` : ""}`,
      { status: 404 },
    );
  }
  const word = enabled ? "enabled" : "disabled";
  const lines: string[] = [];
  const pending = inForce.filter((f) => (f.enabled === true) !== enabled);
  for (const f of inForce) if (!pending.includes(f)) lines.push(`${id} (${f.scope}) is already ${word}`);
  if (pending.some((f) => f.source === "box")) {
    const file = state.flows.filter((f) => f.source === "box").map(flowOf);
    await client.putFlows(file.map((f) => f.id === id ? { ...f, enabled } : f));
    lines.push(`${id} (box): ${word} in ${state.path}`);
  }
  for (const f of pending.filter((f) => f.source !== "box")) {
    const name = f.scope.slice("repo:".length);
    const config = await client.config(name);
    const local: DockConfig = { ...config.local };
    const flows = [...(local.flows ?? [])];
    const lower = config.kit?.flows?.find((g) => g.id === id) ?? config.repo?.flows?.find((g) => g.id === id);
    const at = flows.findIndex((g) => g.id === id);
    if (at === -1) flows.push({ ...lower!, enabled });
    else if (enabled && lower?.enabled === true && sameFlow({ ...flows[at], enabled: true }, lower)) {
      flows.splice(at, 1);
    } else flows[at] = { ...flows[at], enabled };
    if (flows.length) local.flows = flows;
    else delete local.flows;
    await client.putConfig(name, Object.keys(local).length ? local : null);
    lines.push(`${id} (${f.scope}): ${word} in the location's box layer`);
  }
  return lines;
}

/** A listed flow as a file holds it, without what the listing adds. */
function flowOf(info: FlowInfo): FlowConfig {
  const { scope: _scope, source: _source, overridden: _overridden, inactive_reason: _reason, ...flow } = info;
  return flow;
}

function sameFlow(a: FlowConfig, b: FlowConfig): boolean {
  const canonical = (value: unknown): unknown =>
    Array.isArray(value) ? value.map(canonical) : value && typeof value === "object"
      ? Object.fromEntries(
        Object.entries(value).sort(([x], [y]) => x < y ? -1 : 1).map(([k, v]) => [k, canonical(v)]),
      )
      : value;
  return JSON.stringify(canonical(a)) === JSON.stringify(canonical(b));
}

function where(run: FlowRun): string | undefined {
  return run.location ? `${run.location}${run.worktree ? `/${run.worktree}` : ""}` : undefined;
}

function printRun(run: FlowRun): void {
  console.log(
    `run ${run.id} of ${run.flow} (${run.scope}): ${run.status}${run.reason ? ` (${run.reason})` : ""}`,
  );
  console.log(`trigger: ${run.trigger}${where(run) ? ` in ${where(run)}` : ""}`);
  console.log(`start: ${run.start}${run.end ? `, end: ${run.end}` : ""}`);
  for (const step of run.steps) {
    const code = step.exit_code === undefined ? "" : ` exit ${step.exit_code}`;
    console.log(
      `  ${step.id} ${step.kind}: ${step.status}${code}${step.error ? ` (${excerpt(step.error, 80)})` : ""}`,
    );
    if (step.output) {
      for (const line of step.output.trimEnd().split("\n").slice(-10)) console.log(`    ${line}`);
    }
  }
}
