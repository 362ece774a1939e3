/**
 * The modules of `cli/` a package leaves as sources (build.ts bundles the rest of `cli/`): they run
 * the servers, which start workers and processes by their own files' paths. `cli/lazy.ts` loads them
 * from the sources when it runs from a bundle.
 *
 * @module
 */

/** Their names as `cli/lazy.ts`'s `load()` is given them. */
export const UNBUNDLED: readonly string[] = ["./serve.ts", "./run_agent.ts"];
