/**
 * The views beyond the board and the terminals: the offline queue, the event stream, hooks and flows,
 * plugins, and settings (themes, notifications, app settings documents). New task is `create.tsx`.
 *
 * @module
 */
import { useState } from "preact/hooks";
import type {
  FlowRun,
  FlowsState,
  HookConfig,
  HooksState,
  LocationConfig,
  PluginInfo,
  PluginPermissions,
  QueueItem,
} from "../../client/wire.ts";
import type { Api } from "./api.ts";
import { useJson } from "./use_json.ts";
import { boxes, events, eventsSeen, queue } from "./store.ts";
import { notifySettings, saveNotifySettings } from "./notify.ts";
import { applyTheme, BUILT_IN, theme, themeName } from "./theme.ts";
import { panelPages, PluginPanel } from "./panel.tsx";
import { openFnPage, PluginSettings } from "./plugin_settings.tsx";

/** The offline queue: items and their states, with retry, send now, edit and delete. */
export function QueueView(props: { api: Api }) {
  const [error, setError] = useState<string | null>(null);
  const act = async (item: QueueItem, verb: "retry" | "send" | "delete" | "edit") => {
    const path = props.api.own(`queue/${encodeURIComponent(item.id)}`);
    try {
      if (verb === "delete") await props.api.json(path, { method: "DELETE" });
      else if (verb === "edit") {
        const text = prompt("Prompt", item.text);
        if (text !== null) await props.api.json(path, { method: "PATCH", body: { text } });
      } else await props.api.json(`${path}/${verb}`, { method: "POST" });
      setError(null);
    } catch (e) {
      setError((e as Error).message);
    }
  };
  return (
    <div class="queue">
      {error && <p class="error">{error}</p>}
      {queue.value.length === 0 && <p class="muted">The queue is empty.</p>}
      <ul class="list">
        {queue.value.map((item) => (
          <li key={item.id} class="queue-item" data-state={item.state}>
            <span class={`tag state-${item.state}`}>{item.state}</span>
            <span>{item.box}/{item.session}</span>
            <span class="muted text">{item.text}</span>
            {item.error && <span class="error">{item.error}</span>}
            {
              // A delivered prompt was typed: sending, retrying or editing it again would type it twice.
              item.state !== "delivered" && (
                <>
                  <button type="button" class="small" onClick={() => act(item, "send")}>send</button>
                  <button type="button" class="small" onClick={() => act(item, "retry")}>retry</button>
                  <button type="button" class="small" onClick={() => act(item, "edit")}>edit</button>
                </>
              )
            }
            <button type="button" class="small" onClick={() => act(item, "delete")}>
              {item.state === "delivered" ? "remove" : "delete"}
            </button>
          </li>
        ))}
      </ul>
    </div>
  );
}

/** The event stream, newest first, filtered by words in its type, box or origin. */
export function EventsView() {
  const [filter, setFilter] = useState("");
  const words = filter.toLowerCase().split(/\s+/).filter(Boolean);
  const list = events.value.filter((e) => {
    const text = `${e.type} ${e.box ?? ""} ${e.origin ?? ""}`.toLowerCase();
    return words.every((w) => text.includes(w));
  }).slice(-300).reverse();
  return (
    <div class="events">
      <input
        class="filter"
        placeholder="Filter: type, box or origin (agent. box1 …)"
        value={filter}
        onInput={(e) => setFilter((e.target as HTMLInputElement).value)}
      />
      {list.length === 0 && (
        <p class="muted empty" role="status">
          {events.value.length === 0
            ? "No event yet: they appear here as boxes, agents and the laptop announce them."
            : "No event matches the filter."}
        </p>
      )}
      <ul class="list mono">
        {list.map((e, i) => (
          <li key={`${e.id ?? i}-${e.time}`}>
            <span class="muted">{e.time.slice(11, 19)}</span> <strong>{e.type}</strong>{" "}
            {e.box && <span class="tag">{e.box}</span>} <span class="muted">{e.origin}</span>{" "}
            <span class="muted">{e.data ? JSON.stringify(e.data) : ""}</span>
          </li>
        ))}
      </ul>
    </div>
  );
}

/** The laptop's hooks, and each box's hooks, flows and recent flow runs with their steps' outputs. */
export function AutomationView(props: { api: Api }) {
  const [hooks, hooksError] = useJson<HooksState>(
    props.api,
    props.api.agent ? props.api.own("hooks") : null,
    [
      eventsSeen("hooks.changed"),
    ],
  );
  const online = Object.values(boxes.value).filter((b) => b.status.online).map((b) => b.status.name);
  return (
    <div class="automation">
      {props.api.agent && (
        <section class="card">
          <h2>Laptop hooks</h2>
          {hooksError && <p class="error">{hooksError}</p>}
          {hooks && <HooksList state={hooks} />}
        </section>
      )}
      {online.map((box) => <BoxAutomation api={props.api} box={box} key={box} />)}
    </div>
  );
}

