/**
 * How the CLI talks to people: tables, JSON for `--json`, and errors turned into a message and an
 * exit code. Only `cli/` prints or exits.
 *
 * @module
 */
import { DockError } from "../client/errors.ts";
import type { DockEvent } from "../client/wire.ts";

/** Prints rows as an aligned table with a header. */
export function table(headers: string[], rows: (string | number | boolean | null | undefined)[][]): void {
  const cells = [
    headers,
    ...rows.map((row) => row.map((cell) => cell === null || cell === undefined ? "-" : String(cell))),
  ];
  const widths = headers.map((_, i) => Math.max(...cells.map((row) => (row[i] ?? "").length)));
  for (const row of cells) {
    console.log(
      row.map((cell, i) => i === row.length - 1 ? cell : cell.padEnd(widths[i])).join("  ").trimEnd(),
    );
  }
}

/** Prints a value as indented JSON. */
export function printJson(value: unknown): void {
  console.log(JSON.stringify(value, null, 2));
}

/** The first line of `text`, cut to `width` characters with an ellipsis (for tables). */
export function excerpt(text: string, width = 40): string {
  const line = text.split("\n")[0];
  const more = line.length < text.length;
  return line.length > width ? `${line.slice(0, width - 1)}…` : more ? `${line}…` : line;
}

/** Runs a CLI action; a DockError prints `<program>: <message>` and exits 1 (2 for usage errors). */
export async function guarded(action: () => Promise<void>, program = "dockd"): Promise<void> {
  try {
    await action();
  } catch (error) {
    if (error instanceof DockError) {
      console.error(`${program}: ${error.message}`);
      if (error.code === "unreachable") {
        console.error(
          program === "dock"
            ? "dock: is the agent running? Start it with: dock agent"
            : `${program}: is the box daemon running? Start it with: dockd serve`,
        );
      }
      Deno.exit(error.status === 400 ? 2 : 1);
    }
    throw error;
  }
}

/** Parses `key=value` words into an object (values that parse as JSON numbers or booleans become them). */
export function keyValues(words: string[]): Record<string, unknown> {
  const data: Record<string, unknown> = {};
  for (const word of words) {
    const eq = word.indexOf("=");
    if (eq <= 0) throw new DockError("usage", `expected key=value, got "${word}"`, { status: 400 });
    const value = word.slice(eq + 1);
    data[word.slice(0, eq)] = /^(-?\d+(\.\d+)?|true|false)$/.test(value) ? JSON.parse(value) : value;
  }
  return data;
}

/**
 * One event as a line for people: `TIME BOX TYPE [ORIGIN] key=value…` (`-` for the laptop's own, a
 * value that is not a plain word written as JSON). The reverse of what `emit` takes.
 */
export function eventLine(event: DockEvent): string {
  const data = Object.entries(event.data ?? {}).map(([key, value]) =>
    `${key}=${typeof value === "string" && /^[^\s"=]*$/.test(value) ? value : JSON.stringify(value)}`
  );
  return [event.time, event.box ?? "-", event.type, event.origin ? `[${event.origin}]` : "", ...data]
    .filter((part) => part !== "").join(" ");
}

/** A progress bar on stderr: redrawn in place on a terminal; elsewhere a line per quarter. */
export function progressBar(): {
  draw(label: string, done: number, total: number): void;
  print(line: string): void;
} {
  const terminal = Deno.stderr.isTerminal();
  const encoder = new TextEncoder();
  let open = false;
  let quarter = -1;
  const write = (text: string) => Deno.stderr.writeSync(encoder.encode(text));
  return {
    draw(label, done, total) {
      const share = total > 0 ? Math.min(1, done / total) : 1;
      const mb = (bytes: number) => `${(bytes / 1024 / 1024).toFixed(1)} MB`;
      const text = `${label}: ${mb(done)} of ${mb(total)} (${Math.round(share * 100)}%)`;
      if (terminal) {
        const width = 30;
        const filled = Math.round(share * width);
        write(`\r[${"#".repeat(filled)}${".".repeat(width - filled)}] ${text}\x1b[K`);
        open = share < 1;
        if (!open) write("\n");
      } else if (Math.floor(share * 4) > quarter) {
        quarter = Math.floor(share * 4);
        write(`${text}\n`);
      }
    },
    print(line) {
      if (open) write("\n");
      open = false;
      write(`${line}\n`);
    },
  };
}
