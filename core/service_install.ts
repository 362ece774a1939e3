/**
 * A dock process as a service that runs permanently and is restarted when it stops: `dock agent install`
 * (the laptop agent, so agents on boxes keep being followed whatever the app does) and `dockd install`
 * (the box daemon, so a crash or a reboot does not leave the box unreachable). A systemd user unit on
 * Linux (`Restart=always`), a launchd agent on macOS (`KeepAlive`). The unit runs this very program
 * (`deno run … cli/dock.ts agent` or `cli/dockd.ts serve`) with the dock variables it was installed with.
 *
 * @module
 */
import { join } from "./posix_path.ts";
import { run, shellQuote, which } from "../core/runner.ts";
import { selfCommand } from "./self_command.ts";

/** What an install did. */
export interface InstallResult {
  file: string;
  manager: "systemd" | "launchd" | "cron";
  /** Whether the service manager was told to start it now (false: print how). */
  started: boolean;
  notes: string[];
}

/** What is installed: which program, under which names. */
export interface ServiceSpec {
  /** The systemd unit's name without `.service`, e.g. `dock-agent`. */
  unit: string;
  /** The launchd label, e.g. `dev.dock.agent`. */
  label: string;
  description: string;
  /** The command line the service runs. */
  command: string[];
  /** The variables of this shell the service keeps (besides PATH). */
  variables: string[];
  /** Where launchd writes its output (systemd keeps it in the journal). */
  log: string;
  /** More lines of the systemd unit's `[Service]` section. */
  systemd?: string[];
}

/** The laptop agent (`dock agent install`). */
export function agentService(log: string): ServiceSpec {
  return {
    unit: "dock-agent",
    label: "dev.dock.agent",
    description: "dock laptop agent",
    command: selfCommand("dock", "agent"),
    variables: ["DOCK_HOME", "DOCK_STATE_DIR", "DOCK_AGENT_PORT", "DOCK_PROXY_PORT"],
    log,
  };
}

/** The box daemon (`dockd install`). */
export function daemonService(log: string): ServiceSpec {
  return {
    unit: "dockd",
    label: "dev.dock.dockd",
    description: "dock box daemon",
    command: selfCommand("dockd", "serve"),
    variables: ["DOCK_HOME", "DOCK_STATE_DIR", "DOCK_LISTEN", "DOCK_TLS_HOSTS", "DOCK_PORT_RANGE"],
    log,
    // The unit's cgroup becomes the daemon's to divide: each service gets a cgroup of its own below it
    // (daemon/cgroups.ts), and systemd leaves that subtree alone.
    systemd: ["Delegate=yes"],
  };
}

/** The variables the service keeps (the spec's, and PATH), so it uses the same directories as this shell. */
export function serviceEnvironment(
  spec: Pick<ServiceSpec, "variables">,
  env: Record<string, string | undefined>,
): Record<string, string> {
  const kept: Record<string, string> = {};
  for (const key of [...spec.variables, "PATH"]) {
    if (env[key]) kept[key] = env[key]!;
  }
  return kept;
}

/** Options of {@linkcode systemdUnit}. */
export interface SystemdUnitOptions {
  /** @default {"dock laptop agent"} */
  description?: string;
  /** More lines of the `[Service]` section. @default {[]} */
  service?: string[];
}

/** A systemd user unit. */
export function systemdUnit(
  command: string[],
  env: Record<string, string>,
  options: SystemdUnitOptions = {},
): string {
  const { description = "dock laptop agent", service = [] } = options;
  const quote = (word: string) =>
    /^[A-Za-z0-9_@%+=:,./-]+$/.test(word) ? word : `"${word.replace(/["\\]/g, "\\$&")}"`;
  return [
    "[Unit]",
    `Description=${description}`,
    "After=network-online.target",
    "",
    "[Service]",
    `ExecStart=${command.map(quote).join(" ")}`,
    ...Object.entries(env).map(([key, value]) => `Environment=${quote(`${key}=${value}`)}`),
    "Restart=always",
    "RestartSec=2",
    ...service,
    "",
    "[Install]",
    "WantedBy=default.target",
    "",
  ].join("\n");
}

/** A launchd agent plist. */
export function launchdPlist(
  command: string[],
  env: Record<string, string>,
  log: string,
  label = "dev.dock.agent",
): string {
  const xml = (text: string) => text.replace(/&/g, "&amp;").replace(/</g, "&lt;").replace(/>/g, "&gt;");
  return `<?xml version="1.0" encoding="UTF-8"?>
<!DOCTYPE plist PUBLIC "-//Apple//DTD PLIST 1.0//EN" "http://www.apple.com/DTDs/PropertyList-1.0.dtd">
<plist version="1.0">
<dict>
  <key>Label</key><string>${xml(label)}</string>
  <key>ProgramArguments</key>
  <array>
${command.map((word) => `    <string>${xml(word)}</string>`).join("\n")}
  </array>
  <key>EnvironmentVariables</key>
  <dict>
${Object.entries(env).map(([k, v]) => `    <key>${xml(k)}</key><string>${xml(v)}</string>`).join("\n")}
  </dict>
  <key>RunAtLoad</key><true/>
  <key>KeepAlive</key><true/>
  <key>StandardOutPath</key><string>${xml(log)}</string>
  <key>StandardErrorPath</key><string>${xml(log)}</string>
</dict>
</plist>
`;
}

