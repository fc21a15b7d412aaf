/*
 * pg_rows.c - the PostgreSQL backend's rows of queues, partitions,
 * groups and cursors, and the row locks that keep one lease per
 * (partition, group) across processes and hosts.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "pg_store.h"

/* ---- rows read ahead ---- */

int64_t
pg_mono_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

/* A pop's ready row read ahead, given up. */
void
pg_ready_drop(struct store *s)
{
	PQclear(s->ahead.rd.r);
	s->ahead.rd.r = NULL;
	s->ahead.rd.on = false;
}

void
ahead_mark(struct store *s)
{
	pg_ready_drop(s);
	s->ahead.valid = true;
	s->ahead.read_ns = s->in_tx ? 0 : pg_mono_ns();
	s->ahead.hq = s->ahead.hp = s->ahead.hg = s->ahead.hc = false;
	s->ahead.plock = s->ahead.clock = s->ahead.hdup = false;
	s->ahead.tf.on = s->ahead.ms.on = s->ahead.mn.on = false;
	s->ahead.lw.on = false;
	if (s->ahead.lw.cap > LW_KEEP) {
		/* the hash rows of a big ack are not kept for the next */
		free(s->ahead.lw.v);
		s->ahead.lw.v = NULL;
		s->ahead.lw.cap = 0;
	}
}

/* Add to what is read ahead, or start afresh if that is gone. */
void
ahead_keep(struct store *s)
{
	if (!ahead_ok(s))
		ahead_mark(s);
}

/* see AHEAD_NS */
bool
ahead_ok(struct store *s)
{
	if (!s->ahead.valid)
		return false;
	if (!s->in_tx && pg_mono_ns() - s->ahead.read_ns > AHEAD_NS)
		s->ahead.valid = false;
	return s->ahead.valid;
}

/* ---- queues ---- */

static void
read_queue(const PGresult *r, int i, int k, struct queue_row *q)
{
	int j;

	q->id = col_int(r, i, k);
	pg_col_text(r, i, k + 1, q->name, sizeof(q->name));
	q->created_at = col_int(r, i, k + 2);
	q->owner.uid = (uid_t)col_int(r, i, k + 3);
	q->owner.gid = (gid_t)col_int(r, i, k + 4);
	q->owner.mode = (mode_t)col_int(r, i, k + 5);
	for (j = 0; j < QCONF_N; j++)
		*QCONF_FIELD(&q->conf, j) = col_int(r, i, k + 6 + j);
}

static int
get_queue(struct store *s, enum stmt id, const struct args *a,
    struct queue_row *out)
{
	int rc;
	PGresult *r = exec(s, id, a, &rc);

	if (!r)
		return rc;
	rc = PQntuples(r) ? 0 : -ENOENT;
	if (rc == 0) {
		read_queue(r, 0, 0, out);
		/* for the lookups that follow (see AHEAD_NS) */
		ahead_keep(s);
		s->ahead.q = *out;
		s->ahead.hq = true;
	}
	PQclear(r);
	return rc;
}

int
pg_queue_get(struct store *s, const char *name, struct queue_row *out)
{
	struct args a = { 0 };

	if (ahead_ok(s) && s->ahead.hq && strcmp(s->ahead.q.name, name) == 0) {
		*out = s->ahead.q;
		return 0;
	}
	a_text(&a, name);
	return get_queue(s, ST_QUEUE_GET, &a, out);
}

int
pg_queue_by_id(struct store *s, int64_t id, struct queue_row *out)
{
	struct args a = { 0 };

	if (ahead_ok(s) && s->ahead.hq && s->ahead.q.id == id) {
		*out = s->ahead.q;
		return 0;
	}
	a_int(&a, id);
	return get_queue(s, ST_QUEUE_BY_ID, &a, out);
}

static void
args_queue(struct args *a, const struct queue_row *q)
{
	int k;

	a_text(a, q->name);
	a_int(a, q->created_at);
	a_int(a, q->owner.uid);
	a_int(a, q->owner.gid);
	a_int(a, q->owner.mode);
	for (k = 0; k < QCONF_N; k++)
		a_int(a, *QCONF_FIELD((struct qconf *)&q->conf, k));
}

/*
 * The id of an insert ... on conflict do nothing returning id: 1 and *id,
 * or 0 when another process inserted the row first.
 */
static int
insert_id(struct store *s, enum stmt id, const struct args *a, int64_t *out)
{
	int rc;
	PGresult *r = exec(s, id, a, &rc);

	if (!r)
		return rc;
	rc = PQntuples(r) == 1;
	if (rc)
		*out = col_int(r, 0, 0);
	PQclear(r);
	return rc;
}

/* A race lost: the winner's row vanished before we could read it. */
static int
raced(struct store *s, int rc, const char *what, const char *name)
{
	if (rc != -ENOENT)
		return rc;
	snprintf(s->err, sizeof(s->err), "%s '%.64s' was created and deleted "
	    "concurrently", what, name);
	return -EEXIST;
}

int
pg_queue_insert(struct store *s, struct queue_row *q)
{
	struct args a = { 0 };
	int rc;

	args_queue(&a, q);
	rc = insert_id(s, ST_QUEUE_INSERT, &a, &q->id);
	if (rc == 0)
		rc = raced(s, pg_queue_get(s, q->name, q), "queue", q->name);
	return rc < 0 ? rc : 0;
}

int
pg_queue_update(struct store *s, const struct queue_row *q)
{
	struct args a = { 0 };

	args_queue(&a, q);
	a_int(&a, q->id);
	return pg_run(s, ST_QUEUE_UPDATE, &a, NULL);
}

