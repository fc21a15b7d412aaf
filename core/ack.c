/*
 * ack.c - acknowledgement as an offset commit (docs/design.md#offset-commit):
 * grouping items by
 * (partition, group, lease), the lease check, resolving each transactionId
 * by its hash inside the ack window, the two honesty guarantees, the retry
 * budget and the dead-letter hand-off.  One cursor write per group.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core.h"

enum status { S_COMPLETED, S_RETRY, S_FAILED, S_DLQ };

/* At one offset dlq beats failed beats retry: the enum's order. */
static enum status
normalise(const char *s)
{
	if (!s || !strcmp(s, "completed") || !strcmp(s, "success") ||
	    !strcmp(s, "acked") || !strcmp(s, "ok"))
		return S_COMPLETED;
	if (!strcmp(s, "retry"))
		return S_RETRY;
	if (!strcmp(s, "dlq"))
		return S_DLQ;
	return S_FAILED;
}

static void
set_err(struct queen_ack_result *r, int err, const char *text)
{
	r->success = false;
	r->err = err;
	snprintf(r->error, sizeof(r->error), "%s", text);
}

int
dead_letter(struct queen *q, const struct queue_row *qr,
    const struct part_row *p, const struct group_row *g, int64_t offset,
    int64_t retry_count, const char *error)
{
	struct queen_batch *b;
	struct dlq_row d;
	int rc;

	if (!qr->conf.dlq)
		return 0;
	rc = batch_read(q, p, offset, 1, true, INT64_MAX, &b);
	if (rc != 0)
		return rc;
	if (b->n == 0 || b->msgs[0].offset != offset) {
		/* purged by retention meanwhile: nothing left to keep */
		free(b);
		return 0;
	}
	memset(&d, 0, sizeof(d));
	d.queue_id = qr->id;
	d.partition_id = p->id;
	d.group = g->name;
	d.offset = offset;
	d.txid = b->msgs[0].txid;
	d.payload = b->msgs[0].payload;
	d.len = b->msgs[0].len;
	d.created_at = b->msgs[0].created_at;
	d.failed_at = queen_now(q);
	d.retry_count = retry_count;
	d.error = error && error[0] ? error : NULL;
	rc = q->ops->dlq_insert(q->st, &d);
	free(b);
	return rc;
}

/* One (partition, group, lease) set of items. */
struct unit {
	struct queue_row qr;
	struct part_row p;
	struct group_row g;
	const char *lease;
	size_t *idx;      /* indices into items */
	size_t n;
};

struct resolved {
	int64_t off;
	enum status st;
	bool ok;          /* resolved inside the window */
};

/*
 * An item's partition and group by their names.  A group that does not
 * exist yet is made with a cursor in each of the queue's partitions,
 * whose rows that locks in the order of their names, as a push of many
 * takes them: so it is made before the item's own partition is locked
 * (after that one, the two orders crossed).  The partition is looked up
 * unlocked first, so that an ack naming none makes no group.
 */
static int
names_target(struct queen *q, const struct queen_ack_item *it,
    const struct queue_row *qr, struct part_row *p, struct group_row *g)
{
	int rc = group_load(q, qr, it->group, false, g);

	if (rc == -ENOENT) {
		if (q->ops->lock_defer)
			q->ops->lock_defer(q->st, true);
		rc = part_load(q, qr, it->partition, false, p);
		if (q->ops->lock_defer)
			q->ops->lock_defer(q->st, false);
		if (rc == 0)
			rc = group_load(q, qr, it->group, true, g);
	}
	if (rc != 0)
		return rc;
	return part_load(q, qr, it->partition, false, p);
}

static const char *
group_name(const struct queen_ack_item *it)
{
	return it->group ? it->group : QUEEN_QUEUE_MODE;
}

/* an item named by partitionId: its partition and queue */
static int
uuid_target(struct queen *q, const struct queen_ack_item *it,
    struct queue_row *qr, struct part_row *p)
{
	int rc;

