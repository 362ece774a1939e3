/**
 * The rules of every request body the box API parses, as zod schemas, each tied to its wire type in
 * `wire.ts` with `satisfies` (a field renamed on one side fails the type check on the other), and the
 * field rules the laptop agent's own bodies (`schemas_laptop.ts`) share. Every object is strict: a
 * misspelt field is refused with a "did you mean", never silently dropped (`core/http.ts` `body()` reports
 * it; `schemas_test.ts` checks that no object here or there lets unknown fields through).
 *
 * Only servers import this module: it loads zod, which the CLI (through `wire.ts` and `mod.ts`) and
 * `dock hook` must not pay for. A script that wants the rules imports this file by its path.
 *
 * @module
 */
import { z } from "zod";
import type {
  AgentReport,
  AgentReportType,
  DockConfig,
  EnvFile,
  EventAnnounce,
  ExecRequest,
  FlowConfig,
  FlowsFile,
  FlowTestRequest,
  GuardPut,
  HookConfig,
  HooksFile,
  LocationClone,
  LocationConfigPut,
  LocationCreate,
  LocationNew,
  LocationScripts,
  PairCodeRequest,
  PairRedeem,
  PanelApiRequest,
  PhoneRedeem,
  PhoneSettings,
  PluginConfigRequest,
  PluginEnableRequest,
  PluginFilesRequest,
  PluginTestEvent,
  PrCreate,
  PreviewRequest,
  SecretReportRequest,
  SecretTest,
  SessionAnswer,
  SessionCreate,
  SessionKeys,
  SessionSend,
  ShareRequest,
  SkillsRequest,
  SyncRequest,
  TaskRequest,
  UnitCreate,
  WaitingReason,
  WorktreeCreate,
} from "./wire.ts";
import { KEY_NAMES } from "./wire.ts";
import { parseDuration } from "./duration.ts";

// ---------------------------------------------------------------------------------------------------
// Shared field rules

/** What a session name may be: letters, digits, `_` and `-`, at most 64 (tmux reads `.` and `:`). */
export const SESSION_NAME = /^[A-Za-z0-9][A-Za-z0-9_-]{0,63}$/;

// Paths are absolute (or ~/…): the daemon's own working directory means nothing to its callers.
const BOX_PATH = z.string().regex(/^(\/|~\/|~$)/, "must be an absolute path (or start with ~/)");
/** What an event type may be: dotted lower-case words (`build.finished`), at most 100 characters. */
export const EVENT_TYPE = /^[a-z][a-z0-9_-]*(\.[a-z0-9_-]+)*$/;

// ---------------------------------------------------------------------------------------------------
// Events

/** Body of `POST events` (spec 2.4 "Event announce"); on a box, agent state reports go apart. */
export const EVENT_ANNOUNCE = z.strictObject({
  type: z.string().max(100).regex(EVENT_TYPE, "must be dotted lower-case words such as build.finished"),
  origin: z.string().max(64).optional(),
  data: z.record(z.string(), z.unknown()).optional(),
}) satisfies z.ZodType<EventAnnounce>;

/** The types of {@linkcode AGENT_REPORT}, in no particular order. */
export const AGENT_REPORT_TYPES: readonly AgentReportType[] = [
  "agent.started",
  "agent.ready",
  "agent.waiting",
  "agent.finished",
];

/** An RFC 3339 time such as `2026-01-02T03:04:05Z` (an agent report's `time`). */
export const RFC3339 = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d{1,9})?(Z|[+-]\d{2}:\d{2})$/;
/** A tool's hook event name (an agent report's `data.hook`), such as `Stop` or `agent-turn-complete`. */
export const HOOK_EVENT_NAME = /^[A-Za-z][A-Za-z0-9._-]*$/;
/** Why an agent waits (an agent report's `data.reason`). */
export const WAITING_REASONS = [
  "permission",
  "question",
  "input",
] as const satisfies readonly WaitingReason[];

/** An agent's state report, as `dock hook` posts it and the spool keeps it. */
export const AGENT_REPORT = z.strictObject({
  type: z.enum(AGENT_REPORT_TYPES as [AgentReportType, ...AgentReportType[]]),
  origin: z.string().max(64),
  // The limits are `cli/hook_map.ts`'s: longer values are not identifiers.
  data: z.strictObject({
    path: z.string().max(4096),
    agent: z.string().max(64),
    session_id: z.string().max(256).nullable(),
    hook: z.string().max(64).regex(HOOK_EVENT_NAME, "must be a hook event name").optional(),
    reason: z.enum(WAITING_REASONS).optional(),
  }),
  session: z.string().max(64).optional(),
  // When the hook ran, on its machine's clock: only used to order a late (spooled) report, and never
  // later than the daemon's now. "garbage-time" was once accepted.
  time: z.string().max(40).regex(RFC3339, "must be an RFC 3339 time such as 2026-01-02T03:04:05Z").optional(),
}) satisfies z.ZodType<AgentReport>;

