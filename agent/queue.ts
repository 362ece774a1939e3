/**
 * The offline prompt queue (spec 2.2, 3.1): prompts held on the laptop until their box is reachable,
 * then typed into their session exactly once and, per session, in order.
 *
 * Items live in the agent's SQLite database (`<state>/client/agent.db`, WAL); every state change is one
 * committed statement, so a kill -9 of the agent at any moment loses nothing. The lifecycle is
 * {@linkcode QUEUE_TRANSITIONS}, written once:
 *
 * - `queued` waits for the box. When the box is online an item with `wait` becomes `waiting` and is
 *   released when the session's agent is not `running` (read from the box's `GET sessions`, re-read
 *   after the box's `agent.*` / `session.*` events reach the agent's bus) and not waiting on a
 *   permission prompt (`reason` `permission`: the turn has not ended, and text typed into that prompt
 *   would answer it on the person's behalf). The box checks that again in the step that types
 *   (`unless_waiting`): a prompt raised after the read sends the item back to `queued`, not `failed`.
 *   An item without `wait` goes as soon as it is its turn.
 * - Per session (box + session, a "lane") one item is in flight at a time, oldest `seq` first; lanes
 *   proceed in parallel. A `failed` item holds the items behind it (`blocked`) until it is retried,
 *   edited or removed.
 * - Exactly once: an item is marked `sending` (attempts + 1) before its request goes out, with an
 *   idempotency key the box records before typing (`q-<nonce>-<generation>`; the nonce is random per
 *   item, the generation grows with every edit and retry, so changed text is a new key). A send whose
 *   outcome is unknown (the agent killed mid-send, a broken connection, a timeout) is repeated with
 *   the same key, and the box answers the first outcome instead of typing again. Items found
 *   `sending` when the agent starts are resent that way once their box is online; one whose box is
 *   forgotten becomes `failed` ("may or may not have been typed"): nothing can resend it with its key.
 *   `DELETE` of a `sending` item is 409 always (spec 3.1).
 * - A send the box never answered (unreachable, 5xx, timeout) goes back to `queued` without counting
 *   as failed, and the lane backs off (1 s doubling to 30 s) while the health check decides whether the
 *   box is still there. A 4xx from the box (unknown session 404, gate refusal 403, an exited program
 *   409) is `failed`, with the box's message.
 * - `delivered` items stay visible for {@linkcode DELIVERED_KEPT_MS} (24 h) and at most
 *   {@linkcode DELIVERED_KEPT} (1,000) of them, newest kept; older ones are pruned without an event.
 *
 * Events (`queue.added`, `queue.changed`, `queue.delivered`, `queue.failed`, `queue.removed`) carry
 * `id`, `box`, `session`, `state` and, for `failed`, `error`: never the text, which appears in no event
 * and no log line (an error message quoting the prompt is redacted).
 *
 * @module
 */
import { DockError, notFound } from "../client/errors.ts";
import type { AgentState, QueueCreate, QueueEdit, QueueItem, QueueState, Session } from "../client/wire.ts";
import type { EventBus } from "../core/events.ts";
import type { Store } from "../core/store.ts";
import { sleep } from "../client/timers.ts";
import { transition, transitions, type TransitionTable } from "../core/transition.ts";

/** What moves a queue item along its lifecycle. */
export type QueueEvent = "edit" | "hold" | "offline" | "send" | "deliver" | "fail" | "requeue" | "retry";

/**
 * The allowed state changes, written once (core/transition.ts). Forward (`queued → waiting → sending →
 * delivered | failed`) except the rows spec 3.1 names: an edit puts any editable item back in line
 * (`queued`), a retry puts a failed one back, the box going offline returns `waiting` to `queued`, and a
 * send the box never answered (or that a permission prompt kept from typing) is requeued. `send` from
 * `sending` is a resend with the same key (after the agent restarted). A failed item is sent again only
 * once it is back in line (`sendNow` retries it first). `delivered` is final.
 */
