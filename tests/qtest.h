/*
 * qtest.h - small helpers shared by the core unit tests (t-*.c): push,
 * pop and ack one item, read a cursor, set one config key, count DLQ rows.
 * Header-only (static inline) so each test stays one binary.
 */
#ifndef QTEST_H
#define QTEST_H

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tap.h"

#define SEC 1000LL

/*
 * Push one message, refused if excl and it is a duplicate; returns its
 * offset (>0), or a negative errno; *dup (if not NULL): it was one.
 */
/* An item of a push: the strings are the caller's (payload NULL: "x"). */
static inline struct queen_push_item
push_item(const char *queue, const char *part, const char *txid,
    const char *payload)
{
	struct queen_push_item it = { 0 };

	it.queue = queue;
	it.partition = part;
	it.txid = txid;
	it.payload = payload ? payload : "x";
	it.len = strlen(it.payload);
	return it;
}

static inline int64_t
push_ex(struct queen *q, const char *queue, const char *part, const char *txid,
    const char *payload, bool excl, bool *dup)
{
	struct queen_push_item it = push_item(queue, part, txid, payload);
	struct queen_push_result r;
	int rc;

	memset(&r, 0, sizeof(r));
	rc = queen_push(q, &it, 1, excl, &r);
	if (rc < 0)
		return rc;
	if (dup)
		*dup = r.status == QUEEN_PUSH_DUPLICATE;
	return r.offset;
}

/* Push one message; returns its offset (>0), or a negative errno. */
static inline int64_t
push1(struct queen *q, const char *queue, const char *part, const char *txid,
    const char *payload)
{
	return push_ex(q, queue, part, txid, payload, false, NULL);
}

/* Push n messages named prefix1..prefixN; returns 0 or the first error. */
static inline int
pushn(struct queen *q, const char *queue, const char *part,
    const char *prefix, int n)
{
	char txid[64];
	int64_t rc;
	int i;

	for (i = 1; i <= n; i++) {
		snprintf(txid, sizeof(txid), "%s%d", prefix, i);
		rc = push1(q, queue, part, txid, txid);
		if (rc < 0)
			return (int)rc;
	}
	return 0;
}

/* Pop with a lease (auto_ack off). */
static inline int
pop1(struct queen *q, const char *queue, const char *part, const char *group,
    int64_t batch, struct queen_batch **out)
{
	struct queen_pop_req r = { 0 };

	r.queue = queue;
	r.partition = part;
	r.group = group;
	r.batch = batch;
	r.auto_ack = 0;
	*out = NULL;
	return queen_pop(q, &r, out);
}

/* Pop and return the first offset (or a negative errno), freeing it. */
static inline int64_t
pop_first(struct queen *q, const char *queue, const char *part,
    const char *group, int64_t batch, int64_t *n, int64_t *retry)
{
	struct queen_batch *b;
	int64_t off;
	int rc;

	rc = pop1(q, queue, part, group, batch, &b);
	if (rc < 0)
		return rc;
	off = b->n ? b->msgs[0].offset : 0;
	if (n)
		*n = (int64_t)b->n;
	if (retry)
		*retry = b->retry_count;
	queen_batch_free(b);
	return off;
}

static inline void
ack_item(struct queen_ack_item *it, const char *queue, const char *part,
    const char *group, const char *txid, const char *status,
    const char *lease)
{
	memset(it, 0, sizeof(*it));
	it->queue = queue;
	it->partition = part ? part : QUEEN_DEFAULT_PARTITION;
	it->group = group;
	it->txid = txid;
	it->status = status;
	it->lease_id = lease;
}

/* Ack one item by queue + partition names. */
static inline int
ack1(struct queen *q, const char *queue, const char *part, const char *group,
    const char *txid, const char *status, const char *lease,
    struct queen_ack_result *res)
{
	struct queen_ack_item it;

	ack_item(&it, queue, part, group, txid, status, lease);
	memset(res, 0, sizeof(*res));
	return queen_ack(q, &it, 1, res);
}

