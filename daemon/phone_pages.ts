/**
 * What the phone listener serves outside `/v1/`: the app (`/app/`, the same embedded files the laptop
 * agent serves, started in box mode: this box's own API, the phone layout), the pairing page (`/pair`,
 * which redeems the one-time code from its link's fragment and lets the box set the phone's cookie), and
 * the PWA manifest and icons. `/` goes to the app. The files hold no data and need no credential; every
 * answer carries the app's strict Content-Security-Policy (`core/static.ts`).
 *
 * @module
 */
import { DockError } from "../client/errors.ts";
import { concatBytes } from "../core/bytes.ts";
import { errorResponse } from "../core/http.ts";
import { APP_PREFIX, type Asset, assetResponse, serveApp } from "../core/static.ts";
import { APP_ASSETS } from "../app/assets.generated.ts";

/** Options of {@linkcode phonePages}. */
export interface PhonePagesOptions {
  /** The box's name, shown by the pages and the installed app. */
  box: string;
}

/** Builds the phone listener's page handler. */
export function phonePages(options: PhonePagesOptions): (request: Request) => Response | Promise<Response> {
  const files = phoneFiles(options.box);
  const config = { mode: "box", box: options.box };
  // Drawn on first request, once: most boxes never serve them.
  const icons = new Map<string, Promise<Asset>>();
  return function pages(request) {
    const path = new URL(request.url).pathname;
    if (request.method !== "GET" && request.method !== "HEAD") {
      return errorResponse(
        new DockError("method_not_allowed", `${request.method} is not allowed here; use GET`, {
          status: 405,
        }),
      );
    }
    if (path === "/") return new Response(null, { status: 308, headers: { location: APP_PREFIX } });
    const file = files.get(path);
    if (file) return assetResponse(file, request.method);
    const size = ICON_SIZES.get(path);
    if (size) {
      if (!icons.has(path)) icons.set(path, iconPng(size).then((body) => ({ type: "image/png", body })));
      return icons.get(path)!.then((icon) => assetResponse(icon, request.method));
    }
    return serveApp(APP_ASSETS, request.method, path, { config }) ??
      errorResponse(new DockError("not_found", `no such page: ${path}`, { status: 404 }));
  };
}

/** The pages' own files, by path. */
function phoneFiles(box: string): Map<string, Asset> {
  const title = `dock · ${escapeHtml(box)}`;
  return new Map<string, Asset>([
    ["/pair", {
      type: "text/html; charset=utf-8",
      body: `<!doctype html><html lang="en"><head><meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<meta name="theme-color" content="#0f172a"><title>${title}</title>
<link rel="manifest" href="/manifest.webmanifest"><link rel="icon" href="/icon.svg" type="image/svg+xml">
<link rel="stylesheet" href="/pair.css"></head>
<body><main><h1>${title}</h1><p id="status">Pairing this phone…</p></main>
<script src="/pair.js"></script></body></html>`,
    }],
    ["/pair.js", { type: "text/javascript; charset=utf-8", body: PAIR_JS }],
    ["/pair.css", { type: "text/css; charset=utf-8", body: CSS }],
    ["/manifest.webmanifest", {
      type: "application/manifest+json",
      body: JSON.stringify({
        name: `dock · ${box}`,
        short_name: box.slice(0, 12) || "dock",
        description: "The agents on this box: who needs you, and a terminal to answer.",
        start_url: APP_PREFIX,
        scope: "/",
        display: "standalone",
        background_color: "#0f172a",
        theme_color: "#0f172a",
        icons: [
          { src: "/icon.svg", sizes: "any", type: "image/svg+xml", purpose: "any" },
          { src: "/icon-192.png", sizes: "192x192", type: "image/png", purpose: "any maskable" },
          { src: "/icon-512.png", sizes: "512x512", type: "image/png", purpose: "any maskable" },
        ],
      }),
    }],
    ["/icon.svg", { type: "image/svg+xml", body: ICON_SVG }],
  ]);
}

/** The PNG icons' paths and sizes (browsers want PNGs of 192 and 512 to install a PWA). */
const ICON_SIZES = new Map([["/icon-192.png", 192], ["/icon-512.png", 512]]);

