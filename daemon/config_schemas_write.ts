/**
 * Writes `schemas/config.schema.json` and `schemas/kit.schema.json` from the zod schemas of
 * `config.ts`. Run it after changing a config rule; `config_test.ts` fails until the files match.
 *
 * ```sh
 * deno run -A daemon/config_schemas_write.ts
 * ```
 *
 * @module
 */
import { configJsonSchema, kitJsonSchema } from "./config.ts";

/** Writes both schema files, formatted as `deno fmt` leaves them. */
async function main(): Promise<void> {
  const dir = new URL("../schemas/", import.meta.url);
  await Deno.mkdir(dir, { recursive: true });
  const files = [["config.schema.json", configJsonSchema()], ["kit.schema.json", kitJsonSchema()]] as const;
  for (const [name, schema] of files) {
    const file = new URL(name, dir);
    await Deno.writeTextFile(file, JSON.stringify(schema, null, 2) + "\n");
    console.log(`wrote ${file.pathname}`);
  }
}

if (import.meta.main) await main();
