#!/usr/bin/env bash
# `make run`: serve on loopback. When no tunnel is configured (no client, no
# tunnel id or key) and CHAT2SBX_ENABLE_TUNNEL is not set, serve local-only and
# say so, instead of refusing to start.
set -euo pipefail
bin="${1:-build/chat2sbx}"
home="${HOME:-/root}"
client="${CHAT2SBX_TUNNEL_CLIENT:-$home/.local/bin/tunnel-client}"
secrets="${CHAT2SBX_SECRET_DIR:-$home/.secrets/tunnel-client}"
if [ -z "${CHAT2SBX_ENABLE_TUNNEL:-}" ] && ! grep -qs '^CHAT2SBX_ENABLE_TUNNEL=' .env; then
  if [ ! -x "$client" ] || [ ! -r "$secrets/tunnel-id" ] || [ ! -r "$secrets/key" ]; then
    echo "run: no tunnel configured ($client, $secrets/tunnel-id, $secrets/key): serving local-only" >&2
    export CHAT2SBX_ENABLE_TUNNEL=0
  fi
fi
echo "run: MCP endpoint http://${CHAT2SBX_HOST:-127.0.0.1}:${CHAT2SBX_PORT:-18788}/mcp (Ctrl+C stops; sandboxes keep running)" >&2
exec "$bin" serve
