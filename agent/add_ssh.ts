/**
 * `dock add ssh [user@]host[:port]` (`POST /v1/boxes/add-ssh`): one command to make a machine a box.
 * Through the user's own `ssh` (their config, agent and known_hosts; never a password prompt: the
 * agent has no terminal), step by step, each step named in its progress and in its failure:
 *
 * 1. `connect`: the machine's OS and architecture, git and tmux, the dock release installed there and
 *    whether its daemon answers (one SSH round trip). An unknown host key stops here with its
 *    fingerprint and how to accept it.
 * 2. `package`: the package for that target (`package/build.ts`), kept under the agent's state.
 * 3. `upload` and `install`: only when the box does not run that very release already (compressed
 *    with zstd where both ends have it, without the runtime where the box has that one); unpacked
 *    beside the others under `~/.dock/versions/`, `~/.dock/current` switched to it, and `~/.dock/bin/`
 *    linking `dock` and `dockd` through it (what hook commands and service units name). The next two
 *    steps run in the same round trip.
 * 4. `service`: `dockd` as a systemd user service with linger, a launchd agent on macOS, or under
 *    `nohup` with a warning; restarted when it ran an older release; waited for until it answers.
 * 5. `pair`: `dockd pair` run over SSH (in the same round trip as `service`, started beside the daemon
 *    and waiting for it), its link redeemed here: the link is never copied by hand. A box this laptop
 *    has paired already and reaches is left as it is.
 *
 * Running it again upgrades in place and re-pairs nothing that works.
 *
 * @module
 */
import { DockError } from "../client/errors.ts";
import type { AddSshProgress, AddSshRequest, BoxStatus } from "../client/agent.ts";
import { exists } from "../core/files.ts";
import { parseListenAddress } from "../core/listen.ts";
import { Turns } from "./turns.ts";
import type { ClientPaths } from "../core/paths.ts";
import { run, type RunResult, shellQuote } from "../core/runner.ts";
import { packageName, type PackageRelease, type Target, targetName } from "../package/release.ts";
import { sourceFingerprint } from "../package/sources.ts";
import { megabytes, packageFor, targetOfMachine, upload, zstdEnd } from "./packages.ts";
import { link as makeLink, parseLink } from "../core/pairing_link.ts";
import type { Boxes, SshAccess } from "./boxes.ts";
import { boxWithFingerprint, pairBox } from "./pairing.ts";
import type { OpenTunnel, SshTransports } from "./ssh_transport.ts";

/** What adding a box over SSH uses of the agent. */
export interface AddSshBackend {
  paths: Pick<ClientPaths, "client">;
  boxes: Boxes;
  transports: SshTransports;
}

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

/** Refuses a request that names no machine or a missing key file (400, before anything streams). */
export async function checkAddSsh(request: AddSshRequest): Promise<SshDestination> {
  const destination = parseDestination(request.host);
  // Checked here: the value reaches the box's shell (as an argument) and its daemon's environment.
  if (request.listen !== undefined) {
    // An address, or off: nothing else (no control character) reaches the box's shell or environment.
    const options = { what: "listen", fallback: "0.0.0.0:1379", field: "listen" };
    if (!/^[A-Za-z0-9.:[\]-]+$/.test(request.listen)) {
      throw new DockError(
        "invalid_request",
        `listen must be HOST:PORT or off, got ${JSON.stringify(request.listen)}`,
        {
          status: 400,
          detail: { field: "listen" },
        },
      );
    }
    parseListenAddress(request.listen, options);
  }
  if (request.identity !== undefined && !(await exists(request.identity))) {
    throw new DockError("invalid_request", `identity: no such file: ${request.identity}`, {
      status: 400,
      detail: { field: "identity" },
    });
  }
  return destination;
}

/**
 * Adds the machine `request.host` names as a box (checked first by {@linkcode checkAddSsh}), yielding
 * progress; the last line has `done`, with `box` or with `error` naming the step that failed.
 */
