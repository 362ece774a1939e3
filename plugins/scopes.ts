/**
 * What a plugin may ask of dock's API through `ctx.api`: scopes a manifest asks for and enabling grants,
 * each a set of routes. A route no scope names is out of every plugin's reach (enabling plugins,
 * pairing, tokens, streams), and anything a scope does not cover is refused and counted. Each rule and
 * each scope is classed by what a call can lead to (read, write, runs commands), so the consent can say
 * which scopes amount to shell; `docs/plugin-scopes.md` is generated from these tables.
 *
 * @module
 */
import type { ScopeClass } from "../client/wire.ts";

/** Every scope a manifest may ask for. */
export const PLUGIN_SCOPES = [
  "locations:read",
  "locations:write",
  "sessions:read",
  "sessions:send",
  "sessions:write",
  "services:read",
  "services:write",
  "exec",
  "system:read",
  "config:read",
  "config:write",
  "events:emit",
  "boxes:read",
  "queue:read",
  "queue:write",
] as const;

/** One of {@linkcode PLUGIN_SCOPES}. */
export type PluginScope = typeof PLUGIN_SCOPES[number];

/** What a scope, or one route it opens, can lead to (ordered: each class includes the ones before it). */
export const SCOPE_CLASS_ORDER: readonly ScopeClass[] = ["read", "write", "runs commands"];

/**
 * What each scope can lead to, shown beside it wherever a plugin asks for it (the CLI's prompt, the app's
 * dialog, `GET plugins`' `scope_classes`). `runs commands`: a program can start on the machine because of
 * a call it allows, as the daemon's (or the agent's) user, whether the plugin writes the command (scripts,
 * kits, hooks, config, exec, a session's command), picks the code that runs (a repository to clone or
 * register, whose setup scripts and hooks run), types into a shell or an agent (a prompt is a request to
 * run tools), or starts what the person defined (services, setup and archive scripts). `write`: it changes
 * dock's state and nothing starts because of it but the person's own hooks and flows for that event.
 * The scope's class is the highest of its routes' (each rule below names its own; scopes_test checks).
 */
export const SCOPE_CLASSES: Readonly<Record<PluginScope, ScopeClass>> = {
  "locations:read": "read",
  "locations:write": "runs commands",
  "sessions:read": "read",
  "sessions:send": "runs commands",
  "sessions:write": "runs commands",
  "services:read": "read",
  "services:write": "runs commands",
  "exec": "runs commands",
  "system:read": "read",
  "config:read": "read",
  "config:write": "runs commands",
  "events:emit": "write",
  "boxes:read": "read",
  "queue:read": "read",
  "queue:write": "runs commands",
};

/** One rule: the scope a matching call needs, and what that call can lead to. */
type Rule = [scope: PluginScope, methods: string[], path: RegExp, leads: ScopeClass];

const SEGMENT = "[^/]+";
const LOCATION = `locations/${SEGMENT}`;
const WORKTREE = `${LOCATION}/worktrees/${SEGMENT}`;
const WORKTREE_SERVICES = `${WORKTREE}/services`;

// Order matters: the first rule whose method and path match names the scope a call needs, so the
// narrower routes (a worktree's services) come before the wider ones (everything under locations/).
// A wide rule's class is its most dangerous route's: only routes known to start nothing are `write`.
const BOX_RULES: Rule[] = [
  // Stopping a service starts nothing; starting or restarting one runs its command.
  ["services:write", ["POST"], new RegExp(`^${WORKTREE_SERVICES}/${SEGMENT}/stop$`), "write"],
  [
    "services:write",
    ["POST"],
    new RegExp(`^${WORKTREE_SERVICES}/${SEGMENT}/(start|restart)$`),
    "runs commands",
  ],
  ["services:read", ["GET"], new RegExp(`^${WORKTREE_SERVICES}(/${SEGMENT}(/log)?)?$`), "read"],
  ["services:read", ["GET"], /^(services|ports)$/, "read"],
  ["config:read", ["GET"], new RegExp(`^(hooks|${LOCATION}/config)$`), "read"],
  // Hooks and a location's config hold commands (hooks, setup and archive scripts, services).
  ["config:write", ["PUT"], new RegExp(`^(hooks|${LOCATION}/config)$`), "runs commands"],
  ["locations:read", ["GET"], /^locations(\/.*)?$/, "read"],
  // Forgetting a location, dropping its kit, or pausing a worktree (its services stop) starts nothing.
  ["locations:write", ["DELETE"], new RegExp(`^${LOCATION}(/kit)?$`), "write"],
  ["locations:write", ["POST"], new RegExp(`^${WORKTREE}/pause$`), "write"],
  // Everything else under locations/ can: scripts and kits (their hooks), registering or cloning a
  // repository (its config's scripts and hooks), creating (setup) or removing (archive) a worktree,
  // syncing one (git runs the checkout's hooks), resuming one (its services start).
  ["locations:write", ["POST", "PUT", "DELETE"], /^locations(\/.*)?$/, "runs commands"],
  // Typed into a session: a shell runs it, an agent acts on it.
  // Keystrokes and answers to a permission prompt are input too (they can allow a tool to run).
  ["sessions:send", ["POST"], new RegExp(`^sessions/${SEGMENT}/(send|keys|answer)$`), "runs commands"],
  ["sessions:read", ["GET"], new RegExp(`^sessions(/${SEGMENT}(/(screen|wait))?)?$`), "read"],
  ["sessions:write", ["POST"], /^(sessions|tasks)$/, "runs commands"],
  ["sessions:write", ["DELETE"], new RegExp(`^sessions/${SEGMENT}$`), "write"],
  ["exec", ["POST"], /^exec$/, "runs commands"],
  ["system:read", ["GET"], /^(info|stats|doctor)$/, "read"],
];

