/**
 * An example plugin: when an agent waits for you (or finishes), post a notification to a webhook the
 * plugin was granted (its `webhook` setting, else `NOTIFY_WEBHOOK_URL`, else `ntfy.sh`; the URL's host
 * must be in its `net` permission), count it in its store, and announce `notify.sent`. Its `fetch`
 * function answers `GET /fn/status` with the count.
 */
import { definePlugin, type PluginContext } from "@dock/plugin";

const DEFAULT_URL = "https://ntfy.sh/dock-notify";

/** The text of a notification: who waits or finished, where (identifiers only, never a prompt). */
export function notificationText(
  type: "agent.waiting" | "agent.finished",
  session?: string,
  agent?: string,
): string {
  const who = `${agent ?? "an agent"} in ${session ?? "a session"}`;
  return type === "agent.waiting" ? `${who} needs you` : `${who} finished`;
}

async function send(text: string, session: string | null, ctx: PluginContext): Promise<void> {
  const url = String(ctx.config.webhook ?? "") || Deno.env.get("NOTIFY_WEBHOOK_URL") || DEFAULT_URL;
  const response = await fetch(url, {
    method: "POST",
    headers: { "content-type": "text/plain", title: "dock" },
    body: text,
  });
  await response.body?.cancel();
  if (!response.ok) throw new Error(`the webhook answered ${response.status}`);
  const sent = ((await ctx.kv.get<number>("sent")) ?? 0) + 1;
  await ctx.kv.set("sent", sent);
  ctx.log(`sent: ${text}`);
  await ctx.emit("notify.sent", { session, text, sent });
}

export default definePlugin({
  async event(event, ctx) {
    if (event.type !== "agent.waiting" && event.type !== "agent.finished") return;
    const { session, agent } = event.data;
    await send(notificationText(event.type, session, agent), session ?? null, ctx);
  },
  async fetch(request, ctx) {
    const path = new URL(request.url).pathname;
    if (path === "/status") return Response.json({ sent: (await ctx.kv.get<number>("sent")) ?? 0 });
    return new Response("not found", { status: 404 });
  },
});
