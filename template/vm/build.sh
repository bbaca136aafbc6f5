#!/usr/bin/env bash
# Build the vm runtime's image chat2sbx-vm:$(cat VERSION) (issue 15) from
# the template image, offline except for Debian's own mirror:
#   1. the kernel: Debian's generic linux-image-amd64 (virtio, 9p, ext4 and
#      overlay as modules), fetched with `apt-get download` and unpacked
#      with `dpkg-deb -x`; its ELF vmlinux is extracted (microvm loads it
#      directly, skipping ~2 s of decompression under TCG);
#   2. the guest's root: a container of the template image with the
#      packages of guest-packages.txt and the kernel's modules added
#      (guest-build.sh), exported and written into an ext4 image with
#      `mkfs.ext4 -d`; the initramfs's module archive comes from the same
#      container; an empty ext4 image for the inner Docker's data;
#   3. the runtime: the template image with QEMU (runtime-packages.txt),
#      and the kernel, the initramfs's modules and the two disks (qcow2) in
#      /vm. The launcher, the guest's init and the helper are not baked in:
#      the control plane mounts them, as it mounts the helper everywhere.
#
# Usage: template/vm/build.sh [VM_BIN HELPER_BIN]
#   With both, the new image is smoke-tested: a guest boots under TCG and
#   its helper answers hello as PID 1.
#
# Cache: the image carries org.chat2sbx.vm.hash, a sha256 of this
# directory's build inputs, the template image's id and the kernel
# package's version. Same hash already tagged: nothing to do. The built
# artifacts (kernel, initramfs modules, disks) are kept in
# CHAT2SBX_TEMPLATE_CACHE/vm-<hash>/ (one set), so a rebuild after
# `docker rmi` only builds the runtime layer again.
# Environment: CHAT2SBX_TEMPLATE_IMAGE (default chat2sbx-template:VERSION),
# CHAT2SBX_VM_IMAGE (default chat2sbx-vm:VERSION), CHAT2SBX_TEMPLATE_CACHE
# (/var/cache/chat2sbx), CHAT2SBX_DOCKER_SOCKET (/var/run/docker.sock).
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
top="$(cd "$here/../.." && pwd)"
version="$(cat "$top/VERSION")"
template="${CHAT2SBX_TEMPLATE_IMAGE:-chat2sbx-template:$version}"
tag="${CHAT2SBX_VM_IMAGE:-chat2sbx-vm:$version}"
cache="${CHAT2SBX_TEMPLATE_CACHE:-/var/cache/chat2sbx}"
sock="${CHAT2SBX_DOCKER_SOCKET:-/var/run/docker.sock}"
export DOCKER_HOST="unix://$sock"
label=org.chat2sbx.vm.hash
vm_bin="${1:-}"
helper_bin="${2:-}"
start=$SECONDS
steps=8
step=0

say() { echo "vm-template: $*"; }
progress() { step=$((step + 1)); say "[$step/$steps] $*"; }
die() { echo "vm-template: error: $*" >&2; exit 1; }
list() { grep -v '^[[:space:]]*#' "$1" | tr -s ' \t\n' '\n' | sed '/^$/d'; }

command -v docker >/dev/null 2>&1 || die "the docker client is not installed; run 'make deps'"
curl -fsS --max-time 3 --unix-socket "$sock" http://localhost/_ping >/dev/null 2>&1 ||
  die "no Docker Engine answers at $sock (scripts/ensure-engine.sh starts one)"
[ "$(id -u)" = 0 ] || die "building the vm template needs root (disk images keep the guest's file owners)"
if [ -n "$vm_bin" ] && { [ ! -x "$vm_bin" ] || [ ! -x "$helper_bin" ]; }; then
  die "'$vm_bin' and '$helper_bin' must be built executables (make build/chat2sbx-vm build/chat2sbx-helper)"
fi

# ---- inputs ----
template_id="$(docker image inspect --format '{{.Id}}' "$template" 2>/dev/null)" ||
  die "no template image '$template'; build it first (make template)"
kernel_package() { apt-cache depends linux-image-amd64 2>/dev/null | awk '/Depends: linux-image-[0-9]/ { print $2; exit }'; }
kpkg="$(kernel_package)"
# A fresh machine may have no package lists yet: as root, fetched once.
if [ -z "$kpkg" ] && [ "$(id -u)" = 0 ]; then
  say "apt knows no linux-image-amd64: apt-get update"
  apt-get update -qq >/dev/null 2>&1 || true
  kpkg="$(kernel_package)"
fi
[ -n "$kpkg" ] || die "apt knows no linux-image-amd64; run 'apt-get update' (Debian's package lists are needed)"
kdeb_version="$(apt-cache policy "$kpkg" | awk '/Candidate:/ { print $2; exit }')"
guest_packages="$(list "$here/guest-packages.txt" | sort -u | paste -sd' ' -)"
runtime_packages="$(list "$here/runtime-packages.txt" | sort -u | paste -sd' ' -)"
hash="$( { cat "$here/build.sh" "$here/guest-build.sh" "$here/apt-install.sh" "$here/mkcpio.py" \
             "$here/Dockerfile" "$here/Dockerfile.runtime" "$here/modules.txt";
           echo "template=$template_id kernel=$kpkg=$kdeb_version";
           echo "guest=$guest_packages runtime=$runtime_packages"; } | sha256sum | cut -c1-32)"
