/**
 * Hostile input gets a short, fitting 4xx (issue 11): an error never echoes a huge value back whole; a NUL,
 * a lone surrogate, invalid UTF-8 or JSON nested 10,000 deep is a 400 naming what is wrong, never a 500.
 */
import { assert, assertEquals } from "./assert.ts";
import { MAX_ERROR_MESSAGE } from "../core/http.ts";
import { join } from "node:path";
import { makeDirs, makeRepo, startAgent, startBox, stopWithin } from "./harness.ts";
import { untilEvent } from "./wait.ts";
import { AgentClient } from "../client/agent.ts";

Deno.test("a 5 MB bad value is refused with a bounded message, not echoed back", async () => {
  await using box = await startBox();
  const client = Deno.createHttpClient({ proxy: { transport: "unix", path: box.dirs.socket } });
  try {
    const huge = "x".repeat(5 * 1024 * 1024);
    const response = await fetch("http://localhost/v1/guard", {
      method: "PUT",
      body: JSON.stringify({ enabled: true, memory_percent: huge }),
      headers: { "content-type": "application/json" },
      client,
    });
    const text = await response.text();
    assertEquals(response.status, 400);
    const body = JSON.parse(text) as { error: { code: string; message: string } };
    assert(
      body.error.message.length <= MAX_ERROR_MESSAGE,
      `message of ${body.error.message.length} characters`,
    );
    assert(text.length < 4 * MAX_ERROR_MESSAGE, `answer of ${text.length} bytes`);
  } finally {
    client.close();
  }
});

Deno.test("NUL, lone surrogates, invalid UTF-8 and deep nesting are 400s naming what is wrong, on box and laptop", async () => {
  await using box = await startBox();
  const agent = await startAgent(box.dirs);
  const socket = Deno.createHttpClient({ proxy: { transport: "unix", path: box.dirs.socket } });
  const send = async (
    target: "box" | "agent",
    method: string,
    path: string,
    body?: string | Uint8Array<ArrayBuffer>,
  ) => {
    const url = target === "box" ? `http://localhost${path}` : `${agent.url}${path}`;
    const response = await fetch(url, {
      method,
      body,
      headers: {
        "content-type": "application/json",
        ...target === "agent" ? { authorization: `Bearer ${agent.token}` } : {},
      },
      client: target === "box" ? socket : undefined,
    });
    const text = await response.text();
    return {
      status: response.status,
      error: (JSON.parse(text) as { error?: { code: string; message: string } }).error,
    };
  };
  try {
    const repo = await makeRepo(join(box.dirs.home, "work"));
    await box.client.addLocation({ name: "app", path: repo });
    const cases: [string, "box" | "agent", string, string, string | Uint8Array<ArrayBuffer>, string][] = [
      ["NUL in an env value", "box", "PUT", "/v1/env", JSON.stringify({ env: { A: "x\u0000y" } }), "env.A"],
      [
        "NUL in a command",
        "box",
        "POST",
        "/v1/exec",
        JSON.stringify({ location: "app", command: "echo\u0000hi" }),
        "command",
      ],
      [
        "NUL in a base",
        "box",
        "POST",
        "/v1/locations/app/worktrees",
        JSON.stringify({ name: "w", base: "main\u0000" }),
        "base",
      ],
      [
        "a lone surrogate",
        "box",
        "POST",
        "/v1/exec",
        '{"location":"app","command":"echo \\ud800"}',
        "command",
      ],
      [
        "NUL in a path",
        "box",
        "POST",
        "/v1/locations/new",
        JSON.stringify({ name: "n", path: "/tmp/a\u0000b" }),
        "path",
      ],
      [
        "NUL in queue text",
        "agent",
        "POST",
        "/v1/queue",
        JSON.stringify({ box: "local", session: "s", text: "a\u0000b" }),
        "text",
      ],
      [
        "invalid UTF-8",
        "box",
        "POST",
        "/v1/exec",
        new Uint8Array([0x7b, 0x22, 0xff, 0xfe, 0x22, 0x3a, 0x31, 0x7d]),
        "UTF-8",
      ],
      [
        "10,000 levels deep",
        "agent",
        "PUT",
        "/v1/app/k",
        "[".repeat(10_000) + "]".repeat(10_000),
        "deeper than 64",
      ],
      [
        "10,000 levels deep",
        "box",
        "PUT",
        "/v1/hooks",
        '{"hooks":' + "[".repeat(10_000) + "]".repeat(10_000) + "}",
        "deeper than 64",
      ],
      [
        "an agent report's garbage time",
        "box",
        "POST",
        "/v1/events",
        JSON.stringify({
          type: "agent.finished",
          origin: "claude",
          data: { path: "/w", agent: "claude", session_id: null },
          time: "garbage-time",
        }),
        "time",
      ],
    ];
    for (const [label, target, method, path, body, named] of cases) {
      const answer = await send(target, method, path, body);
      assertEquals(answer.status, 400, `${label}: ${JSON.stringify(answer.error)}`);
      assert(answer.error?.message.includes(named), `${label}: ${answer.error?.message}`);
    }
    // A NUL or a 5,000-character name in a folder listing's path.
    for (const path of [encodeURIComponent("/tmp/a\u0000b"), "x".repeat(5000)]) {
      const listing = await send("box", "GET", `/v1/fs?path=${path}`);
      assertEquals(listing.status, 400, JSON.stringify(listing.error));
    }
    // Both still answer.
    assertEquals((await box.client.info()).os, Deno.build.os);
    assertEquals((await send("agent", "GET", "/v1/status")).status, 200);
  } finally {
    socket.close();
    await stopWithin(agent);
  }
});