export async function* addSsh(agent: AddSshBackend, request: AddSshRequest): AsyncGenerator<AddSshProgress> {
  const destination = parseDestination(request.host);
  let step = "connect";
  // One at a time per machine: two installs at once would unpack into, and switch, the same folders.
  const machine = `${destination.user ?? ""}@${destination.host}:${destination.port ?? ""}`;
  if (adding.busy(machine)) yield line(step, `another dock add ssh ${request.host} runs; waiting for it`);
  const endTurn = await adding.take(machine);
  let closeSsh = () => Promise.resolve();
  let tunnel: OpenTunnel | undefined;
  try {
    const ssh = new Ssh(destination, request.identity);
    closeSsh = () => ssh.close();
    yield line(step, `ssh ${ssh.display}`);
    // Which sources this dock would package (local), while the box is asked (a round trip).
    const sources = sourceFingerprint();
    sources.catch(() => {}); // awaited by packageFor
    // What the person's configuration makes of the name, and which ciphers it allows: the connection the
    // probe opens, which every later step shares, prefers the fastest of them for the upload.
    const resolved = await ssh.resolve();
    ssh.prefer(aesGcmFirst(resolved.ciphers));
    const probe = await ssh.probe();
    const target = targetOf(probe);
    yield line(step, `${probe.os} ${probe.arch} (${targetName(target)}), home ${probe.home}`);
    const missing = ["git", "tmux"].filter((tool) => !probe.tools.includes(tool));
    if (missing.length) {
      throw new StepError(
        `the box lacks ${missing.join(" and ")}; install ${missing.length > 1 ? "them" : "it"} there: ${
          installCommand(probe.packageManager, missing)
        }`,
      );
    }

    step = "package";
    const built = await packageFor(agent.paths, target, sources);
    yield line(step, `${packageName(built.release)} (${megabytes(built.bytes)}, ${built.release.commit})`);

    const current = probe.release?.id === built.release.id;
    // The service script starts the daemon and asks it for a pairing link: `dockd pair` starts beside
    // it and waits for it to answer (the two programs' starts overlap).
    // A listen address asked for restarts a running daemon: it reads DOCK_LISTEN as it starts.
    const restart = probe.running && (!current || request.listen !== undefined);
    const service = remoteScript(SERVICE_SCRIPT, [
      restart ? "restart" : probe.running ? "ensure" : "start",
      resolved.hostname,
      request.listen ?? "",
    ]);
    let started: RunResult;
    if (current) {
      yield line("upload", `the box has ${built.release.id} already`);
      step = "service";
      started = await ssh.run(service, { timeoutMs: 120_000 });
    } else {
      step = "upload";
      // A box on a release of the same Deno keeps its runtime: the package goes without it (~3 MB).
      const reuse =
        built.withoutRuntime && built.release.runtime && probe.release?.runtime === built.release.runtime
          ? built.withoutRuntime
          : undefined;
      if (reuse) yield line(step, `without its Deno runtime: the box has Deno ${built.release.deno}`);
      // Where both ends have zstd: fewer bytes, and the box unpacks them in a fifth of the time.
      const zstd = !reuse && probe.zstd ? built.zstd : undefined;
      if (zstd) yield line(step, `compressed with zstd: ${megabytes(zstd.bytes)}`);
      // One round trip for the rest: the package unpacked as ssh delivers it, then the service script.
      const install = remoteScript(INSTALL_SCRIPT, [
        folderOf(built.release),
        reuse ? "reuse" : "whole",
        zstd ? "zst" : "gz",
        probe.gnuTar ? "gnu" : "other",
      ]);
      // After a zstd archive, its end: with the box's Deno caches for where the release will be, made
      // here while the archive goes (the box would otherwise make them: a Deno start, ~35 ms).
      const releaseRoot = `${probe.versions ?? `${probe.home}/.dock/versions`}/${folderOf(built.release)}`;
      const after = zstd ? zstdEnd(built, releaseRoot) : undefined;
      const result = yield* upload(
        reuse ?? zstd ?? built,
        (stdin) =>
          ssh.run(`${install} || exit ${INSTALL_FAILED}; echo ${SERVICE_FOLLOWS}; ${service}`, {
            stdin,
            timeoutMs: 30 * 60_000,
          }),
        after,
      );
      step = "install";
      if (result.code === INSTALL_FAILED) must(result, step);
      const [installed, serviceSaid] = splitAt(result.stdout, SERVICE_FOLLOWS);
      yield line(step, `~/.dock/versions/${folderOf(built.release)}, ~/.dock/bin/dockd`);
      yield* sayLines(step, installed.trim().split("\n"));
      step = "service";
      started = { ...result, stdout: serviceSaid ?? "" };
    }
    if (started.code === PAIR_REFUSED) step = "pair";
    must(started, step);
    const [printed, pairing] = splitAt(started.stdout, LINK_FOLLOWS);
    yield* sayLines("service", printed.trim().split("\n"));
    step = "pair";
    const { link } = JSON.parse(pairing ?? "") as { link: string };
    const known = await boxWithFingerprint(agent.boxes, parseLink(link).fp);
    // Checked now, not as last seen: a box brought back by this very command (its daemon was down, after
    // a reboot) answers again where it was, with the credential it has.
    if (known) await agent.boxes.check(known);
    if (known && agent.boxes.online(known)) {
      // The code just made is left to expire (ten minutes, single use): nothing is paired again.
      agent.boxes.setSsh(known, request.host, sshAccess(resolved, request.identity));
      yield line(step, `paired already as '${known}'`);
      yield { step, done: true, box: agent.boxes.status().find((box) => box.name === known)! };
      return;
    }
    // Paired once but unreachable there (it moved, or its address changed): paired again in place, the
    // same box (pairing.ts), so its events are not copied again.
    // How the agent will reach it: its port, or (asked for, or that port not answering from here) the
    // SSH transport, forwarding to the port on the box's loopback; pairing goes the same way.
    const linked = parseLink(link);
    let via = request.via;
    if (!via) {
      via = await answers(linked.host, linked.port) ? "tls" : "ssh";
      if (via === "ssh") {
        yield line(
          step,
          `${linked.host}:${linked.port} does not answer from here: the box is reached over SSH`,
        );
      }
    }
    let dialed = link;
    if (via === "ssh") {
      tunnel = await agent.transports.open({
        destination: request.host,
        identity: request.identity,
        boxPort: linked.port,
      });
      dialed = makeLink("127.0.0.1", tunnel.route.localPort, linked.code, linked.fp);
      yield line(
        step,
        `over SSH: 127.0.0.1:${tunnel.route.localPort} forwards to the box's port ${linked.port}`,
      );
    } else if (known) {
      await agent.transports.remove(known);
    }
    const status: BoxStatus = await pairBox(agent.boxes, { link: dialed, name: request.name }, {
      origin: "cli",
    });
    tunnel?.adopt(status.name);
    tunnel = undefined;
    yield line(step, `${known ? "paired again" : "paired"} as '${status.name}' (${status.address})`);
    agent.boxes.setSsh(status.name, request.host, sshAccess(resolved, request.identity));
    yield { step, done: true, box: agent.boxes.status().find((box) => box.name === status.name) ?? status };
  } catch (error) {
    const message = error instanceof StepError || error instanceof DockError
      ? error.message
      : `${(error as Error).message}`;
    yield { step, error: `${step}: ${message}`, done: true };
  } finally {
    // A transport opened for a pairing that failed.
    await tunnel?.close();
    await closeSsh();
    endTurn();
  }
}

