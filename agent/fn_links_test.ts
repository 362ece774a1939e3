import { assertEquals, assertRejects } from "../tests/assert.ts";
import { DockError } from "../client/errors.ts";
import { FakeClock } from "../tests/fake_clock.ts";
import { FN_LINK_MS, FnLinks } from "./fn_links.ts";

function parts(url: string): { exp: number; sig: string } {
  const query = new URL(url, "http://x").searchParams;
  return { exp: Number(query.get("exp")), sig: query.get("sig") ?? "" };
}

Deno.test("fn links: good once, for one plugin and path, until they expire", async () => {
  const clock = new FakeClock(1_000_000);
  const links = new FnLinks({ clock });
  const link = await links.sign("laptop", "dash", "/a%20b");
  assertEquals(link.url.startsWith("/app/fn/laptop/dash/a%20b?exp="), true, link.url);
  const { exp, sig } = parts(link.url);
  assertEquals(exp, clock.now() + FN_LINK_MS);
  // Another plugin, path, copy or expiry: not what was signed.
  await assertRejects(
    () => links.check("laptop", "other", "/a%20b", exp, sig),
    DockError,
    "not one dock made",
  );
  await assertRejects(() => links.check("laptop", "dash", "/", exp, sig), DockError, "not one dock made");
  await assertRejects(() => links.check("box1", "dash", "/a%20b", exp, sig), DockError, "not one dock made");
  await assertRejects(
    () => links.check("laptop", "dash", "/a%20b", exp - 1, sig),
    DockError,
    "not one dock made",
  );
  await links.check("laptop", "dash", "/a%20b", exp, sig);
  await assertRejects(() => links.check("laptop", "dash", "/a%20b", exp, sig), DockError, "used already");

  const late = await links.sign("laptop", "dash", "/");
  clock.advance(FN_LINK_MS + 1);
  const p = parts(late.url);
  await assertRejects(() => links.check("laptop", "dash", "/", p.exp, p.sig), DockError, "expired");
  // A link from another agent (another key) is refused.
  const foreign = parts((await new FnLinks({ clock }).sign("laptop", "dash", "/")).url);
  await assertRejects(
    () => links.check("laptop", "dash", "/", foreign.exp, foreign.sig),
    DockError,
    "not one dock made",
  );
});
