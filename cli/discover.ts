/**
 * `dock discover [--network NET] [--login] [--json]`: the machines of the networks this laptop joined
 * (tailscale) that could be boxes: those answering on dockd's port or SSH, and which are boxes already.
 * `--login` runs the network's login first and prints the URL to open.
 *
 * @module
 */
import type { Command } from "./commander.ts";
import { DockError } from "../client/errors.ts";
import { agentClient } from "./agent.ts";
import { guarded, printJson, table } from "./output.ts";

/** Adds `discover` to `dock`. */
export function discoverCommands(program: Command): void {
  program.command("discover").description("machines on your networks (tailscale) that could be boxes")
    .option("--network <name>", "the network", "tailscale").option("--login", "log in to the network first")
    .option("--json", "print JSON").action((o) =>
      guarded(async () => {
        const client = await agentClient();
        if (o.login) {
          // A network this laptop lacks: what to install, before the agent is asked to log in to it.
          const { networks, hint } = await client.networks();
          if (!networks.some((n) => n.name === o.network)) {
            throw new DockError(
              "no_network",
              o.network === "tailscale" && hint
                ? hint
                : `no network '${o.network}' here: dock knows tailscale`,
            );
          }
          for await (const line of client.networkLogin(o.network)) {
            if (line.line) console.log(line.line);
            if (line.error) console.error(`dock: ${line.error}`);
          }
        }
        const { networks, hint } = await client.networks();
        const network = networks.find((n) => n.name === o.network);
        if (!network) {
          if (o.json) return printJson([]);
          return console.log(hint ?? `not on a network named ${o.network}`);
        }
        if (!network.logged_in) {
          if (o.json) return printJson([]);
          return console.log(`${o.network} is ${network.state}: log in with dock discover --login`);
        }
        const machines = await client.discover(o.network);
        if (o.json) return printJson(machines);
        table(
          ["MACHINE", "ADDRESS", "DOCKD", "SSH", "BOX"],
          machines.map((m) => [m.name, m.address, m.dockd ? "yes" : "-", m.ssh ? "yes" : "-", m.box ?? ""]),
        );
        const addable = machines.filter((m) => m.ssh && !m.box);
        if (addable.length) console.log(`add one with: dock add ssh ${addable[0].dns ?? addable[0].address}`);
      }, "dock")
    );
}
