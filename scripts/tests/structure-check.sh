#!/usr/bin/env bash
# structure-check.sh: the structure checks fail when they should (make
# check-docs runs this after them). In a temporary copy of the tree it plants
# a call loop between two files of one folder and expects check-loops.sh to
# fail naming it, then plants an include of a higher layer and expects
# check-docs.sh to fail; an allowed folder's loop must not fail. The real
# tree's own pass is make check-docs itself. Exit 0 when all holds.
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
cd "$root"
tmp="$(mktemp -d)"
trap 'rm -rf "$tmp"' EXIT
git ls-files -co --exclude-standard controlplane cli template scripts migrations e2e debian | tar -cf - -T - | tar -xf - -C "$tmp"
fail=0
bad() { echo "structure-check: $*" >&2; fail=1; }

# A loop: loop_a.c calls loop_b.c, which calls back.
mkdir -p "$tmp/controlplane/base" "$tmp/build/obj/controlplane/base"
printf 'int loop_b(int);\nint loop_a(int n) { return n ? loop_b(n - 1) : 0; }\n' >"$tmp/controlplane/base/loop_a.c"
printf 'int loop_a(int);\nint loop_b(int n) { return n ? loop_a(n - 1) : 1; }\n' >"$tmp/controlplane/base/loop_b.c"
printf 'int loop_c(void) { return 2; }\n' >"$tmp/controlplane/base/loop_c.c"
for f in loop_a loop_b loop_c; do
  cc -c -o "$tmp/build/obj/controlplane/base/$f.o" "$tmp/controlplane/base/$f.c"
done
: >"$tmp/empty.allow"
if out="$(CHECK_LOOPS_ALLOW="$tmp/empty.allow" "$tmp/scripts/check-loops.sh" "$tmp/build" 2>&1)"; then
  bad "a planted loop passed check-loops.sh: $out"
elif ! grep -q 'controlplane/base: loop_a.c -> loop_b.c -> loop_a.c' <<<"$out"; then
  bad "check-loops.sh failed without naming the planted loop: $out"
fi
echo controlplane/base >"$tmp/base.allow"
CHECK_LOOPS_ALLOW="$tmp/base.allow" "$tmp/scripts/check-loops.sh" "$tmp/build" >/dev/null 2>&1 ||
  bad "an allowed folder's loop failed check-loops.sh"
rm "$tmp/build/obj/controlplane/base/loop_b.o" "$tmp/controlplane/base/loop_b.c"
CHECK_LOOPS_ALLOW="$tmp/empty.allow" "$tmp/scripts/check-loops.sh" "$tmp/build" >/dev/null 2>&1 ||
  bad "check-loops.sh failed on a folder without a loop"

# A wrong include: base/ (the lowest layer) includes the store's header.
"$tmp/scripts/check-docs.sh" >/dev/null 2>&1 || bad "check-docs.sh fails on the unchanged copy"
sed -i '0,/^#include "/s//#include "store\/store.h"\n&/' "$tmp/controlplane/base/xalloc.c"
if out="$("$tmp/scripts/check-docs.sh" 2>&1)"; then
  bad "a planted include of a higher layer passed check-docs.sh"
elif ! grep -q "controlplane/base/xalloc.c:.*includes 'store/store.h'" <<<"$out"; then
  bad "check-docs.sh failed without naming the planted include: $out"
fi
[ "$fail" = 0 ] && echo "structure-check: a planted loop and a planted wrong include both fail the checks"
exit "$fail"
