#!/usr/bin/env bash
# The Node dependencies of the end-to-end tests and of the benchmark: in each
# directory given (each with a package-lock.json), `npm ci` when its
# node_modules is missing or was installed from another lockfile or another
# Node (the lockfile's hash and `node --version` are stamped into
# node_modules/.chat2sbx-e2e-lock). Used by e2e/run.sh and `make bench`.
# Usage: e2e/deps.sh DIR...
set -euo pipefail

die() { echo "e2e deps: $*" >&2; exit 2; }
[ $# -gt 0 ] || die "usage: e2e/deps.sh DIR..."
command -v node >/dev/null || die "node is not installed (Node.js 20 or later)"
command -v npm >/dev/null || die "npm is not installed"

for dir in "$@"; do
  [ -f "$dir/package-lock.json" ] || die "$dir has no package-lock.json"
  want="$(sha256sum "$dir/package-lock.json" | cut -d' ' -f1) node-$(node --version)"
  stamp="$dir/node_modules/.chat2sbx-e2e-lock"
  if [ ! -d "$dir/node_modules" ] || [ "$(cat "$stamp" 2>/dev/null)" != "$want" ]; then
    echo "e2e: installing test dependencies in $(realpath --relative-to="$PWD" "$dir") (npm ci)" >&2
    (cd "$dir" && npm ci --no-audit --no-fund --loglevel=error)
    echo "$want" >"$stamp"
  fi
done
