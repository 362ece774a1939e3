import { assert, assertEquals, assertRejects, assertStringIncludes, assertThrows } from "../tests/assert.ts";
import { DockError } from "../client/errors.ts";
import { FakeClock } from "../tests/fake_clock.ts";
import { MemoryLog } from "../core/log.ts";
import {
  DEFAULT_GUARD,
  Guard,
  type GuardActions,
  type GuardAgent,
  GuardEpisode,
  type GuardOptions,
  type GuardService,
  type GuardSettings,
  readGuardFile,
  validateGuard,
  writeGuardFile,
} from "./guard.ts";

const GB = 1024 ** 3;

function settings(overrides: Partial<GuardSettings> = {}): GuardSettings {
  return { ...DEFAULT_GUARD, enabled: true, memory_percent: 90, sustain: "30s", ...overrides };
}

// ---------------------------------------------------------------------------------------------------
// GuardEpisode

Deno.test("episode: never acts at or below the threshold", () => {
  const episode = new GuardEpisode(settings());
  for (let t = 0; t <= 120_000; t += 1000) assertEquals(episode.observe(t % 2 ? 90 : 50, t), null);
});

Deno.test("episode: acts once memory has stayed above for sustain", () => {
  const episode = new GuardEpisode(settings());
  assertEquals(episode.observe(95, 0), null);
  assertEquals(episode.observe(95, 29_999), null);
  assertEquals(episode.observe(95, 30_000), "act");
});

Deno.test("episode: a dip to the threshold restarts the sustain clock", () => {
  const episode = new GuardEpisode(settings());
  assertEquals(episode.observe(95, 0), null);
  assertEquals(episode.observe(95, 20_000), null);
  assertEquals(episode.observe(90, 21_000), null);
  assertEquals(episode.observe(95, 22_000), null);
  assertEquals(episode.observe(95, 51_999), null);
  assertEquals(episode.observe(95, 52_000), "act");
});

Deno.test("episode: never acts twice in one episode, acts again after recovery", () => {
  const episode = new GuardEpisode(settings({ sustain: "1s" }));
  assertEquals(episode.observe(99, 0), null);
  assertEquals(episode.observe(99, 1000), "act");
  for (let t = 2000; t < 60_000; t += 1000) assertEquals(episode.observe(99, t), null);
  assertEquals(episode.observe(80, 60_000), null);
  assertEquals(episode.observe(99, 61_000), null);
  assertEquals(episode.observe(99, 62_000), "act");
});

Deno.test("episode: a failed reading neither ends nor extends the episode", () => {
  const episode = new GuardEpisode(settings({ sustain: "2s" }));
  assertEquals(episode.observe(95, 0), null);
  assertEquals(episode.observe(NaN, 1000), null);
  assertEquals(episode.observe(95, 2000), "act");
});

Deno.test("episode: disabled never acts", () => {
  const episode = new GuardEpisode(settings({ enabled: false, sustain: "1s" }));
  for (let t = 0; t <= 10_000; t += 1000) assertEquals(episode.observe(100, t), null);
});

Deno.test("episode: update keeps an ongoing episode, disabling resets it", () => {
  const episode = new GuardEpisode(settings({ sustain: "10s" }));
  assertEquals(episode.observe(95, 0), null);
  episode.update(settings({ sustain: "5s", memory_percent: 92 }));
  assertEquals(episode.observe(95, 5000), "act");

  episode.update(settings({ enabled: false }));
  episode.update(settings({ sustain: "5s" }));
  assertEquals(episode.observe(95, 6000), null, "a fresh episode after the reset");
  assertEquals(episode.observe(95, 11_000), "act");
});

// ---------------------------------------------------------------------------------------------------
// Guard (monitor) with fakes

interface Fake {
  actions: GuardActions;
  announced: Record<string, unknown>[];
  stopped: string[];
  paused: string[];
  setPercent(percent: number): void;
}

