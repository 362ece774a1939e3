import { join } from "node:path";
import { assert, assertEquals, assertRejects } from "../tests/assert.ts";
import { git, makeRepo } from "../tests/harness.ts";
import { DockError } from "../client/errors.ts";
import type { DockConfig } from "../client/wire.ts";
import { branchRefs } from "./git.ts";
import { prepareCreate, type PrepareCreateOptions, refsFromFiles } from "./worktree_plan.ts";

async function withRepo(fn: (root: string, repo: string) => Promise<void>): Promise<void> {
  const root = await Deno.realPath(await Deno.makeTempDir({ prefix: "dock-plan-test-" }));
  try {
    await fn(root, await makeRepo(root, "app"));
  } finally {
    await Deno.remove(root, { recursive: true });
  }
}

function options(
  root: string,
  repo: string,
  extra: Partial<PrepareCreateOptions> = {},
): PrepareCreateOptions {
  return {
    config: () => Promise.resolve({} as DockConfig),
    parentDir: join(root, "worktrees", "app"),
    location: { name: "app", path: repo, local: null, created: "2026-11-26T00:00:00.000Z" },
    name: "feature",
    request: { name: "feature" },
    mainBranch: () => "main",
    ...extra,
  };
}

Deno.test("prepareCreate plans a new branch off the main branch, in the resolved parent", async () => {
  await withRepo(async (root, repo) => {
    const { path, plan } = await prepareCreate(options(root, repo));
    assertEquals(path, join(root, "worktrees", "app", "feature"));
    assertEquals(plan.branch, "feature");
    assertEquals(plan.base, "main");
    assertEquals(plan.args(path), ["--no-track", "-b", "feature", "--end-of-options", path, "main"]);
  });
});

Deno.test("prepareCreate reads the config while it makes the folder (not one after the other)", async () => {
  await withRepo(async (root, repo) => {
    const parentDir = join(root, "worktrees", "app");
    // A config that only answers once the folder exists: done in a row (config first), this never ends.
    await Deno.mkdir(join(root, "worktrees"));
    const watcher = Deno.watchFs(join(root, "worktrees"), { recursive: false });
    const config = async (): Promise<DockConfig> => {
      const deadline = AbortSignal.timeout(10_000);
      deadline.addEventListener("abort", () => watcher.close());
      for await (const event of watcher) {
        if (event.paths.includes(parentDir)) return { ports: 2 } as DockConfig;
      }
      throw new Error("the folder was not made while the config was being read");
    };
    try {
      const prepared = await prepareCreate(options(root, repo, { parentDir, config }));
      assertEquals(prepared.config, { ports: 2 } as DockConfig);
    } finally {
      try {
        watcher.close();
      } catch { /* closed by the deadline */ }
    }
  });
});

Deno.test("prepareCreate throws the same error first whatever finishes first", async () => {
  await withRepo(async (root, repo) => {
    const taken = join(root, "worktrees", "app", "feature");
    await Deno.mkdir(taken, { recursive: true });
    // The config fails last in time, yet its error wins over the taken folder's.
    const slowBadConfig = async (): Promise<DockConfig> => {
      await afterGit(repo);
      throw new DockError("invalid_config", "bad config", { status: 422 });
    };
    await assertRejects(
      () => prepareCreate(options(root, repo, { config: slowBadConfig })),
      DockError,
      "bad config",
    );
    // A taken folder wins over a bad branch name.
    const badBranch = options(root, repo, { request: { name: "feature", branch: "-bad" } });
    const error = await assertRejects(() => prepareCreate(badBranch), DockError);
    assertEquals((error as DockError).code, "exists");
  });
});

/** Resolves after a git run in `repo`: later than prepareCreate's own folder checks. */
async function afterGit(repo: string): Promise<void> {
  await new Deno.Command("git", { args: ["rev-parse", "HEAD"], cwd: repo, stdout: "null" }).output();
}

Deno.test("refsFromFiles answers what git answers: loose, packed, nested, remote and origin's HEAD", async () => {
  await withRepo(async (root, origin) => {
    await git(origin, "branch", "on-origin");
    await git(origin, "branch", "both");
    const clone = join(root, "clone");
    await git(root, "clone", "-q", origin, clone);
    await git(clone, "branch", "loose");
    await git(clone, "branch", "both");
    await git(clone, "branch", "feature/x");
    await git(clone, "branch", "packed");
    await git(clone, "pack-refs", "--all");
    await git(clone, "branch", "loose-after");
    const names = [
      "main",
      "loose",
      "packed",
      "loose-after",
      "on-origin",
      "both",
      "feature",
      "feature/x",
      "none",
    ];
    for (const name of names) {
      assertEquals(await refsFromFiles(clone, name), await branchRefs(clone, name), name);
    }
    // origin without a HEAD of its own (a repository that was never cloned).
    for (const name of ["main", "on-origin", "none"]) {
      assertEquals(await refsFromFiles(origin, name), await branchRefs(origin, name), `origin ${name}`);
    }
    // A linked checkout has a .git file, not a folder: git answers there.
    const linked = join(root, "linked");
    await git(clone, "worktree", "add", "-q", linked, "loose");
    assertEquals(await refsFromFiles(linked, "loose"), null);
  });
});

Deno.test("refsFromFiles reads a packed-refs too large to read in one go as git does", async () => {
  await withRepo(async (_root, repo) => {
    const head = (await git(repo, "rev-parse", "HEAD")).trim();
    // ~5,000 branches packed: a packed-refs file past the size read synchronously.
    const lines = Array.from({ length: 5000 }, (_, i) => `create refs/heads/many/branch-${i} ${head}\n`).join(
      "",
    );
    const update = new Deno.Command("git", { args: ["update-ref", "--stdin"], cwd: repo, stdin: "piped" })
      .spawn();
    const writer = update.stdin.getWriter();
    await writer.write(new TextEncoder().encode(lines));
    await writer.close();
    assertEquals((await update.status).code, 0);
    await git(repo, "pack-refs", "--all");
    assert((await Deno.stat(join(repo, ".git", "packed-refs"))).size > 256 * 1024, "packed-refs is large");
    for (const name of ["many/branch-0", "many/branch-4999", "many/branch-5000", "main", "none"]) {
      assertEquals(await refsFromFiles(repo, name), await branchRefs(repo, name), name);
    }
  });
});
