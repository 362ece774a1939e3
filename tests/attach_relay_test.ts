/**
 * The terminal relay through the laptop agent: a real `dockd` and a real `dock agent`, the local box
 * added through the agent, a shell session, and the platform WebSocket as the app would use it
 * (`?token=`). Also the relay against a fake box over TLS (a CA made by `ensureCertificates`): frames
 * both ways, close codes passed through, the box's refusals answered as HTTP errors, and backpressure.
 */
import { join } from "node:path";
import { assert, assertEquals, assertStringIncludes } from "./assert.ts";
import { AgentClient } from "../client/agent.ts";
import { DockError } from "../client/errors.ts";
import { attachRelay, type AttachRelayOptions, type BoxTarget } from "../agent/attach_relay.ts";
import { ensureCertificates } from "../daemon/tls.ts";
import { makeDirs, makeRepo, startAgent, startBox } from "./harness.ts";
import { clientChanges } from "./tmux_watch.ts";
import { Changes, until } from "./wait.ts";

const encoder = new TextEncoder();

/** The platform WebSocket as the app uses it, collecting terminal output as text. */
class Term {
  readonly ws: WebSocket;
  readonly opened: Promise<void>;
  readonly closed: Promise<CloseEvent>;
  text = "";
  /** Dispatches `change` as `text` grows (a wait's `wake`). */
  readonly changes = new Changes();
  #decoder = new TextDecoder();

  constructor(url: string) {
    this.ws = new WebSocket(url);
    this.ws.binaryType = "arraybuffer";
    this.ws.onmessage = (event) => {
      assert(event.data instanceof ArrayBuffer, "terminal output arrives as binary frames");
      this.text += this.#decoder.decode(new Uint8Array(event.data), { stream: true });
      this.changes.changed();
    };
    this.closed = new Promise((resolve) => this.ws.addEventListener("close", (event) => resolve(event)));
    this.opened = new Promise((resolve, reject) => {
      this.ws.addEventListener("open", () => resolve());
      this.ws.addEventListener(
        "close",
        (event) => reject(new Error(`closed before opening (${event.code})`)),
      );
    });
    // A refused upgrade rejects `opened`; nobody else needs to hear about it.
    this.opened.catch(() => {});
  }

  static async open(url: string): Promise<Term> {
    const term = new Term(url);
    await term.opened;
    return term;
  }

  type(keys: string): void {
    this.ws.send(encoder.encode(keys));
  }

  async waitFor(needle: string, timeoutMs = 10_000): Promise<void> {
    await until(() => this.text.includes(needle), { wake: this.changes, timeoutMs: timeoutMs }).catch(() => {
      throw new Error(`no ${JSON.stringify(needle)} in ${JSON.stringify(this.text.slice(-500))}`);
    });
  }

  async close(code?: number, reason?: string): Promise<CloseEvent> {
    this.ws.close(code, reason);
    return await this.closed;
  }
}

/** An upgrade request written by hand, to see the HTTP answer a refused upgrade gets. */
async function rawUpgrade(port: number, path: string): Promise<{ status: number; body: string }> {
  const conn = await Deno.connect({ hostname: "127.0.0.1", port });
  try {
    await conn.write(encoder.encode(
      `GET ${path} HTTP/1.1\r\nHost: 127.0.0.1:${port}\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n` +
        "Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 13\r\n\r\n",
    ));
    let text = "";
    const buffer = new Uint8Array(16 * 1024);
    const decoder = new TextDecoder();
    while (true) {
      const n = await conn.read(buffer);
      if (n === null) break;
      text += decoder.decode(buffer.subarray(0, n), { stream: true });
      const end = text.indexOf("\r\n\r\n");
      const length = /content-length: (\d+)/i.exec(text)?.[1];
      if (end >= 0 && length !== undefined && text.length >= end + 4 + Number(length)) break;
    }
    return { status: Number(text.split(" ")[1]), body: text.slice(text.indexOf("\r\n\r\n") + 4) };
  } finally {
    conn.close();
  }
}

