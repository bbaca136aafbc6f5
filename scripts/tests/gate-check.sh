#!/usr/bin/env bash
# make check's own test (issue 24): each habit in the gate fails on a
# planted breach. In a copy of the tracked files (the working tree is not
# touched), one new production file at a time: a warning fails the -Werror
# build rule, a formatting error fails fmt-check, and a FILE leak fails the
# -fanalyzer lint rule, each naming what it found; the same file without
# the breach passes all three. No root, no engine, no network.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/../.."
tmp="$(mktemp -d /tmp/chat2sbx-gate.XXXXXX)"
trap 'rm -rf "$tmp"' EXIT
git ls-files -z | xargs -0 cp --parents -t "$tmp"
fail=0
bad() { echo "gate-check: $*" >&2; fail=1; }
planted=controlplane/base/planted.c
obj=build/obj/${planted%.c}.o
lint=build/lint/obj/${planted%.c}.o

# plant TEXT; then expect_fail WHAT PATTERN MAKE-ARGS...
plant() { printf '%s\n' "$1" >"$tmp/$planted"; rm -rf "$tmp/build"; }
expect_fail() {
  local what="$1" want="$2" out
  shift 2
  if out="$(make -s -C "$tmp" "$@" 2>&1)"; then
    bad "a planted $what passed 'make $*'"
  elif ! grep -q -- "$want" <<<"$out"; then
    bad "'make $*' failed on a planted $what without naming it ($want): $out"
  fi
}
expect_pass() {
  local out
  out="$(make -s -C "$tmp" "$@" 2>&1)" || bad "'make $*' failed on a clean file: $out"
}

clean='/* planted.c: gate-check.sh'"'"'s clean file. */
#include <stdio.h>

int planted_read(const char *path);

int planted_read(const char *path)
{
	FILE *f = fopen(path, "r");
	if (!f)
		return -1;
	int c = fgetc(f);
	fclose(f);
	return c;
}'
plant "$clean"
expect_pass WERROR=1 "$obj"
expect_pass fmt-check
expect_pass WERROR=1 "$lint"

plant "${clean/int c = fgetc(f);/int unused = 0;
	int c = fgetc(f);}"
expect_fail warning "unused variable" WERROR=1 "$obj"

plant "${clean/if (!f)/if(!f)}"
expect_fail "format error" "planted.c" fmt-check

plant "${clean/	fclose(f);
/}"
expect_fail "FILE leak" "analyzer-file-leak" WERROR=1 "$lint"

[ "$fail" = 0 ] && echo "gate-check: a planted warning, format error and -fanalyzer finding each fail make check's rules; a clean file passes"
