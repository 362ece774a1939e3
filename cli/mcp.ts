/**
 * `dock mcp` and `dockd mcp`: dock's orchestration as an MCP server on stdin/stdout (`core/mcp.ts`),
 * for an agent tool's MCP settings (`dock integrations install` writes them). `dock mcp` reaches every
 * box through the laptop agent (started in the background when it is not running); `dockd mcp`, for
 * agents on a box, reaches that box's daemon alone. Either talks with the origin `mcp`.
 *
 * `dock mcp allow|deny|allowed` keep the person's list of sessions whose permission prompts MCP clients
 * may answer (the app settings document `mcp`, `answer_permissions`); every other session's are refused.
 *
 * @module
 */
import { DockError } from "../client/errors.ts";
import type { Command } from "./commander.ts";
import { load } from "./lazy.ts";
import { guarded, printJson } from "./output.ts";

const DESCRIPTION =
  "serve dock's tools (sessions, tasks, prompts, wait, screen, exec, flows) to an MCP client " +
  "on stdin/stdout";

/** The app settings document `send_prompt` reads (core/mcp.ts `laptopDock`). */
const SETTINGS = "mcp";

/** Adds `mcp` to `dock`. */
export function mcpCommands(program: Command): void {
  const mcp = program.command("mcp").description(`${DESCRIPTION}, for every box`).action(() =>
    guarded(async () => {
      const [{ agentClient }, mcp] = await Promise.all([
        load<typeof import("./agent.ts")>("./agent.ts"),
        load<typeof import("../core/mcp.ts")>("../core/mcp.ts"),
      ]);
      await mcp.serveMcpStdio(mcp.laptopDock(await agentClient({ origin: "mcp", oneShotReads: false })));
    }, "dock")
  );

  mcp.command("allow").description(
    "let MCP clients answer this session's permission prompts (off by default)",
  )
    .argument("<box/session>").action((target) =>
      guarded(async () => {
        await permissionAnswers(target, true);
        console.log(
          `MCP clients may answer ${target}'s permission prompts (dock mcp deny ${target} to stop)`,
        );
      }, "dock")
    );

  mcp.command("deny").description("refuse MCP clients this session's permission prompts again (the default)")
    .argument("<box/session>").action((target) =>
      guarded(async () => {
        await permissionAnswers(target, false);
        console.log(`${target}'s permission prompts are the person's again`);
      }, "dock")
    );

  mcp.command("allowed").description("the sessions whose permission prompts MCP clients may answer")
    .option("--json", "print JSON").action((o) =>
      guarded(async () => {
        const list = await permissionAnswers();
        if (o.json) return printJson(list);
        for (const target of list) console.log(target);
      }, "dock")
    );
}

/**
 * The sessions MCP may answer permission prompts for, after adding (`allow` true) or removing
 * `target`; the document's other fields are kept as they are.
 */
async function permissionAnswers(target?: string, allow?: boolean): Promise<string[]> {
  const { agentClient } = await load<typeof import("./agent.ts")>("./agent.ts");
  const client = await agentClient();
  const stored = await client.appDocument<unknown>(SETTINGS);
  const settings = stored && typeof stored === "object" && !Array.isArray(stored)
    ? stored as Record<string, unknown>
    : {};
  const list = Array.isArray(settings.answer_permissions)
    ? settings.answer_permissions.filter((t): t is string => typeof t === "string")
    : [];
  if (target === undefined) return list;
  if (!/^[^/\s]+\/[^/\s]+$/.test(target)) {
    throw new DockError("invalid_target", `'${target}' is not BOX/SESSION`, { status: 400 });
  }
  const next = allow ? [...new Set([...list, target])] : list.filter((t) => t !== target);
  await client.putAppDocument(SETTINGS, { ...settings, answer_permissions: next });
  return next;
}

/** Adds `mcp` to `dockd`. */
export function boxMcpCommands(program: Command): void {
  program.command("mcp").description(`${DESCRIPTION}, for this box`).action(() =>
    guarded(async () => {
      const [{ BoxClient }, { boxPaths }, mcp] = await Promise.all([
        load<typeof import("../client/box.ts")>("../client/box.ts"),
        load<typeof import("../core/paths.ts")>("../core/paths.ts"),
        load<typeof import("../core/mcp.ts")>("../core/mcp.ts"),
      ]);
      const client = new BoxClient({ socket: boxPaths().socket, origin: "mcp" });
      await mcp.serveMcpStdio(mcp.boxDock(client, (await client.info()).name));
    }, "dockd")
  );
}
