/**
 * `dockd info|stats|doctor|fs|env|secret`: facts about the box and its box-wide files.
 *
 * @module
 */
import type { Command } from "./commander.ts";
import { localBox } from "./client.ts";
import { guarded, keyValues, printJson, table } from "./output.ts";

/** Adds the box-wide commands. */
export function systemCommands(program: Command): void {
  program.command("info").description("the box's name, platform, build and tools").option(
    "--json",
    "print JSON",
  )
    .action((o) =>
      guarded(async () => {
        const info = await localBox().info();
        if (o.json) return printJson(info);
        console.log(`${info.name}: ${info.os}/${info.arch}, build ${info.build}, user ${info.user ?? "-"}`);
        console.log(`tools: ${info.tools.join(", ") || "-"}`);
      })
    );

  program.command("stats").description("memory, disks, load").option("--json", "print JSON").action((o) =>
    guarded(async () => {
      const stats = await localBox().stats();
      if (o.json) return printJson(stats);
      const gib = (n: number) => `${(n / 2 ** 30).toFixed(1)}G`;
      console.log(
        `memory ${stats.memory.used_percent.toFixed(0)}% of ${gib(stats.memory.total)}, load ${
          stats.load.join(" ")
        }`,
      );
      table(["DISK", "FREE", "TOTAL"], stats.disks.map((d) => [d.path, gib(d.free), gib(d.total)]));
    })
  );

  program.command("doctor").description("check what dock needs on this box").option("--json", "print JSON")
    .action((o) =>
      guarded(async () => {
        const checks = await localBox().doctor();
        if (o.json) printJson(checks);
        else table(["CHECK", "OK", "DETAIL"], checks.map((c) => [c.name, c.ok ? "ok" : "FAIL", c.detail]));
        if (checks.some((c) => !c.ok)) Deno.exit(1);
      })
    );

  program.command("fs").description("list a folder on the box (inside your home)").argument("[path]")
    .option("--json", "print JSON").action((path, o) =>
      guarded(async () => {
        const listing = await localBox().fs(path);
        if (o.json) return printJson(listing);
        console.log(listing.path);
        for (const e of listing.entries) {
          console.log(`  ${e.name}${e.dir ? "/" : ""}${e.git ? "  (git)" : ""}`);
        }
      })
    );

  const env = program.command("env").description("the box env file ~/.dock/env.json");
  env.command("list").alias("ls").description("print it (secret references as written)").option(
    "--json",
    "print JSON",
  )
    .action((o) =>
      guarded(async () => {
        const file = await localBox().env();
        if (o.json) return printJson(file);
        table(["KEY", "VALUE"], Object.entries(file.env));
      })
    );
  env.command("set").description("set KEY to VALUE (or a reference such as env://NAME)").argument("<key>")
    .argument("<value>").action((key, value) =>
      guarded(async () => {
        const box = localBox();
        const file = await box.env();
        await box.putEnv({ env: { ...file.env, [key]: value } });
      })
    );
  env.command("unset").description("remove KEY").argument("<key>").action((key) =>
    guarded(async () => {
      const box = localBox();
      const { env: values } = await box.env();
      delete values[key];
      await box.putEnv({ env: values });
    })
  );

  const guard = program.command("guard").description("the resource guard (~/.dock/guard.json)");
  guard.command("show").description("print its settings").option("--json", "print JSON").action((o) =>
    guarded(async () => {
      const settings = await localBox().guard();
      if (o.json) return printJson(settings);
      table(["SETTING", "VALUE"], Object.entries(settings));
    })
  );
  guard.command("set").description("change settings, e.g. dockd guard set enabled=true memory_percent=85")
    .argument("<setting...>").action((words) =>
      guarded(async () => {
        const box = localBox();
        const current = await box.guard();
        const updated = await box.putGuard({ ...current, ...keyValues(words) } as typeof current);
        table(["SETTING", "VALUE"], Object.entries(updated));
      })
    );
}
