/**
 * Attach bridge tests against a real tmux server on a private socket in a temp dir, served on
 * loopback and driven by real WebSockets. Also prints keystroke latency (bridge vs a PTY running
 * `tmux attach` in-process) and bulk throughput.
 *
 * @module
 */
import { type IPty, spawn } from "@lydell/node-pty";
import { DockError } from "../client/errors.ts";
import { assert, assertEquals, assertStringIncludes, assertThrows } from "../tests/assert.ts";
import { clientChanges } from "../tests/tmux_watch.ts";
import { until } from "../tests/wait.ts";
import { type AttachOptions, attachSession, attachSize } from "./attach.ts";

const encoder = new TextEncoder();

/**
 * A tmux server on its own socket, with one session `t` running `sh`; `changes` grows by a line at each
 * client attached, detached or resized and each window size change (tests/tmux_watch.ts).
 */
interface Tmux {
  sock: string;
  changes: string;
  run(...args: string[]): Promise<string>;
  running(): Promise<boolean>;
  stop(): Promise<void>;
}

async function startTmux(): Promise<Tmux> {
  const dir = await Deno.makeTempDir({ prefix: "dock-attach-" });
  const sock = `${dir}/tmux.sock`;
  async function run(...args: string[]): Promise<string> {
    const out = await new Deno.Command("tmux", { args: ["-S", sock, ...args], stdin: "null" }).output();
    const text = new TextDecoder().decode(out.stdout);
    if (!out.success) throw new Error(`tmux ${args.join(" ")}: ${new TextDecoder().decode(out.stderr)}`);
    return text.trim();
  }
  // window-size latest: a resize from the most recent client sets the window size (the daemon's tmux
  // config must set the same, or tmux keeps the smallest client's size).
  await run(
    "-f",
    "/dev/null",
    "new-session",
    "-d",
    "-s",
    "t",
    "-x",
    "80",
    "-y",
    "24",
    "sh",
    ";",
    "set",
    "-g",
    "window-size",
    "latest",
  );
  const changes = await clientChanges(sock, dir);
  return {
    sock,
    changes,
    run,
    async running() {
      const args = ["-S", sock, "list-sessions", "-F", "#{session_name}"];
      return (await new Deno.Command("tmux", { args, stdout: "null", stderr: "null" }).output()).success;
    },
    async stop() {
      await new Deno.Command("tmux", { args: ["-S", sock, "kill-server"], stderr: "null" }).output();
      await Deno.remove(dir, { recursive: true });
    },
  };
}

/** Serves attach on loopback: `/<session>?cols=&rows=`. */
function serve(tmux: Tmux, extra: Partial<AttachOptions> = {}): { url: string; stop(): Promise<void> } {
  const server = Deno.serve({ port: 0, hostname: "127.0.0.1", onListen() {} }, (request) => {
    const url = new URL(request.url);
    return attachSession(request, {
      socket: tmux.sock,
      session: decodeURIComponent(url.pathname.slice(1)),
      ...attachSize(url),
      ...extra,
    });
  });
  return { url: `ws://127.0.0.1:${server.addr.port}`, stop: () => server.shutdown() };
}

/** Terminal output collected as it arrives, decoded as UTF-8 across chunk boundaries. */
abstract class Output {
  bytes = 0;
  text = "";
  raw: Uint8Array[] = [];
  #keepRaw: boolean;
  #decoder = new TextDecoder();
  #listeners = new Set<() => void>();
  #ended = false;

  constructor(options: { keepRaw?: boolean } = {}) {
    this.#keepRaw = options.keepRaw ?? false;
  }

  abstract type(keys: string): void;