export const QUEUE_TRANSITIONS: TransitionTable<QueueState, QueueEvent> = {
  queued: { edit: "queued", hold: "waiting", send: "sending" },
  waiting: { edit: "queued", offline: "queued", send: "sending" },
  sending: { send: "sending", deliver: "delivered", fail: "failed", requeue: "queued" },
  failed: { edit: "queued", retry: "queued" },
  delivered: {},
};

/** True when some event of the lifecycle leads from `from` to `to`. */
export function canTransition(from: QueueState, to: QueueState): boolean {
  return transitions(QUEUE_TRANSITIONS).some(([a, , b]) => a === from && b === to);
}

/** Delivered items kept at most (the newest). */
export const DELIVERED_KEPT = 1000;
/** How long a delivered item stays listed. */
export const DELIVERED_KEPT_MS = 24 * 3_600_000;

/** What the delivery plan needs to know of an item (no text). */
export interface Slot {
  id: string;
  box: string;
  session: string;
  state: QueueState;
  wait: boolean;
  seq: number;
}

/** The lane of an item: its box and session (one send in flight per lane). */
export function laneOf(item: { box: string; session: string }): string {
  return `${item.box}/${item.session}`;
}

/**
 * The ids of items held behind an earlier failed item of their lane. Delivered and sending items
 * are never blocked (one is done, the other already on its way).
 */
export function blockedIds(slots: readonly Slot[]): Set<string> {
  const failedLanes = new Set<string>();
  const blocked = new Set<string>();
  for (const slot of [...slots].sort((a, b) => a.seq - b.seq)) {
    const lane = laneOf(slot);
    if (failedLanes.has(lane) && slot.state !== "delivered" && slot.state !== "sending") blocked.add(slot.id);
    if (slot.state === "failed") failedLanes.add(lane);
  }
  return blocked;
}

/** What the plan asks of the world. */
export interface PlanContext {
  /** True while the box is paired (not forgotten), online or not. */
  known(box: string): boolean;
  /** True when the box is known and its last health check succeeded. */
  online(box: string): boolean;
  /** True while the lane has a send in flight or is backing off after an unreachable box. */
  busy(lane: string): boolean;
  /**
   * The session's agent state (`permission` for `waiting` on a permission prompt); `null` when the
   * box has no such session (the send will say so); `undefined` when not known yet (the box's
   * sessions must be read first).
   */
  agentState(box: string, session: string): HeldState | null | undefined;
}

/**
 * A session's agent state as the queue keeps it: `exited` once its program ended, `permission` while
 * it waits on a permission prompt (a `waiting` that is not the end of the turn).
 */
export type HeldState = AgentState | "exited" | "permission";

/** What to do now. */
export interface Plan {
  /** Items whose box is back and who wait for the agent's turn to end: to `waiting`. */
  waiting: string[];
  /** Waiting items whose box went away: back to `queued`. */
  queued: string[];
  /** Items to send now, at most one per lane. */
  send: string[];
  /** Boxes whose sessions must be read before a waiting item can go. */
  read: string[];
  /**
   * Items left `sending` whose box was forgotten: to `failed`, since nothing can ever resend them with
   * their key, nor ask the box whether it typed them.
   */
  forgotten: string[];
}

/**
 * Decides, from the items not yet delivered, what changes state and what is sent now. Per lane the
 * candidate is an item left `sending` (resent with its key) or else the oldest; a failed candidate
 * holds the lane; a candidate with `wait` goes only when its session's agent is not `running` and not
 * waiting on a permission prompt.
 */
