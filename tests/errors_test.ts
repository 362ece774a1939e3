/**
 * Bad input gets a clear JSON error with a fitting 4xx status, never a 5xx: malformed bodies, missing
 * fields, wrong types, unknown paths and methods, and a seeded fuzz of every route that takes a body.
 */
import { join } from "node:path";
import { assert, assertEquals, assertStringIncludes } from "./assert.ts";
import { makeRepo, startBox, type TestBox } from "./harness.ts";

interface Answer {
  status: number;
  body: unknown;
}

// One HTTP client per box, reused: cheaper than one per request.
const clients = new Map<TestBox, Deno.HttpClient>();

function closeRaw(box: TestBox): void {
  clients.get(box)?.close();
  clients.delete(box);
}

async function raw(box: TestBox, method: string, path: string, body?: string): Promise<Answer> {
  let client = clients.get(box);
  if (!client) {
    client = Deno.createHttpClient({ proxy: { transport: "unix", path: box.dirs.socket } });
    clients.set(box, client);
  }
  {
    const response = await fetch(`http://localhost${path}`, {
      method,
      body,
      headers: body === undefined ? {} : { "content-type": "application/json" },
      client,
    });
    const text = await response.text();
    let parsed: unknown = text;
    try {
      parsed = JSON.parse(text);
    } catch { /* not JSON: kept as text so the assertion shows it */ }
    return { status: response.status, body: parsed };
  }
}

function assertError(answer: Answer, status: number | null, context: string): void {
  const error = (answer.body as { error?: { code?: unknown; message?: unknown } })?.error;
  assert(
    typeof error?.code === "string" && typeof error?.message === "string",
    `${context}: not an error body: ${JSON.stringify(answer.body)}`,
  );
  if (status !== null) assertEquals(answer.status, status, `${context}: ${JSON.stringify(answer.body)}`);
  assert(answer.status >= 400 && answer.status < 500, `${context}: status ${answer.status}`);
}

Deno.test("malformed bodies, missing fields and wrong types are 400s naming the field", async () => {
  await using box = await startBox();
  const repo = await makeRepo(join(box.dirs.home, "work"));
  await box.client.addLocation({ name: "app", path: repo });

  const notJson = await raw(box, "POST", "/v1/locations", "{ nope");
  assertError(notJson, 400, "not JSON");
  assertEquals((notJson.body as { error: { code: string } }).error.code, "invalid_json");

  const missing = await raw(box, "POST", "/v1/locations", JSON.stringify({ path: repo }));
  assertError(missing, 400, "missing name");
  assertStringIncludes(JSON.stringify(missing.body), "name");

  const wrongType = await raw(
    box,
    "POST",
    "/v1/locations/app/worktrees",
    JSON.stringify({ name: "x", pr: "seven" }),
  );
  assertError(wrongType, 400, "pr as a string");
  assertStringIncludes((wrongType.body as { error: { message: string } }).error.message, "pr:");

  const relative = await raw(
    box,
    "POST",
    "/v1/locations/new",
    JSON.stringify({ name: "rel", path: "some/where" }),
  );
  assertError(relative, 400, "relative path");

  const nested = await raw(
    box,
    "PUT",
    "/v1/locations/app/config",
    JSON.stringify({ local: { services: [{ name: "Web", run: "x" }] } }),
  );
  assertError(nested, 400, "bad service name");
  assertStringIncludes(
    (nested.body as { error: { message: string } }).error.message,
    "local.services[0].name",
  );

  assertError(await raw(box, "GET", "/v1/no/such/thing"), 404, "unknown path");
  assertError(await raw(box, "GET", "/v2/locations"), 404, "unknown version");
  assertError(await raw(box, "PATCH", "/v1/locations"), 405, "wrong method");
  assertError(await raw(box, "GET", "/v1/locations/nope"), 404, "unknown location");
  assertError(await raw(box, "GET", "/v1/locations/app/worktrees/nope"), 404, "unknown worktree");
  closeRaw(box);
});