	if (q->ops->ack_ahead &&
	    (rc = q->ops->ack_ahead(q->st, it->partition_uuid, group_name(it))))
		return rc;
	rc = q->ops->part_by_uuid(q->st, it->partition_uuid, p);
	if (rc == -ENOENT)
		return queen_err(q, -ENOENT, "no partition with id '%.40s'",
		    it->partition_uuid);
	if (rc != 0)
		return rc;
	return q->ops->queue_by_id(q->st, p->queue_id, qr);
}

static int
resolve_target(struct queen *q, const struct queen_ack_item *it,
    struct queue_row *qr, struct part_row *p, struct group_row *g)
{
	int rc;

	if (it->partition_uuid && it->partition_uuid[0]) {
		if ((rc = uuid_target(q, it, qr, p)) != 0)
			return rc;
	} else if (it->queue) {
		if ((rc = queue_load(q, it->queue, qr)) != 0)
			return rc;
		return names_target(q, it, qr, p, g);
	} else if (it->lease_id && it->lease_id[0]) {
		/* the lease names its partition and its group */
		if ((rc = lease_target(q, it->lease_id, it->txid, qr, p, g)) !=
		    0)
			return rc;
		if (strcmp(g->name, group_name(it)) != 0)
			return queen_err(q, -ESTALE, QUEEN_E_LEASE);
		return 0;
	} else {
		return queen_err(q, -EINVAL, "partitionId is required");
	}
	return group_load(q, qr, it->group, true, g);
}

/* The hashes of a unit's items, looked up in one go where the store can. */
static int
find_many(struct queen *q, const struct queen_ack_item *items,
    const struct unit *u, int64_t lo, int64_t hi)
{
	struct hash128 *h = calloc(u->n, sizeof(*h));
	size_t i, k = 0;
	int rc;

	if (!h)
		return -ENOMEM;
	for (i = 0; i < u->n; i++) {
		const struct queen_ack_item *it = &items[u->idx[i]];

		if (it->txid && it->txid[0])
			hash_txid(it->txid, &h[k++]);
	}
	rc = k > 1 ? q->ops->txn_find_many(q->st, u->p.id, h, k, lo, hi) : 0;
	free(h);
	return rc;
}

/*
 * Judge one unit and write its cursor once.  fence: a transaction wants
 * any refusal to fail the whole call (returns -ESTALE / -ENOENT ...).
 */
static int
ack_unit(struct queen *q, const struct queen_ack_item *items,
    struct unit *u, struct queen_ack_result *res, bool fence)
{
	struct cursor_row c;
	struct resolved *rv;
	int64_t now = queen_now(q), lo, hi, newc, sig = -1, best = -1;
	enum status sst = S_COMPLETED;
	bool live, release = false, dl = false;
	size_t i;
	int rc;

