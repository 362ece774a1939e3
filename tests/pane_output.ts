/**
 * A file that grows with everything a test box's tmux pane prints (tmux `pipe-pane`), for `until`'s
 * `watch` (tests/wait.ts): a wait on a session's screen re-checks when the pane prints, not on a backoff.
 * tmux's control mode would say so directly, but tmux 3.3a's server crashes when a control client
 * attaches while another client makes a session (daemon/tmux_clients.ts).
 *
 * @module
 */
import { join } from "node:path";
import type { BoxDirs } from "./harness.ts";

/**
 * Starts copying what session `session`'s pane prints (from now on) into a file of a folder of its own,
 * and resolves with that file's path: a pane has one pipe, so this ends the file of an earlier call for
 * the same pane. Throws when tmux refuses (no such session).
 */
export async function paneOutput(box: { dirs: BoxDirs }, session: string): Promise<string> {
  const folder = await Deno.makeTempDir({ dir: box.dirs.root, prefix: "pane-" });
  const file = join(folder, "out");
  await Deno.writeFile(file, new Uint8Array());
  const socket = join(box.dirs.state, "box", "tmux.sock");
  // tmux's server runs the command with its own environment: the path goes in as text, single-quoted
  // (a temporary folder of the test's own, which holds no quote).
  if (file.includes("'")) throw new Error(`a pane's output file cannot be quoted: ${file}`);
  const output = await new Deno.Command("tmux", {
    args: ["-S", socket, "pipe-pane", "-t", `=${session}:`, `exec cat >> '${file}'`],
    stdin: "null",
  }).output();
  if (!output.success) {
    throw new Error(`tmux pipe-pane ${session}: ${new TextDecoder().decode(output.stderr).trim()}`);
  }
  return file;
}
