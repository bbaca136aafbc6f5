/* export_bundle.c: reading what a sandbox claims about its refs: the header
 * of a git bundle (gitformat-bundle(5)) and "<oid> <refname>" ref lists.
 * The bytes are hostile: every line is bounded and judged, every name goes
 * through policy_ref_name_check, and nothing here runs git. Pure. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../base/xalloc.h"
#include "export.h"

void export_refs_free(struct export_ref *refs, size_t n)
{
	for (size_t i = 0; i < n; i++)
		free(refs[i].name);
	free(refs);
}

void export_bundle_header_clear(struct export_bundle_header *h)
{
	if (!h)
		return;
	export_refs_free(h->refs, h->n_refs);
	free(h->prereqs);
	*h = (struct export_bundle_header){0};
}

static int bad(struct cp_error **err, size_t line_no, const char *line, size_t len, const char *what)
{
	char shown[160];
	return cp_error_set(err, CP_ERR_DENIED, "line %zu \"%s\" %s", line_no,
	                    policy_text_escape(line, len < 120 ? len : 120, shown, sizeof(shown)), what);
}

/* An oid of exactly hex lowercase hex digits at s. */
static int oid_ok(const char *s, size_t n, int hex)
{
	if ((int)n != hex)
		return 0;
	for (size_t i = 0; i < n; i++)
		if (!((s[i] >= '0' && s[i] <= '9') || (s[i] >= 'a' && s[i] <= 'f')))
			return 0;
	return 1;
}

/* Appends "<oid> <name>" of one line to *refs, judging both. */
static int add_ref(struct export_ref **refs, size_t *n, size_t *cap, const char *line, size_t len, size_t line_no,
                   int hex, int allow_any, struct cp_error **err)
{
	const char *sp = memchr(line, ' ', len);
	if (!sp || (size_t)(sp - line) == len - 1)
		return bad(err, line_no, line, len, "is not \"<object id> <ref name>\"");
	size_t oid_len = (size_t)(sp - line);
	if (!oid_ok(line, oid_len, hex))
		return bad(err, line_no, line, len, "does not start with an object id of lowercase hex digits");
	const char *name = sp + 1;
	size_t name_len = len - oid_len - 1;
	enum policy_ref_kind kind;
	struct cp_error *e = NULL;
	if (policy_ref_name_check(name, name_len, &kind, &e) < 0) {
		if (allow_any) { /* the approved repository's own refs/remotes, refs/notes ... */
			cp_error_free(e);
			return 0;
		}
		*err = e;
		return -1;
	}
	for (size_t i = 0; i < *n; i++)
		if (strlen((*refs)[i].name) == name_len && memcmp((*refs)[i].name, name, name_len) == 0)
			return bad(err, line_no, line, len, "names a ref a second time");
	if (*n >= EXPORT_REFS_MAX)
		return cp_error_set(err, CP_ERR_LIMIT, "more than %d refs", EXPORT_REFS_MAX);
	if (*n == *cap) {
		size_t c = *cap ? *cap * 2 : 16;
		struct export_ref *grown = xrealloc(*refs, c * sizeof(*grown));
		*refs = grown;
		*cap = c;
	}
	struct export_ref *r = &(*refs)[(*n)++];
	r->name = xstrndup(name, name_len);
	memcpy(r->oid, line, oid_len);
	r->oid[oid_len] = '\0';
	r->kind = kind;
	return 0;
}

int export_bundle_parse(const char *data, size_t len, struct export_bundle_header *ret, struct cp_error **err)
{
	struct export_bundle_header h = {0};
	size_t cap = 0, pcap = 0, pos = 0, line_no = 0;
	int in_caps = 1;
	h.oid_hex = 40;
	for (;;) {
		const char *nl = memchr(data + pos, '\n', len - pos);
		if (!nl) {
			cp_error_set(err, CP_ERR_DENIED,
			             len >= EXPORT_HEADER_MAX
			                 ? "its header is longer than 8 MiB"
			                 : "its header has no end (no empty line before the pack)");
			goto fail;
		}
		const char *line = data + pos;
		size_t l = (size_t)(nl - line);
		pos += l + 1;
		line_no++;
		if (line_no == 1) {
			if (l == 15 && !memcmp(line, "# v2 git bundle", 15))
				h.version = 2;
			else if (l == 15 && !memcmp(line, "# v3 git bundle", 15))
				h.version = 3;
			else {
				bad(err, line_no, line, l, "is not the signature of a git bundle (v2 or v3)");
				goto fail;
			}
			continue;
		}
		if (l == 0)
			break;
		if (line[0] == '@') {
			if (h.version != 3 || !in_caps) {
				bad(err, line_no, line, l, "is a capability out of place");
				goto fail;
			}
			if (l == 19 && !memcmp(line, "@object-format=sha1", 19))
				h.oid_hex = 40;
			else if (l == 21 && !memcmp(line, "@object-format=sha256", 21))
				h.oid_hex = 64;
			else {
				bad(err, line_no, line, l,
				    "is a capability chat2sbx does not accept (only object-format)");
				goto fail;
			}
			continue;
		}
		in_caps = 0;
		if (line[0] == '-') {
			const char *sp = memchr(line, ' ', l);
			size_t n = sp ? (size_t)(sp - line) - 1 : l - 1;
			if (!oid_ok(line + 1, n, h.oid_hex)) {
				bad(err, line_no, line, l, "is not a prerequisite \"-<object id> <comment>\"");
				goto fail;
			}
			if (h.n_prereqs >= EXPORT_REFS_MAX) {
				cp_error_set(err, CP_ERR_LIMIT, "more than %d prerequisites", EXPORT_REFS_MAX);
				goto fail;
			}
			if (h.n_prereqs == pcap) {
				pcap = pcap ? pcap * 2 : 16;
				h.prereqs = xrealloc(h.prereqs, pcap * sizeof(*h.prereqs));
			}
			memcpy(h.prereqs[h.n_prereqs], line + 1, n);
			h.prereqs[h.n_prereqs++][n] = '\0';
			continue;
		}
		if (add_ref(&h.refs, &h.n_refs, &cap, line, l, line_no, h.oid_hex, 0, err) < 0)
			goto fail;
	}
	if (h.n_refs == 0) {
		cp_error_set(err, CP_ERR_DENIED, "it names no ref");
		goto fail;
	}
	if (len - pos < 4 || memcmp(data + pos, "PACK", 4) != 0) {
		cp_error_set(err, CP_ERR_DENIED, "no pack follows its header");
		goto fail;
	}
	h.header_len = pos;
	*ret = h;
	return 0;
fail:
	export_bundle_header_clear(&h);
	return -1;
}

int export_reflist_parse(const char *text, size_t len, int allow_any, struct export_ref **ret, size_t *ret_n,
                         struct cp_error **err)
{
	struct export_ref *refs = NULL;
	size_t n = 0, cap = 0, pos = 0, line_no = 0;
	while (pos < len) {
		const char *nl = memchr(text + pos, '\n', len - pos);
		size_t l = nl ? (size_t)(nl - (text + pos)) : len - pos;
		const char *line = text + pos;
		pos += l + (nl ? 1 : 0);
		line_no++;
		if (l == 0)
			continue;
		const char *sp = memchr(line, ' ', l);
		int hex = sp && sp - line == 64 ? 64 : 40;
		if (add_ref(&refs, &n, &cap, line, l, line_no, hex, allow_any, err) < 0) {
			export_refs_free(refs, n);
			return -1;
		}
	}
	*ret = refs;
	*ret_n = n;
	return 0;
}
