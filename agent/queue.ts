/**
 * The offline prompt queue (spec 2.2, 3.1): prompts held on the laptop until their box is reachable,
 * then typed into their session exactly once and, per session, in order.
 *
 * Items live in the agent's SQLite database (`<state>/client/agent.db`, WAL); every state change is one
 * committed statement, so a kill -9 of the agent at any moment loses nothing. The lifecycle is
 * `QUEUE_TRANSITIONS` (agent/queue_plan.ts, beside the delivery plan; the rows are agent/queue_rows.ts's),
 * written once:
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
 * - `delivered` items stay visible for `DELIVERED_KEPT_MS` (24 h) and at most
 *   `DELIVERED_KEPT` (1,000) of them, newest kept; older ones are pruned without an event.
 *
 * Events (`queue.added`, `queue.changed`, `queue.delivered`, `queue.failed`, `queue.removed`) carry
 * `id`, `box`, `session`, `state` and, for `failed`, `error`: never the text, which appears in no event
 * and no log line (an error message quoting the prompt is redacted).
 *
 * @module
 */
import { DockError, notFound } from "../client/errors.ts";
import type { QueueCreate, QueueEdit, QueueItem, QueueState, Session } from "../client/wire.ts";
import { type Clock, every, sleep, timeoutSignal } from "../core/clock.ts";
import type { EventBus } from "../core/events.ts";
import { errorText, type Log } from "../core/log.ts";
import type { Store } from "../core/store.ts";
import { transition } from "../core/transition.ts";
import {
  blockedIds,
  DELIVERED_KEPT_MS,
  type HeldState,
  laneOf,
  planQueue,
  QUEUE_TRANSITIONS,
  type QueueEvent,
  redact,
} from "./queue_plan.ts";
import { type QueueRow, QueueRows, type RowChange, sendKey, toItem, toSlot } from "./queue_rows.ts";

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
  /** Orders backoffs, re-reads, pruning and send deadlines. */
  clock: Clock;
  /** Where a send that failed unexpectedly, or a change the lifecycle refuses, is reported. */
  log: Log;
  /** Told of each state change (diagnostics; the lifecycle's conformance test). */
  trace?: (change: { id: string; from: QueueState; event: QueueEvent; to: QueueState }) => void;
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
  #rows: QueueRows;
  #clock: Clock;
  #log: Log;
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
  #stopTicks?: () => void;
  #ticks = 0;
  #sincePrune = 0;
  #unsubscribe?: () => void;

  constructor(options: QueueOptions) {
    this.#o = options;
    this.#rows = new QueueRows(options.store);
    this.#clock = options.clock;
    this.#log = options.log;
  }

  /** Every item, oldest first. */
  list(): QueueItem[] {
    const rows = this.#rows.all();
    const blocked = blockedIds(rows.map(toSlot));
    return rows.map((row) => toItem(row, blocked.has(row.id)));
  }

  /** One item; 404 when unknown. */
  get(id: string): QueueItem {
    return this.#item(this.#rows.row(id));
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
      const existing = this.#rows.find(request.id);
      if (existing) return { item: this.#item(existing), created: false };
    }
    this.#checkBox(request.box);
    const id = request.id ?? crypto.randomUUID();
    // A broadcast names the nonce: its own send to the session used the same key, so whichever of the
    // two reaches the box second replays the first instead of typing again.
    this.#rows.insert(id, request, this.#now(), options.nonce ?? crypto.randomUUID());
    const row = this.#rows.row(id);
    this.#announce("queue.added", row, origin);
    this.#kick();
    return { item: this.#item(row), created: true };
  }

  /**
   * Changes an item's box, session or text. A real change puts it back in line: `queued`, a new
   * `seq`, a new send key, no error. 409 while it is being sent or once delivered.
   */
  edit(id: string, patch: QueueEdit, origin: string): QueueItem {
    const row = this.#rows.row(id);
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
    this.#check(row, "edit");
    this.#rows.edit(id, next);
    const updated = this.#rows.row(id);
    this.#announce("queue.changed", updated, origin);
    this.#kick();
    return this.#item(updated);
  }

  /** Puts a failed item back in its place in line (`queued`, a new send key). 409 unless failed. */
  retry(id: string, origin: string): QueueItem {
    const row = this.#rows.row(id);
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
    let row = this.#rows.row(id);
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
      row = this.#rows.row(id); // it may have been sent, edited or removed meanwhile
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
    const row = this.#rows.row(id);
    if (row.state === "sending") {
      const waiting = this.#inFlight.get(laneOf(row))?.id === id ||
          (this.#o.boxes.has(row.box) && this.#o.boxes.online(row.box))
        ? "try again once it is done"
        : `its box '${row.box}' is offline: it is sent again with the same key once the box is back (never ` +
          "typed twice), or fails if the box is forgotten";
      throw new DockError("sending", `queue item '${id}' is being sent; ${waiting}`, { status: 409 });
    }
    const item = this.#item(row);
    this.#rows.delete(id);
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
    this.#stopTicks = every(this.#clock, 1000, () => this.#tick());
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
    this.#stopTicks?.();
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
    const slots = this.#rows.pending();
    if (!slots.length) return;
    const now = this.#clock.now();
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
    for (const id of plan.queued) this.#move(this.#rows.row(id), "offline", "dock");
    for (const id of plan.waiting) this.#move(this.#rows.row(id), "hold", "dock");
    for (const box of plan.read) this.#readSessions(box);
    for (const id of plan.forgotten) {
      const row = this.#rows.row(id);
      if (this.#inFlight.get(laneOf(row))?.id === id) continue; // its send settles it
      this.#move(row, "fail", "dock", { error: forgottenError(row.box) });
    }
    for (const id of plan.send) this.#start(this.#rows.row(id), "dock");
  }

  /** Starts sending `row` on its lane; resolves when the send is settled (or abandoned). */
  #start(row: QueueRow, origin: string): Promise<void> {
    const lane = laneOf(row);
    const sending = this.#deliver(row, origin).catch((error) => {
      if (!this.#closed) {
        this.#log.error(`queue: sending item ${row.id} failed unexpectedly: ${errorText(error)}`);
      }
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
    if (this.#o.sendDelayMs) {
      await sleep(this.#clock, this.#o.sendDelayMs, this.#abort.signal).catch(() => {});
    }
    if (this.#closed) return;
    let session: Session;
    const deadline = timeoutSignal(this.#clock, this.#o.sendTimeoutMs ?? 60_000);
    try {
      session = await this.#o.boxes.client(sending.box).send(sending.session, sending.text, {
        enter: sending.enter === 1,
        key: sendKey(sending),
        // The box checks the permission prompt as it types: one raised since the plan read the session
        // would otherwise be answered by this text.
        unlessWaiting: sending.wait === 1 ? "permission" : undefined,
        signal: AbortSignal.any([this.#abort.signal, deadline.signal]),
      });
    } catch (error) {
      deadline.cancel();
      if (this.#closed) return;
      if (error instanceof DockError && error.code === "permission_prompt" && sending.wait === 1) {
        // Not typed: back in line, held (the sessions read again) until the person answers.
        this.#backoff.delete(lane);
        this.#move(this.#rows.row(sending.id), "requeue", origin);
        this.#sessions.delete(sending.box);
        return;
      }
      if (
        error instanceof DockError && error.status >= 400 && error.status < 500 &&
        ![408, 429].includes(error.status)
      ) {
        this.#backoff.delete(lane);
        this.#move(this.#rows.row(sending.id), "fail", origin, {
          error: redact(error.message, sending.text),
        });
        return;
      }
      // Never answered: the box may be gone (the health check decides) or may have typed it (the key
      // makes the next attempt replay that instead of typing again).
      const failures = (this.#backoff.get(lane)?.failures ?? 0) + 1;
      const until = this.#clock.now() + Math.min(1000 * 2 ** (failures - 1), 30_000);
      this.#backoff.set(lane, { failures, until });
      this.#move(this.#rows.row(sending.id), "requeue", origin);
      this.#sessions.delete(sending.box);
      this.#o.boxes.check(sending.box).catch(() => {});
      return;
    }
    deadline.cancel();
    this.#backoff.delete(lane);
    this.#move(this.#rows.row(sending.id), "deliver", origin);
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
    change: RowChange = {},
  ): QueueRow {
    const to = this.#check(row, event);
    this.#rows.setState(row.id, to, change, this.#now());
    const updated = this.#rows.row(row.id);
    this.#announce(EVENT_OF[to], updated, origin);
    return updated;
  }

  /** The state `event` leads `row` to; a change the lifecycle does not name is logged and thrown. */
  #check(row: QueueRow, event: QueueEvent): QueueState {
    const to = transition(QUEUE_TRANSITIONS, row.state, event, {
      name: `queue item ${row.id}`,
      log: (message) => this.#log.error(message),
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
    this.#rows.prune(new Date(this.#clock.now() - DELIVERED_KEPT_MS).toISOString());
  }

  #checkBox(box: string): void {
    if (!this.#o.boxes.has(box)) throw notFound("box", box);
  }

  #item(row: QueueRow): QueueItem {
    return toItem(row, this.#rows.blocked(row));
  }

  #now(): string {
    return new Date(this.#clock.now()).toISOString();
  }
}

/** Why an item left `sending` for a box that was then forgotten failed. */
function forgottenError(box: string): string {
  return `its box '${box}' was forgotten while it was being sent: it may or may not have been typed`;
}
