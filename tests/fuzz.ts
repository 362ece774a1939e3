/**
 * The seeded fuzz that walks API routes (issue 11: never a 5xx for bad input): a replayable generator,
 * hostile values, request bodies made by mutating a valid one (types, NUL, huge, deep, unknown keys,
 * broken JSON), hostile path segments and query values, and the box's body routes with a valid body
 * each (fuzzed on the box's socket in `errors_test.ts`, and through the laptop's relay in
 * `laptop_fuzz_test.ts`).
 *
 * @module
 */

/** A small seeded generator (mulberry32), so a failure can be replayed. */
export function random(seed: number): () => number {
  return () => {
    seed |= 0;
    seed = (seed + 0x6d2b79f5) | 0;
    let t = Math.imul(seed ^ (seed >>> 15), 1 | seed);
    t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t;
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

/** One hostile JSON value: scalars of every type, odd and huge strings, small nested arrays and objects. */
export function fuzzValue(next: () => number, depth = 0): unknown {
  const pick = Math.floor(next() * (depth > 2 ? 7 : 9));
  const strings = [
    "",
    "x",
    "../../etc",
    "a/b",
    ".",
    "~",
    "/",
    "\u0000",
    "é🙂",
    "x".repeat(5000),
    "-1",
    "true",
    "null",
  ];
  switch (pick) {
    case 0:
      return null;
    case 1:
      return next() < 0.5;
    case 2:
      return [0, -1, 1.5, 1e308, -0, 2 ** 53, NaN][Math.floor(next() * 7)];
    case 3:
    case 4:
      return strings[Math.floor(next() * strings.length)];
    case 5:
      return Math.floor(next() * 100000);
    case 6:
      return {};
    case 7:
      return Array.from({ length: Math.floor(next() * 4) }, () => fuzzValue(next, depth + 1));
    default:
      return Object.fromEntries(
        Array.from({ length: Math.floor(next() * 4) }, (_, i) => [`k${i}`, fuzzValue(next, depth + 1)]),
      );
  }
}

/** Options of {@linkcode fuzzBody}. */
export interface FuzzBodyOptions {
  /** Fields only ever replaced by non-strings, so no fuzzed text runs as a command. */
  noStrings?: string[];
  /** Names the unknown field a mutated body may carry. */
  round: number;
}

/**
 * A request body made from `valid`: sometimes any value, broken JSON or JSON nested up to 10,000 deep
 * under a valid key, mostly `valid` with some fields replaced by hostile values and an unknown field.
 */
export function fuzzBody(
  next: () => number,
  valid: Record<string, unknown>,
  options: FuzzBodyOptions,
): string {
  const shape = next();
  if (shape < 0.15) return JSON.stringify(fuzzValue(next));
  if (shape < 0.25) return ["{", "[1,", "nul", '{"a":}', "\u0000", ""][Math.floor(next() * 6)];
  if (shape < 0.3) {
    // Deep nesting under a valid key (10,000 levels once gave a 500).
    const key = Object.keys(valid)[0] ?? "k";
    const depth = [70, 1000, 10_000][Math.floor(next() * 3)];
    return `{"${key}":${"[".repeat(depth)}${"]".repeat(depth)}}`;
  }
  const mutated: Record<string, unknown> = structuredClone(valid);
  for (const key of Object.keys(mutated)) {
    if (next() < 0.5) continue;
    let value = fuzzValue(next);
    while (options.noStrings?.includes(key) && typeof value === "string") value = fuzzValue(next);
    mutated[key] = value;
  }
  if (next() < 0.2) mutated[`extra${options.round}`] = fuzzValue(next);
  return JSON.stringify(mutated);
}

/**
 * One hostile path segment or query value, as it goes into a URL: empty, dot segments (plain and
 * percent-encoded), an encoded NUL, slash and invalid UTF-8, a lone `%`, 5,000 characters, text that
 * is not ASCII, numbers out of range.
 */
export function fuzzSegment(next: () => number): string {
  const segments = [
    "",
    "x",
    "..",
    "%2e%2e",
    "%00",
    "a%00b",
    "a%2Fb",
    "%ff%fe",
    "%",
    "%zz",
    "x".repeat(5000),
    encodeURIComponent("é🙂"),
    "-1",
    "1e308",
    "99999999999999999999",
    "1.5",
    "true",
    "null",
    "%ed%a0%80", // a lone surrogate, as UTF-8 would carry it
  ];
  return segments[Math.floor(next() * segments.length)];
}

/** A box route with a body, and a valid body to mutate. */
export interface BodyRoute {
  method: string;
  path: string;
  valid: Record<string, unknown>;
  /** Fields only ever replaced by non-strings, so no fuzzed text runs. */
  noStrings?: string[];
}

/**
 * The box's routes that take a body, each with a valid body, for a box with location `app` (at `repo`)
 * and its worktree `w`. `safePath` is a folder the box may make. Commands are only ever replaced by
 * non-strings, so no fuzzed text runs.
 */
export function boxBodyRoutes(options: { repo: string; safePath: string }): BodyRoute[] {
  const { repo, safePath } = options;
  return [
    { method: "POST", path: "/v1/locations", valid: { name: "fz", path: repo } },
    { method: "POST", path: "/v1/locations/new", valid: { name: "fz", path: safePath } },
    { method: "POST", path: "/v1/locations/app/worktrees", valid: { name: "fz", branch: "b", base: "main" } },
    {
      method: "PUT",
      path: "/v1/locations/app/scripts",
      valid: { setup: "true", archive: "true" },
      noStrings: ["setup", "archive"],
    },
    { method: "PUT", path: "/v1/locations/app/config", valid: { local: { ports: 2, env: { A: "b" } } } },
    {
      method: "PUT",
      path: "/v1/locations/app/kit",
      valid: {
        id: "fz-kit",
        version: "1.0.0",
        config: { env: { K: "v" } },
        files: { "bin/run.sh": "#!/bin/sh\ntrue\n", "notes/a.md": "x" },
      },
    },
    {
      // File names past what a file system takes (255 bytes a name, 4,096 a path): once a 500.
      method: "PUT",
      path: "/v1/locations/app/kit",
      valid: {
        id: "fz-long",
        files: {
          ["a".repeat(256)]: "x",
          [`${"d".repeat(200)}/`.repeat(25) + "f"]: "y",
          [`bin/${"é".repeat(128)}`]: "z",
        },
      },
    },
    {
      method: "POST",
      path: "/v1/exec",
      valid: { location: "app", command: "true", timeout: "5s" },
      noStrings: ["command"],
    },
    { method: "POST", path: "/v1/events", valid: { type: "fuzz.event", data: { a: 1 } } },
    {
      method: "POST",
      path: "/v1/preview",
      valid: { location: "app", worktree: "w", port: 3000, path: "/x" },
    },
    { method: "PUT", path: "/v1/env", valid: { env: { A: "b" } } },
    { method: "POST", path: "/v1/secrets/test", valid: { ref: "env://HOME" } },
    { method: "POST", path: "/v1/locations/app/worktrees/w/sync", valid: { mode: "rebase" } },
    { method: "PUT", path: "/v1/guard", valid: { enabled: false, memory_percent: 90, sustain: "30s" } },
    {
      method: "PUT",
      path: "/v1/hooks",
      valid: { hooks: [{ on: "fuzz.event", run: "true" }] },
      noStrings: ["hooks"],
    },
    {
      method: "PUT",
      path: "/v1/flows",
      valid: {
        flows: [{
          id: "fz",
          name: "fz",
          trigger: { event: "fuzz.flow" },
          steps: [{ kind: "notify", title: "x" }],
        }],
      },
      noStrings: ["flows"],
    },
    { method: "POST", path: "/v1/flows/none/test", valid: { scope: "repo:app", data: { path: "x" } } },
    {
      method: "POST",
      path: "/v1/skills/install",
      valid: { skills: ["dock"], agent: "claude", target: "user" },
    },
    {
      method: "POST",
      path: "/v1/sessions",
      valid: { location: "app/w", command: "true", name: "fz" },
      noStrings: ["command"],
    },
    { method: "POST", path: "/v1/sessions/none/send", valid: { text: "x", enter: false } },
    {
      method: "POST",
      path: "/v1/tasks",
      valid: { location: "app", name: "fzt", command: "true" },
      noStrings: ["command"],
    },
  ];
}

/** Whether an answer is a JSON error `{"error":{"code","message"}}`. */
export function isErrorBody(body: unknown): boolean {
  const error = (body as { error?: { code?: unknown; message?: unknown } } | null)?.error;
  return typeof error?.code === "string" && typeof error?.message === "string";
}

/**
 * Appends a fuzz run's count to the file `DOCK_FUZZ_REPORT` names, when it names one (the bench's fuzz
 * section runs these tests and prints the counts): `requests` sent, `errors5xx` answered 5xx or worse.
 */
export async function reportFuzz(name: string, requests: number, errors5xx: number): Promise<void> {
  const file = Deno.env.get("DOCK_FUZZ_REPORT");
  if (!file) return;
  await Deno.writeTextFile(file, JSON.stringify({ name, requests, errors5xx }) + "\n", { append: true });
}

/** Pieces of a path trick that refuse a segment wherever they stand in it (escapes of separators etc.). */
const INNER_TRICKS = [
  "%2f",
  "%2F",
  "%5c",
  "%5C",
  "\\",
  "%00",
  "%0a",
  "%0d",
  "%09",
  "%7f",
  "%252e",
  "%252f",
  "%c0%ae",
  "%c0%af",
  "%e0%80%ae",
  "%3f",
  "%3F",
  "%23",
  "%",
  "%zz",
  "%ed%a0%80",
  "%c2%85",
];
/** Segments that are a trick only as a whole segment: the dots, plain and encoded. */
const DOT_TRICKS = ["..", ".", "%2e%2e", "%2E%2e", ".%2e", "%2e.", "%2e", "%252e%252e"];
const PLAIN_SEGMENTS = ["ui", "panel.html", "info", "v1", "sessions", "fn", "x", "a%20b"];

/**
 * A forwarded path (no leading `/`) of 1–5 segments holding at least one trick: an encoded or raw
 * separator, a dot segment (encoded or not), a second encoding, NUL or a control character, a smuggled
 * `?`/`#`, overlong or invalid UTF-8, or an empty segment (`//`). No forwarding route may serve it.
 */
export function fuzzPathTrick(next: () => number): string {
  const pick = <T>(list: readonly T[]): T => list[Math.floor(next() * list.length)];
  const count = 1 + Math.floor(next() * 5);
  const trickAt = Math.floor(next() * count);
  const segments: string[] = [];
  for (let i = 0; i < count; i++) {
    if (i !== trickAt && next() < 0.6) {
      segments.push(pick(PLAIN_SEGMENTS));
      continue;
    }
    const kind = next();
    if (kind < 0.4) segments.push(pick(DOT_TRICKS));
    else if (kind < 0.9 || i === count - 1) {
      segments.push(pick(PLAIN_SEGMENTS) + pick(INNER_TRICKS) + pick(["", "x"]));
    } else segments.push(""); // `//` inside the path
  }
  return segments.join("/");
}
