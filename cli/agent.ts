/**
 * `dock agent`, `dock ui-token`, `dock add local`, `dock forget`, `dock status`, `dock events`,
 * `dock emit`, and `dock up` (the box daemon and the agent together on this machine). Any command that
 * needs the agent starts it in the background when it is not running. Only `agent` and `up` load the
 * servers (`run_agent.ts`, `serve.ts`, through `lazy.ts`): the others talk to the agent through the
 * typed client and start fast.
 *
 * @module
 */
import { sleep } from "../client/timers.ts";
import type { Command } from "./commander.ts";
import { ensureToken } from "../agent/token.ts";
import { AgentClient } from "../client/agent.ts";
import type { AgentStatus, BoxProgress } from "../client/wire.ts";
import { BUILD } from "../client/version.ts";
import { DockError, TransportError } from "../client/errors.ts";
import { clientPaths } from "../core/paths.ts";
import { load } from "./lazy.ts";
import { eventLine, guarded, keyValues, printJson, progressBar, table } from "./output.ts";
import { resolvePath } from "./cwd.ts";

/**
 * The agent's port: `$DOCK_AGENT_PORT`, default 1378 (spec 5). `listen`: the port the agent itself binds,
 * where 0 lets the system choose (its ready line on stdout names the port: cli/ready.ts).
 */
export function agentPort(options: { listen?: boolean } = {}): number {
  const port = Number(Deno.env.get("DOCK_AGENT_PORT") || 1378);
  if (!Number.isInteger(port) || port < (options.listen ? 0 : 1) || port > 65535) {
    throw new DockError(
      "usage",
      `DOCK_AGENT_PORT must be a TCP port, got ${Deno.env.get("DOCK_AGENT_PORT")}`,
    );
  }
  return port;
}

/**
 * A client of the agent. Nothing is asked first: a request that finds nothing listening starts the
 * agent in the background, waits for it, and is sent again (`whenUnreachable`).
 */
export async function agentClient(
  options: { origin?: string; oneShotReads?: boolean } = {},
): Promise<AgentClient> {
  const paths = clientPaths();
  const token = await ensureToken(paths.token);
  const url = `http://127.0.0.1:${agentPort()}`;
  return new AgentClient({
    url,
    token,
    origin: options.origin ?? "cli",
    // A command's few reads need no HTTP client; a long-lived one (`dock mcp`) keeps one.
    oneShotReads: options.oneShotReads ?? true,
    whenUnreachable: () => startAgent(url, token),
  });
}

/** Starts `dock agent` detached, logging to <state>/client/agent.log, and waits until it answers. */
async function startAgent(url: string, token: string): Promise<void> {
  const paths = clientPaths();
  const probe = new AgentClient({ url, token, origin: "cli", oneShotReads: true });
  const { launch } = await runner();
  const { selfCommand } = await load<typeof import("../core/self_command.ts")>("../core/self_command.ts");
  launch("/bin/sh", ["-c", 'exec "$@" >>"$0" 2>&1', paths.log, ...selfCommand("dock", "agent")]);
  const deadline = Date.now() + 15_000;
  while (Date.now() < deadline) {
    await new Promise((r) => setTimeout(r, 100));
    if (await answers(probe)) return;
  }
  throw new DockError("agent_unreachable", `the agent did not start; see ${paths.log}`, { status: 503 });
}

/** The app's address: the token goes in the fragment, never sent to a server nor written to its logs. */
export function appUrl(url: string, token: string): string {
  return `${url}/app/#token=${encodeURIComponent(token)}`;
}

/** Opens `url` in the desktop's browser, if it has one (a box over SSH has none: the printed URL stays). */
async function openBrowser(url: string): Promise<void> {
  const opener = Deno.build.os === "darwin" ? "open" : Deno.build.os === "windows" ? "explorer" : "xdg-open";
  const { launch } = await runner();
  try {
    launch(opener, [url]);
  } catch {
    // No opener on this machine: the address printed above is the way in.
  }
}

/**
 * The process runner, loaded by the commands that spawn (starting the agent, opening a browser): the
 * others (`status`, `events`, …) start without it.
 */
function runner() {
  return load<typeof import("../core/runner.ts")>("../core/runner.ts");
}

async function answers(client: AgentClient): Promise<boolean> {
  try {
    await client.transport.json("/v1/status", { signal: AbortSignal.timeout(1000) });
    return true;
  } catch {
    return false;
  }
}

