/**
 * The dock app's entry: reads the transport from `/app/config.json`, takes the token from the address's
 * fragment, follows the event stream, and shows the views.
 *
 * @module
 */
import { render } from "preact";
import { lazy, Suspense } from "preact/compat";
import { effect } from "@preact/signals";
import { Api, ApiError, type AppConfig, loadConfig, readConfig, takeToken } from "./api.ts";
import { Board } from "./board.tsx";
import { NeedsYou } from "./needs.tsx";
import { live, needsYou, previews, Sync } from "./store.ts";
import { closeTerminal, show, terminals, view, viewsFor } from "./views.ts";
import { Palette, palette } from "./palette.tsx";
import { AutomationView, EventsView, PluginsView, QueueView, SettingsView, TaskView } from "./more.tsx";
import { startNotifications } from "./notify.ts";
import { SharesView } from "./shares.tsx";
import { KitsView } from "./kits.tsx";

// xterm.js is most of the bundle: loaded when the first terminal opens, so the board paints without it.
const TerminalPane = lazy(() => import("./terminal.tsx").then((m) => m.TerminalPane));

function App(props: { api: Api; config: AppConfig }) {
  const waiting = needsYou.value.length;
  return (
    <div class={`shell mode-${props.config.mode}`}>
      <header class="top">
        <span class="brand">dock</span>
        <span class={`live ${live.value ? "on" : "off"}`} title={live.value ? "live" : "reconnecting"} />
        <nav class="nav">
          {viewsFor(props.api.agent).map((v) => (
            <button
              type="button"
              key={v.id}
              class={view.value === v.id ? "active" : ""}
              data-view={v.id}
              onClick={() => show(v.id)}
            >
              {v.label}
              {v.id === "needs" && waiting > 0 && <span class="count" data-count={waiting}>{waiting}</span>}
              {v.id === "terminals" && terminals.value.length > 0 && (
                <span class="count">{terminals.value.length}</span>
              )}
            </button>
          ))}
        </nav>
        <button
          type="button"
          class="palette-button"
          title="Command palette (Ctrl+K)"
          onClick={() => palette.value = true}
        >
          Ctrl+K
        </button>
      </header>
      {previews.value.length > 0 && (
        <div class="previews" role="status">
          {previews.value.map((p) => (
            <div class="preview" key={p.url} data-preview={`${p.box}/${p.location}/${p.worktree}`}>
              <span>
                Preview of {p.box}/{p.location}/{p.worktree} (port {p.port})
              </span>
              <a href={p.url} target="_blank" rel="noopener noreferrer">Open</a>
              <button
                type="button"
                class="small"
                onClick={() =>
                  previews.value = previews.value.filter((q) =>
                    q.url !== p.url
                  )}
              >
                Dismiss
              </button>
            </div>
          ))}
        </div>
      )}
      <main class={`view view-${view.value}`}>
        {view.value === "board" && <Board api={props.api} />}
        {view.value === "needs" && <NeedsYou api={props.api} />}
        {view.value === "terminals" && (
          <Suspense fallback={<p class="muted">Loading the terminal…</p>}>
            <div class="terminals">
              {terminals.value.length === 0 && <p class="muted">Open a session from the board.</p>}
              {terminals.value.map((t) => (
                <TerminalPane
                  api={props.api}
                  box={t.box}
                  session={t.session}
                  key={`${t.box}/${t.session}`}
                  onClose={() => closeTerminal(t.box, t.session)}
                />
              ))}
            </div>
          </Suspense>
        )}
        {view.value === "task" && <TaskView api={props.api} />}
        {view.value === "queue" && <QueueView api={props.api} />}
        {view.value === "events" && <EventsView />}
        {view.value === "automation" && <AutomationView api={props.api} />}
        {view.value === "plugins" && <PluginsView api={props.api} />}
        {view.value === "shares" && <SharesView api={props.api} />}
        {view.value === "kits" && <KitsView api={props.api} />}
        {view.value === "settings" && <SettingsView api={props.api} />}
      </main>
      <Palette agent={props.api.agent} />
    </div>
  );
}

function NoToken() {
  return (
    <div class="empty-page">
      <h1>dock</h1>
      <p>
        This page needs the agent's token. Open it with{" "}
        <code>dock open</code>, which puts the token in the address's fragment (it never reaches a server, and
        the page drops it from the address).
      </p>
    </div>
  );
}

/** A phone's page whose cookie is missing or revoked. */
function NotPaired() {
  return (
    <div class="empty-page">
      <h1>dock</h1>
      <p>
        This phone is not paired with the box. Run <code>dockd phone pair</code>{" "}
        there and open the link it prints (or scan its code) here.
      </p>
    </div>
  );
}

async function main(): Promise<void> {
  const root = document.getElementById("app")!;
  const config = readConfig() ?? await loadConfig();
  // On a box's phone listener the credential is the phone's cookie: no token to take.
  const token = config.mode === "box" ? null : takeToken();
  if (config.mode === "agent" && !token) return render(<NoToken />, root);
  const api = new Api(config, token);
  if (config.mode === "box") {
    // Installable from the phone listener only (the laptop's page is a tab): its manifest and icon.
    for (
      const [rel, href] of [["manifest", "/manifest.webmanifest"], ["apple-touch-icon", "/icon-192.png"]]
    ) {
      const link = document.createElement("link");
      link.rel = rel;
      link.href = href;
      document.head.append(link);
    }
    try {
      await api.json(api.box(config.box, "sessions"));
    } catch (error) {
      if (error instanceof ApiError && error.status === 401) return render(<NotPaired />, root);
    }
  }
  const sync = new Sync(api);
  effect(() => {
    const count = needsYou.value.length;
    document.title = count > 0 ? `(${count}) dock` : "dock";
  });
  startNotifications(api);
  render(<App api={api} config={config} />, root);
  addEventListener("keydown", (event) => {
    if ((event.ctrlKey || event.metaKey) && event.key.toLowerCase() === "k") {
      event.preventDefault();
      palette.value = !palette.value;
      return;
    }
    // Alt+letter shows a view (the letters are listed in the palette).
    const target = event.altKey && !event.ctrlKey && !event.metaKey &&
      viewsFor(api.agent).find((v) => event.code === `Key${v.key.toUpperCase()}`);
    if (target) {
      event.preventDefault();
      show(target.id);
    }
  });
  // The terminal's code, fetched once the board is up and nothing else is going on, so the first terminal
  // opens at once (parsing it earlier held up the board's first requests by ~50 ms).
  const warm = () => import("./terminal.tsx");
  setTimeout(() => "requestIdleCallback" in globalThis ? requestIdleCallback(warm) : warm(), 2000);
  await sync.start(new AbortController().signal);
}

main();
