/**
 * The person's own files, read one way: the box's `box.json`, `guard.json`, `env.json` and `hooks.json`,
 * a repository's `.dock/config.json`, a `kit.json`, and the laptop's app documents, task templates and
 * themes. Each is JSON with comments and trailing commas (JSONC), checked against a zod schema that
 * refuses unknown fields, and a missing file means what its caller says: nothing, or an empty object
 * whose defaults the schema fills in.
 *
 * People write these files by hand, so every problem comes in one shape: a {@linkcode ConfigError}
 * naming the file, the field path (`services[2].name`) and the offending value, e.g.
 * `/home/me/.dock/guard.json: memory_percent: must be a number above 0 and at most 100, got 120`, a
 * misspelt field with a "did you mean", and every problem listed rather than the first only. The same
 * check serves API bodies that carry a whole file (`PUT guard`, `PUT env`, `PUT hooks`), named `body`.
 *
 * @module
 */
import * as z from "zod";
import { createScanner, parse as parseJsonc, type ParseError, printParseErrorCode } from "jsonc-parser";
import { dirname } from "./posix_path.ts";
import { DockError, type ErrorStatus } from "../client/errors.ts";
import type { ConfigProblem } from "../client/wire.ts";
import { writeAtomic } from "./files.ts";

// ---------------------------------------------------------------------------------------------------
// The error

/** A problem with its position, for syntax errors. */
interface LocatedProblem extends ConfigProblem {
  line?: number;
  column?: number;
}

/** Options of {@linkcode ConfigError}. */
export interface ConfigErrorOptions {
  /** The error code, which says which kind of file it is. @default {"invalid_config"} */
  code?: string;
  /** 422 for a file on disk, 400 for a request body. @default {422} */
  status?: ErrorStatus;
  cause?: unknown;
}

/** A user file (or an API body carrying one) that does not parse or breaks a rule. */
export class ConfigError extends DockError {
  override name = "ConfigError";
  /** Every problem found, in document order; the message names the first. */
  readonly problems: ConfigProblem[];

  constructor(problems: ConfigProblem[], options: ConfigErrorOptions = {}) {
    const first: LocatedProblem = problems[0] ?? { file: "", field: "", message: "invalid config" };
    const more = problems.length > 1
      ? ` (and ${problems.length - 1} more problem${problems.length > 2 ? "s" : ""})`
      : "";
    const position = first.line !== undefined ? { line: first.line, column: first.column } : {};
    super(options.code ?? "invalid_config", describeProblem(first) + more, {
      status: options.status ?? 422,
      cause: options.cause,
      detail: { file: first.file, field: first.field, ...position, problems },
    });
    this.problems = problems;
  }
}

/** `file:line:column: message`, `file: field: message` or `file: message`. */
function describeProblem(problem: LocatedProblem): string {
  if (problem.line !== undefined) {
    return `${problem.file}:${problem.line}:${problem.column}: ${problem.message}`;
  }
  return problem.field
    ? `${problem.file}: ${problem.field}: ${problem.message}`
    : `${problem.file}: ${problem.message}`;
}

// ---------------------------------------------------------------------------------------------------
// Reading, checking, writing

/**
 * Values a reader would rather lose one at a time than the whole file for: a NUL or an unpaired
 * surrogate at a path `where` accepts (one variable of an `env`) drops that entry, the rest of the file
 * applies, and `report` hears the problems (each naming the file and the field). Anything else wrong
 * still throws.
 */
export interface DropPoisoned {
  where: (path: readonly PropertyKey[]) => boolean;
  report: (problems: ConfigProblem[]) => void;
}

/** Options of {@linkcode readUserFile}. */
export interface ReadUserFileOptions {
  /**
   * What a missing file reads as: `"absent"` gives `undefined`; `"default"` reads it as `{}`, so the
   * schema's defaults apply (a missing file and an empty object mean the same).
   */
  missing: "absent" | "default";
  /** The error code of a {@linkcode ConfigError}. @default {"invalid_config"} */
  code?: string;
  /** Poisoned values dropped rather than refusing the file. @default {none: every problem throws} */
  drop?: DropPoisoned;
}

