/**
 * Pairing laptops with this box, and recognising them afterwards. The trust model:
 *
 * - `dockd pair` prints a link `dock://HOST:PORT?code=…&fp=…`. The link carries the SHA-256
 *   fingerprint of the box-local CA (see `tls.ts`); the laptop pins that CA, so it talks to this box
 *   and no other, without trusting anything it learns over the network.
 * - The one-time code proves the person pairing saw the link (on the box's terminal, or wherever the
 *   owner sent it). It has 160 random bits, lives ten minutes, works once, and only its SHA-256 is
 *   stored, so a copy of the database pairs nobody.
 * - Redeeming the code returns a long-lived credential (256 random bits) exactly once. The box keeps
 *   only its SHA-256: the secret is random, not a password, so a fast hash is enough and a leaked
 *   database still authenticates nobody. Revoking a laptop deletes the hash and tells listeners so
 *   the daemon can close that laptop's open streams.
 * - Failed redeems are counted per address: five within ten minutes lock that address out for ten
 *   minutes. 160-bit codes cannot be guessed anyway; the limit keeps a misbehaving client from
 *   hammering the box and keeps logs quiet.
 *
 * @module
 */
import { badField, DockError } from "../client/errors.ts";
import { base64url, normalizeCode } from "../core/pairing_link.ts";
import { hex, sameSecret, sha256Hex } from "../core/bytes.ts";
import type { Store } from "../core/store.ts";
import type { Clock } from "../core/clock.ts";
import type { Laptop } from "../client/wire.ts";

/** Options for {@linkcode PairingStore}. */
export interface PairingStoreOptions {
  /** Dates codes, pairings and lockouts. */
  clock: Pick<Clock, "now">;
  /**
   * What pairs: laptops (`dockd pair`) or phones (`dockd phone pair`). Each kind has its own codes and
   * credentials, so a phone's code never pairs a laptop and a phone's credential never opens the
   * laptop listener. @default {"laptop"}
   */
  kind?: PairingKind;
}

/** What a {@linkcode PairingStore} pairs. */
export type PairingKind = "laptop" | "phone";

/** Each kind's tables, and the command that makes a new link (named in a refusal). */
const KINDS = {
  laptop: { codes: "pairing_codes", devices: "laptops", command: "dockd pair" },
  phone: { codes: "phone_codes", devices: "phones", command: "dockd phone pair" },
} as const;

/** How long a one-time code stays valid. */
export const CODE_TTL_MS = 10 * 60 * 1000;
/** Failed redeems from one address, within {@linkcode FAILURE_WINDOW_MS}, that lock it out. */
export const MAX_FAILURES = 5;
/** The window failures are counted in. */
export const FAILURE_WINDOW_MS = 10 * 60 * 1000;
/** How long a locked-out address stays locked out. */
export const LOCKOUT_MS = 10 * 60 * 1000;

const CODE_BYTES = 20; // 160 bits: 32 base32 characters, no padding
const CREDENTIAL_BYTES = 32; // 256 bits
const LAST_SEEN_EVERY_MS = 60_000;

function schema(tables: { codes: string; devices: string }): string {
  return `
CREATE TABLE IF NOT EXISTS ${tables.codes} (
  hash TEXT PRIMARY KEY,
  expires INTEGER NOT NULL,
  used INTEGER
);
CREATE TABLE IF NOT EXISTS ${tables.devices} (
  id TEXT PRIMARY KEY,
  name TEXT NOT NULL,
  secret_hash TEXT NOT NULL,
  created TEXT NOT NULL,
  last_seen TEXT NOT NULL
);
`;
}

interface LaptopRow {
  id: string;
  name: string;
  secret_hash: string;
  created: string;
  last_seen: string;
}

/** One-time codes, paired laptops (or phones) and their credentials, kept in the box database. */
export class PairingStore {
  #store: Store;
  #now: () => Date;
  #kind: (typeof KINDS)[PairingKind];
  #failures = new Map<string, { times: number[]; lockedUntil: number }>();
  #revokeListeners = new Set<(laptop: Laptop) => void>();

