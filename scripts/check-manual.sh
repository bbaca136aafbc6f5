#!/usr/bin/env bash
# check-manual.sh: every page a person reads says only what is true of this
# tree. Over every *.md of the repository and every man/*.scd it checks that
# - every relative link names a file that exists, and its #anchor a heading
#   of that file (GitHub's anchors: lower case, punctuation dropped);
# - every repository path named in a code span or a code block
#   (`scripts/deps.sh`, `e2e/tests/…`; `*`, `…` and NNNN match anything)
#   exists, relative to the top or to the page's folder, and so does every
#   path in prose that starts with a top-level folder (paths below build/
#   or node_modules/ are made by a build and are not checked);
# - every `chat2sbx COMMAND [SUBCOMMAND] [--option]` shown in code is one
#   `chat2sbx help` lists (BUILD/chat2sbx);
# - every CHAT2SBX_* named anywhere is a setting of the settings table
#   (BUILD/docgen settings; `CHAT2SBX_MAX_EXPORTS_*` must prefix one);
# - every `make TARGET` shown in code is a target of the Makefile;
# - the package list of README.md (between its check-docs markers) is the
#   one scripts/deps.sh installs, no more and no less;
# - docs/tool-reference.md is what `make docs` generates today.
# Usage: scripts/check-manual.sh BUILD_DIR (make check-docs; the tree is the
# one this script lives in). Needs no root, engine or network; about a second.
# Exit 0 when all holds; 1 with one line per problem (FILE:LINE: what).
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
build="$(cd "${1:?usage: check-manual.sh BUILD_DIR}" && pwd)"
cd "$root"
for b in chat2sbx docgen; do
  [ -x "$build/$b" ] || { echo "check-manual: $build/$b is missing: run make all $build/docgen" >&2; exit 2; }
done
tmp="$(mktemp -d)"
trap 'rm -rf "$tmp"' EXIT

# What exists: the tree's files and folders (what a build or npm makes is
# left out), the settings, the commands with their subcommands and
# options, the Makefile's targets.
find . \( -name node_modules -o -name .git -o -path ./build \) -prune -o -print | sed 's#^\./##' >"$tmp/paths"
# Beside the settings, the variables a build script (template/*.sh,
# scripts/*.sh, the Makefile) or the vm launcher (template/vm/src: getenv)
# reads are real too: they are the environment of those programs.
{
  "$build/docgen" settings
  cat scripts/*.sh template/build.sh template/vm/*.sh Makefile | grep -oE 'CHAT2SBX_[A-Z0-9_]+'
  cat template/vm/src/*.c | grep -oE 'getenv\("CHAT2SBX_[A-Z0-9_]+' | sed 's/getenv("//'
} | sort -u >"$tmp/settings"
"$build/chat2sbx" help | awk '
  /^  [a-z]/ { cmd = $1; print "C", cmd; if ($2 ~ /^[a-z][a-z-]*$/) print "S", cmd, $2 }
  /^  [a-z]/ || /^   / { if (cmd != "") { n = split($0, w, /[^a-z0-9-]+/); for (i = 1; i <= n; i++) if (w[i] ~ /^--[a-z]/) print "O", cmd, w[i] } }
' >"$tmp/commands"
{
  grep -oE '^[a-zA-Z][a-zA-Z0-9_.-]*( [a-zA-Z][a-zA-Z0-9_.-]*)*:([^=]|$)' Makefile | sed 's/:.*//' | tr ' ' '\n'
  sed -n 's/^\.PHONY: *//p' Makefile | tr ' ' '\n'
} | grep -v '^$' | sort -u >"$tmp/targets"

pages=()
while IFS= read -r p; do pages+=("$p"); done < <(grep -E '(^|/)[^/]*\.md$|^man/[^/]*\.scd$' "$tmp/paths" | sort)

