/**
 * The command palette (Ctrl+K): jump to any view, session or worktree by typing part of its name, or hand
 * a session's work off to a new task; the views' shortcut letters are listed beside them.
 *
 * @module
 */
import { signal } from "@preact/signals";
import { useState } from "preact/hooks";
import { boxes, sessions } from "./store.ts";
import { openTerminal, show, viewsFor } from "./views.ts";
import { NEXT_WAITING_KEY, nextWaiting } from "./needs.tsx";
import { startHandOff } from "./handoff.ts";

/** True while the palette is open. */
export const palette = signal(false);

interface Entry {
  label: string;
  hint: string;
  run: () => void;
}

function entries(agent: boolean): Entry[] {
  const list: Entry[] = viewsFor(agent).map((v) => ({
    label: v.label,
    hint: `view · Alt+${v.key.toUpperCase()}`,
    run: () => show(v.id),
  }));
  list.push({
    label: "Next waiting agent",
    hint: `opens its terminal · ${NEXT_WAITING_KEY}`,
    run: nextWaiting,
  });
  for (const { box, session } of sessions.value) {
    list.push({
      label: `${box}/${session.name}`,
      hint: `session · ${session.agent_state}`,
      run: () => openTerminal(box, session.name),
    });
    if (agent && session.agent) {
      list.push({
        label: `Hand off ${box}/${session.name}`,
        hint: "new task from this session",
        run: () => startHandOff(box, session),
      });
    }
  }
  for (const view of Object.values(boxes.value)) {
    for (const location of view.locations) {
      for (const worktree of location.worktrees) {
        list.push({
          label: `${view.status.name}/${location.name}/${worktree.name}`,
          hint: "worktree",
          run: () => show("board"),
        });
      }
    }
  }
  return list;
}

/** The palette dialog; `agent`: the page sees every box through the agent (else a phone's views). */
export function Palette(props: { agent: boolean }) {
  const [query, setQuery] = useState("");
  const [index, setIndex] = useState(0);
  if (!palette.value) return null;
  const words = query.toLowerCase().split(/\s+/).filter(Boolean);
  const matches = entries(props.agent).filter((e) => words.every((w) => e.label.toLowerCase().includes(w)))
    .slice(0, 50);
  const pick = (entry: Entry | undefined) => {
    if (!entry) return;
    palette.value = false;
    setQuery("");
    setIndex(0);
    entry.run();
  };
  return (
    <div class="overlay" onClick={() => palette.value = false}>
      <div class="palette" role="dialog" aria-label="Command palette" onClick={(e) => e.stopPropagation()}>
        <input
          autofocus
          placeholder="Jump to a view, session or worktree…"
          value={query}
          onInput={(e) => {
            setQuery((e.target as HTMLInputElement).value);
            setIndex(0);
          }}
          onKeyDown={(e) => {
            if (e.key === "Escape") palette.value = false;
            if (e.key === "ArrowDown") setIndex(Math.min(index + 1, matches.length - 1));
            if (e.key === "ArrowUp") setIndex(Math.max(index - 1, 0));
            if (e.key === "Enter") pick(matches[index]);
          }}
        />
        <ul>
          {matches.map((entry, i) => (
            <li
              key={entry.label + entry.hint}
              class={i === index ? "selected" : ""}
              onClick={() => pick(entry)}
            >
              <span>{entry.label}</span>
              <span class="muted">{entry.hint}</span>
            </li>
          ))}
        </ul>
      </div>
    </div>
  );
}
