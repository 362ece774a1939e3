/**
 * Locations: repositories registered on the box. A location is its main checkout's path plus the
 * box's own config layer for it; registrations live in the store and survive restarts. Its config
 * layers (repository file, kit, box) are read here and merged by the config module.
 *
 * @module
 */
import { basename, join, resolve } from "../core/posix_path.ts";
import { DockError, notFound } from "../client/errors.ts";
import type { Branch, ConfigProblem, DockConfig, Kit, LocationConfig } from "../client/wire.ts";
import { mergeConfigs, readRepoConfig, validateConfig } from "../core/config.ts";
import { ConfigError } from "../core/user_files.ts";
import { FileSignature } from "../core/files.ts";
import type { EventBus } from "../core/events.ts";
import * as git from "./git.ts";
import { checkName } from "./names.ts";
import type { Store } from "../core/store.ts";
import type { Clock } from "../core/clock.ts";

/** What a location keeps of its kit (the `kit` column of `locations`). */
export interface KitRecord {
  id: string;
  name: string;
  version: string | null;
  description?: string;
  match?: { slug?: string };
  requires?: { tool: string; hint?: string }[];
  config: Kit["config"] | null;
  files: string[];
  applied: string;
}

/** A location as stored. */
export interface LocationRecord {
  name: string;
  path: string;
  local: DockConfig | null;
  /** The kit applied to it (`kits.ts`), or null. */
  kit?: KitRecord | null;
  created: string;
}

interface LocationRow {
  name: string;
  path: string;
  local_config: string | null;
  kit?: string | null;
  created: string;
}

/** A repository's config file as read (see `Locations.#repoConfig`). */
interface RepoConfigRead {
  file: FileSignature;
  signature: string;
  repo: DockConfig | null;
  errors: readonly ConfigProblem[];
}

/** Owns the registered repositories and their config layers. */
export class Locations {
  #store: Store;
  #bus: EventBus;
  #clock: Pick<Clock, "now">;

  /** `clock` dates each location's registration. */
  constructor(store: Store, bus: EventBus, clock: Pick<Clock, "now">) {
    this.#store = store;
    this.#bus = bus;
    this.#clock = clock;
  }

  /** Every location, by name. */
  list(): LocationRecord[] {
    return this.#store.all<LocationRow>("SELECT * FROM locations ORDER BY name").map(fromRow);
  }

  /** One location; 404 when unknown. */
  get(name: string): LocationRecord {
    const row = this.#store.get<LocationRow>("SELECT * FROM locations WHERE name = ?", name);
    if (!row) throw notFound("location", name);
    return fromRow(row);
  }

  /** Registers the repository at `path` as `name`; the path must be a repository's main checkout. */
  async add(name: string, path: string, origin: string): Promise<LocationRecord> {
    checkName("name", name);
    let real: string;
    try {
      real = await Deno.realPath(resolve(path));
    } catch {
      throw new DockError("not_found", `path: ${path} does not exist on the box`, {
        status: 404,
        detail: { field: "path" },
      });
    }
    if (!(await git.isRepository(real))) {
      throw new DockError("not_a_repository", `path: ${real} is not the main checkout of a git repository`, {
        status: 422,
        detail: { field: "path" },
      });
    }
    const taken = this.#store.get<LocationRow>(
      "SELECT * FROM locations WHERE name = ? OR path = ?",
      name,
      real,
    );
    if (taken) {
      throw new DockError(
        "exists",
        taken.name === name
          ? `location '${name}' already exists (at ${taken.path})`
          : `${real} is already registered as location '${taken.name}'`,
        { status: 409 },
      );
    }
    const created = new Date(this.#clock.now()).toISOString();
    this.#store.run("INSERT INTO locations (name, path, created) VALUES (?, ?, ?)", name, real, created);
    this.#bus.publish({ type: "location.added", origin, data: { location: name, path: real } });
    return { name, path: real, local: null, kit: null, created };
  }

  /** Forgets a location (its worktrees' records and ports go with it; files stay). */
  remove(name: string, origin: string): LocationRecord {
    const record = this.get(name);
    this.#store.run("DELETE FROM locations WHERE name = ?", name);
    this.#repoConfigs.delete(record.path);
    this.#bus.publish({ type: "location.removed", origin, data: { location: name, path: record.path } });
    return record;
  }