const LAPTOP_RULES: Rule[] = [
  ["boxes:read", ["GET"], /^status$/, "read"],
  // Every box's sessions at once: what `boxes/{box}/api/sessions` gives one box at a time.
  ["sessions:read", ["GET"], /^sessions$/, "read"],
  ["queue:read", ["GET"], /^queue$/, "read"],
  // A queued prompt is typed into its session when its box is back (as `sessions:send`); discarding one
  // starts nothing.
  ["queue:write", ["DELETE"], new RegExp(`^queue/${SEGMENT}$`), "write"],
  ["queue:write", ["POST"], /^queue$/, "runs commands"],
  ["queue:write", ["PATCH"], new RegExp(`^queue/${SEGMENT}$`), "runs commands"],
  ["queue:write", ["POST"], new RegExp(`^queue/${SEGMENT}/(retry|send)$`), "runs commands"],
];

/** Which API a plugin's `ctx.api` calls: the box's, or the laptop's (which relays to boxes). */
export type ApiSide = "box" | "laptop";

/** The scope a call needs and what the call can lead to (see {@linkcode requiredScope}). */
export interface ScopedCall {
  scope: PluginScope;
  leads: ScopeClass;
}

/**
 * The scope a call needs (`path` relative to `/v1/`, without its query), or null when no plugin may make
 * it. On the laptop, `boxes/{box}/api/{path}` needs what `{path}` needs on a box.
 */
export function requiredScope(side: ApiSide, method: string, path: string): PluginScope | null {
  return classifyCall(side, method, path)?.scope ?? null;
}

/** The scope a call needs and what it can lead to, or null when no plugin may make it. */
export function classifyCall(side: ApiSide, method: string, path: string): ScopedCall | null {
  const clean = path.replace(/^\/+/, "").replace(/^v1\//, "");
  if (clean.split("/").some((segment) => segment === ".." || segment === ".")) return null;
  if (side === "laptop") {
    const relayed = /^boxes\/[^/]+\/api\/(.+)$/.exec(clean);
    if (relayed) return classifyCall("box", method, relayed[1]);
  }
  for (const [scope, methods, pattern, leads] of side === "box" ? BOX_RULES : LAPTOP_RULES) {
    if (methods.includes(method) && pattern.test(clean)) return { scope, leads };
  }
  return null;
}

/** The highest of `classes` (`read` for none). */
export function highestClass(classes: Iterable<ScopeClass>): ScopeClass {
  let highest = 0;
  for (const c of classes) highest = Math.max(highest, SCOPE_CLASS_ORDER.indexOf(c));
  return SCOPE_CLASS_ORDER[highest];
}

/** What each of `scopes` can lead to (an unknown name is left out: a manifest cannot ask for one). */
export function scopeClasses(scopes: readonly string[]): Record<string, ScopeClass> {
  const known = scopes.filter((scope): scope is PluginScope => scope in SCOPE_CLASSES);
  return Object.fromEntries(known.map((scope) => [scope, SCOPE_CLASSES[scope]]));
}

/** Every rule's scope and class, for the check that each scope is classed as its highest route. */
export function ruleClasses(): { side: ApiSide; scope: PluginScope; leads: ScopeClass }[] {
  return [
    ...BOX_RULES.map(([scope, , , leads]) => ({ side: "box" as const, scope, leads })),
    ...LAPTOP_RULES.map(([scope, , , leads]) => ({ side: "laptop" as const, scope, leads })),
  ];
}