	/* a lease's cursor is not made: one gone since its lease was
	 * looked up (unlocked, ack_items) went with its lease */
	rc = u->lease ? q->ops->cursor_get(q->st, u->p.id, u->g.id, &c) :
			cursor_load(q, &u->p, &u->g, &c);
	if (rc == -ENOENT && u->lease) {
		memset(&c, 0, sizeof(c));
		rc = 0;
	}
	if (rc != 0)
		return rc;
	live = c.lease_id[0] && c.lease_expires_at > now;
	if (u->lease && (!live || strcmp(c.lease_id, u->lease) != 0)) {
		for (i = 0; i < u->n; i++)
			set_err(&res[u->idx[i]], -ESTALE, QUEEN_E_LEASE);
		return fence ? queen_err(q, -ESTALE, QUEEN_E_LEASE) : 0;
	}
	rv = calloc(u->n, sizeof(*rv));
	if (!rv)
		return -ENOMEM;
	lo = c.committed + 1 > u->p.txns_start ? c.committed + 1 :
	    u->p.txns_start;
	hi = live ? c.batch_end : u->p.tail;
	if (q->ops->txn_find_many && u->n > 1 &&
	    (rc = find_many(q, items, u, lo, hi)) != 0)
		goto out;
	for (i = 0; i < u->n; i++) {
		const struct queen_ack_item *it = &items[u->idx[i]];
		struct queen_ack_result *r = &res[u->idx[i]];
		struct hash128 h;
		int64_t off;

		rv[i].st = normalise(it->status);
		if (!it->txid || !it->txid[0]) {
			set_err(r, -EINVAL, "transactionId is required");
			continue;
		}
		hash_txid(it->txid, &h);
		rc = q->ops->txn_find(q->st, u->p.id, &h, lo, hi, false, &off,
		    NULL);
		if (rc == 0) {
			rv[i].off = off;
			rv[i].ok = true;
			continue;
		}
		if (rc != -ENOENT)
			goto out;
		/* at or below the cursor? */
		rc = q->ops->txn_find(q->st, u->p.id, &h, u->p.txns_start,
		    c.committed, true, &off, NULL);
		if (rc != 0 && rc != -ENOENT)
			goto out;
		if (rc == 0 && rv[i].st == S_COMPLETED) {
			r->success = true;
			r->noop = true;
		} else if (rc == 0) {
			set_err(r, -EALREADY, QUEEN_E_ALREADY);
		} else {
			set_err(r, -ENOENT, QUEEN_E_UNRESOLVABLE);
		}
	}
	rc = 0;
	if (fence) {
		for (i = 0; i < u->n; i++) {
			struct queen_ack_result *r = &res[u->idx[i]];

			if (!rv[i].ok && !r->success) {
				rc = queen_err(q, r->err, "%s", r->error);
				goto out;
			}
		}
	}
	/* the lowest explicit signal; at one offset the stronger wins */
	for (i = 0; i < u->n; i++) {
		if (!rv[i].ok || rv[i].st == S_COMPLETED)
			continue;
		if (sig < 0 || rv[i].off < sig ||
		    (rv[i].off == sig && rv[i].st > sst)) {
			sig = rv[i].off;
			sst = rv[i].st;
		}
	}
	/* the highest completed below it (or anywhere, with no signal) */
	for (i = 0; i < u->n; i++) {
		if (rv[i].ok && rv[i].st == S_COMPLETED &&
		    (sig < 0 || rv[i].off < sig) && rv[i].off > best)
			best = rv[i].off;
	}
	newc = best > c.committed ? best : c.committed;
	if (newc > c.committed)
		c.retry_count = 0;
	if (sig >= 0) {
		const char *err = NULL;

		for (i = 0; i < u->n; i++) {
			if (rv[i].ok && rv[i].off == sig && rv[i].st == sst)
				err = items[u->idx[i]].error;
		}
		release = true;
		if (sst == S_FAILED && c.retry_count < u->qr.conf.retry_limit) {
			c.retry_count++;
		} else if (sst == S_FAILED || sst == S_DLQ) {
			rc = dead_letter(q, &u->qr, &u->p, &u->g, sig,
			    c.retry_count, err);
			if (rc != 0)
				goto out;
			dl = u->qr.conf.dlq != 0;
			newc = sig;
			c.retry_count = 0;
		}
	} else if (live && newc >= c.batch_end) {
		release = true;
	}
	c.committed = newc;
	if (release) {
		c.lease_id[0] = '\0';
		c.batch_end = 0;
		c.lease_expires_at = 0;
	}
	if ((rc = cursor_refresh(q, &c)) != 0)
		goto out;
	if ((rc = q->ops->cursor_put(q->st, &c)) != 0)
		goto out;
	for (i = 0; i < u->n; i++) {
		struct queen_ack_result *r = &res[u->idx[i]];

		if (!rv[i].ok)
			continue;
		r->success = true;
		r->lease_released = release && live;
		r->dlq = dl && rv[i].off == sig && rv[i].st == sst;
	}
	/* other mounts' readers parked on this queue may take the
	 * partition now, or the redelivery: only a released lease with
	 * something behind it lets one succeed */
	if (release && c.next_at >= 0)
		rc = announce(q, u->qr.id, u->p.id);
out:
	free(rv);
	return rc;
}

