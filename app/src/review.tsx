/**
 * A worktree's review (issue 32): what it has that its base and its upstream have not, its diff against
 * where it left its base (committed and not; files, then hunks with +/- colour and a light syntax colour
 * of its own), its untracked files, and the actions after reading: sync, push, create a pull request
 * with the box's `gh`, open it, archive the worktree. Loaded with the view (not before first paint); a
 * large diff comes a page at a time, as the box bounds each page in bytes.
 *
 * @module
 */
import { useEffect, useMemo, useState } from "preact/hooks";
import type {
  DiffFile,
  DiffPatch,
  PullRequest,
  PushResult,
  WorktreeCommits,
  WorktreeDiff,
} from "../../client/wire.ts";
import type { Api } from "./api.ts";
import { useOutcome } from "./outcome.ts";
import { syncWorktree } from "./actions.tsx";
import { reviewing, show } from "./views.ts";
import { mark } from "./marks.ts";
import { patchHtml } from "./diff_html.ts";

/** The review view of the worktree `reviewing` names. */
export function ReviewView(props: { api: Api }) {
  const target = reviewing.value;
  if (!target) return <p class="muted">Choose “review” on a worktree of the board.</p>;
  return <Review api={props.api} {...target} key={`${target.box}/${target.location}/${target.worktree}`} />;
}

function Review(props: { api: Api; box: string; location: string; worktree: string }) {
  const { api, box, location, worktree } = props;
  const base = `locations/${encodeURIComponent(location)}/worktrees/${encodeURIComponent(worktree)}`;
  const [commits, setCommits] = useState<WorktreeCommits | null>(null);
  const [diff, setDiff] = useState<WorktreeDiff | null>(null);
  const [error, setError] = useState<string | null>(null);
  const [loadingMore, setLoadingMore] = useState(false);
  const [reloads, setReloads] = useState(0);
  const [pr, setPr] = useState<PullRequest | null>(null);
  const [title, setTitle] = useState("");
  const [message, say] = useOutcome();

  useEffect(() => {
    let live = true;
    setError(null);
    Promise.all([
      api.json<WorktreeCommits>(api.box(box, `${base}/commits`)),
      api.json<WorktreeDiff>(api.box(box, `${base}/diff`)),
    ]).then(([c, d]) => {
      if (!live) return;
      setCommits(c);
      setDiff(d);
    }, (e: Error) => live && setError(e.message));
    return () => live = false;
  }, [box, base, reloads]);

  const more = async () => {
    if (!diff || diff.next_offset === null) return;
    setLoadingMore(true);
    try {
      const page = await api.json<WorktreeDiff>(api.box(box, `${base}/diff?offset=${diff.next_offset}`));
      setDiff({ ...page, patches: [...diff.patches, ...page.patches], offset: diff.offset });
    } catch (e) {
      setError((e as Error).message);
    } finally {
      setLoadingMore(false);
    }
  };
  const reload = () => setReloads((n) => n + 1);
  // After the frame that drew the diff (effects run after the paint): the bench's "diff shown" mark.
  useEffect(() => {
    if (diff) mark("dock:diff-shown", diff.additions + diff.deletions);
  }, [diff]);

  return (
    <section class="review" data-review={`${box}/${location}/${worktree}`}>
      <header class="review-head">
        <h2>
          {box}/{location}/{worktree}
          {commits && <span class="branch">{commits.branch ?? "detached"}</span>}
        </h2>
        {commits && (
          <p class="muted" data-ahead={commits.ahead?.length ?? ""}>
            {commits.ahead === null
              ? `base ${commits.base} not found`
              : `${commits.ahead.length} ahead of ${commits.base}, ${commits.behind ?? 0} behind`}
            {commits.upstream
              ? ` · upstream ${commits.upstream}: ${commits.ahead_upstream?.length ?? 0} to push, ${
                commits.behind_upstream ?? 0
              } behind`
              : " · not pushed"}
          </p>
        )}
        <div class="row actions">
          <button
            type="button"
            class="small"
            data-action="sync"
            onClick={() => say(() => syncWorktree(api, box, base), reload)}
          >
            sync
          </button>
          <button
            type="button"
            class="small"
            data-action="push"
            onClick={() =>
              say(async () => {
                const done = await api.json<PushResult>(api.box(box, `${base}/push`), {
                  method: "POST",
                  body: {},
                });
                if (!done.ok) throw new Error(`push failed: ${done.output.trim()}`);
                return `pushed ${done.branch} to ${done.remote}`;
              }, reload)}
          >
            push
          </button>
          <input
            class="pr-title"
            placeholder="PR title (default: from the commits)"
            value={title}
            onInput={(e) => setTitle((e.target as HTMLInputElement).value)}
          />
          <button
            type="button"
            class="small"
            data-action="create-pr"
            onClick={() =>
              say(async () => {
                const made = await api.json<PullRequest>(api.box(box, `${base}/pr`), {
                  method: "POST",
                  body: title.trim() ? { title: title.trim() } : {},
                });
                setPr(made);
                return `pull request ${made.number ?? ""} opened`;
              })}
          >
            create PR
          </button>
          <button
            type="button"
            class="small"
            data-action="open-pr"
            onClick={() =>
              say(async () => {
                const found = pr ?? await api.json<PullRequest>(api.box(box, `${base}/pr`));
                setPr(found);
                globalThis.open(found.url, "_blank", "noopener,noreferrer");
              })}
          >
            open PR
          </button>
          <button
            type="button"
            class="small"
            data-action="archive"
            onClick={() =>
              say(async () => {
                if (
                  !confirm(
                    `Archive ${location}/${worktree}? Its services stop, its archive script runs, its folder goes.`,
                  )
                ) return;
                await api.json(api.box(box, base), { method: "DELETE" });
                show("board");
              })}
          >
            archive
          </button>
          {pr && <a href={pr.url} target="_blank" rel="noopener noreferrer" data-pr={pr.url}>{pr.url}</a>}
        </div>
        {message && <p class={message.error ? "error" : "muted"} role="status">{message.text}</p>}
      </header>
      {error && <p class="error" role="alert">{error}</p>}
      {!diff && !error && <p class="muted">Loading the diff…</p>}
      {commits?.ahead && commits.ahead.length > 0 && (
        <ul class="commits">
          {commits.ahead.map((c) => (
            <li key={c.hash} data-commit={c.hash}>
              <code>{c.hash.slice(0, 8)}</code> {c.subject} <span class="muted">{c.author}</span>
            </li>
          ))}
        </ul>
      )}
      {diff && (
        <>
          <p class="diff-summary" data-files={diff.files.length}>
            {diff.files.length} files changed, <span class="add">+{diff.additions}</span>{" "}
            <span class="del">-{diff.deletions}</span>
            {diff.untracked.length > 0 && `, ${diff.untracked.length} untracked`}
          </p>
          <ul class="diff-files">
            {diff.files.map((f) => <FileRow file={f} key={f.path} />)}
            {diff.untracked.map((path) => (
              <li key={`?${path}`} data-untracked={path}>
                <span class="tag">untracked</span> {path}
              </li>
            ))}
          </ul>
          {diff.patches.map((p) => <Patch patch={p} key={p.path} />)}
          {diff.next_offset !== null && (
            <button type="button" class="small" data-action="more" disabled={loadingMore} onClick={more}>
              {loadingMore ? "loading…" : `show ${diff.files.length - diff.next_offset} more files`}
            </button>
          )}
        </>
      )}
    </section>
  );
}

