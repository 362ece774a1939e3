/**
 * Whole-system test of shares (daemon/shares.ts): a public URL for a worktree's port through a tunnel
 * CLI on the box (a fake `cloudflared` that records its arguments and prints a quick tunnel's URL), a
 * clear 422 without one, the tunnel ended on request, with its worktree, and adopted across a daemon
 * killed with -9.
 */
import { join } from "node:path";
import { assert, assertEquals, assertRejects, assertStringIncludes } from "./assert.ts";
import { DockError } from "../client/errors.ts";
import { isAlive } from "../daemon/procs.ts";
import { makeDirs, makeRepo, startBox } from "./harness.ts";
import { until, untilEvent } from "./wait.ts";
import { untilGone } from "./process_exits.ts";
import { exists } from "../core/files.ts";
import { Store } from "../core/store.ts";

const FAKE = new URL("./fixtures/fake_cloudflared.sh", import.meta.url).pathname;

Deno.test("shares: a tunnel's public URL on request, 422 without a tunnel CLI, ended on request, with the worktree, and adopted after kill -9", async () => {
  const dirs = await makeDirs();
  const bin = join(dirs.root, "bin");
  await Deno.mkdir(bin, { recursive: true });
  const calls = join(dirs.root, "tunnel.calls");
  const plain = await startBox({ dirs });
  const repo = await makeRepo(join(dirs.home, "work"), "app");
  await plain.client.addLocation({ name: "app", path: repo });
  const w = await plain.client.createWorktree("app", { name: "w" });
  // No tunnel CLI on this box: a 422 that says what to install.
  const none = await assertRejects(
    () => plain.client.share({ location: "app", worktree: "w" }),
    DockError,
  ) as DockError;
  assertEquals([none.status, none.code], [422, "no_tunnel"]);
  assertStringIncludes(none.message, "install cloudflared");
  await plain.stop({ kill: false });

  await Deno.symlink(FAKE, join(bin, "cloudflared"));
  const env = { PATH: `${bin}:${Deno.env.get("PATH")}`, FAKE_TUNNEL_LOG: calls };
  let box = await startBox({ dirs, env });
  try {
    assert((await box.client.info()).tools.includes("cloudflared"));
    const mark = (await box.client.emit({ type: "test.mark" })).id!;
    const share = await box.client.share({ location: "app", worktree: "w" });
    assert(/^https:\/\/fake-\d+-tunnel\.trycloudflare\.com$/.test(share.url ?? ""), share.url ?? "");
    assertEquals([share.port, share.tool], [w.ports[0], "cloudflared"]);
    assertEquals(
      (await Deno.readTextFile(calls)).trim(),
      `tunnel --no-autoupdate --url http://127.0.0.1:${w.ports[0]}`,
    );
    const opened = await untilEvent(box.client, (e) => e.type === "share.opened", { after: mark });
    assertEquals(opened.data?.url, share.url);
    assertEquals((await box.client.shares()).map((s) => s.id), [share.id]);
    const pid = Number(/fake-(\d+)-/.exec(share.url!)![1]);
    assert(isAlive(pid));

    // Ended on request: the tunnel stops, the share is gone.
    await box.client.unshare(share.id);
    await untilGone([pid], { what: "the unshared tunnel" });
    assertEquals(await box.client.shares(), []);
    const closed = await untilEvent(box.client, (e) => e.type === "share.closed", { after: mark });
    assertEquals(closed.data?.why, "closed");

    // A daemon killed with -9 finds its tunnel running and keeps it; removing the worktree ends it.
    const second = await box.client.share({ location: "app", worktree: "w", port: 4999 });
    await box.stop({ kill: true });
    box = await startBox({ dirs, env });
    assertEquals((await box.client.shares()).map((s) => [s.id, s.port]), [[second.id, 4999]]);
    const secondPid = Number(/fake-(\d+)-/.exec(second.url!)![1]);
    const beforeRemove = (await box.client.emit({ type: "test.mark" })).id!;
    await box.client.removeWorktree("app", "w", { force: true });
    await untilGone([secondPid], { what: "the removed worktree's tunnel" });
    assertEquals(await box.client.shares(), []);
    const ended = await untilEvent(box.client, (e) => e.type === "share.closed", { after: beforeRemove });
    assertEquals(ended.data?.why, "worktree removed");
  } finally {
    await box[Symbol.asyncDispose]();
  }

  // A tunnel that fails: a 502 with its words, nothing left listed or running.
  const other = await makeDirs();
  const otherBin = join(other.root, "bin");
  await Deno.mkdir(otherBin, { recursive: true });
  await Deno.symlink(FAKE, join(otherBin, "cloudflared"));
  const failing = await startBox({
    dirs: other,
    env: { PATH: `${otherBin}:${Deno.env.get("PATH")}`, FAKE_TUNNEL_FAIL: "1" },
  });
  try {
    await failing.client.addLocation({ name: "app", path: await makeRepo(join(other.home, "work"), "app") });
    await failing.client.createWorktree("app", { name: "x" });
    const failed = await assertRejects(
      () => failing.client.share({ location: "app", worktree: "x" }),
      DockError,
    ) as DockError;
    assertEquals(failed.status, 502);
    assertStringIncludes(failed.message, "connection refused");
    assertEquals(await failing.client.shares(), []);
  } finally {
    await failing[Symbol.asyncDispose]();
  }
});

