/* fuzz_export_bundle.c: libFuzzer harness over the parsers that read a
 * sandbox's bundle header and ref lists on the host (export/bundle.c):
 * export_bundle_parse (gitformat-bundle(5) v2/v3 headers) and
 * export_reflist_parse (git for-each-ref lines). Byte 0 picks the parser
 * (bit 0: ref list, bit 1: allow_any for it); the rest is the input.
 * A refusal must carry a message and never be INTERNAL; an accepted
 * header or list must keep every promise export.h makes (versions, oid
 * length and case, ref names policy_ref_name_check accepts, no ref twice,
 * at most EXPORT_REFS_MAX refs, the header ends inside the input with an
 * empty line and is followed by "PACK"); parsing the same bytes twice
 * gives the same verdict. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "export/export.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void fail(const char *what)
{
	fprintf(stderr, "fuzz_export_bundle: %s\n", what);
	abort();
}

static void check_refused(struct cp_error *err)
{
	if (!err || !err->message || !err->message[0] || err->code == CP_ERR_INTERNAL)
		fail("a refusal without a proper error");
	cp_error_free(err);
}

static void check_refs(const struct export_ref *refs, size_t n, int oid_hex)
{
	if (n > EXPORT_REFS_MAX)
		fail("more refs than EXPORT_REFS_MAX accepted");
	for (size_t i = 0; i < n; i++) {
		size_t len = strlen(refs[i].oid);
		if (oid_hex && (int)len != oid_hex)
			fail("an oid of the wrong length accepted");
		if (len != 40 && len != 64)
			fail("an oid of neither 40 nor 64 digits accepted");
		for (size_t k = 0; k < len; k++)
			if (!strchr("0123456789abcdef", refs[i].oid[k]))
				fail("an oid that is not lowercase hex accepted");
		enum policy_ref_kind kind;
		struct cp_error *e = NULL;
		if (policy_ref_name_check(refs[i].name, strlen(refs[i].name), &kind, &e) < 0)
			fail("a ref name policy_ref_name_check refuses accepted");
		if (kind != refs[i].kind)
			fail("a ref kind differs from policy_ref_name_check's");
		for (size_t j = 0; j < i; j++)
			if (!strcmp(refs[i].name, refs[j].name))
				fail("the same ref accepted twice");
	}
}

static int header(const char *s, size_t n)
{
	struct export_bundle_header h = {0};
	struct cp_error *err = NULL;
	if (export_bundle_parse(s, n, &h, &err) < 0) {
		check_refused(err);
		export_bundle_header_clear(&h);
		return -1;
	}
	if (h.version != 2 && h.version != 3)
		fail("a version other than 2 or 3 accepted");
	if (h.oid_hex != 40 && h.oid_hex != 64)
		fail("an object format other than sha1/sha256 accepted");
	if (h.header_len < 2 || h.header_len > n || s[h.header_len - 1] != '\n' || s[h.header_len - 2] != '\n')
		fail("a header that does not end with its empty line inside the input");
	if (n - h.header_len < 4 || memcmp(s + h.header_len, "PACK", 4) != 0)
		fail("a header not followed by PACK accepted");
	check_refs(h.refs, h.n_refs, h.oid_hex);
	for (size_t i = 0; i < h.n_prereqs; i++)
		if ((int)strlen(h.prereqs[i]) != h.oid_hex)
			fail("a prerequisite of the wrong length accepted");
	int n_refs = (int)h.n_refs;
	export_bundle_header_clear(&h);
	return n_refs;
}

static int reflist(const char *s, size_t n, int allow_any)
{
	struct export_ref *refs = NULL;
	size_t n_refs = 0;
	struct cp_error *err = NULL;
	if (export_reflist_parse(s, n, allow_any, &refs, &n_refs, &err) < 0) {
		check_refused(err);
		return -1;
	}
	check_refs(refs, n_refs, 0);
	export_refs_free(refs, n_refs);
	return (int)n_refs;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (size < 1)
		return 0;
	int mode = data[0];
	/* A copy of exactly the input's bytes, so ASan sees any read past it. */
	size_t n = size - 1;
	char *s = malloc(n ? n : 1);
	if (!s)
		return 0;
	memcpy(s, data + 1, n);
	int a, b;
	if (mode & 1) {
		a = reflist(s, n, mode & 2);
		b = reflist(s, n, mode & 2);
	} else {
		a = header(s, n);
		b = header(s, n);
	}
	if (a != b)
		fail("the same bytes parsed twice gave two verdicts");
	free(s);
	return 0;
}