/** Hooks as they read: the event each runs on, what it runs, and where it comes from. */
function HooksList(props: { state: HooksState }) {
  const hooks: HookConfig[] = props.state.hooks;
  return (
    <>
      {props.state.error && <p class="error field-error" role="alert">{props.state.error}</p>}
      {hooks.length === 0 && !props.state.error && <p class="muted empty">No hook.</p>}
      <ul class="list hooks">
        {hooks.map((hook, i) => (
          <li key={i} class="hook" data-on={hook.on}>
            <span class="tag">{hook.on}</span>
            {hook.run !== undefined ? <code>{hook.run}</code> : <code>module {hook.module}</code>}
            {hook.timeout && <span class="muted">within {hook.timeout}</span>}
            {hook.tool && <span class="muted">for {hook.tool}</span>}
          </li>
        ))}
      </ul>
      <p class="muted mono">{props.state.path}</p>
    </>
  );
}

function BoxAutomation(props: { api: Api; box: string }) {
  // Hooks and flows come from files a person (or a config change) edits: read again on their events.
  const changed = eventsSeen("hooks.changed") + eventsSeen("config.changed");
  const [hooks, hooksError] = useJson<HooksState>(props.api, props.api.box(props.box, "hooks"), [changed]);
  const [flows, flowsError] = useJson<FlowsState>(props.api, props.api.box(props.box, "flows"), [changed]);
  const [runs] = useJson<FlowRun[]>(props.api, props.api.box(props.box, "flows/runs?limit=20"), [
    eventsSeen("flow."),
  ]);
  return (
    <section class="card">
      <h2>{props.box}</h2>
      {(boxes.value[props.box]?.locations ?? []).map((l) => (
        <ConfigProblems api={props.api} box={props.box} location={l.name} changed={changed} key={l.name} />
      ))}
      <h3>Hooks</h3>
      {hooksError && <p class="error">{hooksError}</p>}
      {hooks && <HooksList state={hooks} />}
      <h3>Flows</h3>
      {flowsError && <p class="error">{flowsError}</p>}
      {flows?.error && <p class="error field-error">{flows.error}</p>}
      <ul class="list">
        {(flows?.flows ?? []).map((flow) => (
          <li key={`${flow.scope}/${flow.id}`}>
            <strong>{flow.name}</strong> <span class="muted">{flow.scope} · {flow.source}</span>
            {flow.overridden && <span class="tag">overridden</span>}
            {flow.enabled === false && <span class="tag">off</span>}
          </li>
        ))}
      </ul>
      <h3>Recent runs</h3>
      <ul class="list">
        {(runs ?? []).map((run) => (
          <li key={run.id}>
            <details>
              <summary>
                <span class={`tag run-${run.status}`}>{run.status}</span> {run.flow}{" "}
                <span class="muted">{run.start.slice(0, 19)} {run.reason ?? ""}</span>
              </summary>
              {run.steps.map((step) => (
                <div key={step.id} class="step">
                  <span class={`tag run-${step.status}`}>{step.id}: {step.status}</span>
                  {step.error && <span class="error">{step.error}</span>}
                  {step.output && <pre class="log">{step.output}</pre>}
                </div>
              ))}
            </details>
          </li>
        ))}
      </ul>
    </section>
  );
}

/**
 * A location's config that does not load (spec 2.5, 7 rule 2: `GET locations/{name}/config`'s `errors`):
 * each file and field with what is wrong; nothing when it loads.
 */
export function ConfigProblems(props: { api: Api; box: string; location: string; changed: number }) {
  const [config] = useJson<LocationConfig>(
    props.api,
    props.api.box(props.box, `locations/${encodeURIComponent(props.location)}/config`),
    [props.changed],
  );
  const errors = config?.errors ?? [];
  if (errors.length === 0) return null;
  return (
    <div class="config-errors" role="alert" data-location={props.location}>
      <p class="error">The config of {props.location} does not load; what is wrong:</p>
      <ul class="list mono">
        {errors.map((p, i) => (
          <li key={i} class="error">{p.file}: {p.field ? `${p.field}: ` : ""}{p.message}</li>
        ))}
      </ul>
    </div>
  );
}