function FileRow(props: { file: DiffFile }) {
  const f = props.file;
  return (
    <li data-file={f.path}>
      <a href={`#file-${encodeURIComponent(f.path)}`} onClick={(e) => jump(e, f.path)}>
        {f.old_path ? `${f.old_path} → ${f.path}` : f.path}
      </a>{" "}
      <span class="tag">{f.status}</span> {f.binary ? <span class="muted">binary</span> : (
        <>
          <span class="add">+{f.additions}</span> <span class="del">-{f.deletions}</span>
        </>
      )}
    </li>
  );
}

/** Scrolls to a file's patch without touching the address (its fragment names the view). */
function jump(event: Event, path: string): void {
  event.preventDefault();
  document.querySelector(`[data-patch="${CSS.escape(path)}"]`)?.scrollIntoView({ block: "start" });
}

function Patch(props: { patch: DiffPatch }) {
  const { patch } = props;
  // One string of escaped HTML per file, not an element per token: see diff_html.ts for the figures.
  const html = useMemo(() => patchHtml(patch.path, patch.patch), [patch.path, patch.patch]);
  return (
    <div class="patch" data-patch={patch.path}>
      <div class="patch-head">{patch.path}</div>
      <pre class="patch-body">
        <div dangerouslySetInnerHTML={{ __html: html }} />
        {patch.truncated && <div class="line hunk">… cut here: this file's diff is larger than a page</div>}
      </pre>
    </div>
  );
}
