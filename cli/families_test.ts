import { assert, assertEquals } from "../tests/assert.ts";
import { Command } from "./commander.ts";
import { DOCK_COMMANDS, DOCKD_COMMANDS } from "./commands.generated.ts";
import { dockFamilies } from "./dock_main.ts";
import { dockdFamilies } from "./dockd_main.ts";
import { ABOUT, topHelp } from "./top_help.ts";
import { type CommandEntry, commandWord, type Families, indexOf, registerFor } from "./families.ts";

const PROGRAMS: [string, () => Families, readonly CommandEntry[]][] = [
  ["dock", dockFamilies, DOCK_COMMANDS],
  ["dockd", dockdFamilies, DOCKD_COMMANDS],
];

for (const [name, families, index] of PROGRAMS) {
  Deno.test(`families: ${name}'s command index is fresh (else run \`deno task cli-index\`)`, async () => {
    assertEquals(index, await indexOf(name, families()));
  });

  Deno.test(`families: ${name}'s help from the index is the help with every family loaded`, async () => {
    const full = new Command(name).description("d");
    for (const register of Object.values(families())) (await register())(full);
    const stubs = new Command(name).description("d");
    await registerFor(stubs, ["--help"], families(), index);
    assertEquals(stubs.helpInformation(), full.helpInformation());
    // Guards against an empty index: both programs have a dozen top-level commands or more.
    assertEquals(stubs.commands.length > 12, true);
  });

  Deno.test(`families: ${name}'s top-level help without commander is commander's, at any width`, async () => {
    const about = ABOUT[name as keyof typeof ABOUT];
    for (const width of [20, 60, 80, 100, 132, 250]) {
      const stubs = new Command(name).description(about).version("1.0.0");
      stubs.configureOutput({ getOutHelpWidth: () => width });
      await registerFor(stubs, ["--help"], families(), index);
      assertEquals(topHelp(name, about, index, width), stubs.helpInformation(), `${width} columns`);
    }
  });

  Deno.test(`families: ${name} loads only the family a command names`, async () => {
    const loaded: string[] = [];
    const tracked = Object.fromEntries(
      Object.entries(families()).map(([family, load]) => [family, () => (loaded.push(family), load())]),
    );
    const program = new Command(name);
    await registerFor(program, ["help", "wt"], tracked, index);
    assertEquals(loaded, ["worktree"]);
    assertEquals(program.commands.map((command) => command.name()), ["worktree"]);
    assertEquals(program.commands[0].commands.some((command) => command.name() === "list"), true);
  });
}

Deno.test("families: a command line builds the command and the subcommand it names, and no other", async () => {
  const built = async (args: string[]) => {
    const program = new Command("dockd");
    await registerFor(program, args, dockdFamilies(), DOCKD_COMMANDS);
    return program.commands.map((command) => [command.name(), command.commands.map((sub) => sub.name())]);
  };
  assertEquals(await built(["worktree", "list"]), [["worktree", ["list"]]]);
  // By alias, with options anywhere.
  assertEquals(await built(["--json", "wt", "ls", "app"]), [["worktree", ["list"]]]);
  // The command's help, a mistyped subcommand and `help` list every subcommand.
  const every = DOCKD_COMMANDS.find((entry) => entry.name === "worktree")!.subcommands.map(([name]) => name);
  assert(every.length > 3);
  for (
    const args of [["worktree", "--help"], ["worktree", "lsit"], ["help", "worktree"], ["worktree", "help"]]
  ) {
    assertEquals(await built(args), [["worktree", every]], args.join(" "));
  }
  const dock = new Command("dock");
  await registerFor(dock, ["status", "--json"], dockFamilies(), DOCK_COMMANDS);
  assertEquals(dock.commands.map((command) => command.name()), ["status"]);
  assertEquals(dock.commands[0].options.map((option) => option.long), ["--json"]);
});

Deno.test("families: the command word skips options and reads through help", () => {
  assertEquals(commandWord(["--json", "worktree", "list"]), "worktree");
  assertEquals(commandWord(["help", "session"]), "session");
  assertEquals(commandWord(["--help"]), undefined);
  assertEquals(commandWord([]), undefined);
});

Deno.test("families: a command the line does not name takes any chain, and reads as an empty name", async () => {
  const program = new Command("dock");
  await registerFor(program, ["status"], {
    agent: () =>
      Promise.resolve((p: Command) => {
        const other = p.command("other").alias("o").description("d").option("--x <y>", "x", Number);
        other.command("deeper").argument("<a>").action(() => {});
        p.command("status").description(`not ${other.name()}${String(other)}`).action(() => {});
      }),
  }, [{ name: "status", aliases: [], family: "agent", term: "status", description: "s", subcommands: [] }]);
  assertEquals(program.commands.map((command) => [command.name(), command.description()]), [[
    "status",
    "not ",
  ]]);
});
