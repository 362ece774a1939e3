/**
 * The pane output file the tests' screen waits watch (pane_output.ts): it grows with what the session
 * prints, so a wait on it wakes when the screen changes; a session that does not exist is refused.
 */
import { assertRejects, assertStringIncludes } from "./assert.ts";
import { makeDirs, makeRepo, startBox } from "./harness.ts";
import { paneOutput } from "./pane_output.ts";
import { until } from "./wait.ts";

Deno.test("paneOutput: a file that grows with what the pane prints; an unknown session is refused", async () => {
  const dirs = await makeDirs();
  await using box = await startBox({ dirs });
  await box.client.addLocation({ name: "app", path: await makeRepo(dirs.home, "app") });
  await box.client.createSession({ location: "app", command: "sh", name: "printer" });
  const printed = await paneOutput(box, "printer");
  await box.client.send("printer", "echo printed-$((6*7))");
  // Woken only by the file (no backoff with a watch): the pane's own bytes, the echo's answer among them.
  const text = await until(async () => {
    const bytes = await Deno.readTextFile(printed);
    return bytes.includes("printed-42\r\n") && bytes;
  }, { watch: printed, what: "the echo in the pane's output file" });
  assertStringIncludes(text, "echo printed-$((6*7))");
  await assertRejects(() => paneOutput(box, "nobody"), Error, "nobody");
});
