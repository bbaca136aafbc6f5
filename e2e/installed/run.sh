#!/usr/bin/env bash
# e2e/installed/run.sh: chat2sbx installed like any Linux tool and used by a
# normal user, with no source tree in reach (issue 25). As root, on a
# throwaway machine (it installs into the real system and adds a user):
#   1. install: path A `make install PREFIX=/usr/local`; path B (when `make
#      deb` exists, E2E_INSTALLED_PATH=deb or auto) the package with dpkg -i
#   2. a user made for the test, first outside the docker group (status must
#      name EACCES), then in it, with a HOME of its own, runs from / in a
#      mount namespace where the checkout is hidden: setup, serve
#   3. the firewall: without root's note serve refuses; root installs it
#      (setup --install-firewall, as the package's unit would) and serve starts
#   4. the MCP client (client.mjs) creates a sandbox, runs bash, reads a
#      file, starts a long-lived session; man -w finds the page
#   5. upgrade: a build of the same tree with a higher version installed over
#      it; the user's serve restarted; the sandbox is re-attached, its
#      session answers; the template is re-tagged, not rebuilt
#   6. destroy; uninstall (or dpkg -r) removes the files and keeps the data root
# Cleanup (a trap, also on failure): serve stopped, the user's containers and
# the user removed, the installed files (or package) removed.
# Usage: e2e/installed/run.sh [a|deb]   (default: a; make e2e-installed runs
#   both paths, each under /tmp/chat2sbx-e2e.lock, the engine's lock)
# Environment: E2E_KEEP=1 keeps the user's home for a look afterwards.
set -euo pipefail
exec </dev/null

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
root="$(cd "$here/../.." && pwd)"
mode="${1:-a}"
case "$mode" in
  a) prefix=/usr/local ;;
  deb) prefix=/usr ;;
  *) echo "usage: e2e/installed/run.sh [a|deb]" >&2; exit 2 ;;
esac
user="c2s-e2e-$$"
home="/var/tmp/$user-home"
work="$(mktemp -d /tmp/c2s-installed.XXXXXX)"
chmod 0755 "$work"
serve_pid=""
installed=""
t_start=$SECONDS

say() { echo "e2e-installed: $*"; }
die() { echo "e2e-installed: FAILED: $*" >&2; exit 1; }

[ "$(id -u)" = 0 ] || die "run as root on a throwaway machine (it installs into $prefix and adds a user)"
for c in useradd userdel runuser unshare man curl node; do
  command -v "$c" >/dev/null || die "'$c' is missing"
done
"$root/scripts/ensure-engine.sh"
getent group docker >/dev/null || die "there is no docker group"
[ -d "$root/e2e/node_modules/@modelcontextprotocol/sdk" ] || (cd "$root/e2e" && npm ci --no-audit --no-fund >/dev/null)

