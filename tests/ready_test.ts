/**
 * Whole-system tests of the ready line (cli/ready.ts): `dockd serve` and `dock agent` started on port 0 bind
 * what the system chooses and name it in one JSON line on stdout, which the harness reads instead of picking
 * free ports beforehand; what they report afterwards (status, drift notes) names the ports bound, not 0.
 */
import { AgentClient } from "../client/agent.ts";
import { assert, assertEquals, assertMatch } from "./assert.ts";
import { laptopEnv, listeningPorts, runCli, startAgent, startBox } from "./harness.ts";

Deno.test("dockd on DOCK_LISTEN=127.0.0.1:0 names its socket and the port it bound in its ready line", async () => {
  await using box = await startBox({ env: { DOCK_LISTEN: "127.0.0.1:0" } });
  const { ready } = box;
  assertEquals([ready.ready, ready.pid, ready.socket], ["dockd", box.process.pid, box.dirs.socket]);
  assertMatch(String(ready.laptops), /^127\.0\.0\.1:[1-9]\d*$/);
  const port = Number(String(ready.laptops).split(":")[1]);
  assert(listeningPorts(box.process.pid).includes(port), `dockd listens on ${port}`);
});

Deno.test("dockd with DOCK_LISTEN=off says so in its ready line: no laptop listener", async () => {
  await using box = await startBox();
  assertEquals(box.ready.laptops, null);
});

Deno.test("the agent on port 0 names its API and proxy ports, and reports them as what it started with", async () => {
  await using box = await startBox();
  await using agent = await startAgent(box.dirs);
  const { ready } = agent;
  assertEquals([ready.ready, ready.pid], ["dock agent", agent.process.pid]);
  assert(agent.port > 0 && agent.proxyPort > 0 && agent.port !== agent.proxyPort, JSON.stringify(ready));
  const bound = listeningPorts(agent.process.pid);
  assert(bound.includes(agent.port) && bound.includes(agent.proxyPort), `listening on ${bound}`);
  const client = new AgentClient({ url: agent.url, token: agent.token, origin: "test" });
  try {
    const status = await client.status();
    assertEquals(status.proxy, { enabled: true, port: agent.proxyPort });
    assertEquals(status.agent?.env.DOCK_AGENT_PORT, String(agent.port));
    assertEquals(status.agent?.env.DOCK_PROXY_PORT, String(agent.proxyPort));
  } finally {
    client.close();
  }
  // A shell that dials the bound ports finds no drift to report (it would say `dock agent restart`).
  const env = laptopEnv(box.dirs, agent, { DOCK_PROXY_PORT: String(agent.proxyPort) });
  const status = await runCli("dock", ["status"], { env, cwd: box.dirs.home });
  assertEquals(status.code, 0, status.stderr);
  assert(!status.stderr.includes("dock agent restart"), status.stderr);
});