export function planQueue(slots: readonly Slot[], context: PlanContext): Plan {
  const plan: Plan = { waiting: [], queued: [], send: [], read: [], forgotten: [] };
  const lanes = new Map<string, Slot>();
  for (const slot of [...slots].sort((a, b) => a.seq - b.seq)) {
    if (slot.state === "delivered") continue;
    if (slot.state === "sending" && !context.known(slot.box)) {
      plan.forgotten.push(slot.id);
      continue;
    }
    const online = context.online(slot.box);
    if (slot.state === "waiting" && !online) plan.queued.push(slot.id);
    if (slot.state === "queued" && slot.wait && online) plan.waiting.push(slot.id);
    const lane = laneOf(slot);
    const candidate = lanes.get(lane);
    if (!candidate || (slot.state === "sending" && candidate.state !== "sending")) lanes.set(lane, slot);
  }
  for (const [lane, slot] of lanes) {
    if (slot.state === "failed" || !context.online(slot.box) || context.busy(lane)) continue;
    if (slot.state !== "sending" && slot.wait) {
      const state = context.agentState(slot.box, slot.session);
      if (state === undefined) {
        if (!plan.read.includes(slot.box)) plan.read.push(slot.box);
        continue;
      }
      if (state === "running" || state === "permission") continue;
    }
    plan.send.push(slot.id);
  }
  return plan;
}

/** Removes the prompt from a message that quotes it (a gate that echoes its input). */
export function redact(message: string, text: string): string {
  // A prompt of a character or two is no secret, and replacing it would mangle every message.
  const needle = text.trim();
  return needle.length >= 3 && message.includes(needle) ? message.replaceAll(needle, "‹prompt›") : message;
}

/** The part of a box's client the queue uses. */
export interface QueueBoxClient {
  sessions(): Promise<Session[]>;
  send(
    name: string,
    text: string,
    options: { enter?: boolean; key?: string; unlessWaiting?: "permission"; signal?: AbortSignal },
  ): Promise<Session>;
}

/** The part of the agent's boxes the queue uses (a narrow seam, so tests hand in a fake). */
export interface QueueBoxes {
  /** True when a box of that name is known. */
  has(box: string): boolean;
  /** True while its last health check succeeded. */
  online(box: string): boolean;
  /** Its typed client (fetched per use: a failed health check replaces it). */
  client(box: string): QueueBoxClient;
  /** Checks the box now (after a send that did not reach it). */
  check(box: string): Promise<void>;
}

/** Dependencies and knobs of {@linkcode Queue}. */
export interface QueueOptions {
  store: Store;
  bus: EventBus;
  boxes: QueueBoxes;
  /**
   * Test only (`DOCK_QUEUE_TEST_SEND_DELAY_MS`): a pause between marking an item `sending` and its
   * request, so tests can see `sending`. @default {0}
   */
  sendDelayMs?: number;
  /** How long one send may take before its outcome counts as unknown (resent with its key). @default {60000} */
  sendTimeoutMs?: number;
  /** How often the sessions of boxes with waiting items are re-read without an event. @default {5000} */
  pollMs?: number;
  /** Clock. @default {() => new Date()} */
  now?: () => Date;
  /** Told of each state change (diagnostics; the lifecycle's conformance test). */
  trace?: (change: { id: string; from: QueueState; event: QueueEvent; to: QueueState }) => void;
}

const SCHEMA = `
CREATE TABLE IF NOT EXISTS queue (
  id TEXT PRIMARY KEY,
  seq INTEGER NOT NULL UNIQUE,
  box TEXT NOT NULL,
  session TEXT NOT NULL,
  text TEXT NOT NULL,
  enter INTEGER NOT NULL,
  wait INTEGER NOT NULL,
  state TEXT NOT NULL,
  error TEXT,
  created TEXT NOT NULL,
  attempts INTEGER NOT NULL DEFAULT 0,
  last_attempt TEXT,
  nonce TEXT NOT NULL,
  generation INTEGER NOT NULL DEFAULT 0
);
CREATE INDEX IF NOT EXISTS queue_state ON queue(state, seq);
`;

interface QueueRow {
  id: string;
  seq: number;
  box: string;
  session: string;
  text: string;
  enter: number;
  wait: number;
  state: QueueState;
  error: string | null;
  created: string;
  attempts: number;
  last_attempt: string | null;
  nonce: string;
  generation: number;
}

interface SessionStates {
  states: Map<string, { state: HeldState; time: string | null; agent: boolean }>;
  /** True until a read that started after the last change report has answered. */
  stale: boolean;
  /** Change reports so far (a read answers for the reports before it started). */
  marks: number;
  reading: boolean;
}

