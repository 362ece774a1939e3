/**
 * `deno task bench`: what the box API costs on top of the plain tool it wraps, measured against a real
 * `dockd serve` (the test harness's box: temporary `HOME`, `DOCK_HOME` and state, its own socket) and
 * printed as one Markdown table. Every API figure has its plain counterpart measured in the same run,
 * on the same machine, interleaved where that is cheap, so the ratios mean something even on a noisy
 * box where the absolute milliseconds do not travel.
 *
 * 1. **Worktree create** (bench/create.ts). `client.createWorktree(loc, { name })` (no setup script, one
 *    port) against `git worktree add -q -b NAME PATH` on a twin of the location's repository (the same few
 *    hundred files, not registered with the daemon, so the daemon's folder watcher does not react to the
 *    plain side; `--same-repo` adds the plain worktrees to the registered repository instead). The two
 *    alternate, and which goes first alternates too. The goal is an API/plain ratio of medians of at most
 *    1.1×. A second, smaller pass on a separate box records every git process with `GIT_TRACE2_EVENT` to show
 *    where the API's time goes: inside git, or around it (process spawns, the daemon's own work, HTTP). The
 *    first pass also reads the daemon's own CPU over its creates, beside the paired overhead.
 * 2. **`GET locations` and `GET info`** (bench/box_api.ts, as is 3). `client.locations()` (1 location,
 *    main checkout plus five worktrees) and `client.info()` (the agent's health check), and a raw `fetch` of
 *    `/v1/locations` over its own unix-socket `Deno.HttpClient`, against the floor: a bare `Deno.serve`
 *    answering a small JSON on another unix socket, in a process of its own as the daemon is
 *    (`json_server.ts`; the same server in this process is shown too). 500 of each after 20 to warm up,
 *    interleaved in runs of ten. The goal: ≤ 3× the floor.
 * 3. **`exec true`.** `client.exec({ location, command: "true" })` against spawning `sh -c true`
 *    directly, and `/bin/sh -l -c true`, the login shell the daemon runs commands through.
 * 4. to 6. **Services** (bench/services.ts, each on a fresh box): from `createWorktree` to an
 *    autostarted HTTP server answering on `$PORT` against starting the server by hand; the daemon's
 *    resident memory idle, with 20 worktrees and with their 40 services running; `GET services` and
 *    `GET ports` with 50 listening ports against `/proc/net/tcp{,6}` and `ss -ltnp`.
 *    `--server=deno` makes section 4 use a `deno eval` server even where python3 is installed.
 * 7. to 11. **Sessions** (bench/sessions.ts): `dock hook` wall time against an empty `deno run` (goal
 *    ≤ 1.5×); hook → its event on the box's SSE; send → text visible in `screen` against tmux directly;
 *    attach echo latency and bulk output against `tmux attach` in a PTY directly.
 * 12. and on. **The laptop agent** (bench/agent.ts): relay overhead against the box's socket (sequential
 *    and 50 at once, each beside a bare Deno proxy, the bursts with the CPU each process spends a
 *    request); events from 5 boxes at 1,000/s each into 10 SSE clients on the merged stream
 *    (none lost; the highest rate sustained when that is too much for the machine); `GET /v1/status`
 *    and the agent's memory with no box and with 50 paired boxes; attach echo and bulk output through
 *    the agent to a paired box (TLS) and to the box's socket, against the box's socket and a direct
 *    `tmux attach` (bench/attach_relay.ts, also run alone).
 * Last. **The offline queue** (bench/queue.ts, also `deno run -A bench/queue.ts`): prompts delivered
 *    per second through `POST /v1/queue` to one session and to 20, against plain `POST
 *    sessions/{name}/send` calls straight to the box in the same run.
 *
 * **Hardening** (bench/hardening.ts, also run alone; its fuzz row runs the suite's fuzz walks and counts
 * requests and 5xx answers): dockd's and the agent's memory and databases after
 * 5,000 × 64 KB events and 10 clients resuming from 0; a paired laptop's requests to the TLS port while
 * 10,000 idle connections are held against it; 1,000 queued prompts through 50 kill -9s of the agent
 * and dockd, counting prompts lost and duplicated (bench/queue_soak.ts, also run alone).
 *
 * **Hooks** (bench/hooks.ts): event → hook process started, 1 and 10 matching, for shell hooks and
 * for hooks that need no shell, in turn, against spawning the same shell directly, and ten such programs
 * started by hand against one (what ten starts cost on the machine, whoever starts them); 1,000 events/s
 * with hooks attached (1 % and 10 % of events hooked): rate achieved, SSE lag and the hook backlog.
 *
 * **Plugins** (bench/plugins.ts, also run alone): event → module hook against a shell hook; `fetch`
 * through `/v1/plugins/{id}/fn/` warm and cold against a bare `Deno.serve`; 50 idle plugins; 1,000
 * events/s through 10 plugins (none lost, bus lag, memory per worker); a runaway plugin's cost to others.
 *
 * **Flows** (bench/flows.ts, also run alone): event → `flow.started` with 100 enabled flows; 1,000
 * events/s with 100 flows not matching (bus lag against no flows); a schedule's delay after its minute.
 *
 * **The app** (bench/app.ts, also run alone): load of `/app/` to the board painted with 20 sessions on 2
 * boxes, JS + CSS shipped (gzip), hook → badge changed, keystroke → echo in the page against a PTY (goal
 * ≤ +5 ms), 200 sessions on 10 boxes from first paint to the board ready (goal ≤ 500 ms) and one change's
 * script time, a 2,000-line diff in the review against `git diff` (bench/app_review.ts, goal ≤ 300 ms).
 *
 * **200 boxes** (bench/scale.ts, also run alone): one agent with 200 paired `dockd`s and 2,000 sessions:
 * `GET /v1/status` against no box (goal ≤ 2×), the agent's peak memory (goal ≤ 250 MiB), the app from
 * first paint to 2,000 sessions drawn (goal ≤ 1 s), one `dockd` killed → `box.offline` (goal ≤ 5 s).
 *
 * **The truth score** (bench/state_truth.ts, also run alone): the truth suite's scenarios
 * (tests/state_truth.ts), right agent states over all checked (goal ≥ 99 %), per scenario, every miss
 * named; Esc in dock's terminal → waiting, a killed agent → `wait` returns.
 *
 * **Kits and review** (bench/kits.ts): a kit of 50 files applied against `cp -r` and a config write
 * (goal ≤ 2×); `GET review` with 50 worktrees against its git commands run by hand (goal ≤ 1.5×).
 *
 * **MCP** (bench/mcp.ts): a prompt and its turn through `dock mcp`'s `send_prompt` against
 * `dock session send --wait` (goal ≤ 1.2×).
 *
 * **The CLI** (bench/cli.ts): `dock --version`, `dockd --help`, `dock status`, `dockd worktree list`
 * and `dock hook` wall time against an empty `deno run --cached-only` (goals 1.5× and 1.3×, for the
 * commands as a package installs them; from the checkout for comparison).
 *
 * `deno task bench NAME…` runs only the sections named (`create`, `api` or `locations` or `info`,
 * `exec`, `services`, `sessions`, `agent`, `hooks`, `plugins`, `flows`, `app`, `scale`, `truth`, `mcp`, `kits` or `review`, `queue`, `hardening`, `cli`,
 * `ssh`, `upgrade`): `deno task bench cli info`.
 * `--quick` divides every N by about five for a smoke run. All temporary folders are removed and the
 * daemons stopped at the end, also on failure.
 *
 * @module
 */
