/**
 * An example plugin with a `fn` and a `ui` panel: `GET /fn/` is an HTML page of the box's sessions and
 * their agents' states, `GET /fn/sessions` the same as JSON; `ui/panel.html` shows them inside the app
 * (it asks through the app, which allows what the plugin's scopes allow: `sessions:read`).
 */
import { definePlugin, type PluginContext, type Session } from "@dock/plugin";

/** One row of the dashboard: a session and what its agent does. */
export interface Row {
  session: string;
  where: string;
  agent: string | null;
  state: string;
}

/** The rows, waiting sessions first (they need the person), then by name. */
export async function rows(ctx: PluginContext): Promise<Row[]> {
  const sessions: Session[] = await ctx.api("GET", "sessions");
  const rank = (s: Session) => s.agent_state === "waiting" ? 0 : 1;
  return sessions
    .filter((s) => !s.exited)
    .sort((a, b) => rank(a) - rank(b) || a.name.localeCompare(b.name))
    .map((s) => ({
      session: s.name,
      where: `${s.location}/${s.worktree}`,
      agent: s.agent,
      state: s.agent_state,
    }));
}

const escape = (text: string) =>
  text.replace(
    /[&<>"']/g,
    (c) => ({ "&": "&amp;", "<": "&lt;", ">": "&gt;", '"': "&quot;", "'": "&#39;" })[c]!,
  );

/** The dashboard's page (every value escaped: session names are the caller's text). */
export function page(list: Row[]): string {
  const body = list.length
    ? list.map((r) =>
      `<tr><td>${escape(r.session)}</td><td>${escape(r.where)}</td><td>${escape(r.agent ?? "")}</td>` +
      `<td class="${escape(r.state)}">${escape(r.state)}</td></tr>`
    ).join("\n")
    : `<tr><td colspan="4">no sessions</td></tr>`;
  return `<!doctype html>
<meta charset="utf-8">
<title>dock sessions</title>
<table>
<tr><th>Session</th><th>Where</th><th>Agent</th><th>State</th></tr>
${body}
</table>
`;
}

export default definePlugin({
  async fetch(request, ctx) {
    const path = new URL(request.url).pathname;
    if (request.method !== "GET") return new Response("method not allowed", { status: 405 });
    if (path === "/sessions") return Response.json(await rows(ctx));
    if (path === "/" || path === "") {
      return new Response(page(await rows(ctx)), {
        headers: {
          "content-type": "text/html; charset=utf-8",
          "content-security-policy": "default-src 'none'; style-src 'unsafe-inline'",
        },
      });
    }
    return new Response("not found", { status: 404 });
  },
});