  /** Resolves once `needle` appears in output received after text offset `from`. */
  waitFor(needle: string, from = 0, timeoutMs = 10_000): Promise<void> {
    let cursor = from;
    return this.#until(
      () => {
        const found = this.text.indexOf(needle, cursor) >= 0;
        cursor = Math.max(from, this.text.length - needle.length);
        return found;
      },
      `${JSON.stringify(needle)} in the output`,
      timeoutMs,
    );
  }

  /** Resolves once tmux has drawn something (the client is attached and in raw mode). */
  drawn(): Promise<void> {
    return this.#until(() => this.bytes > 0, "the first draw", 10_000);
  }

  protected received(chunk: Uint8Array): void {
    this.bytes += chunk.length;
    if (this.#keepRaw) this.raw.push(chunk);
    this.text += this.#decoder.decode(chunk, { stream: true });
    for (const listener of this.#listeners) listener();
  }

  protected ended(): void {
    this.#ended = true;
    for (const listener of this.#listeners) listener();
  }

  #until(check: () => boolean, what: string, timeoutMs: number): Promise<void> {
    if (check()) return Promise.resolve();
    return new Promise((resolve, reject) => {
      const timer = setTimeout(() => {
        this.#listeners.delete(listener);
        reject(new Error(`timed out waiting for ${what}; got ${JSON.stringify(this.text.slice(-500))}`));
      }, timeoutMs);
      const listener = () => {
        if (check()) {
          clearTimeout(timer);
          this.#listeners.delete(listener);
          resolve();
        } else if (this.#ended) {
          clearTimeout(timer);
          this.#listeners.delete(listener);
          reject(new Error(`the terminal closed while waiting for ${what}`));
        }
      };
      this.#listeners.add(listener);
    });
  }
}

/** A WebSocket client of the bridge, as the app would be. */
class Client extends Output {
  readonly ws: WebSocket;
  readonly closed: Promise<CloseEvent>;

  constructor(url: string, options: { keepRaw?: boolean } = {}) {
    super(options);
    this.ws = new WebSocket(url);
    this.ws.binaryType = "arraybuffer";
    this.ws.onmessage = (event) => {
      assert(event.data instanceof ArrayBuffer, "output frames are binary");
      this.received(new Uint8Array(event.data));
    };
    this.closed = new Promise((resolve) => {
      this.ws.onclose = (event) => {
        this.ended();
        resolve(event);
      };
    });
  }

  type(keys: string): void {
    this.ws.send(encoder.encode(keys));
  }

  resize(cols: number, rows: number): void {
    this.ws.send(JSON.stringify({ type: "resize", cols, rows }));
  }

  async close(): Promise<void> {
    this.ws.close();
    await this.closed;
  }
}

/** `tmux attach` in a PTY in this process, no WebSocket: the baseline the bridge is measured against. */
class DirectPty extends Output {
  readonly #pty: IPty;
  readonly #exited: Promise<unknown>;

  constructor(tmux: Tmux, session: string) {
    super();
    this.#pty = spawn("tmux", ["-u", "-S", tmux.sock, "attach-session", "-t", `=${session}`], {
      name: "xterm-256color",
      cols: 80,
      rows: 24,
      cwd: "/",
      // TMUX unset: tmux refuses to attach from inside another tmux.
      env: { ...Deno.env.toObject(), TMUX: "", TERM: "xterm-256color", LANG: "C.UTF-8", LC_CTYPE: "C.UTF-8" },
      encoding: null,
    });
    this.#pty.onData((chunk) => this.received(chunk as unknown as Uint8Array));
    this.#exited = new Promise((resolve) => this.#pty.onExit(resolve)).then(() => this.ended());
  }

  type(keys: string): void {
    this.#pty.write(keys);
  }

  async close(): Promise<void> {
    this.#pty.kill();
    await this.#exited;
  }
}

async function attach(url: string, options: { keepRaw?: boolean } = {}): Promise<Client> {
  const client = new Client(url, options);
  await client.drawn();
  return client;
}

/**
 * Waits until `check` of `tmux`'s clients or window sizes holds, re-checked at each change of them that
 * tmux's hooks report (`tmux.changes`).
 */
function untilTmux(
  tmux: Tmux,
  check: () => Promise<boolean>,
  what: string,
  timeoutMs = 5000,
): Promise<true> {
  return until(async () => await check() || undefined, { what, timeoutMs, watch: tmux.changes });
}