/** Reads, parses (JSONC) and checks a user file; throws {@linkcode ConfigError} naming file and field. */
export async function readUserFile<S extends z.ZodType>(
  path: string,
  schema: S,
  options: ReadUserFileOptions & { missing: "default" },
): Promise<z.output<S>>;
export async function readUserFile<S extends z.ZodType>(
  path: string,
  schema: S,
  options: ReadUserFileOptions,
): Promise<z.output<S> | undefined>;
export async function readUserFile<S extends z.ZodType>(
  path: string,
  schema: S,
  options: ReadUserFileOptions,
): Promise<z.output<S> | undefined> {
  let bytes: Uint8Array;
  try {
    bytes = await Deno.readFile(path);
  } catch (cause) {
    return missingOrThrow(cause, path, schema, options);
  }
  return parseUserFile(decodeText(bytes, path, options.code), path, schema, options);
}

/**
 * {@linkcode readUserFile} for the few readers that must not await: the daemon's start-up settings and
 * the hooks file checked on the gate path (a stat and, when changed, a read of a file of a few KB).
 */
export function readUserFileSync<S extends z.ZodType>(
  path: string,
  schema: S,
  options: ReadUserFileOptions & { missing: "default" },
): z.output<S>;
export function readUserFileSync<S extends z.ZodType>(
  path: string,
  schema: S,
  options: ReadUserFileOptions,
): z.output<S> | undefined;
export function readUserFileSync<S extends z.ZodType>(
  path: string,
  schema: S,
  options: ReadUserFileOptions,
): z.output<S> | undefined {
  let bytes: Uint8Array;
  try {
    bytes = Deno.readFileSync(path);
  } catch (cause) {
    return missingOrThrow(cause, path, schema, options);
  }
  return parseUserFile(decodeText(bytes, path, options.code), path, schema, options);
}

const strictUtf8 = new TextDecoder("utf-8", { fatal: true });

/**
 * A file's bytes as text, refusing what is not UTF-8: decoded loosely, a stray byte became U+FFFD in a
 * value that then went on to a process or a file name, silently changed.
 */
function decodeText(bytes: Uint8Array, file: string, code?: string): string {
  try {
    return strictUtf8.decode(bytes);
  } catch (cause) {
    // Where: the first replacement character of a loose decoding (a real U+FFFD before it would
    // misplace it by that much; the message still says what is wrong).
    const loose = new TextDecoder().decode(bytes);
    const at = Math.max(0, loose.indexOf("\uFFFD"));
    const problem: LocatedProblem = { file, field: "", message: "is not UTF-8 text", ...position(loose, at) };
    throw new ConfigError([problem], { code, cause });
  }
}

function missingOrThrow<S extends z.ZodType>(
  cause: unknown,
  path: string,
  schema: S,
  options: ReadUserFileOptions,
): z.output<S> | undefined {
  if (!(cause instanceof Deno.errors.NotFound)) {
    const message = `cannot be read: ${(cause as Error).message}`;
    throw new ConfigError([{ file: path, field: "", message }], { code: options.code, cause });
  }
  return options.missing === "absent" ? undefined : validateUserFile({}, path, schema, options);
}

/** Parses the text of a user file (JSONC) named `file` and checks it; throws {@linkcode ConfigError}. */
export function parseUserFile<S extends z.ZodType>(
  text: string,
  file: string,
  schema: S,
  options: { code?: string; drop?: DropPoisoned } = {},
): z.output<S> {
  return validateUserFile(parseText(text, file, options.code), file, schema, options);
}

/** A problem of a value against a schema: the field path (`services[2].name`, empty for the whole) and what is wrong. */
export interface SchemaProblem {
  field: string;
  message: string;
}

/**
 * Validates `value` against `schema`: its data, or every problem in document order, each naming its
 * field and the offending value, an unknown field with the closest known one ("did you mean"). User
 * files and API bodies (`core/http.ts` `body()`) report their problems through this one function.
 */
