#!/usr/bin/env bash
# Replays the fuzz seed corpus and saved regressions through gcc-built
# harnesses (controlplane/fuzz/replay_main.c) under ASan/UBSan, as part of
# `make unit`. Fails when a harness exits nonzero or a sanitizer printed
# anything (as scripts/unit.sh: LeakSanitizer and recovering UBSan only print).
# Usage: scripts/fuzz-replay.sh BIN_DIR FUZZ_DIR HARNESS...
set -uo pipefail
bin_dir="$1" fuzz_dir="$2"
shift 2
status=0
log=$(mktemp)
for h in "$@"; do
  ASAN_OPTIONS=detect_leaks=1:halt_on_error=1 UBSAN_OPTIONS=halt_on_error=1:print_stacktrace=1 \
    "$bin_dir/$h" "$fuzz_dir/corpus/$h" "$fuzz_dir/regressions/$h" >"$log" 2>&1
  rc=$?
  cat "$log"
  if [ "$rc" -ne 0 ] || grep -qE 'Sanitizer|runtime error' "$log"; then
    echo "fuzz-replay: $h failed on its corpus or regressions (see above)" >&2
    status=1
  fi
done
rm -f "$log"
exit "$status"
