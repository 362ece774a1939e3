import { assertEquals } from "../tests/assert.ts";
import { Command } from "./commander.ts";
import { DOCK_COMMANDS, DOCKD_COMMANDS } from "./commands.generated.ts";
import { dockFamilies } from "./dock_main.ts";
import { dockdFamilies } from "./dockd_main.ts";
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

Deno.test("families: the command word skips options and reads through help", () => {
  assertEquals(commandWord(["--json", "worktree", "list"]), "worktree");
  assertEquals(commandWord(["help", "session"]), "session");
  assertEquals(commandWord(["--help"]), undefined);
  assertEquals(commandWord([]), undefined);
});
