import { assertEquals } from "../tests/assert.ts";
import { DockError } from "../client/errors.ts";
import type { DockEvent, UpgradeStarted } from "../client/wire.ts";
import { join } from "../core/posix_path.ts";
import { packageName, type PackageRelease, withoutRuntimeName } from "../package/release.ts";
import { sourceFingerprint } from "../package/sources.ts";
import { FakeClock } from "../tests/fake_clock.ts";
import type { Boxes } from "./boxes.ts";
import { upgradeBox } from "./upgrade.ts";

/**
 * This laptop's package, kept for a linux-x64 box (the bytes do not matter here: the box is fake): 4,000
 * bytes whole, 300 without its runtime.
 */
async function keepPackage(client: string): Promise<void> {
  const release: PackageRelease = {
    name: "dock",
    id: "0123456789abcdef",
    version: "0.1.0",
    commit: "bbbbbbbbbbbb",
    target: "linux-x64",
    deno: Deno.version.deno,
    runtime: "a".repeat(64),
  };
  const packages = join(client, "packages");
  await Deno.mkdir(packages);
  await Deno.writeFile(join(packages, `${packageName(release)}.tar.gz`), new Uint8Array(4000));
  await Deno.writeFile(join(packages, withoutRuntimeName(release)), new Uint8Array(300));
  await Deno.writeTextFile(
    join(packages, "dock-linux-x64.kept.json"),
    JSON.stringify({ sources: await sourceFingerprint(), release }),
  );
}

Deno.test("upgrade: a box that cannot link the runtime (409) or predates runtime-less packages (400) gets the whole package; another refusal is the answer", async () => {
  for (const refusal of ["runtime_missing", "bad_package", "same_release"]) {
    const fallsBack = refusal !== "same_release";
    const client = await Deno.makeTempDir({ prefix: "dock-upgrade-unit-" });
    try {
      await keepPackage(client);
      // A box on an older build that refuses the package without its runtime, then takes the whole one.
      const received: number[] = [];
      const box = {
        info: () => Promise.resolve({ os: "Linux", arch: "x86_64", build: "0.0.9+aaaaaaaaaaaa" }),
        async upgrade(data: ReadableStream<Uint8Array>): Promise<UpgradeStarted> {
          received.push((await new Response(data).arrayBuffer()).byteLength);
          if (received.length === 1) throw new DockError(refusal, `refused (${refusal})`, { status: 409 });
          return { from: "0.0.9+aaaaaaaaaaaa", to: "0.1.0+bbbbbbbbbbbb", mode: "self", after: 7 };
        },
        async *events(): AsyncGenerator<DockEvent> {
          yield { id: 8, type: "box.upgraded", time: new Date().toISOString() };
        },
      };
      const boxes = {
        client: () => box,
        check: () => Promise.resolve(),
        status: () => [{ name: "b", online: true }],
      } as unknown as Boxes;
      const lines = [];
      const clock = new FakeClock(0);
      for await (const line of upgradeBox({ paths: { client }, boxes, clock }, "b")) lines.push(line);
      if (!fallsBack) {
        assertEquals(received, [300]);
        assertEquals(lines.at(-1)?.error, `upload: refused (${refusal})`);
        continue;
      }
      assertEquals(lines.at(-1)?.error, undefined, JSON.stringify(lines));
      assertEquals(received, [300, 4000]);
      assertEquals(
        lines.some((line) => line.line === `refused (${refusal}): sending the whole package`),
        true,
        JSON.stringify(lines),
      );
    } finally {
      await Deno.remove(client, { recursive: true });
    }
  }
});

Deno.test("upgrade: a box that never reports its hand-over is given up after 120 s on the agent's clock", async () => {
  const client = await Deno.makeTempDir({ prefix: "dock-upgrade-unit-" });
  try {
    await keepPackage(client);
    const clock = new FakeClock(0);
    // The box takes the package, then its stream stays silent until the hand-over's deadline cuts it.
    const streams: number[] = [];
    let listening!: () => void;
    const silent = new Promise<void>((resolve) => listening = resolve);
    const box = {
      info: () => Promise.resolve({ os: "Linux", arch: "x86_64", build: "0.0.9+aaaaaaaaaaaa" }),
      async upgrade(data: ReadableStream<Uint8Array>): Promise<UpgradeStarted> {
        await new Response(data).arrayBuffer();
        return { from: "0.0.9+aaaaaaaaaaaa", to: "0.1.0+bbbbbbbbbbbb", mode: "self", after: 7 };
      },
      async *events(options: { after: number; signal: AbortSignal }): AsyncGenerator<DockEvent> {
        streams.push(options.after);
        yield { id: 8, type: "box.upgrading", time: new Date(0).toISOString() };
        listening();
        await new Promise((_, reject) =>
          options.signal.addEventListener("abort", () => reject(options.signal.reason))
        );
      },
    };
    const boxes = {
      client: () => box,
      check: () => Promise.resolve(),
      reset: () => {},
      status: () => [{ name: "b", online: true }],
    } as unknown as Boxes;
    const lines: { error?: string }[] = [];
    const done = (async () => {
      for await (const line of upgradeBox({ paths: { client }, boxes, clock }, "b")) lines.push(line);
    })();
    await silent;
    clock.advance(119_999);
    assertEquals(lines.some((line) => line.error), false, "still waiting within its deadline");
    clock.advance(1);
    await done;
    assertEquals(
      streams,
      [7],
      "one stream, from the event the upgrade answered, never retried past the deadline",
    );
    assertEquals(
      lines.at(-1)?.error?.includes("did not report the upgrade within 120 s"),
      true,
      JSON.stringify(lines),
    );
  } finally {
    await Deno.remove(client, { recursive: true });
  }
});
