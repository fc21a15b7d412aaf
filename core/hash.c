/*
 * hash.c - the one user of xxHash: a transactionId becomes its 16-byte
 * xxh3-128 digest (big-endian, high half first): docs/design.md#offset-commit.
 */
#include <string.h>
#include <xxhash.h>

#include "core.h"

void
hash_txid(const char *txid, struct hash128 *out)
{
	XXH128_hash_t h = XXH3_128bits(txid, strlen(txid));
	XXH128_canonical_t c;

	XXH128_canonicalFromHash(&c, h);
	memcpy(out->b, c.digest, 16);
}
