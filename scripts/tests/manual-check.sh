#!/usr/bin/env bash
# shellcheck disable=SC2016 # the backticks in the planted text are Markdown's
# manual-check.sh: check-manual.sh fails when a page says something untrue
# (make check-docs runs this after it). In a temporary copy of the tree it
# plants, one at a time, a broken link, a missing anchor, a missing file (in
# code and in prose), a
# made-up command, subcommand, option, setting and make target (also in a
# man page source), a package list that differs from scripts/deps.sh and a
# stale tool reference, and expects the check to fail naming each; it also
# plants true statements the check must let pass. Usage:
# scripts/tests/manual-check.sh BUILD_DIR. Exit 0 when all holds.
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
build="$(cd "${1:?usage: manual-check.sh BUILD_DIR}" && pwd)"
cd "$root"
tmp="$(mktemp -d)"
trap 'rm -rf "$tmp"' EXIT
git ls-files -co --exclude-standard | while IFS= read -r f; do [ -e "$f" ] && printf '%s\n' "$f"; done |
  tar -cf - -T - | tar -xf - -C "$tmp"
fail=0
bad() { echo "manual-check: $*" >&2; fail=1; }
check() { "$tmp/scripts/check-manual.sh" "$build" 2>&1; }

check >/dev/null || bad "check-manual.sh fails on the unchanged copy: $(check | head -5)"

# plant FILE TEXT WANT: appends TEXT to FILE (made if missing), expects the
# check to fail with a line matching WANT, then puts FILE back.
plant() {
  local file="$tmp/$1" text="$2" want="$3" out
  if [ -e "$file" ]; then cp "$file" "$tmp/saved"; else rm -f "$tmp/saved"; mkdir -p "$(dirname "$file")"; fi
  printf '%s\n' "$text" >>"$file"
  if out="$(check)"; then
    bad "planted in $1 and passed: $text"
  elif ! grep -qE "$want" <<<"$out"; then
    bad "planted in $1, failed without naming it ($want): $out"
  fi
  if [ -e "$tmp/saved" ]; then mv "$tmp/saved" "$file"; else rm -f "$file"; fi
}

plant docs/tools.md 'See [the page](no-such-page.md).' "docs/tools.md:[0-9]+: link 'no-such-page.md'"
plant docs/tools.md 'See [calling](mcp.md#no-such-heading).' "no heading '#no-such-heading' in docs/mcp.md"
plant README.md 'Run `scripts/no-such-script.sh` first.' "README.md:[0-9]+: path 'scripts/no-such-script.sh' does not exist"
plant docs/tunnel.md 'As e2e/tests/88_no_such.test.mjs does.' "docs/tunnel.md:[0-9]+: path 'e2e/tests/88_no_such.test.mjs' does not exist"
plant docs/mcp.md 'Set `CHAT2SBX_NO_SUCH_SETTING=1`.' "'CHAT2SBX_NO_SUCH_SETTING' is not a setting"
plant docs/limits.md 'All `CHAT2SBX_NO_SUCH_*` settings.' "no setting starts with 'CHAT2SBX_NO_SUCH_'"
plant docs/operations.md $'```sh\nbuild/chat2sbx frobnicate --now\n```' "'chat2sbx frobnicate' is not a command"
plant docs/exports.md 'Then `chat2sbx export frobnicate ID`.' "'chat2sbx export frobnicate' is not a subcommand"
plant docs/operations.md 'Or `chat2sbx serve --frobnicate`.' "'chat2sbx serve --frobnicate': no such option"
plant docs/testing.md $'```sh\nsudo make -j2 frobnicate WERROR=1\n```' "'make frobnicate': no such target"
plant man/chat2sbx.1.scd $'chat2sbx(1)\n\n# SETTINGS\n\n*CHAT2SBX_NO_SUCH_SETTING*' "man/chat2sbx.1.scd:[0-9]+: 'CHAT2SBX_NO_SUCH_SETTING' is not a setting"
plant docs/tool-reference.md 'A line the table does not generate.' "docs/tool-reference.md is not what the tool table generates"
plant scripts/deps.sh 'want+=(no-such-package)' "the package list differs from scripts/deps.sh's"

# True statements pass: a setting's prefix, a real subcommand with its
# options, a shell comment and a command in prose, a link with an anchor,
# paths with wildcards, and words that only look like paths or commands.
cat >>"$tmp/docs/tools.md" <<'EOF'
The caps `CHAT2SBX_MAX_EXPORTS_*`; `chat2sbx export apply ID --to DIR`;
`CHAT2SBX_RUNTIME=vm make run`; see [calling it](mcp.md#calling-it) and
`e2e/tests/*.test.mjs`, `migrations/NNNN_*.sql`, `tools/call`.
chat2sbx is a control plane; make sure it runs.

```sh
make                 # build/chat2sbx and build/chat2sbx-helper; make the template
nft list table inet chat2sbx
```
EOF
check >/dev/null || bad "true statements failed check-manual.sh: $(check | head -5)"

[ "$fail" = 0 ] && echo "manual-check: every planted untruth fails check-manual.sh, and true statements pass"
exit "$fail"