status=0
# shellcheck disable=SC2016 # backticks and $ below are awk's and Markdown's
awk -v paths="$tmp/paths" -v settings="$tmp/settings" -v commands="$tmp/commands" -v targets="$tmp/targets" '
function slug(h) {
  h = tolower(h); gsub(/[^a-z0-9 _-]/, "", h); gsub(/ /, "-", h); return h
}
function dirof(f) { return f ~ /\// ? substr(f, 1, match(f, /\/[^\/]*$/) - 1) : "" }
function norm(p,   n, i, out, part, k, st) { # a/./b/../c -> a/c
  n = split(p, part, "/"); k = 0
  for (i = 1; i <= n; i++) {
    if (part[i] == "" || part[i] == ".") continue
    if (part[i] == "..") { if (k > 0) k--; else return "../" ; continue }
    st[++k] = part[i]
  }
  out = ""; for (i = 1; i <= k; i++) out = out (i > 1 ? "/" : "") st[i]
  return out
}
function bad(msg) { badat(FILENAME, FNR, msg) }
function badat(f, n, msg) { printf "check-manual: %s:%d: %s\n", f, n, msg > "/dev/stderr"; problems++ }
function exists_glob(p,   re, q) {
  if (p in have) return 1
  if (p !~ /\*|…|NNNN|<[^>]*>/) return 0
  re = p; gsub(/[.+?()|{}^$\[\]]/, "\\\\&", re)
  gsub(/\*|…|NNNN|<[^>]*>/, "[^/]*", re); re = "^" re "/?$"
  for (q in have) if (q ~ re) return 1
  return 0
}
function check_path(tok, file,   first, rel, base) {
  sub(/[.,;:)]+$/, "", tok); sub(/#.*/, "", tok); sub(/\/$/, "", tok)
  if (tok !~ /\// || tok ~ /^[\/~.$]|:\/\/|^build\/|node_modules/) return
  if (tok ~ /^(tools|resources|prompts|notifications|logging|completion|server|tasks)\/[a-zA-Z]+$/) return # MCP methods
  first = tok; sub(/\/.*/, "", first)
  if (first in top) { if (!exists_glob(tok)) bad("path \047" tok "\047 does not exist"); return }
  base = dirof(file)
  if (base != "" && ((base "/" first) in have) && !exists_glob(base "/" tok)) bad("path \047" tok "\047 does not exist (in " base ")")
}
function check_command(code,   n, w, i, cmd, sub_, j, opt) {
  n = split(code, w, /[ \t]+/)
  for (i = 1; i < n; i++) {
    if (w[i] !~ /(^|\/|\(|`)chat2sbx$/ || w[i] ~ /[-_.]chat2sbx$/) continue
    cmd = w[i + 1]; gsub(/[\[\]]/, "", cmd)
    if (cmd !~ /^[a-z][a-z0-9-]*$/) continue
    if (!(cmd in cmds)) { bad("\047chat2sbx " cmd "\047 is not a command (chat2sbx help)"); continue }
    j = i + 2
    if (j <= n && (cmd in hassub) && w[j] ~ /^[a-z][a-z-]*$/) {
      if (!((cmd SUBSEP w[j]) in subs)) bad("\047chat2sbx " cmd " " w[j] "\047 is not a subcommand (chat2sbx help)")
      j++
    }
    for (; j <= n; j++) {
      opt = w[j]; gsub(/[\[\]]/, "", opt); sub(/=.*/, "", opt)
      if (opt ~ /^(\||&&|;|>|#|\))/ || opt ~ /[);]$/ && opt !~ /^--/) break
      if (opt ~ /^--[a-z][a-z-]*$/ && opt != "--help" && !((cmd SUBSEP opt) in opts))
        bad("\047chat2sbx " cmd " " opt "\047: no such option (chat2sbx help)")
    }
  }
}
function check_make(code,   n, w, i, j) {
  n = split(code, w, /[ \t]+/)
  for (i = 1; i < n; i++) {
    if (w[i] !~ /^(`|\(|\$\()?make$/) continue
    # a command: first on the line, or after an operator, sudo or VAR=value
    if (i > 1 && w[i - 1] !~ /^(&&|\|\||;|\$|sudo|then|do|[A-Z_]+=.*)$/ && !(i == 2 && w[1] == "")) continue
    for (j = i + 1; j <= n && (w[j] ~ /^-/ || w[j] ~ /^[A-Z_]+=/); j++) ;
    if (j > n || w[j] !~ /^[a-z][a-z0-9_-]*$/) continue
    if (!(w[j] in tgt)) bad("\047make " w[j] "\047: no such target in the Makefile")
  }
}
function code_of(line,   s, out) { # the code spans of a line, kept apart
  out = ""; s = line
  while (match(s, /`[^`]+`/)) { out = out " ; " substr(s, RSTART + 1, RLENGTH - 2); s = substr(s, RSTART + RLENGTH) }
  return out
}
BEGIN {
  while ((getline l < paths) > 0) { have[l] = 1; if (l !~ /\//) top[l] = 1 }
  while ((getline l < settings) > 0) setting[l] = 1
  while ((getline l < commands) > 0) {
    split(l, f, " ")
    if (f[1] == "C") cmds[f[2]] = 1
    else if (f[1] == "S") { subs[f[2], f[3]] = 1; hassub[f[2]] = 1 }
    else opts[f[2], f[3]] = 1
  }
  while ((getline l < targets) > 0) tgt[l] = 1
}
FNR == 1 { fence = 0; scd = FILENAME ~ /\.scd$/ }
{
  line = $0
  if (line ~ /^[ \t]*(```|~~~)/) { fence = !fence; next }
  if (!fence && !scd && line ~ /^#+ /) {
    h = line; sub(/^#+ +/, "", h); a = slug(h)
    if ((FILENAME SUBSEP a) in anchor) { k = ++dup[FILENAME, a]; a = a "-" k }
    anchor[FILENAME, a] = 1
  }
  if (!fence && !scd) {
    s = line
    while (match(s, /\]\([^) ]+\)/)) {
      nl++; lk_file[nl] = FILENAME; lk_line[nl] = FNR; lk_to[nl] = substr(s, RSTART + 2, RLENGTH - 3)
      s = substr(s, RSTART + RLENGTH)
    }
  }
  if (!fence && !scd) { # a repository path in prose (top-level folders only)
    prose = line; gsub(/`[^`]*`|\]\([^)]*\)/, " ", prose)
    n = split(prose, tok, /[ \t"\047(),;=|*]+/)
    for (i = 1; i <= n; i++) { t = tok[i]; sub(/\/.*/, "", t); if ((t in top) && tok[i] ~ /\//) check_path(tok[i], "") }
  }
  code = fence || scd ? line : code_of(line)
  if (code != "") {
    n = split(code, tok, /[ \t"\047(),;=|]+/)
    for (i = 1; i <= n; i++) check_path(tok[i], FILENAME)
    if (fence) sub(/(^|[ \t])#.*/, "", code) # a shell comment is prose
    check_command(code)
    check_make(code)
  }
  s = line
  while (match(s, /CHAT2SBX_[A-Z0-9_]*\*?/)) {
    v = substr(s, RSTART, RLENGTH); s = substr(s, RSTART + RLENGTH)
    if (scd) sub(/\*$/, "", v) # bold in scdoc, not a wildcard
    if (v ~ /\*$/ || v ~ /_$/) {
      p = v; sub(/\*$/, "", p); found = 0
      for (x in setting) if (index(x, p) == 1) { found = 1; break }
      if (!found) bad("no setting starts with \047" p "\047")
    } else if (!(v in setting)) bad("\047" v "\047 is not a setting (the settings table, controlplane/config/config.c) nor read by a build script")
  }
}
END {
  for (i = 1; i <= nl; i++) {
    to = lk_to[i]
    if (to ~ /^[a-z]+:/) continue
    file = to; frag = ""
    if (index(to, "#")) { file = substr(to, 1, index(to, "#") - 1); frag = substr(to, index(to, "#") + 1) }
    target = file == "" ? lk_file[i] : norm((dirof(lk_file[i]) == "" ? "" : dirof(lk_file[i]) "/") file)
    if (target != "" && !(target in have)) { badat(lk_file[i], lk_line[i], "link \047" to "\047: \047" target "\047 does not exist"); continue }
    if (frag != "" && target ~ /\.md$/ && !((target SUBSEP frag) in anchor))
      badat(lk_file[i], lk_line[i], "link \047" to "\047: no heading \047#" frag "\047 in " target)
  }
  exit problems > 0
}' "${pages[@]}" || status=1

# The package list of the front door against scripts/deps.sh.
# shellcheck disable=SC2016 # the backticks are Markdown's
sed -n '/^<!-- check-docs: the packages of scripts\/deps.sh -->$/,/^<!-- check-docs: end -->$/p' README.md |
  { grep -oE '`[a-z0-9][a-z0-9.+-]*`' || true; } | tr -d '`' | sort -u >"$tmp/listed"
sed 's/#.*//' scripts/deps.sh | tr '\n' ' ' | grep -oE 'want\+?=\([^)]*\)' | sed -E 's/^want\+?=\(//; s/\)$//' |
  tr ' ' '\n' | { grep -v '^$' || true; } | sort -u >"$tmp/installed"
if [ ! -s "$tmp/listed" ]; then
  echo "check-manual: README.md: no package list between the check-docs markers" >&2
  status=1
elif ! diff -u "$tmp/installed" "$tmp/listed" >"$tmp/pkgdiff"; then
  echo "check-manual: README.md: the package list differs from scripts/deps.sh's (- deps.sh, + README):" >&2
  grep -E '^[-+][a-z0-9]' "$tmp/pkgdiff" >&2 || true
  status=1
fi

# The generated tool reference.
"$build/docgen" tools >"$tmp/tool-reference.md"
if ! diff -u docs/tool-reference.md "$tmp/tool-reference.md" >"$tmp/tooldiff" 2>&1; then
  echo "check-manual: docs/tool-reference.md is not what the tool table generates: run make docs" >&2
  head -20 "$tmp/tooldiff" >&2
  status=1
fi

if [ "$status" = 0 ]; then
  echo "check-manual: ${#pages[@]} pages: links, anchors, paths, commands, settings, make targets, the package list and the tool reference hold"
fi
exit "$status"
