#!/usr/bin/env bash
# Build the sandbox template image chat2sbx-template:$(cat VERSION) offline:
# debootstrap a Debian bookworm minbase root file system (Debian's default
# mirror, through apt's ordinary channels; no container registry), import it
# as a base image, then apply template/Dockerfile with the legacy builder.
#
# Usage: template/build.sh [HELPER_BIN]
#   Runs from the source tree or from the installed PREFIX/share/chat2sbx
#   (make install): it reads only this directory and ../VERSION.
#   HELPER_BIN (optional): a built chat2sbx-helper; when given, the new image
#   is smoke-tested by running the helper as PID 1 in it (no network).
#   The helper is never baked into the image: it is bind-mounted at run time.
#
# Cache: the image carries the label org.chat2sbx.template.hash, a sha256 of
# this script, the Dockerfile and packages.txt. Same hash already tagged:
# nothing to do. Same hash under another tag: re-tag. The debootstrap tarball
# is kept in /var/cache/chat2sbx/ (CHAT2SBX_TEMPLATE_CACHE) keyed by the hash,
# so a rebuild after `docker rmi` skips debootstrap.
# Environment: CHAT2SBX_TEMPLATE_IMAGE (default chat2sbx-template:VERSION),
# CHAT2SBX_DOCKER_SOCKET (default /var/run/docker.sock), SUITE (bookworm),
# CHAT2SBX_TEMPLATE_RETAG_ONLY=1 (only look: up to date or re-tagged → 0,
# a build would be needed → 4; serve uses it after an upgrade).
# Exit status: 0 done, 1 failed, 3 a step needs root (debootstrap, the
# first time: the message says what to run), 4 (RETAG_ONLY) a build is
# needed.
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
top="$(dirname "$here")"
version="$(cat "$top/VERSION")"
tag="${CHAT2SBX_TEMPLATE_IMAGE:-chat2sbx-template:$version}"
suite="${SUITE:-bookworm}"
cache="${CHAT2SBX_TEMPLATE_CACHE:-/var/cache/chat2sbx}"
sock="${CHAT2SBX_DOCKER_SOCKET:-/var/run/docker.sock}"
label=org.chat2sbx.template.hash
helper_bin="${1:-}"
start=$SECONDS

say() { echo "template: $*"; }
die() { echo "template: error: $*" >&2; exit 1; }
# A step only root may do: its own status, so setup can say what to run.
needs_root() { echo "template: needs root: $*" >&2; exit 3; }

# ---- engine ----
command -v docker >/dev/null 2>&1 || die "the docker client is not installed; run 'make deps'"
if ! curl -fsS --max-time 3 --unix-socket "$sock" http://localhost/_ping >/dev/null 2>&1; then
  # In a source tree, start it; installed (share/chat2sbx has no scripts/),
  # starting the engine is the system's business.
  [ -x "$top/scripts/ensure-engine.sh" ] ||
    die "no Docker Engine answers at $sock; start it (sudo systemctl start docker) and check that you may use it (the docker group)"
  say "engine at $sock does not answer; starting it"
  "$top/scripts/ensure-engine.sh" || die "no Docker Engine at $sock (see scripts/ensure-engine.sh)"
fi
if [ -n "$helper_bin" ] && [ ! -x "$helper_bin" ]; then
  die "helper '$helper_bin' is not an executable file; run 'make build/chat2sbx-helper' first"
fi

# ---- content hash of the inputs (not the helper: it is mounted at run time) ----
packages="$(grep -v '^[[:space:]]*#' "$here/packages.txt" | tr -s ' \t\n' '\n' | sed '/^$/d' | sort -u | paste -sd, -)"
[ -n "$packages" ] || die "template/packages.txt lists no packages"
hash="$( { cat "$here/build.sh" "$here/Dockerfile"; echo "suite=$suite"; echo "packages=$packages"; } \
  | sha256sum | cut -c1-32)"
# The root file system depends only on the suite, the packages and the
# debootstrap recipe below; bump rootfs_recipe when that recipe changes.
rootfs_recipe=1
rootfs_key="$(echo "recipe=$rootfs_recipe suite=$suite packages=$packages" | sha256sum | cut -c1-32)"
say "image $tag, input hash $hash"

