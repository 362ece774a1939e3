import type { BoxStatus } from "../client/wire.ts";
import { assert, assertEquals } from "../tests/assert.ts";
import { KeptStatuses } from "./box_status.ts";

function boxStatus(name: string): BoxStatus {
  return {
    name,
    kind: "tls",
    transport: "tls",
    address: `https://127.0.0.1:1/${name}`,
    online: true,
    since: null,
    error: null,
    latency_ms: null,
    build: null,
    behind: false,
  };
}

Deno.test("kept statuses: made once, then again only for the box that changed; the whole array follows", () => {
  const statuses = [boxStatus("a"), boxStatus("b"), boxStatus("c")];
  let asked = 0;
  const list = () => {
    asked++;
    return statuses;
  };
  const kept = new KeptStatuses();
  const first = kept.parts(list);
  assertEquals(JSON.parse(kept.json(list)), statuses);
  assert(kept.parts(list) === first && asked === 1, "nothing changed: nothing made again, nothing asked");

  // Changed in place (as a health check does), then said: b's part only is made again.
  statuses[1].online = false;
  statuses[1].error = "down";
  assertEquals(kept.parts(list)[1].online, true, "not said yet: kept");
  kept.changed("b");
  const after = kept.parts(list);
  assert(after[0] === first[0] && after[2] === first[2], "a's and c's parts are the ones kept");
  assertEquals([after[1].online, JSON.parse(after[1].json).error], [false, "down"]);
  assertEquals(JSON.parse(kept.json(list)), statuses);

  // A box gone (and one added) changes the list; the others' parts stay.
  statuses.splice(0, 1, boxStatus("d"));
  kept.changed("a");
  kept.changed("d");
  const moved = kept.parts(list);
  assertEquals(moved.map((part) => part.name), ["d", "b", "c"]);
  assert(moved[2] === first[2]);
  assertEquals(JSON.parse(kept.json(list)), statuses);
});
