/**
 * `ctx.kv`: a plugin's small key-value store, `kv.json` in its data folder. Kept by the parent, not the
 * worker (a plugin needs no write permission for it), bounded in keys and bytes (UTF-8, not characters),
 * written atomically. A plugin granted write of its data folder can put anything there, so the file is
 * read as a stranger's: never through a symlink, never past the bound (450 MB written there once took
 * the daemon to 1 GB resident when it was read whole).
 *
 * @module
 */
import { errorText, type Log } from "../core/log.ts";
import { join } from "../core/posix_path.ts";
import { DockError } from "../client/errors.ts";
import { writeAtomic } from "../core/files.ts";

/** The most bytes a store holds (its JSON, UTF-8). */
export const KV_MAX_BYTES = 1024 * 1024;
/** The longest key. */
export const KV_MAX_KEY = 256;

/** One plugin's store. */
export class PluginKv {
  readonly path: string;
  #data: Map<string, unknown> | null = null;
  #writing: Promise<void> = Promise.resolve();
  #log: Log;

  /** The store in `dataDir`; a write that fails is said to `log` (the process's own). */
  constructor(dataDir: string, log: Log) {
    this.path = join(dataDir, "kv.json");
    this.#log = log;
  }

  /** The value of `key`, or null. */
  async get(key: unknown): Promise<unknown> {
    return (await this.#load()).get(checkKey(key)) ?? null;
  }

  /** Sets `key` (a JSON value); refused when the store would outgrow {@linkcode KV_MAX_BYTES}. */
  async set(key: unknown, value: unknown): Promise<void> {
    const data = await this.#load();
    const name = checkKey(key);
    if (value === undefined) throw new DockError("invalid_value", "ctx.kv.set needs a value (JSON)");
    const next = new Map(data).set(name, JSON.parse(JSON.stringify(value)));
    const text = JSON.stringify(Object.fromEntries(next));
    const bytes = new TextEncoder().encode(text).length;
    if (bytes > KV_MAX_BYTES) {
      throw new DockError("kv_full", `the store would hold ${bytes} bytes; the limit is ${KV_MAX_BYTES}`, {
        status: 413,
      });
    }
    this.#data = next;
    await this.#save(text);
  }

  /** Removes `key`. */
  async delete(key: unknown): Promise<void> {
    const data = await this.#load();
    if (!data.delete(checkKey(key))) return;
    await this.#save(JSON.stringify(Object.fromEntries(data)));
  }

  /** Keys starting with `prefix`, sorted. */
  async list(prefix: unknown): Promise<string[]> {
    const start = typeof prefix === "string" ? prefix : "";
    return [...(await this.#load()).keys()].filter((k) => k.startsWith(start)).sort();
  }

  async #load(): Promise<Map<string, unknown>> {
    if (this.#data) return this.#data;
    const text = await readStore(this.path);
    let parsed: Record<string, unknown> = {};
    try {
      if (text) parsed = JSON.parse(text);
    } catch {
      // A store broken by hand starts empty rather than failing every call.
    }
    this.#data = new Map(Object.entries(parsed && typeof parsed === "object" ? parsed : {}));
    return this.#data;
  }

  #save(text: string): Promise<void> {
    this.#writing = this.#writing.then(() => writeAtomic(this.path, text, 0o600)).catch((error) => {
      this.#log.error(`plugin store ${this.path}: ${errorText(error)}`);
    });
    return this.#writing;
  }
}

/**
 * The store's text, or null when there is none. Refused (the store is not used) when `kv.json` is a
 * symlink or not a file, or when it is over {@linkcode KV_MAX_BYTES}: its size is looked at before it is
 * read, and no more than the bound is read from the file opened (which must be the file looked at).
 */
async function readStore(path: string): Promise<string | null> {
  const info = await Deno.lstat(path).catch((error) => {
    if (error instanceof Deno.errors.NotFound || error instanceof Deno.errors.NotADirectory) return null;
    throw error;
  });
  if (!info) return null;
  const refuse = (why: string): never => {
    // The file's name, not its path: what the plugin is told need not say where dock keeps its state.
    throw new DockError("kv_refused", `kv.json ${why}; remove it to start the store afresh`, { status: 409 });
  };
  if (info.isSymlink || !info.isFile) refuse("is not a plain file");
  if (info.size > KV_MAX_BYTES) refuse(`is ${info.size} bytes, over the ${KV_MAX_BYTES}-byte limit`);
  using file = await Deno.open(path, { read: true });
  const opened = await file.stat();
  if (opened.ino !== info.ino || opened.dev !== info.dev) refuse("changed while it was read");
  const buffer = new Uint8Array(KV_MAX_BYTES + 1);
  let length = 0;
  while (length < buffer.length) {
    const n = await file.read(buffer.subarray(length));
    if (n === null) break;
    length += n;
  }
  if (length > KV_MAX_BYTES) refuse(`is over the ${KV_MAX_BYTES}-byte limit`);
  return new TextDecoder().decode(buffer.subarray(0, length));
}

function checkKey(key: unknown): string {
  if (typeof key !== "string" || key.length === 0 || key.length > KV_MAX_KEY || key.includes("\0")) {
    throw new DockError("invalid_key", `a key is a string of 1 to ${KV_MAX_KEY} characters without NUL`);
  }
  return key;
}
