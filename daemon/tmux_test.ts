/**
 * `Tmux.pasteOnce` and `Tmux.pressEnter` against a real tmux server on a private socket: a keyed send
 * is typed once whatever state a killed daemon's tmux command left its slot in.
 */
import { DockError } from "../client/errors.ts";
import { assertEquals, assertRejects } from "../tests/assert.ts";
import { type Clock, SYSTEM_CLOCK } from "../core/clock.ts";
import { FakeClock } from "../tests/fake_clock.ts";
import { ENTER_AFTER_PASTE_MS, Tmux } from "./tmux.ts";

/** A tmux server with one session `s` whose program appends what it reads to `out`. */
async function server(options: { clock?: Clock } = {}) {
  const dir = await Deno.makeTempDir({ prefix: "dock-tmux-" });
  const tmux = new Tmux({
    socket: `${dir}/tmux.sock`,
    configFile: `${dir}/tmux.conf`,
    clock: options.clock ?? SYSTEM_CLOCK,
  });
  await tmux.writeConfig();
  const out = `${dir}/out`;
  await tmux.newSession({ name: "s", cwd: dir, command: `cat > '${out}'` });
  return {
    tmux,
    dir,
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

Deno.test("pasteOnce: a line through a client kept ready, tmux's special characters as themselves; lines through stdin", async () => {
  await using box = await server();
  await box.tmux.paste("s", "first", true); // starts the clients kept ready
  await until(() => box.tmux.ready > 0, "a client kept ready");
  const line = `-x ; ' " \\ $HOME ~ #c {} %1 é -- end`;
  const handed = box.tmux.handed;
  assertEquals(await box.tmux.pasteOnce("s", "slot-l", line, { enter: true }), "claimed");
  assertEquals(box.tmux.handed, handed + 1, "run by a client kept ready");
  assertEquals(await box.tmux.pressEnter("s", "slot-l"), true);
  // Its claim holds through the client as through a spawned tmux: asked again, it is found.
  assertEquals(await box.tmux.pasteOnce("s", "slot-l", line, { enter: true }), "found");
  // Text with a newline is no tmux word: loaded from stdin, whole, by a spawned tmux.
  const before = box.tmux.handed;
  assertEquals(await box.tmux.pasteOnce("s", "slot-m", "two\nlines", { enter: true }), "claimed");
  assertEquals(box.tmux.handed, before, "not through a client kept ready");
  assertEquals(await box.tmux.pressEnter("s", "slot-m"), true);
  assertEquals(await box.read(4), `first\n${line}\ntwo\nlines\n`);
  await assertRejects(
    () => box.tmux.pasteOnce("gone", "slot-g", "x", { enter: false }),
    DockError,
    "can't find",
  );
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
  const tmux = new Tmux({ socket: `${dir}/tmux.sock`, configFile: `${dir}/tmux.conf`, clock: SYSTEM_CLOCK });
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

Deno.test("typeKeys through the clients kept ready: the same keystrokes, the same slot claims, and a spawn when they are gone", async () => {
  await using box = await keyServer();
  const ready = () => until(() => box.tmux.ready === 2, "two clients kept ready");
  assertEquals(box.tmux.ready, 0, "none before the first keys");
  assertEquals(await box.tmux.typeKeys("k", ["0"]), "typed");
  await ready();
  const handed = box.tmux.handed;
  // Each word goes through tmux's command syntax here: what it would read specially is typed as itself.
  const special = [";", "'", '"', "\\", "$", "~", "#", "{", "}", "%", " ", "é"];
  assertEquals(await box.tmux.typeKeys("k", [...special, "Enter", "C-c"], { slot: "ready-1" }), "typed");
  assertEquals(box.tmux.handed, handed + 1, "run by a client kept ready");
  // Back to back, each call finds a client connected (two are kept).
  assertEquals(await box.tmux.typeKeys("k", ["x"], { slot: "ready-1" }), "found");
  assertEquals(await box.tmux.typeKeys("k", ["1"], { slot: "ready-2", release: ["ready-1"] }), "typed");
  assertEquals(box.tmux.handed, handed + 3);
  await ready();
  await assertRejects(() => box.tmux.typeKeys("gone", ["x"]), DockError, "can't find session");
  // The server restarted since the clients were started: they ended with it, and a fresh one types.
  await ready();
  await box.tmux.command(["kill-server"]);
  // kill-server answers before the server is gone: a new-session meanwhile may reach the dying one
  // ("server exited unexpectedly": seen 1 run in 4 on a loaded machine, before the paste changes too).
  await until(async () => {
    try {
      await box.tmux.newSession({ name: "k2", cwd: "/", command: "cat" });
      return true;
    } catch (error) {
      if (/server exited unexpectedly/.test((error as Error).message)) return false;
      throw error;
    }
  }, "a new server");
  assertEquals(await box.tmux.typeKeys("k2", ["z"]), "typed");
  assertEquals(
    await box.read(17),
    "30 3b 27 22 5c 24 7e 23 7b 7d 25 20 c3 a9 0d 03 31",
  );
});

/** Resolves once `condition` holds, looking every 10 ms (real time: tmux and the program run for real). */
async function until(condition: () => boolean | Promise<boolean>, what: string): Promise<void> {
  const deadline = performance.now() + 10_000;
  while (!(await condition())) {
    if (performance.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 10));
  }
}

Deno.test("paste: a line goes through the client kept ready, tmux's special characters as themselves", async () => {
  await using box = await server();
  // The first command starts the clients kept ready for the next.
  await box.tmux.paste("s", "first", true);
  await until(() => box.tmux.ready > 0, "a client kept ready");
  const line = `-x ; ' " \\ $HOME ~ #c {} %1 é -- end`;
  const handed = box.tmux.handed;
  await box.tmux.paste("s", line, false);
  assertEquals(box.tmux.handed, handed + 1, "run by a client kept ready");
  await box.tmux.typeKeys("s", ["Enter"]);
  // A text with a newline cannot be a tmux word: it is loaded through stdin, whole.
  await box.tmux.paste("s", "two\nlines", true);
  assertEquals(await box.read(4), `first\n${line}\ntwo\nlines\n`);
  await assertRejects(() => box.tmux.paste("gone", "x", false), DockError, "can't find");
});

Deno.test("paste with settle: the Enter waits for quiet on the injected clock, not the wall clock", async () => {
  const fake = new FakeClock(0);
  const waits: number[] = [];
  const clock: Clock = { now: () => fake.now(), after: (ms, fn) => (waits.push(ms), fake.after(ms, fn)) };
  await using box = await server({ clock });
  let done = false;
  const pasting = box.tmux.paste("s", "settled text", true, true).then(() => void (done = true));
  // The paste is drawn, then the send waits on the clock, which stands still: no Enter yet.
  await until(() => waits.length > 0, "the send to wait on the clock");
  assertEquals(done, false);
  assertEquals(
    await Deno.readTextFile(`${box.dir}/out`).catch(() => ""),
    "",
    "no Enter while the clock stands still",
  );
  while (!done) {
    const seen = waits.length;
    fake.advance(20);
    await until(() => done || waits.length > seen, "the next wait or the Enter");
  }
  await pasting;
  assertEquals(await box.read(1), "settled text\n");
  assertEquals(fake.now() >= ENTER_AFTER_PASTE_MS, true, `quiet for ${fake.now()} ms of the clock`);
});
