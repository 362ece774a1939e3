/**
 * What the page knows, as signals, kept current from the event stream: an event names what changed
 * (a box, a session, a worktree), and only that part is asked for again. No polling loop.
 *
 * @module
 */
import { computed, type ReadonlySignal, signal } from "@preact/signals";
import type {
  AgentState,
  AgentStatus,
  BoxSessions,
  BoxStatus,
  DockEvent,
  Location,
  QueueItem,
  Screen,
  Session,
  WorktreePorts,
  WorktreeService,
  WorktreeStatus,
} from "../../client/wire.ts";
import type { Api } from "./api.ts";
import { byNeed, plainError, previewUrl } from "./outage.ts";
import { after, every, now } from "./clock.ts";
import { LastLines } from "./last_lines.ts";

/** One box as the board shows it. */
export interface BoxView {
  status: BoxStatus;
  locations: Location[];
  sessions: Session[];
  git: WorktreeStatus[];
  ports: WorktreePorts[];
  /** Services by `location/worktree`. */
  services: Record<string, WorktreeService[]>;
  error?: string;
}

/** A session with the box it runs on, and when the page last saw it change. */
export interface SessionRef {
  box: string;
  session: Session;
  changed: number;
}

/** Every box by name. */
export const boxes = signal<Record<string, BoxView>>({});
/** When each `box/session` last changed, as the page saw it (newest first on the board). */
export const changedAt = signal<Record<string, number>>({});
/** `box/session` keys of finished sessions the person has looked at. */
export const seen = signal<Set<string>>(new Set(loadSeen()));
/** The newest events, newest last (at most {@linkcode EVENT_LIMIT}). */
export const events = signal<DockEvent[]>([]);
/** The offline queue. */
export const queue = signal<QueueItem[]>([]);
/** The agent's private-URL proxy port, when it runs (agent mode). */
export const proxyPort = signal<number | null>(null);
/** The laptop's dock build (`GET /v1/status`), said beside a box that is behind it; null in box mode. */
export const laptopBuild = signal<string | null>(null);
/** True while the event stream is open. */
export const live = signal(false);
/**
 * Since when (ms) the page cannot reach the agent (in box mode: the box), the event stream or a status
 * read having failed; null while it answers. The banner says so, with how long.
 */
export const unreachableSince = signal<number | null>(null);
/** The time, ticked each second: only what reads it (the "for 2 min" labels) draws again. */
export const clock = signal(now());
/** The last line of a `box/session`'s screen, as its own signal (last_lines.ts). */
export { lastLine } from "./last_lines.ts";

const offline = new Map<string, ReadonlySignal<number | null>>();

/**
 * Since when (ms) `box` is offline, or null while it answers (or not known): a signal per box that
 * changes only when that does, so the "last known" marks are not redrawn on every change of the board.
 */
export function offlineSince(box: string): ReadonlySignal<number | null> {
  let since = offline.get(box);
  if (!since) {
    since = computed(() => {
      const status = boxes.value[box]?.status;
      if (!status || status.online) return null;
      const at = status.since ? Date.parse(status.since) : NaN;
      return Number.isNaN(at) ? 0 : at;
    });
    offline.set(box, since);
  }
  return since;
}

const EVENT_LIMIT = 500;

/**
 * How many of the events the page holds have a type starting with `prefix`: a view that lists what such
 * events change reads it again when this count moves (read inside a render, it re-renders then too).
 */
export function eventsSeen(prefix: string): number {
  return events.value.filter((event) => event.type.startsWith(prefix)).length;
}

/** Called with each event as it arrives (notifications). */
export const onEvent = new Set<(event: DockEvent) => void>();

/** A worktree's dev server an agent asked to show (`preview.open`), newest last. */
export interface Preview {
  box: string;
  location: string;
  worktree: string;
  port: number;
  url: string;
}

/** The previews not yet dismissed (at most five). */
export const previews = signal<Preview[]>([]);

/** `box/session`. */
export function sessionKey(box: string, name: string): string {
  return `${box}/${name}`;
}

