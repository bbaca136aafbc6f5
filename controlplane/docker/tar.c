/* tar.c: the smallest tars the engine's archive API takes, POSIX ustar
 * (IEEE Std 1003.1-2001, "pax" section ustar Interchange Format): one
 * directory and one regular file in it, built in memory (the helper put
 * into a container on another node before it starts, issue 28, where no
 * path of this machine can be bind-mounted), and the header and padding of
 * a regular file whose bytes are streamed from elsewhere (a clone's source,
 * lifecycle/clone_source.c). Pure: no engine, no file system. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../base/xalloc.h"
#include "docker.h"

#define TAR_BLOCK DOCKER_TAR_BLOCK

/* The size field (12 bytes at 124): 11 octal digits and a NUL up to
 * 8 GiB - 1; above, the base-256 form GNU tar and the engine's reader (Go's
 * archive/tar) take: the first byte's high bit set, the number big-endian
 * in the remaining bytes. */
static void size_field(unsigned char *f, uint64_t size)
{
	if (size < (1ull << 33)) {
		snprintf((char *)f, 12, "%011llo", (unsigned long long)size);
		return;
	}
	memset(f, 0, 12);
	f[0] = 0x80;
	for (int i = 11; i >= 4; i--, size >>= 8)
		f[i] = (unsigned char)(size & 0xff);
}

/* One ustar header for name (at most 99 bytes) into h (TAR_BLOCK zeroed
 * bytes): mode, size, type '0' (file) or '5' (directory), owner root, mtime 0. */
static void header(unsigned char *h, const char *name, unsigned mode, uint64_t size, char type)
{
	snprintf((char *)h, 100, "%s", name);
	snprintf((char *)h + 100, 8, "%07o", mode & 07777);
	snprintf((char *)h + 108, 8, "%07o", 0);
	snprintf((char *)h + 116, 8, "%07o", 0);
	size_field(h + 124, size);
	snprintf((char *)h + 136, 12, "%011o", 0);
	h[156] = (unsigned char)type;
	memcpy(h + 257, "ustar", 6); /* magic "ustar\0", then version "00" */
	memcpy(h + 263, "00", 2);
	/* The checksum: every byte of the header with the field itself as spaces. */
	memset(h + 148, ' ', 8);
	unsigned sum = 0;
	for (size_t i = 0; i < TAR_BLOCK; i++)
		sum += h[i];
	snprintf((char *)h + 148, 8, "%06o", sum);
	h[155] = ' ';
}

int docker_tar_file_header(const char *path, unsigned mode, uint64_t size, unsigned char ret[DOCKER_TAR_BLOCK],
                           struct cp_error **err)
{
	if (!path || !*path || path[0] == '/' || strlen(path) > 99)
		return cp_error_set(err, CP_ERR_INVALID_ARGUMENT,
		                    "make a tar header for '%s': the name must be relative and at most 99 bytes",
		                    path ? path : "");
	memset(ret, 0, DOCKER_TAR_BLOCK);
	header(ret, path, mode, size, '0');
	return 0;
}

size_t docker_tar_padding(uint64_t size)
{
	return (size_t)((TAR_BLOCK - size % TAR_BLOCK) % TAR_BLOCK);
}

int docker_tar_file(const char *dir, const char *name, unsigned mode, const void *data, size_t len,
                    unsigned char **ret_tar, size_t *ret_len, struct cp_error **err)
{
	if (!dir || !*dir || !name || !*name || strchr(name, '/') || strlen(dir) + strlen(name) + 2 > 99 ||
	    len > DOCKER_TAR_FILE_MAX || (len && !data))
		return cp_error_set(err, CP_ERR_INVALID_ARGUMENT,
		                    "make a tar of '%s/%s': a bad name or a file over %u MiB", dir ? dir : "",
		                    name ? name : "", (unsigned)(DOCKER_TAR_FILE_MAX >> 20));
	size_t padded = (len + TAR_BLOCK - 1) / TAR_BLOCK * TAR_BLOCK;
	/* directory header, file header, the file's blocks, two zero blocks (the end). */
	size_t total = 2 * TAR_BLOCK + padded + 2 * TAR_BLOCK;
	unsigned char *tar = xcalloc(1, total);
	char path[128];
	snprintf(path, sizeof(path), "%s/", dir);
	header(tar, path, 0755, 0, '5');
	snprintf(path, sizeof(path), "%s/%s", dir, name);
	header(tar + TAR_BLOCK, path, mode, len, '0');
	if (len)
		memcpy(tar + 2 * TAR_BLOCK, data, len);
	*ret_tar = tar;
	*ret_len = total;
	return 0;
}