static bool
same_unit(const struct unit *u, const struct part_row *p,
    const struct group_row *g, const char *lease)
{
	if (u->p.id != p->id || u->g.id != g->id)
		return false;
	if (!u->lease || !lease)
		return u->lease == lease;
	return strcmp(u->lease, lease) == 0;
}

/*
 * The order in which an ack's rows are locked.  A store that locks rows
 * (PostgreSQL) locks a partition's as an item names it (resolve_target)
 * and a cursor's as a lease leads to it, then each unit's cursor: two
 * calls that took the same rows in different orders could each hold one
 * the other waits for, and the server fails one of them (a deadlock).  So
 * the items are resolved by what they name, the way resolve_target reads
 * it: by partition id, then by queue and partition names (as a push
 * takes its partitions), then by lease; and the units run in the order of
 * their cursors, each unit after the others of its cursor that came first
 * in the request.  The answers stay in the request's order.
 */
struct by_name {
	const struct queen_ack_item *it;
	size_t i;
};

static int
target_kind(const struct queen_ack_item *it)
{
	if (it->partition_uuid && it->partition_uuid[0])
		return 0;
	if (it->queue)
		return 1;
	return it->lease_id && it->lease_id[0] ? 2 : 3;
}

static int
cmp_str(const char *a, const char *b)
{
	return strcmp(a ? a : "", b ? b : "");
}

static const char *
part_name(const struct queen_ack_item *it)
{
	return it->partition ? it->partition : QUEEN_DEFAULT_PARTITION;
}

static int
by_target(const void *a, const void *b)
{
	const struct by_name *x = a, *y = b;
	int kx = target_kind(x->it), ky = target_kind(y->it), c = 0;

	if (kx != ky)
		return kx < ky ? -1 : 1;
	if (kx == 0)
		c = cmp_str(x->it->partition_uuid, y->it->partition_uuid);
	else if (kx == 1 && (c = cmp_str(x->it->queue, y->it->queue)) == 0)
		c = strcmp(part_name(x->it), part_name(y->it));
	else if (kx == 2)
		c = cmp_str(x->it->lease_id, y->it->lease_id);
	if (c)
		return c;
	return x->i < y->i ? -1 : x->i > y->i;
}

static int
by_cursor(const void *a, const void *b)
{
	const struct unit *x = a, *y = b;

	if (x->p.id != y->p.id)
		return x->p.id < y->p.id ? -1 : 1;
	if (x->g.id != y->g.id)
		return x->g.id < y->g.id ? -1 : 1;
	/* the first of its items in the request (an empty unit last) */
	if (!x->n || !y->n)
		return !x->n - !y->n;
	return x->idx[0] < y->idx[0] ? -1 : x->idx[0] > y->idx[0];
}

/* a lease's cursor, looked up unlocked to be locked in cursor order */
struct held {
	int64_t pid, gid;
	size_t i;
};

static int
by_held(const void *a, const void *b)
{
	const struct held *x = a, *y = b;

	if (x->pid != y->pid)
		return x->pid < y->pid ? -1 : 1;
	if (x->gid != y->gid)
		return x->gid < y->gid ? -1 : 1;
	return x->i < y->i ? -1 : x->i > y->i;
}

/*
 * The cursors of the n leases, each looked up without a lock (where the
 * store can) and sorted into cursor order in h.  *bad: the first lease,
 * in the order given, that is gone or expired (then h is not sorted).
 */
