#!/usr/bin/env bash
# The man pages agree with the binary (issue 25): every command of
# `chat2sbx --help` answers `chat2sbx COMMAND --help` with exit 0, and every
# line it prints is in chat2sbx(1) as rendered; every setting named in
# .env.example is in chat2sbx.conf(5) and the page names no other; both
# pages render with man(1) without a warning. No root, no engine.
# Usage: scripts/tests/man-check.sh BIN MANDIR
set -euo pipefail
bin="${1:?usage: man-check.sh BIN MANDIR}"
dir="${2:?usage: man-check.sh BIN MANDIR}"
fail=0
bad() { echo "man-check: $*" >&2; fail=1; }

render() { # the page as text, one space between words
  local warn
  warn="$(MANWIDTH=200 man --warnings -l "$1" 2>&1 >/dev/null)" || true
  [ -z "$warn" ] || bad "$1 renders with warnings: $warn"
  MANWIDTH=200 man -l "$1" 2>/dev/null | col -b | tr -s ' \t' ' '
}
page1="$(render "$dir/chat2sbx.1")"
page5="$(render "$dir/chat2sbx.conf.5")"

commands="$("$bin" --help | awk '/^commands:/ { on = 1; next } on && /^  [a-z]/ { print $1 }' | sort -u)"
[ -n "$commands" ] || bad "'$bin --help' lists no command"
for c in $commands; do
  grep -qE "^ ?$c\$" <<<"$page1" || bad "chat2sbx(1) has no section for '$c'"
  # help and version print the whole help and the version, not their own.
  case "$c" in help | version) continue ;; esac
  out="$("$bin" "$c" --help 2>&1)" || { bad "'chat2sbx $c --help' exits nonzero"; continue; }
  while IFS= read -r line; do
    line="$(printf '%s' "${line#usage: chat2sbx }" | tr -s ' \t' ' ' | sed 's/^ //')"
    [ -z "$line" ] && continue
    grep -qF -- "$line" <<<"$page1" || bad "chat2sbx(1) lacks this line of 'chat2sbx $c --help': $line"
  done <<<"$out"
done
# The page documents no command the binary does not have.
while read -r c; do
  grep -qx "$c" <<<"$commands" || bad "chat2sbx(1) documents '$c', which 'chat2sbx --help' does not list"
done < <(sed -n '/^COMMANDS/,/^EXIT STATUS/p' <<<"$page1" | awk '/^ [a-z]+$/ { print $1 }')

want="$(grep -oE '^#?CHAT2SBX_[A-Z0-9_]+=' .env.example | tr -d '#=' | sort -u)"
have="$(grep -oE '^ CHAT2SBX_[A-Z0-9_]+' <<<"$page5" | tr -d ' ' | sort -u)"
[ -n "$want" ] || bad ".env.example names no setting"
missing="$(comm -23 <(echo "$want") <(echo "$have"))"
extra="$(comm -13 <(echo "$want") <(echo "$have"))"
[ -z "$missing" ] || bad "chat2sbx.conf(5) lacks: $missing"
[ -z "$extra" ] || bad "chat2sbx.conf(5) names settings .env.example does not: $extra"

[ "$fail" = 0 ] || exit 1
echo "man-check: $(wc -w <<<"$commands") commands agree with chat2sbx(1), $(wc -l <<<"$want") settings with chat2sbx.conf(5)"
