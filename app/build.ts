#!/usr/bin/env -S deno run -A
/**
 * Builds the app (`deno task app`): bundles `app/src/main.tsx` for the browser with `deno bundle`, joins
 * xterm.js's stylesheet and ours, and writes `app/assets.generated.ts`, the files as string constants,
 * so the program serves them with no build step on a user's machine and from a compiled binary (as the
 * skills are embedded). `assets_test.ts` fails while the embedded copy is older than its sources.
 *
 * @module
 */
import { join, relative } from "node:path";
import { fileURLToPath } from "node:url";

const APP = fileURLToPath(new URL(".", import.meta.url));
const ROOT = join(APP, "..");
const SRC = join(APP, "src");
const TARGET = join(APP, "assets.generated.ts");
/** The npm packages in the bundle: a change of version is a change of the app. */
const PACKAGES = [
  "preact",
  "@preact/signals",
  "@xterm/xterm",
  "@xterm/addon-fit",
  "@xterm/addon-web-links",
  "@xterm/addon-search",
];

/**
 * What goes into the bundle, read in a fixed order: app/src (not its tests, which no bundle holds: a test
 * changed does not make the bundle stale), this script, the packages' versions.
 */
export async function sources(): Promise<[string, string][]> {
  const files: [string, string][] = [];
  const names: string[] = [];
  for await (const entry of Deno.readDir(SRC)) {
    if (entry.isFile && !/_test\.tsx?$/.test(entry.name)) names.push(entry.name);
  }
  for (const name of names.sort()) files.push([`src/${name}`, await Deno.readTextFile(join(SRC, name))]);
  files.push(["build.ts", await Deno.readTextFile(join(APP, "build.ts"))]);
  const imports = JSON.parse(await Deno.readTextFile(join(ROOT, "deno.json"))).imports ?? {};
  files.push(["packages", PACKAGES.map((name) => `${name}=${imports[name]}`).join("\n")]);
  return files;
}

/** The SHA-256 of the app's sources, as the generated module records it. */
export async function sourceHash(): Promise<string> {
  const text = (await sources()).map(([name, body]) => `${name}\n${body.length}\n${body}`).join("\n");
  const digest = await crypto.subtle.digest("SHA-256", new TextEncoder().encode(text));
  return [...new Uint8Array(digest)].map((b) => b.toString(16).padStart(2, "0")).join("");
}

/**
 * Bundles the entry into minified browser modules: `app.js`, and the chunks it imports when needed
 * (xterm.js, most of the weight, loads with the first terminal, so the board paints without it).
 */
async function bundle(): Promise<Record<string, string>> {
  const out = await Deno.makeTempDir({ prefix: "dock-app-" });
  try {
    const result = await new Deno.Command(Deno.execPath(), {
      args: [
        "bundle",
        "--quiet",
        "--platform",
        "browser",
        "--minify",
        "--code-splitting",
        "--outdir",
        out,
        join(SRC, "main.tsx"),
        // The page's first script, on its own (it imports nothing): the board's first requests.
        join(SRC, "boot.ts"),
      ],
      cwd: ROOT,
    }).output();
    if (!result.success) throw new Error(`deno bundle failed: ${new TextDecoder().decode(result.stderr)}`);
    const files: Record<string, string> = {};
    for await (const entry of Deno.readDir(out)) {
      if (!entry.isFile || !entry.name.endsWith(".js")) continue;
      files[entry.name === "main.js" ? "app.js" : entry.name] = await Deno.readTextFile(
        join(out, entry.name),
      );
    }
    if (!files["app.js"]) throw new Error("deno bundle wrote no main.js");
    return files;
  } finally {
    await Deno.remove(out, { recursive: true }).catch(() => {});
  }
}

/** The chunks a script imports statically, and theirs, in the order found (dynamic imports left out). */
export function staticImports(scripts: Record<string, string>, entry: string): string[] {
  const found: string[] = [];
  const visit = (name: string) => {
    for (
      const match of (scripts[name] ?? "").matchAll(
        /\bimport\s*(?:[\w*{}\s,$]+from\s*)?["']\.\/([\w.-]+\.js)["']/g,
      )
    ) {
      if (found.includes(match[1]) || !(match[1] in scripts)) continue;
      found.push(match[1]);
      visit(match[1]);
    }
  };
  visit(entry);
  return found;
}

/**
 * `index.html` with a `modulepreload` for each chunk `app.js` imports: fetched with `app.js`, not after
 * it was parsed (with 200 sessions on 10 boxes the chunks came ~250 ms after the first paint, under load).
 */
export function withPreloads(html: string, chunks: string[]): string {
  const links = chunks.map((name) => `<link rel="modulepreload" href="${name}" />\n    `).join("");
  const script = '<script type="module" src="app.js"></script>';
  if (!html.includes(script)) throw new Error(`index.html has no ${script}`);
  return html.replace(script, links + script);
}

/** Generates the text of `app/assets.generated.ts`. */
export function renderModule(assets: Record<string, { type: string; body: string }>, hash: string): string {
  const entries = Object.entries(assets).map(([path, asset]) =>
    `  ${JSON.stringify(path)}: {\n    type: ${JSON.stringify(asset.type)},\n    body: ${
      JSON.stringify(asset.body)
    },\n  },`
  );
  return [
    "// Generated by app/build.ts from app/src; do not edit. Run: deno task app",
    "/**",
    " * The app's files (issue 14), bundled from `app/src` and embedded so the program serves them as they are.",
    " *",
    " * @module",
    " */",
    "",
    "/** SHA-256 of the sources this was built from (`app/assets_test.ts` compares it). */",
    `export const APP_SOURCE_HASH = ${JSON.stringify(hash)};`,
    "",
    "/** The files under `/app/`, by path: media type and text. */",
    "export const APP_ASSETS: Readonly<Record<string, { type: string; body: string }>> = {",
    ...entries,
    "};",
    "",
  ].join("\n");
}

async function main(): Promise<void> {
  const xterm = await Deno.readTextFile(join(ROOT, "node_modules/@xterm/xterm/css/xterm.css"));
  const scripts = await bundle();
  const assets: Record<string, { type: string; body: string }> = {
    "index.html": {
      type: "text/html; charset=utf-8",
      body: withPreloads(await Deno.readTextFile(join(SRC, "index.html")), staticImports(scripts, "app.js")),
    },
    ...Object.fromEntries(
      Object.keys(scripts).sort().map((
        name,
      ) => [name, { type: "text/javascript; charset=utf-8", body: scripts[name] }]),
    ),
    "app.css": {
      type: "text/css; charset=utf-8",
      body: `${xterm}\n${await Deno.readTextFile(join(SRC, "style.css"))}`,
    },
    // The service worker, as written (a worker is its own script, never part of the bundle).
    "sw.js": {
      type: "text/javascript; charset=utf-8",
      body: await Deno.readTextFile(join(SRC, "sw.js")),
    },
  };
  await Deno.writeTextFile(TARGET, renderModule(assets, await sourceHash()));
  // Formatted with the project's settings, so `deno fmt --check` passes on the generated file.
  const fmt = await new Deno.Command(Deno.execPath(), { args: ["fmt", "--quiet", TARGET] }).output();
  if (!fmt.success) throw new Error(`deno fmt failed: ${new TextDecoder().decode(fmt.stderr)}`);
  const sizes = Object.entries(assets).map(([name, a]) => `${name} ${(a.body.length / 1024).toFixed(0)} KB`);
  console.log(`wrote ${relative(ROOT, TARGET)}: ${sizes.join(", ")}`);
}

if (import.meta.main) await main();
