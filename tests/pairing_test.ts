/**
 * Whole-system tests of pairing: two real `dockd` listening on TLS (loopback, a port the system picks)
 * and a real agent; links made by `dockd pair`, paired through the agent's API; the relay over TLS; a
 * used code, a tampered fingerprint and repeated bad codes refused; the TLS listener's gate;
 * revocation, which ends the laptop's open streams (SSE through the agent, attach WebSockets); and
 * forgetting a box, which unpairs the laptop on the box too (or says the box could not be told).
 */
import { join } from "node:path";
import { DatabaseSync } from "node:sqlite";
import { assert, assertEquals, assertMatch, assertRejects, assertStringIncludes } from "./assert.ts";
import { AgentClient } from "../client/agent.ts";
import { DockError } from "../client/errors.ts";
import { connectTlsWebSocket } from "../core/ws_client.ts";
import type { DockEvent } from "../client/wire.ts";
import { exists } from "../core/files.ts";
import { parseLink } from "../core/pairing_link.ts";
import {
  type BoxDirs,
  laptopEnv,
  makeDirs,
  makeRepo,
  runCli,
  startAgent,
  startBox,
  type TestBox,
} from "./harness.ts";
import { Changes, until } from "./wait.ts";

const LISTEN = { DOCK_LISTEN: "127.0.0.1:0" };

/** Starts a box named `name` that listens for laptops on a loopback port of its own. */
async function namedBox(name: string, env: Record<string, string> = LISTEN): Promise<TestBox> {
  const dirs = await makeDirs();
  await Deno.mkdir(dirs.dockHome, { recursive: true });
  await Deno.writeTextFile(join(dirs.dockHome, "box.json"), JSON.stringify({ name }));
  return await startBox({ dirs, env });
}

