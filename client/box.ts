/**
 * The typed client of the box API (spec 4.2). The `dockd` CLI, the laptop agent, tests and user
 * scripts all use it; it is exported from `mod.ts`.
 *
 * @module
 */
import { DockError, TransportError } from "./errors.ts";
import { sleep } from "./timers.ts";
import { type Endpoint, readNdjson, Transport } from "./http.ts";
import type {
  AgentReport,
  AnswerResult,
  BoxInfo,
  Branch,
  Check,
  Commit,
  DockConfig,
  DockEvent,
  EnvFile,
  EventAnnounce,
  ExecRequest,
  ExecResult,
  FlowConfig,
  FlowRun,
  FlowsState,
  FlowTestRequest,
  FsListing,
  GuardFile,
  HookConfig,
  HooksState,
  InstalledKit,
  KeysResult,
  Kit,
  KitsOnBox,
  Laptop,
  Location,
  LocationClone,
  LocationConfig,
  LocationCreate,
  LocationNew,
  LocationScripts,
  PairCode,
  PairCodeRequest,
  PairRedeem,
  PairRedeemed,
  PermissionAnswer,
  PhoneDevice,
  PhonePairCode,
  PhoneSettings,
  PhoneState,
  PluginConfig,
  PluginConfigRequest,
  PluginFile,
  PluginInfo,
  PluginPermissions,
  PluginTestEvent,
  PluginTestEventResult,
  Port,
  PrCreate,
  PreviewOpen,
  PreviewRequest,
  PullRequest,
  PushResult,
  ReviewItem,
  Screen,
  SecretReport,
  SecretTestResult,
  Session,
  SessionCreate,
  Share,
  ShareRequest,
  SkillCopy,
  SkillsRequest,
  SkillsResult,
  Stats,
  StreamLine,
  SyncRequest,
  SyncResult,
  TaskRequest,
  TaskResult,
  Unit,
  UnitCreate,
  UpgradeStarted,
  WaitResult,
  Worktree,
  WorktreeCommits,
  WorktreeCreate,
  WorktreeDiff,
  WorktreeEnvironmentLayers,
  WorktreePorts,
  WorktreeService,
  WorktreeStatus,
  WorktreeUntracked,
} from "./wire.ts";

const enc = encodeURIComponent;

/** Typed access to one box's `/v1/` API. */
export class BoxClient {
  readonly transport: Transport;

  constructor(endpoint: Endpoint) {
    this.transport = new Transport(endpoint);
  }

  /** Closes the underlying connection pool. */
  close(): void {
    this.transport.close();
  }

  /**
   * `POST upgrade`: sends a package (`deno task package`) for the box to check, install and hand over
   * to; the daemon answers before it restarts (`GET info`'s `build` says when the new one serves).
   */
  upgrade(data: ReadableStream<Uint8Array> | Uint8Array<ArrayBuffer>): Promise<UpgradeStarted> {
    return this.transport.json("/v1/upgrade", { method: "POST", upload: { data, type: "application/gzip" } });
  }

  /** `GET info`. */
  info(): Promise<BoxInfo> {
    return this.transport.json("/v1/info");
  }

  /** `GET info`, failing after `ms` (a health check must not hang on a stuck box). */
  infoWithin(ms: number): Promise<BoxInfo> {
    return this.transport.json("/v1/info", { signal: AbortSignal.timeout(ms) });
  }

  /** `GET doctor`. */
  doctor(): Promise<Check[]> {
    return this.transport.json("/v1/doctor");
  }

  /** `GET stats`. */
  stats(): Promise<Stats> {
    return this.transport.json("/v1/stats");
  }

  /** `GET fs?path=P`. */
  fs(path?: string): Promise<FsListing> {
    return this.transport.json("/v1/fs", { query: { path } });
  }

  /** `GET locations`. */
  locations(): Promise<Location[]> {
    return this.transport.json("/v1/locations");
  }

  /** `GET locations/{name}`. */
  location(name: string): Promise<Location> {
    return this.transport.json(`/v1/locations/${enc(name)}`);
  }

  /** `POST locations`. */
  addLocation(body: LocationCreate): Promise<Location> {
    return this.transport.json("/v1/locations", { body });
  }

  /** `DELETE locations/{name}`: forgets the location; its files stay. */
  removeLocation(name: string): Promise<Location> {
    return this.transport.json(`/v1/locations/${enc(name)}`, { method: "DELETE" });
  }

