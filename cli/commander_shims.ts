/**
 * The few Node built-ins commander uses, on Deno's own APIs, for the vendored copy in
 * `cli/vendor/commander/` (see `cli/vendor/commander.ts` for why). Only what commander reaches while
 * parsing arguments and printing help or errors is implemented; its executable subcommands (a
 * subcommand run as a separate program), which dock does not use, are refused.
 *
 * @module
 */
import { basename, dirname, extname, fromFileUrl, resolve } from "../core/posix_path.ts";

type Listener = (...args: unknown[]) => void;

/** The part of `node:events`' EventEmitter commander calls: `on`, `emit`, `listenerCount`. */
export class EventEmitter {
  #listeners = new Map<string | symbol, Listener[]>();

  on(event: string | symbol, listener: Listener): this {
    const list = this.#listeners.get(event) ?? [];
    list.push(listener);
    this.#listeners.set(event, list);
    return this;
  }

  emit(event: string | symbol, ...args: unknown[]): boolean {
    const list = this.#listeners.get(event);
    if (!list || list.length === 0) return false;
    for (const listener of [...list]) listener.apply(this, args);
    return true;
  }

  listenerCount(event: string | symbol): number {
    return this.#listeners.get(event)?.length ?? 0;
  }
}

/** `node:util`'s `stripVTControlCharacters`: ANSI escape sequences (CSI and OSC) removed. */
export function stripVTControlCharacters(text: string): string {
  // deno-lint-ignore no-control-regex
  return text.replace(/\x1b\[[0-?]*[ -/]*[@-~]|\x1b\][^\x07\x1b]*(?:\x07|\x1b\\)|\x9b[0-?]*[ -/]*[@-~]/g, "");
}

/** `node:path`, for the names commander reads off a script path. */
export const path = { basename, dirname, extname, resolve };

/** `node:fs`, for commander's search for an executable subcommand's file. */
export const fs = {
  existsSync(file: string): boolean {
    try {
      Deno.statSync(file);
      return true;
    } catch {
      return false;
    }
  },
  realpathSync(file: string): string {
    return Deno.realPathSync(file);
  },
};

/** `node:child_process`: executable subcommands are not part of dock's CLI. */
export const childProcess = {
  spawn(): never {
    throw new Error("commander executable subcommands are not supported by dock's vendored commander");
  },
};

const encoder = new TextEncoder();

/** A `process.stdout`/`stderr` for commander's output: synchronous writes, so `process.exit` loses nothing. */
function stream(file: typeof Deno.stdout | typeof Deno.stderr) {
  return {
    get isTTY(): boolean {
      return file.isTerminal();
    },
    get columns(): number | undefined {
      try {
        return Deno.consoleSize().columns;
      } catch {
        return undefined;
      }
    },
    hasColors(): boolean {
      return file.isTerminal();
    },
    write(text: string): boolean {
      const bytes = encoder.encode(text);
      for (let written = 0; written < bytes.length;) written += file.writeSync(bytes.subarray(written));
      return true;
    },
  };
}

/** `process.env` as commander reads it (`name in env`, `env[name]`). */
const env = new Proxy({} as Record<string, string | undefined>, {
  get: (_target, name) => typeof name === "string" ? Deno.env.get(name) : undefined,
  has: (_target, name) => typeof name === "string" && Deno.env.get(name) !== undefined,
});

/** `node:process`, for what commander reads while parsing and how it exits. */
export const process = {
  get argv(): string[] {
    const main = Deno.mainModule;
    return [Deno.execPath(), main.startsWith("file:") ? fromFileUrl(main) : main, ...Deno.args];
  },
  env,
  execArgv: [] as string[],
  get execPath(): string {
    return Deno.execPath();
  },
  get exitCode(): number {
    return Deno.exitCode;
  },
  set exitCode(code: number) {
    Deno.exitCode = code;
  },
  exit(code?: number): never {
    Deno.exit(code ?? Deno.exitCode);
  },
  platform: Deno.build.os === "windows" ? "win32" : Deno.build.os,
  versions: {} as Record<string, string>,
  defaultApp: undefined,
  stdout: stream(Deno.stdout),
  stderr: stream(Deno.stderr),
};
