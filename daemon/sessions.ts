/**
 * Sessions: terminal sessions on the box's private tmux server, usually running a coding agent, and
 * the agent state people and other agents rely on (spec 2.3, 3.2, 4.2).
 *
 * A session is started through a launcher script, never through tmux's command line: the command, the
 * first prompt and the environment go through files in a 0700 folder (the environment file, which may
 * hold resolved secrets, is deleted by the launcher as soon as it is read), so any length and any
 * characters work. The agent state follows the agent tools' own hooks (`dock hook` → `agent.*`),
 * matched to the session by `DOCK_SESSION`, else by the working directory; reports older than the
 * state already recorded are dropped. A sent prompt starts a turn (tools such as Codex and Cursor
 * report only `finished`). `exited` is read from tmux (`remain-on-exit` keeps the pane and its status).
 *
 * @module
 */
import { sleep } from "../client/timers.ts";
import { join } from "node:path";
import { DockError, type ErrorStatus, notFound } from "../client/errors.ts";
import type {
  AgentPreset,
  AgentReport,
  AgentReportType,
  AgentState,
  DockEvent,
  Session,
  SessionCreate,
  WaitResult,
  Worktree,
} from "../client/wire.ts";
import { agentArgs, availableAgents } from "./agents.ts";
import type { EventBus } from "../core/events.ts";
import type { Locations } from "./locations.ts";
import { groupMembers, groupRss, processes } from "./procs.ts";
import { killGroup, loginShell, shellQuote } from "../core/runner.ts";
import { SESSION_NAME } from "../client/schemas.ts";
import type { Store } from "../core/store.ts";
import type { Pane, Tmux } from "./tmux.ts";
import type { Worktrees } from "./worktrees.ts";

const STATE_OF: Record<AgentReportType, AgentState> = {
  "agent.ready": "idle",
  "agent.started": "running",
  "agent.waiting": "waiting",
  "agent.finished": "finished",
};

/** Days a send's idempotency key is remembered, at least. */
export const SEND_KEY_DAYS = 7;
/**
 * Keys remembered at most: beyond it the oldest go even before {@linkcode SEND_KEY_DAYS} (only past
 * this many keyed sends in a week), so the table stays bounded.
 */
export const SEND_KEYS_KEPT = 100_000;

interface SendKeyRow {
  key: string;
  session: string;
  state: "typing" | "done" | "failed";
  outcome: string | null;
  created: string;
}

interface SessionRow {
  name: string;
  location: string;
  worktree: string;
  path: string;
  command: string;
  agent: string | null;
  agent_state: AgentState;
  state_time: string | null;
  exited: number;
  exit_code: number | null;
  created: string;
  from_session: string | null;
}

/** Dependencies of {@linkcode Sessions}. */
export interface SessionsOptions {
  store: Store;
  bus: EventBus;
  tmux: Tmux;
  locations: Locations;
  worktrees: Worktrees;
  /** Folder of the launcher files (`<state>/box/sessions`). */
  dir: string;
  /** How often tmux is asked which programs ended. @default {500} */
  pollMs?: number;
}

/** Owns the sessions and their agent state. */
export class Sessions {
  #o: SessionsOptions;
  #changed = new Set<() => void>();
  #poller?: ReturnType<typeof setInterval>;
  #polling = false;
  #deadSince = new Map<string, number>();
  /**
   * Sessions whose tmux session is being made (the row exists first), and when their making ended: a
   * poll that listed tmux's panes before that moment cannot judge them.
   */
  #creating = new Map<string, number | null>();
  #seen = new Set<string>();
  #unreachable = 0;
  /** Keyed sends being typed now, so a repeat waits for the same outcome. */
  #sending = new Map<string, Promise<Session>>();
  #sinceKeyPrune = 0;