struct cur_find {
	const char *part;
	int64_t committed;
	int64_t retry;
	int leased;
};

static inline int
cur_cb(void *arg, const struct queen_cursor_info *ci)
{
	struct cur_find *c = arg;

	if (strcmp(ci->partition, c->part) == 0) {
		c->committed = ci->committed;
		c->retry = ci->retry_count;
		c->leased = ci->leased;
		return 1;
	}
	return 0;
}

/* The group's committed offset on a partition; -1 when it has no cursor. */
static inline int64_t
committed(struct queen *q, const char *queue, const char *group,
    const char *part)
{
	struct cur_find c = { part ? part : QUEEN_DEFAULT_PARTITION, -1, -1,
		0 };

	queen_cursor_list(q, queue, group, cur_cb, &c);
	return c.committed;
}

static inline int
cfg(struct queen *q, const char *queue, const char *group, const char *key,
    const char *value)
{
	const char *k[1] = { key }, *v[1] = { value };

	return queen_config_set(q, queue, group, k, v, 1);
}

/* A config value, or INT64_MIN on error. */
static inline int64_t
cfgget(struct queen *q, const char *queue, const char *group,
    const char *key)
{
	int64_t v = 0;

	if (queen_config_get(q, queue, group, key, &v) != 0)
		return INT64_MIN;
	return v;
}

struct dlq_find {
	int n;
	char txid[QUEEN_NAME_MAX + 1];
	char error[256];
	char group[QUEEN_NAME_MAX + 1];
	int64_t offset;
	int64_t retry_count;
	size_t len;
	char payload[64];
};

static inline int
dlq_cb(void *arg, const struct queen_dlq_entry *e)
{
	struct dlq_find *d = arg;

	d->n++;
	snprintf(d->txid, sizeof(d->txid), "%s", e->txid ? e->txid : "");
	snprintf(d->error, sizeof(d->error), "%s", e->error ? e->error : "");
	snprintf(d->group, sizeof(d->group), "%s", e->group);
	d->offset = e->offset;
	d->retry_count = e->retry_count;
	d->len = e->len;
	if (e->payload && e->len < sizeof(d->payload)) {
		memcpy(d->payload, e->payload, e->len);
		d->payload[e->len] = '\0';
	}
	return 0;
}

/* Number of dead letters of (queue, group); the last one in *d. */
static inline int
dlq_count(struct queen *q, const char *queue, const char *group,
    struct dlq_find *d)
{
	struct dlq_find tmp;

	if (!d)
		d = &tmp;
	memset(d, 0, sizeof(*d));
	if (queen_dlq_list(q, queue, group, true, dlq_cb, d) < 0)
		return -1;
	return d->n;
}

/* The partition's tail (highest offset pushed), -1 when missing. */
static inline int64_t
tail_of(struct queen *q, const char *queue, const char *part)
{
	struct queen_partition_info pi;

	if (queen_partition_get(q, queue, part ? part :
	    QUEEN_DEFAULT_PARTITION, &pi) != 0)
		return -1;
	return pi.tail;
}

static inline int
count_cb(void *arg, const void *unused)
{
	(void)unused;
	(*(int *)arg)++;
	return 0;
}

static inline int
lease_count_cb(void *arg, const struct queen_lease_info *li)
{
	return count_cb(arg, li);
}

/* Number of live leases of (queue, group). */
static inline int
lease_count(struct queen *q, const char *queue, const char *group)
{
	int n = 0;

	if (queen_lease_list(q, queue, group, lease_count_cb, &n) < 0)
		return -1;
	return n;
}

/* Run queen_maintain until it has nothing more due; total rows changed. */
static inline ssize_t
maintain_all(struct queen *q)
{
	ssize_t total = 0, rc;
	bool more;
	int i;

	for (i = 0; i < 1000; i++) {
		more = false;
		rc = queen_maintain(q, &more);
		if (rc < 0)
			return rc;
		total += rc;
		if (!more)
			break;
	}
	return total;
}

#endif
