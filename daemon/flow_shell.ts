/**
 * How a flow's `run` command receives `{{variables}}` (spec 6): each value goes into an environment
 * variable of the command (`DOCK_FLOW_VAR_<n>`, exported, so inner shells inherit it) and the
 * `{{name}}` becomes a reference to it. The value's text never becomes part of any shell's code: a
 * shell treats what it expands from a variable as data (word splitting and globbing aside, which the
 * reference's quoting prevents). What the reference looks like depends on who expands it:
 *
 * - outside quotes (also in an assignment `a={{x}}`, in `$(…)` and in backticks, which start afresh):
 *   `"${V}"`, one word with nothing split or globbed;
 * - inside double quotes and in a heredoc with an unquoted delimiter: `${V}`;
 * - inside single quotes, `$'…'` and a heredoc with a quoted delimiter, where the command's shell
 *   expands nothing: the reference stays there as text, never closed around (closing the quotes
 *   would make the outer shell paste the value into an inner shell's code, issue 29). The text is
 *   read as an inner shell's code, so `sh -c 'printf "%s" {{x}}'` gives the inner shell
 *   `printf "%s" "${V}"`, which it expands as data from the environment it inherited. Where the
 *   single-quoted text is not code (`echo '{{x}}'`), the reference is printed as it is.
 *
 * Refused, since no reference can be safe there: a reference the command's shell expands into a word
 * that another shell runs as code (`bash -c "… {{x}}"`, `eval …{{x}}`, a heredoc with an unquoted
 * delimiter fed to a shell), and one inside arithmetic (`$((…))`, `((…))`, `$[…]`, `[[ … -eq … ]]`),
 * where bash evaluates a value as an expression and so runs its `$(…)`. Anything else that runs its
 * arguments as code (`ssh host "…"`, `python -c "…"`, `| sh`) cannot be seen from the text: such a
 * command must read the variable from the environment itself.
 *
 * @module
 */
import { DockError } from "../client/errors.ts";
import { VARIABLE_PATTERN } from "./flow_steps.ts";

const VARIABLE = new RegExp(VARIABLE_PATTERN.source, "y");

/** Program names whose `-c` word (or, without `-c`, whose standard input) is shell code. */
const SHELLS = new Set(["sh", "bash", "dash", "zsh", "ksh", "ash", "mksh", "yash", "busybox"]);

/** Operators of bash's `[[ … ]]` that evaluate their operands as arithmetic expressions. */
const ARITHMETIC_TESTS = new Set(["-eq", "-ne", "-lt", "-le", "-gt", "-ge"]);

/** A heredoc whose body starts at the next newline. */
interface Heredoc {
  delimiter: string;
  quoted: boolean;
  stripTabs: boolean;
  /** Its body is read by a shell as code. */
  code: boolean;
}

/** The environment names given to variable names, shared by every level of one command. */
class References {
  readonly env: Record<string, string> = {};
  #names = new Map<string, string>();
  #vars: Record<string, string>;

  constructor(vars: Record<string, string>) {
    this.#vars = vars;
  }

