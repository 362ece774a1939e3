/**
 * `Tmux.pasteOnce` and `Tmux.pressEnter` against a real tmux server on a private socket: a keyed send
 * is typed once whatever state a killed daemon's tmux command left its slot in.
 */
import { DockError } from "../client/errors.ts";
import { assertEquals, assertRejects } from "../tests/assert.ts";
import { Tmux } from "./tmux.ts";

/** A tmux server with one session `s` whose program appends what it reads to `out`. */
async function server() {
  const dir = await Deno.makeTempDir({ prefix: "dock-tmux-" });
  const tmux = new Tmux({ socket: `${dir}/tmux.sock`, configFile: `${dir}/tmux.conf` });
  await tmux.writeConfig();
  const out = `${dir}/out`;
  await tmux.newSession({ name: "s", cwd: dir, command: `cat > '${out}'` });
  return {
    tmux,
    /** What the session's program has read so far, once it holds `lines` lines. */
    async read(lines: number): Promise<string> {
      for (;;) {
        const text = await Deno.readTextFile(out).catch(() => "");
        if (text.split("\n").length > lines) return text;
        await new Promise((resolve) => setTimeout(resolve, 20));
      }
    },
    async [Symbol.asyncDispose]() {
      await tmux.command(["kill-server"]).catch(() => {});
      await Deno.remove(dir, { recursive: true });
    },
  };
}

Deno.test("pasteOnce types a send once; a second call with its slot finds it pasted", async () => {
  await using box = await server();
  assertEquals(await box.tmux.pasteOnce("s", "slot-1", "first", { enter: true }), "claimed");
  assertEquals(await box.tmux.pressEnter("s", "slot-1"), true);
  // A daemon asked again after a kill -9 that came after the paste and the Enter.
  assertEquals(await box.tmux.pasteOnce("s", "slot-1", "first", { enter: true }), "found");
  assertEquals(await box.tmux.pressEnter("s", "slot-1"), false);
  const second = await box.tmux.pasteOnce("s", "slot-2", "second", { enter: true, release: ["slot-1"] });
  assertEquals(second, "claimed");
  assertEquals(await box.tmux.pressEnter("s", "slot-2"), true);
  assertEquals(await box.read(2), "first\nsecond\n");
  // Released: the slot's claim is gone, so the same slot types again (its key is settled by then).
  assertEquals(await box.tmux.pasteOnce("s", "slot-1", "again", { enter: false }), "claimed");
});

Deno.test("pasteOnce after a killed daemon's tmux: claimed and pasted, claimed and failed, or still to come", async () => {
  await using box = await server();
  // Its command ran whole: found pasted, nothing typed again, its Enter still owed.
  await box.tmux.command([
    "load-buffer",
    "-b",
    "slot-a",
    "-",
    ";",
    "set-option",
    "-s",
    "-o",
    "@slot-a",
    "claimed",
    ";",
    "paste-buffer",
    "-p",
    "-d",
    "-b",
    "slot-a",
    "-t",
    "=s:",
    ";",
    "set-option",
    "-s",
    "@slot-a",
    "pasted",
    ";",
    "set-buffer",
    "-b",
    "slot-a-enter",
    "1",
  ], { stdin: "pasted" });
  assertEquals(await box.tmux.pasteOnce("s", "slot-a", "pasted", { enter: true }), "found");
  assertEquals(await box.tmux.pressEnter("s", "slot-a"), true);
  // Claimed, its paste never made: pasted here, once.
  await box.tmux.command(["set-option", "-s", "@slot-b", "claimed"]);
  assertEquals(await box.tmux.pasteOnce("s", "slot-b", "failed", { enter: true }), "finished");
  assertEquals(await box.tmux.pressEnter("s", "slot-b"), true);
  // Its command comes after this call typed: it stops at the claim.
  assertEquals(await box.tmux.pasteOnce("s", "slot-c", "late", { enter: true }), "claimed");
  assertEquals(await box.tmux.pressEnter("s", "slot-c"), true);
  const late = box.tmux.command([
    "load-buffer",
    "-b",
    "slot-c",
    "-",
    ";",
    "set-option",
    "-s",
    "-o",
    "@slot-c",
    "claimed",
    ";",
    "paste-buffer",
    "-p",
    "-d",
    "-b",
    "slot-c",
    "-t",
    "=s:",
  ], { stdin: "late" });
  await assertRejects(() => late, DockError, "already set");
  assertEquals(await box.read(3), "pasted\nfailed\nlate\n");
});
