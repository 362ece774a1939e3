/**
 * Broadcast (spec 6, issue 30 item 3): one prompt to several sessions, with `{{variables}}` filled per
 * session, each typed at most once, through the offline queue when its box cannot take it now.
 *
 * - **Targets** are `to` (`BOX/SESSION`) or every session of the laptop's view that `where` matches
 *   (`state`, `box`, `location`, `agent`; a program that exited is never matched). The view is each
 *   online box's `GET sessions` and `GET locations` (for the branch), read for the broadcast, and the
 *   last view read of a box that is offline now (kept in the agent's database, so an agent restarted
 *   while a box is away still knows its sessions).
 * - **Variables**: `session`, `worktree`, `location`, `box`, `branch`, filled in one pass (a value that
 *   holds `{{x}}` is typed as it is, never expanded again), no shell involved. Any other name is a 400
 *   naming it, before anything is sent.
 * - **Exactly once.** Each target has a key made from the broadcast's id, its box and its session. The
 *   box records it before typing (its send ledger), and a queued prompt is sent with the same key
 *   (`Queue.add`'s `nonce`), so a broadcast repeated with its id, or a send whose answer was lost and
 *   that went to the queue, replays the first outcome instead of typing again.
 * - **Never an answer.** Each send carries `unless_waiting: "permission"`: the box refuses to type into
 *   a permission prompt in the step that types. Such a target is queued (the queue holds it until the
 *   person has answered) or, with `queue: false`, skipped.
 *
 * @module
 */
import { badField, DockError, notFound } from "../client/errors.ts";
import type {
  BroadcastRequest,
  BroadcastResult,
  BroadcastTarget,
  BroadcastWhere,
  Location,
  QueueCreate,
  QueueItem,
  Session,
} from "../client/wire.ts";
import { sha256Hex } from "../core/bytes.ts";
import type { Store } from "../core/store.ts";
import { queueSendKey, redact } from "./queue_plan.ts";

/**
 * The names a broadcast's text may use as `{{name}}`: spec 6 names the agent's branch, worktree, project
 * and box; `project` is the location's name (dock's word for it), and `location` says the same.
 */
export const BROADCAST_VARIABLES = ["session", "worktree", "location", "project", "box", "branch"] as const;

/** One of {@linkcode BROADCAST_VARIABLES}. */
export type BroadcastVariable = typeof BROADCAST_VARIABLES[number];

/** A `{{name}}` (spaces inside the braces allowed). */
const VARIABLE = /\{\{\s*([^{}]*?)\s*\}\}/g;

/** The variable names `text` uses, in order of first use. */
export function variablesOf(text: string): string[] {
  return [...new Set([...text.matchAll(VARIABLE)].map((match) => match[1]))];
}

/** Refuses (400, field `text`) a text that uses a name other than {@linkcode BROADCAST_VARIABLES}. */
export function checkVariables(text: string): void {
  const unknown = variablesOf(text).filter((name) =>
    !(BROADCAST_VARIABLES as readonly string[]).includes(name)
  );
  if (unknown.length) {
    throw badField(
      "text",
      `unknown variable ${unknown.map((name) => `{{${name}}}`).join(", ")}: a broadcast fills ${
        BROADCAST_VARIABLES.map((name) => `{{${name}}}`).join(", ")
      }`,
    );
  }
}

/** `text` with each `{{name}}` replaced by its value, in one pass (values are never expanded again). */
export function fillVariables(text: string, values: Record<BroadcastVariable, string>): string {
  return text.replace(
    VARIABLE,
    (whole, name: string) => Object.hasOwn(values, name) ? values[name as BroadcastVariable] : whole,
  );
}

/** A session as the laptop's view holds it: the box's record and its worktree's branch. */
export interface ViewSession {
  box: string;
  name: string;
  agent: string | null;
  agent_state: Session["agent_state"];
  reason: Session["reason"];
  exited: boolean;
  location: string;
  worktree: string;
  branch: string | null;
}

/** True when `session` is one `where` selects: every field named matches, and its program runs. */
export function matches(session: ViewSession, where: BroadcastWhere): boolean {
  if (session.exited) return false;
  if (where.state !== undefined && session.agent_state !== where.state) return false;
  if (where.box !== undefined && session.box !== where.box) return false;
  if (where.location !== undefined && session.location !== where.location) return false;
  return where.agent === undefined || session.agent === where.agent;
}

/** The view of one box's sessions, from what it answered. */
export function viewOf(
  box: string,
  sessions: readonly Session[],
  locations: readonly Location[],
): ViewSession[] {
  const branches = new Map<string, string | null>();
  for (const location of locations) {
    for (const worktree of location.worktrees) {
      branches.set(`${location.name}/${worktree.name}`, worktree.branch);
    }
  }
  return sessions.map((session) => ({
    box,
    name: session.name,
    agent: session.agent,
    agent_state: session.agent_state,
    reason: session.reason,
    exited: session.exited,
    location: session.location,
    worktree: session.worktree,
    branch: branches.get(`${session.location}/${session.worktree}`) ?? null,
  }));
}

