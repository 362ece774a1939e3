/**
 * `session new|list|rm|screen|send|keys|answer|wait`, `task new` and `loop` (spec 4.4): `dock session send
 * devbox/s1 TEXT` from the laptop; on a box, `dockd` takes the same commands without the `BOX/` prefix.
 *
 * @module
 */
import { type Command, positiveInteger } from "./commander.ts";
import type { BoxClient } from "../client/box.ts";
import { DockError } from "../client/errors.ts";
import { KEY_NAMES, type WaitResult } from "../client/wire.ts";
import { printJson, table } from "./output.ts";
import { gather, listing, named, type Scope } from "./target.ts";

/** Exit codes of `send --wait`, `wait` and `loop`, so scripts can tell the outcomes apart. */
export const EXIT = { ok: 0, failed: 1, timedOut: 124, waitingForHuman: 3, exited: 4 } as const;

/** Adds `session`, `task` and `loop`. */
export function sessionCommands(program: Command, scope: Scope): void {
  const session = program.command("session").description("terminal sessions (usually coding agents)");

  session.command("new").description("start a session in a location or worktree").argument(
    scope.arg("location"),
  )
    .option("--agent <id>", "agent preset (claude, codex, opencode, gemini, cursor, or the config's)")
    .option("--prompt <text>", "the agent's first prompt").option("--command <command>", "run this instead")
    .option("--name <name>", "session name").option("--json", "print JSON")
    .action((spec, o) =>
      scope.run(async () => {
        const target = await scope.resolve(spec, "LOCATION[/WORKTREE]");
        const created = await target.client.createSession({
          location: target.rest.join("/"),
          agent: o.agent,
          prompt: o.prompt,
          command: o.command,
          name: o.name,
        });
        if (o.json) return printJson(created);
        console.log(
          `started ${named(target, created.name)} in ${
            named(target, `${created.location}/${created.worktree}`)
          }`,
        );
      })
    );

  listing(
    scope,
    session.command("list").alias("ls").description("list sessions").option("--json", "print JSON"),
    async (targets, o) => {
      const sessions = await gather(targets, (t) => t.client.sessions());
      if (o.json) return printJson(sessions);
      table(
        ["SESSION", "WORKTREE", "AGENT", "STATE", "EXITED"],
        sessions.map((
          s,
        ) => [
          named(s, s.name),
          `${s.location}/${s.worktree}`,
          s.agent,
          s.reason ? `${s.agent_state} (${s.reason})` : s.agent_state,
          s.exited ? `yes (${s.exit_code})` : "no",
        ]),
      );
    },
  );

  session.command("show").description("a session's state, why it waits, and what changed it last")
    .argument(scope.arg("name")).option("--json", "print JSON").action((spec, o) =>
      scope.run(async () => {
        const target = await scope.resolve(spec, "SESSION");
        const shown = await target.client.session(target.rest[0]);
        if (o.json) return printJson(shown);
        console.log(
          `${named(target, shown.name)}: ${shown.agent ?? "no agent"} in ${shown.location}/${shown.worktree}`,
        );
        console.log(
          `state: ${shown.agent_state}${shown.reason ? ` (${shown.reason})` : ""} since ${
            shown.state_time ?? "-"
          }` +
            (shown.exited ? `; exited (${shown.exit_code})` : ""),
        );
        table(
          ["TIME", "STATE", "REASON", "CAUSE"],
          (shown.history ?? []).map((c) => [c.time, c.state, c.reason ?? "", c.cause]),
        );
      })
    );

  session.command("rm").alias("remove").description("end a session and everything it started").argument(
    scope.arg("name"),
  )
    .action((spec) =>
      scope.run(async () => {
        const target = await scope.resolve(spec, "SESSION");
        await target.client.removeSession(target.rest[0]);
        console.log(`ended ${named(target, target.rest[0])}`);
      })
    );

  session.command("screen").description("print a session's screen").argument(scope.arg("name"))
    .option("--history <lines>", "lines of scrollback above the screen", Number).action((spec, o) =>
      scope.run(async () => {
        const { client, rest: [name] } = await scope.resolve(spec, "SESSION");
        await Deno.stdout.write(new TextEncoder().encode((await client.screen(name, o.history)).screen));
      })
    );

  const send = session.command("send").description("type a prompt into a session").argument(scope.arg("name"))
    .argument("<text>")
    .option("--no-enter", "do not press Enter after the text")
    .option("--wait", "wait for the turn the prompt starts to end")
    .option("--timeout <duration>", "how long --wait waits", "30m").option("--json", "print the wait result");
  if (scope.kind === "laptop") {
    send.option("--queue", "when the box cannot be reached, put the prompt in the offline queue");
  }
  send.action((spec, text, o) =>
    scope.run(async () => {
      const target = await scope.resolve(spec, "SESSION");
      const { client, rest: [name] } = target;
      const before = new Date().toISOString();
      let sent;
      try {
        // With a key, and asked again with it when the answer is lost: typed once, whatever the path does.
        sent = await client.sendOnce(name, text, { enter: o.enter });
      } catch (error) {
        // Only a request that never reached the box (503) is queued: after a 502 it may have been typed.
        const queue = (o as { queue?: boolean }).queue;
        if (!queue || !scope.agent || !(error instanceof DockError) || error.status !== 503) throw error;
        const item = await (await scope.agent()).enqueue({
          box: target.box!,
          session: name,
          text,
          enter: o.enter,
        });
        console.log(
          `${target.box} cannot be reached; queued as ${item.id}: it is sent once the box is back ` +
            `(dock queue list)`,
        );
        return;
      }
      if (!o.wait) return;
      // Only states reported after the prompt count: the daemon's own time of the send, if it has one.
      const after = sent.state_time && sent.state_time >= before ? sent.state_time : before;
      const result = await client.wait(name, { after, timeout: o.timeout });
      finish(result, o.json);
    })
  );

  session.command("keys").description(
    "type keystrokes into a session: characters, or named keys (Enter, Escape, Tab, Up, Down, Left, Right, " +
      "C-c, C-d, Space, BSpace); never pasted, so a menu takes them",
  ).argument(scope.arg("name")).argument("<keys...>").option("--json", "print JSON")
    .action((spec, keys, o) =>
      scope.run(async () => {
        const target = await scope.resolve(spec, "SESSION");
        const { client, rest: [name] } = target;
        // A word that is not a key name is its characters, one key each (`yes` is y, e, s).
        const typed = await client.keys(name, splitKeys(keys));
        if (o.json) return printJson(typed);
        console.log(`typed ${typed.typed} key${typed.typed === 1 ? "" : "s"} into ${named(target, name)}`);
      })
    );

  session.command("answer").description(
    "answer the agent's permission prompt: yes, no or always (the keys its tool takes); refused when it " +
      "waits on none",
  ).argument(scope.arg("name")).argument("<answer>").option("--json", "print JSON")
    .action((spec, answer, o) =>
      scope.run(async () => {
        if (answer !== "yes" && answer !== "no" && answer !== "always") {
          throw new DockError(
            "invalid_request",
            `answer: must be yes, no or always, got ${JSON.stringify(answer)}`,
            {
              status: 400,
            },
          );
        }
        const target = await scope.resolve(spec, "SESSION");
        const { client, rest: [name] } = target;
        const answered = await client.answer(name, answer);
        if (o.json) return printJson(answered);
        console.log(`answered ${answer} to ${named(target, name)} (typed ${answered.keys.join(" ")})`);
      })
    );

  session.command("wait").description("wait until the agent is finished or waiting (or the given states)")
    .argument(scope.arg("name")).option("--for <states>", "comma-separated states", "finished,waiting")
    .option("--timeout <duration>", "how long to wait", "10m").option("--json", "print JSON")
    .action((spec, o) =>
      scope.run(async () => {
        const { client, rest: [name] } = await scope.resolve(spec, "SESSION");
        finish(await client.wait(name, { states: o.for.split(","), timeout: o.timeout }), o.json);
      })
    );

  program.command("task").description("tasks: a new worktree with an agent running in it").command("new")
    .description("create a worktree and start an agent in it").argument(scope.arg("location/name"))
    .option("--agent <id>", "agent preset").option("--prompt <text>", "first prompt")
    .option("--command <command>", "run this instead of a preset").option("--branch <branch>", "branch")
    .option("--base <ref>", "start point").option("--from-session <name>", "the session handing off")
    .option("--json", "print JSON")
    .action((spec, o) =>
      scope.run(async () => {
        const target = await scope.resolve(spec, "LOCATION/NAME");
        const [location, name] = target.rest;
        const task = await target.client.createTask({
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
          `task ${named(target, `${location}/${task.worktree.name}`)}: session ${
            named(target, task.session.name)
          } at ${task.worktree.path}`,
        );
      })
    );

  program.command("loop").description("prompt, wait, run a check, and send its failures back until it passes")
    .argument(scope.arg("session")).requiredOption(
      "--check <command>",
      "the check, run in the session's worktree",
    )
    .requiredOption("--prompt <text>", "the first prompt").option(
      "--max <rounds>",
      "rounds at most (a positive whole number)",
      positiveInteger,
      5,
    )
    .option("--turn-timeout <duration>", "how long one turn may take", "30m")
    .action((spec, o) =>
      scope.run(async () => {
        const { client, rest: [name] } = await scope.resolve(spec, "SESSION");
        Deno.exit(
          await loop(client, name, {
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
    const sent = await client.sendOnce(name, text);
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

/**
 * The keys of `session keys`' words: a key name as it is, any other word one key per character (so
 * `dock session keys s1 1 Enter` and `dock session keys s1 hi Enter` both work).
 */
export function splitKeys(words: readonly string[]): string[] {
  return words.flatMap((word) => (KEY_NAMES as readonly string[]).includes(word) ? [word] : [...word]);
}