have="$(docker image inspect --format "{{ index .Config.Labels \"$label\" }}" "$tag" 2>/dev/null || true)"
old_id="$(docker image inspect --format '{{.Id}}' "$tag" 2>/dev/null || true)"
if [ "$have" = "$hash" ]; then
  say "template up to date ($tag)"
  exit 0
fi
same="$(docker images -q --filter "label=$label=$hash" | head -n1)"
if [ -n "$same" ]; then
  docker tag "$same" "$tag"
  say "re-tagged existing image $same as $tag"
  say "template up to date ($tag)"
  exit 0
fi
if [ "${CHAT2SBX_TEMPLATE_RETAG_ONLY:-0}" = 1 ]; then
  say "no image with input hash $hash; a build is needed"
  exit 4
fi

# ---- root file system (cached tarball) ----
tarball="$cache/template-rootfs-$suite-$rootfs_key.tar"
work=""
cleanup() {
  if [ -n "$work" ] && [ -d "$work" ]; then
    # A failed debootstrap may leave proc/sys mounted inside the root.
    for m in proc sys dev/pts dev; do umount -l "$work/rootfs/$m" 2>/dev/null || true; done
    rm -rf --one-file-system "$work"
  fi
  return 0
}
trap cleanup EXIT

if [ -s "$tarball" ]; then
  say "using cached root file system $tarball"
else
  [ "$(id -u)" = 0 ] || needs_root "the template's root file system is built once with debootstrap, which needs root" \
    "(and is then cached in $cache); run 'sudo chat2sbx setup --template' once, then 'chat2sbx setup' as yourself"
  command -v debootstrap >/dev/null 2>&1 || die "debootstrap is not installed; run 'apt-get install debootstrap' (or 'make deps')"
  mkdir -p "$cache"
  chmod 0700 "$cache"
  work="$(mktemp -d "$cache/build.XXXXXX")"
  say "debootstrap $suite minbase ($packages) — a few minutes, log: $work/debootstrap.log"
  t0=$SECONDS
  if ! debootstrap --variant=minbase --include="$packages" "$suite" "$work/rootfs" \
      >"$work/debootstrap.log" 2>&1 </dev/null; then
    tail -n 30 "$work/debootstrap.log" >&2
    die "debootstrap failed (full log above, last 30 lines); check that Debian's mirror is reachable"
  fi
  say "debootstrap done in $((SECONDS - t0)) s"
  # Package caches and lists are not needed at run time; keep the image small.
  rm -rf "$work/rootfs/var/cache/apt/archives/"*.deb "$work/rootfs/var/lib/apt/lists/"* \
    "$work/rootfs/var/log/"*.log "$work/rootfs/var/cache/debconf/"*-old
  # The engine provides these at run time.
  rm -f "$work/rootfs/etc/hostname" "$work/rootfs/etc/resolv.conf"
  say "packing root file system"
  tar --numeric-owner --xattrs --one-file-system -C "$work/rootfs" -cf "$work/rootfs.tar" .
  mv "$work/rootfs.tar" "$tarball"
  # Keep one tarball per suite: older hashes are never used again.
  find "$cache" -maxdepth 1 -name "template-rootfs-$suite-*.tar" ! -name "$(basename "$tarball")" -delete
  say "cached $tarball ($(du -h "$tarball" | cut -f1))"
fi

# ---- base image + Dockerfile ----
base="chat2sbx-template-base:$hash"
say "importing base image $base"
docker import --message "chat2sbx template base ($suite minbase)" "$tarball" "$base" >/dev/null

ctx="$(mktemp -d)"
cp "$here/Dockerfile" "$ctx/Dockerfile"
say "applying template/Dockerfile (legacy builder, no network)"
# The classic builder works with engine API 1.41 and needs no BuildKit; its
# deprecation notice goes to the log, shown only when the build fails.
if ! DOCKER_BUILDKIT=0 docker build --network none --force-rm \
    --build-arg "BASE=$base" \
    --label "$label=$hash" \
    --label "org.chat2sbx.template.version=$version" \
    -t "$tag" "$ctx" >"$ctx.log" 2>&1; then
  tail -n 30 "$ctx.log" >&2
  rm -rf "$ctx" "$ctx.log"
  docker rmi "$base" >/dev/null 2>&1 || true
  die "docker build of template/Dockerfile failed (last 30 lines above)"
fi
rm -rf "$ctx" "$ctx.log"
# The final image keeps the base layer; only the extra tag goes.
docker rmi "$base" >/dev/null 2>&1 || true
# The image this one replaces: remove it unless it is still tagged or used
# by a container (then the engine refuses, which is fine).
if [ -n "$old_id" ] && [ "$(docker image inspect --format '{{len .RepoTags}}' "$old_id" 2>/dev/null)" = 0 ]; then
  if docker rmi "$old_id" >/dev/null 2>&1; then
    say "removed the previous template image ${old_id:7:12}"
  fi
fi

# ---- smoke test: the helper answers hello as PID 1 in the new image ----
if [ -n "$helper_bin" ]; then
  helper_abs="$(cd "$(dirname "$helper_bin")" && pwd)/$(basename "$helper_bin")"
  name="chat2sbx-template-smoke-$$"
  # The helper keeps running after stdin ends (the control plane may
  # re-attach), so the test stops it with SIGTERM, as the engine would.
  coproc smoke { timeout 60 docker run -i --rm --name "$name" --network none \
      -v "$helper_abs:/.chat2sbx/helper:ro" --entrypoint /.chat2sbx/helper "$tag" 2>/dev/null; }
  # shellcheck disable=SC2154 # smoke_PID is set by bash's coproc
  smoke_pid=$smoke_PID
  echo '{"jsonrpc":"2.0","id":1,"method":"hello","params":{}}' >&"${smoke[1]}"
  reply=""
  read -t 30 -r reply <&"${smoke[0]}" || true
  docker stop -t 5 "$name" >/dev/null 2>&1 || true
  wait "$smoke_pid" 2>/dev/null || true
  case "$reply" in
    *'"pid":1'*) say "smoke test ok: $reply" ;;
    *) die "smoke test failed: helper in $tag answered '${reply:-nothing}'" ;;
  esac
fi

say "built $tag ($(docker image inspect --format '{{.Size}}' "$tag" | awk '{printf "%d MB", $1/1000000}')) in $((SECONDS - start)) s"
