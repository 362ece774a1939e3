/**
 * The SSH transport: how the agent reaches a box that accepts nothing but SSH (behind NAT, or a
 * firewall that lets only port 22 in). One `ssh` per box, the person's own (their config, agent and
 * known_hosts; `DOCK_SSH_CONFIG` as `ssh -F`), run through core/runner.ts as
 * `ssh -tt -L 127.0.0.1:<local>:127.0.0.1:<box port> HOST 'exec tail -f /dev/null'` (see
 * {@linkcode tunnelArgs} for why a session rather than `-N`): the box's TLS listener reached on the box's own
 * loopback, so the box may listen on `127.0.0.1` only, and pairing and TLS pinning work on top unchanged
 * (a box's certificate always covers `127.0.0.1`). The agent dials `https://127.0.0.1:<local>`, which is
 * the box's address in its registry.
 *
 * The connection is a ControlMaster (`<client>/ssh/<box>.sock`), so other commands to the box can share
 * it; it has keepalives (`ServerAliveInterval=15`, `ServerAliveCountMax=3`: a dead path is noticed in
 * 45 s) and is supervised here: when `ssh` exits it is started again with backoff (1 s doubling to 30 s,
 * jittered), and each time it is up again the box is checked at once, so the event merge follows it
 * again without waiting for the health loop's backoff.
 *
 * @module
 */
import { DockError } from "../client/errors.ts";
import { type Clock, sleep } from "../core/clock.ts";
import { exists } from "../core/files.ts";
import type { ClientPaths } from "../core/paths.ts";
import { join } from "../core/posix_path.ts";
import { killGroup, run, startChild, TailBuffer } from "../core/runner.ts";
import type { Store } from "../core/store.ts";
import { parseDestination, sshOptions } from "./add_ssh_remote.ts";
import type { Boxes } from "./boxes.ts";
import { afterFailedCheck } from "./check_schedule.ts";

/** How a box is reached over SSH. */
export interface SshRoute {
  /** `[user@]host[:port]` or a Host of the SSH config, as `dock add ssh` was given it. */
  destination: string;
  /** A private key for `ssh -i`. */
  identity?: string;
  /** The port of the box's TLS listener, dialed on the box's loopback. */
  boxPort: number;
  /** The laptop's loopback port forwarded to it. */
  localPort: number;
}

const SCHEMA = `
CREATE TABLE IF NOT EXISTS ssh_transports (
  box TEXT PRIMARY KEY,
  destination TEXT NOT NULL,
  identity TEXT,
  box_port INTEGER NOT NULL,
  local_port INTEGER NOT NULL
);
`;

/** What the transports use of the agent. */
export interface SshTransportsOptions {
  store: Store;
  boxes: Boxes;
  paths: Pick<ClientPaths, "client">;
  /** Paces the restarts' backoff, the forward's probes and the wait for it. */
  clock: Clock;
}

/** Every box's SSH connection (one owner: nothing else starts these `ssh` processes). */
export class SshTransports {
  #store: Store;
  #boxes: Boxes;
  #folder: string;
  #running = new Map<string, Tunnel>();
  #clock: Clock;

  constructor(options: SshTransportsOptions) {
    this.#clock = options.clock;
    this.#store = options.store;
    this.#boxes = options.boxes;
    this.#folder = join(options.paths.client, "ssh");
    this.#store.db.exec(SCHEMA);
  }

  /** Starts the connection of every box kept as reached over SSH (the agent's start). */
  start(): void {
    const rows = this.#store.all<
      { box: string; destination: string; identity: string | null; box_port: number; local_port: number }
    >("SELECT * FROM ssh_transports");
    for (const row of rows) {
      if (!this.#boxes.has(row.box)) {
        this.#store.run("DELETE FROM ssh_transports WHERE box = ?", row.box);
        continue;
      }
      const route = {
        destination: row.destination,
        identity: row.identity ?? undefined,
        boxPort: row.box_port,
        localPort: row.local_port,
      };
      this.#boxes.setTransport(row.box, "ssh");
      this.#start(row.box, route);
    }
  }

  /**
   * Opens a connection for a box not yet paired (`dock add ssh`): resolves once the forward answers
   * (or throws what ssh said). {@linkcode SshTransports.adopt} then keeps it for the box's name.
   */
  async open(route: Omit<SshRoute, "localPort">): Promise<OpenTunnel> {
    const full = { ...route, localPort: freeLoopbackPort() };
    const key = `adding-${crypto.randomUUID().slice(0, 8)}`;
    const tunnel = this.#start(key, full);
    try {
      await tunnel.up(30_000);
    } catch (error) {
      await this.#stop(key);
      throw error;
    }
    return {
      route: full,
      adopt: (name) => this.#adopt(key, name),
      close: () => this.#stop(key),
    };
  }