  /** The environment variable holding `name`'s value (an unknown name is empty). */
  key(name: string): string {
    let key = this.#names.get(name);
    if (!key) {
      const value = Object.hasOwn(this.#vars, name) ? this.#vars[name] : "";
      if (value.includes("\0")) {
        throw new DockError("invalid_request", `{{${name}}} holds a NUL byte, which no command can receive`, {
          status: 400,
        });
      }
      key = `DOCK_FLOW_VAR_${this.#names.size + 1}`;
      this.#names.set(name, key);
      this.env[key] = value;
    }
    return key;
  }
}

/** The words of the simple command being read, as far as they tell whether a word is code. */
class Command {
  /** A word names a shell (`sh`, `/bin/bash`, `"$SHELL"`), wherever it stands (`timeout 5 sh`). */
  shell = false;
  /** `eval` was seen: every later word is code. */
  eval = false;
  /** The last word was a shell's `-c` (or `-lc`, `-ec`…): the next word is code. */
  codeNext = false;
  /** A `-c` was seen: the shell's standard input is not its code. */
  dashC = false;
  /** Inside bash's `[[ … ]]`, whose `-eq`-like operators evaluate operands as arithmetic. */
  test = false;
  arithmeticTest = false;
  testRefs: string[] = [];
}

/** One word being read: its text without quotes, whether it is code, what this shell expands in it. */
class Word {
  text = "";
  started = false;
  code = false;
  refs: string[] = [];
}

function refused(name: string, why: string): DockError {
  return new DockError("invalid_request", `run: {{${name}}} ${why}`, { status: 400 });
}

function codeRefused(name: string): DockError {
  return refused(
    name,
    'would be expanded by the shell into code another shell runs (bash -c "…", eval, a heredoc fed ' +
      "to a shell), where its text would run: put that code in single quotes (bash -c '… {{" + name +
      "}} …') or quote the heredoc's delimiter (<<'EOF'), and the inner shell expands it as data",
  );
}

function arithmeticRefused(name: string): DockError {
  return refused(
    name,
    "is inside arithmetic ($((…)), ((…)), [[ … -eq … ]], an array subscript), where bash evaluates a " +
      "value as an expression and runs any $(…) in it: compare it as a string ([ … = … ], case) instead",
  );
}

/** Reads one piece of shell code and writes it with every `{{name}}` turned into a reference. */
class Rewriter {
  #src: string;
  #refs: References;
  #i = 0;
  #out = "";
  #heredocs: Heredoc[] = [];

  constructor(src: string, refs: References) {
    this.#src = src;
    this.#refs = refs;
  }

  /** The whole text as code. */
  code(): string {
    this.#code("", false);
    return this.#out;
  }

  /** The whole text as the body of a heredoc with an unquoted delimiter. */
  heredocBody(code: boolean): string {
    const refs = this.#expanding("", "heredoc", false);
    if (code && refs.length) throw codeRefused(refs[0]);
    return this.#out;
  }

  #peek(offset = 0): string {
    return this.#src[this.#i + offset] ?? "";
  }

