#!/usr/bin/env bash
# Build the Debian package build/deb/chat2sbx_<version>_amd64.deb with
# Debian's own tools (dpkg-buildpackage, debhelper; debian/), out of a copy
# of this tree, so the working tree is neither written nor cleaned: the
# copy holds every tracked file and every untracked one git does not ignore
# (uncommitted edits included), and no build/.
#
# Usage: scripts/deb.sh            (make deb)
#   DEB_VERSION=0.1.0+test2 scripts/deb.sh   (make deb DEB_VERSION=...)
#   DEB_VERSION: the package's version (default: VERSION, which must equal
#   debian/changelog's). Another one is written into the copy's changelog
#   only, for upgrade tests; the program's own version (chat2sbx --version,
#   the template's tag) stays VERSION. Debian's native versions: a digit,
#   then letters, digits and . + ~ (no '-': the package is native).
# Output: the .deb's path, its size and Installed-Size, the build's time.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
die() { echo "deb: error: $*" >&2; exit 1; }

version="$(cat VERSION)"
deb_version="${DEB_VERSION:-$version}"
[[ "$deb_version" =~ ^[0-9][A-Za-z0-9.+~]*$ ]] ||
  die "DEB_VERSION '$deb_version' is not a native Debian version (a digit, then letters, digits and . + ~; no '-')"
changelog_version="$(dpkg-parsechangelog -S Version 2>/dev/null)" ||
  die "dpkg-parsechangelog is missing or debian/changelog is unreadable; run 'scripts/deps.sh deb'"
[ "$changelog_version" = "$version" ] ||
  die "debian/changelog's version is $changelog_version, VERSION says $version; add a debian/changelog entry for $version"
for tool in dpkg-buildpackage dh fakeroot; do
  command -v "$tool" >/dev/null 2>&1 || die "$tool is missing; run 'scripts/deps.sh deb' (debhelper, dpkg-dev, fakeroot)"
done
[ "$(dpkg --print-architecture)" = amd64 ] || die "the package is built for amd64 only (this machine is $(dpkg --print-architecture))"

out="build/deb"
mkdir -p "$out"
work="$(mktemp -d "${TMPDIR:-/tmp}/chat2sbx-deb.XXXXXX")"
trap 'rm -rf "$work"' EXIT
src="$work/chat2sbx-$deb_version"
mkdir "$src"
if git rev-parse --is-inside-work-tree >/dev/null 2>&1; then
  git ls-files -z --cached --others --exclude-standard | grep -zv '^build/' |
    while IFS= read -r -d '' f; do [ -e "$f" ] && printf '%s\0' "$f"; done |
    tar -c --null -T - -f - | tar -x -f - -C "$src"
else
  # An unpacked tarball: everything but build/.
  tar -c --exclude=./build --exclude=./.git -f - . | tar -x -f - -C "$src"
fi
git_version="$(git describe --always --dirty 2>/dev/null || echo unknown)"

if [ "$deb_version" != "$version" ]; then
  # A test version: one entry on top of the copy's changelog.
  entry="chat2sbx ($deb_version) unstable; urgency=medium

  * Test build of $version as $deb_version (scripts/deb.sh DEB_VERSION).

 -- $(dpkg-parsechangelog -S Maintainer)  $(date -R)
"
  { echo "$entry"; cat debian/changelog; } > "$src/debian/changelog"
  dpkg --compare-versions "$deb_version" gt "$version" ||
    echo "deb: note: $deb_version is not higher than $version; dpkg will treat it as a downgrade" >&2
fi

echo "deb: building chat2sbx $deb_version (program version $version, $git_version) in $src"
t0=$(date +%s%N)
# noautodbgsym: no -dbgsym package (the binaries keep no symbols; a
# developer debugs the checkout's build/, not the package).
if ! (cd "$src" && CHAT2SBX_GIT_VERSION="$git_version" DEB_BUILD_OPTIONS="noautodbgsym parallel=$(nproc)" \
      dpkg-buildpackage -b -us -uc >"$work/build.log" 2>&1); then
  tail -n 40 "$work/build.log" >&2
  die "dpkg-buildpackage failed (the last 40 lines above)"
fi
ms=$(( ($(date +%s%N) - t0) / 1000000 ))
deb="chat2sbx_${deb_version}_amd64.deb"
[ -f "$work/$deb" ] || die "dpkg-buildpackage made no $deb ($(ls "$work"))"
cp "$work/$deb" "$out/$deb"
cp "$work/build.log" "$out/chat2sbx_${deb_version}_amd64.build.log"
echo "deb: $out/$deb: $(stat -c %s "$out/$deb") bytes, Installed-Size $(dpkg-deb -f "$out/$deb" Installed-Size) KiB, built in $((ms / 1000)).$(( (ms % 1000) / 100 )) s"
