#!/usr/bin/env bash
# Runs a Criterion test binary under ASan/UBSan and fails when a sanitizer
# printed anything: Criterion reports a leaking test as passed, and
# LeakSanitizer only prints, so the output itself is checked.
set -uo pipefail
bin="$1"
log=$(mktemp)
ASAN_OPTIONS=detect_leaks=1 UBSAN_OPTIONS=halt_on_error=1:print_stacktrace=1 "$bin" --jobs 2 2>&1 | tee "$log"
status=${PIPESTATUS[0]}
if grep -qE 'Sanitizer|runtime error' "$log"; then
  echo "unit: $bin: a sanitizer reported a problem (see above)" >&2
  status=1
fi
rm -f "$log"
exit "$status"
