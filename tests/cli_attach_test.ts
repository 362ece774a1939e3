/**
 * Whole-system test of `dock attach BOX/SESSION` (issue 30 item 4) in a real terminal: the command runs
 * in a pane of a test tmux server of its own (not the box's), against a real agent and box, and the test
 * types into that pane and reads its screen through tmux (`send-keys`, `capture-pane`). It checks the
 * detach key printed on start, keystrokes reaching the session, a resize reaching it (SIGWINCH), a
 * detach that leaves the session running (exit 0), and the program's own exit code when it ends.
 */
import { join } from "node:path";
import { assertEquals, assertStringIncludes } from "./assert.ts";
import { AgentClient } from "../client/agent.ts";
import {
  type BoxDirs,
  killProcessesUnder,
  laptopEnv,
  makeDirs,
  makeRepo,
  runCli,
  startAgent,
  startBox,
  type TestAgent,
  type TestBox,
} from "./harness.ts";
import { paneOutput, paneOutputAt } from "./tmux_watch.ts";
import { until } from "./wait.ts";

const DOCK = new URL("../cli/dock.ts", import.meta.url).pathname;

/** A tmux server of the test's own, where `dock attach` runs as a person would run it. */
class Terminal {
  #socket: string;
  #root: string;
  /** The server at `socket`; the files its waits watch go in folders under `root`. */
  constructor(socket: string, root: string) {
    this.#socket = socket;
    this.#root = root;
  }

