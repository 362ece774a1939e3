/**
 * `deno run place_cache.js ROOT`: {@linkcode placeCache} for the release installed at ROOT (its real
 * path), for an installer that has no dock running (`dock add ssh`'s install script on a fresh box).
 * Bundled into one file by the build: it runs before any cache exists.
 *
 * @module
 */
import { placeCache } from "./cache.ts";

const [root] = Deno.args;
if (!root?.startsWith("/")) throw new Error("usage: place_cache.js ROOT (an absolute path)");
placeCache(root);
