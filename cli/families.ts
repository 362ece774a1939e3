/**
 * How `dock` and `dockd` load only the command family a command line names. Building every family's
 * commands means loading ~45 modules and registering ~150 commands (~20 ms of a ~60 ms floor); a
 * command needs one family. The program's top-level help and its "unknown command" suggestions need
 * every top-level name, so those come from a generated index (`commands.generated.ts`, written by
 * `deno task cli-index` and checked fresh by `families_test.ts`) with stubs in place of the families.
 *
 * @module
 */
import { Command } from "./commander.ts";

/** Adds a family's top-level commands (with their subcommands and actions) to `program`. */
export type Register = (program: Command) => void;

/**
 * A program's families by name, in the order its help lists them. Each loads its module when called:
 * use `load()` (lazy.ts) so that the module is not prepared at start-up.
 */
export type Families = Record<string, () => Promise<Register>>;

/** A top-level command as the program's help shows it, and the family that registers it. */
export interface CommandEntry {
  name: string;
  /** Other names it answers to (`wt` for `worktree`). */
  aliases: string[];
  family: string;
  /** What help shows left of the description: `worktree [options] <args>`. */
  term: string;
  description: string;
}

/**
 * The word of `args` that names a top-level command: the first one not an option, or for
 * `help NAME`, NAME. Undefined when there is none (bare `--help`, no arguments).
 */
export function commandWord(args: readonly string[]): string | undefined {
  const words = args.filter((arg) => !arg.startsWith("-"));
  return words[0] === "help" ? words[1] : words[0];
}

/**
 * Adds to `program` what `args` needs: the family of the command it names, or, when it names none (help,
 * a mistyped command), a stub per top-level command so that help and suggestions list them all.
 */
export async function registerFor(
  program: Command,
  args: readonly string[],
  families: Families,
  index: readonly CommandEntry[],
): Promise<void> {
  const word = commandWord(args);
  const entry = index.find((candidate) => candidate.name === word || candidate.aliases.includes(word ?? ""));
  if (entry) {
    (await families[entry.family]())(program);
    return;
  }
  const terms = new Map(index.map((candidate) => [candidate.name, candidate.term]));
  for (const stub of index) program.command(stub.name).aliases(stub.aliases).description(stub.description);
  const help = program.createHelp();
  program.configureHelp({
    subcommandTerm: (command) => terms.get(command.name()) ?? help.subcommandTerm(command),
  });
}

/** `hook TOOL EVENT` runs before any family loads (entry.ts); this stub is what help lists. */
export function hookStub(program: Command): void {
  program.command("hook").description("report an agent tool's hook (run by the tool itself)")
    .argument("<tool>").argument("<event>");
}

/** The index of `families`: every family loaded and registered in order, as `registerFor` needs it. */
export async function indexOf(name: string, families: Families): Promise<CommandEntry[]> {
  const program = new Command(name);
  const help = program.createHelp();
  const entries: CommandEntry[] = [];
  for (const [family, loadFamily] of Object.entries(families)) {
    const before = program.commands.length;
    (await loadFamily())(program);
    for (const command of program.commands.slice(before)) {
      entries.push({
        name: command.name(),
        aliases: command.aliases(),
        family,
        term: help.subcommandTerm(command),
        description: command.description(),
      });
    }
  }
  return entries;
}