function fake(
  options: {
    percent?: number;
    total?: number;
    services?: GuardService[];
    agents?: GuardAgent[];
    failStop?: string[];
  } = {},
): Fake {
  let percent = options.percent ?? 50;
  const services = [...(options.services ?? [])];
  const agents = [...(options.agents ?? [])];
  const result: Fake = {
    announced: [],
    stopped: [],
    paused: [],
    setPercent: (value) => percent = value,
    actions: {
      memoryPercent: () => percent,
      services: () => Promise.resolve([...services]),
      stopService: (service) => {
        if (options.failStop?.includes(service.name)) {
          return Promise.reject(new Error("kill: permission denied"));
        }
        result.stopped.push(service.name);
        services.splice(services.indexOf(service), 1);
        return Promise.resolve();
      },
      agents: () => Promise.resolve([...agents]),
      pauseAgent: (agent) => {
        result.paused.push(agent.session);
        return Promise.resolve();
      },
      announce: (data) => void result.announced.push(data),
      totalMemory: () => options.total ?? 16 * GB,
    },
  };
  return result;
}

function service(name: string, rssGb: number): GuardService {
  return { location: "shop", worktree: "main", name, rss: rssGb * GB };
}

function agent(session: string, rssGb: number): GuardAgent {
  return { session, location: "shop", worktree: "main", rss: rssGb * GB };
}

function clock(): FakeClock {
  return new FakeClock(1_000_000);
}

/** A guard on `time` that logs into a MemoryLog (the guard's `log`). */
function guardOn(
  time: FakeClock,
  options: Omit<GuardOptions, "clock" | "log">,
): { guard: Guard; log: MemoryLog } {
  const log = new MemoryLog();
  return { guard: new Guard({ ...options, clock: time, log }), log };
}

/** Ticks once a second for `seconds` seconds (the first tick at the current time). */
async function run(guard: Guard, time: ReturnType<typeof clock>, seconds: number): Promise<void> {
  for (let i = 0; i < seconds; i++) {
    await guard.tick();
    time.advance(1000);
  }
}

Deno.test("guard: no act below the threshold", async () => {
  const f = fake({ percent: 85, services: [service("api", 2)] });
  const time = clock();
  const { guard } = guardOn(time, { actions: f.actions, settings: () => settings() });
  await run(guard, time, 120);
  assertEquals(f.announced, []);
  assertEquals(f.stopped, []);
});

Deno.test("guard: acts once after sustain, once per episode, again after recovery", async () => {
  const f = fake({ percent: 95, services: [service("api", 2), service("web", 1)] });
  const time = clock();
  const { guard } = guardOn(time, { actions: f.actions, settings: () => settings({ sustain: "5s" }) });
  await run(guard, time, 5); // t = 0..4s
  assertEquals(f.announced.length, 0);
  await run(guard, time, 30); // t = 5s acts, then the episode goes on
  assertEquals(f.announced.length, 1);
  assertEquals(f.stopped, ["api"]);

  f.setPercent(70);
  await run(guard, time, 1);
  f.setPercent(95);
  await run(guard, time, 6);
  assertEquals(f.announced.length, 2);
  assertEquals(f.stopped, ["api", "web"]);
});

Deno.test("guard: stops most memory first, only as many as needed, and announces them", async () => {
  // 16 GB total, 95% observed, 90% threshold: 0.8 GB above. 0.5 GB is not enough, 3 GB is.
  const f = fake({
    percent: 95.04,
    services: [service("small", 0.5), service("big", 3), service("mid", 1)],
  });
  const time = clock();
  const { guard } = guardOn(time, { actions: f.actions, settings: () => settings({ sustain: "1s" }) });
  await run(guard, time, 2);
  assertEquals(f.stopped, ["big"]);
  assertEquals(f.announced, [{
    memory_percent: 95,
    threshold: 90,
    sustain: "1s",
    stopped: [{ location: "shop", worktree: "main", service: "big", rss: 3 * GB }],
    paused: [],
  }]);
});

Deno.test("guard: keeps stopping until the estimate is at the threshold", async () => {
  // 100 GB total, 99% → 9 GB above; 5 + 3 is short, the third (1) brings it to exactly 90%.
  const f = fake({
    percent: 99,
    total: 100 * GB,
    services: [service("a", 5), service("b", 3), service("c", 1), service("d", 0.5)],
  });
  const time = clock();
  const { guard } = guardOn(time, { actions: f.actions, settings: () => settings({ sustain: "1s" }) });
  await run(guard, time, 2);
  assertEquals(f.stopped, ["a", "b", "c"]);
});