export function checkSchema<T>(
  schema: z.ZodType<T>,
  value: unknown,
): { ok: true; data: T } | { ok: false; problems: SchemaProblem[] } {
  const result = schema.safeParse(value, { error: houseMessage });
  if (result.success) return { ok: true, data: result.data };
  const problems = result.error.issues
    .flatMap((issue) => issueProblems(issue, value, schema))
    .sort((a, b) => compareInDocument(value, a.path, b.path));
  return { ok: false, problems: problems.map(({ path, message }) => ({ field: fieldPath(path), message })) };
}

/**
 * Checks an already-parsed value against a user file's schema: a file's content, or an API body
 * carrying a whole file (`file` is then `body` and `status` 400). Throws {@linkcode ConfigError}
 * listing every problem, in the order of the document.
 */
export function validateUserFile<S extends z.ZodType>(
  value: unknown,
  file: string,
  schema: S,
  options: { code?: string; status?: ErrorStatus; drop?: DropPoisoned } = {},
): z.output<S> {
  const poisoned = poisonedStrings(value);
  const dropped = options.drop ? poisoned.filter((problem) => options.drop!.where(problem.path)) : [];
  const kept = poisoned.filter((problem) => !dropped.includes(problem));
  if (dropped.length) value = without(value, dropped.map((problem) => problem.path));
  const checked = checkSchema(schema as z.ZodType<z.output<S>>, value);
  const asFile = (problems: PathProblem[]) =>
    problems.map(({ path, message }) => ({ file, field: fieldPath(path), message }));
  const problems = [
    ...(checked.ok ? [] : checked.problems.map((problem) => ({ file, ...problem }))),
    ...asFile(kept),
  ];
  if (problems.length || !checked.ok) {
    throw new ConfigError([...problems, ...asFile(dropped)], { code: options.code, status: options.status });
  }
  if (dropped.length) options.drop!.report(asFile(dropped));
  return checked.data;
}

/** Why a string may not go on to a process, a file name or git, or undefined. */
function poisonIn(text: string): string | undefined {
  if (text.includes("\0")) {
    return "must not contain a NUL, which no process environment, argument or file name can hold";
  }
  if (!text.isWellFormed()) return "must not contain an unpaired surrogate (it is not Unicode text)";
  return undefined;
}

/**
 * Every key and string of a user file holding a NUL or an unpaired surrogate (`"\u0000"`, `"\ud800"` in
 * its JSON): a NUL in an `env` value made every spawn in that worktree fail ("nul byte found in
 * provided data", a 500 on each exec). Files on disk never pass the API's body check, so they get it here.
 */
function poisonedStrings(value: unknown, path: PropertyKey[] = []): PathProblem[] {
  if (typeof value === "string") {
    const message = poisonIn(value);
    return message ? [{ path, message }] : [];
  }
  if (Array.isArray(value)) return value.flatMap((item, index) => poisonedStrings(item, [...path, index]));
  if (!isRecord(value)) return [];
  return Object.entries(value).flatMap(([key, item]) => {
    const message = poisonIn(key);
    return message ? [{ path: [...path, key], message }] : poisonedStrings(item, [...path, key]);
  });
}

/** A copy of `value` without the entries at `paths` (keys of objects; items of arrays are kept). */
function without(value: unknown, paths: readonly PropertyKey[][]): unknown {
  const copy = structuredClone(value);
  for (const path of paths) {
    const parent = valueAt(copy, path.slice(0, -1));
    if (isRecord(parent)) delete parent[String(path[path.length - 1])];
  }
  return copy;
}

/** Options of {@linkcode writeUserFile}. */
export interface WriteUserFileOptions {
  /** The file's mode. @default {0o600} */
  mode?: number;
  /** The mode of folders created for it. @default {0o777, less the umask} */
  dirMode?: number;
}

/** Writes a user file as pretty JSON, atomically, creating its folder if needed. */
export async function writeUserFile(
  path: string,
  value: unknown,
  options: WriteUserFileOptions = {},
): Promise<void> {
  await Deno.mkdir(dirname(path), { recursive: true, mode: options.dirMode });
  await writeAtomic(path, JSON.stringify(value, null, 2) + "\n", options.mode ?? 0o600);
}

// ---------------------------------------------------------------------------------------------------
// Turning zod issues into problems

