/**
 * How `dock add ssh` (agent/add_ssh.ts) reaches the machine it adds: through the person's own `ssh`
 * (their config, agent and known_hosts; never a prompt), one shared connection for every step, the
 * `connect` step's probe, and what ssh's refusals mean, said as the person should read them.
 *
 * @module
 */
import { DockError } from "../client/errors.ts";
import { run, type RunResult, shellQuote } from "../core/runner.ts";
import type { PackageRelease } from "../package/release.ts";

/** `[user@]host[:port]`, as the request names the machine. */
export interface SshDestination {
  user?: string;
  host: string;
  port?: number;
}

/**
 * Reads `[user@]host[:port]` (an IPv6 address in brackets). What reaches `ssh` as its destination
 * can never be read as an option: no leading `-`, no spaces, no control characters.
 */
export function parseDestination(text: string): SshDestination {
  const match =
    /^(?:([A-Za-z0-9._][A-Za-z0-9._-]{0,63})@)?(\[[0-9A-Fa-f:.]+\]|[A-Za-z0-9._][A-Za-z0-9._-]{0,252})(?::(\d{1,5}))?$/
      .exec(text);
  const port = match?.[3] === undefined ? undefined : Number(match[3]);
  if (!match || (port !== undefined && (port < 1 || port > 65535))) {
    throw new DockError("invalid_request", `host: expected [user@]host[:port], got ${JSON.stringify(text)}`, {
      status: 400,
      detail: { field: "host" },
    });
  }
  return { user: match[1], host: match[2].replace(/^\[(.*)\]$/, "$1"), port };
}

/**
 * The options every `ssh` the agent runs takes: never a prompt (the agent has no terminal: BatchMode), a
 * dead network fails in 15 s and a dead path is noticed by keepalives, the person's ssh config when
 * `DOCK_SSH_CONFIG` names one, the key asked for (only it), and the destination's port and user; `more`
 * (a caller's own `-o` options) goes after the first three.
 */
export function sshOptions(
  destination: SshDestination,
  options: { config?: string; identity?: string; more?: string[] },
): string[] {
  return [
    "-o",
    "BatchMode=yes",
    "-o",
    "ConnectTimeout=15",
    "-o",
    "ServerAliveInterval=15",
    ...(options.more ?? []),
    ...(options.config ? ["-F", options.config] : []),
    ...(options.identity ? ["-i", options.identity, "-o", "IdentitiesOnly=yes"] : []),
    ...(destination.port ? ["-p", String(destination.port)] : []),
    ...(destination.user ? ["-l", destination.user] : []),
  ];
}

/** A step's failure, said as the person should read it. */
export class StepError extends Error {}

/** What the `connect` step learns of the box. */
export interface Probe {
  os: string;
  arch: string;
  home: string;
  tools: string[];
  /** Whether the box has `zstd` to unpack with. */
  zstd: boolean;
  /** The real path `~/.dock/versions` has, or will have, on the box. */
  versions?: string;
  /** Whether its `tar` is GNU tar (which reads a stream faster in larger records). */
  gnuTar?: boolean;
  packageManager?: string;
  release?: PackageRelease;
  running: boolean;
}

/** `ssh` to one destination, with the person's own configuration. */
export class Ssh {
  readonly display: string;
  #command: string;
  #base: string[];
  #destination: string;

  /** Where the shared connection's socket lives (see {@linkcode Ssh.close}). */
  #control: string;

