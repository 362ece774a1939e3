/**
 * Sections 1 to 3 of `deno task bench` on one box (`create`, `api`, `exec`): the box is made with a
 * location and five worktrees, then `GET locations` and `GET info` are measured against the floor (a
 * bare `Deno.serve` in a process of its own, `floor.ts`), `exec true` against spawning the shell
 * directly, and worktree creates (`create.ts`). `bench/main.ts`'s header says what each row compares.
 *
 * @module
 */
import { join } from "node:path";
import type { BoxClient } from "../client/box.ts";
import { git, makeRepo, startBox } from "../tests/harness.ts";
import { benchCreate, createCount, plainWorktreeAdd, profileCreate, repoFiles, spawn } from "./create.ts";
import { FLOOR_BODY, startJsonServer } from "./floor.ts";
import { ratio, type Row, scaled, summarize, time } from "./stats.ts";

/** Options of {@linkcode benchFirstBox}. */
export interface FirstBoxOptions {
  /** `--quick`: fewer samples. */
  quick: boolean;
  /** `--same-repo` (see `create.ts`). */
  sameRepo: boolean;
}

/** Worktrees made before the measurements (besides the main checkout); `GET locations` lists them. */
const EXTRA_WORKTREES = 5;
/** The goal for `GET locations` and `GET info` over the box socket against the floor, ratio of medians. */
const API_GOAL = 3;

/** Runs the sections of `chosen` that share the first box (`create`, `api`, `exec`): their rows. */
export async function benchFirstBox(chosen: Set<string>, options: FirstBoxOptions): Promise<Row[]> {
  const SAME_REPO = options.sameRepo;
  const N_CREATE = createCount(options.quick);
  const rows: Row[] = [];
  // The production watch interval (the harness's default is faster, for tests).
  await using box = await startBox({ env: { DOCK_WATCH_MS: "1000" } });
  const { client } = box;
  const repo = await makeRepo(join(box.dirs.home, "work"), "app", repoFiles());
  await client.addLocation({ name: "app", path: repo });

  // The extra worktrees double as the warm-up of the API create path.
  for (let i = 0; i < EXTRA_WORKTREES; i++) await client.createWorktree("app", { name: `wt-${i}` });

  const api = chosen.has("api")
    ? await benchBoxApi(client, box.dirs.socket, box.dirs.root, options.quick)
    : [];
  const exec = chosen.has("exec") ? await benchExec(client, repo, box.dirs.home, options.quick) : [];

  if (chosen.has("create")) {
    const plainRepo = SAME_REPO ? repo : await makeRepo(box.dirs.root, "twin", repoFiles());
    const plainDir = join(box.dirs.root, "plain-worktrees");
    for (let i = 0; i < 2; i++) {
      await plainWorktreeAdd(plainRepo, `warm-${i}`, join(plainDir, `warm-${i}`));
    }
    if (SAME_REPO) {
      // The plain warm-up worktrees are detected into the location; let the watcher settle first.
      await new Promise((r) => setTimeout(r, 1500));
    }
    rows.push(...await benchCreate(client, plainRepo, plainDir, { ...options, daemonPid: box.process.pid }));
    rows.push(...await profileCreate(options));
    // A sanity check that the benchmark measured real worktrees.
    const listed = (await git(repo, "worktree", "list", "--porcelain")).match(/^worktree /gm)?.length ?? 0;
    if (listed < N_CREATE + EXTRA_WORKTREES + 1) {
      throw new Error(`only ${listed} worktrees in the repository`);
    }
  }
  rows.push(...api, ...exec);
  return rows;
}

// ---------------------------------------------------------------------------------------------------
// 2. GET locations, GET info

