/**
 * Bad input gets a clear JSON error with a fitting 4xx status, never a 5xx: malformed bodies, missing
 * fields, wrong types, unknown paths and methods, and a seeded fuzz of every route that takes a body
 * (`fuzz.ts`; the laptop's routes in `laptop_fuzz_test.ts`).
 */
import { join } from "node:path";
import { assert, assertEquals, assertStringIncludes } from "./assert.ts";
import { boxBodyRoutes, fuzzBody, random, reportFuzz } from "./fuzz.ts";
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

Deno.test("fuzzed request bodies never get a 5xx", async () => {
  await using box = await startBox();
  const repo = await makeRepo(join(box.dirs.home, "work"));
  await box.client.addLocation({ name: "app", path: repo });
  await box.client.createWorktree("app", { name: "w" });
  const safePath = join(box.dirs.home, "fuzz");
  // Valid bodies to mutate. Commands are only ever replaced by non-strings, so no fuzzed text runs.
  const routes = boxBodyRoutes({ repo, safePath });
  const next = random(20261122);
  let requests = 0;
  let errors5xx = 0;
  for (const route of routes) {
    for (let round = 0; round < 30; round++) {
      const body = fuzzBody(next, route.valid, { noStrings: route.noStrings, round });
      const answer = await raw(box, route.method, route.path, body);
      requests++;
      if (answer.status >= 500) {
        errors5xx++;
        await reportFuzz("box routes", requests, errors5xx);
      }
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
  await reportFuzz("box routes", requests, errors5xx);
  // The daemon is still healthy afterwards.
  assertEquals((await box.client.info()).os, Deno.build.os);
  closeRaw(box);
});

Deno.test("fuzzed config files (.dock/config.json, env.json) never give a 5xx; exec and config answer", async () => {
  await using box = await startBox();
  const repo = await makeRepo(join(box.dirs.home, "work"));
  await box.client.addLocation({ name: "app", path: repo });
  await box.client.createWorktree("app", { name: "w" });
  await Deno.mkdir(box.dirs.dockHome, { recursive: true });
  const files = [
    {
      path: join(repo, ".dock", "config.json"),
      valid: { ports: 2, env: { A: "b", C: "$A" }, services: [{ name: "web", run: "true" }] },
    },
    { path: join(box.dirs.dockHome, "env.json"), valid: { env: { A: "b", B: "env://HOME" } } },
  ];
  await Deno.mkdir(join(repo, ".dock"), { recursive: true });
  const next = random(20261126);
  let requests = 0;
  let errors5xx = 0;
  for (let round = 0; round < 40; round++) {
    // Each file in turn: hostile values (NUL included), broken JSON and deep nesting, in the file or
    // inside its `env` (where a value goes on to every process).
    for (const file of files) {
      const { env, ...rest } = file.valid;
      const text = next() < 0.5 ? fuzzBody(next, file.valid, { round }) : JSON.stringify(rest).replace(
        /}$/,
        `${Object.keys(rest).length ? "," : ""}"env":${fuzzBody(next, env, { round })}}`,
      );
      await Deno.writeTextFile(file.path, text);
    }
    const asks: [string, string, string | undefined][] = [
      ["POST", "/v1/exec", JSON.stringify({ location: "app/w", command: "true" })],
      ["GET", "/v1/locations/app/config", undefined],
      ["GET", "/v1/env", undefined],
      ["GET", "/v1/locations/app/worktrees/w", undefined],
    ];
    for (const [method, path, body] of asks) {
      const answer = await raw(box, method, path, body);
      requests++;
      if (answer.status >= 500) errors5xx++;
      assert(
        answer.status < 500,
        `${method} ${path} with ${
          files.map((f) => Deno.readTextFileSync(f.path).slice(0, 200)).join(" / ")
        } → ${answer.status} ${JSON.stringify(answer.body).slice(0, 300)}`,
      );
    }
  }
  await reportFuzz("config files", requests, errors5xx);
  assertEquals((await box.client.info()).os, Deno.build.os);
  closeRaw(box);
});
