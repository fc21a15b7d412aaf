/*
 * push.c - appending to a partition's log: dense offsets, the txn-hash row
 * written for every message, dedup against the partition's dedup window,
 * and waking the cursors that had caught up.  Visibility rules (delay,
 * window_buffer) are applied by pop.c.
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "core.h"

#define TXID_MAX QUEEN_TXID_MAX

struct pushctx {
	struct queue_row qr;
	struct part_row p;
	bool have;
	bool dirty;
	bool woken;
	size_t fetched; /* items up to here were prefetched */
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
 * The dedup hash of an item, for the store's push_ahead hint: NULL when
 * its transactionId is one the loop refuses.  Generates a missing one.
 */
static const struct hash128 *
ahead_hash(struct queen *q, const struct queen_push_item *it,
    struct queen_push_result *r, struct hash128 *h)
{
	size_t tl = it->txid ? strlen(it->txid) : 0;

	if (it->txid && (tl == 0 || tl > TXID_MAX))
		return NULL;
	if (!it->txid && !r->gen_txid[0])
		uuid_v7(q, r->gen_txid);
	hash_txid(queen_push_txid(it, r), h);
	return h;
}

static int
select_part(struct queen *q, struct pushctx *c,
    const struct queen_push_item *it, struct queen_push_result *r, bool nodedup)
{
	const char *queue = it->queue, *partition = it->partition;
	const struct hash128 *hp;
	struct hash128 h;
	int rc;

	if (!partition)
		partition = QUEEN_DEFAULT_PARTITION;
	if (c->have && strcmp(c->qr.name, queue) == 0 &&
	    strcmp(c->p.name, partition) == 0)
		return 0;
	if ((rc = flush_part(q, c)) != 0)
		return rc;
	c->have = false;
	c->woken = false;
	c->fetched = 0;
	if (q->ops->push_ahead && queen_name_valid(queue) &&
	    queen_name_valid(partition)) {
		hp = nodedup ? NULL : ahead_hash(q, it, r, &h);
		if ((rc = q->ops->push_ahead(q->st, queue, partition, hp)) != 0)
			return rc;
	}
	if ((rc = queue_ensure(q, queue, &c->qr)) != 0)
		return rc;
	if ((rc = part_load(q, &c->qr, partition, true, &c->p)) != 0)
		return rc;
	c->have = true;
	return 0;
}

/* hashes looked up in one go ahead of a run of pushes to one partition */
#define PREFETCH_MAX 1024

/*
 * The dedup lookups of the run of items from i on that go to c's
 * partition, asked of the store at once where it can (a server: one round
 * trip instead of one an item).  Generates the transactionIds the items
 * lack now, in item order, as the loop would have.
 */
static int
prefetch(struct queen *q, struct pushctx *c,
    const struct queen_push_item *items, size_t i, size_t n,
    struct queen_push_result *res)
{
	struct hash128 h[PREFETCH_MAX];
	size_t k = 0, tl;

	c->fetched = i + PREFETCH_MAX;
	/* an empty partition too: the items' own appends are what the
	 * lookups after the first would ask about */
	if (!q->ops->txn_prefetch || c->qr.conf.dedup_window <= 0)
		return 0;
	for (; i < n && k < PREFETCH_MAX; i++) {
		const struct queen_push_item *it = &items[i];

		if (!it->queue || strcmp(it->queue, c->qr.name) != 0 ||
		    strcmp(it->partition ? it->partition :
					   QUEEN_DEFAULT_PARTITION,
			c->p.name) != 0)
			break;
		tl = it->txid ? strlen(it->txid) : 0;
		if (it->txid && (tl == 0 || tl > TXID_MAX))
			break; /* the loop refuses it */
		if (!it->txid && !res[i].gen_txid[0])
			uuid_v7(q, res[i].gen_txid);
		hash_txid(queen_push_txid(it, &res[i]), &h[k++]);
	}
	return k > 1 ?
	    q->ops->txn_prefetch(q->st, c->p.id, h, k, c->p.txns_start) :
	    0;
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
	int64_t now = queen_now(q);
	size_t i;
	int rc = 0;

	memset(&c, 0, sizeof(c));
	memset(res, 0, n * sizeof(*res));
	if (dup_index)
		*dup_index = -1;
	for (i = 0; i < n; i++) {
		const struct queen_push_item *it = &items[i];
		struct queen_push_result *r = &res[i];
		struct hash128 h;
		int64_t off, at;

		if (!it->queue ||
		    (rc = select_part(q, &c, it, r, nodedup)) != 0) {
			if (!it->queue)
				rc = queen_err(q, -EINVAL, "item %zu: no queue",
				    i);
			break;
		}
		if (i >= c.fetched && !nodedup &&
		    (rc = prefetch(q, &c, items, i, n, res)) != 0)
			break;
		if (it->txid) {
			size_t tl = strlen(it->txid);

			if (tl == 0 || tl > TXID_MAX) {
				rc = queen_err(q, -EINVAL, "item %zu: a "
				    "transactionId is 1 to %d bytes", i,
				    TXID_MAX);
				break;
			}
		} else if (!r->gen_txid[0]) {
			uuid_v7(q, r->gen_txid);
		}
		if ((int64_t)it->len > c.qr.conf.max_message_bytes) {
			rc = queen_err(q, -EFBIG, "item %zu: %zu bytes is over "
			    "max_message_bytes (%lld) of queue '%s'", i,
			    it->len, (long long)c.qr.conf.max_message_bytes,
			    c.qr.name);
			break;
		}
		memcpy(r->partition_uuid, c.p.uuid, sizeof(r->partition_uuid));
		hash_txid(queen_push_txid(it, r), &h);
		rc = nodedup ? -ENOENT : find_dup(q, &c.qr.conf, &c.p, &h, now,
		    &off);
		if (rc == 0) {
			r->status = QUEEN_PUSH_DUPLICATE;
			r->offset = off;
			c.p.duplicates++;
			c.dirty = true;
			if (create_excl) {
				if (dup_index)
					*dup_index = (int)i;
				rc = queen_err(q, -EEXIST, "'%.64s' is already "
				    "in %s/%s (offset %lld)", queen_push_txid(it, r),
				    c.qr.name, c.p.name, (long long)off);
				break;
			}
			continue;
		}
		if (rc != -ENOENT)
			break;
		rc = 0;
		at = now > c.p.last_push_at ? now : c.p.last_push_at;
		off = c.p.tail + 1;
		if (off > MAX_OFFSET) {
			rc = queen_err(q, -EOVERFLOW, "partition %s is full",
			    c.p.name);
			break;
		}
		rc = q->ops->msg_append(q->st, c.p.id, off, at,
		    queen_push_txid(it, r), it->trace_id, it->payload,
		    it->len, &h);
		if (rc != 0)
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
		fresh_mark(q, c.p.id, off);
		c.p.tail = off;
		c.p.last_push_at = at;
		c.dirty = true;
		r->status = QUEEN_PUSH_QUEUED;
		r->offset = off;
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
	    (rc = q->ops->push_ahead(q->st, queue, partition, &h)) != 0)
		return rc;
	if ((rc = queue_load(q, queue, &qr)) != 0)
		return rc;
	if ((rc = part_load(q, &qr, partition, false, &p)) != 0)
		return rc;
	if (!txid || !txid[0])
		return -EINVAL;
	return find_dup(q, &qr.conf, &p, &h, queen_now(q), &off);
}
