/**
 * `dock broadcast TEXT --to BOX/SESSION… | --where state=finished` (spec 6, issue 30 item 3): one
 * prompt to several sessions through the agent, `{{session}}`, `{{worktree}}`, `{{location}}`,
 * `{{box}}` and `{{branch}}` filled per session. Prints what happened to each; a box that cannot take
 * it now gets it through the offline queue. `--id` repeats an earlier broadcast without typing twice.
 *
 * @module
 */
import { type Command, Option } from "./commander.ts";
import { DockError } from "../client/errors.ts";
import type { BroadcastRequest, BroadcastWhere } from "../client/wire.ts";
import { agentClient } from "./agent.ts";
import { guarded, printJson, table } from "./output.ts";

/** The fields `--where` takes. */
const WHERE_FIELDS = ["state", "box", "location", "agent"] as const;

/** Adds `broadcast` to `dock`. */
export function broadcastCommands(program: Command): void {
  program.command("broadcast").description(
    "type one prompt into several sessions ({{session}}, {{branch}}, …)",
  )
    .argument(
      "<text>",
      "the prompt; {{session}} {{worktree}} {{location}} {{box}} {{branch}} are filled per session",
    )
    .option("--to <targets...>", "the sessions, as BOX/SESSION")
    .addOption(
      new Option(
        "--where <field=value>",
        "select sessions: state=, box=, location=, agent= (repeat to narrow)",
      )
        .argParser((value: string, previous: string[] | undefined) => [...previous ?? [], value]),
    )
    .option("--no-enter", "do not press Enter after the text")
    .option("--no-queue", "skip a session whose box is offline or that waits on a permission prompt")
    .option("--dry-run", "show the sessions and their filled prompts, send nothing")
    .option("--id <id>", "the broadcast's id: repeating one never types a prompt twice")
    .option("--json", "print JSON")
    .action((text: string, o) =>
      guarded(async () => {
        const request: BroadcastRequest = {
          id: o.id ?? crypto.randomUUID(),
          text,
          to: o.to,
          where: o.where ? parseWhere(o.where as string[]) : undefined,
          enter: o.enter,
          queue: o.queue,
          dry_run: o.dryRun || undefined,
        };
        if (!request.to && !request.where) {
          throw new DockError(
            "usage",
            "name the sessions with --to BOX/SESSION… or select them with --where",
            {
              status: 400,
            },
          );
        }
        const result = await (await agentClient()).broadcast(request);
        if (o.json) return printJson(result);
        if (!result.targets.length) {
          console.log("no session matches");
          return;
        }
        table(
          ["SESSION", "OUTCOME", "DETAIL"],
          result.targets.map((t) => [
            `${t.box}/${t.session}`,
            t.reason ? `${t.outcome} (${t.reason})` : t.outcome,
            t.outcome === "planned"
              ? JSON.stringify(t.text)
              : t.error ?? (t.queue_id ? `queue ${t.queue_id}` : ""),
          ]),
        );
        const failed = result.targets.filter((t) => t.outcome === "failed").length;
        if (failed) {
          console.error(
            `dock: ${failed} of ${result.targets.length} failed; \`--id ${result.id}\` repeats it safely`,
          );
          Deno.exit(1);
        }
      }, "dock")
    );
}

/** `--where` words (`state=finished`) as the filter; an unknown field or a bare word is a usage error. */
export function parseWhere(words: string[]): BroadcastWhere {
  const where: Record<string, string> = {};
  for (const word of words) {
    const eq = word.indexOf("=");
    const field = word.slice(0, eq);
    if (eq < 1 || !(WHERE_FIELDS as readonly string[]).includes(field)) {
      throw new DockError(
        "usage",
        `--where ${word}: use FIELD=VALUE, FIELD one of ${WHERE_FIELDS.join(", ")}`,
        {
          status: 400,
        },
      );
    }
    where[field] = word.slice(eq + 1);
  }
  return where as BroadcastWhere;
}
