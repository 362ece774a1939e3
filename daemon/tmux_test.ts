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
      await tmux.close();
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

/** A tmux server whose session `k` runs the key echo (tests/fixtures/key_echo.ts): raw bytes, as hex. */
async function keyServer() {
  const dir = await Deno.makeTempDir({ prefix: "dock-tmux-keys-" });
  const tmux = new Tmux({ socket: `${dir}/tmux.sock`, configFile: `${dir}/tmux.conf` });
  await tmux.writeConfig();
  const log = `${dir}/keys`;
  const echo = new URL("../tests/fixtures/key_echo.ts", import.meta.url).pathname;
  await tmux.newSession({
    name: "k",
    cwd: dir,
    command: `'${Deno.execPath()}' run --cached-only --allow-write='${log}' '${echo}' '${log}'`,
  });
  const bytes = async () =>
    (await Deno.readTextFile(log).catch(() => "")).split("\n").slice(1).join(" ").trim();
  // The program is in raw mode once it says ready.
  while (!(await Deno.readTextFile(log).catch(() => "")).startsWith("ready")) {
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
  return {
    tmux,
    /** Every byte read so far, as hex, once it holds `want` bytes. */
    async read(want: number): Promise<string> {
      for (;;) {
        const text = await bytes();
        if (text.split(" ").filter(Boolean).length >= want) return text;
        await new Promise((resolve) => setTimeout(resolve, 20));
      }
    },
    async [Symbol.asyncDispose]() {
      await tmux.close();
      await tmux.command(["kill-server"]).catch(() => {});
      await Deno.remove(dir, { recursive: true });
    },
  };
}

Deno.test("typeKeys: characters and named keys reach the program as keystrokes, never a paste", async () => {
  await using box = await keyServer();
  const keys = ["a", ";", "-", "\\", "é", " ", "Enter", "Escape", "Tab", "Up", "Down", "Left", "Right"];
  // What tmux's parser or a shell would read specially: each typed as itself.
  const special = ["{", "}", "#", "$", "'", '"', "%", "~"];
  assertEquals(await box.tmux.typeKeys("k", [...keys, "C-c", "C-d", "Space", "BSpace", ...special]), "typed");
  // No `ESC [200~`: bracketed paste is on in the program, and nothing came as a paste.
  assertEquals(
    await box.read(34),
    "61 3b 2d 5c c3 a9 20 0d 1b 09 1b 5b 41 1b 5b 42 1b 5b 44 1b 5b 43 03 04 20 7f 7b 7d 23 24 27 22 25 7e",
  );
});

Deno.test("typeKeys with a slot: typed once; a second call with it finds them typed", async () => {
  await using box = await keyServer();
  assertEquals(await box.tmux.typeKeys("k", ["1"], { slot: "keys-1" }), "typed");
  assertEquals(await box.tmux.typeKeys("k", ["1"], { slot: "keys-1" }), "found");
  // Released, the slot is free again (a settled call's, freed by the next keyed one).
  assertEquals(await box.tmux.typeKeys("k", ["2"], { slot: "keys-2", release: ["keys-1"] }), "typed");
  assertEquals(await box.tmux.typeKeys("k", ["3"], { slot: "keys-1" }), "typed");
  assertEquals(await box.read(3), "31 32 33");
});

Deno.test("typeKeys through the client kept ready: the same keystrokes, the same slot claims, and a spawn when it is gone", async () => {
  await using box = await keyServer();
  const ready = async () => {
    while (!box.tmux.ready) await new Promise((resolve) => setTimeout(resolve, 10));
  };
  assertEquals(box.tmux.ready, false, "none before the first keys");
  assertEquals(await box.tmux.typeKeys("k", ["0"]), "typed");
  await ready();
  // Each word goes through tmux's command syntax here: what it would read specially is typed as itself.
  const special = [";", "'", '"', "\\", "$", "~", "#", "{", "}", "%", " ", "é"];
  assertEquals(await box.tmux.typeKeys("k", [...special, "Enter", "C-c"], { slot: "ready-1" }), "typed");
  assertEquals(box.tmux.ready, false, "taken by that call");
  await ready();
  assertEquals(await box.tmux.typeKeys("k", ["x"], { slot: "ready-1" }), "found");
  await ready();
  assertEquals(await box.tmux.typeKeys("k", ["1"], { slot: "ready-2", release: ["ready-1"] }), "typed");
  await ready();
  await assertRejects(() => box.tmux.typeKeys("gone", ["x"]), DockError, "can't find session");
  // The server restarted since the client was started: it reached nothing, so the keys are spawned.
  await ready();
  await box.tmux.command(["kill-server"]);
  await box.tmux.newSession({ name: "k2", cwd: "/", command: "cat" });
  assertEquals(await box.tmux.typeKeys("k2", ["z"]), "typed");
  assertEquals(
    await box.read(17),
    "30 3b 27 22 5c 24 7e 23 7b 7d 25 20 c3 a9 0d 03 31",
  );
});
