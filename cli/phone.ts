/**
 * `phone`: the box's phone companion (spec 4.2 `GET/PUT phone`), so a phone reaches the box while the
 * laptop sleeps. `dockd phone on [--listen HOST:PORT]` / `off` / `status`; `dockd phone pair` prints a
 * one-time link (ten minutes, once) and its QR code, drawn with half blocks so a phone's camera can read
 * it off the terminal; `dockd phone devices`, `dockd phone revoke ID`. From the laptop the same with the
 * box named: `dock phone pair BOX`.
 *
 * @module
 */
import type { Command } from "./commander.ts";
import type { Command as UntypedCommand } from "commander";
import type { PhoneState } from "../client/wire.ts";
import { load } from "./lazy.ts";
import { printJson, table } from "./output.ts";
import type { Scope, Target } from "./target.ts";

/** Adds `phone` and its subcommands to `dockd` (this box) or `dock` (a box named first). */
export function phoneCommands(program: Command, scope: Scope): void {
  // Untyped: whether a subcommand takes a box first differs by program, which extra-typings cannot follow.
  const phone = program.command("phone").description(
    "the phone companion: a phone reaches the box directly",
  ) as unknown as UntypedCommand;
  const laptop = scope.kind === "laptop";
  const target = (box: string | undefined): Promise<Target> => scope.resolve(box ?? "", "");
  // On the laptop every subcommand names its box first; on a box there is only the one.
  const withBox = (command: UntypedCommand) => laptop ? command.argument("<box>", "the box") : command;

  withBox(phone.command("status").description("whether it is on, where it listens, the paired phones"))
    .option("--json", "print JSON").action((...args: unknown[]) =>
      scope.run(async () => {
        const [box, o] = split(args, laptop);
        show(await (await target(box)).client.phone(), o.json === true, scope);
      })
    );

  withBox(phone.command("on").description("serve the phone companion on its own TLS listener"))
    .option("--listen <addr>", "HOST:PORT to listen on (default: as before, at first 0.0.0.0:1380)")
    .option("--json", "print JSON").action((...args: unknown[]) =>
      scope.run(async () => {
        const [box, o] = split(args, laptop);
        const listen = typeof o.listen === "string" ? o.listen : undefined;
        show(await (await target(box)).client.setPhone({ enabled: true, listen }), o.json === true, scope);
      })
    );

  withBox(phone.command("off").description("stop the phone listener (paired phones stay paired)"))
    .option("--json", "print JSON").action((...args: unknown[]) =>
      scope.run(async () => {
        const [box, o] = split(args, laptop);
        show(await (await target(box)).client.setPhone({ enabled: false }), o.json === true, scope);
      })
    );

  withBox(
    phone.command("pair").description("print a one-time link and QR code that pair a phone (10 minutes)"),
  )
    .option("--host <host>", "the address the phone dials (default: the box's first non-loopback address)")
    .option("--json", "print JSON").action((...args: unknown[]) =>
      scope.run(async () => {
        const [box, o] = split(args, laptop);
        const host = typeof o.host === "string" ? o.host : undefined;
        const made = await (await target(box)).client.phonePairCode({ host });
        if (o.json) return printJson(made);
        const until = new Date(made.expires).toLocaleTimeString([], { hour: "2-digit", minute: "2-digit" });
        const { qrCode } = await load<typeof import("./qr.ts")>("./qr.ts");
        console.log(qrCode(made.link));
        console.log(
          `\nScan it, or open this link on the phone (it works once, until ${until}):\n\n  ${made.link}\n`,
        );
        console.log(
          "The browser warns that it does not know the certificate: the box made it. It is this box's if its\n" +
            `issuer's SHA-256 fingerprint reads ${colons(made.fingerprint)}`,
        );
      })
    );

  withBox(phone.command("devices").description("the phones paired with the box"))
    .option("--json", "print JSON").action((...args: unknown[]) =>
      scope.run(async () => {
        const [box, o] = split(args, laptop);
        const devices = (await (await target(box)).client.phone()).devices;
        if (o.json) return printJson(devices);
        table(
          ["ID", "NAME", "PAIRED", "LAST SEEN"],
          devices.map((d) => [d.id, d.name, d.created, d.last_seen]),
        );
      })
    );

  const revoke = phone.command("revoke").description("unpair a phone and close what it has open");
  if (laptop) revoke.argument("<box>", "the box");
  revoke.argument("<id>").option("--json", "print JSON").action((...args: unknown[]) =>
    scope.run(async () => {
      const box = laptop ? args[0] as string : undefined;
      const id = args[laptop ? 1 : 0] as string;
      const o = args[laptop ? 2 : 1] as { json?: boolean };
      const device = await (await target(box)).client.revokePhone(id);
      if (o.json) return printJson(device);
      console.log(`revoked ${device.id} (${device.name})`);
    })
  );
}

/** The box argument (on the laptop) and the options out of an action's arguments. */
function split(args: unknown[], laptop: boolean): [string | undefined, Record<string, unknown>] {
  return laptop
    ? [args[0] as string, args[1] as Record<string, unknown>]
    : [undefined, args[0] as Record<string, unknown>];
}

function show(state: PhoneState, json: boolean, scope: Scope): void {
  if (json) return printJson(state);
  if (!state.enabled) console.log(`phone companion: off (would listen on ${state.listen})`);
  else if (state.url) console.log(`phone companion: on, ${state.url} (listening on ${state.listen})`);
  else console.log(`phone companion: on but not listening on ${state.listen}: ${state.error ?? "starting"}`);
  const hint = scope.kind === "laptop" ? "dock phone pair BOX" : "dockd phone pair";
  console.log(`paired phones: ${state.devices.length}${state.devices.length ? "" : ` (pair one: ${hint})`}`);
}

function colons(hex: string): string {
  return hex.toUpperCase().match(/../g)?.join(":") ?? hex;
}