/**
 * Removes the box's crontab `@reboot` entry (`dockd install --cron --remove` over SSH), when `dock forget`
 * forgets a box `dock add ssh` added: best effort (a box that cannot be reached keeps it); says whether
 * it was removed.
 */
export async function removeAutostart(destination: string, identity?: string): Promise<boolean> {
  let ssh: Ssh;
  try {
    ssh = new Ssh(parseDestination(destination), identity);
  } catch {
    return false;
  }
  try {
    const script = `[ -x "$HOME/.dock/bin/dockd" ] || exit 0
command -v crontab >/dev/null 2>&1 || exit 0
"$HOME/.dock/bin/dockd" install --cron --remove >/dev/null`;
    const result = await ssh.run(remoteScript(script, []), { timeoutMs: 30_000 });
    return result.code === 0;
  } finally {
    await ssh.close();
  }
}

/** Whether a TCP connection to `host:port` is accepted within 3 s (the box's port reached from here). */
async function answers(host: string, port: number): Promise<boolean> {
  const timeout = AbortSignal.timeout(3000);
  try {
    const connection = await Promise.race([
      Deno.connect({ hostname: host, port }),
      new Promise<never>((_, reject) => timeout.addEventListener("abort", () => reject(timeout.reason))),
    ]);
    connection.close();
    return true;
  } catch {
    return false;
  }
}