function escapeHtml(text: string): string {
  return text.replace(/[&<>"']/g, (c) => `&#${c.charCodeAt(0)};`);
}

// The code rides in the link's fragment (never sent in a request line, a Referer or a log); the page
// posts it once, drops it from the address bar and history, and the box answers with the cookie.
const PAIR_JS = `"use strict";
const status = document.getElementById("status");
const code = decodeURIComponent(location.hash.slice(1));
history.replaceState(null, "", "/pair");
function say(text) { status.textContent = text; }
function deviceName() {
  const ua = navigator.userAgent;
  const kind = /iPhone/.test(ua) ? "iPhone" : /iPad/.test(ua) ? "iPad" : /Android/.test(ua) ? "Android phone" : "phone";
  return kind;
}
if (!code) {
  say("This page needs the link that \`dockd phone pair\` printed on the box (it holds a one-time code).");
} else {
  fetch("/v1/phone/pair", {
    method: "POST",
    headers: { "content-type": "application/json", "x-dock-phone": "1" },
    body: JSON.stringify({ code, name: deviceName() }),
  }).then(async (response) => {
    if (response.ok) {
      say("Paired. Opening the box…");
      location.replace("/app/");
      return;
    }
    const answer = await response.json().catch(() => null);
    say("Not paired: " + (answer && answer.error ? answer.error.message : "the box answered " + response.status));
  }, (error) => say("Not paired: " + error.message));
}
`;

const CSS = `:root { color-scheme: dark light; font-family: system-ui, sans-serif; }
body { margin: 0; background: #0f172a; color: #e2e8f0; }
main { max-width: 40rem; margin: 0 auto; padding: 1rem; }
h1 { font-size: 1.25rem; }
`;

// A terminal prompt `>_` on a dark square: the same shape as the PNGs below draw.
const ICON_SVG = `<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 100 100">
<rect width="100" height="100" rx="18" fill="#0f172a"/>
<path d="M25 30 L45 50 L25 70" fill="none" stroke="#4ade80" stroke-width="10" stroke-linecap="round" stroke-linejoin="round"/>
<rect x="52" y="64" width="23" height="8" rx="2" fill="#4ade80"/>
</svg>
`;

/** The icon as a PNG of `size` pixels square. */
export async function iconPng(size: number): Promise<Uint8Array<ArrayBuffer>> {
  const background = [0x0f, 0x17, 0x2a];
  const ink = [0x4a, 0xde, 0x80];
  const rows = new Uint8Array(size * (size * 3 + 1));
  const segments: [number, number, number, number][] = [[25, 30, 45, 50], [45, 50, 25, 70]];
  for (let y = 0; y < size; y++) {
    const row = y * (size * 3 + 1);
    rows[row] = 0; // filter: none
    for (let x = 0; x < size; x++) {
      const u = ((x + 0.5) / size) * 100;
      const v = ((y + 0.5) / size) * 100;
      const stroke = segments.some(([x1, y1, x2, y2]) => distanceToSegment(u, v, x1, y1, x2, y2) <= 5);
      const bar = u >= 52 && u <= 75 && v >= 64 && v <= 72;
      const color = stroke || bar ? ink : background;
      rows.set(color, row + 1 + x * 3);
    }
  }
  const header = new Uint8Array(13);
  const view = new DataView(header.buffer);
  view.setUint32(0, size);
  view.setUint32(4, size);
  header.set([8, 2, 0, 0, 0], 8); // 8-bit RGB, no interlace
  return concatBytes([
    new Uint8Array([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]),
    chunk("IHDR", header),
    chunk("IDAT", await zlibDeflate(rows)),
    chunk("IEND", new Uint8Array(0)),
  ]);
}

/** `bytes` in the zlib format PNG wants (the Compression Streams' "deflate"; node:zlib costs ~20 ms to load). */
async function zlibDeflate(bytes: Uint8Array<ArrayBuffer>): Promise<Uint8Array<ArrayBuffer>> {
  const stream = new Blob([bytes]).stream().pipeThrough(new CompressionStream("deflate"));
  return new Uint8Array(await new Response(stream).arrayBuffer());
}

function distanceToSegment(px: number, py: number, x1: number, y1: number, x2: number, y2: number): number {
  const dx = x2 - x1;
  const dy = y2 - y1;
  const t = Math.max(0, Math.min(1, ((px - x1) * dx + (py - y1) * dy) / (dx * dx + dy * dy)));
  return Math.hypot(px - (x1 + t * dx), py - (y1 + t * dy));
}

function chunk(type: string, data: Uint8Array): Uint8Array {
  const out = new Uint8Array(12 + data.length);
  const view = new DataView(out.buffer);
  view.setUint32(0, data.length);
  out.set(new TextEncoder().encode(type), 4);
  out.set(data, 8);
  view.setUint32(8 + data.length, crc32(out.subarray(4, 8 + data.length)));
  return out;
}

const CRC_TABLE = Uint32Array.from({ length: 256 }, (_, n) => {
  let c = n;
  for (let k = 0; k < 8; k++) c = c & 1 ? 0xedb88320 ^ (c >>> 1) : c >>> 1;
  return c >>> 0;
});

function crc32(bytes: Uint8Array): number {
  let c = 0xffffffff;
  for (const byte of bytes) c = CRC_TABLE[(c ^ byte) & 0xff] ^ (c >>> 8);
  return (c ^ 0xffffffff) >>> 0;
}
