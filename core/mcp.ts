/**
 * dock as an MCP server (issue 15): any agent that speaks MCP gets dock's orchestration as tools, served
 * on stdio (`dock mcp` on the laptop, every box; `dockd mcp` on a box, that box alone) and as the laptop
 * agent's Streamable HTTP endpoint (`/v1/mcp`, behind the same token and Host checks as the rest of the
 * API). Every tool goes through dock's API with the origin `mcp` ({@linkcode McpDock}), so what it does
 * passes the same gates and shows in events as caused through MCP.
 *
 * The dock-orchestrate skill's rule holds here too: an agent waiting on a permission prompt is the
 * person's to answer. `send_prompt` refuses such a session unless the person allowed it for that session
 * (on the laptop, the app settings document `mcp`: `{ "answer_permissions": ["box/session", …] }`); the
 * box checks it in the same step as the typing (`unless_waiting`), so a prompt raised in between is not
 * answered either. `answer_prompt` answers one (yes, no, always: `POST sessions/{name}/answer`, keys
 * typed as keys) only for a session on that same list. Shell is off until the person allows it for a box (`{ "exec": ["box", …] }`, or
 * `dockd mcp --allow-exec`): `exec`, a session running a command or a login shell, and a prompt typed
 * into one (a shell runs what it is sent; with shell, a tool could type into any session through tmux).
 * Nothing a tool does changes either setting.
 *
 * @module
 */
import { McpServer } from "@modelcontextprotocol/sdk/server/mcp.js";
import { StdioServerTransport } from "@modelcontextprotocol/sdk/server/stdio.js";
import { WebStandardStreamableHTTPServerTransport } from "@modelcontextprotocol/sdk/server/webStandardStreamableHttp.js";
import process from "node:process";
import { z } from "zod";
import type { AgentClient } from "../client/agent.ts";
import type {
  AgentState,
  BoxStatus,
  DockEvent,
  EventAnnounce,
  QueueCreate,
  QueueItem,
  Session,
} from "../client/wire.ts";
import type { BoxClient } from "../client/box.ts";
import { DockError, type ErrorStatus } from "../client/errors.ts";
import { VERSION } from "../client/version.ts";

/** What the tools reach dock through: the laptop agent (every box) or one box's daemon. */
export interface McpDock {
  /** The boxes, as `list_boxes` shows them. */
  boxes(): Promise<Pick<BoxStatus, "name" | "online">[]>;
  box(name: string): BoxClient;
  emit(announce: EventAnnounce): Promise<DockEvent>;
  /** Puts a prompt in the offline queue (the laptop's; a box has none). */
  enqueue?(item: QueueCreate): Promise<QueueItem>;
  /** True when the person allowed MCP to answer this session's permission prompts. */
  answersPermissions(box: string, session: string): Promise<boolean>;
  /** True when the person allowed MCP to run shell commands on this box. */
  allowsExec(box: string): Promise<boolean>;
}

/** The app settings document `mcp` (written by `dock mcp allow|deny|allow-exec|deny-exec`, never a tool). */
interface McpSettings {
  answer_permissions?: unknown;
  exec?: unknown;
}

/** Dock through the laptop agent: every box, the offline queue, the person's settings. */
export function laptopDock(client: AgentClient): McpDock {
  return {
    boxes: async () => (await client.status()).boxes,
    box: (name) => client.box(name),
    emit: (announce) => client.emit(announce),
    enqueue: (item) => client.enqueue(item),
    async answersPermissions(box, session) {
      const settings = await client.appDocument<McpSettings>("mcp").catch(() => null);
      const list = settings?.answer_permissions;
      return Array.isArray(list) && list.includes(`${box}/${session}`);
    },
    async allowsExec(box) {
      const settings = await client.appDocument<McpSettings>("mcp").catch(() => null);
      const list = settings?.exec;
      return Array.isArray(list) && list.includes(box);
    },
  };
}

/**
 * Dock through one box's daemon (`dockd mcp`, for agents on the box): that box alone, named `name`. It
 * keeps no person's settings, so a permission prompt is always the person's; shell only with
 * `allowExec` (`dockd mcp --allow-exec`, in the MCP client's settings the person wrote).
 */
