import { assertEquals } from "../tests/assert.ts";
import type { BoxRecord, SshAccess } from "./boxes.ts";
import { configValue, renderHosts, sshHosts } from "./ssh_config.ts";

function backend(
  boxes: Pick<BoxRecord, "name" | "kind" | "address">[],
  destinations: Record<string, string>,
  access: Record<string, SshAccess>,
) {
  return {
    boxes: {
      list: () => boxes.map((b) => ({ ...b, created: "" })),
      sshDestinations: () => new Map(Object.entries(destinations)),
      sshAccess: () => new Map(Object.entries(access)),
    },
  };
}

Deno.test("sshHosts: what add ssh resolved and its --identity win over the destination's text", () => {
  const agent = backend(
    [
      { name: "alias", kind: "tls", address: "https://10.0.0.5:1379" },
      { name: "plain", kind: "tls", address: "https://10.0.0.6:1379" },
      { name: "paired", kind: "tls", address: "https://[fd00::7]:1379" },
    ],
    { alias: "devbox", plain: "me@10.0.0.6:2222" },
    { alias: { hostname: "10.0.0.5", port: 2200, user: "ubuntu", identity: "/home/me/.ssh/box key" } },
  );
  const hosts = sshHosts(agent);
  assertEquals(
    hosts,
    [
      {
        host: "dock-alias",
        box: "alias",
        hostname: "10.0.0.5",
        user: "ubuntu",
        port: 2200,
        identity: "/home/me/.ssh/box key",
      },
      { host: "dock-plain", box: "plain", hostname: "10.0.0.6", user: "me", port: 2222 },
      { host: "dock-paired", box: "paired", hostname: "fd00::7" },
    ],
  );
  assertEquals(
    renderHosts(hosts).split("\n\n").slice(1, 2).join(""),
    [
      "Host dock-alias",
      "  HostName 10.0.0.5",
      "  User ubuntu",
      "  Port 2200",
      '  IdentityFile "/home/me/.ssh/box key"',
      "  IdentitiesOnly yes",
    ].join("\n"),
  );
  // Port 22 is ssh's own: not written.
  const plain = backend([{ name: "b", kind: "tls", address: "https://h:1379" }], { b: "h" }, {
    b: { hostname: "h", port: 22, user: "me" },
  });
  assertEquals(sshHosts(plain), [{ host: "dock-b", box: "b", hostname: "h", user: "me" }]);
});

Deno.test("renderHosts: a value ssh would read otherwise than written leaves its host out", () => {
  assertEquals(configValue("/a/b"), "/a/b");
  assertEquals(configValue("/a b"), '"/a b"');
  assertEquals(configValue('/a"b'), null);
  assertEquals(configValue("/a\nHost *"), null);
  const text = renderHosts([
    { host: "dock-ok", box: "ok", hostname: "h" },
    { host: "dock-bad", box: "bad", hostname: "h", identity: "/k\n  ProxyCommand evil" },
  ]);
  assertEquals(text.includes("dock-bad") || text.includes("evil"), false);
  assertEquals(text.includes("Host dock-ok\n  HostName h"), true);
});