# ---- cleanup ----
cleanup() {
  local rc=$?
  set +e
  stop_serve
  if [ $rc != 0 ]; then
    for f in "$work"/*.log; do [ -f "$f" ] && { echo "---- $(basename "$f") (last 25 lines)"; tail -n 25 "$f"; }; done >&2
  fi
  # The test user's sandboxes: their registry label is under its home.
  for c in $(docker ps -aq --filter label=org.chat2sbx.registry); do
    case "$(docker inspect --format '{{ index .Config.Labels "org.chat2sbx.registry" }}' "$c" 2>/dev/null)" in
      "$home"/*) docker rm -f "$c" >/dev/null 2>&1 ;;
    esac
  done
  if [ -n "$installed" ]; then
    if [ "$mode" = deb ]; then dpkg --purge chat2sbx >/dev/null 2>&1; else make -s -C "$root" uninstall PREFIX="$prefix" >/dev/null 2>&1; fi
  fi
  # The upgrade's template tag (the image itself is the earlier version's).
  [ -z "${new:-}" ] || [ "$new" = "$ver" ] || docker rmi "chat2sbx-template:$new" >/dev/null 2>&1
  if id "$user" >/dev/null 2>&1; then
    # Only this test's user's processes; userdel refuses while one lives.
    pkill -KILL -u "$user" 2>/dev/null
    for _ in $(seq 1 100); do pgrep -u "$user" >/dev/null 2>&1 || break; sleep 0.1; done
    userdel "$user" || echo "e2e-installed: could not remove the user $user; remove it with 'userdel $user'" >&2
  fi
  if [ "${E2E_KEEP:-0}" = 1 ]; then say "kept $home and $work"; else rm -rf --one-file-system "$home" "$work"; fi
  if [ $rc = 0 ]; then say "passed in $((SECONDS - t_start)) s"; else say "FAILED (exit $rc) after $((SECONDS - t_start)) s"; fi
  exit $rc
}
trap cleanup EXIT

# Runs a command as the test user, from /, with the checkout hidden (a
# private mount namespace with an empty, unreadable tmpfs over it) and only
# a login's environment.
as_user() {
  # shellcheck disable=SC2016 # expanded by the inner sh, from its arguments
  unshare --mount --propagation private -- sh -c '
    mount -t tmpfs -o mode=000,size=4k none "$1" || exit 97
    shift
    cd /
    exec runuser -u "$0" -- env -i PATH=/usr/local/bin:/usr/bin:/bin HOME="$HOME_DIR" USER="$0" LOGNAME="$0" \
      CHAT2SBX_ENABLE_TUNNEL=0 CHAT2SBX_PORT="$PORT" "$@"' "$user" "$root" "$@"
}
export HOME_DIR="$home"
PORT="$(node -e 'const s=require("net").createServer().listen(0,"127.0.0.1",()=>{console.log(s.address().port);s.close()})')"
export PORT

# serve_pid is runuser's; serve itself is its child, of the test user. Both
# must be gone (and the port free) before the next serve starts, or the
# client would talk to the old one.
stop_serve() {
  [ -n "$serve_pid" ] || return 0
  kill -TERM "$serve_pid" 2>/dev/null || true
  pkill -TERM -u "$user" -x chat2sbx 2>/dev/null || true
  for _ in $(seq 1 300); do
    pgrep -u "$user" -x chat2sbx >/dev/null 2>&1 || kill -0 "$serve_pid" 2>/dev/null || break
    sleep 0.1
  done
  pkill -KILL -u "$user" -x chat2sbx 2>/dev/null || true
  kill -KILL "$serve_pid" 2>/dev/null || true
  wait "$serve_pid" 2>/dev/null || true # its status: 143 after SIGTERM
  serve_pid=""
  ! curl -s -o /dev/null --max-time 2 "http://127.0.0.1:$PORT/mcp" 2>/dev/null || die "port $PORT still answers after serve stopped"
  return 0
}

start_serve() {
  local log="$work/serve.$1.log"
  as_user "$prefix/bin/chat2sbx" serve >"$log" 2>&1 &
  serve_pid=$!
  for _ in $(seq 1 600); do
    # This serve says it serves, and the port answers (401 without the token).
    if grep -q "serving MCP on" "$log" && curl -s -o /dev/null --max-time 2 "http://127.0.0.1:$PORT/mcp" 2>/dev/null; then
      return 0
    fi
    kill -0 "$serve_pid" 2>/dev/null || { cat "$log" >&2; die "serve ($1) exited before answering"; }
    sleep 0.2
  done
  cat "$log" >&2
  die "serve ($1) did not answer within 120 s"
}

# Path B: the packages `make deb` builds (this version and a higher one),
# made before the clock starts; installed with dpkg -i.
build_deb() {
  local deb="$root/build/deb/chat2sbx_$1_amd64.deb"
  make -s -C "$root" deb DEB_VERSION="$1" >"$work/deb.$1.log" 2>&1 || { tail -30 "$work/deb.$1.log" >&2; die "make deb DEB_VERSION=$1"; }
  [ -f "$deb" ] || die "make deb made no $deb"
  say "package $(basename "$deb"): $(du -k "$deb" | cut -f1) KiB"
}
install_deb() {
  installed=1
  dpkg -i "$root/build/deb/chat2sbx_$1_amd64.deb" >"$work/dpkg.$1.log" 2>&1 || { cat "$work/dpkg.$1.log" >&2; die "dpkg -i chat2sbx $1"; }
}

install_build() { # $1: source tree
  make -s -C "$1" -j2 install PREFIX="$prefix" >"$work/install.log" 2>&1 || { tail -30 "$work/install.log" >&2; die "make install from $1"; }
  installed=1
}

# ---- 1. install ----
ver="$(cat "$root/VERSION")"
say "installing $ver (path $mode) into $prefix"
if [ "$mode" = deb ]; then
  make -s -C "$root" deb-deps >/dev/null
  build_deb "$ver"
  build_deb "$ver+test2"
  t_install=$SECONDS
  install_deb "$ver"
else
  t_install=$SECONDS
  install_build "$root"
fi
if ! [ -x "$prefix/bin/chat2sbx" ] || ! [ -x "$prefix/lib/chat2sbx/chat2sbx-helper" ] ||
   ! [ -f "$prefix/share/chat2sbx/template/build.sh" ]; then
  die "the installed layout is incomplete"
fi

# ---- 2. the user: first outside the docker group ----
useradd --home-dir "$home" --create-home --shell /bin/bash "$user"
chmod 0700 "$home"
as_user sh -c "test -r '$root/Makefile'" && die "the checkout is readable by the test user"
out="$(as_user "$prefix/bin/chat2sbx" status 2>&1)" && die "status succeeded for a user outside the docker group: $out"
case "$out" in *"usermod -aG docker"*) say "status names the docker group: ok" ;; *) die "status did not name EACCES: $out" ;; esac
usermod -aG docker "$user"

# ---- 3. setup as the user; the template's first build needs root ----
set +e
as_user "$prefix/bin/chat2sbx" setup >"$work/setup1.log" 2>&1
rc=$?
set -e
if grep -q "sudo chat2sbx setup --template" "$work/setup1.log"; then
  say "setup as the user says the template's first build needs root; running it as root"
  (cd / && "$prefix/bin/chat2sbx" setup --template) >"$work/setup-root.log" 2>&1 || { cat "$work/setup-root.log" >&2; die "root setup --template"; }
  as_user "$prefix/bin/chat2sbx" setup >"$work/setup1.log" 2>&1 || rc=$?
fi
grep -q "template .*\(up to date\|built\)" "$work/setup1.log" || { cat "$work/setup1.log" >&2; die "setup did not find or build the template"; }
say "setup as the user: $(grep -c '^setup:' "$work/setup1.log") steps (first run exit $rc)"

# ---- 4. the firewall: no note, no serve; root's note, serve ----
rm -f /run/chat2sbx/firewall
set +e
as_user timeout 60 "$prefix/bin/chat2sbx" serve >"$work/serve.refused.log" 2>&1
rc=$?
set -e
if [ $rc = 0 ] || ! grep -q "install-firewall" "$work/serve.refused.log"; then
  cat "$work/serve.refused.log" >&2
  die "serve as a user started without knowing the firewall is in place"
fi
say "serve without root's firewall note refuses: ok"
if [ "$mode" = deb ] && [ "$(systemctl is-system-running 2>/dev/null)" != offline ] && command -v systemctl >/dev/null; then
  systemctl start chat2sbx-firewall >"$work/fw.log" 2>&1 || { cat "$work/fw.log" >&2; die "systemctl start chat2sbx-firewall"; }
else
  # What the firewall unit runs (no systemd here, or path A).
  (cd / && "$prefix/bin/chat2sbx" setup --install-firewall) >"$work/fw.log" 2>&1 || { cat "$work/fw.log" >&2; die "root setup --install-firewall"; }
fi
# Read back from the kernel (root's status reads nftables itself).
fw="$( (cd / && "$prefix/bin/chat2sbx" status 2>&1) | grep -i 'firewall' || true)"
case "$fw" in *installed*) say "table inet chat2sbx in place: $fw" ;; *) die "table inet chat2sbx is not in place: $fw" ;; esac
[ "$(stat -c %U:%a /run/chat2sbx/firewall)" = root:644 ] || die "the firewall note is not root's 0644"

# ---- 5. serve and the client ----
start_serve before
token="$(as_user "$prefix/bin/chat2sbx" token)"
url="http://127.0.0.1:$PORT/mcp"
node "$here/client.mjs" before "$url" "$token" "$work/state.json"
t_first=$((SECONDS - t_install))
as_user man -w chat2sbx >/dev/null || die "man -w chat2sbx finds no page for the user"
grep -q "firewall.*installed by root\|in place" "$work/serve.before.log" || { cat "$work/serve.before.log" >&2; die "serve did not say the firewall is in place"; }
say "install to first sandbox: ${t_first} s"

# ---- 6. upgrade: the same tree with a higher version ----
if [ "$mode" = deb ]; then
  # The package's version rises; the program's stays VERSION (scripts/deb.sh).
  new="$ver"
  say "upgrading the package to $ver+test2 while the sandbox runs"
  install_deb "$ver+test2"
  [ "$(dpkg-query -W -f '${Version}' chat2sbx)" = "$ver+test2" ] || die "chat2sbx $ver+test2 is not installed"
else
  new="$ver.1" # a tag-safe higher version (no '+': it names the template image)
  src="$work/src"
  mkdir -p "$src"
  tar -C "$root" --exclude=./build --exclude=./.git --exclude='./e2e' --exclude=node_modules -cf - . | tar -C "$src" -xf -
  echo "$new" >"$src/VERSION"
  say "upgrading to $new while the sandbox runs"
  install_build "$src"
  case "$("$prefix/bin/chat2sbx" --version)" in "chat2sbx $new "*) ;; *) die "the installed binary is not $new" ;; esac
fi
stop_serve
start_serve after
# The new version's template tag did not exist: serve found the image by
# its inputs' hash and re-tagged it (no rebuild, no setup needed).
[ "$new" = "$ver" ] || grep -q "template image chat2sbx-template:$new: re-tagged" "$work/serve.after.log" ||
  die "serve after the upgrade did not re-tag the template: $(grep -m3 'template\|serve:' "$work/serve.after.log")"
grep -q "reconciled: 1 sandbox(es) re-attached" "$work/serve.after.log" ||
  die "serve after the upgrade did not re-attach the sandbox: $(grep -m3 'reconciled' "$work/serve.after.log")"
say "serve $new $([ "$new" = "$ver" ] && echo "kept the template" || echo "re-tagged the template") and re-attached the sandbox"
node "$here/client.mjs" after "$url" "$token" "$work/state.json"
node "$here/client.mjs" destroy "$url" "$token" "$work/state.json"
stop_serve

# ---- 7. uninstall keeps the user's data ----
if [ "$mode" = deb ]; then
  dpkg -r chat2sbx >"$work/dpkg-r.log" 2>&1 || { cat "$work/dpkg-r.log" >&2; die "dpkg -r chat2sbx"; }
else
  make -s -C "$root" uninstall PREFIX="$prefix" >/dev/null
fi
[ "$mode" = deb ] || installed=""  # path B: the trap purges what dpkg -r keeps (the unit's enablement)
for f in bin/chat2sbx lib/chat2sbx share/chat2sbx share/man/man1/chat2sbx.1 share/man/man1/chat2sbx.1.gz; do
  [ ! -e "$prefix/$f" ] || die "uninstall left $prefix/$f"
done
[ -n "$(find "$home/.chat2sbx" -name 'chat2sbx.sqlite' 2>/dev/null)" ] || die "uninstall removed the user's data root"
say "uninstall removed the files and kept $home/.chat2sbx"
say "time from install to first sandbox: ${t_first} s"
