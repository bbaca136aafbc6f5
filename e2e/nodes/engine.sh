#!/usr/bin/env bash
# A second Docker Engine on this machine as a test node (issue 28): a network
# namespace joined to the host by a veth pair on 10.231.N.0/24, a dockerd in
# it listening on tcp://10.231.N.2:2376 with --tlsverify, and a CA with
# server and client certificates made by openssl for it. As root.
#
#   e2e/nodes/engine.sh start N [--image IMAGE]   make it, wait for it; with
#        --image, load IMAGE from the host engine into it (docker save | load,
#        about 13 s). Prints the node's facts as shell assignments:
#        ENDPOINT= SOCK= CA= CERT= KEY= DIR=
#   e2e/nodes/engine.sh stop N                    remove everything start made
#   e2e/nodes/engine.sh cut N | heal N            take the host's veth link down / up
#   e2e/nodes/engine.sh restart N                 stop its dockerd (its containers die with it:
#        no live-restore) and start it again on the same data root, certificates and address
#
# N is 1..254. Everything lives under ${NODES_ROOT:-/var/tmp/chat2sbx-nodes}/N
# (data root, exec root, pidfile, socket, certificates). dockerd runs with
# `nsenter --net=/run/netns/c2s-nodeN`, not `ip netns exec`, which remounts
# /sys and hides the cgroup mounts ("Devices cgroup isn't mounted");
# MACHINE-NOTES.md "More checks". Its bridge and iptables rules are the
# namespace's own, so the host engine's docker0 and rules are not touched.
set -euo pipefail

die() { echo "engine.sh: $*" >&2; exit 2; }
[ $# -ge 2 ] || die "usage: engine.sh start|stop|cut|heal N [--image IMAGE]"
cmd="$1"; n="$2"; shift 2
if ! [[ "$n" =~ ^[0-9]+$ ]] || [ "$n" -lt 1 ] || [ "$n" -gt 254 ]; then die "N must be 1..254"; fi
image=""
while [ $# -gt 0 ]; do
  case "$1" in
    --image) image="${2:?--image needs a name}"; shift 2 ;;
    *) die "unknown argument '$1'" ;;
  esac
done

ns="c2s-node$n"
host_if="c2sn${n}h"
node_if="c2sn${n}n"
host_ip="10.231.$n.1"
node_ip="10.231.$n.2"
dir="${NODES_ROOT:-/var/tmp/chat2sbx-nodes}/$n"
sock="$dir/docker.sock"
pidfile="$dir/docker.pid"
log="$dir/dockerd.log"

