/**
 * Forge triggers (spec 3.5): flows started by activity on a worktree's pull request, found by asking the
 * forge's command-line tool (`gh`, installed and signed in on the box).
 *
 * - **What is watched.** Each forge flow in force covers the worktrees its scope and `where` admit, except
 *   main checkouts and worktrees on the location's default branch (they have no pull request of their
 *   own). `gh pr view` in the worktree answers for the pull request of its branch.
 * - **When.** A flow is due every `poll` (at least 1m, default 2m). One poll asks about every worktree
 *   the due flows cover, at most {@linkcode GH_CALLS_PER_POLL} `gh` calls in all, shared between flows:
 *   a worktree left out is asked first next time, so none starves.
 * - **What starts a run.** Every item of the flow's `on` kind not seen before by that flow in that
 *   worktree: its own run, one after another in the order they happened, with a `forge.<on>` event
 *   (`pr`, `url`, `title`, `author`, `body`, `file`, `line`, `check`, `state`). The first look only
 *   records what exists (enabling a flow replays nothing). What was seen is kept in the store, so a
 *   restart neither replays nor loses what came while the daemon was down; it is forgotten once the flow
 *   is out of force or no longer covers the worktree, so switching a flow off and on again replays
 *   nothing either.
 * - **Without gh** nothing is asked and these flows never start; `GET flows` says why
 *   (`inactive_reason`), as it does when gh answers that nobody is signed in.
 *
 * Every `gh` call goes through the runner with fixed arguments; the only value in them, a pull request's
 * number, is a whole number read from gh's own answer. No shell.
 *
 * @module
 */
import type { Worktree } from "../client/wire.ts";
import { parseDuration } from "../client/duration.ts";
import { run, which } from "../core/runner.ts";
import type { Store } from "../core/store.ts";
import { whereMatches } from "./flow_steps.ts";
import type { Flows } from "./flows.ts";
import { type Clock, every } from "../core/clock.ts";
import { errorText, type Log } from "../core/log.ts";
import type { EffectiveFlow } from "./flow_sources.ts";
import type { Worktrees } from "./worktrees.ts";

/** `gh` calls one poll may make, shared between every forge flow on the box (spec 3.5 rule 5). */
export const GH_CALLS_PER_POLL = 20;
/** A forge flow's `poll` when it names none. */
export const DEFAULT_POLL_MS = 2 * 60_000;
/** How often due flows are looked for when no test knob sets it: a quarter of the shortest `poll`. */
const TICK_MS = 15_000;
const GH_TIMEOUT_MS = 60_000;
const PR_FIELDS = "number,url,title,state,author,comments,reviews,statusCheckRollup,mergedAt";
/** gh's exit code when nobody is signed in. */
const GH_AUTH_EXIT = 4;

/** The pull request activity a forge flow starts on. */
export type ForgeOn = "review_comment" | "pr_review" | "check_failed" | "pr_merged";

/** The data of a `forge.<on>` event (spec 3.5 rule 3); absent fields are empty. */
export interface ForgeEventData {
  pr: number;
  url: string;
  title: string;
  author: string;
  body: string;
  file: string;
  line: string;
  check: string;
  state: string;
}

/** One thing that happened on a pull request. */
export interface ForgeItem {
  /** Stable across polls: what "seen" remembers. */
  key: string;
  on: ForgeOn;
  /** When it happened (ISO), to run new items in order. */
  time: string;
  data: ForgeEventData;
}

/** Check conclusions that count as failed: failed, timed out, or waiting for someone to act. */
const FAILED_CHECKS = new Set(["FAILURE", "TIMED_OUT", "ACTION_REQUIRED", "STARTUP_FAILURE", "ERROR"]);

type Json = Record<string, unknown>;

function text(value: unknown): string {
  return typeof value === "string" ? value : typeof value === "number" ? String(value) : "";
}

function login(value: unknown): string {
  return value && typeof value === "object" ? text((value as Json).login) : "";
}

function list(value: unknown): Json[] {
  return Array.isArray(value) ? value.filter((v): v is Json => !!v && typeof v === "object") : [];
}

/**
 * Every item in gh's answers about one pull request, oldest first: `view` is `gh pr view --json
 * PR_FIELDS`, `lineComments` the REST review comments (`gh api repos/{owner}/{repo}/pulls/N/comments`).
 */
