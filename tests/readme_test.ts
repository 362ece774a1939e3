/**
 * The README starts with the person (issue 32 item 8): CI's two commands first, then a five-minute
 * walkthrough whose every `dock` command and option exists and whose screenshots are in `docs/`; the
 * reference lives in `docs/*.md`, and every relative link and image of the README and of `docs/` resolves,
 * heading anchors included.
 */
import { assert, assertEquals } from "./assert.ts";
import { runCli } from "./harness.ts";
import { DOCK_COMMANDS } from "../cli/commands.generated.ts";

const root = new URL("../", import.meta.url);

/** The README's text. */
function readme(): Promise<string> {
  return Deno.readTextFile(new URL("README.md", root));
}

/** The text of the `## ` section whose heading starts with `title`, up to the next `## `. */
function section(text: string, title: string): string {
  const start = text.indexOf(`\n## ${title}`);
  assert(start >= 0, `no "## ${title}" section`);
  const end = text.indexOf("\n## ", start + 1);
  return text.slice(start, end < 0 ? undefined : end);
}

/** GitHub's anchor for a heading: lower case, punctuation dropped, spaces as hyphens. */
function anchor(heading: string): string {
  return heading.trim().toLowerCase().replace(/[^\p{L}\p{N}_\- ]/gu, "").replaceAll(" ", "-");
}

/** Text without fenced blocks and code spans, where a `[x](y)` is no link. */
function prose(text: string): string {
  return text.replace(/```[\s\S]*?```/g, "").replace(/`[^`\n]*`/g, "");
}

Deno.test("the README opens with CI's two commands, then the five-minute walkthrough", async () => {
  const text = await readme();
  const commands = [...text.matchAll(/^(npx [^#\n]*?)\s*(?:#.*)?$/gm)].map((m) => m[1]);
  // .ci/run and the workplace run these two, read from the top of the README.
  assertEquals(commands.slice(0, 2), ["npx -y deno@2.9.6 task up", "npx -y deno@2.9.6 task test"]);
  const headings = [...text.matchAll(/^## (.*)$/gm)].map((m) => m[1]);
  assertEquals(headings[0], "Five minutes with dock", "the walkthrough comes before any reference");
  const walk = section(text, "Five minutes with dock");
  for (
    const step of [
      "Install",
      "Open the app",
      "Add a machine over SSH",
      "Start Claude Code",
      "permission prompt from your phone",
      "Review the diff",
      "Open the PR",
    ]
  ) {
    assert(walk.includes(step), `the walkthrough has no step "${step}"`);
  }
  const shots = [...walk.matchAll(/!\[[^\]]*\]\((docs\/[^)]+\.png)\)/g)].map((m) => m[1]);
  for (
    const shot of [
      "docs/app-board.png",
      "docs/app-new.png",
      "docs/app-needs-you.png",
      "docs/app-phone.png",
      "docs/app-review.png",
    ]
  ) {
    assert(shots.includes(shot), `the walkthrough does not show ${shot}`);
  }
  const index = section(text, "Reference");
  for (const part of ["laptop", "app", "install", "box", "plugins", "hardening"]) {
    assert(index.includes(`(docs/${part}.md)`), `the index does not link docs/${part}.md`);
  }
});

Deno.test("every relative link and image of the README and docs/ resolves, anchors included", async () => {
  const files = ["README.md", "sdk/README.md", "plugins/README.md"];
  for await (const entry of Deno.readDir(new URL("docs/", root))) {
    if (entry.name.endsWith(".md")) files.push(`docs/${entry.name}`);
  }
  const broken: string[] = [];
  let links = 0;
  for (const file of files) {
    const at = new URL(file, root);
    for (const [, target] of prose(await Deno.readTextFile(at)).matchAll(/!?\[[^\]]*\]\(([^)\s]+)\)/g)) {
      if (/^[a-z]+:/.test(target)) continue;
      links++;
      const [path, fragment] = target.split("#");
      const url = path ? new URL(path, at) : at;
      const found = await Deno.stat(url).then(() => true, () => false);
      if (!found) {
        broken.push(`${file}: ${target} (no such file)`);
        continue;
      }
      if (fragment && url.pathname.endsWith(".md")) {
        const headings = [...prose(await Deno.readTextFile(url)).matchAll(/^#+\s+(.*)$/gm)].map((m) =>
          anchor(m[1])
        );
        if (!headings.includes(fragment)) broken.push(`${file}: ${target} (no such heading)`);
      }
    }
  }
  assertEquals(broken, []);
  assert(links > 30, `only ${links} links read: the pattern broke`);
});

Deno.test("every dock command of the walkthrough exists, with the options it uses", async () => {
  const walk = section(await readme(), "Five minutes with dock");
  // Command lines of its sh blocks (comments cut), and its `dock …` code spans.
  const lines = [
    ...[...walk.matchAll(/```sh\n([\s\S]*?)```/g)].flatMap((m) =>
      m[1].split("\n").map((l) => l.replace(/#.*$/, ""))
    ),
    ...[...walk.matchAll(/`(dock [^`]+)`/g)].map((m) => m[1]),
  ].map((l) => l.trim()).filter((l) => l.startsWith("dock "));
  assert(lines.length >= 10, `only ${lines.length} dock commands found`);
  const env = { ...Deno.env.toObject(), NO_COLOR: "1" };
  const helps = new Map<string, string>();
  for (const line of lines) {
    const words = line.split(/\s+/).slice(1);
    const entry = DOCK_COMMANDS.find((c) => c.name === words[0] || c.aliases.includes(words[0]));
    assert(entry, `${line}: no command ${words[0]}`);
    const sub = entry.subcommands.find((names) => names.includes(words[1]));
    if (entry.subcommands.length > 0) assert(sub, `${line}: ${entry.name} has no subcommand ${words[1]}`);
    const path = sub ? [entry.name, sub[0]] : [entry.name];
    const key = path.join(" ");
    if (!helps.has(key)) {
      const help = await runCli("dock", [...path, "--help"], { env, cwd: Deno.cwd() });
      assertEquals(help.code, 0, help.stderr);
      assert(help.stdout.startsWith(`Usage: dock ${key}`), `${key}: ${help.stdout.slice(0, 80)}`);
      helps.set(key, help.stdout);
    }
    for (const option of words.filter((w) => w.startsWith("--"))) {
      assert(helps.get(key)!.includes(`${option} `), `${line}: dock ${key} has no option ${option}`);
    }
  }
});
