/**
 * Networks the laptop has joined, for finding machines to make boxes (issue 17). Today: tailscale, when
 * its CLI is installed here (`tailscale status --json`): whether it is joined and logged in, its peers,
 * a login that streams the URL to open, and discovery: the online peers that answer on dockd's port or
 * on SSH, and whether each is a box already. A laptop without tailscale gets an empty list and a hint.
 *
 * @module
 */
import type { DiscoveredMachine, NetworkInfo, NetworkPeer, Networks, StreamLine } from "../client/wire.ts";
import { DockError } from "../client/errors.ts";
import { Channel } from "../core/channel.ts";
import { parseLink } from "../core/pairing_link.ts";
import { run, which } from "../core/runner.ts";
import type { Boxes } from "./boxes.ts";
import { boxHost } from "./ssh_config.ts";

/** dockd's laptop port (spec 5), and SSH's. */
const DOCKD_PORT = 1379;
const SSH_PORT = 22;
/** How long a peer may take to accept a connection before it counts as not answering. */
const PROBE_MS = 1500;

/** What networks use of the agent. */
export interface NetworksBackend {
  boxes: Pick<Boxes, "list" | "sshDestinations">;
  /** Where the tailscale CLI is looked for. @default {the agent's PATH} */
  path?: () => string;
  /** The ports discovery probes (tests move dockd's). */
  ports?: { dockd?: number; ssh?: number };
}

interface TailscaleNode {
  HostName?: string;
  DNSName?: string;
  TailscaleIPs?: string[];
  OS?: string;
  Online?: boolean;
}

interface TailscaleStatus {
  BackendState?: string;
  Self?: TailscaleNode;
  Peer?: Record<string, TailscaleNode>;
  CurrentTailnet?: { Name?: string } | null;
}

/** The networks here, or none and why (never an error for a missing CLI). */
export async function networks(agent: NetworksBackend): Promise<Networks> {
  const cli = tailscale(agent);
  if (!cli) {
    return {
      networks: [],
      hint: "install tailscale (https://tailscale.com/download) to find machines on your tailnet",
    };
  }
  const status = await readStatus(cli);
  const info: NetworkInfo = {
    name: "tailscale",
    joined: status.BackendState !== undefined && status.BackendState !== "NoState",
    logged_in: status.BackendState === "Running",
    state: status.BackendState ?? "unknown",
    ...(status.CurrentTailnet?.Name ? { tailnet: status.CurrentTailnet.Name } : {}),
    ...(status.Self?.HostName ? { self: status.Self.HostName } : {}),
  };
  return { networks: [info] };
}

/** The machines of a network. */
export async function peers(agent: NetworksBackend, network: string): Promise<NetworkPeer[]> {
  const status = await readStatus(cliFor(agent, network));
  return Object.values(status.Peer ?? {}).map((node) => ({
    name: node.HostName ?? node.DNSName ?? "?",
    dns: (node.DNSName ?? "").replace(/\.$/, "") || null,
    addresses: node.TailscaleIPs ?? [],
    os: node.OS ?? null,
    online: node.Online === true,
  })).sort((a, b) => a.name.localeCompare(b.name));
}

/**
 * The link with its host replaced by the network address of the machine it names (by name, DNS name or
 * one of its addresses) on `network`; 422 when no machine there matches.
 */
export async function throughNetwork(agent: NetworksBackend, network: string, link: string): Promise<string> {
  const parsed = parseLink(link);
  const host = parsed.host.toLowerCase().replace(/\.$/, "");
  const machine = (await peers(agent, network)).find((p) =>
    p.name.toLowerCase() === host || p.dns?.toLowerCase() === host ||
    p.dns?.toLowerCase().split(".")[0] === host || p.addresses.includes(parsed.host)
  );
  const address = machine?.addresses.find((a) => !a.includes(":")) ?? machine?.addresses[0];
  if (!address) {
    throw new DockError(
      "not_on_network",
      `no machine '${parsed.host}' on ${network} (GET /v1/networks/${network}/peers)`,
      {
        status: 422,
      },
    );
  }
  const shown = address.includes(":") ? `[${address}]` : address;
  return `dock://${shown}:${parsed.port}?code=${parsed.code}&fp=${parsed.fp}`;
}

