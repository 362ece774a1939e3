/**
 * `dockd session new|list|rm|screen|send|wait`, `dockd task new` and `dockd loop` (spec 4.4; on a
 * box the commands take no `BOX/` prefix).
 *
 * @module
 */
import type { Command } from "@commander-js/extra-typings";
import type { BoxClient } from "../client/box.ts";
import { DockError } from "../client/errors.ts";
import type { WaitResult } from "../client/wire.ts";
import { localBox } from "./client.ts";
import { guarded, printJson, table } from "./output.ts";

/** Exit codes of `send --wait`, `wait` and `loop`, so scripts can tell the outcomes apart. */
export const EXIT = { ok: 0, failed: 1, timedOut: 124, waitingForHuman: 3, exited: 4 } as const;

/** Adds `session`, `task` and `loop`. */
export function sessionCommands(program: Command, box: () => BoxClient = localBox): void {
  const session = program.command("session").description("terminal sessions (usually coding agents)");

  session.command("new").description("start a session in a location or worktree").argument("<location>")
    .option("--agent <id>", "agent preset (claude, codex, opencode, gemini, cursor, or the config's)")
    .option("--prompt <text>", "the agent's first prompt").option("--command <command>", "run this instead")
    .option("--name <name>", "session name").option("--json", "print JSON")
    .action((location, o) =>
      guarded(async () => {
        const created = await box().createSession({
          location,
          agent: o.agent,
          prompt: o.prompt,
          command: o.command,
          name: o.name,
        });
        if (o.json) return printJson(created);
        console.log(`started ${created.name} in ${created.location}/${created.worktree}`);
      })
    );

  session.command("list").alias("ls").description("list sessions").option("--json", "print JSON").action((
    o,
  ) =>
    guarded(async () => {
      const sessions = await box().sessions();
      if (o.json) return printJson(sessions);
      table(
        ["SESSION", "WORKTREE", "AGENT", "STATE", "EXITED"],
        sessions.map((
          s,
        ) => [
          s.name,
          `${s.location}/${s.worktree}`,
          s.agent,
          s.agent_state,
          s.exited ? `yes (${s.exit_code})` : "no",
        ]),
      );
    })
  );

  session.command("rm").alias("remove").description("end a session and everything it started").argument(
    "<name>",
  )
    .action((name) =>
      guarded(async () => {
        await box().removeSession(name);
        console.log(`ended ${name}`);
      })
    );

  session.command("screen").description("print a session's screen").argument("<name>")
    .option("--history <lines>", "lines of scrollback above the screen", Number).action((name, o) =>
      guarded(async () => {
        await Deno.stdout.write(new TextEncoder().encode((await box().screen(name, o.history)).screen));
      })
    );

  session.command("send").description("type a prompt into a session").argument("<name>").argument("<text>")
    .option("--no-enter", "do not press Enter after the text")
    .option("--wait", "wait for the turn the prompt starts to end")
    .option("--timeout <duration>", "how long --wait waits", "30m").option("--json", "print the wait result")
    .action((name, text, o) =>
      guarded(async () => {
        const client = box();
        const before = new Date().toISOString();
        const sent = await client.send(name, text, { enter: o.enter });
        if (!o.wait) return;
        // Only states reported after the prompt count: the daemon's own time of the send, if it has one.
        const after = sent.state_time && sent.state_time >= before ? sent.state_time : before;
        const result = await client.wait(name, { after, timeout: o.timeout });
        finish(result, o.json);
      })
    );

  session.command("wait").description("wait until the agent is finished or waiting (or the given states)")
    .argument("<name>").option("--for <states>", "comma-separated states", "finished,waiting")
    .option("--timeout <duration>", "how long to wait", "10m").option("--json", "print JSON")
    .action((name, o) =>
      guarded(async () => {
        finish(await box().wait(name, { states: o.for.split(","), timeout: o.timeout }), o.json);
      })
    );

  program.command("task").description("tasks: a new worktree with an agent running in it").command("new")
    .description("create a worktree and start an agent in it").argument("<location/name>")
    .option("--agent <id>", "agent preset").option("--prompt <text>", "first prompt")
    .option("--command <command>", "run this instead of a preset").option("--branch <branch>", "branch")
    .option("--base <ref>", "start point").option("--from-session <name>", "the session handing off")
    .option("--json", "print JSON")
    .action((spec, o) =>
      guarded(async () => {
        const [location, name, extra] = spec.split("/");
        if (!location || !name || extra !== undefined) {
          throw new DockError("usage", `expected LOCATION/NAME, got "${spec}"`, { status: 400 });
        }
        const task = await box().createTask({
          location,
          name,
          agent: o.agent,
          prompt: o.prompt,
          command: o.command,
          branch: o.branch,
          base: o.base,
          from_session: o.fromSession,
        });
        if (o.json) return printJson(task);
        console.log(
          `task ${location}/${task.worktree.name}: session ${task.session.name} at ${task.worktree.path}`,
        );
      })
    );

  program.command("loop").description("prompt, wait, run a check, and send its failures back until it passes")
    .argument("<session>").requiredOption("--check <command>", "the check, run in the session's worktree")
    .requiredOption("--prompt <text>", "the first prompt").option(
      "--max <rounds>",
      "rounds at most",
      Number,
      5,
    )
    .option("--turn-timeout <duration>", "how long one turn may take", "30m")
    .action((name, o) =>
      guarded(async () => {
        Deno.exit(
          await loop(box(), name, {
            check: o.check,
            prompt: o.prompt,
            max: o.max,
            turnTimeout: o.turnTimeout,
          }),
        );
      })
    );
}

