/**
 * Sessions: terminal sessions on the box's private tmux server, usually running a coding agent (spec
 * 2.3, 4.2): create, list, end, screen, send and wait.
 *
 * A session is started through a launcher script, never through tmux's command line: the command, the
 * first prompt and the environment go through files in a 0700 folder (the environment file, which may
 * hold resolved secrets, is deleted by the launcher as soon as it is read), so any length and any
 * characters work. A sent prompt starts a turn (tools such as Codex and Cursor report only
 * `finished`). The rest of a session's life has its own modules: the agent state its tool reports
 * (`agent_state.ts`), its program's exit (`exit_watcher.ts`) and keyed sends (`send_ledger.ts`).
 *
 * @module
 */
import { sleep } from "../client/timers.ts";
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
import { answerKeys } from "./answers.ts";
import type { AgentStates } from "./agent_state.ts";
import type { EventBus } from "../core/events.ts";
import type { ExitWatcher } from "./exit_watcher.ts";
import type { Locations } from "./locations.ts";
import { groupMembers, groupRss, processes } from "./procs.ts";
import { killGroup, loginShell, shellQuote } from "../core/runner.ts";
import { sha256Hex } from "../core/bytes.ts";
import { SESSION_NAME } from "../client/schemas.ts";
import type { Store } from "../core/store.ts";
import type { SendLedger } from "./send_ledger.ts";
import type { Tmux } from "./tmux.ts";
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
}

/** Owns the sessions. */
export class Sessions {
  #o: SessionsOptions;
  #changed = new Set<() => void>();
  #unsubscribe: (() => void)[];
  #checks: TurnChecks;

  constructor(options: SessionsOptions) {
    this.#o = options;
    options.store.addColumn("sessions", "seen TEXT"); // a box made before review
    this.#checks = new TurnChecks({
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
    this.#o.store.run("UPDATE sessions SET seen = ? WHERE name = ?", new Date().toISOString(), name);
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
      const deadline = Date.now() + 2000;
      while (groupMembers(pane.pid).length && Date.now() < deadline) await sleep(25);
      killGroup(pane.pid, "SIGKILL");
    }
    await this.#o.tmux.kill(name);
    this.#o.store.run("DELETE FROM sessions WHERE name = ?", name);
    this.#o.states.forget(name);
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
   * Types a prompt: one pasted block, then Enter unless `enter` is false. Never logs the text. With
   * `key` (an idempotency key) the prompt is typed at most once per key (see `send_ledger.ts`). With
   * `unlessWaiting: "permission"`, an agent waiting on a permission prompt refuses it (409
   * `permission_prompt`): checked in the step that types, so no state change slips in between.
   *
   * A session's sends go one at a time, in order: a send's check and its typing are not interleaved
   * with another send's typing (which could raise the prompt the check looked for).
   */
  send(
    name: string,
    text: string,
    enter: boolean,
    origin: string,
    options: { key?: string; unlessWaiting?: "permission" } = {},
  ): Promise<Session> {
    return this.#inLane(name, () => this.#sendNow(name, text, enter, origin, options));
  }

