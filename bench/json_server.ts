/**
 * The floor of the box API's round trips: a bare `Deno.serve` on a unix socket answering every request
 * with a small JSON, in a process of its own as the daemon is (so the floor pays the same wake-up of
 * another process). `bench/box_api.ts` (section 2) measures `GET locations` and `GET info` against it,
 * and `bench/scale.ts` `GET /v1/status` (both start it through `floor.ts`).
 *
 * Run: `deno run -A bench/json_server.ts SOCKET`; it prints `ready` once it listens.
 *
 * @module
 */
const BODY = JSON.stringify({ name: "box", os: "linux", ok: true });
Deno.serve(
  { path: Deno.args[0], onListen: () => console.log("ready") },
  () => new Response(BODY, { headers: { "content-type": "application/json" } }),
);
