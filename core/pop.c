/*
 * pop.c - leasing: choosing the partition (oldest waiting message first,
 * skipping those a live lease of the group holds), taking the span, auto
 * ack, lazy lease expiry (optionally charging the retry budget), renewal
 * and lease look-ups.  Pop never waits; an empty answer is -EAGAIN.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core.h"

struct popctx {
	struct queen *q;
	const struct queue_row *qr;
	const struct group_row *g;
	int64_t now;
	int64_t visible;   /* messages pushed at or before this are visible */
	int64_t batch;
	bool auto_ack;
	bool whole; /* the request's */
	struct queen_batch *out;
	int64_t last_at, last_pid;
	int nrows;
};

static bool
lease_live(const struct cursor_row *c, int64_t now)
{
	return c->lease_id[0] && c->lease_expires_at > now;
}

/* An expired lease is free; with expiry_charges_retry it costs a unit. */
static int
expire_lease(struct popctx *x, const struct part_row *p, struct cursor_row *c)
{
	struct queen *q = x->q;
	int64_t off, at;
	int rc;

	if (!c->lease_id[0])
		return 0;
	c->lease_id[0] = '\0';
	c->batch_end = 0;
	c->lease_expires_at = 0;
	if (!x->qr->conf.expiry_charges_retry)
		return 0;
	if (c->retry_count < x->qr->conf.retry_limit) {
		c->retry_count++;
		return 0;
	}
	rc = q->ops->msg_next(q->st, p->id, c->committed, &off, &at);
	if (rc == -ENOENT)
		return 0;
	if (rc != 0)
		return rc;
	if ((rc = dead_letter(q, x->qr, p, x->g, off, c->retry_count,
	    "lease expired with the retry budget spent")) != 0)
		return rc;
	c->committed = off;
	c->retry_count = 0;
	return cursor_refresh(q, c);
}

/* Lease (or auto-ack) the next span of p: 1 taken, 0 nothing, <0 error;
 * 1 and nothing taken when x->whole refuses it */
static int
take(struct popctx *x, const struct part_row *p, struct cursor_row *c)
{
	struct queen *q = x->q;
	struct queen_batch *b;
	int rc;

	if (lease_live(c, x->now))
		return 0;
	/* whole: an expired lease, or a window that a push not yet in the
	 * store could keep open, is not for this time */
	if (x->whole && (c->lease_id[0] || x->qr->conf.window_buffer > 0))
		return 1;
	if ((rc = expire_lease(x, p, c)) != 0)
		return rc;
	rc = batch_read(q, p, c->committed + 1, (size_t)x->batch, true,
	    x->visible, &b);
	if (rc != 0)
		return rc;
	if (x->whole && b->n > 0 && b->n < (size_t)x->batch) {
		free(b);
		return 1; /* what is not in the store could add to it */
	}
	if (b->n == 0) {
		free(b);
		if ((rc = cursor_refresh(q, c)) != 0)
			return rc;
		rc = q->ops->cursor_put(q->st, c);
		return rc < 0 ? rc : 0;
	}
	snprintf(b->queue, sizeof(b->queue), "%s", x->qr->name);
	snprintf(b->group, sizeof(b->group), "%s", x->g->name);
	if (x->auto_ack) {
		c->committed = b->msgs[b->n - 1].offset;
		c->retry_count = 0;
		if ((rc = cursor_refresh(q, c)) != 0)
			goto out_free;
	} else {
		uuid_v7(q, c->lease_id);
		c->batch_end = b->msgs[b->n - 1].offset;
		c->lease_expires_at = clamp_add(x->now,
		    x->qr->conf.lease_time * 1000);
		memcpy(b->lease_id, c->lease_id, sizeof(b->lease_id));
		b->lease_expires_at = c->lease_expires_at;
	}
	b->retry_count = c->retry_count;
	if ((rc = q->ops->cursor_put(q->st, c)) != 0)
		goto out_free;
	fresh_need(q, p->id, b->msgs[b->n - 1].offset);
	x->out = b;
	return 1;

out_free:
	free(b);
	return rc;
}

