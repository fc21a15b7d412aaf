/*
 * young.c - the hashes of pushes not yet in the hashes table, in memory.
 *
 * An open-addressing table of (h, id) pairs with linear probing, where a
 * pair's home slot is the top bits of h.  So the table is nearly in h
 * order, and walking its slots from first to last visits the hashes in
 * almost ascending order: db.c folds them into the index that way, a
 * slice at a time, each slice touching a few neighbouring index pages
 * rather than one page per hash.  Nothing is ever removed: a pair whose
 * row was rolled back, purged or already folded is checked against the
 * row by db.c and ignored.  The table is thrown away whole once folded.
 */
#include <errno.h>
#include <stdlib.h>

#include "db.h"

#define MIN_BITS 10

static size_t
home(const struct ytab *t, int64_t h)
{
	return (size_t)((uint64_t)h >> (64 - t->bits));
}

static int
grow(struct ytab *t)
{
	struct ytab n = { 0 };
	size_t i;

	n.bits = t->bits ? t->bits + 1 : MIN_BITS;
	n.cap = (size_t)1 << n.bits;
	n.e = calloc(n.cap, sizeof(*n.e));
	if (!n.e)
		return -ENOMEM;
	for (i = 0; i < t->cap; i++)
		if (t->e[i].id)
			ytab_put(&n, t->e[i].h, t->e[i].id);
	free(t->e);
	*t = n;
	return 0;
}

int
ytab_put(struct ytab *t, int64_t h, int64_t id)
{
	size_t i;
	int rc;

	if ((t->n + 1) * 4 > t->cap * 3 && (rc = grow(t)) != 0)
		return rc;
	for (i = home(t, h); t->e[i].id; i = (i + 1) & (t->cap - 1))
		if (t->e[i].h == h && t->e[i].id == id)
			return 0;
	t->e[i].h = h;
	t->e[i].id = id;
	t->n++;
	return 0;
}

int
ytab_find(const struct ytab *t, int64_t h, int64_t lo, int64_t hi,
    int (*cb)(void *arg, int64_t id), void *arg)
{
	size_t i;
	int rc;

	if (!t->n)
		return 0;
	for (i = home(t, h); t->e[i].id; i = (i + 1) & (t->cap - 1))
		if (t->e[i].h == h && t->e[i].id >= lo &&
		    t->e[i].id <= hi && (rc = cb(arg, t->e[i].id)) != 0)
			return rc;
	return 0;
}

void
ytab_free(struct ytab *t)
{
	free(t->e);
	t->e = NULL;
	t->cap = t->n = 0;
	t->bits = 0;
}
