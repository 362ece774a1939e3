import { assertEquals, assertThrows } from "../tests/assert.ts";
import { DockError } from "../client/errors.ts";
import { boxPaths } from "../core/paths.ts";
import { loadSettings } from "./settings.ts";

/** The box's paths under a temporary DOCK_HOME. */
function pathsIn(home: string) {
  const env = new Map([["HOME", home], ["DOCK_HOME", home], ["DOCK_STATE_DIR", `${home}/state`]]);
  return boxPaths({ get: (key) => env.get(key) });
}

Deno.test("box.json: missing takes the defaults; comments are fine; a bad field is named", async () => {
  const home = await Deno.makeTempDir();
  try {
    const paths = pathsIn(home);
    const defaults = loadSettings(paths);
    assertEquals(defaults.compatPrefix, "CONDUCTOR");
    assertEquals(defaults.worktreesDir, paths.worktrees);

    await Deno.writeTextFile(
      paths.boxConfig,
      `{\n  // this box\n  "name": "devbox",\n  "port_range": [30000, 30999],\n  "worktrees_dir": "~/wt",\n}`,
    );
    const settings = loadSettings(paths);
    assertEquals([settings.name, settings.portRange, settings.worktreesDir], [
      "devbox",
      [30000, 30999],
      `${home}/wt`,
    ]);

    const refused = (text: string, expected: string) => {
      Deno.writeTextFileSync(paths.boxConfig, text);
      const error = assertThrows(() => loadSettings(paths), DockError, expected) as DockError;
      assertEquals([error.code, error.status], ["invalid_settings", 422]);
    };
    refused(
      `{ "port_range": [30000, 80] }`,
      `${paths.boxConfig}: port_range[1]: must be a whole number from 1024`,
    );
    refused(`{ "port_range": [3000] }`, `${paths.boxConfig}: port_range: must be two ports [low, high]`);
    refused(`{ "nmae": "x" }`, `${paths.boxConfig}: nmae: unknown field (did you mean "name"?)`);
    refused(`{ "name": "x" "port_range": [] }`, `${paths.boxConfig}:1:15: expected ',' or a closing bracket`);
  } finally {
    await Deno.remove(home, { recursive: true });
  }
});
