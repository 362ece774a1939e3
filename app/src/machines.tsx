/**
 * Bringing machines in and up to date from the page (agent mode): add one over SSH (`POST
 * /v1/boxes/add-ssh`, what `dock add ssh` does; typed, or picked among a network's machines as `dock
 * discover` finds them) or pair one by its `dock://` link (`POST
 * /v1/boxes/pair`), and upgrade a box that runs an older dock than the laptop (`POST
 * /v1/boxes/{box}/upgrade`). The streamed ones show their steps as they come and the upload as a bar;
 * the board shows the box itself once the agent says it was added (`box.*` events reload it).
 *
 * @module
 */
import type { ComponentChildren } from "preact";
import { useState } from "preact/hooks";
import type { BoxProgress, BoxStatus, DiscoveredMachine, Networks } from "../../client/wire.ts";
import type { Api } from "./api.ts";
import { laptopBuild } from "./store.ts";
import { useJson } from "./use_json.ts";

/** How a streamed box operation went so far: its lines, the upload's bytes, and its end. */
interface Run {
  lines: string[];
  sent?: number;
  total?: number;
  /** The last line: done, with `error` or the box. */
  end?: { error?: string; box?: BoxStatus };
}

/** Lines kept on screen of a run (the upload's are folded into the bar). */
const SHOWN_LINES = 12;

/**
 * Runs a streamed box operation, keeping its state for {@linkcode RunLog}: `start` resolves once the
 * stream ends (its last line, or a refusal before it began, as the end's error).
 */
function useRun(): [Run | null, (stream: () => AsyncGenerator<BoxProgress>) => Promise<void>, boolean] {
  const [run, setRun] = useState<Run | null>(null);
  const [busy, setBusy] = useState(false);
  const start = async (stream: () => AsyncGenerator<BoxProgress>) => {
    setBusy(true);
    let state: Run = { lines: [] };
    setRun(state);
    try {
      for await (const line of stream()) {
        state = next(state, line);
        setRun(state);
      }
      if (!state.end) setRun({ ...state, end: { error: "the agent ended the stream before the last step" } });
    } catch (error) {
      setRun({ ...state, end: { error: (error as Error).message } });
    } finally {
      setBusy(false);
    }
  };
  return [run, start, busy];
}

/** A run after one more line: the upload's bytes, the end, or a step's line (the newest kept). */
function next(run: Run, line: BoxProgress): Run {
  if (line.sent !== undefined) return { ...run, sent: line.sent, total: line.total };
  if (line.done) return { ...run, end: { error: line.error, box: line.box } };
  return { ...run, lines: [...run.lines, `${line.step}: ${line.line ?? ""}`].slice(-SHOWN_LINES) };
}

/** A run's steps, its upload bar, and how it ended. */
function RunLog(props: { run: Run | null; done: (box: BoxStatus) => string }) {
  const { run } = props;
  if (!run) return null;
  return (
    <div class="run">
      {run.total !== undefined && (
        <progress class="upload" max={run.total} value={run.sent} title="upload">
          {Math.round((run.sent ?? 0) / run.total * 100)}%
        </progress>
      )}
      {run.lines.length > 0 && <pre class="log run-lines">{run.lines.join("\n")}</pre>}
      {run.end?.error && <p class="error" role="alert">{run.end.error}</p>}
      {run.end?.box && <p class="run-done" role="status">{props.done(run.end.box)}</p>}
    </div>
  );
}

/** A labelled text input whose value is `value`, set through `set` as it is typed. */
function Field(
  props: {
    label: ComponentChildren;
    name: string;
    value: string;
    set: (value: string) => void;
    placeholder?: string;
  },
) {
  return (
    <label>
      {props.label}
      <input
        name={props.name}
        value={props.value}
        placeholder={props.placeholder}
        onInput={(e) => props.set((e.target as HTMLInputElement).value)}
      />
    </label>
  );
}

/**
 * The machines of the laptop's networks (tailscale: `GET /v1/networks`, then `GET /v1/discover` when
 * asked) that answer on SSH and are no box yet, each with the button that fills in the SSH form; or why
 * there are none to look through (no tailscale, not logged in).
 */