static int
try_row(void *arg, const struct cursor_row *row)
{
	struct popctx *x = arg;
	struct cursor_row c = *row;
	struct part_row p;
	int rc;

	x->last_at = row->next_at;
	x->last_pid = row->partition_id;
	x->nrows++;
	if (lease_live(&c, x->now))
		return 0;
	if ((rc = x->q->ops->part_by_id(x->q->st, c.partition_id, &p)) != 0)
		return rc;
	if (x->qr->conf.window_buffer > 0 && p.last_push_at >
	    x->now - x->qr->conf.window_buffer * 1000)
		return 0;
	return take(x, &p, &c);
}

int
queen_pop(struct queen *q, const struct queen_pop_req *req,
    struct queen_batch **out)
{
	struct queue_row qr;
	struct group_row g;
	struct part_row p;
	struct cursor_row c;
	struct popctx x;
	const char *group_name;
	int rc;

	*out = NULL;
	memset(&x, 0, sizeof(x));
	if (!req || !req->queue)
		return queen_err(q, -EINVAL, "pop: no queue");
	group_name = req->group ? req->group : QUEEN_QUEUE_MODE;
	if ((rc = tx_begin(q)) != 0)
		return rc;
	x.now = queen_now(q);
	if (q->ops->pop_ahead && queen_name_valid(req->queue) &&
	    (rc = q->ops->pop_ahead(q->st, req->queue, group_name, x.now,
		 !req->partition)) != 0)
		goto out;
	if ((rc = queue_load(q, req->queue, &qr)) != 0)
		goto out;
	if ((rc = group_load(q, &qr, req->group, true, &g)) != 0)
		goto out;
	x.q = q;
	x.qr = &qr;
	x.g = &g;
	x.visible = x.now - qr.conf.delay * 1000;
	x.batch = req->batch > 0 ? req->batch : group_eff(&qr, &g, 0);
	if (x.batch > QUEEN_BATCH_MAX)
		x.batch = QUEEN_BATCH_MAX;
	x.auto_ack = req->auto_ack >= 0 ? req->auto_ack > 0 :
	    group_eff(&qr, &g, 2) > 0;
	x.whole = req->whole;
	if (req->partition) {
		if ((rc = part_load(q, &qr, req->partition, false, &p)) != 0)
			goto out;
		if ((rc = cursor_load(q, &p, &g, &c)) != 0)
			goto out;
		if (qr.conf.window_buffer > 0 && p.last_push_at >
		    x.now - qr.conf.window_buffer * 1000)
			rc = 0;
		else
			rc = take(&x, &p, &c);
	} else {
		x.last_at = -1;
		x.last_pid = 0;
		do {
			x.nrows = 0;
			rc = q->ops->cursor_ready(q->st, g.id, x.visible,
			    x.last_at, x.last_pid, x.now, try_row, &x);
		} while (rc == 0 && x.nrows == CURSOR_READY_PAGE);
	}
	if (rc < 0)
		goto out;
	if (!x.out) {
		rc = -EAGAIN;
		queen_err(q, rc, "nothing to pop in '%s'", qr.name);
		/* a refreshed next_at is still worth keeping */
		return tx_end(q, 0) == 0 ? -EAGAIN : -EIO;
	}
	rc = 0;
out:
	rc = tx_end(q, rc);
	if (rc == 0)
		*out = x.out;
	else
		free(x.out);
	return rc;
}

/* ---- when could a pop next succeed ---- */

struct due {
	struct queen *q;
	const struct queue_row *qr;
	int64_t now;
	int64_t best;
};

