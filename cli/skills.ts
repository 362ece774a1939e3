/**
 * `skills [list]`, `skills install [<skill>]`, `skills uninstall <skill>` (spec 1, Skills): dock's
 * skills for the box user's agent tools, through the box API (so its gates run and its events are
 * announced). `dockd skills …` acts on this box; `dock skills BOX …` on a paired box through the
 * agent's relay, and `dock skills` alone lists every online box's.
 *
 * The box comes before the action on the laptop (`dock skills devbox install`), as the spec writes
 * it; commander has no arguments before subcommands, so the laptop's `skills` takes the box and hands
 * the rest to the same subcommands `dockd` has, bound to that box.
 *
 * @module
 */
import { Command, Option } from "./commander.ts";
import { resolve } from "../core/posix_path.ts";
import type { BoxClient } from "../client/box.ts";
import { DockError } from "../client/errors.ts";
import type { SkillCopy, SkillsResult } from "../client/wire.ts";
import { printJson, table } from "./output.ts";
import { gather, type Scope, type Target } from "./target.ts";

/** The subcommand names, which on the laptop come after the box. */
const ACTIONS = ["list", "ls", "install", "uninstall", "rm"];

/** Adds the `skills` family. */
export function skillsCommands(program: Command, scope: Scope): void {
  if (scope.kind === "box") {
    const skills = program.command("skills").description(
      "dock's skills for agent tools (claude, codex): list, install, uninstall",
    );
    subcommands(skills, scope, () => scope.resolve("", ""));
    return;
  }
  // Options after the box belong to the box's subcommand, not to `dock skills` itself.
  program.enablePositionalOptions();
  program.command("skills").description(
    "dock's skills for agent tools (claude, codex) on a box: list, install, uninstall",
  )
    .argument("[box]", "the box (default: list every online box's)")
    .argument("[command...]", "list (default), install [<skill>] or uninstall <skill>, with their options")
    .option("--json", "print JSON")
    .passThroughOptions()
    .addHelpText(
      "after",
      "\nExamples:\n  dock skills devbox\n  dock skills devbox install --target project --location app\n" +
        "  dock skills devbox uninstall dock-preview --agent codex\n  dock skills devbox install --help",
    )
    .action((box, words, o) => {
      if (box === undefined) {
        return scope.run(async () => printCopies(await gather(await scope.each(undefined), list()), o));
      }
      if (ACTIONS.includes(box)) {
        // `dock skills install` reads as an action, but the box comes first: say so, unless a box
        // really has that name.
        return scope.run(async () => {
          const boxes = (await scope.each(undefined)).map((t) => t.box);
          if (boxes.includes(box)) return await runOn(scope, box, o.json ? [...words, "--json"] : words);
          throw new DockError("usage", `name the box first: dock skills BOX ${[box, ...words].join(" ")}`, {
            status: 400,
          });
        });
      }
      return runOn(scope, box, o.json ? [...words, "--json"] : words);
    });
}

/** Runs `dock skills BOX WORDS…`: the same subcommands as `dockd skills`, bound to that box. */
async function runOn(scope: Scope, box: string, words: string[]): Promise<void> {
  const inner = new Command(`dock skills ${box}`).description(`dock's skills on ${box}`);
  subcommands(inner, scope, () => scope.resolve(box, ""));
  await inner.parseAsync(words, { from: "user" });
}

/** `list`, `install`, `uninstall` under `parent`, talking to the box `target` resolves. */
function subcommands(parent: Command, scope: Scope, target: () => Promise<Target>): void {
  const onBox = scope.kind === "box";
  const locationHelp = onBox
    ? "LOC or LOC/WT (or a folder of one; default with --target project: the one here)"
    : "LOC or LOC/WT on the box";

  parent.command("list", { isDefault: true }).alias("ls").description(
    "each skill for each agent: installed, outdated (install again), missing or foreign",
  )
    .option("--location <loc>", `also the project copies in this location's repository: ${locationHelp}`)
    .option("--json", "print JSON").action((o) =>
      scope.run(async () => {
        const where = await target();
        const location = o.location === undefined ? undefined : await locationSpec(where.client, o.location);
        printCopies(await gather([where], list(location)), o);
      })
    );

  parent.command("install").description("install one skill, or all of them, for the box user's agent tools")
    .argument("[skill]", "skill id (default: every skill)")
    .addOption(agentOption())
    .addOption(targetOption("the user's folders (default) or a repository's (default with --location)"))
    .option("--location <loc>", `the repository for the project target: ${locationHelp}`)
    .option("--commit", "project target: keep the folders out of .git/info/exclude, to commit them")
    .option("--json", "print JSON").action((skill, o) =>
      scope.run(async () => {
        const { client } = await target();
        const location = await projectLocation(client, scope, o);
        const result = await client.installSkills({
          skills: skill === undefined ? undefined : [skill],
          agent: o.agent,
          target: o.target,
          location,
          commit: o.commit,
        });
        if (o.json) return printJson(result);
        printResult(result);
      })
    );

  parent.command("uninstall").alias("rm").description("remove a skill's folders (only dock's own copies)")
    .argument("<skill>", "skill id")
    .addOption(agentOption())
    .addOption(targetOption("the user's folders (default) or a repository's (default with --location)"))
    .option("--location <loc>", `the repository for the project target: ${locationHelp}`)
    .option("--json", "print JSON").action((skill, o) =>
      scope.run(async () => {
        const { client } = await target();
        const location = await projectLocation(client, scope, o);
        const result = await client.uninstallSkills({
          skills: [skill],
          agent: o.agent,
          target: o.target,
          location,
        });
        if (o.json) return printJson(result);
        printResult(result);
      })
    );
}

