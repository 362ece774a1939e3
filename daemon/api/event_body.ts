/**
 * The hot shape of `POST events` checked by hand: a plain announce (`type`, optional `origin` and
 * `data`), what every emitter but `dock hook` sends. `BOX_EVENT` (zod) stays the contract: this check
 * accepts only what it accepts, gives the same value, and leaves everything else to it (agent reports,
 * every refusal, so the error a caller reads is the schema's). Measured on a shared 2-core machine:
 * the union parsed a small announce in ~20 µs (it tries the agent report first and builds its issues),
 * this in well under 1 µs; dockd spent ~180–470 µs of CPU per event in all.
 *
 * @module
 */
import { AGENT_REPORT_TYPES, EVENT_TYPE } from "../../client/schemas.ts";
import type { EventAnnounce } from "../../client/wire.ts";

const REPORT_TYPES = new Set<string>(AGENT_REPORT_TYPES);

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

/** A JSON object (not null, not an array) whose prototype is Object's: what `z.record` takes. */
function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === "object" && value !== null && Object.getPrototypeOf(value) === Object.prototype;
}
