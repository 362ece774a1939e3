/**
 * The command families both programs have, about a box: `dockd` runs them on this box, `dock` on a
 * box named by a `BOX/` prefix through the agent. Which box they reach is the scope's business.
 *
 * @module
 */
import type { Command } from "./commander.ts";
import { execCommand } from "./exec.ts";
import { flowCommands } from "./flow.ts";
import { hooksCommands } from "./hooks.ts";
import { phoneCommands } from "./phone.ts";
import { pluginCommands } from "./plugin.ts";
import { locationCommands } from "./location.ts";
import { serviceCommands } from "./service.ts";
import { sessionCommands } from "./session.ts";
import { skillsCommands } from "./skills.ts";
import type { Scope } from "./target.ts";
import { worktreeCommands } from "./worktree.ts";

/** Adds locations, worktrees, services, sessions and tasks, exec, skills, hooks, flows, plugins and the phone companion. */
export function boxCommands(program: Command, scope: Scope): void {
  locationCommands(program, scope);
  worktreeCommands(program, scope);
  serviceCommands(program, scope);
  sessionCommands(program, scope);
  execCommand(program, scope);
  skillsCommands(program, scope);
  hooksCommands(program, scope);
  flowCommands(program, scope);
  pluginCommands(program, scope);
  phoneCommands(program, scope);
}
