/**
 * The floor of the box API's round trips, shared by the sections that compare with it: `json_server.ts`
 * (a bare `Deno.serve` on a unix socket answering a small JSON) started in a process of its own, as the
 * daemon is, so the floor pays the same wake-up of another process.
 *
 * @module
 */

/** The floor's answer: the same small JSON as `json_server.ts`. */
export const FLOOR_BODY = JSON.stringify({ name: "box", os: "linux", ok: true });

/**
 * Starts `json_server.ts` on `socket` (`tcp`: a free loopback port, `port` then) answering `bodyFile`'s
 * text if given, and resolves once it listens.
 */
export async function startJsonServer(
  socket: string,
  bodyFile?: string,
): Promise<{ port?: number; stop(): Promise<void> }> {
  const server = new URL("./json_server.ts", import.meta.url).pathname;
  const child = new Deno.Command(Deno.execPath(), {
    args: ["run", "-A", "--cached-only", server, socket, ...(bodyFile ? [bodyFile] : [])],
    stdout: "piped",
    stderr: "inherit",
  }).spawn();
  const reader = child.stdout.pipeThrough(new TextDecoderStream()).getReader();
  const first = await reader.read();
  if (!first.value?.includes("ready")) throw new Error("json_server.ts did not start");
  const port = Number(/ready (\d+)/.exec(first.value)?.[1]) || undefined;
  return {
    port,
    async stop() {
      child.kill("SIGKILL");
      await child.status;
      await reader.cancel().catch(() => {});
    },
  };
}
