#!/usr/bin/env bash
# End-to-end tests: real Docker Engine, real chat2sbx serve, official MCP SDK.
# Usage (from anywhere; CI runs it as root with no stdin):
#   e2e/run.sh            all scenarios in e2e/tests, in order
#   e2e/run.sh 02 03      only the scenarios whose file name starts with these
#   e2e/run.sh --vm [NN]  the vm runtime's scenarios in e2e/vm (make test-vm;
#                         they need the vm image, make template-vm)
#   e2e/run.sh --nodes [NN]  other engines as nodes, e2e/nodes (make test-nodes;
#                         root: each scenario starts a dockerd in a network
#                         namespace with e2e/nodes/engine.sh)
# Needs build/chat2sbx (+ build/chat2sbx-helper and, for e2e 31 and --vm,
# build/chat2sbx-vm), a running engine, the template image and, for those,
# the vm image; `make e2e` provides them all before calling this.
# Environment: E2E_TIMEOUT (s, default 2400), E2E_KEEP=1 keeps data roots,
# CHAT2SBX_BIN overrides the binary, CHAT2SBX_RUNTIME / CHAT2SBX_TEMPLATE_IMAGE
# / CHAT2SBX_DOCKER_SOCKET are passed to the server.
set -euo pipefail
exec </dev/null

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
root="$(dirname "$here")"
cd "$root"

die() { echo "e2e: $*" >&2; exit 2; }

suite=tests
test_timeout=180000
if [ "${1:-}" = "--vm" ]; then
  suite=vm
  test_timeout=1800000 # a file's tests together: guests boot under TCG here
  shift
elif [ "${1:-}" = "--nodes" ]; then
  suite=nodes
  [ "$(id -u)" = 0 ] || die "--nodes needs root (network namespaces, a second dockerd)"
  shift
fi

bin="${CHAT2SBX_BIN:-$root/build/chat2sbx}"
[ -x "$bin" ] || die "$bin is missing; run 'make all'"
[ -x "$(dirname "$bin")/chat2sbx-helper" ] || die "$(dirname "$bin")/chat2sbx-helper is missing; run 'make all'"
command -v node >/dev/null || die "node is not installed (Node.js 20 or later)"

# Engine and template image (asked over the socket, not through a docker CLI).
sock="${CHAT2SBX_DOCKER_SOCKET:-}"
if [ -z "$sock" ]; then
  case "${DOCKER_HOST:-}" in unix://*) sock="${DOCKER_HOST#unix://}" ;; *) sock=/var/run/docker.sock ;; esac
fi
image="${CHAT2SBX_TEMPLATE_IMAGE:-chat2sbx-template:$(cat "$root/VERSION")}"
if command -v curl >/dev/null; then
  curl -fsS --max-time 5 --unix-socket "$sock" http://localhost/_ping >/dev/null 2>&1 ||
    die "the Docker Engine at $sock does not answer; run scripts/ensure-engine.sh"
  curl -fsS --max-time 5 --unix-socket "$sock" "http://localhost/images/$image/json" >/dev/null 2>&1 ||
    die "template image $image is not in the engine; run 'make template'"
  vm_image="${CHAT2SBX_VM_IMAGE:-chat2sbx-vm:$(cat "$root/VERSION")}"
  [ "$suite" != vm ] || curl -fsS --max-time 5 --unix-socket "$sock" "http://localhost/images/$vm_image/json" >/dev/null 2>&1 ||
    die "vm image $vm_image is not in the engine; run 'make template-vm'"
fi

# Dependencies (e2e/deps.sh: npm ci where node_modules is missing or stale).
# e2e/ runs on the system's Node 20, as does schema-check/ (the strict-schema
# converters of e2e 35); e2e/node22 holds Node 22 itself (from the npm
# registry, pinned in its lockfile) with what needs it: the MCP conformance
# suites, the 2026-07-28 clients of e2e 29 and the client libraries of e2e 38
# (the OpenAI Agents SDK, LangChain's MCP adapters).
"$here/deps.sh" "$here" "$here/schema-check" "$here/node22"

files=()
if [ $# -eq 0 ]; then
  files=("$here"/"$suite"/*.test.mjs)
else
  for want_prefix in "$@"; do
    matched=0
    for f in "$here"/"$suite"/"$want_prefix"*.test.mjs; do
      [ -e "$f" ] && { files+=("$f"); matched=1; }
    done
    [ "$matched" = 1 ] || die "no scenario matches '$want_prefix'"
  done
fi

E2E_MEASURE_FILE="$(mktemp -t chat2sbx-e2e-measure.XXXXXX)"
export E2E_MEASURE_FILE
trap 'rm -f "$E2E_MEASURE_FILE"' EXIT

rc=0
timeout --kill-after=15 "${E2E_TIMEOUT:-2400}" \
  node --test --test-concurrency=1 --test-timeout="$test_timeout" --test-reporter=spec "${files[@]}" || rc=$?
if [ "$rc" = 124 ] || [ "$rc" = 137 ]; then
  echo "e2e: the suite did not finish within ${E2E_TIMEOUT:-2400} s" >&2
fi
[ $# -eq 0 ] && [ "$suite" = tests ] && { timeout --kill-after=15 420 node "$here/conformance/run.mjs" || rc=$?; } # MCP conformance suites (3 configurations)
node "$here/lib/sweep.mjs" "$sock" # containers a test left behind (see the file)
if [ -s "$E2E_MEASURE_FILE" ]; then
  echo "---- measurements ----"
  cat "$E2E_MEASURE_FILE"
fi
if [ "$rc" = 0 ]; then echo "e2e: all scenarios passed"; else echo "e2e: FAILED (exit $rc)" >&2; fi
exit "$rc"
