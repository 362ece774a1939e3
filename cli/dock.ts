#!/usr/bin/env -S deno run -A
/**
 * `dock`: the entry point (see `entry.ts` for why it loads almost nothing before dispatching).
 *
 * @module
 */
import { enter } from "./entry.ts";

await enter("./dock_main.ts", "dock");