  constructor(options: SessionsOptions) {
    this.#o = options;
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

  /** The presets offered for a location (built-ins installed on the box, plus its config's). */
  async presets(location?: string): Promise<AgentPreset[]> {
    const config = location ? (await this.#o.locations.config(location)).effective : {};
    return availableAgents(config);
  }

  /** Starts a session running `command`, or an agent preset with its first prompt. */
  async create(request: SessionCreate & { from_session?: string }, origin: string): Promise<Session> {
    const worktree = this.#o.worktrees.target(request.location);
    if (request.agent && request.command) {
      throw new DockError("invalid_request", "command: give either agent or command, not both", {
        status: 400,
      });
    }
    let command = request.command ?? "";
    let args: string[] = [];
    let agent: string | null = null;
    if (request.agent) {
      const preset = (await this.presets(worktree.location)).find((p) => p.id === request.agent);
      if (!preset) {
        throw new DockError(
          "unknown_agent",
          `agent: '${request.agent}' is not installed on this box or not a preset of '${worktree.location}'`,
          { status: 422, detail: { field: "agent" } },
        );
      }
      command = preset.command;
      args = agentArgs(preset, request.prompt);
      agent = preset.id;
    } else if (request.prompt) {
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
    const created = new Date().toISOString();
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
    this.#creating.set(name, null);
    try {
      await this.#o.tmux.newSession({
        name,
        cwd: worktree.path,
        command: `sh ${shellQuote(join(dir, "launch.sh"))}`,
        cols: request.cols,
        rows: request.rows,
      });
    } catch (error) {
      this.#creating.delete(name);
      this.#o.store.run("DELETE FROM sessions WHERE name = ?", name);
      await Deno.remove(dir, { recursive: true }).catch(() => {});
      throw error;
    }
    this.#creating.set(name, performance.now());
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
      const deadline = Date.now() + 2000;
      while (groupMembers(pane.pid).length && Date.now() < deadline) await sleep(25);
      killGroup(pane.pid, "SIGKILL");
    }
    await this.#o.tmux.kill(name);
    this.#o.store.run("DELETE FROM sessions WHERE name = ?", name);
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

  /** True when a send with this idempotency key was already made (or is being made). */
  sendKeyKnown(key: string): boolean {
    return this.#sending.has(key) ||
      this.#o.store.get<SendKeyRow>("SELECT * FROM send_keys WHERE key = ?", key) !== undefined;
  }

  /**
   * Types a prompt: one pasted block, then Enter unless `enter` is false. Never logs the text.
   *
   * With `key` (an idempotency key) the prompt is typed at most once per key: the key is recorded in
   * the store before the text is typed, and a repeat with the same key replays the first outcome (the
   * session as it was answered, or the same error), waits for it while it is still being typed, or —
   * when the daemon stopped while typing it — refuses with 409 `send_interrupted` rather than risk
   * typing it twice. Keys are kept at least {@linkcode SEND_KEY_DAYS} days (see {@linkcode SEND_KEYS_KEPT}).
   */
  async send(
    name: string,
    text: string,
    enter: boolean,
    origin: string,
    options: { key?: string } = {},
  ): Promise<Session> {
    const key = options.key;
    if (key === undefined) return await this.#send(name, text, enter, origin);
    const inFlight = this.#sending.get(key);
    if (inFlight) return await inFlight;
    const row = this.#o.store.get<SendKeyRow>("SELECT * FROM send_keys WHERE key = ?", key);
    if (row) return replay(row, name);
    // Registered synchronously, before any await, so a concurrent repeat finds it.
    const sending = this.#send(name, text, enter, origin, key);
    this.#sending.set(key, sending);
    try {
      return await sending;
    } finally {
      this.#sending.delete(key);
    }
  }

  async #send(name: string, text: string, enter: boolean, origin: string, key?: string): Promise<Session> {
    const session = this.get(name);
    if (session.exited) {
      throw new DockError("exited", `session '${name}' has exited; its program no longer reads input`, {
        status: 409,
      });
    }
    if (session.agent && session.state_time === session.created) {
      // The agent has not reported since it started: its input may not be up yet, and a prompt pasted
      // into a terminal nobody reads yet is lost or mangled. Give it a moment to say it is ready.
      await this.wait(name, {
        states: ["idle", "running", "waiting", "finished"],
        after: new Date(session.created),
        timeoutMs: 10_000,
      });
    }
    // From here on the text may reach the terminal: the key is committed first, so whatever happens
    // next (an error, a kill -9), a repeat never types it again.
    if (key !== undefined) this.#recordKey(key, name);
    try {
      const sent = new Date().toISOString();
      await this.#o.tmux.paste(name, text, enter);
      if (enter && session.agent) this.#setState(name, "running", sent);
      this.#o.bus.publish({ type: "session.sent", origin, data: { session: name } });
      const answer = this.get(name);
      if (key !== undefined) this.#settleKey(key, "done", answer);
      return answer;
    } catch (error) {
      if (key !== undefined) {
        const failure = error instanceof DockError
          ? error
          : new DockError("send_failed", `typing into session '${name}' failed`, {
            status: 422,
            cause: error,
          });
        this.#settleKey(key, "failed", { status: failure.status, ...failure.toBody() });
        throw failure;
      }
      throw error;
    }
  }

