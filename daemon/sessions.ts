/**
 * Sessions: terminal sessions on the box's private tmux server, usually running a coding agent (spec
 * 2.3, 4.2): create, list, end, screen, send and wait.
 *
 * A session is started through a launcher script, never through tmux's command line: the command, the
 * first prompt and the environment go through files in a 0700 folder (the environment file, which may
 * hold resolved secrets, is deleted by the launcher as soon as it is read), so any length and any
 * characters work. A sent prompt starts a turn (tools such as Codex and Cursor report only
 * `finished`). The rest of a session's life has its own modules: what is typed into it (sends, keys and
 * answers: `session_input.ts`), the agent state its tool reports (`agent_state.ts`), its program's exit
 * (`exit_watcher.ts`) and keyed sends (`send_ledger.ts`).
 *
 * @module
 */
import { join } from "../core/posix_path.ts";
import { DockError, notFound } from "../client/errors.ts";
import type {
  AgentPreset,
  AgentState,
  AnswerResult,
  KeysResult,
  PermissionAnswer,
  Session,
  SessionCreate,
  WaitingReason,
  WaitResult,
  Worktree,
} from "../client/wire.ts";
import { agentArgs, availableAgents } from "./agents.ts";
import type { AgentStates } from "./agent_state.ts";
import type { EventBus } from "../core/events.ts";
import type { ExitWatcher } from "./exit_watcher.ts";
import type { Locations } from "./locations.ts";
import { groupMembers, groupRss, pollUntil, processes } from "./procs.ts";
import { killGroup, loginShell, shellQuote } from "../core/runner.ts";
import type { Clock } from "../core/clock.ts";
import { SESSION_NAME } from "../client/schemas.ts";
import type { Store } from "../core/store.ts";
import type { SendLedger } from "./send_ledger.ts";
import type { Tmux } from "./tmux.ts";
import { SessionInput } from "./session_input.ts";
import { TurnChecks } from "./turn_check.ts";
import type { Worktrees } from "./worktrees.ts";

interface SessionRow {
  name: string;
  location: string;
  worktree: string;
  path: string;
  command: string;
  agent: string | null;
  agent_state: AgentState;
  state_time: string | null;
  reason: WaitingReason | null;
  exited: number;
  exit_code: number | null;
  created: string;
  from_session: string | null;
}

/** What a session runs (see {@linkcode Sessions.program}). */
export interface SessionProgram {
  /** The agent preset's id; null for a command or the login shell. */
  agent: string | null;
  /** The command line it runs; null for the login shell. */
  command: string | null;
  /** The agent preset, when it runs one. */
  preset?: AgentPreset;
}

/** Dependencies of {@linkcode Sessions}. */
export interface SessionsOptions {
  store: Store;
  bus: Pick<EventBus, "publish">;
  tmux: Pick<
    Tmux,
    | "panes"
    | "newSession"
    | "kill"
    | "capture"
    | "paste"
    | "pasteOnce"
    | "typeKeys"
    | "pressEnter"
    | "dropSlot"
    | "writeConfig"
    | "command"
  >;
  locations: Pick<Locations, "config">;
  worktrees: Pick<Worktrees, "target" | "environment">;
  /** Where the agent state lives: a sent prompt starts a turn; a change wakes `wait`. */
  states: Pick<AgentStates, "set" | "onChange" | "forget" | "history">;
  /** Told which sessions tmux is still making; an exit wakes `wait`. */
  exits: Pick<ExitWatcher, "making" | "made" | "abandoned" | "onChange">;
  /** Keyed sends. */
  ledger: Pick<SendLedger, "once">;
  /** Folder of the launcher files (`<state>/box/sessions`). */
  dir: string;
  /** Dates sessions and input, and times `wait`. */
  clock: Clock;
}

/** Owns the sessions. */
export class Sessions {
  #o: SessionsOptions;
  #changed = new Set<() => void>();
  #unsubscribe: (() => void)[];
  #checks: TurnChecks;
  #input: SessionInput;

