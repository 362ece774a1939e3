/**
 * The dock app's entry: reads the transport from `/app/config.json`, takes the token from the address's
 * fragment, follows the event stream, and shows the views.
 *
 * @module
 */
import { render } from "preact";
import { lazy, Suspense } from "preact/compat";
import { useState } from "preact/hooks";
import { effect } from "@preact/signals";
import { Api, ApiError, type AppConfig, loadConfig, readConfig, takeToken } from "./api.ts";
import { Board, OutageBanner } from "./board.tsx";
import { NeedsYou, nextWaiting } from "./needs.tsx";
import { boxes, live, needsYou, onEvent, previews, Sync } from "./store.ts";
import { closeTerminal, openTerminal, show, terminals, view, type ViewId, viewsFor } from "./views.ts";
import { Palette, palette } from "./palette.tsx";
import { AutomationView, EventsView, PluginsView, QueueView, SettingsView } from "./more.tsx";
import { nextTheme, restoreTheme, theme, themeName } from "./theme.ts";
import { toastEvent, Toasts } from "./toasts.tsx";
import { startHandOff } from "./handoff.ts";
import { askNotifications, startNotifications } from "./notify.ts";
import { SharesView } from "./shares.tsx";
import { KitsView } from "./kits.tsx";
import { after } from "./clock.ts";

// xterm.js is most of the bundle: loaded when the first terminal opens, so the board paints without it.
const TerminalPane = lazy(() => import("./terminal.tsx").then((m) => m.TerminalPane));
// The review (diff colouring and all) loads with its view, not before the first paint.
const ReviewView = lazy(() => import("./review.tsx").then((m) => m.ReviewView));
// Creating (locations, worktrees, tasks) loads with its view too.
const CreateView = lazy(() => import("./create.tsx").then((m) => m.CreateView));

/**
 * The views always in the bar; at phone width (below 700 px) the others move into the More menu, which
 * lists them all (11 tabs wrap to three rows at 390 px: 7 of them were cut off).
 */
const PRIMARY = new Set<ViewId>(["board", "needs", "terminals"]);

/** The More menu of the tab bar at phone width: every view that is not in the bar, none hidden. */
function TabMenu(props: { agent: boolean }) {
  const [open, setOpen] = useState(false);
  const rest = viewsFor(props.agent).filter((v) => !PRIMARY.has(v.id));
  const current = rest.find((v) => v.id === view.value);
  return (
    <div class="nav-more">
      <button
        type="button"
        name="more-views"
        class={current ? "active" : ""}
        aria-haspopup="menu"
        aria-expanded={open}
        onClick={() => setOpen(!open)}
      >
        {current ? current.label : "More"} ▾
      </button>
      {open && (
        <div class="nav-menu" role="menu">
          {rest.map((v) => (
            <button
              type="button"
              role="menuitem"
              key={v.id}
              data-menu-view={v.id}
              class={view.value === v.id ? "active" : ""}
              onClick={() => {
                setOpen(false);
                show(v.id);
              }}
            >
              {v.label}
            </button>
          ))}
        </div>
      )}
    </div>
  );
}

/** A hand-off from an agent's session (agent mode: tasks are made through the laptop), or nothing. */
function handOffFrom(api: Api, box: string, name: string): (() => void) | undefined {
  const session = boxes.value[box]?.sessions.find((s) => s.name === name);
  if (!api.agent || !session?.agent) return undefined;
  return () => startHandOff(box, session);
}

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
              class={`${view.value === v.id ? "active" : ""} ${PRIMARY.has(v.id) ? "" : "secondary"}`}
              data-view={v.id}
              onClick={() => {
                // The first press of Needs you asks to notify (a browser asks only from a click).
                if (v.id === "needs") askNotifications();
                show(v.id);
              }}
            >
              {v.label}
              {v.id === "needs" && waiting > 0 && <span class="count" data-count={waiting}>{waiting}</span>}
              {v.id === "terminals" && terminals.value.length > 0 && (
                <span class="count">{terminals.value.length}</span>
              )}
            </button>
          ))}
        </nav>
        <TabMenu agent={props.api.agent} />
        <button
          type="button"
          name="theme"
          class="theme-button"
          title="Theme (click for the next; Settings lists them all)"
          data-theme-now={String(theme.value?.id ?? "system")}
          onClick={nextTheme}
        >
          Theme: {themeName(theme.value)}
        </button>
        <button
          type="button"
          class="palette-button"
          title="Command palette (Ctrl+K)"
          onClick={() => palette.value = true}
        >
          Ctrl+K
        </button>
      </header>
      <OutageBanner api={props.api} />
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
        {
          // Open terminals stay mounted (attached, with their scrollback) while another view shows.
        }
        {(view.value === "terminals" || terminals.value.length > 0) && (
          <Suspense fallback={<p class="muted">Loading the terminal…</p>}>
            <div class="terminals" hidden={view.value !== "terminals"}>
              {terminals.value.length === 0 && <p class="muted">Open a session from the board.</p>}
              {terminals.value.map((t) => (
                <TerminalPane
                  api={props.api}
                  box={t.box}
                  session={t.session}
                  key={`${t.box}/${t.session}`}
                  onClose={() => closeTerminal(t.box, t.session)}
                  onHandOff={handOffFrom(props.api, t.box, t.session)}
                />
              ))}
            </div>
          </Suspense>
        )}
        {view.value === "review" && (
          <Suspense fallback={<p class="muted">Loading the review…</p>}>
            <ReviewView api={props.api} />
          </Suspense>
        )}
        {view.value === "task" && (
          <Suspense fallback={<p class="muted">Loading…</p>}>
            <CreateView api={props.api} />
          </Suspense>
        )}
        {view.value === "queue" && <QueueView api={props.api} />}
        {view.value === "events" && <EventsView />}
        {view.value === "automation" && <AutomationView api={props.api} />}
        {view.value === "plugins" && <PluginsView api={props.api} />}
        {view.value === "shares" && <SharesView api={props.api} />}
        {view.value === "kits" && <KitsView api={props.api} />}
        {view.value === "settings" && <SettingsView api={props.api} />}
      </main>
      <Palette agent={props.api.agent} />
      <Toasts />
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
  restoreTheme();
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
  onEvent.add(toastEvent);
  // `POST sessions` with `open` (spec 4.2) announces `session.open`: whoever started the session asked
  // to see it, so its terminal comes forward (with the app closed, `dock agent`'s desktop notice says so).
  onEvent.add((event) => {
    const box = event.box ?? (api.agent ? undefined : (config as { box?: string }).box);
    const session = event.data?.session;
    if (event.type === "session.open" && box && typeof session === "string") openTerminal(box, session);
  });
  render(<App api={api} config={config} />, root);
  addEventListener("keydown", (event) => {
    if ((event.ctrlKey || event.metaKey) && event.key.toLowerCase() === "k") {
      event.preventDefault();
      palette.value = !palette.value;
      return;
    }
    // Alt+W opens the next waiting agent's terminal (listed in the palette and the board's toolbar).
    if (event.altKey && !event.ctrlKey && !event.metaKey && event.code === "KeyW") {
      event.preventDefault();
      nextWaiting();
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
  after(2000, () => "requestIdleCallback" in globalThis ? requestIdleCallback(warm) : warm());
  await sync.start(new AbortController().signal);
}

main();
