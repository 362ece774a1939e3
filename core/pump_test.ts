/**
 * The pump's policy against sides in memory (backpressure, closing, refusals, revocation, start order),
 * and its adapters against real sockets and a real PTY.
 */
import { assert, assertEquals } from "../tests/assert.ts";
import {
  type Close,
  connEnd,
  type End,
  fitReason,
  type Message,
  passOn,
  pump,
  type Reader,
  RefusedMessage,
  webSocketEnd,
} from "./pump.ts";
import { launchPty } from "./pty.ts";
import { ptyEnd } from "./pty_end.ts";

const encoder = new TextEncoder();
const decoder = new TextDecoder();

/** A side in memory: what it was sent and how it was closed; its backlog is set by the test. */
class FakeEnd implements End {
  readonly name: string;
  readonly ready: Promise<void>;
  reader: Reader | null = null;
  sent: Message[] = [];
  closes: { code: number | undefined; reason: string }[] = [];
  backlog = 0;
  paused = false;
  /** Thrown by the next `send`. */
  failNext: Error | null = null;
  #drains: { mark: number; resolve: () => void }[] = [];
  #ready = Promise.withResolvers<void>();
  #sent = Promise.withResolvers<void>();
  declare pause?: () => void;
  declare resume?: () => void;

  constructor(name: string, options: { pausable?: boolean; ready?: boolean } = {}) {
    this.name = name;
    this.ready = this.#ready.promise;
    if (options.ready ?? true) this.#ready.resolve();
    if (options.pausable ?? true) {
      this.pause = () => this.paused = true;
      this.resume = () => this.paused = false;
    }
  }

  open(): void {
    this.#ready.resolve();
  }

  start(reader: Reader): void {
    this.reader = reader;
  }

  send(message: Message): void {
    if (this.failNext) throw this.failNext;
    this.sent.push(message);
    this.backlog += message.data.length;
    this.#sent.resolve();
    this.#sent = Promise.withResolvers<void>();
  }

  /** Resolves once what was sent, as text, includes `needle`. */
  async received(needle: string): Promise<string> {
    while (true) {
      const text = this.sent.map((message) => decoder.decode(message.data)).join("");
      if (text.includes(needle)) return text;
      await this.#sent.promise;
    }
  }

  /** The backlog shrinks to `to` bytes, as when the peer reads. */
  drain(to: number): void {
    this.backlog = to;
    this.#drains = this.#drains.filter((drain) => {
      if (this.backlog > drain.mark) return true;
      drain.resolve();
      return false;
    });
  }

  drained(mark: number): Promise<void> {
    if (this.backlog <= mark) return Promise.resolve();
    return new Promise((resolve) => this.#drains.push({ mark, resolve }));
  }

  close(code: number | undefined, reason: string): void {
    this.closes.push({ code, reason });
  }
}

function bytes(count: number): Message {
  return { binary: true, data: new Uint8Array(count) };
}

/** Resolves once the pump has started both sides. */
async function started(...ends: FakeEnd[]): Promise<void> {
  while (ends.some((end) => end.reader === null)) await Promise.resolve();
}

/** A recorder of `onFlow`, with a wait for the next change. */
function flowRecorder() {
  const flow: boolean[] = [];
  let changed = Promise.withResolvers<void>();
  return {
    flow,
    onFlow(paused: boolean) {
      flow.push(paused);
      changed.resolve();
      changed = Promise.withResolvers<void>();
    },
    next: () => changed.promise,
  };
}

