#!/usr/bin/env bash
# Register gVisor's runsc as a Docker Engine runtime in daemon.json, keeping
# every other setting of the operator. Takes effect at the engine's next start
# (scripts/ensure-engine.sh calls this before it starts dockerd; it never
# restarts a running engine).
# Usage: scripts/engine-runtimes.sh [DAEMON_JSON]   (default /etc/docker/daemon.json)
# Environment: RUNSC_PATH (default /usr/bin/runsc); MERGE_WITH=jq|python3|none
# forces the JSON tool (tests; default: jq if installed, else python3).
# Exit: 0 registered or already present (or runsc not installed: nothing to do),
#       1 refused (the file is not valid JSON, or no jq/python3 to merge with).
# runsc gets runtimeArgs ["--network=none", "--oci-seccomp"]: on these
# machines it cannot run in the host's network namespace otherwise
# (MACHINE-NOTES.md, Runtimes), so gVisor sandboxes have no network (chat2sbx
# records them as network off); and without --oci-seccomp gVisor ignores the
# sandbox seccomp profile, so container root could plant setuid files on host
# mounts (chat2sbx refuses such a runsc). An entry this script wrote before
# (only --network=none) is upgraded; an operator's own entry is left alone,
# with a warning when it lacks --oci-seccomp.
set -euo pipefail
file="${1:-/etc/docker/daemon.json}"
runsc="${RUNSC_PATH:-/usr/bin/runsc}"
say() { echo "engine-runtimes: $*" >&2; }

if [ ! -x "$runsc" ]; then
  say "$runsc is not installed; no gVisor runtime registered (install it with scripts/deps.sh)"
  exit 0
fi
entry="{\"path\":\"$runsc\",\"runtimeArgs\":[\"--network=none\",\"--oci-seccomp\"]}"
old_entry="{\"path\":\"$runsc\",\"runtimeArgs\":[\"--network=none\"]}"
reload_hint="a running engine reads it after 'kill -HUP \$(cat /var/run/docker.pid)' (runtimes are reloaded; containers keep running), or at its next start"

if [ ! -e "$file" ]; then
  mkdir -p "$(dirname "$file")"
  tmp="$(mktemp "$file.XXXXXX")"
  printf '{\n  "runtimes": {\n    "runsc": %s\n  }\n}\n' "$entry" >"$tmp"
  chmod 0644 "$tmp"
  mv -f "$tmp" "$file"
  say "wrote $file with the runsc runtime"
  exit 0
fi

# An existing file: merge, never overwrite. Decide with a JSON tool only.
# Exit 0 merged, 2 not a JSON object, 3 an entry of the operator's (kept),
# 4 our old entry upgraded.
merge_jq() {
  jq -e 'type == "object"' "$file" >/dev/null 2>&1 || return 2
  local rc=0
  if jq -e --argjson o "$old_entry" '.runtimes.runsc == $o' "$file" >/dev/null; then rc=4
  elif jq -e '.runtimes.runsc != null' "$file" >/dev/null; then return 3; fi
  jq --argjson e "$entry" '.runtimes = ((.runtimes // {}) + {runsc: $e})' "$file" >"$1" || return 1
  return "$rc"
}
merge_python() {
  python3 - "$file" "$entry" "$1" "$old_entry" <<'PY'
import json, sys
src, entry, out, old = sys.argv[1], json.loads(sys.argv[2]), sys.argv[3], json.loads(sys.argv[4])
try:
    with open(src) as f:
        d = json.load(f)
except ValueError:
    sys.exit(2)
if not isinstance(d, dict):
    sys.exit(2)
rt = d.get("runtimes") or {}
upgrade = rt.get("runsc") == old
if "runsc" in rt and not upgrade:
    sys.exit(3)
rt["runsc"] = entry
d["runtimes"] = rt
with open(out, "w") as f:
    json.dump(d, f, indent=2)
    f.write("\n")
sys.exit(4 if upgrade else 0)
PY
}

tmp="$(mktemp "$file.XXXXXX")"
trap 'rm -f "$tmp"' EXIT
rc=0
tool="${MERGE_WITH:-}"
if [ -z "$tool" ]; then
  if command -v jq >/dev/null 2>&1; then tool=jq
  elif command -v python3 >/dev/null 2>&1; then tool=python3
  else tool=none; fi
fi
if [ "$tool" = jq ]; then
  merge_jq "$tmp" || rc=$?
elif [ "$tool" = python3 ]; then
  merge_python "$tmp" || rc=$?
else
  say "$file exists and neither jq nor python3 is installed to merge it safely; add to it by hand:"
  say "  \"runtimes\": {\"runsc\": $entry}"
  exit 1
fi
case "$rc" in
  0 | 4)
    chmod --reference="$file" "$tmp" 2>/dev/null || chmod 0644 "$tmp"
    mv -f "$tmp" "$file"
    if [ "$rc" = 4 ]; then
      say "upgraded the runsc runtime in $file: added --oci-seccomp (other settings kept); $reload_hint"
    else
      say "added the runsc runtime to $file (other settings kept)"
    fi
    ;;
  3)
    say "$file already registers runsc; left as it is"
    if ! grep -q 'oci-seccomp' "$file"; then
      say "warning: that runsc has no --oci-seccomp, so gVisor would ignore the sandbox seccomp profile;"
      say "  chat2sbx refuses CHAT2SBX_RUNTIME=runsc until its runtimeArgs have \"--oci-seccomp\" ($reload_hint)"
    fi
    ;;
  2)
    say "$file is not a JSON object; left as it is. Fix it, or add by hand: \"runtimes\": {\"runsc\": $entry}"
    exit 1
    ;;
  *)
    say "could not merge $file (status $rc); left as it is"
    exit 1
    ;;
esac
