/**
 * A minimal keep-alive HTTP/1.1 server on a unix socket, written by hand so a test can end a connection
 * exactly where a dying box would (after reading a request, before answering) and count connections.
 *
 * @module
 */

const encoder = new TextEncoder();
const decoder = new TextDecoder();

/** What the raw server does with one request: answer it, or close the connection without a word. */
export type Reply =
  | { status?: number; headers?: Record<string, string>; body?: string | Uint8Array; raw?: string }
  | "close";

/** A running raw server. */
export interface RawServer {
  socket: string;
  /** Connections accepted, requests read whole (the handler ran), and connections open at once at most. */
  counts: { connections: number; requests: number; peak: number };
  /** The `n`th request on a connection (1-based), its method, path and body. */
  seen: { method: string; path: string; body: string; nth: number }[];
  stop(): Promise<void>;
}

/** A minimal keep-alive HTTP/1.1 server on a unix socket; `reply` decides each request's fate. */
export async function rawServer(
  reply: (request: { method: string; path: string; body: string; nth: number }) => Reply | Promise<Reply>,
): Promise<RawServer> {
  const dir = await Deno.makeTempDir();
  const socket = `${dir}/box.sock`;
  const listener = Deno.listen({ transport: "unix", path: socket });
  const counts = { connections: 0, requests: 0, peak: 0 };
  const seen: RawServer["seen"] = [];
  const conns = new Set<Deno.Conn>();
  const serveConn = async (conn: Deno.Conn) => {
    counts.connections++;
    conns.add(conn);
    counts.peak = Math.max(counts.peak, conns.size);
    let buffer = new Uint8Array(0);
    const more = async () => {
      const chunk = new Uint8Array(65536);
      const n = await conn.read(chunk);
      if (n === null) return false;
      const next = new Uint8Array(buffer.length + n);
      next.set(buffer);
      next.set(chunk.subarray(0, n), buffer.length);
      buffer = next;
      return true;
    };
    try {
      for (let nth = 1;; nth++) {
        let end: number;
        while ((end = decoder.decode(buffer).indexOf("\r\n\r\n")) < 0) if (!await more()) return;
        const head = decoder.decode(buffer.subarray(0, end)).split("\r\n");
        const length = Number(/^content-length: (\d+)$/im.exec(head.join("\n"))?.[1] ?? 0);
        while (buffer.length < end + 4 + length) if (!await more()) return;
        const sent = decoder.decode(buffer.subarray(end + 4, end + 4 + length));
        buffer = buffer.subarray(end + 4 + length);
        const [method, path] = head[0].split(" ");
        const request = { method, path, body: sent, nth };
        counts.requests++;
        seen.push(request);
        const answer = await reply(request);
        if (answer === "close") return;
        if (answer.raw !== undefined) {
          await conn.write(encoder.encode(answer.raw));
          continue;
        }
        const body = typeof answer.body === "string" || answer.body === undefined
          ? encoder.encode(answer.body ?? "")
          : answer.body;
        const headers = Object.entries({ "content-length": String(body.length), ...answer.headers })
          .map(([name, value]) => `${name}: ${value}\r\n`).join("");
        const top = encoder.encode(`HTTP/1.1 ${answer.status ?? 200} OK\r\n${headers}\r\n`);
        const bytes = new Uint8Array(top.length + body.length);
        bytes.set(top);
        bytes.set(body, top.length);
        for (let at = 0; at < bytes.length;) at += await conn.write(bytes.subarray(at));
      }
    } catch {
      // the client went away
    } finally {
      conns.delete(conn);
      try {
        conn.close();
      } catch { /* closed */ }
    }
  };
  const loop = (async () => {
    for await (const conn of listener) serveConn(conn);
  })().catch(() => {});
  return {
    socket,
    counts,
    seen,
    async stop() {
      listener.close();
      for (const conn of conns) conn.close();
      await loop;
      await Deno.remove(dir, { recursive: true });
    },
  };
}