static int
delete_part_rows(struct store *s, int64_t pid)
{
	struct args a = { 0 };
	int rc;

	a_int(&a, PB(pid));
	a_int(&a, PB(pid) + MAX_OFFSET);
	if ((rc = pg_run(s, ST_MSG_DELETE_PART, &a, NULL)) != 0)
		return rc;
	return pg_run(s, ST_TXN_DELETE_PART, &a, NULL);
}

static int
drop_part(void *arg, const struct part_row *p)
{
	return delete_part_rows(arg, p->id);
}


int
pg_queue_delete(struct store *s, int64_t id)
{
	struct args a = { 0 };
	int rc;

	/* partitions go with the queue (cascade); their log rows first */
	if ((rc = pg_part_list(s, id, "", drop_part, s)) != 0)
		return rc;
	a_int(&a, id);
	return pg_run(s, ST_QUEUE_DELETE, &a, NULL);
}

int
pg_queue_list(struct store *s, queue_row_cb cb, void *arg)
{
	struct queue_row q;
	int rc, i;
	PGresult *r = exec(s, ST_QUEUE_LIST, NULL, &rc);

	if (!r)
		return rc;
	for (i = 0; rc == 0 && i < PQntuples(r); i++) {
		read_queue(r, i, 0, &q);
		rc = cb(arg, &q);
	}
	PQclear(r);
	return rc;
}

int
pg_queue_usage(struct store *s, int64_t id, int64_t *msgs, int64_t *groups,
    int64_t *timers)
{
	struct args a = { 0 };
	int rc;

	a_int(&a, id);
	if ((rc = pg_one_int(s, ST_QUEUE_MSGS, &a, msgs)) != 0 ||
	    (rc = pg_one_int(s, ST_QUEUE_GROUPS, &a, groups)) != 0)
		return rc;
	return pg_one_int(s, ST_QUEUE_TIMERS, &a, timers);
}

/* ---- partitions ---- */

static void
read_part(const PGresult *r, int i, int k, struct part_row *p)
{
	p->id = col_int(r, i, k);
	p->queue_id = col_int(r, i, k + 1);
	pg_col_text(r, i, k + 2, p->name, sizeof(p->name));
	pg_col_text(r, i, k + 3, p->uuid, sizeof(p->uuid));
	p->head = col_int(r, i, k + 4);
	p->tail = col_int(r, i, k + 5);
	p->txns_start = col_int(r, i, k + 6);
	p->last_push_at = col_int(r, i, k + 7);
	p->duplicates = col_int(r, i, k + 8);
	p->created_at = col_int(r, i, k + 9);
}

static int
get_part(struct store *s, enum stmt id, const struct args *a,
    struct part_row *out)
{
	int rc;
	PGresult *r = exec(s, id, a, &rc);

	if (!r)
		return rc;
	rc = PQntuples(r) ? 0 : -ENOENT;
	if (rc == 0) {
		read_part(r, 0, 0, out);
		/* for the lookups that follow; a push's dedup answer was
		 * of the row it replaces */
		ahead_keep(s);
		s->ahead.p = *out;
		s->ahead.hp = true;
		s->ahead.plock = id == ST_PART_GET_LK;
		s->ahead.hdup = false;
		/* locked now: a claim of it would only check it again */
		if (s->ahead.plock && s->opt.id == out->id)
			s->opt.id = 0;
	}
	PQclear(r);
	return rc;
}

/* Locked in a transaction: appends to one partition serialize. */
int
pg_part_get(struct store *s, int64_t qid, const char *name,
    struct part_row *out)
{
	struct args a = { 0 };
	enum stmt id = locked(s, ST_PART_GET);

	if (ahead_ok(s) && s->ahead.hp && s->ahead.p.queue_id == qid &&
	    strcmp(s->ahead.p.name, name) == 0 &&
	    (s->ahead.plock || id == ST_PART_GET ||
		(s->opt.id != 0 && s->opt.id == s->ahead.p.id))) {
		*out = s->ahead.p;
		return 0;
	}
	a_int(&a, qid);
	a_text(&a, name);
	return get_part(s, id, &a, out);
}

int
pg_part_by_id(struct store *s, int64_t id, struct part_row *out)
{
	struct args a = { 0 };

	if (ahead_ok(s) && s->ahead.hp && s->ahead.p.id == id) {
		*out = s->ahead.p;
		return 0;
	}
	a_int(&a, id);
	return get_part(s, ST_PART_BY_ID, &a, out);
}

int
pg_part_by_uuid(struct store *s, const char *uuid, struct part_row *out)
{
	struct args a = { 0 };

	if (ahead_ok(s) && s->ahead.hp && strcmp(s->ahead.p.uuid, uuid) == 0) {
		*out = s->ahead.p;
		return 0;
	}
	a_text(&a, uuid);
	return get_part(s, ST_PART_BY_UUID, &a, out);
}

/* What a push or the tick changes of a partition's row, in that order:
 * head, tail, txns_start, last_push_at, duplicates (the columns a claim
 * checks, as part_update writes them). */
static void
a_part_state(struct args *a, const struct part_row *p)
{
	a_int(a, p->head);
	a_int(a, p->tail);
	a_int(a, p->txns_start);
	a_int(a, p->last_push_at);
	a_int(a, p->duplicates);
}

