/**
 * The boxes this laptop knows and the agent's connection to each: the registry (persisted), health
 * checks with reconnect backoff and jitter, `box.*` events on changes, and the raw HTTP access the
 * relay and the event merge use. A box is reached over its daemon's unix socket (`dock add local`)
 * or, once paired, over TLS pinned to its CA (`dock pair`, see `pairing.ts`).
 *
 * A TLS box's CA and this laptop's credential for it live in the agent's database (`<state>/client/`,
 * a 0700 folder) and never leave the agent: records and statuses the API returns do not carry them.
 *
 * The relay reaches a box over kept connections of its own HTTP/1.1 client (`box_http.ts`), whose
 * retry rules never send a request twice unless it is idempotent or provably never left. Deno's `fetch`
 * was not used for it, from what was measured (Deno 2.9.6): a pooled `fetch` resends a request of any
 * method on a reused connection that ended before answering (a POST that had reached a killed daemon
 * ran twice over the socket), and an unpooled one paid a fresh connection per request (~0.5 ms of the
 * relay's +1.0–1.2 ms p50 over the socket; over TLS p50 4–7 ms instead of 2.2–2.7 ms, p99 ~90 ms from
 * delayed-ACK stalls in the handshake). With Deno's client about one in 25 fresh unix-socket
 * connections stalled 5 s (not with curl): kept connections make fresh ones rare. The health checks
 * (`GET info`) ride them too (`box_reads.ts`); the typed client (`BoxClient`: the event stream, the queue's
 * sends) still uses `fetch`, unpooled over the socket.
 *
 * @module
 */
import type { BoxStatus } from "../client/wire.ts";
import { BoxClient } from "../client/box.ts";
import { BoxHttp } from "./box_http.ts";
import { boxInfo } from "./box_reads.ts";
import { afterCheck, afterFailedCheck } from "./check_schedule.ts";
import { type KeptStatus, KeptStatuses } from "./box_status.ts";
import { badField, DockError, notFound } from "../client/errors.ts";
import { BUILD, isBehind } from "../client/version.ts";
import { type Clock, every } from "../core/clock.ts";
import type { EventBus } from "../core/events.ts";
import type { Store } from "../core/store.ts";
import { pemToDer } from "../core/pairing_link.ts";
import { createHash } from "node:crypto";

/** How the agent reaches a box. */
export type BoxKind = "socket" | "tls";

/** A box as the registry keeps it. */
export interface BoxRecord {
  name: string;
  kind: BoxKind;
  /** The daemon's socket path, or its `https://host:port` URL. */
  address: string;
  created: string;
}

/** A new box: its record, and for a TLS box the pinned CA and the credential it gave this laptop. */
export interface NewBox {
  name: string;
  kind: BoxKind;
  address: string;
  /** The box CA (PEM) whose fingerprint the pairing link named: the only CA trusted for this box. */
  ca_pem?: string;
  /** This laptop's credential, sent as `Authorization: Bearer`. */
  credential?: string;
}

/** Where `dock add ssh` reached a box, as the person's SSH configuration resolved it (`ssh -G`). */
export interface SshAccess {
  hostname: string;
  port?: number;
  user?: string;
  /** The private key named with `--identity` (absolute). */
  identity?: string;
}

/** What a TLS box's connections need beyond its address. */
export interface TlsSecrets {
  caCerts: string[];
  credential: string;
}

/** A box's connection as `GET /v1/status` reports it (the wire type of the agent's client). */
export type { BoxStatus };

const SCHEMA = `
CREATE TABLE IF NOT EXISTS boxes (
  name TEXT PRIMARY KEY,
  kind TEXT NOT NULL,
  address TEXT NOT NULL,
  created TEXT NOT NULL,
  ca_pem TEXT,
  credential TEXT,
  ssh TEXT,
  ssh_access TEXT
);
`;
/** Columns added after the first release, for databases made before them. */
const ADDED_COLUMNS = ["ca_pem", "credential", "ssh", "ssh_access"];

interface BoxRow extends BoxRecord {
  ca_pem: string | null;
  credential: string | null;
}

const BOX_NAME = /^[a-z0-9][a-z0-9-]{0,62}$/;

