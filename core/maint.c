/*
 * maint.c - housekeeping and reporting: retention, completed retention,
 * the txn-hash purge and its txns_start watermark, expired KV keys, due
 * timers; and the stats and dead-letter listings.  Work per call is
 * bounded; the caller runs it again while *more says so.  The walk over
 * the partitions visits at most MAINT_PARTS of them a call and goes on
 * where the last call stopped, so a mount with many partitions pays a
 * slice of the walk each tick, not all of it.  A store that can name the
 * partitions with work due (part_maint: PostgreSQL, one statement) is
 * asked for those instead, and only they are locked.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core.h"

#define LIMIT 5000
#define MAINT_PARTS 1000
#define STOP 1          /* the walk stops here for this call */

struct maint {
	struct queen *q;
	const struct queue_row *qr;
	struct queue_row qbuf; /* part_maint: the queue of the last one */
	int64_t now;
	int64_t changed;
	bool more;
	int visited;
	bool skipping;          /* queues before the one to resume in */
	char prev[QUEEN_NAME_MAX + 1];  /* the last partition done in it */
};

/* the next call starts after m->prev in the queue under way */
static int
stop_here(struct maint *m)
{
	snprintf(m->q->maint_queue, sizeof(m->q->maint_queue), "%s",
	    m->qr->name);
	snprintf(m->q->maint_after, sizeof(m->q->maint_after), "%s", m->prev);
	return STOP;
}

/* last offset in [lo, hi] whose hash row is older than t (lo-1 if none) */
static int64_t
txn_before(struct queen *q, const struct part_row *p, int64_t t)
{
	int64_t lo = p->txns_start, hi = p->tail, ans = p->txns_start - 1, at;

	while (lo <= hi) {
		int64_t mid = lo + (hi - lo) / 2;

		if (q->ops->txn_time(q->st, p->id, mid, &at) != 0 || at < t) {
			ans = mid;
			lo = mid + 1;
		} else {
			hi = mid - 1;
		}
	}
	return ans;
}

static int
refresh_one(void *arg, const struct cursor_row *row)
{
	struct queen *q = arg;
	struct cursor_row c = *row;
	int rc;

	if ((rc = cursor_refresh(q, &c)) != 0)
		return rc;
	if (c.next_at == row->next_at)
		return 0;
	return q->ops->cursor_put(q->st, &c);
}

static int
purge_msgs(struct maint *m, struct part_row *p, int64_t cut)
{
	int64_t deleted;
	int rc;

	if (cut < p->head)
		return 0;
	rc = m->q->ops->msg_purge(m->q->st, p->id, cut, LIMIT, &deleted);
	if (rc != 0)
		return rc;
	m->changed += deleted;
	if (deleted >= LIMIT) {
		m->more = true;
		p->head += deleted;
	} else {
		p->head = cut + 1;
	}
	return m->q->ops->cursor_list_part(m->q->st, p->id, refresh_one, m->q);
}

static int
maint_part(void *arg, const struct part_row *row)
{
	struct maint *m = arg;
	const struct qconf *cf = &m->qr->conf;
	struct queen *q = m->q;
	struct part_row p = *row;
	int64_t cut, keep, deleted, at;
	bool more = m->more;
	int rc;

	if (m->visited++ >= MAINT_PARTS)
		return stop_here(m);

	if (cf->retention > 0 && p.tail >= p.head) {
		cut = offset_before(q, &p, m->now - cf->retention * 1000);
		if ((rc = purge_msgs(m, &p, cut)) != 0)
			return rc;
	}
	if (cf->completed_retention > 0 && p.tail >= p.head) {
		int64_t minc;

		rc = q->ops->cursor_min_committed(q->st, p.id, &minc);
		if (rc == -ENOENT)
			minc = p.tail;
		else if (rc != 0)
			return rc;
		cut = offset_before(q, &p, m->now -
		    cf->completed_retention * 1000);
		if (minc < cut)
			cut = minc;
		if ((rc = purge_msgs(m, &p, cut)) != 0)
			return rc;
	}
	/* dedup looks back at most this far too (docs/engine.md) */
	keep = cf->hash_retention;
	if (p.tail >= p.txns_start && q->ops->txn_time(q->st, p.id,
	    p.txns_start, &at) == 0 && at < m->now - keep * 1000) {
		cut = txn_before(q, &p, m->now - keep * 1000);
		rc = q->ops->txn_purge(q->st, p.id, cut, LIMIT, &deleted);
		if (rc != 0)
			return rc;
		m->changed += deleted;
		if (deleted >= LIMIT) {
			m->more = true;
			p.txns_start += deleted;
		} else {
			p.txns_start = cut + 1;
		}
	}
	if ((p.head != row->head || p.txns_start != row->txns_start) &&
	    (rc = q->ops->part_update(q->st, &p)) != 0)
		return rc;
	/* more of this one is due: the next call starts with it */
	if (m->more && !more)
		return stop_here(m);
	snprintf(m->prev, sizeof(m->prev), "%s", row->name);
	return 0;
}

