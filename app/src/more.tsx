/**
 * The views beyond the board and the terminals: New task from templates, the offline queue, the event
 * stream, hooks and flows, plugins, and settings (themes, notifications, app settings documents).
 *
 * @module
 */
import { useState } from "preact/hooks";
import type {
  FlowRun,
  FlowsState,
  HooksState,
  PluginInfo,
  PluginPermissions,
  QueueItem,
  TaskResult,
} from "../../client/wire.ts";
import type { TaskTemplate } from "../../client/agent.ts";
import type { Api } from "./api.ts";
import { useJson } from "./use_json.ts";
import { boxes, events, eventsSeen, queue } from "./store.ts";
import { notifySettings, saveNotifySettings } from "./notify.ts";
import { openTerminal } from "./views.ts";
import { fill } from "./template.ts";
import { panelPages, PluginPanel } from "./panel.tsx";

/** The New task dialog: a template's variables filled in, then box, location, agent and branch. */
export function TaskView(props: { api: Api }) {
  const [templates, loadError] = useJson<TaskTemplate[]>(props.api, props.api.own("templates"));
  const [chosen, setChosen] = useState<TaskTemplate | null>(null);
  const [values, setValues] = useState<Record<string, string>>({});
  const [form, setForm] = useState({ box: "", location: "", name: "", agent: "", branch: "", prompt: "" });
  const [result, setResult] = useState<string | null>(null);
  const boxNames = Object.keys(boxes.value);
  const pick = (template: TaskTemplate | null) => {
    setChosen(template);
    const defaults = Object.fromEntries((template?.variables ?? []).map((v) => [v.id, v.default ?? ""]));
    setValues(defaults);
    setForm({
      box: template?.box ?? boxNames[0] ?? "",
      location: template?.location ?? "",
      name: "",
      agent: template?.agent ?? "",
      branch: template?.branch ?? "",
      prompt: template?.prompt ?? "",
    });
  };
  const locations = boxes.value[form.box]?.locations ?? [];
  const submit = async (event: Event) => {
    event.preventDefault();
    const vars = { ...values, name: form.name };
    const body: Record<string, string> = { location: form.location, name: form.name };
    if (form.agent) body.agent = form.agent;
    if (chosen?.command) body.command = fill(chosen.command, vars);
    if (form.branch) body.branch = fill(form.branch, vars);
    if (chosen?.base) body.base = fill(chosen.base, vars);
    if (form.prompt) body.prompt = fill(form.prompt, vars);
    try {
      const created = await props.api.json<TaskResult>(props.api.box(form.box, "tasks"), {
        method: "POST",
        body,
      });
      setResult(`created ${form.box}/${created.session.name}`);
      openTerminal(form.box, created.session.name);
    } catch (error) {
      setResult((error as Error).message);
    }
  };
  const field = (key: keyof typeof form) => ({
    value: form[key],
    onInput: (e: Event) => setForm({ ...form, [key]: (e.target as HTMLInputElement).value }),
  });
  return (
    <div class="task">
      {loadError && <p class="error">{loadError}</p>}
      <div class="templates">
        <button type="button" class={chosen === null ? "active" : ""} onClick={() => pick(null)}>
          Blank
        </button>
        {(templates ?? []).map((t) => (
          <button
            type="button"
            key={t.id}
            class={chosen?.id === t.id ? "active" : ""}
            disabled={Boolean(t.error)}
            title={t.error ?? t.description}
            data-template={t.id}
            onClick={() => pick(t)}
          >
            {t.name ?? t.id}
            {t.error && <span class="error">(invalid)</span>}
          </button>
        ))}
      </div>
      <form class="card form" onSubmit={submit}>
        {(chosen?.variables ?? []).map((v) => (
          <label key={v.id}>
            {v.label ?? v.id}
            {v.multiline
              ? (
                <textarea
                  name={`var-${v.id}`}
                  value={values[v.id] ?? ""}
                  onInput={(e) => setValues({ ...values, [v.id]: (e.target as HTMLTextAreaElement).value })}
                />
              )
              : (
                <input
                  name={`var-${v.id}`}
                  value={values[v.id] ?? ""}
                  onInput={(e) => setValues({ ...values, [v.id]: (e.target as HTMLInputElement).value })}
                />
              )}
          </label>
        ))}
        <label>
          Box
          <select name="box" {...field("box")}>
            <option value="">—</option>
            {boxNames.map((b) => <option key={b} value={b}>{b}</option>)}
          </select>
        </label>
        <label>
          Location
          <select name="location" {...field("location")}>
            <option value="">—</option>
            {locations.map((l) => <option key={l.name} value={l.name}>{l.name}</option>)}
          </select>
        </label>
        <label>
          Name <input name="name" required {...field("name")} />
        </label>
        <label>
          Agent <input name="agent" {...field("agent")} />
        </label>
        <label>
          Branch <input name="branch" {...field("branch")} />
        </label>
        <label>
          Prompt <textarea name="prompt" {...field("prompt")} />
        </label>
        <button type="submit">Create task</button>
        {result && <p role="status">{result}</p>}
      </form>
    </div>
  );
}

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
            <button type="button" class="small" onClick={() => act(item, "send")}>send</button>
            <button type="button" class="small" onClick={() => act(item, "retry")}>retry</button>
            <button type="button" class="small" onClick={() => act(item, "edit")}>edit</button>
            <button type="button" class="small" onClick={() => act(item, "delete")}>delete</button>
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
  const [hooks, hooksError] = useJson<HooksState>(props.api, props.api.agent ? props.api.own("hooks") : null);
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

