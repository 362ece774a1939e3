/**
 * Routes of the laptop's own files (spec 2.8, 2.9): app settings documents (`~/.dock/app/<key>.json`,
 * any JSON up to 1 MB, `null` when missing), task templates (`~/.dock/templates/*.json`, validated) and
 * themes (`~/.dock/themes/*.json`). Each is read like every user file (`core/user_files.ts`): JSON with
 * comments, and an error naming the file and the field.
 *
 * @module
 */
import { join } from "../../core/posix_path.ts";
import { z } from "zod";
import type { TaskTemplate } from "../../client/wire.ts";
import { DockError } from "../../client/errors.ts";
import { APP_DOCUMENT } from "../../client/schemas_laptop.ts";
import { body, json, param, requestOrigin, RouteTable } from "../../core/http.ts";
import { ConfigError, readUserFile, writeUserFile } from "../../core/user_files.ts";
import type { EventBus } from "../../core/events.ts";
import type { Plugins } from "../../plugins/plugins.ts";
import type { ClientPaths } from "../../core/paths.ts";

/** The largest app settings document accepted (spec 8). */
export const APP_DOCUMENT_LIMIT = 1024 * 1024;

const KEY = /^[a-z0-9][a-z0-9._-]{0,63}$/;

const TEMPLATE = z.object({
  id: z.string().regex(
    /^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$/,
    "must be one word of letters, digits, '.', '_' or '-', at most 64 characters",
  ).optional(),
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
}).strict().superRefine((template, context) => {
  // What `POST tasks` would refuse every time is refused here, so the list says so before it is picked.
  if (template.agent && template.command) {
    context.addIssue({
      code: "custom",
      path: ["command"],
      message: "give either agent or command, not both",
    });
  } else if (template.command && template.prompt !== undefined) {
    context.addIssue({
      code: "custom",
      path: ["prompt"],
      message: "a first prompt needs an agent: a command takes none (give agent, or drop prompt)",
    });
  }
}) satisfies z.ZodType<Omit<TaskTemplate, "id" | "error"> & { id?: string }>;

export type { TaskTemplate };

/** What the settings, templates and themes routes use of the agent. */
export interface SettingsRoutesBackend {
  paths: Pick<ClientPaths, "home">;
  bus: Pick<EventBus, "publish">;
  plugins: Pick<Plugins, "themes">;
}

/** The settings, templates and themes routes. */
export function settingsRoutes(agent: SettingsRoutesBackend): RouteTable {
  const appDir = join(agent.paths.home, "app");
  return new RouteTable("settings")
    .add("GET", "/app/:key", async (c) => {
      const file = join(appDir, `${checkKey(param(c, "key"))}.json`);
      return json(
        await readUserFile(file, z.unknown(), { missing: "absent", code: "invalid_document" }) ?? null,
      );
    })
    .add("PUT", "/app/:key", async (c) => {
      const key = checkKey(param(c, "key"));
      const value = await body(c, APP_DOCUMENT, { limit: APP_DOCUMENT_LIMIT });
      await writeUserFile(join(appDir, `${key}.json`), value, { dirMode: 0o700 });
      agent.bus.publish({ type: "app.changed", origin: requestOrigin(c), data: { key } });
      return json(value);
    })
    .add("GET", "/templates", async () => json(await readTemplates(join(agent.paths.home, "templates"))))
    .add("GET", "/themes", async () => {
      // Theme files first, then enabled plugins' themes (`<plugin>/<file>` ids cannot collide with them).
      const themes = await readThemes(join(agent.paths.home, "themes"));
      return json([...themes, ...await agent.plugins.themes()]);
    });
}

/** Every template file, validated; a bad one is listed with its error instead of hiding it. */
export async function readTemplates(dir: string): Promise<TaskTemplate[]> {
  const templates: TaskTemplate[] = [];
  for (const file of await jsonFiles(dir)) {
    const id = file.name.slice(0, -".json".length);
    try {
      const template = await readUserFile(join(dir, file.name), TEMPLATE, {
        missing: "absent",
        code: "invalid_template",
      });
      if (template) templates.push({ ...template, id: template.id ?? id });
    } catch (error) {
      if (!(error instanceof ConfigError)) throw error;
      templates.push({ id, error: error.message });
    }
  }
  return templates;
}

const THEME = z.record(z.string(), z.unknown());

/** Every theme file as `{ id, ...theme }` (a bad one as `{ id, error }`). */
export async function readThemes(dir: string): Promise<Record<string, unknown>[]> {
  const themes: Record<string, unknown>[] = [];
  for (const file of await jsonFiles(dir)) {
    const id = file.name.slice(0, -".json".length);
    try {
      const theme = await readUserFile(join(dir, file.name), THEME, {
        missing: "absent",
        code: "invalid_theme",
      });
      if (theme) themes.push({ ...theme, id });
    } catch (error) {
      if (!(error instanceof ConfigError)) throw error;
      themes.push({ id, error: error.message });
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
