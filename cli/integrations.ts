/**
 * `integrations install <tool>` and `skills [list|install|uninstall]`, shared by `dock` (laptop) and
 * `dockd` (box). Both work on this machine's files directly through `daemon/integrations.ts`; the
 * box API's `skills` endpoints (with their gates and events) are not involved yet.
 *
 * @module
 */
import { Command, Option } from "@commander-js/extra-typings";
import { fileURLToPath } from "node:url";
import { isAbsolute, join, resolve } from "node:path";
import { DockError } from "../client/errors.ts";
import type { Location } from "../client/wire.ts";
import {
  type FileChange,
  installAll,
  installIntegration,
  installSkills,
  INTEGRATION_TOOLS,
  type IntegrationResult,
  type IntegrationTool,
  listSkills,
  shellQuote,
  type SkillsResult,
  uninstallSkills,
} from "../daemon/integrations.ts";
import { localBox } from "./client.ts";
import { guarded, printJson, table } from "./output.ts";

/** Options of {@linkcode integrationCommands}. */
export interface IntegrationCommandOptions {
  /** The shell command agent tools run as their hook (`<it> <tool> <event>`); asked only when needed. */
  hookCommand: () => string;
}

/** Adds `integrations install <tool>` and the `skills` family to `program`. */
export function integrationCommands(program: Command, options: IntegrationCommandOptions): void {
  const name = program.name();

  const integrations = program.command("integrations").description(
    "hook agent tools (claude, cursor, codex) into dock and give them dock's skills",
  );
  integrations.command("install").description(
    "install the hooks and skills of one tool, or of every tool found here (all); safe to run again",
  )
    .argument("<tool>", `${INTEGRATION_TOOLS.join(", ")} or all`).option("--json", "print JSON")
    .action((tool, o) =>
      guarded(async () => {
        if (tool !== "all" && !INTEGRATION_TOOLS.includes(tool as IntegrationTool)) {
          throw new DockError(
            "usage",
            `unknown tool '${tool}': expected ${INTEGRATION_TOOLS.join(", ")} or all`,
          );
        }
        const base = { ...here(), hookCommand: options.hookCommand() };
        const results = tool === "all"
          ? await installAll(base)
          : [await installIntegration(tool as IntegrationTool, base)];
        if (o.json) printJson(results);
        else for (const result of results) printIntegration(result, name);
        const failed = results.filter((result) => result.error);
        for (const result of failed) console.error(`${name}: ${result.tool}: ${result.error}`);
        if (failed.length) Deno.exit(1);
      }, name)
    );

  const skills = program.command("skills").description("dock's skills for agent tools (claude, codex)");

  skills.command("list", { isDefault: true }).alias("ls").description(
    "each skill for each agent: installed, outdated (install again), missing or foreign",
  )
    .option("--location <repo>", "also the project copies in this repository (a path, LOC or LOC/WT)")
    .option("--json", "print JSON").action((o) =>
      guarded(async () => {
        const repo = o.location === undefined ? undefined : await repoPath(o.location);
        const copies = await listSkills({ ...here(), repo });
        if (o.json) return printJson(copies);
        table(
          ["SKILL", "AGENT", "TARGET", "STATE", "VERSION", "PATH"],
          copies.map((c) => [c.skill, c.agent, c.target, c.state, versionCell(c.version, c.latest), c.path]),
        );
      }, name)
    );

  skills.command("install").description("install one skill, or all of them, for an agent tool")
    .argument("[skill]", "skill id (default: every skill)")
    .addOption(agentOption().default("all" as const))
    .addOption(
      new Option("--target <target>", "the user's folders or a repository's").choices(
        ["user", "project"] as const,
      )
        .default("user" as const),
    )
    .option("--location <repo>", "the repository for --target project (a path, LOC or LOC/WT; default: here)")
    .option("--commit", "project target: do not add the folders to .git/info/exclude")
    .option("--json", "print JSON").action((skill, o) =>
      guarded(async () => {
        const repo = o.target === "project" ? await repoPath(o.location ?? await currentRepo()) : undefined;
        const result = await installSkills({
          ...here(),
          skills: skill ? [skill] : undefined,
          agent: o.agent,
          target: o.target,
          repo,
          commit: o.commit ?? false,
        });
        if (o.json) return printJson(result);
        printSkills(result);
      }, name)
    );

  skills.command("uninstall").description("remove a skill's folders (only dock's own copies)")
    .argument("<skill>", "skill id")
    .addOption(agentOption().default("all" as const))
    .addOption(
      new Option("--target <target>", "only the user's folders or only the repository's").choices(
        ["user", "project"] as const,
      ),
    )
    .option("--location <repo>", "also the copies in this repository (a path, LOC or LOC/WT)")
    .option("--json", "print JSON").action((skill, o) =>
      guarded(async () => {
        const location = o.location ?? (o.target === "project" ? await currentRepo() : undefined);
        const repo = location === undefined ? undefined : await repoPath(location);
        const result = await uninstallSkills({
          ...here(),
          skills: [skill],
          agent: o.agent,
          target: o.target,
          repo,
        });
        if (o.json) return printJson(result);
        printSkills(result);
      }, name)
    );
}