Deno.test("guard: pause_agents only pauses agents, most memory first", async () => {
  const f = fake({
    percent: 95,
    services: [service("api", 4)],
    agents: [agent("shop-main-1", 1), agent("shop-main-2", 2)],
  });
  const time = clock();
  const { guard } = guardOn(time, {
    actions: f.actions,
    settings: () => settings({ sustain: "1s", stop_services: false, pause_agents: true }),
  });
  await run(guard, time, 2);
  assertEquals(f.stopped, []);
  assertEquals(f.paused, ["shop-main-2"]);
  assertEquals(f.announced[0].paused, [{ session: "shop-main-2", rss: 2 * GB }]);
  assertEquals(f.announced[0].stopped, []);
});

Deno.test("guard: with both, agents are paused only for what services left over", async () => {
  // 16 GB at 95% → 0.8 GB above; the one service frees 0.5 GB, so the biggest agent is paused too.
  const f = fake({
    percent: 95,
    services: [service("api", 0.5)],
    agents: [agent("small", 0.1), agent("large", 1)],
  });
  const time = clock();
  const both = () => settings({ sustain: "1s", pause_agents: true });
  const { guard } = guardOn(time, { actions: f.actions, settings: both });
  await run(guard, time, 2);
  assertEquals(f.stopped, ["api"]);
  assertEquals(f.paused, ["large"]);

  // When the services free enough, no agent is paused.
  const g = fake({ percent: 95, services: [service("api", 2)], agents: [agent("large", 1)] });
  const { guard: guard2 } = guardOn(time, { actions: g.actions, settings: both });
  await run(guard2, time, 2);
  assertEquals(g.stopped, ["api"]);
  assertEquals(g.paused, []);
});

Deno.test("guard: with neither, it still announces once with nothing done", async () => {
  const f = fake({ percent: 97, services: [service("api", 2)], agents: [agent("s", 2)] });
  const time = clock();
  const { guard } = guardOn(time, {
    actions: f.actions,
    settings: () => settings({ sustain: "1s", stop_services: false, pause_agents: false }),
  });
  await run(guard, time, 10);
  assertEquals(f.stopped, []);
  assertEquals(f.paused, []);
  assertEquals(f.announced, [{ memory_percent: 97, threshold: 90, sustain: "1s", stopped: [], paused: [] }]);
});

Deno.test("guard: nothing running still announces, with empty lists", async () => {
  const f = fake({ percent: 93.456 });
  const time = clock();
  const { guard } = guardOn(time, {
    actions: f.actions,
    settings: () => settings({ sustain: "1s", pause_agents: true }),
  });
  await run(guard, time, 5);
  assertEquals(f.announced, [{
    memory_percent: 93.5,
    threshold: 90,
    sustain: "1s",
    stopped: [],
    paused: [],
  }]);
});

Deno.test("guard: a disabled guard never acts", async () => {
  const f = fake({ percent: 100, services: [service("api", 2)] });
  const time = clock();
  let reads = 0;
  const { guard } = guardOn(time, {
    actions: { ...f.actions, memoryPercent: () => (reads++, 100) },
    settings: () => settings({ enabled: false, sustain: "1s" }),
  });
  await run(guard, time, 60);
  assertEquals(f.announced, []);
  assertEquals(f.stopped, []);
  assertEquals(reads, 0, "memory is not even read");
});

Deno.test("guard: a stop that throws is reported and the others continue", async () => {
  const f = fake({ percent: 95, services: [service("big", 3), service("mid", 1)], failStop: ["big"] });
  const time = clock();
  const { guard, log } = guardOn(time, {
    actions: f.actions,
    settings: () => settings({ sustain: "1s" }),
  });
  await run(guard, time, 2);
  assertEquals(f.stopped, ["mid"]);
  assertEquals(f.announced.length, 1);
  assertEquals(f.announced[0].errors, [{
    target: "service shop/main/big",
    error: "kill: permission denied",
  }]);
  assertEquals(f.announced[0].stopped, [{ location: "shop", worktree: "main", service: "mid", rss: GB }]);
  assertStringIncludes(lines(log).join("\n"), "permission denied");
});

