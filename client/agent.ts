/**
 * The typed client of the laptop agent's loopback API (spec 4.1), and the way to reach a box through
 * it: `AgentClient.box(name)` is a {@linkcode BoxClient} whose requests go through the agent's relay.
 *
 * @module
 */
import { BoxClient } from "./box.ts";
import { readNdjson, Transport } from "./http.ts";
import type {
  BoxAddLocal,
  DockEvent,
  EventAnnounce,
  HookConfig,
  HooksState,
  PairRequest,
  PluginInfo,
  PluginPermissions,
  QueueCreate,
  QueueEdit,
  QueueItem,
} from "./wire.ts";

const enc = encodeURIComponent;

/** A box's connection as the agent reports it. */
export interface BoxStatus {
  name: string;
  kind: "socket" | "tls";
  address: string;
  online: boolean;
  since: string | null;
  error: string | null;
  latency_ms: number | null;
  build: string | null;
}

/** What `DELETE /v1/boxes/{box}` answers: the forgotten box, and whether the box unpaired this laptop. */
export interface ForgottenBox {
  name: string;
  kind: "socket" | "tls";
  address: string;
  created: string;
  /**
   * For a paired (TLS) box: true when the box revoked this laptop's credential, false when it could not
   * be told (offline, unreachable; see `revoke_error`). Null for a socket box: there is no pairing to undo.
   */
  revoked: boolean | null;
  /** This laptop's id on a paired box (what `dockd laptops` lists and `dockd revoke` takes). */
  laptop?: string;
  /** Why the box could not be told. */
  revoke_error?: string;
}

/** Body of `POST /v1/boxes/add-ssh`. */
export interface AddSshRequest {
  /** `[user@]host[:port]`, as `ssh` would take it (a `Host` of the SSH config included). */
  host: string;
  /** The box's name on this laptop. @default {the box's own name} */
  name?: string;
  /** A private key file for `ssh -i`. @default {what the SSH config and agent offer} */
  identity?: string;
}

/**
 * One NDJSON line of `POST /v1/boxes/add-ssh` and `POST /v1/boxes/{box}/upgrade` (spec 4.1's
 * `{ line?, done?, error? }`, with the step it belongs to, the upload's bytes for a progress bar, and the
 * box on the last line).
 */
export interface BoxProgress {
  step?: string;
  line?: string;
  /** Bytes of the package sent so far, during `upload`. */
  sent?: number;
  total?: number;
  done?: boolean;
  /** Which step failed, why, and what to do. */
  error?: string;
  /** The box, on the last line of a success. */
  box?: BoxStatus;
}

/** A line of `POST /v1/boxes/add-ssh`. */
export type AddSshProgress = BoxProgress;

/** A variable of a task template, filled in when a task is made from it. */
export interface TemplateVariable {
  /** Written `{{id}}` in the template's texts. */
  id: string;
  label?: string;
  default?: string;
  multiline?: boolean;
}

/**
 * A task template (spec 2.8: `~/.dock/templates/*.json`), as `GET /v1/templates` lists it: where a
 * task goes and what it starts with. One that failed to load carries `error` naming the file and field.
 */
export interface TaskTemplate {
  /** The file's name without `.json` unless the file says otherwise. */
  id: string;
  name?: string;
  description?: string;
  box?: string;
  location?: string;
  agent?: string;
  command?: string;
  branch?: string;
  base?: string;
  prompt?: string;
  variables?: TemplateVariable[];
  error?: string;
}

/** `GET /v1/status`. */
export interface AgentStatus {
  boxes: BoxStatus[];
  forwards: unknown[];
  routes: { pattern: string; box: string; port: number }[];
  proxy: { enabled: boolean; port?: number; error?: string };
}

/** Typed access to the laptop agent. */
export class AgentClient {
  readonly url: string;
  readonly transport: Transport;
  #token: string;
  #origin?: string;
  #oneShotReads?: boolean;
  #whenUnreachable?: () => Promise<void>;