  /** `POST locations/clone`: streams git's progress as NDJSON, the last line carrying the location. */
  async *cloneLocation(body: LocationClone): AsyncGenerator<StreamLine & { location?: Location }> {
    const response = await this.transport.fetch("/v1/locations/clone", { body });
    yield* readNdjson(response.body!);
  }

  /** `POST locations/new`. */
  newLocation(body: LocationNew): Promise<Location> {
    return this.transport.json("/v1/locations/new", { body });
  }

  /** `GET locations/{name}/branches`. */
  branches(name: string): Promise<Branch[]> {
    return this.transport.json(`/v1/locations/${enc(name)}/branches`);
  }

  /** `PUT locations/{name}/scripts`. */
  setScripts(name: string, body: LocationScripts): Promise<LocationConfig> {
    return this.transport.json(`/v1/locations/${enc(name)}/scripts`, { method: "PUT", body });
  }

  /**
   * `POST secrets/report` (the box's own socket only): each secret of a worktree's environment,
   * resolved or why not; never a value.
   */
  secretReport(location: string): Promise<SecretReport> {
    return this.transport.json("/v1/secrets/report", { body: { location } });
  }

  /**
   * `POST secrets/environment` (the box's own socket only): the layers of a worktree's environment
   * (`LOCATION` or `LOCATION/WORKTREE`), secret references unresolved.
   */
  secretEnvironment(location: string): Promise<WorktreeEnvironmentLayers> {
    return this.transport.json("/v1/secrets/environment", { body: { location } });
  }

  /** `GET units`: the box's own long-running processes. */
  units(): Promise<Unit[]> {
    return this.transport.json("/v1/units");
  }

  /** `GET units/{name}`. */
  unit(name: string): Promise<Unit> {
    return this.transport.json(`/v1/units/${enc(name)}`);
  }

  /** `POST units`: defines a unit and starts it. */
  createUnit(body: UnitCreate): Promise<Unit> {
    return this.transport.json("/v1/units", { body });
  }

  /** `POST units/{name}/start|stop|restart`. */
  unitAction(name: string, action: "start" | "stop" | "restart"): Promise<Unit> {
    return this.transport.json(`/v1/units/${enc(name)}/${action}`, { method: "POST" });
  }

  /** `DELETE units/{name}`: stops it and forgets it. */
  removeUnit(name: string): Promise<Unit> {
    return this.transport.json(`/v1/units/${enc(name)}`, { method: "DELETE" });
  }

  /** `GET units/{name}/log`: its newest lines, then (with `follow`) what it writes next. */
  async *unitLog(
    name: string,
    options: { tail?: number; follow?: boolean; signal?: AbortSignal } = {},
  ): AsyncGenerator<StreamLine> {
    const response = await this.transport.fetch(`/v1/units/${enc(name)}/log`, {
      query: { tail: options.tail, follow: options.follow ? 1 : undefined },
      signal: options.signal,
    });
    try {
      yield* readNdjson<StreamLine>(response.body!);
    } catch (error) {
      if (!options.signal?.aborted) throw error;
    }
  }

  /** `GET shares`: the public shares of this box's worktrees. */
  shares(): Promise<Share[]> {
    return this.transport.json("/v1/shares");
  }

  /** `POST shares`: a public URL for a worktree's port, through the box's tunnel CLI. */
  share(body: ShareRequest): Promise<Share> {
    return this.transport.json("/v1/shares", { body });
  }

  /** `DELETE shares/{id}`: ends a share. */
  unshare(id: string): Promise<Share> {
    return this.transport.json(`/v1/shares/${enc(id)}`, { method: "DELETE" });
  }

  /** `GET review`: worktrees with work to review; `all` includes those whose agents still work. */
  review(options: { all?: boolean; location?: string } = {}): Promise<ReviewItem[]> {
    return this.transport.json("/v1/review", {
      query: { all: options.all ? 1 : undefined, location: options.location },
    });
  }

  /** `POST preview`: announces `preview.open` for a worktree's dev server; answers its private URL. */
  preview(body: PreviewRequest): Promise<PreviewOpen> {
    return this.transport.json("/v1/preview", { body });
  }

