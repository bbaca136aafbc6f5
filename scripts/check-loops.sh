#!/usr/bin/env bash
# check-loops.sh: no two files of one folder call each other in a loop
# (issue 24). For each folder's object files, `nm` gives what each file
# defines (T, D, B, R: functions and globals) and what it uses (U); a use of
# a symbol another file of the same folder defines is an edge between the
# two files, and every cycle of that graph (a strongly connected component
# of two files or more, Tarjan) is reported as `a.c -> b.c -> a.c`.
# Usage: scripts/check-loops.sh [build dir, default build] (make check-docs
# runs it after building the objects; it never builds them itself).
# Folders: controlplane/*/ and controlplane/*.c (build/obj), cli/ (build/obj),
# template/helper/ (build/helper), template/vm/src/ (build/vm).
# A folder listed in scripts/check-loops.allow (one folder a line, `#`
# comments) has its loops printed as "allowed" and does not fail the check:
# the list holds only folders whose loops are being broken by work in
# progress, and is empty when none is.
# Exit 0 when no loop fails the check; 1 with one line per loop; 2 when the
# objects are missing.
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$root"
build="${1:-build}"
allow="${CHECK_LOOPS_ALLOW:-scripts/check-loops.allow}"

# One line per object: "folder<TAB>file.c<TAB>object path".
objects() {
  local o rel src
  for o in $(find "$build/obj/controlplane" "$build/obj/cli" "$build/helper/template/helper" \
    "$build/vm/template/vm/src" -name '*.o' 2>/dev/null | sort); do
    case "$o" in
      "$build"/obj/*) rel="${o#"$build"/obj/}" ;;
      "$build"/helper/*) rel="${o#"$build"/helper/}" ;;
      *) rel="${o#"$build"/vm/}" ;;
    esac
    src="${rel%.o}.c"
    [ -f "$src" ] || continue # a removed source's stale object, or a generated file
    case "$src" in controlplane/base/*) [ "${o#"$build"/helper/}" != "$o" ] && continue ;; esac
    printf '%s\t%s\t%s\n' "$(dirname "$src")" "$(basename "$src")" "$o"
  done
}

list="$(objects)"
[ -n "$list" ] || {
  echo "check-loops: no objects under $build/ (run make all first)" >&2
  exit 2
}

# nm for each object: "folder<TAB>file<TAB>D|U<TAB>symbol".
while IFS=$'\t' read -r folder file obj; do
  nm -P "$obj" | awk -v f="$folder" -v c="$file" '
    $2 ~ /^[TDBRVWC]$/ { printf "%s\t%s\tD\t%s\n", f, c, $1 }
    $2 == "U" { printf "%s\t%s\tU\t%s\n", f, c, $1 }'
done <<<"$list" | python3 -c '
import sys
from collections import defaultdict

allow_path = sys.argv[1]
allowed = set()
try:
    with open(allow_path) as f:
        for line in f:
            line = line.split("#", 1)[0].strip().rstrip("/")
            if line:
                allowed.add(line)
except FileNotFoundError:
    pass

defs = defaultdict(dict)   # folder -> symbol -> file
uses = defaultdict(list)   # folder -> [(file, symbol)]
files = defaultdict(set)
for line in sys.stdin:
    folder, file, kind, sym = line.rstrip("\n").split("\t")
    files[folder].add(file)
    if kind == "D":
        defs[folder].setdefault(sym, file)
    else:
        uses[folder].append((file, sym))

def sccs(nodes, edges):
    """Tarjan: the strongly connected components of the graph."""
    index, low, on, stack, out = {}, {}, set(), [], []
    counter = [0]
    def visit(v):
        index[v] = low[v] = counter[0]; counter[0] += 1
        stack.append(v); on.add(v)
        for w in sorted(edges[v]):
            if w not in index:
                visit(w); low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop(); on.discard(w); comp.append(w)
                if w == v:
                    break
            out.append(sorted(comp))
    for v in sorted(nodes):
        if v not in index:
            visit(v)
    return out

def cycle_in(comp, edges, via):
    """One cycle through the component'"'"'s first file, shortest first (BFS)."""
    start = comp[0]
    members = set(comp)
    prev = {start: None}
    queue = [start]
    while queue:
        v = queue.pop(0)
        for w in sorted(edges[v]):
            if w not in members:
                continue
            if w == start:
                path = [v]
                while prev[path[-1]] is not None:
                    path.append(prev[path[-1]])
                path.reverse()
                return path + [start]
            if w not in prev:
                prev[w] = v
                queue.append(w)
    return comp + [start]

failed = 0
listed = 0
sys.setrecursionlimit(10000)
for folder in sorted(files):
    edges = defaultdict(set)
    via = {}
    for file, sym in uses[folder]:
        owner = defs[folder].get(sym)
        if owner and owner != file:
            edges[file].add(owner)
            via.setdefault((file, owner), sym)
    for comp in sccs(files[folder], edges):
        if len(comp) < 2:
            continue
        cyc = cycle_in(comp, edges, via)
        hops = ", ".join("%s via %s" % (a, via[(a, b)]) for a, b in zip(cyc, cyc[1:]))
        ok = folder in allowed
        listed += 1
        if not ok:
            failed += 1
        extra = "" if len(comp) == len(cyc) - 1 else " (%d files in the loop: %s)" % (len(comp), " ".join(comp))
        print("check-loops: %s%s: %s%s [%s]" % ("allowed: " if ok else "", folder,
              " -> ".join(cyc), extra, hops), file=sys.stderr)
if failed:
    print("check-loops: %d loop(s) between files of one folder: move the shared function "
          "to its own file, or to the file that owns it" % failed, file=sys.stderr)
    sys.exit(1)
print("check-loops: no loop between the files of a folder%s" %
      ("" if not listed else " outside the allowed folders (%s; %d loop(s) there)" %
       (", ".join(sorted(allowed)), listed)))
' "$allow"
