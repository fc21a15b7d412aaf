/*
 * push.c - appending to a partition's log: dense offsets, the txn-hash row
 * written for every message, dedup against the partition's dedup window,
 * and waking the cursors that had caught up.  Visibility rules (delay,
 * window_buffer) are applied by pop.c.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core.h"

#define TXID_MAX QUEEN_TXID_MAX

/* hashes looked up in one go ahead of a run of pushes to one partition */
#define PREFETCH_MAX 1024

struct pushctx {
	struct queue_row qr;
	struct part_row p;
	bool have;
	bool dirty;
	bool woken;
	bool claimed;   /* part_claim was called for p */
	size_t fetched; /* items up to here were prefetched */
	/* the dedup hashes of the items hk .. hk + hn - 1 (in the loop's
	 * order): made once, for the store's look-ahead, its prefetch and
	 * the loop's own lookups */
	size_t hk, hn;
	struct hash128 *h; /* PREFETCH_MAX of them, not cleared */
};

static int
flush_part(struct queen *q, struct pushctx *c)
{
	int rc = 0;

	if (c->have && c->dirty)
		rc = q->ops->part_update(q->st, &c->p);
	c->dirty = false;
	return rc;
}

/*
 * Before the first change of c's partition: a store that read its row
 * without locking it checks, with the writes, that it is still as read.
 * Between part_load and here the loop reads only hash rows, never the
 * partition's row again: c->p is the row the claim checks.
 */
static int
claim_part(struct queen *q, struct pushctx *c)
{
	if (c->claimed || !q->ops->part_claim)
		return 0;
	c->claimed = true;
	return q->ops->part_claim(q->st, &c->p);
}

/* an item's partition, as the loop names it */
static const char *
item_part(const struct queen_push_item *it)
{
	return it->partition ? it->partition : QUEEN_DEFAULT_PARTITION;
}

/* the order of the items' partitions: by queue, then name */
static int
item_cmp(const struct queen_push_item *a, const struct queen_push_item *b)
{
	int c = strcmp(a->queue, b->queue);

	return c ? c : strcmp(item_part(a), item_part(b));
}

/*
 * The dedup hashes of the run of items from the k-th on (in the order
 * the loop takes them, ord) that go to the k-th's partition, up to
 * PREFETCH_MAX of them, in c->h (made once for a k): their number.
 */
static size_t
run_hashes(struct pushctx *c, const struct queen_push_item *items,
    const size_t *ord, size_t k, size_t n, struct queen_push_result *res)
{
	const struct queen_push_item *first = &items[ord ? ord[k] : k];
	size_t m = 0, j;

	if (c->hn > 0 && c->hk == k)
		return c->hn;
	for (j = k; j < n && m < PREFETCH_MAX; j++) {
		size_t i = ord ? ord[j] : j;

		if (item_cmp(&items[i], first) != 0)
			break;
		hash_txid(queen_push_txid(&items[i], &res[i]), &c->h[m++]);
	}
	c->hk = k;
	c->hn = m;
	return m;
}

/* the k-th item's dedup hash, made by run_hashes if it was */
static void
item_hash(const struct pushctx *c, size_t k, const struct queen_push_item *it,
    const struct queen_push_result *r, struct hash128 *h)
{
	if (c->hn > 0 && k >= c->hk && k - c->hk < c->hn)
		*h = c->h[k - c->hk];
	else
		hash_txid(queen_push_txid(it, r), h);
}

/* the k-th item's partition in c, its queue's row and its own read */
static int
select_part(struct queen *q, struct pushctx *c,
    const struct queen_push_item *items, const size_t *ord, size_t k, size_t n,
    struct queen_push_result *res, bool nodedup)
{
	const struct queen_push_item *it = &items[ord ? ord[k] : k];
	const char *queue = it->queue, *partition = item_part(it);
	int rc;

	if (c->have && strcmp(c->qr.name, queue) == 0 &&
	    strcmp(c->p.name, partition) == 0)
		return 0;
	if ((rc = flush_part(q, c)) != 0)
		return rc;
	c->have = false;
	c->woken = false;
	c->fetched = 0;
	/* the names and transactionId are good (push_run's first pass);
	 * the run's hashes go along, for prefetch's ask that follows */
	if (q->ops->push_ahead) {
		size_t m = nodedup ? 0 : run_hashes(c, items, ord, k, n, res);

		if ((rc = q->ops->push_ahead(q->st, queue, partition,
			 m ? c->h : NULL, m)) != 0)
			return rc;
	}
	if ((rc = queue_ensure(q, queue, &c->qr)) != 0)
		return rc;
	if ((rc = part_load(q, &c->qr, partition, true, &c->p)) != 0)
		return rc;
	c->have = true;
	c->claimed = false;
	return 0;
}