say "image $tag from $template (${template_id:7:12}), kernel $kpkg $kdeb_version, input hash $hash"

have="$(docker image inspect --format "{{ index .Config.Labels \"$label\" }}" "$tag" 2>/dev/null || true)"
old_id="$(docker image inspect --format '{{.Id}}' "$tag" 2>/dev/null || true)"
if [ "$have" = "$hash" ]; then
  say "vm template up to date ($tag)"
  exit 0
fi

art="$cache/vm-$hash"
work=""
guest_ctr="chat2sbx-vm-build-$$"
cleanup() {
  docker rm -f "$guest_ctr" >/dev/null 2>&1 || true
  [ -n "$work" ] && [ -d "$work" ] && rm -rf --one-file-system "$work"
  return 0
}
trap cleanup EXIT
mkdir -p "$cache"
chmod 0700 "$cache"
work="$(mktemp -d "$cache/vm-build.XXXXXX")"

if [ -s "$art/root.qcow2" ] && [ -s "$art/docker.qcow2" ] && [ -s "$art/vmlinux" ] && [ -s "$art/initrd-modules.cpio" ]; then
  step=4
  say "using the cached kernel, initramfs modules and disks in $art"
else
  # ---- 1. kernel ----
  progress "kernel: apt-get download $kpkg ($kdeb_version)"
  (cd "$work" && apt-get download -q -o APT::Sandbox::User=root "$kpkg" >/dev/null) ||
    die "apt-get download $kpkg failed; check that Debian's mirror is reachable"
  dpkg-deb -x "$work"/"$kpkg"_*.deb "$work/kernel"
  # shellcheck disable=SC2012 # one directory, named by the kernel version
  kver="$(basename "$(ls -d "$work"/kernel/lib/modules/*/ | head -n1)")"
  vmlinuz="$work/kernel/boot/vmlinuz-$kver"
  [ -f "$vmlinuz" ] || die "the package has no /boot/vmlinuz-$kver"
  # The bzImage's payload is xz (CONFIG_KERNEL_XZ): find its magic and
  # unpack the ELF image behind it (as the kernel's scripts/extract-vmlinux).
  off="$(grep -abo -m1 $'\xfd7zXZ\x00' "$vmlinuz" | head -n1 | cut -d: -f1)"
  [ -n "$off" ] || die "no xz payload in $vmlinuz (not a Debian amd64 kernel?)"
  tail -c +"$((off + 1))" "$vmlinuz" | xz -dc 2>/dev/null > "$work/vmlinux" || true
  head -c 4 "$work/vmlinux" | grep -q $'\x7fELF' || die "could not extract vmlinux from $vmlinuz"

  # ---- 2. guest root ----
  progress "guest root: $template + $guest_packages (apt, a few minutes; log: $work/guest.log)"
  mkdir -p "$work/out"
  # shellcheck disable=SC2086 # guest_packages is a list of words, one argument each
  if ! docker run --name "$guest_ctr" \
      -v "$work/kernel:/build/kernel:ro" -v "$work/out:/build/out" -v "$here:/build/scripts:ro" \
      --entrypoint /bin/sh "$template" /build/scripts/guest-build.sh "$kver" $guest_packages \
      >"$work/guest.log" 2>&1 </dev/null; then
    tail -n 30 "$work/guest.log" >&2
    die "building the guest root failed (last 30 lines above)"
  fi
  progress "guest root: exporting the file system"
  mkdir -p "$work/root"
  docker export "$guest_ctr" | tar -x --numeric-owner --xattrs -p -C "$work/root"
  docker rm "$guest_ctr" >/dev/null
  # The engine's own files in a container; the guest writes its own.
  rm -f "$work/root/.dockerenv" "$work/root/etc/hostname" "$work/root/etc/hosts" "$work/root/etc/resolv.conf"

  # ---- 3. disks ----
  progress "disks: ext4 images (root $(du -sh "$work/root" | cut -f1) of files)"
  # Sparse raw images; lazy inode tables (QEMU turns the guest's zero
  # writes into holes); no reserved blocks; root owns the file system.
  truncate -s 32G "$work/root.raw"
  mkfs.ext4 -q -F -m 0 -L c2s-root -E lazy_itable_init=1,lazy_journal_init=1,root_owner=0:0 \
    -d "$work/root" "$work/root.raw"
  truncate -s 64G "$work/docker.raw"
  mkfs.ext4 -q -F -m 0 -L c2s-docker -E lazy_itable_init=1,lazy_journal_init=1,root_owner=0:0 "$work/docker.raw"
  rm -rf --one-file-system "$work/root"
fi

# ---- 4. the runtime layer (QEMU) ----
base="chat2sbx-vm-base:$hash"
progress "runtime: $template + $runtime_packages (apt)"
ctx="$work/ctx"
mkdir -p "$ctx"
cp "$here/Dockerfile.runtime" "$here/apt-install.sh" "$ctx/"
if ! DOCKER_BUILDKIT=0 docker build --force-rm -f "$ctx/Dockerfile.runtime" \
    --build-arg "BASE=$template" --build-arg "PACKAGES=$runtime_packages" -t "$base" "$ctx" \
    >"$work/runtime.log" 2>&1; then
  tail -n 30 "$work/runtime.log" >&2
  die "building the runtime layer failed (last 30 lines above)"
fi
rm -rf "$ctx"

if [ ! -s "$art/root.qcow2" ]; then
  progress "disks: qcow2 (only the written blocks)"
  docker run --rm --network none -v "$work:/w" --entrypoint /bin/sh "$base" -c \
    'qemu-img convert -O qcow2 /w/root.raw /w/root.qcow2 && qemu-img convert -O qcow2 /w/docker.raw /w/docker.qcow2' \
    >"$work/convert.log" 2>&1 || { cat "$work/convert.log" >&2; die "qemu-img convert failed"; }
  # One set of artifacts is kept: older hashes are never used again.
  find "$cache" -maxdepth 1 -name 'vm-*' ! -name "vm-build.*" ! -name "vm-$hash" -exec rm -rf {} +
  mkdir -p "$art"
  mv "$work/vmlinux" "$work/root.qcow2" "$work/docker.qcow2" "$art/"
  mv "$work/out/initrd-modules.cpio" "$art/"
  rm -f "$work/root.raw" "$work/docker.raw"
else
  step=$((step + 1))
fi

# ---- 5. the image ----
progress "image: $tag (kernel, initramfs modules, disks in /vm)"
ctx="$work/ctx"
mkdir -p "$ctx"
cp "$here/Dockerfile" "$ctx/"
for f in vmlinux initrd-modules.cpio root.qcow2 docker.qcow2; do ln "$art/$f" "$ctx/$f" 2>/dev/null || cp "$art/$f" "$ctx/$f"; done
if ! DOCKER_BUILDKIT=0 docker build --network none --force-rm --build-arg "BASE=$base" \
    --label "$label=$hash" --label "org.chat2sbx.vm.version=$version" \
    --label "org.chat2sbx.vm.template=$template_id" --label "org.chat2sbx.vm.kernel=$kpkg $kdeb_version" \
    -t "$tag" "$ctx" >"$work/image.log" 2>&1; then
  tail -n 30 "$work/image.log" >&2
  die "building $tag failed (last 30 lines above)"
fi
docker rmi "$base" >/dev/null 2>&1 || true
if [ -n "$old_id" ] && [ "$(docker image inspect --format '{{len .RepoTags}}' "$old_id" 2>/dev/null)" = 0 ]; then
  if docker rmi "$old_id" >/dev/null 2>&1; then
    say "removed the previous vm image ${old_id:7:12}"
  fi
fi

# ---- 6. smoke test: a guest boots and its helper answers as PID 1 ----
if [ -n "$vm_bin" ]; then
  progress "smoke test: boot a guest under TCG"
  abs() { echo "$(cd "$(dirname "$1")" && pwd)/$(basename "$1")"; }
  ws="$(mktemp -d)"
  # As for a sandbox: the workspace belongs to the uid QEMU runs as
  # (chat2sbx's own, VM_DEFAULT_UID), since a root-owned 0700 folder is
  # closed to it.
  chown 64099:64099 "$ws"
  name="chat2sbx-vm-smoke-$$"
  coproc smoke { timeout 120 docker run -i --rm --name "$name" --network none \
      -v "$(abs "$vm_bin"):/.chat2sbx/vm:ro" -v "$(abs "$helper_bin"):/.chat2sbx/helper:ro" \
      -v "$ws:/workspace" -e CHAT2SBX_VM_NETWORK=0 -e CHAT2SBX_VM_DOCKER=off -m 1g \
      --entrypoint /.chat2sbx/vm "$tag" launch 2>"$work/smoke.log"; }
  # shellcheck disable=SC2154 # smoke_PID is set by bash's coproc
  smoke_pid=$smoke_PID
  echo '{"jsonrpc":"2.0","id":1,"method":"hello","params":{}}' >&"${smoke[1]}"
  reply=""
  read -t 90 -r reply <&"${smoke[0]}" || true
  docker stop -t 10 "$name" >/dev/null 2>&1 || true
  wait "$smoke_pid" 2>/dev/null || true
  rm -rf "$ws"
  case "$reply" in
    *'"pid":1'*) say "smoke test ok: $reply" ;;
    *) tail -n 30 "$work/smoke.log" >&2; die "smoke test failed: the guest's helper answered '${reply:-nothing}'" ;;
  esac
fi

say "built $tag ($(docker image inspect --format '{{.Size}}' "$tag" | awk '{printf "%d MB", $1/1000000}')) in $((SECONDS - start)) s"
