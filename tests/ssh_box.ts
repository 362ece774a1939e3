/**
 * A machine reached over SSH, for `dock add ssh` tests: Debian's OpenSSH server (what `.ci/run`
 * installs) started on a loopback port with its own host key, configuration and authorized key, its
 * sessions given a home of their own (`SetEnv HOME=…`: the "box"), and an SSH client configuration
 * for the laptop naming it as Host `testbox` (passed to dock through `DOCK_SSH_CONFIG`, since `ssh`
 * reads `~/.ssh` from the user database, not from `$HOME`).
 *
 * @module
 */
import { join } from "node:path";
import { freePort, killProcessesUnder } from "./harness.ts";
import { until } from "./wait.ts";

/** A running SSH server and what a client needs to reach it. */
export interface SshBox {
  /** The test folder holding everything below. */
  root: string;
  /** The box's home (its `~/.dock` is where dock installs). */
  home: string;
  port: number;
  /** The port the box's daemon listens on for laptops (`DOCK_LISTEN`). */
  tlsPort: number;
  /** The file the box's `crontab` keeps the user crontab in (with the `crontab` option). */
  crontab: string;
  /** The client configuration (`ssh -F`): Host `testbox`. */
  clientConfig: string;
  /** The known_hosts file the client configuration names (empty until {@linkcode SshBox.trust}). */
  knownHosts: string;
  /** Adds the server's host key to the client's known_hosts (as `ssh` would on "yes"). */
  trust(): Promise<void>;
  /**
   * Makes `commands` missing on the box from now on (their links leave the folder that is its sessions'
   * PATH, see {@linkcode startSshBox}).
   */
  hide(commands: string[]): Promise<void>;
  [Symbol.asyncDispose](): Promise<void>;
}

const SSHD = "/usr/sbin/sshd";

/** Options of {@linkcode startSshBox}. */
export interface SshBoxOptions {
  /**
   * The address the laptop reaches the box at (sshd listens there too, and the client configuration's
   * HostName names it). Another loopback address than `127.0.0.1`, where the box's daemon listens, makes
   * the daemon's port closed to the laptop: only SSH reaches it, as behind NAT. @default {"127.0.0.1"}
   */
  address?: string;
  /**
   * Gives the box a `crontab` (this machine may have no cron): a user crontab kept in {@linkcode
   * SshBox.crontab}'s file rather than the machine's, which other tests and people share.
   */
  crontab?: boolean;
}