  /** `oneShotReads`, `whenUnreachable`: see `Endpoint` in `http.ts` (for a CLI command). */
  constructor(options: {
    url: string;
    token: string;
    origin?: string;
    oneShotReads?: boolean;
    whenUnreachable?: () => Promise<void>;
  }) {
    this.url = options.url.replace(/\/+$/, "");
    this.#token = options.token;
    this.#origin = options.origin;
    this.#oneShotReads = options.oneShotReads;
    // Shared by the box clients made here, so that the agent is started once.
    let started: Promise<void> | undefined;
    const start = options.whenUnreachable;
    this.#whenUnreachable = start && (() => started ??= start());
    this.transport = new Transport({ ...options, url: this.url, whenUnreachable: this.#whenUnreachable });
  }

  /** A client of one box, through the agent's relay. */
  box(name: string): BoxClient {
    return new BoxClient({
      url: this.url,
      token: this.#token,
      origin: this.#origin,
      box: name,
      oneShotReads: this.#oneShotReads,
      whenUnreachable: this.#whenUnreachable,
    });
  }

  /** `GET /v1/app/{key}`: an app settings document (null when there is none). */
  appDocument<T = unknown>(key: string): Promise<T | null> {
    return this.transport.json(`/v1/app/${encodeURIComponent(key)}`);
  }

  /** `GET /v1/status`. */
  status(): Promise<AgentStatus> {
    return this.transport.json("/v1/status");
  }

  /** `POST /v1/refresh`: checks every box now. */
  refresh(): Promise<AgentStatus> {
    return this.transport.json("/v1/refresh", { method: "POST" });
  }

  /** `POST /v1/boxes/add-local`: pairs the box daemon sharing this state directory. */
  addLocal(name?: string): Promise<BoxStatus> {
    const body: BoxAddLocal = { name };
    return this.transport.json("/v1/boxes/add-local", { body });
  }

  /**
   * `POST /v1/boxes/add-ssh`: installs dock on a machine over SSH and pairs it, streaming each step; the
   * last line has `done` (with `box`, or `error`).
   */
  async *addSsh(request: AddSshRequest, signal?: AbortSignal): AsyncGenerator<AddSshProgress> {
    const response = await this.transport.fetch("/v1/boxes/add-ssh", { body: request, signal });
    yield* readNdjson<AddSshProgress>(response.body!);
  }

  /**
   * `POST /v1/boxes/{box}/upgrade`: sends this laptop's package to the box when it runs an older build,
   * and follows the hand-over, streaming each step; the last line has `done` (with `box`, or `error`).
   */
  async *upgradeBox(name: string, signal?: AbortSignal): AsyncGenerator<BoxProgress> {
    const response = await this.transport.fetch(`/v1/boxes/${encodeURIComponent(name)}/upgrade`, {
      method: "POST",
      signal,
    });
    yield* readNdjson<BoxProgress>(response.body!);
  }

  /** `POST /v1/boxes/pair`: pairs the box a `dockd pair` link names, as `name` (default: its own name). */
  pairBox(link: string, name?: string): Promise<BoxStatus> {
    const body: PairRequest = { link, name };
    return this.transport.json("/v1/boxes/pair", { body });
  }

  /** `DELETE /v1/boxes/{box}`: forgets a box (and unpairs this laptop on a paired box, best effort). */
  removeBox(name: string): Promise<ForgottenBox> {
    return this.transport.json(`/v1/boxes/${encodeURIComponent(name)}`, { method: "DELETE" });
  }

  /** `POST /v1/events`. */
  emit(body: EventAnnounce): Promise<DockEvent> {
    return this.transport.json("/v1/events", { body });
  }

  /** `GET /v1/events` (SSE): the laptop's and every box's events, from `after` on. */
  events(options: { after?: number; signal?: AbortSignal } = {}): AsyncGenerator<DockEvent> {
    return this.transport.stream<DockEvent>("/v1/events", options);
  }

  /** `GET /v1/plugins`: the laptop's plugins and every online box's (`where` says which). */
  plugins(): Promise<PluginInfo[]> {
    return this.transport.json("/v1/plugins");
  }

  /** `GET /v1/plugins/{id}`: one of the laptop's plugins with its newest log lines. */
  plugin(id: string, log?: number): Promise<PluginInfo> {
    return this.transport.json(`/v1/plugins/${enc(id)}`, { query: { log } });
  }

  /** `POST /v1/plugins/{id}/enable`, granting `permissions` (exactly what it asks for). */
  enablePlugin(id: string, permissions: PluginPermissions): Promise<PluginInfo> {
    return this.transport.json(`/v1/plugins/${enc(id)}/enable`, {
      method: "POST",
      body: { permissions },
    });
  }

  /** `POST /v1/plugins/{id}/disable`. */
  disablePlugin(id: string): Promise<PluginInfo> {
    return this.transport.json(`/v1/plugins/${enc(id)}/disable`, { method: "POST" });
  }

  /** `GET /v1/themes`: theme files and enabled plugins' themes. */
  themes(): Promise<Record<string, unknown>[]> {
    return this.transport.json("/v1/themes");
  }

  /** `GET /v1/hooks`: the laptop's `~/.dock/hooks.json`. */
  hooks(): Promise<HooksState> {
    return this.transport.json("/v1/hooks");
  }

  /** `PUT /v1/hooks`: replaces the laptop's hooks; announces `hooks.changed`. */
  putHooks(hooks: HookConfig[]): Promise<HooksState> {
    return this.transport.json("/v1/hooks", { method: "PUT", body: { hooks } });
  }

  /** `GET /v1/queue`: the offline prompt queue, oldest first. */
  queue(): Promise<QueueItem[]> {
    return this.transport.json("/v1/queue");
  }

  /** `GET /v1/queue/{id}`. */
  queueItem(id: string): Promise<QueueItem> {
    return this.transport.json(`/v1/queue/${enc(id)}`);
  }

  /** `POST /v1/queue`: queues a prompt; an `id` already in the queue returns that item. */
  enqueue(body: QueueCreate): Promise<QueueItem> {
    return this.transport.json("/v1/queue", { body });
  }

  /** `PATCH /v1/queue/{id}`: a changed box, session or text puts the item back in line. */
  editQueued(id: string, body: QueueEdit): Promise<QueueItem> {
    return this.transport.json(`/v1/queue/${enc(id)}`, { method: "PATCH", body });
  }

  /** `POST /v1/queue/{id}/retry`: a failed item goes back to `queued`. */
  retryQueued(id: string): Promise<QueueItem> {
    return this.transport.json(`/v1/queue/${enc(id)}/retry`, { method: "POST" });
  }

  /** `POST /v1/queue/{id}/send`: sends now, without waiting for the agent's turn; 409 while the box is offline. */
  sendQueued(id: string): Promise<QueueItem> {
    return this.transport.json(`/v1/queue/${enc(id)}/send`, { method: "POST" });
  }

  /** `DELETE /v1/queue/{id}`: returns the discarded item; 409 while it is being sent. */
  removeQueued(id: string): Promise<QueueItem> {
    return this.transport.json(`/v1/queue/${enc(id)}`, { method: "DELETE" });
  }

  /** Closes the connection pool. */
  close(): void {
    this.transport.close();
  }
}