/**
 * The per-target identity of a broadcast: the queue item's id and the nonce of its send key, the same
 * for every try of the same broadcast id (32 hex digits of a SHA-256: box and session names can be
 * long, and a key is at most 200 characters).
 */
export async function targetIdentity(
  id: string,
  box: string,
  session: string,
): Promise<{ queueId: string; nonce: string }> {
  const digest = await sha256Hex(JSON.stringify([id, box, session]), 16);
  return { queueId: `bc-${digest}`, nonce: `bc-${digest}` };
}

/** The part of a box's client a broadcast uses. */
export interface BroadcastBoxClient {
  sessions(): Promise<Session[]>;
  locations(): Promise<Location[]>;
  send(
    name: string,
    text: string,
    options: { enter?: boolean; key?: string; unlessWaiting?: "permission"; signal?: AbortSignal },
  ): Promise<Session>;
}

/** The part of the agent's boxes a broadcast uses. */
export interface BroadcastBoxes {
  list(): { name: string }[];
  has(box: string): boolean;
  online(box: string): boolean;
  client(box: string): BroadcastBoxClient;
  /** Checks the box now (after a request that did not reach it). */
  check(box: string): Promise<void>;
}

/** The part of the queue a broadcast uses. */
export interface BroadcastQueue {
  add(
    request: QueueCreate,
    origin: string,
    options: { nonce?: string },
  ): { item: QueueItem; created: boolean };
  get(id: string): QueueItem;
}

/** Dependencies and knobs of {@linkcode Broadcaster}. */
export interface BroadcasterOptions {
  store: Store;
  boxes: BroadcastBoxes;
  queue: BroadcastQueue;
  /** How long reading one box's sessions may take before its last view is used. @default {10000} */
  readTimeoutMs?: number;
  /** How long one send may take before its outcome counts as unknown (then queued with its key). @default {30000} */
  sendTimeoutMs?: number;
}

const SCHEMA = `
CREATE TABLE IF NOT EXISTS broadcast_views (
  box TEXT PRIMARY KEY,
  sessions TEXT NOT NULL,
  read TEXT NOT NULL
);
`;

/** A target resolved: its session as the view holds it (null when the view has never seen it). */
interface Resolved {
  box: string;
  session: string;
  seen: ViewSession | null;
  /** Why it cannot be sent at all. */
  failed?: { reason: string; error: string };
}

/** Sends broadcasts, and keeps the laptop's last view of each box's sessions. */
export class Broadcaster {
  #o: BroadcasterOptions;

  constructor(options: BroadcasterOptions) {
    this.#o = options;
    options.store.db.exec(SCHEMA);
  }

