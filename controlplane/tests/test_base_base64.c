/* test_base_base64.c: base64_decode (base/base64.h), which reads what a
 * sandbox's helper sends (blob.read): the RFC 4648 section 10 vectors,
 * and text a hostile helper could send refused, not half-decoded. */
#include <criterion/criterion.h>
#include <string.h>

#include "base/base64.h"

Test(base64, the_rfc_vectors_decode)
{
	/* The padding may be left out, as MCP's header values do. */
	const char *enc[] = {"", "Zg==", "Zm8=", "Zm9v", "Zm9vYg==", "Zm9vYmE=", "Zm9vYmFy", "Zg", "Zm9vYmE"};
	const char *dec[] = {"", "f", "fo", "foo", "foob", "fooba", "foobar", "f", "fooba"};
	for (size_t i = 0; i < sizeof(enc) / sizeof(enc[0]); i++) {
		unsigned char out[16];
		int ok = 0;
		size_t n = base64_decode(enc[i], strlen(enc[i]), out, &ok);
		cr_expect(ok, "%s", enc[i]);
		cr_expect_eq(n, strlen(dec[i]), "%s", enc[i]);
		cr_expect_eq(memcmp(out, dec[i], n), 0, "%s", enc[i]);
	}
	unsigned char out[4];
	int ok = 0;
	cr_expect_eq(base64_decode("+/8=", 4, out, &ok), 2);
	cr_expect(ok);
	cr_expect(out[0] == 0xfb && out[1] == 0xff);
}

Test(base64, anything_else_is_refused)
{
	const char *bad[] = {"Zm9v!", "Zg==Zg==", "Zm 9v", "Zm9v\n", "-_-_", "Zm9vY", "Zg===", "Z==="};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		unsigned char out[16];
		int ok = 1;
		cr_expect_eq(base64_decode(bad[i], strlen(bad[i]), out, &ok), 0, "%s", bad[i]);
		cr_expect_not(ok, "%s", bad[i]);
	}
}