int
pg_part_insert(struct store *s, struct part_row *p)
{
	struct args a = { 0 };
	int rc;

	a_int(&a, p->queue_id);
	a_text(&a, p->name);
	a_text(&a, p->uuid);
	a_part_state(&a, p);
	a_int(&a, p->created_at);
	rc = insert_id(s, ST_PART_INSERT, &a, &p->id);
	if (rc == 0)
		rc = raced(s, pg_part_get(s, p->queue_id, p->name, p),
		    "partition", p->name);
	return rc < 0 ? rc : 0;
}

int
pg_part_update(struct store *s, const struct part_row *p)
{
	struct args a = { 0 };

	a_part_state(&a, p);
	a_int(&a, p->id);
	return pg_run(s, ST_PART_UPDATE, &a, NULL);
}

/*
 * Locked in a transaction: maintenance writes back what it listed.  The
 * callback may use the store, so each page of 128 is read whole before
 * its callbacks, and the next starts after the last name, as in db.c.
 */
#define PART_PAGE 128

int
pg_part_list(struct store *s, int64_t qid, const char *from, part_row_cb cb,
    void *arg)
{
	char after[QUEEN_NAME_MAX + 1];
	struct part_row p;
	PGresult *r;
	int rc, i, n;

	snprintf(after, sizeof(after), "%s", from);
	do {
		struct args a = { 0 };

		a_int(&a, qid);
		a_text(&a, after);
		a_int(&a, PART_PAGE);
		if (!(r = exec(s, locked(s, ST_PART_LIST), &a, &rc)))
			return rc;
		n = PQntuples(r);
		for (i = 0; rc == 0 && i < n; i++) {
			read_part(r, i, 0, &p);
			memcpy(after, p.name, sizeof(after));
			rc = cb(arg, &p);
		}
		PQclear(r);
	} while (rc == 0 && n == PART_PAGE);
	return rc;
}

/* Read whole before the first callback, which may use the store. */
int
pg_part_maint(struct store *s, int64_t now, int limit, part_row_cb cb,
    void *arg)
{
	struct args a = { 0 };
	struct part_row p;
	PGresult *r;
	int rc, i;

	a_int(&a, now);
	a_int(&a, limit);
	if (!(r = exec(s, ST_PART_MAINT, &a, &rc)))
		return rc;
	for (i = 0; rc == 0 && i < PQntuples(r); i++) {
		read_part(r, i, 0, &p);
		rc = cb(arg, &p);
	}
	PQclear(r);
	return rc;
}

/* ---- groups ---- */

static void
read_group(const PGresult *r, int i, int k, struct group_row *g)
{
	g->id = col_int(r, i, k);
	g->queue_id = col_int(r, i, k + 1);
	pg_col_text(r, i, k + 2, g->name, sizeof(g->name));
	g->mode = col_int(r, i, k + 3);
	g->since = col_int(r, i, k + 4);
	g->created_at = col_int(r, i, k + 5);
	g->batch = col_int(r, i, k + 6);
	g->wait = col_int(r, i, k + 7);
	g->auto_ack = col_int(r, i, k + 8);
	g->has_owner = !PQgetisnull(r, i, k + 9);
	g->owner.uid = (uid_t)col_int(r, i, k + 9);
	g->owner.gid = (gid_t)col_int(r, i, k + 10);
	g->owner.mode = (mode_t)col_int(r, i, k + 11);
}

static int
get_group(struct store *s, enum stmt id, const struct args *a,
    struct group_row *out)
{
	int rc;
	PGresult *r = exec(s, id, a, &rc);

	if (!r)
		return rc;
	rc = PQntuples(r) ? 0 : -ENOENT;
	if (rc == 0)
		read_group(r, 0, 0, out);
	PQclear(r);
	return rc;
}

int
pg_group_get(struct store *s, int64_t qid, const char *name,
    struct group_row *out)
{
	struct args a = { 0 };

	if (ahead_ok(s) && s->ahead.hg && s->ahead.g.queue_id == qid &&
	    strcmp(s->ahead.g.name, name) == 0) {
		*out = s->ahead.g;
		return 0;
	}
	a_int(&a, qid);
	a_text(&a, name);
	return get_group(s, ST_GROUP_GET, &a, out);
}

int
pg_group_by_id(struct store *s, int64_t id, struct group_row *out)
{
	struct args a = { 0 };

	if (ahead_ok(s) && s->ahead.hg && s->ahead.g.id == id) {
		*out = s->ahead.g;
		return 0;
	}
	a_int(&a, id);
	return get_group(s, ST_GROUP_BY_ID, &a, out);
}

static void
args_group(struct args *a, const struct group_row *g)
{
	a_int(a, g->queue_id);
	a_text(a, g->name);
	a_int(a, g->mode);
	a_int(a, g->since);
	a_int(a, g->created_at);
	a_int(a, g->batch);
	a_int(a, g->wait);
	a_int(a, g->auto_ack);
	if (g->has_owner) {
		a_int(a, g->owner.uid);
		a_int(a, g->owner.gid);
		a_int(a, g->owner.mode);
	} else {
		a_null(a);
		a_null(a);
		a_null(a);
	}
}

int
pg_group_insert(struct store *s, struct group_row *g)
{
	struct args a = { 0 };
	int rc;

	args_group(&a, g);
	rc = insert_id(s, ST_GROUP_INSERT, &a, &g->id);
	if (rc == 0) {
		rc = raced(s, pg_group_get(s, g->queue_id, g->name, g),
		    "group", g->name);
		if (rc == 0) {
			/* the winner made its cursors: ours must not
			 * overwrite them (see cursor_put) */
			s->adopted = g->id;
			s->nseen = 0;
		}
	}
	return rc < 0 ? rc : 0;
}