  #recordKey(key: string, session: string): void {
    this.#o.store.run(
      "INSERT INTO send_keys (key, session, state, created) VALUES (?, ?, 'typing', ?)",
      key,
      session,
      new Date().toISOString(),
    );
    if (++this.#sinceKeyPrune >= 200) {
      this.#sinceKeyPrune = 0;
      const cutoff = new Date(Date.now() - SEND_KEY_DAYS * 86_400_000).toISOString();
      this.#o.store.run("DELETE FROM send_keys WHERE created < ?", cutoff);
      this.#o.store.run(
        `DELETE FROM send_keys WHERE rowid <= (SELECT rowid FROM send_keys ORDER BY rowid DESC
         LIMIT 1 OFFSET ?)`,
        SEND_KEYS_KEPT,
      );
    }
  }

  #settleKey(key: string, state: "done" | "failed", outcome: unknown): void {
    this.#o.store.run(
      "UPDATE send_keys SET state = ?, outcome = ? WHERE key = ?",
      state,
      JSON.stringify(outcome),
      key,
    );
  }

  /**
   * Waits until the agent is in one of `states` (reported after `after` when given), or its program
   * exits, or `timeoutMs` passes.
   */
  async wait(
    name: string,
    options: { states: AgentState[]; after?: Date; timeoutMs: number; signal?: AbortSignal },
  ): Promise<WaitResult> {
    const deadline = Date.now() + options.timeoutMs;
    while (true) {
      const session = this.get(name);
      const reportedAfter = !options.after ||
        (session.state_time !== null && Date.parse(session.state_time) > options.after.getTime());
      if (session.exited || (options.states.includes(session.agent_state) && reportedAfter)) {
        return { state: session.agent_state, timed_out: false, exited: session.exited };
      }
      const left = deadline - Date.now();
      if (left <= 0 || options.signal?.aborted) {
        return { state: session.agent_state, timed_out: true, exited: false };
      }
      await this.#nextChange(Math.min(left, 1000), options.signal);
    }
  }

  /** Applies an `agent.*` report to the session it belongs to, then announces it. */
  ingest(report: AgentReport): DockEvent | null {
    const state = STATE_OF[report.type];
    const data = report.data ?? {};
    // A hook that gave up on a slow daemon also spooled what the daemon did receive: drop the copy.
    const key = JSON.stringify([report.type, report.origin, report.time, report.session, data.session_id]);
    if (report.time && this.#seen.has(key)) return null;
    this.#seen.add(key);
    if (this.#seen.size > 2000) this.#seen.delete(this.#seen.values().next().value!);
    const session = state
      ? this.#match(report.session, typeof data.path === "string" ? data.path : undefined)
      : null;
    if (session && state) {
      const time = report.time && !Number.isNaN(Date.parse(report.time))
        ? report.time
        : new Date().toISOString();
      this.#setState(session.name, state, time, report.origin);
    }
    // The dock session the report was matched to (an identifier, like the tool's own `session_id`):
    // the app, the queue and hooks (`DOCK_SESSION`) learn whose turn it was without asking again.
    const announced = session && state ? { ...data, session: session.name } : data;
    return this.#o.bus.publish({ type: report.type, origin: report.origin, data: announced });
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

  /** Starts the tmux server's config and the exit watcher; marks sessions tmux no longer has. */
  async start(): Promise<void> {
    await Deno.mkdir(this.#o.dir, { recursive: true, mode: 0o700 });
    await this.#o.tmux.writeConfig();
    await this.#poll();
    this.#poller = setInterval(() => this.#poll(), this.#o.pollMs ?? 500);
  }

  /** Stops watching (sessions run on in tmux). */
  close(): void {
    clearInterval(this.#poller);
    for (const wake of this.#changed) wake();
  }

  async #poll(): Promise<void> {
    if (this.#polling) return;
    this.#polling = true;
    try {
      const open = this.#o.store.all<SessionRow>("SELECT * FROM sessions WHERE exited = 0");
      if (!open.length) return;
      const listedAt = performance.now();
      let listed: Pane[];
      try {
        listed = await this.#o.tmux.panes();
        this.#unreachable = 0;
      } catch (error) {
        // One failed connection says little (a busy server); a server that stays unreachable for a few
        // seconds is gone, and so are the programs it ran.
        if (++this.#unreachable < 6) return;
        console.error("tmux server unreachable; its sessions count as exited:", (error as Error).message);
        listed = [];
      }
      const panes = new Map(listed.map((p) => [p.session, p]));
      for (const row of open) {
        // Its row is written before tmux makes the session: a list taken before that says nothing.
        const made = this.#creating.get(row.name);
        if (made !== undefined) {
          if (made === null || made > listedAt) continue;
          this.#creating.delete(row.name); // judged by every list from now on
        }
        const pane = panes.get(row.name);
        if (pane && !pane.dead) continue;
        if (pane && pane.deadStatus === null) {
          // Dead but no status yet: nudge tmux to reap it, and give up on the status after a while.
          const since = this.#deadSince.get(row.name) ?? Date.now();
          this.#deadSince.set(row.name, since);
          this.#o.tmux.nudge(pane.server);
          if (Date.now() - since < 3000) continue;
        }
        this.#deadSince.delete(row.name);
        const code = pane?.deadStatus ?? null;
        this.#o.store.run("UPDATE sessions SET exited = 1, exit_code = ? WHERE name = ?", code, row.name);
        this.#o.bus.publish({
          type: "session.exited",
          origin: "dockd",
          data: { session: row.name, exit_code: code },
        });
        this.#notify();
      }
    } catch (error) {
      console.error("session watcher:", (error as Error).message);
    } finally {
      this.#polling = false;
    }
  }

  #setState(name: string, state: AgentState, time: string, agent?: string): void {
    // Times are stored in one form (ISO, UTC), so the database compares them: a report older than the
    // state held (a late spooled event, an overtaken hook) changes nothing, in the same statement.
    const at = new Date(time).toISOString();
    const { changes } = this.#o.store.run(
      `UPDATE sessions SET agent_state = ?, state_time = ?, agent = coalesce(agent, ?)
       WHERE name = ? AND (state_time IS NULL OR state_time <= ?)`,
      state,
      at,
      agent ?? null,
      name,
      at,
    );
    if (changes) this.#notify();
  }

  #match(session: string | undefined, path: string | undefined): SessionRow | null {
    if (session) {
      const row = this.#row(session);
      if (row) return row;
    }
    if (!path) return null;
    // Else the newest live session whose worktree holds the reported directory (deepest first).
    const candidates = this.#o.store.all<SessionRow>("SELECT * FROM sessions WHERE exited = 0")
      .filter((row) => path === row.path || path.startsWith(row.path + "/"))
      .sort((a, b) =>
        b.path.length - a.path.length || Number(!!b.agent) - Number(!!a.agent) ||
        b.created.localeCompare(a.created)
      );
    return candidates[0] ?? null;
  }

  #freeName(worktree: Worktree, agent: string | null): string {
    const base = `${worktree.name}-${agent ?? "shell"}`.replace(/[^A-Za-z0-9_-]/g, "-").slice(0, 56);
    let name = base;
    for (let n = 2; this.#row(name); n++) name = `${base}-${n}`;
    return name;
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
        clearTimeout(timer);
        this.#changed.delete(done);
        signal?.removeEventListener("abort", done);
        resolve();
      };
      const timer = setTimeout(done, ms);
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

/** The outcome a repeated send key gets: the first answer, the same error, or why there is none. */
function replay(row: SendKeyRow, name: string): Session {
  if (row.session !== name) {
    throw new DockError(
      "key_conflict",
      `key: already used for a send to session '${row.session}', not '${name}'`,
      { status: 409, detail: { field: "key" } },
    );
  }
  if (row.state === "done") return JSON.parse(row.outcome!) as Session;
  if (row.state === "failed") {
    const { status, error: { code, message, ...detail } } = JSON.parse(row.outcome!) as {
      status: ErrorStatus;
      error: { code: string; message: string; [extra: string]: unknown };
    };
    throw new DockError(code, message, { status, detail });
  }
  // Recorded but never settled: the daemon stopped while typing it. It may be typed in part, in
  // whole or not at all; typing it again could make it twice, so say so instead.
  throw new DockError(
    "send_interrupted",
    `the box stopped while typing this prompt into session '${name}'; it may or may not have arrived`,
    { status: 409 },
  );
}

function toSession(row: SessionRow): Session {
  return {
    name: row.name,
    agent: row.agent,
    agent_state: row.agent_state,
    state_time: row.state_time,
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
