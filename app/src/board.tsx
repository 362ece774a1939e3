/**
 * The board, organised by worktree: every box (online or not, latency; an offline box's states marked as
 * the last known), its locations and worktrees (branch, ahead/behind, dirty, ports with their private
 * URLs, services with restart/stop/log), and under each worktree its sessions: agent, state and why it
 * waits, for how long, and the last line of its screen. A filter by state and a search narrow it. The
 * boxes below the first screens are drawn when scrolled near (later.tsx); their actions are actions.tsx's.
 *
 * @module
 */
import { useEffect, useState } from "preact/hooks";
import { signal, useComputed } from "@preact/signals";
import { memo } from "preact/compat";
import type { Location, Session, Worktree, WorktreeService } from "../../client/wire.ts";
import type { Api } from "./api.ts";
import {
  boxes,
  type BoxView,
  clock,
  lastLine,
  offlineSince,
  proxyPort,
  seen,
  sessionKey,
  type SessionRef,
  sessions,
  stateSince,
  unreachableSince,
} from "./store.ts";
import { openReview, openTerminal } from "./views.ts";
import { mark } from "./marks.ts";
import { AddMachine, Upgrade } from "./machines.tsx";
import { BroadcastBar, SelectBox } from "./broadcast.tsx";
import { ago, plainError, previewUrl, reasonText } from "./outage.ts";
import { Later } from "./later.tsx";
import { Confirmed, WorktreeActions } from "./actions.tsx";

/**
 * A session's agent state as a badge; with `reason`, why it waits; with `box`, a marker when that box is
 * offline (the state is the last known, as of when it went offline).
 */
export function Badge(props: { state: string; exited?: boolean; reason?: string | null; box?: string }) {
  const state = props.exited ? "exited" : props.state;
  return (
    <>
      <span class={`badge badge-${state}`} data-state={state}>{state}</span>
      {state === "waiting" && props.reason && (
        <span
          class={`reason reason-${props.reason}`}
          data-reason={props.reason}
          title={reasonText(props.reason as Session["reason"])}
        >
          {props.reason}
        </span>
      )}
      {props.box !== undefined && <StaleMark box={props.box} />}
    </>
  );
}

/** "last known, 3 min ago" beside a state from an offline box; nothing while the box answers. */
export function StaleMark(props: { box: string }) {
  const since = offlineSince(props.box).value;
  if (since === null) return null;
  return (
    <span
      class="stale"
      data-stale={props.box}
      title={`${props.box} is offline: this state may have changed since`}
    >
      last known{since === 0 ? "" : <Since at={since} prefix=", " suffix=" ago" />}
    </span>
  );
}

/**
 * The banner while the page cannot reach the agent (its event stream or status failing): what is wrong
 * in a sentence, for how long, and what to do; the page retries by itself and the banner goes when the
 * stream is back. On a phone the page talks to the box itself, so the box is named.
 */
export function OutageBanner(props: { api: Api }) {
  const since = unreachableSince.value;
  if (since === null) return null;
  const box = props.api.agent ? null : (props.api.config as { box: string }).box;
  return (
    <div class="outage" role="alert" data-outage={box ? "box" : "agent"}>
      <strong>{box ? `${box} is not answering.` : "The dock agent on this laptop is not answering."}</strong>
      {" "}
      {box
        ? "Its states below are the last known, and keys wait for it."
        : "What the board shows is the last known. Any dock command starts it again (dock agent runs it in a terminal)."}
      {" "}
      <Since at={since} prefix="Down for " />; retrying by itself.
    </div>
  );
}

/**
 * How long since `at` (ms), ticking: the text is bound to a computed signal, so each second changes one
 * text node (and only when the words change), never a render of the row, let alone the board.
 */
export function Since(props: { at: number; prefix?: string; suffix?: string }) {
  // Keyed by what it says: a new time in state is a new text, not one that catches up at the next tick.
  return <SinceText key={`${props.at}${props.prefix}${props.suffix}`} {...props} />;
}

function SinceText(props: { at: number; prefix?: string; suffix?: string }) {
  const text = useComputed(() =>
    `${props.prefix ?? "for "}${ago(props.at, clock.value)}${props.suffix ?? ""}`
  );
  return <span class="since" data-since={props.at}>{text}</span>;
}

/** What the board shows: every session, those that need the person, or one state. */
export type BoardFilter = "all" | "needs" | "running" | "idle" | "exited";
const FILTERS: { id: BoardFilter; label: string }[] = [
  { id: "all", label: "All" },
  { id: "needs", label: "Needs you" },
  { id: "running", label: "Running" },
  { id: "idle", label: "Idle" },
  { id: "exited", label: "Exited" },
];

