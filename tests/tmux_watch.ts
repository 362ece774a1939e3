/**
 * Files that grow as a tmux server changes, for `until`'s `watch` (tests/wait.ts): what a pane prints
 * (`pipe-pane`), and each client attached, detached or resized (hooks), so a wait on a session's screen
 * or on its clients re-checks when tmux says something changed, not on a backoff. tmux's control mode
 * would say so directly, but tmux 3.3a's server crashes when a control client attaches while another
 * client makes a session (daemon/tmux_clients.ts).
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
  return await paneOutputAt(join(box.dirs.state, "box", "tmux.sock"), `=${session}:`, box.dirs.root);
}

/**
 * {@linkcode paneOutput} for a pane of any tmux server: the pane `target` names (as tmux's `-t` takes it,
 * `=name:`) on the server at `socket` (a test's own), its file in a folder made under `root`.
 */
export async function paneOutputAt(socket: string, target: string, root: string): Promise<string> {
  const file = await emptyFile(root, "pane-", "out");
  await tmux(socket, ["pipe-pane", "-t", target, `exec cat >> '${file}'`]);
  return file;
}

/** The hooks {@linkcode clientChanges} sets: every way a session's clients or its window's size change. */
const CLIENT_HOOKS = [
  "client-attached",
  "client-detached",
  "client-resized",
  "client-session-changed",
  "window-layout-changed",
];

/**
 * Sets hooks on the tmux server at `socket` (a test box's: `<state>/box/tmux.sock`, or a test's own) that
 * append a line to a file of a folder of its own at each client attached, detached or resized and each
 * window layout change (a size), and resolves with that file's path. The hooks take a slot of their own
 * (index 90), so hooks of the server's own are kept.
 */
export async function clientChanges(socket: string, root: string): Promise<string> {
  const file = await emptyFile(root, "tmux-clients-", "changes");
  // One tmux client sets them all: commands apart by a `;` argument.
  await tmux(
    socket,
    CLIENT_HOOKS.flatMap((hook, i) => [
      ...(i ? [";"] : []),
      "set-hook",
      "-g",
      `${hook}[90]`,
      `run-shell -b "echo ${hook} >> '${file}'"`,
    ]),
  );
  return file;
}

/**
 * An empty file `name` in a new folder under `root` (a watch of it wakes on nothing else), whose path
 * may go into a tmux command's text: tmux's server runs such a command with its own environment, so the
 * path goes in single-quoted, and a path holding a quote is refused.
 */
async function emptyFile(root: string, prefix: string, name: string): Promise<string> {
  const file = join(await Deno.makeTempDir({ dir: root, prefix }), name);
  if (file.includes("'")) throw new Error(`a path tmux cannot be given quoted: ${file}`);
  await Deno.writeFile(file, new Uint8Array());
  return file;
}

/** Runs one tmux client on the server at `socket`; throws with its stderr when it fails. */
async function tmux(socket: string, args: string[]): Promise<void> {
  const output = await new Deno.Command("tmux", { args: ["-S", socket, ...args], stdin: "null" }).output();
  if (!output.success) {
    throw new Error(`tmux ${args[0]}: ${new TextDecoder().decode(output.stderr).trim()}`);
  }
}
