#!/usr/bin/env -S deno run -A
/**
 * `dock`: the entry point. `dock hook TOOL EVENT` runs on every agent turn, so it is dispatched
 * before anything else is loaded. The imports are dynamic with computed specifiers: static imports,
 * and even dynamic ones with literal specifiers, are loaded at start-up (the whole CLI: ~50 ms
 * instead of ~20).
 *
 * @module
 */
const here = (file: string) => new URL(file, import.meta.url).href;
if (Deno.args[0] === "hook") {
  const { runHook } = await import(here("./hook.ts"));
  await runHook(Deno.args.slice(1));
  Deno.exit(0);
} else {
  const { main } = await import(here("./dock_main.ts"));
  await main(Deno.args);
}
