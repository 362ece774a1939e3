/**
 * Editors on the laptop (issue 17): which are installed (VS Code, Cursor, Windsurf, Zed, JetBrains
 * Gateway, by their command-line launchers on `PATH`), and opening a folder or a file of a box in one through its remote
 * SSH mode, by the host dock writes for the box (`ssh_config.ts`; written first, so the name resolves), or,
 * for a box on this machine (`dock add local`), as a local folder.
 *
 * @module
 */
import type { EditorInfo, EditorOpen, EditorOpened } from "../client/wire.ts";
import { DockError } from "../client/errors.ts";
import { launch, which } from "../core/runner.ts";
import type { Boxes } from "./boxes.ts";
import { sshAlias, type SshConfigBackend, writeSshConfig } from "./ssh_config.ts";

/** Where a remote folder is, for an editor's command line. */
interface Remote {
  /** The SSH host dock wrote for the box (`dock-<box>`). */
  host: string;
  user?: string;
  port?: number;
  folder: string;
  /** `path:line:col` of a file, when one is opened. */
  file: string | null;
}

/** The editors dock knows, and how each opens a remote folder or a file at a line. */
const EDITORS: {
  id: string;
  name: string;
  commands: string[];
  /** The command run: the editor's own launcher (found) or the desktop's URL opener. */
  run?: (found: string) => string;
  args: (remote: Remote) => string[];
  /**
   * Its arguments for a folder on this machine (a box added with `dock add local`); absent for an
   * editor that opens remote projects only.
   */
  local?: (place: Pick<Remote, "folder" | "file">) => string[];
}[] = [
  ...[
    { id: "vscode", name: "Visual Studio Code", commands: ["code"] },
    { id: "cursor", name: "Cursor", commands: ["cursor"] },
    { id: "windsurf", name: "Windsurf", commands: ["windsurf"] },
  ].map((editor) => ({
    ...editor,
    // The Remote - SSH extension's form; --goto opens the file at the line inside that window.
    args: ({ host, folder, file }: Remote) => [
      "--remote",
      `ssh-remote+${host}`,
      folder,
      ...(file ? ["--goto", file] : []),
    ],
    local: ({ folder, file }: Pick<Remote, "folder" | "file">) => [folder, ...(file ? ["--goto", file] : [])],
  })),
  {
    id: "zed",
    name: "Zed",
    commands: ["zed"],
    args: ({ host, folder, file }) => [`ssh://${host}${file ?? folder}`],
    local: ({ folder, file }) => [file ?? folder],
  },
  {
    // Gateway opens remote projects from its URL (the form Coder, DevPod and others hand it), through the
    // desktop's URL opener; it reads the host from the SSH config. A file is not opened in it: the project is.
    id: "gateway",
    name: "JetBrains Gateway",
    commands: ["gateway", "jetbrains-gateway"],
    run: () => Deno.build.os === "darwin" ? "open" : "xdg-open",
    args: ({ host, user, port, folder }) => [
      `jetbrains-gateway://connect#type=ssh&deploy=false&host=${encodeURIComponent(host)}&port=${
        port ?? 22
      }` +
      `&user=${encodeURIComponent(user ?? Deno.env.get("USER") ?? "")}&projectPath=${
        encodeURIComponent(folder)
      }`,
    ],
  },
];

/** What opening an editor uses of the agent. */
export interface EditorsBackend extends SshConfigBackend {
  boxes: SshConfigBackend["boxes"] & Pick<Boxes, "client" | "has">;
  /** The laptop user's home (where `~/.ssh` is). */
  home: string;
  /** Where editors are looked for. @default {the agent's PATH} */
  path?: () => string;
}

/** The editors installed here. */
export function editors(agent: Pick<EditorsBackend, "path">): EditorInfo[] {
  const path = agent.path?.() ?? Deno.env.get("PATH") ?? "";
  const found: EditorInfo[] = [];
  for (const editor of EDITORS) {
    const command = editor.commands.map((c) => which(c, path)).find((c) => c !== null);
    if (command) found.push({ id: editor.id, name: editor.name, command });
  }
  return found;
}