/** True when an announce on a box is an agent state report (which the box matches to a session). */
export function isAgentReport(body: EventAnnounce | AgentReport): body is AgentReport {
  return (AGENT_REPORT_TYPES as readonly string[]).includes(body.type);
}

/**
 * Body of `POST events` on a box: an agent state report, or any other announce. A report's type
 * with another shape is refused, so a report is never half-read.
 */
export const BOX_EVENT = z.union([
  AGENT_REPORT,
  EVENT_ANNOUNCE.refine((announce) => !isAgentReport(announce), {
    // Aborting: otherwise zod reports only this option's problems when the report option has a fatal
    // one, and a report with a misspelt field would be told it is not a plain event.
    abort: true,
    path: ["type"],
    message: "is an agent state report: it needs origin and data { path, agent, session_id }",
  }),
]) satisfies z.ZodType<EventAnnounce | AgentReport>;

// ---------------------------------------------------------------------------------------------------
// Locations and worktrees

/** Body of `POST locations`. */
export const LOCATION_CREATE = z.strictObject({
  name: z.string(),
  path: BOX_PATH,
}) satisfies z.ZodType<LocationCreate>;

/** Body of `POST locations/clone`. */
export const LOCATION_CLONE = z.strictObject({
  url: z.string().min(1),
  name: z.string().optional(),
  path: BOX_PATH.optional(),
}) satisfies z.ZodType<LocationClone>;

/** Body of `POST locations/new`. */
export const LOCATION_NEW = z.strictObject({
  name: z.string(),
  path: BOX_PATH.optional(),
}) satisfies z.ZodType<LocationNew>;

/** Body of `PUT locations/{name}/scripts`. */
export const LOCATION_SCRIPTS = z.strictObject({
  setup: z.string().nullable().optional(),
  archive: z.string().nullable().optional(),
}) satisfies z.ZodType<LocationScripts>;

/**
 * Body of `PUT locations/{name}/config`. The layer itself is held to the config rules
 * (`core/config.ts`) by the box, whose errors name the field inside it (`local.services[0].name`).
 */
export const LOCATION_CONFIG_PUT = z.strictObject({
  local: z.custom<DockConfig | null>().optional(),
}) satisfies z.ZodType<LocationConfigPut>;

/** Body of `POST locations/{name}/worktrees`. */
export const WORKTREE_CREATE = z.strictObject({
  name: z.string(),
  branch: z.string().min(1).optional(),
  base: z.string().min(1).optional(),
  pr: z.number().int().positive().optional(),
  ref: z.string().min(1).optional(),
}) satisfies z.ZodType<WorktreeCreate>;

/** Body of `POST …/worktrees/{wt}/sync` (none: rebase). */
export const SYNC_REQUEST = z.strictObject({
  mode: z.enum(["rebase", "merge"]).optional(),
}).optional() satisfies z.ZodType<SyncRequest | undefined>;

// ---------------------------------------------------------------------------------------------------
// Sessions, tasks and exec

const SIZE = z.number().int().min(1).max(1000).optional();

/** Body of `POST sessions`. */
export const SESSION_CREATE = z.strictObject({
  name: z.string().optional(),
  location: z.string().min(1),
  command: z.string().min(1).optional(),
  agent: z.string().min(1).optional(),
  prompt: z.string().optional(),
  open: z.boolean().optional(),
  cols: SIZE,
  rows: SIZE,
}) satisfies z.ZodType<SessionCreate>;

/** Body of `POST sessions/{name}/send`. */
export const SESSION_SEND = z.strictObject({
  text: z.string(),
  enter: z.boolean().optional(),
  // An idempotency key: a repeat with the same key never types the text again (Sessions.send).
  key: z.string().min(1).max(200).regex(/^[\x21-\x7e]+$/, "must be printable ASCII without spaces")
    .optional(),
  // Checked by the box in the step that types (Sessions.send): no state change slips in between.
  unless_waiting: z.literal("permission").optional(),
}) satisfies z.ZodType<SessionSend>;

/** The most keys one `POST sessions/{name}/keys` types. */
export const KEYS_LIMIT = 64;

/**
 * True for an entry of `POST sessions/{name}/keys`: a named key, or one character that is not a control
 * character (C0, DEL, C1) nor half of a surrogate pair (only named keys carry control).
 */
export function isKeyEntry(entry: string): boolean {
  if ((KEY_NAMES as readonly string[]).includes(entry)) return true;
  return [...entry].length === 1 && !/[\p{Cc}\p{Cs}]/u.test(entry);
}

// An idempotency key: a repeat with the same key never types again (Sessions.send, Sessions.keys).
const IDEMPOTENCY_KEY = z.string().min(1).max(200).regex(
  /^[\x21-\x7e]+$/,
  "must be printable ASCII without spaces",
);