export function boxDock(client: BoxClient, name: string, options: { allowExec?: boolean } = {}): McpDock {
  return {
    boxes: () => Promise.resolve([{ name, online: true }]),
    box: (box) => {
      if (box !== name) {
        throw new DockError("not_found", `this box is '${name}', not '${box}'`, { status: 404 });
      }
      return client;
    },
    emit: (announce) => client.emit(announce),
    answersPermissions: () => Promise.resolve(false),
    allowsExec: () => Promise.resolve(options.allowExec === true),
  };
}

/** Refuses shell on `box` unless the person allowed it (403 `exec_not_allowed`); `what` says which. */
async function checkExec(dock: McpDock, box: string, what: string): Promise<void> {
  if (await dock.allowsExec(box)) return;
  throw new DockError(
    "exec_not_allowed",
    `${what} on ${box} runs shell commands, which MCP clients may not do until the person allows it ` +
      `for that box: \`dock mcp allow-exec ${box}\` on the laptop (the app settings document 'mcp', exec), ` +
      `or \`dockd mcp --allow-exec\` on the box`,
    { status: 403 },
  );
}

/** The refusal of a prompt to a session waiting on a permission prompt, saying how the person allows it. */
function permissionRefusal(box: string, session: string): DockError {
  return new DockError(
    "permission_prompt",
    `${box}/${session} waits on a permission prompt: only the person answers those. They can allow it ` +
      `for this session with \`dock mcp allow ${box}/${session}\` (the app settings document 'mcp', ` +
      `answer_permissions)`,
    { status: 409 },
  );
}

const STATES = ["idle", "running", "waiting", "finished"] as const;

/** The session a tool is about: which box, and its name there. */
const SESSION = {
  box: z.string().min(1).max(64).describe("The box's name, as `list_boxes` gives it"),
  session: z.string().min(1).max(64).describe("The session's name on that box"),
};

const DURATION = z.string().regex(/^\d+(ms|s|m|h)?$/, "a duration such as 30s, 10m or 1h");

/** What an MCP tool answers: its result as JSON text, which every MCP client shows its model as it is. */
function answer(value: unknown) {
  return { content: [{ type: "text" as const, text: JSON.stringify(value, null, 2) }] };
}

/** A session as the tools show it: where it runs, its agent and state, and why it waits. */
function brief(box: string, s: Session) {
  return {
    box,
    session: s.name,
    location: s.location,
    worktree: s.worktree,
    agent: s.agent,
    agent_state: s.agent_state,
    reason: s.reason ?? null,
    state_time: s.state_time,
    exited: s.exited,
  };
}

/** What a tool answers. */
type ToolAnswer = { content: { type: "text"; text: string }[] };