/** `dockd pair --host 127.0.0.1`: the link it prints. */
async function pairLink(box: TestBox): Promise<string> {
  const out = await box.cli(["pair", "--host", "127.0.0.1"]);
  assertEquals(out.code, 0, out.stderr);
  const link = /dock:\/\/[^\s']+/.exec(out.stdout)?.[0];
  assert(link, `no link in: ${out.stdout}`);
  return link;
}

/** The box's CA, as a laptop that pinned it has it. */
function caOf(box: TestBox): Promise<string> {
  return Deno.readTextFile(join(box.dirs.state, "box", "tls", "ca.pem"));
}

/** A request straight to the box's TLS listener (trusting its CA), answering status and JSON body. */
async function direct(
  box: TestBox,
  port: number,
  path: string,
  init: { method?: string; body?: unknown; credential?: string } = {},
): Promise<{ status: number; body: Record<string, unknown> }> {
  const client = Deno.createHttpClient({ caCerts: [await caOf(box)], poolMaxIdlePerHost: 0 });
  try {
    const response = await fetch(`https://127.0.0.1:${port}${path}`, {
      method: init.method ?? (init.body === undefined ? "GET" : "POST"),
      headers: init.credential ? { authorization: `Bearer ${init.credential}` } : {},
      body: init.body === undefined ? undefined : JSON.stringify(init.body),
      client,
    } as RequestInit);
    return { status: response.status, body: await response.json() };
  } finally {
    client.close();
  }
}

/** Runs `dock ARGS` on the laptop, against the agent on `port`. */
function dock(dirs: BoxDirs, port: number, args: string[]) {
  return runCli("dock", args, { env: laptopEnv(dirs, { port }), cwd: dirs.home });
}

/** The credential the agent keeps for `box` (read from its database, as only the agent ever does). */
function credentialOf(laptop: BoxDirs, box: string): string {
  const db = new DatabaseSync(join(laptop.state, "client", "agent.db"), { readOnly: true, timeout: 5000 });
  try {
    const row = db.prepare("SELECT credential FROM boxes WHERE name = ?").get(box) as { credential: string };
    return row.credential;
  } finally {
    db.close();
  }
}

async function refusedWith(promise: Promise<unknown>, status: number, code: string): Promise<DockError> {
  const error = await assertRejects(() => promise, DockError) as DockError;
  assertEquals([error.status as number, error.code], [status, code], error.message);
  return error;
}

Deno.test("pairing by link through the agent: the relay over TLS, used codes, tampered fingerprints, revocation, rate limits", async () => {
  await using alpha = await namedBox("alpha");
  await using beta = await namedBox("beta");
  const laptop = await makeDirs();
  await using agent = await startAgent(laptop, { env: { DOCK_AGENT_HEALTH_MS: "200" } });
  const client = new AgentClient({ url: agent.url, token: agent.token, origin: "test" });
  try {
    // Pair both boxes: alpha under its own name, beta under one chosen here.
    const alphaLink = await pairLink(alpha);
    assertMatch(alphaLink, /^dock:\/\/127\.0\.0\.1:\d+\?code=[a-z2-7]{32}&fp=[0-9a-f]{64}$/);
    const paired = await client.pairBox(alphaLink);
    assertEquals([paired.name, paired.kind, paired.online], ["alpha", "tls", true]);
    assertEquals(paired.address, `https://127.0.0.1:${parseLink(alphaLink).port}`);
    assert(!JSON.stringify(paired).includes("BEGIN CERTIFICATE"), "the CA stays inside the agent");
    const betaLink = await pairLink(beta);
    assertEquals((await client.pairBox(betaLink, "second")).name, "second");

    // The relay reaches both over TLS.
    await makeRepo(join(beta.dirs.home, "work"));
    await client.box("second").addLocation({ name: "app", path: join(beta.dirs.home, "work", "app") });
    assertEquals(await client.box("alpha").locations(), []);
    assertEquals((await client.box("second").locations()).map((l) => l.name), ["app"]);
    assertEquals((await beta.client.locations()).map((l) => l.name), ["app"], "it reached the box");
    // The merged event stream follows TLS boxes too, each event carrying the box's name here.
    const fromBeta = (async () => {
      for await (const event of client.events({ after: 0, signal: AbortSignal.timeout(10_000) })) {
        if (event.type === "build.finished") return event;
      }
    })();
    await beta.client.emit({ type: "build.finished", data: { ok: true } });
    assertEquals((await fromBeta)?.box, "second");
    const status = await client.status();
    assertEquals(status.boxes.map((b) => [b.name, b.kind, b.online]), [["alpha", "tls", true], [
      "second",
      "tls",
      true,
    ]]);

    // The same box twice is refused before its code is spent; once forgotten, the used link is refused by the box.
    await refusedWith(client.pairBox(await pairLink(beta), "again"), 409, "exists");
    const forgottenCredential = credentialOf(laptop, "second");
    const [forgottenId] = forgottenCredential.split(".");
    assertEquals(
      JSON.parse((await beta.cli(["laptops", "--json"])).stdout).map((l: { id: string }) => l.id),
      [forgottenId],
    );
    const forgotten = await client.removeBox("second");
    assertEquals([forgotten.name, forgotten.revoked, forgotten.laptop], ["second", true, forgottenId]);
    // Forgetting unpaired the laptop on the box: its credential is refused, and the box lists no laptop.
    const betaPort = parseLink(betaLink).port;
    const stale = await direct(beta, betaPort, "/v1/info", { credential: forgottenCredential });
    assertEquals([stale.status, (stale.body.error as { code: string }).code], [401, "unauthorized"]);
    assertEquals(JSON.parse((await beta.cli(["laptops", "--json"])).stdout), []);
    await refusedWith(client.pairBox(betaLink, "second"), 403, "pairing_refused");

    // A tampered fingerprint: the agent refuses, and the box never saw the code (it still works).
    const fresh = await pairLink(beta);
    const fp = parseLink(fresh).fp;
    const tampered = fresh.replace(fp, fp.replace(/^./, fp[0] === "0" ? "1" : "0"));
    const mismatch = await refusedWith(client.pairBox(tampered, "second"), 403, "fingerprint_mismatch");
    assertStringIncludes(mismatch.message, "does not present the certificate authority");
    const cli = await dock(laptop, agent.port, ["pair", fresh, "--name", "second", "--json"]);
    assertEquals(cli.code, 0, cli.stderr);
    assertEquals([JSON.parse(cli.stdout).name, JSON.parse(cli.stdout).online], ["second", true]);
    const onBeta = JSON.parse((await beta.cli(["laptops", "--json"])).stdout);
    assertEquals(onBeta.length, 1, "the forgotten pairing is gone, the tampered link never reached the box");

    // Revoking the laptop on alpha ends its open event stream through the agent, and the next request is 401.
    const seen: DockEvent[] = [];
    const heard = new Changes();
    const stream = new AbortController();
    const reading = (async () => {
      for await (const event of client.box("alpha").events({ after: 0, signal: stream.signal })) {
        seen.push(event);
        heard.changed();
      }
    })().then(() => "ended", () => "ended");
    await alpha.client.emit({ type: "build.started", data: { n: 1 } });
    await until(() => seen.some((e) => e.type === "build.started"), { wake: heard });
    const [mine] = JSON.parse((await alpha.cli(["laptops", "--json"])).stdout);
    assertEquals(mine.name, Deno.hostname());
    const revoked = await alpha.cli(["revoke", mine.id]);
    assertEquals(revoked.code, 0, revoked.stderr);
    const timeout = new Promise((resolve) => setTimeout(() => resolve("still open"), 5000));
    assertEquals(await Promise.race([reading, timeout]), "ended");
    stream.abort();
    await refusedWith(client.box("alpha").locations(), 401, "unauthorized");
    assertEquals(JSON.parse((await alpha.cli(["laptops", "--json"])).stdout), []);
    await until(async () => !(await client.status()).boxes.find((b) => b.name === "alpha")?.online, {
      on: client,
    });

    // Repeated bad codes from one address end in 429 (alpha is forgotten first: a known box is refused sooner).
    // Forgetting a box that revoked this laptop already counts as unpaired: the box refuses the credential.
    assertEquals((await client.removeBox("alpha")).revoked, true);
    const alphaFp = parseLink(alphaLink).fp;
    const bad = `dock://127.0.0.1:${parseLink(alphaLink).port}?code=${"a".repeat(32)}&fp=${alphaFp}`;
    const statuses: number[] = [];
    for (let i = 0; i < 8 && !statuses.includes(429); i++) {
      const error = await assertRejects(() => client.pairBox(bad, `guess-${i}`), DockError) as DockError;
      statuses.push(error.status);
    }
    assertEquals(statuses.at(-1), 429, `statuses: ${statuses}`);
    assert(statuses.slice(0, -1).every((s) => s === 403), `statuses: ${statuses}`);
    assert(statuses.length <= 6, `statuses: ${statuses}`);

    // The relay over TLS says 502 when the box dies with the request out, 503 when nothing listens.
    const second = client.box("second");
    await second.locations(); // a pooled connection is open now
    const running = join(beta.dirs.home, "work", "app", ".exec-running");
    const pending = second.exec({ location: "app", command: `touch ${running}; sleep 5` }).catch((error) =>
      error
    );
    await until(() => exists(running), { watch: running }); // the command runs: the request is with the box
    await beta.stop({ kill: true });
    assertEquals([(await pending as DockError).status as number, (await pending as DockError).code], [
      502,
      "box_connection_failed",
    ]);
    await refusedWith(second.locations(), 503, "box_unreachable");

    // Forgetting a box that is down works all the same, and says the box still lists this laptop.
    const [secondId] = credentialOf(laptop, "second").split(".");
    const offline = await dock(laptop, agent.port, ["forget", "second"]);
    assertEquals(offline.code, 0, offline.stderr);
    assertStringIncludes(offline.stdout, "forgot second; the box could not be told");
    assertStringIncludes(offline.stdout, `dockd revoke ${secondId}`);
    assertEquals((await client.status()).boxes, []);
  } finally {
    client.close();
    await agent.stop();
    await Deno.remove(laptop.root, { recursive: true }).catch(() => {});
  }
});

Deno.test("the TLS listener: 401 without a credential, socket-only routes refused, attach closed on revoke", async () => {
  await using box = await namedBox("gamma");
  const link = parseLink(await pairLink(box));
  // No credential, or a wrong one: 401 on every route, including ones that do not exist.
  for (const path of ["/v1/locations", "/v1/info", "/v1/laptops", "/v1/no/such/route"]) {
    const none = await direct(box, link.port, path);
    assertEquals([none.status, (none.body.error as { code: string }).code], [401, "unauthorized"], path);
  }
  const wrong = await direct(box, link.port, "/v1/info", { credential: `abcdef012345.${"x".repeat(43)}` });
  assertEquals(wrong.status, 401);

  // Redeeming straight on the listener: the credential opens the API, but not the socket-only routes.
  const redeemed = await direct(box, link.port, "/v1/pair", { body: { code: link.code, name: "direct" } });
  assertEquals(redeemed.status, 201, JSON.stringify(redeemed.body));
  assertEquals(redeemed.body.box, "gamma");
  const credential = redeemed.body.credential as string;
  assertEquals((await direct(box, link.port, "/v1/info", { credential })).body.name, "gamma");
  for (
    const [method, path] of [["POST", "/v1/pair/code"], ["GET", "/v1/laptops"], [
      "DELETE",
      `/v1/laptops/${redeemed.body.id}`,
    ]]
  ) {
    const answer = await direct(box, link.port, path, { method, credential });
    assertEquals([answer.status, (answer.body.error as { code: string }).code], [403, "socket_only"], path);
  }
  const again = await direct(box, link.port, "/v1/pair", { body: { code: link.code, name: "twice" } });
  assertEquals([again.status, (again.body.error as { code: string }).code], [403, "pairing_refused"]);

  // dockd pair refuses a host the certificate does not cover.
  const foreign = await box.cli(["pair", "--host", "box.example.invalid"]);
  assertEquals(foreign.code, 2);
  assertStringIncludes(foreign.stderr, "certificate covers only");

  // An attach over TLS works, and revoking the laptop closes it.
  await makeRepo(join(box.dirs.home, "work"));
  await box.client.addLocation({ name: "app", path: join(box.dirs.home, "work", "app") });
  await box.client.createSession({ location: "app", command: "sh", name: "term" });
  const ca = await caOf(box);
  const ws = await connectTlsWebSocket({
    hostname: "127.0.0.1",
    port: link.port,
    caCerts: [ca],
    path: "/v1/sessions/term/attach?cols=80&rows=24",
    headers: { authorization: `Bearer ${credential}` },
  });
  await ws.sendBinary(new TextEncoder().encode("echo over-tls-$((6*7))\r"));
  await ws.readUntil((text) => text.includes("over-tls-42"));
  const missing = await assertRejects(() =>
    connectTlsWebSocket({
      hostname: "127.0.0.1",
      port: link.port,
      caCerts: [ca],
      path: "/v1/sessions/nope/attach",
      headers: { authorization: `Bearer ${credential}` },
    })
  );
  assertStringIncludes(missing.message, "404", "the box's own answer comes through");
  const revoked = await box.cli(["revoke", redeemed.body.id as string]);
  assertEquals(revoked.code, 0, revoked.stderr);
  const closed = await assertRejects(() => ws.readUntil(() => false, 5000));
  assertStringIncludes(closed.message, "closed (1008)");
  assertEquals((await box.client.session("term")).exited, false, "the session runs on");
});

Deno.test("dockd pair says why when the box does not listen for laptops", async () => {
  await using box = await namedBox("delta", { DOCK_LISTEN: "off" });
  const out = await box.cli(["pair"]);
  assertEquals(out.code, 1);
  assertStringIncludes(out.stderr, "does not listen for laptops (DOCK_LISTEN=off)");
});
