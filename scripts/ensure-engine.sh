#!/usr/bin/env bash
# Start the Docker Engine when its socket does not answer. Idempotent.
# Usage: scripts/ensure-engine.sh   (root; waits at most 60 s for the engine)
set -euo pipefail
sock="${CHAT2SBX_DOCKER_SOCKET:-/var/run/docker.sock}"

ping() { curl -fsS --max-time 3 --unix-socket "$sock" http://localhost/_ping >/dev/null 2>&1; }

if ping; then exit 0; fi
if ! command -v dockerd >/dev/null 2>&1; then
  echo "ensure-engine: dockerd is not installed; run 'make deps' (installs docker.io)" >&2
  exit 1
fi
if [ "$(id -u)" != 0 ]; then
  echo "ensure-engine: the engine at $sock does not answer and only root can start dockerd here" >&2
  exit 1
fi
# A dockerd that is still exiting holds its pid file; wait for it (bounded).
for _ in $(seq 1 20); do
  if [ -f /var/run/docker.pid ] && kill -0 "$(cat /var/run/docker.pid 2>/dev/null)" 2>/dev/null; then
    sleep 0.5
  else
    rm -f /var/run/docker.pid
    break
  fi
done
if [ -f /var/run/docker.pid ]; then
  echo "ensure-engine: a dockerd is running (pid $(cat /var/run/docker.pid)) but $sock does not answer" >&2
  exit 1
fi
# gVisor: register runsc (installed by scripts/deps.sh) in daemon.json before
# this dockerd reads it; an operator's other settings are merged, never
# replaced, and a file that cannot be merged is left alone (the engine then
# starts without runsc and chat2sbx refuses CHAT2SBX_RUNTIME=runsc clearly).
"$(dirname "${BASH_SOURCE[0]}")/engine-runtimes.sh" "${CHAT2SBX_DAEMON_JSON:-/etc/docker/daemon.json}" ||
  echo "ensure-engine: starting dockerd without the runsc runtime" >&2
mkdir -p /var/log
echo "ensure-engine: starting dockerd (log: /var/log/chat2sbx-dockerd.log)" >&2
# dockerd outlives this script, so it keeps no descriptor but the three it
# is given: a caller's `flock FILE scripts/ensure-engine.sh` lock would
# otherwise stay held for as long as the engine runs.
(
  for fd in /proc/"$BASHPID"/fd/*; do
    fd="${fd##*/}"
    if [ "$fd" -gt 2 ]; then eval "exec $fd>&-"; fi
  done
  exec setsid nohup dockerd >/var/log/chat2sbx-dockerd.log 2>&1 < /dev/null
) &
for _ in $(seq 1 120); do
  if ping; then exit 0; fi
  sleep 0.5
done
echo "ensure-engine: dockerd did not answer on $sock within 60 s; see /var/log/chat2sbx-dockerd.log" >&2
exit 1
