import { assertEquals, assertStringIncludes } from "../tests/assert.ts";
import { agentCommand, agentEnvironment, launchdPlist, systemdUnit } from "./install.ts";

Deno.test("the systemd unit runs the agent with dock's directories and restarts it", () => {
  const unit = systemdUnit(["/opt/deno", "run", "-A", "/a b/cli/dock.ts", "agent"], {
    DOCK_STATE_DIR: "/home/me/state",
    DOCK_AGENT_PORT: "1378",
  });
  assertStringIncludes(unit, 'ExecStart=/opt/deno run -A "/a b/cli/dock.ts" agent');
  assertStringIncludes(unit, "Environment=DOCK_STATE_DIR=/home/me/state");
  assertStringIncludes(unit, "Restart=always");
  assertStringIncludes(unit, "WantedBy=default.target");
});

Deno.test("the launchd plist escapes what it holds", () => {
  const plist = launchdPlist(["/opt/deno", "agent"], { DOCK_HOME: "/x&y" }, "/tmp/log");
  assertStringIncludes(plist, "<string>/x&amp;y</string>");
  assertStringIncludes(plist, "<key>KeepAlive</key><true/>");
});

Deno.test("only dock's variables (and PATH) go into the service", () => {
  assertEquals(agentEnvironment({ DOCK_HOME: "/h", SECRET_TOKEN: "x", PATH: "/bin", DOCK_AGENT_PORT: "" }), {
    DOCK_HOME: "/h",
    PATH: "/bin",
  });
  assertEquals(agentCommand().at(-1), "agent");
});