const TYPE_WORDS: Record<string, string> = {
  string: "a string",
  number: "a number",
  int: "a whole number",
  boolean: "true or false",
  object: "an object",
  array: "an array",
  tuple: "an array",
  record: "an object",
};

/**
 * The house wording of the issues a schema leaves unworded ("must be a number", "must be one of a, b");
 * a schema's own message (`z.number({ error })`, `.max(100, "…")`) takes precedence over it.
 */
function houseMessage(issue: z.core.$ZodRawIssue): string | undefined {
  if (issue.code === "invalid_type") return `must be ${TYPE_WORDS[issue.expected] ?? issue.expected}`;
  if (issue.code === "invalid_value") return `must be one of ${issue.values.map(String).join(", ")}`;
  return undefined;
}

/** Formats a path as `services[2].name`, `env.FOO` or `files["bin/setup.sh"]`. */
export function fieldPath(path: readonly PropertyKey[]): string {
  let out = "";
  for (const key of path) {
    if (typeof key === "number") out += `[${key}]`;
    else if (/^[A-Za-z0-9_$-]+$/.test(String(key))) out += out ? `.${String(key)}` : String(key);
    else out += `[${JSON.stringify(String(key))}]`;
  }
  return out;
}

function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}

/** The value at `path` in `root`, or undefined. */
function valueAt(root: unknown, path: readonly PropertyKey[]): unknown {
  let node = root;
  for (const key of path) {
    if (typeof node !== "object" || node === null) return undefined;
    node = (node as Record<PropertyKey, unknown>)[key];
  }
  return node;
}

/** A value quoted for a message, cut short when long. */
function quote(value: unknown): string {
  const limit = 60;
  if (typeof value === "string") {
    return JSON.stringify(value.length > limit ? `${value.slice(0, limit - 1)}…` : value);
  }
  let out: string;
  try {
    out = JSON.stringify(value) ?? String(value);
  } catch {
    out = String(value);
  }
  return out.length > limit ? `${out.slice(0, limit - 1)}…` : out;
}

/** The schema reached by following `path` from `schema`, through wrappers, arrays and records. */
function schemaAt(schema: z.ZodType, path: readonly PropertyKey[]): z.ZodType | undefined {
  let node: z.ZodType | undefined = schema;
  for (let i = 0; i <= path.length && node; i++) {
    node = unwrap(node);
    if (i === path.length) break;
    const key = path[i];
    if (node instanceof z.ZodObject) node = (node.shape as Record<string, z.ZodType>)[String(key)];
    else if (node instanceof z.ZodArray) node = node.element as z.ZodType;
    else if (node instanceof z.ZodRecord) node = node.valueType as z.ZodType;
    else if (node instanceof z.ZodTuple && typeof key === "number") node = node.def.items[key] as z.ZodType;
    else return undefined;
  }
  return node;
}

/** The schema inside optionals, nullables, defaults and pipes (a transform's input side). */
function unwrap(schema: z.ZodType): z.ZodType {
  let node = schema;
  for (;;) {
    if (node instanceof z.ZodOptional || node instanceof z.ZodNullable || node instanceof z.ZodDefault) {
      node = node.def.innerType as z.ZodType;
    } else if (node instanceof z.ZodPipe) node = node.def.in as z.ZodType;
    else return node;
  }
}

/** Edit distance with a swap of two neighbours counting as one edit, for "did you mean". */
function distance(a: string, b: string): number {
  const rows: number[][] = [Array.from({ length: b.length + 1 }, (_, j) => j)];
  for (let i = 1; i <= a.length; i++) {
    const row = [i];
    for (let j = 1; j <= b.length; j++) {
      row[j] = Math.min(
        rows[i - 1][j] + 1,
        row[j - 1] + 1,
        rows[i - 1][j - 1] + (a[i - 1] === b[j - 1] ? 0 : 1),
      );
      if (i > 1 && j > 1 && a[i - 1] === b[j - 2] && a[i - 2] === b[j - 1]) {
        row[j] = Math.min(row[j], rows[i - 2][j - 2] + 1);
      }
    }
    rows.push(row);
  }
  return rows[a.length][b.length];
}