async function clientCount(tmux: Tmux): Promise<number> {
  // Killing the last session ends the server, and with it every client: also when it ends between the
  // two questions (seen on a loaded machine).
  if (!(await tmux.running())) return 0;
  try {
    const out = await tmux.run("list-clients", "-F", "#{client_pid}");
    return out === "" ? 0 : out.split("\n").length;
  } catch (error) {
    if (/no server running/.test(String(error))) return 0;
    throw error;
  }
}

/** Runs `body` with a fresh tmux server and attach server, and tears both down. */
async function withBridge(
  body: (ctx: { tmux: Tmux; url: string }) => Promise<void>,
  extra: Partial<AttachOptions> = {},
): Promise<void> {
  const tmux = await startTmux();
  const server = serve(tmux, extra);
  try {
    await body({ tmux, url: server.url });
    // Every socket is closed by now: wait for their tmux clients to be gone before tearing down.
    await untilTmux(tmux, async () => await clientCount(tmux) === 0, "all tmux clients to detach");
  } finally {
    await server.stop();
    await tmux.stop();
  }
}

function percentile(samples: number[], p: number): number {
  const sorted = [...samples].sort((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))];
}

Deno.test("attachSize reads cols and rows, defaulting to 80x24", () => {
  assertEquals(attachSize(new URL("http://x/a")), { cols: 80, rows: 24 });
  assertEquals(attachSize(new URL("http://x/a?cols=120&rows=40")), { cols: 120, rows: 40 });
  assertEquals(attachSize(new URL("http://x/a?cols=1000&rows=1")), { cols: 1000, rows: 1 });
  for (
    const [query, field] of [
      ["cols=0", "cols"],
      ["rows=1001", "rows"],
      ["cols=12.5", "cols"],
      [
        "rows=abc",
        "rows",
      ],
      ["cols=", "cols"],
      ["rows=-3", "rows"],
      ["cols=1e2", "cols"],
    ]
  ) {
    const error = assertThrows(() => attachSize(new URL(`http://x/a?${query}`)), DockError, field);
    assertEquals((error as DockError).status, 400);
    assertEquals((error as DockError).detail, { field });
  }
});

Deno.test("attachSession refuses a plain request and a bad size", () => {
  const options = { socket: "/nonexistent", session: "t", cols: 80, rows: 24 };
  assertThrows(() => attachSession(new Request("http://x/t"), options), DockError, "WebSocket");
  assertThrows(() => attachSession(new Request("http://x/t"), { ...options, cols: 0 }), DockError, "cols");
});

Deno.test("attach: keystrokes in, raw output out (UTF-8 and escape sequences intact)", async () => {
  await withBridge(async ({ tmux, url }) => {
    const client = await attach(`${url}/t`, { keepRaw: true });
    client.type("echo hello-$((6*7))\r");
    await client.waitFor("hello-42");
    // Multibyte input, and multibyte output split wherever the PTY reads split it.
    let mark = client.text.length;
    client.type("echo é$((6*7)); printf '\\303\\251\\342\\202\\254\\360\\237\\230\\200-%s\\n' ok\r");
    await client.waitFor("é42", mark);
    await client.waitFor("é€😀-ok", mark);
    // tmux re-emits colour as SGR: the escape bytes must arrive as sent.
    mark = client.text.length;
    client.type("printf '\\033[31mred-%s\\033[0m\\n' 42\r");
    await client.waitFor("red-42", mark);
    assertStringIncludes(client.text.slice(mark), "\x1b[31mred-42");
    // Control bytes are keystrokes too: Ctrl-C interrupts a foreground command.
    client.type("sleep 30\r");
    // No hook tells when a pane's foreground program changes: on `until`'s backoff.
    await until(
      async () => await tmux.run("display-message", "-p", "-t", "=t:", "#{pane_current_command}") === "sleep",
      { what: "sleep to run", timeoutMs: 5000 },
    );
    client.type("\x03");
    mark = client.text.length;
    client.type("echo after-$((6*7))\r");
    await client.waitFor("after-42", mark);
    // The raw frames decode to the same text in one go: nothing was decoded and re-encoded per frame.
    const all = new Uint8Array(client.bytes);
    let offset = 0;
    for (const chunk of client.raw) {
      all.set(chunk, offset);
      offset += chunk.length;
    }
    assertEquals(new TextDecoder().decode(all), client.text);
    await client.close();
  });
});

