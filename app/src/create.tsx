/**
 * Creating from the page (the New view): a location added on a box (a folder there, `POST locations`, or
 * a clone, `POST locations/clone`), a worktree (`POST locations/{name}/worktrees`), and an agent started
 * from a template or blank, in a new worktree (`POST tasks`, with `from_session` for a hand-off) or in one
 * that exists (`POST sessions`). The box and the location are chosen up front (the first ones until
 * another is picked); the agent is one of the box's presets (`GET info`'s, plus the location config's),
 * and the location's config errors are shown beside it (spec 2.5, 7 rule 2).
 *
 * @module
 */
import { useState } from "preact/hooks";
import type {
  AgentPreset,
  BoxInfo,
  Location,
  LocationConfig,
  Session,
  StreamLine,
  TaskResult,
  TaskTemplate,
  Worktree,
} from "../../client/wire.ts";
import type { Api } from "./api.ts";
import { boxes, eventsSeen } from "./store.ts";
import { ConfigProblems } from "./more.tsx";
import { useJson } from "./use_json.ts";
import { openTerminal } from "./views.ts";
import { handOff } from "./handoff.ts";
import { fill, templateProblem } from "./template.ts";

/** The value `chosen`, or the first of `options` when `chosen` is not among them. */
function pickOr(chosen: string, options: string[]): string {
  return options.includes(chosen) ? chosen : options[0] ?? "";
}

/** The New view: where (box, location) up front, then what to create there. */
export function CreateView(props: { api: Api }) {
  const online = Object.values(boxes.value).filter((b) => b.status.online).map((b) => b.status.name);
  const from = handOff.value;
  const [boxChoice, setBox] = useState(from?.box ?? "");
  const box = pickOr(from?.box ?? boxChoice, online);
  const locations: Location[] = boxes.value[box]?.locations ?? [];
  const [locationChoice, setLocation] = useState(from?.location ?? "");
  const location = pickOr(from?.location ?? locationChoice, locations.map((l) => l.name));
  const [info] = useJson<BoxInfo>(props.api, box ? props.api.box(box, "info") : null);
  const changes = eventsSeen("config.changed");
  const [config] = useJson<LocationConfig>(
    props.api,
    box && location ? props.api.box(box, `locations/${encodeURIComponent(location)}/config`) : null,
    [changes],
  );
  // Null until both are read: "no agent installed" only once it is known.
  const presets = info && config ? presetsOf(info.agents, config.effective.agents ?? []) : null;
  return (
    <div class="create">
      <section class="card create-where">
        <h2>Where</h2>
        <div class="row">
          <label>
            Box
            <select
              name="box"
              value={box}
              onChange={(e) => {
                handOff.value = null;
                setBox(e.currentTarget.value);
              }}
            >
              {online.length === 0 && <option value="">no box online</option>}
              {online.map((b) => <option key={b} value={b}>{b}</option>)}
            </select>
          </label>
          <label>
            Location
            <select
              name="location"
              value={location}
              onChange={(e) => {
                handOff.value = null;
                setLocation(e.currentTarget.value);
              }}
            >
              {locations.length === 0 && <option value="">no location yet: add one below</option>}
              {locations.map((l) => <option key={l.name} value={l.name}>{l.name}</option>)}
            </select>
          </label>
        </div>
        {location && <ConfigProblems api={props.api} box={box} location={location} changed={changes} />}
      </section>
      {box && location && (
        <StartAgent
          api={props.api}
          box={box}
          location={locations.find((l) => l.name === location)!}
          presets={presets}
        />
      )}
      {box && location && <NewWorktree api={props.api} box={box} location={location} />}
      {box && <AddLocation api={props.api} box={box} added={(name) => setLocation(name)} />}
    </div>
  );
}

/** The box's presets (installed built-ins) and the location config's, by id, the config's winning. */
export function presetsOf(box: AgentPreset[], config: AgentPreset[]): AgentPreset[] {
  const byId = new Map(box.map((p) => [p.id, p]));
  for (const preset of config) byId.set(preset.id, preset);
  return [...byId.values()];
}

