/**
 * What `dock` and `dockd` do first: `hook TOOL EVENT` runs on every agent turn, so it is dispatched
 * before anything else is loaded, and `--version` is answered here too. The hook is imported
 * statically: in a package, `dock.js` and `dockd.js` are each one file holding this module, the hook
 * and what they import (build.ts), so an agent turn loads one module (measured: 1 ms less than the
 * seven it loaded as chunks, of a ~20 ms hook). Everything else is imported with computed specifiers:
 * static imports, and even dynamic ones with literal specifiers, are loaded at start-up (the whole
 * CLI: ~50 ms instead of ~20).
 *
 * @module
 */
import { BUILD } from "../client/version.ts";
import { bundled } from "./lazy.ts";
import { runHook } from "./hook.ts";

/**
 * Runs `hook …` on the fast path, the version and `program`'s top-level help without commander,
 * anything else through `main` of the module `mainModule`.
 */
export async function enter(mainModule: string, program: "dock" | "dockd"): Promise<void> {
  const here = (file: string) => new URL(bundled(file), import.meta.url).href;
  if (Deno.args[0] === "hook") {
    await runHook(Deno.args.slice(1));
    Deno.exit(0); // a tool may leave stdin open: never wait for it
  }
  // What commander's `.version()` prints, for the same flags.
  if (Deno.args[0] === "--version" || Deno.args[0] === "-V") return console.log(BUILD);
  // The top-level help, from the command index (commander would build ~40 stubs to print it).
  if (Deno.args.length === 1 && ["--help", "-h", "help"].includes(Deno.args[0])) {
    const { printTopHelp } = await import(here("./top_help.ts"));
    return printTopHelp(program);
  }
  const { main } = await import(here(mainModule));
  await main(Deno.args);
  // The command is done (servers return only when stopped): exit now rather than wait for the runtime
  // to wind down (~4 ms of a ~60 ms floor, measured here). `Deno.exitCode` set by a command stands.
  Deno.exit();
}
