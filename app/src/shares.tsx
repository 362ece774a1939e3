/**
 * Shares & units: what each box puts on the public internet (its shares: the URL, which worktree's port,
 * closing one, opening one after saying plainly what goes public) and the box's own long-running
 * processes (its units: state, start, stop, restart, their output). Agent mode only: a phone's scope
 * has neither.
 *
 * @module
 */
import { useState } from "preact/hooks";
import type { Share, ShareRequest, StreamLine, Unit } from "../../client/wire.ts";
import type { Api } from "./api.ts";
import { boxes, eventsSeen } from "./store.ts";
import { useOutcome } from "./outcome.ts";
import { useJson } from "./use_json.ts";

/** Every online box's shares and units. */
export function SharesView(props: { api: Api }) {
  const online = Object.values(boxes.value).filter((b) => b.status.online).map((b) => b.status.name);
  return (
    <div class="shares">
      {online.length === 0 && <p class="muted">No box is online.</p>}
      {online.map((box) => <BoxShares api={props.api} box={box} key={box} />)}
    </div>
  );
}

function BoxShares(props: { api: Api; box: string }) {
  const { api, box } = props;
  const [shares, sharesError, reloadShares] = useJson<Share[]>(api, api.box(box, "shares"), [
    eventsSeen("share."),
  ]);
  const [units, unitsError, reloadUnits] = useJson<Unit[]>(api, api.box(box, "units"), [eventsSeen("unit.")]);
  const [outcome, run] = useOutcome();
  const [log, setLog] = useState<{ unit: string; lines: string[] } | null>(null);
  const act = (call: () => Promise<unknown>, reload: () => void) =>
    run(async () => {
      await call();
    }, reload);
  const showLog = async (unit: string) => {
    if (log?.unit === unit) return setLog(null);
    const text = await api.text(api.box(box, `units/${encodeURIComponent(unit)}/log?tail=200`));
    const lines = text.split("\n").filter(Boolean).map((line) => (JSON.parse(line) as StreamLine).line)
      .filter((line): line is string => line !== undefined);
    setLog({ unit, lines });
  };
  return (
    <section class="card" data-box={box}>
      <h2>{box}</h2>
      {outcome?.error && <p class="error" role="alert">{outcome.text}</p>}
      <h3>Public shares</h3>
      {sharesError && <p class="error">{sharesError}</p>}
      {shares?.length === 0 && <p class="muted">Nothing of {box} is public.</p>}
      <ul class="list">
        {(shares ?? []).map((share) => (
          <li key={share.id} class="share" data-share={`${share.location}/${share.worktree}`}>
            <strong>{share.location}/{share.worktree}</strong> <span class="tag">:{share.port}</span>{" "}
            {share.url
              ? <a href={share.url} target="_blank" rel="noopener noreferrer">{share.url}</a>
              : <span class="muted">starting…</span>} <span class="muted">{share.tool}</span>
            <button
              type="button"
              class="small"
              onClick={() =>
                act(
                  () =>
                    api.json(api.box(box, `shares/${encodeURIComponent(share.id)}`), { method: "DELETE" }),
                  reloadShares,
                )}
            >
              close
            </button>
          </li>
        ))}
      </ul>
      <NewShare
        box={box}
        open={(request) =>
          act(() => api.json(api.box(box, "shares"), { method: "POST", body: request }), reloadShares)}
      />
      <h3>Units</h3>
      {unitsError && <p class="error">{unitsError}</p>}
      {units?.length === 0 && <p class="muted">No units: `dock unit add {box}/NAME COMMAND` defines one.</p>}
      <ul class="list">
        {(units ?? []).map((unit) => (
          <li key={unit.name} class="unit" data-unit={unit.name}>
            <strong>{unit.name}</strong>{" "}
            <span class={`tag state-${unit.state}`} data-state={unit.state}>{unit.state}</span>{" "}
            <span class="muted">
              {unit.pid !== null ? `pid ${unit.pid} · ` : ""}
              {unit.restarts} restarts{unit.autostart ? " · autostart" : ""}
            </span>
            {unit.error && <span class="error">{unit.error}</span>}
            <code class="mono">{unit.run}</code>
            {(["start", "stop", "restart"] as const).map((action) => (
              <button
                type="button"
                class="small"
                key={action}
                data-action={action}
                onClick={() =>
                  act(
                    () =>
                      api.json(api.box(box, `units/${encodeURIComponent(unit.name)}/${action}`), {
                        method: "POST",
                      }),
                    reloadUnits,
                  )}
              >
                {action}
              </button>
            ))}
            <button type="button" class="small" data-action="log" onClick={() => showLog(unit.name)}>
              log
            </button>
            {log?.unit === unit.name && <pre class="log">{log.lines.join("\n")}</pre>}
          </li>
        ))}
      </ul>
    </section>
  );
}

/** Opens a share of one worktree's port, once the person has read what goes public. */
function NewShare(props: { box: string; open: (request: ShareRequest) => void }) {
  const worktrees = (boxes.value[props.box]?.locations ?? []).flatMap((location) =>
    location.worktrees.map((worktree) => ({ key: `${location.name}/${worktree.name}`, worktree }))
  );
  const [chosen, setChosen] = useState("");
  const [port, setPort] = useState("");
  const [asking, setAsking] = useState(false);
  const picked = worktrees.find((w) => w.key === (chosen || worktrees[0]?.key));
  if (!picked) return null;
  const shownPort = port || String(picked.worktree.ports[0] ?? "");
  const open = () => {
    setAsking(false);
    props.open({
      location: picked.worktree.location,
      worktree: picked.worktree.name,
      ...(port ? { port: Number(port) } : {}),
    });
  };
  return (
    <form
      class="form new-share"
      onSubmit={(e) => {
        e.preventDefault();
        setAsking(true);
      }}
    >
      <label>
        Worktree
        <select name="worktree" value={picked.key} onChange={(e) => setChosen(e.currentTarget.value)}>
          {worktrees.map((w) => <option key={w.key} value={w.key}>{w.key}</option>)}
        </select>
      </label>
      <label>
        Port
        <input
          name="port"
          inputMode="numeric"
          placeholder={String(picked.worktree.ports[0] ?? "")}
          value={port}
          onInput={(e) => setPort(e.currentTarget.value.replace(/\D/g, ""))}
        />
      </label>
      <button type="submit">Share publicly…</button>
      {asking && (
        <div class="confirm" role="dialog" aria-label="Open a public share">
          <p>
            Anyone with the link will reach port {shownPort} of {picked.key} on{" "}
            {props.box}, from the public internet, until the share is closed.
          </p>
          <button type="button" onClick={open}>Make it public</button>
          <button type="button" onClick={() => setAsking(false)}>Cancel</button>
        </div>
      )}
    </form>
  );
}
