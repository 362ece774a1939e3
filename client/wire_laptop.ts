/**
 * Wire types of the laptop agent's API (spec 2.2, 3.1, 4.1): the offline queue, broadcasts, its boxes
 * and adding one, forwards, private-URL routes, app settings, task templates, the kit library, networks,
 * ssh config, editors and its own status.
 * Types and constant lists only, like every `wire_*.ts` module (`wire.ts` re-exports them all).
 *
 * @module
 */
import type { AgentState } from "./wire_events.ts";
import type { DockConfig, InstalledKit } from "./wire_locations.ts";
import type { Session } from "./wire_sessions.ts";

/**
 * State of an offline queue item (spec 3.1): `queued` (waiting for the box), `waiting` (the box is
 * back; waiting for the agent's turn to end), `sending`, `failed` (with `error`), `delivered`.
 */
export type QueueState = "queued" | "waiting" | "sending" | "failed" | "delivered";

/** An offline prompt queue entry (spec 2.2). */
export interface QueueItem {
  id: string;
  box: string;
  session: string;
  text: string;
  /** Press Enter after typing. */
  enter: boolean;
  /** Hold the prompt while the agent is mid-turn. */
  wait: boolean;
  state: QueueState;
  /** Why it failed; present with `failed`. */
  error?: string;
  created: string;
  /** Sends tried so far. */
  attempts?: number;
  last_attempt?: string;
  /** True while held behind an earlier failed prompt to the same session. */
  blocked?: boolean;
  /** Queue order; the list is oldest first. */
  seq: number;
}

/** Body of `POST /v1/queue`: the same `id` again returns the existing item. */
export interface QueueCreate {
  id?: string;
  box: string;
  session: string;
  text: string;
  /** @default {true} */
  wait?: boolean;
  /** @default {true} */
  enter?: boolean;
}

/** Body of `PATCH /v1/queue/{id}`: a change puts the item back in line. */
export interface QueueEdit {
  box?: string;
  session?: string;
  text?: string;
}

/**
 * Body of `POST /v1/broadcast`: one prompt to several sessions, `{{variables}}` (`session`, `worktree`,
 * `location`, `box`, `branch`) filled per session. Targets are `to` (`BOX/SESSION`), or every session
 * of the laptop's view that `where` matches.
 */
export interface BroadcastRequest {
  /** The broadcast's id: the same id again never types a prompt twice. @default {a new one} */
  id?: string;
  text: string;
  to?: string[];
  where?: BroadcastWhere;
  /** @default {true} */
  enter?: boolean;
  /** Put a prompt the box cannot take now (offline, a permission prompt) in the offline queue. @default {true} */
  queue?: boolean;
  /** Resolve the targets and fill the text, send nothing. @default {false} */
  dry_run?: boolean;
}

/** The filter of a broadcast over the laptop's view of sessions (all fields must match). */
export interface BroadcastWhere {
  state?: AgentState;
  box?: string;
  location?: string;
  agent?: string;
}

/** What a broadcast did for one session. */
export interface BroadcastTarget {
  box: string;
  session: string;
  /**
   * `sent`: typed now (or by an earlier try of the same id); `queued`: in the offline queue
   * (`queue_id`), typed once the box can take it; `skipped`: left alone (`reason`); `failed`: `error`.
   * `planned`: a dry run's target.
   */
  outcome: "sent" | "queued" | "skipped" | "failed" | "planned";
  /** Why it was queued, skipped or failed: `box_offline`, `waiting_permission`, `unconfirmed`, or an error code. */
  reason?: string;
  error?: string;
  queue_id?: string;
  /** The prompt as filled for this session (dry runs only). */
  text?: string;
}

/** Answer of `POST /v1/broadcast`. */
export interface BroadcastResult {
  id: string;
  targets: BroadcastTarget[];
}

/** Body of `POST /v1/boxes/add-local`. */
export interface BoxAddLocal {
  /** @default {"local"} */
  name?: string;
}

/** Body of `POST /v1/forwards`: the laptop's `local` port carried to `remote` on the box. */
export interface ForwardCreate {
  box: string;
  local: number;
  remote: number;
}

/** A private-URL route (`POST /v1/routes`): requests whose host matches `pattern` go to `box`'s `port`. */
export interface ProxyRoute {
  pattern: string;
  box: string;
  port: number;
}

/** A JSON value: an app settings document (`PUT /v1/app/{key}`) is any of these. */
export type JsonValue = null | boolean | number | string | JsonValue[] | { [key: string]: JsonValue };

/** Body of `POST /v1/boxes/pair` on the laptop. */
export interface PairRequest {
  /** The link `dockd pair` printed. */
  link: string;
  /** The name for the box on this laptop. @default {the box's own name} */
  name?: string;
  /**
   * A network of the laptop's (`tailscale`) to dial the box through: the link's host is looked up among
   * its machines (by name, DNS name or address) and the box dialled at that machine's network address.
   */
  network?: string;
}

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

/**
 * One box's sessions as `GET /v1/sessions` answers them (a route of ours: every box's in one read), from
 * the agent's copy, read again from the box only when it may have changed.
 */
export interface BoxSessions {
  /** The box's connection, as `GET /v1/status` reports it. */
  box: BoxStatus;
  /** Its sessions as last read: the last known while the box is offline or did not answer; [] if never read. */
  sessions: Session[];
  /** When they were read from the box (RFC 3339), null if never. */
  read: string | null;
  /** True when they may be out of date: the box is offline, or its last read failed. */
  stale: boolean;
  /** Why the last read of the box's list failed, null when it did not. */
  error: string | null;
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
