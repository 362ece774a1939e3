/**
 * The board: every box (online or not, latency), its locations and worktrees (branch, ahead/behind,
 * dirty, ports with their private URLs, services with restart/stop/log), and every session with its
 * agent and state, newest change first.
 *
 * @module
 */
import { useState } from "preact/hooks";
import { signal } from "@preact/signals";
import type { EditorInfo } from "../../client/agent.ts";
import type { SyncResult, Worktree, WorktreeService } from "../../client/wire.ts";
import type { Api } from "./api.ts";
import { boxes, type BoxView, proxyPort, sessions } from "./store.ts";
import { openTerminal } from "./views.ts";
import { useOutcome } from "./outcome.ts";
import { AddMachine, Upgrade } from "./machines.tsx";

/** A session's agent state as a badge. */
export function Badge(props: { state: string; exited?: boolean }) {
  const state = props.exited ? "exited" : props.state;
  return <span class={`badge badge-${state}`} data-state={state}>{state}</span>;
}

/** The board of every box. */
export function Board(props: { api: Api }) {
  const list = Object.values(boxes.value);
  return (
    <div class="board">
      <section class="card sessions-card">
        <h2>Sessions</h2>
        {sessions.value.length === 0 && <p class="muted">No sessions yet.</p>}
        <ul class="sessions">
          {sessions.value.map(({ box, session }) => (
            <li class="session" key={`${box}/${session.name}`} data-session={`${box}/${session.name}`}>
              <Badge state={session.agent_state} exited={session.exited} />
              <button
                type="button"
                class="link-button"
                onClick={() =>
                  openTerminal(box, session.name)}
              >
                {box}/{session.name}
              </button>
              <span class="muted">{session.agent ?? session.command}</span>
              <span class="muted where">{session.location}/{session.worktree}</span>
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
            </li>
          ))}
        </ul>
      </section>
      {list.map((view) => <BoxCard api={props.api} view={view} key={view.status.name} />)}
      {props.api.agent && <AddMachine api={props.api} />}
    </div>
  );
}

function BoxCard(props: { api: Api; view: BoxView }) {
  const { status } = props.view;
  return (
    <section class="card box" data-box={status.name}>
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
      {!status.online && status.error && <p class="error">{status.error}</p>}
      {props.api.agent && <Upgrade api={props.api} status={status} />}
      {props.view.error && <p class="error">{props.view.error}</p>}
      {props.view.locations.map((location) => (
        <div class="location" key={location.name}>
          <h3>{location.name}</h3>
          <ul class="worktrees">
            {location.worktrees.map((worktree) => {
              const git = props.view.git.find((g) =>
                g.location === location.name && g.name === worktree.name
              );
              const ports = props.view.ports.find((p) =>
                p.location === location.name && p.worktree === worktree.name
              )?.ports ?? [];
              const services = props.view.services[`${location.name}/${worktree.name}`] ?? [];
              return (
                <li class="worktree" key={worktree.name}>
                  <div class="row">
                    <strong>{worktree.name}</strong>
                    <span class="branch">{git?.branch ?? worktree.branch ?? "detached"}</span>
                    {git && (git.ahead > 0 || git.behind > 0) && (
                      <span class="muted">↑{git.ahead} ↓{git.behind}</span>
                    )}
                    {git?.dirty && <span class="tag dirty">dirty</span>}
                    {worktree.paused && <span class="tag">paused</span>}
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
                          href={privateUrl(worktree.name, location.name, status.name, proxyPort.value)}
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
                    <ServiceRow
                      api={props.api}
                      box={status.name}
                      service={service}
                      key={service.name}
                    />
                  ))}
                </li>
              );
            })}
          </ul>
        </div>
      ))}
    </section>
  );
}

/** A worktree's private URL through the agent's proxy (spec 2.10): its lowest listening port. */
function privateUrl(worktree: string, location: string, box: string, port: number): string {
  return `http://${worktree}.${location}.${box}.localhost:${port}/`;
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

/**
 * A button whose action runs only after a second click on "yes" beside the question; its refusal (a
 * gate, a dirty worktree) is shown in place.
 */
function Confirmed(props: {
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

/** A worktree's actions: open in an editor, pause or resume, sync onto its base, remove. */
function WorktreeActions(
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
            onClick={() =>
              say(async () => {
                const done = await api.json<SyncResult>(api.box(box, `${base}/sync`), {
                  method: "POST",
                  body: {},
                });
                if (!done.ok) {
                  throw new Error(`${done.mode} onto ${done.onto} stopped: ${done.output.trim()}`);
                }
                return `${done.mode}d onto ${done.onto}`;
              })}
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