/** A small seeded generator (mulberry32), so a failure can be replayed. */
function random(seed: number): () => number {
  return () => {
    seed |= 0;
    seed = (seed + 0x6d2b79f5) | 0;
    let t = Math.imul(seed ^ (seed >>> 15), 1 | seed);
    t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t;
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

function fuzzValue(next: () => number, depth = 0): unknown {
  const pick = Math.floor(next() * (depth > 2 ? 7 : 9));
  const strings = [
    "",
    "x",
    "../../etc",
    "a/b",
    ".",
    "~",
    "/",
    "\u0000",
    "é🙂",
    "x".repeat(5000),
    "-1",
    "true",
    "null",
  ];
  switch (pick) {
    case 0:
      return null;
    case 1:
      return next() < 0.5;
    case 2:
      return [0, -1, 1.5, 1e308, -0, 2 ** 53, NaN][Math.floor(next() * 7)];
    case 3:
    case 4:
      return strings[Math.floor(next() * strings.length)];
    case 5:
      return Math.floor(next() * 100000);
    case 6:
      return {};
    case 7:
      return Array.from({ length: Math.floor(next() * 4) }, () => fuzzValue(next, depth + 1));
    default:
      return Object.fromEntries(
        Array.from({ length: Math.floor(next() * 4) }, (_, i) => [`k${i}`, fuzzValue(next, depth + 1)]),
      );
  }
}

Deno.test("fuzzed request bodies never get a 5xx", async () => {
  await using box = await startBox();
  const repo = await makeRepo(join(box.dirs.home, "work"));
  await box.client.addLocation({ name: "app", path: repo });
  await box.client.createWorktree("app", { name: "w" });
  const safePath = join(box.dirs.home, "fuzz");
  // Valid bodies to mutate. Commands are only ever replaced by non-strings, so no fuzzed text runs.
  const routes: { method: string; path: string; valid: Record<string, unknown>; noStrings?: string[] }[] = [
    { method: "POST", path: "/v1/locations", valid: { name: "fz", path: repo } },
    { method: "POST", path: "/v1/locations/new", valid: { name: "fz", path: safePath } },
    { method: "POST", path: "/v1/locations/app/worktrees", valid: { name: "fz", branch: "b", base: "main" } },
    {
      method: "PUT",
      path: "/v1/locations/app/scripts",
      valid: { setup: "true", archive: "true" },
      noStrings: ["setup", "archive"],
    },
    { method: "PUT", path: "/v1/locations/app/config", valid: { local: { ports: 2, env: { A: "b" } } } },
    {
      method: "POST",
      path: "/v1/exec",
      valid: { location: "app", command: "true", timeout: "5s" },
      noStrings: ["command"],
    },
    { method: "POST", path: "/v1/events", valid: { type: "fuzz.event", data: { a: 1 } } },
    { method: "PUT", path: "/v1/env", valid: { env: { A: "b" } } },
    { method: "POST", path: "/v1/secrets/test", valid: { ref: "env://HOME" } },
    { method: "POST", path: "/v1/locations/app/worktrees/w/sync", valid: { mode: "rebase" } },
    { method: "PUT", path: "/v1/guard", valid: { enabled: false, memory_percent: 90, sustain: "30s" } },
    {
      method: "PUT",
      path: "/v1/hooks",
      valid: { hooks: [{ on: "fuzz.event", run: "true" }] },
      noStrings: ["hooks"],
    },
    {
      method: "POST",
      path: "/v1/skills/install",
      valid: { skills: ["dock"], agent: "claude", target: "user" },
    },
    {
      method: "POST",
      path: "/v1/sessions",
      valid: { location: "app/w", command: "true", name: "fz" },
      noStrings: ["command"],
    },
    { method: "POST", path: "/v1/sessions/none/send", valid: { text: "x", enter: false } },
  ];
  const next = random(20261122);
  let requests = 0;
  for (const route of routes) {
    for (let round = 0; round < 30; round++) {
      let body: string;
      const shape = next();
      if (shape < 0.15) body = JSON.stringify(fuzzValue(next));
      else if (shape < 0.25) body = ["{", "[1,", "nul", '{"a":}', "\u0000", ""][Math.floor(next() * 6)];
      else if (shape < 0.3) {
        // Deep nesting under a valid key (10,000 levels once gave a 500).
        const key = Object.keys(route.valid)[0];
        const depth = [70, 1000, 10_000][Math.floor(next() * 3)];
        body = `{"${key}":${"[".repeat(depth)}${"]".repeat(depth)}}`;
      } else {
        const mutated: Record<string, unknown> = structuredClone(route.valid);
        for (const key of Object.keys(mutated)) {
          if (next() < 0.5) continue;
          let value = fuzzValue(next);
          while (route.noStrings?.includes(key) && typeof value === "string") value = fuzzValue(next);
          mutated[key] = value;
        }
        if (next() < 0.2) mutated[`extra${round}`] = fuzzValue(next);
        body = JSON.stringify(mutated);
      }
      const answer = await raw(box, route.method, route.path, body);
      requests++;
      assert(
        answer.status < 500,
        `${route.method} ${route.path} ${body.slice(0, 300)} → ${answer.status} ${
          JSON.stringify(answer.body).slice(0, 300)
        }`,
      );
      if (answer.status >= 400) {
        assertError(answer, null, `${route.method} ${route.path} ${body.slice(0, 200)}`);
      }
    }
  }
  assertEquals(requests, routes.length * 30);
  // The daemon is still healthy afterwards.
  assertEquals((await box.client.info()).os, Deno.build.os);
  closeRaw(box);
});
