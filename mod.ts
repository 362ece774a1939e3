/**
 * dock's public face for scripts and plugins: the wire types and the typed HTTP clients.
 *
 * ```ts
 * import { BoxClient } from "./mod.ts";
 * const box = new BoxClient({ socket: `${Deno.env.get("HOME")}/.local/state/dock/box/dockd.sock` });
 * console.log(await box.locations());
 * ```
 *
 * The rules of the request bodies (zod schemas tied to these types) are not exported here, so
 * importing this module loads no zod; a script that wants them imports `client/schemas.ts` by path.
 *
 * @module
 */
export * from "./client/wire.ts";
export * from "./client/errors.ts";
export { type Endpoint, readNdjson, readSse, type RequestOptions, Transport } from "./client/http.ts";
export { BoxClient } from "./client/box.ts";
export { AgentClient } from "./client/agent.ts";
export { PluginCalls } from "./client/plugin_calls.ts";
export { SessionCalls } from "./client/session_calls.ts";
export {
  definePlugin,
  type DockPlugin,
  type GateRequest,
  type GateResult,
  type PluginContext,
  type PluginKv,
} from "./client/plugin.ts";
