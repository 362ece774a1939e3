/**
 * The boxes this laptop knows and the agent's connection to each: the registry (persisted), health
 * checks with reconnect backoff and jitter, `box.*` events on changes, and the raw HTTP access the
 * relay and the event merge use. A box is reached over its daemon's unix socket (`dock add local`)
 * or, once paired, over TLS pinned to its CA.
 *
 * @module
 */
import { BoxClient } from "../client/box.ts";
import { DockError, notFound } from "../client/errors.ts";
import type { EventBus } from "../daemon/events.ts";
import type { Store } from "../daemon/store.ts";

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

/** A box's connection as `GET /v1/status` reports it. */
export interface BoxStatus {
  name: string;
  kind: BoxKind;
  address: string;
  online: boolean;
  /** When it went online or offline. */
  since: string | null;
  error: string | null;
  latency_ms: number | null;
  build: string | null;
}

const SCHEMA = `
CREATE TABLE IF NOT EXISTS boxes (
  name TEXT PRIMARY KEY,
  kind TEXT NOT NULL,
  address TEXT NOT NULL,
  created TEXT NOT NULL
);
`;

const BOX_NAME = /^[a-z0-9][a-z0-9-]{0,62}$/;

interface Connection {
  record: BoxRecord;
  http: Deno.HttpClient;
  client: BoxClient;
  status: BoxStatus;
  failures: number;
  nextCheck: number;
  listeners: Set<(online: boolean) => void>;
}

/** The registry and the live connections. */
export class Boxes {
  #store: Store;
  #bus: EventBus;
  #connections = new Map<string, Connection>();
  #timer?: ReturnType<typeof setInterval>;
  #healthMs: number;
  #checking = new Set<string>();

  constructor(store: Store, bus: EventBus, options: { healthMs?: number } = {}) {
    this.#store = store;
    this.#bus = bus;
    this.#healthMs = options.healthMs ?? 5000;
    store.db.exec(SCHEMA);
    for (const record of store.all<BoxRecord>("SELECT * FROM boxes ORDER BY name")) this.#connect(record);
  }

  /** Every box, by name. */
  list(): BoxRecord[] {
    return [...this.#connections.values()].map((c) => c.record).sort((a, b) => a.name.localeCompare(b.name));
  }

  /** Every box's connection status. */
  status(): BoxStatus[] {
    return this.list().map((record) => ({ ...this.#connections.get(record.name)!.status }));
  }

  /** Registers a box and checks it at once. */
  async add(record: Omit<BoxRecord, "created">, origin: string): Promise<BoxStatus> {
    if (!BOX_NAME.test(record.name)) {
      throw new DockError(
        "invalid_request",
        `name: must match [a-z0-9][a-z0-9-]*, got ${JSON.stringify(record.name)}`,
        {
          status: 400,
          detail: { field: "name" },
        },
      );
    }
    if (this.#connections.has(record.name)) {
      throw new DockError("exists", `box '${record.name}' is already known`, { status: 409 });
    }
    const full: BoxRecord = { ...record, created: new Date().toISOString() };
    this.#store.run(
      "INSERT INTO boxes (name, kind, address, created) VALUES (?, ?, ?, ?)",
      full.name,
      full.kind,
      full.address,
      full.created,
    );
    this.#connect(full);
    this.#bus.publish({ type: "box.added", origin, data: { box: full.name, kind: full.kind } });
    await this.check(full.name);
    return this.#status(full.name);
  }

  /** Forgets a box. */
  remove(name: string, origin: string): BoxRecord {
    const connection = this.#get(name);
    this.#store.run("DELETE FROM boxes WHERE name = ?", name);
    this.#connections.delete(name);
    connection.client.close();
    connection.http.close();
    for (const listener of connection.listeners) listener(false);
    this.#bus.publish({ type: "box.removed", origin, data: { box: name } });
    return connection.record;
  }

  /** The typed client of a box (through the agent's own connection to it). */
  client(name: string): BoxClient {
    return this.#get(name).client;
  }

  /** The HTTP client and base URL requests to the box's API go through. */
  endpoint(name: string): { http: Deno.HttpClient; base: string } {
    const connection = this.#get(name);
    return {
      http: connection.http,
      base: connection.record.kind === "socket" ? "http://dockd" : connection.record.address,
    };
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
    connection.http = relayClient(connection.record.address);
    connection.client = new BoxClient({ socket: connection.record.address, origin: "dock" });
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

  /** Checks one box now (health: `GET /v1/info`). */
  async check(name: string): Promise<void> {
    const connection = this.#connections.get(name);
    if (!connection || this.#checking.has(name)) return;
    this.#checking.add(name);
    const started = performance.now();
    try {
      const info = await connection.client.infoWithin(2000);
      connection.failures = 0;
      connection.nextCheck = Date.now() + this.#healthMs;
      connection.status.latency_ms = Math.round((performance.now() - started) * 100) / 100;
      connection.status.build = info.build;
      connection.status.error = null;
      this.#set(connection, true);
    } catch (error) {
      connection.failures++;
      // Back off with jitter so many laptops (or many boxes) do not retry in lockstep.
      const backoff = Math.min(1000 * 2 ** (connection.failures - 1), 30_000);
      connection.nextCheck = Date.now() + backoff * (0.75 + Math.random() * 0.5);
      connection.status.error = (error as Error).message;
      connection.status.latency_ms = null;
      this.reset(name);
      this.#set(connection, false);
    } finally {
      this.#checking.delete(name);
    }
  }

  /** Checks every box now. */
  async refresh(): Promise<BoxStatus[]> {
    await Promise.all(this.list().map((box) => this.check(box.name)));
    return this.status();
  }

  /** Starts the health loop. */
  start(): void {
    this.#timer = setInterval(() => {
      for (const connection of this.#connections.values()) {
        if (Date.now() >= connection.nextCheck) this.check(connection.record.name);
      }
    }, 250);
  }

  /** Stops the health loop and closes every connection. */
  close(): void {
    clearInterval(this.#timer);
    for (const connection of this.#connections.values()) {
      connection.client.close();
      connection.http.close();
    }
  }

  #connect(record: BoxRecord): void {
    if (record.kind !== "socket") {
      throw new DockError("unsupported", `box '${record.name}': ${record.kind} boxes are not supported yet`, {
        status: 422,
      });
    }
    const http = relayClient(record.address);
    this.#connections.set(record.name, {
      record,
      http,
      client: new BoxClient({ socket: record.address, origin: "dock" }),
      status: {
        name: record.name,
        kind: record.kind,
        address: record.address,
        online: false,
        since: null,
        error: null,
        latency_ms: null,
        build: null,
      },
      failures: 0,
      nextCheck: 0,
      listeners: new Set(),
    });
  }

  #set(connection: Connection, online: boolean): void {
    if (connection.status.online === online && connection.status.since !== null) return;
    connection.status.online = online;
    connection.status.since = new Date().toISOString();
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
 * The relay's HTTP client for a box socket, with no idle connection kept: a request on a reused pooled
 * connection whose peer died is retried on a fresh one by the HTTP stack (seen here: a POST that had
 * reached a daemon killed mid-request was sent again) — a prompt must never be typed twice. A fresh
 * unix-socket connection costs ~0.1 ms.
 */
function relayClient(socket: string): Deno.HttpClient {
  return Deno.createHttpClient({ proxy: { transport: "unix", path: socket }, poolMaxIdlePerHost: 0 });
}