const EVENT_OF: Record<QueueState, string> = {
  queued: "queue.changed",
  waiting: "queue.changed",
  sending: "queue.changed",
  delivered: "queue.delivered",
  failed: "queue.failed",
};

/** The queue: its store, its API operations and its delivery engine. */
export class Queue {
  #o: QueueOptions;
  #store: Store;
  /** Lanes with a send in flight, and the promise that settles when it is done. */
  #inFlight = new Map<string, { id: string; done: Promise<void> }>();
  /** Lanes backing off after a send that did not reach the box. */
  #backoff = new Map<string, { until: number; failures: number }>();
  #sessions = new Map<string, SessionStates>();
  #abort = new AbortController();
  /** Delivering: between start() and close(). */
  #running = false;
  #closed = false;
  #scheduled = false;
  #timer?: ReturnType<typeof setInterval>;
  #ticks = 0;
  #sincePrune = 0;
  #unsubscribe?: () => void;

  constructor(options: QueueOptions) {
    this.#o = options;
    this.#store = options.store;
    this.#store.db.exec(SCHEMA);
  }

  /** Every item, oldest first. */
  list(): QueueItem[] {
    const rows = this.#store.all<QueueRow>("SELECT * FROM queue ORDER BY seq");
    const blocked = blockedIds(rows.map(toSlot));
    return rows.map((row) => toItem(row, blocked.has(row.id)));
  }

  /** One item; 404 when unknown. */
  get(id: string): QueueItem {
    return this.#item(this.#row(id));
  }