int
pg_group_update(struct store *s, const struct group_row *g)
{
	struct args a = { 0 };

	args_group(&a, g);
	a_int(&a, g->id);
	return pg_run(s, ST_GROUP_UPDATE, &a, NULL);
}

int
pg_group_delete(struct store *s, int64_t id)
{
	struct args a = { 0 };

	a_int(&a, id);
	return pg_run(s, ST_GROUP_DELETE, &a, NULL);
}

int
pg_group_list(struct store *s, int64_t qid, group_row_cb cb, void *arg)
{
	struct args a = { 0 };
	struct group_row g;
	PGresult *r;
	int rc, i;

	a_int(&a, qid);
	if (!(r = exec(s, ST_GROUP_LIST, &a, &rc)))
		return rc;
	for (i = 0; rc == 0 && i < PQntuples(r); i++) {
		read_group(r, i, 0, &g);
		rc = cb(arg, &g);
	}
	PQclear(r);
	return rc;
}

/* ---- cursors ---- */

/*
 * The adopted group.  When two processes create one group at once, the
 * loser's group_insert reads the winner's row, and the engine then
 * creates the group's cursors as if it were new, overwriting the
 * winner's (and any lease it took).  So for that group, a put of a cursor
 * this transaction has not read is a creation and keeps an existing row;
 * every real update follows a read of its row.
 */
static int
seen_note(struct store *s, int64_t gid, int64_t pid)
{
	size_t i;

	if (!s->adopted || gid != s->adopted)
		return 0;
	for (i = 0; i < s->nseen; i++) {
		if (s->seen[i] == pid)
			return 1;
	}
	if (s->nseen == s->capseen) {
		size_t cap = s->capseen ? s->capseen * 2 : 16;
		int64_t *v = realloc(s->seen, cap * sizeof(*v));

		if (!v)
			return -ENOMEM;
		s->seen = v;
		s->capseen = cap;
	}
	s->seen[s->nseen++] = pid;
	return 0;
}

/* Fills *c; -ENOMEM only when the adopted group's bookkeeping fails. */
static int
read_cursor(struct store *s, const PGresult *r, int i, struct cursor_row *c)
{
	c->partition_id = col_int(r, i, 0);
	c->group_id = col_int(r, i, 1);
	c->committed = col_int(r, i, 2);
	c->batch_end = col_int(r, i, 3);
	pg_col_text(r, i, 4, c->lease_id, sizeof(c->lease_id));
	c->lease_expires_at = col_int(r, i, 5);
	c->retry_count = col_int(r, i, 6);
	c->next_at = col_int(r, i, 7);
	return seen_note(s, c->group_id, c->partition_id) < 0 ? -ENOMEM : 0;
}

static int
get_cursor(struct store *s, enum stmt id, const struct args *a,
    struct cursor_row *out)
{
	int rc;
	PGresult *r = exec(s, id, a, &rc);

	if (!r)
		return rc;
	rc = PQntuples(r) ? read_cursor(s, r, 0, out) : -ENOENT;
	PQclear(r);
	return rc;
}

int
pg_cursor_get(struct store *s, int64_t pid, int64_t gid,
    struct cursor_row *out)
{
	struct args a = { 0 };

	/* an ack's, read locked along with its lease (pg_lease_ahead) */
	if (ahead_ok(s) && s->ahead.hc && s->ahead.clock &&
	    s->ahead.c.partition_id == pid && s->ahead.c.group_id == gid) {
		*out = s->ahead.c;
		return 0;
	}
	a_int(&a, pid);
	a_int(&a, gid);
	return get_cursor(s, locked(s, ST_CUR_GET), &a, out);
}

int
pg_cursor_put(struct store *s, const struct cursor_row *c)
{
	struct args a = { 0 };
	int seen = seen_note(s, c->group_id, c->partition_id);

	if (seen < 0)
		return seen;
	a_int(&a, c->partition_id);
	a_int(&a, c->group_id);
	a_int(&a, c->committed);
	a_int(&a, c->batch_end);
	if (c->lease_id[0])
		a_text(&a, c->lease_id);
	else
		a_null(&a);
	a_int(&a, c->lease_expires_at);
	a_int(&a, c->retry_count);
	a_int(&a, c->next_at);
	if (s->adopted && c->group_id == s->adopted && !seen)
		return pg_run(s, ST_CUR_PUT_NEW, &a, NULL);
	return pg_run(s, ST_CUR_PUT, &a, NULL);
}

/*
 * What txn_find(pid, h, lo, hi, highest) would answer, read along at
 * columns k (the key) and k + 1 (its time) of r's first row: kept for
 * it.  Whether it found one.
 */
static bool
keep_find(struct store *s, const PGresult *r, int k, int64_t pid,
    const struct hash128 *h, int64_t lo, int64_t hi, bool highest)
{
	bool found = !PQgetisnull(r, 0, k);

	pg_keep_find(s, pid, h, lo, hi, highest, found ? 0 : -ENOENT,
	    found ? col_int(r, 0, k) - PB(pid) : 0, true,
	    found ? col_int(r, 0, k + 1) : 0);
	return found;
}

/*
 * The message read along at columns k of r's row i, as msg_scan reads
 * it, then its length (k + 7; its payload NULL when too large to read
 * along), kept for the msg_scan of it (pg_keep_msg): unless it is not
 * there or too large.  Whether r was kept.
 */