/** What `dock ssh-config` writes for the box: where ssh resolved it, and the key `--identity` named. */
function sshAccess(
  resolved: { hostname: string; port: number; user: string },
  identity: string | undefined,
): SshAccess {
  return {
    hostname: resolved.hostname,
    port: resolved.port,
    user: resolved.user,
    ...(identity ? { identity } : {}),
  };
}

/** The machines being added now (see {@linkcode addSsh}). */
const adding = new Turns();

/** A step's failure, said as the person should read it. */
class StepError extends Error {}

function line(step: string, text: string): AddSshProgress {
  return { step, line: text };
}

/** What a step's script printed, a line each (the scripts print only what the person should read). */
function* sayLines(step: string, lines: string[]): Generator<AddSshProgress> {
  for (const text of lines.filter(Boolean)) yield line(step, text);
}

/** `text` before and after the line `marker` (the second absent when it has no such line). */
function splitAt(text: string, marker: string): [string, string | undefined] {
  const at = `\n${text}`.indexOf(`\n${marker}\n`);
  return at < 0 ? [text, undefined] : [text.slice(0, at), text.slice(at + marker.length + 1)];
}

/** Where a release is unpacked on a box, under `~/.dock/versions/`. */
function folderOf(release: PackageRelease): string {
  return `${release.version}-${release.id}`;
}

/** The exact command that installs `tools` with the box's package manager. */
export function installCommand(manager: string | undefined, tools: string[]): string {
  const list = tools.join(" ");
  switch (manager) {
    case "apt-get":
      return `sudo apt-get install -y ${list}`;
    case "dnf":
    case "yum":
      return `sudo ${manager} install -y ${list}`;
    case "apk":
      return `sudo apk add ${list}`;
    case "pacman":
      return `sudo pacman -S --noconfirm ${list}`;
    case "brew":
      return `brew install ${list}`;
    default:
      return `your package manager's install of ${list}`;
  }
}

