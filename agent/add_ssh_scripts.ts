/**
 * The scripts `dock add ssh` (agent/add_ssh.ts) runs on the box by `sh -c`, and the markers and exit
 * statuses it reads their output by. Values reach them only as positional arguments.
 *
 * @module
 */

/** The exit status of the upload's command line when the install script failed (not the service script). */
export const INSTALL_FAILED = 90;

/** The line between the install script's lines and the service script's, in the upload's output. */
export const SERVICE_FOLLOWS = "--dock-service--";

/**
 * Unpacks the package on stdin as ~/.dock/versions/$1 and points ~/.dock/current and ~/.dock/bin at it.
 * $2 is "reuse" for a package without its runtime: the current release's is linked in (copied where
 * links cannot be made). $3 is "zst" for a package compressed with zstd, else "gz"; $4 is "gnu" for GNU
 * tar. (A zstd that fails leaves tar a cut or empty archive, which tar refuses: the step fails.)
 */
export const INSTALL_SCRIPT = `
set -e
dock="$HOME/.dock"
dest="$dock/versions/$1"
incoming="$dest.incoming.$$"
mkdir -p "$dock/versions" "$dock/bin"
# The person at the box types dockd too (pairing a phone, secrets): whether their login shell has
# ~/.dock/bin on its PATH is asked while the package unpacks (a login shell may take 100 ms and more;
# stdin closed: a profile that asks for something gets nothing).
login_path="$dock/.login-path.$$"
"\${SHELL:-/bin/sh}" -lc 'printf "%s" "$PATH"' </dev/null >"$login_path" 2>/dev/null &
asking=$!
rm -rf "$incoming"
mkdir "$incoming"
# GNU tar ($4) reads the stream in 128 KiB records, not 10 KiB ones: ~30 ms less of ~270 here.
records=
[ "$4" = gnu ] && records="-b 256 -B"
if [ "$3" = zst ]; then
  zstd -dcq | tar -xf - $records -C "$incoming" --strip-components=1
else
  tar -xzf - $records -C "$incoming" --strip-components=1
fi
if [ "$2" = reuse ] && [ ! -e "$incoming/bin/deno" ]; then
  runtime=$(cd "$dock/current/bin" && pwd -P)/deno
  ln "$runtime" "$incoming/bin/deno" 2>/dev/null || cp -p "$runtime" "$incoming/bin/deno"
fi
rm -rf "$dest"
mv "$incoming" "$dest"
# Deno's caches as the build made them, for where the release now is (package/cache.ts), unless the
# laptop sent them made: its daemon's first start is then not a cold one. The placing itself caches
# nothing (a throwaway DENO_DIR).
real=$(cd "$dest" && pwd -P)
if [ ! -d "$real/cache" ] && [ -f "$real/src/package/place_cache.js" ]; then
  DENO_DIR="$dock/.place.$$" "$real/bin/deno" run --no-config --cached-only --no-code-cache \\
    --allow-read="$real" --allow-write="$real" "$real/src/package/place_cache.js" "$real" || true
  rm -rf "$dock/.place.$$"
fi
ln -sfn "versions/$1" "$dock/current"
ln -sfn ../current/bin/dockd "$dock/bin/dockd"
ln -sfn ../current/bin/dock "$dock/bin/dock"
wait "$asking" || true
case ":$(cat "$login_path" 2>/dev/null):" in
*":$dock/bin:"*) ;;
*) echo "on the box, add ~/.dock/bin to your PATH to type dockd there: echo 'export PATH=\\"\\$HOME/.dock/bin:\\$PATH\\"' >> ~/.profile" ;;
esac
rm -f "$login_path"
`;

/** The service script's line between what it did and `dockd pair`'s JSON. */
export const LINK_FOLLOWS = "--dockd-pair--";

/** The service script's exit status when the daemon answers but `dockd pair` failed: the `pair` step's failure. */
export const PAIR_REFUSED = 4;

/**
 * Makes dockd run from ~/.dock/bin: a systemd user service with linger, a launchd agent, or nohup;
 * then prints the link of `dockd pair` for the laptop to dial $2, once the daemon answers. $1 is
 * "restart" when an older release runs (or $3, a listen address, is given), "ensure" when this one
 * runs, else "start". Prints what it did,
 * one line each, then {@linkcode LINK_FOLLOWS} and the link's JSON. Exits 1 when the daemon could not
 * be started or did not answer, {@linkcode PAIR_REFUSED} when it answered but made no link.
 */