static int
leases_find(struct queen *q, const char *const *leases, size_t n,
    struct held *h, size_t *bad)
{
	int64_t now = queen_now(q);
	struct cursor_row c;
	size_t i;
	int rc = 0;

	if (q->ops->lock_defer)
		q->ops->lock_defer(q->st, true);
	for (i = 0; i < n; i++) {
		rc = q->ops->cursor_by_lease(q->st, leases[i], &c);
		if (rc == -ENOENT || (rc == 0 && c.lease_expires_at <= now)) {
			*bad = i;
			rc = 0;
			break;
		}
		if (rc != 0)
			break;
		h[i] = (struct held){ c.partition_id, c.group_id, i };
	}
	if (q->ops->lock_defer)
		q->ops->lock_defer(q->st, false);
	if (rc == 0 && *bad == n)
		qsort(h, n, sizeof(*h), by_held);
	return rc;
}

/* h's cursor read locked, its lease still there and live, or *bad */
static int
lease_lock(struct queen *q, const struct held *h, const char *const *leases,
    size_t *bad)
{
	struct cursor_row c;
	int rc = q->ops->cursor_get(q->st, h->pid, h->gid, &c);

	if (rc == -ENOENT ||
	    (rc == 0 &&
		(strcmp(c.lease_id, leases[h->i]) != 0 ||
		    c.lease_expires_at <= queen_now(q)))) {
		if (h->i < *bad)
			*bad = h->i;
		rc = 0;
	}
	return rc;
}

/*
 * The n leases each held and live, and their cursors read locked until
 * the call ends (a transaction's required leases, with no acks).  One is
 * read so at once; several are looked up first and their cursors then
 * locked in cursor order, as ack_items locks those of its units, never in
 * the order given, so that two calls never wait for each other in a ring.
 * *bad: the first lease refused in the order given, or n.
 */
static int
leases_hold(struct queen *q, const char *const *leases, size_t n, size_t *bad)
{
	struct cursor_row c;
	struct held *h;
	size_t i;
	int rc;

	*bad = n;
	if (n <= 1 || !q->ops->lock_defer) {
		for (i = 0; i < n; i++) {
			rc = q->ops->cursor_by_lease(q->st, leases[i], &c);
			if (rc == -ENOENT ||
			    (rc == 0 && c.lease_expires_at <= queen_now(q))) {
				*bad = i;
				return 0;
			}
			if (rc != 0)
				return rc;
		}
		return 0;
	}
	if (!(h = calloc(n, sizeof(*h))))
		return -ENOMEM;
	rc = leases_find(q, leases, n, h, bad);
	for (i = 0; rc == 0 && *bad == n && i < n; i++)
		rc = lease_lock(q, &h[i], leases, bad);
	free(h);
	return rc;
}

/* whether every item names the one lease and nothing else */
static bool
one_lease(const struct by_name *ord, size_t n, const char *lease)
{
	return n > 0 && target_kind(ord[0].it) == 2 &&
	    target_kind(ord[n - 1].it) == 2 &&
	    strcmp(ord[0].it->lease_id, ord[n - 1].it->lease_id) == 0 &&
	    (!lease || strcmp(ord[0].it->lease_id, lease) == 0);
}

/*
 * An item's rows found before anything of the call is locked, where the
 * store locks rows (groups_first); ok: found, and its group made.
 */
struct pre {
	struct queue_row qr;
	struct part_row p;
	struct group_row g;
	bool ok, make;
};

/* items whose groups are to be made: by queue name, then group name */
static int
by_group(const void *a, const void *b)
{
	const struct pre *x = *(const struct pre *const *)a;
	const struct pre *y = *(const struct pre *const *)b;
	int c = strcmp(x->qr.name, y->qr.name);

	return c ? c : strcmp(x->g.name, y->g.name);
}

