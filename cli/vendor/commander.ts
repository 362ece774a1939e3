/**
 * Writes `cli/vendor/commander/`: commander's own files (from the version pinned in `deno.json`, as
 * `deno install` put it in `node_modules/`) with its `node:` imports pointed at `cli/commander_shims.ts`.
 * Why: the first `node:` import loads Deno's Node compatibility layer, ~45 ms of a ~60 ms empty
 * `deno run`, and commander's are the only ones left on a CLI command's path (issue #10: a command in
 * ≤ 1.5× the empty run). Nothing else of commander changes but one regular expression asked of fewer
 * flags (`VARIADIC`); `cli/commander_test.ts` fails when the vendored copy differs from what this
 * script would write.
 *
 * Run `deno run -A cli/vendor/commander.ts` after changing commander's version in `deno.json`.
 *
 * @module
 */

const SOURCE = new URL("../../node_modules/commander/", import.meta.url);
const TARGET = new URL("./commander/", import.meta.url);
const FILES = [
  "index.js",
  "lib/argument.js",
  "lib/command.js",
  "lib/error.js",
  "lib/help.js",
  "lib/option.js",
  "lib/suggestSimilar.js",
  "LICENSE",
];

/** commander's `node:` imports, exactly as its files have them, and what replaces them. */
const COMMAND_IMPORTS = [
  "import { EventEmitter } from 'node:events';",
  "import childProcess from 'node:child_process';",
  "import path from 'node:path';",
  "import fs from 'node:fs';",
  "import process from 'node:process';",
  "import { stripVTControlCharacters } from 'node:util';",
].join("\n");
const COMMAND_SHIMS = [
  "import {",
  "  childProcess,",
  "  EventEmitter,",
  "  fs,",
  "  path,",
  "  process,",
  "  stripVTControlCharacters,",
  "} from '../../../commander_shims.ts';",
].join("\n");
const HELP_IMPORTS = "import { stripVTControlCharacters } from 'node:util';";
const HELP_SHIMS = "import { stripVTControlCharacters } from '../../../commander_shims.ts';";
// The first run of a `\p{…}` regular expression builds its Unicode set: 0.5 ms of a ~7 ms command,
// paid by the first option every command line defines (`--version`). Asked only of flags that can
// match it (those holding `...`), it gives the same answers.
const VARIADIC = "this.variadic = /\\p{ID_Continue}\\.\\.\\.[>\\]]$/u.test(flags);";
const VARIADIC_GUARDED =
  "this.variadic = flags.includes('...') && /\\p{ID_Continue}\\.\\.\\.[>\\]]$/u.test(flags);";
const REPLACED: Record<string, [string, string]> = {
  "lib/command.js": [COMMAND_IMPORTS, COMMAND_SHIMS],
  "lib/help.js": [HELP_IMPORTS, HELP_SHIMS],
  "lib/option.js": [VARIADIC, VARIADIC_GUARDED],
};

/** The vendored files: path under `cli/vendor/commander/` → contents. */
export async function vendoredCommander(): Promise<Map<string, string>> {
  const pinned =
    JSON.parse(await Deno.readTextFile(new URL("../../deno.json", import.meta.url))).imports.commander;
  const version = JSON.parse(await Deno.readTextFile(new URL("package.json", SOURCE))).version;
  if (pinned !== `npm:commander@${version}`) {
    throw new Error(`node_modules has commander ${version}, deno.json pins ${pinned}: run deno install`);
  }
  const files = new Map<string, string>();
  for (const file of FILES) {
    let text = await Deno.readTextFile(new URL(file, SOURCE));
    const replaced = REPLACED[file];
    if (replaced) {
      const [imports, shims] = replaced;
      if (!text.includes(imports)) {
        throw new Error(`commander ${version}: ${file} changed where it is edited`);
      }
      text = text.replace(imports, shims);
    }
    if (/from ['"]node:/.test(text)) throw new Error(`commander ${version}: ${file} imports node: modules`);
    if (file.endsWith(".js")) {
      text = `// commander ${version}, vendored by cli/vendor/commander.ts: do not edit.\n${text}`;
    }
    files.set(file, text);
  }
  return files;
}

if (import.meta.main) {
  for (const [file, text] of await vendoredCommander()) {
    const target = new URL(file, TARGET);
    await Deno.mkdir(new URL(".", target), { recursive: true });
    await Deno.writeTextFile(target, text);
  }
}