Deno.test("shares: a before:share.open gate that refuses keeps the worktree off the internet; it sees what would be shared", async () => {
  const dirs = await makeDirs();
  const bin = join(dirs.root, "bin");
  await Deno.mkdir(bin, { recursive: true });
  await Deno.symlink(FAKE, join(bin, "cloudflared"));
  const calls = join(dirs.root, "tunnel.calls");
  const seen = join(dirs.root, "gate.stdin");
  await using box = await startBox({
    dirs,
    env: { PATH: `${bin}:${Deno.env.get("PATH")}`, FAKE_TUNNEL_LOG: calls },
  });
  await box.client.addLocation({ name: "app", path: await makeRepo(join(dirs.home, "work"), "app") });
  await box.client.createWorktree("app", { name: "w" });
  await box.client.putHooks([{
    on: "before:share.open",
    run: `cat > '${seen}'; echo "public shares need a person's yes" >&2; exit 1`,
  }]);
  const mark = (await box.client.emit({ type: "test.mark" })).id!;

  const refused = await assertRejects(
    () => box.client.share({ location: "app", worktree: "w", port: 4321 }),
    DockError,
  ) as DockError;
  assertEquals(refused.status, 403);
  assertStringIncludes(refused.message, "public shares need a person's yes");
  // Nothing was opened: no tunnel started, no share listed.
  assertEquals(await exists(calls), false);
  assertEquals(await box.client.shares(), []);
  const event = await untilEvent(box.client, (e) => e.type === "gate.refused", { after: mark });
  assertEquals(event.data?.action, "share.open");
  // The gate was told what would go public.
  const asked = JSON.parse(await Deno.readTextFile(seen));
  assertStringIncludes(JSON.stringify(asked), '"worktree":"w"');
  assertStringIncludes(JSON.stringify(asked), '"port":4321');

  // Without the gate the same request opens the share.
  await box.client.putHooks([]);
  const share = await box.client.share({ location: "app", worktree: "w", port: 4321 });
  assertEquals(share.port, 4321);
  await box.client.unshare(share.id);
});

Deno.test("shares: after an upgrade from a daemon that kept tunnels in the shares table alone, a running tunnel is adopted and a dead one's share ends", async () => {
  const dirs = await makeDirs();
  const bin = join(dirs.root, "bin");
  await Deno.mkdir(bin, { recursive: true });
  await Deno.symlink(FAKE, join(bin, "cloudflared"));
  const env = { PATH: `${bin}:${Deno.env.get("PATH")}` };
  let box = await startBox({ dirs, env });
  try {
    await box.client.addLocation({ name: "app", path: await makeRepo(join(dirs.home, "work"), "app") });
    await box.client.createWorktree("app", { name: "w" });
    const kept = await box.client.share({ location: "app", worktree: "w", port: 4101 });
    const lost = await box.client.share({ location: "app", worktree: "w", port: 4102 });
    const keptPid = Number(/fake-(\d+)-/.exec(kept.url!)![1]);
    const lostPid = Number(/fake-(\d+)-/.exec(lost.url!)![1]);
    await box.stop({ kill: true });
    // What an older daemon left: the shares' rows (with the tunnel's pid), no supervisor rows.
    const store = new Store(join(dirs.state, "box", "dockd.db"));
    store.run("DELETE FROM tunnels");
    store.close();
    Deno.kill(lostPid, "SIGKILL"); // this tunnel ended while no daemon ran
    await untilGone([lostPid], { what: "the killed tunnel" });
    box = await startBox({ dirs, env });
    await until(async () => (await box.client.shares()).length === 1, { on: box });
    assertEquals((await box.client.shares()).map((s) => s.id), [kept.id]);
    const closed = await untilEvent(box.client, (e) => e.type === "share.closed", { after: 0 });
    assertEquals([closed.data?.id, closed.data?.why], [lost.id, "ended while dockd was down"]);
    assert(isAlive(keptPid));
    // The adopted tunnel is the supervisor's: ending the share stops it.
    await box.client.unshare(kept.id);
    await untilGone([keptPid], { what: "the adopted tunnel" });
    assertEquals(await box.client.shares(), []);
  } finally {
    await box[Symbol.asyncDispose]();
  }
});