/** The board's state filter and search words (kept while other views show). */
export const boardFilter = signal<BoardFilter>("all");
/** The board's search words, as typed. */
export const boardQuery = signal("");

/** Whether a session passes the board's filter and search. */
function shown(ref: SessionRef, filter: BoardFilter, words: string[]): boolean {
  const { session, box } = ref;
  if (filter === "exited" && !session.exited) return false;
  if (filter !== "exited" && filter !== "all" && session.exited) return false;
  if (filter === "running" && session.agent_state !== "running") return false;
  if (filter === "idle" && session.agent_state !== "idle") return false;
  if (
    filter === "needs" && session.agent_state !== "waiting" &&
    !(session.agent_state === "finished" && !seen.value.has(sessionKey(box, session.name)))
  ) return false;
  const text = [box, session.name, session.agent ?? "", session.command, session.location, session.worktree]
    .join(" ").toLowerCase();
  return words.every((w) => text.includes(w));
}

/**
 * Rows (sessions and worktrees) drawn at once, box by box from the top: about two screens of 900 px. The
 * boxes below wait until scrolled near (later.tsx): 2,000 rows drawn at once took 1.5 s before the board
 * was ready (bench/scale.ts, 200 boxes).
 */
const EAGER_ROWS = 60;
/** About a row's height, for the space a box not yet drawn keeps. */
const ROW_PX = 36;

/** The board of every box, sessions under their worktrees. */
export function Board(props: { api: Api }) {
  const list = Object.values(boxes.value);
  const words = boardQuery.value.toLowerCase().split(/\s+/).filter(Boolean);
  const narrowed = boardFilter.value !== "all" || words.length > 0;
  const matching = sessions.value.filter((ref) => shown(ref, boardFilter.value, words));
  const byBox = new Map<string, SessionRef[]>();
  for (const ref of matching) byBox.set(ref.box, [...byBox.get(ref.box) ?? [], ref]);
  let rowsAbove = 0;
  // After the frame that drew a new count of sessions (Preact runs effects after the paint): the bench's
  // "board ready" mark.
  const count = sessions.value.length;
  useEffect(() => count > 0 ? mark("dock:board", count) : undefined, [count]);
  return (
    <div class="board">
      <section class="card board-tools" role="search">
        <input
          type="search"
          class="board-search"
          aria-label="Search sessions and worktrees"
          placeholder="Search: session, worktree, branch, agent…"
          value={boardQuery.value}
          onInput={(e) => boardQuery.value = (e.target as HTMLInputElement).value}
        />
        <span class="filters" role="group" aria-label="Show">
          {FILTERS.map((f) => (
            <button
              type="button"
              key={f.id}
              class={`small${boardFilter.value === f.id ? " active" : ""}`}
              aria-pressed={boardFilter.value === f.id}
              data-filter={f.id}
              onClick={() => boardFilter.value = f.id}
            >
              {f.label}
            </button>
          ))}
        </span>
        <span class="muted hint">Alt+W: next waiting agent</span>
      </section>
      {sessions.value.length === 0 && <p class="muted">No sessions yet.</p>}
      {narrowed && matching.length === 0 && sessions.value.length > 0 && (
        <p class="muted">No session matches.</p>
      )}
      <BroadcastBar api={props.api} />
      {list.map((view) => {
        const shownHere = byBox.get(view.status.name) ?? [];
        const rows = shownHere.length + view.locations.reduce((n, l) => n + l.worktrees.length, 0);
        // The boxes the first screens show are drawn at once; those below, when scrolled near.
        const eager = rowsAbove < EAGER_ROWS;
        rowsAbove += rows;
        return (
          <BoxCard
            api={props.api}
            view={view}
            key={view.status.name}
            sessions={shownHere}
            narrowed={narrowed}
            words={words}
            eager={eager}
            height={rows * ROW_PX}
          />
        );
      })}
      {props.api.agent && <AddMachine api={props.api} />}
    </div>
  );
}

/**
 * One session's row: tick box, state and reason, name, agent, time in state, its screen's last line. Drawn
 * again only when its session changes (a change elsewhere on a board of 200 leaves it alone); its line, its
 * box's offline mark and its clock are signals of their own.
 */
