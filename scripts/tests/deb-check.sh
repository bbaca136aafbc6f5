#!/usr/bin/env bash
# The Debian package (issue 25), built and read, never installed: `make deb`
# builds it; lintian finds no error and no warning that debian/
# does not override with its reason; its files are exactly
# scripts/tests/install-layout.txt (PREFIX=/usr, man pages compressed) plus
# the package's own (the firewall system unit, /usr/share/doc, the lintian
# overrides), owned by root; its control fields say what the package needs;
# its maintainer scripts start nothing and enable no user's serve; the
# firewall unit is valid and runs a command that exists. No root needed
# except to read nftables, which this check never does.
# Usage: scripts/tests/deb-check.sh   (make check-deb; DEB_VERSION as make deb;
#   DEB_CHECK_BUILT=1 reads the .deb build/deb already holds, no build)
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/../.."
fail=0
bad() { echo "deb-check: $*" >&2; fail=1; }
work="$(mktemp -d /tmp/chat2sbx-deb-check.XXXXXX)"
trap 'rm -rf "$work"' EXIT
chmod 0755 "$work" # the unit's command is run as nobody from the extracted tree

version="$(cat VERSION)"
deb_version="${DEB_VERSION:-$version}"
deb="build/deb/chat2sbx_${deb_version}_amd64.deb"

# DEB_VERSION is checked before anything is built: a Debian revision or a
# path in it is refused with what to write instead.
for v in 0.1.0-1 ../0.1.0 '0.1.0 x' +0.1; do
  if DEB_VERSION="$v" scripts/deb.sh >/dev/null 2>"$work/err"; then
    bad "scripts/deb.sh accepted DEB_VERSION '$v'"
  fi
  grep -q "not a native Debian version" "$work/err" || bad "DEB_VERSION '$v' refused without saying why: $(cat "$work/err")"
done

[ "${DEB_CHECK_BUILT:-0}" = 1 ] || scripts/deb.sh
[ -f "$deb" ] || { bad "make deb made no $deb"; exit 1; }

# ---- lintian: no error, no warning; what it says, counted ----
lintian_out="$work/lintian"
lintian -I -E --pedantic --show-overrides "$deb" >"$lintian_out" 2>&1 || true
grep -v '^running with root privileges' "$lintian_out" | sed 's/^/  /'
count() { grep -c "^$1: " "$lintian_out" || true; }
echo "deb-check: lintian: $(count E) errors, $(count W) warnings, $(count I) info, $(count P) pedantic," \
  "$(count X) experimental, $(count O) overridden"
[ "$(count E)" = 0 ] || bad "lintian reports errors (above): fix them, or override them in debian/chat2sbx.lintian-overrides with the reason"
[ "$(count W)" = 0 ] || bad "lintian reports warnings (above): fix them, or override them in debian/chat2sbx.lintian-overrides with the reason"
# lintian ran, and every override is still needed (lintian uses each once).
overrides="$(grep -c '^chat2sbx: ' debian/chat2sbx.lintian-overrides)"
[ "$(count O)" = "$overrides" ] ||
  bad "lintian used $(count O) of the $overrides overrides of debian/chat2sbx.lintian-overrides (did it run? is one no longer needed?)"
# Every override says why: a comment above each tag line (tags of one
# reason may follow each other; an empty line ends a reason).
awk '/^#/ { why = 1; next } /^$/ { why = 0; next } !why { print "  line " NR ": " $0; n++ } END { exit n > 0 }' \
  debian/chat2sbx.lintian-overrides || bad "an override in debian/chat2sbx.lintian-overrides has no comment saying why"

# ---- the files: the documented layout, the package's own, owned by root ----
expected="$( { grep -v '^#' scripts/tests/install-layout.txt | sed -E 's|^(0644 /usr/share/man/.*)$|\1.gz|'
  printf '%s\n' '0644 /lib/systemd/system/chat2sbx-firewall.service' '0644 /usr/share/doc/chat2sbx/changelog.gz' \
    '0644 /usr/share/doc/chat2sbx/copyright' '0644 /usr/share/lintian/overrides/chat2sbx'; } | sort -k2)"
perm() { # -rwxr-xr-x -> 0755
  local p="$1" m=0 i
  for i in 1 2 3 4 5 6 7 8 9; do m=$((m * 2)); [ "${p:$i:1}" = - ] || m=$((m + 1)); done
  printf '%04o' "$m"
}
contents="$(dpkg-deb -c "$deb")"
got="$(while read -r mode owner _ _ _ path _; do
  [ "${mode:0:1}" = - ] || continue
  [ "$owner" = root/root ] || echo "owner $owner ${path#.}"
  echo "$(perm "$mode") ${path#.}"
done <<<"$contents" | sort -k2)"
if [ "$got" != "$expected" ]; then
  bad "the package's files differ from scripts/tests/install-layout.txt and the package's own (- expected, + packaged):"
  diff <(echo "$expected") <(echo "$got") | sed -n 's/^[<>]/  &/p' >&2 || true
else
  echo "deb-check: $(wc -l <<<"$got") files, as documented"
fi
if grep -v '^[d-]' <<<"$contents" | grep -q .; then bad "the package holds links or devices: $(grep -v '^[d-]' <<<"$contents")"; fi

# ---- control fields ----
field() { dpkg-deb -f "$deb" "$1"; }
[ "$(field Package)" = chat2sbx ] || bad "Package is '$(field Package)'"
[ "$(field Version)" = "$deb_version" ] || bad "Version is '$(field Version)', not $deb_version"
[ "$(field Architecture)" = amd64 ] || bad "Architecture is '$(field Architecture)'"
depends="$(field Depends)"
for d in 'docker.io | docker-ce' debootstrap git curl 'libc6 (' 'libnftables1 (' 'libcurl4 (' 'libsqlite3-0 ('; do
  grep -qF -- "$d" <<<"$depends" || bad "Depends lacks '$d': $depends"
