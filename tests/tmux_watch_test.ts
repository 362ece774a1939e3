/**
 * The files the tests' tmux waits watch (tmux_watch.ts): the pane's output grows with what the session
 * prints, so a wait on it wakes when the screen changes (a session that does not exist is refused); the
 * changes file grows with each change of the server's clients and window sizes.
 */
import { assertEquals, assertRejects, assertStringIncludes } from "./assert.ts";
import { makeDirs, makeRepo, startBox } from "./harness.ts";
import { clientChanges, paneOutput, paneOutputAt } from "./tmux_watch.ts";
import { until } from "./wait.ts";

Deno.test("paneOutput: a file that grows with what the pane prints; an unknown session is refused", async () => {
  const dirs = await makeDirs();
  await using box = await startBox({ dirs });
  await box.client.addLocation({ name: "app", path: await makeRepo(dirs.home, "app") });
  await box.client.createSession({ location: "app", command: "sh", name: "printer" });
  const printed = await paneOutput(box, "printer");
  await box.client.send("printer", "echo printed-$((6*7))");
  // Woken only by the file (no backoff with a watch): the pane's own bytes, the echo's answer among them.
  const text = await until(async () => {
    const bytes = await Deno.readTextFile(printed);
    return bytes.includes("printed-42\r\n") && bytes;
  }, { watch: printed, what: "the echo in the pane's output file" });
  assertStringIncludes(text, "echo printed-$((6*7))");
  await assertRejects(() => paneOutput(box, "nobody"), Error, "nobody");
});

Deno.test("clientChanges: a line for each change of a tmux server's windows' sizes (and its clients)", async () => {
  const root = await Deno.makeTempDir();
  const socket = `${root}/tmux.sock`;
  const tmux = (...args: string[]) =>
    new Deno.Command("tmux", { args: ["-S", socket, ...args], stdin: "null" }).output();
  try {
    assertEquals(
      (await tmux("new-session", "-d", "-s", "w", "-x", "80", "-y", "24", "sleep 60")).success,
      true,
    );
    const changes = await clientChanges(socket, root);
    assertEquals((await tmux("resize-window", "-t", "=w:", "-x", "100", "-y", "30")).success, true);
    const lines = await until(async () => {
      const text = await Deno.readTextFile(changes);
      return text.includes("window-layout-changed") && text;
    }, { watch: changes, what: "the resize in the changes file" });
    assertStringIncludes(lines, "window-layout-changed\n");
  } finally {
    await tmux("kill-server");
    await Deno.remove(root, { recursive: true });
  }
});

Deno.test("paneOutputAt: the same for a pane of a tmux server of the test's own", async () => {
  const root = await Deno.makeTempDir();
  const socket = `${root}/tmux.sock`;
  const tmux = (...args: string[]) =>
    new Deno.Command("tmux", { args: ["-S", socket, "-f", "/dev/null", ...args], stdin: "null" }).output();
  try {
    assertEquals((await tmux("new-session", "-d", "-s", "own", "-x", "80", "-y", "24", "sh")).success, true);
    const printed = await paneOutputAt(socket, "=own:", root);
    assertEquals((await tmux("send-keys", "-t", "=own:", "echo own-$((6*7))", "Enter")).success, true);
    await until(async () => (await Deno.readTextFile(printed)).includes("own-42\r\n"), {
      watch: printed,
      what: "the echo in the pane's output file",
    });
    await assertRejects(() => paneOutputAt(socket, "=nobody:", root), Error, "nobody");
  } finally {
    await tmux("kill-server");
    await Deno.remove(root, { recursive: true });
  }
});
