#!/usr/bin/env bash
# Runs a Criterion test binary under ASan/UBSan and fails when a sanitizer
# printed anything: Criterion reports a leaking test as passed, and
# LeakSanitizer only prints, so the output itself is checked.
# One exception: Criterion's own runner (libcriterion 2.4.1) now and then
# leaks one small object of its own after the synthesis line. A leak report
# whose every frame below the allocator is inside libcriterion.so is not our
# code and is ignored (any frame of ours in a stack keeps it an error).
set -uo pipefail
bin="$1"
log=$(mktemp)
ASAN_OPTIONS=detect_leaks=1 UBSAN_OPTIONS=halt_on_error=1:print_stacktrace=1 "$bin" --jobs 2 2>&1 | tee "$log"
status=${PIPESTATUS[0]}
# Leak blocks ("Direct/Indirect leak of ...") followed by frames "#N ...":
# a block counts as ours when a frame after #0 is outside libcriterion, libc and the loader.
ours=$(awk '
  /^(Direct|Indirect) leak of/ { if (inblock && mine) n++; inblock = 1; mine = 0; next }
  inblock && /^ *#[0-9]+ / {
    if ($1 != "#0" && $0 !~ /libcriterion\.so|libc\.so|ld-linux/) mine = 1
    next
  }
  inblock && /^$/ { next }
  inblock { if (mine) n++; inblock = 0 }
  END { if (inblock && mine) n++; print n + 0 }' "$log")
other=$(grep -E 'Sanitizer|runtime error' "$log" | grep -cvE 'LeakSanitizer: detected memory leaks|^SUMMARY: AddressSanitizer: [0-9]+ byte\(s\) leaked')
leaks=$(grep -c 'LeakSanitizer: detected memory leaks' "$log")
if [ "$other" -gt 0 ] || [ "$ours" -gt 0 ]; then
  echo "unit: $bin: a sanitizer reported a problem (see above)" >&2
  status=1
elif [ "$leaks" -gt 0 ]; then
  echo "unit: $bin: ignored a leak inside libcriterion's own runner (no frame of ours)" >&2
  # LeakSanitizer turned the exit status non-zero for it; what counts then
  # is Criterion's own verdict.
  if grep -qE 'Synthesis: Tested: [0-9]+ \| Passing: [0-9]+ \| Failing: 0 \| Crashing: 0' "$log"; then
    status=0
  fi
fi
rm -f "$log"
exit "$status"
