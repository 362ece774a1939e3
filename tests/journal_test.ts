/**
 * The event journals of a box and of the laptop agent are bounded in bytes (issue 11): an announcement
 * larger than 64 KiB is refused with 413, many large events never grow the databases past the bound,
 * and clients resuming from 0 get what the journal holds, in order.
 */
import { join } from "node:path";
import { AgentClient } from "../client/agent.ts";
import { WAL_LIMIT } from "../core/store.ts";
import type { DockEvent } from "../client/wire.ts";
import { assert, assertEquals } from "./assert.ts";
import { startAgent, startBox, stopWithin } from "./harness.ts";
import { until } from "./wait.ts";

const BOUND = 2 * 1024 * 1024;

async function post(url: string, body: unknown, init: { token?: string; client?: Deno.HttpClient } = {}) {
  const response = await fetch(url, {
    method: "POST",
    body: JSON.stringify(body),
    headers: {
      "content-type": "application/json",
      ...init.token ? { authorization: `Bearer ${init.token}` } : {},
    },
    client: init.client,
  });
  return { status: response.status, body: await response.json() };
}

async function collect(events: AsyncGenerator<DockEvent>, until: (event: DockEvent) => boolean) {
  const seen: DockEvent[] = [];
  for await (const event of events) {
    seen.push(event);
    if (until(event)) break;
  }
  return seen;
}

async function fileSize(path: string): Promise<number> {
  return (await Deno.stat(path)).size;
}

Deno.test("journals: 413 past 64 KiB of data; box and agent databases stay within their byte bound", async () => {
  const env = { DOCK_JOURNAL_BYTES: String(BOUND) };
  await using box = await startBox({ env });
  const agent = await startAgent(box.dirs, { env: { ...env, DOCK_AGENT_HEALTH_MS: "200" } });
  const socket = Deno.createHttpClient({ proxy: { transport: "unix", path: box.dirs.socket } });
  try {
    const tooBig = await post("http://localhost/v1/events", {
      type: "big.one",
      data: { blob: "x".repeat(70_000) },
    }, {
      client: socket,
    });
    assertEquals(tooBig.status, 413);
    assertEquals((tooBig.body as { error: { code: string } }).error.code, "event_too_large");
    const laptopTooBig = await post(`${agent.url}/v1/events`, {
      type: "big.one",
      data: { blob: "x".repeat(70_000) },
    }, {
      token: agent.token,
    });
    assertEquals(laptopTooBig.status, 413);

    const laptop = new AgentClient({ url: agent.url, token: agent.token });
    await laptop.addLocal("local");
    // 200 events of 60 KB (12 MB) through a 2 MB journal on the box, merged into a 2 MB one on the laptop.
    const blob = "y".repeat(60_000);
    for (let i = 0; i < 200; i++) {
      const answer = await post("http://localhost/v1/events", { type: "big.one", data: { i, blob } }, {
        client: socket,
      });
      assertEquals(answer.status, 201);
    }
    const last = await post("http://localhost/v1/events", { type: "big.last" }, { client: socket });
    assertEquals(last.status, 201);

    // Resuming from 0 gets what each journal holds, in order, ending with the last event.
    const fromBox = await collect(box.client.events({ after: 0 }), (event) => event.type === "big.last");
    const boxIds = fromBox.map((event) => event.id!);
    assertEquals(boxIds, [...boxIds].sort((a, b) => a - b));
    assert(fromBox.length < 60, `the box replayed ${fromBox.length} events`);
    const fromLaptop = await until(async () => {
      const seen = await collect(laptop.events({ after: 0 }), (event) => event.type === "big.last");
      return seen.at(-1)?.box === "local" ? seen : undefined;
    }, { timeoutMs: 30_000 });
    assert(fromLaptop.filter((event) => event.type === "big.one").length < 60);

    const boxDb = await fileSize(join(box.dirs.state, "box", "dockd.db"));
    const agentDb = await fileSize(join(box.dirs.state, "client", "agent.db"));
    const boxWal = await fileSize(join(box.dirs.state, "box", "dockd.db-wal"));
    const agentWal = await fileSize(join(box.dirs.state, "client", "agent.db-wal"));
    // 12 MB went through each. The database holds the bound plus SQLite's pages and the other tables;
    // the write-ahead log is cut back to its own limit (core/store.ts) after each checkpoint.
    assert(boxDb < 1.5 * BOUND, `dockd.db is ${boxDb} bytes`);
    assert(agentDb < 1.5 * BOUND, `agent.db is ${agentDb} bytes`);
    assert(
      boxWal <= 2 * WAL_LIMIT && agentWal <= 2 * WAL_LIMIT,
      `the logs are ${boxWal} and ${agentWal} bytes`,
    );
    laptop.close();
  } finally {
    socket.close();
    await stopWithin(agent);
  }
});