/** What the relay needs to reach a box's API, built once per connection (not per request). */
export interface BoxEndpoint {
  /** The box's kept connections. */
  http: BoxHttp;
  /** A TLS box's `Bearer <credential>`: the relay must add it to every request. */
  authorization: string | null;
}

interface Connection {
  record: BoxRecord;
  secrets: TlsSecrets | null;
  http: BoxHttp;
  client: BoxClient;
  endpoint: BoxEndpoint;
  status: BoxStatus;
  failures: number;
  nextCheck: number;
  listeners: Set<(online: boolean) => void>;
}

/** Knobs of {@linkcode Boxes}. */
export interface BoxesOptions {
  /** How often each box is checked. @default {5000} */
  healthMs?: number;
  /** Orders the health checks and their backoff. */
  clock: Clock;
  /** Their jitter (tests fix it). @default {Math.random} */
  random?: () => number;
}

/** The registry and the live connections. */
export class Boxes {
  #store: Store;
  #bus: EventBus;
  #connections = new Map<string, Connection>();
  /** {@linkcode Boxes.list}'s order, made again after a box is added or removed. */
  #byName?: Connection[];
  /** Every box's status as JSON, made again only for a box whose status changed (`box_status.ts`). */
  #kept = new KeptStatuses();
  #stopLoop?: () => void;
  #healthMs: number;
  #clock: Clock;
  #random: () => number;
  /** The check under way for each box. */
  #checking = new Map<string, Promise<void>>();

  constructor(store: Store, bus: EventBus, options: BoxesOptions) {
    this.#store = store;
    this.#bus = bus;
    this.#healthMs = options.healthMs ?? 5000;
    this.#clock = options.clock;
    this.#random = options.random ?? Math.random;
    store.db.exec(SCHEMA);
    const columns = new Set(store.all<{ name: string }>("PRAGMA table_info(boxes)").map((c) => c.name));
    for (const column of ADDED_COLUMNS) {
      if (!columns.has(column)) store.db.exec(`ALTER TABLE boxes ADD COLUMN ${column} TEXT`);
    }
    for (
      const row of store.all<BoxRow & { ssh?: string | null; ssh_access?: string | null }>(
        "SELECT * FROM boxes ORDER BY name",
      )
    ) {
      const { ca_pem, credential, ssh: _, ssh_access: __, ...record } = row;
      this.#connect(record, ca_pem && credential ? { caCerts: [ca_pem], credential } : null);
    }
  }

