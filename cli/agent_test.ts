import { assertEquals } from "../tests/assert.ts";
import { agentDrift, clip } from "./agent.ts";

Deno.test("agentDrift: another build or start setting is said with what to do; defaults and unset agree", () => {
  const env = (values: Record<string, string>) => (name: string) => values[name];
  const agent = (values: Record<string, string | null>) => ({ pid: 1, started: "", env: values });
  assertEquals(
    agentDrift(
      {
        build: "0.1.0+dev",
        agent: agent({ DOCK_SSH_CONFIG: null, DOCK_AGENT_PORT: null, DOCK_PROXY_PORT: "1377" }),
      },
      { build: "0.1.0+dev", env: env({ DOCK_AGENT_PORT: "1378", DOCK_SSH_CONFIG: "" }) },
    ),
    [],
  );
  assertEquals(
    agentDrift(
      { build: "0.1.0+aaaa", agent: agent({ DOCK_SSH_CONFIG: "/a", DOCK_PROXY_PORT: null }) },
      { build: "0.1.0+bbbb", env: env({ DOCK_SSH_CONFIG: "/b", DOCK_PROXY_PORT: "2000" }) },
    ),
    [
      "the agent runs 0.1.0+aaaa but this dock is 0.1.0+bbbb: dock agent restart",
      "the agent runs with DOCK_SSH_CONFIG=/a but this shell has DOCK_SSH_CONFIG=/b: dock agent restart",
      "the agent runs with DOCK_PROXY_PORT=1377 but this shell has DOCK_PROXY_PORT=2000: dock agent restart",
    ],
  );
  assertEquals(
    agentDrift({ build: "x", agent: agent({ DOCK_SSH_CONFIG: null }) }, {
      build: "x",
      env: env({ DOCK_SSH_CONFIG: "/c" }),
    }),
    ["the agent runs with DOCK_SSH_CONFIG=(unset) but this shell has DOCK_SSH_CONFIG=/c: dock agent restart"],
  );
  // An agent from before it reported its process: only the build is compared.
  assertEquals(agentDrift({ build: "x" }, { build: "x", env: env({ DOCK_SSH_CONFIG: "/c" }) }), []);
});

Deno.test("clip: cut at a word's end with an ellipsis, never mid-word; short text kept", () => {
  assertEquals(clip("connection refused", 60), "connection refused");
  const reason = "error sending request for url (https://127.0.0.1:1379/v1/info): client error (Connect)";
  const cut = clip(reason, 60);
  assertEquals(cut, "error sending request for url…");
  assertEquals(clip("the box refused the key, name one with --identity", 30), "the box refused the key…");
  assertEquals(cut.length <= 60, true);
  assertEquals(clip("a\n  b", 60), "a b");
  assertEquals(clip("x".repeat(80), 10), `${"x".repeat(9)}…`);
});
