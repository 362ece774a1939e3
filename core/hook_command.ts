/**
 * How a shell hook's `run` is started (spec 2.5: "run through `/bin/sh -c`"). A command that is only
 * plain words naming a program (`dock notify done`, `./hooks/on-stop.sh --quiet`) means the same
 * without the shell, so it is started directly: one process less per hook (measured through the
 * executor, three rounds of 30 on a shared 2-core machine: ten `uname -s` hooks at once done in 29–35
 * ms started directly, 33–43 ms through the shell; one in ~5 ms against 7–10). Anything the shell
 * would read differently (quotes, `$`, globs, `~`, redirections, `;`, an assignment, a builtin or a
 * keyword) still goes through `/bin/sh -c`. And a shell that runs only builtins it never forks for
 * ({@linkcode runsInShellOnly}) needs no process group of its own: one `setsid` less (measured in one
 * run through the runner: ten `sh -c 'echo … > FIFO'` at once all started in 14.9 ms with `setsid`,
 * 8.4 ms without; one in 1.9 and 1.0 ms).
 *
 * @module
 */

/**
 * Names `/bin/sh` (dash, bash as sh) runs itself rather than as a program: a builtin, a keyword or a
 * special builtin. A command starting with one keeps the shell: `exit 3` has no program, and the
 * builtin `echo` reads escapes that `/bin/echo` prints as they are.
 */
const SHELL_WORDS: ReadonlySet<string> = new Set([
  "!",
  ".",
  ":",
  "[",
  "[[",
  "alias",
  "bg",
  "break",
  "builtin",
  "case",
  "cd",
  "chdir",
  "command",
  "continue",
  "declare",
  "do",
  "done",
  "echo",
  "elif",
  "else",
  "esac",
  "eval",
  "exec",
  "exit",
  "export",
  "false",
  "fc",
  "fg",
  "fi",
  "for",
  "function",
  "getopts",
  "hash",
  "if",
  "in",
  "jobs",
  "kill",
  "let",
  "local",
  "printf",
  "pwd",
  "read",
  "readonly",
  "return",
  "select",
  "set",
  "shift",
  "source",
  "test",
  "then",
  "time",
  "times",
  "trap",
  "true",
  "type",
  "typeset",
  "ulimit",
  "umask",
  "unalias",
  "unset",
  "until",
  "wait",
  "while",
  "{",
  "}",
]);

/** A word the shell passes on unchanged: no quote, `$`, glob, `~`, `#`, operator or brace. */
const PLAIN_WORD = /^[A-Za-z0-9_\/.,:@%+=-]+$/;

/**
 * The program and arguments `run` means when it needs no shell, else null (run it with `/bin/sh -c`).
 * Words are split on spaces and tabs only; the first must not be an assignment (`A=1 cmd`) or a name
 * the shell runs itself ({@linkcode SHELL_WORDS}).
 */
export function directCommand(run: string): { cmd: string; args: string[] } | null {
  if (/[^\t ]/.test(run) === false) return null;
  const words = run.split(/[\t ]+/).filter((word) => word.length > 0);
  if (!words.every((word) => PLAIN_WORD.test(word))) return null;
  const [cmd, ...args] = words;
  if (cmd.includes("=") || SHELL_WORDS.has(cmd)) return null;
  return { cmd, args };
}

/**
 * Builtins `/bin/sh` runs in its own process, never forking: a command made only of these needs no
 * process group of its own.
 */
const IN_PROCESS_BUILTINS: ReadonlySet<string> = new Set([
  ":",
  "[",
  "cd",
  "echo",
  "exit",
  "export",
  "false",
  "printf",
  "read",
  "set",
  "shift",
  "test",
  "true",
  "unset",
]);

/**
 * True when `run` is only builtins the shell runs in its own process ({@linkcode IN_PROCESS_BUILTINS}),
 * joined by `;`, `&&`, `||` or new lines, with words, quotes, `$VAR` and redirections (`echo "$DOCK_N" >
 * file`): the shell then never forks, so killing it at its timeout leaves nothing behind, and it needs
 * no `setsid` (a process less per hook: the shell hook benchmark's ten `echo … > FIFO` hooks). Refused,
 * so run in a group as before: a pipe, `&`, a subshell or brace group, `$(…)` or backquotes anywhere
 * (even quoted: not worth telling apart), a here-document (dash forks to write a long one), a quoted or
 * computed command name, and any other command name.
 */
export function runsInShellOnly(run: string): boolean {
  if (run.includes("$(") || run.includes("`")) return false;
  let quote: "'" | '"' | null = null;
  let word = "";
  // The first word of the current command, once it has ended; null until then.
  let first: string | null = null;
  let quotedFirst = false;
  const endWord = () => {
    if (first === null && (word !== "" || quotedFirst)) {
      if (quotedFirst || !IN_PROCESS_BUILTINS.has(word)) return false;
      first = word;
    }
    word = "";
    return true;
  };
  const endCommand = () => {
    if (!endWord()) return false;
    first = null;
    quotedFirst = false;
    return true;
  };
  for (let i = 0; i < run.length; i++) {
    const char = run[i];
    if (quote) {
      if (char === quote) quote = null;
      else if (char === "\\" && quote === '"') i++;
      if (first === null) quotedFirst = true;
      continue;
    }
    if (char === "'" || char === '"') {
      quote = char;
      if (first === null) quotedFirst = true;
    } else if (char === "\\") {
      if (first === null) quotedFirst = true;
      i++;
    } else if (char === " " || char === "\t") {
      if (!endWord()) return false;
    } else if (char === ";" || char === "\n") {
      if (!endCommand()) return false;
    } else if ((char === "&" || char === "|") && run[i + 1] === char) {
      if (!endCommand()) return false;
      i++;
    } else if (char === "&" && (run[i - 1] === ">" || run[i - 1] === "<")) {
      word += char; // `2>&1`: a descriptor copied, not a background job
    } else if ("&|(){}".includes(char)) {
      return false;
    } else if (char === "<" && run[i + 1] === "<") {
      return false;
    } else if ((char === ">" || char === "<") && first === null && word === "") {
      return false; // a redirection before the command name: not worth reading
    } else {
      word += char;
    }
  }
  return quote === null && endCommand();
}
