/**
 * Where dock keeps things. `DOCK_HOME` (default `~/.dock`) holds the user's files (spec 2.9);
 * `DOCK_STATE_DIR` (default `~/.local/state/dock`) holds state, the box's under `box/` and the
 * laptop's under `client/`. Nothing of dock is written anywhere else, worktrees aside.
 *
 * @module
 */
import { join } from "./posix_path.ts";
import { stateDirFrom } from "./hook_paths.ts";

/** The resolved directories and files of a box daemon. */
export interface BoxPaths {
  /** The user's home directory. */
  userHome: string;
  /** `DOCK_HOME`. */
  home: string;
  /** `DOCK_STATE_DIR`. */
  state: string;
  /** `<state>/box`. */
  box: string;
  /** `<state>/box/dockd.sock`, the daemon's own API socket (mode 0600). */
  socket: string;
  /** `<state>/box/dockd.db`, the SQLite store. */
  db: string;
  /** `<state>/box/logs`, setup and archive output. */
  logs: string;
  /** `<DOCK_HOME>/box.json`, the box's own settings. */
  boxConfig: string;
  /** `<DOCK_HOME>/env.json`. */
  envFile: string;
  /** `<DOCK_HOME>/guard.json`. */
  guardFile: string;
  /** `<DOCK_HOME>/hooks.json`, the box's hooks (the laptop agent's too, on a machine that is both). */
  hooksFile: string;
  /** `<DOCK_HOME>/flows.json`, the box's own flows (any project, or one `where.location`). */
  flowsFile: string;
  /** Default parent folder of worktrees: `<DOCK_HOME>/worktrees`. */
  worktrees: string;
}

/**
 * The socket beside a daemon's API socket (`dockd.sock`) that serves its WebSockets, attach and tunnels
 * (`dockd-ws.sock`): the API socket's connections are served by the runtime's own server, which cannot
 * carry one (core/listen_direct.ts).
 */
export function webSocketsSocket(socket: string): string {
  return socket.endsWith(".sock") ? `${socket.slice(0, -".sock".length)}-ws.sock` : `${socket}-ws`;
}

/** Resolves the box's paths from the environment. */
export function boxPaths(env: { get(key: string): string | undefined } = Deno.env): BoxPaths {
  const userHome = env.get("HOME") ?? "/";
  const home = env.get("DOCK_HOME") || join(userHome, ".dock");
  // The one resolution `dock hook` shares (core/hook_paths.ts).
  const state = stateDirFrom((key) => env.get(key));
  const box = join(state, "box");
  return {
    userHome,
    home,
    state,
    box,
    socket: join(box, "dockd.sock"),
    db: join(box, "dockd.db"),
    logs: join(box, "logs"),
    boxConfig: join(home, "box.json"),
    envFile: join(home, "env.json"),
    guardFile: join(home, "guard.json"),
    hooksFile: join(home, "hooks.json"),
    flowsFile: join(home, "flows.json"),
    worktrees: join(home, "worktrees"),
  };
}

/** The resolved directories and files of the laptop agent. */
export interface ClientPaths {
  /** `DOCK_HOME` (the laptop's user files: templates, themes, app settings, hooks). */
  home: string;
  /** `<state>/client`. */
  client: string;
  /** `<state>/client/ui-token` (mode 0600). */
  token: string;
  /** `<state>/client/agent.db`. */
  db: string;
  /** `<DOCK_HOME>/hooks.json`, the laptop's hooks. */
  hooksFile: string;
  /** `<state>/client/agent.log`, where a background agent writes. */
  log: string;
  /** The box daemon sharing this state dir (`dock add local`). */
  localSocket: string;
}

/** Resolves the laptop agent's paths from the environment. */
export function clientPaths(env: { get(key: string): string | undefined } = Deno.env): ClientPaths {
  const box = boxPaths(env);
  const client = join(box.state, "client");
  return {
    home: box.home,
    client,
    token: join(client, "ui-token"),
    db: join(client, "agent.db"),
    hooksFile: box.hooksFile,
    log: join(client, "agent.log"),
    localSocket: box.socket,
  };
}
