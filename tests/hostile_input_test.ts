/**
 * Hostile input gets a short, fitting 4xx (issue 11): an error never echoes a huge value back whole.
 */
import { assert, assertEquals } from "./assert.ts";
import { MAX_ERROR_MESSAGE } from "../core/http.ts";
import { startBox } from "./harness.ts";

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
