/**
 * Edits of an agent tool's own JSON settings file (Claude Code's `settings.json`, Cursor's
 * `hooks.json`). These files belong to the person, so every edit goes through jsonc-parser's `modify`,
 * which rewrites only the spans it changes: comments, key order and indentation survive. A file that
 * is not strict JSON (the tools parse them as JSON) is refused and left byte-identical, and the
 * previous contents of a file we change are kept in `<file>.dock-backup`.
 *
 * @module
 */
import {
  applyEdits,
  type FormattingOptions,
  modify,
  parse,
  type ParseError,
  printParseErrorCode,
} from "jsonc-parser";
import { dirname } from "../core/posix_path.ts";
import { DockError } from "../client/errors.ts";
import type { FileChange } from "../client/wire.ts";
import { readTextOrNull, writeAtomic } from "../core/files.ts";

/** A settings file as read: what edits start from and what a save compares against. */
export interface JsonFile {
  path: string;
  /** The file's text, or what a new file starts from. */
  text: string;
  /** The bytes as read; null when the file did not exist. */
  original: string | null;
}

/** Reads a settings file that must be a strict JSON object; missing (or blank) starts from `{}`. */
export async function readJsonObject(path: string): Promise<JsonFile> {
  const original = await readTextOrNull(path);
  if (original === null || original.trim() === "") return { path, text: "{}", original };
  let value: unknown;
  try {
    // Strict JSON: the tools parse these files as JSON, so a comment we kept would break them anyway.
    value = JSON.parse(original);
  } catch (error) {
    throw new DockError(
      "invalid_settings",
      `${path}: not valid JSON (${
        syntaxProblem(original, error)
      }); dock left it untouched — fix it and install again`,
      { status: 422, cause: error },
    );
  }
  if (!isRecord(value)) {
    throw new DockError(
      "invalid_settings",
      `${path}: expected a JSON object at the top; dock left it untouched`,
      { status: 422 },
    );
  }
  return { path, text: original, original };
}

/** Writes `text` if it differs, after backing up the previous bytes to `<file>.dock-backup`. */
export async function saveJson(path: string, file: JsonFile, text: string): Promise<FileChange> {
  if (file.original !== null && text === file.original) return { path, action: "unchanged" };
  if (file.original === null) {
    await Deno.mkdir(dirname(path), { recursive: true });
    // A new file: write it whole and pretty rather than as the edit fragments of "{}".
    await writeAtomic(path, JSON.stringify(JSON.parse(text), null, 2) + "\n", 0o644);
    return { path, action: "created" };
  }
  // Write through a symlink (dotfiles managers link these), so the link stays a link.
  const real = await Deno.realPath(path);
  const mode = (await Deno.stat(real)).mode ?? 0o644;
  await writeAtomic(`${path}.dock-backup`, file.original, mode & 0o777);
  const body = file.original.trim() === "" ? JSON.stringify(JSON.parse(text), null, 2) + "\n" : text;
  await writeAtomic(real, body, mode & 0o777);
  return { path, action: "updated" };
}

/** `text` with the value at `path` set (or appended, for index -1), in the file's own formatting. */
export function edit(text: string, path: (string | number)[], value: unknown): string {
  return applyEdits(text, modify(text, path, value, { formattingOptions: formatting(text) }));
}

/** Formatting of new fragments: the file's own indentation and line ends. */
function formatting(text: string): FormattingOptions {
  const eol = text.includes("\r\n") ? "\r\n" : "\n";
  const indent = /^([ \t]+)\S/m.exec(text)?.[1] ?? "  ";
  return indent.startsWith("\t")
    ? { insertSpaces: false, tabSize: 4, eol }
    : { insertSpaces: true, tabSize: indent.length, eol };
}

/** The settings object of a file's current text (already known to be a JSON object). */
export function parseObject(text: string): Record<string, unknown> {
  return JSON.parse(text) as Record<string, unknown>;
}

/** `parent[key]` when it is an object; absent is undefined; anything else refuses the file naming `field`. */
export function objectField(
  parent: Record<string, unknown>,
  key: string,
  file: string,
  field: string,
): Record<string, unknown> | undefined {
  const value = parent[key];
  if (value === undefined) return undefined;
  if (!isRecord(value)) {
    throw new DockError(
      "invalid_settings",
      `${file}: ${field}: expected an object; dock left the file untouched`,
      {
        status: 422,
      },
    );
  }
  return value;
}

/** `parent[key]` when it is an array; absent is undefined; anything else refuses the file naming `field`. */
export function arrayField(
  parent: Record<string, unknown> | undefined,
  key: string,
  file: string,
  field: string,
): unknown[] | undefined {
  const value = parent?.[key];
  if (value === undefined) return undefined;
  if (!Array.isArray(value)) {
    throw new DockError(
      "invalid_settings",
      `${file}: ${field}: expected an array; dock left the file untouched`,
      {
        status: 422,
      },
    );
  }
  return value;
}

/** "InvalidSymbol at line 3, column 5", or the parser's own words when jsonc sees no error. */
function syntaxProblem(text: string, error: unknown): string {
  const errors: ParseError[] = [];
  parse(text, errors, { disallowComments: true, allowTrailingComma: false, allowEmptyContent: false });
  if (errors.length === 0) return error instanceof Error ? error.message : String(error);
  const { offset } = errors[0];
  const before = text.slice(0, offset);
  const line = before.split("\n").length;
  const column = offset - (before.lastIndexOf("\n") + 1) + 1;
  return `${printParseErrorCode(errors[0].error)} at line ${line}, column ${column}`;
}

function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}