async function tmux(socket: string, ...args: string[]): Promise<string> {
  const out = await new Deno.Command("tmux", { args: ["-S", socket, ...args], stderr: "null" }).output();
  return new TextDecoder().decode(out.stdout).trim();
}

async function clientCount(socket: string, session: string): Promise<number> {
  const out = await tmux(socket, "list-clients", "-t", `=${session}`, "-F", "#{client_pid}");
  return out === "" ? 0 : out.split("\n").length;
}

Deno.test("attach through the agent: types, resizes, reattaches with a redraw, and refuses what it must", async () => {
  const dirs = await makeDirs();
  // Disposed in reverse: the agent first, then the box (its tmux server and directories too).
  await using box = await startBox({ dirs });
  await using agent = await startAgent(dirs);
  const client = new AgentClient({ url: agent.url, token: agent.token, origin: "test" });
  const tmuxSocket = join(dirs.state, "box", "tmux.sock");
  const base = `ws://127.0.0.1:${agent.port}/v1/boxes/local/sessions`;
  try {
    await client.addLocal();
    const local = client.box("local");
    await local.addLocation({ name: "app", path: await makeRepo(join(dirs.home, "work")) });
    await local.createSession({ location: "app", command: "sh", name: "term" });
    // Each tmux client attached, detached or resized, and each window size change, adds a line here.
    const changes = await clientChanges(tmuxSocket, dirs.root);

    const term = await Term.open(`${base}/term/attach?cols=90&rows=30&token=${agent.token}`);
    await until(async () => await clientCount(tmuxSocket, "term") === 1, { watch: changes });
    const size = () =>
      tmux(tmuxSocket, "display-message", "-p", "-t", "=term:", "#{window_width}x#{window_height}");
    await until(async () => await size() === "90x30", { watch: changes });
    term.type("echo relayed-$((6*7))\r");
    await term.waitFor("relayed-42");
    // Text frames are the resize control, passed on to the box as they are.
    term.ws.send(JSON.stringify({ type: "resize", cols: 100, rows: 33 }));
    await until(async () => await size() === "100x33", { watch: changes });

    // Closing detaches: the tmux client goes, the session runs on.
    const closed = await term.close(1000);
    assertEquals(closed.code, 1000);
    await until(async () => await clientCount(tmuxSocket, "term") === 0, { watch: changes });
    const session = await local.session("term");
    assertEquals(session.exited, false, `the session ended: ${JSON.stringify(session)}`);
    // Attaching again redraws the screen, earlier output included, with nothing typed.
    const again = await Term.open(`${base}/term/attach?token=${agent.token}`);
    await again.waitFor("relayed-42");

    // The box ending the attach (the session is removed) closes the client with the box's code.
    await local.removeSession("term");
    const ended = await again.closed;
    assertEquals(ended.code, 1000);
    assertStringIncludes(ended.reason, "tmux attach exited");

    // Refused upgrades never open: a wrong token, an unknown session, an unknown box, no token.
    await local.createSession({ location: "app", command: "sh", name: "other" });
    for (
      const url of [
        `${base}/other/attach?token=wrong`,
        `${base}/other/attach`,
        `${base}/nope/attach?token=${agent.token}`,
        `ws://127.0.0.1:${agent.port}/v1/boxes/nobox/sessions/other/attach?token=${agent.token}`,
      ]
    ) {
      const refused = new Term(url);
      let opened = false;
      refused.opened.then(() => opened = true, () => {});
      const event = await refused.closed;
      assertEquals(opened, false, url);
      assert(event.code !== 1000, `${url} closed cleanly`);
    }
    // … and the HTTP answers say why, as JSON.
    const answer = async (path: string) => {
      const { status, body } = await rawUpgrade(agent.port, path);
      return [status, JSON.parse(body).error.code];
    };
    const path = "/v1/boxes/local/sessions";
    assertEquals(await answer(`${path}/other/attach?token=wrong`), [401, "unauthorized"]);
    assertEquals(await answer(`${path}/nope/attach?token=${agent.token}`), [404, "not_found"]);
    assertEquals(await answer(`${path}/other/attach?cols=0&token=${agent.token}`), [400, "invalid_request"]);
    assertEquals(await answer(`/v1/boxes/nobox/sessions/other/attach?token=${agent.token}`), [
      404,
      "not_found",
    ]);
    // A plain request (no upgrade) is told to upgrade.
    const plain = await fetch(`${agent.url}${path}/other/attach`, {
      headers: { authorization: `Bearer ${agent.token}` },
    });
    assertEquals([plain.status, (await plain.json()).error.code], [400, "upgrade_required"]);
    // The agent's token is never passed on to the box; only cols and rows are.
    const open = await Term.open(`${base}/other/attach?cols=81&rows=25&token=${agent.token}`);
    const otherSize = () =>
      tmux(tmuxSocket, "display-message", "-p", "-t", "=other:", "#{window_width}x#{window_height}");
    await until(async () => await otherSize() === "81x25", { watch: changes });
    // The box going away closes the client too (with whatever the box said, or 1011 when it said nothing).
    await box.stop();
    const lost = await open.closed;
    assert([1000, 1001, 1005, 1011].includes(lost.code), `closed with ${lost.code}`);
    // A box that is not there: 503, as the API relay answers.
    assertEquals(await answer(`${path}/other/attach?token=${agent.token}`), [503, "box_unreachable"]);
  } finally {
    client.close();
  }
});