/** Body of `POST sessions/{name}/keys`. */
export const SESSION_KEYS = z.strictObject({
  keys: z.array(
    z.string().refine(isKeyEntry, {
      message: `must be one character (not a control character) or a key name (${KEY_NAMES.join(", ")})`,
    }),
  ).min(1).max(KEYS_LIMIT),
  key: IDEMPOTENCY_KEY.optional(),
}) satisfies z.ZodType<SessionKeys>;

/** Body of `POST sessions/{name}/answer`. */
export const SESSION_ANSWER = z.strictObject({
  answer: z.enum(["yes", "no", "always"]),
  key: IDEMPOTENCY_KEY.optional(),
}) satisfies z.ZodType<SessionAnswer>;

/** Body of `POST tasks`. */
export const TASK_REQUEST = z.strictObject({
  location: z.string().min(1),
  name: z.string(),
  branch: z.string().min(1).optional(),
  base: z.string().min(1).optional(),
  agent: z.string().min(1).optional(),
  command: z.string().min(1).optional(),
  prompt: z.string().optional(),
  from_session: z.string().optional(),
}) satisfies z.ZodType<TaskRequest>;

/** Body of `POST exec`. */
export const EXEC_REQUEST = z.strictObject({
  location: z.string().min(1),
  command: z.string().min(1),
  timeout: z.union([z.string(), z.number()]).optional(),
}) satisfies z.ZodType<ExecRequest>;

// ---------------------------------------------------------------------------------------------------
// The box's own files and secrets

/** Body of `PUT env`; the keys are checked by the box's env file rules (`daemon/env.ts`). */
export const ENV_PUT = z.strictObject({
  env: z.record(z.string(), z.string()),
}) satisfies z.ZodType<EnvFile>;

const PERCENT = "must be a number above 0 and at most 100";

/**
 * Body of `PUT guard`. The messages are the guard file's own (`daemon/guard.ts` reads the file with
 * this schema too); a field left out takes its default there.
 */
export const GUARD_PUT = z.strictObject({
  enabled: z.boolean().optional(),
  // One message per field, a wrong type included: "90" and 150 get the same answer.
  memory_percent: z.number({ error: PERCENT }).gt(0).max(100).optional(),
  sustain: z.string({ error: "must be a duration of at least 1s, such as 30s or 2m" }).refine(isSustain)
    .optional(),
  stop_services: z.boolean().optional(),
  pause_agents: z.boolean().optional(),
}) satisfies z.ZodType<GuardPut>;

function isSustain(text: string): boolean {
  try {
    return parseDuration(text, "sustain") >= 1000;
  } catch {
    return false;
  }
}

/**
 * Body of `PUT hooks`, on a box and on the laptop. Each hook is held to the hooks file rules
 * (`core/config.ts`), whose errors name the hook's field (`hooks[0].timeout`).
 */
export const HOOKS_PUT = z.strictObject({
  $schema: z.string().optional(),
  hooks: z.custom<HookConfig[]>(),
}) satisfies z.ZodType<HooksFile>;

/**
 * Body of `PUT flows`. Each flow is held to the flows file rules (`core/config.ts`), whose errors name
 * the flow's field (`flows[0].steps[1].command`).
 */
export const FLOWS_PUT = z.strictObject({
  $schema: z.string().optional(),
  flows: z.custom<FlowConfig[]>(),
}) satisfies z.ZodType<FlowsFile>;

/** Body of `POST flows/{id}/test`. */
export const FLOW_TEST = z.strictObject({
  scope: z.string().regex(/^(box|repo:[^\s]+)$/, "must be box or repo:<location>").optional(),
  data: z.record(z.string(), z.unknown()).optional(),
}) satisfies z.ZodType<FlowTestRequest>;

/** Paths, hosts, names or scopes a plugin asks for. */
const STRINGS = z.array(z.string().max(256)).max(64).optional();

/** Body of `POST units`. */
export const UNIT_CREATE = z.strictObject({
  name: z.string().regex(/^[a-z0-9][a-z0-9-]{0,63}$/, "must be [a-z0-9][a-z0-9-]*, at most 64 characters"),
  run: z.string().min(1).max(10_000),
  env: z.record(
    z.string().regex(/^[A-Za-z_][A-Za-z0-9_]*$/, "must match [A-Za-z_][A-Za-z0-9_]*"),
    z.string().max(10_000),
  )
    .optional(),
  autostart: z.boolean().optional(),
}) satisfies z.ZodType<UnitCreate>;

/** Body of `POST shares`. */
export const SHARE_REQUEST = z.strictObject({
  location: z.string().min(1).max(64),
  worktree: z.string().min(1).max(64),
  port: z.number().int().min(1).max(65535).optional(),
}) satisfies z.ZodType<ShareRequest>;

