/**
 * Pairing from both ends. On the box (through dockd's socket): `dockd pair [--host H] [--wait S]`
 * prints a one-time link valid for ten minutes (`--wait`: `dock add ssh` starts the daemon and this
 * at once, so that the command's own start overlaps the daemon's), `dockd laptops` lists the paired laptops, `dockd revoke ID`
 * removes one and closes what it has open. On the laptop (through the agent): `dock pair LINK
 * [--name N]` pins the box's CA from the link, proves the code and keeps the credential.
 *
 * @module
 */
import { type Command, positiveInteger } from "./commander.ts";
import { TransportError } from "../client/errors.ts";
import { sleep } from "../client/timers.ts";
import { agentClient } from "./agent.ts";
import { localBox } from "./client.ts";
import { guarded, printJson, table } from "./output.ts";

/** Adds `pair`, `laptops` and `revoke` to `dockd`. */
export function boxPairCommands(program: Command): void {
  program.command("pair").description("print a one-time link that pairs a laptop with this box")
    .option("--host <host>", "the address the laptop dials (default: the box's first non-loopback address)")
    .option(
      "--wait <seconds>",
      "wait up to this long for the daemon to answer (it was just started)",
      positiveInteger,
    )
    .option("--json", "print JSON").action((o) =>
      guarded(async () => {
        const box = localBox();
        const made = await whenAnswering(() => box.pairCode({ host: o.host }), (o.wait ?? 0) * 1000);
        box.close();
        if (o.json) return printJson(made);
        const until = new Date(made.expires).toLocaleTimeString([], { hour: "2-digit", minute: "2-digit" });
        console.log(
          `On the laptop, run (the link works once, until ${until}):\n\n  dock pair '${made.link}'`,
        );
      })
    );

  program.command("laptops").description("the laptops paired with this box").option("--json", "print JSON")
    .action((o) =>
      guarded(async () => {
        const box = localBox();
        const laptops = await box.laptops();
        box.close();
        if (o.json) return printJson(laptops);
        table(
          ["ID", "NAME", "PAIRED", "LAST SEEN"],
          laptops.map((l) => [l.id, l.name, l.created, l.last_seen]),
        );
      })
    );

  program.command("revoke").description("unpair a laptop and close its open streams").argument("<id>")
    .option("--json", "print JSON").action((id, o) =>
      guarded(async () => {
        const box = localBox();
        const laptop = await box.revokeLaptop(id);
        box.close();
        if (o.json) return printJson(laptop);
        console.log(`revoked ${laptop.id} (${laptop.name})`);
      })
    );
}

/** Adds `pair` to `dock`. */
export function pairCommands(program: Command): void {
  program.command("pair").description("pair this laptop with a box, from the link `dockd pair` printed there")
    .argument("<link>").option("--name <name>", "the box's name here (default: its own name)")
    .option("--json", "print JSON").action((link, o) =>
      guarded(async () => {
        const status = await (await agentClient()).pairBox(link, o.name);
        if (o.json) return printJson(status);
        console.log(
          `paired box ${status.name} (${status.address}): ${
            status.online ? "online" : `offline (${status.error})`
          }`,
        );
      }, "dock")
    );
}

/**
 * `ask()`, asked again every 10 ms while the daemon is not there to answer (no socket, or none
 * listening on it: the request provably never reached a daemon), for up to `waitMs`.
 */
async function whenAnswering<T>(ask: () => Promise<T>, waitMs: number): Promise<T> {
  const deadline = Date.now() + waitMs;
  while (true) {
    try {
      return await ask();
    } catch (error) {
      if (!(error instanceof TransportError) || !error.neverSent || Date.now() >= deadline) throw error;
      await sleep(10);
    }
  }
}
