/**
 * Turns an agent tool's hook payload into one of the four `agent.*` events (spec 1, integration rule
 * 5). Pure and import-free: `dock hook` runs on every agent turn and must start in a few milliseconds.
 *
 * Only identifiers and the working directory leave this module. Prompts, messages, transcripts and
 * anything else the tool sends are read at most to classify the event and are never copied out.
 *
 * Event names are matched case-insensitively and with `-`, `_`, `.` and spaces ignored, so
 * `UserPromptSubmit`, `user-prompt-submit` and `userpromptsubmit` are one event.
 *
 * | Tool | started | ready | waiting | finished |
 * |---|---|---|---|---|
 * | claude | UserPromptSubmit | SessionStart | Notification (permission_prompt, elicitation_dialog), PermissionRequest | Stop, StopFailure |
 * | cursor | beforeSubmitPrompt | sessionStart | — | stop (any status) |
 * | codex | UserPromptSubmit | SessionStart | PermissionRequest, Interrupt (input) | notify (`agent-turn-complete`), Stop |
 * | gemini | BeforeAgent | SessionStart | Notification | AfterAgent |
 * | opencode | chat.message | session.created | permission.asked, permission.updated | session.idle |
 *
 * opencode has no hook commands; a plugin calls `dock hook opencode <bus event>` with the bus event
 * (`{ type, properties: { sessionID } }`) on stdin.
 *
 * @module
 */
// A type import costs nothing at run time: the module stays import-free.
import type { AgentReport, AgentReportType, WaitingReason } from "../client/wire.ts";

/** The `agent.*` event types a hook can produce. */
export type HookEventType = AgentReportType;

/** What `dock hook` announces: the event type and the identifiers of the agent's session. */
export type HookEvent = Pick<AgentReport, "type" | "data">;

type Payload = Record<string, unknown>;
/** An event type, with why it waits for `agent.waiting` (from the payload's type, never its text). */
type Mapped = HookEventType | { type: "agent.waiting"; reason: WaitingReason };
type Rule = Mapped | ((payload: Payload) => Mapped | null);

// Longer values are not identifiers; dropping them keeps a misbehaving tool from smuggling text out.
const MAX_ID = 256;
const MAX_PATH = 4096;

const PERMISSION = { type: "agent.waiting", reason: "permission" } as const;
const QUESTION = { type: "agent.waiting", reason: "question" } as const;
const INPUT = { type: "agent.waiting", reason: "input" } as const;

// Claude's idle_prompt arrives ~60 s after Stop and means "still idle", not "needs you"; auth_success
// and unknown types say nothing about the turn either.
const CLAUDE_WAITING: Record<string, Mapped> = {
  permission_prompt: PERMISSION,
  elicitation_dialog: QUESTION,
};

function claudeNotification(payload: Payload): Mapped | null {
  const kind = payload.notification_type;
  if (typeof kind === "string") return Object.hasOwn(CLAUDE_WAITING, kind) ? CLAUDE_WAITING[kind] : null;
  // Versions before notification_type only had the message; it is classified, never kept.
  const message = payload.message;
  return typeof message === "string" && /permission|approv/i.test(message) ? PERMISSION : null;
}

function geminiNotification(payload: Payload): Mapped {
  // Gemini's only documented notification type is ToolPermission.
  return payload.notification_type === "ToolPermission" ? PERMISSION : INPUT;
}

function codexNotify(payload: Payload): HookEventType | null {
  // Codex documents that other notify types may come; only a completed turn means finished.
  return payload.type === "agent-turn-complete" ? "agent.finished" : null;
}

// Keys are event names normalized by `normalize`.
const RULES: Record<string, Record<string, Rule>> = {
  claude: {
    userpromptsubmit: "agent.started",
    sessionstart: "agent.ready",
    notification: claudeNotification,
    // Fires just before the permission dialog is shown, so it is the earliest "needs you".
    permissionrequest: PERMISSION,
    stop: "agent.finished",
    // A turn ended by an API error still ended; without it the session would look busy forever.
    stopfailure: "agent.finished",
  },
  cursor: {
    beforesubmitprompt: "agent.started",
    sessionstart: "agent.ready",
    stop: "agent.finished",
  },
  codex: {
    userpromptsubmit: "agent.started",
    sessionstart: "agent.ready",
    notify: codexNotify,
    // Codex 0.169's approval prompt; Interrupt is an Esc mid-turn: back at its prompt, no Stop follows.
    permissionrequest: PERMISSION,
    interrupt: INPUT,
    stop: "agent.finished",
  },
  gemini: {
    beforeagent: "agent.started",
    sessionstart: "agent.ready",
    notification: geminiNotification,
    afteragent: "agent.finished",
  },
  opencode: {
    chatmessage: "agent.started",
    sessioncreated: "agent.ready",
    permissionasked: PERMISSION,
    permissionupdated: PERMISSION,
    sessionidle: "agent.finished",
  },
};

