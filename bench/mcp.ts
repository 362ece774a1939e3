/**
 * MCP against the CLI (issue 15; `deno task bench mcp`, alone `deno run -A bench/mcp.ts [--quick]`): a
 * prompt sent and its turn waited for, through `dock mcp`'s `send_prompt` with `wait` (the SDK's client
 * over stdio, one server kept running, as an agent tool keeps it) and through `dock session send --wait`
 * (a process per prompt, as a script runs it), against the same fake agent on the same box. Goal: MCP
 * ≤ 1.2× the CLI.
 *
 * @module
 */
import { join } from "node:path";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js";
import { AgentClient } from "../client/agent.ts";
import { laptopEnv, makeDirs, makeRepo, runCli, startAgent, startBox } from "../tests/harness.ts";
import { type Row, summarize, table } from "./stats.ts";

const DENO = Deno.execPath();
const FAKE = new URL("../tests/fixtures/fake_agent.ts", import.meta.url).pathname;
const DOCK = new URL("../cli/dock.ts", import.meta.url).pathname;

/** The figures. */
export async function benchMcp(options: { quick?: boolean } = {}): Promise<Row[]> {
  const turns = options.quick ? 5 : 20;
  const dirs = await makeDirs();
  await using box = await startBox({ dirs, env: { FAKE_AGENT_WORK_MS: "100" } });
  await using agent = await startAgent(dirs);
  const laptop = new AgentClient({ url: agent.url, token: agent.token, origin: "bench" });
  const repo = await makeRepo(join(dirs.home, "work"), "app", {
    ".dock/config.json": JSON.stringify({
      agents: [{
        id: "fake",
        name: "Fake",
        command: `'${DENO}' run -A --cached-only '${FAKE}'`,
        prompt_flag: "",
      }],
    }),
  });
  await box.client.addLocation({ name: "app", path: repo });
  await laptop.addLocal("devbox");
  for (const name of ["by-mcp", "by-cli"]) {
    await box.client.createSession({ location: "app", agent: "fake", name });
    await box.client.wait(name, { states: ["idle"], timeout: "30s" });
  }
  const env = laptopEnv(dirs, agent);
  const mcp = new Client({ name: "bench", version: "1" });
  await mcp.connect(
    new StdioClientTransport({ command: DENO, args: ["run", "-A", "--cached-only", DOCK, "mcp"], env }),
  );
  const viaMcp: number[] = [];
  const viaCli: number[] = [];
  try {
    for (let i = 0; i < turns + 1; i++) {
      let started = performance.now();
      const result = await mcp.callTool({
        name: "send_prompt",
        arguments: { box: "devbox", session: "by-mcp", text: `turn ${i}`, wait: true },
      }) as { isError?: boolean; content: { text: string }[] };
      if (result.isError) throw new Error(result.content[0]?.text);
      if (i > 0) viaMcp.push(performance.now() - started);

      started = performance.now();
      const cli = await runCli("dock", ["session", "send", "devbox/by-cli", `turn ${i}`, "--wait"], {
        env,
        cwd: dirs.home,
      });
      if (cli.code !== 0) throw new Error(`dock session send: ${cli.stderr}`);
      if (i > 0) viaCli.push(performance.now() - started);
    }
  } finally {
    await mcp.close();
    laptop.close();
  }
  const cli = summarize(viaCli);
  return [
    {
      label: "Prompt + wait for the turn: `dock session send --wait` (a process per prompt)",
      summary: cli,
      isBaseline: true,
      note: "fake agent, 100 ms turns",
    },
    {
      label: "Prompt + wait for the turn: MCP send_prompt with wait (goal ≤ 1.2× the CLI)",
      summary: summarize(viaMcp),
      baseline: cli,
      note: "`dock mcp` over stdio, kept running",
    },
  ];
}

if (import.meta.main) console.log(table(await benchMcp({ quick: Deno.args.includes("--quick") })));
