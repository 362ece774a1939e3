import { assertEquals, assertStringIncludes } from "../tests/assert.ts";
import { FakeClock } from "../tests/fake_clock.ts";
import { isSecretReference, SecretResolver } from "./secrets.ts";

Deno.test("isSecretReference knows env:// and vault schemes only", () => {
  assertEquals(isSecretReference("env://TOKEN"), true);
  assertEquals(isSecretReference("op://vault/item/field"), true);
  assertEquals(isSecretReference("https://example.com"), false);
  assertEquals(isSecretReference("plain"), false);
});

Deno.test("env:// resolves from the daemon's environment and is cached until asked fresh or stale", async () => {
  let value = "one";
  const clock = new FakeClock(0);
  const resolver = new SecretResolver({
    clock,
    ttlMs: 1000,
    env: (name) => name === "S" ? value : undefined,
  });
  assertEquals(await resolver.resolve("env://S"), { ok: true, value: "one" });
  value = "two";
  clock.advance(999);
  assertEquals(await resolver.resolve("env://S"), { ok: true, value: "one", cached: true });
  assertEquals(await resolver.resolve("env://S", { fresh: true }), { ok: true, value: "two" });
  // Stale once its time is up: asked again, not answered from the cache.
  value = "three";
  clock.advance(1000);
  assertEquals(await resolver.resolve("env://S"), { ok: true, value: "three" });
});

Deno.test("unresolvable references say why, without a value", async () => {
  const resolver = new SecretResolver({ clock: new FakeClock(0), env: () => undefined });
  const missing = await resolver.resolve("env://GONE");
  assertEquals(missing.ok, false);
  if (!missing.ok) assertStringIncludes(missing.error, "not set");
  const bad = await resolver.resolve("env://not-a-name");
  assertEquals(bad.ok, false);
  const scheme = await resolver.resolve("vault://x");
  if (!scheme.ok) assertStringIncludes(scheme.error, "no resolver");
  const malformed = await resolver.resolve("nothing");
  assertEquals(malformed.ok, false);
});
