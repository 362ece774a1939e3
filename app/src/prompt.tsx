/**
 * Typing a prompt into a session without opening its terminal, and the quick answers a permission
 * prompt wants (`1`, Enter, Esc). A prompt goes through `sendOnce` (never typed twice); when the box
 * cannot be reached at all (503: the request never got there) it goes to the laptop's offline queue,
 * which delivers it once the box is back.
 *
 * @module
 */
import { useState } from "preact/hooks";
import { type Api, ApiError } from "./api.ts";

/** What happened to the last prompt. */
type Outcome = { kind: "sent" } | { kind: "queued"; id: string } | { kind: "error"; message: string };

/** Sends `text` once; queues it when the box is unreachable and the page can queue. */
export async function deliver(api: Api, box: string, session: string, text: string): Promise<Outcome> {
  try {
    await api.sendOnce(box, session, text);
    return { kind: "sent" };
  } catch (error) {
    if (api.agent && error instanceof ApiError && error.status === 503) {
      const item = await api.queue(box, session, text);
      return { kind: "queued", id: item.id };
    }
    return { kind: "error", message: (error as Error).message };
  }
}

/** The keys a permission prompt usually wants, as the terminal would send them. */
export const QUICK_KEYS: { label: string; text: string }[] = [
  { label: "1", text: "1" },
  { label: "Enter", text: "\r" },
  { label: "Esc", text: "\x1b" },
];

/** A prompt box and quick keys for one session. */
export function PromptBox(props: { api: Api; box: string; session: string; compact?: boolean }) {
  const [text, setText] = useState("");
  const [outcome, setOutcome] = useState<Outcome | null>(null);
  const [busy, setBusy] = useState(false);
  const submit = async (event: Event) => {
    event.preventDefault();
    if (!text.trim() || busy) return;
    setBusy(true);
    const result = await deliver(props.api, props.box, props.session, text);
    setOutcome(result);
    if (result.kind !== "error") setText("");
    setBusy(false);
  };
  const key = async (value: string) => {
    try {
      await props.api.keys(props.box, props.session, value);
      setOutcome({ kind: "sent" });
    } catch (error) {
      setOutcome({ kind: "error", message: (error as Error).message });
    }
  };
  return (
    <form class="prompt" onSubmit={submit}>
      <input
        class="prompt-text"
        aria-label={`Prompt for ${props.session}`}
        placeholder="Prompt…"
        value={text}
        onInput={(e) => setText((e.target as HTMLInputElement).value)}
      />
      <button type="submit" disabled={busy}>Send</button>
      {QUICK_KEYS.map((k) => (
        <button
          type="button"
          class="key"
          key={k.label}
          title={`Send ${k.label}`}
          onClick={() => key(k.text)}
        >
          {k.label}
        </button>
      ))}
      {outcome && (
        <span class={`outcome outcome-${outcome.kind}`} role="status">
          {outcome.kind === "sent"
            ? "sent"
            : outcome.kind === "queued"
            ? "queued (box offline)"
            : outcome.message}
        </span>
      )}
    </form>
  );
}
