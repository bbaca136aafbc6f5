#!/usr/bin/env python3
"""mkcpio.py DIR OUT: a newc cpio archive of DIR's files and directories
(owner root, modes kept), sorted, for the vm template's initramfs
(Documentation/driver-api/early-userspace/buffer-format.rst). Run by
guest-build.sh inside a build container (the template has python3).

Kernel modules (*.ko) lose their appended signature: the guest's kernel
then skips checking it at every boot (RSA under TCG costs most of a
second for the initramfs's modules); it does not enforce signatures, and
the modules come from the same Debian package as the kernel."""
import os
import struct
import sys

SIG_MAGIC = b"~Module signature appended~\n"


def strip_signature(data):
    # struct module_signature (12 bytes, sig_len big-endian at offset 8)
    # precedes the magic; the signature precedes it (scripts/sign-file.c).
    if not data.endswith(SIG_MAGIC) or len(data) < len(SIG_MAGIC) + 12:
        return data
    info = data[-len(SIG_MAGIC) - 12:-len(SIG_MAGIC)]
    sig_len = struct.unpack(">I", info[8:12])[0]
    end = len(data) - len(SIG_MAGIC) - 12 - sig_len
    return data[:end] if end > 0 else data


def header(ino, mode, size, name):
    fields = [ino, mode, 0, 0, 1, 0, size, 0, 0, 0, 0, len(name) + 1, 0]
    h = b"070701" + b"".join(b"%08X" % f for f in fields) + name + b"\0"
    return h + b"\0" * ((4 - len(h) % 4) % 4)


def main():
    root, out = sys.argv[1], sys.argv[2]
    ino = 1
    with open(out, "wb") as f:
        for top, dirs, files in os.walk(root):
            dirs.sort()
            rel = os.path.relpath(top, root)
            if rel != ".":
                st = os.lstat(top)
                f.write(header(ino, st.st_mode, 0, rel.encode()))
                ino += 1
            for name in sorted(files):
                path = os.path.join(top, name)
                st = os.lstat(path)
                data = open(path, "rb").read()
                if name.endswith(".ko"):
                    data = strip_signature(data)
                arc = os.path.normpath(os.path.join(rel, name)).encode()
                f.write(header(ino, st.st_mode, len(data), arc))
                f.write(data + b"\0" * ((4 - len(data) % 4) % 4))
                ino += 1
        f.write(header(0, 0, 0, b"TRAILER!!!"))


main()