  /**
   * Records how `dock add ssh` reached a box (`[user@]host[:port]`, or a Host of the SSH config) and,
   * when given, what the person's SSH configuration resolved it to and the key named with `--identity`:
   * `dock ssh-config` writes them, so `ssh dock-BOX` reaches the box as `add ssh` did.
   */
  setSsh(name: string, destination: string, access?: SshAccess): void {
    this.#store.run(
      "UPDATE boxes SET ssh = ?, ssh_access = ? WHERE name = ?",
      destination,
      access ? JSON.stringify(access) : null,
      name,
    );
  }

  /** What `dock add ssh` resolved each box's destination to, for the boxes it added. */
  sshAccess(): Map<string, SshAccess> {
    const rows = this.#store.all<{ name: string; ssh_access: string | null }>(
      "SELECT name, ssh_access FROM boxes WHERE ssh_access IS NOT NULL",
    );
    const access = new Map<string, SshAccess>();
    for (const row of rows) {
      try {
        access.set(row.name, JSON.parse(row.ssh_access!));
      } catch { /* edited by hand: the destination alone is used */ }
    }
    return access;
  }

  /** Says a box is reached through its SSH transport (agent/ssh_transport.ts), as its status shows. */
  setTransport(name: string, transport: "tls" | "ssh"): void {
    const connection = this.#connections.get(name);
    if (connection && connection.record.kind === "tls") {
      connection.status.transport = transport;
      this.#changed(connection);
    }
  }

  /** How each box is reached over SSH, when `dock add ssh` added it. */
  sshDestinations(): Map<string, string> {
    const rows = this.#store.all<{ name: string; ssh: string | null }>("SELECT name, ssh FROM boxes");
    return new Map(rows.filter((r) => r.ssh).map((r) => [r.name, r.ssh!]));
  }

  /** Every box, by name. */
  list(): BoxRecord[] {
    return this.#sorted().map((c) => c.record);
  }

  /** Every box's connection status. */
  status(): BoxStatus[] {
    return this.#sorted().map((c) => ({ ...c.status }));
  }

  /**
   * Every box's connection status as a JSON array, kept whole until a box's status changes (each box's
   * JSON kept until its own does): `GET /v1/status` answers from memory, without a copy, a stringify
   * or a join per read, and never waits on a box.
   */
  statusJson(): string {
    return this.#kept.json(() => this.#sorted().map((c) => c.status));
  }

  /**
   * Every box's status as kept (by name, each with its JSON), made again only after a change: what
   * `GET /v1/sessions` writes each box's status from, rather than a copy of every status per read.
   */
  statusParts(): readonly KeptStatus[] {
    return this.#kept.parts(() => this.#sorted().map((c) => c.status));
  }

  /** The connections by name, sorted once per change of the registry (not per status read). */
  #sorted(): Connection[] {
    return this.#byName ??= [...this.#connections.values()].sort((a, b) =>
      a.record.name.localeCompare(b.record.name)
    );
  }

  /** Forgets what was kept of `connection`'s status (and of the whole), after it changed. */
  #changed(connection: Connection): void {
    this.#kept.changed(connection.record.name);
  }

  /** Throws unless `name` is a valid box name no box has yet. */
  checkNew(name: string): void {
    checkBoxName(name);
    if (this.#connections.has(name)) {
      throw new DockError("exists", `box '${name}' is already known`, { status: 409 });
    }
  }

  /** Registers a box and checks it at once. */
  async add(box: NewBox, origin: string): Promise<BoxStatus> {
    this.checkNew(box.name);
    if (box.kind === "tls" && !(box.ca_pem && box.credential)) {
      throw new DockError("invalid_request", `box '${box.name}': a TLS box needs its CA and a credential`, {
        status: 400,
      });
    }
    const full: BoxRecord = {
      name: box.name,
      kind: box.kind,
      address: box.address,
      created: new Date(this.#clock.now()).toISOString(),
    };
    this.#store.run(
      "INSERT INTO boxes (name, kind, address, created, ca_pem, credential) VALUES (?, ?, ?, ?, ?, ?)",
      full.name,
      full.kind,
      full.address,
      full.created,
      box.ca_pem ?? null,
      box.credential ?? null,
    );
    this.#connect(full, box.kind === "tls" ? { caCerts: [box.ca_pem!], credential: box.credential! } : null);
    const fp = box.ca_pem ? caFingerprint({ caCerts: [box.ca_pem], credential: "" }) : null;
    this.#bus.publish({
      type: "box.added",
      origin,
      data: { box: full.name, kind: full.kind, ...(fp ? { fp } : {}) },
    });
    await this.check(full.name);
    return this.#status(full.name);
  }

  /**
   * Points a paired box at a new address and credential (it was paired again: it moved, or its old
   * credential stopped working) and checks it. It is the same box, the same CA: its name, its event
   * cursor and its records stay, and it is announced as `box.changed`, not `box.removed` + `box.added`
   * (which made the merge copy its whole journal again: every hook and flow ran twice, issue 33).
   */
  async repair(
    name: string,
    box: { address: string; ca_pem: string; credential: string },
    origin: string,
  ): Promise<BoxStatus> {
    const connection = this.#get(name);
    if (
      connection.record.kind !== "tls" || caFingerprint(connection.secrets) !== caFingerprint({
          caCerts: [box.ca_pem],
          credential: box.credential,
        })
    ) {
      throw new DockError("exists", `box '${name}' is another box (another CA): forget it first`, {
        status: 409,
      });
    }
    this.#store.run(
      "UPDATE boxes SET address = ?, ca_pem = ?, credential = ? WHERE name = ?",
      box.address,
      box.ca_pem,
      box.credential,
      name,
    );
    connection.client.close();
    connection.http.close();
    const record = { ...connection.record, address: box.address };
    const secrets = { caCerts: [box.ca_pem], credential: box.credential };
    Object.assign(connection, { record, secrets, failures: 0, nextCheck: 0 }, clients(record, secrets));
    connection.status.address = box.address;
    this.#changed(connection);
    this.#bus.publish({ type: "box.changed", origin, data: { box: name, address: box.address } });
    await this.check(name);
    return this.#status(name);
  }

  /** The SHA-256 fingerprint of the CA pinned for a TLS box (what pairing links name), or null. */
  fingerprint(name: string): string | null {
    return caFingerprint(this.#get(name).secrets);
  }

  /**
   * Forgets a box. A TLS box's `box.removed` names its CA's fingerprint (`fp`, public: pairing links
   * carry it) so that the event merge can keep its cursor for when the same box is paired again.
   */
  remove(name: string, origin: string): BoxRecord {
    const connection = this.#get(name);
    const fp = caFingerprint(connection.secrets);
    this.#store.run("DELETE FROM boxes WHERE name = ?", name);
    this.#connections.delete(name);
    this.#byName = undefined;
    this.#kept.changed(name);
    connection.client.close();
    connection.http.close();
    for (const listener of connection.listeners) listener(false);
    this.#bus.publish({ type: "box.removed", origin, data: { box: name, ...(fp ? { fp } : {}) } });
    return connection.record;
  }

  /** The typed client of a box (through the agent's own connection to it). */
  client(name: string): BoxClient {
    return this.#get(name).client;
  }

  /** The HTTP client, base URL and credential requests to the box's API go through. */
  endpoint(name: string): BoxEndpoint {
    return this.#get(name).endpoint;
  }

  /** A TLS box's pinned CA and this laptop's credential (for the attach relay); null for a socket box. */
  tlsCredentials(name: string): TlsSecrets | null {
    const secrets = this.#get(name).secrets;
    return secrets && { caCerts: [...secrets.caCerts], credential: secrets.credential };
  }

  /**
   * Drops the box's pooled connections after a failure, so the next request opens a fresh one: a
   * stale keep-alive connection to a daemon that went away fails like a request lost mid-flight (502)
   * where a fresh connect says plainly that nothing listens (503).
   */
  reset(name: string): void {
    const connection = this.#connections.get(name);
    if (!connection) return;
    connection.http.close();
    connection.client.close();
    Object.assign(connection, clients(connection.record, connection.secrets));
  }

  /** True when a box of that name is known. */
  has(name: string): boolean {
    return this.#connections.has(name);
  }

  /** True while the last health check succeeded. */
  online(name: string): boolean {
    return this.#get(name).status.online;
  }

  /** Calls `listener` when the box goes online or offline; returns the function that stops it. */
  watch(name: string, listener: (online: boolean) => void): () => void {
    const connection = this.#get(name);
    connection.listeners.add(listener);
    return () => connection.listeners.delete(listener);
  }

  /**
   * Checks one box now (health: `GET /v1/info`). A check already under way may have started before what
   * the caller knows (a box stopped a moment ago): it is awaited, then the box is checked again, so the
   * answer is never older than the call (a refresh once reported a killed box online).
   */
  async check(name: string): Promise<void> {
    while (this.#checking.has(name)) await this.#checking.get(name);
    const connection = this.#connections.get(name);
    if (!connection) return;
    const run = this.#check(connection, name);
    this.#checking.set(name, run);
    try {
      await run;
    } finally {
      this.#checking.delete(name);
    }
  }

  async #check(connection: Connection, name: string): Promise<void> {
    const started = performance.now();
    try {
      const info = await boxInfo(connection.endpoint, this.#clock, 2000);
      connection.failures = 0;
      connection.nextCheck = afterCheck(this.#clock.now(), this.#healthMs, this.#random);
      connection.status.latency_ms = Math.round((performance.now() - started) * 100) / 100;
      const before = connection.status.build;
      connection.status.build = info.build;
      connection.status.behind = isBehind(info.build, BUILD);
      connection.status.error = null;
      this.#changed(connection);
      this.#set(connection, true);
      // A view that reloaded on the box's own `box.upgraded` may have read the build from before this
      // check (the event can come first): told again once the agent knows the new one.
      if (before && before !== info.build) {
        this.#bus.publish({
          type: "box.changed",
          origin: "dock",
          data: { box: name, address: connection.status.address, build: info.build },
        });
      }
    } catch (error) {
      Object.assign(connection, afterFailedCheck(connection, this.#clock.now(), this.#random));
      connection.status.error = (error as Error).message;
      connection.status.latency_ms = null;
      this.#changed(connection);
      this.reset(name);
      this.#set(connection, false);
    }
  }

  /** Checks every box now. */
  async refresh(): Promise<BoxStatus[]> {
    await Promise.all(this.list().map((box) => this.check(box.name)));
    return this.status();
  }

  /** Starts the health loop. */
  start(): void {
    this.#stopLoop = every(this.#clock, 250, () => {
      const now = this.#clock.now();
      for (const connection of this.#connections.values()) {
        const name = connection.record.name;
        // The loop never queues behind a check under way; callers of check() do.
        if (now >= connection.nextCheck && !this.#checking.has(name)) this.check(name);
      }
    });
  }

  /** Stops the health loop and closes every connection. */
  close(): void {
    this.#stopLoop?.();
    for (const connection of this.#connections.values()) {
      connection.client.close();
      connection.http.close();
    }
  }

  #connect(record: BoxRecord, secrets: TlsSecrets | null): void {
    this.#byName = undefined;
    this.#kept.changed(record.name);
    this.#connections.set(record.name, {
      record,
      secrets,
      ...clients(record, secrets),
      status: {
        name: record.name,
        kind: record.kind,
        transport: record.kind === "socket" ? "socket" : "tls",
        address: record.address,
        online: false,
        since: null,
        error: null,
        latency_ms: null,
        build: null,
        behind: false,
      },
      failures: 0,
      nextCheck: 0,
      listeners: new Set(),
    });
  }

  #set(connection: Connection, online: boolean): void {
    if (connection.status.online === online && connection.status.since !== null) return;
    connection.status.online = online;
    connection.status.since = new Date(this.#clock.now()).toISOString();
    this.#changed(connection);
    this.#bus.publish({
      type: online ? "box.online" : "box.offline",
      origin: "dock",
      data: { box: connection.record.name, ...(online ? {} : { error: connection.status.error }) },
    });
    for (const listener of connection.listeners) listener(online);
  }

  #status(name: string): BoxStatus {
    return { ...this.#get(name).status };
  }

  #get(name: string): Connection {
    const connection = this.#connections.get(name);
    if (!connection) throw notFound("box", name);
    return connection;
  }
}

