/**
 * `dock agent`, `dock ui-token`, `dock add local`, `dock forget`, `dock status`, `dock events`,
 * `dock emit`, and `dock up` (the box daemon and the agent together on this machine). Any command that
 * needs the agent starts it in the background when it is not running. Only `agent` and `up` load the
 * servers (`run_agent.ts`, `serve.ts`, through `lazy.ts`): the others talk to the agent through the
 * typed client and start fast.
 *
 * @module
 */
import type { Command } from "./commander.ts";
import { ensureToken } from "../agent/token.ts";
import { AgentClient } from "../client/agent.ts";
import { DockError } from "../client/errors.ts";
import { clientPaths } from "../core/paths.ts";
import { launch } from "../core/runner.ts";
import { load } from "./lazy.ts";
import { eventLine, guarded, keyValues, printJson, table } from "./output.ts";

/** The agent's port: `$DOCK_AGENT_PORT`, default 1378 (spec 5). */
export function agentPort(): number {
  const port = Number(Deno.env.get("DOCK_AGENT_PORT") || 1378);
  if (!Number.isInteger(port) || port < 1 || port > 65535) {
    throw new DockError(
      "usage",
      `DOCK_AGENT_PORT must be a TCP port, got ${Deno.env.get("DOCK_AGENT_PORT")}`,
    );
  }
  return port;
}

/** A client of the running agent, starting it in the background first when it does not answer. */
export async function agentClient(): Promise<AgentClient> {
  const paths = clientPaths();
  const token = await ensureToken(paths.token);
  const client = new AgentClient({
    url: `http://127.0.0.1:${agentPort()}`,
    token,
    origin: "cli",
    oneShotReads: true,
  });
  if (await answers(client)) return client;
  // Not running: start it detached, logging to <state>/client/agent.log, and wait for it.
  const entry = new URL("./dock.ts", import.meta.url).pathname;
  launch("/bin/sh", [
    "-c",
    'exec "$@" >>"$0" 2>&1',
    paths.log,
    Deno.execPath(),
    "run",
    "-A",
    "--cached-only",
    entry,
    "agent",
  ]);
  const deadline = Date.now() + 15_000;
  while (Date.now() < deadline) {
    await new Promise((r) => setTimeout(r, 100));
    if (await answers(client)) return client;
  }
  throw new DockError("agent_unreachable", `the agent did not start; see ${paths.log}`, { status: 503 });
}

/** The app's address: the token goes in the fragment, never sent to a server nor written to its logs. */
export function appUrl(url: string, token: string): string {
  return `${url}/app/#token=${encodeURIComponent(token)}`;
}

/** Opens `url` in the desktop's browser, if it has one (a box over SSH has none: the printed URL stays). */
function openBrowser(url: string): void {
  const opener = Deno.build.os === "darwin" ? "open" : Deno.build.os === "windows" ? "explorer" : "xdg-open";
  try {
    launch(opener, [url]);
  } catch {
    // No opener on this machine: the address printed above is the way in.
  }
}

async function answers(client: AgentClient): Promise<boolean> {
  try {
    await client.transport.json("/v1/status", { signal: AbortSignal.timeout(1000) });
    return true;
  } catch {
    return false;
  }
}

/** Adds the agent commands. */
export function agentCommands(program: Command): void {
  const agent = program.command("agent").description("run the laptop agent in the foreground").action(() =>
    guarded(async () => {
      const { runAgent } = await load<typeof import("./run_agent.ts")>("./run_agent.ts");
      await runAgent({ port: agentPort() });
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

  program.command("up").description(
    "run the box daemon and the agent on this machine, with the local box paired",
  )
    .action(() =>
      guarded(async () => {
        const { startBox } = await load<typeof import("./serve.ts")>("./serve.ts");
        const { runAgent } = await load<typeof import("./run_agent.ts")>("./run_agent.ts");
        const box = await startBox();
        await runAgent({
          port: agentPort(),
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
      const url = appUrl(client.url, await ensureToken(clientPaths().token));
      client.close();
      console.log(url);
      if (!o.print) openBrowser(url);
    }, "dock")
  );

  program.command("ui-token").description("print the agent's URL and token as JSON").action(() =>
    guarded(async () => {
      const token = await ensureToken(clientPaths().token);
      printJson({ url: `http://127.0.0.1:${agentPort()}`, token });
    }, "dock")
  );

  program.command("add").description("add a box").command("local")
    .description("pair the box daemon that shares this machine's state directory")
    .option("--name <name>", "the box's name", "local").option("--json", "print JSON").action((o) =>
      guarded(async () => {
        const added = await (await agentClient()).addLocal(o.name);
        if (o.json) return printJson(added);
        console.log(`added box ${added.name}: ${added.online ? "online" : `offline (${added.error})`}`);
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
          ["BOX", "KIND", "STATE", "LATENCY", "ADDRESS"],
          status.boxes.map((b) => [
            b.name,
            b.kind,
            b.online ? "online" : `offline${b.error ? `: ${b.error.slice(0, 60)}` : ""}`,
            b.latency_ms === null ? "-" : `${b.latency_ms} ms`,
            b.address,
          ]),
        );
      }, "dock")
    );

  program.command("events").description("stream the laptop's and every box's events")
    .option("--after <id>", "resume after this event id", Number)
    .option("--type <prefix...>", "only these types or prefixes (e.g. agent. box.)")
    .option("--json", "print each event as a line of JSON").action((o) =>
      guarded(async () => {
        for await (const event of (await agentClient()).events({ after: o.after })) {
          if (o.type && !o.type.some((prefix) => event.type.startsWith(prefix))) continue;
          console.log(o.json ? JSON.stringify(event) : eventLine(event));
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
