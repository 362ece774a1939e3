/**
 * Short-lived signed links to a plugin's `fn` page, for the app to open in a browser tab (which cannot
 * send the token, and must never carry it in a URL: URLs land in history, logs and Referer headers).
 * `POST /v1/plugins/{id}/fn-link` (with the token) answers `/app/fn/<where>/<id>/<path>?exp=…&sig=…`:
 * an HMAC-SHA-256 over where, plugin, path and expiry with a key this agent made at start and keeps in
 * memory only. A link is good for GET only, for one plugin and one path, for at most
 * {@linkcode FN_LINK_MS}, and once; its page is served with the panels' sandboxing CSP.
 *
 * @module
 */
import type { Context } from "hono";
import { DockError } from "../client/errors.ts";
import { PLUGIN_FN_LINK } from "../client/schemas_laptop.ts";
import type { PluginFnLink } from "../client/wire.ts";
import type { Clock } from "../core/clock.ts";
import { checkSegment, forwardPath, wildcardSegments } from "../core/forward_path.ts";
import { body, json, param, RouteTable } from "../core/http.ts";
import { panelHeaders } from "../core/static.ts";
import type { Boxes } from "./boxes.ts";
import type { Plugins } from "../plugins/plugins.ts";

/** How long a link is good for. */
export const FN_LINK_MS = 60_000;
/** Where the links point. */
export const FN_LINK_PREFIX = "/app/fn/";

/** What serving a link uses of the agent. */
export interface FnLinkBackend {
  plugins: Pick<Plugins, "fetch" | "isOn">;
  boxes: Pick<Boxes, "has" | "client">;
}

/** Signs and checks the links of one agent process. */
export class FnLinks {
  #key: Promise<CryptoKey>;
  /** Signatures used, until they expire (a link works once). */
  #used = new Map<string, number>();
  #clock: Clock;

  /** `clock`: what links expire by. */
  constructor(options: { clock: Clock }) {
    this.#clock = options.clock;
    this.#key = crypto.subtle.generateKey({ name: "HMAC", hash: "SHA-256" }, false, ["sign", "verify"]);
  }

  /** A link to `path` of plugin `id` on `where` (`laptop` or a box), good for {@linkcode FN_LINK_MS}. */
  async sign(where: string, id: string, path: string): Promise<PluginFnLink> {
    const exp = this.#clock.now() + FN_LINK_MS;
    const sig = await this.#mac(where, id, path, exp);
    // `path` is already a checked, encoded path (`forwardPath`), as the page will rebuild it.
    return {
      url: `${FN_LINK_PREFIX}${encodeURIComponent(where)}/${
        encodeURIComponent(id)
      }${path}?exp=${exp}&sig=${sig}`,
      expires: new Date(exp).toISOString(),
    };
  }

  /** Throws 403 unless `sig` signs these and has not expired or been used; then it is used. */
  async check(where: string, id: string, path: string, exp: number, sig: string): Promise<void> {
    const now = this.#clock.now();
    for (const [used, until] of this.#used) if (until < now) this.#used.delete(used);
    const refused = (why: string) =>
      new DockError("link_refused", `this link ${why}; open it from the app again`, { status: 403 });
    if (!Number.isSafeInteger(exp) || !/^[0-9a-f]{64}$/.test(sig)) throw refused("is not one dock made");
    if (exp < now || exp > now + FN_LINK_MS) throw refused("has expired");
    if (this.#used.has(sig)) throw refused("was used already");
    const expected = await this.#mac(where, id, path, exp);
    if (!timingSafeEqual(expected, sig)) throw refused("is not one dock made");
    this.#used.set(sig, exp);
  }

  async #mac(where: string, id: string, path: string, exp: number): Promise<string> {
    const data = new TextEncoder().encode(JSON.stringify(["fn", where, id, path, exp]));
    const mac = new Uint8Array(await crypto.subtle.sign("HMAC", await this.#key, data));
    return [...mac].map((b) => b.toString(16).padStart(2, "0")).join("");
  }
}

/** `POST /v1/plugins/{id}/fn-link` (body `{ where?, path? }`): a signed link to its `fn` page. */
export function fnLinkRoutes(links: FnLinks, agent: FnLinkBackend): RouteTable {
  return new RouteTable("fn-links").add("POST", "/plugins/:id/fn-link", async (c) => {
    const id = param(c, "id");
    const request = await body(c, PLUGIN_FN_LINK);
    const where = request?.where ?? "laptop";
    // Each segment checked as the page will check it (a `..` would make a link no page can accept).
    const path = forwardPath(
      "/",
      (request?.path ?? "/").split("/").filter(Boolean).map((s) => checkSegment(s)),
    );
    if (where === "laptop" ? !agent.plugins.isOn(id) : !agent.boxes.has(where)) {
      throw new DockError("not_found", `no enabled plugin '${id}' on ${where}`, { status: 404 });
    }
    return json(await links.sign(where, id, path));
  });
}

/** `GET /app/fn/<where>/<id>/<path>?exp=…&sig=…`: the plugin's `fn` answer, once, sandboxed. */
export async function fnLinkPage(links: FnLinks, agent: FnLinkBackend, c: Context): Promise<Response> {
  const [where, id, ...rest] = wildcardSegments(c, { trailingSlash: true, empty: true });
  if (!where || !id) {
    throw new DockError("not_found", "a link's path is /app/fn/{where}/{plugin}/{path}", { status: 404 });
  }
  const path = forwardPath("/", rest);
  const url = new URL(c.req.url);
  await links.check(where, id, path, Number(url.searchParams.get("exp")), url.searchParams.get("sig") ?? "");
  url.searchParams.delete("exp");
  url.searchParams.delete("sig");
  const query = url.search;
  let answer: Response;
  if (where === "laptop") {
    answer = await agent.plugins.fetch(id, path, new Request(`http://laptop${path}${query}`));
  } else {
    answer = await agent.boxes.client(where).transport.fetch(
      `${forwardPath(`/v1/plugins/${encodeURIComponent(id)}/fn/`, rest)}${query}`,
    );
  }
  // The plugin's own headers are left out but its type: the page is a panel's, sandboxed, and never
  // sends the link on (no Referer).
  const headers = new Headers(
    panelHeaders(answer.headers.get("content-type") ?? "text/plain; charset=utf-8"),
  );
  headers.set("referrer-policy", "no-referrer");
  headers.set("cache-control", "no-store");
  return new Response(answer.body, { status: answer.status, headers });
}

function timingSafeEqual(a: string, b: string): boolean {
  if (a.length !== b.length) return false;
  let diff = 0;
  for (let i = 0; i < a.length; i++) diff |= a.charCodeAt(i) ^ b.charCodeAt(i);
  return diff === 0;
}
