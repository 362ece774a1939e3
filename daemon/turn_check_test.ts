import type { AgentState } from "../client/wire.ts";
import { assertEquals } from "../tests/assert.ts";
import { FakeClock } from "../tests/fake_clock.ts";
import { CHECK_MS, POLL_MS, QUIET_MS, readTyped, TurnChecks, type TurnRow } from "./turn_check.ts";

const bytes = (text: string) => new TextEncoder().encode(text);

Deno.test("readTyped: Enter after keys submits; Esc alone and Ctrl-C interrupt; escape sequences are not typing", () => {
  assertEquals(readTyped(bytes("hi\r"), false), { submits: 1, interrupt: false, typed: false });
  assertEquals(readTyped(bytes("\r"), false).submits, 0);
  assertEquals(readTyped(bytes("a"), false), { submits: 0, interrupt: false, typed: true });
  assertEquals(readTyped(bytes("\r"), true).submits, 1);
  assertEquals(readTyped(bytes("\x1b"), false), { submits: 0, interrupt: true, typed: false });
  assertEquals(readTyped(bytes("abc\x03"), false), { submits: 0, interrupt: true, typed: false });
  // Arrows (CSI and SS3), a function key and a bracketed paste's markers are no interrupt.
  for (const sequence of ["\x1b[A", "\x1bOB", "\x1b[15~", "\x1b[200~"]) {
    assertEquals(readTyped(bytes(sequence), false), { submits: 0, interrupt: false, typed: false }, sequence);
  }
  assertEquals(readTyped(bytes("\x1b[200~pasted\x1b[201~\r"), false).submits, 1);
  // Up-arrow then Enter recalls history: nothing was typed, nothing submitted.
  assertEquals(readTyped(bytes("\x1b[A\r"), false).submits, 0);
});

/** A session whose screen and state the test drives, on a fake clock the test moves. */
function fixture(screens: (t: number) => string) {
  const clock = new FakeClock(0);
  const row: TurnRow = { agent_state: "running" as AgentState, state_time: "t0", exited: false };
  const sets: { state: string; reason?: string; cause: string; at: number }[] = [];
  const checks = new TurnChecks({
    tmux: { capture: () => Promise.resolve(screens(clock.now())) },
    states: {
      set: (_name, state, setting) => {
        sets.push({ state, reason: setting.reason, cause: setting.cause, at: clock.now() });
        row.agent_state = state;
        return true;
      },
    },
    row: () => ({ ...row }),
    clock,
  });
  return {
    checks,
    row,
    sets,
    /**
     * Lets the check run until it ends: each turn of the loop lets it reach its next pause (the screen
     * is read at once), then moves the clock to that pause's end. It never pauses past the check's end.
     */
    async settle() {
      while (checks.checking("s")) {
        await new Promise((resolve) => setTimeout(resolve, 0));
        clock.advance(POLL_MS);
        if (clock.now() > CHECK_MS + 1000) throw new Error("the check outlived its deadline");
      }
    },
  };
}

Deno.test("TurnChecks: a screen that settles after an interrupt sets waiting for input", async () => {
  // The tool draws "Interrupted" at 300 ms, then nothing.
  const f = fixture((t) => t < 300 ? `spinner ${t}` : "Interrupted by user\n> ");
  f.checks.after("s");
  await f.settle();
  assertEquals(f.sets.length, 1);
  assertEquals([f.sets[0].state, f.sets[0].reason, f.sets[0].cause], ["waiting", "input", "interrupt"]);
  // Set once the screen had stayed the same for the quiet period after its last change, not before.
  const at = f.sets[0].at;
  assertEquals(at >= 300 + QUIET_MS && at <= 300 + QUIET_MS + 200, true, `set at ${at}`);
});

Deno.test("TurnChecks: a screen that never settles, a hook, an exit or a state at rest change nothing", async () => {
  const busy = fixture((t) => `spinner ${t}`);
  busy.checks.after("s");
  await busy.settle();
  assertEquals(busy.sets, []);

  const hooked = fixture((t) => {
    // A Stop hook arrives while the screen is still: the turn is accounted for.
    if (t >= 200) hooked.row.state_time = "t1";
    return "still";
  });
  hooked.checks.after("s");
  await hooked.settle();
  assertEquals(hooked.sets, []);

  const exited = fixture(() => "still");
  exited.row.exited = true;
  exited.checks.after("s");
  assertEquals(exited.checks.checking("s"), false);

  const idle = fixture(() => "still");
  idle.row.agent_state = "finished";
  idle.checks.after("s");
  assertEquals(idle.checks.checking("s"), false);
  assertEquals(CHECK_MS > QUIET_MS, true);
});
