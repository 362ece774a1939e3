/**
 * The SSH config dock keeps for its boxes (issue 17): one `Host dock-<box>` per box it can name an SSH
 * destination for (the one `dock add ssh` used, else the host of a paired box's address), written to
 * `~/.ssh/config.d/dock` whole, and one `Include config.d/dock` line at the top of `~/.ssh/config` (an
 * Include inside a Host block would apply to that block only). Writing is idempotent; `~/.ssh/config` is
 * backed up (`config.dock-backup`) before dock first changes it, and every other line of it is kept.
 * Editors open boxes through these names (`editors.ts`).
 *
 * @module
 */
import { join } from "../core/posix_path.ts";
import type { SshConfigState, SshHost } from "../client/wire.ts";
import { readTextOrNull, writeAtomic } from "../core/files.ts";
import type { Boxes } from "./boxes.ts";

/** The line that brings dock's hosts into the person's config. */
export const INCLUDE_LINE = "Include config.d/dock";

/** What the SSH config uses of the agent. */
export interface SshConfigBackend {
  boxes: Pick<Boxes, "list" | "sshDestinations"> & Partial<Pick<Boxes, "sshAccess">>;
}

/** The SSH host name dock gives a box. */
export function sshAlias(box: string): string {
  return `dock-${box}`;
}

/** The hosts dock manages: one per box it can reach over SSH. */
export function sshHosts(agent: SshConfigBackend): SshHost[] {
  const destinations = agent.boxes.sshDestinations();
  const access = agent.boxes.sshAccess?.() ?? new Map();
  const hosts: SshHost[] = [];
  for (const box of agent.boxes.list()) {
    // What `add ssh` resolved (a Host of the person's config among them: its HostName, not its alias,
    // which `ssh dock-BOX` would not resolve again) and the key it was told to use.
    const resolved = access.get(box.name);
    if (resolved) {
      hosts.push({
        host: sshAlias(box.name),
        box: box.name,
        hostname: resolved.hostname,
        ...(resolved.user ? { user: resolved.user } : {}),
        ...(resolved.port && resolved.port !== 22 ? { port: resolved.port } : {}),
        ...(resolved.identity ? { identity: resolved.identity } : {}),
      });
      continue;
    }
    // A paired box's host, bracketed when an IPv6 address (read below as the destination's own form).
    const paired = box.kind === "tls" ? boxHost(box.address) : null;
    const destination = destinations.get(box.name) ?? (paired?.includes(":") ? `[${paired}]` : paired);
    if (!destination) continue;
    const match = /^(?:([^@\s]+)@)?(\[[^\]]+\]|[^:\s]+)(?::(\d+))?$/.exec(destination);
    if (!match) continue;
    hosts.push({
      host: sshAlias(box.name),
      box: box.name,
      hostname: match[2].replace(/^\[(.*)\]$/, "$1"),
      ...(match[1] ? { user: match[1] } : {}),
      ...(match[3] ? { port: Number(match[3]) } : {}),
    });
  }
  return hosts;
}

/**
 * The text of `~/.ssh/config.d/dock`. A value ssh could read otherwise than written (a control
 * character would start a line of its own, a `"` end a quoted one) leaves its host out; one with a
 * space is quoted (a key file under "My Keys").
 */
export function renderHosts(hosts: SshHost[]): string {
  const blocks = hosts.filter((h) =>
    [h.hostname, h.user, h.identity].every((v) => v === undefined || configValue(v) !== null)
  ).map((h) =>
    [
      `Host ${h.host}`,
      `  HostName ${configValue(h.hostname)}`,
      ...(h.user ? [`  User ${configValue(h.user)}`] : []),
      ...(h.port ? [`  Port ${h.port}`] : []),
      ...(h.identity ? [`  IdentityFile ${configValue(h.identity)}`, "  IdentitiesOnly yes"] : []),
    ].join("\n")
  );
  return `# Written by dock (dock ssh-config): one Host per box. Edits here are replaced.\n\n${
    blocks.join("\n\n")
  }\n`;
}

/** Where the files are for `home`. */
function files(home: string) {
  const ssh = join(home, ".ssh");
  return {
    ssh,
    dir: join(ssh, "config.d"),
    hosts: join(ssh, "config.d", "dock"),
    config: join(ssh, "config"),
  };
}

/** What is written now. */
export async function sshConfigState(agent: SshConfigBackend, home: string): Promise<SshConfigState> {
  const at = files(home);
  const config = await readTextOrNull(at.config);
  return {
    file: at.hosts,
    included: config !== null && hasInclude(config),
    hosts: sshHosts(agent),
  };
}

/** Writes dock's hosts and the Include line; answers what changed. */
export async function writeSshConfig(
  agent: SshConfigBackend,
  home: string,
): Promise<SshConfigState & { changed: string[] }> {
  const at = files(home);
  const changed: string[] = [];
  await Deno.mkdir(at.dir, { recursive: true, mode: 0o700 });
  await Deno.chmod(at.ssh, 0o700).catch(() => {});
  const hosts = sshHosts(agent);
  const text = renderHosts(hosts);
  if (await readTextOrNull(at.hosts) !== text) {
    await writeAtomic(at.hosts, text);
    changed.push(at.hosts);
  }
  const config = await readTextOrNull(at.config);
  if (config === null || !hasInclude(config)) {
    if (config !== null && await readTextOrNull(`${at.config}.dock-backup`) === null) {
      await Deno.writeTextFile(`${at.config}.dock-backup`, config, { mode: 0o600 });
    }
    await writeAtomic(at.config, `${INCLUDE_LINE}\n${config === null ? "" : `\n${config}`}`);
    changed.push(at.config);
  }
  return { file: at.hosts, included: true, hosts, changed };
}

/** `value` as an ssh_config argument: quoted when it has a space; null when it cannot be written. */
export function configValue(value: string): string | null {
  // deno-lint-ignore no-control-regex -- control characters are what is refused
  if (!value || /[\x00-\x1f\x7f"]/.test(value)) return null;
  return /\s/.test(value) ? `"${value}"` : value;
}

function hasInclude(config: string): boolean {
  return config.split(/\r?\n/).some((line) => line.trim() === INCLUDE_LINE);
}

/** The host name of a paired box's `https://host:port` address, or null. */
export function boxHost(address: string): string | null {
  try {
    return new URL(address).hostname.replace(/^\[(.*)\]$/, "$1") || null;
  } catch {
    return null;
  }
}
