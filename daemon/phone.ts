/**
 * The phone companion: the laptop may be asleep while agents work, so a phone reaches the box directly,
 * on a TLS listener of its own (the box's CA, see `tls.ts`), paired by a one-time link (`dockd phone
 * pair`) and allowed only what a phone needs (`api/phone.ts`). This module owns its setting (on or off,
 * where it listens; off by default, kept in the box database so a restart brings it back as it was),
 * the paired phones (a {@linkcode PairingStore} of its own kind: a phone's code never pairs a laptop)
 * and the listener's lifecycle. How the listener serves is the API's business, handed in by the
 * composition root ({@linkcode PhoneCompanion.attach}), so this module never imports the API.
 *
 * @module
 */
import { DockError } from "../client/errors.ts";
import type { PhoneSettings, PhoneState } from "../client/wire.ts";
import type { EventBus } from "../core/events.ts";
import { type GuardedServer, parseListenAddress } from "../core/listen.ts";
import type { Store } from "../core/store.ts";
import type { Clock } from "../core/clock.ts";
import type { Log } from "../core/log.ts";
import { PairingStore } from "./pairing.ts";
import { defaultLinkHost } from "./tls.ts";

/** Where the phone listener binds unless told otherwise (the laptop listener's port plus one). */
export const DEFAULT_PHONE_LISTEN = "0.0.0.0:1380";

/** The running phone listener, as pairing links and `GET phone` need it. */
export interface PhoneListener {
  /** The address it is bound to (`0.0.0.0`, `::`, or one address). */
  hostname: string;
  /** The port it listens on (the one asked for, or the one the system chose for 0). */
  port: number;
  /** The addresses its certificate is valid for: the hosts a pairing link may name. */
  addresses: string[];
  /** The box CA's SHA-256 fingerprint (the CA laptops pin too). */
  fingerprint: string;
}

/** Starts the phone listener at `where`; resolves once it listens. */
export type PhoneServe = (
  where: { hostname: string; port: number },
  signal: AbortSignal,
) => Promise<{ server: GuardedServer; listener: PhoneListener }>;

/** Options of {@linkcode PhoneCompanion}. */
export interface PhoneCompanionOptions {
  store: Store;
  bus: Pick<EventBus, "publish">;
  /** Dates the phones' codes and pairings. */
  clock: Pick<Clock, "now">;
  /** Told when the listener cannot start. */
  log: Log;
}

const SCHEMA = `
CREATE TABLE IF NOT EXISTS phone_settings (
  id INTEGER PRIMARY KEY CHECK (id = 1),
  enabled INTEGER NOT NULL,
  listen TEXT NOT NULL
);
`;

/** The phone companion's setting, paired phones and listener. */
export class PhoneCompanion {
  /** The paired phones and their one-time codes. */
  readonly devices: PairingStore;
  #store: Store;
  #bus: Pick<EventBus, "publish">;
  #log: Log;
  #serve: PhoneServe | null = null;
  #running: { server: GuardedServer; stop: AbortController; listener: PhoneListener; listen: string } | null =
    null;
  #error: string | null = null;
  /** Changes one at a time: two PUTs racing could otherwise leave two listeners or none. */
  #turn: Promise<unknown> = Promise.resolve();

  constructor(options: PhoneCompanionOptions) {
    this.#store = options.store;
    this.#bus = options.bus;
    this.#log = options.log;
    options.store.db.exec(SCHEMA);
    this.devices = new PairingStore(options.store, { clock: options.clock, kind: "phone" });
  }