Deno.test("attach: a resize message resizes the tmux window", async () => {
  await withBridge(async ({ tmux, url }) => {
    // Without a status line the window is exactly the client's size.
    await tmux.run("set", "-g", "status", "off");
    const client = await attach(`${url}/t?cols=90&rows=20`);
    const size = () => tmux.run("display-message", "-p", "-t", "=t:", "#{window_width}x#{window_height}");
    const clientSize = () => tmux.run("list-clients", "-F", "#{client_width}x#{client_height}");
    await untilTmux(tmux, async () => await size() === "90x20", "the window to take the attach size");
    assertEquals(await clientSize(), "90x20");
    client.resize(100, 30);
    await untilTmux(tmux, async () => await size() === "100x30", "the window to be 100x30");
    assertEquals(await clientSize(), "100x30");
    await client.close();
  });
});

Deno.test("attach: closing detaches, the session runs on, and attaching again redraws", async () => {
  await withBridge(async ({ tmux, url }) => {
    const first = await attach(`${url}/t`);
    first.type("echo redraw-$((6*7))\r");
    await first.waitFor("redraw-42");
    assertEquals(await clientCount(tmux), 1);
    await first.close();
    await untilTmux(tmux, async () => await clientCount(tmux) === 0, "the tmux client to detach");
    await tmux.run("has-session", "-t", "=t");
    // No typing: tmux redraws the whole screen on attach, earlier output included.
    const second = new Client(`${url}/t`);
    await second.waitFor("redraw-42");
    await second.close();
  });
});

Deno.test("attach: two clients at once both see output", async () => {
  await withBridge(async ({ tmux, url }) => {
    const a = await attach(`${url}/t`);
    const b = await attach(`${url}/t`);
    await untilTmux(tmux, async () => await clientCount(tmux) === 2, "two tmux clients");
    a.type("echo from-a-$((6*7))\r");
    await Promise.all([a.waitFor("from-a-42"), b.waitFor("from-a-42")]);
    b.type("echo from-b-$((6*7))\r");
    await Promise.all([a.waitFor("from-b-42"), b.waitFor("from-b-42")]);
    await a.close();
    // The other client is untouched by the first one leaving.
    await untilTmux(tmux, async () => await clientCount(tmux) === 1, "one tmux client left");
    const mark = b.text.length;
    b.type("echo still-$((6*7))\r");
    await b.waitFor("still-42", mark);
    await b.close();
  });
});

Deno.test("attach: bulk output flows through and the last line arrives", async () => {
  await withBridge(async ({ url }) => {
    const client = await attach(`${url}/t`);
    const start = client.bytes;
    const began = performance.now();
    // The command line shows `$((…))`, so "200000" can only come from seq itself.
    client.type("seq 1 $((200*1000)); printf '\\033[2J\\033[H'; echo bulk-$((6*7))\r");
    // Only the line after seq is awaited, on a cleared screen: when tmux falls behind it redraws by
    // difference, so text on a row that held similar text may arrive split by cursor moves (seen under
    // load: "bulk-" then "42" drawn apart); a blank row is drawn whole.
    await client.waitFor("bulk-42", 0, 30_000);
    const seconds = (performance.now() - began) / 1000;
    const received = client.bytes - start;
    const source = 1_288_895; // bytes `seq 1 200000` writes
    assert(received > 10_000, `only ${received} bytes arrived`);
    console.log(
      `bulk seq 1 200000 via bridge: ${received} bytes in ${(seconds * 1000).toFixed(0)} ms ` +
        `(${(received / 1e6 / seconds).toFixed(1)} MB/s on the wire, ` +
        `${(source / 1e6 / seconds).toFixed(1)} MB/s of program output)`,
    );
    await client.close();
  });
});

