import { assert, assertEquals } from "../tests/assert.ts";
import { directCommand, runsInShellOnly } from "./hook_command.ts";
import { shellExecutor } from "./hooks.ts";

Deno.test("directCommand: plain words naming a program run without the shell", () => {
  assertEquals(directCommand("dock notify done"), { cmd: "dock", args: ["notify", "done"] });
  assertEquals(directCommand("  ./hooks/on-stop.sh\t--level=2 a,b user@host:80 50%  "), {
    cmd: "./hooks/on-stop.sh",
    args: ["--level=2", "a,b", "user@host:80", "50%"],
  });
  assertEquals(directCommand("/usr/bin/env"), { cmd: "/usr/bin/env", args: [] });
});

Deno.test("directCommand: anything the shell reads differently keeps the shell", () => {
  for (
    const run of [
      "",
      "   ",
      "echo hi", // the builtin reads escapes; /bin/echo does not
      "exit 3",
      "true",
      "cd /tmp",
      ". ./env.sh",
      "A=1 dock notify",
      "dock notify $DOCK_EVENT_TYPE",
      "dock notify 'two words'",
      'dock notify "x"',
      "dock notify \\x",
      "ls *.ts",
      "ls ?",
      "ls [ab]",
      "cat ~/.dock/x",
      "dock notify # comment",
      "dock a; dock b",
      "dock a && dock b",
      "dock a | cat",
      "dock a > out",
      "dock a < in",
      "dock a &",
      "(dock a)",
      "{ dock a; }",
      "dock a\ndock b",
      "if true; then dock; fi",
      "dock `id`",
      "dock a{b,c}",
      "! dock a",
    ]
  ) {
    assertEquals(directCommand(run), null, JSON.stringify(run));
  }
});

Deno.test("shellExecutor: a plain command runs without a shell, with args, stdin, env, PWD and its exit code", async () => {
  const dir = await Deno.realPath(await Deno.makeTempDir());
  try {
    const script = `${dir}/hook.sh`;
    // The script reports what it was given: its arguments, its stdin, a variable and PWD.
    await Deno.writeTextFile(
      script,
      `#!/bin/sh\nprintf '%s|' "$@" > out\ncat >> out\nprintf '|%s|%s' "$HOOK_VAR" "$PWD" >> out\nexit 4\n`,
    );
    await Deno.chmod(script, 0o755);
    const result = await shellExecutor.run({ on: "x", run: `${script} --a=1 two` }, '{"type":"x"}', {
      cwd: dir,
      env: { PATH: Deno.env.get("PATH") ?? "/usr/bin:/bin", HOOK_VAR: "v", PWD: "/elsewhere" },
    });
    assertEquals(result.code, 4);
    assertEquals(await Deno.readTextFile(`${dir}/out`), `--a=1|two|{"type":"x"}|v|${dir}`);
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("shellExecutor: a plain command naming no program ends as the shell's would (127, the name on stderr)", async () => {
  const result = await shellExecutor.run({ on: "x", run: "dock-no-such-program-here --x" }, "{}", {
    env: { PATH: "/usr/bin:/bin" },
  });
  assertEquals(result.code, 127);
  assert(result.stderr.includes("dock-no-such-program-here"), result.stderr);
});

Deno.test("shellExecutor: a command with shell syntax still runs through /bin/sh -c", async () => {
  const result = await shellExecutor.run(
    { on: "x", run: `read -r line; echo "got $line" >&2; exit 2` },
    "in\n",
    {
      env: { PATH: "/usr/bin:/bin" },
    },
  );
  assertEquals([result.code, result.stderr], [2, "got in\n"]);
});

Deno.test("runsInShellOnly: builtins that never fork, joined by lists, quotes, variables and redirections", () => {
  for (
    const run of [
      "",
      "true",
      'echo "$DOCK_N-0" > /tmp/fifo',
      "printf '%s\\n' \"$DOCK_EVENT_TYPE\" >> ~/events.log 2>&1",
      "test -e /tmp/x && echo yes || echo no",
      '[ -n "$DOCK_PATH" ]; exit 3',
      'read -r line\necho "$line" >&2',
      "echo \"a; b | c & d\" 'x && y'",
      "echo a # a comment",
    ]
  ) {
    assert(runsInShellOnly(run), JSON.stringify(run));
  }
});

Deno.test("runsInShellOnly: anything that may fork or run a program keeps its own process group", () => {
  for (
    const run of [
      "dock notify done",
      "echo a | cat",
      "echo a &",
      "(echo a)",
      "{ echo a; }",
      "echo $(id)",
      "echo `id`",
      'echo "$(id)"',
      "echo $((1 + 2))",
      "cat <<EOF\nx\nEOF",
      "echo a; sleep 1",
      "A=1 echo a",
      "> out echo a",
      '"echo" a',
      "$CMD a",
      "exec sleep 1",
      "eval echo a",
      ". ./env.sh",
      "echo 'unclosed",
      "if true; then echo a; fi",
    ]
  ) {
    assert(!runsInShellOnly(run), JSON.stringify(run));
  }
});

Deno.test("shellExecutor: a builtin-only hook still gets its event and variables, and is killed at its timeout", async () => {
  const dir = await Deno.realPath(await Deno.makeTempDir());
  try {
    const ok = await shellExecutor.run(
      { on: "x", run: `read -r line; printf '%s|%s' "$line" "$HOOK_VAR" > "${dir}/out"` },
      '{"type":"x"}\n',
      { cwd: dir, env: { HOOK_VAR: "v" } },
    );
    assertEquals(ok.code, 0);
    assertEquals(await Deno.readTextFile(`${dir}/out`), '{"type":"x"}|v');
    // Opening a FIFO nobody reads blocks the shell itself: the timeout must end it.
    const fifo = `${dir}/nobody-reads`;
    assertEquals((await new Deno.Command("mkfifo", { args: [fifo] }).output()).code, 0);
    const blocked = await shellExecutor.run({ on: "x", run: `echo x > ${fifo}`, timeout: "200ms" }, "{}", {
      cwd: dir,
      env: {},
    });
    assert(blocked.timedOut, "the blocked shell timed out");
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});
