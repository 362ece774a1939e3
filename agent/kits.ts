/**
 * The laptop's kits library (spec 4.1, issue 16): `kit.json` files kept under `~/.dock/kits/<id>/`,
 * added from a file, a folder (its `kit.json`, and its other files as the kit's files), a git repository
 * the laptop can reach, or a location's current config (`save`); previewed against a box's location,
 * applied to it, updated everywhere it runs an older version, removed from a location, deleted.
 *
 * Versions compare numerically by dotted parts (`compareVersions`: `1.10.0` is newer than `1.9.2`); a kit
 * without a version is older than any with one.
 *
 * @module
 */
import { join, relative } from "../core/posix_path.ts";
import type { Boxes } from "./boxes.ts";
import type {
  DockConfig,
  InstalledKit,
  Kit,
  KitAddRequest,
  KitInstallation,
  KitPreview,
  KitSummary,
  KitUpdate,
} from "../client/wire.ts";
import { DockError } from "../client/errors.ts";
import { compareVersions } from "../client/version.ts";
import { kitError, mergeConfigs, parseKitText, validateKit } from "../core/config.ts";
import { exists } from "../core/files.ts";
import type { ClientPaths } from "../core/paths.ts";
import { run } from "../core/runner.ts";
import { writeUserFile } from "../core/user_files.ts";

/** Files a folder may add to a kit: what one request body to a box can carry. */
const FOLDER_LIMITS = { files: 500, bytes: 8 * 1024 * 1024 };

/** What the library uses of the agent. */
export interface KitsBackend {
  paths: Pick<ClientPaths, "home">;
  boxes: Pick<Boxes, "client" | "list" | "online" | "has">;
}

/** The kits library. */
export class KitLibrary {
  #o: KitsBackend;

  constructor(options: KitsBackend) {
    this.#o = options;
  }

  get #dir(): string {
    return join(this.#o.paths.home, "kits");
  }