/**
 * The SHA-256 of the pinned CA's DER (as `fingerprintOf`, synchronously: `box.removed` is published
 * in the same turn as the removal, before the merge drops the box's cursor).
 */
function caFingerprint(secrets: TlsSecrets | null): string | null {
  const pem = secrets?.caCerts[0];
  if (!pem) return null;
  try {
    return createHash("sha256").update(pemToDer(pem)).digest("hex");
  } catch {
    return null; // a CA stored damaged (a database edited by hand): no identity to keep
  }
}

/** Throws unless `name` is a valid box name. */
export function checkBoxName(name: string): void {
  if (!BOX_NAME.test(name)) {
    throw badField(
      "name",
      `must match [a-z0-9][a-z0-9-]*, at most 63 characters, got ${JSON.stringify(name)}`,
    );
  }
}

/** Idle connections kept to a TLS box (one for the health check, one for the app's next request). */
const TLS_IDLE = 2;

/**
 * The relay's HTTP client and endpoint, and the typed client of a box: no idle connections to a
 * socket, pooled connections to a TLS box (see the module doc). A TLS box's connections trust its
 * pinned CA.
 */
function clients(
  record: BoxRecord,
  secrets: TlsSecrets | null,
): { http: BoxHttp; client: BoxClient; endpoint: BoxEndpoint } {
  if (record.kind === "socket") {
    const http = new BoxHttp({ socket: record.address });
    return {
      http,
      client: new BoxClient({ socket: record.address, origin: "dock" }),
      endpoint: { http, authorization: null },
    };
  }
  // A TLS box stored without its CA and credential (a database edited by hand) stays offline: 401.
  const caCerts = secrets?.caCerts ?? [];
  // Few idle connections kept: each held TLS connection is ~0.08 MiB of the agent (200 measured: +31 MiB
  // with the server's side), and a board's load through the relay left several to each of 200 boxes.
  const http = new BoxHttp({ url: record.address, caCerts }, { maxIdle: TLS_IDLE });
  return {
    http,
    client: new BoxClient({ url: record.address, token: secrets?.credential, caCerts, origin: "dock" }),
    endpoint: { http, authorization: secrets ? `Bearer ${secrets.credential}` : null },
  };
}