export function forgeItems(view: Json, lineComments: Json[] = []): ForgeItem[] {
  const pr = Number(view.number);
  const base: ForgeEventData = {
    pr,
    url: text(view.url),
    title: text(view.title),
    author: "",
    body: "",
    file: "",
    line: "",
    check: "",
    state: text(view.state),
  };
  const items: ForgeItem[] = [];
  for (const c of list(view.comments)) {
    items.push({
      key: `comment:${text(c.id)}`,
      on: "review_comment",
      time: text(c.createdAt),
      data: { ...base, url: text(c.url) || base.url, author: login(c.author), body: text(c.body) },
    });
  }
  for (const c of lineComments) {
    items.push({
      key: `line:${text(c.id)}`,
      on: "review_comment",
      time: text(c.created_at),
      data: {
        ...base,
        url: text(c.html_url) || base.url,
        author: login(c.user),
        body: text(c.body),
        file: text(c.path),
        line: text(c.line ?? c.original_line),
      },
    });
  }
  for (const r of list(view.reviews)) {
    if (r.state === "PENDING") continue; // a draft only its author sees
    items.push({
      key: `review:${text(r.id)}`,
      on: "pr_review",
      time: text(r.submittedAt),
      data: { ...base, author: login(r.author), body: text(r.body), state: text(r.state) },
    });
  }
  for (const k of list(view.statusCheckRollup)) {
    const state = text(k.__typename === "StatusContext" ? k.state : k.conclusion);
    if (!FAILED_CHECKS.has(state)) continue;
    const check = text(k.name ?? k.context);
    const url = text(k.detailsUrl ?? k.targetUrl);
    const time = text(k.completedAt ?? k.startedAt);
    items.push({
      // A check run again and failing again is a new item: its run has a new address.
      key: `check:${check}:${url || time}`,
      on: "check_failed",
      time,
      data: { ...base, url: url || base.url, check, state },
    });
  }
  if (view.state === "MERGED" || view.mergedAt) {
    items.push({
      key: "merged",
      on: "pr_merged",
      time: text(view.mergedAt),
      data: { ...base, author: login(view.author), state: "MERGED" },
    });
  }
  return items.sort((a, b) => a.time < b.time ? -1 : a.time > b.time ? 1 : 0);
}

/** A flow's forge trigger, or undefined for other flows. */
function forgeOf(flow: EffectiveFlow): { on: ForgeOn; pollMs: number } | undefined {
  const forge = flow.flow.trigger.forge as { on: ForgeOn; poll?: string } | undefined;
  if (!forge) return undefined;
  return { on: forge.on, pollMs: forge.poll ? parseDuration(forge.poll, "poll") : DEFAULT_POLL_MS };
}

/**
 * What `forge_seen` keeps a flow's items in one worktree under. No NUL inside: SQLite's driver hands a
 * text value back cut at its first NUL, so a stored key could not be matched to a live one.
 */
function watchKey(flow: EffectiveFlow, worktree: Worktree): string {
  return `${flow.scope} ${flow.flow.id} ${worktree.location}/${worktree.name}`;
}

/** What the forge watcher needs from the rest of the daemon. */
export interface ForgeOptions {
  flows: Pick<Flows, "effective" | "startTriggered" | "explainInactive">;
  worktrees: Pick<Worktrees, "list">;
  store: Store;
  /** Where `gh` is, looked up on each poll. @default {which("gh")} */
  gh?: () => string | null;
  /**
   * Test knob (`DOCK_FORGE_POLL_MS`): replaces every forge flow's `poll` and how often due flows are
   * looked for, so tests see polls without waiting a real minute.
   */
  pollMs?: number;
  /** Paces the polls and dates what was seen. */
  clock: Clock;
  /** Told of a poll that failed and of a gh answer that could not be read. */
  log: Log;
}

/** Polls `gh` for the forge flows in force and starts their runs. */
export class Forge {
  #o: ForgeOptions;
  #stop?: () => void;
  #closing = new AbortController();
  /** The poll in progress, if any: a tick meanwhile is skipped. */
  #polling?: Promise<void>;
  #polls = 0;
  /** When each flow (scope, id) was last polled. */
  #lastPoll = new Map<string, number>();
  /** When each worktree was last asked about: the least recent goes first when the budget is short. */
  #lastAsked = new Map<string, number>();
  /** Runs of one flow in one worktree, one after another. */
  #chains = new Map<string, Promise<unknown>>();
  /** Why gh could not be asked on the last poll (not signed in), if so. */
  #problem: string | undefined;