  /** `GET kits`: the kits applied on the box, and each location's `origin` slug. */
  kits(options: { tools?: string[] } = {}): Promise<KitsOnBox> {
    return this.transport.json("/v1/kits", { query: { tools: options.tools?.join(",") } });
  }

  /** `PUT locations/{name}/kit`: applies a kit (its `kit.json`, files inline) to a location. */
  applyKit(location: string, kit: Kit): Promise<InstalledKit> {
    return this.transport.json(`/v1/locations/${enc(location)}/kit`, { method: "PUT", body: kit });
  }

  /** `DELETE locations/{name}/kit`: takes a location's kit off, its files with it. */
  removeKit(location: string): Promise<InstalledKit> {
    return this.transport.json(`/v1/locations/${enc(location)}/kit`, { method: "DELETE" });
  }

  /** `GET locations/{name}/config`. */
  config(name: string): Promise<LocationConfig> {
    return this.transport.json(`/v1/locations/${enc(name)}/config`);
  }

  /** `PUT locations/{name}/config` with the box's own layer. */
  putConfig(name: string, local: DockConfig | null): Promise<LocationConfig> {
    return this.transport.json(`/v1/locations/${enc(name)}/config`, { method: "PUT", body: { local } });
  }

  /** `GET worktrees?location=L`: git status of every worktree. */
  worktreeStatus(location?: string): Promise<WorktreeStatus[]> {
    return this.transport.json("/v1/worktrees", { query: { location } });
  }

  /** `POST locations/{name}/worktrees`. */
  createWorktree(location: string, body: WorktreeCreate): Promise<Worktree> {
    return this.transport.json(`/v1/locations/${enc(location)}/worktrees`, { body });
  }

  /** `GET locations/{name}/worktrees/{wt}`. */
  worktree(location: string, name: string): Promise<Worktree> {
    return this.transport.json(`/v1/locations/${enc(location)}/worktrees/${enc(name)}`);
  }

  /** `DELETE locations/{name}/worktrees/{wt}[?force=1]`. */
  removeWorktree(location: string, name: string, options: { force?: boolean } = {}): Promise<Worktree> {
    return this.transport.json(`/v1/locations/${enc(location)}/worktrees/${enc(name)}`, {
      method: "DELETE",
      query: { force: options.force ? 1 : undefined },
    });
  }

  /** `GET …/worktrees/{wt}/setup/log`: the setup output, followed live with `follow`. */
  async *setupLog(
    location: string,
    name: string,
    options: { follow?: boolean; signal?: AbortSignal } = {},
  ): AsyncGenerator<StreamLine> {
    const response = await this.transport.fetch(
      `/v1/locations/${enc(location)}/worktrees/${enc(name)}/setup/log`,
      { query: { follow: options.follow ? 1 : undefined }, signal: options.signal },
    );
    yield* readNdjson(response.body!);
  }

  /** `GET …/worktrees/{wt}/log?limit=N`. */
  log(location: string, name: string, limit?: number): Promise<Commit[]> {
    return this.transport.json(`/v1/locations/${enc(location)}/worktrees/${enc(name)}/log`, {
      query: { limit },
    });
  }

  /** `POST …/worktrees/{wt}/sync`. */
  sync(location: string, name: string, body: SyncRequest = {}): Promise<SyncResult> {
    return this.transport.json(`/v1/locations/${enc(location)}/worktrees/${enc(name)}/sync`, { body });
  }

  /** `GET …/worktrees/{wt}/diff`: the worktree against where it left its base, a page of patches. */
  diff(
    location: string,
    name: string,
    options: { offset?: number; maxBytes?: number; path?: string } = {},
  ): Promise<WorktreeDiff> {
    return this.transport.json(`/v1/locations/${enc(location)}/worktrees/${enc(name)}/diff`, {
      query: { offset: options.offset, max_bytes: options.maxBytes, path: options.path },
    });
  }

  /** `GET …/worktrees/{wt}/commits`: commits ahead of its base and of its upstream. */
  worktreeCommits(location: string, name: string): Promise<WorktreeCommits> {
    return this.transport.json(`/v1/locations/${enc(location)}/worktrees/${enc(name)}/commits`);
  }

  /** `GET …/worktrees/{wt}/untracked`. */
  untracked(location: string, name: string): Promise<WorktreeUntracked> {
    return this.transport.json(`/v1/locations/${enc(location)}/worktrees/${enc(name)}/untracked`);
  }