static int
due_row(void *arg, const struct cursor_row *c)
{
	struct due *d = arg;
	int64_t t;

	if (lease_live(c, d->now)) {
		t = c->lease_expires_at;
	} else if (c->next_at < 0) {
		return 0;    /* caught up: only a push can help */
	} else {
		t = c->next_at + d->qr->conf.delay * 1000;
		if (d->qr->conf.window_buffer > 0) {
			struct part_row p;

			if (d->q->ops->part_by_id(d->q->st, c->partition_id,
			    &p) == 0) {
				int64_t w = p.last_push_at +
				    d->qr->conf.window_buffer * 1000;

				if (w > t)
					t = w;
			}
		}
	}
	if (t < d->best)
		d->best = t;
	return 0;
}

int64_t
queen_next_due(struct queen *q, const char *queue, const char *group)
{
	struct queue_row qr;
	struct group_row g;
	struct due d;
	int64_t msgs, groups, timers;
	int rc;

	if (queue_load(q, queue, &qr) != 0)
		return INT64_MAX;
	d.q = q;
	d.qr = &qr;
	d.now = queen_now(q);
	d.best = INT64_MAX;
	rc = group_load(q, &qr, group, false, &g);
	if (rc == -ENOENT) {
		/* the first pop creates the group; anything retained may do */
		if (q->ops->queue_usage(q->st, qr.id, &msgs, &groups,
		    &timers) == 0 && msgs > 0)
			return d.now;
		return INT64_MAX;
	}
	if (rc != 0)
		return INT64_MAX;
	q->ops->cursor_list_group(q->st, g.id, due_row, &d);
	return d.best;
}

/* ---- leases ---- */

static int
lease_find(struct queen *q, const char *lease_id, struct cursor_row *c,
    struct queen_lease_info *out)
{
	struct part_row p;
	struct queue_row qr;
	struct group_row g;
	int rc;

	if (!lease_id || !lease_id[0])
		return queen_err(q, -EINVAL, "empty lease id");
	rc = q->ops->cursor_by_lease(q->st, lease_id, c);
	if (rc == -ENOENT || (rc == 0 && !lease_live(c, queen_now(q))))
		return queen_err(q, -ESTALE, QUEEN_E_LEASE);
	if (rc != 0)
		return rc;
	if (!out)
		return 0;
	if ((rc = q->ops->part_by_id(q->st, c->partition_id, &p)) != 0 ||
	    (rc = q->ops->queue_by_id(q->st, p.queue_id, &qr)) != 0 ||
	    (rc = q->ops->group_by_id(q->st, c->group_id, &g)) != 0)
		return rc;
	memset(out, 0, sizeof(*out));
	memcpy(out->lease_id, c->lease_id, sizeof(out->lease_id));
	memcpy(out->queue, qr.name, sizeof(out->queue));
	memcpy(out->partition, p.name, sizeof(out->partition));
	memcpy(out->partition_uuid, p.uuid, sizeof(out->partition_uuid));
	memcpy(out->group, g.name, sizeof(out->group));
	out->first = c->committed + 1;
	out->last = c->batch_end;
	out->committed = c->committed;
	out->expires_at = c->lease_expires_at;
	out->retry_count = c->retry_count;
	return 0;
}

/* The store's lease_ahead hint for h under lease_id, if it has one. */
static int
lease_hint(struct queen *q, const char *lease_id, const struct hash128 *h)
{
	int rc;

	if (!q->ops->lease_ahead || !lease_id || !lease_id[0] ||
	    (rc = q->ops->lease_ahead(q->st, lease_id, h)) == 0)
		return 0;
	return queen_err(q, rc, "storage: %s", q->ops->errmsg(q->st));
}

int
queen_lease_get_for(struct queen *q, const char *lease_id, const char *txid,
    struct queen_lease_info *out)
{
	struct cursor_row c;
	struct hash128 h;
	int rc;

	if (txid && txid[0])
		hash_txid(txid, &h);
	if ((rc = lease_hint(q, lease_id, txid && txid[0] ? &h : NULL)) != 0)
		return rc;
	return lease_find(q, lease_id, &c, out);
}

/*
 * The partition, queue and group of a live lease, for an ack of the
 * message of txid (NULL: none) under it: the store may read them, the
 * cursor (locked, in a call that writes) and that message in one go.
 */
