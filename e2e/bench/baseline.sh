#!/usr/bin/env bash
# The baseline of `make bench BENCH_BASELINE=<commit>` (docs/performance.md,
# "A/B against a commit"): builds chat2sbx and chat2sbx-helper of that commit
# from git, in a temporary directory (git archive, no worktree), and keeps the
# two programs in CACHE_ROOT/<full hash>/, so a second run with the same
# commit builds nothing. Prints that directory on stdout; the build's output
# goes to stderr.
# Usage: e2e/bench/baseline.sh COMMIT CACHE_ROOT
set -euo pipefail

die() { echo "bench baseline: $*" >&2; exit 2; }
[ $# -eq 2 ] || die "usage: e2e/bench/baseline.sh COMMIT CACHE_ROOT"
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
root="$(cd "$here/../.." && pwd)"

hash="$(git -C "$root" rev-parse --verify --quiet "$1^{commit}")" ||
  die "'$1' is not a commit of this repository (git rev-parse)"
out="$2/$hash"
if [ -x "$out/chat2sbx" ] && [ -x "$out/chat2sbx-helper" ]; then
  echo "bench baseline: ${hash:0:12} already built in $out" >&2
  echo "$out"
  exit 0
fi

src="$(mktemp -d -t chat2sbx-baseline.XXXXXX)"
trap 'rm -rf "$src"' EXIT
echo "bench baseline: building ${hash:0:12} in $src (make -j2 build/chat2sbx build/chat2sbx-helper)" >&2
git -C "$root" archive --format=tar "$hash" | tar -x -C "$src"
# No .git in the copy: give the build the commit as its git version.
make -C "$src" -j2 GIT_VERSION="${hash:0:12}" build/chat2sbx build/chat2sbx-helper >&2 ||
  die "the build of ${hash:0:12} failed (output above)"
mkdir -p "$out.tmp"
cp "$src/build/chat2sbx" "$src/build/chat2sbx-helper" "$out.tmp/"
rm -rf "$out" && mv "$out.tmp" "$out"
echo "$out"
