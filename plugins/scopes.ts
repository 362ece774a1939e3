/**
 * What a plugin may ask of dock's API through `ctx.api`: scopes a manifest asks for and enabling grants,
 * each a set of routes. A route no scope names is out of every plugin's reach (enabling plugins,
 * pairing, tokens, streams), and anything a scope does not cover is refused and counted.
 *
 * @module
 */

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

type Rule = [scope: PluginScope, methods: string[], path: RegExp];

const SEGMENT = "[^/]+";
const WORKTREE_SERVICES = `locations/${SEGMENT}/worktrees/${SEGMENT}/services`;

// Order matters: the first rule whose method and path match names the scope a call needs, so the
// narrower routes (a worktree's services) come before the wider ones (everything under locations/).
const BOX_RULES: Rule[] = [
  ["services:write", ["POST"], new RegExp(`^${WORKTREE_SERVICES}/${SEGMENT}/(start|stop|restart)$`)],
  ["services:read", ["GET"], new RegExp(`^${WORKTREE_SERVICES}(/${SEGMENT}(/log)?)?$`)],
  ["services:read", ["GET"], /^(services|ports)$/],
  ["config:read", ["GET"], new RegExp(`^(hooks|locations/${SEGMENT}/config)$`)],
  ["config:write", ["PUT"], new RegExp(`^(hooks|locations/${SEGMENT}/config)$`)],
  ["locations:read", ["GET"], /^locations(\/.*)?$/],
  ["locations:write", ["POST", "PUT", "DELETE"], /^locations(\/.*)?$/],
  ["sessions:send", ["POST"], new RegExp(`^sessions/${SEGMENT}/send$`)],
  ["sessions:read", ["GET"], new RegExp(`^sessions(/${SEGMENT}(/(screen|wait))?)?$`)],
  ["sessions:write", ["POST"], /^(sessions|tasks)$/],
  ["sessions:write", ["DELETE"], new RegExp(`^sessions/${SEGMENT}$`)],
  ["exec", ["POST"], /^exec$/],
  ["system:read", ["GET"], /^(info|stats|doctor)$/],
];

const LAPTOP_RULES: Rule[] = [
  ["boxes:read", ["GET"], /^status$/],
  ["queue:read", ["GET"], /^queue$/],
  ["queue:write", ["POST"], /^queue$/],
  ["queue:write", ["PATCH", "DELETE"], new RegExp(`^queue/${SEGMENT}$`)],
  ["queue:write", ["POST"], new RegExp(`^queue/${SEGMENT}/(retry|send)$`)],
];

/** Which API a plugin's `ctx.api` calls: the box's, or the laptop's (which relays to boxes). */
export type ApiSide = "box" | "laptop";

/**
 * The scope a call needs (`path` relative to `/v1/`, without its query), or null when no plugin may make
 * it. On the laptop, `boxes/{box}/api/{path}` needs what `{path}` needs on a box.
 */
export function requiredScope(side: ApiSide, method: string, path: string): PluginScope | null {
  const clean = path.replace(/^\/+/, "").replace(/^v1\//, "");
  if (clean.split("/").some((segment) => segment === ".." || segment === ".")) return null;
  if (side === "laptop") {
    const relayed = /^boxes\/[^/]+\/api\/(.+)$/.exec(clean);
    if (relayed) return requiredScope("box", method, relayed[1]);
  }
  for (const [scope, methods, pattern] of side === "box" ? BOX_RULES : LAPTOP_RULES) {
    if (methods.includes(method) && pattern.test(clean)) return scope;
  }
  return null;
}