/** Every session, newest change first. */
export const sessions = computed<SessionRef[]>(() => {
  const at = changedAt.value;
  const all: SessionRef[] = [];
  for (const view of Object.values(boxes.value)) {
    for (const session of view.sessions) {
      const key = sessionKey(view.status.name, session.name);
      const changed = at[key] ?? Date.parse(session.state_time ?? session.created);
      all.push({ box: view.status.name, session, changed });
    }
  }
  return all.sort((a, b) => b.changed - a.changed);
});

/**
 * Sessions that need the person: waiting ones, and finished ones not yet looked at, in the order to take
 * them: permission → question → input → finished, then the longest waiting first.
 */
export const needsYou = computed<SessionRef[]>(() =>
  sessions.value.filter(({ box, session }) =>
    !session.exited && (session.agent_state === "waiting" ||
      (session.agent_state === "finished" && !seen.value.has(sessionKey(box, session.name))))
  ).map((ref) => ({ ref, since: stateSince(ref) })).sort((a, b) =>
    byNeed(
      { agent_state: a.ref.session.agent_state, reason: a.ref.session.reason, since: a.since },
      { agent_state: b.ref.session.agent_state, reason: b.ref.session.reason, since: b.since },
    )
  ).map(({ ref }) => ref)
);

/** When a session entered its state (the record's `state_time`; else when the page saw it change). */
export function stateSince(ref: SessionRef): number {
  const at = ref.session.state_time ? Date.parse(ref.session.state_time) : NaN;
  return Number.isNaN(at) ? ref.changed : at;
}

/** Whether `box` is known offline to the agent (its states are then the last known). */
export function boxOffline(box: string): boolean {
  return boxes.value[box]?.status.online === false;
}

/** Marks a session looked at (kept for this tab across reloads). */
export function markSeen(box: string, name: string): void {
  const next = new Set(seen.value);
  next.add(sessionKey(box, name));
  seen.value = next;
  sessionStorage.setItem("dock.seen", JSON.stringify([...next]));
}

function loadSeen(): string[] {
  try {
    return JSON.parse(sessionStorage.getItem("dock.seen") ?? "[]");
  } catch {
    return [];
  }
}

const STATE_OF: Record<string, AgentState> = {
  "agent.started": "running",
  "agent.ready": "idle",
  "agent.waiting": "waiting",
  "agent.finished": "finished",
};

/** Keeps the store current: loads everything, then follows the event stream. */
export class Sync {
  #api: Api;
  /** Reloads under way or asked for, by what they reload: a burst of events costs one reload each. */
  #pending = new Map<string, { running: boolean; again: boolean; done: Promise<void> }>();
  /** Agent states set from events so far, and the count at which each session's was set last. */
  #statesSet = 0;
  #stateSetAt = new Map<string, number>();

  /** The screens' last lines, two at a time, after the lists. */
  #lines: LastLines;

