/**
 * Shares (issue 16): a public URL for a worktree's port, only when a person asks, through a tunnel CLI
 * installed on the box: `cloudflared` (a quick tunnel: `cloudflared tunnel --url http://127.0.0.1:PORT`)
 * or `tailscale` (`tailscale funnel PORT`). Without one it is a 422 naming what to install.
 *
 * The tunnel is a child of the box's one supervisor (`supervisor.ts`, the tunnels' scope: never
 * restarted, since a new quick tunnel is a new URL), its output in a log beside the box's logs, where its
 * public URL is read once it prints one. A restarted daemon adopts a tunnel still running and ends the
 * share of one that ended, so a share never goes on unseen. A share ends when asked
 * (`DELETE shares/{id}`), when its worktree is removed, or when its tunnel exits (TERM, then KILL after
 * {@linkcode STOP_GRACE_MS}). Events: `share.opened`, `share.closed` (with why), `share.failed`.
 *
 * @module
 */
import { join } from "../core/posix_path.ts";
import { DockError } from "../client/errors.ts";
import type { Share, ShareRequest, Worktree } from "../client/wire.ts";
import type { Clock } from "../core/clock.ts";
import type { EventBus } from "../core/events.ts";
import type { Log } from "../core/log.ts";
import type { BoxPaths } from "../core/paths.ts";
import { shellQuote, which } from "../core/runner.ts";
import type { Store } from "../core/store.ts";
import type { CgroupSupport } from "./cgroups.ts";
import { isAlive, pollUntil } from "./procs.ts";
import { Supervisor } from "./supervisor.ts";
import type { Worktrees } from "./worktrees.ts";

/** The tunnel CLIs dock knows, in the order it prefers them, and how each shares a local port. */
export const TUNNELS = [
  {
    tool: "cloudflared",
    args: (port: number) => ["tunnel", "--no-autoupdate", "--url", `http://127.0.0.1:${port}`],
  },
  { tool: "tailscale", args: (port: number) => ["funnel", String(port)] },
] as const;

/** How long a tunnel may take to print its public URL. */
const URL_WAIT_MS = 30_000;
/** Between SIGTERM and SIGKILL of a tunnel: it has no state to save, so shorter than a service's. */
const STOP_GRACE_MS = 3000;
/** A tunnel's key in the supervisor is its share's id alone. */
const NONE = "";

interface ShareRow {
  id: string;
  location: string;
  worktree: string;
  port: number;
  tool: string;
  url: string | null;
  pid: number;
  pid_start: number;
  created: string;
}

/** Dependencies of {@linkcode Shares}. */
export interface SharesOptions {
  store: Store;
  bus: Pick<EventBus, "publish">;
  worktrees: Pick<Worktrees, "get">;
  paths: Pick<BoxPaths, "logs" | "state">;
  /** Where tunnel CLIs are looked for. @default {the daemon's PATH} */
  path?: () => string;
  /** How often running tunnels are checked. @default {1000} */
  pollMs?: number;
  /** The supervisor's clock (the watch of adopted tunnels). */
  clock: Clock;
  /** Told of what goes wrong in the background. */
  log: Log;
}

/** The box's shares. */
export class Shares {
  #o: SharesOptions;
  #tunnels: Supervisor;

