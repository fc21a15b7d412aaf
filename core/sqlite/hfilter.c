/*
 * hfilter.c - a blocked Bloom filter of h values: "certainly not there" or
 * "perhaps there".  Each h sets 7 bits in one 512-bit block (a cache
 * line), chosen by its top bits, so a test touches one line.  At 10 bits
 * per h the filter says "perhaps" for about 1% of the h it never saw
 * (0.96% measured, full; 0.03% half full, as db.c builds it).
 * Nothing can be taken out; db.c builds a new one when too many stale or
 * new h have gone in (docs/engine.md, "The hash filter").
 */
#include <errno.h>
#include <stdlib.h>

#include "db.h"

#define BLOCK_WORDS 8           /* 512 bits */
#define BITS_PER_H 10
#define K 7
#define MIX 0x9E3779B97F4A7C15ULL

static const uint64_t *
block(const struct hfilt *f, int64_t h, uint64_t *x)
{
	uint64_t u = (uint64_t)h;

	*x = u * MIX;
	/* the top 32 bits, scaled onto the blocks */
	return f->w + ((u >> 32) * f->nblk >> 32) * BLOCK_WORDS;
}

int
hfilt_init(struct hfilt *f, uint64_t cap)
{
	uint64_t nblk = (cap * BITS_PER_H + 511) / 512;

	if (nblk < 1)
		nblk = 1;
	f->w = calloc(nblk * BLOCK_WORDS, sizeof(*f->w));
	if (!f->w)
		return -ENOMEM;
	f->nblk = nblk;
	f->n = 0;
	return 0;
}

void
hfilt_add(struct hfilt *f, int64_t h)
{
	uint64_t x, *b = (uint64_t *)block(f, h, &x);
	int i;

	for (i = 0; i < K; i++, x >>= 9)
		b[(x >> 6) & 7] |= 1ULL << (x & 63);
	f->n++;
}

bool
hfilt_has(const struct hfilt *f, int64_t h)
{
	uint64_t x;
	const uint64_t *b = block(f, h, &x);
	int i;

	for (i = 0; i < K; i++, x >>= 9)
		if (!(b[(x >> 6) & 7] & 1ULL << (x & 63)))
			return false;
	return true;
}

uint64_t
hfilt_cap(const struct hfilt *f)
{
	return f->nblk * 512 / BITS_PER_H;
}

size_t
hfilt_bytes(const struct hfilt *f)
{
	return f->w ? f->nblk * BLOCK_WORDS * sizeof(*f->w) : 0;
}

void
hfilt_free(struct hfilt *f)
{
	free(f->w);
	f->w = NULL;
	f->nblk = 0;
	f->n = 0;
}