Deno.test("attach: a slow reader pauses the PTY and reading again resumes it", async () => {
  const flow: boolean[] = [];
  let changed = () => {};
  await withBridge(async ({ tmux, url }) => {
    // A raw WebSocket client that stops reading after the handshake, so the server's send backlog
    // grows (loopback TCP buffers fill first, then bufferedAmount).
    const { port } = new URL(url);
    const conn = await Deno.connect({ hostname: "127.0.0.1", port: Number(port) });
    await conn.write(encoder.encode(
      "GET /t?cols=1000&rows=300 HTTP/1.1\r\nHost: 127.0.0.1\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n" +
        "Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 13\r\n\r\n",
    ));
    await untilTmux(tmux, async () => await clientCount(tmux) === 1, "the tmux client");
    const waitFlow = (paused: boolean, what: string) =>
      new Promise<void>((resolve, reject) => {
        const timer = setTimeout(() => reject(new Error(`timed out waiting for ${what}`)), 30_000);
        changed = () => {
          if (flow.at(-1) === paused) {
            clearTimeout(timer);
            resolve();
          }
        };
        changed();
      });
    // Keys go in as one masked binary frame (client frames must be masked).
    const keys = encoder.encode("yes 0123456789abcdefghijklmnopqrstuvwxyz | head -c 300000000\r");
    const frame = new Uint8Array(2 + 2 + 4 + keys.length);
    frame.set([0x82, 0xfe, keys.length >> 8, keys.length & 0xff, 0, 0, 0, 0]);
    frame.set(keys, 8);
    await conn.write(frame);
    await waitFlow(true, "the PTY to pause");
    // Read (and drop) everything: the backlog drains and the PTY resumes.
    const reading = (async () => {
      const buffer = new Uint8Array(1 << 16);
      try {
        while (await conn.read(buffer) !== null) { /* drain */ }
      } catch {
        // The connection is closed below while a read is pending.
      }
    })();
    await waitFlow(false, "the PTY to resume");
    conn.close();
    await reading;
    await tmux.run("send-keys", "-t", "=t:", "C-c");
  }, {
    highWaterBytes: 256 * 1024,
    lowWaterBytes: 64 * 1024,
    onFlow(paused) {
      flow.push(paused);
      changed();
    },
  });
  assertEquals(flow.slice(0, 2), [true, false]);
});

Deno.test("attach: killing the session closes the socket with 1000 and a reason", async () => {
  await withBridge(async ({ tmux, url }) => {
    const client = await attach(`${url}/t`);
    await tmux.run("kill-session", "-t", "=t");
    const event = await client.closed;
    assertEquals(event.code, 1000);
    assertStringIncludes(event.reason, "[exited]");
  });
});

Deno.test("attach: a missing session closes the socket with the reason", async () => {
  await withBridge(async ({ url }) => {
    const client = new Client(`${url}/nope`);
    const event = await client.closed;
    assertEquals(event.code, 1000);
    assertStringIncludes(event.reason, "can't find session");
  });
});

Deno.test("attach: a tmux binary that cannot start closes the socket with the reason", async () => {
  await withBridge(async ({ url }) => {
    const client = new Client(`${url}/t`);
    const event = await client.closed;
    assertEquals(event.code, 1000);
    assertStringIncludes(event.reason, "No such file");
  }, { tmux: "/nonexistent/tmux" });
});

