/* test_sha256.c: content hashes (nettle's SHA-256, spelled in hex by
 * sha256.h) against the FIPS 180-4 example vectors. */
#include <criterion/criterion.h>
#include <string.h>

#include "../sha256.h"

static void hash_str(const char *s, size_t chunk, char hex[65])
{
	struct sha256_ctx c;
	sha256_init(&c);
	size_t n = strlen(s);
	for (size_t i = 0; i < n; i += chunk)
		sha256_update(&c, n - i < chunk ? n - i : chunk, (const uint8_t *)s + i);
	sha256_final_hex(&c, hex);
}

Test(sha256, known_vectors_in_any_chunking)
{
	char hex[65];
	for (size_t chunk = 1; chunk <= 70; chunk += 23) {
		hash_str("", chunk, hex);
		cr_assert_str_eq(hex, "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
		hash_str("abc", chunk, hex);
		cr_assert_str_eq(hex, "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
		hash_str("abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq", chunk, hex);
		cr_assert_str_eq(hex, "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1");
	}
	static char million[1000001];
	memset(million, 'a', 1000000);
	hash_str(million, 4096, hex);
	cr_assert_str_eq(hex, "cdc76e5c9914fb9281a1c7e284d73e67f1809a48a497200e046d39ccc7112cd0");
	sha256_hex(million, 1000000, hex);
	cr_assert_str_eq(hex, "cdc76e5c9914fb9281a1c7e284d73e67f1809a48a497200e046d39ccc7112cd0");
	sha256_hex("abc", 3, hex);
	cr_assert_str_eq(hex, "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
}