done
grep -qw runsc <<<"$(field Recommends)" || bad "Recommends lacks runsc: $(field Recommends)"
if grep -qi qemu <<<"$(field Depends) $(field Recommends) $(field Suggests)"; then
  bad "the package names QEMU, which only runs inside the vm image (debian/control says why)"
fi
grep -q 'glibc (= ' <<<"$(field Built-Using)" || bad "Built-Using does not name glibc (the static programs): $(field Built-Using)"
[ -z "$(field Pre-Depends)" ] || bad "the package has Pre-Depends: $(field Pre-Depends)"
installed_size="$(field Installed-Size)"
[[ "$installed_size" =~ ^[0-9]+$ ]] || bad "Installed-Size is '$installed_size'"

# ---- maintainer scripts: nothing started, no user's serve enabled ----
dpkg-deb -e "$deb" "$work/control"
if grep -hE 'deb-systemd-invoke (start|restart)|systemctl (--[a-z]+ )*(start|restart)' "$work/control"/*inst "$work/control"/*rm 2>/dev/null; then
  bad "a maintainer script starts a unit (above); installing the package starts nothing"
fi
grep -q "try-restart 'chat2sbx-firewall.service'" "$work/control/postinst" ||
  bad "postinst does not re-run an active firewall unit after an upgrade (try-restart)"
grep -q "deb-systemd-helper enable 'chat2sbx-firewall.service'" "$work/control/postinst" ||
  bad "postinst does not enable chat2sbx-firewall.service"
# The user unit: enabled only again where a user had it (debian-installed
# guards the dont-enable snippet); never for every user.
if grep -q -- "--user enable 'chat2sbx.service'" "$work/control/postinst" &&
   ! grep -q -- "--user debian-installed 'chat2sbx.service'" "$work/control/postinst"; then
  bad "postinst enables the user unit chat2sbx.service for every user"
fi
if grep -rhE 'rm -rf? .*(\.chat2sbx|/home|HOME)' "$work/control" 2>/dev/null; then
  bad "a maintainer script removes a user's data root (above)"
fi

# ---- the files themselves ----
root="$work/root"
dpkg-deb -x "$deb" "$root"
unit="$root/lib/systemd/system/chat2sbx-firewall.service"
grep -qx 'ExecStart=/usr/bin/chat2sbx setup --install-firewall' "$unit" || bad "the firewall unit does not run chat2sbx setup --install-firewall"
grep -qx 'CapabilityBoundingSet=CAP_NET_ADMIN' "$unit" || bad "the firewall unit's capabilities are not CAP_NET_ADMIN alone"
grep -qx 'PartOf=docker.service' "$unit" || bad "the firewall unit does not follow the engine's restarts (PartOf=docker.service)"
grep -qx 'WantedBy=multi-user.target docker.service' "$unit" || bad "the firewall unit is not wanted at boot and by the engine"
if command -v systemd-analyze >/dev/null 2>&1; then
  # Every directive known and valid: the unit, run from the extracted tree.
  sed "s|^ExecStart=/usr/bin/chat2sbx|ExecStart=$root/usr/bin/chat2sbx|" "$unit" >"$work/chat2sbx-firewall.service"
  MANPATH="$root/usr/share/man" systemd-analyze verify "$work/chat2sbx-firewall.service" >"$work/verify" 2>&1 || true
  [ ! -s "$work/verify" ] || bad "systemd-analyze verify: $(cat "$work/verify")"
  echo "deb-check: the firewall unit: $(systemd-analyze security --offline=yes --root="$root" chat2sbx-firewall.service 2>/dev/null |
    grep -o 'Overall exposure level.*' | sed 's/ [^ ]*$//')"
fi
# The unit's command exists: as a user without CAP_NET_ADMIN the packaged
# binary refuses it for the right reason (as root it would change nftables).
if setpriv --reuid=nobody --regid=nogroup --clear-groups env -i HOME=/nonexistent PATH=/usr/bin:/bin \
    "$root/usr/bin/chat2sbx" setup --install-firewall >"$work/out" 2>&1; then
  bad "chat2sbx setup --install-firewall succeeded without CAP_NET_ADMIN"
fi
grep -q 'needs root (CAP_NET_ADMIN)' "$work/out" || bad "the unit's command fails for another reason: $(cat "$work/out")"
# The packaged binary looks in /usr/lib/chat2sbx and /usr/share/chat2sbx.
got="$( (cd / || exit 1; env -i HOME="$work" PATH=/usr/bin:/bin "$root/usr/bin/chat2sbx" status --json 2>/dev/null; true) |
  python3 -c 'import json,sys; f=json.load(sys.stdin)["files"]; print(f["lib_dir"], f["data_dir"])' 2>/dev/null)" || true
[ "$got" = "/usr/lib/chat2sbx /usr/share/chat2sbx" ] || bad "the packaged binary looks in '$got', not /usr/lib/chat2sbx /usr/share/chat2sbx"
[ "$(cat "$root/usr/share/chat2sbx/VERSION")" = "$version" ] || bad "the packaged VERSION is not $version"

[ "$fail" = 0 ] || exit 1
echo "deb-check: $deb: $(stat -c %s "$deb") bytes, Installed-Size $installed_size KiB; lintian clean; files, fields, scripts and the unit as documented"