Deno.test("attach: malformed control frames close only that socket with 1003", async () => {
  await withBridge(async ({ tmux, url }) => {
    const bystander = await attach(`${url}/t`);
    for (
      const bad of [
        "not json",
        "[1,2]",
        '{"cols":10}',
        '{"type":"resize","cols":0,"rows":10}',
        '{"type":"resize","cols":10.5,"rows":10}',
        '{"type":"resize","cols":"80","rows":24}',
      ]
    ) {
      const client = await attach(`${url}/t`);
      client.ws.send(bad);
      const event = await client.closed;
      assertEquals(event.code, 1003, bad);
    }
    // An unknown control type is ignored, and the socket keeps working.
    const client = await attach(`${url}/t`);
    client.ws.send('{"type":"ping"}');
    client.type("echo alive-$((6*7))\r");
    await Promise.all([client.waitFor("alive-42"), bystander.waitFor("alive-42")]);
    await untilTmux(tmux, async () => await clientCount(tmux) === 2, "only the two good clients attached");
    await client.close();
    await bystander.close();
  });
});

/** Times `samples` single keystrokes until each comes back echoed (after a short warm-up). */
async function echoLatency(term: Output, samples: number): Promise<number[]> {
  const keys = "xyzXYZ";
  const warmup = 10;
  const times: number[] = [];
  for (let i = 0; i < warmup + samples; i++) {
    const key = keys[i % keys.length];
    const mark = term.text.length;
    const began = performance.now();
    term.type(key);
    await term.waitFor(key, mark);
    if (i >= warmup) times.push(performance.now() - began);
  }
  term.type("\r");
  return times;
}

/** Runs `seq 1 <lines>` and times it until its last line and a marker after it have arrived. */
async function bulk(term: Output, lines: number): Promise<{ ms: number; bytes: number }> {
  const mark = term.text.length;
  const bytes = term.bytes;
  const began = performance.now();
  // The command line shows `$((…))`, so the last number and the marker can only come from the output.
  term.type(`seq 1 $((${lines / 1000}*1000)); echo bulk-$((6*7))\r`);
  await term.waitFor(String(lines), mark, 60_000);
  await term.waitFor("bulk-42", mark, 60_000);
  return { ms: performance.now() - began, bytes: term.bytes - bytes };
}

Deno.test("attach: measurements: echo latency and bulk, bridge vs in-process tmux attach", async () => {
  await withBridge(async ({ tmux, url }) => {
    // A fresh session per run: attaching redraws the screen, and a screen showing an earlier run's
    // output would satisfy the waits at once.
    for (const [name, command] of [["cat1", "cat"], ["cat2", "cat"], ["sh1", "sh"], ["sh2", "sh"]]) {
      await tmux.run("new-session", "-d", "-s", name, "-x", "80", "-y", "24", command);
    }
    const samples = 50;
    const lines = 2_000_000;
    const source = 14_888_896; // bytes `seq 1 2000000` writes

    const client = await attach(`${url}/cat1`);
    const bridgeEcho = await echoLatency(client, samples);
    await client.close();
    const direct = new DirectPty(tmux, "cat2");
    await direct.drawn();
    const directEcho = await echoLatency(direct, samples);
    await direct.close();

    const shClient = await attach(`${url}/sh1`);
    const bridgeBulk = await bulk(shClient, lines);
    await shClient.close();
    const shDirect = new DirectPty(tmux, "sh2");
    await shDirect.drawn();
    const directBulk = await bulk(shDirect, lines);
    await shDirect.close();

    const ms = (xs: number[], p: number) => percentile(xs, p).toFixed(2);
    const rate = (run: { ms: number; bytes: number }) =>
      `${run.ms.toFixed(0)} ms, ${run.bytes} bytes drawn (${(run.bytes / 1e3 / run.ms).toFixed(1)} MB/s), ` +
      `${(source / 1e3 / run.ms).toFixed(1)} MB/s of program output`;
    console.log(`echo latency, bridge:      p50 ${ms(bridgeEcho, 50)} ms, p99 ${ms(bridgeEcho, 99)} ms`);
    console.log(`echo latency, direct PTY:  p50 ${ms(directEcho, 50)} ms, p99 ${ms(directEcho, 99)} ms`);
    console.log(`seq 1 ${lines}, bridge:     ${rate(bridgeBulk)}`);
    console.log(`seq 1 ${lines}, direct PTY: ${rate(directBulk)}`);
    assertEquals([bridgeEcho.length, directEcho.length], [samples, samples]);
  });
});