function agentOption() {
  return new Option("--agent <agent>", "which agent tool's folders (default: all)").choices(
    ["claude", "codex", "all"] as const,
  );
}

function targetOption(description: string) {
  return new Option("--target <target>", description).choices(["user", "project"] as const);
}

function list(location?: string): (target: Target) => Promise<SkillCopy[]> {
  return (target) => target.client.skills({ location });
}

/**
 * The `location` of an install or uninstall. On a box, `--target project` without `--location`
 * means the location or worktree the command runs in; elsewhere the box decides (and says what is
 * missing).
 */
async function projectLocation(
  client: BoxClient,
  scope: Scope,
  o: { location?: string; target?: "user" | "project" },
): Promise<string | undefined> {
  if (o.location !== undefined) return await locationSpec(client, o.location);
  if (scope.kind === "box" && o.target === "project") {
    const here = await locationAt(client, Deno.cwd());
    if (here === undefined) {
      throw new DockError(
        "usage",
        "--target project needs --location LOC[/WT] (or run it inside a location or worktree)",
        { status: 400 },
      );
    }
    return here;
  }
  return undefined;
}

/** A `--location` value as the API takes it: `LOC` or `LOC/WT`; a folder (on a box) becomes its name. */
async function locationSpec(client: BoxClient, value: string): Promise<string> {
  if (!/^[/.~]/.test(value)) return value;
  const folder = resolve(value.replace(/^~(?=$|\/)/, Deno.env.get("HOME") ?? "~"));
  const found = await locationAt(client, folder);
  if (found === undefined) {
    throw new DockError("not_found", `${folder} is not inside a location or worktree of this box`, {
      status: 404,
    });
  }
  return found;
}

/** The location (`LOC`) or worktree (`LOC/WT`) holding `folder`: the deepest whose path contains it. */
async function locationAt(client: BoxClient, folder: string): Promise<string | undefined> {
  const candidates = [folder];
  try {
    candidates.push(await Deno.realPath(folder));
  } catch {
    // not a folder here: match it as written
  }
  let best: { spec: string; length: number } | undefined;
  for (const location of await client.locations()) {
    for (const worktree of location.worktrees) {
      const inside = candidates.some((c) => c === worktree.path || c.startsWith(worktree.path + "/"));
      if (!inside || (best && best.length >= worktree.path.length)) continue;
      const spec = worktree.main ? location.name : `${location.name}/${worktree.name}`;
      best = { spec, length: worktree.path.length };
    }
  }
  return best?.spec;
}

function printCopies(copies: (SkillCopy & { box?: string })[], o: { json?: boolean }): void {
  if (o.json) return printJson(copies);
  const boxes = copies.some((c) => c.box !== undefined);
  table(
    [...(boxes ? ["BOX"] : []), "SKILL", "AGENT", "TARGET", "STATE", "VERSION", "PATH"],
    copies.map((c) => [
      ...(boxes ? [c.box] : []),
      c.skill,
      c.agent,
      c.target === "project" && c.location ? `project (${c.location})` : c.target,
      c.state,
      versionCell(c.version, c.latest),
      c.path,
    ]),
  );
}

function versionCell(version: number | null, latest: number): string {
  if (version === null) return "-";
  return version === latest ? String(version) : `${version} (latest ${latest})`;
}

function printResult(result: SkillsResult): void {
  table(
    ["SKILL", "AGENT", "TARGET", "ACTION", "PATH"],
    result.changes.map((c) => [
      c.skill,
      c.agent,
      c.target,
      c.action,
      c.reason ? `${c.path} (${c.reason})` : c.path,
    ]),
  );
  for (const file of result.files) console.log(`${file.action} ${file.path}`);
  for (const note of result.notes) console.log(note);
}