export const SERVICE_SCRIPT = `
# $3: the listen address asked for (--listen), kept in ~/.dock/listen for the starts after it (an
# upgrade installs the service again), and given to the daemon (and so to its service) as DOCK_LISTEN.
[ -n "$3" ] && printf '%s\\n' "$3" >"$HOME/.dock/listen"
[ -r "$HOME/.dock/listen" ] && DOCK_LISTEN=$(cat "$HOME/.dock/listen") && export DOCK_LISTEN
dockd="$HOME/.dock/bin/dockd"
log="$HOME/.dock/dockd.log"
answers() { "$dockd" info --json >/dev/null 2>&1; }
touch "$log"
from=$(($(wc -c <"$log") + 1))
manager=
started=yes
if [ "$1" = ensure ] && answers; then
  echo "dockd runs already"
  started=
elif command -v systemctl >/dev/null 2>&1 && systemctl --user show-environment >/dev/null 2>&1; then
  "$dockd" install >/dev/null || exit 1
  [ "$1" = restart ] && systemctl --user restart dockd
  if loginctl enable-linger "$(id -un)" 2>/dev/null; then echo "systemd user service dockd, lingering";
  else echo "systemd user service dockd; warning: linger could not be enabled (sudo loginctl enable-linger $(id -un)), so it stops when you log out"; fi
elif [ "$(uname -s)" = Darwin ]; then
  [ "$1" = restart ] && launchctl unload "$HOME/Library/LaunchAgents/dev.dock.dockd.plist" 2>/dev/null
  "$dockd" install >/dev/null || exit 1
  echo "launchd agent dev.dock.dockd"
else
  if [ "$1" = restart ]; then
    # This home's daemon only, by the real path its launcher runs it from: another home's (another
    # dock of the same user, another test's box) is not ours to stop.
    versions=$(cd "$HOME/.dock/versions" && pwd -P | sed 's#[][\\\\.*^$()+?{}|]#\\\\&#g')
    pattern="$versions/[^ /]*/src/cli/dockd[.][jt]s serve"
    pkill -TERM -u "$(id -u)" -f "$pattern"
    i=0
    while pgrep -u "$(id -u)" -f "$pattern" >/dev/null 2>&1 && [ "$i" -lt 100 ]; do i=$((i + 1)); sleep 0.1; done
  fi
  if command -v setsid >/dev/null 2>&1; then
    setsid nohup "$dockd" serve >>"$log" 2>&1 </dev/null &
  else
    nohup "$dockd" serve >>"$log" 2>&1 </dev/null &
  fi
  # No service manager: a user crontab @reboot entry starts it again after a reboot, where there is cron.
  if command -v crontab >/dev/null 2>&1 && "$dockd" install --cron >/dev/null; then
    echo "no systemd user session here: dockd runs under nohup, and a crontab @reboot entry starts it after a reboot"
  else
    echo "warning: no systemd user session and no crontab here: dockd runs under nohup and will not start again after a reboot"
  fi
  manager=nohup
fi
if link=$("$dockd" pair --json --host "$2" --wait 20); then
  [ -n "$started" ] && echo "dockd answers"
  # It started: the releases before the one it replaced go (what a rollback needs is kept).
  versions="$HOME/.dock/versions"
  current=$(basename "$(readlink "$HOME/.dock/current")")
  previous=$(ls -t "$versions" | grep -v incoming | grep -vxF "$current" | head -n 1)
  for old in $(ls "$versions"); do
    case "$old" in "$current" | "$previous" | *incoming*) ;; *) rm -rf "$versions/$old" ;; esac
  done
  echo "${LINK_FOLLOWS}"
  echo "$link"
  exit 0
fi
if answers; then exit ${PAIR_REFUSED}; fi
echo "dockd did not answer" >&2
# Under nohup its log is ours to show; a service manager keeps its own (journalctl, Console).
[ "$manager" = nohup ] && tail -c "+$from" "$log" | tail -n 20 >&2
exit 1
`;
