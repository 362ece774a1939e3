import {
  assert,
  assertEquals,
  assertMatch,
  assertNotEquals,
  assertRejects,
  assertStringIncludes,
  assertThrows,
} from "../tests/assert.ts";
import { DockError } from "../client/errors.ts";
import { Store } from "../core/store.ts";
import type { Laptop } from "../client/wire.ts";
import { PairingStore } from "./pairing.ts";
import { link, parseLink } from "../core/pairing_link.ts";
import { FakeClock } from "../tests/fake_clock.ts";
import { SYSTEM_CLOCK } from "../core/clock.ts";

const FP = "ab".repeat(32);
const MINUTE = 60_000;

function clock(start = "2026-03-01T12:00:00Z"): FakeClock {
  return new FakeClock(Date.parse(start));
}

/** A PairingStore on a fresh database, with a fake clock; `fn` runs, then everything is removed. */
async function withPairing(
  fn: (pairing: PairingStore, time: ReturnType<typeof clock>, store: Store) => void | Promise<void>,
): Promise<void> {
  const dir = await Deno.makeTempDir();
  const store = new Store(`${dir}/box.db`);
  const time = clock();
  try {
    await fn(new PairingStore(store, { clock: time }), time, store);
  } finally {
    store.close();
    await Deno.remove(dir, { recursive: true });
  }
}

/** Runs `fn`, expecting a DockError with `code` and `status`; returns its message. */
async function refused(fn: () => Promise<unknown>, code: string, status: number): Promise<string> {
  const error = await assertRejects(fn, DockError) as DockError;
  assertEquals([error.code, error.status as number], [code, status]);
  return error.message;
}

const LAPTOP = { name: "work laptop", address: "10.0.0.7" };

Deno.test("pairing: a code is redeemed once for a laptop and a credential", () =>
  withPairing(async (pairing, time) => {
    const { code, expires } = await pairing.createCode();
    assertMatch(code, /^[a-z2-7]{32}$/);
    assertEquals(expires.getTime() - time.now(), 10 * MINUTE);
    assertNotEquals((await pairing.createCode()).code, code);

    const { id, credential } = await pairing.redeem(code.toUpperCase(), LAPTOP); // case does not matter
    assertMatch(credential, new RegExp(`^${id}\\.[A-Za-z0-9_-]{43}$`));
    assertEquals(pairing.list(), [{
      id,
      name: "work laptop",
      created: "2026-03-01T12:00:00.000Z",
      last_seen: "2026-03-01T12:00:00.000Z",
    }]);
  }));

Deno.test("pairing: used, expired and unknown codes are refused alike", () =>
  withPairing(async (pairing, time) => {
    const { code } = await pairing.createCode();
    await pairing.redeem(code, LAPTOP);
    const used = await refused(() => pairing.redeem(code, LAPTOP), "pairing_refused", 403);

    const late = (await pairing.createCode()).code;
    time.advance(10 * MINUTE - 1);
    const almost = (await pairing.createCode()).code;
    time.advance(1);
    const expired = await refused(() => pairing.redeem(late, LAPTOP), "pairing_refused", 403);
    const unknown = await refused(() => pairing.redeem("a".repeat(32), LAPTOP), "pairing_refused", 403);
    assertEquals(new Set([used, expired, unknown]).size, 1, "a guesser learns nothing from the message");
    assertStringIncludes(used, "dockd pair");

    await pairing.redeem(almost, LAPTOP);
    assertEquals(pairing.list().length, 2);
  }));

Deno.test("pairing: the database holds only hashes of codes and credentials", () =>
  withPairing(async (pairing, _time, store) => {
    const { code } = await pairing.createCode();
    const [row] = store.all<{ hash: string }>("SELECT hash FROM pairing_codes");
    assertMatch(row.hash, /^[0-9a-f]{64}$/);
    assertNotEquals(row.hash, code);

    const { credential } = await pairing.redeem(code, LAPTOP);
    const dump = JSON.stringify([
      store.all("SELECT * FROM pairing_codes"),
      store.all("SELECT * FROM laptops"),
    ]);
    assert(!dump.includes(code), "the code is not stored");
    assert(!dump.includes(credential.split(".")[1]), "the secret is not stored");
    const [laptop] = store.all<{ secret_hash: string }>("SELECT secret_hash FROM laptops");
    assertMatch(laptop.secret_hash, /^[0-9a-f]{64}$/);
  }));

