/* id.c: random identifiers from getrandom(2), base32 (RFC 4648 alphabet,
 * lowercased). Owns no state. */
#include "id.h"
#include "xalloc.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>

static const char alphabet[] = "abcdefghijklmnopqrstuvwxyz234567";

int id_random_bytes(void *buf, size_t n, struct cp_error **err)
{
	size_t got = 0;
	while (got < n) {
		ssize_t r = getrandom((unsigned char *)buf + got, n - got, 0);
		if (r < 0) {
			if (errno == EINTR)
				continue;
			return cp_error_set_errno(err, CP_ERR_INTERNAL, errno, "generate random bytes: getrandom");
		}
		got += (size_t)r;
	}
	return 0;
}

int id_new(const char *prefix, char **ret_id, struct cp_error **err)
{
	unsigned char raw[ID_RANDOM_CHARS];
	if (id_random_bytes(raw, sizeof(raw), err) < 0)
		return cp_error_prefix(err, "generate id");
	size_t plen = strlen(prefix);
	char *id = xmalloc(plen + ID_RANDOM_CHARS + 1);
	memcpy(id, prefix, plen);
	for (size_t i = 0; i < ID_RANDOM_CHARS; i++)
		id[plen + i] = alphabet[raw[i] & 31];
	id[plen + ID_RANDOM_CHARS] = '\0';
	*ret_id = id;
	return 0;
}

int id_valid(const char *s, const char *prefix)
{
	if (!s)
		return 0;
	size_t plen = strlen(prefix);
	if (strncmp(s, prefix, plen) != 0 || strlen(s) != plen + ID_RANDOM_CHARS)
		return 0;
	for (size_t i = plen; s[i]; i++)
		if (!strchr(alphabet, s[i]))
			return 0;
	return 1;
}