function HooksList(props: { state: HooksState }) {
  return (
    <>
      <p class="muted mono">{props.state.path}</p>
      {props.state.error && <p class="error field-error">{props.state.error}</p>}
      <ul class="list mono">
        {props.state.hooks.map((hook, i) => <li key={i}>{JSON.stringify(hook)}</li>)}
      </ul>
    </>
  );
}

function BoxAutomation(props: { api: Api; box: string }) {
  const [hooks, hooksError] = useJson<HooksState>(props.api, props.api.box(props.box, "hooks"));
  const [flows, flowsError] = useJson<FlowsState>(props.api, props.api.box(props.box, "flows"));
  const [runs] = useJson<FlowRun[]>(props.api, props.api.box(props.box, "flows/runs?limit=20"), [
    eventsSeen("flow."),
  ]);
  return (
    <section class="card">
      <h2>{props.box}</h2>
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

/** Describes a plugin's permissions in words, for the enable confirmation. */
export function permissionLines(permissions: PluginPermissions | undefined): string[] {
  if (!permissions) return ["nothing beyond its own folder"];
  return Object.entries(permissions).map(([key, value]) =>
    `${key}: ${Array.isArray(value) ? value.join(", ") : JSON.stringify(value)}`
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
            {asking === p && (
              <div class="confirm" role="dialog" aria-label={`Enable ${p.id}`}>
                <p>Enabling {p.id} grants:</p>
                <ul>{permissionLines(p.permissions).map((line) => <li key={line}>{line}</li>)}</ul>
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
        <div class="row">
          <button type="button" onClick={() => applyTheme(null)}>System</button>
          <button type="button" onClick={() => applyTheme({ id: "light", scheme: "light" })}>Light</button>
          <button type="button" onClick={() => applyTheme({ id: "dark", scheme: "dark" })}>Dark</button>
          {(themes ?? []).filter((t) => !t.error).map((t) => (
            <button
              type="button"
              key={String(t.id)}
              onClick={() => applyTheme(t)}
            >
              {String(t.name ?? t.id)}
            </button>
          ))}
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

/**
 * Applies a theme: `scheme` (`light`/`dark`) picks the base palette; `colors` (or top-level keys
 * starting with `--`) set CSS variables.
 */
export function applyTheme(theme: Record<string, unknown> | null): void {
  const root = document.documentElement;
  root.removeAttribute("style");
  root.dataset.theme = typeof theme?.scheme === "string" ? theme.scheme : "";
  if (!theme) return localStorage.removeItem("dock.theme");
  const colors = (typeof theme.colors === "object" && theme.colors ? theme.colors : {}) as Record<
    string,
    unknown
  >;
  for (const [name, value] of Object.entries({ ...theme, ...colors })) {
    if (typeof value !== "string") continue;
    if (name.startsWith("--")) root.style.setProperty(name, value);
    else if (name in colors) root.style.setProperty(`--${name}`, value);
  }
  localStorage.setItem("dock.theme", JSON.stringify(theme));
}
