import { assert, assertEquals, assertThrows } from "../tests/assert.ts";
import { DockError } from "../client/errors.ts";
import { run } from "../core/runner.ts";
import { shellCommand } from "./flow_shell.ts";

/** Values a forge comment or an event could carry; each tries to run `touch <canary>`. */
function hostileValues(canary: string): string[] {
  return [
    `hi; touch ${canary}`,
    `$(touch ${canary})`,
    `\`touch ${canary}\``,
    `' ; touch ${canary} ; '`,
    `" ; touch ${canary} ; "`,
    `'"$(touch ${canary})"'`,
    `a\ntouch ${canary}\nb`,
    `*`,
    `$HOME \${HOME} ~`,
    `-n`,
    `a[$(touch ${canary})]`,
    `\\"; touch ${canary} #`,
    `EOF\ntouch ${canary}\nEOF`,
    ``,
  ];
}

/** A context a `run` command puts a variable in, and what the command prints for a value. */
interface Context {
  name: string;
  command: string;
  prints: (value: string) => string;
}

const LITERAL = '["${DOCK_FLOW_VAR_1}"]';

const CONTEXTS: Context[] = [
  { name: "bare", command: "printf '[%s]' {{x}}", prints: (v) => `[${v}]` },
  { name: "double quotes", command: `printf '[%s]' "<{{x}}>"`, prints: (v) => `[<${v}>]` },
  { name: "single quotes (text: not expanded)", command: "printf '%s' '[{{x}}]'", prints: () => LITERAL },
  { name: "nested sh -c '…'", command: `sh -c 'printf "[%s]" {{x}}'`, prints: (v) => `[${v}]` },
  { name: "issue 29: bash -c 'printf \"%s\" …'", command: `bash -c 'printf "%s" {{x}}'`, prints: (v) => v },
  {
    name: "nested bash -c '… \"…\"'",
    command: `bash -c 'printf "[%s]" "<{{x}}>"'`,
    prints: (v) => `[<${v}>]`,
  },
  {
    name: "nested sh -c '…' with an argument",
    command: `sh -c 'printf "[%s]" "$1"' sh {{x}}`,
    prints: (v) => `[${v}]`,
  },
  {
    name: "$(…) in double quotes",
    command: `printf '[%s]' "$(printf '%s.' {{x}})"`,
    prints: (v) => `[${v}.]`,
  },
  { name: "$(…) bare", command: `printf '[%s]' $(printf '%s' x){{x}}`, prints: (v) => `[x${v}]` },
  { name: "backticks", command: "printf '[%s]' \"`printf '%s.' {{x}}`\"", prints: (v) => `[${v}.]` },
  { name: "heredoc", command: "cat <<EOF\n[{{x}}]\nEOF", prints: (v) => `[${v}]\n` },
  { name: "heredoc <<-", command: "cat <<-EOF\n\t[{{x}}]\n\tEOF", prints: (v) => `[${v}]\n` },
  {
    name: "heredoc, quoted delimiter (text)",
    command: "cat <<'EOF'\n[{{x}}]\nEOF",
    prints: () => `${LITERAL}\n`,
  },
  {
    name: "heredoc, quoted delimiter, fed to sh",
    command: "sh <<'EOF'\nprintf '[%s]' {{x}}\nEOF",
    prints: (v) => `[${v}]`,
  },
  {
    name: "# comment with an apostrophe before the variable",
    command: "# it's a comment {{x}}\nprintf '[%s]' {{x}}",
    prints: (v) => `[${v}]`,
  },
  {
    name: "apostrophe in a heredoc",
    command: "cat <<EOF\nit's\nEOF\nprintf '[%s]' {{x}}",
    prints: (v) => `it's\n[${v}]`,
  },
  { name: "assignment", command: `a={{x}}; printf '[%s]' "$a"`, prints: (v) => `[${v}]` },
  {
    name: "assignment before an inner shell",
    command: `a={{x}} sh -c 'printf "[%s]" "$a"'`,
    prints: (v) => `[${v}]`,
  },
  { name: "${…:-…} bare", command: "printf '[%s]' ${dock_unset:-{{x}}}", prints: (v) => `[${v}]` },
  { name: "${…:-…} quoted", command: `printf '[%s]' "\${dock_unset:-{{x}}}"`, prints: (v) => `[${v}]` },
  { name: "escaped quote before", command: `printf '[%s]' \\'{{x}}`, prints: (v) => `['${v}]` },
  { name: "glued to a word", command: "printf '[%s]' --body={{x}}.", prints: (v) => `[--body=${v}.]` },
];