  constructor(store: Store, options: PairingStoreOptions) {
    this.#store = store;
    this.#now = () => new Date(options.clock.now());
    this.#kind = KINDS[options.kind ?? "laptop"];
    store.db.exec(schema(this.#kind));
  }

  /** Makes a one-time code valid for ten minutes; only its hash is stored. */
  async createCode(): Promise<{ code: string; expires: Date }> {
    const now = this.#now().getTime();
    const code = base32(crypto.getRandomValues(new Uint8Array(CODE_BYTES)));
    const hash = await sha256Hex(code);
    const expires = now + CODE_TTL_MS;
    this.#store.transaction(() => {
      // Spent and expired codes are refused the same way as unknown ones, so they need not be kept.
      this.#store.run(`DELETE FROM ${this.#kind.codes} WHERE expires <= ? OR used IS NOT NULL`, now);
      this.#store.run(
        `INSERT INTO ${this.#kind.codes} (hash, expires) VALUES (?, ?)`,
        hash,
        expires,
      );
    });
    return { code, expires: new Date(expires) };
  }

  /**
   * Trades a one-time code for a new laptop record and its credential, which is returned only here.
   * An unknown, used or expired code is refused with one message, so a guesser learns nothing.
   */
  async redeem(
    code: string,
    options: { name: string; address: string },
  ): Promise<{ id: string; credential: string }> {
    const now = this.#now().getTime();
    this.#checkLockout(options.address, now);
    const name = laptopName(options.name);
    const hash = await sha256Hex(normalizeCode(code));
    // Made before the transaction, which cannot wait for WebCrypto (a 48-bit id taken in between by
    // another redeem would fail the insert, not pair twice).
    const id = this.#newId();
    const credential = `${id}.${base64url(crypto.getRandomValues(new Uint8Array(CREDENTIAL_BYTES)))}`;
    const secretHash = await sha256Hex(credential);
    const paired = this.#store.transaction(() => {
      // One statement both checks and spends the code, so two redeems of it cannot both win.
      const spent = this.#store.run(
        `UPDATE ${this.#kind.codes} SET used = ? WHERE hash = ? AND used IS NULL AND expires > ?`,
        now,
        hash,
        now,
      );
      if (spent.changes !== 1) return null;
      const created = new Date(now).toISOString();
      this.#store.run(
        `INSERT INTO ${this.#kind.devices} (id, name, secret_hash, created, last_seen) VALUES (?, ?, ?, ?, ?)`,
        id,
        name,
        secretHash,
        created,
        created,
      );
      return { id, credential };
    });
    if (!paired) {
      this.#recordFailure(options.address, now);
      throw new DockError(
        "pairing_refused",
        `Cannot pair: the code is not valid (it may be mistyped, already used or expired); run \`${this.#kind.command}\` for a new link`,
        { status: 403 },
      );
    }
    this.#failures.delete(options.address);
    return paired;
  }

  /** The laptop a credential belongs to (refreshing its last_seen), or null. */
  async authenticate(credential: string): Promise<Laptop | null> {
    // The credential is `<id>.<secret>`: the id finds the row, the hash comparison decides, in
    // constant time, so response timing says nothing about how much of a guess was right. Hashed before
    // the row is read: a revocation while WebCrypto works is seen.
    const match = /^([0-9a-f]{12})\.[A-Za-z0-9_-]{43}$/.exec(credential);
    if (!match) return null;
    const offered = await sha256Hex(credential);
    const row = this.#store.get<LaptopRow>(`SELECT * FROM ${this.#kind.devices} WHERE id = ?`, match[1]);
    if (!row || !sameSecret(offered, row.secret_hash)) return null;
    const now = this.#now();
    // A write per request would cost the relay its latency budget; a minute's precision is plenty.
    if (now.getTime() - Date.parse(row.last_seen) >= LAST_SEEN_EVERY_MS) {
      row.last_seen = now.toISOString();
      this.#store.run(`UPDATE ${this.#kind.devices} SET last_seen = ? WHERE id = ?`, row.last_seen, row.id);
    }
    return toLaptop(row);
  }

  /** Every paired laptop (or phone), oldest first. */
  list(): Laptop[] {
    return this.#store.all<LaptopRow>(`SELECT * FROM ${this.#kind.devices} ORDER BY created, id`).map(
      toLaptop,
    );
  }

  /** Removes a laptop and its credential; true when it existed. Listeners hear about it after. */
  revoke(id: string): boolean {
    const row = this.#store.get<LaptopRow>(`SELECT * FROM ${this.#kind.devices} WHERE id = ?`, id);
    if (!row) return false;
    this.#store.run(`DELETE FROM ${this.#kind.devices} WHERE id = ?`, id);
    const laptop = toLaptop(row);
    const errors: unknown[] = [];
    for (const listener of [...this.#revokeListeners]) {
      // Every listener runs even if one throws: a stream left open would outlive the revocation.
      try {
        listener(laptop);
      } catch (error) {
        errors.push(error);
      }
    }
    if (errors.length) throw new AggregateError(errors, `revoke(${id}): ${errors.length} listener(s) failed`);
    return true;
  }

  /** Calls `listener` with each revoked laptop (to close its streams); returns the unsubscribe. */
  onRevoke(listener: (laptop: Laptop) => void): () => void {
    this.#revokeListeners.add(listener);
    return () => this.#revokeListeners.delete(listener);
  }

  #newId(): string {
    for (;;) {
      const id = hex(crypto.getRandomValues(new Uint8Array(6)));
      if (!this.#store.get(`SELECT 1 FROM ${this.#kind.devices} WHERE id = ?`, id)) return id;
    }
  }

  #checkLockout(address: string, now: number): void {
    const entry = this.#failures.get(address);
    if (!entry || entry.lockedUntil <= now) return;
    const seconds = Math.ceil((entry.lockedUntil - now) / 1000);
    throw new DockError(
      "rate_limited",
      `Cannot pair: too many failed attempts from ${address}; try again in ${
        Math.ceil(seconds / 60)
      } minute(s)`,
      { status: 429, detail: { retry_after: seconds } },
    );
  }

  #recordFailure(address: string, now: number): void {
    // Forget addresses that have gone quiet, so a scan from many addresses cannot grow the map forever.
    for (const [key, entry] of this.#failures) {
      entry.times = entry.times.filter((time) => time > now - FAILURE_WINDOW_MS);
      if (entry.times.length === 0 && entry.lockedUntil <= now) this.#failures.delete(key);
    }
    const entry = this.#failures.get(address) ?? { times: [], lockedUntil: 0 };
    entry.times.push(now);
    if (entry.times.length >= MAX_FAILURES) {
      entry.lockedUntil = now + LOCKOUT_MS;
      entry.times = [];
    }
    this.#failures.set(address, entry);
  }
}

// ---------------------------------------------------------------------------------------------------

function laptopName(name: string): string {
  const trimmed = name.trim();
  if (!trimmed) throw badField("name", "must not be empty");
  if (trimmed.length > 100) throw badField("name", `must be at most 100 characters, got ${trimmed.length}`);
  // deno-lint-ignore no-control-regex
  if (/[\u0000-\u001f\u007f]/.test(trimmed)) throw badField("name", "must not contain control characters");
  return trimmed;
}

function toLaptop(row: LaptopRow): Laptop {
  return { id: row.id, name: row.name, created: row.created, last_seen: row.last_seen };
}

function base32(bytes: Uint8Array): string {
  const alphabet = "abcdefghijklmnopqrstuvwxyz234567";
  let out = "";
  let buffer = 0;
  let bits = 0;
  for (const byte of bytes) {
    buffer = (buffer << 8) | byte;
    bits += 8;
    while (bits >= 5) {
      out += alphabet[(buffer >>> (bits - 5)) & 31];
      bits -= 5;
    }
    buffer &= (1 << bits) - 1; // keep only the bits not yet written, so the buffer never overflows
  }
  if (bits > 0) out += alphabet[(buffer << (5 - bits)) & 31];
  return out;
}
