/**
 * The event definitions: every event type dock itself announces, when, and the fields of its data, as
 * TypeScript type text over the wire types (client/wire.ts). The plugin SDK's typed events
 * (`sdk/generated.ts`) and docs/plugin-reference.md are generated from it (`cli/write_plugin_reference.ts`);
 * `tests/plugin_reference_test.ts` fails when a source announces a type missing here (a literal one, or
 * a supervisor scope's `<noun>.<what>`). Identifiers only, as the events themselves: never a prompt or a
 * secret.
 *
 * @module
 */
import type { GateAction } from "./hooks.ts";

/** One event type: when it is announced and its data's fields (name → TypeScript type text). */
export interface EventDefinition {
  when: string;
  data: Record<string, string>;
}

const AGENT_DATA = {
  "path?": "string",
  "agent?": "string",
  "session_id?": "string | null",
  "hook?": "string",
  "reason?": "WaitingReason | null",
  "session?": "string",
  "cause?": "string",
};
const WORKTREE = { location: "string", worktree: "string" };
const BOX = { box: "string" };
const PLUGIN = { id: "string", where: '"box" | "laptop"' };
/** What a supervised process's events say of its end (daemon/supervisor.ts). */
const SUPERVISED_END = { exit_code: "number | null", restarts: "number" };
const SERVICE = { ...WORKTREE, service: "string" };
const UNIT = { unit: "string" };
const QUEUE = { id: "string", box: "string", session: "string", state: "string", "error?": "string" };

/** Every event type dock announces, by type (sorted). Plugins may add their own types (`ctx.emit`). */
export const EVENT_CATALOG: Record<string, EventDefinition> = {
  "agent.finished": { when: "An agent tool's hook reports a finished turn.", data: AGENT_DATA },
  "agent.ready": { when: "An agent tool's hook reports it is ready.", data: AGENT_DATA },
  "agent.started": { when: "An agent tool's hook reports a turn started.", data: AGENT_DATA },
  "agent.waiting": { when: "An agent waits for the person (permission, question, input).", data: AGENT_DATA },
  "app.changed": { when: "An app settings document changes (laptop).", data: { key: "string" } },
  "box.added": {
    when: "A box is added to the laptop.",
    data: { ...BOX, kind: "string", "fp?": "string" },
  },
  "box.changed": {
    when: "A box's address changes, or the build it runs (laptop).",
    data: { ...BOX, address: "string", "build?": "string" },
  },
  "box.offline": { when: "The laptop loses a box.", data: { ...BOX, "error?": "string | null" } },
  "box.online": { when: "The laptop reaches a box.", data: BOX },
  "box.removed": { when: "A box is removed from the laptop.", data: { ...BOX, "fp?": "string" } },
  "box.upgrade.failed": {
    when: "A box's upgrade failed.",
    data: { "from?": "string", "to?": "string", "error?": "string" },
  },
  "box.upgraded": { when: "A box runs its new build.", data: { from: "string", to: "string" } },
  "box.upgrading": { when: "A box starts an upgrade.", data: { from: "string", to: "string" } },
  "config.changed": {
    when: "Env, flows, guard or a location's config changes through the API.",
    data: { "file?": "string", "location?": "string", "layer?": "string" },
  },
  "dock.upgrading": { when: "The laptop's dock starts an upgrade.", data: { from: "string", to: "string" } },
  "flow.finished": {
    when: "A flow run ends.",
    data: { flow: "string", run: "string", scope: "string", status: "string", "location?": "string" },
  },
  "flow.started": {
    when: "A flow run starts.",
    data: { flow: "string", run: "string", scope: "string", trigger: "string", "location?": "string" },
  },
  "forward.created": { when: "A port forward opens (laptop).", data: { "[field: string]": "unknown" } },
  "forward.removed": { when: "A port forward closes (laptop).", data: { "[field: string]": "unknown" } },
  "gate.refused": {
    when: "A `before:` gate refused an action.",
    data: { action: "GateAction", code: "string", source: "string", "location?": "string" },
  },
  "guard.acted": { when: "The guard acted on a runaway process.", data: { "[field: string]": "unknown" } },
  "hook.failed": {
    when: "A shell hook exited non-zero or timed out.",
    data: {
      on: "string",
      source: "string",
      event: "string",
      exit_code: "number | null",
      timed_out: "boolean",
      duration_ms: "number",
    },
  },
  "hooks.changed": { when: "A hooks file changes.", data: { path: "string" } },
  "kit.applied": {
    when: "A kit is applied to a location.",
    data: { location: "string", kit: "string", version: "string", missing: "string[]" },
  },
  "kit.removed": { when: "A location's kit is removed.", data: { location: "string", kit: "string" } },
  "laptop.paired": { when: "A laptop pairs with the box.", data: { id: "string", name: "string" } },
  "laptop.revoked": { when: "A laptop's pairing is revoked.", data: { id: "string", name: "string" } },
  "location.added": { when: "A location is added.", data: { location: "string", path: "string" } },
  "location.removed": { when: "A location is removed.", data: { location: "string", path: "string" } },
  "phone.changed": {
    when: "The phone listener's settings change.",
    data: { enabled: "boolean", listen: "string | null", url: "string | null" },
  },
  "phone.paired": { when: "A phone pairs.", data: { id: "string", "name?": "string" } },
  "phone.revoked": { when: "A phone's pairing is revoked.", data: { id: "string", "name?": "string" } },
  "plugin.changed": { when: "A plugin's files change.", data: PLUGIN },
  "plugin.configured": { when: "A plugin's settings change (never their values).", data: PLUGIN },
  "plugin.disabled": { when: "A plugin is disabled.", data: PLUGIN },
  "plugin.enabled": { when: "A plugin is enabled.", data: PLUGIN },
  "plugin.failed": { when: "A plugin is switched off after failing.", data: PLUGIN },
  "plugin.installed": { when: "A plugin is installed (or updated) through the API.", data: PLUGIN },
  "plugin.removed": { when: "A plugin's folder is removed.", data: PLUGIN },
  "plugin.uninstalled": { when: "A plugin is removed through the API.", data: PLUGIN },
  "preview.open": { when: "A preview is asked to open.", data: { "[field: string]": "unknown" } },
  "queue.added": { when: "A prompt is queued (laptop; never its text).", data: QUEUE },
  "queue.changed": { when: "A queued prompt's state changes (sent, failed…).", data: QUEUE },
  "queue.removed": { when: "A queued prompt is removed.", data: QUEUE },
  "schedule.fired": { when: "A scheduled flow fires.", data: { schedule: "string", time: "string" } },
  "service.crashed": {
    when: "A worktree's service exited on its own; it is started again after `retry_in_ms`.",
    data: { ...SERVICE, ...SUPERVISED_END, retry_in_ms: "number" },
  },
  "service.failed": {
    when: "A worktree's service crashed too many times in a row: it is not started again by itself.",
    data: { ...SERVICE, ...SUPERVISED_END, error: "string" },
  },
  "service.started": { when: "A worktree's service started.", data: { ...SERVICE, pid: "number" } },
  "service.stopped": { when: "A worktree's service was stopped.", data: SERVICE },
  "session.answered": {
    when: "A session's question is answered.",
    data: { session: "string", answer: "string" },
  },
  "session.created": {
    when: "A session starts.",
    data: { session: "string", location: "string", worktree: "string", agent: "string | null" },
  },
  "session.exited": {
    when: "A session's process exits.",
    data: { session: "string", exit_code: "number | null" },
  },
  "session.keys": { when: "Keys are typed into a session.", data: { session: "string", typed: "number" } },
  "session.open": { when: "A session is asked to open in the app.", data: { session: "string" } },
  "session.removed": { when: "A session is removed.", data: { session: "string" } },
  "session.sent": { when: "A prompt is sent (never its text).", data: { session: "string" } },
  "share.closed": { when: "A public share closes.", data: { "[field: string]": "unknown" } },
  "share.failed": {
    when: "A public share cannot open.",
    data: { ...WORKTREE, port: "number", tool: "string" },
  },
  "share.opened": { when: "A public share opens.", data: { "[field: string]": "unknown" } },
  "skills.installed": {
    when: "Skills are installed through the API.",
    data: { "[field: string]": "unknown" },
  },
  "skills.removed": { when: "Skills are removed through the API.", data: { "[field: string]": "unknown" } },
  "task.created": {
    when: "A task (worktree and session) is created.",
    data: {
      ...WORKTREE,
      session: "string",
      agent: "string | null",
      from_session: "string | null",
    },
  },
  "unit.crashed": {
    when: "A unit exited on its own; it is started again after `retry_in_ms`.",
    data: { ...UNIT, ...SUPERVISED_END, retry_in_ms: "number" },
  },
  "unit.created": { when: "A unit is created.", data: UNIT },
  "unit.failed": {
    when: "A unit crashed too many times in a row: it is not started again by itself.",
    data: { ...UNIT, ...SUPERVISED_END, error: "string" },
  },
  "unit.removed": { when: "A unit is removed.", data: UNIT },
  "unit.started": { when: "A unit started.", data: { ...UNIT, pid: "number" } },
  "unit.stopped": { when: "A unit was stopped.", data: UNIT },
  "worktree.created": {
    when: "A worktree is created (origin `detected` when made outside dock).",
    data: { ...WORKTREE, path: "string", "branch?": "string | null", "ports?": "Record<string, number>" },
  },
  "worktree.removed": {
    when: "A worktree is removed.",
    data: { ...WORKTREE, path: "string", "branch?": "string | null" },
  },
  "worktree.setup.started": { when: "A worktree's setup script starts.", data: WORKTREE },
  "worktree.synced": {
    when: "A worktree is synced.",
    data: { ...WORKTREE, mode: "string", ok: "boolean" },
  },
};

