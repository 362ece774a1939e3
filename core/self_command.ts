/**
 * How dock starts itself again (a service unit, a hook command, the agent started in the background).
 * A leaf: the CLI's start-up loads it.
 *
 * @module
 */

/**
 * The command line that runs `dock` or `dockd` again: a package's launcher when this runs from one
 * (it sets `DOCK_BIN` to the folder it was started from, so a unit or a hook keeps working after an
 * upgrade switches the package under it), else this Deno with this checkout's `cli/<program>.ts`,
 * offline.
 */
export function selfCommand(program: "dock" | "dockd", ...args: string[]): string[] {
  const bin = Deno.env.get("DOCK_BIN");
  if (bin) return [`${bin}/${program}`, ...args];
  return [
    Deno.execPath(),
    "run",
    "-A",
    "--cached-only",
    new URL(`../cli/${program}.ts`, import.meta.url).pathname,
    ...args,
  ];
}