  /** The stored setting (off, on the default address, when never set). */
  settings(): Required<PhoneSettings> {
    const row = this.#store.get<{ enabled: number; listen: string }>(
      "SELECT enabled, listen FROM phone_settings WHERE id = 1",
    );
    return { enabled: row?.enabled === 1, listen: row?.listen ?? DEFAULT_PHONE_LISTEN };
  }

  /** The listener while it listens, else null. */
  get listener(): PhoneListener | null {
    return this.#running?.listener ?? null;
  }

  /** What `GET phone` shows: on or off, where, and the paired phones (never a credential). */
  state(): PhoneState {
    const { enabled, listen } = this.settings();
    const listener = this.listener;
    return {
      enabled,
      listen,
      url: listener ? `https://${urlHost(defaultLinkHost(listener))}:${listener.port}/` : null,
      ...(enabled && !listener && this.#error ? { error: this.#error } : {}),
      devices: this.devices.list(),
    };
  }

  /** Hands in how the listener serves (the composition root does, once). */
  attach(serve: PhoneServe): void {
    this.#serve = serve;
  }

  /**
   * Brings the listener up when the stored setting says on (at daemon start). A failure (the port
   * taken) leaves the daemon serving and is shown by `GET phone`, as the laptop listener's is.
   */
  start(): Promise<void> {
    return this.#serial(async () => {
      const { enabled, listen } = this.settings();
      if (!enabled) return;
      try {
        await this.#listen(listen);
      } catch (error) {
        this.#error = (error as Error).message;
        this.#log.error(`dockd: phone companion not listening: ${this.#error}`);
      }
    });
  }

  /**
   * `PUT phone`: switches the companion on (listening at `listen`) or off, and keeps the setting. A
   * listener that cannot start is a 409 and leaves the setting as it was (and the old listener up).
   */
  configure(request: PhoneSettings, origin: string): Promise<PhoneState> {
    return this.#serial(async () => {
      const current = this.settings();
      const listen = (request.listen ?? current.listen).trim();
      const where = parseListenAddress(listen, {
        what: "listen",
        fallback: DEFAULT_PHONE_LISTEN,
        field: "listen",
      });
      if (!where) {
        throw new DockError("invalid_request", "listen: must be HOST:PORT; switch off with enabled: false", {
          status: 400,
          detail: { field: "listen" },
        });
      }
      if (request.enabled && this.#running?.listen !== listen) {
        const previous = this.#running;
        // The old listener goes first: the new one may want its port.
        if (previous) await this.#stop();
        try {
          await this.#listen(listen);
        } catch (error) {
          if (previous) await this.#listen(previous.listen).catch(() => {});
          throw new DockError("cannot_listen", (error as Error).message, { status: 409, cause: error });
        }
      } else if (!request.enabled) {
        await this.#stop();
      }
      this.#error = null;
      this.#store.run(
        "INSERT INTO phone_settings (id, enabled, listen) VALUES (1, ?, ?) " +
          "ON CONFLICT (id) DO UPDATE SET enabled = excluded.enabled, listen = excluded.listen",
        request.enabled ? 1 : 0,
        listen,
      );
      const state = this.state();
      this.#bus.publish({
        type: "phone.changed",
        origin,
        data: { enabled: state.enabled, listen: state.listen, url: state.url },
      });
      return state;
    });
  }

  /** Stops the listener (the daemon is stopping); the setting stays. */
  close(): Promise<void> {
    return this.#serial(() => this.#stop());
  }

  async #listen(listen: string): Promise<void> {
    if (!this.#serve) {
      throw new Error("the phone companion was not attached to a listener (PhoneCompanion.attach)");
    }
    const where = parseListenAddress(listen, { what: "listen", fallback: DEFAULT_PHONE_LISTEN })!;
    const stop = new AbortController();
    let started;
    try {
      started = await this.#serve(where, stop.signal);
    } catch (error) {
      const reason = error instanceof Deno.errors.AddrInUse
        ? "the address is in use; choose another with --listen HOST:PORT"
        : (error as Error).message;
      throw new Error(`cannot listen on ${listen}: ${reason}`, { cause: error });
    }
    this.#running = { ...started, stop, listen };
    this.#error = null;
  }

  async #stop(): Promise<void> {
    const running = this.#running;
    if (!running) return;
    this.#running = null;
    running.stop.abort();
    await running.server.finished;
  }

  #serial<T>(work: () => Promise<T>): Promise<T> {
    const next = this.#turn.then(work, work);
    this.#turn = next.catch(() => {});
    return next;
  }
}

/** A host as it goes in a URL (an IPv6 address in brackets). */
export function urlHost(host: string): string {
  const bare = host.replace(/^\[(.*)\]$/, "$1");
  return bare.includes(":") ? `[${bare}]` : bare;
}