  constructor(options: SessionsOptions) {
    this.#o = options;
    options.store.addColumn("sessions", "seen TEXT"); // a box made before review
    this.#input = new SessionInput({
      tmux: options.tmux,
      bus: options.bus,
      ledger: options.ledger,
      clock: options.clock,
      sessions: this,
      turns: {
        started: (name, at) => this.#inputStartsTurn(name, at),
        submitted: (name, at) => this.#submitted(name, at),
        interrupted: (name) => this.interrupted(name),
        // An answer is input to the agent: a turn goes on (or, for a denial, ends: the pane is checked).
        answered: (name, at) => {
          const row = this.#row(name);
          if (row?.agent && !row.exited) this.#inputStartsTurn(name, at);
        },
      },
    });
    this.#checks = new TurnChecks({
      clock: options.clock,
      tmux: options.tmux,
      // No tool reports an interrupted turn: the box decides it, and announces it as a hook's report
      // would be, or the app (and hooks, notices) learned of it only at their next reload.
      states: {
        set: (name, state, setting) => {
          const changed = options.states.set(name, state, setting);
          if (changed && state === "waiting") {
            options.bus.publish({
              type: "agent.waiting",
              origin: "dock",
              data: { session: name, reason: setting.reason ?? null, cause: setting.cause },
            });
          }
          return changed;
        },
      },
      row: (name) => {
        const row = this.#row(name);
        return row
          ? { agent_state: row.agent_state, state_time: row.state_time, exited: row.exited === 1 }
          : null;
      },
    });
    this.#unsubscribe = [
      options.states.onChange(() => this.#notify()),
      options.exits.onChange(() => this.#notify()),
    ];
  }

  /** Every session, oldest first. */
  list(): Session[] {
    return this.#o.store.all<SessionRow>("SELECT * FROM sessions ORDER BY created, name").map(toSession);
  }

  /** One session; 404 when unknown. */
  get(name: string): Session {
    const row = this.#row(name);
    if (!row) throw notFound("session", name);
    return toSession(row);
  }

  /** A person attached to the session (a look at what its agent did: `GET review`'s `unseen`). */
  looked(name: string): void {
    this.#o.store.run("UPDATE sessions SET seen = ? WHERE name = ?", this.#now(), name);
  }

  /** When a person last attached to the session, or null. */
  seenAt(name: string): string | null {
    return this.#o.store.get<{ seen: string | null }>("SELECT seen FROM sessions WHERE name = ?", name)
      ?.seen ?? null;
  }

  /** One session with the last changes of its agent state and their causes (`GET sessions/{name}`). */
  explain(name: string): Session {
    return { ...this.get(name), history: this.#o.states.history(name) };
  }

  /** The presets offered for a location (built-ins installed on the box, plus its config's). */
  async presets(location?: string): Promise<AgentPreset[]> {
    const config = location ? (await this.#o.locations.config(location)).effective : {};
    return availableAgents(config);
  }

  /**
   * What a session in `location` would run, checked before anything starts (so the
   * `before:session.create` gates see the real command): the agent preset's command, or `command`, or
   * neither (the login shell). 400 for both, 422 for an agent that is not installed or not a preset.
   */
  async program(
    location: string,
    request: Pick<SessionCreate, "agent" | "command">,
  ): Promise<SessionProgram> {
    if (request.agent && request.command) {
      throw new DockError("invalid_request", "command: give either agent or command, not both", {
        status: 400,
      });
    }
    if (!request.agent) return { agent: null, command: request.command || null };
    const preset = (await this.presets(location)).find((p) => p.id === request.agent);
    if (!preset) {
      throw new DockError(
        "unknown_agent",
        `agent: '${request.agent}' is not installed on this box or not a preset of '${location}'`,
        { status: 422, detail: { field: "agent" } },
      );
    }
    return { agent: preset.id, command: preset.command, preset };
  }

  /** Starts a session running `command`, or an agent preset with its first prompt. */
  async create(request: SessionCreate & { from_session?: string }, origin: string): Promise<Session> {
    const worktree = this.#o.worktrees.target(request.location);
    const program = await this.program(worktree.location, request);
    const command = program.command ?? "";
    const args = program.preset ? agentArgs(program.preset, request.prompt) : [];
    const agent = program.agent;
    if (!agent && request.prompt) {
      throw new DockError("invalid_request", "prompt: a first prompt needs an agent", { status: 400 });
    }
    const name = request.name ?? this.#freeName(worktree, agent);
    if (!SESSION_NAME.test(name)) {
      throw new DockError(
        "invalid_request",
        `name: must be letters, digits, '_' and '-' (at most 64, no '.' or ':'), got ${JSON.stringify(name)}`,
        { status: 400, detail: { field: "name" } },
      );
    }
    if (this.#row(name)) throw new DockError("exists", `session '${name}' already exists`, { status: 409 });
    const panes = await this.#o.tmux.panes();
    if (panes.some((p) => p.session === name)) {
      throw new DockError("exists", `a tmux session '${name}' already exists on the box`, { status: 409 });
    }

    const { env } = await this.#o.worktrees.environment(worktree);
    env.DOCK_SESSION = name;
    env.TERM = "xterm-256color";
    const dir = join(this.#o.dir, name);
    await Deno.mkdir(dir, { recursive: true, mode: 0o700 });
    await Deno.writeTextFile(join(dir, "env"), envScript(env), { mode: 0o600 });
    const shell = loginShell();
    const launch = [
      "set -a",
      `. ${shellQuote(join(dir, "env"))}`,
      "set +a",
      `rm -f ${shellQuote(join(dir, "env"))}`,
      `cd ${shellQuote(worktree.path)} || exit 1`,
      command
        // The command runs in a login shell so the user's PATH applies; arguments pass through "$@".
        ? `exec ${shellQuote(shell)} -l -c ${shellQuote(`${command} "$@"`)} dock-session ${
          args.map(shellQuote).join(" ")
        }`
        : `exec ${shellQuote(shell)} -l`,
    ].join("\n");
    await Deno.writeTextFile(join(dir, "launch.sh"), launch + "\n", { mode: 0o600 });
    const created = this.#now();
    this.#o.store.run(
      `INSERT INTO sessions (name, location, worktree, path, command, agent, agent_state, state_time, created,
       from_session) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
      name,
      worktree.location,
      worktree.name,
      worktree.path,
      command || shell,
      agent,
      // An agent given a first prompt is working from the start.
      agent && request.prompt ? "running" : "idle",
      created,
      created,
      request.from_session ?? null,
    );
    this.#o.exits.making(name);
    try {
      await this.#o.tmux.newSession({
        name,
        cwd: worktree.path,
        command: `sh ${shellQuote(join(dir, "launch.sh"))}`,
        cols: request.cols,
        rows: request.rows,
      });
    } catch (error) {
      this.#o.exits.abandoned(name);
      this.#o.store.run("DELETE FROM sessions WHERE name = ?", name);
      await Deno.remove(dir, { recursive: true }).catch(() => {});
      throw error;
    }
    this.#o.exits.made(name);
    this.#o.bus.publish({
      type: "session.created",
      origin,
      data: { session: name, location: worktree.location, worktree: worktree.name, agent },
    });
    return this.get(name);
  }

  /** Ends a session and every process it started. */
  async remove(name: string, origin: string): Promise<Session> {
    const session = this.get(name);
    const pane = (await this.#o.tmux.panes()).find((p) => p.session === name);
    if (pane && !pane.dead) {
      // The pane's program leads its own process group: end the group, not just the shell.
      killGroup(pane.pid, "SIGTERM");
      killGroup(pane.pid, "SIGCONT");
      await pollUntil(() => !groupMembers(pane.pid).length, { everyMs: 25, timeoutMs: 2000 });
      killGroup(pane.pid, "SIGKILL");
    }
    await this.#o.tmux.kill(name);
    this.#o.store.run("DELETE FROM sessions WHERE name = ?", name);
    this.#o.states.forget(name);
    this.#input.forget(name);
    await Deno.remove(join(this.#o.dir, name), { recursive: true }).catch(() => {});
    this.#o.bus.publish({ type: "session.removed", origin, data: { session: name } });
    this.#notify();
    return session;
  }

  /** Ends every session of a worktree (before the worktree is removed). */
  async removeAll(worktree: Worktree, origin = "dockd"): Promise<void> {
    for (const session of this.list()) {
      if (session.location === worktree.location && session.worktree === worktree.name) {
        await this.remove(session.name, origin);
      }
    }
  }

  /** The screen and `history` lines above it. */
  async screen(name: string, history: number): Promise<string> {
    this.get(name);
    return await this.#o.tmux.capture(name, history);
  }

  /**
   * Types a prompt: one pasted block, then Enter unless `enter` is false; with `key`, at most once per
   * key; with `unlessWaiting: "permission"`, refused (409) while the agent waits on a permission prompt.
   * In the session's line of input, after its earlier sends and keys (`session_input.ts`).
   */
  send(
    name: string,
    text: string,
    enter: boolean,
    origin: string,
    options: { key?: string; unlessWaiting?: "permission" } = {},
  ): Promise<Session> {
    return this.#input.send(name, text, enter, origin, options);
  }

  /** Types keystrokes (`POST sessions/{name}/keys`), in the session's line of input (`session_input.ts`). */
  keys(
    name: string,
    keys: readonly string[],
    origin: string,
    options: { key?: string } = {},
  ): Promise<KeysResult> {
    return this.#input.keys(name, keys, origin, options);
  }

  /** Answers the agent's permission prompt (`POST sessions/{name}/answer`; `session_input.ts`). */
  answer(
    name: string,
    answer: PermissionAnswer,
    origin: string,
    options: { key?: string } = {},
  ): Promise<AnswerResult> {
    return this.#input.answer(name, answer, origin, options);
  }

  /**
   * A person submitted input typed into the attached terminal: an agent at rest starts a turn, as with
   * `send` (Codex and Cursor report no start of one; a Claude hook confirms it).
   */
  typed(name: string): void {
    this.#submitted(name);
  }

  #submitted(name: string, time?: string): void {
    const row = this.#row(name);
    if (row?.agent && !row.exited && row.agent_state !== "running") this.#inputStartsTurn(name, time);
  }

  /**
   * A person typed Esc or Ctrl-C into the attached terminal: a running agent may have stopped its turn
   * without saying so (`turn_check.ts`).
   */
  interrupted(name: string): void {
    const row = this.#row(name);
    if (row?.agent && !row.exited && row.agent_state === "running") this.#checks.after(name);
  }

  /**
   * Input submitted to an agent starts a turn. An answer to a permission prompt may instead end it (a
   * denial, which no tool reports): the pane is checked once it settles.
   */
  #inputStartsTurn(name: string, time?: string): void {
    const before = this.#row(name);
    this.#o.states.set(name, "running", { time, cause: "input" });
    if (before?.agent_state === "waiting" && before.reason === "permission") this.#checks.after(name);
  }

  /**
   * Waits until the agent is in one of `states` (reported after `after` when given), or its program
   * exits, or `timeoutMs` passes.
   */
  async wait(
    name: string,
    options: { states: AgentState[]; after?: Date; timeoutMs: number; signal?: AbortSignal },
  ): Promise<WaitResult> {
    const deadline = this.#o.clock.now() + options.timeoutMs;
    while (true) {
      const session = this.get(name);
      const reportedAfter = !options.after ||
        (session.state_time !== null && Date.parse(session.state_time) > options.after.getTime());
      if (session.exited || (options.states.includes(session.agent_state) && reportedAfter)) {
        return { state: session.agent_state, timed_out: false, exited: session.exited };
      }
      const left = deadline - this.#o.clock.now();
      if (left <= 0 || options.signal?.aborted) {
        return { state: session.agent_state, timed_out: true, exited: false };
      }
      await this.#nextChange(Math.min(left, 1000), options.signal);
    }
  }

  /** Sends a signal to every session's process group in a worktree (pause and resume). */
  async signalWorktree(worktree: Worktree, signal: "SIGSTOP" | "SIGCONT"): Promise<number> {
    const panes = await this.#o.tmux.panes();
    let count = 0;
    for (const session of this.list()) {
      if (session.location !== worktree.location || session.worktree !== worktree.name) continue;
      const pane = panes.find((p) => p.session === session.name && !p.dead);
      if (pane) {
        killGroup(pane.pid, signal);
        count++;
      }
    }
    return count;
  }

  /** Agent sessions still running, with the memory their process groups use (for the guard). */
  async agentUsage(): Promise<{ session: string; location: string; worktree: string; rss: number }[]> {
    const panes = await this.#o.tmux.panes();
    const procs = processes();
    return this.list().filter((s) => s.agent && !s.exited).flatMap((s) => {
      const pane = panes.find((p) => p.session === s.name && !p.dead);
      return pane
        ? [{ session: s.name, location: s.location, worktree: s.worktree, rss: groupRss(pane.pid, procs) }]
        : [];
    });
  }

  /** Pauses one agent session's processes (the guard's `pause_agents`). */
  async pauseSession(name: string): Promise<void> {
    const pane = (await this.#o.tmux.panes()).find((p) => p.session === name && !p.dead);
    if (pane) killGroup(pane.pid, "SIGSTOP");
  }

  /** Makes the launcher folder and writes the tmux server's config. */
  async start(): Promise<void> {
    await Deno.mkdir(this.#o.dir, { recursive: true, mode: 0o700 });
    await this.#o.tmux.writeConfig();
  }

  /** Wakes every `wait` (sessions run on in tmux). */
  close(): void {
    this.#checks.close();
    for (const unsubscribe of this.#unsubscribe) unsubscribe();
    for (const wake of this.#changed) wake();
  }

  #freeName(worktree: Worktree, agent: string | null): string {
    const base = `${worktree.name}-${agent ?? "shell"}`.replace(/[^A-Za-z0-9_-]/g, "-").slice(0, 56);
    let name = base;
    for (let n = 2; this.#row(name); n++) name = `${base}-${n}`;
    return name;
  }

  #now(): string {
    return new Date(this.#o.clock.now()).toISOString();
  }

  #row(name: string): SessionRow | undefined {
    return this.#o.store.get<SessionRow>("SELECT * FROM sessions WHERE name = ?", name);
  }

  #notify(): void {
    for (const wake of [...this.#changed]) wake();
  }

  #nextChange(ms: number, signal?: AbortSignal): Promise<void> {
    return new Promise((resolve) => {
      const done = () => {
        cancel();
        this.#changed.delete(done);
        signal?.removeEventListener("abort", done);
        resolve();
      };
      const cancel = this.#o.clock.after(ms, done);
      this.#changed.add(done);
      signal?.addEventListener("abort", done, { once: true });
    });
  }
}

/** An environment as a file of `KEY='value'` lines for `set -a; . file` (invalid names skipped). */
export function envScript(env: Record<string, string>): string {
  return Object.entries(env)
    .filter(([key]) => /^[A-Za-z_][A-Za-z0-9_]*$/.test(key))
    .map(([key, value]) => `${key}=${shellQuote(value)}\n`)
    .join("");
}

function toSession(row: SessionRow): Session {
  return {
    name: row.name,
    agent: row.agent,
    agent_state: row.agent_state,
    state_time: row.state_time,
    reason: row.agent_state === "waiting" ? row.reason ?? null : null,
    exited: row.exited === 1,
    exit_code: row.exit_code,
    location: row.location,
    worktree: row.worktree,
    path: row.path,
    command: row.command,
    created: row.created,
    from_session: row.from_session,
  };
}
