/**
 * The board's actions that ask before they act or report in place: a confirmed action (end a session,
 * forget a box, remove a worktree) and a worktree's actions (open in an editor, pause, sync, remove).
 *
 * @module
 */
import { useState } from "preact/hooks";
import { signal } from "@preact/signals";
import type { EditorInfo, SyncResult, Worktree } from "../../client/wire.ts";
import type { Api } from "./api.ts";
import { useOutcome } from "./outcome.ts";

/**
 * A button whose action runs only after a second click on "yes" beside the question; its refusal (a
 * gate, a dirty worktree) is shown in place.
 */
export function Confirmed(props: {
  label: string;
  question: string;
  act: () => Promise<unknown>;
  /** Offered after a refusal: the same action forced (`remove anyway`). */
  retry?: { label: string; act: () => Promise<unknown> };
}) {
  const [asking, setAsking] = useState(false);
  const [outcome, runAction] = useOutcome();
  const run = (act: () => Promise<unknown>) => {
    setAsking(false);
    return runAction(async () => {
      await act();
    });
  };
  return (
    <span class="confirmed" data-action={props.label}>
      <button type="button" class="small" onClick={() => setAsking(!asking)}>{props.label}</button>
      {asking && (
        <span class="confirm inline" role="dialog" aria-label={props.question}>
          {props.question}{" "}
          <button type="button" class="small" data-answer="yes" onClick={() => run(props.act)}>yes</button>
          <button type="button" class="small" onClick={() => setAsking(false)}>no</button>
        </span>
      )}
      {outcome?.error && (
        <span class="error" role="alert">
          {outcome.text}
          {props.retry && (
            <button
              type="button"
              class="small"
              data-answer="retry"
              onClick={() => run(props.retry!.act)}
            >
              {props.retry.label}
            </button>
          )}
        </span>
      )}
    </span>
  );
}

/** The laptop's editors (`GET /v1/editors`), asked once per page; empty in box mode. */
const editors = signal<EditorInfo[] | null>(null);

/**
 * Syncs a worktree onto its base (`POST …/sync`, `base` the worktree's path under the box's API): says
 * how, or throws with git's output when the rebase or merge stopped.
 */
export async function syncWorktree(api: Api, box: string, base: string): Promise<string> {
  const done = await api.json<SyncResult>(api.box(box, `${base}/sync`), { method: "POST", body: {} });
  if (!done.ok) throw new Error(`${done.mode} onto ${done.onto} stopped: ${done.output.trim()}`);
  return `${done.mode}d onto ${done.onto}`;
}

/** A worktree's actions: open in an editor, pause or resume, sync onto its base, remove. */
export function WorktreeActions(
  props: { api: Api; box: string; location: string; worktree: Worktree; dirty: boolean },
) {
  const { api, box, location, worktree } = props;
  const [message, say] = useOutcome();
  if (api.agent && editors.value === null) {
    editors.value = [];
    api.json<EditorInfo[]>(api.own("editors")).then((found) => editors.value = found, () => {});
  }
  const base = `locations/${encodeURIComponent(location)}/worktrees/${encodeURIComponent(worktree.name)}`;
  const editor = editors.value?.[0];
  return (
    <div class="row actions" data-worktree={`${box}/${location}/${worktree.name}`}>
      {editor && (
        <button
          type="button"
          class="small"
          data-action="edit"
          onClick={() =>
            say(async () => {
              await api.json(api.own("editors/open"), {
                method: "POST",
                body: { editor: editor.id, box, location, worktree: worktree.name },
              });
              return `opened in ${editor.name}`;
            })}
        >
          open in {editor.name}
        </button>
      )}
      {!worktree.main && (
        <>
          <button
            type="button"
            class="small"
            data-action={worktree.paused ? "resume" : "pause"}
            onClick={() =>
              say(async () => {
                const verb = worktree.paused ? "resume" : "pause";
                await api.json(api.box(box, `${base}/${verb}`), { method: "POST" });
                return verb === "pause" ? "paused: its services and agents are stopped" : "resumed";
              })}
          >
            {worktree.paused ? "resume" : "pause"}
          </button>
          <button
            type="button"
            class="small"
            data-action="sync"
            onClick={() => say(() => syncWorktree(api, box, base))}
          >
            sync
          </button>
          <Confirmed
            label="remove"
            question={`Remove ${location}/${worktree.name}${
              props.dirty ? " and its uncommitted changes" : ""
            }?`}
            act={() => api.json(api.box(box, base), { method: "DELETE" })}
            retry={{
              label: "remove anyway",
              act: () => api.json(api.box(box, `${base}?force=1`), { method: "DELETE" }),
            }}
          />
        </>
      )}
      {message && <span class={message.error ? "error" : "muted"} role="status">{message.text}</span>}
    </div>
  );
}