/** Maps a tool's hook call to an `agent.*` event, or null when the call means nothing to dock. */
export function mapHook(
  tool: string,
  event: string,
  payload: unknown,
  env: { cwd: string },
): HookEvent | null {
  const agent = tool.toLowerCase();
  const name = normalize(event);
  // hasOwn: "__proto__" or "constructor" must not reach Object.prototype.
  if (!Object.hasOwn(RULES, agent) || !Object.hasOwn(RULES[agent], name)) return null;
  const rule = RULES[agent][name];
  const body: Payload = isObject(payload) ? payload : {};
  const mapped = typeof rule === "function" ? rule(body) : rule;
  if (!mapped) return null;
  const data: HookEvent["data"] = { path: pathOf(body) ?? env.cwd, agent, session_id: sessionOf(body) };
  // The event's name as the tool gave it, when it is one (a session's history names its cause).
  if (isHookName(event)) data.hook = event;
  if (typeof mapped === "string") return { type: mapped, data };
  return { type: mapped.type, data: { ...data, reason: mapped.reason } };
}

// The two below are loops rather than regular expressions: this runs once per agent turn in a fresh
// process, where compiling each of the two patterns cost ~0.15 ms (0.3 ms together, measured: a
// `dock hook` spends ~2 ms in its own code).

/** The event name lower-cased without `-`, `_`, `.` and white space (`Stop`, `user-prompt-submit`). */
function normalize(event: string): string {
  let out = "";
  for (const char of event.toLowerCase()) {
    const code = char.charCodeAt(0);
    // Anything past ASCII may be white space only a pattern knows (U+00A0, U+2003…): rare, so that case pays.
    if (code > 0x7f) return event.toLowerCase().replace(/[-_.\s]/g, "");
    if (char === "-" || char === "_" || char === "." || (code >= 0x09 && code <= 0x0d) || code === 0x20) {
      continue;
    }
    out += char;
  }
  return out;
}

/** What `/^[A-Za-z][A-Za-z0-9._-]{0,63}$/` accepts: a letter, then up to 63 letters, digits, `.`, `_`, `-`. */
function isHookName(event: string): boolean {
  if (event.length === 0 || event.length > 64) return false;
  for (let i = 0; i < event.length; i++) {
    const code = event.charCodeAt(i);
    const letter = (code >= 0x41 && code <= 0x5a) || (code >= 0x61 && code <= 0x7a);
    if (letter) continue;
    const other = (code >= 0x30 && code <= 0x39) || code === 0x2e || code === 0x5f || code === 0x2d;
    if (i === 0 || !other) return false;
  }
  return true;
}

function isObject(value: unknown): value is Payload {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}

// Each tool names the directory its own way; Cursor can also run Claude's hooks, so every tool
// accepts every spelling rather than only its own.
function pathOf(payload: Payload): string | null {
  const roots = payload.workspace_roots;
  const properties = isObject(payload.properties) ? payload.properties : {};
  const info = isObject(properties.info) ? properties.info : {};
  for (
    const value of [
      payload.cwd,
      Array.isArray(roots) ? roots[0] : undefined,
      payload.directory,
      info.directory,
    ]
  ) {
    if (typeof value === "string" && value.startsWith("/") && value.length <= MAX_PATH) return value;
  }
  return null;
}

function sessionOf(payload: Payload): string | null {
  const properties = isObject(payload.properties) ? payload.properties : {};
  for (
    const value of [
      payload.session_id,
      payload.conversation_id,
      payload["thread-id"],
      payload.thread_id,
      payload.sessionID,
      properties.sessionID,
    ]
  ) {
    if (typeof value === "string" && value !== "" && value.length <= MAX_ID) return value;
  }
  return null;
}
