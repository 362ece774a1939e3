#!/usr/bin/env -S deno run -A
/**
 * `dockd`: the box daemon (`dockd serve`) and its command line. Every subcommand other than `serve`
 * talks to the running daemon over its socket through the typed client.
 *
 * @module
 */
import { Command } from "@commander-js/extra-typings";
import { BUILD } from "../daemon/box.ts";
import { eventCommands } from "./events.ts";
import { execCommand } from "./exec.ts";
import { locationCommands } from "./location.ts";
import { serveCommand } from "./serve.ts";
import { serviceCommands } from "./service.ts";
import { systemCommands } from "./system.ts";
import { worktreeCommands } from "./worktree.ts";
import { schemasCommand } from "./schemas.ts";

const program = new Command("dockd").description("dock's box daemon and its command line").version(BUILD);
serveCommand(program);
locationCommands(program);
worktreeCommands(program);
serviceCommands(program);
execCommand(program);
eventCommands(program);
systemCommands(program);
schemasCommand(program);
await program.parseAsync(["deno", "dockd", ...Deno.args]);