  async tmux(...args: string[]): Promise<string> {
    const output = await new Deno.Command("tmux", { args: ["-S", this.#socket, "-f", "/dev/null", ...args] })
      .output();
    if (!output.success) {
      throw new Error(`tmux ${args.join(" ")}: ${new TextDecoder().decode(output.stderr)}`);
    }
    return new TextDecoder().decode(output.stdout);
  }

  /** Runs `script` in a new window `name` (a session of its own), 100×30. */
  async open(name: string, script: string): Promise<void> {
    await this.tmux("new-session", "-d", "-s", name, "-x", "100", "-y", "30", script);
  }

  /** The window's screen now. */
  screen(name: string): Promise<string> {
    return this.tmux("capture-pane", "-p", "-J", "-t", `=${name}:`);
  }

  /** Waits until the window's screen holds `text`, re-checking as its pane prints; returns the screen. */
  async shows(name: string, text: string | RegExp, timeoutMs = 30_000): Promise<string> {
    const printed = await paneOutputAt(this.#socket, `=${name}:`, this.#root);
    return await until(async () => {
      const screen = await this.screen(name);
      return (typeof text === "string" ? screen.includes(text) : text.test(screen)) ? screen : undefined;
    }, { timeoutMs: timeoutMs, watch: printed });
  }

  /** Types `text` literally into the window. */
  async type(name: string, text: string): Promise<void> {
    await this.tmux("send-keys", "-t", `=${name}:`, "-l", text);
  }

  /** Presses keys by tmux's names (`Enter`, `C-]`). */
  async press(name: string, ...keys: string[]): Promise<void> {
    await this.tmux("send-keys", "-t", `=${name}:`, ...keys);
  }

  async close(): Promise<void> {
    await this.tmux("kill-server").catch(() => {});
  }
}

/** A script that runs `dock attach TARGET` with the test's environment and writes its exit code to `code`. */
async function attachScript(dirs: BoxDirs, agent: TestAgent, target: string, code: string): Promise<string> {
  const env = laptopEnv(dirs, agent);
  const script = join(dirs.root, `attach-${crypto.randomUUID().slice(0, 8)}.sh`);
  const quote = (value: string) => `'${value.replaceAll("'", `'\\''`)}'`;
  await Deno.writeTextFile(
    script,
    `#!/bin/sh
${Object.entries(env).map(([key, value]) => `export ${key}=${quote(value)}`).join("\n")}
${quote(Deno.execPath())} run -A --cached-only ${quote(DOCK)} attach ${quote(target)}
echo $? > ${quote(code)}
exec sleep 600
`,
    { mode: 0o755 },
  );
  return script;
}

async function readCode(file: string): Promise<number> {
  return await until(async () => {
    const text = (await Deno.readTextFile(file).catch(() => "")).trim();
    return text === "" ? undefined : Number(text);
  }, { watch: file, timeoutMs: 30_000 });
}

Deno.test("dock attach: typed keys reach the session, a resize follows the window, Ctrl+] detaches (0), the program's exit code ends it", async () => {
  const dirs = await makeDirs();
  const box: TestBox = await startBox({ dirs });
  const agent = await startAgent(dirs);
  const client = new AgentClient({ url: agent.url, token: agent.token, origin: "test" });
  const terminal = new Terminal(join(dirs.root, "outer.sock"), dirs.root);
  try {
    assertEquals((await client.addLocal("devbox")).online, true);
    await box.client.addLocation({ name: "app", path: await makeRepo(join(dirs.home, "work"), "app") });
    await box.client.createSession({ location: "app", command: "sh", name: "s1" });

    // Attach, and see the detach key named.
    const firstCode = join(dirs.root, "first.code");
    await terminal.open("one", await attachScript(dirs, agent, "devbox/s1", firstCode));
    await until(async () => {
      await terminal.type("one", "echo ATTACHED-$((6*7))");
      await terminal.press("one", "Enter");
      return (await terminal.shows("one", "ATTACHED-42", 2000).catch(() => undefined)) !== undefined;
    }, { timeoutMs: 60_000 });
    // The box's session got the keystrokes (not only the screen here).
    const printed = await paneOutput(box, "s1");
    await until(async () => (await box.client.screen("s1")).screen.includes("ATTACHED-42"), {
      watch: printed,
    });

    // The window grows: the session's terminal follows (SIGWINCH → a resize frame → the box's PTY).
    await terminal.tmux("resize-window", "-t", "=one:", "-x", "123", "-y", "37");
    await until(async () => {
      await terminal.type("one", "stty size");
      await terminal.press("one", "Enter");
      return (await terminal.shows("one", /^37 123\s*$/m, 2000).catch(() => undefined)) !== undefined;
    }, { timeoutMs: 30_000 });

    // Ctrl+] detaches: exit 0, the terminal given back, the session still running.
    await terminal.press("one", "C-]");
    assertEquals(await readCode(firstCode), 0);
    const after = await terminal.shows("one", "detached from devbox/s1");
    assertStringIncludes(after, "detach: Ctrl+]");
    const still = await box.client.session("s1");
    assertEquals(still.exited, false);

    // Attached again, the program exits 7: `dock attach` ends with 7.
    const secondCode = join(dirs.root, "second.code");
    await terminal.open("two", await attachScript(dirs, agent, "devbox/s1", secondCode));
    await until(async () => {
      await terminal.type("two", "echo AGAIN-$((7*7))");
      await terminal.press("two", "Enter");
      return (await terminal.shows("two", "AGAIN-49", 2000).catch(() => undefined)) !== undefined;
    }, { timeoutMs: 60_000 });
    await terminal.type("two", "exit 7");
    await terminal.press("two", "Enter");
    assertEquals(await readCode(secondCode), 7);
    await terminal.shows("two", "ended with exit code 7");
    assertEquals((await box.client.session("s1")).exit_code, 7);

    // Attaching to a program that has ended says so, with its code, at once.
    const thirdCode = join(dirs.root, "third.code");
    await terminal.open("three", await attachScript(dirs, agent, "devbox/s1", thirdCode));
    assertEquals(await readCode(thirdCode), 7);
    await terminal.shows("three", "its program has ended (exit code 7)");

    // Without a terminal, or at an unknown session: an error, not a hang.
    const env = laptopEnv(dirs, agent);
    const piped = await runCli("dock", ["attach", "devbox/s1"], { env, cwd: dirs.home });
    assertEquals(piped.code, 2, piped.stderr);
    assertStringIncludes(piped.stderr, "needs a terminal");
    const fourthCode = join(dirs.root, "fourth.code");
    await terminal.open("four", await attachScript(dirs, agent, "devbox/nobody", fourthCode));
    assertEquals(await readCode(fourthCode), 1);
    await terminal.shows("four", "not found");
  } finally {
    await terminal.close();
    client.close();
    await agent.stop();
    await box.stop();
    killProcessesUnder(dirs.root);
    await Deno.remove(dirs.root, { recursive: true }).catch(() => {});
  }
});
