/**
 * `dockd schemas`: prints or writes the JSON Schemas of `.dock/config.json`, `kit.json` and
 * `dock-plugin.json`, generated from the same zod schemas the daemon validates with.
 *
 * @module
 */
import type { Command } from "./commander.ts";
import { load } from "./lazy.ts";
import { guarded } from "./output.ts";

/** Adds `schemas`. */
export function schemasCommand(program: Command): void {
  program.command("schemas").description(
    "print the JSON Schemas of .dock/config.json, kit.json and dock-plugin.json",
  )
    .option("--write <dir>", "write config.schema.json, kit.schema.json and plugin.schema.json into a folder")
    .action((o) =>
      guarded(async () => {
        // zod is loaded only here, not by every dockd command.
        const { configJsonSchema, kitJsonSchema } = await load<typeof import("../core/config.ts")>(
          "../core/config.ts",
        );
        const { manifestJsonSchema } = await load<typeof import("../plugins/manifest.ts")>(
          "../plugins/manifest.ts",
        );
        const schemas = {
          "config.schema.json": configJsonSchema(),
          "kit.schema.json": kitJsonSchema(),
          "plugin.schema.json": manifestJsonSchema(),
        };
        if (!o.write) return console.log(JSON.stringify(schemas, null, 2));
        await Deno.mkdir(o.write, { recursive: true });
        for (const [file, schema] of Object.entries(schemas)) {
          await Deno.writeTextFile(`${o.write}/${file}`, JSON.stringify(schema, null, 2) + "\n");
        }
      })
    );
}