/** One request's outcome, as the forms show it. */
type Outcome = { ok: boolean; text: string } | null;

/** Runs `work`, keeping its outcome (its text, or the error's message). */
function useOutcome(): [Outcome, boolean, (work: () => Promise<string>) => Promise<void>] {
  const [outcome, setOutcome] = useState<Outcome>(null);
  const [busy, setBusy] = useState(false);
  const run = async (work: () => Promise<string>) => {
    setBusy(true);
    setOutcome(null);
    try {
      setOutcome({ ok: true, text: await work() });
    } catch (error) {
      setOutcome({ ok: false, text: (error as Error).message });
    } finally {
      setBusy(false);
    }
  };
  return [outcome, busy, run];
}

function OutcomeLine(props: { outcome: Outcome }) {
  if (!props.outcome) return null;
  return props.outcome.ok
    ? <p role="status">{props.outcome.text}</p>
    : <p class="error" role="alert">{props.outcome.text}</p>;
}

/** A labelled input bound to one key of a form's state. */
function Input(
  props: { label: string; name: string; value: string; set: (v: string) => void; placeholder?: string },
) {
  return (
    <label>
      {props.label}
      <input
        name={props.name}
        value={props.value}
        placeholder={props.placeholder}
        onInput={(e) => props.set(e.currentTarget.value)}
      />
    </label>
  );
}

/** Adds a location on the box: a folder there, or a clone of a URL. */
function AddLocation(props: { api: Api; box: string; added: (name: string) => void }) {
  const [source, setSource] = useState("");
  const [name, setName] = useState("");
  const [outcome, busy, run] = useOutcome();
  const [progress, setProgress] = useState("");
  // A URL (scheme://… or scp-like user@host:path) is cloned; anything else is a folder on the box.
  const clone = /^[a-z][a-z0-9+.-]*:\/\/|^[^/\s]+@[^/\s]+:/i.test(source.trim());
  const submit = (e: Event) => {
    e.preventDefault();
    if (busy || !source.trim()) return;
    run(async () => {
      const named = name.trim() ? { name: name.trim() } : {};
      if (!clone) {
        if (!named.name) throw new Error("name: a location added from a folder needs a name");
        const made = await props.api.json<Location>(props.api.box(props.box, "locations"), {
          method: "POST",
          body: { path: source.trim(), ...named },
        });
        props.added(made.name);
        return `added ${props.box}/${made.name} (${made.path})`;
      }
      let last: StreamLine & { location?: Location } = {};
      for await (
        const line of props.api.lines<StreamLine & { location?: Location }>(
          props.api.box(props.box, "locations/clone"),
          { url: source.trim(), ...named },
        )
      ) {
        last = line;
        if (line.line) setProgress(line.line);
      }
      setProgress("");
      if (last.error || !last.location) throw new Error(last.error ?? "the clone ended without a location");
      props.added(last.location.name);
      return `cloned into ${props.box}/${last.location.name} (${last.location.path})`;
    });
  };
  return (
    <section class="card add-location">
      <h2>Add a location on {props.box}</h2>
      <form class="form" onSubmit={submit}>
        <Input
          label="A folder on the box (a git repository), or a URL to clone"
          name="location-source"
          value={source}
          set={setSource}
          placeholder="~/src/app or https://github.com/me/app.git"
        />
        <Input
          label={clone ? "Name (optional: the repository's)" : "Name"}
          name="location-name"
          value={name}
          set={setName}
        />
        <div class="row">
          <button type="submit" name="add-location" disabled={busy || !source.trim()}>
            {clone ? "Clone" : "Add"}
          </button>
          {progress && <span class="muted mono">{progress}</span>}
        </div>
      </form>
      <OutcomeLine outcome={outcome} />
    </section>
  );
}