/**
 * Describes a plugin's permissions in words, for the enable confirmation: each scope with what it can
 * lead to (`GET plugins`' `scope_classes`), and apart, each shell command it runs outside the sandbox and
 * as whom, quoted exactly (the CLI's prompt says the same: client/plugin.ts).
 */
export function permissionLines(
  info: Pick<PluginInfo, "permissions" | "scope_classes" | "runs_as">,
): { lines: string[]; commands: string[]; runsAs: string } {
  const { commands = [], scopes = [], ...rest } = info.permissions ?? {};
  const lines: string[] = Object.entries(rest as PluginPermissions)
    .filter(([, value]) => Array.isArray(value) && value.length > 0)
    .map(([key, value]) => `${key}: ${(value as string[]).join(", ")}`);
  if (scopes.length) {
    const classes = info.scope_classes ?? {};
    lines.push(`API: ${scopes.map((s) => classes[s] ? `${s} (${classes[s]})` : s).join(", ")}`);
  }
  if (lines.length === 0 && commands.length === 0) lines.push("nothing beyond reading its own folder");
  return { lines, commands: commands.map((c) => JSON.stringify(c)), runsAs: info.runs_as ?? "dock's user" };
}

/** What enabling a plugin grants, as its confirmation shows it: commands apart, each with its user. */
function Consent(props: { plugin: PluginInfo }) {
  const { lines, commands, runsAs } = permissionLines(props.plugin);
  return (
    <div class="consent">
      <ul>{lines.map((line) => <li key={line}>{line}</li>)}</ul>
      {commands.length > 0 && (
        <div class="commands" data-runs-as={runsAs}>
          <p class="error">Runs these shell commands outside the sandbox, as {runsAs}:</p>
          <ul>
            {commands.map((c) => (
              <li key={c}>
                <code>{c}</code>
              </li>
            ))}
          </ul>
        </div>
      )}
    </div>
  );
}

/** Plugins on the laptop and every box: state, permissions to grant on enable, logs. */
export function PluginsView(props: { api: Api }) {
  const [plugins, error, reload] = useJson<PluginInfo[]>(props.api, props.api.own("plugins"), [
    eventsSeen("plugin."),
  ]);
  const [asking, setAsking] = useState<PluginInfo | null>(null);
  const [log, setLog] = useState<{ id: string; lines: string[] } | null>(null);
  const [actError, setActError] = useState<string | null>(null);
  const [panel, setPanel] = useState<{ key: string; file: string } | null>(null);
  const [settings, setSettings] = useState<string | null>(null);
  const base = (p: PluginInfo) =>
    p.where === "laptop"
      ? props.api.own(`plugins/${encodeURIComponent(p.id)}`)
      : props.api.box(p.where, `plugins/${encodeURIComponent(p.id)}`);
  const act = async (p: PluginInfo, verb: "enable" | "disable") => {
    try {
      await props.api.json(`${base(p)}/${verb}`, {
        method: "POST",
        body: verb === "enable" ? { permissions: p.permissions ?? {} } : undefined,
      });
      setActError(null);
    } catch (e) {
      setActError((e as Error).message);
    }
    setAsking(null);
    reload();
  };
  return (
    <div class="plugins">
      {error && <p class="error">{error}</p>}
      {actError && <p class="error">{actError}</p>}
      {plugins && plugins.length === 0 && (
        <p class="muted empty" role="status">
          No plugin on the laptop or any box. A plugin is a folder with a <code>dock-plugin.json</code> under
          {" "}
          <code>~/.dock/plugins/</code> (<code>dock plugin new ID</code> writes a skeleton there).
        </p>
      )}
      <ul class="list">
        {(plugins ?? []).map((p) => (
          <li key={`${p.where}/${p.id}`} class="plugin" data-plugin={p.id}>
            <strong>{p.name ?? p.id}</strong> <span class="muted">{p.where} · {p.version ?? ""}</span>
            <span class={`tag plugin-${p.state}`} data-state={p.state}>{p.state}</span>
            {p.error && <span class="error">{p.error}</span>}
            {p.enabled
              ? <button type="button" class="small" onClick={() => act(p, "disable")}>disable</button>
              : <button type="button" class="small" onClick={() => setAsking(p)}>enable…</button>}
            <button
              type="button"
              class="small"
              onClick={async () => {
                const info = await props.api.json<PluginInfo>(`${base(p)}?log=100`);
                setLog({ id: p.id, lines: info.log ?? [] });
              }}
            >
              log
            </button>
            {p.enabled && !p.error && props.api.agent &&
              panelPages(p).map((file) => (
                <button
                  type="button"
                  class="small"
                  key={file}
                  data-open-panel={file}
                  onClick={() =>
                    setPanel(
                      panel?.key === `${p.where}/${p.id}` && panel.file === file
                        ? null
                        : { key: `${p.where}/${p.id}`, file },
                    )}
                >
                  {file}
                </button>
              ))}
            {p.permissions && (
              <button
                type="button"
                class="small"
                data-settings={p.id}
                onClick={() => setSettings(settings === `${p.where}/${p.id}` ? null : `${p.where}/${p.id}`)}
              >
                settings
              </button>
            )}
            {p.enabled && !p.error && p.main && props.api.agent && (
              <button
                type="button"
                class="small"
                data-open-fn={p.id}
                onClick={() => openFnPage(props.api, p).catch((e) => setActError((e as Error).message))}
              >
                open
              </button>
            )}
            {settings === `${p.where}/${p.id}` && (
              <PluginSettings
                api={props.api}
                base={base(p)}
                onDone={() => setSettings(null)}
              />
            )}
            {asking === p && (
              <div class="confirm" role="dialog" aria-label={`Enable ${p.id}`}>
                <p>Enabling {p.id} grants:</p>
                <Consent plugin={p} />
                <button type="button" onClick={() => act(p, "enable")}>Grant and enable</button>
                <button type="button" onClick={() => setAsking(null)}>Cancel</button>
              </div>
            )}
            {log?.id === p.id && <pre class="log">{log.lines.join("\n")}</pre>}
            {panel?.key === `${p.where}/${p.id}` && (
              <PluginPanel api={props.api} plugin={p} file={panel.file} base={base(p)} />
            )}
          </li>
        ))}
      </ul>
    </div>
  );
}