/** Body of `POST secrets/report`. */
export const SECRET_REPORT = z.strictObject({
  location: z.string().min(1).max(130),
}) satisfies z.ZodType<SecretReportRequest>;

/** Body of `POST preview`. */
export const PREVIEW_REQUEST = z.strictObject({
  location: z.string().min(1).max(64),
  worktree: z.string().min(1).max(64),
  port: z.number().int().min(1).max(65535).optional(),
  path: z.string().max(2048).regex(/^[^\s#]*$/, "must be a URL path without spaces").optional(),
}) satisfies z.ZodType<PreviewRequest>;

/** Body of `POST …/worktrees/{wt}/pr`. */
export const PR_CREATE = z.strictObject({
  // Both reach gh as one argument each (no shell); a NUL in any string of a body is refused before this.
  title: z.string().min(1).max(256).optional(),
  body: z.string().max(65_536).optional(),
  draft: z.boolean().optional(),
}).optional() satisfies z.ZodType<PrCreate | undefined>;

/** Body of `POST …/worktrees/{wt}/push`: none, or an empty object. */
export const PUSH_REQUEST = z.strictObject({}).optional();

/** Body of `POST plugins/{id}/ui-api`. */
export const PANEL_API_REQUEST = z.strictObject({
  method: z.enum(["GET", "POST", "PUT", "PATCH", "DELETE"]),
  path: z.string().min(1).max(2048),
  body: z.unknown().optional(),
}) satisfies z.ZodType<PanelApiRequest>;

export const PLUGIN_ENABLE = z.strictObject({
  permissions: z.strictObject({
    read: STRINGS,
    write: STRINGS,
    net: STRINGS,
    env: STRINGS,
    scopes: STRINGS,
    commands: z.array(z.string()).max(64).optional(),
  }),
}).optional() satisfies z.ZodType<PluginEnableRequest | undefined>;

export const PLUGIN_CONFIG = z.strictObject({
  values: z.record(z.string().max(64), z.union([z.string().max(4096), z.number(), z.boolean()])),
}) satisfies z.ZodType<PluginConfigRequest>;

export const PLUGIN_FILES = z.strictObject({
  files: z.array(z.strictObject({
    path: z.string().min(1).max(1024),
    data: z.string(),
    executable: z.boolean().optional(),
  })).max(1000),
}) satisfies z.ZodType<PluginFilesRequest>;

export const PLUGIN_TEST_EVENT = z.strictObject({
  type: z.string().max(128).regex(
    /^[a-z][a-z0-9_-]*(\.[a-z0-9_:-]+)+$/,
    "must be an event type such as agent.finished",
  ),
  data: z.record(z.string(), z.unknown()).optional(),
}) satisfies z.ZodType<PluginTestEvent>;

export const SECRET_TEST = z.strictObject({ ref: z.string() }) satisfies z.ZodType<SecretTest>;

/**
 * Body of `POST skills/install` and `POST skills/uninstall`, for the skills a box carries (`known`).
 * Strict above all: a misspelt `skill` for `skills` must not fall back to "every skill".
 */
export function skillsRequest(known: readonly string[]) {
  const id = z.string().refine((skill) => known.includes(skill), {
    error: (issue) => `unknown skill ${JSON.stringify(issue.input)}; dock's skills: ${known.join(", ")}`,
  });
  return z.strictObject({
    skills: z.array(id).optional(),
    agent: z.enum(["claude", "codex", "all"]).optional(),
    target: z.enum(["user", "project"]).optional(),
    location: z.string().min(1).optional(),
    commit: z.boolean().optional(),
  }).optional() satisfies z.ZodType<SkillsRequest | undefined>;
}

// ---------------------------------------------------------------------------------------------------
// Pairing

/** Body of `POST pair/code` on a box (none: the default host). */
export const PAIR_CODE_REQUEST = z.strictObject({
  host: z.string().min(1).max(255).optional(),
}).optional() satisfies z.ZodType<PairCodeRequest | undefined>;

/** Body of `POST pair` on a box's TLS listener (unauthenticated: every field is bounded). */
export const PAIR_REDEEM = z.strictObject({
  code: z.string().max(200),
  name: z.string().max(200),
}) satisfies z.ZodType<PairRedeem>;

/** Body of `PUT phone`. */
export const PHONE_SETTINGS = z.strictObject({
  enabled: z.boolean(),
  listen: z.string().min(1).max(300).optional(),
}) satisfies z.ZodType<PhoneSettings>;

/** Body of `POST phone/pair` on the phone listener (unauthenticated: every field is bounded). */
export const PHONE_REDEEM = z.strictObject({
  code: z.string().max(200),
  name: z.string().max(200).optional(),
}) satisfies z.ZodType<PhoneRedeem>;