/** The message for an unknown key: a close known name, or the list of known ones. */
function unknownFieldMessage(key: string, known: string[]): string {
  const candidates = known.filter((name) => name !== "$schema");
  const best = candidates
    .map((name) => ({ name, d: distance(key.toLowerCase(), name.toLowerCase()) }))
    .sort((a, b) => a.d - b.d)[0];
  if (best && best.d <= Math.max(1, Math.floor(best.name.length / 3))) {
    return `unknown field (did you mean "${best.name}"?)`;
  }
  return `unknown field; known fields: ${candidates.join(", ")}`;
}

/** A problem before it is given its file, with its path for ordering. */
interface PathProblem {
  path: PropertyKey[];
  message: string;
}

/** One problem per zod issue (one per key for unknown keys). */
function issueProblems(issue: z.core.$ZodIssue, input: unknown, schema: z.ZodType): PathProblem[] {
  const path = [...issue.path];
  const value = valueAt(input, path);
  const withValue = (message: string, shown: unknown = value) => `${message}, got ${quote(shown)}`;
  switch (issue.code) {
    case "invalid_union": {
      // Report the option that was meant: the one whose fields, as sent, hold the right kind of value
      // (an agent report with a misspelt or missing field is still a report, not a plain event with a
      // wrong type), then the one with the fewest problems.
      const union = schemaAt(schema, path);
      const options = union instanceof z.ZodUnion ? union.options as z.ZodType[] : [];
      const inner = valueAt(input, path);
      const wrongValues = (issues: z.core.$ZodIssue[]) =>
        issues.filter((inside) =>
          inside.code !== "unrecognized_keys" && inside.path.length === 1 &&
          valueAt(inner, inside.path) !== undefined
        ).length;
      const ranked = issue.errors
        .map((issues, index) => ({ issues, option: options[index], rank: wrongValues(issues) }))
        .filter((candidate) => candidate.option && candidate.issues.length)
        .sort((a, b) => a.rank - b.rank || a.issues.length - b.issues.length);
      if (!ranked.length) return [{ path, message: issue.message }];
      const { issues, option } = ranked[0];
      return issues
        .flatMap((inside) => issueProblems(inside, inner, option))
        .map((problem) => ({ path: [...path, ...problem.path], message: problem.message }));
    }
    case "unrecognized_keys": {
      // Under a union the field may belong to any of its objects: all their fields are candidates.
      const parent = schemaAt(schema, path);
      const objects = parent instanceof z.ZodUnion ? parent.options as z.ZodType[] : [parent];
      const known = [
        ...new Set(objects.flatMap((node) => node instanceof z.ZodObject ? Object.keys(node.shape) : [])),
      ];
      return issue.keys.map((key) => ({ path: [...path, key], message: unknownFieldMessage(key, known) }));
    }
    case "invalid_key": {
      const inner = issue.issues[0]?.message ?? "invalid key";
      return [{ path, message: withValue(inner, path[path.length - 1]) }];
    }
    case "invalid_type":
    case "invalid_value":
      return [{ path, message: value === undefined ? "required" : withValue(issue.message) }];
    case "custom": {
      if (typeof issue.params?.duplicateOf === "number") {
        const first = [...path];
        first[first.length - 2] = issue.params.duplicateOf;
        return [{ path, message: `${quote(value)} is already used by ${fieldPath(first)}` }];
      }
      const message = value === undefined || issue.params?.noValue ? issue.message : withValue(issue.message);
      return [{ path, message }];
    }
    default:
      return [{ path, message: value === undefined ? issue.message : withValue(issue.message) }];
  }
}

/** Orders paths as their fields appear in the document; fields absent from it go last. */
function compareInDocument(input: unknown, a: readonly PropertyKey[], b: readonly PropertyKey[]): number {
  let node = input;
  for (let i = 0; i < Math.min(a.length, b.length); i++) {
    if (a[i] === b[i]) {
      node = valueAt(node, [a[i]]);
      continue;
    }
    if (typeof a[i] === "number" && typeof b[i] === "number") return (a[i] as number) - (b[i] as number);
    const keys = isRecord(node) ? Object.keys(node) : [];
    const rank = (key: PropertyKey) => {
      const index = keys.indexOf(String(key));
      return index === -1 ? Infinity : index;
    };
    const diff = rank(a[i]) - rank(b[i]);
    return Number.isNaN(diff) ? 0 : diff;
  }
  return a.length - b.length;
}

