/**
 * Secret references (`env://NAME`, `<vault>://…`) resolved on the box. Values live only in memory
 * and in the environment of the processes that need them; they are never returned by the API,
 * written to an event or logged. Reports carry presence and length only.
 *
 * @module
 */
import type { Clock } from "../core/clock.ts";
import { run, which } from "../core/runner.ts";

/** The outcome of resolving one reference (`cached`: the value came from the short-lived cache). */
export type SecretResolution = { ok: true; value: string; cached?: boolean } | { ok: false; error: string };

/** The scheme of a reference (`env`, `op`), for what may be said of it: never the rest. */
export function schemeOf(ref: string): string {
  return REFERENCE.exec(ref)?.[1] ?? "unknown";
}

const REFERENCE = /^([a-z][a-z0-9+.-]*):\/\/(.*)$/;

/** Vault command-line tools that read a reference of their scheme and print the value. */
const VAULTS: Record<string, { command: string; args: (ref: string) => string[] }> = {
  op: { command: "op", args: (ref) => ["read", "--no-newline", ref] },
};

/** True when `value` has the form of a secret reference (`scheme://…` with a known secret scheme). */
export function isSecretReference(value: string): boolean {
  const match = REFERENCE.exec(value);
  return match !== null && (match[1] === "env" || match[1] in VAULTS);
}

/** Resolves references, caching values for a short while so a burst of spawns asks a vault once. */
export class SecretResolver {
  #cache = new Map<string, { value: string; until: number }>();
  #ttlMs: number;
  #env: (name: string) => string | undefined;
  #clock: Pick<Clock, "now">;

  /** `clock` says when a cached value is stale (after `ttlMs`, a minute by default). */
  constructor(
    options: { clock: Pick<Clock, "now">; ttlMs?: number; env?: (name: string) => string | undefined },
  ) {
    this.#clock = options.clock;
    this.#ttlMs = options.ttlMs ?? 60_000;
    this.#env = options.env ?? ((name) => Deno.env.get(name));
  }

  /** Resolves `ref`; `fresh` skips the cache (as `POST secrets/test` asks). */
  async resolve(ref: string, options: { fresh?: boolean } = {}): Promise<SecretResolution> {
    const cached = this.#cache.get(ref);
    if (!options.fresh && cached && cached.until > this.#clock.now()) {
      return { ok: true, value: cached.value, cached: true };
    }
    const result = await this.#resolveNow(ref);
    if (result.ok) this.#cache.set(ref, { value: result.value, until: this.#clock.now() + this.#ttlMs });
    return result;
  }

  async #resolveNow(ref: string): Promise<SecretResolution> {
    const match = REFERENCE.exec(ref);
    if (!match) {
      return { ok: false, error: "not a secret reference: expected scheme://…, such as env://NAME" };
    }
    const [, scheme, rest] = match;
    if (scheme === "env") {
      if (!/^[A-Za-z_][A-Za-z0-9_]*$/.test(rest)) {
        return { ok: false, error: `env://${rest}: the name must match [A-Za-z_][A-Za-z0-9_]*` };
      }
      const value = this.#env(rest);
      return value === undefined
        ? { ok: false, error: `env://${rest}: not set in the daemon's environment` }
        : {
          ok: true,
          value,
        };
    }
    const vault = VAULTS[scheme];
    if (!vault) return { ok: false, error: `${scheme}://: no resolver for this scheme on the box` };
    if (!which(vault.command)) {
      return { ok: false, error: `${scheme}://: the ${vault.command} command is not installed on the box` };
    }
    const result = await run(vault.command, vault.args(ref), { timeoutMs: 30_000, maxOutput: 1 << 20 });
    if (result.code !== 0) {
      // The vault's stderr names the failure; it does not contain the value.
      return { ok: false, error: `${scheme}://: ${result.stderr.trim().split("\n")[0] || "lookup failed"}` };
    }
    return { ok: true, value: result.stdout };
  }
}