static bool
keep_row_msg(struct store *s, PGresult *r, bool lent, int i, int k, int64_t pid)
{
	if (PQnfields(r) < k + 8 || PQgetisnull(r, i, k) ||
	    (PQgetisnull(r, i, k + 4) && col_int(r, i, k + 7) > 0))
		return false;
	pg_keep_msg(s, r, lent, i, k, pid, col_int(r, i, k) - PB(pid), true);
	return true;
}

/* The rows of ST_CUR_LEASE_ROWS's columns in r, kept ahead. */
static int
lease_rows(struct store *s, const PGresult *r, struct cursor_row *out)
{
	int rc = PQntuples(r) ? read_cursor(s, r, 0, out) : -ENOENT;

	if (rc == 0) {
		read_part(r, 0, 8, &s->ahead.p);
		read_queue(r, 0, 18, &s->ahead.q);
		read_group(r, 0, 39, &s->ahead.g);
		ahead_mark(s);
		s->ahead.hq = s->ahead.hp = s->ahead.hg = s->ahead.hc = true;
		s->ahead.c = *out;
	}
	return rc;
}

/*
 * A lookup by lease is followed by the lookups of its partition, queue
 * and group: an unlocked one reads them along, and those lookups take
 * them from s->ahead until the next statement goes out.  They are the
 * rows the separate reads would have returned had they run at the same
 * moment as this one: none of them locks, and nothing is written between.
 */
int
pg_cursor_by_lease(struct store *s, const char *lease, struct cursor_row *out)
{
	enum stmt id = locked(s, ST_CUR_BY_LEASE);
	struct args a = { 0 };
	PGresult *r;
	int rc;

	a_text(&a, lease);
	/* locked: as an ack's lease_ahead read it */
	if (ahead_ok(s) && s->ahead.hc &&
	    (id == ST_CUR_BY_LEASE || s->ahead.clock) &&
	    strcmp(s->ahead.c.lease_id, lease) == 0) {
		*out = s->ahead.c;
		return 0;
	}
	if (id != ST_CUR_BY_LEASE)
		return get_cursor(s, id, &a, out);
	if (!(r = exec(s, ST_CUR_LEASE_ROWS, &a, &rc)))
		return rc;
	rc = lease_rows(s, r, out);
	PQclear(r);
	return rc;
}

/*
 * Ahead of the read of one message of a lease (its lookup by name, then
 * the open and read of it): the rows above, and the message's hash row
 * and the message as txn_find and msg_scan would read them next (see
 * lease_msg_in), in one statement.  Inside a call that writes (an
 * ack's), the lease's cursor row is locked by it.  h NULL: the span's
 * first message, outside a call that writes only.
 */
int
pg_lease_ahead(struct store *s, const char *lease, const struct hash128 *h)
{
	struct args a = { 0 };
	struct cursor_row c;
	struct hash128 first;
	const struct part_row *p = &s->ahead.p;
	enum stmt id = locked(s, ST_LEASE_AHEAD);
	PGresult *r;
	int64_t lo, hi;
	int rc;

	/* in a call that writes, the cursor's row is locked along: an
	 * ack's lookup of its lease (the first message only outside) */
	if (!h && id != ST_LEASE_AHEAD)
		return 0;
	if (ahead_ok(s) && s->ahead.hc &&
	    (id == ST_LEASE_AHEAD || s->ahead.clock) &&
	    strcmp(s->ahead.c.lease_id, lease) == 0 &&
	    (!h ||
		(s->ahead.tf.on &&
		    memcmp(s->ahead.tf.h.b, h->b, sizeof(h->b)) == 0)))
		return 0;
	a_text(&a, lease);
	if (h)
		a_bytes(&a, h->b, 16);
	/* the lease's directory: its first message, if small, read along
	 * for the lookup of its name that comes next */
	a_int(&a, h ? AHEAD_MSG_MAX : FIRST_MSG_MAX);
	if (!(r = exec(s, h ? id : ST_LEASE_FIRST, &a, &rc)))
		return rc;
	if ((rc = lease_rows(s, r, &c)) != 0) {
		PQclear(r);
		return rc == -ENOENT ? 0 : rc;
	}
	s->ahead.clock = id != ST_LEASE_AHEAD;
	lo = c.committed + 1 > p->txns_start ? c.committed + 1 : p->txns_start;
	hi = c.batch_end;
	if (!h && PQnfields(r) > 63 && !PQgetisnull(r, 0, 63) &&
	    PQgetlength(r, 0, 63) == (int)sizeof(first.b)) {
		memcpy(first.b, PQgetvalue(r, 0, 63), sizeof(first.b));
		h = &first;
	}
	if (!h || lo > hi || lo < 1 || hi > MAX_OFFSET) {
		PQclear(r);
		return 0;
	}
	if (keep_find(s, r, 51, p->id, h, lo, hi, false)) {
		s->ahead.mn.on = true;
		s->ahead.mn.pid = p->id;
		s->ahead.mn.after = s->ahead.tf.off;
		s->ahead.mn.off = PQgetisnull(r, 0, 53) ?
		    0 :
		    col_int(r, 0, 53) - PB(p->id);
		s->ahead.mn.at = col_int(r, 0, 54);
		if (keep_row_msg(s, r, false, 0, 55, p->id))
			return 0;
	}
	PQclear(r);
	return 0;
}

/*
 * Ahead of a pop: its queue and group, in one statement; inside a call
 * that writes, with ready, the group's first ready cursor too (locked,
 * as cur_ready_lk would lock it), kept for the pop's cursor_ready.
 */