  constructor(options: SharesOptions) {
    this.#o = options;
    this.#tunnels = new Supervisor({
      store: options.store,
      bus: options.bus,
      paths: options.paths,
      clock: options.clock,
      log: options.log,
      stopTimeoutMs: STOP_GRACE_MS,
      pollMs: options.pollMs ?? 1000,
      scope: {
        table: "tunnels",
        noun: "tunnel",
        restart: "never",
        events: false, // the share's events say it
        describe: (_location, _worktree, id) => ({ share: id }),
        place: () => ({ path: "/" }),
        environment: (_location, _worktree, _id, mark) =>
          Promise.resolve({ ...Deno.env.toObject(), DOCK_SERVICE: mark }),
        command: (_location, _worktree, id) => Promise.resolve(this.#command(id)),
        logFile: (_location, _worktree, id) => this.#logFile(id),
        ended: (_location, _worktree, id, whileDown) => this.#tunnelEnded(id, whileDown),
      },
    });
  }

  /** Adopts tunnels still running, ends the shares of those that ended while the daemon was down, watches. */
  async start(options: { cgroups?: CgroupSupport } = {}): Promise<void> {
    // A share opened by a daemon from before tunnels were supervised: its tunnel is adopted the same way.
    this.#o.store.run(
      `INSERT OR IGNORE INTO tunnels (location, worktree, name, desired, state, pid, pid_start, started)
       SELECT '', '', id, 'running', 'running', pid, pid_start, created FROM shares`,
    );
    await this.#tunnels.adopt(options);
  }

  /** Stops watching (tunnels run on; the next daemon adopts them). */
  close(): void {
    this.#tunnels.close();
  }

  /** Every share. */
  list(): Share[] {
    return this.#o.store.all<ShareRow>("SELECT * FROM shares ORDER BY created").map(toShare);
  }

  /** The tunnel CLI this box would use, or null. */
  tunnel(): (typeof TUNNELS)[number] | null {
    const path = this.#o.path?.() ?? Deno.env.get("PATH") ?? "";
    return TUNNELS.find((t) => which(t.tool, path) !== null) ?? null;
  }

  /** Opens a share of a worktree's port (default its first); answers once the tunnel printed its URL. */
  async open(request: ShareRequest, origin: string): Promise<Share> {
    const worktree = this.#o.worktrees.get(request.location, request.worktree);
    const port = request.port ?? worktree.ports[0];
    if (port === undefined) {
      throw new DockError("no_port", `worktree ${worktree.location}/${worktree.name} has no port`, {
        status: 422,
      });
    }
    const tunnel = this.tunnel();
    if (!tunnel) {
      throw new DockError(
        "no_tunnel",
        "sharing needs a tunnel CLI on the box: install cloudflared (https://developers.cloudflare.com/" +
          "cloudflare-one/connections/connect-networks/downloads/) or tailscale (with Funnel enabled)",
        { status: 422 },
      );
    }
    const id = `sh-${crypto.randomUUID().slice(0, 8)}`;
    const log = this.#logFile(id);
    await Deno.mkdir(this.#o.paths.logs, { recursive: true });
    this.#o.store.run(
      "INSERT INTO shares (id, location, worktree, port, tool, url, pid, pid_start, created) VALUES (?, ?, ?, ?, ?, NULL, 0, 0, ?)",
      id,
      worktree.location,
      worktree.name,
      port,
      tunnel.tool,
      new Date(this.#o.clock.now()).toISOString(),
    );
    const child = await this.#tunnels.start(NONE, NONE, id, origin).catch(async (error) => {
      this.#o.store.run("DELETE FROM shares WHERE id = ?", id);
      await this.#tunnels.remove(NONE, NONE, id, origin);
      throw error;
    });
    // Kept for a daemon from before tunnels were supervised (a downgrade finds its tunnel as it left it).
    this.#o.store.run(
      "UPDATE shares SET pid = ?, pid_start = ? WHERE id = ?",
      child.pid,
      child.pid_start ?? 0,
      id,
    );
    const url = await this.#waitForUrl(id, child.pid!, child.pid_start ?? undefined);
    if (!url) {
      const said = (await Deno.readTextFile(log).catch(() => "")).trim().split("\n").at(-1) ?? "";
      await this.#end(id, "failed", origin);
      this.#o.bus.publish({
        type: "share.failed",
        origin,
        data: { location: worktree.location, worktree: worktree.name, port, tool: tunnel.tool },
      });
      throw new DockError("share_failed", `${tunnel.tool} printed no public URL${said ? `: ${said}` : ""}`, {
        status: 502,
      });
    }
    this.#o.store.run("UPDATE shares SET url = ? WHERE id = ?", url, id);
    const share = this.#get(id);
    this.#o.bus.publish({ type: "share.opened", origin, data: { ...share } });
    return share;
  }

  /** Ends a share; 404 when there is none. */
  async remove(id: string, origin: string): Promise<Share> {
    const share = this.#get(id);
    await this.#end(id, "closed", origin);
    return share;
  }

  /** Ends every share of a worktree (it is being removed). */
  async closeAll(worktree: Worktree, origin = "dockd"): Promise<void> {
    const rows = this.#o.store.all<ShareRow>(
      "SELECT * FROM shares WHERE location = ? AND worktree = ?",
      worktree.location,
      worktree.name,
    );
    for (const row of rows) await this.#end(row.id, "worktree removed", origin);
  }

  #get(id: string): Share {
    const row = this.#o.store.get<ShareRow>("SELECT * FROM shares WHERE id = ?", id);
    if (!row) throw new DockError("not_found", `no share ${id}`, { status: 404 });
    return toShare(row);
  }

  async #end(id: string, why: string, origin: string): Promise<void> {
    const row = this.#o.store.get<ShareRow>("SELECT * FROM shares WHERE id = ?", id);
    if (!row) return;
    await this.#tunnels.remove(NONE, NONE, id, origin);
    this.#o.store.run("DELETE FROM shares WHERE id = ?", id);
    for (const suffix of [".log", ".log.1", ".exit"]) {
      await Deno.remove(this.#logFile(id).replace(/\.log$/, suffix)).catch(() => {});
    }
    if (why !== "failed") {
      this.#o.bus.publish({ type: "share.closed", origin, data: { ...toShare(row), why } });
    }
  }

  /** A tunnel that ended ends its share; one still opening is `open`'s to end (it says why). */
  async #tunnelEnded(id: string, whileDown: boolean): Promise<void> {
    const row = this.#o.store.get<ShareRow>("SELECT * FROM shares WHERE id = ?", id);
    if (!row) {
      await this.#tunnels.remove(NONE, NONE, id, "dockd"); // a tunnel whose share is gone
      return;
    }
    if (row.url === null && !whileDown) return;
    await this.#end(id, whileDown ? "ended while dockd was down" : "tunnel exited", "dockd");
  }

  /** The tunnel's command line: the CLI found on the daemon's PATH, by its full path. */
  #command(id: string): string {
    const row = this.#o.store.get<ShareRow>("SELECT * FROM shares WHERE id = ?", id);
    const tunnel = TUNNELS.find((t) => t.tool === row?.tool);
    const path = tunnel && which(tunnel.tool, this.#o.path?.() ?? Deno.env.get("PATH") ?? "");
    if (!row || !tunnel || !path) {
      throw new DockError("no_tunnel", `share ${id}: its tunnel CLI ${row?.tool ?? ""} is gone`, {
        status: 422,
      });
    }
    return `exec ${[path, ...tunnel.args(row.port)].map(shellQuote).join(" ")}`;
  }

  async #waitForUrl(id: string, pid: number, start?: number): Promise<string | null> {
    // A tunnel's log is a file a real process writes: looked at on real time (procs.ts `pollUntil`).
    let url: string | null = null;
    await pollUntil(async () => {
      const text = await Deno.readTextFile(this.#logFile(id)).catch(() => "");
      url = /https:\/\/[A-Za-z0-9.-]+\.(?:trycloudflare\.com|ts\.net)\/?/.exec(text)?.[0] ?? null;
      return url !== null || !isAlive(pid, start);
    }, { everyMs: 100, timeoutMs: URL_WAIT_MS });
    return url;
  }

  #logFile(id: string): string {
    return join(this.#o.paths.logs, `share-${id}.log`);
  }
}

function toShare(row: ShareRow): Share {
  return {
    id: row.id,
    location: row.location,
    worktree: row.worktree,
    port: row.port,
    tool: row.tool,
    url: row.url,
    created: row.created,
  };
}
