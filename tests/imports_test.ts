/**
 * The layout's rule, read from the import graph (../shared/DESIGN.md): the box (`daemon/`) and the laptop
 * (`agent/`) never import each other; what both need lives in `core/`; the public SDK (`client/`,
 * `mod.ts`) carries no server code; nothing imports `cli/`, and only `cli/` prints or exits. And the
 * seams of issue 35: no production file over 600 lines, time read only through a `Clock` (core/clock.ts;
 * ALLOWED_TIMER_SPOTS lists the few exceptions and why), logs written only through a `Log` (core/log.ts).
 * A failure names the file, the line and the import or code that breaks it.
 *
 * Tests (`*_test.ts`), `tests/` and `bench/` are outside the rule: they start both sides on purpose.
 */
import { assertEquals } from "./assert.ts";
import { dirname, join, relative, resolve } from "node:path";
import { fileURLToPath } from "node:url";

const ROOT = resolve(dirname(fileURLToPath(import.meta.url)), "..");

/** One import statement of a module. */
interface Edge {
  from: string;
  to: string;
  line: number;
  /** `import type` / `export type`. */
  typeOnly: boolean;
}

/** Top-level folders (or `mod.ts`) each production folder may import, besides itself. */
const ALLOWED: Record<string, string[]> = {
  "mod.ts": ["client"],
  client: [],
  core: ["client"],
  plugins: ["core", "client"],
  daemon: ["core", "plugins", "client", "skills", "app", "package"],
  agent: ["core", "plugins", "client", "app", "package"],
  // The front end: wire types and its npm libraries only (agent and daemon serve its generated bundle).
  app: ["client"],
  cli: ["client", "core", "daemon", "agent", "plugins", "skills", "mod.ts", "package"],
  skills: ["client"],
  // Builds the packages for boxes (build time, and `add ssh` / `upgrade` on the laptop).
  package: ["core", "client"],
};

function area(path: string): string {
  return path === "mod.ts" ? "mod.ts" : path.split("/")[0];
}

function isProduction(path: string): boolean {
  // Example plugins are plugin authors' code, written against the public face (`mod.ts`), not dock's own.
  if (path.startsWith("plugins/examples/")) return false;
  // The app's build script runs at build time, beside the sources it bundles.
  if (path === "app/build.ts") return false;
  return /\.tsx?$/.test(path) && !/_test\.tsx?$/.test(path) && area(path) in ALLOWED;
}

async function* walk(dir: string): AsyncGenerator<string> {
  for await (const entry of Deno.readDir(dir)) {
    if (entry.name.startsWith(".") || entry.name === "node_modules" || entry.name === "dist") continue;
    const path = join(dir, entry.name);
    if (entry.isDirectory) yield* walk(path);
    else if (entry.isFile && /\.tsx?$/.test(entry.name)) yield path;
  }
}