  /** Resolves the targets, fills the text for each and sends it (or queues it); answers per target. */
  async run(request: BroadcastRequest, origin: string): Promise<BroadcastResult> {
    if ((request.to === undefined) === (request.where === undefined)) {
      throw badField(
        "to",
        "name the sessions with 'to' (BOX/SESSION…) or select them with 'where', not both",
      );
    }
    if (request.where && !Object.values(request.where).some((value) => value !== undefined)) {
      throw badField("where", "name at least one of state, box, location, agent");
    }
    checkVariables(request.text);
    if (request.where?.box !== undefined && !this.#o.boxes.has(request.where.box)) {
      throw notFound("box", request.where.box);
    }
    const id = request.id ?? crypto.randomUUID();
    const resolved = await this.#resolve(request);
    const targets = await Promise.all(resolved.map((target) => this.#deliver(id, target, request, origin)));
    return { id, targets };
  }

  /** The targets, each with its session as the view holds it. */
  async #resolve(request: BroadcastRequest): Promise<Resolved[]> {
    const named = request.to
      ? [...new Set(request.to)].map((spec) => {
        const slash = spec.indexOf("/");
        return { box: spec.slice(0, slash), session: spec.slice(slash + 1) };
      })
      : null;
    const boxes = named
      ? [...new Set(named.map((t) => t.box))].filter((box) => this.#o.boxes.has(box))
      : request.where?.box !== undefined
      ? [request.where.box]
      : this.#o.boxes.list().map((b) => b.name);
    const views = new Map(await Promise.all(boxes.map(async (box) => [box, await this.#view(box)] as const)));
    if (!named) {
      return [...views.values()].flatMap((view) => view.sessions.filter((s) => matches(s, request.where!)))
        .map((seen) => ({ box: seen.box, session: seen.name, seen }));
    }
    return named.map(({ box, session }) => {
      const view = views.get(box);
      if (!view) {
        return { box, session, seen: null, failed: { reason: "not_found", error: `box '${box}' not found` } };
      }
      const seen = view.sessions.find((s) => s.name === session) ?? null;
      if (!seen && view.fresh) {
        return {
          box,
          session,
          seen,
          failed: { reason: "not_found", error: `session '${session}' not found` },
        };
      }
      if (seen?.exited) {
        return {
          box,
          session,
          seen,
          failed: {
            reason: "exited",
            error: `session '${session}' has exited; its program no longer reads input`,
          },
        };
      }
      return { box, session, seen };
    });
  }

  /** A box's sessions: read now when it is online, else the last view read (`fresh` false). */
  async #view(box: string): Promise<{ sessions: ViewSession[]; fresh: boolean }> {
    if (this.#o.boxes.online(box)) {
      const client = this.#o.boxes.client(box);
      const timeout = AbortSignal.timeout(this.#o.readTimeoutMs ?? 10_000);
      try {
        const [sessions, locations] = await Promise.race([
          Promise.all([client.sessions(), client.locations()]),
          new Promise<never>((_, reject) => timeout.addEventListener("abort", () => reject(timeout.reason))),
        ]);
        const view = viewOf(box, sessions, locations);
        this.#o.store.run(
          `INSERT INTO broadcast_views (box, sessions, read) VALUES (?, ?, ?)
           ON CONFLICT(box) DO UPDATE SET sessions = excluded.sessions, read = excluded.read`,
          box,
          JSON.stringify(view),
          new Date().toISOString(),
        );
        return { sessions: view, fresh: true };
      } catch {
        this.#o.boxes.check(box).catch(() => {});
      }
    }
    const row = this.#o.store.get<{ sessions: string }>(
      "SELECT sessions FROM broadcast_views WHERE box = ?",
      box,
    );
    return { sessions: row ? JSON.parse(row.sessions) as ViewSession[] : [], fresh: false };
  }

  /** Sends one target its text, or queues it; never throws. */
  async #deliver(
    id: string,
    target: Resolved,
    request: BroadcastRequest,
    origin: string,
  ): Promise<BroadcastTarget> {
    const { box, session } = target;
    if (target.failed) return { box, session, outcome: "failed", ...target.failed };
    const text = this.#fill(request.text, target);
    if (text === null) {
      return {
        box,
        session,
        outcome: "failed",
        reason: "not_seen",
        error: `box '${box}' is offline and its session '${session}' was never seen: ` +
          `its ${
            variablesOf(request.text).filter((n) => n !== "session" && n !== "box").map((n) => `{{${n}}}`)
              .join(", ")
          } cannot be filled`,
      };
    }
    if (request.dry_run) return { box, session, outcome: "planned", text };
    const { queueId, nonce } = await targetIdentity(id, box, session);
    // An earlier try of this broadcast queued it: that item is the target's one delivery.
    const queued = this.#queued(queueId);
    if (queued) return fromItem(queued);
    const useQueue = request.queue !== false;
    const enqueue = (reason: string): BroadcastTarget => {
      if (!useQueue) return { box, session, outcome: "skipped", reason };
      const { item } = this.#o.queue.add(
        { id: queueId, box, session, text, enter: request.enter, wait: true },
        origin,
        { nonce },
      );
      return { ...fromItem(item), reason };
    };
    if (!this.#o.boxes.online(box)) return enqueue("box_offline");
    try {
      await this.#o.boxes.client(box).send(session, text, {
        enter: request.enter,
        key: queueSendKey(nonce),
        unlessWaiting: "permission",
        signal: AbortSignal.timeout(this.#o.sendTimeoutMs ?? 30_000),
      });
      return { box, session, outcome: "sent" };
    } catch (error) {
      if (error instanceof DockError && error.code === "permission_prompt") {
        return enqueue("waiting_permission");
      }
      if (
        error instanceof DockError && error.status >= 400 && error.status < 500 &&
        ![408, 429].includes(error.status)
      ) {
        return { box, session, outcome: "failed", reason: error.code, error: redact(error.message, text) };
      }
      // Unanswered: the box may have typed it. The queue sends it again with the same key, and the box
      // then answers the first outcome rather than typing twice.
      this.#o.boxes.check(box).catch(() => {});
      if (!useQueue) {
        return {
          box,
          session,
          outcome: "failed",
          reason: "send_unconfirmed",
          error:
            `the box did not answer (${redact((error as Error).message, text)}); it may have been typed. ` +
            `Broadcasting again with id ${id} never types it twice`,
        };
      }
      return enqueue("unconfirmed");
    }
  }

  /** The text for one target; null when a variable it needs is unknown (a session never seen). */
  #fill(text: string, target: Resolved): string | null {
    const seen = target.seen;
    if (!seen && variablesOf(text).some((name) => name !== "session" && name !== "box")) return null;
    return fillVariables(text, {
      session: target.session,
      box: target.box,
      worktree: seen?.worktree ?? "",
      location: seen?.location ?? "",
      project: seen?.location ?? "",
      branch: seen?.branch ?? "",
    });
  }

  #queued(queueId: string): QueueItem | null {
    try {
      return this.#o.queue.get(queueId);
    } catch (error) {
      if (error instanceof DockError && error.status === 404) return null;
      throw error;
    }
  }
}

/** A target's outcome from its queue item. */
function fromItem(item: QueueItem): BroadcastTarget {
  const base = { box: item.box, session: item.session, queue_id: item.id };
  if (item.state === "delivered") return { ...base, outcome: "sent" };
  if (item.state === "failed") {
    return { ...base, outcome: "failed", reason: "queue_failed", error: item.error ?? "failed" };
  }
  return { ...base, outcome: "queued" };
}