  #copy(count = 1): string {
    const text = this.#src.slice(this.#i, this.#i + count);
    this.#out += text;
    this.#i += count;
    return text;
  }

  /** A `{{name}}` at the cursor: consumed, its name returned; else undefined. */
  #variable(): string | undefined {
    if (this.#peek() !== "{" || this.#peek(1) !== "{") return undefined;
    VARIABLE.lastIndex = this.#i;
    const found = VARIABLE.exec(this.#src);
    if (!found) return undefined;
    this.#i += found[0].length;
    return found[1];
  }

  /** Text this shell does not expand (single quotes, a quoted heredoc): read as an inner shell's code. */
  #literal(text: string): string {
    return new Rewriter(text, this.#refs).code();
  }

  /**
   * Code up to `stop` (`)` of `$(`, `` ` ``, or the end). Returns the names this shell expands in it,
   * which land in the word around a `$(…)`. In `arithmetic`, any reference is refused.
   */
  #code(stop: string, arithmetic: boolean): string[] {
    const all: string[] = [];
    let command = new Command();
    let word = new Word();
    let depth = 0;
    const end = () => {
      if (word.started) {
        if (word.code && word.refs.length) throw codeRefused(word.refs[0]);
        const name = word.text.split("/").at(-1) ?? "";
        if (command.test) {
          if (ARITHMETIC_TESTS.has(word.text)) command.arithmeticTest = true;
          command.testRefs.push(...word.refs);
          if (word.text === "]]") {
            if (command.arithmeticTest && command.testRefs.length) {
              throw arithmeticRefused(command.testRefs[0]);
            }
            command.test = false;
          }
        } else if (word.text === "[[") {
          command.test = true;
          command.arithmeticTest = false;
          command.testRefs = [];
        }
        command.codeNext = false;
        if (SHELLS.has(name) || /^\$\{?SHELL\}?$/.test(word.text)) command.shell = true;
        else if (word.text === "eval") command.eval = true;
        else if (command.shell && /^-[A-Za-z]*c[A-Za-z]*$/.test(word.text)) {
          command.codeNext = true;
          command.dashC = true;
        }
      }
      word = new Word();
      word.code = command.codeNext || command.eval;
    };
    const reset = () => {
      end();
      command = new Command();
      word.code = false;
    };
    const add = (refs: string[]) => {
      word.refs.push(...refs);
      all.push(...refs);
    };
    while (this.#i < this.#src.length) {
      const char = this.#peek();
      const name = this.#variable();
      if (name !== undefined) {
        if (arithmetic) throw arithmeticRefused(name);
        this.#out += `"\${${this.#refs.key(name)}}"`;
        word.started = true;
        add([name]);
        continue;
      }
      if (stop && char === stop && (stop !== ")" || depth === 0)) {
        end();
        return all;
      }
      if (char === "[" && /[A-Za-z0-9_]/.test(this.#src[this.#i - 1] ?? "")) this.#subscript();
      if (char === "#" && !word.started) {
        while (this.#i < this.#src.length && this.#peek() !== "\n") this.#copy();
        continue;
      }
      if (char === "\\") {
        word.text += this.#peek(1);
        word.started ||= this.#peek(1) !== "\n";
        this.#copy(2);
        continue;
      }
      if (char === "'") {
        this.#copy();
        const close = this.#src.indexOf("'", this.#i);
        const text = this.#src.slice(this.#i, close < 0 ? undefined : close);
        this.#i += text.length;
        this.#out += this.#literal(text);
        if (close >= 0) this.#copy();
        word.text += text;
        word.started = true;
        continue;
      }
      if (char === '"') {
        this.#copy();
        const before = this.#out.length;
        add(this.#expanding('"', "double", arithmetic));
        word.text += this.#out.slice(before);
        if (this.#peek() === '"') this.#copy();
        word.started = true;
        continue;
      }
      if (char === "$" || char === "`") {
        word.started = true;
        const before = this.#out.length;
        add(this.#substitution(arithmetic));
        word.text += this.#out.slice(before);
        continue;
      }
      if (char === "(" && this.#peek(1) === "(" && !word.started) {
        this.#copy(2);
        this.#code(")", true);
        this.#copy(2);
        continue;
      }
      if (char === "(" || char === ")") {
        depth += char === "(" ? 1 : -1;
        reset();
        this.#copy();
        continue;
      }
      if (char === "\n") {
        reset();
        this.#copy();
        this.#bodies();
        continue;
      }
      if (char === ";" || char === "&" || char === "|") {
        reset();
        this.#copy();
        continue;
      }
      if (char === "<" && this.#peek(1) === "<" && this.#peek(2) !== "<") {
        end();
        this.#heredoc(command.shell && !command.dashC);
        continue;
      }
      if (char === " " || char === "\t" || char === "<" || char === ">") {
        end();
        this.#copy();
        continue;
      }
      word.text += char;
      word.started = true;
      this.#copy();
    }
    end();
    return all;
  }

  /**
   * Text this shell expands but does not split: inside double quotes up to `stop`, or a heredoc's
   * body (`"` is text there). Returns the names expanded in it.
   */
  #expanding(stop: string, mode: "double" | "heredoc", arithmetic: boolean): string[] {
    const refs: string[] = [];
    while (this.#i < this.#src.length) {
      const name = this.#variable();
      if (name !== undefined) {
        if (arithmetic) throw arithmeticRefused(name);
        this.#out += `\${${this.#refs.key(name)}}`;
        refs.push(name);
        continue;
      }
      const char = this.#peek();
      if (mode === "double" && char === stop) break;
      if (char === "[" && /[A-Za-z0-9_]/.test(this.#src[this.#i - 1] ?? "")) this.#subscript();
      if (char === "\\") this.#copy(2);
      else if (char === "$" || char === "`") refs.push(...this.#substitution(arithmetic));
      else this.#copy();
    }
    return refs;
  }

  /** A `$…` or a backtick at the cursor: command substitution, arithmetic, `$'…'`, or a plain `$`. */
  #substitution(arithmetic: boolean): string[] {
    if (this.#peek() === "`") {
      this.#copy();
      const refs = this.#code("`", arithmetic);
      if (this.#peek() === "`") this.#copy();
      return refs;
    }
    const next = this.#peek(1);
    if (next === "(") {
      const math = this.#peek(2) === "(";
      this.#copy(math ? 3 : 2);
      const refs = this.#code(")", arithmetic || math);
      this.#copy(math ? 2 : 1);
      return refs;
    }
    if (next === "[") {
      this.#copy();
      this.#subscript();
      return [];
    }
    if (next === "'") {
      // ANSI-C quoting (bash): nothing expands; the reference stays text.
      this.#copy(2);
      while (this.#i < this.#src.length && this.#peek() !== "'") {
        const name = this.#variable();
        if (name !== undefined) this.#out += `\${${this.#refs.key(name)}}`;
        else this.#copy(this.#peek() === "\\" ? 2 : 1);
      }
      this.#copy();
      return [];
    }
    this.#copy();
    return [];
  }

  /**
   * At a `[` after a name (`a[i]`, `${a[i]}`) or a `$`: an array subscript (or `$[…]`), which bash
   * evaluates as arithmetic. A reference up to its `]` is refused; the text itself is read as usual.
   */
  #subscript(): void {
    const close = this.#src.indexOf("]", this.#i);
    const text = this.#src.slice(this.#i, close < 0 ? undefined : close);
    const found = VARIABLE_PATTERN.exec(text);
    if (found) throw arithmeticRefused(found[1]);
  }

  /** A `<<` or `<<-` and its delimiter word; the body is read at the next newline. */
  #heredoc(code: boolean): void {
    this.#copy(2);
    const stripTabs = this.#peek() === "-";
    if (stripTabs) this.#copy();
    while (this.#peek() === " " || this.#peek() === "\t") this.#copy();
    let delimiter = "";
    let quoted = false;
    while (this.#i < this.#src.length && !/[\s;&|<>()]/.test(this.#peek())) {
      const char = this.#peek();
      if (char === "'" || char === '"') {
        quoted = true;
        const close = this.#src.indexOf(char, this.#i + 1);
        const end = close < 0 ? this.#src.length : close + 1;
        delimiter += this.#src.slice(this.#i + 1, close < 0 ? end : close);
        this.#copy(end - this.#i);
      } else if (char === "\\") {
        quoted = true;
        delimiter += this.#peek(1);
        this.#copy(2);
      } else {
        delimiter += char;
        this.#copy();
      }
    }
    this.#heredocs.push({ delimiter, quoted, stripTabs, code });
  }

  /** The bodies of the heredocs opened on the line that just ended. */
  #bodies(): void {
    for (const heredoc of this.#heredocs.splice(0)) {
      let body = "";
      let closing = "";
      while (this.#i < this.#src.length) {
        const newline = this.#src.indexOf("\n", this.#i);
        const stop = newline < 0 ? this.#src.length : newline + 1;
        const line = this.#src.slice(this.#i, stop);
        this.#i = stop;
        const bare = line.replace(/\n$/, "");
        if ((heredoc.stripTabs ? bare.replace(/^\t+/, "") : bare) === heredoc.delimiter) {
          closing = line;
          break;
        }
        body += line;
      }
      this.#out += heredoc.quoted
        ? this.#literal(body)
        : new Rewriter(body, this.#refs).heredocBody(heredoc.code);
      this.#out += closing;
    }
  }
}

/**
 * A `run` command with each `{{name}}` replaced by a reference to an environment variable that holds
 * its value (see the module's comment for the forms, and what is refused with a 400 `DockError`).
 * Returns the command and the variables to add to its environment.
 */
export function shellCommand(
  command: string,
  vars: Record<string, string>,
): { command: string; env: Record<string, string> } {
  const refs = new References(vars);
  const out = new Rewriter(command, refs).code();
  return { command: out, env: refs.env };
}