/** The answer to a raw request to the box's socket (or the laptop's API, with `agent`), its JSON parsed. */
async function ask(
  box: { dirs: { socket: string } },
  method: string,
  path: string,
  options: { body?: unknown; agent?: { url: string; token: string } } = {},
): Promise<{ status: number; body: Record<string, unknown> }> {
  const client = Deno.createHttpClient({ proxy: { transport: "unix", path: box.dirs.socket } });
  try {
    const response = await fetch(options.agent ? `${options.agent.url}${path}` : `http://localhost${path}`, {
      method,
      body: options.body === undefined ? undefined : JSON.stringify(options.body),
      headers: {
        "content-type": "application/json",
        ...options.agent ? { authorization: `Bearer ${options.agent.token}` } : {},
      },
      client: options.agent ? undefined : client,
    });
    // An event stream answers 200 and stays open: its status is the answer.
    if (response.headers.get("content-type")?.startsWith("text/event-stream")) {
      await response.body?.cancel();
      return { status: response.status, body: {} };
    }
    return { status: response.status, body: JSON.parse(await response.text()) };
  } finally {
    client.close();
  }
}

Deno.test("a kit file name past 255 bytes a segment or 1,024 a path is a 400 naming it, and nothing is written", async () => {
  await using box = await startBox();
  const repo = await makeRepo(join(box.dirs.home, "work"));
  await box.client.addLocation({ name: "app", path: repo });
  const kits = join(box.dirs.state, "box", "kits");
  const tooLong = [
    "a".repeat(256), // one segment over NAME_MAX
    `bin/${"é".repeat(128)}`, // 128 characters, 256 bytes of UTF-8
    `${"d".repeat(200)}/`.repeat(6) + "f", // 1,207 bytes: every segment fits, the path does not
    `${"d".repeat(200)}/`.repeat(25) + "f", // 5,026 bytes: once a 500 (File name too long)
  ];
  for (const name of tooLong) {
    const answer = await ask(box, "PUT", "/v1/locations/app/kit", {
      body: { id: "long", files: { "ok.txt": "fine", [name]: "x" } },
    });
    const error = answer.body.error as { code: string; message: string };
    assertEquals(answer.status, 400, `${name.length} characters: ${JSON.stringify(error)}`);
    assert(error.message.startsWith("kit.json: files"), error.message);
    assert(error.message.includes(name.slice(0, 40)), `names the file: ${error.message}`);
    // Refused before anything was written: no kit folder, not even a fresh one left aside.
    const left = await Array.fromAsync(Deno.readDir(kits)).catch(() => []);
    assertEquals(left.map((entry) => entry.name), [], `${name.length} characters left files`);
  }
  // At the limits it is applied.
  const fits = { [`${"a".repeat(255)}`]: "x", [`${"d".repeat(200)}/`.repeat(5) + "f".repeat(19)]: "y" };
  const applied = await ask(box, "PUT", "/v1/locations/app/kit", { body: { id: "long", files: fits } });
  assertEquals(applied.status, 200, JSON.stringify(applied.body));
  assertEquals(await Deno.readTextFile(join(kits, "app", "a".repeat(255))), "x");
});

