/**
 * Skills on disk against temporary homes and repositories: listing states, install and uninstall of
 * dock's own copies only, and the `.git/info/exclude` lines of a project install.
 *
 * @module
 */
import { exists } from "../core/files.ts";
import { join } from "node:path";
import { DockError } from "../client/errors.ts";
import { SKILLS } from "../skills/mod.ts";
import { assert, assertEquals, assertRejects } from "../tests/assert.ts";
import { installSkills, listSkills, uninstallSkills } from "./skills.ts";
import { tempFolders } from "../tests/temp_dirs.ts";

const { tempHome, test } = tempFolders("dock-integrations-");

test("skills: list reports installed, outdated, missing and foreign copies", async () => {
  const home = await tempHome();
  const options = { home, env: {} };
  assert((await listSkills(options)).every((c) => c.state === "missing" && c.target === "user"));
  await installSkills({ ...options, agent: "all", target: "user" });
  const older = join(home, ".claude/skills/dock/SKILL.md");
  await Deno.writeTextFile(older, SKILLS[0].text.replace('version: "1"', 'version: "0"'));
  const edited = join(home, ".agents/skills/dock-hooks/SKILL.md");
  await Deno.writeTextFile(edited, SKILLS[3].text + "\nA local edit.\n");
  await Deno.remove(join(home, ".agents/skills/dock-preview"), { recursive: true });
  await Deno.writeTextFile(
    join(home, ".claude/skills/dock-preview/SKILL.md"),
    "---\nname: dock-preview\n---\n",
  );

  const states = Object.fromEntries(
    (await listSkills(options)).map((c) => [`${c.agent}/${c.skill}`, [c.state, c.version]]),
  );
  assertEquals(states, {
    "claude/dock": ["outdated", 0],
    "codex/dock": ["installed", 1],
    "claude/dock-orchestrate": ["installed", 1],
    "codex/dock-orchestrate": ["installed", 1],
    "claude/dock-preview": ["foreign", null],
    "codex/dock-preview": ["missing", null],
    // dock-hooks carries its own version (skills are versioned one by one).
    "claude/dock-hooks": ["installed", SKILLS[3].version],
    "codex/dock-hooks": ["outdated", SKILLS[3].version],
  });

  const reinstall = await installSkills({ ...options, agent: "all", target: "user" });
  const actions = Object.fromEntries(reinstall.changes.map((c) => [`${c.agent}/${c.skill}`, c.action]));
  assertEquals(actions["claude/dock"], "updated");
  assertEquals(actions["claude/dock-preview"], "skipped");
  assertEquals(actions["codex/dock-preview"], "created");
  assertEquals(actions["codex/dock"], "unchanged");
});

test("skills: project install writes the folders and their exclude lines once", async () => {
  const repo = await tempHome();
  await Deno.mkdir(join(repo, ".git/info"), { recursive: true });
  const exclude = join(repo, ".git/info/exclude");
  await Deno.writeTextFile(exclude, "# git ls-files --others --exclude-from=.git/info/exclude\n*.log\n");
  const options = { home: await tempHome(), env: {}, repo };
  await installSkills({ ...options, skills: ["dock", "dock-preview"], agent: "all", target: "project" });
  await installSkills({ ...options, skills: ["dock", "dock-preview"], agent: "all", target: "project" });
  assertEquals(await Deno.readTextFile(join(repo, ".claude/skills/dock/SKILL.md")), SKILLS[0].text);
  assertEquals(await Deno.readTextFile(join(repo, ".agents/skills/dock-preview/SKILL.md")), SKILLS[2].text);
  assertEquals(
    await Deno.readTextFile(exclude),
    "# git ls-files --others --exclude-from=.git/info/exclude\n*.log\n" +
      "/.claude/skills/dock/\n/.agents/skills/dock/\n/.claude/skills/dock-preview/\n/.agents/skills/dock-preview/\n",
  );
  const listed = await listSkills(options);
  assert(listed.some((c) => c.target === "project" && c.skill === "dock" && c.state === "installed"));
  assert(listed.some((c) => c.target === "project" && c.skill === "dock-hooks" && c.state === "missing"));

  // --commit: the folders must be visible to git, so our exclude lines go.
  await installSkills({ ...options, skills: ["dock"], agent: "all", target: "project", commit: true });
  assertEquals(
    await Deno.readTextFile(exclude),
    "# git ls-files --others --exclude-from=.git/info/exclude\n*.log\n" +
      "/.claude/skills/dock-preview/\n/.agents/skills/dock-preview/\n",
  );
});

test("skills: a linked worktree's excludes go to the main repository's git folder", async () => {
  const main = await tempHome();
  const worktree = await tempHome();
  const gitDir = join(main, ".git/worktrees/wt");
  await Deno.mkdir(gitDir, { recursive: true });
  await Deno.writeTextFile(join(gitDir, "commondir"), "../..\n");
  await Deno.writeTextFile(join(worktree, ".git"), `gitdir: ${gitDir}\n`);
  await installSkills({
    home: main,
    env: {},
    repo: worktree,
    skills: ["dock"],
    agent: "codex",
    target: "project",
  });
  assertEquals(await Deno.readTextFile(join(main, ".git/info/exclude")), "/.agents/skills/dock/\n");
});

test("skills: project target without a repository is a usage error", async () => {
  await assertRejects(
    () => installSkills({ home: "/nonexistent", env: {}, agent: "all", target: "project" }),
    DockError,
    "--location",
  );
  await assertRejects(
    () => installSkills({ home: "/nonexistent", env: {}, skills: ["nope"], agent: "all", target: "user" }),
    DockError,
    "skill 'nope' not found",
  );
});

test("skills: uninstall removes dock's folders and refuses a foreign one", async () => {
  const home = await tempHome();
  const repo = await tempHome();
  await Deno.mkdir(join(repo, ".git"));
  const options = { home, env: {} };
  await installSkills({ ...options, agent: "all", target: "user" });
  await installSkills({ ...options, repo, skills: ["dock"], agent: "claude", target: "project" });
  const foreign = join(home, ".agents/skills/dock");
  await Deno.writeTextFile(
    join(foreign, "SKILL.md"),
    "---\nname: dock\ndescription: a different dock\n---\n",
  );

  const result = await uninstallSkills({ ...options, repo, skills: ["dock"] });
  const byPath = Object.fromEntries(result.changes.map((c) => [c.path, c.action]));
  assertEquals(byPath[join(home, ".claude/skills/dock")], "removed");
  assertEquals(byPath[foreign], "skipped");
  assertEquals(byPath[join(repo, ".claude/skills/dock")], "removed");
  assertEquals(byPath[join(repo, ".agents/skills/dock")], "missing");
  assert(await exists(join(foreign, "SKILL.md")));
  assert(!await exists(join(home, ".claude/skills/dock")));
  assert(await exists(join(home, ".claude/skills/dock-hooks/SKILL.md")), "other skills stay");
  assertEquals(await Deno.readTextFile(join(repo, ".git/info/exclude")), "");
});
