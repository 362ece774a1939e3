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
  /** Its subcommands' names and aliases (`list`, `ls`), so that a command line builds only the one it names. */
  subcommands: string[][];
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
 * The subcommand of `entry` that `args` names (its name, not an alias), when the word after the
 * command's own is one. Undefined for `help NAME` (its help lists every subcommand) and for anything else.
 */
export function subcommandWord(args: readonly string[], entry: CommandEntry): string | undefined {
  const words = args.filter((arg) => !arg.startsWith("-"));
  if (words[0] === "help") return undefined;
  return entry.subcommands.find((names) => names.includes(words[1] ?? ""))?.[0];
}

/**
 * Adds to `program` what `args` needs: the command it names (and of that, the subcommand it names), or,
 * when it names none (help, a mistyped command), a stub per top-level command so that help and
 * suggestions list them all.
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
    const sub = subcommandWord(args, entry);
    (await families[entry.family]())(only(program, [entry.name, ...(sub === undefined ? [] : [sub])]));
    return;
  }
  const terms = new Map(index.map((candidate) => [candidate.name, candidate.term]));
  for (const stub of index) program.command(stub.name).aliases(stub.aliases).description(stub.description);
  const help = program.createHelp();
  program.configureHelp({
    subcommandTerm: (command) => terms.get(command.name()) ?? help.subcommandTerm(command),
  });
}

/**
 * What a family's code registers a command the command line does not name into: every call is taken
 * and ignored, and answers itself, so chains (`.command(…).option(…).action(…)`) go on. Building the
 * commands a run never uses was most of a command's own time (commander's code runs cold each time).
 */
const ignored: Command = new Proxy({}, {
  get: (_target, key) => {
    if (key === "then") return undefined; // not a promise, whatever awaits it
    if (key === Symbol.toPrimitive || key === "toString") return () => ""; // a name read into a text
    return () => ignored;
  },
}) as unknown as Command;

/**
 * `command` as a family's code sees it: `.command(SPEC)` builds a real command only when SPEC's name is
 * `path[0]` (then seen through `only` with the rest of the path), otherwise `ignored`. An empty path
 * lets everything through.
 */
function only(command: Command, path: readonly string[]): Command {
  if (path.length === 0) return command;
  const [name, ...rest] = path;
  const seen: Command = new Proxy(command, {
    get(target, key) {
      const value = Reflect.get(target, key, target);
      if (typeof value !== "function") return value;
      if (key === "command") {
        return (spec: string, ...more: unknown[]) => {
          if (spec.split(" ")[0] !== name) return ignored;
          return only(value.call(target, spec, ...more), rest);
        };
      }
      // commander's setters answer their command: keep answering the filtered view of it.
      return (...args: unknown[]) => {
        const result = value.apply(target, args);
        return result === target ? seen : result;
      };
    },
  });
  return seen;
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
        subcommands: command.commands.map((sub) => [sub.name(), ...sub.aliases()]),
      });
    }
  }
  return entries;
}
