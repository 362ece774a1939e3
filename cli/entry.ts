/**
 * What `dock` and `dockd` do first: `hook TOOL EVENT` runs on every agent turn, so it is dispatched
 * before anything else is loaded, and `--version` is answered here too. The imports are dynamic with
 * computed specifiers: static imports, and even dynamic ones with literal specifiers, are loaded at
 * start-up (the whole CLI: ~50 ms instead of ~20). Commander alone costs ~30 ms (Deno's Node-compat
 * layer for its `node:fs`/`node:process`), which `--version` does not need.
 *
 * @module
 */
import { BUILD } from "../client/version.ts";

/** Runs `hook …` on the fast path, anything else through `main` of the module `mainModule`. */
export async function enter(mainModule: string): Promise<void> {
  const here = (file: string) => new URL(file, import.meta.url).href;
  if (Deno.args[0] === "hook") {
    const { runHook } = await import(here("./hook.ts"));
    await runHook(Deno.args.slice(1));
    Deno.exit(0); // a tool may leave stdin open: never wait for it
  }
  // What commander's `.version()` prints, for the same flags.
  if (Deno.args[0] === "--version" || Deno.args[0] === "-V") return console.log(BUILD);
  const { main } = await import(here(mainModule));
  await main(Deno.args);
  // The command is done (servers return only when stopped): exit now rather than wait for the runtime
  // to wind down (~4 ms of a ~60 ms floor, measured here). `Deno.exitCode` set by a command stands.
  Deno.exit();
}