/** Makes a worktree in the location: its name, and optionally its branch and start point. */
function NewWorktree(props: { api: Api; box: string; location: string }) {
  const [form, setForm] = useState({ name: "", branch: "", base: "" });
  const [outcome, busy, run] = useOutcome();
  const set = (key: keyof typeof form) => (value: string) => setForm({ ...form, [key]: value });
  return (
    <section class="card new-worktree">
      <h2>New worktree in {props.location}</h2>
      <form
        class="form"
        onSubmit={(e) => {
          e.preventDefault();
          if (busy || !form.name.trim()) return;
          run(async () => {
            const body: Record<string, string> = { name: form.name.trim() };
            if (form.branch.trim()) body.branch = form.branch.trim();
            if (form.base.trim()) body.base = form.base.trim();
            const made = await props.api.json<Worktree>(
              props.api.box(props.box, `locations/${encodeURIComponent(props.location)}/worktrees`),
              { method: "POST", body },
            );
            setForm({ name: "", branch: "", base: "" });
            return `created ${props.box}/${made.location}/${made.name} on ${
              made.branch ?? "a detached head"
            }`;
          });
        }}
      >
        <div class="row">
          <Input label="Name" name="worktree-name" value={form.name} set={set("name")} />
          <Input
            label="Branch (default: the name)"
            name="worktree-branch"
            value={form.branch}
            set={set("branch")}
          />
          <Input
            label="Base (default: the default branch)"
            name="worktree-base"
            value={form.base}
            set={set("base")}
          />
        </div>
        <button type="submit" name="create-worktree" disabled={busy || !form.name.trim()}>
          Create worktree
        </button>
      </form>
      <OutcomeLine outcome={outcome} />
    </section>
  );
}