Deno.test("guard: tick never throws, and a settings failure is logged once", async () => {
  const f = fake({ percent: 95 });
  const time = clock();
  const { guard, log } = guardOn(time, {
    actions: f.actions,
    settings: () => Promise.reject(new DockError("invalid_guard", "guard.json: not valid JSON")),
  });
  await run(guard, time, 5);
  assertEquals(lines(log), ["guard: guard.json: not valid JSON"]);

  const broken = guardOn(time, {
    actions: { ...f.actions, memoryPercent: () => Promise.reject(new Error("no /proc/meminfo")) },
    settings: () => settings(),
  });
  await broken.guard.tick();
  assertStringIncludes(lines(broken.log).at(-1)!, "no /proc/meminfo");
});

Deno.test("guard: overlapping ticks are skipped", async () => {
  const f = fake({ percent: 95, services: [service("api", 2)] });
  let release!: () => void;
  const gate = new Promise<void>((resolve) => release = resolve);
  let entered!: () => void;
  const inside = new Promise<void>((resolve) => entered = resolve);
  let stops = 0;
  const time = clock();
  const { guard } = guardOn(time, {
    actions: {
      ...f.actions,
      stopService: async () => {
        stops++;
        entered();
        await gate;
      },
    },
    settings: () => settings({ sustain: "1s" }),
  });
  await guard.tick();
  time.advance(1000);
  const first = guard.tick(); // acts and waits inside stopService
  await inside;
  time.advance(1000);
  await guard.tick(); // skipped: the first is still running
  release();
  await first;
  assertEquals(stops, 1);
  assertEquals(f.announced.length, 1);
});

Deno.test("guard: settings are read on every tick", async () => {
  const f = fake({ percent: 95, services: [service("api", 2)] });
  const time = clock();
  let current = settings({ enabled: false, sustain: "1s" });
  const { guard } = guardOn(time, { actions: f.actions, settings: () => current });
  await run(guard, time, 5);
  assertEquals(f.announced.length, 0);
  current = settings({ sustain: "1s" });
  await run(guard, time, 2);
  assertEquals(f.announced.length, 1);
});

Deno.test("guard: start observes every interval on its clock, once however often called; stop ends it", async () => {
  const f = fake({ percent: 95, services: [service("api", 2)] });
  let observed = 0;
  const memoryPercent = () => {
    observed++;
    return f.actions.memoryPercent();
  };
  const time = clock();
  const { guard } = guardOn(time, {
    actions: { ...f.actions, memoryPercent },
    settings: () => settings({ sustain: "1s" }),
    intervalMs: 60_000,
  });
  guard.start();
  guard.start();
  time.advance(59_999);
  await guard.settled();
  assertEquals(observed, 0, "nothing before the first interval");
  // Each tick of the interval is an observation: the second, a sustain later, acts.
  time.advance(1);
  await guard.settled();
  assertEquals([observed, f.stopped], [1, []]);
  time.advance(60_000);
  await guard.settled();
  assertEquals([observed, f.stopped], [2, ["api"]]);
  // One stop ends it: a second start() would have left a timer running.
  guard.stop();
  time.advance(10 * 60_000);
  await guard.settled();
  assertEquals(observed, 2);
  guard.start();
  time.advance(60_000);
  await guard.settled();
  assertEquals(observed, 3, "a stopped guard starts again");
  guard.stop();
  guard.stop();
  time.advance(60_000);
  await guard.settled();
  assertEquals(observed, 3);
});

/** The lines a guard logged. */
function lines(log: MemoryLog): string[] {
  return log.records.map((record) => record.message);
}

// ---------------------------------------------------------------------------------------------------
// validateGuard

Deno.test("validateGuard: missing fields take the defaults", () => {
  assertEquals(validateGuard({}, "body", 400), { ...DEFAULT_GUARD });
  assertEquals(validateGuard({ enabled: true, memory_percent: 80.5 }, "body", 400), {
    ...DEFAULT_GUARD,
    enabled: true,
    memory_percent: 80.5,
  });
  assertEquals(
    validateGuard(
      { enabled: true, memory_percent: 100, sustain: "1m30s", stop_services: false, pause_agents: true },
      "body",
      400,
    ),
    { enabled: true, memory_percent: 100, sustain: "1m30s", stop_services: false, pause_agents: true },
  );
  assertEquals(validateGuard({ sustain: "1s" }, "body", 400).sustain, "1s");
});