certs() {
  local c="$dir/certs"
  mkdir -p "$c" && chmod 700 "$c"
  (
    cd "$c"
    openssl req -x509 -newkey rsa:2048 -nodes -days 2 -subj "/CN=chat2sbx test CA $n" \
      -keyout ca-key.pem -out ca.pem 2>/dev/null
    openssl req -newkey rsa:2048 -nodes -subj "/CN=$node_ip" -keyout server-key.pem -out server.csr 2>/dev/null
    printf 'subjectAltName=IP:%s\nextendedKeyUsage=serverAuth\n' "$node_ip" >server.ext
    openssl x509 -req -in server.csr -CA ca.pem -CAkey ca-key.pem -CAcreateserial -days 2 \
      -extfile server.ext -out server.pem 2>/dev/null
    openssl req -newkey rsa:2048 -nodes -subj "/CN=chat2sbx" -keyout key.pem -out client.csr 2>/dev/null
    printf 'extendedKeyUsage=clientAuth\n' >client.ext
    openssl x509 -req -in client.csr -CA ca.pem -CAkey ca-key.pem -CAcreateserial -days 2 \
      -extfile client.ext -out cert.pem 2>/dev/null
    rm -f ./*.csr ./*.ext ./*.srl
    chmod 600 ./*.pem
  )
}

# Waits up to $1 seconds for the engine's socket to answer.
wait_engine() {
  local i
  for ((i = 0; i < $1 * 5; i++)); do
    curl -fsS --max-time 2 --unix-socket "$sock" http://localhost/_ping >/dev/null 2>&1 && return 0
    if [ -f "$pidfile" ] && ! kill -0 "$(cat "$pidfile")" 2>/dev/null; then break; fi
    sleep 0.2
  done
  echo "engine.sh: node $n's dockerd did not answer; its log:" >&2
  tail -20 "$log" >&2 || true
  return 1
}

start() {
  [ ! -e "/run/netns/$ns" ] || die "namespace $ns exists; run 'engine.sh stop $n' first"
  mkdir -p "$dir" && chmod 700 "$dir"
  certs
  echo '{}' >"$dir/daemon.json"
  ip netns add "$ns"
  ip link add "$host_if" type veth peer name "$node_if"
  ip link set "$node_if" netns "$ns"
  ip addr add "$host_ip/24" dev "$host_if"
  ip link set "$host_if" up
  nsenter --net="/run/netns/$ns" ip addr add "$node_ip/24" dev "$node_if"
  nsenter --net="/run/netns/$ns" ip link set "$node_if" up
  nsenter --net="/run/netns/$ns" ip link set lo up
  nsenter --net="/run/netns/$ns" ip route add default via "$host_ip"
  run_dockerd
  if [ -n "$image" ]; then
    docker save "$image" | docker -H "unix://$sock" load >/dev/null
  fi
  cat <<EOF
ENDPOINT=tcp://$node_ip:2376
SOCK=$sock
CA=$dir/certs/ca.pem
CERT=$dir/certs/cert.pem
KEY=$dir/certs/key.pem
DIR=$dir
EOF
}

# Starts the node's dockerd in its namespace and waits for it.
run_dockerd() {
  # setsid: its own session, so the caller's terminal or test runner does
  # not signal it; stop() ends it by its pidfile.
  setsid nsenter --net="/run/netns/$ns" dockerd \
    --data-root "$dir/data" --exec-root "$dir/exec" --pidfile "$pidfile" \
    -H "unix://$sock" -H "tcp://$node_ip:2376" \
    --tlsverify --tlscacert "$dir/certs/ca.pem" --tlscert "$dir/certs/server.pem" --tlskey "$dir/certs/server-key.pem" \
    --bip "172.31.$n.1/24" --default-address-pool "base=172.30.0.0/16,size=24" \
    --config-file "$dir/daemon.json" --log-level warn </dev/null >>"$log" 2>&1 &
  wait_engine 60
}

# Ends the node's dockerd (TERM, then KILL after 30 s).
stop_dockerd() {
  if [ -f "$pidfile" ]; then
    local pid i
    pid="$(cat "$pidfile")"
    if kill -0 "$pid" 2>/dev/null; then
      kill -TERM "$pid"
      for ((i = 0; i < 150; i++)); do kill -0 "$pid" 2>/dev/null || break; sleep 0.2; done
      kill -0 "$pid" 2>/dev/null && kill -KILL "$pid"
    fi
  fi
  return 0
}

stop() {
  stop_dockerd
  ip link del "$host_if" 2>/dev/null || true
  [ ! -e "/run/netns/$ns" ] || ip netns del "$ns"
  # Mounts left under the data root (overlay layers, the exec root's netns files).
  { grep -o " $dir/[^ ]*" /proc/mounts || true; } | sort -r | while read -r m; do umount -l "$m" 2>/dev/null || true; done
  rm -rf "$dir"
}

case "$cmd" in
  start) start ;;
  stop) stop ;;
  cut) ip link set "$host_if" down ;;
  heal) ip link set "$host_if" up ;;
  restart) [ -e "/run/netns/$ns" ] || die "node $n is not started"; stop_dockerd; rm -f "$pidfile"; run_dockerd ;;
  *) die "unknown command '$cmd'" ;;
esac
