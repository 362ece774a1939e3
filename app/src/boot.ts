/**
 * The page's first script (`boot.js`, issue 32): asks the laptop agent for what the board draws first
 * (`GET /v1/sessions`, every box and its sessions, and `GET /v1/status`) as soon as the page is parsed,
 * while the app's own scripts still load and evaluate. The app takes these answers instead of asking
 * again (`api.ts`): the board's data no longer waits for ~100 KB of script to be fetched, compiled and
 * run (the requests left 40–90 ms after the scripts arrived, in Chromium's trace of a 20-session load).
 *
 * It imports nothing (not even clock.ts: api.ts drops the answers left untaken), so it is a file of its
 * own with no chunk to wait for. The token is the one
 * `takeToken` (api.ts) will take: the address's fragment, else this tab's sessionStorage.
 *
 * @module
 */

/** The answers asked early, by path, under this name on `globalThis` (read by api.ts `takeEarly`). */
const EARLY = "dockEarly";
/** What is asked early: what the board draws first (store.ts `reloadAll`). */
const PATHS = ["/v1/sessions", "/v1/status"];

/** Starts the early requests (agent mode with a token only; the phone's page has its own start). */
function boot(): void {
  try {
    const meta = document.querySelector('meta[name="dock-config"]')?.getAttribute("content");
    if (JSON.parse(meta ?? "null")?.mode !== "agent") return;
  } catch {
    return; // no config in the page: the app reads config.json, then asks itself
  }
  const token = new URLSearchParams(location.hash.slice(1)).get("token") ??
    sessionStorage.getItem("dock.token");
  if (!token) return;
  const headers = { authorization: `Bearer ${token}`, "x-dock-origin": "app" };
  const early = new Map<string, Promise<Response>>();
  for (const path of PATHS) {
    const answer = fetch(path, { headers });
    answer.catch(() => {}); // a failure is the app's to report when it takes the answer
    early.set(path, answer);
  }
  (globalThis as Record<string, unknown>)[EARLY] = early;
}

boot();