  /** `POST …/worktrees/{wt}/push`: pushes its branch to origin and sets the upstream. */
  push(location: string, name: string): Promise<PushResult> {
    return this.transport.json(`/v1/locations/${enc(location)}/worktrees/${enc(name)}/push`, { body: {} });
  }

  /** `POST …/worktrees/{wt}/pr`: a pull request made with the box's `gh` (422 `gh_not_found` without). */
  createPr(location: string, name: string, body: PrCreate = {}): Promise<PullRequest> {
    return this.transport.json(`/v1/locations/${enc(location)}/worktrees/${enc(name)}/pr`, { body });
  }

  /** `GET …/worktrees/{wt}/pr`: the branch's pull request (404 `no_pr` when none). */
  pullRequest(location: string, name: string): Promise<PullRequest> {
    return this.transport.json(`/v1/locations/${enc(location)}/worktrees/${enc(name)}/pr`);
  }

  /** `POST exec`: runs to completion. */
  exec(body: ExecRequest): Promise<ExecResult> {
    return this.transport.json("/v1/exec", { body });
  }

  /** `POST exec?stream=1`: output lines as they come, then `{ done, exit_code }`. */
  async *execStream(body: ExecRequest, signal?: AbortSignal): AsyncGenerator<StreamLine> {
    const response = await this.transport.fetch("/v1/exec", { body, query: { stream: 1 }, signal });
    yield* readNdjson(response.body!);
  }

  /** `GET events` (SSE): yields events from `after` (an event id) on, until aborted. */
  events(options: { after?: number; signal?: AbortSignal } = {}): AsyncGenerator<DockEvent> {
    return this.transport.stream<DockEvent>("/v1/events", options);
  }

  /** `POST events`: announces an event on the box, or reports an agent's state (what `dock hook` sends). */
  emit(body: EventAnnounce | AgentReport): Promise<DockEvent> {
    return this.transport.json("/v1/events", { body });
  }

  /** `GET env`. */
  env(): Promise<EnvFile> {
    return this.transport.json("/v1/env");
  }

  /** `PUT env`. */
  putEnv(body: EnvFile): Promise<EnvFile> {
    return this.transport.json("/v1/env", { method: "PUT", body });
  }

  /** `POST secrets/test`. */
  testSecret(ref: string): Promise<SecretTestResult> {
    return this.transport.json("/v1/secrets/test", { body: { ref } });
  }

  /** `GET …/worktrees/{wt}/services`. */
  services(location: string, worktree: string): Promise<WorktreeService[]> {
    return this.transport.json(`/v1/locations/${enc(location)}/worktrees/${enc(worktree)}/services`);
  }

  /** `POST …/services/{service}/start|stop|restart`. */
  serviceAction(
    location: string,
    worktree: string,
    service: string,
    action: "start" | "stop" | "restart",
  ): Promise<WorktreeService> {
    return this.transport.json(
      `/v1/locations/${enc(location)}/worktrees/${enc(worktree)}/services/${enc(service)}/${action}`,
      { method: "POST" },
    );
  }

  /** `GET …/services/{service}/log`: the newest `tail` lines, then new output with `follow`. */
  async *serviceLog(
    location: string,
    worktree: string,
    service: string,
    options: { tail?: number; follow?: boolean; signal?: AbortSignal } = {},
  ): AsyncGenerator<StreamLine> {
    const response = await this.transport.fetch(
      `/v1/locations/${enc(location)}/worktrees/${enc(worktree)}/services/${enc(service)}/log`,
      { query: { tail: options.tail, follow: options.follow ? 1 : undefined }, signal: options.signal },
    );
    try {
      yield* readNdjson<StreamLine>(response.body!);
    } catch (error) {
      if (!options.signal?.aborted) throw error;
    }
  }

  /** `POST …/worktrees/{wt}/pause` or `…/resume`. */
  pause(location: string, worktree: string, action: "pause" | "resume" = "pause"): Promise<Worktree> {
    return this.transport.json(`/v1/locations/${enc(location)}/worktrees/${enc(worktree)}/${action}`, {
      method: "POST",
    });
  }

  /** `GET ports`: every listening TCP port, attributed to worktrees. */
  ports(): Promise<Port[]> {
    return this.transport.json("/v1/ports");
  }