Deno.test("validateGuard: refuses bad values, naming the file and the field", () => {
  const cases: [unknown, string][] = [
    [{ memory_percent: 150 }, "body: memory_percent: must be a number above 0 and at most 100, got 150"],
    [{ memory_percent: 0 }, "body: memory_percent: must be a number above 0 and at most 100, got 0"],
    [{ memory_percent: "90" }, 'body: memory_percent: must be a number above 0 and at most 100, got "90"'],
    [
      { sustain: "500ms" },
      'body: sustain: must be a duration of at least 1s, such as 30s or 2m, got "500ms"',
    ],
    [{ sustain: "soon" }, 'body: sustain: must be a duration of at least 1s, such as 30s or 2m, got "soon"'],
    [{ sustain: 30 }, "body: sustain: must be a duration of at least 1s, such as 30s or 2m, got 30"],
    [{ enabled: "yes" }, 'body: enabled: must be true or false, got "yes"'],
    [{ pause_agents: null }, "body: pause_agents: must be true or false, got null"],
    [{ memory: 90 }, "body: memory: unknown field; known fields: enabled, memory_percent, sustain"],
    [{ pause_agent: true }, 'body: pause_agent: unknown field (did you mean "pause_agents"?)'],
    [[], "body: must be an object"],
    [null, "body: must be an object"],
  ];
  for (const [input, expected] of cases) {
    const error = assertThrows(() => validateGuard(input, "body", 400), DockError, expected) as DockError;
    assertEquals(error.code, "invalid_guard");
    assertEquals(error.status, 400);
  }
  const error = assertThrows(() => validateGuard({ memory_percent: -1 }, "/x/guard.json", 422)) as DockError;
  assertEquals(error.status, 422);
  assertEquals(error.detail, {
    file: "/x/guard.json",
    field: "memory_percent",
    problems: [{
      file: "/x/guard.json",
      field: "memory_percent",
      message: "must be a number above 0 and at most 100, got -1",
    }],
  });
  assertStringIncludes(error.message, "/x/guard.json: memory_percent:");
});

// ---------------------------------------------------------------------------------------------------
// guard.json

Deno.test("guard file: write and read round trip, mode 0600, pretty JSON", async () => {
  const dir = await Deno.makeTempDir();
  try {
    const path = `${dir}/guard.json`;
    const written = settings({ memory_percent: 85, sustain: "2m", pause_agents: true });
    await writeGuardFile(path, written);
    assertEquals(await readGuardFile(path), written);
    const text = await Deno.readTextFile(path);
    assert(text.endsWith("}\n"));
    assertStringIncludes(text, '\n  "enabled": true,\n  "memory_percent": 85,');
    if (Deno.build.os !== "windows") assertEquals((await Deno.stat(path)).mode! & 0o777, 0o600);
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("guard file: missing gives the defaults", async () => {
  const dir = await Deno.makeTempDir();
  try {
    assertEquals(await readGuardFile(`${dir}/guard.json`), { ...DEFAULT_GUARD });
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("guard file: invalid JSON or content is a 422 naming the file", async () => {
  const dir = await Deno.makeTempDir();
  try {
    const path = `${dir}/guard.json`;
    await Deno.writeTextFile(path, "{ enabled: ");
    let error = await assertRejects(
      () => readGuardFile(path),
      DockError,
      `${path}:1:3: unexpected symbol (names and strings need double quotes), found 'enabled'`,
    ) as DockError;
    assertEquals([error.code, error.status], ["invalid_guard", 422]);

    await Deno.writeTextFile(path, "");
    error = await assertRejects(
      () => readGuardFile(path),
      DockError,
      `${path}:1:1: expected a value, found the end of the file`,
    ) as DockError;
    assertEquals(error.status, 422);

    await Deno.writeTextFile(path, '{ "enabled": true, "memory_percent": 120 }');
    error = await assertRejects(
      () => readGuardFile(path),
      DockError,
      `${path}: memory_percent:`,
    ) as DockError;
    assertEquals([error.code, error.status], ["invalid_guard", 422]);

    // Hand edits may keep comments.
    await Deno.writeTextFile(path, '{\n  // on for the big box\n  "enabled": true,\n}\n');
    assertEquals(await readGuardFile(path), { ...DEFAULT_GUARD, enabled: true });
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});
