/**
 * The command families both programs have, about a box: `dockd` runs them on this box, `dock` on a
 * box named by a `BOX/` prefix through the agent. Which box they reach is the scope's business.
 *
 * @module
 */
import type { Command } from "./commander.ts";
import type { Families, Register } from "./families.ts";
import { load } from "./lazy.ts";
import type { Scope } from "./target.ts";

/** A family written against a scope, registered once its module and the scope are ready. */
function scoped<M>(
  module: () => Promise<M>,
  pick: (module: M) => (program: Command, scope: Scope) => void,
  scope: () => Promise<Scope>,
): () => Promise<Register> {
  return async () => {
    const [loaded, resolved] = await Promise.all([module(), scope()]);
    return (program) => pick(loaded)(program, resolved);
  };
}

/**
 * Locations, worktrees, services, sessions and tasks, exec, skills, hooks, flows, plugins and the phone
 * companion, each loaded only when a command line names it; `scope` is made then too.
 */
export function boxFamilies(scope: () => Promise<Scope>): Families {
  return {
    location: scoped(
      () => load<typeof import("./location.ts")>("./location.ts"),
      (m) => m.locationCommands,
      scope,
    ),
    worktree: scoped(
      () => load<typeof import("./worktree.ts")>("./worktree.ts"),
      (m) => m.worktreeCommands,
      scope,
    ),
    service: scoped(
      () => load<typeof import("./service.ts")>("./service.ts"),
      (m) => m.serviceCommands,
      scope,
    ),
    session: scoped(
      () => load<typeof import("./session.ts")>("./session.ts"),
      (m) => m.sessionCommands,
      scope,
    ),
    exec: scoped(() => load<typeof import("./exec.ts")>("./exec.ts"), (m) => m.execCommand, scope),
    skills: scoped(() => load<typeof import("./skills.ts")>("./skills.ts"), (m) => m.skillsCommands, scope),
    hooks: scoped(() => load<typeof import("./hooks.ts")>("./hooks.ts"), (m) => m.hooksCommands, scope),
    flow: scoped(() => load<typeof import("./flow.ts")>("./flow.ts"), (m) => m.flowCommands, scope),
    plugin: scoped(() => load<typeof import("./plugin.ts")>("./plugin.ts"), (m) => m.pluginCommands, scope),
    phone: scoped(() => load<typeof import("./phone.ts")>("./phone.ts"), (m) => m.phoneCommands, scope),
    review: scoped(() => load<typeof import("./review.ts")>("./review.ts"), (m) => m.reviewCommands, scope),
    share: scoped(() => load<typeof import("./share.ts")>("./share.ts"), (m) => m.shareCommands, scope),
    unit: scoped(() => load<typeof import("./unit.ts")>("./unit.ts"), (m) => m.unitCommands, scope),
  };
}