  /** `GET services`: listening ports by worktree. */
  listeningServices(): Promise<WorktreePorts[]> {
    return this.transport.json("/v1/services");
  }

  /** `GET guard`. */
  guard(): Promise<GuardFile> {
    return this.transport.json("/v1/guard");
  }

  /** `PUT guard`. */
  putGuard(body: GuardFile): Promise<GuardFile> {
    return this.transport.json("/v1/guard", { method: "PUT", body });
  }

  /** `GET hooks`: the box's `~/.dock/hooks.json`. */
  /** `GET plugins`: the box's plugins. */
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

  hooks(): Promise<HooksState> {
    return this.transport.json("/v1/hooks");
  }

  /** `PUT hooks` (passes the box's `before:config.change` gates first). */
  putHooks(hooks: HookConfig[]): Promise<HooksState> {
    return this.transport.json("/v1/hooks", { method: "PUT", body: { hooks } });
  }

  /** `GET flows`: every flow on the box with its scope, source and whether it is overridden. */
  flows(): Promise<FlowsState> {
    return this.transport.json("/v1/flows");
  }

  /** `PUT flows`: replaces the box's `flows.json` (passes its `before:config.change` gates first). */
  putFlows(flows: FlowConfig[]): Promise<FlowsState> {
    return this.transport.json("/v1/flows", { method: "PUT", body: { flows } });
  }

  /** `GET flows/runs`: recent runs, newest first (default 50, at most 200). */
  flowRuns(options: { flow?: string; limit?: number } = {}): Promise<FlowRun[]> {
    return this.transport.json("/v1/flows/runs", { query: { flow: options.flow, limit: options.limit } });
  }

  /** `POST flows/{id}/test`: runs the flow for real as if triggered in `scope`; answers the finished run. */
  testFlow(id: string, request: FlowTestRequest = {}): Promise<FlowRun> {
    return this.transport.json(`/v1/flows/${enc(id)}/test`, { method: "POST", body: request });
  }

  /** `GET sessions`. */
  sessions(): Promise<Session[]> {
    return this.transport.json("/v1/sessions");
  }

  /** `GET sessions/{name}`. */
  session(name: string): Promise<Session> {
    return this.transport.json(`/v1/sessions/${enc(name)}`);
  }

  /** `POST sessions`. */
  createSession(body: SessionCreate): Promise<Session> {
    return this.transport.json("/v1/sessions", { body });
  }

  /** `DELETE sessions/{name}`: ends the session and everything it started. */
  removeSession(name: string): Promise<Session> {
    return this.transport.json(`/v1/sessions/${enc(name)}`, { method: "DELETE" });
  }

  /** `GET sessions/{name}/screen?history=N`. */
  screen(name: string, history?: number): Promise<Screen> {
    return this.transport.json(`/v1/sessions/${enc(name)}/screen`, { query: { history } });
  }

  /**
   * `POST sessions/{name}/send`: pastes the text as one block, then Enter unless `enter` is false.
   * With `key`, a repeat of the same key answers the first outcome and never types again. With
   * `unlessWaiting: "permission"`, an agent waiting on a permission prompt refuses it (409
   * `permission_prompt`), checked by the box in the same step as the typing. A box older than that
   * field (which refuses it as unknown) is asked the old way: its session read just before the send.
   */
  async send(
    name: string,
    text: string,
    options: { enter?: boolean; key?: string; unlessWaiting?: "permission"; signal?: AbortSignal } = {},
  ): Promise<Session> {
    const post = (unlessWaiting?: "permission"): Promise<Session> =>
      this.transport.json(`/v1/sessions/${enc(name)}/send`, {
        body: { text, enter: options.enter, key: options.key, unless_waiting: unlessWaiting },
        signal: options.signal,
      });
    try {
      return await post(options.unlessWaiting);
    } catch (error) {
      const older = options.unlessWaiting && error instanceof DockError && error.status === 400 &&
        error.detail?.field === "unless_waiting";
      if (!older) throw error;
    }
    const now = await this.session(name);
    if (now.agent_state === "waiting" && now.reason === options.unlessWaiting) {
      throw new DockError(
        "permission_prompt",
        `session '${name}' waits on a permission prompt: the text would answer it, so it was not typed`,
        { status: 409, detail: { session: name, reason: options.unlessWaiting } },
      );
    }
    return await post();
  }

