/**
 * Broadcast from the app (issue 30 item 3): sessions ticked on the board or in Needs you, one prompt
 * typed for all of them through the agent's `POST /v1/broadcast` (`{{session}}`, `{{branch}}`, … filled
 * per session), and what happened to each (sent, queued, skipped, failed) shown per session. Only with
 * the laptop agent: a phone sees one box and has no broadcast.
 *
 * @module
 */
import { signal } from "@preact/signals";
import { useState } from "preact/hooks";
import type { BroadcastResult, BroadcastTarget } from "../../client/wire.ts";
import type { Api } from "./api.ts";
import { sessionKey } from "./store.ts";

/** The sessions ticked for a broadcast, as `box/name`. */
export const selected = signal<ReadonlySet<string>>(new Set());

/** Ticks or unticks one session. */
export function toggle(key: string): void {
  const next = new Set(selected.value);
  if (next.has(key)) next.delete(key);
  else next.add(key);
  selected.value = next;
}

/** A session's tick box (nothing on a phone, which cannot broadcast). */
export function SelectBox(props: { api: Api; box: string; session: string }) {
  if (!props.api.agent) return null;
  const key = sessionKey(props.box, props.session);
  return (
    <input
      type="checkbox"
      class="select-session"
      data-select={key}
      aria-label={`select ${key} for a broadcast`}
      checked={selected.value.has(key)}
      onChange={() => toggle(key)}
    />
  );
}

/** The prompt for the ticked sessions and each one's outcome; shown once a session is ticked. */
export function BroadcastBar(props: { api: Api }) {
  const [text, setText] = useState("");
  const [busy, setBusy] = useState(false);
  const [result, setResult] = useState<BroadcastTarget[] | null>(null);
  const [error, setError] = useState<string | null>(null);
  const targets = [...selected.value];
  if (!props.api.agent || (targets.length === 0 && result === null)) return null;
  const send = async (event: Event) => {
    event.preventDefault();
    if (!text.trim() || busy || targets.length === 0) return;
    setBusy(true);
    setError(null);
    try {
      const answer = await props.api.json<BroadcastResult>(props.api.own("broadcast"), {
        method: "POST",
        // One id per press: a resend of this same request never types twice.
        body: { id: crypto.randomUUID(), text, to: targets },
      });
      setResult(answer.targets);
      setText("");
      selected.value = new Set();
    } catch (e) {
      setError((e as Error).message);
    } finally {
      setBusy(false);
    }
  };
  return (
    <form class="broadcast" onSubmit={send}>
      {targets.length > 0 && (
        <>
          <p class="muted">
            To {targets.length} session{targets.length === 1 ? "" : "s"}: {targets.join(", ")}
            <button type="button" class="small" onClick={() => selected.value = new Set()}>clear</button>
          </p>
          <textarea
            class="broadcast-text"
            rows={2}
            placeholder="One prompt for each: {{session}} {{worktree}} {{location}} {{box}} {{branch}}"
            value={text}
            onInput={(e) => setText((e.target as HTMLTextAreaElement).value)}
          />
          <button type="submit" disabled={busy || !text.trim()}>
            {busy ? "Sending…" : `Send to ${targets.length}`}
          </button>
        </>
      )}
      {error && <p class="error broadcast-error">{error}</p>}
      {result && (
        <ul class="broadcast-result">
          {result.map((t) => (
            <li key={`${t.box}/${t.session}`} data-target={`${t.box}/${t.session}`} data-outcome={t.outcome}>
              {t.box}/{t.session}: {t.outcome}
              {t.reason ? ` (${t.reason})` : ""}
              {t.error ? ` ${t.error}` : ""}
            </li>
          ))}
          <li>
            <button type="button" class="small" onClick={() => setResult(null)}>dismiss</button>
          </li>
        </ul>
      )}
    </form>
  );
}