import { benchFirstBox } from "./box_api.ts";
import { benchDaemonMemory, benchPorts, benchServiceStart } from "./services.ts";
import { benchSessions } from "./sessions.ts";
import { benchAgent } from "./agent.ts";
import { benchHooks } from "./hooks.ts";
import { benchPlugins } from "./plugins.ts";
import { benchFlows } from "./flows.ts";
import { benchApp } from "./app.ts";
import { benchScale } from "./scale.ts";
import { benchTruth } from "./state_truth.ts";
import { benchMcp } from "./mcp.ts";
import { benchKits } from "./kits.ts";
import { benchUpgrade, benchUpgradeAll } from "./upgrade.ts";
import { benchQueue } from "./queue.ts";
import { benchFuzz, benchIdleConnections, benchJournals, benchPluginHeapBomb } from "./hardening.ts";
import { benchQueueSoak } from "./queue_soak.ts";
import { benchCli } from "./cli.ts";
import { benchAddSsh, benchSshTransport } from "./add_ssh.ts";
import { type Row, summarize, table } from "./stats.ts";

const QUICK = Deno.args.includes("--quick");
const SAME_REPO = Deno.args.includes("--same-repo");
const DENO_SERVER = Deno.args.includes("--server=deno");

// ---------------------------------------------------------------------------------------------------
// Output

