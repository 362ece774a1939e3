import { assertEquals } from "../tests/assert.ts";
import { Turns } from "./turns.ts";

Deno.test("Turns: work for one key runs one at a time in the order asked, a failure ends its turn, other keys do not wait", async () => {
  const turns = new Turns();
  const log: string[] = [];
  const gate = Promise.withResolvers<void>();
  const first = turns.run("a", async () => {
    log.push("a1 start");
    await gate.promise;
    log.push("a1 end");
    return 1;
  });
  const second = turns.run("a", () => {
    log.push("a2 start");
    return Promise.reject(new Error("a2 failed"));
  });
  const third = turns.run("a", () => {
    log.push("a3 start");
    return Promise.resolve(3);
  });
  const other = await turns.run("b", () => {
    log.push("b start");
    return Promise.resolve("b");
  });
  assertEquals(other, "b");
  assertEquals(turns.busy("a"), true);
  assertEquals(log, ["a1 start", "b start"]);
  gate.resolve();
  assertEquals(await first, 1);
  assertEquals(await second.catch((error: Error) => error.message), "a2 failed");
  assertEquals(await third, 3);
  assertEquals(log, ["a1 start", "b start", "a1 end", "a2 start", "a3 start"]);
  assertEquals([turns.busy("a"), turns.busy("b")], [false, false]);
});

Deno.test("Turns: a turn ended twice ends once; the next turn waits for the first only", async () => {
  const turns = new Turns();
  const end = await turns.take("k");
  let started = false;
  const next = turns.take("k").then((finish) => {
    started = true;
    return finish;
  });
  end();
  end();
  const finish = await next;
  assertEquals(started, true);
  assertEquals(turns.busy("k"), true);
  finish();
  await Promise.resolve();
  assertEquals(turns.busy("k"), false);
});
