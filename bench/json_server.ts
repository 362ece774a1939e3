/**
 * The floor of the box API's round trips: a bare `Deno.serve` on a unix socket answering every request
 * with a small JSON, in a process of its own as the daemon is (so the floor pays the same wake-up of
 * another process). `bench/box_api.ts` (section 2) measures `GET locations` and `GET info` against it,
 * and `bench/scale.ts` `GET /v1/status` (both start it through `floor.ts`).
 *
 * Run: `deno run -A bench/json_server.ts SOCKET [BODY_FILE]`; it prints `ready` once it listens. With
 * `tcp` for SOCKET it listens on a free loopback port instead and prints `ready PORT`; with BODY_FILE it
 * answers that file's text (`bench/scale.ts`: the agent's 200-box status, from a bare server).
 *
 * @module
 */
const BODY = Deno.args[1]
  ? Deno.readTextFileSync(Deno.args[1])
  : JSON.stringify({ name: "box", os: "linux", ok: true });
/** Every request's answer. */
function answer(): Response {
  return new Response(BODY, { headers: { "content-type": "application/json" } });
}
if (Deno.args[0] === "tcp") {
  Deno.serve(
    { hostname: "127.0.0.1", port: 0, onListen: ({ port }) => console.log(`ready ${port}`) },
    answer,
  );
} else Deno.serve({ path: Deno.args[0], onListen: () => console.log("ready") }, answer);