int
pg_pop_ahead(struct store *s, const char *queue, const char *group, int64_t now,
    bool ready)
{
	struct args a = { 0 };
	PGresult *r;
	int k = 0, rc;

	ready = ready && locked(s, ST_CUR_READY) != ST_CUR_READY;
	a_text(&a, queue);
	a_text(&a, group);
	if (ready)
		a_int(&a, now);
	if (!(r = exec(s, ready ? ST_POP_READY : ST_POP_AHEAD, &a, &rc)))
		return rc;
	if (PQntuples(r) != 1) {
		PQclear(r);
		return 0;
	}
	if (ready)
		k = 27;
	read_queue(r, 0, k, &s->ahead.q);
	ahead_mark(s);
	s->ahead.hq = true;
	s->ahead.hg = !PQgetisnull(r, 0, k + 21);
	if (s->ahead.hg)
		read_group(r, 0, k + 21, &s->ahead.g);
	if (!ready || !s->ahead.hg) {
		PQclear(r);
		return 0;
	}
	s->ahead.rd.on = true;
	s->ahead.rd.gid = s->ahead.g.id;
	s->ahead.rd.upto = now - s->ahead.q.conf.delay * 1000;
	s->ahead.rd.now = now;
	if (PQgetisnull(r, 0, 0))
		PQclear(r); /* nothing ready */
	else
		s->ahead.rd.r = r;
	return 0;
}

/*
 * Ahead of an ack: its partition, queue and group, unless what was read
 * ahead holds them already (the ack after a lookup of its lease, or the
 * next item of a batch ack).
 */
int
pg_ack_ahead(struct store *s, const char *uuid, const char *group)
{
	struct args a = { 0 };
	PGresult *r;
	int rc;

	if (ahead_ok(s) && s->ahead.hp && s->ahead.hq && s->ahead.hg &&
	    strcmp(s->ahead.p.uuid, uuid) == 0 &&
	    s->ahead.q.id == s->ahead.p.queue_id &&
	    s->ahead.g.queue_id == s->ahead.q.id &&
	    strcmp(s->ahead.g.name, group) == 0)
		return 0;
	a_text(&a, uuid);
	a_text(&a, group);
	if (!(r = exec(s, ST_ACK_AHEAD, &a, &rc)))
		return rc;
	if (PQntuples(r) == 1) {
		read_part(r, 0, 0, &s->ahead.p);
		read_queue(r, 0, 10, &s->ahead.q);
		ahead_mark(s);
		s->ahead.hp = s->ahead.hq = true;
		s->ahead.hg = !PQgetisnull(r, 0, 31);
		if (s->ahead.hg)
			read_group(r, 0, 31, &s->ahead.g);
	}
	PQclear(r);
	return 0;
}

/* A digest of a partition's queue and name, for claimed and busy. */
static uint64_t
part_key(const char *queue, const char *part)
{
	uint64_t k = 14695981039346656037ULL;
	const char *p;

	for (p = queue; *p; p++)
		k = (k ^ (unsigned char)*p) * 1099511628211ULL;
	k = (k ^ 0xff) * 1099511628211ULL;
	for (p = part; *p; p++)
		k = (k ^ (unsigned char)*p) * 1099511628211ULL;
	return k ? k : 1;
}

/* Whether a claim of the partition failed lately (then read it locked). */
static bool
part_busy(struct store *s, uint64_t key)
{
	int64_t now = pg_mono_ns();
	int i;

	for (i = 0; i < BUSY_MAX; i++)
		if (s->busy[i].key == key && s->busy[i].until > now)
			return true;
	return false;
}

/*
 * A claim of this transaction failed: each partition it claimed is read
 * locked for a while (another session pushes there too), so that the
 * run again, and the pushes after it, do not fail the same way.
 */
void
pg_claim_lost(struct store *s)
{
	int64_t now = pg_mono_ns();
	int i, j, old;

	s->claims_lost++;
	for (i = 0; i < s->nclaimed; i++) {
		old = 0;
		for (j = 0; j < BUSY_MAX; j++) {
			if (s->busy[j].key == s->claimed[i])
				break;
			if (s->busy[j].until < s->busy[old].until)
				old = j;
		}
		if (j == BUSY_MAX)
			j = old;
		s->busy[j].key = s->claimed[i];
		s->busy[j].until = now + BUSY_NS;
	}
}

/*
 * The row of a partition a push read without a lock (pg_push_ahead), as
 * it is about to change it: locked with the writes, in the round trip of
 * the commit, if it is still as read; else the transaction fails
 * (40001, -EBUSY) and the caller runs it again (QUEEN_BATCH_REDO).
 */
int
pg_part_claim(struct store *s, const struct part_row *p)
{
	struct args a = { 0 };
	const struct part_row *o = &s->opt;

	if (!s->in_tx || o->id == 0 || o->id != p->id)
		return 0;
	if (s->nclaimed < CLAIM_MAX)
		s->claimed[s->nclaimed++] = s->opt_key;
	a_int(&a, o->id);
	a_part_state(&a, o);
	s->opt.id = 0;
	s->claims++;
	return pg_run(s, ST_PART_CLAIM, &a, NULL);
}

/*
 * Ahead of a push: its queue, its partition (locked in a transaction,
 * unless the batch claims it with its writes: pg_part_claim) and the
 * newest row of its hash in the dedup window, in one statement,
 * for the lookups that follow.  Under a row lock that had to wait,
 * READ COMMITTED hands back the partition as its locker left it while
 * the hash rows may be those of the statement's start: the window's
 * answer is kept only if the newest hash row read is the partition's
 * tail (every message has one), i.e. nothing was appended unseen.
 * In a transaction, the hashes after the first (of the pushes to come
 * into the partition) are looked for in the same statement, and kept
 * as txn_prefetch's answer under the same condition.
 */
