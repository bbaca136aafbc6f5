#!/bin/sh
# Runs inside a build container of the vm template (build.sh): installs the
# Debian packages named as arguments from the image's own Debian mirror,
# with its -updates and -security suites added for the build (derived from
# the image's sources.list, so no mirror is named here), without
# recommended packages, then removes the package lists and caches again.
set -eu
src=/etc/apt/sources.list
extra=/etc/apt/sources.list.d/chat2sbx-build.list
line="$(grep -m1 '^deb ' "$src" 2>/dev/null || true)"
if [ -n "$line" ]; then
  # shellcheck disable=SC2086
  set -- $line -- "$@"
  url=$2 suite=$3
  shift 3
  comps=""
  while [ $# -gt 0 ] && [ "$1" != "--" ]; do comps="$comps $1"; shift; done
  [ "${1:-}" = "--" ] && shift
  echo "deb $url $suite-updates$comps" > "$extra"
  case "$url" in */debian) echo "deb $url-security $suite-security$comps" >> "$extra" ;; esac
fi
export DEBIAN_FRONTEND=noninteractive
if ! apt-get update -qq; then
  echo "apt-install: the -updates/-security suites are not reachable; using $src alone" >&2
  rm -f "$extra"
  apt-get update -qq
fi
apt-get install -y -qq --no-install-recommends "$@" >/dev/null
rm -f "$extra"
apt-get clean
rm -rf /var/lib/apt/lists/* /var/cache/apt/archives/*.deb /var/log/apt /var/log/dpkg.log
