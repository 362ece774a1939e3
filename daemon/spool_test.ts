import { join } from "node:path";
import { assertEquals, assertRejects } from "../tests/assert.ts";
import type { AgentReport } from "../client/wire.ts";
import { replaySpool, spoolDir } from "./spool.ts";

function event(n: number): AgentReport {
  return {
    type: "agent.finished",
    origin: "claude",
    data: { path: "/w", agent: "claude", session_id: `s-${n}` },
    session: "main",
    time: `2026-11-22T10:00:0${n}.000Z`,
  };
}

async function names(dir: string): Promise<string[]> {
  const found: string[] = [];
  for await (const entry of Deno.readDir(dir)) found.push(entry.name);
  return found.sort();
}

Deno.test("spoolDir is box/spool under the state directory", () => {
  assertEquals(spoolDir("/var/state/dock"), "/var/state/dock/box/spool");
});

Deno.test("replaySpool replays in file-name order and deletes what it ingested", async () => {
  const dir = await Deno.makeTempDir();
  try {
    // Written out of order on purpose: the names, not the write order, are the arrival order.
    await Deno.writeTextFile(join(dir, "000001700000002-20-b.json"), JSON.stringify(event(2)));
    await Deno.writeTextFile(join(dir, "000001700000001-10-a.json"), JSON.stringify(event(1)));
    await Deno.writeTextFile(join(dir, "000001700000003-30-c.json"), JSON.stringify(event(3)));
    const seen: AgentReport[] = [];
    const count = await replaySpool(dir, (body) => {
      seen.push(body);
      return Promise.resolve();
    });
    assertEquals(count, 3);
    assertEquals(seen, [event(1), event(2), event(3)]);
    assertEquals(await names(dir), []);
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("replaySpool moves files that are not events aside and skips files being written", async () => {
  const dir = await Deno.makeTempDir();
  try {
    await Deno.writeTextFile(join(dir, "000001700000001-1-a.json"), "{ not json");
    await Deno.writeTextFile(join(dir, "000001700000002-1-b.json"), JSON.stringify({ type: "agent.ready" }));
    await Deno.writeTextFile(join(dir, "000001700000003-1-c.json"), JSON.stringify(event(3)));
    await Deno.writeTextFile(join(dir, ".000001700000004-1-d.json.tmp"), "{");
    await Deno.writeTextFile(join(dir, "notes.txt"), "left alone");
    const seen: AgentReport[] = [];
    const count = await replaySpool(dir, (body) => {
      seen.push(body);
      return Promise.resolve();
    });
    assertEquals(count, 1);
    assertEquals(seen, [event(3)]);
    assertEquals(await names(dir), [".000001700000004-1-d.json.tmp", "bad", "notes.txt"]);
    assertEquals(await names(join(dir, "bad")), ["000001700000001-1-a.json", "000001700000002-1-b.json"]);
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("replaySpool stops at a failed ingest and keeps the rest for next time", async () => {
  const dir = await Deno.makeTempDir();
  try {
    for (const n of [1, 2, 3]) {
      await Deno.writeTextFile(join(dir, `00000170000000${n}-1-x.json`), JSON.stringify(event(n)));
    }
    await assertRejects(
      () =>
        replaySpool(dir, (body) => {
          if (body.data.session_id === "s-2") return Promise.reject(new Error("database is locked"));
          return Promise.resolve();
        }),
      Error,
      "locked",
    );
    assertEquals(await names(dir), ["000001700000002-1-x.json", "000001700000003-1-x.json"]);
    const seen: string[] = [];
    assertEquals(
      await replaySpool(dir, (body) => {
        seen.push(String(body.data.session_id));
        return Promise.resolve();
      }),
      2,
    );
    assertEquals(seen, ["s-2", "s-3"]);
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("replaySpool returns 0 for an empty or missing folder", async () => {
  const dir = await Deno.makeTempDir();
  try {
    const never = () => Promise.reject(new Error("nothing to ingest"));
    assertEquals(await replaySpool(dir, never), 0);
    assertEquals(await replaySpool(join(dir, "missing"), never), 0);
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});