Deno.test("pump: a slow reader pauses the source past the high-water mark; draining to the low one resumes it", async () => {
  const source = new FakeEnd("A");
  const sink = new FakeEnd("B");
  const recorder = flowRecorder();
  pump(source, sink, { highWaterBytes: 100, lowWaterBytes: 10, onFlow: recorder.onFlow });
  await started(source, sink);
  source.reader!.message(bytes(60));
  assertEquals([source.paused, recorder.flow], [false, []]);
  source.reader!.message(bytes(60));
  assertEquals([source.paused, recorder.flow], [true, [true]]);
  assertEquals(sink.sent.length, 2, "what was read is sent; only further reading stops");
  sink.drain(50);
  await Promise.resolve();
  assertEquals(source.paused, true, "still above the low-water mark");
  const resumed = recorder.next();
  sink.drain(10);
  await resumed;
  assertEquals([source.paused, recorder.flow], [false, [true, false]]);
  // The other direction has a mark of its own.
  sink.reader!.message(bytes(150));
  assertEquals([sink.paused, source.paused], [true, false]);
});

Deno.test("pump: a side that cannot pause is closed once the backlog passes the limit", async () => {
  const client = new FakeEnd("the client", { pausable: false });
  const box = new FakeEnd("box 'b'");
  const done = pump(client, box, { highWaterBytes: 100, maxBacklogBytes: 200 });
  await started(client, box);
  client.reader!.message(bytes(150));
  assertEquals(client.closes, [], "past the high-water mark, under the limit: carried on");
  client.reader!.message(bytes(100));
  await done;
  assertEquals(client.closes, [{ code: 1008, reason: "input arrives faster than box 'b' takes it" }]);
  assertEquals(box.closes, [{ code: 1001, reason: "the client sent too much input" }]);
  client.reader!.message(bytes(1));
  assertEquals(box.sent.length, 2, "nothing is sent once the pump is done");
});

Deno.test("pump: close codes pass to the other side: the same when a frame carries them, none for none, 1011 when dropped", async () => {
  const cases: [Close, { code: number | undefined; reason: string }][] = [
    [{ code: 4005, reason: "bye" }, { code: 4005, reason: "bye" }],
    [{ code: 1000, reason: "tmux attach exited with code 0" }, {
      code: 1000,
      reason: "tmux attach exited with code 0",
    }],
    [{ code: 1008, reason: "revoked" }, { code: 1008, reason: "revoked" }],
    [{ code: 1005, reason: "" }, { code: undefined, reason: "" }],
    [{ code: 1006, reason: "" }, { code: 1011, reason: "the connection to A was lost" }],
    [{ code: 1015, reason: "tls" }, { code: 1011, reason: "the connection to A was lost" }],
  ];
  for (const [close, expected] of cases) {
    for (const direction of ["a ends", "b ends"]) {
      const a = new FakeEnd(direction === "a ends" ? "A" : "B");
      const b = new FakeEnd(direction === "a ends" ? "B" : "A");
      const [ending, other] = direction === "a ends" ? [a, b] : [b, a];
      const done = pump(a, b);
      await started(a, b);
      ending.reader!.end(close);
      await done;
      assertEquals(other.closes, [expected], `${direction} with ${close.code}`);
      assertEquals(ending.closes.length, 1, "the side that ended is closed too, to release what it holds");
      ending.reader!.end({ code: 1000, reason: "" });
      assertEquals(other.closes.length, 1, "a side is closed once");
    }
  }
  assertEquals(passOn({ code: 1006, reason: "" }, "box 'b'").reason, "the connection to box 'b' was lost");
});

Deno.test("pump: an error on either side closes both", async () => {
  // Reading fails: the adapter reports a dropped connection (1006).
  const a = new FakeEnd("A");
  const b = new FakeEnd("B");
  let done = pump(a, b);
  await started(a, b);
  b.reader!.end({ code: 1006, reason: "" });
  await done;
  assertEquals(a.closes, [{ code: 1011, reason: "the connection to B was lost" }]);
  assertEquals(b.closes.length, 1);

  // Writing fails.
  const c = new FakeEnd("C");
  const d = new FakeEnd("D");
  done = pump(c, d);
  await started(c, d);
  d.failNext = new Error("broken pipe");
  c.reader!.message(bytes(1));
  await done;
  assertEquals(c.closes, [{ code: 1011, reason: "the connection to D was lost" }]);
  assertEquals(d.closes.length, 1);
});