/* a and b name the same partition (by id or by names) and group */
static bool
same_target(const struct queen_ack_item *a, const struct queen_ack_item *b)
{
	int k = target_kind(a);

	if (k != target_kind(b) || k > 1 ||
	    strcmp(group_name(a), group_name(b)) != 0)
		return false;
	if (k == 0)
		return strcmp(a->partition_uuid, b->partition_uuid) == 0;
	return strcmp(a->queue, b->queue) == 0 &&
	    strcmp(part_name(a), part_name(b)) == 0;
}

/* an item's queue, partition by id, and group (make: it has none yet) */
static int
pre_find(struct queen *q, const struct queen_ack_item *it, struct pre *e)
{
	const char *gname = group_name(it);
	int rc;

	if (it->partition_uuid && it->partition_uuid[0]) {
		if ((rc = uuid_target(q, it, &e->qr, &e->p)) != 0)
			return rc;
	} else if ((rc = queue_load(q, it->queue, &e->qr)) != 0) {
		return rc;
	}
	rc = group_load(q, &e->qr, gname, false, &e->g);
	if (rc != -ENOENT)
		return rc;
	/* by names, plan locks the partition: looked up here only for a
	 * group to make, which one that does not exist makes none */
	if (!(it->partition_uuid && it->partition_uuid[0]) &&
	    (rc = part_load(q, &e->qr, it->partition, false, &e->p)) != 0)
		return rc;
	/* made below, after every lookup; its name for the sort */
	memset(&e->g, 0, sizeof(e->g));
	snprintf(e->g.name, sizeof(e->g.name), "%s", gname);
	e->make = true;
	return 0;
}

/*
 * Making a consumer group locks every partition of its queue, in the
 * order of their names, as a push of many does.  Made as an ack of
 * several targets came to its item, after earlier items had locked their
 * partitions (by name) or made other groups, the two orders could cross,
 * and a push into those partitions deadlock with the call.  So, where
 * the store locks rows, the items named by partition id or by queue and
 * partition are looked up first, unlocked, and the groups missing made
 * in the order of their queues' names before any other row is locked.
 * An item that names nothing that exists makes nothing (plan refuses it);
 * nor does one named by its lease alone, whose group exists.
 */
static int
groups_first(struct queen *q, const struct by_name *ord, size_t n,
    struct pre *pre)
{
	struct pre **mk;
	char name[QUEEN_NAME_MAX + 1];
	size_t k, m = 0;
	int rc = 0;

	if (!(mk = calloc(n, sizeof(*mk))))
		return -ENOMEM;
	q->ops->lock_defer(q->st, true);
	for (k = 0; k < n; k++) {
		if (target_kind(ord[k].it) > 1)
			continue;
		/* the items of one target are next to each other */
		if (k > 0 && pre[k - 1].ok &&
		    same_target(ord[k - 1].it, ord[k].it)) {
			pre[k] = pre[k - 1];
			if (pre[k].make)
				mk[m++] = &pre[k];
			continue;
		}
		rc = pre_find(q, ord[k].it, &pre[k]);
		if (rc == -ENOENT || rc == -EINVAL) {
			/* plan looks again, and says why */
			rc = 0;
			continue;
		}
		if (rc != 0)
			break;
		pre[k].ok = true;
		if (pre[k].make)
			mk[m++] = &pre[k];
	}
	q->ops->lock_defer(q->st, false);
	if (rc == 0 && m > 1)
		qsort(mk, m, sizeof(*mk), by_group);
	for (k = 0; rc == 0 && k < m; k++) {
		/* the first of its name makes it, the rest (next to it in
		 * the sort) take its row */
		if (k > 0 && by_group(&mk[k - 1], &mk[k]) == 0) {
			mk[k]->g = mk[k - 1]->g;
			mk[k]->ok = mk[k - 1]->ok;
			continue;
		}
		/* the name out of the row the lookup fills */
		snprintf(name, sizeof(name), "%s", mk[k]->g.name);
		rc = group_load(q, &mk[k]->qr, name, true, &mk[k]->g);
		if (rc == -ENOENT || rc == -EINVAL) {
			mk[k]->ok = false;
			rc = 0;
		}
	}
	free(mk);
	return rc;
}