/**
 * The hook command for installs: `<dock or dockd on PATH> hook`, else this checkout's `cli/dock.ts`
 * run by this Deno (`--cached-only`: a hook must never wait on a registry).
 */
export function defaultHookCommand(program: "dock" | "dockd"): string {
  const installed = findOnPath(program, Deno.env.get("PATH") ?? "");
  if (installed) return `${shellQuote(installed)} hook`;
  const script = fileURLToPath(new URL("./dock.ts", import.meta.url));
  return `${shellQuote(Deno.execPath())} run -A --cached-only ${shellQuote(script)} hook`;
}

function findOnPath(command: string, path: string): string | null {
  for (const dir of path.split(":")) {
    if (!dir || !isAbsolute(dir)) continue; // a relative PATH entry means nothing from a tool's cwd
    const candidate = join(dir, command);
    try {
      const info = Deno.statSync(candidate);
      if (info.isFile && ((info.mode ?? 0o111) & 0o111)) return candidate;
    } catch {
      // not in this folder
    }
  }
  return null;
}

function agentOption() {
  return new Option("--agent <agent>", "which agent tool's folders").choices(
    ["claude", "codex", "all"] as const,
  );
}

function here(): { home: string; env: Record<string, string | undefined> } {
  const home = Deno.env.get("HOME");
  if (!home) throw new DockError("usage", "HOME is not set: cannot find the agent tools' folders");
  return { home, env: Deno.env.toObject() };
}

/**
 * A repository for the project target: an existing folder, else a location (or `LOC/WT`) of the box
 * daemon on this machine, resolved to its path.
 */
async function repoPath(spec: string): Promise<string> {
  const path = resolve(spec);
  try {
    if (Deno.statSync(path).isDirectory) return path;
  } catch {
    // not a folder here: try it as a location name
  }
  const [location, worktree, extra] = spec.split("/");
  if (!location || extra !== undefined || spec.startsWith(".") || spec.startsWith("/")) {
    throw new DockError("not_found", `folder '${path}' not found`, { status: 404 });
  }
  let locations: Location[];
  try {
    locations = await localBox().locations();
  } catch (error) {
    if (error instanceof DockError && error.code === "unreachable") {
      throw new DockError(
        "not_found",
        `'${spec}' is not a folder (and no box daemon runs here to name a location)`,
        {
          status: 404,
          cause: error,
        },
      );
    }
    throw error;
  }
  const found = locations.find((l) => l.name === location);
  if (!found) {
    throw new DockError("not_found", `'${spec}' is neither a folder nor a location`, { status: 404 });
  }
  if (worktree === undefined) return found.path;
  const tree = found.worktrees.find((w) => w.name === worktree);
  if (!tree) throw new DockError("not_found", `worktree '${spec}' not found`, { status: 404 });
  return tree.path;
}

/** The current directory, when it is a repository's top (it holds `.git`). */
async function currentRepo(): Promise<string> {
  const cwd = Deno.cwd();
  try {
    await Deno.lstat(join(cwd, ".git"));
    return cwd;
  } catch {
    throw new DockError(
      "usage",
      "--target project needs --location <repository> (or run it at a repository's top)",
    );
  }
}

function versionCell(version: number | null, latest: number): string {
  if (version === null) return "-";
  return version === latest ? String(version) : `${version} (latest ${latest})`;
}

function printIntegration(result: IntegrationResult, program: string): void {
  if (result.skipped) {
    const anyway = `${program} integrations install ${result.tool}`;
    console.log(`${result.tool}: skipped, ${result.notes.join("; ")}; \`${anyway}\` installs it anyway`);
    return;
  }
  if (result.error) return;
  printFiles(result.tool, result.files);
  for (const note of result.notes) console.log(`${result.tool}: ${note}`);
  if (result.notify) console.log(`\n${result.notify}\n`);
}

function printFiles(prefix: string, files: FileChange[]): void {
  for (const file of files) console.log(`${prefix}: ${file.action.padEnd(9)} ${file.path}`);
}

function printSkills(result: SkillsResult): void {
  for (const change of result.changes) {
    const why = change.reason ? ` (${change.reason})` : "";
    console.log(
      `${change.skill} ${change.agent}/${change.target}: ${change.action.padEnd(9)} ${change.path}${why}`,
    );
  }
  printFiles("exclude", result.files);
  for (const note of result.notes) console.log(note);
}
