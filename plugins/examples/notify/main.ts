/**
 * An example plugin: when an agent waits for you (or finishes), post a notification to a webhook the
 * plugin was granted (`ntfy.sh` by default, or the URL in `NOTIFY_WEBHOOK_URL`, whose host must be in
 * its `net` permission), count it in its store, and announce `notify.sent`. Its `fetch` function answers
 * `GET /fn/status` with the count.
 */
import type { DockEvent, DockPlugin, PluginContext } from "../../../mod.ts";

const DEFAULT_URL = "https://ntfy.sh/dock-notify";

async function notify(event: DockEvent, ctx: PluginContext): Promise<void> {
  const data = event.data ?? {};
  const who = `${data.agent ?? "an agent"} in ${data.session ?? "a session"}`;
  const text = event.type === "agent.waiting" ? `${who} needs you` : `${who} finished`;
  const url = Deno.env.get("NOTIFY_WEBHOOK_URL") || DEFAULT_URL;
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
  await ctx.emit("notify.sent", { session: data.session ?? null, text, sent });
}

export default {
  event: notify,
  async fetch(request, ctx) {
    const path = new URL(request.url).pathname;
    if (path === "/status") return Response.json({ sent: (await ctx.kv.get<number>("sent")) ?? 0 });
    return new Response("not found", { status: 404 });
  },
} satisfies DockPlugin;
