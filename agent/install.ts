/**
 * `dock agent install`: the agent as a service that runs permanently, so agents on boxes keep being
 * followed (events, queue) whatever the app does. A systemd user unit on Linux, a launchd agent on
 * macOS. The unit runs this very program (`deno run … cli/dock.ts agent`) with the dock directories it
 * was installed with.
 *
 * @module
 */
import { join } from "node:path";
import { run, shellQuote, which } from "../core/runner.ts";

/** What an install did. */
export interface InstallResult {
  file: string;
  manager: "systemd" | "launchd";
  /** Whether the service manager was told to start it now (false: print how). */
  started: boolean;
  notes: string[];
}

/** The command line the service runs. */
export function agentCommand(): string[] {
  return [
    Deno.execPath(),
    "run",
    "-A",
    "--cached-only",
    new URL("../cli/dock.ts", import.meta.url).pathname,
    "agent",
  ];
}

/** The dock variables the service keeps, so it uses the same directories and ports as this shell. */
export function agentEnvironment(env: Record<string, string | undefined>): Record<string, string> {
  const kept: Record<string, string> = {};
  for (const key of ["DOCK_HOME", "DOCK_STATE_DIR", "DOCK_AGENT_PORT", "DOCK_PROXY_PORT", "PATH"]) {
    if (env[key]) kept[key] = env[key]!;
  }
  return kept;
}

/** A systemd user unit for the agent. */
export function systemdUnit(command: string[], env: Record<string, string>): string {
  const quote = (word: string) =>
    /^[A-Za-z0-9_@%+=:,./-]+$/.test(word) ? word : `"${word.replace(/["\\]/g, "\\$&")}"`;
  return [
    "[Unit]",
    "Description=dock laptop agent",
    "After=network-online.target",
    "",
    "[Service]",
    `ExecStart=${command.map(quote).join(" ")}`,
    ...Object.entries(env).map(([key, value]) => `Environment=${quote(`${key}=${value}`)}`),
    "Restart=always",
    "RestartSec=2",
    "",
    "[Install]",
    "WantedBy=default.target",
    "",
  ].join("\n");
}

/** A launchd agent plist for the agent. */
export function launchdPlist(command: string[], env: Record<string, string>, log: string): string {
  const xml = (text: string) => text.replace(/&/g, "&amp;").replace(/</g, "&lt;").replace(/>/g, "&gt;");
  return `<?xml version="1.0" encoding="UTF-8"?>
<!DOCTYPE plist PUBLIC "-//Apple//DTD PLIST 1.0//EN" "http://www.apple.com/DTDs/PropertyList-1.0.dtd">
<plist version="1.0">
<dict>
  <key>Label</key><string>dev.dock.agent</string>
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
export async function installAgentService(options: { log: string }): Promise<InstallResult> {
  const env = Deno.env.toObject();
  const command = agentCommand();
  const variables = agentEnvironment(env);
  const home = env.HOME ?? "/";
  const notes: string[] = [];
  if (Deno.build.os === "darwin") {
    const file = join(home, "Library", "LaunchAgents", "dev.dock.agent.plist");
    await Deno.mkdir(join(home, "Library", "LaunchAgents"), { recursive: true });
    await Deno.writeTextFile(file, launchdPlist(command, variables, options.log));
    const loaded = await run("launchctl", ["load", "-w", file], { timeoutMs: 15_000 }).catch(() => null);
    if (!loaded || loaded.code !== 0) notes.push(`start it with: launchctl load -w ${shellQuote(file)}`);
    return { file, manager: "launchd", started: loaded?.code === 0, notes };
  }
  const dir = join(env.XDG_CONFIG_HOME || join(home, ".config"), "systemd", "user");
  const file = join(dir, "dock-agent.service");
  await Deno.mkdir(dir, { recursive: true });
  await Deno.writeTextFile(file, systemdUnit(command, variables));
  let started = false;
  if (which("systemctl")) {
    const reload = await run("systemctl", ["--user", "daemon-reload"], { timeoutMs: 15_000 });
    const enable = reload.code === 0
      ? await run("systemctl", ["--user", "enable", "--now", "dock-agent.service"], { timeoutMs: 30_000 })
      : reload;
    started = enable.code === 0;
    if (!started) notes.push(`systemctl said: ${enable.stderr.trim().split("\n")[0]}`);
  }
  if (!started) {
    notes.push("start it with: systemctl --user daemon-reload && systemctl --user enable --now dock-agent");
  }
  return { file, manager: "systemd", started, notes };
}
