#!/usr/bin/env bash
# `make install DESTDIR=... PREFIX=/usr` lays out exactly the files below
# (issue 25), the installed binary looks for its files in PREFIX's
# directories (not in the source tree, not beside itself) and takes the
# environment's override, and `make uninstall` leaves nothing behind. No
# root, no engine: everything happens under a temporary DESTDIR.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/../.."
dest="$(mktemp -d /tmp/chat2sbx-install.XXXXXX)"
trap 'rm -rf "$dest"' EXIT
fail=0
bad() { echo "install-layout: $*" >&2; fail=1; }

# The documented layout (PREFIX=/usr), mode and path: the one list, which
# scripts/tests/deb-check.sh holds the Debian package to as well.
expected="$(grep -v '^#' scripts/tests/install-layout.txt)"
[ -n "$expected" ] || { echo "install-layout: scripts/tests/install-layout.txt lists no file" >&2; exit 1; }
[ "$expected" = "$(sort -k2 <<<"$expected")" ] || bad "scripts/tests/install-layout.txt is not sorted by path"

# A relative PREFIX would be compiled in and looked up from whatever folder
# chat2sbx runs in: refused before anything is built or copied.
if out="$(make -s install DESTDIR="$dest" PREFIX=usr 2>&1)"; then
  bad "make install took a relative PREFIX"
elif ! grep -q "is not an absolute path" <<<"$out"; then
  bad "make install with a relative PREFIX did not say why: $out"
fi
[ -z "$(ls -A "$dest")" ] || bad "make install with a relative PREFIX copied files"

t0=$(date +%s%N)
make -s install DESTDIR="$dest" PREFIX=/usr >/dev/null
echo "install-layout: make install took $(( ($(date +%s%N) - t0) / 1000000 )) ms"
laid="$(cd "$dest" && find . ! -type d -printf '%m %p\n' | sed 's|^\([0-9]*\) \./|\1 /|' |
  awk '{ printf "%04d %s\n", $1, $2 }' | sort -k2)"
if [ "$laid" != "$(sort -k2 <<<"$expected")" ]; then
  bad "the layout differs from the documented one (- documented, + laid out):"
  diff <(sort -k2 <<<"$expected") <(echo "$laid") | sed -n 's/^[<>]/  &/p' >&2 || true
fi
echo "install-layout: $(wc -l <<<"$laid") files, $(du -sk "$dest" | cut -f1) KiB"

# The installed binary was built with PREFIX's directories: it looks in
# /usr/lib/chat2sbx and /usr/share/chat2sbx (absent here: DESTDIR), and the
# environment moves it to the laid-out copy. Run from / with a HOME of its
# own, so neither the source tree nor a .env is within reach.
home="$dest/home"
mkdir -p "$home"
files() { (cd / || exit 1; env -i HOME="$home" PATH=/usr/bin:/bin "$@" "$dest/usr/bin/chat2sbx" status --json; true) |
  python3 -c 'import json,sys; f=json.load(sys.stdin)["files"]; print(f["lib_dir"], f["data_dir"], f["installed"], f["helper_present"], f["template_inputs_present"])'; }
got="$(files)"
[ "$got" = "/usr/lib/chat2sbx /usr/share/chat2sbx True False False" ] ||
  bad "the installed binary's directories are not PREFIX's: $got"
got="$(files CHAT2SBX_LIB_DIR="$dest/usr/lib/chat2sbx" CHAT2SBX_DATA_DIR="$dest/usr/share/chat2sbx")"
[ "$got" = "$dest/usr/lib/chat2sbx $dest/usr/share/chat2sbx True True True" ] ||
  bad "the installed binary does not take CHAT2SBX_LIB_DIR/CHAT2SBX_DATA_DIR: $got"
# The shipped unit runs the installed binary, with no setting of this machine.
grep -qx 'ExecStart=/usr/bin/chat2sbx serve' "$dest/usr/lib/systemd/user/chat2sbx.service" ||
  bad "the shipped unit does not run /usr/bin/chat2sbx serve"
if grep -q '^Environment=' "$dest/usr/lib/systemd/user/chat2sbx.service"; then
  bad "the shipped unit carries Environment= lines from the build machine"
fi
# The completion loads and completes a subcommand.
got="$(bash -c 'source "$1"; COMP_WORDS=(chat2sbx sandbox d); COMP_CWORD=2; _chat2sbx; echo "${COMPREPLY[*]}"' _ \
  "$dest/usr/share/bash-completion/completions/chat2sbx")"
[ "$got" = destroy ] || bad "the completion of 'chat2sbx sandbox d' is '$got', not 'destroy'"

# A .env where the installed binary runs (a cloned repository, say) is not
# its settings; the source tree's build, run in its own folder, reads one.
envdir="$dest/repo"
mkdir -p "$envdir"
printf 'CHAT2SBX_FIREWALL=0\n' >"$envdir/.env"
chmod 0600 "$envdir/.env"
firewall() { (cd "$envdir" && env -i HOME="$home" PATH=/usr/bin:/bin "$1" status --json; true) |
  python3 -c 'import json,sys; print(json.load(sys.stdin)["firewall"]["enabled"])'; }
got="$(firewall "$dest/usr/bin/chat2sbx")"
[ "$got" = True ] || bad "the installed binary took CHAT2SBX_FIREWALL=0 from ./.env (firewall enabled: $got)"
got="$(firewall "$PWD/build/chat2sbx")"
[ "$got" = False ] || bad "the source tree's build did not read ./.env (firewall enabled: $got)"

rm -rf "$home" "$envdir"

# install-files copies what install-build built and builds nothing: for a
# PREFIX the files were not built for, it refuses and lays out nothing
# (a binary built for /usr must not be installed under /opt).
other="$dest/other"
if make -s install-files DESTDIR="$other" PREFIX=/opt/chat2sbx >/dev/null 2>"$dest/err"; then
  bad "make install-files PREFIX=/opt/chat2sbx copied files built for /usr"
fi
grep -q "install-build" "$dest/err" || bad "install-files' refusal does not say what to run: $(cat "$dest/err")"
[ ! -e "$other" ] || bad "install-files refused but laid out $(find "$other" ! -type d | head -n3)"
make -s install-build PREFIX=/usr >/dev/null
copy="$dest/copy"
make -s install-files DESTDIR="$copy" PREFIX=/usr >/dev/null || bad "make install-files after install-build failed"
got="$(cd "$copy" 2>/dev/null && find . ! -type d -printf '%m %p\n' | sed 's|^\([0-9]*\) \./|\1 /|' |
  awk '{ printf "%04d %s\n", $1, $2 }' | sort -k2)"
[ "$got" = "$laid" ] || bad "make install-files lays out other files than make install"
rm -rf "$copy" "$dest/err"

make -s uninstall DESTDIR="$dest" PREFIX=/usr >/dev/null
left="$(cd "$dest" && find . -mindepth 1 ! -type d | sort)"
[ -z "$left" ] || bad "make uninstall left: $left"
for d in usr/lib/chat2sbx usr/share/chat2sbx; do
  [ ! -e "$dest/$d" ] || bad "make uninstall left the directory /$d"
done

[ "$fail" = 0 ] || exit 1
echo "install-layout: make install lays out exactly the documented files; make uninstall removes them"