/*
 * The units of the items: each item resolved, in the order of what it
 * names (by_target), and the units sorted into cursor order.  pre: what
 * groups_first found, where it ran.  defer: an item named by its lease
 * alone is looked up unlocked, its cursor locked later with the others.
 */
static int
plan(struct queen *q, const struct queen_ack_item *items, size_t n,
    const struct by_name *ord, const struct pre *pre, bool defer,
    struct queen_ack_result *res, bool fence, struct unit *units, size_t *nup,
    size_t *flat)
{
	size_t *idx, nu = 0, i, j, k, at = 0;
	/* the last item by partition id or names resolved, and its rows */
	const struct queen_ack_item *last = NULL;
	struct queue_row lqr;
	struct part_row lp;
	struct group_row lg;
	int rc = 0;

	if (!(idx = calloc(n ? n : 1, sizeof(*idx))))
		return -ENOMEM;
	/* group items, keeping request order within each unit */
	for (k = 0; k < n; k++) {
		struct queue_row qr = { 0 };
		struct part_row p = { 0 };
		struct group_row g = { 0 };
		const char *lease = NULL;
		bool off = defer && target_kind(ord[k].it) == 2;

		i = ord[k].i;
		if (items[i].lease_id && items[i].lease_id[0])
			lease = items[i].lease_id;
		if (last && same_target(last, &items[i])) {
			/* the items of one target are next to each other:
			 * found, and locked, once */
			qr = lqr;
			p = lp;
			g = lg;
			rc = 0;
		} else if (pre && pre[k].ok) {
			/* found by groups_first; a partition named is locked */
			qr = pre[k].qr;
			p = pre[k].p;
			g = pre[k].g;
			rc = target_kind(&items[i]) == 1 ?
			    part_load(q, &qr, items[i].partition, false, &p) :
			    0;
		} else {
			if (off)
				q->ops->lock_defer(q->st, true);
			rc = resolve_target(q, &items[i], &qr, &p, &g);
			if (off)
				q->ops->lock_defer(q->st, false);
		}
		if (rc == -ENOENT || rc == -EINVAL || rc == -ESTALE) {
			/* Queen's word for a target not found; a caller
			 * that makes its groups itself gets which one */
			set_err(&res[i], rc,
			    rc == -ENOENT && !q->groups_explicit ?
				QUEEN_E_UNRESOLVABLE :
				queen_errmsg(q));
			if (fence)
				goto out;
			rc = 0;
			continue;
		}
		if (rc != 0)
			goto out;
		if (target_kind(&items[i]) < 2) {
			last = &items[i];
			lqr = qr;
			lp = p;
			lg = g;
		}
		for (j = 0; j < nu; j++) {
			if (same_unit(&units[j], &p, &g, lease))
				break;
		}
		if (j == nu) {
			units[nu].qr = qr;
			units[nu].p = p;
			units[nu].g = g;
			units[nu].lease = lease;
			units[nu].n = 0;
			nu++;
		}
		units[j].n++;
		idx[i] = j;
	}
	/* lay each unit's indices out contiguously */
	for (j = 0; j < nu; j++) {
		size_t m = 0;

		units[j].idx = flat + at;
		for (i = 0; i < n; i++) {
			if (idx[i] == j && res[i].err == 0)
				units[j].idx[m++] = i;
		}
		units[j].n = m;
		at += m;
	}
	qsort(units, nu, sizeof(*units), by_cursor);
	*nup = nu;
out:
	free(idx);
	return rc;
}

/*
 * The shared body of queen_ack and of a transaction's acks.  With fence,
 * the first refusal fails the call (the caller rolls back); the item
 * refused carries the error.  leases: a transaction's required leases,
 * each held and live until the call ends; *bad is the first refused, in
 * the order given, or nleases.  Their cursors are locked with those of
 * the units, all in cursor order.
 */