  /**
   * Types keystrokes (`POST sessions/{name}/keys`): each entry one character, typed literally, or a named
   * key (`KEY_NAMES`), never a paste, in the same line as the session's sends. Never logs or announces
   * the keys. Enter counts as input submitted and Esc or Ctrl-C as an interrupt, as typed through attach.
   * With `key`, typed at most once per key (as `send`).
   */
  keys(
    name: string,
    keys: readonly string[],
    origin: string,
    options: { key?: string } = {},
  ): Promise<KeysResult> {
    return this.#inLane(name, () =>
      this.#keystrokes(name, origin, {
        key: options.key === undefined ? undefined : ledgerKey("keys", options.key),
        choose: () => Promise.resolve(keys),
        after: (at) => {
          if (keys.includes("Enter")) this.#submitted(name, at);
          if (keys.includes("Escape") || keys.includes("C-c")) this.interrupted(name);
        },
        announce: { type: "session.keys", data: { session: name, typed: keys.length } },
        shape: (result) => result,
      }));
  }

  /**
   * Answers the agent's permission prompt (`POST sessions/{name}/answer`) with the keys its tool takes
   * for `answer` (`answers.ts`). 409 `not_waiting_permission` unless the agent waits on a permission
   * prompt, checked in the step that types (in the session's line, nothing awaited between the check and
   * tmux's command but the read of the screen that shows the options). With `key`, typed at most once.
   */
  answer(
    name: string,
    answer: PermissionAnswer,
    origin: string,
    options: { key?: string } = {},
  ): Promise<AnswerResult> {
    return this.#inLane(name, () =>
      this.#keystrokes(name, origin, {
        key: options.key === undefined ? undefined : ledgerKey("answer", options.key),
        choose: async (session, fresh) => {
          if (!fresh) return answerKeys(session, answer);
          if (session.agent_state !== "waiting" || session.reason !== "permission") {
            throw new DockError(
              "not_waiting_permission",
              `session '${name}' is ${session.agent_state}${
                session.reason ? ` (${session.reason})` : ""
              }, not waiting on a permission prompt: nothing was typed`,
              {
                status: 409,
                detail: { session: name, agent_state: session.agent_state, reason: session.reason },
              },
            );
          }
          answerKeys(session, answer); // 422 for a tool the table does not know, before reading the screen
          const screen = await this.#o.tmux.capture(name, 0);
          const now = this.get(name);
          if (now.agent_state !== "waiting" || now.reason !== "permission") {
            throw new DockError(
              "not_waiting_permission",
              `session '${name}' stopped waiting: nothing was typed`,
              {
                status: 409,
                detail: { session: name, agent_state: now.agent_state, reason: now.reason },
              },
            );
          }
          return answerKeys(now, answer, screen);
        },
        // An answer is input to the agent: a turn goes on (or, for a denial, ends: the pane is checked).
        after: (at) => {
          const row = this.#row(name);
          if (row?.agent && !row.exited) this.#inputStartsTurn(name, at);
        },
        announce: { type: "session.answered", data: { session: name, answer } },
        // The keys an answer typed are the table's, not the caller's input: they are part of its outcome.
        shape: (result, keys) => ({ ...result, answer, keys: [...keys] }),
      }));
  }

  /** Runs `step` after the session's earlier sends and keys, in order, one at a time. */
  #inLane<T>(name: string, step: () => Promise<T>): Promise<T> {
    const previous = this.#lanes.get(name) ?? Promise.resolve();
    const running = previous.then(step);
    const lane = running.then(() => {}, () => {});
    this.#lanes.set(name, lane);
    lane.then(() => {
      if (this.#lanes.get(name) === lane) this.#lanes.delete(name);
    });
    return running;
  }

  /** Each session's last send or keys, which the next one waits for. */
  #lanes = new Map<string, Promise<void>>();

  /**
   * Types keys chosen by `choose` from the session as it is now (`fresh`: false when finishing a keyed
   * call an earlier daemon recorded, whose checks passed then). With `key`, at most once (see
   * `send_ledger.ts`): recorded before tmux may type them, and claimed in tmux's slot in the same step
   * as the typing, so a repeat after a kill -9 types them only when the killed daemon had not.
   */
  async #keystrokes<T>(
    name: string,
    origin: string,
    step: {
      key?: string;
      choose: (session: Session, fresh: boolean) => Promise<readonly string[]>;
      after: (at: string) => void;
      announce: { type: string; data: Record<string, unknown> };
      /** The answer (what a repeat of the key replays). */
      shape: (result: KeysResult, keys: readonly string[]) => T;
    },
  ): Promise<T> {
    const type = async (keys: readonly string[], slot?: string, resumed = false): Promise<T> => {
      const release = slot ? [...this.#settledSlots] : [];
      if (slot) this.#settledSlots.clear();
      const at = new Date().toISOString();
      const done = await this.#o.tmux.typeKeys(name, keys, { slot, release });
      if (done === "typed") {
        // A resumed call's slot stays claimed: the killed daemon's own command may still come, and the
        // claim is what stops it (as a resumed send's).
        if (slot && !resumed) this.#claimed.add(slot);
        step.after(at);
        this.#o.bus.publish({ type: step.announce.type, origin, data: step.announce.data });
      }
      return step.shape({ session: this.get(name), typed: keys.length, at }, keys);
    };
    const fresh = async (commit: (options?: { resumable?: boolean }) => void, slot?: string) => {
      const session = this.get(name);
      if (session.exited) {
        throw new DockError("exited", `session '${name}' has exited; its program no longer reads input`, {
          status: 409,
        });
      }
      const keys = await step.choose(session, true);
      // From here on the keys may reach the terminal.
      commit({ resumable: slot !== undefined });
      return await type(keys, slot);
    };
    if (step.key === undefined) return await fresh(() => {});
    const slot = `dock-keys-${await sha256Hex(step.key, 12)}`;
    try {
      return await this.#o.ledger.once<T>(
        step.key,
        name,
        (commit) => fresh(commit, slot),
        async () => await type(await step.choose(this.get(name), false), slot, true),
      );
    } finally {
      if (this.#claimed.delete(slot)) this.#settledSlots.add(slot);
    }
  }

  async #sendNow(
    name: string,
    text: string,
    enter: boolean,
    origin: string,
    options: { key?: string; unlessWaiting?: "permission" },
  ): Promise<Session> {
    const { key, unlessWaiting } = options;
    if (key === undefined) return await this.#send(name, text, enter, origin, () => {}, { unlessWaiting });
    const slot = await sendSlot(key);
    try {
      return await this.#o.ledger.once(
        key,
        name,
        (commit) => this.#send(name, text, enter, origin, commit, { slot, unlessWaiting }),
        // Finishing a send recorded before a kill: its check passed when it was recorded.
        () => this.#typeOnce(name, text, slot, { enter, origin, resumed: true }),
      );
    } finally {
      // Settled: no daemon looks at a slot this process claimed for a fresh send again, and no other
      // process ever had a command for it. The next keyed send unsets it.
      if (this.#claimed.delete(slot)) this.#settledSlots.add(slot);
    }
  }

  /** Slots this process claimed for sends not settled yet. */
  #claimed = new Set<string>();
  /** Slots of this process's keyed sends settled since the last one, unset by the next. */
  #settledSlots = new Set<string>();

  async #send(
    name: string,
    text: string,
    enter: boolean,
    origin: string,
    commit: (options?: { resumable?: boolean }) => void,
    options: { slot?: string; unlessWaiting?: "permission" },
  ): Promise<Session> {
    const { slot, unlessWaiting } = options;
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
    // The last look before the text may reach the terminal: nothing awaited from here to tmux's command.
    if (unlessWaiting) refuseWhileWaiting(this.get(name), unlessWaiting);
    if (slot) {
      // Recorded before tmux may type it; tmux's slot tells a daemon started after a kill -9 how far
      // it got, so a repeat finishes it instead of refusing (send_ledger.ts).
      commit({ resumable: true });
      return await this.#typeOnce(name, text, slot, { enter, origin, resumed: false });
    }
    // From here on the text may reach the terminal.
    commit();
    const sent = new Date().toISOString();
    await this.#o.tmux.paste(name, text, enter, settlesBeforeEnter(this.get(name)));
    if (enter && session.agent) this.#inputStartsTurn(name, sent);
    this.#o.bus.publish({ type: "session.sent", origin, data: { session: name } });
    return this.get(name);
  }

  /**
   * Types a keyed send once (see `Tmux.pasteOnce`), then presses Enter if that is still owed.
   * `resumed`: finishing a send an earlier daemon recorded and never settled, where both steps may have
   * happened already (and `enter` only matters if the paste had not).
   */
  async #typeOnce(
    name: string,
    text: string,
    slot: string,
    options: { enter: boolean; origin: string; resumed: boolean },
  ): Promise<Session> {
    const session = this.get(name);
    const sent = new Date().toISOString();
    const release = [...this.#settledSlots];
    this.#settledSlots.clear();
    let typed: boolean;
    try {
      const settle = settlesBeforeEnter(session);
      const paste = await this.#o.tmux.pasteOnce(name, slot, text, { enter: options.enter, release, settle });
      // A resumed send's slot stays claimed even when this call claimed it: the killed daemon's own
      // command may still come, and the claim is what stops it.
      if (paste === "claimed" && !options.resumed) this.#claimed.add(slot);
      const entered = (options.enter || options.resumed) && await this.#o.tmux.pressEnter(name, slot, settle);
      typed = paste !== "found" || entered;
      if (entered && session.agent) this.#inputStartsTurn(name, sent);
    } catch (error) {
      await this.#o.tmux.dropSlot(slot);
      throw error;
    }
    if (typed) this.#o.bus.publish({ type: "session.sent", origin: options.origin, data: { session: name } });
    return this.get(name);
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

/**
 * The send ledger's key of a keyed `keys` or `answer` call: apart from `send`'s keys (and each other's),
 * so a key reused across routes never replays another route's answer.
 */
export function ledgerKey(route: "keys" | "answer", key: string): string {
  return `${route}:${key}`;
}

/** Refuses a send to an agent waiting on `reason` (409 `permission_prompt`): typing would answer it. */
function refuseWhileWaiting(session: Session, reason: "permission"): void {
  if (session.agent_state !== "waiting" || session.reason !== reason) return;
  throw new DockError(
    "permission_prompt",
    `session '${session.name}' waits on a permission prompt: the text would answer it, so it was not typed`,
    { status: 409, detail: { session: session.name, reason } },
  );
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

/**
 * The slot of a keyed send in tmux (the name of its claim, its buffer and its Enter marker): made
 * from its key, so every daemon finds the same. Hashed: a key may hold characters tmux's command line
 * treats specially (a trailing `;`).
 */
async function sendSlot(key: string): Promise<string> {
  return `dock-send-${await sha256Hex(key, 12)}`;
}

/**
 * Whether a send into `session` waits, before its Enter, for the program to draw the paste and go quiet
 * (`Tmux` `#settleAfterPaste`, 100 ms to 1 s): every agent does. Gemini CLI 0.61 turns an Enter read
 * within 40 ms of a bracketed paste into a newline, and Codex 0.169 takes keys that come in a burst with
 * the paste as part of it; on a loaded machine Claude Code too has been seen to miss a prompt whose Enter
 * came 3 ms after its paste (the real-agent suite, in a full parallel run: "reached the model: no"). A
 * plain shell session has no such guard and gets its Enter at once.
 */
function settlesBeforeEnter(session: Pick<Session, "agent">): boolean {
  return Boolean(session.agent);
}
