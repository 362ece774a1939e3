/**
 * Whole-system test of a direct send whose answer is lost: `dock session send` through the agent to a
 * box killed while it types the prompt. The relay answers 502, the CLI asks again with the same key
 * once the box is back, the new daemon finishes the send the killed one started, and the prompt
 * arrives once, never twice.
 */
import { join } from "node:path";
import { assert, assertEquals } from "./assert.ts";
import { AgentClient } from "../client/agent.ts";
import {
  laptopEnv,
  makeDirs,
  makeRepo,
  runCli,
  slowTmux,
  startAgent,
  startBox,
  type TestBox,
} from "./harness.ts";
import { until } from "./wait.ts";

Deno.test("a send cut short by a kill -9 of the box is asked again with its key, finished and typed once", async () => {
  const dirs = await makeDirs();
  // A tmux that waits before pasting (and says so): the daemon is killed while a prompt is on its way.
  const pasting = join(dirs.root, "pasting");
  const env = { PATH: await slowTmux(dirs, "paste-buffer", 2, pasting) };
  let box: TestBox = await startBox({ dirs, env });
  await using agent = await startAgent(dirs);
  const client = new AgentClient({ url: agent.url, token: agent.token, origin: "test" });
  try {
    assertEquals((await client.addLocal("devbox")).online, true);
    const repo = await makeRepo(join(dirs.home, "work"), "app");
    await box.client.addLocation({ name: "app", path: repo });
    // The lines the program reads go to a file: on the screen only the terminal's echo shows.
    const out = join(dirs.root, "out.txt");
    await box.client.createSession({ location: "app", name: "s1", command: `cat > '${out}'` });

    const cliEnv = laptopEnv(dirs, agent);
    const sending = runCli("dock", ["session", "send", "devbox/s1", "typed-once-token"], {
      env: cliEnv,
      cwd: dirs.home,
    });
    await until(() => Deno.stat(pasting).then(() => true), { watch: pasting });
    await box.stop({ kill: true }); // the paste goes on without it: tmux does not need the daemon
    box = await startBox({ dirs, env });
    const sent = await sending;
    // The daemon died between recording the key and knowing the paste ended. The new one finds the
    // send's slot claimed by the killed one's tmux, still on its way: it waits for that paste (or
    // makes it itself), and presses the Enter once.
    assertEquals(sent.code, 0, sent.stderr);
    await until(async () => (await Deno.readTextFile(out)).includes("\n"), { watch: out });
    assertEquals(await Deno.readTextFile(out), "typed-once-token\n");
    const screen = (await box.client.screen("s1")).screen;
    assertEquals(screen.split("typed-once-token").length - 1, 1, screen);
    assert(!(await box.client.session("s1")).exited);
  } finally {
    client.close();
    await box[Symbol.asyncDispose]();
  }
});