/** The agent form: a template or blank; in a new worktree (a task) or an existing one (a session). */
function StartAgent(props: { api: Api; box: string; location: Location; presets: AgentPreset[] | null }) {
  const [templates, loadError] = useJson<TaskTemplate[]>(props.api, props.api.own("templates"));
  const [chosen, setChosen] = useState<TaskTemplate | null>(null);
  const [values, setValues] = useState<Record<string, string>>({});
  const [form, setForm] = useState({ worktree: "", name: "", agent: "", branch: "", prompt: "" });
  const [outcome, busy, run] = useOutcome();
  const from = handOff.value;
  const worktrees = props.location.worktrees ?? [];
  // "" is a new worktree (a task); a worktree's name starts a session in it.
  const worktree = worktrees.some((w) => w.name === form.worktree) ? form.worktree : "";
  const agents = (props.presets ?? []).map((p) => p.id);
  const agent = chosen?.command ? "" : form.agent === "" && !worktree ? agents[0] ?? "" : form.agent;
  const pick = (template: TaskTemplate | null) => {
    setChosen(template);
    setValues(Object.fromEntries((template?.variables ?? []).map((v) => [v.id, v.default ?? ""])));
    setForm({
      worktree: "",
      name: "",
      agent: template?.agent ?? "",
      branch: template?.branch ?? "",
      prompt: template?.prompt ?? "",
    });
  };
  const set = (key: keyof typeof form) => (value: string) => setForm({ ...form, [key]: value });
  const submit = (event: Event) => {
    event.preventDefault();
    if (busy) return;
    run(async () => {
      const vars = { ...values, name: form.name };
      const prompt = form.prompt ? fill(form.prompt, vars) : "";
      const what: Record<string, string> = {};
      if (chosen?.command) what.command = fill(chosen.command, vars);
      else if (agent) what.agent = agent;
      if (prompt) what.prompt = prompt;
      let session: Session;
      if (worktree) {
        session = await props.api.json<Session>(props.api.box(props.box, "sessions"), {
          method: "POST",
          body: { location: `${props.location.name}/${worktree}`, ...what },
        });
      } else {
        const body: Record<string, string> = { location: props.location.name, name: form.name, ...what };
        if (form.branch) body.branch = fill(form.branch, vars);
        if (chosen?.base) body.base = fill(chosen.base, vars);
        if (from) body.from_session = from.session;
        session = (await props.api.json<TaskResult>(props.api.box(props.box, "tasks"), {
          method: "POST",
          body,
        })).session;
        handOff.value = null;
      }
      openTerminal(props.box, session.name);
      return `created ${props.box}/${session.name}`;
    });
  };
  return (
    <section class="card task">
      <h2>Start an agent in {props.location.name}</h2>
      {loadError && <p class="error">{loadError}</p>}
      <div class="templates">
        <button type="button" class={chosen === null ? "active" : ""} onClick={() => pick(null)}>
          Blank
        </button>
        {(templates ?? []).map((t) => {
          const problem = templateProblem(t);
          return (
            <button
              type="button"
              key={t.id}
              class={chosen?.id === t.id ? "active" : ""}
              disabled={Boolean(problem)}
              title={problem ?? t.description}
              data-template={t.id}
              data-invalid={problem ? "" : undefined}
              onClick={() => pick(t)}
            >
              {t.name ?? t.id}
              {problem && <span class="error">(invalid)</span>}
            </button>
          );
        })}
      </div>
      {(templates ?? []).map((t) => {
        const problem = templateProblem(t);
        return problem && (
          <p class="error template-problem" key={t.id} data-template={t.id}>{t.name ?? t.id}: {problem}</p>
        );
      })}
      {from && (
        <p class="hand-off" role="status">
          Handing off from {from.box}/{from.session}: the new task records it.{" "}
          <button type="button" class="small" onClick={() => handOff.value = null}>Cancel</button>
        </p>
      )}
      <form class="form" onSubmit={submit}>
        {(chosen?.variables ?? []).map((v) => (
          <label key={v.id}>
            {v.label ?? v.id}
            {v.multiline
              ? (
                <textarea
                  name={`var-${v.id}`}
                  value={values[v.id] ?? ""}
                  onInput={(e) => setValues({ ...values, [v.id]: e.currentTarget.value })}
                />
              )
              : (
                <input
                  name={`var-${v.id}`}
                  value={values[v.id] ?? ""}
                  onInput={(e) => setValues({ ...values, [v.id]: e.currentTarget.value })}
                />
              )}
          </label>
        ))}
        <label>
          Worktree
          <select name="worktree" value={worktree} onChange={(e) => set("worktree")(e.currentTarget.value)}>
            <option value="">a new worktree</option>
            {worktrees.map((w) => (
              <option key={w.name} value={w.name}>{w.name} ({w.branch ?? "detached"})</option>
            ))}
          </select>
        </label>
        {!worktree && (
          <Input label="Name of the new worktree" name="name" value={form.name} set={set("name")} />
        )}
        {!worktree && <Input label="Branch" name="branch" value={form.branch} set={set("branch")} />}
        {chosen?.command
          ? (
            <p class="muted">
              Runs <code>{chosen.command}</code>
            </p>
          )
          : (
            <label>
              Agent
              <select
                name="agent"
                value={agent}
                onChange={(e) => set("agent")(e.currentTarget.value)}
              >
                {worktree && <option value="">a shell</option>}
                {agents.length === 0 && !worktree && (
                  <option value="">
                    {props.presets ? `no agent is installed on ${props.box}` : "reading the box's agents…"}
                  </option>
                )}
                {(props.presets ?? []).map((p) => <option key={p.id} value={p.id}>{p.name ?? p.id}</option>)}
              </select>
            </label>
          )}
        {!chosen?.command && (
          <label>
            Prompt{" "}
            <textarea
              name="prompt"
              value={form.prompt}
              onInput={(e) => set("prompt")(e.currentTarget.value)}
            />
          </label>
        )}
        <button
          type="submit"
          name="create-task"
          disabled={busy || (!worktree && (!form.name.trim() || (!agent && !chosen?.command)))}
        >
          {worktree ? "Start session" : "Create task"}
        </button>
      </form>
      <OutcomeLine outcome={outcome} />
    </section>
  );
}
