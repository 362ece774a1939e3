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
  BroadcastRequest,
  BroadcastResult,
  DockConfig,
  DockEvent,
  EventAnnounce,
  HookConfig,
  HooksState,
  InstalledKit,
  Kit,
  PairRequest,
  PluginConfig,
  PluginConfigRequest,
  PluginFile,
  PluginFnLink,
  PluginFnLinkRequest,
  PluginInfo,
  PluginPermissions,
  PluginTestEvent,
  PluginTestEventResult,
  QueueCreate,
  QueueEdit,
  QueueItem,
  StreamLine,
  UpgradeStarted,
} from "./wire.ts";

const enc = encodeURIComponent;

/** A box's connection as the agent reports it. */
export interface BoxStatus {
  name: string;
  kind: "socket" | "tls";
  /** How the agent reaches it: the daemon's socket, TLS to its port, or TLS through an SSH connection. */
  transport: "socket" | "tls" | "ssh";
  address: string;
  online: boolean;
  since: string | null;
  error: string | null;
  latency_ms: number | null;
  build: string | null;
  /** Whether the box runs an older dock than this laptop's agent (`isBehind`): `dock upgrade` would send it one. */
  behind: boolean;
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
  /**
   * How the agent reaches the box: `tls` dials its port, `ssh` forwards to it through one SSH connection
   * (no inbound port on the box). @default {tls when the box's port answers from here, else ssh}
   */
  via?: "tls" | "ssh";
  /**
   * Where the box's daemon listens for laptops (its `DOCK_LISTEN`): `HOST:PORT`, or `off`. Given, the
   * daemon is restarted with it. @default {what the box has: 0.0.0.0:1379 at first}
   */
  listen?: string;
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

/** A kit of the laptop's library, as `GET /v1/kits` lists it (its files by name only). */
export interface KitSummary {
  id: string;
  name: string;
  version: string | null;
  description?: string;
  match?: { slug?: string };
  files: string[];
  /** Why its `kit.json` no longer loads. */
  error?: string;
}

/** Body of `POST /v1/kits/add`: exactly one source. */
export interface KitAddRequest {
  /** A `kit.json` on this laptop. */
  file?: string;
  /** A folder holding `kit.json`; its other files become the kit's files. */
  folder?: string;
  /** A git repository this laptop can clone, holding `kit.json` at its root. */
  git?: string;
}

/** Body of `POST /v1/kits/{id}/apply`, `POST /v1/kits/preview` (with `id`) and `POST /v1/kits/remove`. */
export interface KitTarget {
  box: string;
  location: string;
}

/** Body of `POST /v1/kits/save`: a location's effective config as a new kit. */
export interface KitSaveRequest extends KitTarget {
  id: string;
  name?: string;
  version?: string;
}

/** `POST /v1/kits/preview`: what applying would do, done nowhere. */
export interface KitPreview {
  kit: KitSummary;
  box: string;
  location: string;
  /** The kit the location runs now, which applying replaces. */
  replaces: { id: string; version: string | null } | null;
  layers: {
    repo: DockConfig | null;
    kit_before: DockConfig | null;
    kit_after: DockConfig | null;
    local: DockConfig | null;
  };
  effective: { before: DockConfig; after: DockConfig };
  /** Top-level fields of the effective config that change. */
  changed: string[];
  files: string[];
  /** Missing `requires` tools, a kit replaced. */
  warnings: string[];
}

/** `GET /v1/kits/installed`: a location running a kit, on which box, and whether the library has newer. */
export interface KitInstallation extends InstalledKit {
  box: string;
  /** The library's version of it (null when the library has none, or no version). */
  library: string | null;
  older: boolean;
}

/** `POST /v1/kits/{id}/update`. */
export interface KitUpdate {
  updated: InstalledKit[];
  failed: { box: string; location: string; error: string }[];
}

/** A network the laptop has joined (`GET /v1/networks`). */
export interface NetworkInfo {
  /** `tailscale`. */
  name: string;
  joined: boolean;
  logged_in: boolean;
  /** The network's own word for its state (tailscale's `BackendState`). */
  state: string;
  tailnet?: string;
  /** This laptop's name on it. */
  self?: string;
}

/** `GET /v1/networks`: the networks, or none and how to get one. */
export interface Networks {
  networks: NetworkInfo[];
  hint?: string;
}

/** A machine of a network (`GET /v1/networks/{name}/peers`). */
export interface NetworkPeer {
  name: string;
  dns: string | null;
  addresses: string[];
  os: string | null;
  online: boolean;
}

/** `GET /v1/discover?network=`: a machine that could be a box. */
export interface DiscoveredMachine {
  name: string;
  address: string;
  dns: string | null;
  /** Something answers on dockd's port (1379). */
  dockd: boolean;
  /** Something answers on SSH's port: `dock add ssh` can make it a box. */
  ssh: boolean;
  /** The box it is already, by name. */
  box: string | null;
}

/** A host dock writes into `~/.ssh/config.d/dock` for a box. */
export interface SshHost {
  /** `dock-<box>`. */
  host: string;
  box: string;
  hostname: string;
  user?: string;
  port?: number;
  /** The private key `dock add ssh --identity` used: written as `IdentityFile` (`IdentitiesOnly yes`). */
  identity?: string;
}

/** `GET /v1/ssh-config` (and `POST`, with what it `changed`). */
export interface SshConfigState {
  file: string;
  /** Whether `~/.ssh/config` includes it. */
  included: boolean;
  hosts: SshHost[];
  changed?: string[];
}

/** An editor installed on the laptop (`GET /v1/editors`). */
export interface EditorInfo {
  id: string;
  name: string;
  command: string;
}

/** Body of `POST /v1/editors/open`: a folder (location, worktree or absolute path) or a file in it. */
export interface EditorOpen {
  editor: string;
  box: string;
  location?: string;
  worktree?: string;
  path?: string;
  file?: string;
  line?: number;
  col?: number;
}

/** The answer of `POST /v1/editors/open`: the command run. */
export interface EditorOpened {
  editor: string;
  command: string[];
}

/** `GET /v1/status`. */
export interface AgentStatus {
  /** The agent's own build (`version+commit`, as a box's `GET info` says its). */
  build: string;
  boxes: BoxStatus[];
  forwards: unknown[];
  routes: { pattern: string; box: string; port: number }[];
  proxy: { enabled: boolean; port?: number; error?: string };
  /** The agent's process (absent from agents before issue 33). */
  agent?: AgentProcess;
}

/** The agent's process, as `GET /v1/status` reports it (`dock agent status|stop|restart`). */
export interface AgentProcess {
  /** What `dock agent stop` signals. */
  pid: number;
  started: string;
  /** The settings the agent read at its start (null: unset): a change after it needs a restart. */
  env: Record<string, string | null>;
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

