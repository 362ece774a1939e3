/**
 * The real agent tools for `tests/real_agents_test.ts` (issue 30): pinned here, in one place, and
 * installed once with npm into a cache folder outside the clone that survives between runs
 * (`$XDG_CACHE_HOME/dock-real-agents/<hash of the pins>`, else `~/.cache/…`): CI runs from a fresh clone
 * on the same machine, so a folder inside the clone would install again each run (≈ 23 s, 890 MB).
 *
 * Parallel test files share one install: a lock folder (`mkdir` is atomic) is held while npm runs, into
 * a temporary folder renamed into place when complete, so a reader never sees half an install. The only
 * reason to skip is npm not reaching its registry; any other failure fails the test.
 *
 * @module
 */
import { join } from "node:path";

/** The pinned versions: the one place they are named. */
export const PINNED = {
  "@anthropic-ai/claude-code": "2.1.332",
  "@openai/codex": "0.169.0",
  "@google/gemini-cli": "0.61.0",
} as const;

/** Where each tool's command is, once installed. */
export interface Installed {
  dir: string;
  claude: string;
  codex: string;
  gemini: string;
}

/** The install, or why the tools cannot be had here (npm cannot reach its registry). */
export type InstallResult = { ok: true; tools: Installed } | { ok: false; reason: string };

/** A lock older than this with no live holder is taken over (a run killed mid-install). */
const STALE_LOCK_MS = 10 * 60_000;

/** The cache folder of the pinned versions. */
export async function cacheDir(): Promise<string> {
  const base = Deno.env.get("XDG_CACHE_HOME") || join(Deno.env.get("HOME") ?? "/tmp", ".cache");
  const pins = JSON.stringify(PINNED);
  const digest = new Uint8Array(await crypto.subtle.digest("SHA-256", new TextEncoder().encode(pins)));
  const hash = [...digest.slice(0, 6)].map((b) => b.toString(16).padStart(2, "0")).join("");
  return join(base, "dock-real-agents", hash);
}

function toolsIn(dir: string): Installed {
  const bin = join(dir, "node_modules", ".bin");
  return { dir, claude: join(bin, "claude"), codex: join(bin, "codex"), gemini: join(bin, "gemini") };
}

let installing: Promise<InstallResult> | null = null;

/** Installs the pinned tools (once per machine, once per process); see the module doc. */
export function installTools(): Promise<InstallResult> {
  installing ??= install();
  return installing;
}

async function complete(dir: string): Promise<boolean> {
  try {
    return (await Deno.stat(join(dir, "installed.json"))).isFile;
  } catch {
    return false;
  }
}

async function install(): Promise<InstallResult> {
  const dir = await cacheDir();
  if (await complete(dir)) return { ok: true, tools: toolsIn(dir) };
  await Deno.mkdir(join(dir, ".."), { recursive: true });
  const lock = `${dir}.lock`;
  await takeLock(lock);
  try {
    if (await complete(dir)) return { ok: true, tools: toolsIn(dir) };
    const work = `${dir}.tmp-${Deno.pid}`;
    await Deno.remove(work, { recursive: true }).catch(() => {});
    await Deno.mkdir(work, { recursive: true });
    await Deno.writeTextFile(
      join(work, "package.json"),
      JSON.stringify({ private: true, dependencies: PINNED }, null, 2),
    );
    const npm = await new Deno.Command("npm", {
      args: ["install", "--no-audit", "--no-fund", "--loglevel=error", "--prefix", work],
      cwd: work,
      stdout: "piped",
      stderr: "piped",
    }).output();
    const log = new TextDecoder().decode(npm.stderr) + new TextDecoder().decode(npm.stdout);
    if (!npm.success) {
      await Deno.remove(work, { recursive: true }).catch(() => {});
      if (/ENOTFOUND|EAI_AGAIN|ECONNREFUSED|ETIMEDOUT|ECONNRESET|network/i.test(log)) {
        return { ok: false, reason: `npm cannot reach its registry: ${firstLine(log)}` };
      }
      throw new Error(`npm install of the real agents failed:\n${log}`);
    }
    const tools = toolsIn(work);
    // Claude Code links its native binary in a postinstall; run it when npm skipped scripts.
    if (!await runs(tools.claude)) {
      const script = join(work, "node_modules", "@anthropic-ai", "claude-code", "install.cjs");
      await new Deno.Command("node", { args: [script], cwd: work, stdout: "null", stderr: "null" }).output();
    }
    for (const command of [tools.claude, tools.codex, tools.gemini]) {
      if (!await runs(command)) throw new Error(`${command} --version failed after npm install`);
    }
    await Deno.writeTextFile(join(work, "installed.json"), JSON.stringify(PINNED));
    await Deno.remove(dir, { recursive: true }).catch(() => {});
    await Deno.rename(work, dir);
    return { ok: true, tools: toolsIn(dir) };
  } finally {
    await Deno.remove(lock, { recursive: true }).catch(() => {});
  }
}

async function runs(command: string): Promise<boolean> {
  try {
    const out = await new Deno.Command(command, { args: ["--version"], stdout: "null", stderr: "null" })
      .output();
    return out.success;
  } catch {
    return false;
  }
}

/** Takes the lock folder, waiting for another process's install (or taking a stale lock over). */
async function takeLock(lock: string): Promise<void> {
  while (true) {
    try {
      await Deno.mkdir(lock);
      await Deno.writeTextFile(join(lock, "pid"), String(Deno.pid));
      return;
    } catch (error) {
      if (!(error instanceof Deno.errors.AlreadyExists)) throw error;
    }
    if (await staleLock(lock)) {
      await Deno.remove(lock, { recursive: true }).catch(() => {});
      continue;
    }
    await new Promise((resolve) => setTimeout(resolve, 500));
  }
}

async function staleLock(lock: string): Promise<boolean> {
  try {
    const pid = Number(await Deno.readTextFile(join(lock, "pid")));
    if (pid && !alive(pid)) return true;
    return Date.now() - ((await Deno.stat(lock)).mtime?.getTime() ?? 0) > STALE_LOCK_MS;
  } catch {
    // No pid yet (its holder is between mkdir and write), or the lock went meanwhile.
    return false;
  }
}

function alive(pid: number): boolean {
  try {
    Deno.statSync(`/proc/${pid}`);
    return true;
  } catch {
    return false;
  }
}

function firstLine(text: string): string {
  return text.split("\n").find((line) => line.trim() !== "")?.trim() ?? "";
}
