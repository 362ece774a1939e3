/**
 * An example gate: before a command runs (`before:exec`: `POST exec`, a unit's command) or text is typed
 * into a session (`before:session.send`), it refuses what would force-push (unless its
 * `allow_force_push` setting says otherwise) or delete recursively from `/` or `~`. A refusal answers the
 * caller 403 `gate_refused` with the reason. Gates run on boxes only.
 */
import { definePlugin, type GateResult } from "@dock/plugin";

const RM_ROOT = /\brm\s+(-[a-zA-Z]*[rR][a-zA-Z]*\s+|--recursive\s+)+(-\S+\s+)*(\/|~|\$HOME)(\s|$|\/\*)/;
const FORCE_PUSH = /\bgit\s+push\b[^\n;&|]*\s(--force\b|-f\b|--force-with-lease\b)/;

/** Why `text` must not run, or null. */
export function refusal(text: string, allowForcePush = false): string | null {
  if (RM_ROOT.test(text)) return "deletes recursively from / or the home folder";
  if (!allowForcePush && FORCE_PUSH.test(text)) {
    return "force-pushes (set allow_force_push to let it through)";
  }
  return null;
}

export default definePlugin({
  async gate(request, ctx): Promise<GateResult | void> {
    let text: string | undefined;
    if (request.action === "exec") {
      const command = request.target.command;
      text = Array.isArray(command) ? command.join(" ") : command;
    } else if (request.action === "session.send") {
      text = request.target.text;
    }
    const why = text === undefined ? null : refusal(text, ctx.config.allow_force_push === true);
    if (!why) return;
    await ctx.kv.set("refused", ((await ctx.kv.get<number>("refused")) ?? 0) + 1);
    ctx.log(`refused ${request.action} from ${request.origin}: ${why}`);
    return { allow: false, reason: `guard: ${why}` };
  },
});
