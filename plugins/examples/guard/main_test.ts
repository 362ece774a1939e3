import assert from "node:assert/strict";
import { fakeContext, fakeGate } from "@dock/plugin/testing";
import plugin, { refusal } from "./main.ts";

Deno.test("guard refuses rm -rf of / or ~ and force-pushes, and lets the rest through", async () => {
  const ctx = fakeContext();
  const refused = await plugin.gate(fakeGate("exec", { location: "web", command: "rm -rf /" }), ctx);
  assert.deepEqual(refused, { allow: false, reason: "guard: deletes recursively from / or the home folder" });
  const argv = await plugin.gate(
    fakeGate("exec", { command: ["git", "push", "--force", "origin", "main"] }),
    ctx,
  );
  assert.equal(argv?.allow, false);
  const typed = await plugin.gate(fakeGate("session.send", { session: "web-1", text: "rm -fr ~\n" }), ctx);
  assert.equal(typed?.allow, false);
  assert.equal(await plugin.gate(fakeGate("exec", { command: "rm -rf ./build" }), ctx), undefined);
  assert.equal(await plugin.gate(fakeGate("exec", { command: "git push origin main" }), ctx), undefined);
  assert.equal(
    await plugin.gate(fakeGate("session.send", { session: "web-1", keys: ["Enter"] }), ctx),
    undefined,
  );
  assert.equal(await ctx.kv.get("refused"), 3);
  assert.equal(ctx.logs.length, 3);
  assert.match(ctx.logs[0], /^refused exec from api: /);
});

Deno.test("guard lets a force-push through when its setting allows it", async () => {
  const ctx = fakeContext({ config: { allow_force_push: true } });
  assert.equal(await plugin.gate(fakeGate("exec", { command: "git push -f" }), ctx), undefined);
  assert.equal(refusal("git push -f"), "force-pushes (set allow_force_push to let it through)");
});