  constructor(options: ForgeOptions) {
    this.#o = options;
    options.flows.explainInactive((flow) => {
      if (!flow.trigger.forge) return undefined;
      if (!this.#gh()) {
        return "the box has no gh (GitHub CLI) on its PATH: forge flows never start; install it and run gh auth login";
      }
      return this.#problem;
    });
  }

  /** Looks for due forge flows every tick. */
  start(): void {
    this.#stop = every(this.#o.clock, this.#o.pollMs ?? TICK_MS, () => void this.poll());
  }

  /** Stops polling and ends gh calls in flight. */
  close(): void {
    this.#stop?.();
    this.#closing.abort();
  }

  #gh(): string | null {
    return (this.#o.gh ?? (() => which("gh")))();
  }

  #now(): number {
    return this.#o.clock.now();
  }

  /** One poll: asks gh about the worktrees the due flows cover and starts a run per new item. */
  poll(): Promise<void> {
    if (this.#polling || this.#closing.signal.aborted) return Promise.resolve();
    const polling = this.#poll()
      .catch((error) => this.#o.log.error(`forge: ${errorText(error)}`))
      .finally(() => this.#polling = undefined);
    this.#polling = polling;
    return polling;
  }

  /** Resolves when the poll in progress (if any) has ended. */
  async settled(): Promise<void> {
    await this.#polling;
  }

  async #poll(): Promise<void> {
    const gh = this.#gh();
    if (!gh) return;
    const now = this.#now();
    const due: { flow: EffectiveFlow; on: ForgeOn }[] = [];
    const forgeFlows = (await this.#o.flows.effective()).filter((flow) => forgeOf(flow));
    this.#forget(forgeFlows);
    for (const flow of forgeFlows) {
      const forge = forgeOf(flow)!;
      const key = `${flow.scope}\0${flow.flow.id}`;
      const last = this.#lastPoll.get(key);
      if (last !== undefined && now - last < (this.#o.pollMs ?? forge.pollMs)) continue;
      this.#lastPoll.set(key, now);
      due.push({ flow, on: forge.on });
    }
    if (due.length === 0) return;
    this.#polls++;
    const asked = new Map<string, { worktree: Worktree; watches: typeof due }>();
    for (const watch of due) {
      for (const worktree of this.#covered(watch.flow)) {
        const key = `${worktree.location}/${worktree.name}`;
        const entry = asked.get(key) ?? { worktree, watches: [] };
        entry.watches.push(watch);
        asked.set(key, entry);
      }
    }
    const order = [...asked.entries()].sort(([a], [b]) =>
      (this.#lastAsked.get(a) ?? -Infinity) - (this.#lastAsked.get(b) ?? -Infinity)
    );
    let calls = 0;
    for (const [key, { worktree, watches }] of order) {
      const wantsLines = watches.some((w) => w.on === "review_comment");
      if (calls >= GH_CALLS_PER_POLL || (wantsLines && calls + 2 > GH_CALLS_PER_POLL)) break;
      calls++;
      const view = await this.#ask(gh, worktree, ["pr", "view", "--json", PR_FIELDS]);
      if (view === "stop") return;
      let lines: Json[] = [];
      if (view !== undefined && view !== null && wantsLines) {
        const number = Number((view as Json).number);
        if (!Number.isInteger(number) || number < 1) continue;
        calls++;
        const answer = await this.#ask(gh, worktree, [
          "api",
          "--",
          `repos/{owner}/{repo}/pulls/${number}/comments?per_page=100`,
        ]);
        if (answer === "stop") return;
        if (answer === undefined) continue;
        lines = list(answer);
      }
      if (view === undefined) continue;
      this.#lastAsked.set(key, now);
      const items = view === null ? [] : forgeItems(view as Json, lines);
      for (const watch of watches) this.#record(watch.flow, watch.on, worktree, items);
    }
  }

  /** The worktrees a flow watches: in its scope and `where`, with a branch that is not the default. */
  #covered(flow: EffectiveFlow): Worktree[] {
    const location = flow.scope.startsWith("repo:") ? flow.scope.slice("repo:".length) : undefined;
    const all = this.#o.worktrees.list(location);
    const defaults = new Map(all.filter((w) => w.main).map((w) => [w.location, w.branch]));
    const where = flow.flow.trigger.where as Record<string, unknown> | undefined;
    return all.filter((w) =>
      !w.main && w.branch !== null && w.branch !== defaults.get(w.location) &&
      whereMatches(where, { location: w.location, worktree: w.name, branch: w.branch })
    );
  }

  /**
   * gh's JSON answer in a worktree; null when its branch has no pull request; undefined when the call
   * failed (asked again next poll); "stop" when nobody is signed in (nothing more is asked this poll).
   */
  async #ask(gh: string, worktree: Worktree, args: string[]): Promise<unknown> {
    const result = await run(gh, args, {
      cwd: worktree.path,
      // Numbers the poll on each call: tests count the calls one poll makes.
      env: { DOCK_FORGE_POLL: String(this.#polls), GH_PROMPT_DISABLED: "1", NO_COLOR: "1" },
      timeoutMs: GH_TIMEOUT_MS,
      signal: this.#closing.signal,
      maxOutput: 8 * 1024 * 1024,
    });
    if (result.code === GH_AUTH_EXIT) {
      this.#problem = "gh on the box is not signed in: forge flows never start; run gh auth login";
      return "stop";
    }
    this.#problem = undefined;
    if (result.code !== 0) {
      if (/no pull requests? found/i.test(result.stderr)) return null;
      this.#o.log.error(
        `forge: gh ${args[0]} ${args[1]} in ${worktree.location}/${worktree.name} exited with ${result.code}`,
      );
      return undefined;
    }
    try {
      return JSON.parse(result.stdout);
    } catch {
      this.#o.log.error(`forge: gh ${args[0]} ${args[1]} in ${worktree.location}/${worktree.name}: not JSON`);
      return undefined;
    }
  }

  /**
   * Forgets what was seen for a flow no longer in force (disabled, removed, replaced) or a worktree it no
   * longer covers (removed, or now on the default branch): enabling the flow again, or a new worktree of
   * the same name, starts with a first look that records, never a replay of what came meanwhile.
   */
  #forget(flows: EffectiveFlow[]): void {
    const live = new Set<string>();
    for (const flow of flows) for (const worktree of this.#covered(flow)) live.add(watchKey(flow, worktree));
    const store = this.#o.store;
    for (const { watch } of store.all<{ watch: string }>("SELECT DISTINCT watch FROM forge_seen")) {
      if (!live.has(watch)) store.run("DELETE FROM forge_seen WHERE watch = ?", watch);
    }
  }

  /** Records a flow's new items in a worktree; after the first look, each starts its own run, in order. */
  #record(flow: EffectiveFlow, on: ForgeOn, worktree: Worktree, items: ForgeItem[]): void {
    const watch = watchKey(flow, worktree);
    const store = this.#o.store;
    const fresh = store.transaction(() => {
      const looked =
        store.get("SELECT 1 AS x FROM forge_seen WHERE watch = ? AND item = ''", watch) !== undefined;
      const fresh = items.filter((item) =>
        item.on === on &&
        store.get("SELECT 1 AS x FROM forge_seen WHERE watch = ? AND item = ?", watch, item.key) === undefined
      );
      const time = new Date(this.#o.clock.now()).toISOString();
      // Seen before its run starts: a run cut off by a stop is interrupted, never run twice.
      for (const item of fresh) {
        store.run(
          "INSERT OR IGNORE INTO forge_seen (watch, item, seen) VALUES (?, ?, ?)",
          watch,
          item.key,
          time,
        );
      }
      store.run("INSERT OR IGNORE INTO forge_seen (watch, item, seen) VALUES (?, '', ?)", watch, time);
      return looked ? fresh : [];
    });
    if (fresh.length === 0) return;
    const chain = (this.#chains.get(watch) ?? Promise.resolve()).then(async () => {
      for (const item of fresh) {
        if (this.#closing.signal.aborted) return;
        await this.#o.flows.startTriggered({
          flow,
          event: { type: `forge.${on}`, data: { ...item.data } },
          place: { location: worktree.location, worktree: worktree.name },
        }).catch((error) => this.#o.log.error(`forge: ${errorText(error)}`));
      }
    });
    this.#chains.set(watch, chain);
    chain.finally(() => {
      if (this.#chains.get(watch) === chain) this.#chains.delete(watch);
    });
  }
}