int
ack_items(struct queen *q, const struct queen_ack_item *items, size_t n,
    struct queen_ack_result *res, bool fence, const char *const *leases,
    size_t nleases, size_t *bad)
{
	struct unit *units;
	struct by_name *ord;
	struct held *h = NULL;
	struct pre *pre = NULL;
	size_t *flat, nu = 0, nh = 0, i, j;
	bool held, defer;
	int rc = 0;

	*bad = nleases;
	if (n == 0)
		return leases_hold(q, leases, nleases, bad);
	lease_moves();
	units = calloc(n, sizeof(*units));
	flat = calloc(n, sizeof(*flat));
	ord = calloc(n, sizeof(*ord));
	if (!units || !flat || !ord) {
		rc = -ENOMEM;
		goto out;
	}
	memset(res, 0, n * sizeof(*res));
	for (i = 0; i < n; i++) {
		ord[i].it = &items[i];
		ord[i].i = i;
	}
	qsort(ord, n, sizeof(*ord), by_target);
	/* groups to make are made before anything is locked (one item's
	 * own lookup makes its group before it locks its partition) */
	if (q->ops->lock_defer && n > 1) {
		if (!(pre = calloc(n, sizeof(*pre)))) {
			rc = -ENOMEM;
			goto out;
		}
		if ((rc = groups_first(q, ord, n, pre)) != 0)
			goto out;
	}
	/* an item named by its lease alone is looked up through the lease,
	 * whose random id orders nothing: where the store would lock its
	 * cursor then, it is looked up unlocked and locked with the others,
	 * in the order of the cursors, unless it is the call's one target;
	 * so are the required leases, unless they are that one lease */
	held = nleases > 0 && q->ops->lock_defer &&
	    !(nleases == 1 && one_lease(ord, n, leases[0]));
	defer = q->ops->lock_defer &&
	    (held || (n > 1 && !one_lease(ord, n, NULL)));
	if (held) {
		if (!(h = calloc(nleases, sizeof(*h)))) {
			rc = -ENOMEM;
			goto out;
		}
		rc = leases_find(q, leases, nleases, h, bad);
		if (rc != 0 || *bad < nleases)
			goto out;
		nh = nleases;
	} else if ((rc = leases_hold(q, leases, nleases, bad)) != 0 ||
	    *bad < nleases) {
		goto out;
	}
	if ((rc = plan(q, items, n, ord, pre, defer, res, fence, units, &nu,
		 flat)) != 0)
		goto out;
	/* the units and the held leases' cursors, merged in cursor order:
	 * a lease's cursor before a unit of the same one */
	for (i = 0, j = 0; rc == 0 && *bad == nleases && (i < nh || j < nu);) {
		if (i < nh &&
		    (j == nu || h[i].pid < units[j].p.id ||
			(h[i].pid == units[j].p.id &&
			    h[i].gid <= units[j].g.id)))
			rc = lease_lock(q, &h[i++], leases, bad);
		else
			rc = ack_unit(q, items, &units[j++], res, fence);
	}
out:
	free(pre);
	free(h);
	free(units);
	free(flat);
	free(ord);
	return rc;
}

int
queen_ack(struct queen *q, const struct queen_ack_item *items, size_t n,
    struct queen_ack_result *res)
{
	size_t i, bad;
	int rc;

	if (n == 0)
		return 0;
	if ((rc = tx_begin(q)) != 0)
		goto fail;
	rc = ack_items(q, items, n, res, false, NULL, 0, &bad);
	rc = tx_end(q, rc);
	if (rc == 0)
		return 0;
fail:
	for (i = 0; i < n; i++) {
		memset(&res[i], 0, sizeof(res[i]));
		set_err(&res[i], -EIO, QUEEN_E_FLUSH);
	}
	return rc;
}