Deno.test("a NUL in .dock/config.json env or in env.json is a config error naming file and key; exec runs with the rest", async () => {
  await using box = await startBox();
  // JSON text with an escaped NUL: what a script writing these files might leave.
  const repo = await makeRepo(join(box.dirs.home, "work"), "app", {
    ".dock/config.json": '{ "ports": 2, "env": { "GOOD": "yes", "BAD": "a\\u0000b", "ALSO": "$GOOD-too" } }',
  });
  await Deno.mkdir(box.dirs.dockHome, { recursive: true });
  const envFile = join(box.dirs.dockHome, "env.json");
  await Deno.writeTextFile(envFile, '{ "env": { "BOX_GOOD": "1", "BOX_BAD": "\\u0000" } }');
  await box.client.addLocation({ name: "app", path: repo });

  const exec = await ask(box, "POST", "/v1/exec", {
    body: {
      location: "app",
      command: 'echo "$GOOD $ALSO $BOX_GOOD ${BAD-unset} ${BOX_BAD-unset}"',
    },
  });
  assertEquals(exec.status, 200, JSON.stringify(exec.body));
  const output = String(exec.body.output).trim();
  assert(output === "yes yes-too 1 unset unset", `the rest of both files applies: ${output}`);

  // The repository's file: its bad key is a config error naming the file and the key; the rest stands.
  const config = await ask(box, "GET", "/v1/locations/app/config");
  assertEquals(config.status, 200, JSON.stringify(config.body));
  const errors = config.body.errors as { file: string; field: string; message: string }[];
  assertEquals(errors.map((e) => [e.file, e.field]), [[join(repo, ".dock", "config.json"), "env.BAD"]]);
  assert(errors[0].message.includes("NUL"), errors[0].message);
  assertEquals((config.body.repo as { ports: number }).ports, 2);
  assertEquals((config.body.effective as { env: Record<string, string> }).env.GOOD, "yes");

  // The box's file: reading it says what is wrong, naming the file and the key.
  const env = await ask(box, "GET", "/v1/env");
  assertEquals(env.status, 422, JSON.stringify(env.body));
  const error = env.body.error as { message: string; file: string; field: string };
  assertEquals([error.file, error.field], [envFile, "env.BOX_BAD"]);
  assert(error.message.includes("NUL"), error.message);
});

Deno.test("GET events?after= beyond the last id is a 400 naming it, on the box and the laptop", async () => {
  await using box = await startBox();
  const agent = await startAgent(box.dirs);
  try {
    const last = (await box.client.emit({ type: "poke.one" })).id!;
    const beyond = await ask(box, "GET", `/v1/events?after=${last + 1000}`);
    assertEquals(beyond.status, 400, "the box answered an event stream");
    const error = beyond.body.error as { message: string; last_id: number };
    assert(error.message.includes(`after: ${last + 1000}`), error.message);
    assertEquals(error.last_id, last);
    assert(error.message.includes(`last event id is ${last}`), error.message);
    // Up to the last id, it streams.
    assertEquals((await ask(box, "GET", `/v1/events?after=${last}`)).status, 200);

    const laptop = await ask(box, "POST", "/v1/events", { agent, body: { type: "poke.two" } });
    const laptopLast = laptop.body.id as number;
    const ahead = await ask(box, "GET", `/v1/events?after=${laptopLast + 1000}`, { agent });
    assertEquals(ahead.status, 400, "the laptop answered an event stream");
    const laptopError = ahead.body.error as { message: string; last_id: number };
    assert(laptopError.last_id >= laptopLast, JSON.stringify(laptopError));
    assert(laptopError.message.includes(`last event id is ${laptopError.last_id}`), laptopError.message);
  } finally {
    await stopWithin(agent);
  }
});

Deno.test("a box whose database was made anew is merged again from its start, not waited on forever", async () => {
  const dirs = await makeDirs();
  const first = await startBox({ dirs });
  await using agent = await startAgent(dirs);
  const laptop = new AgentClient({ url: agent.url, token: agent.token, origin: "test" });
  try {
    await laptop.addLocal("local");
    // Ids well past what the new journal will reach: the laptop's cursor for the box ends up there.
    for (let i = 0; i < 30; i++) await first.client.emit({ type: "before.reset", data: { i } });
    await untilEvent(laptop, (e) => e.type === "before.reset" && e.data?.i === 29 && e.box === "local", {
      timeoutMs: 30_000,
    });
    await first.stop();
    for (const suffix of ["", "-wal", "-shm"]) {
      await Deno.remove(join(dirs.state, "box", `dockd.db${suffix}`)).catch(() => {});
    }
    await using second = await startBox({ dirs });
    const fresh = await second.client.emit({ type: "after.reset" });
    assert(fresh.id! < 30, `the new journal's ids start again (${fresh.id})`);
    // The laptop copies the new journal from its start rather than waiting for id 30 to come round.
    const merged = await untilEvent(laptop, (e) => e.type === "after.reset" && e.box === "local", {
      timeoutMs: 30_000,
    });
    assertEquals(merged.box, "local");
    // Asked after an id past its journal, the box says where its journal ends.
    const ahead = await ask(second, "GET", "/v1/events?after=30");
    assertEquals((ahead.body.error as { last_id: number }).last_id, fresh.id);
  } finally {
    laptop.close();
    await first.stop();
    await stopWithin(agent);
    await Deno.remove(dirs.root, { recursive: true }).catch(() => {});
  }
});