Deno.test("flow shell: a variable reaches sh and bash as data in every context, never as code", async () => {
  const dir = await Deno.makeTempDir({ prefix: "dock-flow-shell-" });
  try {
    const canary = `${dir}/pwned`;
    for (const shell of ["/bin/sh", "/bin/bash"]) {
      for (const context of CONTEXTS) {
        for (const value of hostileValues(canary)) {
          const { command, env } = shellCommand(context.command, { x: value });
          assert(!command.includes(canary), `${context.name}: the value is in the command's text`);
          const result = await run(shell, ["-c", command], { cwd: dir, env });
          const label = `${shell}, ${context.name}, ${JSON.stringify(value)}`;
          assertEquals(result.stdout, context.prints(value), `${label}: ${result.stderr}`);
          assertEquals(result.code, 0, label);
          assertEquals([...Deno.readDirSync(dir)].map((e) => e.name), [], `${label} ran the value`);
        }
      }
    }
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("flow shell: a variable the outer shell would paste into another shell's code is refused", () => {
  const refusedCommands = [
    `bash -c "printf %s {{x}}"`,
    `sh -c {{x}}`,
    `bash -lc "echo $(printf %s {{x}})"`,
    `timeout 5 sh -ec "echo {{x}}"`,
    `"$SHELL" -c "echo {{x}}"`,
    `eval "echo {{x}}"`,
    "sh <<EOF\necho {{x}}\nEOF",
    `sh -c 'bash -c "echo {{x}}"'`,
    `sh -c 'eval "echo {{x}}"'`,
  ];
  for (const command of refusedCommands) {
    const error = assertThrows(() => shellCommand(command, { x: "v" }), DockError) as DockError;
    assertEquals(error.code, "invalid_request", command);
    assert(error.message.includes("{{x}}") && error.message.includes("single quotes"), error.message);
  }
  // Data beside an inner shell stays allowed: an argument after the code, a heredoc after -c.
  shellCommand(`bash -c 'cat' <<EOF\n{{x}}\nEOF`, { x: "v" });
  shellCommand(`sh script.sh "{{x}}"; sh -c 'echo ok' sh {{x}}`, { x: "v" });
});

Deno.test("flow shell: a variable in arithmetic, where bash runs a value's $(…), is refused", async () => {
  for (const command of ["echo $(( {{x}} + 1 ))", 'echo $(( "{{x}}" ))', "(( {{x}} ))", "echo $[{{x}}]"]) {
    const error = assertThrows(() => shellCommand(command, { x: "1" }), DockError);
    assert(error.message.includes("arithmetic"), command);
  }
  for (
    const command of ["[[ {{x}} -eq 1 ]]", "a[{{x}}]=1", 'echo "${a[{{x}}]}"', "echo $(( $(echo {{x}}) ))"]
  ) {
    assertThrows(() => shellCommand(command, { x: "1" }), DockError, "arithmetic");
  }
  // Why: bash evaluates the quoted reference's value as an expression and runs its command substitution.
  const dir = await Deno.makeTempDir({ prefix: "dock-flow-shell-" });
  try {
    const env = { V: `a[$(touch ${dir}/pwned)]` };
    await run("/bin/bash", ["-c", 'echo $(( "${V}" + 1 ))'], { env });
    assertEquals([...Deno.readDirSync(dir)].length, 1);
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
  shellCommand('[[ "{{x}}" == main ]] && echo "${a[1]}"', { x: "1" });
});

Deno.test("flow shell: each name gets one variable; an unknown one is empty; NUL is refused", () => {
  const vars = { "event.body": "$(rm -rf ~); `x`", "location": "app" };
  const { command, env } = shellCommand("echo {{event.body}} {{ location }} {{event.body}} {{none}}", vars);
  assertEquals(
    command,
    'echo "${DOCK_FLOW_VAR_1}" "${DOCK_FLOW_VAR_2}" "${DOCK_FLOW_VAR_1}" "${DOCK_FLOW_VAR_3}"',
  );
  assertEquals(env, { DOCK_FLOW_VAR_1: "$(rm -rf ~); `x`", DOCK_FLOW_VAR_2: "app", DOCK_FLOW_VAR_3: "" });
  assertEquals(shellCommand("echo {{constructor}}", {}).env, { DOCK_FLOW_VAR_1: "" });
  assertThrows(() => shellCommand("echo {{x}}", { x: "a\0b" }), DockError, "NUL");
  assertEquals(shellCommand("echo '{a}' {x} {{ }}", {}), { command: "echo '{a}' {x} {{ }}", env: {} });
});
