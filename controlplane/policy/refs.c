/* refs.c: which ref names saved clone work may carry and where each lands
 * in the host repository (issue 14). The names come out of a sandbox, so
 * they are checked byte by byte here, after git-check-ref-format(1), before
 * git on the host ever sees one. Pure functions. */
#include <stdio.h>
#include <string.h>

#include "../base/text.h"
#include "policy.h"

/* Length of the valid UTF-8 sequence at s (n bytes left), 0 when invalid. */
static size_t utf8_len(const unsigned char *s, size_t n)
{
	uint32_t cp;
	return text_utf8_decode(s, n, &cp);
}

char *policy_text_escape(const char *s, size_t len, char *buf, size_t size)
{
	size_t o = 0;
	if (size == 0)
		return buf;
	const unsigned char *u = (const unsigned char *)s;
	for (size_t i = 0; i < len;) {
		char tmp[12];
		size_t t = 0;
		size_t adv = 1;
		if (u[i] == '\\' || u[i] == '"') {
			tmp[t++] = '\\';
			tmp[t++] = (char)u[i];
		} else if (u[i] == '\n') {
			memcpy(tmp, "\\n", 2), t = 2;
		} else if (u[i] < 0x20 || u[i] == 0x7f) {
			t = (size_t)snprintf(tmp, sizeof tmp, "\\x%02x", u[i]);
		} else if (u[i] < 0x80) {
			tmp[t++] = (char)u[i];
		} else if ((adv = utf8_len(u + i, len - i)) > 0) {
			uint32_t cp = 0;
			text_utf8_decode(u + i, len - i, &cp);
			if (text_invisible(cp)) /* a bidi control must not reorder the message */
				t = (size_t)snprintf(tmp, sizeof tmp, cp > 0xffff ? "\\U%06x" : "\\u%04x", cp);
			else
				memcpy(tmp, u + i, adv), t = adv;
		} else {
			adv = 1;
			t = (size_t)snprintf(tmp, sizeof tmp, "\\x%02x", u[i]);
		}
		if (o + t + 4 > size) { /* room for "..." and the NUL */
			memcpy(buf + o, "...", size - o >= 4 ? 3 : 0);
			o += size - o >= 4 ? 3 : 0;
			break;
		}
		memcpy(buf + o, tmp, t);
		o += t;
		i += adv;
	}
	buf[o] = '\0';
	return buf;
}

static int refuse(struct cp_error **err, const char *name, size_t len, const char *rule)
{
	char shown[200];
	return cp_error_set(err, CP_ERR_DENIED, "ref \"%s\" is refused: %s",
	                    policy_text_escape(name, len, shown, sizeof(shown)), rule);
}

/* git-check-ref-format(1) rules 1-10, over bytes. */
static int check_format(const char *name, size_t len, struct cp_error **err)
{
	if (len == 0)
		return refuse(err, name, len, "it is empty");
	if (len > POLICY_REF_NAME_MAX)
		return refuse(err, name, len, "it is longer than 1024 bytes");
	const unsigned char *u = (const unsigned char *)name;
	for (size_t i = 0; i < len;) {
		unsigned char c = u[i];
		if (c < 0x20 || c == 0x7f)
			return refuse(err, name, len, "it holds a control character");
		if (strchr(" ~^:?*[\\", c) && c != '\0')
			return refuse(err, name, len, "it holds one of the characters space ~ ^ : ? * [ \\");
		if (c >= 0x80) {
			size_t n = utf8_len(u + i, len - i);
			if (n == 0)
				return refuse(err, name, len, "it is not valid UTF-8");
			i += n;
			continue;
		}
		if (c == '.' && i + 1 < len && u[i + 1] == '.')
			return refuse(err, name, len, "it holds \"..\"");
		if (c == '@' && i + 1 < len && u[i + 1] == '{')
			return refuse(err, name, len, "it holds \"@{\"");
		i++;
	}
	if (len == 1 && name[0] == '@')
		return refuse(err, name, len, "it is \"@\"");
	if (name[0] == '/' || name[len - 1] == '/')
		return refuse(err, name, len, "it starts or ends with '/'");
	if (name[len - 1] == '.')
		return refuse(err, name, len, "it ends with '.'");
	for (size_t start = 0; start < len;) {
		const char *slash = memchr(name + start, '/', len - start);
		size_t end = slash ? (size_t)(slash - name) : len;
		size_t clen = end - start;
		if (clen == 0)
			return refuse(err, name, len, "it holds \"//\"");
		if (name[start] == '.')
			return refuse(err, name, len, "a component starts with '.'");
		if (clen >= 5 && memcmp(name + end - 5, ".lock", 5) == 0)
			return refuse(err, name, len, "a component ends with \".lock\"");
		start = end + 1;
	}
	return 0;
}