/** Themes, notification switches and the app settings documents. */
export function SettingsView(props: { api: Api }) {
  const [themes] = useJson<Record<string, unknown>[]>(
    props.api,
    props.api.agent ? props.api.own("themes") : null,
  );
  const [key, setKey] = useState("settings");
  const [doc, setDoc] = useState("");
  const [status, setStatus] = useState<string | null>(null);
  const settings = notifySettings.value;
  return (
    <div class="settings">
      <section class="card">
        <h2>Theme</h2>
        <div class="row themes">
          {[...BUILT_IN, ...(themes ?? []).filter((t) => !t.error)].map((t) => {
            const on = (t?.id ?? null) === (theme.value?.id ?? null);
            return (
              <button
                type="button"
                key={String(t?.id ?? "system")}
                class={on ? "active" : ""}
                aria-pressed={on}
                data-theme-id={String(t?.id ?? "system")}
                onClick={() => applyTheme(t)}
              >
                {themeName(t)}
              </button>
            );
          })}
        </div>
      </section>
      <section class="card">
        <h2>Notifications</h2>
        {typeof Notification !== "undefined" && Notification.permission !== "granted" && (
          <button
            type="button"
            onClick={() => Notification.requestPermission()}
          >
            Allow notifications
          </button>
        )}
        {(["waiting", "finished", "flow", "preview"] as const).map((k) => (
          <label key={k} class="check">
            <input
              type="checkbox"
              checked={settings[k]}
              onChange={(e) =>
                saveNotifySettings(props.api, { ...settings, [k]: (e.target as HTMLInputElement).checked })}
            />
            {k === "flow" ? "a flow's notify step" : k === "preview" ? "an agent's preview" : `an agent ${k}`}
          </label>
        ))}
      </section>
      {props.api.agent && (
        <section class="card form">
          <h2>App settings documents</h2>
          <label>
            Key
            <input value={key} onInput={(e) => setKey((e.target as HTMLInputElement).value)} />
          </label>
          <div class="row">
            <button
              type="button"
              onClick={async () => {
                const value = await props.api.json(props.api.own(`app/${encodeURIComponent(key)}`));
                setDoc(JSON.stringify(value, null, 2));
              }}
            >
              Load
            </button>
            <button
              type="button"
              onClick={async () => {
                try {
                  await props.api.json(props.api.own(`app/${encodeURIComponent(key)}`), {
                    method: "PUT",
                    body: JSON.parse(doc || "null"),
                  });
                  setStatus("saved");
                } catch (e) {
                  setStatus((e as Error).message);
                }
              }}
            >
              Save
            </button>
          </div>
          <textarea
            class="mono"
            rows={10}
            value={doc}
            onInput={(e) => setDoc((e.target as HTMLTextAreaElement).value)}
          />
          {status && <p role="status">{status}</p>}
        </section>
      )}
    </div>
  );
}