int
pg_push_ahead(struct store *s, const char *queue, const char *part,
    const struct hash128 *h, size_t n)
{
	struct args a = { 0 };
	unsigned char *arr = NULL;
	enum stmt id = locked(s, ST_PUSH_AHEAD);
	PGresult *r;
	int64_t base;
	size_t len;
	bool whole, more, opt;
	int rc;

	/* a batch its caller runs again: the row is claimed with the
	 * writes (pg_part_claim), unless that failed lately */
	s->opt.id = 0;
	s->opt_key = part_key(queue, part);
	opt = id == ST_PUSH_AHEAD_LK && s->redo && !part_busy(s, s->opt_key);
	if (opt)
		id = ST_PUSH_AHEAD;

	a_text(&a, queue);
	a_text(&a, part);
	if (h)
		a_bytes(&a, h->b, sizeof(h->b));
	else
		a_null(&a);
	/* the hashes of the pushes after the first: txn_prefetch's read,
	 * in this round trip, where a transaction holds the lock */
	more = h && n > 1 && n <= PG_PREFETCH_MAX &&
	    (id != ST_PUSH_AHEAD || opt);
	if (more && !(arr = pg_hash_array(h, n, &len)))
		return -ENOMEM;
	if (more) {
		a_bytes(&a, arr, len);
		id = opt ? ST_PUSH_AHEAD_MANY_OPT : ST_PUSH_AHEAD_MANY;
	}
	r = exec(s, id, &a, &rc);
	free(arr);
	if (!r)
		return rc;
	rc = 0;
	if (PQntuples(r) == 1) {
		read_queue(r, 0, 0, &s->ahead.q);
		read_part(r, 0, 21, &s->ahead.p);
		ahead_mark(s);
		s->ahead.hq = s->ahead.hp = true;
		s->ahead.plock = !opt && id != ST_PUSH_AHEAD;
		if (opt)
			s->opt = s->ahead.p;
		base = PB(s->ahead.p.id);
		whole = s->ahead.p.tail < s->ahead.p.txns_start ||
		    col_int(r, 0, 33) == base + s->ahead.p.tail;
		s->ahead.hdup = h && whole;
		if (s->ahead.hdup) {
			s->ahead.h = *h;
			s->ahead.lo = s->ahead.p.txns_start;
			s->ahead.hi = s->ahead.p.tail;
			s->ahead.off = 0;
			if (!PQgetisnull(r, 0, 31))
				s->ahead.off = col_int(r, 0, 31) - base;
			s->ahead.at = col_int(r, 0, 32);
		}
		if (more && whole && s->ahead.q.conf.dedup_window > 0)
			rc = pg_prefetch_ahead(s, s->ahead.p.id,
			    s->ahead.p.txns_start, h, n,
			    PQgetisnull(r, 0, 34) ?
				NULL :
				(const unsigned char *)PQgetvalue(r, 0, 34),
			    (size_t)PQgetlength(r, 0, 34));
	}
	PQclear(r);
	return rc;
}

/*
 * Ahead of a lookup of a message by name (queen_msg_find, then the read
 * of its facts or bytes): the queue and partition rows, the newest hash
 * row of h in [head, tail] and a small message, in one statement.
 */
int
pg_find_ahead(struct store *s, const char *queue, const char *part,
    const struct hash128 *h)
{
	struct args a = { 0 };
	PGresult *r;
	int64_t lo, hi;
	int rc;

	if (locked(s, ST_PART_GET) != ST_PART_GET)
		return 0;
	/* the kernel's lookup, getattr and getxattr of one name */
	if (ahead_ok(s) && s->ahead.hq && s->ahead.hp && s->ahead.tf.on &&
	    s->ahead.tf.highest && s->ahead.tf.pid == s->ahead.p.id &&
	    s->ahead.p.queue_id == s->ahead.q.id &&
	    strcmp(s->ahead.q.name, queue) == 0 &&
	    strcmp(s->ahead.p.name, part) == 0 &&
	    memcmp(s->ahead.tf.h.b, h->b, sizeof(h->b)) == 0)
		return 0;
	a_text(&a, queue);
	a_text(&a, part);
	a_bytes(&a, h->b, sizeof(h->b));
	a_int(&a, FIND_MSG_MAX);
	if (!(r = exec(s, ST_FIND_AHEAD, &a, &rc)))
		return rc;
	if (PQntuples(r) != 1) {
		PQclear(r);
		return 0;
	}
	read_queue(r, 0, 0, &s->ahead.q);
	read_part(r, 0, 21, &s->ahead.p);
	ahead_mark(s);
	s->ahead.hq = s->ahead.hp = true;
	lo = s->ahead.p.head < 1 ? 1 : s->ahead.p.head;
	hi = s->ahead.p.tail > MAX_OFFSET ? MAX_OFFSET : s->ahead.p.tail;
	if (lo > hi) {
		PQclear(r);
		return 0;
	}
	if (keep_find(s, r, 31, s->ahead.p.id, h, lo, hi, true) &&
	    keep_row_msg(s, r, false, 0, 33, s->ahead.p.id))
		return 0;
	PQclear(r);
	return 0;
}

/*
 * The message after a ready cursor, read with it (CUR_READY_ONE), kept
 * for the pop's read of it; only from the cursor the snapshot holds,
 * and from the message's own offset, which is the first one past the
 * cursor whatever cursor the statement saw.
 */
static void
ready_msg(struct store *s, PGresult *r, int i)
{
	if (s->ahead.hp)
		keep_row_msg(s, r, true, i, 19, col_int(r, i, 0));
}

