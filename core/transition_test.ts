import { assertEquals } from "../tests/assert.ts";
import { events, transition, transitions, type TransitionTable } from "./transition.ts";

type Light = "off" | "on" | "broken";
const LIGHT: TransitionTable<Light, "press" | "smash"> = {
  off: { press: "on", smash: "broken" },
  on: { press: "off", smash: "broken" },
  broken: {},
};

Deno.test("transition: the table's next state, null and one log line for anything else", () => {
  const said: string[] = [];
  const log = (message: string) => said.push(message);
  assertEquals(transition(LIGHT, "off", "press", { log }), "on");
  assertEquals(transition(LIGHT, "on", "smash", { log }), "broken");
  assertEquals(said, []);
  assertEquals(transition(LIGHT, "broken", "press", { log, name: "light 1" }), null);
  assertEquals(said, ["light 1: 'press' refused in state 'broken'"]);
  // Neither an unknown state nor an inherited property name is a way through.
  assertEquals(transition(LIGHT, "melted" as Light, "press", { log }), null);
  assertEquals(transition(LIGHT, "off", "toString" as "press", { log }), null);
  assertEquals(said.length, 3);
  // Without a log it still refuses, silently.
  assertEquals(transition(LIGHT, "broken", "smash"), null);
});

Deno.test("transitions and events list a table's edges once each", () => {
  assertEquals(transitions(LIGHT), [
    ["off", "press", "on"],
    ["off", "smash", "broken"],
    ["on", "press", "off"],
    ["on", "smash", "broken"],
  ]);
  assertEquals(events(LIGHT), ["press", "smash"]);
});
