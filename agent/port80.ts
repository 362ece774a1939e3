/**
 * `dock setup port80` (`POST /v1/setup/port80[?remove=1]`, issue 17): makes the private URLs work
 * without `:1377` (`http://<wt>.<loc>.<box>.localhost/`) by redirecting loopback connections to port 80
 * to the proxy's port, once, as root. On Linux that is one iptables rule on the `nat` table's OUTPUT
 * chain for the loopback interface; on macOS one pf anchor rule. Not root: the exact command to run is
 * said, and nothing is changed. Each step is a line of the stream; adding twice or removing what is not
 * there changes nothing.
 *
 * @module
 */
import type { StreamLine } from "../client/wire.ts";
import { isExecutable, run, shellQuote, which } from "../core/runner.ts";

/** What setting up port 80 needs to know. */
export interface Port80Options {
  /** The proxy's port. */
  proxyPort: number;
  remove?: boolean;
  /** Whether this process may change the firewall. @default {uid 0} */
  root?: boolean;
  /** Where `iptables` is looked for. @default {PATH} */
  path?: string;
  /** The iptables command itself (`DOCK_IPTABLES`: tests point it at a fake). @default {found on `path`} */
  iptables?: string;
}

/** The iptables command line for the rule with `flag` (`-A` add, `-C` check, `-D` delete). */
function rule(flag: string, proxyPort: number): string[] {
  return [
    "-t",
    "nat",
    flag,
    "OUTPUT",
    "-o",
    "lo",
    "-p",
    "tcp",
    "--dport",
    "80",
    "-j",
    "REDIRECT",
    "--to-ports",
    String(proxyPort),
  ];
}

/** Sets up (or removes) the redirect, streaming its steps. */
export async function* setupPort80(options: Port80Options): AsyncGenerator<StreamLine> {
  const verb = options.remove ? "remove" : "add";
  if (Deno.build.os === "darwin") {
    const line =
      `rdr pass on lo0 inet proto tcp from any to 127.0.0.1 port 80 -> 127.0.0.1 port ${options.proxyPort}`;
    yield { line: `macOS: a pf rule does it; as an administrator run:` };
    yield {
      line: options.remove
        ? "sudo pfctl -a com.apple/dock -F nat"
        : `echo ${shellQuote(line)} | sudo pfctl -a com.apple/dock -f - && sudo pfctl -E`,
    };
    yield { done: true, error: "dock does not change the firewall on macOS itself: run the command above" };
    return;
  }
  const path = options.path ?? Deno.env.get("PATH") ?? "";
  const iptables = options.iptables ?? which("iptables", path);
  if (!iptables || !isExecutable(iptables)) {
    if (options.remove) {
      // Without iptables no rule of dock's can be in place: there is nothing to install to remove it.
      yield { line: "iptables is not installed here, so no redirect of dock's is set: nothing to remove" };
      yield { done: true };
      return;
    }
    yield {
      done: true,
      error: "iptables is not installed: install it (sudo apt-get install -y iptables), then run this again",
    };
    return;
  }
  const command = (flag: string) => ["iptables", ...rule(flag, options.proxyPort)].join(" ");
  const root = options.root ?? Deno.uid() === 0;
  if (!root) {
    yield { line: `port 80 needs root once; run:` };
    yield { line: `sudo ${command(options.remove ? "-D" : "-A")}` };
    yield { done: true, error: "not root: nothing was changed (run the command above)" };
    return;
  }
  // -C: is the rule there already? (exit 0 yes, 1 no)
  const present = (await run(iptables, rule("-C", options.proxyPort), { timeoutMs: 10_000 })).code === 0;
  yield { line: `redirect of 127.0.0.1:80 to :${options.proxyPort}: ${present ? "present" : "absent"}` };
  if (present === !options.remove) {
    yield { line: `nothing to ${verb}` };
    yield { done: true };
    return;
  }
  const changed = await run(iptables, rule(options.remove ? "-D" : "-A", options.proxyPort), {
    timeoutMs: 10_000,
  });
  if (changed.code !== 0) {
    yield {
      done: true,
      error: `${command(options.remove ? "-D" : "-A")}: ${changed.stderr.trim() || `exit ${changed.code}`}`,
    };
    return;
  }
  yield {
    line: options.remove
      ? "removed: private URLs need :1377 again"
      : "added: http://<wt>.<loc>.<box>.localhost/ works now",
  };
  yield { done: true };
}