  /** Whether `box` is reached over SSH. */
  has(box: string): boolean {
    return this.#running.has(box);
  }

  /** The key the box's transport uses (`ssh -i`), if one was named. */
  identity(box: string): string | undefined {
    return this.#running.get(box)?.route.identity;
  }

  /** The pid of the box's `ssh`, while it runs (tests kill it). */
  pid(box: string): number | undefined {
    return this.#running.get(box)?.pid;
  }

  /** Stops the box's connection and forgets it (the box was forgotten). */
  async remove(box: string): Promise<void> {
    this.#store.run("DELETE FROM ssh_transports WHERE box = ?", box);
    await this.#stop(box);
  }

  /** Stops every connection (the agent stops). */
  async close(): Promise<void> {
    await Promise.all([...this.#running.keys()].map((box) => this.#stop(box)));
  }

  #adopt(key: string, name: string): void {
    const tunnel = this.#running.get(key);
    if (!tunnel) throw new DockError("internal", `the SSH transport for '${name}' stopped`, { status: 500 });
    this.#running.delete(key);
    const previous = this.#running.get(name);
    previous?.stop();
    this.#running.set(name, tunnel);
    tunnel.box = name;
    tunnel.rename(join(this.#folder, `${name}.sock`));
    const route = tunnel.route;
    this.#store.run(
      "INSERT OR REPLACE INTO ssh_transports (box, destination, identity, box_port, local_port) VALUES (?, ?, ?, ?, ?)",
      name,
      route.destination,
      route.identity ?? null,
      route.boxPort,
      route.localPort,
    );
    this.#boxes.setTransport(name, "ssh");
  }

  #start(key: string, route: SshRoute): Tunnel {
    const tunnel = new Tunnel({
      route,
      control: join(this.#folder, `${key}.sock`),
      folder: this.#folder,
      clock: this.#clock,
      onUp: () => {
        // Checked now, not at the health loop's next (backed off) turn: the merge follows it again.
        if (tunnel.box && this.#boxes.has(tunnel.box)) this.#boxes.check(tunnel.box).catch(() => {});
      },
    });
    tunnel.box = key.startsWith("adding-") ? undefined : key;
    this.#running.set(key, tunnel);
    tunnel.run();
    return tunnel;
  }

  async #stop(key: string): Promise<void> {
    const tunnel = this.#running.get(key);
    this.#running.delete(key);
    await tunnel?.stop();
  }
}

/** A connection opened for a box being added. */
export interface OpenTunnel {
  route: SshRoute;
  /** Keeps it as the connection of the box `name` (after pairing). */
  adopt(name: string): void;
  close(): Promise<void>;
}

/** The `ssh` command line of a box's connection (without the program). */
export function tunnelArgs(
  route: SshRoute,
  options: { control: string; config?: string },
): string[] {
  // Checked by `parseDestination` when the box was added.
  const destination = parseDestination(route.destination);
  return [
    // A session on a terminal, not `-N`: OpenSSH turns Nagle off (TCP_NODELAY) on both ends only for an
    // interactive connection, and without it an answer written in two pieces waits for a delayed ACK —
    // measured here, a request whose answer came in two writes took 44 ms through `ssh -N -L` and 2.5
    // ms through `ssh -tt -L` (2.3 ms direct). The session's command waits and prints nothing.
    "-tt",
    ...sshOptions(destination, {
      config: options.config,
      identity: route.identity,
      more: [
        // Keepalives notice a dead path in 45 s.
        "-o",
        "ServerAliveCountMax=3",
        // A forward that cannot be set up (the local port taken) ends ssh: the supervisor tries again.
        "-o",
        "ExitOnForwardFailure=yes",
        "-o",
        "ControlMaster=auto",
        "-o",
        `ControlPath=${options.control}`,
      ],
    }),
    "-L",
    `127.0.0.1:${route.localPort}:127.0.0.1:${route.boxPort}`,
    "--",
    destination.host,
    "exec tail -f /dev/null",
  ];
}

/** A loopback port nothing listens on now. */
export function freeLoopbackPort(): number {
  const listener = Deno.listen({ hostname: "127.0.0.1", port: 0 });
  const port = (listener.addr as Deno.NetAddr).port;
  listener.close();
  return port;
}

/** One box's supervised `ssh`. */
class Tunnel {
  box?: string;
  readonly route: SshRoute;
  pid?: number;
  #control: string;
  #folder: string;
  #onUp: () => void;
  #stopped = false;
  #child?: Deno.ChildProcess;
  #wake = new AbortController();
  #loop?: Promise<void>;
  #upWaiters = new Set<(error?: Error) => void>();
  #lastError = "";
  #clock: Clock;

  constructor(
    options: { route: SshRoute; control: string; folder: string; clock: Clock; onUp: () => void },
  ) {
    this.#clock = options.clock;
    this.route = options.route;
    this.#control = options.control;
    this.#folder = options.folder;
    this.#onUp = options.onUp;
  }

  /**
   * Moves the control socket to `control` (the box's name is known once paired): a socket is reached by
   * its path, so the running master serves it there; the next master starts there.
   */
  rename(control: string): void {
    const from = this.#control;
    this.#control = control;
    try {
      Deno.renameSync(from, control);
    } catch { /* ssh is between two runs: the next one makes it */ }
  }

  /** Starts supervising. */
  run(): void {
    this.#loop = this.#supervise();
  }

  /** Resolves once the forward answers; throws what ssh said when it ends first, or after `timeoutMs`. */
  up(timeoutMs: number): Promise<void> {
    return new Promise((resolve, reject) => {
      const cancel = this.#clock.after(timeoutMs, () => {
        this.#upWaiters.delete(settle);
        reject(new Error(`ssh did not forward within ${timeoutMs / 1000} s${this.#said()}`));
      });
      const settle = (error?: Error) => {
        cancel();
        this.#upWaiters.delete(settle);
        if (error) reject(error);
        else resolve();
      };
      this.#upWaiters.add(settle);
    });
  }