  /**
   * Adds an item, `queued`, at the end of the line. A client-supplied `id` that is already in the
   * queue returns that item instead (`created` false). `nonce` fixes the item's first send key
   * ({@linkcode queueSendKey}); by default it is random.
   */
  add(
    request: QueueCreate,
    origin: string,
    options: { nonce?: string } = {},
  ): { item: QueueItem; created: boolean } {
    if (request.id !== undefined) {
      const existing = this.#find(request.id);
      if (existing) return { item: this.#item(existing), created: false };
    }
    this.#checkBox(request.box);
    const id = request.id ?? crypto.randomUUID();
    this.#store.transaction(() => {
      this.#store.run(
        `INSERT INTO queue (id, seq, box, session, text, enter, wait, state, created, nonce)
         VALUES (?, ?, ?, ?, ?, ?, ?, 'queued', ?, ?)`,
        id,
        this.#nextSeq(),
        request.box,
        request.session,
        request.text,
        request.enter === false ? 0 : 1,
        request.wait === false ? 0 : 1,
        this.#now(),
        // A broadcast names the nonce: its own send to the session used the same key, so whichever of
        // the two reaches the box second replays the first instead of typing again.
        options.nonce ?? crypto.randomUUID(),
      );
    });
    const row = this.#row(id);
    this.#announce("queue.added", row, origin);
    this.#kick();
    return { item: this.#item(row), created: true };
  }

  /**
   * Changes an item's box, session or text. A real change puts it back in line: `queued`, a new
   * `seq`, a new send key, no error. 409 while it is being sent or once delivered.
   */
  edit(id: string, patch: QueueEdit, origin: string): QueueItem {
    const row = this.#row(id);
    const next = {
      box: patch.box ?? row.box,
      session: patch.session ?? row.session,
      text: patch.text ?? row.text,
    };
    if (next.box === row.box && next.session === row.session && next.text === row.text) {
      return this.#item(row);
    }
    if (row.state === "sending" || row.state === "delivered") {
      throw new DockError("not_editable", `queue item '${id}' is ${row.state}; it can no longer change`, {
        status: 409,
      });
    }
    if (next.box !== row.box) this.#checkBox(next.box);
    this.#store.transaction(() => {
      this.#check(row, "edit");
      this.#store.run(
        `UPDATE queue SET box = ?, session = ?, text = ?, state = 'queued', error = NULL, seq = ?,
         generation = generation + 1 WHERE id = ?`,
        next.box,
        next.session,
        next.text,
        this.#nextSeq(),
        id,
      );
    });
    const updated = this.#row(id);
    this.#announce("queue.changed", updated, origin);
    this.#kick();
    return this.#item(updated);
  }

  /** Puts a failed item back in its place in line (`queued`, a new send key). 409 unless failed. */
  retry(id: string, origin: string): QueueItem {
    const row = this.#row(id);
    if (row.state !== "failed") {
      throw new DockError("not_failed", `queue item '${id}' is ${row.state}; only a failed item is retried`, {
        status: 409,
      });
    }
    const updated = this.#move(row, "retry", origin, { newKey: true });
    this.#kick();
    return this.#item(updated);
  }

  /**
   * Sends an item now, without waiting for the agent's turn to end or for the items before it (still
   * one send per session at a time: it waits for one in flight). Answers the item as the send left
   * it: `delivered`, `failed`, or `queued` when the box could not be reached. 409 while the box is
   * offline. A delivered item is answered as it is, never typed again.
   */
  async sendNow(id: string, origin: string): Promise<QueueItem> {
    let row = this.#row(id);
    this.#checkBox(row.box);
    if (!this.#o.boxes.online(row.box)) {
      throw new DockError("box_offline", `box '${row.box}' is offline; the item stays in the queue`, {
        status: 409,
        detail: { box: row.box },
      });
    }
    for (;;) {
      const inFlight = this.#inFlight.get(laneOf(row));
      if (!inFlight) break;
      await inFlight.done;
      row = this.#row(id); // it may have been sent, edited or removed meanwhile
    }
    if (row.state === "delivered") return this.#item(row);
    if (this.#closed) throw new DockError("closing", "the agent is stopping", { status: 503 });
    if (row.state === "failed") row = this.#move(row, "retry", origin, { newKey: true });
    await this.#start(row, origin);
    return this.get(id);
  }

  /**
   * Removes an item and returns it as it was. 409 while it is `sending` (spec 3.1), whatever its box:
   * one left `sending` by an earlier agent may have been typed, and only its box can tell, by its key.
   * It leaves `sending` on its own: resent with that key once its box is online (the box answers the
   * first outcome instead of typing again), or `failed` once its box is forgotten.
   */
  remove(id: string, origin: string): QueueItem {
    const row = this.#row(id);
    if (row.state === "sending") {
      const waiting = this.#inFlight.get(laneOf(row))?.id === id ||
          (this.#o.boxes.has(row.box) && this.#o.boxes.online(row.box))
        ? "try again once it is done"
        : `its box '${row.box}' is offline: it is sent again with the same key once the box is back (never ` +
          "typed twice), or fails if the box is forgotten";
      throw new DockError("sending", `queue item '${id}' is being sent; ${waiting}`, { status: 409 });
    }
    const item = this.#item(row);
    this.#store.run("DELETE FROM queue WHERE id = ?", id);
    this.#announce("queue.removed", row, origin);
    this.#kick(); // the items behind a removed failed one may go now
    return item;
  }

  /** Starts delivering: follows the boxes' events, resends what was left `sending`, prunes. */
  start(): void {
    this.#running = true;
    this.#prune();
    this.#unsubscribe = this.#o.bus.subscribe((event) => {
      const data = event.data ?? {};
      if (!event.box) {
        const box = typeof data.box === "string" ? data.box : undefined;
        if (box && event.type.startsWith("box.")) {
          this.#sessions.delete(box); // read again once it is back
          this.#backoff.forEach((_, lane) => lane.startsWith(`${box}/`) && this.#backoff.delete(lane));
          this.#kick();
        }
        return;
      }
      const known = this.#sessions.get(event.box);
      if (!known) return;
      if (event.type === "session.sent") {
        // Our own sends answer the new state; another client's send to an agent changes it too.
        const entry = known.states.get(String(data.session));
        if (!entry?.agent) return;
      } else if (!event.type.startsWith("agent.") && !event.type.startsWith("session.")) return;
      // agent.* reports name the tool's session, not ours: read the box's sessions again.
      known.stale = true;
      known.marks++;
      this.#kick();
    });
    this.#timer = setInterval(() => this.#tick(), 1000);
    this.#kick();
  }

  /**
   * Stops delivering. Sends in flight are abandoned where they are: their items stay `sending` and
   * the next start resends them with the same key, so the box types each at most once.
   */
  close(): void {
    this.#running = false;
    this.#closed = true;
    this.#abort.abort();
    clearInterval(this.#timer);
    this.#unsubscribe?.();
  }

  #tick(): void {
    if (++this.#ticks % Math.max(1, Math.round((this.#o.pollMs ?? 5000) / 1000)) === 0) {
      for (const known of this.#sessions.values()) {
        known.stale = true;
        known.marks++;
      }
    }
    if (this.#ticks % 600 === 0) this.#prune();
    this.#kick();
  }

  /**
   * Plans again once the current job is done; kicks from the same job make one pass. A microtask, not
   * a timer: a timer's turn costs 1–5 ms per delivery on a busy machine (measured), a third of a send.
   */
  #kick(): void {
    if (this.#scheduled || !this.#running) return;
    this.#scheduled = true;
    queueMicrotask(() => {
      this.#scheduled = false;
      if (this.#running) this.#pump();
    });
  }

  #pump(): void {
    const slots = this.#store.all<QueueRow>(
      "SELECT id, box, session, state, wait, seq FROM queue WHERE state != 'delivered' ORDER BY seq",
    ).map(toSlot);
    if (!slots.length) return;
    const now = Date.now();
    const plan = planQueue(slots, {
      known: (box) => this.#o.boxes.has(box),
      online: (box) => this.#o.boxes.has(box) && this.#o.boxes.online(box),
      busy: (lane) => this.#inFlight.has(lane) || (this.#backoff.get(lane)?.until ?? 0) > now,
      agentState: (box, session) => {
        const known = this.#sessions.get(box);
        if (!known || known.stale) return undefined;
        return known.states.get(session)?.state ?? null;
      },
    });
    for (const id of plan.queued) this.#move(this.#row(id), "offline", "dock");
    for (const id of plan.waiting) this.#move(this.#row(id), "hold", "dock");
    for (const box of plan.read) this.#readSessions(box);
    for (const id of plan.forgotten) {
      const row = this.#row(id);
      if (this.#inFlight.get(laneOf(row))?.id === id) continue; // its send settles it
      this.#move(row, "fail", "dock", { error: forgottenError(row.box) });
    }
    for (const id of plan.send) this.#start(this.#row(id), "dock");
  }

  /** Starts sending `row` on its lane; resolves when the send is settled (or abandoned). */
  #start(row: QueueRow, origin: string): Promise<void> {
    const lane = laneOf(row);
    const sending = this.#deliver(row, origin).catch((error) => {
      if (!this.#closed) console.error(`queue: sending item ${row.id} failed unexpectedly:`, error);
    }).finally(() => {
      this.#inFlight.delete(lane);
      this.#kick();
    });
    this.#inFlight.set(lane, { id: row.id, done: sending });
    return sending;
  }

  async #deliver(row: QueueRow, origin: string): Promise<void> {
    // Committed before the request exists: a kill -9 from here on leaves `sending`, and the next
    // start repeats the request with the same key.
    const sending = this.#move(row, "send", origin, { attempt: true });
    const lane = laneOf(sending);
    if (this.#o.sendDelayMs) await sleep(this.#o.sendDelayMs, this.#abort.signal);
    if (this.#closed) return;
    let session: Session;
    try {
      session = await this.#o.boxes.client(sending.box).send(sending.session, sending.text, {
        enter: sending.enter === 1,
        key: sendKey(sending),
        // The box checks the permission prompt as it types: one raised since the plan read the session
        // would otherwise be answered by this text.
        unlessWaiting: sending.wait === 1 ? "permission" : undefined,
        signal: AbortSignal.any([this.#abort.signal, AbortSignal.timeout(this.#o.sendTimeoutMs ?? 60_000)]),
      });
    } catch (error) {
      if (this.#closed) return;
      if (error instanceof DockError && error.code === "permission_prompt" && sending.wait === 1) {
        // Not typed: back in line, held (the sessions read again) until the person answers.
        this.#backoff.delete(lane);
        this.#move(this.#row(sending.id), "requeue", origin);
        this.#sessions.delete(sending.box);
        return;
      }
      if (
        error instanceof DockError && error.status >= 400 && error.status < 500 &&
        ![408, 429].includes(error.status)
      ) {
        this.#backoff.delete(lane);
        this.#move(this.#row(sending.id), "fail", origin, { error: redact(error.message, sending.text) });
        return;
      }
      // Never answered: the box may be gone (the health check decides) or may have typed it (the key
      // makes the next attempt replay that instead of typing again).
      const failures = (this.#backoff.get(lane)?.failures ?? 0) + 1;
      this.#backoff.set(lane, { failures, until: Date.now() + Math.min(1000 * 2 ** (failures - 1), 30_000) });
      this.#move(this.#row(sending.id), "requeue", origin);
      this.#sessions.delete(sending.box);
      this.#o.boxes.check(sending.box).catch(() => {});
      return;
    }
    this.#backoff.delete(lane);
    this.#move(this.#row(sending.id), "deliver", origin);
    this.#learn(sending.box, session);
    if (++this.#sincePrune >= 100) this.#prune();
  }

  /** Reads a box's sessions (for `wait`); plans again once known. */
  #readSessions(box: string): void {
    const known = this.#sessions.get(box) ?? { states: new Map(), stale: true, marks: 0, reading: false };
    this.#sessions.set(box, known);
    if (known.reading) return;
    known.reading = true;
    const marks = known.marks;
    this.#o.boxes.client(box).sessions().then((sessions) => {
      for (const session of sessions) this.#learn(box, session);
      const names = new Set(sessions.map((s) => s.name));
      for (const name of known.states.keys()) if (!names.has(name)) known.states.delete(name);
      // A change reported while the read was on its way may not be in it: stay stale, read again.
      if (known.marks === marks) known.stale = false;
    }).catch(() => {
      this.#o.boxes.check(box).catch(() => {});
    }).finally(() => {
      known.reading = false;
      this.#kick();
    });
  }

  /** Records a session's agent state, unless what we hold was reported later (an exit always counts). */
  #learn(box: string, session: Session): void {
    const known = this.#sessions.get(box);
    if (!known) return;
    const held = known.states.get(session.name);
    const older = held?.time && session.state_time && session.state_time < held.time;
    if (older && !session.exited) return;
    known.states.set(session.name, {
      state: session.exited
        ? "exited"
        : session.agent_state === "waiting" && session.reason === "permission"
        ? "permission"
        : session.agent_state,
      time: session.state_time,
      agent: session.agent !== null,
    });
  }

  /** Moves an item along its lifecycle (the one place states change) and announces it. */
  #move(
    row: QueueRow,
    event: QueueEvent,
    origin: string,
    options: { error?: string; attempt?: boolean; newKey?: boolean } = {},
  ): QueueRow {
    let to: QueueState = row.state;
    this.#store.transaction(() => {
      to = this.#check(row, event);
      this.#store.run(
        `UPDATE queue SET state = ?, error = ?, attempts = attempts + ?, last_attempt = coalesce(?, last_attempt),
         generation = generation + ? WHERE id = ?`,
        to,
        to === "failed" ? options.error ?? "failed" : null,
        options.attempt ? 1 : 0,
        options.attempt ? this.#now() : null,
        options.newKey ? 1 : 0,
        row.id,
      );
    });
    const updated = this.#row(row.id);
    this.#announce(EVENT_OF[to], updated, origin);
    return updated;
  }

  /** The state `event` leads `row` to; a change the lifecycle does not name is logged and thrown. */
  #check(row: QueueRow, event: QueueEvent): QueueState {
    const to = transition(QUEUE_TRANSITIONS, row.state, event, {
      name: `queue item ${row.id}`,
      log: (message) => console.error(message),
    });
    if (to === null) {
      throw new Error(
        `queue item ${row.id}: '${event}' is not a transition of the lifecycle from ${row.state}`,
      );
    }
    this.#o.trace?.({ id: row.id, from: row.state, event, to });
    return to;
  }

  #announce(type: string, row: QueueRow, origin: string): void {
    // Identifiers and state only: the text never reaches an event.
    const data: Record<string, unknown> = {
      id: row.id,
      box: row.box,
      session: row.session,
      state: row.state,
    };
    if (row.state === "failed" && row.error) data.error = row.error;
    this.#o.bus.publish({ type, origin, data });
  }

  #prune(): void {
    this.#sincePrune = 0;
    const cutoff = new Date(Date.now() - DELIVERED_KEPT_MS).toISOString();
    this.#store.run(
      `DELETE FROM queue WHERE state = 'delivered' AND (last_attempt < ? OR id IN (
         SELECT id FROM queue WHERE state = 'delivered' ORDER BY last_attempt DESC, seq DESC LIMIT -1 OFFSET ?))`,
      cutoff,
      DELIVERED_KEPT,
    );
  }

  #nextSeq(): number {
    // A counter in meta, not max(seq) + 1: a number once given is never given again, even after the
    // newest item was removed or pruned.
    const row = this.#store.get<{ value: string }>(
      `INSERT INTO meta (key, value) VALUES ('queue_seq', coalesce((SELECT max(seq) FROM queue), 0) + 1)
       ON CONFLICT(key) DO UPDATE SET value = CAST(value AS INTEGER) + 1 RETURNING value`,
    );
    return Number(row!.value);
  }

  #checkBox(box: string): void {
    if (!this.#o.boxes.has(box)) throw notFound("box", box);
  }

  #item(row: QueueRow): QueueItem {
    const blocked = row.state !== "delivered" && row.state !== "sending" &&
      this.#store.get(
          "SELECT 1 FROM queue WHERE box = ? AND session = ? AND state = 'failed' AND seq < ? LIMIT 1",
          row.box,
          row.session,
          row.seq,
        ) !== undefined;
    return toItem(row, blocked);
  }

  #find(id: string): QueueRow | undefined {
    return this.#store.get<QueueRow>("SELECT * FROM queue WHERE id = ?", id);
  }

  #row(id: string): QueueRow {
    const row = this.#find(id);
    if (!row) throw notFound("queue item", id);
    return row;
  }

  #now(): string {
    return (this.#o.now?.() ?? new Date()).toISOString();
  }
}

/** Why an item left `sending` for a box that was then forgotten failed. */
function forgottenError(box: string): string {
  return `its box '${box}' was forgotten while it was being sent: it may or may not have been typed`;
}

/** The idempotency key of an item's current content: a new one after every edit or retry. */
function sendKey(row: QueueRow): string {
  return queueSendKey(row.nonce, row.generation);
}

/** The key the queue sends an item with, from its nonce and generation (0 until edited or retried). */
export function queueSendKey(nonce: string, generation = 0): string {
  return `q-${nonce}-${generation}`;
}

function toSlot(row: QueueRow): Slot {
  return {
    id: row.id,
    box: row.box,
    session: row.session,
    state: row.state,
    wait: row.wait === 1,
    seq: row.seq,
  };
}

function toItem(row: QueueRow, blocked: boolean): QueueItem {
  const item: QueueItem = {
    id: row.id,
    box: row.box,
    session: row.session,
    text: row.text,
    enter: row.enter === 1,
    wait: row.wait === 1,
    state: row.state,
    created: row.created,
    attempts: row.attempts,
    blocked,
    seq: row.seq,
  };
  if (row.state === "failed" && row.error) item.error = row.error;
  if (row.last_attempt) item.last_attempt = row.last_attempt;
  return item;
}
