/**
 * Wire types of the laptop agent (spec 2.2, 3.1) and of pairing: the offline queue, broadcasts, boxes,
 * forwards, private-URL routes, app settings, laptops and phones paired with a box.
 * Types and constant lists only, like every `wire_*.ts` module (`wire.ts` re-exports them all).
 *
 * @module
 */
import type { AgentState } from "./wire_events.ts";

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

/** Body of `POST pair/code` on a box (its socket only). */
export interface PairCodeRequest {
  /** The address the laptop dials. @default {the box's first non-loopback address} */
  host?: string;
}

/** Answer of `POST pair/code`: a one-time pairing link. */
export interface PairCode {
  /** `dock://HOST:PORT?code=…&fp=…`. */
  link: string;
  /** When the code expires (RFC 3339). */
  expires: string;
}

/** Body of `POST pair` on a box's TLS listener: a laptop trades a one-time code for a credential. */
export interface PairRedeem {
  code: string;
  /** How the box will list the laptop. */
  name: string;
}

/** Answer of `POST pair`. */
export interface PairRedeemed {
  /** The laptop's id on the box (what `dockd laptops` lists and `dockd revoke` takes). */
  id: string;
  /** `<id>.<secret>`: the laptop's bearer token for this box. */
  credential: string;
  /** The box's own name. */
  box: string;
}

/** A laptop paired with a box (`GET laptops`, `DELETE laptops/{id}`, `DELETE pair`). */
export interface Laptop {
  id: string;
  name: string;
  /** When it paired (RFC 3339). */
  created: string;
  /** When it last authenticated (RFC 3339; refreshed at most once a minute). */
  last_seen: string;
}

/** Body of `PUT phone`: the phone companion on or off, and where it listens. */
export interface PhoneSettings {
  enabled: boolean;
  /** `HOST:PORT` (`[::]:1380` for IPv6). @default {the current one; at first `0.0.0.0:1380`} */
  listen?: string;
}

/**
 * A phone paired with a box: the same record as a laptop's (`GET phone`, `dockd phone devices`). It never
 * carries its credential, which exists only in the phone's cookie and, hashed, on the box.
 */
export type PhoneDevice = Laptop;

/** Answer of `GET phone` and `PUT phone`. */
export interface PhoneState {
  enabled: boolean;
  /** Where it listens when on (`HOST:PORT`). */
  listen: string;
  /** The address a phone opens while it listens (`https://HOST:PORT/`), else null. */
  url: string | null;
  /** Why it does not listen although enabled (a taken port, no openssl). */
  error?: string;
  devices: PhoneDevice[];
}

/** Answer of `POST phone/code`: a one-time link that pairs a phone (ten minutes, once). */
export interface PhonePairCode {
  /** `https://HOST:PORT/pair#CODE`: the code rides in the fragment, which no request carries. */
  link: string;
  /** When the code expires (RFC 3339). */
  expires: string;
  /** SHA-256 of the box CA the listener's certificate chains to (hex), to compare with the phone's view. */
  fingerprint: string;
}

/** Body of `POST phone/pair` on the phone listener: the phone trades a one-time code for its cookie. */
export interface PhoneRedeem {
  code: string;
  /** How the box lists the phone. @default {"phone"} */
  name?: string;
}

/** Answer of `POST phone/pair`: the credential itself travels only in the `Set-Cookie` header. */
export interface PhoneRedeemed {
  id: string;
  /** The box's own name. */
  box: string;
}
