/**
 * The embedded skills never drift from their SKILL.md files, and each is a valid skill for the tools.
 *
 * @module
 */
import { assert, assertEquals, assertStringIncludes } from "../tests/assert.ts";
import { isDockSkill, parseFrontMatter, skillVersion } from "../daemon/skills.ts";
import { SKILLS } from "./mod.ts";

Deno.test("skills: the four skills of spec 1, in its order", () => {
  assertEquals(SKILLS.map((s) => s.id), ["dock", "dock-orchestrate", "dock-preview", "dock-hooks"]);
});

Deno.test("skills: embedded texts equal skills/<id>/SKILL.md (run deno run -A skills/embed.ts)", async () => {
  for (const skill of SKILLS) {
    const file = await Deno.readTextFile(new URL(`./${skill.id}/SKILL.md`, import.meta.url));
    assert(file === skill.text, `skills/mod.ts is stale for ${skill.id}: run deno run -A skills/embed.ts`);
  }
});

Deno.test("skills: front matter has name == id, a description, dock's marker and the version", () => {
  for (const skill of SKILLS) {
    const front = parseFrontMatter(skill.text);
    assert(front, `${skill.id}: no front matter`);
    assertEquals(front.fields.name, skill.id);
    assert(/^[a-z0-9-]{1,64}$/.test(skill.id), `${skill.id}: name must be lowercase, digits, hyphens`);
    const description = front.fields.description ?? "";
    assert(description.length > 40, `${skill.id}: description too short`);
    assert(description.length <= 1024, `${skill.id}: description over 1024 characters`);
    assert(isDockSkill(skill.text, skill.id), `${skill.id}: missing metadata.author: dock`);
    assertEquals(skillVersion(skill.text), skill.version);
    assert(Number.isInteger(skill.version) && skill.version >= 1);
  }
});

Deno.test("skills: focused (60-200 lines) and all forbid public shares unless asked", () => {
  for (const skill of SKILLS) {
    const lines = skill.text.split("\n").length;
    assert(lines >= 60 && lines <= 200, `${skill.id}: ${lines} lines`);
    assertStringIncludes(skill.text.replaceAll("\n", " "), "share a port publicly");
  }
});

Deno.test("skills: the texts teach what spec 1 says they do", () => {
  const text = (id: string) => SKILLS.find((s) => s.id === id)!.text;
  for (
    const word of [
      "DOCK_BOX",
      "DOCK_LOCATION",
      "DOCK_ROOT_PATH",
      "DOCK_WORKTREE_PATH",
      "DOCK_WORKTREE_NAME",
      "DOCK_WORKTREE_SLUG",
      "DOCK_BRANCH",
      "DOCK_PORT_1",
      "DOCK_KIT_DIR",
      "DOCK_SESSION",
      ".dock/config.json",
      "dockd service",
    ]
  ) assertStringIncludes(text("dock"), word);
  for (
    const word of ["session send", "session wait", "session screen", "task new", "dockd loop", "dockd exec"]
  ) {
    assertStringIncludes(text("dock-orchestrate"), word);
  }
  assertStringIncludes(text("dock-orchestrate"), "never answer on the human's behalf");
  for (const word of ["dockd preview", "127.0.0.1", "$PORT", ".localhost:1377/"]) {
    assertStringIncludes(text("dock-preview"), word);
  }
  for (
    const word of [
      "before:skills.install",
      "before:skills.uninstall",
      "before:session.create",
      "before:session.send",
      "before:exec",
      "before:config.change",
      "before:worktree.create",
      "before:worktree.remove",
      "gate_refused",
      "gate_timeout",
      "DOCK_AGENT",
      "DOCK_PATH",
      "~/.dock/hooks.json",
      "agent.finished",
      "schedule.fired",
    ]
  ) assertStringIncludes(text("dock-hooks"), word);
});