const SessionRow = memo(function SessionRow(props: { api: Api; item: SessionRef }) {
  const { box, session } = props.item;
  const key = sessionKey(box, session.name);
  const line = lastLine(key).value;
  return (
    <li class="session" key={key} data-session={key}>
      {!session.exited && <SelectBox api={props.api} box={box} session={session.name} />}
      <Badge state={session.agent_state} exited={session.exited} reason={session.reason} box={box} />
      <button type="button" class="link-button" onClick={() => openTerminal(box, session.name)}>
        {session.name}
      </button>
      <span class="muted">{session.agent ?? session.command}</span>
      {!session.exited && <Since at={stateSince(props.item)} />}
      {props.api.agent && (
        <Confirmed
          label={session.exited ? "remove" : "end"}
          question={session.exited
            ? `Remove ${box}/${session.name} from the list?`
            : `End ${box}/${session.name}? What runs in it stops.`}
          act={() =>
            props.api.json(props.api.box(box, `sessions/${encodeURIComponent(session.name)}`), {
              method: "DELETE",
            })}
        />
      )}
      {line && <code class="last-line" title="the last line of its screen">{line}</code>}
    </li>
  );
}, (a, b) => a.api === b.api && a.item.box === b.item.box && sameSession(a.item.session, b.item.session));

/** Whether two reads of a session say the same (a reload makes new objects of unchanged sessions). */
function sameSession(a: Session, b: Session): boolean {
  if (a === b) return true;
  const keys = Object.keys(a) as (keyof Session)[];
  return keys.length === Object.keys(b).length && keys.every((k) => a[k] === b[k]);
}

function SessionList(props: { api: Api; list: SessionRef[] }) {
  if (props.list.length === 0) return null;
  return (
    <ul class="sessions">
      {props.list.map((item) => (
        <SessionRow api={props.api} item={item} key={sessionKey(item.box, item.session.name)} />
      ))}
    </ul>
  );
}

function BoxCard(
  props: {
    api: Api;
    view: BoxView;
    sessions: SessionRef[];
    narrowed: boolean;
    words: string[];
    eager: boolean;
    height: number;
  },
) {
  const { status } = props.view;
  const since = status.since ? Date.parse(status.since) : NaN;
  const byWorktree = new Map<string, SessionRef[]>();
  for (const ref of props.sessions) {
    const where = `${ref.session.location}/${ref.session.worktree}`;
    byWorktree.set(where, [...byWorktree.get(where) ?? [], ref]);
  }
  const listed = new Set<string>();
  for (const location of props.view.locations) {
    for (const worktree of location.worktrees) listed.add(`${location.name}/${worktree.name}`);
  }
  // Sessions whose worktree is not (yet) listed: the box's locations not loaded, or an offline box.
  const elsewhere = props.sessions.filter((ref) =>
    !listed.has(`${ref.session.location}/${ref.session.worktree}`)
  );
  const worktreeShown = (location: Location, worktree: Worktree) =>
    !props.narrowed || byWorktree.has(`${location.name}/${worktree.name}`) ||
    (props.words.length > 0 &&
      props.words.every((w) =>
        `${status.name} ${location.name} ${worktree.name} ${worktree.branch ?? ""}`.toLowerCase().includes(w)
      ));
  return (
    <section class={`card box${status.online ? "" : " offline"}`} data-box={status.name}>
      <h2>
        <span class={`dot ${status.online ? "online" : "offline"}`} />
        {status.name}
        <span class="muted">
          {status.online
            ? (status.latency_ms !== null ? ` ${Math.round(status.latency_ms)} ms` : " online")
            : " offline"}
        </span>
        {props.api.agent && (
          <Confirmed
            label="forget"
            question={`Forget ${status.name}? This laptop unpairs from it; what runs there goes on.`}
            act={() =>
              props.api.json(props.api.own(`boxes/${encodeURIComponent(status.name)}`), { method: "DELETE" })}
          />
        )}
      </h2>
      {!status.online && (
        <p class="offline-note" role="status">
          {status.error ? plainError(status.error, status.name) : `${status.name} is offline.`}{" "}
          {Number.isNaN(since) ? "" : <Since at={since} prefix="Offline for " />}
          {props.view.sessions.length > 0 && " What it shows below is the last known; keys wait for it."}
        </p>
      )}
      {props.api.agent && <Upgrade api={props.api} status={status} />}
      {props.view.error && status.online && <p class="error">{plainError(props.view.error, status.name)}</p>}
      <Later eager={props.eager} height={props.height}>
        {() => (
          <>
            {props.view.locations.map((location) => {
              const worktrees = location.worktrees.filter((w) => worktreeShown(location, w));
              if (worktrees.length === 0) return null;
              return (
                <div class="location" key={location.name}>
                  <h3>{location.name}</h3>
                  <ul class="worktrees">
                    {worktrees.map((worktree) => (
                      <WorktreeItem
                        api={props.api}
                        view={props.view}
                        location={location}
                        worktree={worktree}
                        sessions={byWorktree.get(`${location.name}/${worktree.name}`) ?? []}
                        key={worktree.name}
                      />
                    ))}
                  </ul>
                </div>
              );
            })}
            {elsewhere.length > 0 && (
              <div class="location elsewhere">
                <h3>Sessions</h3>
                <ul class="sessions">
                  {elsewhere.map((item) => (
                    <SessionRow api={props.api} item={item} key={sessionKey(item.box, item.session.name)} />
                  ))}
                </ul>
              </div>
            )}
          </>
        )}
      </Later>
    </section>
  );
}