/**
 * What `dock status` says when the agent runs otherwise than this shell would start it: another build
 * (a reinstall, `deno task install`, while it ran) or another value of a setting it read at its start
 * (`DOCK_SSH_CONFIG`, the ports). Each line ends in what to do. Unset and empty are the same; the
 * ports' defaults count as their values.
 */
export function agentDrift(
  status: Pick<AgentStatus, "build" | "agent">,
  shell: { build: string; env: (name: string) => string | undefined },
): string[] {
  const notes: string[] = [];
  if (status.build !== shell.build) {
    notes.push(`the agent runs ${status.build} but this dock is ${shell.build}: dock agent restart`);
  }
  const defaults: Record<string, string> = { DOCK_AGENT_PORT: "1378", DOCK_PROXY_PORT: "1377" };
  for (const [name, value] of Object.entries(status.agent?.env ?? {})) {
    const theirs = value || defaults[name] || null;
    const ours = shell.env(name) || defaults[name] || null;
    if (theirs === ours) continue;
    notes.push(
      `the agent runs with ${name}=${theirs ?? "(unset)"} but this shell has ${
        ours === null ? `no ${name}` : `${name}=${ours}`
      }: dock agent restart`,
    );
  }
  return notes;
}

/**
 * `text` cut to at most `max` characters at a word's end, with `…` when cut (a word longer than
 * `max` is cut inside it): `dock status` once cut an offline reason mid-word.
 */
export function clip(text: string, max: number): string {
  const flat = text.replace(/\s+/g, " ").trim();
  if (flat.length <= max) return flat;
  const head = flat.slice(0, max - 1);
  const space = head.lastIndexOf(" ");
  return `${(space >= max / 3 ? head.slice(0, space) : head).replace(/[\s,;:.]+$/, "")}…`;
}

/** The agent's status, or null when nothing answers: a client that never starts the agent. */
async function runningAgent(): Promise<{ client: AgentClient; status: AgentStatus } | null> {
  const token = await ensureToken(clientPaths().token);
  const client = new AgentClient({
    url: `http://127.0.0.1:${agentPort()}`,
    token,
    origin: "cli",
    oneShotReads: true,
  });
  try {
    return { client, status: await client.status() };
  } catch (error) {
    client.close();
    if (error instanceof TransportError) return null;
    throw error;
  }
}

/** What {@linkcode stopAgent} did. */
export interface StoppedAgent {
  stopped: AgentStatus;
  /** The agent a service manager (`dock agent install`) started again at once, if one did. */
  successor: AgentStatus | null;
}

/**
 * Stops the agent that answers on this shell's port and waits until its port is free (or another agent
 * answers there: its service manager started it again); answers what it stopped (null: none ran). The
 * CLI signals the pid the agent reports over its token-gated API (see `POST /v1/stop`, refused): a pid
 * read from a file could be another process's by now, and the token proves the one answering is this
 * user's agent.
 */
export async function stopAgent(): Promise<StoppedAgent | null> {
  const running = await runningAgent();
  if (!running) return null;
  running.client.close();
  const pid = running.status.agent?.pid;
  if (!pid) {
    throw new DockError(
      "too_old",
      `the agent (${running.status.build}) does not say its pid: stop it by hand (its log: ${clientPaths().log})`,
    );
  }
  Deno.kill(pid, "SIGTERM");
  const port = agentPort();
  // Its listener closes first (SIGTERM aborts it), then it closes its database and exits: ~0.1 s here.
  const deadline = Date.now() + 15_000;
  while (Date.now() < deadline) {
    try {
      (await Deno.connect({ hostname: "127.0.0.1", port })).close();
    } catch {
      return { stopped: running.status, successor: null };
    }
    const now = await runningAgent();
    now?.client.close();
    if (now && now.status.agent?.pid !== pid) return { stopped: running.status, successor: now.status };
    await sleep(50);
  }
  throw new DockError(
    "agent_stuck",
    `the agent (pid ${pid}) did not stop within 15 s; see ${clientPaths().log}`,
  );
}

/**
 * After an install of `build` (`deno task install`): stops the agent when it runs another build, so the
 * next command starts the one installed (issue 33: the old agent went on, and said nothing was behind).
 * Answers the build it stopped, or null.
 */
export async function replaceAgent(build: string): Promise<string | null> {
  const running = await runningAgent();
  running?.client.close();
  if (!running || running.status.build === build) return null;
  return (await stopAgent())?.stopped.build ?? null;
}

