#!/bin/sh
# Runs inside the guest-root build container of the vm template (build.sh),
# a container of the template image, as root:
#   guest-build.sh KVER PACKAGE...
# /build/kernel holds the unpacked kernel package (read-only), /build/out
# receives the initramfs's module archive; this container's own root file
# system becomes the guest's root disk (build.sh exports it). It adds the
# packages, the kernel's modules the guest may load later (file systems,
# networking, netfilter, virtio: what Docker and the model need, not
# hardware drivers), and the inner engine's settings.
set -eu
kver="$1"
shift
/build/scripts/apt-install.sh "$@"

src="/build/kernel/lib/modules/$kver"
dst="/lib/modules/$kver"
rm -rf "$dst"
mkdir -p "$dst/kernel/drivers/net"
for d in arch block crypto fs lib mm net virt drivers/virtio drivers/block drivers/char drivers/md \
         drivers/net/ipvlan drivers/net/vxlan drivers/net/wireguard drivers/net/bonding drivers/net/team; do
  [ -d "$src/kernel/$d" ] || continue
  mkdir -p "$dst/kernel/$(dirname "$d")"
  cp -a "$src/kernel/$d" "$dst/kernel/$d"
done
cp -a "$src"/kernel/drivers/net/*.ko "$dst/kernel/drivers/net/"
for f in modules.order modules.builtin modules.builtin.modinfo; do
  [ -f "$src/$f" ] && cp -a "$src/$f" "$dst/$f"
done
depmod -a "$kver"

# The initramfs's modules, dependencies first, each once.
mkdir -p /build/out/initrd/modules
: > /build/out/initrd/modules/order
grep -v '^[[:space:]]*#' /build/scripts/modules.txt | sed '/^[[:space:]]*$/d' | while read -r m; do
  modprobe -S "$kver" --show-depends "$m"
done | awk '$1 == "insmod" && !seen[$2]++ { print $2 }' | while read -r ko; do
  cp "$ko" /build/out/initrd/modules/
  basename "$ko" >> /build/out/initrd/modules/order
done
python3 /build/scripts/mkcpio.py /build/out/initrd /build/out/initrd-modules.cpio

# The inner engine: overlay2 on its own disk (/var/lib/docker), bounded logs.
mkdir -p /etc/docker
cat > /etc/docker/daemon.json <<'JSON'
{
  "storage-driver": "overlay2",
  "log-driver": "json-file",
  "log-opts": {"max-size": "10m", "max-file": "3"}
}
JSON
# What the engine put into this build container, not the guest's.
rm -f /.dockerenv