/** What each `before:` gate's `target` holds (the gated route's table declares it). */
export const GATE_TARGETS: Record<GateAction, { when: string; target: string }> = {
  "config.change": {
    when:
      "A config file changes: flows.json, hooks.json, env.json, guard.json, a location's scripts, config or kit.",
    target: "{ file: string; location?: string; value: unknown }",
  },
  "exec": {
    when: "A command runs (`POST exec`, a unit's command).",
    target: "{ location?: string; command?: string | string[]; unit?: string }",
  },
  "session.create": {
    when: "A session is created.",
    target:
      "{ session: string | null; location: string; worktree: string; agent: string | null; command: string; prompt?: string }",
  },
  "session.send": {
    when: "Text, keys or an answer are sent to a session.",
    target: "{ session: string; text?: string; enter?: boolean; keys?: string[]; answer?: string }",
  },
  "share.open": {
    when: "A public share of a worktree's port opens.",
    target: "{ location: string; worktree: string; port: number }",
  },
  "skills.install": {
    when: "Skills are installed.",
    target: "{ skills: string[]; agent?: string; target?: string; location?: string; commit?: string }",
  },
  "skills.uninstall": {
    when: "Skills are removed.",
    target: "{ skills: string[]; agent?: string; target?: string; location?: string; commit?: string }",
  },
  "worktree.create": {
    when: "A worktree is created.",
    target: "{ name?: string; branch?: string; base?: string; [field: string]: unknown }",
  },
  "worktree.remove": {
    when: "A worktree is removed.",
    target: "{ worktree: string; path: string; force: boolean }",
  },
};
