/**
 * The hot shapes of `POST events` checked by hand: a plain announce (`type`, optional `origin` and
 * `data`), what every emitter but `dock hook` sends, and the agent report `dock hook` sends on every
 * turn. `BOX_EVENT` (zod) stays the contract: these checks accept only what it accepts, give the same
 * value, and leave everything else to it (every refusal, so the error a caller reads is the schema's).
 * Measured on a shared 2-core machine: the union parsed a small announce in ~20 µs (it tries the agent
 * report first and builds its issues), this in well under 1 µs; dockd spent ~180–470 µs of CPU per
 * event in all. An agent report, one every 2 ms: the schema 60 µs (p50 of 40), this 14; warm, 1.1
 * and 0.26 µs. dockd's JS for a hook's report was ~0.8 ms between hooks (60 profiled).
 *
 * @module
 */
import {
  AGENT_REPORT_TYPES,
  EVENT_TYPE,
  HOOK_EVENT_NAME,
  RFC3339,
  WAITING_REASONS,
} from "../../client/schemas.ts";
import type { AgentReport, EventAnnounce } from "../../client/wire.ts";

const REPORT_TYPES = new Set<string>(AGENT_REPORT_TYPES);

/**
 * `value` as `BOX_EVENT` would give it when it is one of the hot shapes the schema accepts: an agent
 * report by its type, else a plain announce (each shape's check runs alone, not one after the other);
 * undefined when the schema must decide.
 */
export function handChecked(value: unknown): EventAnnounce | AgentReport | undefined {
  const type = isRecord(value) ? value.type : undefined;
  return typeof type === "string" && REPORT_TYPES.has(type) ? agentReport(value) : plainAnnounce(value);
}

/**
 * `value` as `BOX_EVENT` would give it when it is a plain announce the schema accepts; undefined when
 * the schema must decide (a report, anything refused, a `__proto__` key the schema would drop).
 */
export function plainAnnounce(value: unknown): EventAnnounce | undefined {
  if (!isRecord(value)) return undefined;
  // An own `__proto__` (JSON.parse makes one) is a key like any other here: unknown, so refused.
  for (const key in value) {
    if (key !== "type" && key !== "origin" && key !== "data") return undefined;
  }
  const { type, origin, data } = value;
  if (typeof type !== "string" || type.length > 100 || !EVENT_TYPE.test(type) || REPORT_TYPES.has(type)) {
    return undefined;
  }
  if (origin !== undefined && (typeof origin !== "string" || origin.length > 64)) return undefined;
  if (data !== undefined && (!isRecord(data) || Object.hasOwn(data, "__proto__"))) return undefined;
  const announce: EventAnnounce = { type };
  if (origin !== undefined) announce.origin = origin;
  if (data !== undefined) announce.data = data;
  return announce;
}

/**
 * `value` as `BOX_EVENT` would give it when it is an agent report the schema accepts (`AGENT_REPORT`:
 * every field and limit as there); undefined when the schema must decide.
 */
export function agentReport(value: unknown): AgentReport | undefined {
  if (!isRecord(value)) return undefined;
  if (!onlyKeys(value, REPORT_KEYS)) return undefined;
  const { type, origin, data, session, time } = value;
  if (typeof type !== "string" || !REPORT_TYPES.has(type)) return undefined;
  if (!isText(origin, 64) || !isRecord(data) || !onlyKeys(data, REPORT_DATA_KEYS)) return undefined;
  if (session !== undefined && !isText(session, 64)) return undefined;
  if (time !== undefined && !(isText(time, 40) && RFC3339.test(time))) return undefined;
  const { path, agent, session_id, hook, reason } = data;
  if (!isText(path, 4096) || !isText(agent, 64)) return undefined;
  if (session_id !== null && !isText(session_id, 256)) return undefined;
  if (hook !== undefined && !(isText(hook, 64) && HOOK_EVENT_NAME.test(hook))) return undefined;
  if (reason !== undefined && !REASONS.has(reason as string)) return undefined;
  const report: AgentReport = {
    type: type as AgentReport["type"],
    origin,
    data: { path, agent, session_id },
  };
  if (hook !== undefined) report.data.hook = hook;
  if (reason !== undefined) report.data.reason = reason as NonNullable<AgentReport["data"]["reason"]>;
  if (session !== undefined) report.session = session;
  if (time !== undefined) report.time = time;
  return report;
}

const REPORT_KEYS = new Set(["type", "origin", "data", "session", "time"]);
const REPORT_DATA_KEYS = new Set(["path", "agent", "session_id", "hook", "reason"]);
const REASONS = new Set<string>(WAITING_REASONS);

/** Whether every own key of `value` is one of `keys` (an own `__proto__` from JSON.parse is not). */
function onlyKeys(value: Record<string, unknown>, keys: ReadonlySet<string>): boolean {
  for (const key in value) if (!keys.has(key)) return false;
  return !Object.hasOwn(value, "__proto__");
}

function isText(value: unknown, max: number): value is string {
  return typeof value === "string" && value.length <= max;
}

/** A JSON object (not null, not an array) whose prototype is Object's: what `z.record` takes. */
function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === "object" && value !== null && Object.getPrototypeOf(value) === Object.prototype;
}