int
lease_target(struct queen *q, const char *lease_id, const char *txid,
    struct queue_row *qr, struct part_row *p, struct group_row *g)
{
	struct cursor_row c;
	struct hash128 h;
	int rc;

	if (txid && txid[0])
		hash_txid(txid, &h);
	if (txid && txid[0] && (rc = lease_hint(q, lease_id, &h)) != 0)
		return rc;
	if (!lease_id || !lease_id[0])
		return queen_err(q, -EINVAL, "empty lease id");
	rc = q->ops->cursor_by_lease(q->st, lease_id, &c);
	if (rc == -ENOENT || (rc == 0 && !lease_live(&c, queen_now(q))))
		return queen_err(q, -ESTALE, QUEEN_E_LEASE);
	if (rc != 0 ||
	    (rc = q->ops->part_by_id(q->st, c.partition_id, p)) != 0 ||
	    (rc = q->ops->queue_by_id(q->st, p->queue_id, qr)) != 0)
		return rc;
	return q->ops->group_by_id(q->st, c.group_id, g);
}

int
queen_lease_get(struct queen *q, const char *lease_id,
    struct queen_lease_info *out)
{
	return queen_lease_get_for(q, lease_id, NULL, out);
}

struct llist {
	struct queen *q;
	int64_t now;
	queen_lease_cb cb;
	void *arg;
};

static int
llist_one(void *arg, const struct cursor_row *c)
{
	struct llist *l = arg;
	struct queen_lease_info li;
	struct cursor_row cc;
	int rc;

	if (!lease_live(c, l->now))
		return 0;
	rc = lease_find(l->q, c->lease_id, &cc, &li);
	if (rc == -ESTALE)
		return 0;
	return rc ? rc : l->cb(l->arg, &li);
}

int
queen_lease_list(struct queen *q, const char *queue, const char *group,
    queen_lease_cb cb, void *arg)
{
	struct queue_row qr;
	struct group_row g;
	struct llist l = { q, queen_now(q), cb, arg };
	int rc;

	if ((rc = queue_load(q, queue, &qr)) != 0)
		return rc;
	rc = group_load(q, &qr, group, false, &g);
	if (rc == -ENOENT)
		return 0;
	if (rc != 0)
		return rc;
	return q->ops->cursor_list_group(q->st, g.id, llist_one, &l);
}

/* Read count messages from offset from of the lease's partition p, with
 * the lease's facts. */
static int
lease_batch(struct queen *q, const struct part_row *p,
    const struct queen_lease_info *li, int64_t from, size_t count,
    bool want_payload, struct queen_batch **out)
{
	int rc;

	*out = NULL;
	if ((rc = batch_read(q, p, from, count, want_payload, INT64_MAX,
	    out)) != 0)
		return rc;
	if (!*out) {
		*out = calloc(1, sizeof(**out));
		if (!*out)
			return -ENOMEM;
	}
	memcpy((*out)->queue, li->queue, sizeof(li->queue));
	memcpy((*out)->partition, li->partition, sizeof(li->partition));
	memcpy((*out)->partition_uuid, li->partition_uuid,
	    sizeof(li->partition_uuid));
	memcpy((*out)->group, li->group, sizeof(li->group));
	memcpy((*out)->lease_id, li->lease_id, sizeof(li->lease_id));
	(*out)->lease_expires_at = li->expires_at;
	(*out)->retry_count = li->retry_count;
	return 0;
}

int
queen_lease_read(struct queen *q, const char *lease_id, bool want_payload,
    struct queen_batch **out)
{
	struct queen_lease_info li;
	struct cursor_row c;
	struct part_row p;
	int rc;

	*out = NULL;
	if ((rc = lease_find(q, lease_id, &c, &li)) != 0)
		return rc;
	if ((rc = q->ops->part_by_id(q->st, c.partition_id, &p)) != 0)
		return rc;
	return lease_batch(q, &p, &li, c.committed + 1,
	    (size_t)(c.batch_end - c.committed), want_payload, out);
}

