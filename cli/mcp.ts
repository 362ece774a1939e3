/**
 * `dock mcp` and `dockd mcp`: dock's orchestration as an MCP server on stdin/stdout (`core/mcp.ts`),
 * for an agent tool's MCP settings (`dock integrations install` writes them). `dock mcp` reaches every
 * box through the laptop agent (started in the background when it is not running); `dockd mcp`, for
 * agents on a box, reaches that box's daemon alone. Either talks with the origin `mcp`.
 *
 * `dock mcp allow|deny|allowed` keep the person's list of sessions whose permission prompts MCP clients
 * may answer (the app settings document `mcp`, `answer_permissions`); every other session's are refused.
 * `dock mcp allow-exec|deny-exec` keep the boxes where MCP clients may run shell (`exec`, a session
 * without an agent, a prompt typed into one; the document's `exec`); `dockd mcp --allow-exec` allows it
 * for that one server. Off by default: no tool changes either list.
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
        await setting("answer_permissions", target, true);
        console.log(
          `MCP clients may answer ${target}'s permission prompts (dock mcp deny ${target} to stop)`,
        );
      }, "dock")
    );

  mcp.command("deny").description("refuse MCP clients this session's permission prompts again (the default)")
    .argument("<box/session>").action((target) =>
      guarded(async () => {
        await setting("answer_permissions", target, false);
        console.log(`${target}'s permission prompts are the person's again`);
      }, "dock")
    );

  mcp.command("allow-exec").description(
    "let MCP clients run shell on this box: exec, sessions without an agent (off by default)",
  )
    .argument("<box>").action((box) =>
      guarded(async () => {
        await setting("exec", box, true);
        console.log(`MCP clients may run shell commands on ${box} (dock mcp deny-exec ${box} to stop)`);
      }, "dock")
    );

  mcp.command("deny-exec").description("refuse MCP clients shell on this box again (the default)")
    .argument("<box>").action((box) =>
      guarded(async () => {
        await setting("exec", box, false);
        console.log(`MCP clients may not run shell commands on ${box}`);
      }, "dock")
    );

  mcp.command("allowed").description(
    "the sessions whose permission prompts MCP clients may answer, and the boxes where they may run shell",
  )
    .option("--json", "print JSON").action((o) =>
      guarded(async () => {
        const allowed = {
          answer_permissions: await setting("answer_permissions"),
          exec: await setting("exec"),
        };
        if (o.json) return printJson(allowed);
        for (const target of allowed.answer_permissions) console.log(target);
        for (const box of allowed.exec) console.log(`exec on ${box}`);
      }, "dock")
    );
}

/**
 * A list of the app settings document `mcp` (`answer_permissions`: BOX/SESSION; `exec`: boxes), after
 * adding (`allow` true) or removing `target`; the document's other fields are kept as they are.
 */
async function setting(
  field: "answer_permissions" | "exec",
  target?: string,
  allow?: boolean,
): Promise<string[]> {
  const { agentClient } = await load<typeof import("./agent.ts")>("./agent.ts");
  const client = await agentClient();
  const stored = await client.appDocument<unknown>(SETTINGS);
  const settings = stored && typeof stored === "object" && !Array.isArray(stored)
    ? stored as Record<string, unknown>
    : {};
  const kept = settings[field];
  const list = Array.isArray(kept) ? kept.filter((t): t is string => typeof t === "string") : [];
  if (target === undefined) return list;
  const shape = field === "exec" ? /^[^/\s]+$/ : /^[^/\s]+\/[^/\s]+$/;
  if (!shape.test(target)) {
    throw new DockError("invalid_target", `'${target}' is not ${field === "exec" ? "BOX" : "BOX/SESSION"}`, {
      status: 400,
    });
  }
  const next = allow ? [...new Set([...list, target])] : list.filter((t) => t !== target);
  await client.putAppDocument(SETTINGS, { ...settings, [field]: next });
  return next;
}

/** Adds `mcp` to `dockd`. */
export function boxMcpCommands(program: Command): void {
  program.command("mcp").description(`${DESCRIPTION}, for this box`)
    .option("--allow-exec", "let the MCP client run shell commands (exec, sessions without an agent)")
    .action((o) =>
      guarded(async () => {
        const [{ BoxClient }, { boxPaths }, mcp] = await Promise.all([
          load<typeof import("../client/box.ts")>("../client/box.ts"),
          load<typeof import("../core/paths.ts")>("../core/paths.ts"),
          load<typeof import("../core/mcp.ts")>("../core/mcp.ts"),
        ]);
        const client = new BoxClient({ socket: boxPaths().socket, origin: "mcp" });
        await mcp.serveMcpStdio(
          mcp.boxDock(client, (await client.info()).name, { allowExec: o.allowExec === true }),
        );
      }, "dockd")
    );
}