/*
 * The dedup lookups of the run of items from the k-th on that go to c's
 * partition, asked of the store at once where it can (a server: one
 * round trip instead of one an item).
 */
static int
prefetch(struct queen *q, struct pushctx *c,
    const struct queen_push_item *items, const size_t *ord, size_t k, size_t n,
    struct queen_push_result *res)
{
	size_t m;

	c->fetched = k + PREFETCH_MAX;
	/* an empty partition too: the items' own appends are what the
	 * lookups after the first would ask about */
	if (!q->ops->txn_prefetch || c->qr.conf.dedup_window <= 0)
		return 0;
	m = run_hashes(c, items, ord, k, n, res);
	return m > 1 ?
	    q->ops->txn_prefetch(q->st, c->p.id, c->h, m, c->p.txns_start) :
	    0;
}

/*
 * The order in which the loop takes the items: by queue, then partition,
 * by name (as fs/ops_push.c orders a batch's publishes), the client's
 * order kept within each.  Each partition's row is then locked once, and
 * always in the same order, so that two handles pushing to the same
 * partitions never wait for each other in a ring (on a server, a
 * deadlock that fails one), and a partition's items are one run for the
 * set-based appends however the client interleaved them.  NULL: the
 * items are in that order already (or there was no memory for it, and
 * they are taken as they came).
 */
struct ranked {
	const struct queen_push_item *it;
	size_t i;
};

static int
by_part(const void *a, const void *b)
{
	const struct ranked *x = a, *y = b;
	int c = item_cmp(x->it, y->it);

	return c ? c : x->i < y->i ? -1 : 1;
}

static size_t *
push_order(const struct queen_push_item *items, size_t n)
{
	struct ranked *r;
	size_t *ord, i;

	for (i = 1; i < n && item_cmp(&items[i - 1], &items[i]) <= 0; i++)
		;
	if (i >= n || !(r = malloc(n * sizeof(*r))))
		return NULL;
	if (!(ord = malloc(n * sizeof(*ord)))) {
		free(r);
		return NULL;
	}
	for (i = 0; i < n; i++)
		r[i] = (struct ranked){ &items[i], i };
	qsort(r, n, sizeof(*r), by_part);
	for (i = 0; i < n; i++)
		ord[i] = r[i].i;
	free(r);
	return ord;
}

/* 0 and *off when txid is inside the partition's dedup window. */
static int
find_dup(struct queen *q, const struct qconf *conf, const struct part_row *p,
    const struct hash128 *h, int64_t now, int64_t *off)
{
	int64_t at;
	int rc;

	if (conf->dedup_window <= 0 || p->tail < p->txns_start)
		return -ENOENT;
	rc = q->ops->txn_find(q->st, p->id, h, p->txns_start, p->tail, true,
	    off, &at);
	if (rc != 0)
		return rc;
	return at >= now - conf->dedup_window * 1000 ? 0 : -ENOENT;
}