async function versionOf(command: string, args: string[]): Promise<string> {
  const output = await new Deno.Command(command, { args }).output();
  return new TextDecoder().decode(output.stdout).trim().split("\n")[0];
}

/**
 * The sections `deno task bench NAME…` can pick (none named: all of them, in this order), and the other
 * names each answers to.
 */
const SECTIONS: Record<string, string[]> = {
  create: ["worktree"],
  api: ["locations", "info"],
  exec: [],
  services: ["memory", "ports"],
  sessions: [],
  agent: [],
  hooks: [],
  plugins: [],
  flows: [],
  app: [],
  scale: ["200-boxes"],
  truth: ["state"],
  mcp: [],
  kits: ["review"],
  queue: [],
  hardening: ["journals", "idle", "soak", "fuzz", "heap-bomb"],
  cli: [],
  ssh: ["add-ssh", "package"],
  upgrade: [],
};

/** The sections the command line asks for; an unknown name is an error that lists the known ones. */
function selectedSections(args: string[]): Set<string> {
  const names = args.filter((arg) => !arg.startsWith("--"));
  if (names.length === 0) return new Set(Object.keys(SECTIONS));
  const chosen = new Set<string>();
  for (const name of names) {
    const section = Object.keys(SECTIONS).find((key) => key === name || SECTIONS[key].includes(name));
    if (!section) {
      const known = Object.entries(SECTIONS).map(([key, aliases]) => [key, ...aliases].join("|"));
      throw new Error(`unknown bench section '${name}'; known: ${known.join(", ")}`);
    }
    chosen.add(section);
  }
  return chosen;
}