function Discovered(props: { api: Api; pick: (host: string, name: string) => void }) {
  const [networks] = useJson<Networks>(props.api, props.api.own("networks"));
  const [found, setFound] = useState<DiscoveredMachine[] | null>(null);
  const [error, setError] = useState<string | null>(null);
  if (!networks) return null;
  const network = networks.networks[0];
  if (!network) return <p class="muted discover-hint">{networks.hint}</p>;
  if (!network.logged_in) {
    return (
      <p class="muted discover-hint">
        {network.name} is not logged in here ({network.state}): dock discover --login
      </p>
    );
  }
  const look = async () => {
    try {
      setFound(await props.api.json<DiscoveredMachine[]>(props.api.own(`discover?network=${network.name}`)));
      setError(null);
    } catch (e) {
      setError((e as Error).message);
    }
  };
  return (
    <div class="discover">
      <button type="button" name="discover" onClick={look}>Find machines on {network.name}</button>
      {error && <p class="error">{error}</p>}
      {found && found.length === 0 && <p class="muted">no machine of {network.name} is online</p>}
      {found && found.length > 0 && (
        <ul class="list">
          {found.map((machine) => (
            <li key={machine.address} data-machine={machine.name}>
              <strong>{machine.name}</strong>
              <span class="muted">{machine.dns ?? machine.address}</span>
              <MachineAction machine={machine} pick={props.pick} />
            </li>
          ))}
        </ul>
      )}
    </div>
  );
}

/** What can be done with a network's machine: nothing (a box already, or no SSH), or adding it. */
function MachineAction(props: { machine: DiscoveredMachine; pick: (host: string, name: string) => void }) {
  const { machine } = props;
  if (machine.box) return <span class="tag">box {machine.box}</span>;
  if (!machine.ssh) return <span class="muted">no SSH</span>;
  return (
    <button
      type="button"
      class="small"
      onClick={() => props.pick(machine.dns ?? machine.address, machine.name)}
    >
      Add
    </button>
  );
}

/** The card that adds a machine: over SSH (typed, or picked from a network), or by a pairing link. */
export function AddMachine(props: { api: Api }) {
  const [host, setHost] = useState("");
  const [name, setName] = useState("");
  const [link, setLink] = useState("");
  const [run, start, busy] = useRun();
  const named = name.trim() ? { name: name.trim() } : {};
  return (
    <section class="card add-machine">
      <h2>Add a machine</h2>
      <form
        class="form"
        onSubmit={(e) => {
          e.preventDefault();
          if (!busy && host.trim()) {
            start(() =>
              props.api.lines<BoxProgress>(props.api.own("boxes/add-ssh"), { host: host.trim(), ...named })
            );
          }
        }}
      >
        <Field
          label="Over SSH: [user@]host[:port], or a Host of your SSH config"
          name="ssh-host"
          value={host}
          set={setHost}
          placeholder="devbox or me@10.0.0.7:2222"
        />
        <Field label="Name on this laptop (optional)" name="box-name" value={name} set={setName} />
        <Discovered
          api={props.api}
          pick={(picked, pickedName) => {
            setHost(picked);
            // A network's machine names may hold what a box name may not (`[a-z0-9][a-z0-9-]*`).
            setName(
              pickedName.toLowerCase().replace(/[^a-z0-9-]+/g, "-").replace(/^-+|-+$/g, "").slice(0, 63),
            );
          }}
        />
        <div class="row">
          <button type="submit" name="add-ssh" disabled={busy || !host.trim()}>Add over SSH</button>
          <span class="muted">installs dock there when needed, starts it and pairs it</span>
        </div>
      </form>
      <form
        class="form"
        onSubmit={(e) => {
          e.preventDefault();
          if (busy || !link.trim()) return;
          start(async function* () {
            const box = await props.api.json<BoxStatus>(props.api.own("boxes/pair"), {
              method: "POST",
              body: { link: link.trim(), ...named },
            });
            yield { step: "pair", done: true, box };
          });
        }}
      >
        <Field
          label={
            <span>
              Or by the link <code>dockd pair</code> prints on it
            </span>
          }
          name="pair-link"
          value={link}
          set={setLink}
          placeholder="dock://host:1379?code=…&fp=…"
        />
        <div class="row">
          <button type="submit" name="pair" disabled={busy || !link.trim()}>Pair</button>
        </div>
      </form>
      <RunLog
        run={run}
        done={(box) => `added ${box.name} (${box.address}): ${box.online ? "online" : "offline"}`}
      />
    </section>
  );
}

/** On a box's card: that it runs an older dock than the laptop, and the button that upgrades it. */
export function Upgrade(props: { api: Api; status: BoxStatus }) {
  const [run, start, busy] = useRun();
  const { status } = props;
  const laptop = laptopBuild.value;
  const behind = status.online && status.behind;
  if (!behind && !run) return null;
  return (
    <div class="upgrade">
      {behind && (
        <div class="row">
          <span class="tag behind" title={`the laptop runs ${laptop}`}>behind: {status.build}</span>
          <button
            type="button"
            name="upgrade"
            disabled={busy}
            onClick={() =>
              start(() =>
                props.api.lines<BoxProgress>(
                  props.api.own(`boxes/${encodeURIComponent(status.name)}/upgrade`),
                )
              )}
          >
            Upgrade
          </button>
        </div>
      )}
      <RunLog run={run} done={(box) => `${box.name} runs ${box.build}`} />
    </div>
  );
}