Deno.test("pairing: concurrent redeems of one code cannot both win", async () => {
  const dir = await Deno.makeTempDir();
  const first = new Store(`${dir}/box.db`);
  const second = new Store(`${dir}/box.db`);
  try {
    // Two PairingStores on one database: what two daemons (or a daemon restart mid-pair) would see.
    const a = new PairingStore(first, { clock: SYSTEM_CLOCK });
    const b = new PairingStore(second, { clock: SYSTEM_CLOCK });
    const { code } = await a.createCode();
    await a.redeem(code, LAPTOP);
    await refused(() => b.redeem(code, LAPTOP), "pairing_refused", 403);
    assertEquals(b.list().length, 1);
  } finally {
    first.close();
    second.close();
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("pairing: a laptop needs a usable name", () =>
  withPairing(async (pairing) => {
    const { code } = await pairing.createCode();
    await refused(() => pairing.redeem(code, { ...LAPTOP, name: "  " }), "invalid_request", 400);
    await refused(() => pairing.redeem(code, { ...LAPTOP, name: "x".repeat(101) }), "invalid_request", 400);
    await refused(() => pairing.redeem(code, { ...LAPTOP, name: "a\nb" }), "invalid_request", 400);
    // A bad name is the caller's mistake, not a guess: the code is still good.
    assertEquals((await pairing.redeem(code, { ...LAPTOP, name: "  mac  " })).id.length, 12);
    assertEquals(pairing.list()[0].name, "mac");
  }));

Deno.test("pairing: five failures lock an address out for ten minutes, even with a valid code", () =>
  withPairing(async (pairing, time) => {
    const guess = "b".repeat(32);
    for (let i = 0; i < 5; i++) {
      await refused(() => pairing.redeem(guess, LAPTOP), "pairing_refused", 403);
      time.advance(MINUTE);
    }
    const { code } = await pairing.createCode();
    const message = await refused(() => pairing.redeem(code, LAPTOP), "rate_limited", 429);
    assertStringIncludes(message, "10.0.0.7");
    const error = await assertRejects(() => pairing.redeem(code, LAPTOP), DockError) as DockError;
    assertEquals(error.detail, { retry_after: 9 * 60 });

    // Other addresses are not affected.
    await pairing.redeem(code, { ...LAPTOP, address: "10.0.0.8" });

    time.advance(9 * MINUTE - 1);
    await refused(async () => pairing.redeem((await pairing.createCode()).code, LAPTOP), "rate_limited", 429);
    time.advance(1);
    await pairing.redeem((await pairing.createCode()).code, LAPTOP);
    assertEquals(pairing.list().length, 2);
  }));

Deno.test("pairing: failures spread over more than ten minutes do not lock out; success resets", () =>
  withPairing(async (pairing, time) => {
    const guess = "c".repeat(32);
    for (let i = 0; i < 8; i++) {
      await refused(() => pairing.redeem(guess, LAPTOP), "pairing_refused", 403);
      time.advance(3 * MINUTE); // at most four failures in any ten minutes
    }
    time.advance(10 * MINUTE);
    for (let i = 0; i < 4; i++) await refused(() => pairing.redeem(guess, LAPTOP), "pairing_refused", 403);
    await pairing.redeem((await pairing.createCode()).code, LAPTOP);
    for (let i = 0; i < 4; i++) await refused(() => pairing.redeem(guess, LAPTOP), "pairing_refused", 403);
    await pairing.redeem((await pairing.createCode()).code, LAPTOP);
  }));

Deno.test("pairing: authenticate finds the laptop and refreshes last_seen at most once a minute", () =>
  withPairing(async (pairing, time) => {
    const { id, credential } = await pairing.redeem((await pairing.createCode()).code, LAPTOP);
    const other = await pairing.redeem((await pairing.createCode()).code, { ...LAPTOP, name: "other" });
    assertEquals((await pairing.authenticate(credential))?.id, id);
    assertEquals((await pairing.authenticate(other.credential))?.name, "other");

    time.advance(30_000);
    assertEquals((await pairing.authenticate(credential))?.last_seen, "2026-03-01T12:00:00.000Z");
    time.advance(30_000);
    assertEquals((await pairing.authenticate(credential))?.last_seen, "2026-03-01T12:01:00.000Z");
    assertEquals(pairing.list().find((laptop) => laptop.id === id)?.last_seen, "2026-03-01T12:01:00.000Z");

    const secret = credential.split(".")[1];
    const flipped = secret[0] === "A" ? `B${secret.slice(1)}` : `A${secret.slice(1)}`;
    for (
      const wrong of [
        "",
        "nonsense",
        `${id}.${flipped}`,
        `${other.id}.${secret}`, // the right secret under another laptop's id
        `${"0".repeat(12)}.${secret}`,
        `${credential}x`,
        credential.toUpperCase(),
      ]
    ) {
      assertEquals(await pairing.authenticate(wrong), null, wrong);
    }
  }));

Deno.test("pairing: revoke removes a laptop, its credential stops working, listeners hear it", () =>
  withPairing(async (pairing) => {
    const { id, credential } = await pairing.redeem((await pairing.createCode()).code, LAPTOP);
    const kept = await pairing.redeem((await pairing.createCode()).code, { ...LAPTOP, name: "kept" });
    const heard: Laptop[] = [];
    const alsoHeard: string[] = [];
    pairing.onRevoke((laptop) => heard.push(laptop));
    const unsubscribe = pairing.onRevoke((laptop) => alsoHeard.push(laptop.id));

    assertEquals(pairing.revoke(id), true);
    assertEquals(await pairing.authenticate(credential), null);
    assertEquals(heard.map((laptop) => [laptop.id, laptop.name]), [[id, "work laptop"]]);
    assertEquals(alsoHeard, [id]);
    assertEquals(pairing.list().map((laptop) => laptop.id), [kept.id]);
    assertEquals(pairing.revoke(id), false, "revoking twice is a no-op");
    assertEquals(heard.length, 1);

    unsubscribe();
    pairing.revoke(kept.id);
    assertEquals(alsoHeard, [id]);
    assertEquals(heard.length, 2);
  }));

Deno.test("pairing: a throwing revoke listener does not stop the others", () =>
  withPairing(async (pairing) => {
    const { id, credential } = await pairing.redeem((await pairing.createCode()).code, LAPTOP);
    const heard: string[] = [];
    pairing.onRevoke(() => {
      throw new Error("boom");
    });
    pairing.onRevoke((laptop) => heard.push(laptop.id));
    assertThrows(() => pairing.revoke(id), AggregateError, "1 listener(s) failed");
    assertEquals(heard, [id]);
    assertEquals(await pairing.authenticate(credential), null);
  }));

Deno.test("pairing: link and parseLink round-trip names, IPv4 and IPv6", () => {
  const code = "abcdefghijklmnopqrstuvwxyz234567";
  const cases: [string, string][] = [
    ["box.example", `dock://box.example:1379?code=${code}&fp=${FP}`],
    ["10.0.0.5", `dock://10.0.0.5:1379?code=${code}&fp=${FP}`],
    ["fd00::5", `dock://[fd00::5]:1379?code=${code}&fp=${FP}`],
    ["[::1]", `dock://[::1]:1379?code=${code}&fp=${FP}`],
  ];
  for (const [host, expected] of cases) {
    const text = link(host, 1379, code, FP);
    assertEquals(text, expected);
    assertEquals(parseLink(text), { host: host.replace(/^\[(.*)\]$/, "$1"), port: 1379, code, fp: FP });
  }
  // What a person pastes: surrounding space, an uppercase code, openssl's colon form of the fingerprint.
  const colons = FP.toUpperCase().match(/../g)!.join(":");
  assertEquals(parseLink(`  dock://Box:80/?fp=${colons}&code=${code.toUpperCase()}\n`), {
    host: "Box",
    port: 80,
    code,
    fp: FP,
  });
});

Deno.test("pairing: malformed links say what is wrong", () => {
  const code = "a".repeat(32);
  const cases: [string, string][] = [
    [`https://box:1379?code=${code}&fp=${FP}`, "does not start with dock://"],
    [`dock://?code=${code}&fp=${FP}`, "no valid HOST:PORT"],
    [`dock://bad host:1?code=${code}&fp=${FP}`, "no valid HOST:PORT"],
    [`dock://::1:1379?code=${code}&fp=${FP}`, "no valid HOST:PORT"],
    [`dock://box/path?code=${code}&fp=${FP}`, "no valid HOST:PORT"],
    [`dock://box?code=${code}&fp=${FP}`, "names no port"],
    [`dock://box:?code=${code}&fp=${FP}`, "names no port"],
    [`dock://box:0?code=${code}&fp=${FP}`, "not in 1-65535"],
    [`dock://box:65536?code=${code}&fp=${FP}`, "not in 1-65535"],
    [`dock://box:1379?fp=${FP}`, "has no code"],
    [`dock://box:1379?code=abc&fp=${FP}`, "malformed code"],
    [`dock://box:1379?code=${"1".repeat(32)}&fp=${FP}`, "malformed code"],
    [`dock://box:1379?code=${code}`, "has no fp"],
    [`dock://box:1379?code=${code}&fp=abc`, "malformed fp"],
    ["", "does not start with dock://"],
  ];
  for (const [text, reason] of cases) {
    const error = assertThrows(() => parseLink(text), DockError, reason) as DockError;
    assertEquals([error.code, error.status as number], ["invalid_link", 400], text);
    assertStringIncludes(error.message, "expected dock://HOST:PORT?code=…&fp=…");
  }
});

Deno.test("pairing: link refuses what it cannot write", () => {
  const code = "a".repeat(32);
  assertThrows(() => link("bad host", 1, code, FP), DockError, "not a host name");
  assertThrows(() => link("box", 0, code, FP), DockError, "not in 1-65535");
  assertThrows(() => link("box", 1.5, code, FP), DockError, "not in 1-65535");
  assertThrows(() => link("box", 1, code, "xyz"), DockError, "64 hex digits");
  assertThrows(() => link("box", 1, "short", FP), DockError, "not a pairing code");
});

Deno.test("pairing: phones have codes and credentials of their own, which expire after ten minutes too", () =>
  withPairing(async (laptops, time, store) => {
    const phones = new PairingStore(store, { clock: time, kind: "phone" });
    const laptopCode = (await laptops.createCode()).code;
    assertStringIncludes(
      await refused(() => phones.redeem(laptopCode, LAPTOP), "pairing_refused", 403),
      "dockd phone pair",
    );
    const phoneCode = (await phones.createCode()).code;
    await refused(() => laptops.redeem(phoneCode, LAPTOP), "pairing_refused", 403);
    const phone = await phones.redeem(phoneCode, { name: "pixel", address: "10.0.0.8" });
    assertEquals(await laptops.authenticate(phone.credential), null, "a phone's credential is no laptop's");
    assertEquals((await phones.authenticate(phone.credential))?.name, "pixel");
    assertEquals(laptops.list(), []);
    const late = (await phones.createCode()).code;
    time.advance(10 * MINUTE);
    await refused(() => phones.redeem(late, { name: "late", address: "10.0.0.9" }), "pairing_refused", 403);
    assertEquals(phones.list().map((p) => p.name), ["pixel"]);
  }));
