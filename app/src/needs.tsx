/**
 * Needs you: sessions whose agent waits for a person, and finished ones not yet looked at, in the order to
 * take them (permission → question → input → finished, the longest waiting first), each with why it waits,
 * for how long, its worktree, the last lines of its screen and quick replies (disabled while its box is
 * offline). Alt+W opens the next waiting agent's terminal from anywhere.
 *
 * @module
 */
import { useEffect, useState } from "preact/hooks";
import { signal } from "@preact/signals";
import type { Screen } from "../../client/wire.ts";
import type { Api } from "./api.ts";
import { Badge, Since } from "./board.tsx";
import { PromptBox } from "./prompt.tsx";
import {
  boxOffline,
  markSeen,
  needsYou,
  sessionKey,
  type SessionRef,
  sessions,
  stateSince,
} from "./store.ts";
import { openTerminal } from "./views.ts";
import { BroadcastBar, SelectBox } from "./broadcast.tsx";
import { askNotifications, notifyPermission } from "./notify.ts";
import { reasonText } from "./outage.ts";
import { now } from "./clock.ts";

/** Lines of the screen shown per session. */
const TAIL_LINES = 12;

/** The key that opens the next waiting agent (listed in the palette and the board's toolbar). */
export const NEXT_WAITING_KEY = "Alt+W";

/** The `box/session` the last {@linkcode nextWaiting} opened: the next press goes on from it. */
let lastJumped: string | null = null;

/**
 * Opens the terminal of the next agent that waits, in Needs-you order, after the one opened last (round
 * and round); with none waiting, the first finished one not yet looked at. Returns its key, or null.
 */
export function nextWaiting(): string | null {
  const list = needsYou.value;
  const waiting = list.filter((ref) => ref.session.agent_state === "waiting");
  const pool = waiting.length > 0 ? waiting : list;
  if (pool.length === 0) return null;
  const keys = pool.map((ref) => sessionKey(ref.box, ref.session.name));
  const at = lastJumped === null ? -1 : keys.indexOf(lastJumped);
  const next = pool[(at + 1) % pool.length];
  lastJumped = sessionKey(next.box, next.session.name);
  openTerminal(next.box, next.session.name);
  return lastJumped;
}

/**
 * What the box said it typed into a session from here (`answered yes`), by `box/session`, with when: the
 * card stays, marked delivered, after its agent moves on (else the mark vanished with the card the moment
 * the agent resumed), until dismissed or until the agent waits again.
 */
const delivered = signal<Record<string, { what: string; at: number }>>({});

function forget(key: string): void {
  const { [key]: _gone, ...rest } = delivered.value;
  delivered.value = rest;
}

/** The list of sessions that need the person, then the ones just answered from here. */
export function NeedsYou(props: { api: Api }) {
  const waiting = needsYou.value;
  const keys = new Set(waiting.map((ref) => sessionKey(ref.box, ref.session.name)));
  const answered = sessions.value.filter((ref) => {
    const key = sessionKey(ref.box, ref.session.name);
    return !keys.has(key) && delivered.value[key] !== undefined;
  });
  const list = [...waiting, ...answered];
  return (
    <div class="needs">
      {notifyPermission.value === "default" && (
        <p class="notify-ask">
          <button type="button" class="small" data-action="notify" onClick={() => askNotifications()}>
            Notify me
          </button>{" "}
          when an agent waits or finishes while this page is in the background.
        </p>
      )}
      {list.length === 0 && <p class="muted">Nothing needs you.</p>}
      <BroadcastBar api={props.api} />
      {list.map((ref) => <NeedCard api={props.api} item={ref} key={`${ref.box}/${ref.session.name}`} />)}
    </div>
  );
}

function NeedCard(props: { api: Api; item: SessionRef }) {
  const { box, session } = props.item;
  const [screen, setScreen] = useState<string | null>(null);
  const offline = boxOffline(box);
  useEffect(() => {
    if (offline) return;
    const path = props.api.box(box, `sessions/${encodeURIComponent(session.name)}/screen`);
    props.api.json<Screen>(path).then((s) => setScreen(tail(s.screen)), () => {});
  }, [box, session.name, session.agent_state, props.item.changed, offline]);
  const key = sessionKey(box, session.name);
  const waiting = session.agent_state === "waiting";
  const mark = delivered.value[key];
  const since = stateSince(props.item);
  // A new wait (after what was delivered) is a new question: the old mark goes.
  useEffect(() => {
    if (mark && waiting && since > mark.at) forget(key);
  }, [mark, waiting, since]);
  const done = mark !== undefined &&
    !needsYou.value.some((r) => r.box === box && r.session.name === session.name);
  return (
    <section
      class={`card need${offline ? " offline" : ""}`}
      data-session={`${box}/${session.name}`}
      data-reason={waiting ? session.reason ?? "" : session.agent_state}
    >
      <h2>
        <SelectBox api={props.api} box={box} session={session.name} />
        <Badge state={session.agent_state} reason={session.reason} box={box} />
        <button type="button" class="link-button" onClick={() => openTerminal(box, session.name)}>
          {box}/{session.name}
        </button>
        <span class="muted">{session.agent}</span>
        <Since at={stateSince(props.item)} prefix={waiting ? "waiting " : "finished "} />
        {(session.agent_state === "finished" || done) && (
          <button
            type="button"
            class="small"
            onClick={() => {
              markSeen(box, session.name);
              forget(key);
            }}
          >
            dismiss
          </button>
        )}
      </h2>
      <p class="muted need-why">
        {waiting ? reasonText(session.reason) : "finished its turn"} · {session.location}/{session.worktree}
      </p>
      {mark && (
        <p class="delivered" role="status" data-delivered={mark.what}>
          {mark.what}: delivered{done ? `, the agent is ${session.agent_state} now` : ""}
        </p>
      )}
      {screen !== null && <pre class="screen">{screen}</pre>}
      <PromptBox
        api={props.api}
        box={box}
        session={session.name}
        reason={session.reason}
        offline={offline}
        onDelivered={(what) => delivered.value = { ...delivered.value, [key]: { what, at: now() } }}
      />
    </section>
  );
}

function tail(screen: string): string {
  return screen.replace(/\s+$/, "").split("\n").slice(-TAIL_LINES).join("\n");
}