/** Options of {@linkcode loop}. */
export interface LoopOptions {
  check: string;
  prompt: string;
  /** @default {5} */
  max: number;
  turnTimeout: string;
  log?: (line: string) => void;
}

/** Runs `dock loop`; returns the exit code (0 when the check passed). */
export async function loop(client: BoxClient, name: string, options: LoopOptions): Promise<number> {
  const log = options.log ?? ((line: string) => console.error(line));
  const session = await client.session(name);
  const where = `${session.location}/${session.worktree}`;
  let text = options.prompt;
  for (let round = 1; round <= options.max; round++) {
    const before = new Date().toISOString();
    const sent = await client.send(name, text);
    const after = sent.state_time && sent.state_time >= before ? sent.state_time : before;
    const turn = await client.wait(name, { after, timeout: options.turnTimeout });
    if (turn.timed_out) {
      log(`loop: round ${round}: the turn did not end within ${options.turnTimeout}`);
      return EXIT.timedOut;
    }
    if (turn.exited) {
      log(`loop: round ${round}: the agent's program exited`);
      return EXIT.exited;
    }
    if (turn.state === "waiting") {
      // Never answer on the human's behalf: stop and let a person look.
      log(`loop: round ${round}: the agent is waiting for a human; stopping`);
      return EXIT.waitingForHuman;
    }
    const check = await client.exec({ location: where, command: options.check });
    if (check.exit_code === 0) {
      log(`loop: the check passed on round ${round}`);
      return EXIT.ok;
    }
    log(`loop: round ${round}: the check failed (exit ${check.exit_code})`);
    text =
      `The check \`${options.check}\` failed with exit code ${check.exit_code}. Its output ends with:\n\n` +
      `${check.output.slice(-8000)}\n\nPlease fix the cause and try again.`;
  }
  log(`loop: the check still fails after ${options.max} rounds`);
  return EXIT.failed;
}

function finish(result: WaitResult, asJson?: boolean): never {
  if (asJson) printJson(result);
  else {console.log(
      result.timed_out
        ? `timed out (${result.state})`
        : result.exited
        ? `exited (${result.state})`
        : result.state,
    );}
  Deno.exit(
    result.timed_out
      ? EXIT.timedOut
      : result.exited
      ? EXIT.exited
      : result.state === "waiting"
      ? EXIT.waitingForHuman
      : EXIT.ok,
  );
}
