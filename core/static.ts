/**
 * Serves the app's embedded files under `/app/` (issue 14): the laptop agent serves them on its loopback
 * API and a box on its phone listener, each handing in the same generated assets map and its own
 * start-up config. The files hold no data, so they need no token; every answer carries a strict
 * Content-Security-Policy so the page can run no script but its own bundle and reach no other origin.
 *
 * @module
 */

/** One embedded file: its media type and its text (or bytes: the phone's icons). */
export interface Asset {
  type: string;
  body: string | Uint8Array<ArrayBuffer>;
}

/** Options of {@linkcode serveApp}. */
export interface ServeAppOptions {
  /** Answered as `/app/config.json`: how the page reaches its API (its transport and scope). */
  config: Record<string, unknown>;
  /**
   * The origin (`http://127.0.0.1:1378`) whose plugin panels (`/app/plugins/`) the page may frame: the
   * laptop agent's own. @default {none: the page frames nothing (a box's phone listener serves no panel)}
   */
  panels?: string;
  /**
   * Served on loopback (the laptop agent): the files go as they are, marked `no-transform` so Deno does
   * not compress them. There compressing saves no time and costs CPU at both ends: Deno's brotli took
   * the agent ~4 ms of CPU for `app.js` alone (41 KB; 0.8 ms sent as it is), on the way to every first
   * paint. @default {false: compressed for a client that accepts it (the phone listener)}
   */
  loopback?: boolean;
}

/** Where the app is served. */
export const APP_PREFIX = "/app/";

/** Where the plugins' ui panels are served, below the app. */
export const PANEL_PREFIX = "/app/plugins/";

/**
 * The app page's policy: no inline script and no remote origin. Styles may be inline because xterm.js's
 * renderer writes its own `<style>` elements for the terminal's colours and cell sizes; a style cannot
 * run code. Frames: only the panel route of `panels` (an origin), or none. A frame's navigation is
 * checked against this page's `frame-src` wherever it starts, the frame's own script included, so a
 * panel cannot take what it was given to another origin, nor to the agent's API or app, by navigating
 * itself (Chromium has no `navigate-to`, and a sandboxed frame may still set its own `location`;
 * tests/panel_navigation_test.ts). A path ending in `/` matches every path below it.
 */
export function appCsp(panels?: string): string {
  const frames = panels && /^https?:\/\/[a-z0-9.:[\]-]+$/i.test(panels)
    ? `${panels}${PANEL_PREFIX}`
    : "'none'";
  return [
    "default-src 'none'",
    "script-src 'self'",
    "style-src 'self' 'unsafe-inline'",
    "img-src 'self' data:",
    "font-src 'self'",
    "connect-src 'self'",
    "manifest-src 'self'",
    // Plugins' ui panels, each in a sandboxed frame (PANEL_CSP), and nothing else.
    `frame-src ${frames}`,
    "base-uri 'none'",
    "form-action 'none'",
    "frame-ancestors 'none'",
  ].join("; ");
}

/** The app page's policy where it frames nothing ({@linkcode appCsp} without panels). */
export const APP_CSP: string = appCsp();

/**
 * A plugin's `ui` panel (`/app/plugins/{where}/{id}/{file}`): served without the token, so it runs as a
 * sandbox of its own whatever frames it (an opaque origin: no storage, no cookies, nothing of the app's),
 * reaches no network at all, and may be framed only by the app. It asks the app for data by
 * `postMessage`; the app calls `POST plugins/{id}/ui-api`, where the plugin's scopes decide. It has no
 * `navigate-to` (no browser enforces one): where it may navigate is the app page's `frame-src`
 * ({@linkcode appCsp}); the sandbox already refuses popups, forms and the top window.
 */
export const PANEL_CSP = [
  "sandbox allow-scripts",
  "default-src 'none'",
  "script-src 'self' 'unsafe-inline'",
  "style-src 'self' 'unsafe-inline'",
  "img-src 'self' data:",
  "font-src 'self'",
  "connect-src 'none'",
  "base-uri 'none'",
  "form-action 'none'",
  "frame-ancestors 'self'",
].join("; ");

/** Headers of a panel's file (see {@linkcode PANEL_CSP}). */
export function panelHeaders(type: string): Record<string, string> {
  return {
    "content-type": type,
    "content-security-policy": PANEL_CSP,
    "x-content-type-options": "nosniff",
    "referrer-policy": "no-referrer",
    "cache-control": "no-store",
  };
}

/** True for the paths {@linkcode serveApp} answers: `/app` and anything below `/app/`. */
export function isAppPath(path: string): boolean {
  return path === "/app" || path.startsWith(APP_PREFIX);
}

/**
 * The answer for a GET or HEAD of `path` under `/app/`, or null when `path` is not an app file (the
 * caller answers 404 in its own error form). `/app` redirects to `/app/`, `/app/` is `index.html`.
 */
export function serveApp(
  assets: Readonly<Record<string, Asset>>,
  method: string,
  path: string,
  options: ServeAppOptions,
): Response | null {
  if (!isAppPath(path) || (method !== "GET" && method !== "HEAD")) return null;
  if (path === "/app") return new Response(null, { status: 308, headers: { location: APP_PREFIX } });
  const name = path.slice(APP_PREFIX.length) || "index.html";
  let asset: Asset | undefined = name === "config.json"
    ? { type: "application/json", body: JSON.stringify(options.config) }
    : Object.hasOwn(assets, name)
    ? assets[name]
    : undefined;
  if (asset && name === "index.html" && typeof asset.body === "string") {
    // The config in the page itself: one request less before the page can ask for anything.
    const meta = `<meta name="dock-config" content="${escapeAttribute(JSON.stringify(options.config))}" />`;
    asset = { type: asset.type, body: asset.body.replace("<!--dock-config-->", meta) };
  }
  if (!asset) return null;
  return assetResponse(asset, method, { csp: appCsp(options.panels), loopback: options.loopback });
}

/**
 * One file's answer to a GET or HEAD, with the app's security headers (its CSP above all: `csp`, by
 * default {@linkcode APP_CSP}), sent as it is when `loopback` ({@linkcode ServeAppOptions}).
 */
export function assetResponse(
  asset: Asset,
  method: string,
  options: { csp?: string; loopback?: boolean } = {},
): Response {
  const headers = {
    "content-type": asset.type,
    "content-security-policy": options.csp ?? APP_CSP,
    "x-content-type-options": "nosniff",
    "referrer-policy": "no-referrer",
    "x-frame-options": "DENY",
    // The bundle changes with the program; a stale cached copy would talk to a newer API.
    "cache-control": options.loopback ? "no-cache, no-transform" : "no-cache",
  };
  return new Response(method === "HEAD" ? null : asset.body, { headers });
}

function escapeAttribute(text: string): string {
  return text.replaceAll("&", "&amp;").replaceAll('"', "&quot;").replaceAll("<", "&lt;").replaceAll(
    ">",
    "&gt;",
  );
}
