/**
 * Wire types of pairing with a box: the one-time codes and what redeeming one answers, and the
 * laptops and phones paired with it.
 * Types and constant lists only, like every `wire_*.ts` module (`wire.ts` re-exports them all).
 *
 * @module
 */

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