/** A worktree: branch, ahead/behind, dirty, actions, ports, services, and its sessions. */
function WorktreeItem(
  props: { api: Api; view: BoxView; location: Location; worktree: Worktree; sessions: SessionRef[] },
) {
  const { status } = props.view;
  const { location, worktree } = props;
  const git = props.view.git.find((g) => g.location === location.name && g.name === worktree.name);
  const ports = props.view.ports.find((p) => p.location === location.name && p.worktree === worktree.name)
    ?.ports ?? [];
  const services = props.view.services[`${location.name}/${worktree.name}`] ?? [];
  return (
    <li class="worktree" key={worktree.name} data-where={`${status.name}/${location.name}/${worktree.name}`}>
      <div class="row">
        <strong>{worktree.name}</strong>
        <span class="branch">{git?.branch ?? worktree.branch ?? "detached"}</span>
        {git && (git.ahead > 0 || git.behind > 0) && (
          <span class="muted ahead-behind" title="ahead / behind its upstream">
            ↑{git.ahead} ↓{git.behind}
          </span>
        )}
        {git?.dirty && <span class="tag dirty">dirty</span>}
        {worktree.paused && <span class="tag">paused</span>}
        {props.api.agent && (
          <button
            type="button"
            class="small"
            data-action="review"
            onClick={() => openReview(status.name, location.name, worktree.name)}
          >
            review
          </button>
        )}
      </div>
      {
        // A phone's scope has no worktree changes (daemon/api/phone.ts): offered on the laptop.
        props.api.agent && (
          <WorktreeActions
            api={props.api}
            box={status.name}
            location={location.name}
            worktree={worktree}
            dirty={git?.dirty ?? false}
          />
        )
      }
      {ports.length > 0 && (
        <div class="row ports">
          {proxyPort.value !== null && (
            <a
              class="preview-link"
              href={previewUrl(
                { worktree: worktree.name, location: location.name, box: status.name },
                proxyPort.value,
              )}
              target="_blank"
              rel="noopener noreferrer"
            >
              open
            </a>
          )}
          {ports.map((port) => <span class="tag" key={port.port}>:{port.port}</span>)}
        </div>
      )}
      {services.map((service) => (
        <ServiceRow api={props.api} box={status.name} service={service} key={service.name} />
      ))}
      <SessionList api={props.api} list={props.sessions} />
    </li>
  );
}

function ServiceRow(props: { api: Api; box: string; service: WorktreeService }) {
  const { service } = props;
  const [log, setLog] = useState<string | null>(null);
  const base = `locations/${encodeURIComponent(service.location)}/worktrees/${
    encodeURIComponent(service.worktree)
  }/services/${encodeURIComponent(service.name)}`;
  const act = (verb: string) =>
    props.api.json(props.api.box(props.box, `${base}/${verb}`), { method: "POST" });
  // A phone may see services, not control them or read their logs (daemon/api/phone.ts).
  if (!props.api.agent) {
    return (
      <div class="service">
        <span class={`tag service-${service.state}`}>{service.name}: {service.state}</span>
      </div>
    );
  }
  return (
    <div class="service">
      <span class={`tag service-${service.state}`}>{service.name}: {service.state}</span>
      <button type="button" class="small" onClick={() => act("restart")}>restart</button>
      <button type="button" class="small" onClick={() => act("stop")}>stop</button>
      <button
        type="button"
        class="small"
        onClick={async () =>
          setLog(log === null ? await props.api.text(props.api.box(props.box, `${base}/log`)) : null)}
      >
        log
      </button>
      {log !== null && <pre class="log">{log.split("\n").slice(-200).join("\n")}</pre>}
    </div>
  );
}
