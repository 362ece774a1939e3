/**
 * `dock --help`, `dockd -h`, `dockd help`: the program's top-level help, written from the generated
 * command index without loading commander. It is the same text commander writes (`families_test.ts`
 * compares the two at several widths); commander's cold start is most of a help's time otherwise.
 *
 * @module
 */
import { DOCK_COMMANDS, DOCKD_COMMANDS } from "./commands.generated.ts";
import type { CommandEntry } from "./families.ts";

/** What each program says it is, the first line of its help. */
export const ABOUT = {
  dock: "drive coding agents on remote boxes from this laptop",
  dockd: "dock's box daemon and its command line",
} as const;

/** Prints `program`'s top-level help, as wide as commander would make it. */
export function printTopHelp(program: keyof typeof ABOUT): void {
  const index = program === "dock" ? DOCK_COMMANDS : DOCKD_COMMANDS;
  // commander's text ends with its line end; console.log adds that one.
  console.log(topHelp(program, ABOUT[program], index, helpWidth()).replace(/\n$/, ""));
}

/** commander's width for help on stdout: the terminal's columns, else 80. */
function helpWidth(): number {
  if (!Deno.stdout.isTerminal()) return 80;
  try {
    return Deno.consoleSize().columns;
  } catch {
    return 80;
  }
}

// commander's layout (its Help class): two spaces of indent, terms padded to the widest, two spaces,
// descriptions wrapped into what is left of the width unless that is under 40 columns.
const INDENT = 2;
const SPACER = 2;
const MIN_WIDTH_TO_WRAP = 40;

/** The help text of a program with `index`'s commands, for a terminal `width` wide. */
export function topHelp(
  name: string,
  description: string,
  index: readonly CommandEntry[],
  width: number,
): string {
  const options: [string, string][] = [
    ["-V, --version", "output the version number"],
    ["-h, --help", "display help for command"],
  ];
  const commands: [string, string][] = [
    ...index.map((entry): [string, string] => [entry.term, entry.description]),
    ["help [command]", "display help for command"],
  ];
  const termWidth = Math.max(...[...options, ...commands].map(([term]) => term.length));
  const item = ([term, text]: [string, string]) => {
    const remaining = width - termWidth - SPACER - INDENT;
    const wrapped = remaining < MIN_WIDTH_TO_WRAP || /\n[^\S\r\n]/.test(text)
      ? text
      : boxWrap(text, remaining).replace(/\n/g, "\n" + " ".repeat(termWidth + SPACER));
    return " ".repeat(INDENT) + term.padEnd(termWidth) + " ".repeat(SPACER) +
      wrapped.replace(/\n/g, `\n${" ".repeat(INDENT)}`);
  };
  return [
    `Usage: ${name} [options] [command]`,
    "",
    boxWrap(description, width),
    "",
    "Options:",
    ...options.map(item),
    "",
    "Commands:",
    ...commands.map(item),
    "",
  ].join("\n");
}

/** commander's `Help.boxWrap`: words moved to the next line once a line would pass `width`. */
function boxWrap(text: string, width: number): string {
  if (width < MIN_WIDTH_TO_WRAP) return text;
  const lines: string[] = [];
  for (const line of text.split(/\r\n|\n/)) {
    const chunks = line.match(/[\s]*[^\s]+/g);
    if (chunks === null) {
      lines.push("");
      continue;
    }
    let current = [chunks[0]];
    let size = chunks[0].length;
    for (const chunk of chunks.slice(1)) {
      if (size + chunk.length <= width) {
        current.push(chunk);
        size += chunk.length;
        continue;
      }
      lines.push(current.join(""));
      const next = chunk.trimStart();
      current = [next];
      size = next.length;
    }
    lines.push(current.join(""));
  }
  return lines.join("\n");
}