Deno.test("pump: a refused message closes its sender with the refusal's code, and the other side", async () => {
  const client = new FakeEnd("the client");
  const terminal = new FakeEnd("the terminal");
  const done = pump(client, terminal);
  await started(client, terminal);
  terminal.failNext = new RefusedMessage(1003, "text frames must be JSON control messages");
  client.reader!.message({ binary: false, data: encoder.encode("not json") });
  await done;
  assertEquals(client.closes, [{ code: 1003, reason: "text frames must be JSON control messages" }]);
  assertEquals(terminal.closes, [{ code: undefined, reason: "" }]);
});

Deno.test("pump: an abort closes both sides with 1008 and the abort's reason", async () => {
  const controller = new AbortController();
  const a = new FakeEnd("A");
  const b = new FakeEnd("B");
  const done = pump(a, b, { signal: controller.signal });
  await started(a, b);
  controller.abort(new Error("this laptop's pairing with the box was revoked"));
  await done;
  const revoked = { code: 1008, reason: "this laptop's pairing with the box was revoked" };
  assertEquals([a.closes, b.closes], [[revoked], [revoked]]);

  // Aborted already: both closed at once, neither started.
  const c = new FakeEnd("C");
  const d = new FakeEnd("D");
  await pump(c, d, { signal: AbortSignal.abort(new Error("gone")) });
  assertEquals([c.closes.length, d.closes.length, c.reader, d.reader], [1, 1, null, null]);
});

Deno.test("pump: nothing is read before both sides are ready; a side that ended first ends the pump", async () => {
  const client = new FakeEnd("the client", { ready: false });
  const terminal = new FakeEnd("the terminal");
  const done = pump(client, terminal);
  for (let i = 0; i < 10; i++) await Promise.resolve();
  assertEquals([client.reader, terminal.reader], [null, null]);
  client.open();
  await started(client, terminal);

  // The first side ends in `start` (it closed before it was ready): the second is never started.
  const early = new FakeEnd("the client");
  early.start = (reader) => reader.end({ code: 1006, reason: "" });
  const never = new FakeEnd("the terminal");
  await pump(early, never);
  assertEquals(never.reader, null);
  assertEquals(never.closes, [{ code: 1011, reason: "the connection to the client was lost" }]);
  client.reader!.end({ code: 1000, reason: "" });
  await done;
});

Deno.test("fitReason cuts a close reason to 123 bytes of UTF-8, never inside a character", () => {
  assertEquals(fitReason("short"), "short");
  const long = "é".repeat(100);
  const fitted = fitReason(long);
  assertEquals(encoder.encode(fitted).length, 122);
  assertEquals(fitted, "é".repeat(61));
});

// ---------------------------------------------------------------------------------------------------
// The adapters, on real sockets and a real PTY

/** A TCP server that echoes what it reads; `drop()` closes every connection it holds. */
function echoServer(): { port: number; drop(): void; close(): void } {
  const listener = Deno.listen({ hostname: "127.0.0.1", port: 0 });
  const conns = new Set<Deno.Conn>();
  (async () => {
    for await (const conn of listener) {
      conns.add(conn);
      (async () => {
        const buffer = new Uint8Array(65536);
        try {
          for (let n = await conn.read(buffer); n !== null; n = await conn.read(buffer)) {
            await conn.write(buffer.subarray(0, n));
          }
        } catch { /* closed */ }
      })();
    }
  })().catch(() => {});
  const drop = () => {
    for (const conn of conns) {
      try {
        conn.close();
      } catch { /* closed */ }
    }
    conns.clear();
  };
  return {
    port: (listener.addr as Deno.NetAddr).port,
    drop,
    close: () => {
      drop();
      listener.close();
    },
  };
}