static int
push_run(struct queen *q, const struct queen_push_item *items, size_t n,
    bool create_excl, bool nodedup, struct queen_push_result *res,
    int *dup_index)
{
	struct pushctx c;
	struct hash128 hashes[PREFETCH_MAX];
	int64_t now = queen_now(q);
	size_t i, k, *ord;
	int rc = 0, dup_at = -1;

	memset(&c, 0, sizeof(c));
	c.h = hashes;
	memset(res, 0, n * sizeof(*res));
	if (dup_index)
		*dup_index = -1;
	/* what needs no store is refused (a missing queue, a bad name or
	 * transactionId), and the missing transactionIds made, in the
	 * client's order */
	for (i = 0; i < n; i++) {
		const struct queen_push_item *it = &items[i];

		if (!it->queue)
			return queen_err(q, -EINVAL, "item %zu: no queue", i);
		if (!queen_name_valid(it->queue))
			return bad_name(q, "queue", it->queue);
		if (!queen_name_valid(item_part(it)))
			return bad_name(q, "partition", item_part(it));
		if (it->txid &&
		    (it->txid[0] == '\0' || strlen(it->txid) > TXID_MAX))
			return queen_err(q, -EINVAL,
			    "item %zu: a transactionId is 1 to %d bytes", i,
			    TXID_MAX);
		if (!it->txid)
			uuid_v7(q, res[i].gen_txid);
	}
	ord = push_order(items, n);
	for (k = 0; k < n; k++) {
		const struct queen_push_item *it = &items[i = ord ? ord[k] : k];
		struct queen_push_result *r = &res[i];
		struct hash128 h;
		int64_t off, at;

		if ((rc = select_part(q, &c, items, ord, k, n, res, nodedup)) !=
		    0)
			break;
		if (k >= c.fetched && !nodedup &&
		    (rc = prefetch(q, &c, items, ord, k, n, res)) != 0)
			break;
		if (!it->size_checked &&
		    (int64_t)it->len > c.qr.conf.max_message_bytes) {
			rc = queen_err(q, -EFBIG, "item %zu: %zu bytes is over "
			    "max_message_bytes (%lld) of queue '%s'", i,
			    it->len, (long long)c.qr.conf.max_message_bytes,
			    c.qr.name);
			break;
		}
		memcpy(r->partition_uuid, c.p.uuid, sizeof(r->partition_uuid));
		item_hash(&c, k, it, r, &h);
		rc = nodedup ? -ENOENT : find_dup(q, &c.qr.conf, &c.p, &h, now,
		    &off);
		if (rc == 0 && (rc = claim_part(q, &c)) != 0)
			break;
		if (rc == 0) {
			r->status = QUEEN_PUSH_DUPLICATE;
			r->offset = off;
			c.p.duplicates++;
			c.dirty = true;
			/* the call fails: the first duplicate in the client's
			 * order is the one named, so the rest are looked at */
			if (create_excl && (dup_at < 0 || i < (size_t)dup_at)) {
				dup_at = (int)i;
				queen_err(q, -EEXIST,
				    "'%.64s' is already in %s/%s (offset %lld)",
				    queen_push_txid(it, r), c.qr.name, c.p.name,
				    (long long)off);
			}
			continue;
		}
		if (rc != -ENOENT)
			break;
		rc = 0;
		if (dup_at >= 0)
			continue;
		at = now > c.p.last_push_at ? now : c.p.last_push_at;
		off = c.p.tail + 1;
		if (off > MAX_OFFSET) {
			rc = queen_err(q, -EOVERFLOW, "partition %s is full",
			    c.p.name);
			break;
		}
		/* before the append: on a server both go out with the
		 * next statement, and the appends after it then go as one */
		if ((rc = claim_part(q, &c)) != 0)
			break;
		if (!c.woken) {
			/* announced only when a group had read the partition
			 * to its end (or it held nothing): a reader waits for
			 * that; messages already waiting are taken anyway */
			bool empty = c.p.tail < c.p.head;

			if (q->ops->wake_announce) {
				/* decided by the store, not waited for */
				if ((rc = q->ops->wake_announce(q->st, c.qr.id,
					 c.p.id, at, empty)) != 0)
					break;
			} else if ((rc = q->ops->cursor_wake(q->st, c.p.id,
					at)) < 0) {
				break;
			} else if ((rc > 0 || empty) &&
			    (rc = announce(q, c.qr.id, c.p.id)) != 0) {
				break;
			}
			rc = 0;
			c.woken = true;
		}
		rc = q->ops->msg_append(q->st, c.p.id, off, at,
		    queen_push_txid(it, r), it->trace_id, it->payload, it->len,
		    &h);
		if (rc != 0)
			break;
		fresh_mark(q, c.p.id, off);
		c.p.tail = off;
		c.p.last_push_at = at;
		c.dirty = true;
		r->status = QUEEN_PUSH_QUEUED;
		r->offset = off;
	}
	free(ord);
	if (rc == 0 && dup_at >= 0) {
		if (dup_index)
			*dup_index = dup_at;
		return -EEXIST;
	}
	if (rc == 0)
		rc = flush_part(q, &c);
	return rc;
}

int
push_items(struct queen *q, const struct queen_push_item *items, size_t n,
    bool create_excl, struct queen_push_result *res, int *dup_index)
{
	return push_run(q, items, n, create_excl, false, res, dup_index);
}

/* A requeued dead letter: its transactionId is known, and must not count. */
int
push_again(struct queen *q, const struct queen_push_item *it,
    struct queen_push_result *res)
{
	return push_run(q, it, 1, false, true, res, NULL);
}

int
queen_push(struct queen *q, const struct queen_push_item *items, size_t n,
    bool create_excl, struct queen_push_result *res)
{
	int rc;

	if (n == 0)
		return 0;
	if ((rc = tx_begin(q)) != 0)
		return rc;
	rc = push_items(q, items, n, create_excl, res, NULL);
	return tx_end(q, rc);
}

int
queen_push_is_dup(struct queen *q, const char *queue, const char *partition,
    const char *txid)
{
	struct queue_row qr;
	struct part_row p;
	struct hash128 h;
	int64_t off;
	int rc;

	if (txid && txid[0])
		hash_txid(txid, &h);
	if (q->ops->push_ahead && txid && txid[0] && queen_name_valid(queue) &&
	    partition && queen_name_valid(partition) &&
	    (rc = q->ops->push_ahead(q->st, queue, partition, &h, 1)) != 0)
		return rc;
	if ((rc = queue_load(q, queue, &qr)) != 0)
		return rc;
	if ((rc = part_load(q, &qr, partition, false, &p)) != 0)
		return rc;
	if (!txid || !txid[0])
		return -EINVAL;
	return find_dup(q, &qr.conf, &p, &h, queen_now(q), &off);
}
