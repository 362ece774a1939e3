/**
 * The tmux adapter: one tmux server per daemon on a private socket under `<state>/box/`, with its own
 * config. Sessions live in tmux, not in dockd, so they outlive the daemon (a kill -9, an upgrade) and a
 * person can still `tmux -S <socket> attach` over SSH. State is read only through `-F` formats.
 *
 * @module
 */
import { DockError } from "../client/errors.ts";
import { run, type RunResult } from "../core/runner.ts";
import { KEY_NAMES as NAMED_KEYS } from "../client/wire.ts";
import type { Clock } from "../core/clock.ts";
import { ReadyClients } from "./tmux_clients.ts";

/** The keys typed by tmux's name for them (every other entry of `typeKeys` is one literal character). */
const KEY_NAMES: ReadonlySet<string> = new Set(NAMED_KEYS);

// remain-on-exit keeps a finished program's pane (and its exit status) until dockd has seen it;
// window-size latest lets the most recent client (an attach) decide the size; no status line, since
// the app draws its own chrome.
const CONFIG = `set -g remain-on-exit on
set -g history-limit 50000
set -g status off
set -g window-size latest
set -g escape-time 0
set -g default-terminal "tmux-256color"
set -g exit-empty off
set -g set-titles off
set -g mouse off
`;

/** A pane as tmux reports it (one pane per dock session). */
export interface Pane {
  session: string;
  pid: number;
  dead: boolean;
  /**
   * Exit status once tmux has it (it can lag a moment behind `dead`); 128 + the signal for a program a
   * signal ended, as a shell says it (tmux 3.3 reports those apart, in `pane_dead_signal`).
   */
  deadStatus: number | null;
  width: number;
  height: number;
  /** The tmux server's pid. */
  server: number;
}

/** Options of {@linkcode Tmux.newSession}. */
export interface NewSessionOptions {
  name: string;
  cwd: string;
  /** The command tmux runs (a short launcher; long text goes through files). */
  command: string;
  cols?: number;
  rows?: number;
}

/** The daemon's private tmux server. */
export class Tmux {
  readonly socket: string;
  readonly configFile: string;
  /** Clients started ahead for short command sequences (see `#sequence`); none before the first. */
  #ready: ReadyClients;
  /** What a send's wait for its paste to be drawn and go quiet counts time with (`#settleAfterPaste`). */
  #clock: Clock;

  constructor(options: { socket: string; configFile: string; clock: Clock }) {
    this.socket = options.socket;
    this.configFile = options.configFile;
    this.#clock = options.clock;
    this.#ready = new ReadyClients({ tmux: this.#global(), env: tmuxEnv() });
  }

  /** How many clients wait ready for the next short command sequence (none before the first). */
  get ready(): number {
    return this.#ready.count;
  }

  /** How many command sequences clients started ahead have run. */
  get handed(): number {
    return this.#ready.handed;
  }

  /** Ends the clients kept ready (they type nothing); later sequences spawn tmux each time. */
  async close(): Promise<void> {
    await this.#ready.close();
  }

  /** Writes the config the server is started with (read when the server starts). */
  async writeConfig(): Promise<void> {
    await Deno.writeTextFile(this.configFile, CONFIG, { mode: 0o600 });
  }

  /** Runs a tmux command on the private socket; returns its stdout. */
  async command(args: string[], options: { stdin?: string } = {}): Promise<string> {
    const result = await run("tmux", ["-u", "-S", this.socket, "-f", this.configFile, ...args], {
      stdin: options.stdin,
      timeoutMs: 15_000,
      group: false,
      env: { LANG: Deno.env.get("LANG") || "C.UTF-8" },
    });
    if (result.code !== 0) {
      throw new DockError(
        "tmux_failed",
        `tmux ${args[0]}: ${result.stderr.trim() || `exit ${result.code}`}`,
        {
          status: 422,
        },
      );
    }
    return result.stdout;
  }

  /** Starts a detached session running `command` in `cwd`. */
  async newSession(options: NewSessionOptions): Promise<void> {
    await this.command([
      "new-session",
      "-d",
      "-s",
      options.name,
      "-x",
      String(options.cols ?? 200),
      "-y",
      String(options.rows ?? 50),
      "-c",
      options.cwd,
      options.command,
    ]);
  }

