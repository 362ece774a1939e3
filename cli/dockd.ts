#!/usr/bin/env -S deno run -A
/**
 * `dockd`: the entry point (see `entry.ts` for why it loads almost nothing before dispatching).
 *
 * @module
 */
import { enter } from "./entry.ts";

await enter("./dockd_main.ts", "dockd");