const IMPORT =
  /^\s*(import|export)\s+(type\s+)?(?:[^"';]*?\s+from\s+)?["'](\.{1,2}\/[^"']+)["']|import\(\s*["'](\.{1,2}\/[^"']+)["']\s*\)/gm;

/** Every relative import of every production module, with its line. */
async function importGraph(): Promise<{ files: Map<string, string>; edges: Edge[] }> {
  const files = new Map<string, string>();
  for await (const path of walk(ROOT)) {
    const rel = relative(ROOT, path);
    if (isProduction(rel)) files.set(rel, await Deno.readTextFile(path));
  }
  const edges: Edge[] = [];
  for (const [from, text] of files) {
    for (const match of text.matchAll(IMPORT)) {
      const spec = match[3] ?? match[4];
      const to = relative(ROOT, resolve(ROOT, dirname(from), spec));
      const line = text.slice(0, match.index).split("\n").length + (match[0].startsWith("\n") ? 1 : 0);
      edges.push({ from, to, line, typeOnly: Boolean(match[2]) });
    }
  }
  return { files, edges };
}

Deno.test("imports: daemon/ and agent/ never import each other; core/, client/ and mod.ts stay below them", async () => {
  const { edges } = await importGraph();
  const offending = edges
    .filter((edge) => area(edge.to) !== area(edge.from))
    .filter((edge) => !(ALLOWED[area(edge.from)] ?? []).includes(area(edge.to)))
    .map((edge) =>
      `${edge.from}:${edge.line} imports ${edge.to} (${area(edge.from)} may import only ${
        [area(edge.from), ...ALLOWED[area(edge.from)]].join(", ")
      })`
    );
  assertEquals(offending, []);
});

Deno.test("imports: the app's front end takes only types from client/ (its bundle carries no dock code)", async () => {
  const { edges } = await importGraph();
  const offending = edges.filter((edge) =>
    area(edge.from) === "app" && area(edge.to) === "client" && !edge.typeOnly
  )
    .map((edge) => `${edge.from}:${edge.line} imports ${edge.to} (use import type)`);
  assertEquals(offending, []);
});

Deno.test("imports: no module imports cli/ except cli/ itself", async () => {
  const { edges } = await importGraph();
  const offending = edges.filter((edge) => area(edge.to) === "cli" && area(edge.from) !== "cli")
    .map((edge) => `${edge.from}:${edge.line} imports ${edge.to}`);
  assertEquals(offending, []);
});

// Type imports count too: a cycle through types is a module that knows its composition root instead of
// the narrow interface it needs.
Deno.test("imports: no cycle among production modules", async () => {
  const { edges } = await importGraph();
  const next = new Map<string, Edge[]>();
  for (const edge of edges) {
    next.set(edge.from, [...next.get(edge.from) ?? [], edge]);
  }
  const cycles: string[] = [];
  const state = new Map<string, "open" | "done">();
  const stack: string[] = [];
  const visit = (file: string) => {
    state.set(file, "open");
    stack.push(file);
    for (const edge of next.get(file) ?? []) {
      if (state.get(edge.to) === "open") {
        cycles.push([...stack.slice(stack.indexOf(edge.to)), edge.to].join(" → "));
      } else if (!state.has(edge.to)) visit(edge.to);
    }
    stack.pop();
    state.set(file, "done");
  };
  for (const file of [...next.keys()].sort()) if (!state.has(file)) visit(file);
  assertEquals(cycles, []);
});

Deno.test("imports: only cli/ prints or exits", async () => {
  const { files } = await importGraph();
  const offending: string[] = [];
  for (const [file, text] of files) {
    if (area(file) === "cli" || file === "skills/embed.ts") continue; // embed.ts is a build script
    // The plugin-host process's entry: a program of its own (it exits when its parent goes away).
    if (file === "plugins/host_main.ts") continue;
    // A plugin worker's bootstrap takes its stdout away from it (into its log): it names Deno.stdout to.
    if (file === "plugins/worker_main.ts") continue;
    // The app's bundle runs in a browser; its libraries' console calls are the page's, not a process's.
    if (file === "app/assets.generated.ts") continue;
    text.split("\n").forEach((line, index) => {
      const code = line.replace(/^\s*(\*|\/\/).*$/, ""); // doc comments show examples
      if (/\bDeno\.exit\(|\bconsole\.log\(|\bDeno\.stdout\b/.test(code)) {
        offending.push(`${file}:${index + 1}: ${line.trim()}`);
      }
    });
  }
  assertEquals(offending, []);
});

Deno.test("imports: the graph reader sees the imports it is meant to police", async () => {
  // Guards against a reader that silently finds nothing (a changed regex would pass every rule).
  const { edges } = await importGraph();
  const box = edges.filter((edge) => edge.from === "daemon/box.ts").map((edge) => edge.to);
  assertEquals(box.includes("core/store.ts") && box.includes("daemon/schema.ts"), true);
  const typeOnly = edges.find((edge) => edge.from === "agent/hooks.ts" && edge.to === "core/events.ts");
  assertEquals(typeOnly?.typeOnly, true);
});

/** A production file with more lines than this owns too much (issue 35): split it by concern. */
const MAX_LINES = 600;

/**
 * Production files that may still read the system clock or start a timer: each one a guard on a socket
 * or a child, or a waiting loop with no sensible seam, with why. Everything else takes a `Clock`
 * (core/clock.ts) from its composition root. Add an entry with its reason; a stale entry fails the rule.
 */
const ALLOWED_TIMER_SPOTS: Record<string, string> = {
  // The public SDK imports nothing outside client/, so it cannot take core/clock.ts: its own abortable sleep.
  "client/timers.ts": "the SDK's one sleep (client/ imports nothing outside itself)",
  "client/box.ts": "AbortSignal.timeout guards one /v1/info probe on a socket",
  "client/session_calls.ts": "the exactly-once retry's backoff, on the SDK's own sleep",
  // The laptop agent's guards on a socket or a request (its modules that order or delay take a Clock).
  "agent/add_ssh.ts": "AbortSignal.timeout guards one TCP connect to the box's port (3 s)",
  "agent/box_http.ts":
    "one unref'd sweeper closes idle kept connections (a socket guard: a Clock cannot unref)",
  "agent/broadcast.ts": "AbortSignal.timeout guards its read of each box's sessions and its one send",
  "agent/networks.ts": "a timer guards one TCP connect to a peer (PROBE_MS)",
  "agent/packages.ts": "the mtime of a package end's tar members (a timestamp: nothing ordered or delayed)",
  "agent/pairing.ts": "timers guard the pairing's TLS handshake and its two requests to the box",
  // The browser app has no composition root to hand it a Clock: one module of it owns the time.
  "app/src/clock.ts": "the web app's clock: the one module of app/src that reads the time or starts a timer",
  // cli/ is the composition root of one-shot commands a person runs; their waits are on real processes.
  "cli/agent.ts": "waits for a just-started agent process to answer (a child's start, on the real clock)",
  "cli/hook.ts": "AbortSignal.timeout guards stdin and the POST; the report and spool name carry the time",
  "cli/pair.ts": "retries pairing until a person's deadline",
  "cli/plugin.ts": "`plugin logs --follow` re-reads the log every FOLLOW_MS",
  "cli/serve.ts": "a one-second guard on a startup probe",
  "daemon/procs.ts":
    "`pollUntil`: waits on real processes and the files they write (a kill's grace, a tunnel's URL), which give no event",
  "daemon/tools.ts":
    "a PATH folder's listing is kept only when its mtime is 2 s older than now: a file time against the real clock, nothing ordered or delayed (tests inject `now`)",
  "daemon/tmux_clients_worker.ts":
    "a 15 s guard on a tmux client started ahead (a child), and the turn of its loop before starting the next, on a worker thread that has no Clock to take",
  // core/ and the plugin host: guards on a socket or a child, turns of the event loop, file times.
  "core/deadlines.ts":
    "one unref'd interval checks every connection's header and idle deadline (socket guards; tests inject `now` and sweep by hand)",
  "core/files.ts":
    "a folder's mtime is trusted only once SETTLED_MS older than now: a file time against the real clock, nothing ordered or delayed",
  "core/listen.ts":
    "the accept loop's backoff after an accept error such as EMFILE (a guard on the listening socket)",
  "core/pump.ts":
    "polls a platform WebSocket's bufferedAmount while a writer waits for it to drain (the platform gives no drain event)",
  "core/runner.ts": "a child's timeoutMs kills its process group (a guard on a child)",
  "core/hook_exec.ts":
    "a batched hook's timeout kills its subshell (a guard on a child, as in core/runner.ts)",
  "core/sse.ts":
    "a keepalive comment keeps an idle stream open (a socket guard; a turn's batch ends with core/turn.ts, not a timer)",
  "core/tls_hop.ts": "waits HAND_OVER_MS for a TLS connection's inner pipe to be dialled (a socket guard)",
  "core/websocket.ts":
    "the closing handshake's wait (CLOSE_WAIT_MS) and readUntil's deadline, which tests and benchmarks use (socket guards)",
  "core/ws_client.ts":
    "the upgrade's and the TLS connect's deadlines, and a short wait for a refusal's body (socket guards)",
  "plugins/folder_check.ts":
    "a plugin folder's directory is stamped only when its mtime is 2 s older than now: a file time against the real clock",
};

/** Production files the size rule reads: every production module, the SDK's hand-written files, the app's build. */
function isSized(path: string): boolean {
  if (/_test\.tsx?$/.test(path) || /\.generated\.tsx?$/.test(path)) return false;
  if (path === "app/build.ts") return true;
  // sdk/wire.ts and sdk/generated.ts are written by cli/write_plugin_reference.ts.
  if (path.startsWith("sdk/")) {
    return /\.tsx?$/.test(path) && path !== "sdk/wire.ts" && path !== "sdk/generated.ts";
  }
  return isProduction(path);
}

/** Whether `text` (a file) was written by a generator (its first line says so). */
function isGenerated(text: string): boolean {
  return /^\/\/ Generated by .*do not edit/.test(text);
}

/** The code of a line: a line that is only a comment counts as empty, and so does a trailing `// …`. */
function codeOf(line: string): string {
  return line.replace(/^\s*(\*|\/\/|\/\*\*).*$/, "").replace(/\s\/\/\s.*$/, "");
}

/** Each line of the production files (not generated ones) whose code matches `pattern`, as `file:line: text`. */
function linesMatching(
  files: Map<string, string>,
  pattern: RegExp,
  skip: (file: string) => boolean,
): string[] {
  const found: string[] = [];
  for (const [file, text] of [...files].sort(([a], [b]) => a.localeCompare(b))) {
    if (skip(file) || isGenerated(text)) continue;
    text.split("\n").forEach((line, index) => {
      if (pattern.test(codeOf(line))) found.push(`${file}:${index + 1}: ${line.trim()}`);
    });
  }
  return found;
}

/** The public SDK's abortable sleep (client/ imports nothing outside itself, so it has its own). */
const SDK_SLEEP = "client/timers.ts";

const TIMER =
  /\bDate\.now\b|\b(setTimeout|setInterval|clearTimeout|clearInterval)\b|\bAbortSignal\.timeout\(/;
const CONSOLE = /\bconsole\.\w+\b/;

Deno.test(`imports: no production file is over ${MAX_LINES} lines (split it by concern)`, async () => {
  const offending: string[] = [];
  for await (const path of walk(ROOT)) {
    const rel = relative(ROOT, path);
    if (!isSized(rel)) continue;
    const text = await Deno.readTextFile(path);
    if (isGenerated(text)) continue;
    const lines = text.split("\n").length - (text.endsWith("\n") ? 1 : 0);
    if (lines > MAX_LINES) offending.push(`${rel}:${MAX_LINES + 1}: ${lines} lines (at most ${MAX_LINES})`);
  }
  assertEquals(offending.sort(), []);
});

Deno.test("imports: no Date.now() or timer outside core/clock.ts and ALLOWED_TIMER_SPOTS (take a Clock)", async () => {
  const { files, edges } = await importGraph();
  const allowed = (file: string) => file === "core/clock.ts" || file in ALLOWED_TIMER_SPOTS;
  // The SDK's own sleep is the real clock too: a module that waits with it is a timer spot like any other.
  const sleeps = edges.filter((edge) => edge.to === SDK_SLEEP && !edge.typeOnly && !allowed(edge.from))
    .map((edge) => `${edge.from}:${edge.line}: imports ${SDK_SLEEP} (use core/clock.ts sleep with a Clock)`);
  assertEquals([...linesMatching(files, TIMER, allowed), ...sleeps].sort(), []);
});

Deno.test("imports: every ALLOWED_TIMER_SPOTS entry is a production file that still uses a timer", async () => {
  const { files, edges } = await importGraph();
  const usesTimer = (file: string) =>
    linesMatching(new Map([[file, files.get(file)!]]), TIMER, () => false).length > 0 ||
    edges.some((edge) => edge.from === file && edge.to === SDK_SLEEP && !edge.typeOnly);
  const stale = Object.keys(ALLOWED_TIMER_SPOTS).filter((file) => !files.has(file) || !usesTimer(file));
  assertEquals(stale, []);
});

Deno.test("imports: no console.* outside cli/ and core/log.ts (take a Log)", async () => {
  const { files } = await importGraph();
  // skills/embed.ts is a build script (it reports what it wrote), like app/build.ts.
  const allowed = (file: string) =>
    area(file) === "cli" || file === "core/log.ts" || file === "skills/embed.ts";
  assertEquals(linesMatching(files, CONSOLE, allowed), []);
});

/**
 * Where stderr may stand in for a Log: the log module, the composition roots (dockd's box and the
 * agent, the CLI) and the event bus's default (its test callers, 16 files, have no log of their own).
 */
const STDERR_LOG_SPOTS = new Set(["core/log.ts", "daemon/box.ts", "agent/agent.ts", "core/events.ts"]);

Deno.test("imports: STDERR_LOG only at the composition roots (a library module is passed its Log)", async () => {
  const { files } = await importGraph();
  const allowed = (file: string) => area(file) === "cli" || STDERR_LOG_SPOTS.has(file);
  assertEquals(linesMatching(files, /\bSTDERR_LOG\b/, allowed), []);
});

Deno.test("imports: the line rules see what they police", () => {
  // Guards against a pattern that silently finds nothing (a changed regex would pass every rule).
  const sample = new Map([
    [
      "daemon/x.ts",
      "// Date.now() in a comment\nconst t = Date.now();\n  setTimeout(f, 1);\nconsole.error(e);\n" +
      " * setInterval in a doc comment\nconst now = options.now ?? Date.now;\nf(); // clearTimeout after code\n",
    ],
  ]);
  assertEquals(linesMatching(sample, TIMER, () => false), [
    "daemon/x.ts:2: const t = Date.now();",
    "daemon/x.ts:3: setTimeout(f, 1);",
    "daemon/x.ts:6: const now = options.now ?? Date.now;",
  ]);
  assertEquals(linesMatching(sample, CONSOLE, () => false), ["daemon/x.ts:4: console.error(e);"]);
  assertEquals(linesMatching(sample, TIMER, (file) => file === "daemon/x.ts"), []);
  assertEquals(isGenerated("// Generated by app/build.ts from app/src; do not edit.\n"), true);
  assertEquals(isSized("client/wire.ts") && isSized("sdk/mod.ts") && !isSized("sdk/wire.ts"), true);
  assertEquals(
    isSized("tests/harness.ts") || isSized("bench/main.ts") || isSized("core/clock_test.ts"),
    false,
  );
});