// ---------------------------------------------------------------------------------------------------
// The relay against a fake box over TLS.

const CREDENTIAL = "box-credential-for-this-laptop";

interface FakeBox {
  port: number;
  caPem: string;
  /** What the box received and how its sockets closed. */
  seen: { binary: string[]; text: string[]; closes: { code: number; reason: string }[]; paths: string[] };
  /** Dispatches `change` as `seen` or `sockets` grows (a wait's `wake`). */
  changes: Changes;
  /** The box's side of each attach, in the order they opened. */
  sockets: WebSocket[];
  opened: (count: number) => Promise<void>;
  stop(): Promise<void>;
}

/**
 * A box that speaks the attach protocol over TLS: it checks the bearer credential, answers 404 for a
 * session named `missing`, echoes binary frames prefixed with `echo:`, records text frames, closes with
 * the code a `close:CODE` keystroke names, and floods output on `flood`.
 */
async function fakeTlsBox(dir: string): Promise<FakeBox> {
  const certs = await ensureCertificates(join(dir, "tls"), { addresses: ["127.0.0.1", "localhost"] });
  const seen: FakeBox["seen"] = { binary: [], text: [], closes: [], paths: [] };
  const sockets: WebSocket[] = [];
  const changes = new Changes();
  const decoder = new TextDecoder();
  const server = Deno.serve(
    { port: 0, hostname: "127.0.0.1", cert: certs.certPem, key: certs.keyPem, onListen() {} },
    (request) => {
      const url = new URL(request.url);
      seen.paths.push(url.pathname + url.search);
      if (request.headers.get("authorization") !== `Bearer ${CREDENTIAL}`) {
        return Response.json({ error: { code: "unauthorized", message: "unknown credential" } }, {
          status: 401,
        });
      }
      if (url.pathname === "/v1/sessions/missing/attach") {
        return Response.json({ error: { code: "not_found", message: "session 'missing' not found" } }, {
          status: 404,
        });
      }
      const { socket, response } = Deno.upgradeWebSocket(request);
      socket.binaryType = "arraybuffer";
      sockets.push(socket);
      changes.changed();
      socket.onmessage = (event) => {
        if (typeof event.data === "string") {
          seen.text.push(event.data);
          changes.changed();
          return;
        }
        const keys = decoder.decode(new Uint8Array(event.data));
        seen.binary.push(keys);
        changes.changed();
        const close = /^close:(\d+)$/.exec(keys);
        if (close) socket.close(Number(close[1]), "box says bye");
        else if (keys === "flood") flood(socket);
        else socket.send(encoder.encode(`echo:${keys}`));
      };
      socket.onclose = (event) => {
        seen.closes.push({ code: event.code, reason: event.reason });
        changes.changed();
      };
      return response;
    },
  );
  return {
    port: server.addr.port,
    caPem: certs.caPem,
    seen,
    changes,
    sockets,
    opened: (count) => until(() => sockets.length >= count, { wake: changes }).then(() => {}),
    stop: () => server.shutdown(),
  };
}

