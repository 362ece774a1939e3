/**
 * A plugin's static files: what its `ui` and `themes` list, served from its folder and never from
 * anywhere else (no `..`, no symlink out, no file it did not list).
 *
 * @module
 */
import { basename, extname, join } from "../core/posix_path.ts";
import { DockError } from "../client/errors.ts";
import { MAX_FETCH_BODY } from "./protocol.ts";
import { inside } from "./folder_check.ts";
import type { Plugin } from "./plugin_state.ts";

const CONTENT_TYPES: Record<string, string> = {
  ".html": "text/html; charset=utf-8",
  ".js": "text/javascript; charset=utf-8",
  ".mjs": "text/javascript; charset=utf-8",
  ".css": "text/css; charset=utf-8",
  ".json": "application/json",
  ".svg": "image/svg+xml",
  ".png": "image/png",
  ".jpg": "image/jpeg",
  ".jpeg": "image/jpeg",
  ".gif": "image/gif",
  ".webp": "image/webp",
  ".ico": "image/x-icon",
  ".txt": "text/plain; charset=utf-8",
  ".md": "text/markdown; charset=utf-8",
  ".woff2": "font/woff2",
};

/** A file of a plugin's folder listed in its `ui` (or `themes`): never outside it. */
export async function pluginFile(plugin: Plugin, path: string): Promise<Response> {
  const id = plugin.id;
  if (!plugin.manifest) {
    throw new DockError("invalid_plugin", plugin.invalid ?? "the plugin does not load", { status: 422 });
  }
  const segments = path.split("/");
  if (
    path.length === 0 || path.length > 1024 || path.includes("\0") || path.includes("\\") ||
    segments.some((s) => s === "" || s === "." || s === "..")
  ) {
    throw new DockError("invalid_path", "a plugin file is a path inside its folder, without . or ..", {
      status: 400,
    });
  }
  const listed = [...(plugin.manifest.ui ?? []), ...(plugin.manifest.themes ?? [])].some((entry) =>
    entry.endsWith("/") ? path.startsWith(entry) : path === entry
  );
  if (!listed) throw new DockError("not_found", `plugin '${id}' does not offer ${path}`, { status: 404 });
  const real = await Deno.realPath(join(plugin.dir, path)).catch(() => null);
  if (!real || !inside(real, plugin.realDir)) {
    throw new DockError("not_found", `plugin '${id}' has no file ${path}`, { status: 404 });
  }
  const info = await Deno.stat(real);
  if (!info.isFile) throw new DockError("not_found", `plugin '${id}' has no file ${path}`, { status: 404 });
  if (info.size > MAX_FETCH_BODY) {
    throw new DockError("too_large", `${path} is larger than ${MAX_FETCH_BODY} bytes`, { status: 413 });
  }
  return new Response(await Deno.readFile(real), {
    headers: { "content-type": CONTENT_TYPES[extname(real).toLowerCase()] ?? "application/octet-stream" },
  });
}

/** Themes of the given (enabled) plugins, each `{ ...theme, id: "<plugin>/<file>", plugin }`. */
export async function pluginThemes(plugins: Plugin[]): Promise<Record<string, unknown>[]> {
  const themes: Record<string, unknown>[] = [];
  for (const plugin of plugins) {
    for (const file of plugin.manifest?.themes ?? []) {
      const id = `${plugin.id}/${basename(file, extname(file))}`;
      try {
        const real = await Deno.realPath(join(plugin.dir, file));
        if (!inside(real, plugin.realDir)) throw new Error("leads outside the plugin's folder");
        const theme = JSON.parse(await Deno.readTextFile(real));
        if (!theme || typeof theme !== "object" || Array.isArray(theme)) {
          throw new Error("is not a JSON object");
        }
        themes.push({ ...theme, id, plugin: plugin.id });
      } catch (error) {
        themes.push({ id, plugin: plugin.id, error: `${file}: ${(error as Error).message}` });
      }
    }
  }
  return themes;
}
