/**
 * A prompt Claude Code put back in its input box after an Esc is recognized only when the box shows
 * exactly the prompt dock sent last, and `RestoredInputs` types Claude's clearing key then, and only
 * then. (The real tool's behaviour is tests/real_agents/scenarios.ts' "the prompt after an Esc arrives
 * alone".)
 */
import { assertEquals } from "../tests/assert.ts";
import type { Session } from "../client/wire.ts";
import {
  inputBoxText,
  RestoredInputs,
  showsRestored,
  TRACKED_PROMPT_BYTES,
  trackedPrompt,
} from "./restored_input.ts";

const RULE = "─".repeat(60);
/** Claude Code 2.1.332's screen after Esc before the model answered (captured by the real-agent suite). */
function claudeScreen(box: string[]): string {
  return [
    "❯ ask 1 [[bash:touch d.txt]] [[mark:m1]]",
    "  Did not run 1 call",
    "  ⎿  Interrupted · What should Claude do instead?",
    "",
    RULE,
    ...box,
    RULE,
    "  ⏸ manual mode on · ? for shortcuts",
  ].join("\n");
}

const PROMPT = "long [[slow:120000]] [[mark:m2]]";

Deno.test("showsRestored: the box holds exactly the last prompt; not more, not less, not another tool", () => {
  assertEquals(inputBoxText("claude", claudeScreen([`❯ ${PROMPT}       `])), PROMPT);
  assertEquals(showsRestored("claude", claudeScreen([`❯ ${PROMPT}       `]), PROMPT), true);
  // Wrapped over two lines of the box.
  assertEquals(
    showsRestored("claude", claudeScreen(["❯ long [[slow:120000]]", "  [[mark:m2]]"]), PROMPT),
    true,
  );
  // A person typed after it, or instead of it: kept.
  assertEquals(showsRestored("claude", claudeScreen([`❯ ${PROMPT} and more`]), PROMPT), false);
  assertEquals(showsRestored("claude", claudeScreen(["❯ something else"]), PROMPT), false);
  // An empty box (after a denied permission prompt) has nothing to clear.
  assertEquals(showsRestored("claude", claudeScreen(["❯ "]), PROMPT), false);
  // The transcript's prompt lines above the box are not the box.
  assertEquals(
    showsRestored("claude", claudeScreen(["❯ "]), "ask 1 [[bash:touch d.txt]] [[mark:m1]]"),
    false,
  );
  assertEquals(showsRestored("codex", claudeScreen([`❯ ${PROMPT}`]), PROMPT), false);
});

Deno.test("trackedPrompt: one non-blank line up to the limit", () => {
  assertEquals(trackedPrompt(PROMPT), true);
  assertEquals(trackedPrompt("two\nlines"), false);
  assertEquals(trackedPrompt("  "), false);
  assertEquals(trackedPrompt("x".repeat(TRACKED_PROMPT_BYTES + 1)), false);
});

Deno.test("RestoredInputs: Ctrl-U only when an interrupt left the box holding the prompt dock sent last", async () => {
  const typed: string[][] = [];
  let screen = claudeScreen([`❯ ${PROMPT}`]);
  const tmux = {
    capture: () => Promise.resolve(screen),
    command: (args: string[]) => {
      typed.push(args);
      return Promise.resolve("");
    },
  };
  const session = (state: Session["agent_state"], reason: string | null) =>
    ({ name: "s1", agent: "claude", command: "claude", agent_state: state, reason }) as unknown as Session;
  const restored = new RestoredInputs();
  // Nothing sent before: nothing known to be put back.
  assertEquals(await restored.clearBefore(session("waiting", "input"), PROMPT, tmux), false);
  // The next send after an Esc: cleared.
  assertEquals(await restored.clearBefore(session("waiting", "input"), "next", tmux), true);
  assertEquals(typed, [["send-keys", "-t", "=s1:", "C-u"]]);
  // The last prompt is now "next": a box showing the older one is a person's, kept.
  assertEquals(await restored.clearBefore(session("waiting", "input"), "third", tmux), false);
  // Not after an interrupt: never looked at.
  screen = claudeScreen(["❯ third"]);
  assertEquals(await restored.clearBefore(session("finished", null), "fourth", tmux), false);
  assertEquals(await restored.clearBefore(session("waiting", "permission"), "fifth", tmux), false);
  // A tool with no clearing key known: left alone.
  const codex = { ...session("waiting", "input"), agent: "codex", command: "codex" } as Session;
  screen = claudeScreen(["❯ fifth"]);
  assertEquals(await restored.clearBefore(codex, "sixth", tmux), false);
  assertEquals(typed.length, 1);
});
