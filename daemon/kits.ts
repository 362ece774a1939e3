/**
 * Kits on a box (spec 2.6, 2.7, 2.10): a kit applied to a location is that location's kit layer of the
 * config merge (repository → kit → box) and a folder of files, `DOCK_KIT_DIR` in its worktrees'
 * environment. One kit per location; applying another replaces it.
 *
 * The files go to `<state>/box/kits/<location>/` and nowhere else: a kit's paths are checked by its
 * schema (relative, no `.` or `..`, no empty segment), written into a fresh folder this module made
 * (so no link left there can redirect a write), that folder renamed into place whole, and the old one
 * removed (what a crash leaves half done is swept at the next start). A file beginning with `#!` is made
 * executable. What the kit is (id, name, version, its config, its file names) is kept with the location's
 * record, so the merge needs no file read.
 *
 * @module
 */
import { dirname, join } from "../core/posix_path.ts";
import { DockError } from "../client/errors.ts";
import type { InstalledKit, KitsOnBox } from "../client/wire.ts";
import type { EventBus } from "../core/events.ts";
import type { BoxPaths } from "../core/paths.ts";
import type { Store } from "../core/store.ts";
import { type Kit, kitError, validateKit } from "../core/config.ts";
import { which } from "../core/runner.ts";
import * as git from "./git.ts";
import type { KitRecord, Locations } from "./locations.ts";
import type { Clock } from "../core/clock.ts";

/** The most a kit may carry: it travels in one request body. */
export const KIT_LIMITS = { files: 500, fileBytes: 1024 * 1024, totalBytes: 8 * 1024 * 1024 };

/** Where a location's kit files are (`DOCK_KIT_DIR`). */
export function kitDir(paths: Pick<BoxPaths, "box">, location: string): string {
  return join(paths.box, "kits", location);
}

/** Dependencies of {@linkcode Kits}. */
export interface KitsOptions {
  store: Store;
  bus: Pick<EventBus, "publish">;
  locations: Pick<Locations, "get" | "list">;
  paths: Pick<BoxPaths, "box">;
  /** Where `requires` tools are looked for. @default {the daemon's PATH} */
  path?: string;
  /** Dates each kit's application. */
  clock: Pick<Clock, "now">;
}

/** The kits applied to this box's locations. */
export class Kits {
  #o: KitsOptions;
  /** Each location's last change: an apply or removal waits for the one before it on that location. */
  #chains = new Map<string, Promise<unknown>>();

  constructor(options: KitsOptions) {
    this.#o = options;
    options.store.addColumn("locations", "kit TEXT"); // a box made before kits
    sweep(join(options.paths.box, "kits"));
  }