/** Sends 64 KiB frames while the box's own backlog stays under 8 MiB, for as long as the socket is open. */
async function flood(socket: WebSocket): Promise<void> {
  const chunk = new Uint8Array(64 * 1024).fill(0x61);
  while (socket.readyState === WebSocket.OPEN) {
    while (socket.readyState === WebSocket.OPEN && socket.bufferedAmount < 8 * 1024 * 1024) {
      socket.send(chunk);
    }
    await new Promise((resolve) => setTimeout(resolve, 5));
  }
}

/** The agent's side, reduced to the relay: `/<session>?cols&rows` relayed to `target`. */
function relayServer(
  target: BoxTarget,
  extra: Partial<AttachRelayOptions> = {},
): { port: number; url: string; stop(): Promise<void> } {
  const server = Deno.serve({ port: 0, hostname: "127.0.0.1", onListen() {} }, async (request) => {
    const url = new URL(request.url);
    try {
      return await attachRelay(request, {
        box: "fake",
        target,
        session: decodeURIComponent(url.pathname.slice(1)),
        cols: url.searchParams.get("cols"),
        rows: url.searchParams.get("rows"),
        ...extra,
      });
    } catch (error) {
      if (error instanceof DockError) return Response.json(error.toBody(), { status: error.status });
      throw error;
    }
  });
  const port = server.addr.port;
  return { port, url: `ws://127.0.0.1:${port}`, stop: () => server.shutdown() };
}