/** Builds the MCP server over `dock` (its clients' origin `mcp`). */
export function dockMcpServer(dock: McpDock): McpServer {
  const mcp = new McpServer({ name: "dock", version: VERSION });
  // The SDK types a tool's arguments through its own zod compatibility layer, which does not infer
  // through this project's zod 4; the shapes are typed here instead (the SDK still validates with them).
  const server = {
    registerTool<S extends z.ZodRawShape = Record<never, never>>(
      name: string,
      config: { description: string; inputSchema?: S },
      run: (args: z.infer<z.ZodObject<S>>) => Promise<ToolAnswer>,
    ): void {
      mcp.registerTool(name, config as never, run as never);
    },
  };

  server.registerTool("list_boxes", {
    description: "The boxes this laptop drives: online or not, latency, build.",
  }, async () => answer(await dock.boxes()));

  server.registerTool("list_locations", {
    description: "A box's locations (git repositories dock manages) and their worktrees.",
    inputSchema: { box: SESSION.box },
  }, async ({ box }) => answer(await dock.box(box).locations()));

  server.registerTool("list_worktrees", {
    description:
      "A box's worktrees with branch, ahead/behind and uncommitted changes; one location's or all.",
    inputSchema: { box: SESSION.box, location: z.string().max(64).optional() },
  }, async ({ box, location }) => answer(await dock.box(box).worktreeStatus(location)));

  server.registerTool("list_sessions", {
    description:
      "Sessions on one box or every online box, with the agent's state (idle, running, waiting, finished) " +
      "and, when waiting, why (permission, question, input).",
    inputSchema: { box: SESSION.box.optional() },
  }, async ({ box }) => {
    const boxes = box ? [box] : (await dock.boxes()).filter((b) => b.online).map((b) => b.name);
    const all = await Promise.all(
      boxes.map(async (name) => (await dock.box(name).sessions()).map((s) => brief(name, s))),
    );
    return answer(all.flat());
  });

  server.registerTool("create_task", {
    description: "A new worktree (branch) in a location with an agent started in it, optionally prompted.",
    inputSchema: {
      box: SESSION.box,
      location: z.string().min(1).max(64),
      name: z.string().min(1).max(64).describe("The worktree's name"),
      agent: z.string().max(64).optional().describe("An agent preset id (claude, codex, …)"),
      branch: z.string().max(200).optional(),
      base: z.string().max(200).optional(),
      prompt: z.string().max(100_000).optional(),
    },
  }, async ({ box, ...task }) => {
    const created = await dock.box(box).createTask(task);
    return answer({ worktree: created.worktree, session: brief(box, created.session) });
  });

  server.registerTool("create_session", {
    description: "A session in a location or worktree: an agent (optionally prompted) or a command (a " +
      "command or a login shell only where the person allowed shell for the box).",
    inputSchema: {
      box: SESSION.box,
      location: z.string().min(1).max(200).describe("`location` or `location/worktree`"),
      agent: z.string().max(64).optional(),
      command: z.string().max(10_000).optional(),
      name: z.string().max(64).optional(),
      prompt: z.string().max(100_000).optional(),
    },
  }, async ({ box, ...request }) => {
    if (!request.agent) await checkExec(dock, box, "a session without an agent");
    return answer(brief(box, await dock.box(box).createSession(request)));
  });

  server.registerTool("send_prompt", {
    description:
      "Types a prompt into a session's agent, once even if the answer is lost. With wait, returns when the " +
      "turn it starts ends (finished or waiting). When the box cannot be reached, it is queued and sent when " +
      "the box is back. Refused for an agent waiting on a permission prompt: that is the person's to answer " +
      "(checked by the box as it types). A session without an agent is a shell: only where shell is allowed.",
    inputSchema: {
      ...SESSION,
      text: z.string().min(1).max(100_000),
      wait: z.boolean().optional(),
      timeout: DURATION.optional().describe("How long wait waits (default 30m)"),
    },
  }, async ({ box, session, text, wait, timeout }) => {
    const target = dock.box(box);
    let now: Session | undefined;
    try {
      now = await target.session(session);
    } catch (error) {
      if (!(error instanceof DockError) || error.status !== 503) throw error;
    }
    // A session's agent is fixed when it is made: a shell stays a shell.
    if (now && now.agent === null) await checkExec(dock, box, "typing into a session without an agent");
    // The permission prompt is checked by the box in the step that types: one raised after a check here
    // would be answered by the text.
    const unlessWaiting = await dock.answersPermissions(box, session) ? undefined : "permission";
    const before = new Date().toISOString();
    let sent: Session;
    try {
      sent = await target.sendOnce(session, text, { unlessWaiting });
    } catch (error) {
      if (error instanceof DockError && error.code === "permission_prompt") {
        throw permissionRefusal(box, session);
      }
      // Only a request that never reached the box (503) is queued: after a 502 it may have been typed.
      if (!(error instanceof DockError) || error.status !== 503 || !dock.enqueue) throw error;
      const item = await dock.enqueue({ box, session, text });
      return answer({ queued: item.id, state: item.state, why: error.message });
    }
    if (!wait) return answer(brief(box, sent));
    const after = sent.state_time && sent.state_time >= before ? sent.state_time : before;
    return answer(await target.wait(session, { after, timeout: timeout ?? "30m" }));
  });

  server.registerTool("answer_prompt", {
    description: "Answers a session's permission prompt yes, no or always, with the keys its tool takes " +
      "(typed as keystrokes, once). Only for a session the person allowed MCP to answer " +
      "(`dock mcp allow BOX/SESSION`); refused when the agent waits on no permission prompt.",
    inputSchema: { ...SESSION, answer: z.enum(["yes", "no", "always"]) },
  }, async ({ box, session, answer: reply }) => {
    if (!await dock.answersPermissions(box, session)) throw permissionRefusal(box, session);
    const answered = await dock.box(box).answer(session, reply);
    return answer({ ...brief(box, answered.session), answered: answered.answer, keys: answered.keys });
  });

  server.registerTool("wait", {
    description: "Waits until the session's agent is in one of the states (default finished or waiting), " +
      "its program exits, or the timeout passes; never longer.",
    inputSchema: {
      ...SESSION,
      states: z.array(z.enum(STATES)).min(1).optional(),
      timeout: DURATION.optional().describe("Default 10m"),
    },
  }, async ({ box, session, states, timeout }) =>
    answer(
      await dock.box(box).wait(session, {
        states: (states ?? ["finished", "waiting"]) as AgentState[],
        timeout: timeout ?? "10m",
      }),
    ));

  server.registerTool("read_screen", {
    description: "The last lines of a session's terminal (what the agent shows now).",
    inputSchema: { ...SESSION, lines: z.number().int().min(1).max(2000).optional().describe("Default 60") },
  }, async ({ box, session, lines }) => {
    const want = lines ?? 60;
    const { screen } = await dock.box(box).screen(session, Math.max(0, want - 24));
    return {
      content: [{ type: "text" as const, text: screen.trimEnd().split("\n").slice(-want).join("\n") }],
    };
  });

  server.registerTool("exec", {
    description: "Runs a shell command in a worktree on a box (the box's before:exec gates apply). Off " +
      "until the person allows shell for the box.",
    inputSchema: {
      box: SESSION.box,
      location: z.string().min(1).max(200).describe("`location` or `location/worktree`"),
      command: z.string().min(1).max(10_000),
      timeout: DURATION.optional(),
    },
  }, async ({ box, ...request }) => {
    await checkExec(dock, box, "exec");
    return answer(await dock.box(box).exec(request));
  });

  server.registerTool("list_flow_runs", {
    description: "A box's recent flow runs with each step's outcome; one flow's or all.",
    inputSchema: {
      box: SESSION.box,
      flow: z.string().max(128).optional(),
      limit: z.number().int().min(1).max(200).optional(),
    },
  }, async ({ box, flow, limit }) => answer(await dock.box(box).flowRuns({ flow, limit })));

  server.registerTool("emit_event", {
    description: "Announces an event on the laptop (hooks and flows may react to it).",
    inputSchema: {
      type: z.string().regex(/^[a-z0-9_-]+(\.[a-z0-9_-]+)*$/).max(128),
      data: z.record(z.string(), z.unknown()).optional(),
    },
  }, async ({ type, data }) => answer(await dock.emit({ type, data })));

  return mcp;
}