  /** Ends `ssh` and its supervision. */
  async stop(): Promise<void> {
    this.#stopped = true;
    this.#wake.abort();
    if (this.#child) {
      try {
        killGroup(this.#child.pid, "SIGTERM");
      } catch { /* gone */ }
    }
    await this.#loop;
    await Deno.remove(this.#control).catch(() => {});
  }

  #said(): string {
    return this.#lastError ? `: ${this.#lastError}` : "";
  }

  async #supervise(): Promise<void> {
    let backoff = { failures: 0, nextCheck: 0 };
    await Deno.mkdir(this.#folder, { recursive: true, mode: 0o700 });
    while (!this.#stopped) {
      const config = Deno.env.get("DOCK_SSH_CONFIG");
      // A master left by an agent that died would hold the port and take our forward as a client's.
      if (await exists(this.#control)) {
        await run("ssh", ["-o", `ControlPath=${this.#control}`, "-O", "exit", "--", "dock-box"], {
          timeoutMs: 5000,
        }).catch(() => {});
        await Deno.remove(this.#control).catch(() => {});
      }
      const { child, untrack } = startChild(
        "ssh",
        tunnelArgs(this.route, { control: this.#control, config }),
      );
      this.#child = child;
      this.pid = child.pid;
      const tail = new TailBuffer(4096);
      const drained = Promise.all([
        drain(child.stdout, () => {}),
        drain(child.stderr, (chunk) => tail.push(chunk)),
      ]);
      let exited = false;
      const status = child.status.finally(() => exited = true);
      const wasUp = await this.#waitUp(() => exited);
      if (wasUp) {
        backoff = { failures: 0, nextCheck: 0 };
        for (const waiter of [...this.#upWaiters]) waiter();
        this.#onUp();
      }
      await status;
      await drained;
      untrack();
      this.pid = undefined;
      this.#child = undefined;
      this.#lastError = tail.text().trim().split("\n").at(-1) ?? "";
      if (this.#stopped) break;
      if (!wasUp) {
        const error = new Error(`ssh ${this.route.destination}${this.#said() || ": it exited"}`);
        for (const waiter of [...this.#upWaiters]) waiter(error);
      }
      // Backing off with jitter, like the boxes' health checks; an established connection that dropped
      // is tried again after ~1 s.
      backoff = afterFailedCheck(backoff, this.#clock.now());
      await sleep(this.#clock, Math.max(0, backoff.nextCheck - this.#clock.now()), this.#wake.signal).catch(
        () => {},
      );
    }
    for (const waiter of [...this.#upWaiters]) waiter(new Error("the SSH transport was stopped"));
  }

  /** Polls the forward until it accepts a connection (true) or `ssh` exits (false). */
  async #waitUp(exited: () => boolean): Promise<boolean> {
    // ssh binds the forward only once it has authenticated: a connection accepted means it is up.
    while (!exited() && !this.#stopped) {
      try {
        const connection = await Deno.connect({ hostname: "127.0.0.1", port: this.route.localPort });
        connection.close();
        return true;
      } catch { /* not yet */ }
      await sleep(this.#clock, 50, this.#wake.signal).catch(() => {});
    }
    return false;
  }
}

/** Reads a child's pipe to its end. */
async function drain(
  stream: ReadableStream<Uint8Array>,
  onChunk: (chunk: Uint8Array) => void,
): Promise<void> {
  for await (const chunk of stream) onChunk(chunk);
}