  /** Every pane of the server; empty when no server runs. */
  async panes(): Promise<Pane[]> {
    let out: string;
    try {
      out = await this.command([
        "list-panes",
        "-a",
        "-F",
        "#{session_name}\t#{pane_pid}\t#{pane_dead}\t#{pane_dead_status}\t#{pane_width}\t#{pane_height}\t#{pid}\t#{pane_dead_signal}",
      ]);
    } catch (error) {
      // No server (nothing started yet, or it was killed) means no panes.
      // A server with no session left (exit-empty is off) answers "no current target". "error
      // connecting" is not among them: a busy server can refuse a connection for a moment.
      if (/no server running|No such file|no current target/i.test((error as Error).message)) {
        return [];
      }
      throw error;
    }
    return out.split("\n").filter(Boolean).map((line) => {
      const [session, pid, dead, status, width, height, server, signal] = line.split("\t");
      return {
        session,
        pid: Number(pid),
        dead: dead === "1",
        deadStatus: status !== "" ? Number(status) : /^\d+$/.test(signal ?? "") ? 128 + Number(signal) : null,
        width: Number(width),
        height: Number(height),
        server: Number(server),
      };
    });
  }

  /** The visible screen plus `history` lines above it, joined (wrapped lines made whole). */
  async capture(name: string, history: number): Promise<string> {
    const start = history > 0 ? `-${history}` : "0";
    // Through the client kept ready, as keys are: a screen is polled back to back after a send.
    const result = await this.#sequence([["capture-pane", "-p", "-J", "-t", exact(name), "-S", start]]);
    if (result.code !== 0) throw failed("capture-pane", result);
    return result.stdout.replace(/\n+$/, "\n");
  }

  /**
   * Pastes `text` as one block (bracketed when the program asked for it), optionally pressing Enter;
   * with `settle`, the Enter waits for the program to draw the paste (see `#settleAfterPaste`).
   */
  async paste(name: string, text: string, enter: boolean, settle = false): Promise<void> {
    const buffer = `dock-${crypto.randomUUID().slice(0, 8)}`;
    const drawn = enter && settle ? await this.#drawnBefore(name, text) : undefined;
    const pasteBuffer = ["paste-buffer", "-p", "-d", "-b", buffer, "-t", exact(name)];
    if (inlineText(text)) {
      // A short line goes in the command itself, through the client kept ready (`#sequence`): the
      // spawn of tmux was most of a send (bench sessions 9: 15.8 ms against 9.4 for send-keys by hand).
      const result = await this.#sequence([["set-buffer", "-b", buffer, "--", text], pasteBuffer]);
      if (result.code !== 0) throw failed("paste-buffer", result);
    } else {
      // Through stdin and a named buffer: tmux's command line fails past ~16 KB, and a control
      // character has no place in its command syntax. Loading and pasting are one command sequence.
      await this.command(["load-buffer", "-b", buffer, "-", ";", ...pasteBuffer], { stdin: text });
    }
    // Enter stays a separate command: a TUI may read an Enter that follows the paste's end marker at
    // once as part of the paste, and the moment between the two processes is what lets it submit.
    if (!enter) return;
    if (settle) await this.#settleAfterPaste(name, drawn);
    await this.command(["send-keys", "-t", exact(name), "Enter"]);
  }

  /**
   * Types `keys` into session `name` as keystrokes, never a paste: one `send-keys -l` per character,
   * one `send-keys` of tmux's name per named key (checked by the caller: `isKeyEntry`), all in one tmux
   * command sequence (one process, ~3 ms). With `slot` (a keyed call), the slot is claimed (`set -o`)
   * in the same step of the server, so the keys are typed at most once across daemons: `found` when
   * another call had claimed it (and so typed them). `release`: settled slots to unset first.
   */
  async typeKeys(
    name: string,
    keys: readonly string[],
    options: { slot?: string; release?: readonly string[] } = {},
  ): Promise<"typed" | "found"> {
    const commands = [
      ...(options.release ?? []).map((old) => ["set-option", "-s", "-u", `@${old}`]),
      ...(options.slot ? [["set-option", "-s", "-o", `@${options.slot}`, "typed"]] : []),
      ...keys.map((key) =>
        KEY_NAMES.has(key)
          ? ["send-keys", "-t", exact(name), key]
          : ["send-keys", "-t", exact(name), "-l", "--", key]
      ),
    ];
    const result = await this.#sequence(commands);
    if (result.code === 0) return "typed";
    if (options.slot && /already set/.test(said(result))) return "found";
    throw failed(commands[0][0], result);
  }