  /**
   * Every location's kit, and every location's `origin` slug (what `match.slug` selects by); with
   * `tools`, also which of them this box lacks (`absent`: what a kit's `missing` would say).
   */
  async onBox(tools?: string[]): Promise<KitsOnBox> {
    const installed: InstalledKit[] = [];
    const locations: KitsOnBox["locations"] = [];
    for (const location of this.#o.locations.list()) {
      const record = this.record(location.name);
      if (record) installed.push(this.#installed(location.name, record));
      locations.push({
        location: location.name,
        slug: await originSlug(location.path),
        kit: record?.id ?? null,
      });
    }
    if (!tools) return { installed, locations };
    return { installed, locations, absent: tools.filter((tool) => this.#lacks(tool)) };
  }

  /**
   * Whether this box lacks a `requires` tool: a program's name not found on the daemon's PATH (unless
   * told another). Anything else (a path) is lacking, never looked up.
   */
  #lacks(tool: string): boolean {
    return !/^[A-Za-z0-9._+-]{1,128}$/.test(tool) || !which(tool, this.#o.path ?? Deno.env.get("PATH") ?? "");
  }

  /** The kit a location runs, or null. */
  record(location: string): KitRecord | null {
    const row = this.#o.store.get<{ kit: string | null }>(
      "SELECT kit FROM locations WHERE name = ?",
      location,
    );
    return row?.kit ? JSON.parse(row.kit) as KitRecord : null;
  }

  /**
   * Applies `kit` (a `kit.json` that passed {@linkcode checkKit}) to `location`: its files written, its
   * config made the location's kit layer. Announces `kit.applied` and `config.changed`.
   */
  apply(location: string, kit: Kit, origin: string): Promise<InstalledKit> {
    this.#o.locations.get(location);
    return this.#serial(location, () => this.#apply(location, kit, origin));
  }

  async #apply(location: string, kit: Kit, origin: string): Promise<InstalledKit> {
    this.#o.locations.get(location); // forgotten while this waited its turn
    const dir = kitDir(this.#o.paths, location);
    await writeFolder(dir, kit.files ?? {});
    const record: KitRecord = {
      id: kit.id,
      name: kit.name ?? kit.id,
      version: kit.version ?? null,
      ...(kit.description ? { description: kit.description } : {}),
      ...(kit.match ? { match: kit.match } : {}),
      ...(kit.requires ? { requires: kit.requires } : {}),
      config: kit.config ?? null,
      files: Object.keys(kit.files ?? {}).sort(),
      applied: new Date(this.#o.clock.now()).toISOString(),
    };
    this.#o.store.run("UPDATE locations SET kit = ? WHERE name = ?", JSON.stringify(record), location);
    const installed = this.#installed(location, record);
    this.#o.bus.publish({
      type: "kit.applied",
      origin,
      data: {
        location,
        kit: record.id,
        version: record.version,
        missing: installed.missing.map((m) => m.tool),
      },
    });
    this.#o.bus.publish({ type: "config.changed", origin, data: { location, layer: "kit" } });
    return installed;
  }

  /** Takes the kit off `location` (404 when it has none); its files go with it. */
  remove(location: string, origin: string): Promise<InstalledKit> {
    this.#o.locations.get(location);
    return this.#serial(location, () => this.#remove(location, origin));
  }

  async #remove(location: string, origin: string): Promise<InstalledKit> {
    this.#o.locations.get(location);
    const record = this.record(location);
    if (!record) throw new DockError("not_found", `location '${location}' has no kit`, { status: 404 });
    const installed = this.#installed(location, record);
    this.#o.store.run("UPDATE locations SET kit = NULL WHERE name = ?", location);
    await Deno.remove(kitDir(this.#o.paths, location), { recursive: true }).catch(() => {});
    this.#o.bus.publish({ type: "kit.removed", origin, data: { location, kit: record.id } });
    this.#o.bus.publish({ type: "config.changed", origin, data: { location, layer: "kit" } });
    return installed;
  }

  /**
   * Deletes a forgotten location's kit files (the box's own copy, not the repository's), so a location
   * added later under the same name starts with none. Called after the location's record is gone.
   */
  forget(location: string): Promise<void> {
    return this.#serial(location, () => Deno.remove(kitDir(this.#o.paths, location), { recursive: true }))
      .catch(() => {});
  }

  /**
   * Runs `work` after every earlier change of `location`'s kit. Two applies at once would each move the
   * folder aside and rename theirs into place: the second rename meets the first's folder, and the record
   * could name one kit while the folder holds the other's files.
   */
  #serial<T>(location: string, work: () => Promise<T>): Promise<T> {
    const before = this.#chains.get(location) ?? Promise.resolve();
    const mine = before.catch(() => {}).then(work);
    this.#chains.set(location, mine);
    const done = () => {
      if (this.#chains.get(location) === mine) this.#chains.delete(location);
    };
    mine.then(done, done);
    return mine;
  }

  #installed(location: string, record: KitRecord): InstalledKit {
    return {
      location,
      id: record.id,
      name: record.name,
      version: record.version,
      dir: kitDir(this.#o.paths, location),
      files: record.files,
      applied: record.applied,
      missing: (record.requires ?? []).filter((need) => this.#lacks(need.tool)),
    };
  }
}

/** A `kit.json` body, checked by the kit schema and the size limits; 400 naming the file and field. */
export function checkKit(body: unknown): Kit {
  let kit: Kit;
  try {
    kit = validateKit(body, "kit.json");
  } catch (error) {
    throw kitError(error, "kit.json");
  }
  const files = Object.entries(kit.files ?? {});
  const encoder = new TextEncoder();
  let total = 0;
  if (files.length > KIT_LIMITS.files) {
    throw new DockError("too_large", `kit.json: files: more than ${KIT_LIMITS.files} files`, { status: 413 });
  }
  for (const [path, text] of files) {
    const bytes = encoder.encode(text).length;
    total += bytes;
    if (bytes > KIT_LIMITS.fileBytes || total > KIT_LIMITS.totalBytes) {
      throw new DockError("too_large", `kit.json: files.${path}: the kit's files are too large`, {
        status: 413,
      });
    }
  }
  // Two paths where one is a folder of the other cannot both be files.
  const names = new Set(files.map(([path]) => path));
  for (const [path] of files) {
    const parts = path.split("/");
    for (let i = 1; i < parts.length; i++) {
      const parent = parts.slice(0, i).join("/");
      if (names.has(parent)) {
        throw new DockError("invalid_kit", `kit.json: files.${path}: '${parent}' is a file, not a folder`, {
          status: 400,
          detail: { file: "kit.json", field: `files.${path}` },
        });
      }
    }
  }
  return kit;
}

/** Writes `files` as the whole content of `dir`: built beside it, then renamed into place. */
async function writeFolder(dir: string, files: Record<string, string>): Promise<void> {
  const parent = dirname(dir);
  await Deno.mkdir(parent, { recursive: true, mode: 0o700 });
  const fresh = await Deno.makeTempDir({ dir: parent, prefix: ".kit-" });
  try {
    const targets = Object.entries(files).map(([path, text]) => {
      const target = join(fresh, path);
      // The schema kept the path inside; the folder is new and ours, so nothing in it is a link.
      if (!target.startsWith(`${fresh}/`)) {
        throw new DockError("invalid_kit", `kit.json: files.${path}: outside`);
      }
      return { target, text };
    });
    for (const folder of new Set(targets.map((t) => dirname(t.target)))) {
      await Deno.mkdir(folder, { recursive: true });
    }
    // The files at once: the file system's work overlaps.
    await Promise.all(targets.map(async ({ target, text }) => {
      const executable = text.startsWith("#!");
      await Deno.writeTextFile(target, text, { createNew: true, mode: executable ? 0o755 : 0o644 });
      // The umask may have taken the execute bits the kit asked for.
      if (executable) await Deno.chmod(target, 0o755);
    }));
    // Aside under a dot name: no location's name starts with a dot, so this is never another's folder.
    const old = join(parent, `.old-${crypto.randomUUID()}`);
    const had = await Deno.rename(dir, old).then(() => true, () => false);
    await Deno.rename(fresh, dir);
    if (had) await Deno.remove(old, { recursive: true });
  } catch (error) {
    await Deno.remove(fresh, { recursive: true }).catch(() => {});
    throw error;
  }
}

/**
 * Removes what an apply cut short by a crash left in the kits folder: its fresh folder (`.kit-*`) or the
 * version it had moved aside (`.old-*`). Dot names only, which no location has; run before any apply.
 */
function sweep(kits: string): void {
  let entries: Deno.DirEntry[];
  try {
    entries = [...Deno.readDirSync(kits)];
  } catch {
    return; // no kit applied yet
  }
  for (const entry of entries) {
    if (entry.name.startsWith(".kit-") || entry.name.startsWith(".old-")) {
      Deno.removeSync(join(kits, entry.name), { recursive: true });
    }
  }
}

/** `owner/repo` of the repository's `origin` remote, or null. */
async function originSlug(path: string): Promise<string | null> {
  const url = await git.originUrl(path).catch(() => null);
  return url ? slugOf(url) : null;
}

/** `owner/repo` of a remote URL (`git@github.com:o/r.git`, `https://host/o/r`), or null. */
export function slugOf(url: string): string | null {
  const match = /[:/]([^/:\s]+)\/([^/\s]+?)(?:\.git)?\/?$/.exec(url.trim());
  return match ? `${match[1]}/${match[2]}` : null;
}
