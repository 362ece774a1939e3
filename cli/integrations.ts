/**
 * `integrations install <tool>`, shared by `dock` (laptop) and `dockd` (box): both work on this
 * machine's files directly through `daemon/integrations.ts` (a laptop has no daemon to ask), loaded
 * only when the command runs (it brings jsonc-parser). The `skills` family goes through a box's API
 * instead (`skills.ts`).
 *
 * @module
 */
import type { Command } from "./commander.ts";
import { isAbsolute, join } from "../core/posix_path.ts";
import { DockError } from "../client/errors.ts";
import type { FileChange, IntegrationResult } from "../daemon/integrations.ts";
import { INTEGRATION_TOOLS, type IntegrationTool } from "../client/wire.ts";
import { shellQuote } from "../core/runner.ts";
import { selfCommand } from "../core/self_command.ts";
import { load } from "./lazy.ts";
import { guarded, printJson } from "./output.ts";

/** Options of {@linkcode integrationCommands}. */
export interface IntegrationCommandOptions {
  /** The shell command agent tools run as their hook (`<it> <tool> <event>`); asked only when needed. */
  hookCommand: () => string;
}

/** Adds `integrations install <tool>` to `program`. */
export function integrationCommands(program: Command, options: IntegrationCommandOptions): void {
  const name = program.name();

  const integrations = program.command("integrations").description(
    "hook agent tools (claude, cursor, codex, gemini) into dock and give them dock's skills",
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
        const { installAll, installIntegration } = await load<typeof import("../daemon/integrations.ts")>(
          "../daemon/integrations.ts",
        );
        const base = { ...here(), hookCommand: options.hookCommand(), mcpCommand: defaultMcpCommand(name) };
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
}

/**
 * The hook command for installs: `<dock or dockd on PATH> hook`, else how this dock runs itself
 * (a package's launcher, or this checkout's `cli/dock.ts` run by this Deno `--cached-only`: a hook must
 * never wait on a registry).
 */
export function defaultHookCommand(program: "dock" | "dockd"): string {
  const installed = findOnPath(program, Deno.env.get("PATH") ?? "");
  if (installed) return `${shellQuote(installed)} hook`;
  const self = selfCommand(Deno.env.get("DOCK_BIN") ? program : "dock", "hook");
  return self.map(shellQuote).join(" ");
}

/**
 * dock's MCP server for installs by `program`: `<program on PATH> mcp`, else how this dock runs that
 * program. `dockd` registers `dockd mcp` (the box's own sessions), even when its hooks run `dock hook`.
 */
function defaultMcpCommand(program: string): string[] {
  const own = program === "dockd" ? "dockd" : "dock";
  const installed = findOnPath(own, Deno.env.get("PATH") ?? "");
  return installed ? [installed, "mcp"] : selfCommand(own, "mcp");
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

function here(): { home: string; env: Record<string, string | undefined> } {
  const home = Deno.env.get("HOME");
  if (!home) throw new DockError("usage", "HOME is not set: cannot find the agent tools' folders");
  return { home, env: Deno.env.toObject() };
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