  /**
   * Sends a prompt exactly once over a path that may fail midway: with a fresh idempotency key, and
   * after an answer that leaves the outcome unknown (502 from the relay: the connection failed after
   * the request went out; or a connection that failed under this client) it asks again with the same
   * key, backing off, until the box answers. The box then replays the first outcome and never types
   * twice. A first answer of 503 from the relay (never reached the box) is thrown at once: nothing was
   * typed, so the caller may queue the prompt. After `retries` unanswered repeats it throws
   * `send_unconfirmed` (502) with the key, which can be sent again safely.
   */
  async sendOnce(
    name: string,
    text: string,
    options: {
      enter?: boolean;
      key?: string;
      unlessWaiting?: "permission";
      signal?: AbortSignal;
      retries?: number;
      delayMs?: number;
    } = {},
  ): Promise<Session> {
    const key = options.key ?? `once-${crypto.randomUUID()}`;
    const retries = options.retries ?? 5;
    let delay = options.delayMs ?? 500;
    let uncertain = false;
    for (let attempt = 1;; attempt++) {
      try {
        return await this.send(name, text, {
          enter: options.enter,
          key,
          unlessWaiting: options.unlessWaiting,
          signal: options.signal,
        });
      } catch (error) {
        if (!(error instanceof DockError) || options.signal?.aborted) throw error;
        // A connection that never carried the request (refused, no socket) typed nothing; any other
        // failure of this client's connection may have come after the request went out.
        const cutShort = error instanceof TransportError && !error.neverSent;
        const unknown = error.status === 502 || cutShort || (uncertain && error.status === 503);
        if (!unknown) throw error;
        uncertain = true;
        if (attempt > retries) {
          throw new DockError(
            "send_unconfirmed",
            `the box did not confirm the prompt after ${attempt} tries (${error.message}); it may have been ` +
              `typed. Sending it again with key ${key} never types it twice`,
            { status: 502, detail: { key } },
          );
        }
        await sleep(delay, options.signal);
        if (options.signal?.aborted) throw error;
        delay = Math.min(delay * 2, 5000);
      }
    }
  }

  /**
   * `POST sessions/{name}/keys`: types keystrokes (each entry one character, or a named key such as
   * `Enter` or `Escape`), never a paste. Typed once even over a path that fails midway: with a fresh
   * idempotency key (or `key`), asked again with it after an answer that leaves the outcome unknown, as
   * {@linkcode BoxClient.sendOnce}. Answers when the box says they were typed.
   */
  keys(
    name: string,
    keys: string[],
    options: { key?: string; signal?: AbortSignal; retries?: number; delayMs?: number } = {},
  ): Promise<KeysResult> {
    return once(
      "keys",
      options,
      (key) =>
        this.transport.json(`/v1/sessions/${enc(name)}/keys`, {
          body: { keys, key },
          signal: options.signal,
        }),
    );
  }

  /**
   * `POST sessions/{name}/answer`: answers the agent's permission prompt `yes`, `no` or `always` with the
   * keys its tool takes (the box's table); 409 `not_waiting_permission` when it waits on none. Typed once,
   * as {@linkcode BoxClient.keys}.
   */
  answer(
    name: string,
    answer: PermissionAnswer,
    options: { key?: string; signal?: AbortSignal; retries?: number; delayMs?: number } = {},
  ): Promise<AnswerResult> {
    return once("answer", options, (key) =>
      this.transport.json(`/v1/sessions/${enc(name)}/answer`, {
        body: { answer, key },
        signal: options.signal,
      }));
  }

  /** `GET sessions/{name}/wait`: until one of `states` (after `after`), the program's exit, or the timeout. */
  wait(
    name: string,
    options: { states?: string[]; after?: string; timeout?: string; signal?: AbortSignal } = {},
  ): Promise<WaitResult> {
    return this.transport.json(`/v1/sessions/${enc(name)}/wait`, {
      query: { for: options.states?.join(","), after: options.after, timeout: options.timeout },
      signal: options.signal,
    });
  }

  /** `POST tasks`: a new worktree with an agent running in it. */
  createTask(body: TaskRequest): Promise<TaskResult> {
    return this.transport.json("/v1/tasks", { body });
  }

