/*
 * world.h - for the transaction tests (t-txn, t-api): a snapshot of
 * everything one step could write (messages in the source and output
 * queues, the cursor, KV, timers, the lease), and the check that a
 * refused step left all of it as it was; and reading back a KV value or
 * a message.  The including file defines
 * Q, G, OUT, NS and TQ first.
 */
#ifndef WORLD_H
#define WORLD_H

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "qtest.h"
#include "tap.h"

/* ---- a snapshot of everything a step could write ---- */

struct world {
	int64_t q_tail;
	int64_t q_dups;
	int out_exists;
	int64_t out_msgs;
	int64_t out_tail;
	int64_t out_dups;
	int64_t committed;
	int64_t kv_keys;
	int64_t kv_versions;
	int tq_exists;
	int64_t timers;
	int64_t timer_due_sum;
	int lease_live;
	int64_t lease_exp;
};

static inline int
kv_count_cb(void *arg, const char *key, const struct queen_kv_value *v)
{
	int64_t *acc = arg;

	(void)key;
	acc[0]++;
	acc[1] += v->version;
	return 0;
}

static inline int
timer_count_cb(void *arg, const struct queen_timer_info *ti)
{
	int64_t *acc = arg;

	acc[0]++;
	acc[1] += ti->due_at;
	return 0;
}

static inline void
snap(struct queen *q, const char *lease, struct world *w)
{
	struct queen_stats st;
	struct queen_queue_info qi;
	struct queen_lease_info li;
	int64_t acc[2] = { 0, 0 };

	memset(w, 0, sizeof(*w));
	w->q_tail = tail_of(q, Q, NULL);
	memset(&st, 0, sizeof(st));
	if (queen_stats_get(q, Q, G, &st) == 0)
		w->q_dups = st.duplicates;
	w->out_exists = queen_queue_get(q, OUT, &qi) == 0;
	memset(&st, 0, sizeof(st));
	if (w->out_exists && queen_stats_get(q, OUT, NULL, &st) == 0) {
		w->out_msgs = st.messages;
		w->out_dups = st.duplicates;
	}
	w->out_tail = tail_of(q, OUT, NULL);
	w->committed = committed(q, Q, G, NULL);
	queen_kv_list(q, NS, kv_count_cb, acc);
	w->kv_keys = acc[0];
	w->kv_versions = acc[1];
	w->tq_exists = queen_queue_get(q, TQ, &qi) == 0;
	acc[0] = acc[1] = 0;
	if (w->tq_exists)
		queen_timer_list(q, TQ, timer_count_cb, acc);
	w->timers = acc[0];
	w->timer_due_sum = acc[1];
	if (lease && queen_lease_get(q, lease, &li) == 0) {
		w->lease_live = 1;
		w->lease_exp = li.expires_at;
	}
}

/* After a refusal: every part of the world is as it was. */
static inline void
nothing_written(struct queen *q, const struct world *b, const char *lease,
    const char *label)
{
	struct world a;

	snap(q, lease, &a);
	is_int(a.q_tail, b->q_tail, "%s: no new message in " Q, label);
	is_int(a.out_exists, b->out_exists, "%s: queue " OUT " not created "
	    "or dropped", label);
	is_int(a.out_msgs, b->out_msgs, "%s: no new message in " OUT, label);
	is_int(a.out_tail, b->out_tail, "%s: " OUT " tail unchanged", label);
	is_int(a.out_dups, b->out_dups, "%s: " OUT " duplicate count "
	    "unchanged", label);
	is_int(a.q_dups, b->q_dups, "%s: " Q " duplicate count unchanged",
	    label);
	is_int(a.committed, b->committed, "%s: cursor unchanged", label);
	is_int(a.kv_keys, b->kv_keys, "%s: no KV key written", label);
	is_int(a.kv_versions, b->kv_versions, "%s: no KV version bumped",
	    label);
	is_int(a.tq_exists, b->tq_exists, "%s: timer queue " TQ " not "
	    "created", label);
	is_int(a.timers, b->timers, "%s: no timer scheduled or cancelled",
	    label);
	is_int(a.timer_due_sum, b->timer_due_sum, "%s: no timer moved",
	    label);
	if (lease) {
		is_int(a.lease_live, b->lease_live, "%s: lease liveness "
		    "unchanged", label);
		is_int(a.lease_exp, b->lease_exp, "%s: lease expiry unchanged",
		    label);
	}
}

/* The KV value as a string into buf ("" when absent); version or -errno. */
static inline int64_t
kv_str(struct queen *q, const char *ns, const char *key, char *buf,
    size_t len)
{
	struct queen_kv_value *v = NULL;
	int64_t ver;
	int rc;

	buf[0] = '\0';
	rc = queen_kv_get(q, ns, key, &v);
	if (rc != 0)
		return rc;
	snprintf(buf, len, "%.*s", (int)v->len, (const char *)v->data);
	ver = v->version;
	free(v);
	return ver;
}

/* The payload of (queue, partition) at offset into buf; txid too. */
static inline int
msg_at(struct queen *q, const char *queue, const char *part, int64_t off,
    char *buf, size_t len, char *txid, size_t tlen)
{
	struct queen_batch *b = NULL;
	int rc;

	buf[0] = '\0';
	if (txid)
		txid[0] = '\0';
	rc = queen_msg_read(q, queue, part, off, 1, true, &b);
	if (rc != 0)
		return rc;
	if (!b || b->n == 0 || b->msgs[0].offset != off) {
		queen_batch_free(b);
		return -ENOENT;
	}
	snprintf(buf, len, "%.*s", (int)b->msgs[0].len,
	    (const char *)b->msgs[0].payload);
	if (txid)
		snprintf(txid, tlen, "%s", b->msgs[0].txid);
	queen_batch_free(b);
	return 0;
}

#endif
