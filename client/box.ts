/**
 * The typed client of the box API (spec 4.2). The `dockd` CLI, the laptop agent, tests and user
 * scripts all use it; it is exported from `mod.ts`.
 *
 * @module
 */
import { type Endpoint, readNdjson, Transport } from "./http.ts";
import { SessionCalls } from "./session_calls.ts";
import type {
  AgentReport,
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
  PhoneDevice,
  PhonePairCode,
  PhoneSettings,
  PhoneState,
  Port,
  PrCreate,
  PreviewOpen,
  PreviewRequest,
  PullRequest,
  PushResult,
  ReviewItem,
  SecretReport,
  SecretTestResult,
  Share,
  ShareRequest,
  SkillCopy,
  SkillsRequest,
  SkillsResult,
  Stats,
  StreamLine,
  SyncRequest,
  SyncResult,
  Unit,
  UnitCreate,
  UpgradeStarted,
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

/**
 * Typed access to one box's `/v1/` API: its own calls here, its sessions' from {@linkcode SessionCalls}, its
 * plugins' from {@linkcode PluginCalls} (which the laptop's {@linkcode AgentClient} shares).
 */
export class BoxClient extends SessionCalls {
  constructor(endpoint: Endpoint) {
    super(new Transport(endpoint));
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
