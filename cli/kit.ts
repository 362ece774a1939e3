/**
 * `dock kit list|show|preview|add|apply|update|remove|save|rm` (spec 4.4): the laptop's kits library
 * (`agent/kits.ts`) through the agent. A location is `BOX/LOCATION`.
 *
 * @module
 */
import type { Command } from "./commander.ts";
import type { KitTarget } from "../client/wire.ts";
import { DockError } from "../client/errors.ts";
import { agentClient } from "./agent.ts";
import { guarded, printJson, table } from "./output.ts";
import { resolvePath } from "./cwd.ts";

/** `BOX/LOCATION` as the library's routes take it. */
function target(spec: string): KitTarget {
  const match = /^([^/\s]+)\/([^/\s]+)$/.exec(spec);
  if (!match) throw new DockError("usage", `expected BOX/LOCATION, got '${spec}'`);
  return { box: match[1], location: match[2] };
}

/** Adds `kit` to `dock`. */
export function kitCommands(program: Command): void {
  const kit = program.command("kit").description("kits: config and files applied to locations");

  kit.command("list").alias("ls").description("the kits library").option("--json", "print JSON").action((o) =>
    guarded(async () => {
      const kits = await (await agentClient()).kits();
      if (o.json) return printJson(kits);
      table(
        ["KIT", "NAME", "VERSION", "FILES", "MATCH"],
        kits.map((k) => [k.id, k.error ? `(${k.error})` : k.name, k.version, k.files.length, k.match?.slug]),
      );
    }, "dock")
  );

  kit.command("show").description("one kit, and the locations whose origin its match.slug names")
    .argument("<id>").option("--json", "print JSON").action((id, o) =>
      guarded(async () => {
        const shown = await (await agentClient()).kit(id);
        if (o.json) return printJson(shown);
        console.log(`${shown.id} ${shown.version ?? ""}: ${shown.name ?? shown.id}`);
        if (shown.description) console.log(shown.description);
        console.log(`files: ${Object.keys(shown.files ?? {}).join(", ") || "none"}`);
        console.log(`config: ${JSON.stringify(shown.config ?? {})}`);
        for (const m of shown.matching) console.log(`matches ${m.box}/${m.location}`);
      }, "dock")
    );

  kit.command("installed").description("every location running a kit; older versions flagged")
    .option("--json", "print JSON").action((o) =>
      guarded(async () => {
        const installed = await (await agentClient()).kitsInstalled();
        if (o.json) return printJson(installed);
        table(
          ["LOCATION", "KIT", "VERSION", "LIBRARY", "MISSING"],
          installed.map((k) => [
            `${k.box}/${k.location}`,
            k.id,
            `${k.version ?? "-"}${k.older ? " (older: dock kit update)" : ""}`,
            k.library,
            k.missing.map((m) => m.tool).join(", "),
          ]),
        );
      }, "dock")
    );

  kit.command("add").description("add a kit to the library from a kit.json, a folder, or a git URL")
    .argument("<source>").option("--json", "print JSON").action((source, o) =>
      guarded(async () => {
        const git = /^(https?:\/\/|ssh:\/\/|git@|file:\/\/)/.test(source);
        let request;
        if (git) request = { git: source };
        else {
          const path = resolvePath(source);
          const info = await Deno.stat(path).catch(() => null);
          if (!info) throw new DockError("usage", `no such file or folder: ${path}`);
          request = info.isDirectory ? { folder: path } : { file: path };
        }
        const added = await (await agentClient()).addKit(request);
        if (o.json) return printJson(added);
        console.log(`added kit ${added.id} ${added.version ?? ""} (${added.files.length} files)`);
      }, "dock")
    );

  kit.command("preview").description("what applying a kit to BOX/LOCATION would change, done nowhere")
    .argument("<id>").argument("<location>", "BOX/LOCATION").option("--json", "print JSON")
    .action((id, spec, o) =>
      guarded(async () => {
        const preview = await (await agentClient()).previewKit(id, target(spec));
        if (o.json) return printJson(preview);
        console.log(`${preview.kit.id} ${preview.kit.version ?? ""} on ${preview.box}/${preview.location}`);
        if (preview.replaces) {
          console.log(`replaces ${preview.replaces.id} ${preview.replaces.version ?? ""}`);
        }
        console.log(`changes: ${preview.changed.join(", ") || "nothing in the effective config"}`);
        console.log(`files: ${preview.files.join(", ") || "none"}`);
        for (const warning of preview.warnings) console.log(`warning: ${warning}`);
      }, "dock")
    );

  kit.command("apply").description("apply a kit of the library to BOX/LOCATION").argument("<id>")
    .argument("<location>", "BOX/LOCATION").option("--json", "print JSON").action((id, spec, o) =>
      guarded(async () => {
        const applied = await (await agentClient()).applyKit(id, target(spec));
        if (o.json) return printJson(applied);
        console.log(`applied ${applied.id} ${applied.version ?? ""} to ${spec}; DOCK_KIT_DIR=${applied.dir}`);
        for (const m of applied.missing) {
          console.log(`warning: ${m.tool} is missing${m.hint ? `: ${m.hint}` : ""}`);
        }
      }, "dock")
    );

  kit.command("update").description("apply the library's version wherever an older one runs").argument("<id>")
    .option("--json", "print JSON").action((id, o) =>
      guarded(async () => {
        const result = await (await agentClient()).updateKit(id);
        if (o.json) return printJson(result);
        for (const u of result.updated) console.log(`updated ${u.location} to ${u.id} ${u.version ?? ""}`);
        for (const f of result.failed) console.error(`dock: ${f.box}/${f.location}: ${f.error}`);
        if (!result.updated.length && !result.failed.length) console.log("nothing runs an older version");
        if (result.failed.length) {
          throw new DockError("update", `${result.failed.length} locations not updated`);
        }
      }, "dock")
    );

  kit.command("remove").description("take BOX/LOCATION's kit off (its files go too)")
    .argument("<location>", "BOX/LOCATION").option("--json", "print JSON").action((spec, o) =>
      guarded(async () => {
        const removed = await (await agentClient()).removeKit(target(spec));
        if (o.json) return printJson(removed);
        console.log(`removed ${removed.id} from ${spec}`);
      }, "dock")
    );

  kit.command("save").description(
    "save what BOX/LOCATION runs beyond its repository's own config (its kit's and the box's) as a kit",
  )
    .argument("<location>", "BOX/LOCATION").argument("<id>").option("--name <name>").option(
      "--version <version>",
    ).option("--json", "print JSON").action((spec, id, o) =>
      guarded(async () => {
        const saved = await (await agentClient()).saveKit({
          ...target(spec),
          id,
          name: o.name,
          version: o.version,
        });
        if (o.json) return printJson(saved);
        console.log(`saved ${spec}'s config as kit ${saved.id}`);
      }, "dock")
    );

  kit.command("rm").description("delete a kit from the library (locations running it keep it)")
    .argument("<id>").option("--json", "print JSON").action((id, o) =>
      guarded(async () => {
        const deleted = await (await agentClient()).deleteKit(id);
        if (o.json) return printJson(deleted);
        console.log(`deleted kit ${deleted.id} from the library`);
      }, "dock")
    );
}
