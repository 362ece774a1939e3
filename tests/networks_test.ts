/**
 * Whole-system test of networks and discovery (agent/networks.ts) with a fake `tailscale` CLI serving
 * recorded `status --json` output: the network and its peers, a login that streams the URL to open,
 * discovery of the online peers that answer on dockd's port (a real box on loopback) and whether they
 * are boxes already; a laptop without tailscale gets an empty list and a hint.
 */
import { join } from "node:path";
import { assertEquals, assertStringIncludes } from "./assert.ts";
import { AgentClient } from "../client/agent.ts";
import { laptopEnv, makeDirs, runCli, startAgent, startBox } from "./harness.ts";

const FAKE = new URL("./fixtures/fake_tailscale.sh", import.meta.url).pathname;
const STATUS = new URL("./fixtures/tailscale_status.json", import.meta.url).pathname;

Deno.test("networks: tailscale's peers, login, and discovery of machines that could be boxes", async () => {
  // Without tailscale: nothing, and what to install.
  const bare = await makeDirs();
  await using plain = await startAgent(bare);
  const without = new AgentClient({ url: plain.url, token: plain.token });
  const none = await without.networks();
  assertEquals(none.networks, []);
  assertStringIncludes(none.hint ?? "", "install tailscale");
  without.close();

  const dirs = await makeDirs();
  const bin = join(dirs.root, "bin");
  await Deno.mkdir(bin, { recursive: true });
  await Deno.symlink(FAKE, join(bin, "tailscale"));
  await using remote = await startBox({ env: { DOCK_LISTEN: "127.0.0.1:0", DOCK_TLS_HOSTS: "devbox" } });
  const port = Number((await listenAddress(remote)).split(":").at(-1));
  const log = join(dirs.root, "tailscale.log");
  const env = {
    PATH: `${bin}:${Deno.env.get("PATH")}`,
    FAKE_TAILSCALE_STATUS: STATUS,
    FAKE_TAILSCALE_LOG: log,
    DOCK_BOX_PORT: String(port),
    DOCK_IPTABLES: join(bin, "iptables"),
  };
  const iptablesCalls = join(dirs.root, "iptables.calls");
  await Deno.writeTextFile(
    join(bin, "iptables"),
    `#!/bin/sh\necho "$*" >>'${iptablesCalls}'\n[ "$3" != -C ]\n`,
    {
      mode: 0o755,
    },
  );
  await using agent = await startAgent(dirs, { env });
  const client = new AgentClient({ url: agent.url, token: agent.token });
  try {
    assertEquals((await client.networks()).networks, [{
      name: "tailscale",
      joined: true,
      logged_in: true,
      state: "Running",
      tailnet: "me@example.com",
      self: "laptop",
    }]);
    assertEquals((await client.networkPeers("tailscale")).map((p) => [p.name, p.dns, p.online]), [
      ["devbox", "devbox.tail1234.ts.net", true],
      ["phone", "phone.tail1234.ts.net", false],
    ]);
    const lines: string[] = [];
    for await (const line of client.networkLogin("tailscale")) if (line.line) lines.push(line.line);
    assertEquals(lines.includes("https://login.tailscale.com/a/1a2b3c4d5e6f"), true);
    assertEquals((await Deno.readTextFile(log)).trim(), "login");

    // devbox answers on dockd's port (the box on loopback), is not a box yet; the phone is offline.
    const found = await client.discover("tailscale");
    assertEquals(found.map((m) => [m.name, m.address, m.dockd, m.box]), [[
      "devbox",
      "127.0.0.1",
      true,
      null,
    ]]);
    // Paired through the network (the link names the machine by its tailnet name): known as a box then.
    const paired = await remote.cli(["pair", "--host", "devbox"]);
    const link = /dock:\/\/[^\s']+/.exec(paired.stdout)![0];
    assertStringIncludes(link, "dock://devbox:");
    const added = await client.pairBox(link, "devbox", "tailscale");
    assertEquals(added.address, `https://127.0.0.1:${port}`);
    assertEquals((await client.discover("tailscale"))[0].box, "devbox");
    const cli = await runCli("dock", ["discover"], { env: laptopEnv(dirs, agent, env), cwd: dirs.home });
    assertEquals(cli.code, 0, cli.stderr);
    assertStringIncludes(cli.stdout, "devbox");
    // Port 80 for private URLs: the firewall rule through (a fake) iptables as root, else the command to run.
    const steps = [];
    for await (const line of client.setupPort80()) steps.push(line);
    if (Deno.uid() === 0) {
      assertEquals(steps.at(-1), { done: true });
      assertStringIncludes(
        await Deno.readTextFile(iptablesCalls),
        "-t nat -A OUTPUT -o lo -p tcp --dport 80 -j REDIRECT",
      );
    } else {
      assertStringIncludes(steps.map((s) => s.line).join("\n"), "sudo iptables -t nat -A OUTPUT");
    }
    const unknown = await fetch(`${agent.url}/v1/networks/zerotier/peers`, {
      headers: { authorization: `Bearer ${agent.token}` },
    });
    assertEquals(unknown.status, 404);
    await unknown.body?.cancel();
  } finally {
    client.close();
  }
});

/** The `host:port` of a box's laptop listener, from its pairing link. */
async function listenAddress(box: { cli(args: string[]): Promise<{ stdout: string }> }): Promise<string> {
  const paired = await box.cli(["pair", "--host", "127.0.0.1"]);
  return /dock:\/\/([^/?\s']+)/.exec(paired.stdout)![1];
}
