/**
 * The launchers a package runs dock by, `bin/dock` and `bin/dockd`: shell scripts written by the
 * builder (`build.ts`).
 *
 * @module
 */
import { COMMAND_V8_FLAGS, SERVER_COMMANDS } from "./unbundled.ts";
import { CACHE, SERVERS_CACHE } from "./cache.ts";

/**
 * The launcher `bin/<program>`: dock from this package, with this package's Deno, offline. It runs on
 * every command and every agent turn (hooks), so it starts no process but Deno: a subshell or a
 * `dirname` costs ~1 ms each (the first launcher's four cost ~3 ms of a ~25 ms command). Only a link
 * other than the one dock installs costs a `readlink`.
 */
export function launcher(program: "dock" | "dockd"): string {
  return `#!/bin/sh
# ${program}: dock's launcher (written by package/build.ts). Runs dock's command line from this package
# with its own Deno and dependencies, --cached-only: nothing is fetched at run time.
self=$0
case $self in */*) ;; *) self=./$self ;; esac
# A bin folder on PATH may hold a link to this file: find the package through it (no readlink -f on
# older macOS). The link dock installs, ~/.dock/bin/${program} -> ../current/bin/${program}, is known
# by being the same file (a test, no process).
while [ -L "$self" ]; do
  installed=\${self%/*}/../current/bin/${program}
  if [ "$self" -ef "$installed" ]; then
    self=$installed
    continue
  fi
  link=$(readlink "$self")
  case $link in /*) self=$link ;; *) self=\${self%/*}/$link ;; esac
done
# cd in this shell rather than $(cd …; pwd): no subshell. Back to the caller's folder before exec.
unset CDPATH
here=$PWD
cd -P "\${self%/*}/.." || exit 1
root=$PWD
cd "$here" || exit 1
# How dock starts itself again (hooks, service units): through the folder it was started from.
case $0 in */*) cd "\${0%/*}" || exit 1 ;; esac
bin=$PWD
cd "$here" || exit 1
# Transpiled modules are cached inside the package: one cache per version, dropped with it.
export DENO_NO_UPDATE_CHECK=1
export DOCK_BIN="$bin"
# A server, or a command that loads sources needing deno.json (package/unbundled.ts), runs as it is.
# Any other runs for milliseconds from its bundle: without the config, and with V8 compiling functions
# as it loads them (then they come from the code cache) and starting no helper threads. V8 takes no
# code compiled under other flags: the servers' caches are their own (package/cache.ts).
case $1 in
${SERVER_COMMANDS.join(" | ")})
  fast=
  export DENO_DIR="\${DOCK_DENO_DIR:-$root/${CACHE}/${SERVERS_CACHE}}"
  ;;
*)
  fast="--no-config --v8-flags=${COMMAND_V8_FLAGS}"
  export DENO_DIR="\${DOCK_DENO_DIR:-$root/${CACHE}}"
  ;;
esac
exec "$root/bin/deno" run -A --cached-only $fast "$root/src/cli/${program}.js" "$@"
`;
}