/**
 * Serves the tools on stdin/stdout until the MCP client closes them (`dock mcp`). Nothing else may
 * write to stdout meanwhile: it carries the protocol.
 */
export async function serveMcpStdio(dock: McpDock): Promise<void> {
  const server = dockMcpServer(dock);
  const closed = new Promise<void>((resolve) => {
    server.server.onclose = resolve;
    // The SDK's stdio transport does not end with its input: the client closing stdin ends the server.
    process.stdin.once("end", resolve);
  });
  await server.connect(new StdioServerTransport());
  await closed;
  await server.close();
}

/**
 * Answers one request of the agent's Streamable HTTP endpoint (`/v1/mcp`), statelessly: a server and
 * a transport per request, each answer whole as JSON, so nothing outlives the request. `message` is the
 * body, read and checked by the API's own body rules.
 */
export async function answerMcpHttp(
  dock: McpDock,
  request: Request,
  message?: unknown,
): Promise<Response> {
  const server = dockMcpServer(dock);
  const transport = new WebStandardStreamableHTTPServerTransport({
    sessionIdGenerator: undefined,
    enableJsonResponse: true,
  });
  try {
    await server.connect(transport);
    const response = await transport.handleRequest(request, { parsedBody: message });
    // Whole before it is returned (enableJsonResponse): safe to close what answered it.
    const body = await response.arrayBuffer();
    if (response.status >= 400) {
      // A refusal at the HTTP level (what the client accepts, a malformed message) in the API's own
      // error form, with the SDK's words.
      let said = response.statusText;
      try {
        said = JSON.parse(new TextDecoder().decode(body)).error?.message ?? said;
      } catch { /* not JSON: the status says it */ }
      throw new DockError("mcp_refused", said || `refused (${response.status})`, {
        status: response.status as ErrorStatus,
      });
    }
    return new Response(body.byteLength ? body : null, {
      status: response.status,
      headers: response.headers,
    });
  } finally {
    await server.close();
  }
}