/** Starts the server; resolves once it accepts connections. */
export async function startSshBox(options: SshBoxOptions = {}): Promise<SshBox> {
  const address = options.address ?? "127.0.0.1";
  const root = await Deno.makeTempDir({ prefix: "dock-ssh-" });
  const home = join(root, "home");
  await Deno.mkdir(home);
  const port = freePort();
  const tlsPort = freePort();
  const user = new TextDecoder().decode((await new Deno.Command("id", { args: ["-un"] }).output()).stdout)
    .trim();
  const keygen = async (file: string) => {
    const made = await new Deno.Command("ssh-keygen", { args: ["-q", "-t", "ed25519", "-N", "", "-f", file] })
      .output();
    if (!made.success) throw new Error(`ssh-keygen: ${new TextDecoder().decode(made.stderr)}`);
  };
  await keygen(join(root, "host_key"));
  await keygen(join(root, "client_key"));
  await Deno.copyFile(join(root, "client_key.pub"), join(root, "authorized_keys"));
  // The box's PATH: a folder linking every command of sshd's default PATH, so that a test can take one
  // away from the box alone (hide).
  const path = join(root, "path");
  await Deno.mkdir(path);
  for (const folder of ["/usr/local/sbin", "/usr/local/bin", "/usr/sbin", "/usr/bin", "/sbin", "/bin"]) {
    for (const entry of await Array.fromAsync(Deno.readDir(folder)).catch(() => [])) {
      await Deno.symlink(join(folder, entry.name), join(path, entry.name)).catch(
        () => {/* an earlier one */},
      );
    }
  }
  const crontab = join(root, "crontab");
  if (options.crontab) {
    await Deno.remove(join(path, "crontab")).catch(() => {});
    await Deno.writeTextFile(
      join(path, "crontab"),
      [
        "#!/bin/sh",
        `file=${crontab}`,
        'case "$1" in',
        '-l) [ -f "$file" ] || { echo "no crontab for $(id -un)" >&2; exit 1; }; cat "$file" ;;',
        '-) cat >"$file" ;;',
        '*) echo "crontab: only -l and - here" >&2; exit 2 ;;',
        "esac",
      ].join("\n") + "\n",
      { mode: 0o755 },
    );
  }
  // sshd refuses to start as root without its privilege separation folder (the package makes it at boot).
  if (Deno.uid() === 0) await Deno.mkdir("/run/sshd", { recursive: true, mode: 0o755 });
  await Deno.writeTextFile(
    join(root, "sshd_config"),
    [
      `Port ${port}`,
      "ListenAddress 127.0.0.1",
      ...(address === "127.0.0.1" ? [] : [`ListenAddress ${address}`]),
      `HostKey ${join(root, "host_key")}`,
      `PidFile ${join(root, "sshd.pid")}`,
      `AuthorizedKeysFile ${join(root, "authorized_keys")}`,
      "PermitRootLogin prohibit-password",
      "PasswordAuthentication no",
      "KbdInteractiveAuthentication no",
      "UsePAM no",
      "StrictModes no",
      "Subsystem sftp internal-sftp",
      `SetEnv HOME=${home} PATH=${path} DOCK_LISTEN=127.0.0.1:${tlsPort} DOCK_TLS_HOSTS=${address} NO_COLOR=1`,
    ].join("\n") + "\n",
  );
  const knownHosts = join(root, "known_hosts");
  await Deno.writeTextFile(knownHosts, "");
  const clientConfig = join(root, "ssh_config");
  await Deno.writeTextFile(
    clientConfig,
    [
      "Host testbox",
      `  HostName ${address}`,
      `  Port ${port}`,
      `  User ${user}`,
      `  IdentityFile ${join(root, "client_key")}`,
      "  IdentitiesOnly yes",
      `  UserKnownHostsFile ${knownHosts}`,
    ].join("\n") + "\n",
  );
  const server = new Deno.Command(SSHD, {
    args: ["-D", "-e", "-f", join(root, "sshd_config")],
    stdout: "null",
    stderr: "piped",
  }).spawn();
  const logs: string[] = [];
  const drained = (async () => {
    for await (const chunk of server.stderr.pipeThrough(new TextDecoderStream())) logs.push(chunk);
  })();
  // No event tells of sshd listening: the backoff of the one wait, on a connect.
  await until(() => Deno.connect({ hostname: "127.0.0.1", port }).then((c) => (c.close(), true)), {
    what: "sshd listening",
  }).catch(async (error) => {
    server.kill("SIGKILL");
    await drained;
    throw new Error(`sshd did not start (${error.message}):\n${logs.join("")}`);
  });
  return {
    root,
    home,
    port,
    tlsPort,
    crontab,
    clientConfig,
    knownHosts,
    async trust() {
      const scan = await new Deno.Command("ssh-keyscan", { args: ["-p", String(port), address] })
        .output();
      await Deno.writeTextFile(knownHosts, new TextDecoder().decode(scan.stdout));
    },
    async hide(commands) {
      for (const command of commands) {
        await Deno.remove(join(path, command)).catch((error) => {
          if (!(error instanceof Deno.errors.NotFound)) throw error; // this machine lacks it already
        });
      }
    },
    async [Symbol.asyncDispose]() {
      try {
        server.kill("SIGTERM");
      } catch { /* gone */ }
      await server.status;
      await drained;
      // What dock started on the box (its daemon under nohup, tmux) lives under the box's home.
      killProcessesUnder(root);
      await Deno.remove(root, { recursive: true }).catch(() => {});
    },
  };
}