  constructor(destination: SshDestination, identity?: string) {
    const config = Deno.env.get("DOCK_SSH_CONFIG");
    this.#control = Deno.makeTempDirSync({ prefix: "dock-ssh-" });
    this.#base = [
      ...sshOptions(destination, { config, identity }),
      // One connection for every step (each new one is a key exchange and an authentication). The
      // socket's folder is this process's own; %C keeps the path short enough for a unix socket.
      "-o",
      "ControlMaster=auto",
      "-o",
      `ControlPath=${this.#control}/%C`,
      "-o",
      "ControlPersist=60",
    ];
    this.#destination = destination.host;
    // What the person types to connect as dock does (to accept a host key): the same config and key.
    this.#command = ["ssh", ...(config ? ["-F", config] : []), ...(identity ? ["-i", identity] : [])]
      .map(shellQuote).join(" ");
    this.display = `${destination.user ? `${destination.user}@` : ""}${destination.host}${
      destination.port ? ` -p ${destination.port}` : ""
    }`;
    this.#command += ` ${this.display}`;
  }

  /** Ends the shared connection and removes its folder. */
  async close(): Promise<void> {
    await run("ssh", [...this.#base, "-O", "exit", "--", this.#destination], { timeoutMs: 10_000 }).catch(
      () => {},
    );
    await Deno.remove(this.#control, { recursive: true }).catch(() => {});
  }

  /** Asks for `ciphers`, in that order, on the connections opened from now on (when there are some). */
  prefer(ciphers: string[]): void {
    if (ciphers.length) this.#base.push("-o", `Ciphers=${ciphers.join(",")}`);
  }

  /**
   * The host name, port and user the person's SSH configuration resolves the destination to, and the
   * ciphers it allows, in its order.
   */
  async resolve(): Promise<{ hostname: string; port: number; user: string; ciphers: string[] }> {
    const result = await run("ssh", ["-G", ...this.#base, "--", this.#destination], { timeoutMs: 15_000 });
    if (result.code !== 0) throw new StepError(`ssh -G: ${lastLine(result)}`);
    const values = new Map(
      result.stdout.split("\n").map((
        row,
      ) => [row.slice(0, row.indexOf(" ")), row.slice(row.indexOf(" ") + 1)]),
    );
    return {
      hostname: values.get("hostname")!,
      port: Number(values.get("port")),
      user: values.get("user")!,
      ciphers: (values.get("ciphers") ?? "").split(",").filter(Boolean),
    };
  }

  /** The `connect` step's one round trip. */
  async probe(): Promise<Probe> {
    const result = await this.run(remoteScript(PROBE_SCRIPT, []), { timeoutMs: 60_000 });
    if (result.code === 255) throw new StepError(await this.#explain(result));
    must(result, "connect");
    const probe: Probe = { os: "", arch: "", home: "", tools: [], zstd: false, running: false };
    for (const row of result.stdout.split("\n")) {
      const [key, ...rest] = row.split(" ");
      const value = rest.join(" ");
      if (key === "os") probe.os = value;
      else if (key === "arch") probe.arch = value;
      else if (key === "home") probe.home = value;
      else if (key === "tool") probe.tools.push(value);
      else if (key === "pm") probe.packageManager = value;
      else if (key === "unpack") probe.zstd = value === "zstd";
      else if (key === "running") probe.running = value === "yes";
      else if (key === "versions") probe.versions = value;
      else if (key === "tar") probe.gnuTar = value === "gnu";
      else if (key === "release") {
        try {
          probe.release = JSON.parse(value);
        } catch { /* a damaged install: installed again */ }
      }
    }
    return probe;
  }

  /** Runs the command line `remote` on the box (see {@linkcode remoteScript}). */
  run(
    remote: string,
    options: { stdin?: ReadableStream<Uint8Array>; timeoutMs: number },
  ): Promise<RunResult> {
    return run("ssh", [...this.#base, "--", this.#destination, remote], {
      stdin: options.stdin,
      timeoutMs: options.timeoutMs,
    });
  }

  /** Why ssh could not get in, and what to do about it. */
  async #explain(result: RunResult): Promise<string> {
    const said = result.stderr;
    if (/Host key verification failed|REMOTE HOST IDENTIFICATION HAS CHANGED/.test(said)) {
      const resolved = await this.resolve().catch(() => undefined);
      const fingerprint = resolved ? await hostFingerprint(resolved.hostname, resolved.port) : undefined;
      return hostKeyHint({
        changed: /REMOTE HOST IDENTIFICATION HAS CHANGED/.test(said),
        fingerprint,
        hostname: resolved?.hostname ?? this.#destination,
        port: resolved?.port ?? 22,
        command: this.#command,
      });
    }
    if (/Permission denied/.test(said)) {
      return `the box refused the key (${
        lastLine(result)
      }); name one with --identity FILE or load it with ssh-add`;
    }
    if (/Could not resolve hostname/.test(said)) {
      return `${lastLine(result)}; check the name or your SSH config`;
    }
    return `${lastLine(result)}; is sshd running there, and is the port right?`;
  }
}

/**
 * What to say when ssh refused the box's host key: unknown (check its fingerprint, then accept it by
 * connecting once with `command`, the same config and key dock used) or changed (remove the old entry:
 * known_hosts names a host on another port than 22 as `[HOST]:PORT`, which `ssh-keygen -R` wants as is).
 */
export function hostKeyHint(
  o: { changed: boolean; fingerprint?: string; hostname: string; port: number; command: string },
): string {
  const entry = o.port === 22 ? o.hostname : `[${o.hostname}]:${o.port}`;
  return [
    o.changed
      ? "the box's host key changed since you last connected"
      : "the box's host key is not known here",
    o.fingerprint ? `; it presents ${o.fingerprint}` : "",
    o.changed
      ? `. If you expected the change, remove the old key (ssh-keygen -R ${
        shellQuote(entry)
      }) and connect once: ${o.command}`
      : `. Check the fingerprint with the box's owner, then accept it by connecting once: ${o.command}`,
  ].join("");
}

/**
 * `ciphers` (what the person's SSH configuration allows, in its order) with AES-GCM first, or none when
 * that changes nothing. OpenSSH puts ChaCha20-Poly1305 first, which is constant-time without hardware
 * help; every x86-64 and ARMv8 CPU of the last decade runs AES-GCM in hardware, at twice its speed here
 * (36 MB through ssh on loopback: 74–84 ms, not 114–130), and the package is most of what goes through.
 * Only the order changes: a cipher the configuration leaves out stays out.
 */
export function aesGcmFirst(ciphers: string[]): string[] {
  const gcm = ciphers.filter((cipher) => /^aes(128|256)-gcm@openssh\.com$/.test(cipher));
  const ordered = [...gcm, ...ciphers.filter((cipher) => !gcm.includes(cipher))];
  return gcm.length && ordered.some((cipher, i) => cipher !== ciphers[i]) ? ordered : [];
}

/** The host key fingerprints `host:port` presents (`ssh-keyscan` + `ssh-keygen -l`), or undefined. */
async function hostFingerprint(host: string, port: number): Promise<string | undefined> {
  const scan = await run("ssh-keyscan", ["-p", String(port), "--", host], { timeoutMs: 15_000 });
  if (scan.code !== 0 || !scan.stdout.trim()) return undefined;
  const listed = await run("ssh-keygen", ["-l", "-f", "-"], { stdin: scan.stdout, timeoutMs: 15_000 });
  const prints = listed.stdout.trim().split("\n").filter(Boolean).map((row) => {
    const [, fingerprint, , type] = row.split(" ");
    return `${fingerprint} ${type ?? ""}`.trim();
  });
  return prints.length ? prints.join(", ") : undefined;
}

/** The last line ssh or the script said (the reason it gives), or its exit status. */
export function lastLine(result: RunResult): string {
  return (result.stderr.trim() || result.stdout.trim()).split("\n").at(-1) ?? `exit ${result.code}`;
}

/** `result` when it succeeded; a {@linkcode StepError} naming `step` otherwise. */
export function must(result: RunResult, step: string): RunResult {
  if (result.code !== 0) throw new StepError(`${lastLine(result)} (exit ${result.code} in ${step})`);
  return result;
}

// The scripts run on the box by `sh -c`; values reach them only as positional arguments.

/** `script` run by `sh -c` with `args`, as a command line for the remote shell (every word quoted). */
export function remoteScript(script: string, args: string[]): string {
  return ["sh", "-c", script, "dock", ...args].map(shellQuote).join(" ");
}

/** The `connect` step's script: what the box is and has, a line each. */
const PROBE_SCRIPT = `
echo "os $(uname -s)"
echo "arch $(uname -m)"
echo "home $HOME"
# Where releases go, as a real path (Deno's caches name modules by theirs): what exists of it, resolved.
if [ -d "$HOME/.dock/versions" ]; then echo "versions $(cd "$HOME/.dock/versions" && pwd -P)"
elif [ -d "$HOME/.dock" ]; then echo "versions $(cd "$HOME/.dock" && pwd -P)/versions"
else echo "versions $(cd "$HOME" && pwd -P)/.dock/versions"; fi
for tool in git tmux; do command -v "$tool" >/dev/null 2>&1 && echo "tool $tool"; done
command -v zstd >/dev/null 2>&1 && echo "unpack zstd"
tar --version 2>/dev/null | head -n 1 | grep -q "GNU tar" && echo "tar gnu"
for pm in apt-get dnf yum apk pacman brew; do command -v "$pm" >/dev/null 2>&1 && { echo "pm $pm"; break; }; done
[ -r "$HOME/.dock/current/release.json" ] && echo "release $(head -c 4096 "$HOME/.dock/current/release.json")"
if [ -x "$HOME/.dock/bin/dockd" ] && "$HOME/.dock/bin/dockd" info --json >/dev/null 2>&1; then echo "running yes"; fi
exit 0
`;
