/**
 * The floor of any relay written with Deno's HTTP stack: a loopback HTTP server that forwards
 * `/…/api/PATH` to `/v1/PATH` on a box's socket over a fresh connection (as the agent's relay does) and
 * streams the answer back, with nothing else: no gate, no headers copied, no abort on disconnect.
 * `bench/agent.ts` measures it beside the agent's relay, so the table shows how much of the relay's
 * overhead is the extra hop itself and how much is the agent's own work.
 *
 * Run: `deno run -A bench/bare_proxy.ts SOCKET PORT`.
 *
 * @module
 */
const [socket, port] = Deno.args;
const client = Deno.createHttpClient({ proxy: { transport: "unix", path: socket }, poolMaxIdlePerHost: 0 });
Deno.serve({ hostname: "127.0.0.1", port: Number(port), onListen() {} }, async (request) => {
  const url = request.url;
  const upstream = await fetch(`http://localhost/v1/${url.slice(url.indexOf("/api/") + 5)}`, { client });
  return new Response(upstream.body, {
    status: upstream.status,
    headers: { "content-type": upstream.headers.get("content-type") ?? "application/json" },
  });
});
