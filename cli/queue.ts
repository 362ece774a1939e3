/**
 * `dock queue list|send|retry|edit|rm` (spec 3.1, 4.1): the laptop's offline prompt queue, through
 * the agent. Prompts get there with `dock session send BOX/SESSION TEXT --queue` when the box cannot
 * be reached; the agent types them once the box is back (and the agent's turn has ended).
 *
 * @module
 */
import type { Command } from "./commander.ts";
import type { QueueItem } from "../client/wire.ts";
import { agentClient } from "./agent.ts";
import { excerpt, guarded, printJson, table } from "./output.ts";

/** Adds `queue` to `dock`. */
export function queueCommands(program: Command): void {
  const queue = program.command("queue").description("the offline prompt queue");

  queue.command("list").alias("ls").description("queued prompts, oldest first").option("--json", "print JSON")
    .action((o) =>
      guarded(async () => {
        const items = await (await agentClient()).queue();
        if (o.json) return printJson(items);
        table(
          ["ID", "TARGET", "STATE", "ATTEMPTS", "TEXT", "ERROR"],
          items.map((item) => [
            item.id,
            `${item.box}/${item.session}`,
            stateOf(item),
            item.attempts ?? 0,
            excerpt(item.text),
            item.error,
          ]),
        );
      }, "dock")
    );

  queue.command("send").description("send a queued prompt now, without waiting for the agent's turn")
    .argument("<id>").option("--json", "print JSON").action((id, o) =>
      guarded(async () => {
        const item = await (await agentClient()).sendQueued(id);
        if (o.json) return printJson(item);
        report(item, { sent: true });
        if (item.state === "failed") Deno.exit(1);
      }, "dock")
    );

  queue.command("retry").description("put a failed prompt back in the queue").argument("<id>")
    .option("--json", "print JSON").action((id, o) =>
      guarded(async () => {
        const item = await (await agentClient()).retryQueued(id);
        if (o.json) return printJson(item);
        report(item);
      }, "dock")
    );

  queue.command("edit").description("change a queued prompt (it goes back in line)").argument("<id>")
    .option("--text <text>", "the new prompt").option("--box <box>", "another box")
    .option("--session <session>", "another session").option("--json", "print JSON").action((id, o) =>
      guarded(async () => {
        const item = await (await agentClient()).editQueued(id, {
          text: o.text,
          box: o.box,
          session: o.session,
        });
        if (o.json) return printJson(item);
        report(item);
      }, "dock")
    );

  queue.command("rm").alias("remove").description("discard a queued prompt").argument("<id>")
    .option("--json", "print JSON").action((id, o) =>
      guarded(async () => {
        const item = await (await agentClient()).removeQueued(id);
        if (o.json) return printJson(item);
        console.log(`removed ${item.id} (${item.box}/${item.session}, was ${item.state})`);
      }, "dock")
    );
}

function stateOf(item: QueueItem): string {
  return item.blocked ? `${item.state} (blocked)` : item.state;
}

function report(item: QueueItem, options: { sent?: boolean } = {}): void {
  const where = `${item.box}/${item.session}`;
  const line = item.state === "failed"
    ? `${item.id}: failed (${where}): ${item.error ?? "unknown error"}`
    : item.state === "queued" && options.sent
    ? `${item.id}: queued for ${where} (the box did not answer; it is sent again once it does)`
    : `${item.id}: ${stateOf(item)} (${where})`;
  console.log(line);
}