Deno.test("a WebSocket and a TCP connection: bytes both ways unchanged, either end closes the other", async () => {
  const echo = echoServer();
  const pumps: Promise<void>[] = [];
  const server = Deno.serve({ hostname: "127.0.0.1", port: 0, onListen() {} }, async (request) => {
    const conn = await Deno.connect({ hostname: "127.0.0.1", port: echo.port });
    const { socket, response } = Deno.upgradeWebSocket(request);
    pumps.push(pump(webSocketEnd(socket, "the client"), connEnd(conn, "the echo server")));
    return response;
  });
  const url = `ws://127.0.0.1:${server.addr.port}`;
  try {
    const ws = new WebSocket(url);
    ws.binaryType = "arraybuffer";
    const received: Uint8Array[] = [];
    let total = 0;
    const payload = new Uint8Array(300_000).map((_, i) => i % 251);
    const all = Promise.withResolvers<void>();
    ws.onmessage = (event) => {
      received.push(new Uint8Array(event.data as ArrayBuffer));
      total += (event.data as ArrayBuffer).byteLength;
      if (total >= payload.length) all.resolve();
    };
    const closed = new Promise<CloseEvent>((resolve) => ws.onclose = resolve);
    await new Promise((resolve) => ws.onopen = resolve);
    for (let at = 0; at < payload.length; at += 50_000) ws.send(payload.subarray(at, at + 50_000));
    await all.promise;
    const joined = new Uint8Array(total);
    let offset = 0;
    for (const chunk of received) {
      joined.set(chunk, offset);
      offset += chunk.length;
    }
    assertEquals(joined, payload);
    // The connection ending (EOF) closes the socket normally.
    echo.drop();
    assertEquals((await closed).code, 1000);
    await pumps[0];

    // The client closing ends the connection to the echo server.
    const second = new WebSocket(url);
    await new Promise((resolve) => second.onopen = resolve);
    second.close(4001, "bye");
    await pumps[1];
  } finally {
    echo.close();
    await server.shutdown();
  }
});

Deno.test("a PTY: keys in, output out, input held until its first output; its exit closes the other side", async () => {
  const client = new FakeEnd("the client");
  const terminal = ptyEnd("the terminal", {
    launch: () =>
      launchPty("sh", ["-c", "printf ready; read line; echo got-$line; exit 3"], { cols: 80, rows: 24 }),
    holdInput: true,
    exited: (code, tail) => ({ code: 1000, reason: `exit ${code}: ${decoder.decode(tail).trim()}` }),
  });
  const done = pump(client, terminal);
  while (client.reader === null) await Promise.resolve();
  // Sent before the program wrote anything: held, then typed.
  client.reader.message({ binary: true, data: encoder.encode("abc\r") });
  await done;
  const output = client.sent.map((message) => decoder.decode(message.data)).join("");
  assert(output.includes("got-abc"), output);
  assertEquals(client.closes.length, 1);
  assertEquals(client.closes[0].code, 1000);
  assert(client.closes[0].reason.startsWith("exit 3: "), client.closes[0].reason);
  assert(client.closes[0].reason.endsWith("got-abc"), client.closes[0].reason);
});

Deno.test("a PTY: closing the other side hangs it up; a text message goes to its control", async () => {
  const client = new FakeEnd("the client");
  const exit = Promise.withResolvers<number>();
  const controls: string[] = [];
  const terminal = ptyEnd("the terminal", {
    launch: () => launchPty("cat", [], { cols: 80, rows: 24 }),
    control: (text) => controls.push(text),
    exited: (code) => {
      exit.resolve(code);
      return { code: 1000, reason: "" };
    },
  });
  const done = pump(client, terminal);
  while (client.reader === null) await Promise.resolve();
  client.reader.message({ binary: true, data: encoder.encode("echoed\r") });
  await client.received("echoed");
  client.reader.message({ binary: false, data: encoder.encode('{"type":"resize"}') });
  assertEquals(controls, ['{"type":"resize"}']);
  client.reader.end({ code: 1000, reason: "" });
  await done;
  // The hang-up ends `cat`; its exit comes after the pump is done and changes nothing.
  await exit.promise;
  assertEquals(client.closes, [{ code: undefined, reason: "" }]);
});