Deno.test("the relay over TLS: pinned CA and credential, frames both ways, close codes both ways", async () => {
  const dir = await Deno.makeTempDir({ prefix: "dock-relay-tls-" });
  const box = await fakeTlsBox(dir);
  const target: BoxTarget = {
    kind: "tls",
    hostname: "127.0.0.1",
    port: box.port,
    caCerts: [box.caPem],
    credential: CREDENTIAL,
  };
  const relay = relayServer(target);
  try {
    const term = await Term.open(`${relay.url}/work?cols=90&rows=30`);
    assertEquals(box.seen.paths.at(-1), "/v1/sessions/work/attach?cols=90&rows=30");
    term.type("hello");
    await term.waitFor("echo:hello");
    // Binary frames arrive unchanged, bytes that are not UTF-8 included.
    term.ws.send(new Uint8Array([0xff, 0x00, 0x1b, 0x5b]));
    await until(() => box.seen.binary.length === 2, { wake: box.changes });
    assertEquals(encoder.encode(box.seen.binary[1]).length > 0, true);
    term.ws.send(JSON.stringify({ type: "resize", cols: 100, rows: 33 }));
    await until(() => box.seen.text.length === 1, { wake: box.changes });
    assertEquals(JSON.parse(box.seen.text[0]), { type: "resize", cols: 100, rows: 33 });
    // The client's close code and reason reach the box.
    await term.close(4005, "client says bye");
    await until(() => box.seen.closes.length === 1, { wake: box.changes });
    assertEquals(box.seen.closes[0], { code: 4005, reason: "client says bye" });

    // The box's close code and reason reach the client.
    const second = await Term.open(`${relay.url}/work`);
    assertEquals(box.seen.paths.at(-1), "/v1/sessions/work/attach");
    second.type("close:4321");
    const closed = await second.closed;
    assertEquals([closed.code, closed.reason], [4321, "box says bye"]);

    // The box's refusals become HTTP answers with the box's status and body.
    assertEquals((await rawUpgrade(relay.port, "/missing")).status, 404);
    assertEquals(JSON.parse((await rawUpgrade(relay.port, "/missing")).body).error.code, "not_found");
    const wrongCredential = relayServer({ ...target, credential: "stolen" });
    const denied = await rawUpgrade(wrongCredential.port, "/work");
    assertEquals([denied.status, JSON.parse(denied.body).error.code], [401, "unauthorized"]);
    await wrongCredential.stop();
    // A CA that is not the box's: the TLS handshake fails before anything is sent: 503.
    const otherCa = await ensureCertificates(join(dir, "other"), { addresses: ["127.0.0.1"] });
    const unpinned = relayServer({ ...target, caCerts: [otherCa.caPem] });
    const before = box.seen.paths.length;
    const forged = await rawUpgrade(unpinned.port, "/work");
    assertEquals([forged.status, JSON.parse(forged.body).error.code], [503, "box_unreachable"]);
    assertEquals(box.seen.paths.length, before, "nothing reached the box");
    await unpinned.stop();
    // Nothing listening: 503.
    const closedPort = relayServer({ ...target, port: 1 });
    const unreachable = await rawUpgrade(closedPort.port, "/work");
    assertEquals([unreachable.status, JSON.parse(unreachable.body).error.code], [503, "box_unreachable"]);
    await closedPort.stop();
  } finally {
    await relay.stop();
    await box.stop();
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("the relay stops reading the box while the client is not reading, and resumes after", async () => {
  const dir = await Deno.makeTempDir({ prefix: "dock-relay-flow-" });
  const box = await fakeTlsBox(dir);
  const flow: boolean[] = [];
  const flowChanges = new Changes();
  const relay = relayServer(
    { kind: "tls", hostname: "127.0.0.1", port: box.port, caCerts: [box.caPem], credential: CREDENTIAL },
    { onFlow: (paused) => (flow.push(paused), flowChanges.changed()) },
  );
  // A client that sends `flood` and then does not read: its socket buffers fill, then the relay's.
  const conn = await Deno.connect({ hostname: "127.0.0.1", port: relay.port });
  try {
    await conn.write(encoder.encode(
      `GET /work HTTP/1.1\r\nHost: 127.0.0.1\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n` +
        "Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 13\r\n\r\n",
    ));
    await box.opened(1);
    // One masked binary frame "flood" (mask 0: the payload as it is).
    await conn.write(new Uint8Array([0x82, 0x85, 0, 0, 0, 0, ...encoder.encode("flood")]));
    await until(() => flow.includes(true), { wake: flowChanges, timeoutMs: 30_000 });
    // Paused: the relay holds at most its high-water mark; the rest waits on the box's side.
    await until(() => box.sockets[0].bufferedAmount > 1024 * 1024, { timeoutMs: 30_000 })
      .catch(() => {});
    assert(box.sockets[0].bufferedAmount > 1024 * 1024, "the box's own backlog grows while the relay waits");
    assertEquals(flow.at(-1), true, "still paused while nobody reads");
    // Reading again drains the relay's backlog and it reads the box again.
    const reading = (async () => {
      const buffer = new Uint8Array(256 * 1024);
      try {
        while (await conn.read(buffer) !== null) { /* discard */ }
      } catch { /* closed */ }
    })();
    await until(() => flow.at(-1) === false, { wake: flowChanges, timeoutMs: 30_000 });
    box.sockets[0].close(1000);
    conn.close();
    await reading;
  } finally {
    await relay.stop();
    await box.stop();
    await Deno.remove(dir, { recursive: true });
  }
});