static int
maint_queue(void *arg, const struct queue_row *qr)
{
	struct maint *m = arg;
	struct queen *q = m->q;

	/* in the store's order of names, which need not be strcmp's */
	if (m->skipping && strcmp(qr->name, q->maint_queue) != 0)
		return 0;       /* walked in an earlier call */
	snprintf(m->prev, sizeof(m->prev), "%s", m->skipping ?
	    q->maint_after : "");
	m->skipping = false;
	m->qr = qr;
	return q->ops->part_list(q->st, qr->id, m->prev, maint_part, m);
}

/*
 * A partition the store says has work due: locked and read again, since
 * pushes through other handles move its tail meanwhile, then done as in
 * the walk.
 */
static int
maint_due(void *arg, const struct part_row *row)
{
	struct maint *m = arg;
	struct queen *q = m->q;
	struct part_row p;
	int rc;

	if (!m->qr || m->qr->id != row->queue_id) {
		m->qr = NULL;
		if ((rc = q->ops->queue_by_id(q->st, row->queue_id,
			 &m->qbuf)) != 0)
			return rc == -ENOENT ? 0 : rc;
		m->qr = &m->qbuf;
	}
	rc = q->ops->part_get(q->st, row->queue_id, row->name, &p);
	if (rc != 0 || p.id != row->id)
		return rc == -ENOENT || rc == 0 ? 0 : rc;
	return maint_part(m, &p);
}

/* Fire due timers: each push and its timer's removal commit together. */
static int
fire_timers(struct maint *m)
{
	struct queen *q = m->q;
	struct queen_timer_info *t;
	struct queen_push_item it;
	struct queen_push_result r;
	struct queue_row qr;
	int64_t qid;
	int n, rc;

	for (n = 0; n < LIMIT; n++) {
		rc = q->ops->timer_due(q->st, m->now, &qid, &t);
		if (rc == -ENOENT)
			return 0;
		if (rc != 0)
			return rc;
		rc = q->ops->queue_by_id(q->st, qid, &qr);
		if (rc == 0) {
			memset(&it, 0, sizeof(it));
			it.queue = qr.name;
			it.partition = t->partition;
			it.payload = t->payload;
			it.len = t->len;
			/* its schedule checked the size (timer.c), as a
			 * push's close() does: a limit lowered since does
			 * not drop it */
			it.size_checked = true;
			rc = push_items(q, &it, 1, false, &r, NULL);
			/* one the queue refuses all the same must not block
			 * every other timer */
			if (rc == -EFBIG || rc == -EINVAL)
				rc = 0;
		}
		if (rc == 0)
			rc = q->ops->timer_delete(q->st, qid, t->key);
		free(t);
		if (rc != 0)
			return rc;
		m->changed++;
	}
	m->more = true;
	return 0;
}

ssize_t
queen_maintain(struct queen *q, bool *more)
{
	struct maint m;
	int64_t deleted;
	int rc;

	memset(&m, 0, sizeof(m));
	m.q = q;
	m.now = queen_now(q);
	m.skipping = q->maint_queue[0] != '\0';
	if ((rc = tx_begin(q)) != 0)
		return rc;
	/* a store that can find the partitions with work due locks only
	 * those; a walk reads (and may lock) every one */
	if (q->ops->part_maint) {
		/* as the walk, MAINT_PARTS a call; the rest the next */
		rc = q->ops->part_maint(q->st, m.now, MAINT_PARTS, maint_due,
		    &m);
	} else {
		rc = q->ops->queue_list(q->st, maint_queue, &m);
	}
	if (rc == 0)            /* the walk is done: the next starts over */
		q->maint_queue[0] = q->maint_after[0] = '\0';
	else if (rc == STOP)
		rc = 0;
	if (rc == 0)
		rc = q->ops->kv_purge(q->st, m.now, LIMIT, &deleted);
	if (rc == 0) {
		m.changed += deleted;
		if (deleted >= LIMIT)
			m.more = true;
		rc = fire_timers(&m);
	}
	/*
	 * Last, and only in a call that leaves no more for another in the
	 * same transaction: the cursors it wakes are locked after every
	 * partition the maintenance locks (a partition's row, then its
	 * cursors, as a push takes them), never before.
	 */
	if (rc == 0 && !m.more && q->ops->cursor_repair) {
		int64_t woken = 0;

		rc = q->ops->cursor_repair(q->st, m.now, &woken);
		m.changed += woken;
	}
	rc = tx_end(q, rc);
	if (more)
		*more = rc == 0 && m.more;
	return rc < 0 ? rc : (ssize_t)m.changed;
}

