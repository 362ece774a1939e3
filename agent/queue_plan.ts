/**
 * The offline prompt queue's rules, pure: its lifecycle ({@linkcode QUEUE_TRANSITIONS}), which items a
 * failed one holds, and the delivery plan (what changes state and what is sent now), decided from the
 * items' slots and a narrow view of the world. agent/queue.ts runs them; this module touches no store,
 * no box and no clock, so its tests need none.
 *
 * @module
 */
import type { AgentState, QueueState } from "../client/wire.ts";
import { transitions, type TransitionTable } from "../core/transition.ts";

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

/** The key the queue sends an item with, from its nonce and generation (0 until edited or retried). */
export function queueSendKey(nonce: string, generation = 0): string {
  return `q-${nonce}-${generation}`;
}