  /**
   * Runs `commands` as one tmux command sequence (one step of the server: a failing command stops the
   * rest). Through a client started ahead when it fits (see daemon/tmux_clients.ts): spawning tmux is
   * most of a keystroke's cost (measured: p50 3.3–4.0 ms to spawn `tmux send-keys`, 0.76 ms to hand the
   * same command to a client started ahead, `tmux source-file -`, which connects and then waits for its
   * stdin). That client gets the whole sequence in one write no longer than PIPE_BUF, so the pipe holds
   * all of it or none: a daemon killed mid-way leaves the client the whole sequence (run at its end of
   * input, as a spawned tmux outlives the daemon) or nothing.
   */
  async #sequence(commands: string[][]): Promise<RunResult> {
    const sequence = commands.map((words) => words.map(tmuxQuote).join(" ")).join(" ; ");
    const result = await this.#ready.run(sequence);
    // A client that never reached the server ran nothing (it was started while none was running).
    if (result && (result.code === 0 || !NOT_CONNECTED.test(result.stderr))) return result;
    return await run("tmux", [
      ...this.#global(),
      ...commands.flatMap((words, i) => [
        ...(i ? [";"] : []),
        // A word that is a lone `;` separates commands on tmux's command line; `\;` is the character.
        ...words.map((word) => word === ";" ? "\\;" : word),
      ]),
    ], { timeoutMs: 15_000, group: false, env: tmuxEnv() });
  }

  /** The options every tmux command of this server starts with. */
  #global(): string[] {
    return ["-u", "-S", this.socket, "-f", this.configFile];
  }

  /**
   * Types a keyed send's text into session `name` at most once across daemons, by its `slot` (a name
   * made from its key): one tmux command sequence loads the text into a buffer of that name, claims
   * the slot (`set -o`, which fails when it is set already), pastes and deletes the buffer, marks the
   * slot pasted and, with `enter`, sets a marker for {@linkcode Tmux.pressEnter}: from the claim on,
   * one step of the server, nothing of another client in between. No process more than a plain send.
   * The claim comes after the load: a daemon killed before tmux had its input leaves no claim behind.
   *
   * A daemon started after one was killed mid-send and asked again finds the slot claimed and pasted,
   * or claims it first (then the killed one's command, still on its way, stops at its claim). Answers
   * `claimed` when this call claimed the slot and typed, `found` when another had, and `finished` when
   * another claimed it but its paste failed and this call pasted. `release`: slots to unset first, of
   * sends that have settled and that no killed daemon ever started (the slot of one that a killed
   * daemon started stays set for good: its command may still come, and the claim is what stops it).
   *
   * A killed daemon's text is in tmux whole unless it died while writing a prompt larger than a pipe's
   * buffer (64 KiB) to tmux's input: then the part written is what is pasted.
   */
  async pasteOnce(
    name: string,
    slot: string,
    text: string,
    options: { enter: boolean; release?: readonly string[]; settle?: boolean },
  ): Promise<"claimed" | "finished" | "found"> {
    const release = (options.release ?? []).map((old) => ["set-option", "-s", "-u", `@${old}`]);
    const claim = ["set-option", "-s", "-o", `@${slot}`, "claimed"];
    const paste = pasteAndMark(name, slot, options.enter);
    if (options.enter && options.settle) this.#pasted.set(slot, await this.#drawnBefore(name, text));
    if (inlineText(text)) {
      // A short line goes in the command itself, through a client started ahead (`#sequence`), as a
      // plain paste's does: one spawn of tmux less (bench sessions 9: a keyed send answered after p50
      // 4.0–4.9 ms, most of it that spawn).
      const result = await this.#sequence([
        ...release,
        ["set-buffer", "-b", slot, "--", text],
        claim,
        ...paste,
      ]);
      if (result.code === 0) return "claimed";
      if (!/already set/.test(said(result))) throw failed("paste-buffer", result);
    } else {
      try {
        await this.command(commandLine([...release, ["load-buffer", "-b", slot, "-"], claim, ...paste]), {
          stdin: text,
        });
        return "claimed";
      } catch (error) {
        if (!/already set/.test((error as Error).message)) throw error;
      }
    }
    if (await this.#option(`@${slot}`) === "pasted") {
      await this.command(["delete-buffer", "-b", slot]).catch(() => {}); // the copy this call loaded
      return "found";
    }
    // Claimed, and its paste failed (its session had gone, say): the buffer this call loaded, once.
    await this.command(commandLine(paste));
    return "finished";
  }

  /**
   * Presses Enter after {@linkcode Tmux.pasteOnce}, once: the marker is deleted in the same step, and
   * a missing marker stops the step before the key (pressed already, or no Enter was asked). True
   * when it pressed it.
   */
  async pressEnter(name: string, slot: string, settle = false): Promise<boolean> {
    const drawn = this.#pasted.get(slot);
    this.#pasted.delete(slot);
    if (settle) await this.#settleAfterPaste(name, drawn);
    try {
      await this.command([
        "delete-buffer",
        "-b",
        enterMark(slot),
        ";",
        "send-keys",
        "-t",
        exact(name),
        "Enter",
      ]);
      return true;
    } catch (error) {
      if (/unknown buffer|no buffer/.test((error as Error).message)) return false;
      throw error;
    }
  }

  /** Deletes what a keyed send that failed left in tmux: its buffer and its Enter marker. */
  async dropSlot(slot: string): Promise<void> {
    this.#pasted.delete(slot);
    for (const buffer of [slot, enterMark(slot)]) {
      await this.command(["delete-buffer", "-b", buffer]).catch(() => {});
    }
  }

  /** What each keyed send's paste will look like drawn, from its paste until its Enter. */
  #pasted = new Map<string, Drawn>();

  /** The end of `text` as a screen shows it, and how often the screen shows it before the paste. */
  async #drawnBefore(name: string, text: string): Promise<Drawn> {
    const tail = text.trim().split("\n").at(-1)?.replace(/\s+/g, " ").slice(-12) ?? "";
    return { tail, count: tail ? countIn(await this.#screen(name), tail) : 0 };
  }

  async #screen(name: string): Promise<string> {
    const screen = await this.command(["capture-pane", "-p", "-J", "-t", exact(name)]).catch(() => "");
    return screen.replace(/\s+/g, " ");
  }

  /**
   * Waits, before the Enter that follows a paste, until the program drew the paste (the end of its text
   * once more on its screen: a long paste is drawn as a placeholder), then until its screen stayed the
   * same for {@linkcode ENTER_AFTER_PASTE_MS}, at most {@linkcode PASTE_DRAWN_MS} in all: as a person
   * sees the text, then presses Enter. Without `drawn` (a send resumed after a kill), the quiet alone.
   */
  async #settleAfterPaste(name: string, drawn: Drawn | undefined): Promise<void> {
    const clock = this.#clock;
    const sleep = (ms: number) => new Promise<void>((resolve) => clock.after(ms, resolve));
    const deadline = clock.now() + PASTE_DRAWN_MS;
    let screen = await this.#screen(name);
    while (drawn?.tail && clock.now() < deadline && countIn(screen, drawn.tail) <= drawn.count) {
      await sleep(10);
      screen = await this.#screen(name);
    }
    // Then quiet: a program still busy (Gemini CLI running its start-up hooks) read the paste and the
    // Enter in one go even 100 ms apart; one whose screen never settles (a spinner) gets it at the bound.
    let quietSince = clock.now();
    while (clock.now() - quietSince < ENTER_AFTER_PASTE_MS && clock.now() < deadline) {
      await sleep(20);
      const now = await this.#screen(name);
      if (now !== screen) [screen, quietSince] = [now, clock.now()];
    }
  }

  /** A server option's value; null when it is not set. */
  async #option(option: string): Promise<string | null> {
    try {
      return (await this.command(["show-options", "-s", "-v", option])).trim();
    } catch (error) {
      if (/invalid option|unknown option/.test((error as Error).message)) return null;
      throw error;
    }
  }

  /**
   * Asks the server to reap its exited children. Seen here: a tmux server started by dockd sometimes
   * misses the SIGCHLD of a pane's program, leaving it a zombie with no `pane_dead_status`; a SIGCHLD
   * sent by hand makes it reap and record the status.
   */
  nudge(server: number): void {
    try {
      Deno.kill(server, "SIGCHLD");
    } catch {
      // the server is gone: nothing to reap
    }
  }

  /** Ends a session (its pane's processes get SIGHUP from tmux). */
  async kill(name: string): Promise<void> {
    await this.command(["kill-session", "-t", `=${name}`]).catch((error) => {
      if (!/can't find session|no server running|error connecting/i.test(error.message)) throw error;
    });
  }
}