// ---------------------------------------------------------------------------------------------------
// JSONC

const SYNTAX_WORDS: Record<string, string> = {
  InvalidSymbol: "unexpected symbol (names and strings need double quotes)",
  InvalidNumberFormat: "invalid number",
  PropertyNameExpected: "expected a property name in double quotes",
  ValueExpected: "expected a value",
  ColonExpected: "expected ':'",
  CommaExpected: "expected ',' or a closing bracket",
  CloseBraceExpected: "expected '}'",
  CloseBracketExpected: "expected ']'",
  EndOfFileExpected: "expected the end of the file",
  InvalidCommentToken: "invalid comment",
  UnexpectedEndOfComment: "expected the end of the comment (*/)",
  UnexpectedEndOfString: 'expected the end of the string (")',
  UnexpectedEndOfNumber: "expected the rest of the number",
  InvalidUnicode: "invalid unicode escape",
  InvalidEscapeCharacter: "invalid escape character",
  InvalidCharacter: "invalid character in a string",
};

/** 1-based line and column of `offset` in `text`. */
function position(text: string, offset: number): { line: number; column: number } {
  const before = text.slice(0, offset);
  const line = before.split("\n").length;
  return { line, column: offset - (before.lastIndexOf("\n") + 1) + 1 };
}

/** How deep a user file may nest arrays and objects: as a request body may (`core/http.ts` `MAX_DEPTH`). */
const MAX_FILE_DEPTH = 64;

// jsonc-parser's `SyntaxKind` values (a const enum, which isolated modules cannot read).
const OPEN_BRACE = 1;
const CLOSE_BRACE = 2;
const OPEN_BRACKET = 3;
const CLOSE_BRACKET = 4;
const EOF = 17;

/**
 * Refuses a file nested deeper than {@linkcode MAX_FILE_DEPTH}, before parsing it: the parser recurses,
 * and an `env.json` of 10,000 `[` ended it with "Maximum call stack size exceeded", a 500 on every exec.
 * The scanner reads tokens one after another (strings and comments skipped), never recursing.
 */
function checkFileDepth(text: string, file: string, code?: string): void {
  const scanner = createScanner(text, true);
  let depth = 0;
  for (let token = scanner.scan(); token !== EOF; token = scanner.scan()) {
    if (token === OPEN_BRACE || token === OPEN_BRACKET) {
      if (++depth <= MAX_FILE_DEPTH) continue;
      const problem: LocatedProblem = {
        file,
        field: "",
        message: `nests deeper than ${MAX_FILE_DEPTH} levels`,
        ...position(text, scanner.getTokenOffset()),
      };
      throw new ConfigError([problem], { code });
    } else if (token === CLOSE_BRACE || token === CLOSE_BRACKET) depth--;
  }
}

/** Parses JSON with comments and trailing commas; a syntax error names the line, column and what was expected. */
function parseText(text: string, file: string, code?: string): unknown {
  checkFileDepth(text, file, code);
  const errors: ParseError[] = [];
  const value = parseJsonc(text, errors, { allowTrailingComma: true, disallowComments: false });
  if (!errors.length) return value;
  // Only the first error is reported: the parser recovers poorly, so later ones are mostly echoes of it
  // (at the end of a cut-off file a name, a value and a brace are all "missing").
  const [error] = errors;
  const name = printParseErrorCode(error.error);
  const token = text.slice(error.offset, error.offset + Math.min(Math.max(error.length, 1), 40));
  const found = error.offset >= text.length
    ? "the end of the file"
    : token.startsWith('"')
    ? token
    : `'${token}'`;
  const problem: LocatedProblem = {
    file,
    field: "",
    message: `${SYNTAX_WORDS[name] ?? name}, found ${found}`,
    ...position(text, error.offset),
  };
  throw new ConfigError([problem], { code });
}