/*
 * All rows are read before the first callback, as db.c collects them.
 * With parts, each row carries its partition too, which answers the
 * callback's lookup of it until the callback sends a statement.
 */
static int
cursor_walk(struct store *s, enum stmt id, const struct args *a, bool parts,
    cursor_row_cb cb, void *arg)
{
	struct cursor_row c;
	PGresult *r;
	int rc, i, n;
	bool fill = parts;

	if (!(r = exec(s, id, a, &rc)))
		return rc;
	n = PQntuples(r);
	if (parts && n > 0)
		ahead_mark(s);
	for (i = 0; rc == 0 && i < n; i++) {
		/* once a callback sent a write, the rows of this answer,
		 * read before it, answer nothing more */
		if (fill && (fill = ahead_ok(s))) {
			read_part(r, i, 8, &s->ahead.p);
			s->ahead.plock = false;
			s->ahead.hp = !PQgetisnull(r, i, 18) &&
			    PQgetvalue(r, i, 18)[0] != 0;
		}
		if ((rc = read_cursor(s, r, i, &c)) == 0)
			rc = cb(arg, &c);
	}
	PQclear(r);
	return rc;
}

/*
 * Inside a call that writes, the ready cursors one at a time, each
 * locked (CUR_READY_ONE): a pop takes the first as a rule, and had it
 * locked a page of them, every other daemon's pop would skip them all
 * until its commit, and the acks of their leases wait for it.
 */
int
pg_cursor_ready(struct store *s, int64_t gid, int64_t upto, int64_t after_at,
    int64_t after_pid, int64_t now, cursor_row_cb cb, void *arg)
{
	struct cursor_row c;
	PGresult *r;
	int rc = 0, n;

	if (locked(s, ST_CUR_READY) == ST_CUR_READY) {
		struct args a = { 0 };

		a_int(&a, gid);
		a_int(&a, upto);
		a_int(&a, after_at);
		a_int(&a, after_pid);
		return cursor_walk(s, ST_CUR_READY, &a, true, cb, arg);
	}
	for (n = 0; rc == 0 && n < CURSOR_READY_PAGE; n++) {
		struct args a = { 0 };

		r = NULL;
		/* the first row, read with the pop's queue and group */
		if (n == 0 && ahead_ok(s) && s->ahead.rd.on &&
		    s->ahead.rd.gid == gid && s->ahead.rd.upto == upto &&
		    s->ahead.rd.now == now && after_at == -1 &&
		    after_pid == 0) {
			r = s->ahead.rd.r;
			s->ahead.rd.r = NULL;
			s->ahead.rd.on = false;
			if (!r)
				break;
		}
		pg_ready_drop(s);
		a_int(&a, gid);
		a_int(&a, upto);
		a_int(&a, after_at);
		a_int(&a, after_pid);
		a_int(&a, now);
		if (!r && !(r = exec(s, ST_CUR_READY_LK, &a, &rc)))
			return rc;
		if (PQntuples(r) == 0) {
			PQclear(r);
			break;
		}
		ahead_mark(s);
		read_part(r, 0, 8, &s->ahead.p);
		s->ahead.hp = !PQgetisnull(r, 0, 18) &&
		    PQgetvalue(r, 0, 18)[0] != 0;
		ready_msg(s, r, 0);
		if ((rc = read_cursor(s, r, 0, &c)) == 0) {
			after_at = c.next_at;
			after_pid = c.partition_id;
			rc = cb(arg, &c);
		}
		if (s->ahead.ms.r == r)
			pg_keep_msg(s, NULL, false, 0, 0, 0, 0, false);
		PQclear(r);
	}
	return rc;
}

int
pg_cursor_list_group(struct store *s, int64_t gid, cursor_row_cb cb,
    void *arg)
{
	struct args a = { 0 };

	a_int(&a, gid);
	return cursor_walk(s, locked(s, ST_CUR_LIST_GROUP), &a, false, cb, arg);
}

int
pg_cursor_list_part(struct store *s, int64_t pid, cursor_row_cb cb, void *arg)
{
	struct args a = { 0 };

	a_int(&a, pid);
	return cursor_walk(s, locked(s, ST_CUR_LIST_PART), &a, false, cb, arg);
}

int
pg_cursor_delete_group(struct store *s, int64_t gid)
{
	struct args a = { 0 };

	a_int(&a, gid);
	return pg_run(s, ST_CUR_DEL_GROUP, &a, NULL);
}

/*
 * The tick's: a push and an ack of one partition that commit at once on
 * two daemons can each miss the other (READ COMMITTED): the ack finds no
 * message past the cursor and marks it caught up, the push found it
 * leased and woke nothing.  Such a cursor is woken here, and announced,
 * within a tick.
 */
int
pg_cursor_repair(struct store *s, int64_t now, int64_t *woken)
{
	struct args a = { 0 };
	PGresult *r;
	int rc, i;

	*woken = 0;
	a_int(&a, now);
	if (!(r = exec(s, ST_CUR_REPAIR, &a, &rc)))
		return rc;
	for (i = 0; rc == 0 && i < PQntuples(r); i++)
		rc = pg_notify(s, col_int(r, i, 0), col_int(r, i, 1));
	*woken = PQntuples(r);
	PQclear(r);
	return rc;
}

int
pg_cursor_min_committed(struct store *s, int64_t pid, int64_t *out)
{
	struct args a = { 0 };

	a_int(&a, pid);
	return pg_one_int(s, ST_CUR_MIN, &a, out);
}
