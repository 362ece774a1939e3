/**
 * Shares (issue 16): a public URL for a worktree's port, only when a person asks, through a tunnel CLI
 * installed on the box: `cloudflared` (a quick tunnel: `cloudflared tunnel --url http://127.0.0.1:PORT`)
 * or `tailscale` (`tailscale funnel PORT`). Without one it is a 422 naming what to install.
 *
 * The tunnel runs as a process group of its own (`launch`), its output in a log beside the box's logs,
 * where its public URL is read once it prints one. What runs is kept with its pid and kernel start time:
 * a restarted daemon adopts a tunnel still running and forgets one that ended, so a share never goes on
 * unseen. A share ends when asked (`DELETE shares/{id}`), when its worktree is removed, or when its
 * tunnel exits. Events: `share.opened`, `share.closed` (with why), `share.failed`.
 *
 * @module
 */
import { sleep } from "../client/timers.ts";
import { join } from "../core/posix_path.ts";
import { DockError } from "../client/errors.ts";
import type { Share, ShareRequest, Worktree } from "../client/wire.ts";
import type { EventBus } from "../core/events.ts";
import type { BoxPaths } from "../core/paths.ts";
import { killGroup, launch, which } from "../core/runner.ts";
import type { Store } from "../core/store.ts";
import { isAlive, readProc } from "./procs.ts";
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
  paths: Pick<BoxPaths, "logs">;
  /** Where tunnel CLIs are looked for. @default {the daemon's PATH} */
  path?: () => string;
  /** How often running tunnels are checked. @default {1000} */
  pollMs?: number;
}

/** The box's shares. */
export class Shares {
  #o: SharesOptions;
  #poller?: ReturnType<typeof setInterval>;

  constructor(options: SharesOptions) {
    this.#o = options;
  }

  /** Forgets tunnels that ended while the daemon was down, then watches the others. */
  start(): void {
    this.#check("restart");
    this.#poller = setInterval(() => this.#check("exited"), this.#o.pollMs ?? 1000);
  }

  /** Stops watching (tunnels run on; the next daemon adopts them). */
  close(): void {
    clearInterval(this.#poller);
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
    // The tunnel's output to its log, from a wrapper in its own group: nothing of it is a pipe to dockd.
    const child = launch("/bin/sh", ["-c", 'exec "$@" >"$0" 2>&1', log, tunnel.tool, ...tunnel.args(port)]);
    const start = readProc(child.pid)?.startTime ?? 0;
    this.#o.store.run(
      "INSERT INTO shares (id, location, worktree, port, tool, url, pid, pid_start, created) VALUES (?, ?, ?, ?, ?, NULL, ?, ?, ?)",
      id,
      worktree.location,
      worktree.name,
      port,
      tunnel.tool,
      child.pid,
      start,
      new Date().toISOString(),
    );
    const url = await this.#waitForUrl(id, child.pid);
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
    if (isAlive(row.pid, row.pid_start)) {
      killGroup(row.pid, "SIGTERM");
      const deadline = Date.now() + 3000;
      while (isAlive(row.pid, row.pid_start) && Date.now() < deadline) {
        await sleep(50);
      }
      if (isAlive(row.pid, row.pid_start)) killGroup(row.pid, "SIGKILL");
    }
    this.#o.store.run("DELETE FROM shares WHERE id = ?", id);
    await Deno.remove(this.#logFile(id)).catch(() => {});
    if (why !== "failed") {
      this.#o.bus.publish({ type: "share.closed", origin, data: { ...toShare(row), why } });
    }
  }

  /** Tunnels that are gone end their shares. */
  #check(why: "restart" | "exited"): void {
    for (const row of this.#o.store.all<ShareRow>("SELECT * FROM shares")) {
      if (row.url !== null && !isAlive(row.pid, row.pid_start)) {
        this.#end(row.id, why === "restart" ? "ended while dockd was down" : "tunnel exited", "dockd")
          .catch(() => {});
      }
    }
  }

  async #waitForUrl(id: string, pid: number): Promise<string | null> {
    const deadline = Date.now() + URL_WAIT_MS;
    while (Date.now() < deadline) {
      const text = await Deno.readTextFile(this.#logFile(id)).catch(() => "");
      const url = /https:\/\/[A-Za-z0-9.-]+\.(?:trycloudflare\.com|ts\.net)\/?/.exec(text)?.[0];
      if (url) return url;
      if (!isAlive(pid)) return null;
      await sleep(100);
    }
    return null;
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
