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
import type { AddSshProgress, AddSshRequest, BoxStatus } from "../client/wire.ts";
import { exists } from "../core/files.ts";
import { parseListenAddress } from "../core/listen.ts";
import { Turns } from "./turns.ts";
import type { ClientPaths } from "../core/paths.ts";
import type { RunResult } from "../core/runner.ts";
import { packageName, type PackageRelease, type Target, targetName } from "../package/release.ts";
import { sourceFingerprint } from "../package/sources.ts";
import { megabytes, packageFor, targetOfMachine, upload, zstdEnd } from "./packages.ts";
import { link as makeLink, parseLink } from "../core/pairing_link.ts";
import type { Boxes, SshAccess } from "./boxes.ts";
import { boxWithFingerprint, pairBox } from "./pairing.ts";
import type { OpenTunnel, SshTransports } from "./ssh_transport.ts";
import {
  aesGcmFirst,
  must,
  parseDestination,
  type Probe,
  remoteScript,
  Ssh,
  type SshDestination,
  StepError,
} from "./add_ssh_remote.ts";
import {
  INSTALL_FAILED,
  INSTALL_SCRIPT,
  LINK_FOLLOWS,
  PAIR_REFUSED,
  SERVICE_FOLLOWS,
  SERVICE_SCRIPT,
} from "./add_ssh_scripts.ts";

/** What adding a box over SSH uses of the agent. */
export interface AddSshBackend {
  paths: Pick<ClientPaths, "client">;
  boxes: Boxes;
  transports: SshTransports;
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