/** Prints the agent's process and what differs from this shell (`dock agent status`). */
async function agentStatus(json: boolean | undefined): Promise<void> {
  const running = await runningAgent();
  running?.client.close();
  if (json) {
    return printJson(
      running ? { running: true, build: running.status.build, ...running.status.agent } : { running: false },
    );
  }
  if (!running) return console.log(`the agent is not running (the next dock command starts it)`);
  const { status } = running;
  console.log(
    [
      `the agent runs: pid ${status.agent?.pid ?? "?"}, ${status.build}, http://127.0.0.1:${agentPort()}`,
      `  since ${status.agent?.started ?? "?"}; log ${clientPaths().log}`,
      ...Object.entries(status.agent?.env ?? {}).map(([name, value]) => `  ${name}=${value ?? ""}`),
    ].join("\n"),
  );
  for (const note of agentDrift(status, { build: BUILD, env: (name) => Deno.env.get(name) })) {
    console.error(`dock: ${note}`);
  }
}

/** Adds the agent commands. */
export function agentCommands(program: Command): void {
  const agent = program.command("agent").description("run the laptop agent in the foreground").action(() =>
    guarded(async () => {
      const { runAgent } = await load<typeof import("./run_agent.ts")>("./run_agent.ts");
      await runAgent({ port: agentPort({ listen: true }) });
      // Tunnels and the proxy's loopback ends hold listeners open: leave without waiting for them.
      Deno.exit(0);
    }, "dock")
  );
  agent.command("install").description("install the agent as a service that runs permanently").action(() =>
    guarded(async () => {
      const { agentService, installService } = await load<typeof import("../core/service_install.ts")>(
        "../core/service_install.ts",
      );
      const result = await installService(agentService(clientPaths().log));
      console.log(`wrote ${result.file} (${result.manager})${result.started ? "; the agent runs now" : ""}`);
      for (const note of result.notes) console.log(note);
    }, "dock")
  );

  agent.command("status").description("whether the agent runs: its pid, build, log and start settings")
    .option("--json", "print JSON").action((o) => guarded(() => agentStatus(o.json), "dock"));
  agent.command("stop").description("stop the agent (the next dock command starts it again)").action(() =>
    guarded(async () => {
      const done = await stopAgent();
      if (!done) return console.log("the agent is not running");
      console.log(`stopped the agent (pid ${done.stopped.agent?.pid}, ${done.stopped.build})`);
      if (done.successor) {
        console.error(
          `dock: its service manager started it again (pid ${done.successor.agent?.pid}): to keep it stopped, ` +
            "stop the service (systemctl --user stop dock-agent; on macOS launchctl unload the dev.dock.agent agent)",
        );
      }
    }, "dock")
  );
  agent.command("restart").description(
    "stop the agent and start it again from this dock, with this shell's environment",
  ).action(() =>
    guarded(async () => {
      const done = await stopAgent();
      const client = await agentClient();
      // Nothing answers now (this starts it), or the one its service manager started again.
      const status = done?.successor ?? await client.status();
      client.close();
      console.log(`the agent runs: pid ${status.agent?.pid}, ${status.build}`);
    }, "dock")
  );

  program.command("up").description(
    "run the box daemon and the agent on this machine, with the local box paired",
  )
    .action(() =>
      guarded(async () => {
        const { startBox } = await load<typeof import("./serve.ts")>("./serve.ts");
        const { runAgent } = await load<typeof import("./run_agent.ts")>("./run_agent.ts");
        const box = await startBox();
        await runAgent({
          port: agentPort({ listen: true }),
          onReady: async (url, token) => {
            const client = new AgentClient({ url, token, origin: "cli" });
            const known = (await client.status()).boxes.some((b) => b.name === "local");
            if (!known) await client.addLocal("local");
            client.close();
            console.log(
              `dock is up.\n  url:   ${url}\n  token: ${token}\n  app:   ${appUrl(url, token)}\n\nTry:\n` +
                `  dock status\n  dock location add local/app ~/work/app\n  dock events`,
            );
          },
        });
        await box.finished;
        Deno.exit(0);
      }, "dock")
    );

  program.command("open").description(
    "open the app in the browser (the token rides in the address's fragment, which no server sees)",
  ).option("--print", "only print the address").action((o) =>
    guarded(async () => {
      const client = await agentClient();
      await client.status(); // the page needs the agent: this starts it when it is not running
      const url = appUrl(client.url, await ensureToken(clientPaths().token));
      client.close();
      console.log(url);
      if (!o.print) await openBrowser(url);
    }, "dock")
  );

  program.command("ui-token").description("print the agent's URL and token as JSON").action(() =>
    guarded(async () => {
      const token = await ensureToken(clientPaths().token);
      printJson({ url: `http://127.0.0.1:${agentPort()}`, token });
    }, "dock")
  );

  const add = program.command("add").description("add a box");
  add.command("ssh").description(
    "install dock on a machine you reach over SSH (your config, agent and known_hosts) and pair it; " +
      "again, it upgrades in place",
  ).argument("<destination>", "[user@]host[:port], or a Host of your SSH config")
    .option("--name <name>", "the box's name here (default: its own name)")
    .option("--identity <file>", "the private key to use (ssh -i)")
    .option(
      "--via <transport>",
      "tls: dial the box's port; ssh: through one SSH connection, no inbound port on the box " +
        "(default: tls when the port answers from here, else ssh)",
    )
    .option(
      "--listen <address>",
      "where the box's dockd listens for laptops (DOCK_LISTEN): HOST:PORT such as 127.0.0.1:1379, or off " +
        "(default: 0.0.0.0:1379)",
    )
    .option("--json", "print each step as a line of JSON").action((destination, o) =>
      guarded(async () => {
        const client = await agentClient();
        const identity = o.identity === undefined ? undefined : resolvePath(o.identity);
        const via = o.via === undefined ? undefined : viaOption(o.via);
        const listen: string | undefined = o.listen;
        const last = await follow(
          client.addSsh({ host: destination, name: o.name, identity, via, ...(listen ? { listen } : {}) }),
          o.json,
        );
        if (!o.json && last.box) {
          console.log(
            `added box ${last.box.name} (${last.box.address}): ${last.box.online ? "online" : "offline"}`,
          );
        }
      }, "dock")
    );
  add.command("local")
    .description("pair the box daemon that shares this machine's state directory")
    .option("--name <name>", "the box's name", "local").option("--json", "print JSON").action((o) =>
      guarded(async () => {
        const added = await (await agentClient()).addLocal(o.name);
        if (o.json) return printJson(added);
        console.log(`added box ${added.name}: ${added.online ? "online" : `offline (${added.error})`}`);
      }, "dock")
    );

  program.command("upgrade").description(
    "send this laptop's dock to a box running an older build (or to every such box) and restart it there; " +
      "sessions and services go on",
  ).argument("[box]", "the box (default: every box behind this laptop, with --all)")
    .option("--all", "every online box running an older build")
    .option("--self <package>", "upgrade this laptop's own dock from a package file (deno task package)")
    .option("--json", "print each step as a line of JSON").action((name, o) =>
      guarded(async () => {
        if (o.self) return await upgradeSelf(resolvePath(o.self), o.json);
        if (Boolean(name) === Boolean(o.all)) throw new DockError("usage", "name a box, or say --all");
        const client = await agentClient();
        const boxes = name ? [name] : (await client.refresh()).boxes
          .filter((b) => b.online && b.behind)
          .map((b) => b.name);
        if (!boxes.length && !o.json) return console.log(`every box runs ${BUILD} or newer`);
        let failed = 0;
        for (const box of boxes) {
          const last = await follow(client.upgradeBox(box), o.json, { throws: false });
          if (last.error) {
            failed++;
            if (!o.json) console.error(`dock: ${box}: ${last.error}`);
          } else if (!o.json && last.box) console.log(`${box}: ${last.box.build}`);
        }
        if (failed) throw new DockError("upgrade", `${failed} of ${boxes.length} boxes were not upgraded`);
      }, "dock")
    );

  program.command("forget").description("forget a box (a paired box also unpairs this laptop)")
    .argument("<box>").option("--json", "print JSON").action((name, o) =>
      guarded(async () => {
        const forgotten = await (await agentClient()).removeBox(name);
        if (o.json) return printJson(forgotten);
        if (forgotten.revoked === null) return console.log(`forgot ${name}`);
        if (forgotten.revoked) return console.log(`forgot ${name}; the box unpaired this laptop`);
        console.log(
          `forgot ${name}; the box could not be told (${forgotten.revoke_error}), so it still lists this ` +
            `laptop: on the box, run \`dockd revoke ${forgotten.laptop}\``,
        );
      }, "dock")
    );

  program.command("status").description("the boxes and their connections").option("--json", "print JSON")
    .action((o) =>
      guarded(async () => {
        const status = await (await agentClient()).status();
        if (o.json) return printJson(status);
        table(
          ["BOX", "VIA", "STATE", "LATENCY", "BUILD", "ADDRESS"],
          status.boxes.map((b) => [
            b.name,
            b.transport ?? b.kind,
            b.online ? "online" : `offline${b.error ? `: ${clip(b.error, 60)}` : ""}`,
            b.latency_ms === null ? "-" : `${b.latency_ms} ms`,
            b.build ? `${b.build}${b.behind ? " (behind: dock upgrade)" : ""}` : "-",
            b.address,
          ]),
        );
        for (const note of agentDrift(status, { build: BUILD, env: (name) => Deno.env.get(name) })) {
          console.error(`dock: ${note}`);
        }
      }, "dock")
    );

  program.command("events").description("stream the laptop's and every box's events")
    .option("--after <id>", "resume after this event id", Number)
    .option("--type <prefix...>", "only these types or prefixes (e.g. agent. box.)")
    .option("--json", "print each event as a line of JSON").action((o) =>
      guarded(async () => {
        // Followed until stopped, across the agent going away (an upgrade, a restart): each time from the
        // last event received on, so none is missed or printed twice (the agent's journal outlives it).
        let after: number | undefined = o.after;
        let away = 0;
        for (;;) {
          // A client of its own each time: one whose agent is gone starts it again, as any command does.
          const client = await agentClient();
          try {
            for await (const event of client.events({ after })) {
              away = 0;
              after = event.id ?? after;
              if (o.type && !o.type.some((prefix) => event.type.startsWith(prefix))) continue;
              console.log(o.json ? JSON.stringify(event) : eventLine(event));
            }
          } catch (error) {
            if (!(error instanceof TransportError)) throw error;
            if (away === 0) {
              console.error(`dock: the agent is away (${error.message}); following again when it is back`);
            }
          } finally {
            client.close();
          }
          away++;
          await sleep(Math.min(200 * away, 2000));
        }
      }, "dock")
    );

  program.command("emit").description("announce an event on this laptop").argument("<type>").argument(
    "[data...]",
  )
    .option("--origin <tool>", "the tool announcing it").action((type, words, o) =>
      guarded(async () => {
        await (await agentClient()).emit({ type, origin: o.origin, data: keyValues(words) });
      }, "dock")
    );
}