  constructor(api: Api) {
    this.#api = api;
    this.#lines = new LastLines(async (box, name) =>
      (await api.json<Screen>(api.box(box, `sessions/${encodeURIComponent(name)}/screen`))).screen
    );
  }

  /**
   * Loads everything and follows events until `signal` aborts. The first load does not wait for the
   * stream (the board paints sooner); the stream waits for the first load's answer and follows the events
   * after the newest one it holds (`Api.board`), so a change made while both were on their way is heard,
   * and nothing is read or drawn twice (a second read of every box's sessions when the stream opened
   * redrew the whole board, 22–111 ms of a 20-session load). From an agent that does not say its event
   * id, the sessions are asked again when the stream first opens. A reopened stream loads everything
   * again, as anything may have changed while it was down.
   */
  async start(signal: AbortSignal): Promise<void> {
    const after = new Promise<string | null>((resolve) => this.#boardRead = resolve);
    this.reloadAll();
    const stopTicking = every(1000, () => clock.value = now());
    signal.addEventListener("abort", stopTicking);
    let opened = false;
    let from: string | null = null;
    await this.#api.follow((event) => this.apply(event), {
      signal,
      // In box mode the page reads each list from the box, which names no event: the stream starts live.
      after: this.#api.agent ? after.then((id) => from = id) : undefined,
      onOpen: () => {
        live.value = true;
        unreachableSince.value = null;
        if (opened) return this.reloadAll();
        opened = true;
        if (from === null) this.#reloadEverySession();
      },
      onClose: () => {
        live.value = false;
        unreachableSince.value ??= now();
      },
    });
  }

  /** Told once the first load has drawn: the newest event its read holds (null when unknown). */
  #boardRead: (after: string | null) => void = () => {};

  /** Tells the stream waiting on the first load where to start; once. */
  #toldBoardRead(after: string | null): void {
    const tell = this.#boardRead;
    this.#boardRead = () => {};
    tell(after);
  }

  /** Reloads the boxes and everything on each. */
  reloadAll(): void {
    // Whatever happens to the first load, the stream waiting on it opens (live, when its read failed).
    this.#once("boxes", () => this.#loadAll().finally(() => this.#toldBoardRead(null)));
  }

  /** The first load and every reload of all: the boxes, their sessions, then the details. */
  async #loadAll(): Promise<void> {
    let list: BoxStatus[], read: { board: BoxSessions[]; after: string | null } | null;
    let status: AgentStatus | null;
    try {
      // Through the agent, one read holds every box and its sessions (`GET /v1/sessions`, the agent's
      // copy): 200 boxes' lists through the relay, 6 at a time, took ~1.7 s before the board drew.
      [read, status] = await Promise.all([
        this.#api.agent ? this.#api.board() : null,
        this.#api.agent ? this.#api.json<AgentStatus>(this.#api.own("status")) : null,
      ]);
      list = read ? read.board.map((entry) => entry.box) : await this.#api.boxes();
    } catch (error) {
      unreachableSince.value ??= now();
      throw error;
    }
    const board = read?.board;
    if (status) proxyPort.value = status.proxy.enabled ? status.proxy.port ?? null : null;
    if (status) laptopBuild.value = status.build;
    const next: Record<string, BoxView> = {};
    for (const status of list) {
      next[status.name] = { ...emptyView(status), ...boxes.value[status.name], status };
    }
    boxes.value = next;
    const online = list.filter((status) => status.online).map((status) => status.name);
    this.#lines.hold(true);
    if (board) this.#showBoard(board, this.#statesSet);
    // In box mode every box's sessions first (what the board shows), the rest after: the browser opens
    // 6 connections, and the sessions waited behind the others' locations, git status and services.
    // The screens' last lines wait for them too.
    else await Promise.all(online.map((name) => this.reloadSessions(name)));
    // The stream opens now (not before the boxes are known: the events it replays patch them).
    this.#toldBoardRead(read?.after ?? null);
    this.#lines.hold(false);
    this.#detailsAfterPaint(online);
    if (this.#api.agent) this.reloadQueue();
  }

  /** Reloads every box's sessions: through the agent in one read, else box by box. */
  #reloadEverySession(): void {
    if (!this.#api.agent) {
      for (const name of Object.keys(boxes.value)) this.reloadSessions(name);
      return;
    }
    this.#once("sessions", async () => {
      const asked = this.#statesSet;
      this.#showBoard(await this.#api.json<BoxSessions[]>(this.#api.own("sessions")), asked);
    });
  }

  /**
   * Shows what `GET /v1/sessions` answered, in one change of the board (200 changes of it, one a box,
   * each copied the whole board): each box the page knows, its failed read said on it.
   */
  #showBoard(board: BoxSessions[], asked: number): void {
    const next = { ...boxes.value };
    const shown: [string, Session[]][] = [];
    for (const entry of board) {
      const name = entry.box.name;
      const view = next[name];
      // Never read (offline since the agent started): what the page had stays.
      if (!view || entry.read === null && !entry.box.online) continue;
      const sessions = this.#newest(name, entry.sessions, asked);
      // A box online whose list could not be read: its last known list, said so on the box.
      next[name] = {
        ...view,
        sessions,
        ...(entry.box.online && entry.error ? { error: plainError(entry.error) } : {}),
      };
      shown.push([name, sessions]);
    }
    boxes.value = next;
    for (const [name, sessions] of shown) this.#lines.ask(name, sessions);
  }

  /** Reloads one box's locations, sessions, git status and ports. */
  reloadBox(box: string): void {
    this.reloadSessions(box);
    this.reloadDetails(box);
  }

  /**
   * Each box's locations, git status and ports once the board has painted, two boxes at a time (the
   * browser's 6 connections to the agent). 600 requests for 200 boxes started at once, before the board
   * drew, took ~0.7 s of the page's thread in `fetch` alone (a Chromium profile, 2,000 sessions, on a
   * loaded machine; first paint → board 2.4–4.7 s, 1.3–2.1 s without them).
   */
  #detailsAfterPaint(names: string[]): void {
    const queue = names.slice();
    const next = async () => {
      for (let name = queue.shift(); name !== undefined; name = queue.shift()) await this.reloadDetails(name);
    };
    let started = false;
    const go = () => {
      if (started) return;
      started = true;
      next();
      next();
    };
    // After the frame that draws the board; a hidden tab draws no frame, so not later than 250 ms.
    requestAnimationFrame(() => after(0, go));
    after(250, go);
  }

  /** Reloads one box's locations, git status and ports (not its sessions). */
  reloadDetails(box: string): Promise<void> {
    return this.#once(`locations:${box}`, async () => {
      const [locations, git, ports] = await Promise.all([
        this.#api.json<Location[]>(this.#api.box(box, "locations")),
        this.#api.json<WorktreeStatus[]>(this.#api.box(box, "worktrees")),
        this.#api.json<WorktreePorts[]>(this.#api.box(box, "services")),
      ]);
      this.#patch(box, { locations, git, ports, error: undefined });
      for (const location of locations) {
        for (const worktree of location.worktrees) this.reloadServices(box, location.name, worktree.name);
      }
    });
  }

  /** Reloads one box's sessions. */
  reloadSessions(box: string): Promise<void> {
    return this.#once(`sessions:${box}`, async () => {
      const asked = this.#statesSet;
      // Through the agent, its copy of the box's list (read again from the box only if it changed).
      const list = this.#api.agent
        ? (await this.#api.json<BoxSessions[]>(this.#api.own(`sessions?box=${encodeURIComponent(box)}`)))[0]
          ?.sessions ?? []
        : await this.#api.json<Session[]>(this.#api.box(box, "sessions"));
      const sessions = this.#newest(box, list, asked);
      this.#patch(box, { sessions });
      this.#lines.ask(box, sessions);
    });
  }

  /** A box's list read when `asked` states had been set from events, with the states set since. */
  #newest(box: string, list: Session[], asked: number): Session[] {
    // An agent state that an event set while this list was on its way is newer than the list's: the
    // list may have been read before the change (a board flickered back to the old state until the
    // next reload, ~30 ms through a paired box). The reload the event asked for brings the rest.
    const shown = boxes.value[box]?.sessions ?? [];
    return list.map((session) => {
      if ((this.#stateSetAt.get(sessionKey(box, session.name)) ?? 0) <= asked) return session;
      const newer = shown.find((s) => s.name === session.name);
      return newer
        ? { ...session, agent_state: newer.agent_state, reason: newer.reason, state_time: newer.state_time }
        : session;
    });
  }

  /** Reloads one worktree's services. */
  reloadServices(box: string, location: string, worktree: string): void {
    const path = `locations/${encodeURIComponent(location)}/worktrees/${
      encodeURIComponent(worktree)
    }/services`;
    this.#once(`services:${box}/${location}/${worktree}`, async () => {
      const list = await this.#api.json<WorktreeService[]>(this.#api.box(box, path));
      const view = boxes.value[box];
      if (view) this.#patch(box, { services: { ...view.services, [`${location}/${worktree}`]: list } });
    });
  }

  /** Reloads the offline queue. */
  reloadQueue(): void {
    this.#once("queue", async () => {
      queue.value = await this.#api.json<QueueItem[]>(this.#api.own("queue"));
    });
  }

  /** Applies one event: what it says at once, then a reload of the part it names. */
  apply(event: DockEvent): void {
    const list = events.value.length >= EVENT_LIMIT ? events.value.slice(1) : events.value.slice();
    list.push(event);
    events.value = list;
    for (const listener of onEvent) listener(event);
    const box = event.box ?? (this.#api.agent ? undefined : (this.#api.config as { box: string }).box);
    const type = event.type;
    const data = event.data ?? {};
    if (type === "preview.open" && box && typeof data.url === "string") {
      const place = {
        box,
        location: String(data.location),
        worktree: String(data.worktree),
        path: typeof data.path === "string" ? data.path : undefined,
      };
      // The box names itself in its URL (`vm`); the laptop's proxy knows it by the laptop's name.
      const port = proxyPort.value;
      const shown: Preview = {
        ...place,
        port: Number(data.port),
        url: this.#api.agent && port !== null ? previewUrl(place, port) : data.url,
      };
      previews.value = [...previews.value.filter((p) => p.url !== shown.url), shown].slice(-5);
      return;
    }
    if (type.startsWith("box.")) return this.reloadAll();
    if (type.startsWith("queue.")) return this.reloadQueue();
    if (!box) return;
    if (type in STATE_OF && typeof data.session === "string") {
      const reason = typeof data.reason === "string" ? data.reason as Session["reason"] : null;
      this.#setState(box, data.session, STATE_OF[type], reason, event.time);
      this.reloadSessions(box);
      return;
    }
    if (type.startsWith("session.") || type.startsWith("agent.") || type === "task.created") {
      if (typeof data.name === "string" || typeof data.session === "string") {
        const name = (data.session ?? data.name) as string;
        changedAt.value = { ...changedAt.value, [sessionKey(box, name)]: now() };
      }
      this.reloadSessions(box);
      if (type === "task.created") this.reloadBox(box);
      return;
    }
    if (type.startsWith("service.")) {
      const location = data.location, worktree = data.worktree;
      if (typeof location === "string" && typeof worktree === "string") {
        this.reloadServices(box, location, worktree);
      }
      return;
    }
    if (type.startsWith("location.") || type.startsWith("worktree.")) this.reloadBox(box);
  }

  #setState(box: string, name: string, state: AgentState, reason: Session["reason"], time: string): void {
    const view = boxes.value[box];
    if (!view) return;
    const key = sessionKey(box, name);
    this.#stateSetAt.set(key, ++this.#statesSet);
    changedAt.value = { ...changedAt.value, [key]: now() };
    if (state === "finished" && seen.value.has(key)) {
      const next = new Set(seen.value);
      next.delete(key);
      seen.value = next;
    }
    this.#patch(box, {
      sessions: view.sessions.map((s) =>
        s.name === name
          ? {
            ...s,
            agent_state: state,
            reason: state === "waiting" ? reason : null,
            state_time: time ?? s.state_time,
          }
          : s
      ),
    });
  }

  #patch(box: string, part: Partial<BoxView>): void {
    const view = boxes.value[box];
    if (!view) return;
    boxes.value = { ...boxes.value, [box]: { ...view, ...part } };
  }

  /** Runs `load` now, or once more after the run under way when asked again meanwhile. */
  #once(key: string, load: () => Promise<void>): Promise<void> {
    const pending = this.#pending.get(key);
    if (pending?.running) {
      pending.again = true;
      return pending.done;
    }
    const entry = { running: true, again: false, done: Promise.resolve() };
    this.#pending.set(key, entry);
    const run = async () => {
      do {
        entry.again = false;
        try {
          await load();
        } catch (error) {
          const box = key.includes(":") ? key.slice(key.indexOf(":") + 1).split("/")[0] : undefined;
          if (box) this.#patch(box, { error: plainError((error as Error).message) });
        }
      } while (entry.again);
      entry.running = false;
    };
    // Settles when the load and any asked for meanwhile are done (a failure is shown on the box).
    entry.done = run();
    return entry.done;
  }
}

function emptyView(status: BoxStatus): BoxView {
  return { status, locations: [], sessions: [], git: [], ports: [], services: {} };
}
