import { join } from "node:path";
import type { StreamLine } from "../client/wire.ts";
import { assertEquals, assertStringIncludes } from "../tests/assert.ts";
import { setupPort80 } from "./port80.ts";

/** A fake iptables that keeps its one rule in a file and records every call. */
async function fakeIptables(dir: string): Promise<{ command: string; calls: () => Promise<string[]> }> {
  const log = join(dir, "calls");
  const state = join(dir, "rule");
  const command = join(dir, "iptables");
  await Deno.writeTextFile(
    command,
    `#!/bin/sh
echo "$*" >>'${log}'
case "$3" in
  -C) test -f '${state}' ;;
  -A) echo "$*" >'${state}' ;;
  -D) rm '${state}' ;;
esac
`,
    { mode: 0o755 },
  );
  return { command, calls: async () => (await Deno.readTextFile(log)).trim().split("\n") };
}

async function collect(lines: AsyncGenerator<StreamLine>): Promise<StreamLine[]> {
  const all: StreamLine[] = [];
  for await (const line of lines) all.push(line);
  return all;
}

Deno.test("setupPort80: as root, the rule once, removed once; not root, the exact command and nothing changed", async () => {
  if (Deno.build.os !== "linux") return;
  const dir = await Deno.makeTempDir({ prefix: "dock-port80-" });
  try {
    const fake = await fakeIptables(dir);
    const rule = "-t nat -A OUTPUT -o lo -p tcp --dport 80 -j REDIRECT --to-ports 1377";
    const added = await collect(setupPort80({ proxyPort: 1377, root: true, iptables: fake.command }));
    assertEquals(added.at(-1), { done: true });
    const again = await collect(setupPort80({ proxyPort: 1377, root: true, iptables: fake.command }));
    assertEquals(again.map((l) => l.line).filter(Boolean).at(-1), "nothing to add");
    const removed = await collect(
      setupPort80({ proxyPort: 1377, root: true, remove: true, iptables: fake.command }),
    );
    assertEquals(removed.at(-1), { done: true });
    assertEquals(await fake.calls(), [
      rule.replace("-A", "-C"),
      rule,
      rule.replace("-A", "-C"),
      rule.replace("-A", "-C"),
      rule.replace("-A", "-D"),
    ]);

    const user = await collect(setupPort80({ proxyPort: 1377, root: false, iptables: fake.command }));
    assertEquals(user.map((l) => l.line).filter(Boolean).at(-1), `sudo iptables ${rule}`);
    assertStringIncludes(user.at(-1)?.error ?? "", "not root");
    assertEquals((await fake.calls()).length, 5, "nothing ran");

    const missing = await collect(setupPort80({ proxyPort: 1377, root: true, path: dir + "/nowhere" }));
    assertStringIncludes(missing.at(-1)?.error ?? "", "iptables is not installed");
    // Removing without iptables: nothing can be set, so nothing to do (not a request to install it).
    const none = await collect(
      setupPort80({ proxyPort: 1377, root: true, remove: true, path: dir + "/nowhere" }),
    );
    assertEquals(none, [
      { line: "iptables is not installed here, so no redirect of dock's is set: nothing to remove" },
      { done: true },
    ]);
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});
