#!/usr/bin/env bash
# Install the Debian packages chat2sbx needs, only those missing (a warm
# machine pays nothing). Never prompts (CI has no standard input).
# Usage: scripts/deps.sh [build|all|fuzz|deb]   build = compilers and libraries only,
#        fuzz = build plus clang (libFuzzer) for `make fuzz`,
#        deb = build plus Debian's packaging tools for `make deb` (all has them too)
set -euo pipefail
want=(build-essential pkg-config curl ca-certificates git
      libcurl4-openssl-dev libjson-c-dev libsqlite3-dev libyaml-dev
      libmicrohttpd-dev libcriterion-dev libpcre2-dev libnftables-dev libarchive-dev
      nettle-dev zlib1g-dev) # nettle-dev: SHA-256 in the static helper, SHA-1 for doctor's pack;
                             # zlib1g-dev: the pack check before git inflates a save (issue 23)
want+=(shellcheck clang-format) # make check: lint over the scripts, fmt-check (issue 24)
want+=(scdoc man-db) # make man: chat2sbx(1), chat2sbx.conf(5); the man-page check renders them (issue 25)
if [ "${1:-all}" = all ]; then
  want+=(docker.io debootstrap runsc) # runsc: gVisor, registered by scripts/ensure-engine.sh
  want+=(sqlite3) # e2e 09 reads the audit table of a test registry
  want+=(iproute2) # e2e 21 makes a veth pair and a test address for the firewall scenario
  want+=(openssl util-linux) # make test-nodes: the test engines' CA and certificates, nsenter (issue 28)
  want+=(chromium) # e2e 39 drives Debian's browser headless through playwright-core (the owner page, issue 26);
                    # playwright-core downloads no browser of its own
  command -v node >/dev/null 2>&1 || want+=(nodejs)
  command -v npm >/dev/null 2>&1 || want+=(npm)
fi
if [ "${1:-all}" = all ] || [ "${1:-all}" = deb ]; then
  want+=(debhelper dpkg-dev fakeroot lintian) # make deb, make check-deb (issue 25)
fi
if [ "${1:-all}" = fuzz ]; then
  want+=(clang)
fi
missing=()
for p in "${want[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed' || missing+=("$p")
done
[ ${#missing[@]} -eq 0 ] && exit 0
if [ "$(id -u)" != 0 ]; then
  echo "deps: missing Debian packages: ${missing[*]}" >&2
  echo "deps: run as root, or: sudo apt-get install -y ${missing[*]}" >&2
  exit 1
fi
echo "deps: installing ${missing[*]}" >&2
export DEBIAN_FRONTEND=noninteractive
apt-get update -qq
apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