/** Opens a box's folder (a location, a worktree, or a path) or a file in it, in `editor`. */
export async function openEditor(agent: EditorsBackend, request: EditorOpen): Promise<EditorOpened> {
  const editor = EDITORS.find((e) => e.id === request.editor);
  if (!editor) {
    // A name dock does not know is a mistake in the request, not a missing install (issue 33).
    throw new DockError(
      "unknown_editor",
      `unknown editor '${request.editor}': dock knows ${EDITORS.map((e) => e.id).join(", ")}`,
      { status: 400, detail: { field: "editor" } },
    );
  }
  const installed = editors(agent).find((e) => e.id === request.editor);
  if (!installed) {
    const here = editors(agent).map((e) => e.id);
    throw new DockError(
      "no_editor",
      `editor '${request.editor}' is not installed here (found: ${here.join(", ") || "none"})`,
      {
        status: 422,
      },
    );
  }
  if (!agent.boxes.has(request.box)) {
    throw new DockError("not_found", `no box named ${request.box}`, { status: 404 });
  }
  const folder = await folderOf(agent, request);
  const file = request.file
    ? `${joinRemote(folder, request.file)}${
      request.line ? `:${request.line}${request.col ? `:${request.col}` : ""}` : ""
    }`
    : null;
  // A box on this machine (`dock add local`): its folders are this machine's, opened as they are.
  if (agent.boxes.list().find((box) => box.name === request.box)?.kind === "socket") {
    if (!editor.local) {
      throw new DockError(
        "remote_only",
        `${editor.name} opens remote projects only; ${request.box} is this machine`,
        {
          status: 422,
        },
      );
    }
    return run(editor, installed.command, editor.local({ folder, file }), agent);
  }
  const state = await writeSshConfig(agent, agent.home);
  const host = sshAlias(request.box);
  if (!state.hosts.some((h) => h.host === host)) {
    throw new DockError(
      "no_ssh_host",
      `box '${request.box}' has no SSH destination dock knows (add it with dock add ssh)`,
      { status: 422 },
    );
  }
  const entry = state.hosts.find((h) => h.host === host)!;
  return run(
    editor,
    installed.command,
    editor.args({ host, user: entry.user, port: entry.port, folder, file }),
    agent,
  );
}

/** Starts `editor` (found as `found`) with `args`, detached; says what ran. */
function run(
  editor: (typeof EDITORS)[number],
  found: string,
  args: string[],
  agent: Pick<EditorsBackend, "path">,
): EditorOpened {
  const command = editor.run?.(found) ?? found;
  if (!which(command, agent.path?.() ?? Deno.env.get("PATH") ?? "") && !command.startsWith("/")) {
    throw new DockError("no_opener", `${editor.name} opens through ${command}, which is not installed here`, {
      status: 422,
    });
  }
  launch(command, args);
  return { editor: editor.id, command: [command, ...args] };
}

/** The folder on the box: a worktree's, a location's, or a path given as it is. */
async function folderOf(agent: EditorsBackend, request: EditorOpen): Promise<string> {
  if (request.path) {
    if (!request.path.startsWith("/")) {
      throw new DockError("invalid_request", "path: must be absolute on the box", { status: 400 });
    }
    return request.path;
  }
  if (!request.location) throw new DockError("invalid_request", "name a location or a path", { status: 400 });
  const client = agent.boxes.client(request.box);
  if (request.worktree) return (await client.worktree(request.location, request.worktree)).path;
  return (await client.location(request.location)).path;
}

function joinRemote(folder: string, file: string): string {
  if (file.startsWith("/")) return file;
  return `${folder.replace(/\/$/, "")}/${file.replace(/^\.\//, "")}`;
}