/* ---- stats ---- */

struct statctx {
	struct queen *q;
	int64_t now;
	struct queen_stats *st;
};

static int
stat_part(void *arg, const struct part_row *p)
{
	struct statctx *s = arg;

	s->st->partitions++;
	if (p->tail >= p->head)
		s->st->messages += p->tail - p->head + 1;
	s->st->pushed += p->tail;
	s->st->duplicates += p->duplicates;
	return 0;
}

static int
stat_cursor(void *arg, const struct cursor_row *c)
{
	struct statctx *s = arg;
	struct part_row p;
	int64_t from;
	int rc;

	if ((rc = s->q->ops->part_by_id(s->q->st, c->partition_id, &p)) != 0)
		return rc;
	from = c->committed + 1 > p.head ? c->committed + 1 : p.head;
	if (p.tail >= from)
		s->st->depth += p.tail - from + 1;
	if (c->lease_id[0] && c->lease_expires_at > s->now) {
		s->st->leases++;
		s->st->leased_msgs += c->batch_end - c->committed;
	}
	if (c->next_at >= 0 && (s->st->oldest_waiting == 0 ||
	    c->next_at < s->st->oldest_waiting))
		s->st->oldest_waiting = c->next_at;
	return 0;
}

static int
count_group(void *arg, const struct group_row *g)
{
	struct statctx *s = arg;

	if (strcmp(g->name, QUEEN_QUEUE_MODE) != 0)
		s->st->groups++;
	return 0;
}

int
queen_stats_get(struct queen *q, const char *queue, const char *group,
    struct queen_stats *out)
{
	struct queue_row qr;
	struct group_row g;
	struct statctx s = { q, queen_now(q), out };
	int rc;

	memset(out, 0, sizeof(*out));
	if ((rc = queue_load(q, queue, &qr)) != 0)
		return rc;
	if ((rc = q->ops->part_list(q->st, qr.id, "", stat_part, &s)) != 0)
		return rc;
	if ((rc = q->ops->group_list(q->st, qr.id, count_group, &s)) != 0)
		return rc;
	rc = group_load(q, &qr, group, false, &g);
	if (rc == -ENOENT) {
		out->depth = out->messages;
		return 0;
	}
	if (rc != 0)
		return rc;
	if ((rc = q->ops->cursor_list_group(q->st, g.id, stat_cursor, &s)))
		return rc;
	if (out->oldest_waiting > 0 && s.now > out->oldest_waiting)
		out->oldest_age = s.now - out->oldest_waiting;
	return q->ops->dlq_count(q->st, qr.id, g.name, &out->dlq);
}

/* Counts the rows the store hands up (sys/stats: dlq_rows_read). */
struct dlq_count {
	struct queen *q;
	queen_dlq_cb cb;
	void *arg;
};

static int
dlq_counted(void *arg, const struct queen_dlq_entry *e)
{
	struct dlq_count *c = arg;

	c->q->dlq_rows++;
	return c->cb(c->arg, e);
}

static int
dlq_rows(struct queen *q, const char *queue, const char *group,
    const char *part, const char *txid, bool want_payload, queen_dlq_cb cb,
    void *arg)
{
	struct dlq_count c = { q, cb, arg };
	struct queue_row qr;
	int rc;

	if ((rc = queue_load(q, queue, &qr)) != 0)
		return rc;
	if (group && strcmp(group, QUEEN_QUEUE_MODE) && !queen_name_valid(group))
		return queen_err(q, -EINVAL, "invalid group name");
	return q->ops->dlq_list(q->st, qr.id, group ? group : QUEEN_QUEUE_MODE,
	    part, txid, want_payload, dlq_counted, &c);
}

int
queen_dlq_list(struct queen *q, const char *queue, const char *group,
    bool want_payload, queen_dlq_cb cb, void *arg)
{
	return dlq_rows(q, queue, group, NULL, NULL, want_payload, cb, arg);
}

int
queen_dlq_get(struct queen *q, const char *queue, const char *group,
    const char *partition, const char *txid, bool want_payload,
    queen_dlq_cb cb, void *arg)
{
	return dlq_rows(q, queue, group, partition, txid, want_payload, cb,
	    arg);
}

uint64_t
queen_dlq_rows_read(struct queen *q)
{
	return q->dlq_rows;
}