/** Writes the service file and starts it when the service manager is there. */
export async function installService(
  spec: ServiceSpec,
  options: { env?: Record<string, string> } = {},
): Promise<InstallResult> {
  // The environment is a parameter, so a test never changes the process's own (shared with others).
  const env = options.env ?? Deno.env.toObject();
  const variables = serviceEnvironment(spec, env);
  const home = env.HOME ?? "/";
  const notes: string[] = [];
  if (Deno.build.os === "darwin") {
    const file = join(home, "Library", "LaunchAgents", `${spec.label}.plist`);
    await Deno.mkdir(join(home, "Library", "LaunchAgents"), { recursive: true });
    await Deno.writeTextFile(file, launchdPlist(spec.command, variables, spec.log, spec.label));
    const loaded = await run("launchctl", ["load", "-w", file], { timeoutMs: 15_000 }).catch(() => null);
    if (!loaded || loaded.code !== 0) notes.push(`start it with: launchctl load -w ${shellQuote(file)}`);
    return { file, manager: "launchd", started: loaded?.code === 0, notes };
  }
  const dir = join(env.XDG_CONFIG_HOME || join(home, ".config"), "systemd", "user");
  const file = join(dir, `${spec.unit}.service`);
  await Deno.mkdir(dir, { recursive: true });
  await Deno.writeTextFile(
    file,
    systemdUnit(spec.command, variables, { description: spec.description, service: spec.systemd }),
  );
  let started = false;
  if (which("systemctl", env.PATH ?? "")) {
    const reload = await run("systemctl", ["--user", "daemon-reload"], { timeoutMs: 15_000 });
    const enable = reload.code === 0
      ? await run("systemctl", ["--user", "enable", "--now", `${spec.unit}.service`], { timeoutMs: 30_000 })
      : reload;
    started = enable.code === 0;
    if (!started) notes.push(`systemctl said: ${enable.stderr.trim().split("\n")[0]}`);
  }
  if (!started) {
    notes.push(`start it with: systemctl --user daemon-reload && systemctl --user enable --now ${spec.unit}`);
  }
  return { file, manager: "systemd", started, notes };
}

/** The comment that marks a crontab line as this home's `spec` entry (one per home: a user may have several). */
function cronMarker(spec: Pick<ServiceSpec, "unit">, home: string): string {
  return `# dock:${spec.unit} ${home}`;
}

/**
 * The user crontab's `@reboot` line that starts `spec` at boot where no service manager will (no systemd
 * user session): its command with the variables it was installed with, its output appended to its log.
 * Cron runs it with `sh` and a bare environment; `%` is cron's newline, hence escaped.
 */
export function cronEntry(spec: ServiceSpec, env: Record<string, string | undefined>): string {
  const home = env.HOME ?? "/";
  const variables = Object.entries({ HOME: home, ...serviceEnvironment(spec, env) })
    .map(([key, value]) => `${key}=${shellQuote(value)}`);
  const command = [
    "cd",
    shellQuote(home),
    "&&",
    "env",
    ...variables,
    ...spec.command.map(shellQuote),
    `>>${shellQuote(spec.log)}`,
    "2>&1",
  ].join(" ");
  return `@reboot ${command.replaceAll("%", "\\%")} ${cronMarker(spec, home)}`;
}

/** `crontab` without this home's `spec` line, and with `line` when given. */
export function withCronLine(
  crontab: string,
  spec: Pick<ServiceSpec, "unit">,
  home: string,
  line?: string,
): string {
  const marker = cronMarker(spec, home);
  const kept = crontab.split("\n").filter((row) => row.trim() && !row.endsWith(marker));
  return [...kept, ...(line ? [line] : [])].map((row) => `${row}\n`).join("");
}

/**
 * Adds (or with `remove`, removes) the user crontab's `@reboot` entry of `spec` for this home
 * ({@linkcode cronEntry}); other lines are kept as they were. Throws when there is no `crontab`.
 */
export async function installCron(
  spec: ServiceSpec,
  options: { env?: Record<string, string>; remove?: boolean } = {},
): Promise<InstallResult> {
  const env = options.env ?? Deno.env.toObject();
  if (!which("crontab", env.PATH ?? "")) {
    throw new Error(
      "no crontab here: dockd cannot be started again after a reboot without a service manager",
    );
  }
  const listed = await run("crontab", ["-l"], { timeoutMs: 15_000 });
  // `crontab -l` exits 1 with "no crontab for USER" when there is none yet.
  const current = listed.code === 0 ? listed.stdout : "";
  const home = env.HOME ?? "/";
  const next = withCronLine(current, spec, home, options.remove ? undefined : cronEntry(spec, env));
  if (next === current) return { file: "crontab", manager: "cron", started: false, notes: [] };
  const written = await run("crontab", ["-"], { stdin: next, timeoutMs: 15_000 });
  if (written.code !== 0) throw new Error(`crontab: ${written.stderr.trim().split("\n").at(-1)}`);
  return { file: "crontab", manager: "cron", started: false, notes: [] };
}