/** What the `connect` step learns of the box. */
interface Probe {
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

/** The target of a box's `uname -s` and `uname -m`. */
function targetOf(probe: Probe): Target {
  const target = targetOfMachine(probe.os, probe.arch);
  if (!target) {
    throw new StepError(
      `dock has no package for ${probe.os} ${probe.arch} (only linux and macOS, x64 and arm64)`,
    );
  }
  return target;
}

/** `ssh` to one destination, with the person's own configuration. */
class Ssh {
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
      // The agent has no terminal: never a password or host-key prompt; a dead network fails in 15 s.
      "-o",
      "BatchMode=yes",
      "-o",
      "ConnectTimeout=15",
      "-o",
      "ServerAliveInterval=15",
      ...(config ? ["-F", config] : []),
      ...(identity ? ["-i", identity, "-o", "IdentitiesOnly=yes"] : []),
      ...(destination.port ? ["-p", String(destination.port)] : []),
      ...(destination.user ? ["-l", destination.user] : []),
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

function lastLine(result: RunResult): string {
  return (result.stderr.trim() || result.stdout.trim()).split("\n").at(-1) ?? `exit ${result.code}`;
}

function must(result: RunResult, step: string): RunResult {
  if (result.code !== 0) throw new StepError(`${lastLine(result)} (exit ${result.code} in ${step})`);
  return result;
}

// The scripts run on the box by `sh -c`; values reach them only as positional arguments.

/** `script` run by `sh -c` with `args`, as a command line for the remote shell (every word quoted). */
function remoteScript(script: string, args: string[]): string {
  return ["sh", "-c", script, "dock", ...args].map(shellQuote).join(" ");
}

/** The exit status of the upload's command line when the install script failed (not the service script). */
const INSTALL_FAILED = 90;

/** The line between the install script's lines and the service script's, in the upload's output. */
const SERVICE_FOLLOWS = "--dock-service--";

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

/**
 * Unpacks the package on stdin as ~/.dock/versions/$1 and points ~/.dock/current and ~/.dock/bin at it.
 * $2 is "reuse" for a package without its runtime: the current release's is linked in (copied where
 * links cannot be made). $3 is "zst" for a package compressed with zstd, else "gz"; $4 is "gnu" for GNU
 * tar. (A zstd that fails leaves tar a cut or empty archive, which tar refuses: the step fails.)
 */
const INSTALL_SCRIPT = `
set -e
dock="$HOME/.dock"
dest="$dock/versions/$1"
incoming="$dest.incoming.$$"
mkdir -p "$dock/versions" "$dock/bin"
# The person at the box types dockd too (pairing a phone, secrets): whether their login shell has
# ~/.dock/bin on its PATH is asked while the package unpacks (a login shell may take 100 ms and more;
# stdin closed: a profile that asks for something gets nothing).
login_path="$dock/.login-path.$$"
"\${SHELL:-/bin/sh}" -lc 'printf "%s" "$PATH"' </dev/null >"$login_path" 2>/dev/null &
asking=$!
rm -rf "$incoming"
mkdir "$incoming"
# GNU tar ($4) reads the stream in 128 KiB records, not 10 KiB ones: ~30 ms less of ~270 here.
records=
[ "$4" = gnu ] && records="-b 256 -B"
if [ "$3" = zst ]; then
  zstd -dcq | tar -xf - $records -C "$incoming" --strip-components=1
else
  tar -xzf - $records -C "$incoming" --strip-components=1
fi
if [ "$2" = reuse ] && [ ! -e "$incoming/bin/deno" ]; then
  runtime=$(cd "$dock/current/bin" && pwd -P)/deno
  ln "$runtime" "$incoming/bin/deno" 2>/dev/null || cp -p "$runtime" "$incoming/bin/deno"
fi
rm -rf "$dest"
mv "$incoming" "$dest"
# Deno's caches as the build made them, for where the release now is (package/cache.ts), unless the
# laptop sent them made: its daemon's first start is then not a cold one. The placing itself caches
# nothing (a throwaway DENO_DIR).
real=$(cd "$dest" && pwd -P)
if [ ! -d "$real/cache" ] && [ -f "$real/src/package/place_cache.js" ]; then
  DENO_DIR="$dock/.place.$$" "$real/bin/deno" run --no-config --cached-only --no-code-cache \\
    --allow-read="$real" --allow-write="$real" "$real/src/package/place_cache.js" "$real" || true
  rm -rf "$dock/.place.$$"
fi
ln -sfn "versions/$1" "$dock/current"
ln -sfn ../current/bin/dockd "$dock/bin/dockd"
ln -sfn ../current/bin/dock "$dock/bin/dock"
wait "$asking" || true
case ":$(cat "$login_path" 2>/dev/null):" in
*":$dock/bin:"*) ;;
*) echo "on the box, add ~/.dock/bin to your PATH to type dockd there: echo 'export PATH=\\"\\$HOME/.dock/bin:\\$PATH\\"' >> ~/.profile" ;;
esac
rm -f "$login_path"
`;

/** The service script's line between what it did and `dockd pair`'s JSON. */
const LINK_FOLLOWS = "--dockd-pair--";

/** The service script's exit status when the daemon answers but `dockd pair` failed: the `pair` step's failure. */
const PAIR_REFUSED = 4;

/**
 * Makes dockd run from ~/.dock/bin: a systemd user service with linger, a launchd agent, or nohup;
 * then prints the link of `dockd pair` for the laptop to dial $2, once the daemon answers. $1 is
 * "restart" when an older release runs (or $3, a listen address, is given), "ensure" when this one
 * runs, else "start". Prints what it did,
 * one line each, then {@linkcode LINK_FOLLOWS} and the link's JSON. Exits 1 when the daemon could not
 * be started or did not answer, {@linkcode PAIR_REFUSED} when it answered but made no link.
 */
const SERVICE_SCRIPT = `
# $3: the listen address asked for (--listen), kept in ~/.dock/listen for the starts after it (an
# upgrade installs the service again), and given to the daemon (and so to its service) as DOCK_LISTEN.
[ -n "$3" ] && printf '%s\\n' "$3" >"$HOME/.dock/listen"
[ -r "$HOME/.dock/listen" ] && DOCK_LISTEN=$(cat "$HOME/.dock/listen") && export DOCK_LISTEN
dockd="$HOME/.dock/bin/dockd"
log="$HOME/.dock/dockd.log"
answers() { "$dockd" info --json >/dev/null 2>&1; }
touch "$log"
from=$(($(wc -c <"$log") + 1))
manager=
started=yes
if [ "$1" = ensure ] && answers; then
  echo "dockd runs already"
  started=
elif command -v systemctl >/dev/null 2>&1 && systemctl --user show-environment >/dev/null 2>&1; then
  "$dockd" install >/dev/null || exit 1
  [ "$1" = restart ] && systemctl --user restart dockd
  if loginctl enable-linger "$(id -un)" 2>/dev/null; then echo "systemd user service dockd, lingering";
  else echo "systemd user service dockd; warning: linger could not be enabled (sudo loginctl enable-linger $(id -un)), so it stops when you log out"; fi
elif [ "$(uname -s)" = Darwin ]; then
  [ "$1" = restart ] && launchctl unload "$HOME/Library/LaunchAgents/dev.dock.dockd.plist" 2>/dev/null
  "$dockd" install >/dev/null || exit 1
  echo "launchd agent dev.dock.dockd"
else
  if [ "$1" = restart ]; then
    # This home's daemon only, by the real path its launcher runs it from: another home's (another
    # dock of the same user, another test's box) is not ours to stop.
    versions=$(cd "$HOME/.dock/versions" && pwd -P | sed 's#[][\\\\.*^$()+?{}|]#\\\\&#g')
    pattern="$versions/[^ /]*/src/cli/dockd[.][jt]s serve"
    pkill -TERM -u "$(id -u)" -f "$pattern"
    i=0
    while pgrep -u "$(id -u)" -f "$pattern" >/dev/null 2>&1 && [ "$i" -lt 100 ]; do i=$((i + 1)); sleep 0.1; done
  fi
  if command -v setsid >/dev/null 2>&1; then
    setsid nohup "$dockd" serve >>"$log" 2>&1 </dev/null &
  else
    nohup "$dockd" serve >>"$log" 2>&1 </dev/null &
  fi
  # No service manager: a user crontab @reboot entry starts it again after a reboot, where there is cron.
  if command -v crontab >/dev/null 2>&1 && "$dockd" install --cron >/dev/null; then
    echo "no systemd user session here: dockd runs under nohup, and a crontab @reboot entry starts it after a reboot"
  else
    echo "warning: no systemd user session and no crontab here: dockd runs under nohup and will not start again after a reboot"
  fi
  manager=nohup
fi
if link=$("$dockd" pair --json --host "$2" --wait 20); then
  [ -n "$started" ] && echo "dockd answers"
  # It started: the releases before the one it replaced go (what a rollback needs is kept).
  versions="$HOME/.dock/versions"
  current=$(basename "$(readlink "$HOME/.dock/current")")
  previous=$(ls -t "$versions" | grep -v incoming | grep -vxF "$current" | head -n 1)
  for old in $(ls "$versions"); do
    case "$old" in "$current" | "$previous" | *incoming*) ;; *) rm -rf "$versions/$old" ;; esac
  done
  echo "${LINK_FOLLOWS}"
  echo "$link"
  exit 0
fi
if answers; then exit ${PAIR_REFUSED}; fi
echo "dockd did not answer" >&2
# Under nohup its log is ours to show; a service manager keeps its own (journalctl, Console).
[ "$manager" = nohup ] && tail -c "+$from" "$log" | tail -n 20 >&2
exit 1
`;
