#!/usr/bin/env bash
# check-docs.sh: the internals tour (controlplane/README.md) names only what
# exists. Every `backticked` file or folder it names must be in the tree
# (looked up from the section's folder, controlplane/, the repository root
# or template/; outside a numbered folder section, also by its bare name
# anywhere in the project), and every `function()` it names must be defined
# in a .c file (or be a macro or static inline function of a header), and a
# project symbol named bare (`store_open`) must exist in the code.
# Usage: scripts/check-docs.sh [README] (run from anywhere; make check-docs).
# It also checks every include of controlplane/ and cli/ against the tour's
# ```layers block (below). Exit 0 when all holds; 1 with one line per problem.
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$root"
doc="${1:-controlplane/README.md}"
[ -f "$doc" ] || { echo "check-docs: $doc is missing" >&2; exit 2; }

missing=0
section=""
lineno=0
# Files of the project, for bare-name look-ups (git's index, or the tree).
if git rev-parse --is-inside-work-tree >/dev/null 2>&1; then
  files="$(git ls-files -co --exclude-standard controlplane template cli migrations scripts e2e)"
else
  files="$(find controlplane template cli migrations scripts e2e -type f)"
fi

report() { # message [location, default the tour's current line]
  echo "check-docs: ${2:-$doc:$lineno}: $1" >&2
  missing=$((missing + 1))
}

file_exists() { # name
  local n="$1" d
  n="${n%/}"
  for d in "$section" controlplane "" template; do
    [ -e "${d:+$d/}$n" ] && return 0
  done
  # Outside a folder's section a bare name may live anywhere; inside one it
  # must be that folder's (name another folder's file by its path).
  [ -z "$section" ] || return 1
  case "$n" in */*) ;; *) grep -qE "(^|/)${n//./\\.}(/|$)" <<<"$files" && return 0 ;; esac
  return 1
}

function_defined() { # name: a definition (not a prototype) in a .c file, or a macro
  grep -rhE --include='*.c' "^[a-z_].*[ *]$1\(|^$1\(" controlplane template cli 2>/dev/null | grep -qv ';[[:space:]]*$' ||
    grep -rqE --include='*.h' "define $1\(|^static inline .*[ *]$1\(" controlplane template cli 2>/dev/null
}

while IFS= read -r line; do
  lineno=$((lineno + 1))
  # A numbered section "N. `folder/` — …" sets the folder bare names are in.
  if [[ "$line" =~ ^[0-9]+\.\ \`([a-z_/]+)/\` ]]; then
    section="controlplane/${BASH_REMATCH[1]}"
  elif [[ "$line" =~ ^#+ ]]; then
    section=""
  fi
  # shellcheck disable=SC2016 # backticks below are the text matched, not a command
  while read -r tok; do
    [ -n "$tok" ] || continue
    tok="${tok#\`}"
    tok="${tok%\`}"
    if [[ "$tok" =~ ^([a-z][a-z0-9_]*_[a-z0-9_]+)\( ]]; then
      function_defined "${BASH_REMATCH[1]}" || report "function '${BASH_REMATCH[1]}' is not defined anywhere"
    elif [[ "$tok" =~ ^(lifecycle|store|tool|mcp|helper|docker|policy|config|cp|ops|tunnel|firewall|export)_[a-z0-9_]+$ ]]; then
      # A project symbol named without parentheses: it must exist as a word.
      grep -rqw --include='*.c' --include='*.h' "$tok" controlplane template cli || report "symbol '$tok' does not exist"
    elif [[ "$tok" =~ ^[A-Za-z0-9_./*-]+\.(c|h|sql|sh|mjs)$ || "$tok" =~ ^[a-z0-9_./-]+/$ ]]; then
      [[ "$tok" == *'*'* || "$tok" == *NNNN* || "$tok" == /* || "$tok" == *DATA_ROOT* ]] && continue
      file_exists "$tok" || report "file '$tok' does not exist (section ${section:-none})"
    fi
  done < <(grep -oE '`[^`]+`' <<<"$line" || true)
done <"$doc"

# The layers: the tour's ```layers block lists folders top to bottom, one
# layer per line. A file may include headers of its own folder and of
# folders on lower lines only, and a private *_internal.h only from its own
# folder (unit tests aside). `serve` is controlplane/*.c, `cli` is cli/.
# shellcheck disable=SC2016 # the fences and $ are sed's, not the shell's
layers="$(sed -n '/^```layers$/,/^```$/p' "$doc" | sed '1d;$d')"
if [ -z "$layers" ]; then
  lineno=0
  report "no \`\`\`layers block (the dependency order, top to bottom)"
else
  declare -A rank=()
  r=0
  while read -r l; do
    r=$((r + 1))
    for f in $l; do rank[$f]=$r; done
  done <<<"$layers"
  for src in controlplane/*.[ch] controlplane/*/*.[ch] cli/*.[ch]; do
    case "$src" in controlplane/tests/* | controlplane/fuzz/*) continue ;; esac
    case "$src" in
      cli/*) from=cli ;;
      controlplane/*/*) from="${src#controlplane/}" from="${from%%/*}" ;;
      *) from=serve ;;
    esac
    [ -n "${rank[$from]:-}" ] || { report "folder '$from' is in no layer of the tour" "$src"; continue; }
    while IFS=: read -r n inc; do
      inc="${inc#*\"}" inc="${inc%%\"*}"
      to="$inc"
      to="${to#../controlplane/}" to="${to#../}"
      case "$to" in */*) to="${to%%/*}" ;; *) continue ;; esac # own folder
      [ "$to" = "$from" ] && continue
      [ -n "${rank[$to]:-}" ] || continue # not a project folder (proto.h's dir is on the path)
      if [ "${rank[$to]}" -le "${rank[$from]}" ]; then
        report "includes '$inc': $from may include only layers below it" "$src:$n"
      elif [[ "$inc" == *_internal.h ]]; then
        report "includes '$inc': a private header of $to" "$src:$n"
      fi
    done < <(grep -nE '^#include "' "$src" || true)
  done
fi

if [ "$missing" -gt 0 ]; then
  echo "check-docs: $missing problem(s): fix the tour ($doc) or the code" >&2
  exit 1
fi
echo "check-docs: every file and function named in $doc exists, and every include follows its layers"