/** Section 2: `GET locations` and `GET info` against the floor, interleaved in runs of ten. */
async function benchBoxApi(
  client: BoxClient,
  socket: string,
  scratch: string,
  quick: boolean,
): Promise<Row[]> {
  const N_WARMUP = scaled(20, quick);
  const N_LOCATIONS = scaled(500, quick);
  const worktrees = (await client.locations())[0].worktrees.length;
  const bytes = (await (await fetchOver(socket, "/v1/locations")).text()).length;
  const infoBytes = (await (await fetchOver(socket, "/v1/info")).text()).length;

  // The same request through a separately created client, without the typed wrapper.
  using rawClient = Deno.createHttpClient({ proxy: { transport: "unix", path: socket } });
  const rawFetch = async () =>
    await (await fetch("http://localhost/v1/locations", { client: rawClient })).text();

  // The floor: a bare `Deno.serve` on a unix socket answering a small JSON, in a process of its own
  // (as the daemon is) and, for comparison, in this very process.
  const floorSocket = join(scratch, "floor.sock");
  const floorServer = await startJsonServer(floorSocket);
  using floorClient = Deno.createHttpClient({ proxy: { transport: "unix", path: floorSocket } });
  const floorFetch = async () => await (await fetch("http://localhost/", { client: floorClient })).json();
  const hereSocket = join(scratch, "floor-here.sock");
  const here = Deno.serve(
    { path: hereSocket, onListen() {} },
    () => new Response(FLOOR_BODY, { headers: { "content-type": "application/json" } }),
  );
  using hereClient = Deno.createHttpClient({ proxy: { transport: "unix", path: hereSocket } });
  const hereFetch = async () => await (await fetch("http://localhost/", { client: hereClient })).json();

  const calls = {
    api: () => client.locations(),
    info: () => client.info(),
    raw: rawFetch,
    floor: floorFetch,
    here: hereFetch,
  };
  type Key = keyof typeof calls;
  const keys = Object.keys(calls) as Key[];
  const samples = Object.fromEntries(keys.map((key) => [key, [] as number[]])) as Record<Key, number[]>;
  try {
    for (let i = 0; i < N_WARMUP; i++) for (const key of keys) await calls[key]();
    // Interleaved in runs of ten, the order rotating, so a noisy moment favours none.
    for (let i = 0; i < N_LOCATIONS / 10; i++) {
      for (let j = 0; j < keys.length; j++) {
        const key = keys[(i + j) % keys.length];
        for (let k = 0; k < 10; k++) samples[key].push(await time(calls[key]));
      }
    }
  } finally {
    await floorServer.stop();
    await here.shutdown();
  }

  const floor = summarize(samples.floor);
  const api = summarize(samples.api);
  const info = summarize(samples.info);
  const goal = (summary: { p50: number }) => {
    const r = summary.p50 / floor.p50;
    return `goal ≤ ${ratio(API_GOAL)} the floor: ${r <= API_GOAL ? "met" : "**not met**"}`;
  };
  return [
    {
      label: "2. `client.locations()` (`GET /v1/locations`)",
      summary: api,
      baseline: floor,
      note: `${goal(api)}; 1 location, ${worktrees} worktrees, ${bytes} B`,
    },
    {
      label: "2. `client.info()` (`GET /v1/info`, the agent's health check)",
      summary: info,
      baseline: floor,
      note: `${goal(info)}; ${infoBytes} B`,
    },
    {
      label: "2. raw `fetch` of `/v1/locations`, own HttpClient",
      summary: summarize(samples.raw),
      baseline: floor,
      note: "ratio vs floor; the typed client's own cost is the difference to the first row",
    },
    {
      label: "2. floor: `Deno.serve` answering a small JSON on a unix socket (json_server.ts, own process)",
      summary: floor,
      isBaseline: true,
      note: `${FLOOR_BODY.length} B`,
    },
    {
      label: "2. the same `Deno.serve` in this process",
      summary: summarize(samples.here),
      baseline: floor,
      note: "no second process to wake: what the floor would be without one",
    },
  ];
}

/** One raw GET over a unix socket with a throwaway client. */
async function fetchOver(socket: string, path: string): Promise<Response> {
  using client = Deno.createHttpClient({ proxy: { transport: "unix", path: socket } });
  const response = await fetch(`http://localhost${path}`, { client });
  // Read the body before the client goes away.
  return new Response(await response.arrayBuffer());
}

// ---------------------------------------------------------------------------------------------------
// 3. exec true

/** Section 3: `exec true` against `sh -c true` and the login shell the daemon runs commands through. */
async function benchExec(
  client: BoxClient,
  repo: string,
  home: string,
  quick: boolean,
): Promise<Row[]> {
  const N_EXEC = scaled(50, quick);
  const api: number[] = [];
  const sh: number[] = [];
  const login: number[] = [];
  const loginDetached: number[] = [];
  const runApi = async () => {
    const result = await client.exec({ location: "app", command: "true" });
    if (result.exit_code !== 0) throw new Error(`exec true exited ${result.exit_code}: ${result.output}`);
  };
  const runSh = () => spawn("sh", ["-c", "true"], { cwd: repo });
  // The daemon runs $SHELL (the harness sets /bin/sh) as a login shell, with the box's HOME.
  const runLogin = () => spawn("/bin/sh", ["-l", "-c", "true"], { cwd: repo, env: { HOME: home } });
  // The same, spawned as the daemon's runner does it: in a new session and group, through setsid(1).
  const runLoginDetached = () =>
    spawn("setsid", ["/bin/sh", "-l", "-c", "true"], { cwd: repo, env: { HOME: home } });
  for (let i = 0; i < 3; i++) {
    await runApi();
    await runSh();
    await runLogin();
    await runLoginDetached();
  }
  for (let i = 0; i < N_EXEC; i++) {
    api.push(await time(runApi));
    sh.push(await time(runSh));
    login.push(await time(runLogin));
    loginDetached.push(await time(runLoginDetached));
  }
  const loginSummary = summarize(login);
  const shSummary = summarize(sh);
  return [
    {
      label: '3. `client.exec({ command: "true" })`',
      summary: summarize(api),
      baseline: loginSummary,
      note: "ratio vs login shell",
    },
    {
      label: "3. plain: `/bin/sh -l -c true` (login shell)",
      summary: loginSummary,
      baseline: shSummary,
      note: "ratio vs `sh -c true`",
    },
    {
      label: "3. plain: `setsid /bin/sh -l -c true` (as the daemon's runner spawns it)",
      summary: summarize(loginDetached),
      baseline: loginSummary,
      note: "ratio vs login shell",
    },
    { label: "3. plain: `sh -c true` (`Deno.Command`)", summary: shSummary, isBaseline: true },
  ];
}
