/**
 * The box's tables in `dockd.db` (the event journal's are the bus's own, in `core/events.ts`): locations,
 * worktrees, port blocks, services, sessions, send idempotency keys and flow runs. Written once, here.
 *
 * @module
 */

/**
 * The condition "the row's `path` holds the path bound as `?1`": the same folder, or one inside it (not
 * merely a name starting the same: `/srv/app` does not hold `/srv/app2`). Worktrees and sessions are
 * found by a reported directory with it, the deepest first (`ORDER BY length(path) DESC`).
 */
export const PATH_HOLDS = "(path = ?1 OR substr(?1, 1, length(path) + 1) = path || '/')";

/**
 * A supervised child's columns (supervisor.ts `SupervisedRow`), written once: the services, units and
 * tunnels tables each have them after their key.
 */
const SUPERVISED_COLUMNS = `
  desired TEXT NOT NULL DEFAULT 'stopped',
  state TEXT NOT NULL DEFAULT 'stopped',
  pid INTEGER,
  pid_start INTEGER,
  restarts INTEGER NOT NULL DEFAULT 0,
  crashes INTEGER NOT NULL DEFAULT 0,
  started TEXT,
  exit_code INTEGER,
  error TEXT,
  cgroup TEXT,`.trim();

/** Run at every open; every statement is `IF NOT EXISTS`. */
export const BOX_SCHEMA = `
CREATE TABLE IF NOT EXISTS locations (
  name TEXT PRIMARY KEY,
  path TEXT NOT NULL UNIQUE,
  local_config TEXT,
  created TEXT NOT NULL
);
CREATE TABLE IF NOT EXISTS worktrees (
  location TEXT NOT NULL REFERENCES locations(name) ON DELETE CASCADE,
  name TEXT NOT NULL,
  path TEXT NOT NULL,
  branch TEXT,
  base TEXT,
  main INTEGER NOT NULL DEFAULT 0,
  origin TEXT NOT NULL,
  setup_state TEXT NOT NULL DEFAULT 'none',
  setup_exit INTEGER,
  setup_started TEXT,
  setup_finished TEXT,
  setup_error TEXT,
  paused INTEGER NOT NULL DEFAULT 0,
  created TEXT NOT NULL,
  PRIMARY KEY (location, name)
);
CREATE UNIQUE INDEX IF NOT EXISTS worktrees_path ON worktrees(path);
CREATE TABLE IF NOT EXISTS ports (
  port INTEGER PRIMARY KEY,
  location TEXT NOT NULL,
  worktree TEXT NOT NULL,
  idx INTEGER NOT NULL,
  FOREIGN KEY (location, worktree) REFERENCES worktrees(location, name) ON DELETE CASCADE
);
CREATE TABLE IF NOT EXISTS services (
  location TEXT NOT NULL,
  worktree TEXT NOT NULL,
  name TEXT NOT NULL,
${SUPERVISED_COLUMNS}
  PRIMARY KEY (location, worktree, name),
  FOREIGN KEY (location, worktree) REFERENCES worktrees(location, name) ON DELETE CASCADE
);
CREATE TABLE IF NOT EXISTS sessions (
  name TEXT PRIMARY KEY,
  location TEXT NOT NULL,
  worktree TEXT NOT NULL,
  path TEXT NOT NULL,
  command TEXT NOT NULL,
  agent TEXT,
  agent_state TEXT NOT NULL DEFAULT 'idle',
  state_time TEXT,
  exited INTEGER NOT NULL DEFAULT 0,
  exit_code INTEGER,
  created TEXT NOT NULL,
  from_session TEXT
);
-- Each change of a session's agent state with its cause (agent_state.ts): the last 50 per session are
-- kept, so a wrong state can be explained. Removed with the session.
CREATE TABLE IF NOT EXISTS session_states (
  seq INTEGER PRIMARY KEY AUTOINCREMENT,
  session TEXT NOT NULL,
  state TEXT NOT NULL,
  reason TEXT,
  cause TEXT NOT NULL,
  time TEXT NOT NULL
);
CREATE INDEX IF NOT EXISTS session_states_session ON session_states(session, seq);
-- Units (units.ts): the box's own long-running processes, no worktree's. Their rows have the services
-- table's columns (one supervisor runs both; location and worktree are empty) and the unit's definition.
CREATE TABLE IF NOT EXISTS units (
  location TEXT NOT NULL DEFAULT '',
  worktree TEXT NOT NULL DEFAULT '',
  name TEXT NOT NULL,
  run TEXT NOT NULL DEFAULT '',
  env TEXT NOT NULL DEFAULT '{}',
  autostart INTEGER NOT NULL DEFAULT 0,
  created TEXT,
${SUPERVISED_COLUMNS}
  PRIMARY KEY (location, worktree, name)
);
-- Public shares of a worktree's port (shares.ts). Their tunnels run under the supervisor (the tunnels
-- table, keyed by the share's id); pid and pid_start here are the tunnel's wrapper at its start.
CREATE TABLE IF NOT EXISTS shares (
  id TEXT PRIMARY KEY,
  location TEXT NOT NULL,
  worktree TEXT NOT NULL,
  port INTEGER NOT NULL,
  tool TEXT NOT NULL,
  url TEXT,
  pid INTEGER NOT NULL,
  pid_start INTEGER NOT NULL,
  created TEXT NOT NULL
);
-- Shares' tunnels (shares.ts): supervised children, one per share (name = the share's id; location and
-- worktree are empty), never restarted: a tunnel that ends ends its share.
CREATE TABLE IF NOT EXISTS tunnels (
  location TEXT NOT NULL DEFAULT '',
  worktree TEXT NOT NULL DEFAULT '',
  name TEXT NOT NULL,
${SUPERVISED_COLUMNS}
  PRIMARY KEY (location, worktree, name)
);
-- Idempotency keys of POST sessions/{name}/send: recorded before the text is typed, so a repeat with
-- the same key replays the outcome instead of typing again (see send_ledger.ts).
CREATE TABLE IF NOT EXISTS send_keys (
  key TEXT PRIMARY KEY,
  session TEXT NOT NULL,
  state TEXT NOT NULL,
  outcome TEXT,
  created TEXT NOT NULL
);
CREATE INDEX IF NOT EXISTS send_keys_created ON send_keys(created);
-- Flow runs (flows.ts): the last 200 are kept. A run still 'running' when the daemon starts was cut off
-- by its stop and becomes 'interrupted' (never run again).
CREATE TABLE IF NOT EXISTS flow_runs (
  id INTEGER PRIMARY KEY AUTOINCREMENT,
  flow TEXT NOT NULL,
  scope TEXT NOT NULL,
  trigger TEXT NOT NULL,
  status TEXT NOT NULL,
  reason TEXT,
  location TEXT,
  worktree TEXT,
  start TEXT NOT NULL,
  end TEXT,
  steps TEXT NOT NULL DEFAULT '[]'
);
CREATE INDEX IF NOT EXISTS flow_runs_flow ON flow_runs(flow, start);
-- What each forge flow has seen on each worktree's pull request (forge.ts): item '' marks that the first
-- look happened (it records, never replays), so a restart neither replays nor misses.
CREATE TABLE IF NOT EXISTS forge_seen (
  watch TEXT NOT NULL,
  item TEXT NOT NULL,
  seen TEXT NOT NULL,
  PRIMARY KEY (watch, item)
);
`;