static int has_prefix(const char *name, size_t len, const char *prefix)
{
	size_t n = strlen(prefix);
	return len > n && memcmp(name, prefix, n) == 0;
}

int policy_ref_name_check(const char *name, size_t len, enum policy_ref_kind *ret_kind, struct cp_error **err)
{
	if (memchr(name, '\0', len))
		return refuse(err, name, len, "it holds a NUL byte");
	if (len == 4 && memcmp(name, "HEAD", 4) == 0) {
		if (ret_kind)
			*ret_kind = POLICY_REF_HEAD;
		return 0;
	}
	if (check_format(name, len, err) < 0)
		return -1;
	enum policy_ref_kind kind;
	if (len == strlen(POLICY_SNAPSHOT_REF) && memcmp(name, POLICY_SNAPSHOT_REF, len) == 0)
		kind = POLICY_REF_SNAPSHOT;
	else if (has_prefix(name, len, "refs/heads/"))
		kind = POLICY_REF_BRANCH;
	else if (has_prefix(name, len, "refs/tags/"))
		kind = POLICY_REF_TAG;
	else
		return refuse(err, name, len,
		              "an export carries only HEAD, refs/heads/*, refs/tags/* and " POLICY_SNAPSHOT_REF);
	if (ret_kind)
		*ret_kind = kind;
	return 0;
}

/* A branch whose host name would be a reserved one or lie below it. */
static int reserved(const char *branch)
{
	static const char *const words[] = {"HEAD", "uncommitted", "tags", NULL};
	for (size_t i = 0; words[i]; i++) {
		size_t n = strlen(words[i]);
		if (strncmp(branch, words[i], n) == 0 && (branch[n] == '\0' || branch[n] == '/'))
			return 1;
	}
	return 0;
}

int policy_ref_map(const char *name, const char *sandbox_id, char *buf, size_t size, struct cp_error **err)
{
	const char *rest;
	const char *sub = "";
	if (strcmp(name, "HEAD") == 0)
		rest = "HEAD";
	else if (strcmp(name, POLICY_SNAPSHOT_REF) == 0)
		rest = "uncommitted";
	else if (strncmp(name, "refs/tags/", 10) == 0)
		sub = "tags/", rest = name + 10;
	else {
		rest = name + 11; /* refs/heads/ */
		if (reserved(rest))
			return cp_error_set(err, CP_ERR_CONFLICT,
			                    "branch '%s' would collide with the names chat2sbx reserves under "
			                    "refs/remotes/chat2sbx/%s/ (HEAD, uncommitted, tags/)",
			                    rest, sandbox_id);
	}
	int n = snprintf(buf, size, "refs/remotes/chat2sbx/%s/%s%s", sandbox_id, sub, rest);
	if (n < 0 || (size_t)n >= size)
		return cp_error_set(err, CP_ERR_LIMIT, "the host name of ref '%s' is too long", name);
	return 0;
}

int policy_clone_head_branch(const char *out, size_t len, char *buf, size_t size)
{
	if (size)
		buf[0] = '\0';
	if (!out)
		return 0;
	while (len && out[len - 1] == '\n')
		len--; /* git's one line */
	enum policy_ref_kind kind;
	struct cp_error *e = NULL;
	if (len <= 11 || strncmp(out, "refs/heads/", 11) || memchr(out, '\n', len) ||
	    policy_ref_name_check(out, len, &kind, &e) < 0 || kind != POLICY_REF_BRANCH || len - 11 >= size) {
		cp_error_free(e);
		return 0;
	}
	memcpy(buf, out + 11, len - 11);
	buf[len - 11] = '\0';
	return 1;
}