async function main(): Promise<void> {
  const chosen = selectedSections(Deno.args);
  const rows: Row[] = [];
  if (chosen.has("create") || chosen.has("api") || chosen.has("exec")) {
    rows.push(...await benchFirstBox(chosen, { quick: QUICK, sameRepo: SAME_REPO }));
  }
  // The other sections, each on a fresh box of its own, after the first box has stopped.
  const serviceOptions = { quick: QUICK, denoServer: DENO_SERVER };
  if (chosen.has("services")) {
    rows.push(
      ...await section("services", async () => [
        ...await benchServiceStart(serviceOptions),
        ...await benchDaemonMemory(serviceOptions),
        ...await benchPorts(serviceOptions),
      ]),
    );
  }
  if (chosen.has("sessions")) rows.push(...await section("sessions", () => benchSessions({ quick: QUICK })));
  if (chosen.has("agent")) rows.push(...await section("agent", () => benchAgent({ quick: QUICK })));
  if (chosen.has("hooks")) rows.push(...await section("hooks", () => benchHooks({ quick: QUICK })));
  if (chosen.has("plugins")) rows.push(...await section("plugins", () => benchPlugins({ quick: QUICK })));
  if (chosen.has("flows")) rows.push(...await section("flows", () => benchFlows({ quick: QUICK })));
  if (chosen.has("app")) rows.push(...await section("app", () => benchApp({ quick: QUICK })));
  if (chosen.has("scale")) rows.push(...await section("scale", () => benchScale({ quick: QUICK })));
  if (chosen.has("truth")) rows.push(...await section("truth", () => benchTruth()));
  if (chosen.has("mcp")) rows.push(...await section("mcp", () => benchMcp({ quick: QUICK })));
  if (chosen.has("kits")) rows.push(...await section("kits", () => benchKits({ quick: QUICK })));
  if (chosen.has("queue")) rows.push(...await section("queue", () => benchQueue({ quick: QUICK })));
  if (chosen.has("hardening")) {
    rows.push(
      ...await section("hardening", async () => [
        ...await benchJournals(),
        ...await benchIdleConnections(),
        ...await benchQueueSoak({ quick: QUICK }),
        ...await benchFuzz(),
        ...await benchPluginHeapBomb(),
      ]),
    );
  }
  if (chosen.has("cli")) rows.push(...await section("cli", () => benchCli({ quick: QUICK })));
  if (chosen.has("ssh")) {
    // A minute idle first when sections ran before it (bench/add_ssh.ts says why).
    const settleMs = QUICK || ![...chosen].some((name) => name !== "ssh" && name !== "upgrade") ? 0 : 60_000;
    rows.push(...await section("ssh", () => benchAddSsh({ quick: QUICK, settleMs })));
    rows.push(...await section("ssh transport", () => benchSshTransport({ quick: QUICK })));
  }
  if (chosen.has("upgrade")) {
    rows.push(...await section("upgrade", () => benchUpgrade({ quick: QUICK })));
    rows.push(...await section("upgrade --all", () => benchUpgradeAll({ quick: QUICK })));
  }

  const gitVersion = await versionOf("git", ["--version"]);
  const load = (await Deno.readTextFile("/proc/loadavg").catch(() => "? ? ?")).split(" ").slice(0, 3);
  const only = chosen.size < Object.keys(SECTIONS).length ? ` (${[...chosen].join(", ")})` : "";
  const header = [
    `dock bench${only}${QUICK ? " (--quick)" : ""}${SAME_REPO ? " (--same-repo)" : ""}: ${
      new Date().toISOString()
    }`,
    `deno ${Deno.version.deno}, ${gitVersion}, ${Deno.build.os}/${Deno.build.arch}, ` +
    `${navigator.hardwareConcurrency} CPUs, load average after the run ${load.join(" ")}`,
  ];
  console.log(`${header.join("  \n")}\n\n${table(rows)}`);
}

/** The longest a section may take before the run goes on without it (the slowest takes ~4 min). */
const SECTION_DEADLINE_MS = 15 * 60_000;

/**
 * Runs one section; a section that fails or passes the deadline becomes a row saying so, and the run
 * goes on: one stuck wait must not cost the whole table (a full run once hung in `flows`).
 */
async function section(name: string, run: () => Promise<Row[]>): Promise<Row[]> {
  let timer: ReturnType<typeof setTimeout> | undefined;
  const deadline = new Promise<never>((_, reject) => {
    timer = setTimeout(
      () => reject(new Error(`no result in ${SECTION_DEADLINE_MS / 60_000} min`)),
      SECTION_DEADLINE_MS,
    );
  });
  try {
    return await Promise.race([run(), deadline]);
  } catch (error) {
    const message = error instanceof Error ? error.message : String(error);
    console.error(`bench: section ${name}: ${error instanceof Error ? error.stack : message}`);
    return [{
      label: `${name}: **no result**: ${message.split("\n")[0].slice(0, 200)}`,
      summary: summarize([]),
    }];
  } finally {
    clearTimeout(timer);
  }
}

if (import.meta.main) {
  await main();
  // A section given up on at its deadline may still hold timers or processes: the table is out.
  Deno.exit();
}
