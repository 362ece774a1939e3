import { assertEquals, assertThrows } from "../tests/assert.ts";
import { DockError } from "../client/errors.ts";
import { aesGcmFirst, parseDestination } from "./add_ssh.ts";

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
