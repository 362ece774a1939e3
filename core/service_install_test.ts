import { assertEquals, assertStringIncludes } from "../tests/assert.ts";
import {
  agentService,
  cronEntry,
  daemonService,
  installService,
  launchdPlist,
  serviceEnvironment,
  systemdUnit,
  withCronLine,
} from "./service_install.ts";

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
  const agent = agentService("/log");
  assertEquals(
    serviceEnvironment(agent, { DOCK_HOME: "/h", SECRET_TOKEN: "x", PATH: "/bin", DOCK_AGENT_PORT: "" }),
    { DOCK_HOME: "/h", PATH: "/bin" },
  );
  assertEquals(agent.command.at(-1), "agent");
  const daemon = daemonService("/log");
  assertEquals(daemon.command.slice(-2), [new URL("../cli/dockd.ts", import.meta.url).pathname, "serve"]);
  assertEquals(serviceEnvironment(daemon, { DOCK_LISTEN: "0.0.0.0:1379", DOCK_AGENT_PORT: "1" }), {
    DOCK_LISTEN: "0.0.0.0:1379",
  });
  // The daemon's unit hands it its cgroup, for its services' own cgroups.
  const unit = systemdUnit(daemon.command, {}, { description: daemon.description, service: daemon.systemd });
  assertStringIncludes(unit, "Restart=always\nRestartSec=2\nDelegate=yes\n");
  assertEquals(systemdUnit(agent.command, {}).includes("Delegate"), false);
});

Deno.test("dockd install writes a systemd user unit that runs dockd serve and restarts it always", async () => {
  if (Deno.build.os !== "linux") return;
  const config = await Deno.makeTempDir();
  try {
    // No systemctl on this PATH: the unit is written and the answer says how to start it.
    const env = { HOME: config, XDG_CONFIG_HOME: config, PATH: "/nonexistent" };
    const result = await installService(daemonService("/tmp/dockd.log"), { env });
    assertEquals([result.manager, result.started, result.file], [
      "systemd",
      false,
      `${config}/systemd/user/dockd.service`,
    ]);
    const unit = await Deno.readTextFile(result.file);
    assertStringIncludes(unit, "Description=dock box daemon");
    assertStringIncludes(unit, "cli/dockd.ts serve");
    assertStringIncludes(unit, "Restart=always");
    assertStringIncludes(result.notes.join("\n"), "systemctl --user enable --now dockd");
  } finally {
    await Deno.remove(config, { recursive: true });
  }
});

Deno.test("the crontab @reboot entry runs dockd with its variables in its home; only this home's line is replaced", () => {
  const spec = {
    ...daemonService("/h/.local/state/dock/box/dockd.log"),
    command: ["/h/.dock/bin/dockd", "serve"],
  };
  const entry = cronEntry(spec, {
    HOME: "/h",
    PATH: "/usr/bin:/bin",
    DOCK_LISTEN: "127.0.0.1:1379",
    DOCK_TLS_HOSTS: "a b",
    SECRET_TOKEN: "never",
    DATE_FMT: "%Y",
  });
  assertEquals(
    entry,
    "@reboot cd /h && env HOME=/h DOCK_LISTEN=127.0.0.1:1379 DOCK_TLS_HOSTS='a b' PATH=/usr/bin:/bin " +
      "/h/.dock/bin/dockd serve >>/h/.local/state/dock/box/dockd.log 2>&1 # dock:dockd /h",
  );
  // `%` is cron's newline: escaped wherever a value holds one.
  assertStringIncludes(cronEntry(spec, { HOME: "/h", DOCK_LISTEN: "50%" }), "DOCK_LISTEN=50\\%");
  const other = "@reboot cd /other && x # dock:dockd /other";
  const mine = "@reboot old # dock:dockd /h";
  const crontab = `MAILTO=me\n${other}\n${mine}\n`;
  assertEquals(withCronLine(crontab, spec, "/h", entry), `MAILTO=me\n${other}\n${entry}\n`);
  assertEquals(withCronLine(crontab, spec, "/h"), `MAILTO=me\n${other}\n`);
  assertEquals(withCronLine("", spec, "/h", entry), `${entry}\n`);
});
