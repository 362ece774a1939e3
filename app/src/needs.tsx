/**
 * Needs you: sessions whose agent waits for a person, and finished ones not yet looked at, each with the
 * last lines of its screen and quick replies.
 *
 * @module
 */
import { useEffect, useState } from "preact/hooks";
import type { Screen } from "../../client/wire.ts";
import type { Api } from "./api.ts";
import { Badge } from "./board.tsx";
import { PromptBox } from "./prompt.tsx";
import { markSeen, needsYou, type SessionRef } from "./store.ts";
import { openTerminal } from "./views.ts";

/** Lines of the screen shown per session. */
const TAIL_LINES = 12;

/** The list of sessions that need the person. */
export function NeedsYou(props: { api: Api }) {
  const list = needsYou.value;
  return (
    <div class="needs">
      {list.length === 0 && <p class="muted">Nothing needs you.</p>}
      {list.map((ref) => <NeedCard api={props.api} item={ref} key={`${ref.box}/${ref.session.name}`} />)}
    </div>
  );
}

function NeedCard(props: { api: Api; item: SessionRef }) {
  const { box, session } = props.item;
  const [screen, setScreen] = useState<string | null>(null);
  useEffect(() => {
    const path = props.api.box(box, `sessions/${encodeURIComponent(session.name)}/screen`);
    props.api.json<Screen>(path).then((s) => setScreen(tail(s.screen)), () => setScreen(null));
  }, [box, session.name, session.agent_state, props.item.changed]);
  return (
    <section class="card need" data-session={`${box}/${session.name}`}>
      <h2>
        <Badge state={session.agent_state} />
        <button type="button" class="link-button" onClick={() => openTerminal(box, session.name)}>
          {box}/{session.name}
        </button>
        <span class="muted">{session.agent}</span>
        {session.agent_state === "finished" && (
          <button
            type="button"
            class="small"
            onClick={() => markSeen(box, session.name)}
          >
            dismiss
          </button>
        )}
      </h2>
      {screen !== null && <pre class="screen">{screen}</pre>}
      <PromptBox api={props.api} box={box} session={session.name} />
    </section>
  );
}

function tail(screen: string): string {
  return screen.replace(/\s+$/, "").split("\n").slice(-TAIL_LINES).join("\n");
}
