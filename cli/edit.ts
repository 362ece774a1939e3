/**
 * `dock edit BOX/LOC[/WT] [FILE[:LINE[:COL]]] [--editor ID]` and `dock ssh-config [--json]`: a box's
 * folder or file in an editor on this laptop, through its remote SSH mode and the host dock writes for
 * the box (`agent/editors.ts`, `agent/ssh_config.ts`).
 *
 * @module
 */
import type { Command } from "./commander.ts";
import { DockError } from "../client/errors.ts";
import { agentClient } from "./agent.ts";
import { guarded, printJson, table } from "./output.ts";

/** `FILE[:LINE[:COL]]` into its parts. */
export function parseFileSpec(spec: string): { file: string; line?: number; col?: number } {
  const match = /^(.*?)(?::(\d+))?(?::(\d+))?$/.exec(spec)!;
  return {
    file: match[1],
    ...(match[2] ? { line: Number(match[2]) } : {}),
    ...(match[3] ? { col: Number(match[3]) } : {}),
  };
}

/** Adds `edit` and `ssh-config` to `dock`. */
export function editCommands(program: Command): void {
  program.command("edit").description(
    "open a box's location, worktree or file in an editor here (remote SSH)",
  )
    .argument("<target>", "BOX/LOCATION or BOX/LOCATION/WORKTREE").argument("[file]", "FILE[:LINE[:COL]]")
    .option("--editor <id>", "vscode, cursor, windsurf, zed or gateway (default: the first installed)")
    .option("--json", "print JSON").action((target, spec, o) =>
      guarded(async () => {
        const parts = target.split("/");
        if (parts.length < 2 || parts.length > 3 || parts.some((p: string) => !p)) {
          throw new DockError("usage", `expected BOX/LOCATION[/WORKTREE], got '${target}'`);
        }
        const [box, location, worktree] = parts;
        const client = await agentClient();
        const editor = o.editor ?? (await client.editors())[0]?.id;
        if (!editor) {
          throw new DockError(
            "no_editor",
            "no editor found here: install VS Code, Cursor, Windsurf, Zed or JetBrains Gateway",
          );
        }
        const opened = await client.openEditor({
          editor,
          box,
          location,
          ...(worktree ? { worktree } : {}),
          ...(spec ? parseFileSpec(spec) : {}),
        });
        if (o.json) {
          return printJson(opened);
        }
        console.log(`opened in ${opened.editor}: ${opened.command.slice(1).join(" ")}`);
      }, "dock")
    );

  program.command("ssh-config").description(
    "write a Host per box to ~/.ssh/config.d/dock and include it from ~/.ssh/config",
  ).option("--print", "only show the hosts, write nothing").option("--json", "print JSON").action((o) =>
    guarded(async () => {
      const client = await agentClient();
      const state = o.print ? await client.sshConfig() : await client.writeSshConfig();
      if (o.json) return printJson(state);
      table(
        ["HOST", "BOX", "HOSTNAME", "USER", "PORT"],
        state.hosts.map((h) => [h.host, h.box, h.hostname, h.user, h.port]),
      );
      if (!o.print) {
        console.log(
          state.changed?.length ? `wrote ${state.changed.join(", ")}` : `${state.file} is up to date`,
        );
      }
    }, "dock")
  );
}
