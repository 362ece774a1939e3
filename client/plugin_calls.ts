/**
 * The plugin calls both clients carry: a box's `/v1/plugins…` and the laptop agent's answer the same
 * routes with the same records, so {@linkcode BoxClient} and {@linkcode AgentClient} both extend
 * {@linkcode PluginCalls} instead of each keeping a copy.
 *
 * @module
 */
import type { Transport } from "./http.ts";
import type {
  PluginConfig,
  PluginConfigRequest,
  PluginFile,
  PluginInfo,
  PluginPermissions,
  PluginTestEvent,
  PluginTestEventResult,
} from "./wire.ts";

const enc = encodeURIComponent;

/** The `/v1/plugins…` calls of one side (a box, or the laptop agent), over its transport. */
export class PluginCalls {
  readonly transport: Transport;

  constructor(transport: Transport) {
    this.transport = transport;
  }

  /** `GET plugins`: this side's plugins (the laptop's lists every online box's too; `where` says whose). */
  plugins(options: { signal?: AbortSignal } = {}): Promise<PluginInfo[]> {
    return this.transport.json("/v1/plugins", { signal: options.signal });
  }

  /** `GET plugins/{id}`: one plugin with its newest log lines. */
  plugin(id: string, log?: number): Promise<PluginInfo> {
    return this.transport.json(`/v1/plugins/${enc(id)}`, { query: { log } });
  }

  /** `POST plugins/{id}/enable`, granting `permissions` (exactly what it asks for). */
  enablePlugin(id: string, permissions: PluginPermissions): Promise<PluginInfo> {
    return this.transport.json(`/v1/plugins/${enc(id)}/enable`, { method: "POST", body: { permissions } });
  }

  /** `PUT plugins/{id}/files`: installs (or replaces) a plugin's files; enabling it is a second call. */
  installPlugin(id: string, files: PluginFile[]): Promise<PluginInfo> {
    return this.transport.json(`/v1/plugins/${enc(id)}/files`, { method: "PUT", body: { files } });
  }

  /** `DELETE plugins/{id}`: disables and removes a plugin (its data folder is kept). */
  removePlugin(id: string): Promise<{ id: string; where: string; removed: true }> {
    return this.transport.json(`/v1/plugins/${enc(id)}`, { method: "DELETE" });
  }

  /** `GET plugins/{id}/config`: its settings' schema and values (a secret as its reference). */
  pluginConfig(id: string): Promise<PluginConfig> {
    return this.transport.json(`/v1/plugins/${enc(id)}/config`);
  }

  /** `PUT plugins/{id}/config`: replaces its settings (checked against its schema). */
  setPluginConfig(id: string, values: PluginConfigRequest["values"]): Promise<PluginConfig> {
    return this.transport.json(`/v1/plugins/${enc(id)}/config`, { method: "PUT", body: { values } });
  }

  /** `POST plugins/{id}/test-event`: one event to that plugin only (never the bus). */
  pluginTestEvent(id: string, event: PluginTestEvent): Promise<PluginTestEventResult> {
    return this.transport.json(`/v1/plugins/${enc(id)}/test-event`, { method: "POST", body: event });
  }

  /** A request to a plugin's `fetch` (`plugins/{id}/fn/{path}`), answered as it answers. */
  callPlugin(id: string, path: string, init: { method?: string; body?: string } = {}): Promise<Response> {
    const sub = path.replace(/^\/+/, "").split("/").map(enc).join("/");
    return this.transport.fetch(`/v1/plugins/${enc(id)}/fn${sub ? `/${sub}` : ""}`, {
      method: init.method ?? (init.body === undefined ? "GET" : "POST"),
      ...(init.body === undefined
        ? {}
        : { upload: { data: new TextEncoder().encode(init.body), type: contentType(init.body) } }),
    });
  }

  /** `POST plugins/{id}/disable`. */
  disablePlugin(id: string): Promise<PluginInfo> {
    return this.transport.json(`/v1/plugins/${enc(id)}/disable`, { method: "POST" });
  }
}

/** The content type of a body given as text: JSON when it parses as JSON, else plain text. */
function contentType(text: string): string {
  try {
    JSON.parse(text);
    return "application/json";
  } catch {
    return "text/plain; charset=utf-8";
  }
}
