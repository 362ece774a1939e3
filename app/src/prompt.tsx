/**
 * Typing a prompt into a session without opening its terminal, the quick keys a prompt wants (`1`,
 * Enter, Esc, typed as keystrokes by the box's keys route), and, for an agent waiting on a permission
 * prompt, its answers (Yes, Always, No: the box's answer route, which knows each tool's keys). Keys and
 * answers show as delivered only once the box says they were typed. A prompt goes through `sendOnce`
 * (never typed twice); when the box cannot be reached at all (503: the request never got there) it goes
 * to the laptop's offline queue, which delivers it once the box is back.
 *
 * @module
 */
import { useState } from "preact/hooks";
import type { PermissionAnswer, WaitingReason } from "../../client/wire.ts";
import { type Api, ApiError } from "./api.ts";
import { plainError } from "./outage.ts";

/** What happened to the last prompt, keys or answer. */
type Outcome =
  | { kind: "sent"; what?: string }
  | { kind: "queued"; id: string }
  | { kind: "error"; message: string };

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

/** The keys a prompt usually wants, as the keys route names them. */
export const QUICK_KEYS: { label: string; keys: string[] }[] = [
  { label: "1", keys: ["1"] },
  { label: "Enter", keys: ["Enter"] },
  { label: "Esc", keys: ["Escape"] },
];

/** The answers to a permission prompt, as the answer route takes them. */
export const ANSWERS: { label: string; answer: PermissionAnswer }[] = [
  { label: "Yes", answer: "yes" },
  { label: "Always", answer: "always" },
  { label: "No", answer: "no" },
];

/** A prompt box, quick keys and (while the agent waits on a permission prompt) its answers. */
export function PromptBox(
  props: {
    api: Api;
    box: string;
    session: string;
    compact?: boolean;
    reason?: WaitingReason | null;
    /** The box is offline: keys and answers cannot be typed (a prompt still goes to the queue). */
    offline?: boolean;
    /** Told what was typed once the box says it typed keys or an answer (`answered yes`, `typed Enter`). */
    onDelivered?: (what: string) => void;
  },
) {
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
  // Shown as delivered only when the box answers that it typed them.
  const typing = async (what: string, call: () => Promise<unknown>) => {
    setBusy(true);
    setOutcome(null);
    try {
      await call();
      setOutcome({ kind: "sent", what });
      props.onDelivered?.(what);
    } catch (error) {
      setOutcome({ kind: "error", message: (error as Error).message });
    }
    setBusy(false);
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
      {props.reason === "permission" && ANSWERS.map((a) => (
        <button
          type="button"
          class="answer"
          key={a.answer}
          data-answer={a.answer}
          title={props.offline
            ? "The box is offline: answers wait for it"
            : `Answer the permission prompt: ${a.label}`}
          disabled={busy || props.offline}
          onClick={() =>
            typing(`answered ${a.answer}`, () => props.api.answer(props.box, props.session, a.answer))}
        >
          {a.label}
        </button>
      ))}
      {QUICK_KEYS.map((k) => (
        <button
          type="button"
          class="key"
          key={k.label}
          title={props.offline ? "The box is offline: keys wait for it" : `Press ${k.label}`}
          disabled={busy || props.offline}
          onClick={() => typing(`typed ${k.label}`, () => props.api.keys(props.box, props.session, k.keys))}
        >
          {k.label}
        </button>
      ))}
      {outcome && (
        <span class={`outcome outcome-${outcome.kind}`} role="status">
          {outcome.kind === "sent"
            ? outcome.what ?? "sent"
            : outcome.kind === "queued"
            ? "queued (box offline)"
            : plainError(outcome.message, props.box)}
        </span>
      )}
    </form>
  );
}