/*
 * One message of the span, found as an ack finds it (its hash row,
 * lowest offset first), so that a span of 1000 is not read to show one;
 * the ids themselves are read only where the hash rows are purged.
 */
/* txid under lease_id at an offset in [committed + 1, batch_end], or with
 * from >= 1 in [from, committed]. */
static int
lease_msg_in(struct queen *q, const char *lease_id, const char *txid,
    int64_t from, bool want_payload, struct queen_batch **out)
{
	struct queen_lease_info li;
	struct cursor_row c;
	struct part_row p;
	struct hash128 h;
	int64_t lo, hi, off = 0;
	int rc;

	*out = NULL;
	if (!txid || !txid[0])
		return queen_err(q, -EINVAL, "empty transactionId");
	hash_txid(txid, &h);
	if (from < 1 && (rc = lease_hint(q, lease_id, &h)) != 0)
		return rc;
	if ((rc = lease_find(q, lease_id, &c, &li)) != 0)
		return rc;
	if ((rc = q->ops->part_by_id(q->st, c.partition_id, &p)) != 0)
		return rc;
	lo = from >= 1 ? from : c.committed + 1;
	hi = from >= 1 ? c.committed : c.batch_end;
	rc = -ENOENT;
	if (lo < p.txns_start && lo <= hi)
		rc = txid_scan(q, p.id, lo, p.txns_start - 1 < hi ?
		    p.txns_start - 1 : hi, txid, false, &off);
	if (rc == -ENOENT && lo <= hi) {
		rc = q->ops->txn_find(q->st, p.id, &h,
		    lo > p.txns_start ? lo : p.txns_start, hi, false,
		    &off, NULL);
	}
	if (rc == 0)
		rc = lease_batch(q, &p, &li, off, 1, want_payload, out);
	/* the 16-byte hash named it, as an ack's does; gone meanwhile only
	 * if retention took it */
	if (rc == 0 && (*out)->n != 1) {
		queen_batch_free(*out);
		*out = NULL;
		rc = -ENOENT;
	}
	if (rc == -ENOENT)
		return queen_err(q, rc, "no message '%.64s' under lease %s",
		    txid, lease_id);
	return rc;
}

int
queen_lease_read_msg(struct queen *q, const char *lease_id,
    const char *txid, bool want_payload, struct queen_batch **out)
{
	return lease_msg_in(q, lease_id, txid, 0, want_payload, out);
}

int
queen_lease_read_done(struct queen *q, const char *lease_id,
    const char *txid, int64_t from, bool want_payload,
    struct queen_batch **out)
{
	*out = NULL;
	if (from < 1)
		return queen_err(q, -EINVAL, "no first offset for lease %s",
		    lease_id ? lease_id : "");
	return lease_msg_in(q, lease_id, txid, from, want_payload, out);
}

int
queen_lease_renew(struct queen *q, const char *lease_id, int64_t seconds,
    int64_t *expires_at)
{
	struct cursor_row c;
	struct part_row p;
	struct queue_row qr;
	int rc;

	if (seconds < 0 || seconds > QUEEN_SECONDS_MAX)
		return queen_err(q, -EINVAL, "renew: %" PRId64 " seconds is "
		    "outside 0..%lld (100 years)", seconds, QUEEN_SECONDS_MAX);
	lease_moves();
	if ((rc = tx_begin(q)) != 0)
		return rc;
	if ((rc = lease_find(q, lease_id, &c, NULL)) != 0)
		goto out;
	if ((rc = q->ops->part_by_id(q->st, c.partition_id, &p)) != 0 ||
	    (rc = q->ops->queue_by_id(q->st, p.queue_id, &qr)) != 0)
		goto out;
	c.lease_expires_at = clamp_add(queen_now(q),
	    (seconds ? seconds : qr.conf.lease_time) * 1000);
	rc = q->ops->cursor_put(q->st, &c);
	if (rc == 0 && expires_at)
		*expires_at = c.lease_expires_at;
out:
	return tx_end(q, rc);
}