  /** The repository's branches. */
  branches(name: string): Promise<Branch[]> {
    return git.branches(this.get(name).path);
  }

  /** The location's config layers and their merge. A layer that fails to load is reported, not thrown. */
  async config(name: string): Promise<LocationConfig> {
    const location = this.get(name);
    const { repo, errors } = await this.#repoConfig(location.path);
    const kit: DockConfig | null = location.kit?.config ?? null;
    const effective = mergeConfigs([repo, kit, location.local]);
    const result: LocationConfig = { repo, kit, local: location.local, effective };
    if (errors.length) result.errors = [...errors];
    return result;
  }

  /**
   * Each repository's `.dock/config.json` as last read, with the signature its file had then (not to be
   * edited: it is handed out again). The `before:` gates read a location's config on every request they
   * guard, so that a gate added a moment ago holds: a stat tells whether the file is still what was read.
   */
  #repoConfigs = new Map<string, RepoConfigRead>();

  async #repoConfig(path: string): Promise<RepoConfigRead> {
    const cached = this.#repoConfigs.get(path);
    const file = cached?.file ?? new FileSignature(join(path, ".dock", "config.json"));
    // Taken before the read: a file that changes in between is read again next time.
    const signature = file.read();
    if (cached?.signature === signature && file.settled(signature)) return cached;
    const errors: ConfigProblem[] = [];
    let repo: DockConfig | null = null;
    try {
      // A NUL in one `env` value costs that variable (reported below), not the whole file.
      repo = await readRepoConfig(path, { onDropped: (problems) => errors.push(...problems) });
    } catch (error) {
      if (!(error instanceof ConfigError)) throw error;
      errors.push(...error.problems);
    }
    const read = { file, signature, repo, errors };
    this.#repoConfigs.set(path, read);
    return read;
  }

  /** The effective config; throws the first layer's error, for actions that must not run half-configured. */
  async effectiveConfig(name: string): Promise<DockConfig> {
    const config = await this.config(name);
    if (config.errors?.length) throw new ConfigError(config.errors);
    return config.effective;
  }

  /** Replaces the box's own layer for the location; announces `config.changed`. */
  setLocal(name: string, local: unknown, origin: string): Promise<LocationConfig> {
    const location = this.get(name);
    const file = `box config of location '${name}'`;
    let config: DockConfig | null = null;
    if (local !== null && local !== undefined) {
      try {
        config = validateConfig(local, file);
      } catch (error) {
        // An API body with a wrong field is a bad request: name it as `local.<field>`.
        if (error instanceof ConfigError) {
          throw new DockError(
            "invalid_config",
            `local.${error.problems[0]?.field ?? ""}: ${error.problems[0]?.message}`,
            {
              status: 400,
              detail: { field: `local.${error.problems[0]?.field ?? ""}`, file },
            },
          );
        }
        throw error;
      }
    }
    this.#store.run(
      "UPDATE locations SET local_config = ? WHERE name = ?",
      config ? JSON.stringify(config) : null,
      location.name,
    );
    this.#bus.publish({ type: "config.changed", origin, data: { location: name, layer: "local" } });
    return this.config(name);
  }

  /** Sets or clears the box-level `setup` and `archive` scripts (null or "" clears). */
  setScripts(
    name: string,
    scripts: { setup?: string | null; archive?: string | null },
    origin: string,
  ): Promise<LocationConfig> {
    const local: DockConfig = { ...this.get(name).local };
    for (const key of ["setup", "archive"] as const) {
      if (!(key in scripts)) continue;
      const value = scripts[key];
      if (value) local[key] = value;
      else delete local[key];
    }
    return this.setLocal(name, Object.keys(local).length ? local : null, origin);
  }
}

/** The folder a clone or a new repository goes to when none is given: `~/work/<name>`. */
export function defaultRepoPath(home: string, name: string): string {
  return join(home, "work", name);
}

/** The location name a clone URL suggests (`git@host:o/repo.git` → `repo`). */
export function nameFromUrl(url: string): string {
  return basename(url.replace(/[\/]+$/, "").replace(/\.git$/, "").replace(/^.*[:/]/, "/")) || "repo";
}

function fromRow(row: LocationRow): LocationRecord {
  return {
    name: row.name,
    path: row.path,
    local: row.local_config ? JSON.parse(row.local_config) : null,
    kit: row.kit ? JSON.parse(row.kit) : null,
    created: row.created,
  };
}
