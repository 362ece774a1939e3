/**
 * The typed client of the laptop agent's loopback API (spec 4.1), and the way to reach a box through
 * it: `AgentClient.box(name)` is a {@linkcode BoxClient} whose requests go through the agent's relay.
 *
 * @module
 */
import { BoxClient } from "./box.ts";
import { readNdjson, Transport } from "./http.ts";
import { PluginCalls } from "./plugin_calls.ts";
import type {
  AddSshProgress,
  AddSshRequest,
  AgentStatus,
  BoxAddLocal,
  BoxProgress,
  BoxSessions,
  BoxStatus,
  BroadcastRequest,
  BroadcastResult,
  DiscoveredMachine,
  DockEvent,
  EditorInfo,
  EditorOpen,
  EditorOpened,
  EventAnnounce,
  ForgottenBox,
  HookConfig,
  HooksState,
  InstalledKit,
  Kit,
  KitAddRequest,
  KitInstallation,
  KitPreview,
  KitSaveRequest,
  KitSummary,
  KitTarget,
  KitUpdate,
  NetworkPeer,
  Networks,
  PairRequest,
  PluginFnLink,
  PluginFnLinkRequest,
  QueueCreate,
  QueueEdit,
  QueueItem,
  SshConfigState,
  StreamLine,
  UpgradeStarted,
} from "./wire.ts";

const enc = encodeURIComponent;

/**
 * Typed access to the laptop agent: its own calls here, its plugins' from {@linkcode PluginCalls} (which
 * {@linkcode BoxClient} shares).
 */
export class AgentClient extends PluginCalls {
  readonly url: string;
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
    const url = options.url.replace(/\/+$/, "");
    // Shared by the box clients made here, so that the agent is started once.
    let started: Promise<void> | undefined;
    const start = options.whenUnreachable;
    const whenUnreachable = start && (() => started ??= start());
    super(new Transport({ ...options, url, whenUnreachable }));
    this.url = url;
    this.#whenUnreachable = whenUnreachable;
    this.#token = options.token;
    this.#origin = options.origin;
    this.#oneShotReads = options.oneShotReads;
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

  /**
   * `GET /v1/sessions`: every box's sessions in one read (or only `box`'s), each box's list read again
   * by the agent only when it may have changed.
   */
  sessions(options: { box?: string } = {}): Promise<BoxSessions[]> {
    return this.transport.json("/v1/sessions", { query: { box: options.box } });
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

  /** `POST /v1/plugins/{id}/fn-link`: a signed link (GET, once, ≤ 60 s) to its `fn` page, for a browser. */
  pluginFnLink(id: string, request: PluginFnLinkRequest = {}): Promise<PluginFnLink> {
    return this.transport.json(`/v1/plugins/${enc(id)}/fn-link`, { method: "POST", body: request });
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
