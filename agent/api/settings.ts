/**
 * Routes of the laptop's own files (spec 2.8, 2.9): app settings documents (`~/.dock/app/<key>.json`,
 * any JSON up to 1 MB, `null` when missing), task templates (`~/.dock/templates/*.json`, validated) and
 * themes (`~/.dock/themes/*.json`).
 *
 * @module
 */
import { join } from "node:path";
import { z } from "zod";
import { DockError } from "../../client/errors.ts";
import { APP_DOCUMENT } from "../../client/schemas.ts";
import { body, fieldPath, json, param, requestOrigin, RouteTable } from "../../core/http.ts";
import { writeAtomic } from "../../core/files.ts";
import type { Agent } from "../agent.ts";

/** The largest app settings document accepted (spec 8). */
export const APP_DOCUMENT_LIMIT = 1024 * 1024;

const KEY = /^[a-z0-9][a-z0-9._-]{0,63}$/;

const TEMPLATE = z.object({
  id: z.string().regex(/^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$/).optional(),
  name: z.string().optional(),
  description: z.string().optional(),
  box: z.string().optional(),
  location: z.string().optional(),
  agent: z.string().optional(),
  command: z.string().optional(),
  branch: z.string().optional(),
  base: z.string().optional(),
  prompt: z.string().optional(),
  variables: z.array(
    z.object({
      id: z.string().regex(/^[A-Za-z_][A-Za-z0-9_]*$/, "must be a variable name"),
      label: z.string().optional(),
      default: z.string().optional(),
      multiline: z.boolean().optional(),
    }).strict(),
  ).optional(),
}).strict();

/** A task template (spec 2.8); one that failed to load carries `error` naming the file and field. */
export type TaskTemplate = z.infer<typeof TEMPLATE> & { id: string; error?: string };

/** The settings, templates and themes routes. */
export function settingsRoutes(agent: Agent): RouteTable {
  const appDir = join(agent.paths.home, "app");
  return new RouteTable("settings")
    .add("GET", "/app/:key", async (c) => {
      const file = join(appDir, `${checkKey(param(c, "key"))}.json`);
      try {
        return json(JSON.parse(await Deno.readTextFile(file)));
      } catch (error) {
        if (error instanceof Deno.errors.NotFound) return json(null);
        throw new DockError("invalid_document", `${file}: not valid JSON`, { status: 422 });
      }
    })
    .add("PUT", "/app/:key", async (c) => {
      const key = checkKey(param(c, "key"));
      const value = await body(c, APP_DOCUMENT, { limit: APP_DOCUMENT_LIMIT });
      await Deno.mkdir(appDir, { recursive: true, mode: 0o700 });
      await writeAtomic(join(appDir, `${key}.json`), JSON.stringify(value, null, 2) + "\n");
      agent.bus.publish({ type: "app.changed", origin: requestOrigin(c), data: { key } });
      return json(value);
    })
    .add("GET", "/templates", async () => json(await readTemplates(join(agent.paths.home, "templates"))))
    .add("GET", "/themes", async () => json(await readThemes(join(agent.paths.home, "themes"))));
}

/** Every template file, validated; a bad one is listed with its error instead of hiding it. */
export async function readTemplates(dir: string): Promise<TaskTemplate[]> {
  const templates: TaskTemplate[] = [];
  for (const file of await jsonFiles(dir)) {
    const id = file.name.slice(0, -".json".length);
    const path = join(dir, file.name);
    try {
      const parsed = TEMPLATE.safeParse(JSON.parse(await Deno.readTextFile(path)));
      if (!parsed.success) {
        const issue = parsed.error.issues[0];
        templates.push({ id, error: `${path}: ${fieldPath(issue.path) || "template"}: ${issue.message}` });
      } else templates.push({ ...parsed.data, id: parsed.data.id ?? id });
    } catch (error) {
      templates.push({ id, error: `${path}: not valid JSON (${(error as Error).message})` });
    }
  }
  return templates;
}

/** Every theme file as `{ id, ...theme }` (a bad one as `{ id, error }`). */
export async function readThemes(dir: string): Promise<Record<string, unknown>[]> {
  const themes: Record<string, unknown>[] = [];
  for (const file of await jsonFiles(dir)) {
    const id = file.name.slice(0, -".json".length);
    try {
      const theme = JSON.parse(await Deno.readTextFile(join(dir, file.name)));
      themes.push(
        typeof theme === "object" && theme !== null && !Array.isArray(theme) ? { ...theme, id } : {
          id,
          error: "a theme is a JSON object",
        },
      );
    } catch (error) {
      themes.push({ id, error: `not valid JSON (${(error as Error).message})` });
    }
  }
  return themes;
}

async function jsonFiles(dir: string): Promise<Deno.DirEntry[]> {
  const files: Deno.DirEntry[] = [];
  try {
    for await (const entry of Deno.readDir(dir)) {
      if (entry.isFile && entry.name.endsWith(".json")) files.push(entry);
    }
  } catch (error) {
    if (!(error instanceof Deno.errors.NotFound)) throw error;
  }
  return files.sort((a, b) => a.name.localeCompare(b.name));
}

function checkKey(key: string): string {
  if (!KEY.test(key)) {
    throw new DockError(
      "invalid_request",
      `key: must match [a-z0-9][a-z0-9._-]*, got ${JSON.stringify(key)}`,
      {
        status: 400,
        detail: { field: "key" },
      },
    );
  }
  return key;
}