  /** `PUT /v1/app/{key}`: replaces an app settings document; answers it as stored. */
  putAppDocument<T>(key: string, value: T): Promise<T> {
    return this.transport.json(`/v1/app/${encodeURIComponent(key)}`, { method: "PUT", body: value });
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

  /** `POST /v1/setup/port80[?remove=1]`: streams its steps. */
  async *setupPort80(options: { remove?: boolean; signal?: AbortSignal } = {}): AsyncGenerator<StreamLine> {
    const response = await this.transport.fetch("/v1/setup/port80", {
      method: "POST",
      query: { remove: options.remove ? 1 : undefined },
      signal: options.signal,
    });
    yield* readNdjson<StreamLine>(response.body!);
  }

  /**
   * `POST /v1/upgrade`: installs a package (`deno task package`) as this laptop's dock; the agent stops
   * once it answered and the next request starts the new one.
   */
  upgradeSelf(data: ReadableStream<Uint8Array> | Uint8Array<ArrayBuffer>): Promise<UpgradeStarted> {
    return this.transport.json("/v1/upgrade", { method: "POST", upload: { data, type: "application/gzip" } });
  }

  /** `GET /v1/networks`. */
  networks(): Promise<Networks> {
    return this.transport.json("/v1/networks");
  }

  /** `GET /v1/networks/{name}/peers`. */
  networkPeers(name: string): Promise<NetworkPeer[]> {
    return this.transport.json(`/v1/networks/${enc(name)}/peers`);
  }

  /** `POST /v1/networks/{name}/login`: the network's login, streamed (the URL to open is a line). */
  async *networkLogin(name: string, signal?: AbortSignal): AsyncGenerator<StreamLine> {
    const response = await this.transport.fetch(`/v1/networks/${enc(name)}/login`, {
      method: "POST",
      signal,
    });
    yield* readNdjson<StreamLine>(response.body!);
  }

  /** `GET /v1/discover?network=`: machines that could be boxes. */
  discover(network = "tailscale"): Promise<DiscoveredMachine[]> {
    return this.transport.json("/v1/discover", { query: { network } });
  }

  /** `GET /v1/editors`: the editors installed on this laptop. */
  editors(): Promise<EditorInfo[]> {
    return this.transport.json("/v1/editors");
  }

  /** `POST /v1/editors/open`: opens a box's folder or file in an editor's remote SSH mode. */
  openEditor(body: EditorOpen): Promise<EditorOpened> {
    return this.transport.json("/v1/editors/open", { body });
  }

  /** `GET /v1/ssh-config`: the hosts dock manages for its boxes. */
  sshConfig(): Promise<SshConfigState> {
    return this.transport.json("/v1/ssh-config");
  }

  /** `POST /v1/ssh-config`: writes them to `~/.ssh/config.d/dock` and includes that file. */
  writeSshConfig(): Promise<SshConfigState> {
    return this.transport.json("/v1/ssh-config", { method: "POST" });
  }

  /** `GET /v1/kits`: the kits library. */
  kits(): Promise<KitSummary[]> {
    return this.transport.json("/v1/kits");
  }

  /** `GET /v1/kits/installed`: every location running a kit, older versions flagged. */
  kitsInstalled(): Promise<KitInstallation[]> {
    return this.transport.json("/v1/kits/installed");
  }

  /** `GET /v1/kits/{id}`: one kit whole, with the locations its `match.slug` selects. */
  kit(id: string): Promise<Kit & { matching: KitTarget[] }> {
    return this.transport.json(`/v1/kits/${enc(id)}`);
  }

  /** `POST /v1/kits/add`. */
  addKit(body: KitAddRequest): Promise<KitSummary> {
    return this.transport.json("/v1/kits/add", { body });
  }

  /** `POST /v1/kits/preview`. */
  previewKit(id: string, target: KitTarget): Promise<KitPreview> {
    return this.transport.json("/v1/kits/preview", { body: { id, ...target } });
  }

  /** `POST /v1/kits/{id}/apply`. */
  applyKit(id: string, target: KitTarget): Promise<InstalledKit> {
    return this.transport.json(`/v1/kits/${enc(id)}/apply`, { body: target });
  }

  /** `POST /v1/kits/{id}/update`: applied again wherever an older version runs. */
  updateKit(id: string): Promise<KitUpdate> {
    return this.transport.json(`/v1/kits/${enc(id)}/update`, { method: "POST" });
  }

  /** `POST /v1/kits/remove`: takes a location's kit off. */
  removeKit(target: KitTarget): Promise<InstalledKit> {
    return this.transport.json("/v1/kits/remove", { body: target });
  }

  /** `POST /v1/kits/save`: a location's config as a new kit of the library. */
  saveKit(body: KitSaveRequest): Promise<KitSummary> {
    return this.transport.json("/v1/kits/save", { body });
  }

  /** `DELETE /v1/kits/{id}`: out of the library (locations running it keep it). */
  deleteKit(id: string): Promise<KitSummary> {
    return this.transport.json(`/v1/kits/${enc(id)}`, { method: "DELETE" });
  }

  /**
   * `POST /v1/boxes/pair`: pairs the box a `dockd pair` link names, as `name` (default: its own name),
   * dialled through `network` (its machine of the link's host) when given.
   */
  pairBox(link: string, name?: string, network?: string): Promise<BoxStatus> {
    const body: PairRequest = { link, name, network };
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

  /** `POST /v1/plugins/{id}/fn-link`: a signed link (GET, once, ≤ 60 s) to its `fn` page, for a browser. */
  pluginFnLink(id: string, request: PluginFnLinkRequest = {}): Promise<PluginFnLink> {
    return this.transport.json(`/v1/plugins/${enc(id)}/fn-link`, { method: "POST", body: request });
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

  /**
   * `POST /v1/broadcast`: one prompt to several sessions, `{{variables}}` filled per session; answers
   * each target's outcome. Sent again with the same `id`, no session is typed into twice.
   */
  broadcast(body: BroadcastRequest, signal?: AbortSignal): Promise<BroadcastResult> {
    return this.transport.json("/v1/broadcast", { body, signal });
  }

  /** Closes the connection pool. */
  close(): void {
    this.transport.close();
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