/** `tailscale login`, its output as lines: the URL to open is among them. */
export function login(agent: NetworksBackend, network: string): AsyncGenerator<StreamLine> {
  const cli = cliFor(agent, network);
  const lines = new Channel<string>();
  const decoder = new TextDecoder();
  let partial = "";
  const onOutput = (chunk: Uint8Array) => {
    const parts = (partial + decoder.decode(chunk, { stream: true })).split(/\r?\n/);
    partial = parts.pop() ?? "";
    for (const line of parts) if (line.trim()) lines.push(line.trim());
  };
  const done = run(cli, ["login"], { timeoutMs: 10 * 60_000, onOutput }).finally(() => {
    if (partial.trim()) lines.push(partial.trim());
    lines.close();
  });
  return (async function* () {
    for await (const line of lines) yield { line };
    const result = await done;
    yield result.code === 0
      ? { done: true }
      : { done: true, error: `tailscale login exited with ${result.code}` };
  })();
}

/** The online peers of a network that answer on dockd's port or SSH, and whether each is a box already. */
export async function discover(agent: NetworksBackend, network: string): Promise<DiscoveredMachine[]> {
  const found = await peers(agent, network);
  const boxes = agent.boxes.list();
  const destinations = agent.boxes.sshDestinations();
  const known = (peer: NetworkPeer): string | null => {
    const names = new Set([peer.name, peer.dns, ...peer.addresses].filter(Boolean) as string[]);
    for (const box of boxes) {
      const host = boxHost(box.address);
      const ssh = destinations.get(box.name)?.replace(/^[^@]*@/, "").replace(/:\d+$/, "");
      if ((host && names.has(host)) || (ssh && names.has(ssh))) return box.name;
    }
    return null;
  };
  return await Promise.all(
    found.filter((p) => p.online && p.addresses.length).map(async (peer) => {
      const address = peer.addresses.find((a) => !a.includes(":")) ?? peer.addresses[0];
      const [dockd, ssh] = await Promise.all([
        answers(address, agent.ports?.dockd ?? DOCKD_PORT),
        answers(address, agent.ports?.ssh ?? SSH_PORT),
      ]);
      return { name: peer.name, address, dns: peer.dns, dockd, ssh, box: known(peer) };
    }),
  );
}

function tailscale(agent: NetworksBackend): string | null {
  return which("tailscale", agent.path?.() ?? Deno.env.get("PATH") ?? "");
}

function cliFor(agent: NetworksBackend, network: string): string {
  const cli = network === "tailscale" ? tailscale(agent) : null;
  if (!cli) {
    throw new DockError("not_found", `no network '${network}' here (GET /v1/networks lists them)`, {
      status: 404,
    });
  }
  return cli;
}

async function readStatus(cli: string): Promise<TailscaleStatus> {
  const result = await run(cli, ["status", "--json"], { timeoutMs: 10_000, maxOutput: 8 << 20 });
  try {
    return JSON.parse(result.stdout) as TailscaleStatus;
  } catch {
    // Logged out or stopped, tailscale may say so in words (and exit non-zero): nothing joined.
    return { BackendState: result.stdout.includes("Logged out") ? "NeedsLogin" : "Stopped" };
  }
}

/** Whether something accepts a TCP connection on `address:port` soon enough. */
async function answers(address: string, port: number): Promise<boolean> {
  const connecting = Deno.connect({ hostname: address, port });
  let timeout: ReturnType<typeof setTimeout> | undefined;
  const timer = new Promise<null>((resolve) => timeout = setTimeout(() => resolve(null), PROBE_MS));
  try {
    const conn = await Promise.race([connecting, timer]).finally(() => clearTimeout(timeout));
    if (!conn) {
      connecting.then((late) => late.close(), () => {});
      return false;
    }
    conn.close();
    return true;
  } catch {
    return false;
  }
}