  /** `POST pair/code` (the box's own socket only): a one-time link that pairs a laptop, for ten minutes. */
  pairCode(body: PairCodeRequest = {}): Promise<PairCode> {
    return this.transport.json("/v1/pair/code", { body });
  }

  /** `GET laptops` (the box's own socket only): the laptops paired with the box. */
  laptops(): Promise<Laptop[]> {
    return this.transport.json("/v1/laptops");
  }

  /** `DELETE laptops/{id}` (the box's own socket only): unpairs a laptop and closes what it has open. */
  revokeLaptop(id: string): Promise<Laptop> {
    return this.transport.json(`/v1/laptops/${enc(id)}`, { method: "DELETE" });
  }

  /** `GET phone`: whether the phone companion is on, where it listens, and the paired phones. */
  phone(): Promise<PhoneState> {
    return this.transport.json("/v1/phone");
  }

  /** `PUT phone`: switches the phone companion on (listening at `listen`) or off. */
  setPhone(body: PhoneSettings): Promise<PhoneState> {
    return this.transport.json("/v1/phone", { method: "PUT", body });
  }

  /** `POST phone/code`: a one-time link that pairs a phone, for ten minutes. */
  phonePairCode(body: PairCodeRequest = {}): Promise<PhonePairCode> {
    return this.transport.json("/v1/phone/code", { body });
  }

  /** `DELETE phone/devices/{id}`: unpairs a phone and closes what it has open. */
  revokePhone(id: string): Promise<PhoneDevice> {
    return this.transport.json(`/v1/phone/devices/${enc(id)}`, { method: "DELETE" });
  }

  /** `POST pair` (the box's TLS listener, no credential): trades a one-time code for this laptop's credential. */
  redeemPairCode(body: PairRedeem, options: { signal?: AbortSignal } = {}): Promise<PairRedeemed> {
    return this.transport.json("/v1/pair", { body, signal: options.signal });
  }

  /** `DELETE pair` (the box's TLS listener, with the credential): unpairs the calling laptop. */
  unpair(options: { signal?: AbortSignal } = {}): Promise<Laptop> {
    return this.transport.json("/v1/pair", { method: "DELETE", signal: options.signal });
  }

  /** `GET skills[?location=L]`: every skill copy for the box's user (and that location's repository) and its state. */
  skills(options: { location?: string } = {}): Promise<SkillCopy[]> {
    return this.transport.json("/v1/skills", { query: { location: options.location } });
  }

  /** `POST skills/install`: after the `skills.install` gates; answers what changed. */
  installSkills(body: SkillsRequest = {}): Promise<SkillsResult> {
    return this.transport.json("/v1/skills/install", { body });
  }

  /** `POST skills/uninstall`: removes only dock's own copies; answers what changed. */
  uninstallSkills(body: SkillsRequest = {}): Promise<SkillsResult> {
    return this.transport.json("/v1/skills/uninstall", { body });
  }
}

/**
 * Makes a keyed call whose outcome may be lost on the way (`keys`, `answer`): with `options.key` or a
 * fresh one, asked again with the same key after an answer that leaves it unknown (502, a connection cut
 * after the request went out), backing off, until the box answers; the box replays the first outcome.
 */
async function once<T>(
  what: string,
  options: { key?: string; signal?: AbortSignal; retries?: number; delayMs?: number },
  call: (key: string) => Promise<T>,
): Promise<T> {
  const key = options.key ?? `${what}-${crypto.randomUUID()}`;
  const retries = options.retries ?? 5;
  let delay = options.delayMs ?? 500;
  let uncertain = false;
  for (let attempt = 1;; attempt++) {
    try {
      return await call(key);
    } catch (error) {
      if (!(error instanceof DockError) || options.signal?.aborted) throw error;
      const cutShort = error instanceof TransportError && !error.neverSent;
      const unknown = error.status === 502 || cutShort || (uncertain && error.status === 503);
      if (!unknown) throw error;
      uncertain = true;
      if (attempt > retries) {
        throw new DockError(
          "send_unconfirmed",
          `the box did not confirm the ${what} after ${attempt} tries (${error.message}); they may have been ` +
            `typed. Asking again with key ${key} never types them twice`,
          { status: 502, detail: { key } },
        );
      }
      await sleep(delay, options.signal);
      if (options.signal?.aborted) throw error;
      delay = Math.min(delay * 2, 5000);
    }
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