/** Options of {@linkcode attachCommand}. */
export interface AttachCommandOptions {
  /** The server's socket (`tmux -S`). */
  socket: string;
  session: string;
  /** The tmux binary. @default {"tmux"} */
  tmux?: string;
}

/**
 * The command line and environment of a tmux client attached to `session`, to run in a PTY (the
 * attach). `-u`: the app always renders UTF-8, whatever locale dockd inherited. No `-f`: should the
 * server be gone, attach-session starts one only to find no session, and with dockd's config
 * (exit-empty off) that server would stay behind.
 */
export function attachCommand(
  options: AttachCommandOptions,
): { cmd: string; args: string[]; env: Record<string, string> } {
  return {
    cmd: options.tmux ?? "tmux",
    args: ["-u", "-S", options.socket, "attach-session", "-t", exact(options.session)],
    env: clientEnv(),
  };
}

/** A tmux client's environment: dockd's own, made safe for a nested, UTF-8, xterm-256color client. */
function clientEnv(): Record<string, string> {
  const env = Deno.env.toObject();
  // tmux refuses to attach from inside tmux ("sessions should be nested with care") when $TMUX is set.
  delete env.TMUX;
  delete env.TMUX_PANE;
  const utf8 = /utf-?8/i;
  if (env.LC_ALL !== undefined && !utf8.test(env.LC_ALL)) delete env.LC_ALL;
  const locale = env.LANG && utf8.test(env.LANG) ? env.LANG : "C.UTF-8";
  return { ...env, TERM: "xterm-256color", LANG: locale, LC_CTYPE: locale };
}