/**
 * Prints a streamed box operation (`add ssh`, `upgrade`) as it goes: a progress bar for the upload,
 * each step's lines, or every line as JSON. Answers the last line; throws its error unless told not to.
 */
async function follow(
  progress: AsyncGenerator<BoxProgress>,
  json: boolean | undefined,
  options: { throws?: boolean } = {},
): Promise<BoxProgress> {
  let last: BoxProgress | undefined;
  const bar = progressBar();
  for await (const line of progress) {
    last = line;
    if (json) console.log(JSON.stringify(line));
    else if (line.sent !== undefined && line.total) bar.draw(line.step!, line.sent, line.total);
    else if (line.line) bar.print(`${line.step}: ${line.line}`);
  }
  if (!last?.done) throw new DockError("stopped", "the agent stopped answering before the end");
  if (last.error && options.throws !== false) throw new DockError("failed", last.error);
  return last;
}

/**
 * `dock upgrade --self FILE`: the agent installs the package and stops; the next request starts the new
 * agent (through the launcher, `~/.dock/bin/dock`), which is waited for.
 */
async function upgradeSelf(file: string, json: boolean | undefined): Promise<void> {
  const client = await agentClient();
  const started = await client.upgradeSelf((await Deno.open(file)).readable);
  if (json) console.log(JSON.stringify(started));
  else console.log(`installed ${started.to}; restarting the agent`);
  const deadline = Date.now() + 60_000;
  while (Date.now() < deadline) {
    // The agent that answered stops a moment later: until then it still says the old build.
    const build = await client.status().then((s) => s.build, () => null);
    if (build === started.to) {
      if (!json) console.log(`this laptop runs ${build}`);
      return;
    }
    await sleep(200);
  }
  throw new DockError(
    "upgrade_timeout",
    `the agent did not come back as ${started.to}; see dock agent's log`,
  );
}

/** `--via`'s value, checked. */
function viaOption(value: string): "tls" | "ssh" {
  if (value === "tls" || value === "ssh") return value;
  throw new DockError("invalid_request", `--via: expected tls or ssh, got ${JSON.stringify(value)}`, {
    status: 400,
  });
}
