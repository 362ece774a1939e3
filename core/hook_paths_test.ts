import { assert, assertEquals } from "../tests/assert.ts";
import { hookPaths, isSpooledName, spoolName, spoolTempName, stateDirFrom } from "./hook_paths.ts";
import { boxPaths } from "./paths.ts";

function reader(vars: Record<string, string>): (key: string) => string | undefined {
  return (key) => vars[key];
}

Deno.test("stateDirFrom: DOCK_STATE_DIR, else XDG_STATE_HOME/dock, else HOME/.local/state/dock", () => {
  assertEquals(stateDirFrom(reader({ DOCK_STATE_DIR: "/s", XDG_STATE_HOME: "/x", HOME: "/h" })), "/s");
  assertEquals(stateDirFrom(reader({ XDG_STATE_HOME: "/x", HOME: "/h" })), "/x/dock");
  assertEquals(stateDirFrom(reader({ HOME: "/h" })), "/h/.local/state/dock");
  // An empty value is unset; no HOME at all still names an absolute folder.
  assertEquals(
    stateDirFrom(reader({ DOCK_STATE_DIR: "", XDG_STATE_HOME: "", HOME: "/h/" })),
    "/h/.local/state/dock",
  );
  assertEquals(stateDirFrom(reader({})), "/.local/state/dock");
  assertEquals(stateDirFrom(reader({ HOME: "" })), "/.local/state/dock");
});

Deno.test("the hook posts to the socket the daemon listens on, whatever the environment", () => {
  const cases: Record<string, string>[] = [
    { DOCK_STATE_DIR: "/srv/state", HOME: "/home/a" },
    { XDG_STATE_HOME: "/home/a/.state", HOME: "/home/a" },
    { HOME: "/home/a" },
    { HOME: "" },
    {},
  ];
  for (const vars of cases) {
    const daemon = boxPaths({ get: (key) => vars[key] });
    const hook = hookPaths(stateDirFrom(reader(vars)));
    assertEquals(hook.socket, daemon.socket, JSON.stringify(vars));
    assertEquals(hook.spool, `${daemon.box}/spool`, JSON.stringify(vars));
  }
});

Deno.test("spool names sort by arrival and only whole ones are replayed", () => {
  const early = spoolName({ now: 999, pid: 70000, tail: "zz" });
  const later = spoolName({ now: 1_700_000_000_001, pid: 1, tail: "aa" });
  assertEquals(later, "001700000000001-1-aa.json");
  // Lexical order is time order though the earlier one has more digits in its pid and tail.
  assertEquals([later, early].sort(), [early, later]);
  assert(isSpooledName(early));
  assert(!isSpooledName(spoolTempName(early)), "a file still being written is never replayed");
  assert(!isSpooledName("notes.txt"));
});