  /** Every kit in the library (a file that no longer validates is listed with its error). */
  async list(): Promise<KitSummary[]> {
    const kits: KitSummary[] = [];
    if (!await exists(this.#dir)) return kits;
    for await (const entry of Deno.readDir(this.#dir)) {
      if (!entry.isDirectory) continue;
      try {
        kits.push(summary(await this.#read(entry.name)));
      } catch (error) {
        kits.push({
          id: entry.name,
          name: entry.name,
          version: null,
          files: [],
          error: (error as Error).message,
        });
      }
    }
    return kits.sort((a, b) => a.id.localeCompare(b.id));
  }

  /** One kit, whole, with the locations of online boxes whose `origin` matches its `match.slug`. */
  async show(id: string): Promise<Kit & { matching: { box: string; location: string }[] }> {
    const kit = await this.get(id);
    const matching: { box: string; location: string }[] = [];
    if (kit.match?.slug) {
      for (const box of await this.#onBoxes()) {
        for (const l of box.kits.locations) {
          if (l.slug?.toLowerCase() === kit.match.slug.toLowerCase()) {
            matching.push({ box: box.name, location: l.location });
          }
        }
      }
    }
    return { ...kit, matching };
  }

  /** A kit of the library; 404 when there is none. */
  async get(id: string): Promise<Kit> {
    if (!/^[a-z0-9][a-z0-9-]{0,47}$/.test(id)) throw noKit(id);
    if (!await exists(join(this.#dir, id, "kit.json"))) throw noKit(id);
    return await this.#read(id);
  }

  /** Adds (or replaces) a kit from a file, a folder or a git repository. */
  async add(request: KitAddRequest): Promise<KitSummary> {
    const sources = [request.file, request.folder, request.git].filter((s) => s !== undefined);
    if (sources.length !== 1) {
      throw new DockError("invalid_request", "name exactly one of file, folder or git", { status: 400 });
    }
    let kit: Kit;
    if (request.file !== undefined) kit = await readKitFile(request.file);
    else if (request.folder !== undefined) kit = await readKitFolder(request.folder);
    else kit = await this.#clone(request.git!);
    await this.#write(kit);
    return summary(kit);
  }

  /**
   * Makes a kit of what a location runs beyond its repository's own file (its kit's config, then the
   * box's own config for it) and adds it. Not the effective config: the repository's file travels
   * with the repository, so a kit holding it too would run the file's hooks twice wherever that
   * repository takes the kit (hooks are concatenated, spec 2.6).
   */
  async save(
    request: { box: string; location: string; id: string; name?: string; version?: string },
  ): Promise<KitSummary> {
    const config = await this.#client(request.box).config(request.location);
    const kit = checked({
      id: request.id,
      name: request.name ?? request.id,
      ...(request.version ? { version: request.version } : {}),
      config: mergeConfigs([config.kit ?? null, config.local]),
    }, "kit.json");
    await this.#write(kit);
    return summary(kit);
  }

  /** Removes a kit from the library (not from the locations that run it). */
  async delete(id: string): Promise<KitSummary> {
    const kit = await this.get(id);
    await Deno.remove(join(this.#dir, id), { recursive: true });
    return summary(kit);
  }

  /** What applying `id` to a box's location would do, without doing it. */
  async preview(request: { id: string; box: string; location: string }): Promise<KitPreview> {
    const kit = await this.get(request.id);
    const client = this.#client(request.box);
    const [config, onBox] = await Promise.all([
      client.config(request.location),
      // The box says which required tools it lacks, by the rule applying the kit reports them with:
      // nothing runs on the box for a preview (a command would pass its before:exec gates).
      client.kits({ tools: (kit.requires ?? []).map((need) => need.tool) }),
    ]);
    const before = config.effective;
    const after = mergeConfigs([config.repo, kit.config ?? null, config.local]);
    const current = onBox.installed.find((k) => k.location === request.location) ?? null;
    const warnings: string[] = [];
    for (const need of kit.requires ?? []) {
      if (onBox.absent?.includes(need.tool)) {
        warnings.push(`${need.tool} is not installed on ${request.box}${need.hint ? `: ${need.hint}` : ""}`);
      }
    }
    if (current && current.id !== kit.id) warnings.push(`replaces kit ${current.id} on ${request.location}`);
    return {
      kit: summary(kit),
      box: request.box,
      location: request.location,
      replaces: current ? { id: current.id, version: current.version } : null,
      layers: {
        repo: config.repo,
        kit_before: config.kit ?? null,
        kit_after: kit.config ?? null,
        local: config.local,
      },
      effective: { before, after },
      changed: changedFields(before, after),
      files: Object.keys(kit.files ?? {}).sort(),
      warnings,
    };
  }

  /** Applies a kit to a box's location. */
  async apply(request: { id: string; box: string; location: string }): Promise<InstalledKit> {
    const kit = await this.get(request.id);
    return await this.#client(request.box).applyKit(request.location, kit);
  }

  /** Takes a location's kit off. */
  remove(request: { box: string; location: string }): Promise<InstalledKit> {
    return this.#client(request.box).removeKit(request.location);
  }

  /** Every location on every online box running a kit, each flagged when its version is older than the library's. */
  async installed(): Promise<KitInstallation[]> {
    const library = new Map((await this.list()).map((k) => [k.id, k]));
    const out: KitInstallation[] = [];
    for (const box of await this.#onBoxes()) {
      for (const kit of box.kits.installed) {
        const latest = library.get(kit.id)?.version ?? null;
        out.push({ ...kit, box: box.name, library: latest, older: isOlder(kit.version, latest) });
      }
    }
    return out;
  }

  /** Applies the library's `id` again wherever an older version runs; answers what it applied. */
  async update(id: string): Promise<KitUpdate> {
    const kit = await this.get(id);
    const updated: InstalledKit[] = [];
    const failed: { box: string; location: string; error: string }[] = [];
    for (const at of (await this.installed()).filter((k) => k.id === id && k.older)) {
      try {
        updated.push({ ...await this.#client(at.box).applyKit(at.location, kit) });
      } catch (error) {
        failed.push({ box: at.box, location: at.location, error: (error as Error).message });
      }
    }
    return { updated, failed };
  }

  #client(box: string) {
    if (!this.#o.boxes.has(box)) throw new DockError("not_found", `no box named ${box}`, { status: 404 });
    return this.#o.boxes.client(box);
  }

  async #onBoxes() {
    const boxes = this.#o.boxes.list().filter((b) => this.#o.boxes.online(b.name));
    const answers = await Promise.all(boxes.map(async (b) => {
      try {
        return { name: b.name, kits: await this.#o.boxes.client(b.name).kits() };
      } catch {
        return null; // gone offline meanwhile, or an older dockd without kits
      }
    }));
    return answers.filter((a) => a !== null);
  }

  async #read(id: string): Promise<Kit> {
    const file = join(this.#dir, id, "kit.json");
    return parseKitText(await Deno.readTextFile(file), file);
  }

  async #write(kit: Kit): Promise<void> {
    await writeUserFile(join(this.#dir, kit.id, "kit.json"), kit, { dirMode: 0o700 });
  }

  async #clone(url: string): Promise<Kit> {
    if (!/^(https?:\/\/|ssh:\/\/|git@|file:\/\/|\/)/.test(url) || /[\s\0]/.test(url)) {
      throw new DockError("invalid_request", `git: not a repository URL: ${url}`, { status: 400 });
    }
    const dir = await Deno.makeTempDir({ prefix: "dock-kit-" });
    try {
      const cloned = await run("git", [
        "clone",
        "--depth",
        "1",
        "--quiet",
        "--end-of-options",
        url,
        join(dir, "kit"),
      ], {
        env: { GIT_TERMINAL_PROMPT: "0" },
        timeoutMs: 120_000,
      });
      if (cloned.code !== 0) {
        throw new DockError("clone_failed", `git clone ${url}: ${cloned.stderr.trim().split("\n").at(-1)}`, {
          status: 422,
        });
      }
      return await readKitFolder(join(dir, "kit"));
    } finally {
      await Deno.remove(dir, { recursive: true }).catch(() => {});
    }
  }
}

function noKit(id: string): DockError {
  return new DockError("not_found", `no kit '${id}' in the library`, { status: 404 });
}

/** A kit's manifest checked as `file` says; a problem is a 400 naming the file and the field. */
function checked(value: unknown, file: string): Kit {
  try {
    return validateKit(value, file);
  } catch (error) {
    throw kitError(error, file);
  }
}

/** A `kit.json` file on this laptop. */
async function readKitFile(path: string): Promise<Kit> {
  let text: string;
  try {
    text = await Deno.readTextFile(path);
  } catch {
    throw new DockError("not_found", `file: no such file: ${path}`, {
      status: 400,
      detail: { field: "file" },
    });
  }
  try {
    return parseKitText(text, path);
  } catch (error) {
    throw kitError(error, path);
  }
}

/**
 * A folder holding `kit.json`: its other files (not hidden ones) become the kit's `files`, beside any the
 * manifest has inline (those win). A link is followed only to a file inside the folder (a repository's
 * `bin/run -> ../scripts/run.sh`); one leading out of it (a cloned kit's `key -> ~/.ssh/id_ed25519`), to
 * a folder, or nowhere is a 400 naming it: its target would travel to the box as the kit's file.
 */
async function readKitFolder(folder: string): Promise<Kit> {
  const manifest = join(folder, "kit.json");
  if (!await exists(manifest)) {
    throw new DockError("not_found", `folder: ${folder} has no kit.json`, {
      status: 400,
      detail: { field: "folder" },
    });
  }
  const root = await Deno.realPath(folder);
  const inside = (real: string) => real === root || real.startsWith(`${root}/`);
  const refuse = (path: string, why: string) =>
    new DockError("invalid_kit", `folder: ${path}: ${why}`, { status: 400, detail: { field: "folder" } });
  if (!inside(await Deno.realPath(manifest))) {
    throw refuse(manifest, "a link leading outside the kit's folder");
  }
  const kit = await readKitFile(manifest);
  const files: Record<string, string> = {};
  let count = 0;
  let bytes = 0;
  const take = async (path: string, file: string): Promise<void> => {
    count++;
    bytes += (await Deno.stat(file)).size; // counted before reading: a huge file is never read
    if (count > FOLDER_LIMITS.files || bytes > FOLDER_LIMITS.bytes) {
      throw new DockError("too_large", `folder: ${folder} holds more than a kit may carry`, { status: 413 });
    }
    const text = textOf(await Deno.readFile(file));
    // A kit's files travel as JSON strings: a binary file would arrive changed, or be refused by the box.
    if (text === null) throw refuse(path, "not a text file (a kit carries UTF-8 text only)");
    files[relative(folder, path)] = text;
  };
  const walk = async (dir: string): Promise<void> => {
    for await (const entry of Deno.readDir(dir)) {
      if (entry.name.startsWith(".")) continue;
      const path = join(dir, entry.name);
      if (path === manifest) continue;
      if (entry.isSymlink) {
        const target = await Deno.realPath(path).catch(() => null);
        if (target === null) throw refuse(path, "a link to nothing");
        if (!inside(target)) throw refuse(path, "a link leading outside the kit's folder");
        if (!(await Deno.stat(target)).isFile) {
          throw refuse(path, "a link to a folder (only files are followed)");
        }
        await take(path, target);
      } else if (entry.isDirectory) await walk(path);
      else if (entry.isFile) await take(path, path);
    }
  };
  await walk(folder);
  return checked({ ...kit, files: { ...files, ...kit.files } }, manifest);
}

/** `raw` as UTF-8 text, or null when it is not (invalid UTF-8, or a NUL byte as binary files have). */
function textOf(raw: Uint8Array): string | null {
  if (raw.includes(0)) return null;
  try {
    return new TextDecoder("utf-8", { fatal: true }).decode(raw);
  } catch {
    return null;
  }
}

function summary(kit: Kit): KitSummary {
  return {
    id: kit.id,
    name: kit.name ?? kit.id,
    version: kit.version ?? null,
    ...(kit.description ? { description: kit.description } : {}),
    ...(kit.match ? { match: kit.match } : {}),
    files: Object.keys(kit.files ?? {}).sort(),
  };
}

/** True when `installed` is older than the library's `latest` (no version is older than any). */
export function isOlder(installed: string | null, latest: string | null): boolean {
  if (latest === null) return false;
  if (installed === null) return true;
  return compareVersions(installed, latest) < 0;
}

/** The top-level fields whose value differs between two effective configs. */
function changedFields(before: DockConfig, after: DockConfig): string[] {
  const keys = new Set([...Object.keys(before), ...Object.keys(after)]);
  return [...keys].filter((key) =>
    JSON.stringify((before as Record<string, unknown>)[key]) !==
      JSON.stringify((after as Record<string, unknown>)[key])
  ).sort();
}
