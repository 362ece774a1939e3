import { assertEquals, assertThrows } from "../tests/assert.ts";
import { DockError } from "../client/errors.ts";
import { checkAddSsh } from "./add_ssh.ts";
import { aesGcmFirst, hostKeyHint, parseDestination } from "./add_ssh_remote.ts";
import { assertRejects, assertStringIncludes } from "../tests/assert.ts";

Deno.test("aesGcmFirst: AES-GCM moves ahead of what the configuration allows, nothing added or dropped", () => {
  // OpenSSH 9's default order.
  assertEquals(
    aesGcmFirst([
      "chacha20-poly1305@openssh.com",
      "aes128-ctr",
      "aes192-ctr",
      "aes256-ctr",
      "aes128-gcm@openssh.com",
      "aes256-gcm@openssh.com",
    ]),
    [
      "aes128-gcm@openssh.com",
      "aes256-gcm@openssh.com",
      "chacha20-poly1305@openssh.com",
      "aes128-ctr",
      "aes192-ctr",
      "aes256-ctr",
    ],
  );
  // A configuration that allows only some: the same set.
  assertEquals(aesGcmFirst(["chacha20-poly1305@openssh.com", "aes256-gcm@openssh.com"]), [
    "aes256-gcm@openssh.com",
    "chacha20-poly1305@openssh.com",
  ]);
  // Nothing to change: asked for nothing (the configuration's own order stands).
  assertEquals(aesGcmFirst(["aes128-gcm@openssh.com", "chacha20-poly1305@openssh.com"]), []);
  assertEquals(aesGcmFirst(["chacha20-poly1305@openssh.com", "aes256-ctr"]), []);
  assertEquals(aesGcmFirst([]), []);
});

Deno.test("parseDestination: user, host, port and IPv6; nothing ssh could read as an option", () => {
  assertEquals(parseDestination("box"), { user: undefined, host: "box", port: undefined });
  assertEquals(parseDestination("me@box.lan:2222"), { user: "me", host: "box.lan", port: 2222 });
  assertEquals(parseDestination("[fd00::1]:22"), { user: undefined, host: "fd00::1", port: 22 });
  for (const bad of ["-oProxyCommand=x", "me@-box", "box:0", "box:70000", "a b", "box\n"]) {
    const error = assertThrows(() => parseDestination(bad), DockError) as DockError;
    assertEquals([error.code, error.status], ["invalid_request", 400], bad);
  }
});

Deno.test("hostKeyHint: a changed key's entry as known_hosts names it; an unknown key's command keeps -F and the key", () => {
  const command = "ssh -F /home/me/dock_ssh -i '/home/me/My Keys/box' me@box.example -p 2222";
  const changed = hostKeyHint({ changed: true, hostname: "box.example", port: 2222, command });
  assertStringIncludes(changed, "the box's host key changed since you last connected");
  assertStringIncludes(changed, "(ssh-keygen -R '[box.example]:2222')");
  assertStringIncludes(changed, `connect once: ${command}`);
  assertStringIncludes(
    hostKeyHint({ changed: true, hostname: "box.example", port: 22, command: "ssh box.example" }),
    "(ssh-keygen -R box.example)",
  );
  const unknown = hostKeyHint({
    changed: false,
    fingerprint: "SHA256:abc (ED25519)",
    hostname: "h",
    port: 22,
    command,
  });
  assertEquals(
    unknown,
    "the box's host key is not known here; it presents SHA256:abc (ED25519). Check the fingerprint with the " +
      `box's owner, then accept it by connecting once: ${command}`,
  );
});

Deno.test("checkAddSsh: --listen must be HOST:PORT or off, refused before anything runs", async () => {
  await checkAddSsh({ host: "box", listen: "127.0.0.1:1379" });
  await checkAddSsh({ host: "box", listen: "off" });
  for (const listen of ["127.0.0.1:1379; reboot", "nowhere", "1.2.3.4:99999", "a\0b:1"]) {
    const error = await assertRejects(() => checkAddSsh({ host: "box", listen }), DockError) as DockError;
    assertEquals([error.status, error.code], [400, "invalid_request"], listen);
  }
});
