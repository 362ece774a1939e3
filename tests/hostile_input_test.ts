/**
 * Hostile input gets a short, fitting 4xx (issue 11): an error never echoes a huge value back whole; a NUL,
 * a lone surrogate, invalid UTF-8 or JSON nested 10,000 deep is a 400 naming what is wrong, never a 500.
 */
import { assert, assertEquals } from "./assert.ts";
import { MAX_ERROR_MESSAGE } from "../core/http.ts";
import { join } from "node:path";
import { makeRepo, startAgent, startBox, stopWithin } from "./harness.ts";

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