/**
 * How long the screen stays the same, after a paste was drawn, before the Enter. Gemini CLI 0.61 turns an Enter read within 40 ms
 * of a bracketed paste into a newline (its "unsafe paste" guard, off only under the kitty keyboard
 * protocol, which tmux does not speak): dock's prompts were typed and never submitted (the real-agent
 * suite). Measured: 5 ms after tmux's paste, a newline; 80 ms, submitted, on an idle box; a fixed 60 ms
 * still lost prompts on a loaded one, and 100 ms after the draw lost the first prompt to a Gemini still
 * running its start-up hooks: hence the draw, then the quiet.
 */
export const ENTER_AFTER_PASTE_MS = 100;

/** At most this long for a program to draw a paste (one that draws nothing: the Enter goes anyway). */
const PASTE_DRAWN_MS = 1000;

/** A paste's end as drawn, and how often the screen showed it before. */
interface Drawn {
  tail: string;
  count: number;
}

function countIn(screen: string, part: string): number {
  return screen.split(part).length - 1;
}

/**
 * Whether {@linkcode Tmux.paste} may put `text` in tmux's command syntax: a short line with no control
 * character (a newline would end the command). Quoted, with its commands, it stays within one PIPE_BUF
 * write in all but rare cases; past that `#sequence` spawns tmux with it as an argument, as before.
 */
function inlineText(text: string): boolean {
  if (text.length > 1024) return false;
  for (let i = 0; i < text.length; i++) {
    const code = text.charCodeAt(i);
    if (code < 0x20 || code === 0x7f) return false;
  }
  return true;
}

/** What a tmux client said first when its command failed. */
function said(result: RunResult): string {
  return (result.stderr.trim() || result.stdout.trim()).split("\n")[0];
}

/** The error of a failed tmux command sequence, named by its first command. */
function failed(command: string, result: RunResult): DockError {
  return new DockError("tmux_failed", `tmux ${command}: ${said(result) || `exit ${result.code}`}`, {
    status: 422,
  });
}

/** What a tmux client says when it cannot reach its server (it then ran nothing). */
const NOT_CONNECTED = /no server running|error connecting to|server exited unexpectedly/;

/** The environment of a tmux client: UTF-8 whatever the daemon's locale. */
function tmuxEnv(): Record<string, string> {
  return { LANG: Deno.env.get("LANG") || "C.UTF-8" };
}

/**
 * A word in tmux's command syntax (what `source-file` reads), taken literally: single quotes, where
 * tmux expands nothing (no `$`, `~`, `#` comment or `;`), a single quote itself in double quotes.
 */
export function tmuxQuote(word: string): string {
  return `'${word.replaceAll("'", `'"'"'`)}'`;
}

/** A target that matches the session name exactly (tmux otherwise matches prefixes and patterns). */
export function exact(name: string): string {
  return `=${name}:`;
}

/** The marker buffer that says a keyed send still owes its Enter. */
function enterMark(slot: string): string {
  return `${slot}-enter`;
}

/** Pastes a keyed send's loaded buffer and, in the same step, marks its slot pasted (and its Enter owed). */
function pasteAndMark(name: string, slot: string, enter: boolean): string[][] {
  return [
    ["paste-buffer", "-p", "-d", "-b", slot, "-t", exact(name)],
    ["set-option", "-s", `@${slot}`, "pasted"],
    ...(enter ? [["set-buffer", "-b", enterMark(slot), "1"]] : []),
  ];
}

/** Commands as one tmux command line: each after a `;` word (none of these words is a `;` itself). */
function commandLine(commands: string[][]): string[] {
  return commands.flatMap((words, i) => i ? [";", ...words] : words);
}
