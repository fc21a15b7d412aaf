/*
 * db_rows.c - the SQLite backend's rows of queues, partitions, groups
 * and cursors: read, insert, update, delete and list them, through the
 * row cache (rcache.c) where the store is its file's only writer.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "store.h"

/* ---- queues ---- */

static void
read_queue(sqlite3_stmt *st, struct queue_row *r)
{
	int i;

	r->id = sqlite3_column_int64(st, 0);
	col_text(st, 1, r->name, sizeof(r->name));
	r->created_at = sqlite3_column_int64(st, 2);
	r->owner.uid = (uid_t)sqlite3_column_int64(st, 3);
	r->owner.gid = (gid_t)sqlite3_column_int64(st, 4);
	r->owner.mode = (mode_t)sqlite3_column_int64(st, 5);
	for (i = 0; i < QCONF_N; i++)
		*QCONF_FIELD(&r->conf, i) = sqlite3_column_int64(st, 6 + i);
}

static int
get_queue(struct store *s, sqlite3_stmt *st, struct queue_row *out)
{
	int rc = row(s, st);

	if (rc <= 0)
		return rc < 0 ? rc : -ENOENT;
	read_queue(st, out);
	sqlite3_reset(st);
	rcache_queue_put(s->rc, out);
	return 0;
}

int
s_queue_get(struct store *s, const char *name, struct queue_row *out)
{
	sqlite3_stmt *st;

	if (rcache_queue_by_name(s->rc, name, out))
		return 0;
	STMT(s, ST_QUEUE_GET, st);
	sqlite3_bind_text(st, 1, name, -1, SQLITE_STATIC);
	return get_queue(s, st, out);
}

int
s_queue_by_id(struct store *s, int64_t id, struct queue_row *out)
{
	sqlite3_stmt *st;

	if (rcache_queue_by_id(s->rc, id, out))
		return 0;
	STMT(s, ST_QUEUE_BY_ID, st);
	sqlite3_bind_int64(st, 1, id);
	return get_queue(s, st, out);
}

static void
bind_queue(sqlite3_stmt *st, const struct queue_row *r)
{
	int i;

	sqlite3_bind_text(st, 1, r->name, -1, SQLITE_STATIC);
	sqlite3_bind_int64(st, 2, r->created_at);
	sqlite3_bind_int64(st, 3, r->owner.uid);
	sqlite3_bind_int64(st, 4, r->owner.gid);
	sqlite3_bind_int64(st, 5, r->owner.mode);
	for (i = 0; i < QCONF_N; i++)
		sqlite3_bind_int64(st, 6 + i,
		    *QCONF_FIELD((struct qconf *)&r->conf, i));
}

int
s_queue_insert(struct store *s, struct queue_row *r)
{
	sqlite3_stmt *st;
	int rc;

	STMT(s, ST_QUEUE_INSERT, st);
	bind_queue(st, r);
	rc = run(s, st);
	if (rc == 0)
		r->id = sqlite3_last_insert_rowid(s->db);
	return rc;
}

int
s_queue_update(struct store *s, const struct queue_row *r)
{
	sqlite3_stmt *st;

	rcache_queue_drop(s->rc, r->id);
	STMT(s, ST_QUEUE_UPDATE, st);
	bind_queue(st, r);
	sqlite3_bind_int64(st, 21, r->id);
	return run(s, st);
}

static int
delete_part_rows(struct store *s, int64_t pid)
{
	sqlite3_stmt *st;
	int rc;

	STMT(s, ST_MSG_DELETE_PART, st);
	sqlite3_bind_int64(st, 1, PB(pid));
	sqlite3_bind_int64(st, 2, PB(pid) + MAX_OFFSET);
	if ((rc = run(s, st)) != 0)
		return rc;
	STMT(s, ST_TXN_DELETE_PART, st);
	sqlite3_bind_int64(st, 1, PB(pid));
	sqlite3_bind_int64(st, 2, PB(pid) + MAX_OFFSET);
	if ((rc = run(s, st)) == 0 && sqlite3_changes(s->db) > 0) {
		s->live -= sqlite3_changes(s->db);
		s->dirt++;
	}
	return rc;
}

static int
drop_part(void *arg, const struct part_row *p)
{
	return delete_part_rows(arg, p->id);
}


int
s_queue_delete(struct store *s, int64_t id)
{
	sqlite3_stmt *st;
	int rc;

	/* partitions go with the queue (cascade); their log rows first */
	if ((rc = s_part_list(s, id, "", drop_part, s)) != 0)
		return rc;
	rcache_clear(s->rc);
	STMT(s, ST_QUEUE_DELETE, st);
	sqlite3_bind_int64(st, 1, id);
	return run(s, st);
}

int
s_queue_list(struct store *s, queue_row_cb cb, void *arg)
{
	sqlite3_stmt *st;
	struct queue_row r;
	int rc;

	STMT(s, ST_QUEUE_LIST, st);
	while ((rc = row(s, st)) == 1) {
		read_queue(st, &r);
		if ((rc = cb(arg, &r)) != 0)
			break;
	}
	sqlite3_reset(st);
	return rc;
}

int
s_queue_usage(struct store *s, int64_t id, int64_t *msgs, int64_t *groups,
    int64_t *timers)
{
	sqlite3_stmt *st;
	int rc;

	STMT(s, ST_QUEUE_MSGS, st);
	sqlite3_bind_int64(st, 1, id);
	if ((rc = one_int(s, st, msgs)) != 0)
		return rc;
	STMT(s, ST_QUEUE_GROUPS, st);
	sqlite3_bind_int64(st, 1, id);
	if ((rc = one_int(s, st, groups)) != 0)
		return rc;
	STMT(s, ST_QUEUE_TIMERS, st);
	sqlite3_bind_int64(st, 1, id);
	return one_int(s, st, timers);
}

/* ---- partitions ---- */

static void
read_part(sqlite3_stmt *st, struct part_row *p)
{
	p->id = sqlite3_column_int64(st, 0);
	p->queue_id = sqlite3_column_int64(st, 1);
	col_text(st, 2, p->name, sizeof(p->name));
	col_text(st, 3, p->uuid, sizeof(p->uuid));
	p->head = sqlite3_column_int64(st, 4);
	p->tail = sqlite3_column_int64(st, 5);
	p->txns_start = sqlite3_column_int64(st, 6);
	p->last_push_at = sqlite3_column_int64(st, 7);
	p->duplicates = sqlite3_column_int64(st, 8);
	p->created_at = sqlite3_column_int64(st, 9);
}

static int
get_part(struct store *s, sqlite3_stmt *st, struct part_row *out)
{
	int rc = row(s, st);

	if (rc <= 0)
		return rc < 0 ? rc : -ENOENT;
	read_part(st, out);
	sqlite3_reset(st);
	rcache_part_put(s->rc, out);
	return 0;
}

int
s_part_get(struct store *s, int64_t qid, const char *name,
    struct part_row *out)
{
	sqlite3_stmt *st;

	if (rcache_part_by_name(s->rc, qid, name, out))
		return 0;
	STMT(s, ST_PART_GET, st);
	sqlite3_bind_int64(st, 1, qid);
	sqlite3_bind_text(st, 2, name, -1, SQLITE_STATIC);
	return get_part(s, st, out);
}

int
s_part_by_id(struct store *s, int64_t id, struct part_row *out)
{
	sqlite3_stmt *st;

	if (rcache_part_by_id(s->rc, id, out))
		return 0;
	STMT(s, ST_PART_BY_ID, st);
	sqlite3_bind_int64(st, 1, id);
	return get_part(s, st, out);
}

int
s_part_by_uuid(struct store *s, const char *uuid, struct part_row *out)
{
	sqlite3_stmt *st;

	if (rcache_part_by_uuid(s->rc, uuid, out))
		return 0;
	STMT(s, ST_PART_BY_UUID, st);
	sqlite3_bind_text(st, 1, uuid, -1, SQLITE_STATIC);
	return get_part(s, st, out);
}

int
s_part_insert(struct store *s, struct part_row *p)
{
	sqlite3_stmt *st;
	int rc;

	STMT(s, ST_PART_INSERT, st);
	sqlite3_bind_int64(st, 1, p->queue_id);
	sqlite3_bind_text(st, 2, p->name, -1, SQLITE_STATIC);
	sqlite3_bind_text(st, 3, p->uuid, -1, SQLITE_STATIC);
	sqlite3_bind_int64(st, 4, p->head);
	sqlite3_bind_int64(st, 5, p->tail);
	sqlite3_bind_int64(st, 6, p->txns_start);
	sqlite3_bind_int64(st, 7, p->last_push_at);
	sqlite3_bind_int64(st, 8, p->duplicates);
	sqlite3_bind_int64(st, 9, p->created_at);
	rc = run(s, st);
	if (rc == 0)
		p->id = sqlite3_last_insert_rowid(s->db);
	return rc;
}

int
s_part_update(struct store *s, const struct part_row *p)
{
	sqlite3_stmt *st;
	int rc;

	STMT(s, ST_PART_UPDATE, st);
	sqlite3_bind_int64(st, 1, p->head);
	sqlite3_bind_int64(st, 2, p->tail);
	sqlite3_bind_int64(st, 3, p->txns_start);
	sqlite3_bind_int64(st, 4, p->last_push_at);
	sqlite3_bind_int64(st, 5, p->duplicates);
	sqlite3_bind_int64(st, 6, p->id);
	if ((rc = run(s, st)) == 0)
		rcache_part_counters(s->rc, p);
	return rc;
}

/*
 * The callback may use the store, so rows are read a page at a time, by
 * name after the last one seen (the (queue_id, name) index): a queue of
 * 10,000 partitions used to cost the tick's maintenance a 6 MB array.
 */
#define PART_PAGE 128

int
s_part_list(struct store *s, int64_t qid, const char *from, part_row_cb cb,
    void *arg)
{
	struct part_row *v;
	char after[QUEEN_NAME_MAX + 1];
	sqlite3_stmt *st;
	size_t n, i;
	int rc = 0;

	if (!(v = malloc(PART_PAGE * sizeof(*v))))
		return -ENOMEM;
	snprintf(after, sizeof(after), "%s", from);
	do {
		n = 0;
		if (!(st = stmt(s, ST_PART_LIST))) {
			rc = db_errno(s->last_rc);
			break;
		}
		sqlite3_bind_int64(st, 1, qid);
		sqlite3_bind_text(st, 2, after, -1, SQLITE_STATIC);
		sqlite3_bind_int(st, 3, PART_PAGE);
		while (n < PART_PAGE && (rc = row(s, st)) == 1)
			read_part(st, &v[n++]);
		sqlite3_reset(st);
		if (rc < 0)
			break;
		rc = 0;
		for (i = 0; rc == 0 && i < n; i++)
			rc = cb(arg, &v[i]);
		if (n > 0)
			memcpy(after, v[n - 1].name, sizeof(after));
	} while (rc == 0 && n == PART_PAGE);
	free(v);
	return rc;
}

/* ---- groups ---- */

static void
read_group(sqlite3_stmt *st, struct group_row *g)
{
	g->id = sqlite3_column_int64(st, 0);
	g->queue_id = sqlite3_column_int64(st, 1);
	col_text(st, 2, g->name, sizeof(g->name));
	g->mode = sqlite3_column_int64(st, 3);
	g->since = sqlite3_column_int64(st, 4);
	g->created_at = sqlite3_column_int64(st, 5);
	g->batch = sqlite3_column_int64(st, 6);
	g->wait = sqlite3_column_int64(st, 7);
	g->auto_ack = sqlite3_column_int64(st, 8);
	g->has_owner = sqlite3_column_type(st, 9) != SQLITE_NULL;
	g->owner.uid = (uid_t)sqlite3_column_int64(st, 9);
	g->owner.gid = (gid_t)sqlite3_column_int64(st, 10);
	g->owner.mode = (mode_t)sqlite3_column_int64(st, 11);
}

static int
get_group(struct store *s, sqlite3_stmt *st, struct group_row *out)
{
	int rc = row(s, st);

	if (rc <= 0)
		return rc < 0 ? rc : -ENOENT;
	read_group(st, out);
	sqlite3_reset(st);
	rcache_group_put(s->rc, out);
	return 0;
}

int
s_group_get(struct store *s, int64_t qid, const char *name,
    struct group_row *out)
{
	sqlite3_stmt *st;

	if (rcache_group_by_name(s->rc, qid, name, out))
		return 0;
	STMT(s, ST_GROUP_GET, st);
	sqlite3_bind_int64(st, 1, qid);
	sqlite3_bind_text(st, 2, name, -1, SQLITE_STATIC);
	return get_group(s, st, out);
}

int
s_group_by_id(struct store *s, int64_t id, struct group_row *out)
{
	sqlite3_stmt *st;

	if (rcache_group_by_id(s->rc, id, out))
		return 0;
	STMT(s, ST_GROUP_BY_ID, st);
	sqlite3_bind_int64(st, 1, id);
	return get_group(s, st, out);
}

static void
bind_group(sqlite3_stmt *st, const struct group_row *g)
{
	sqlite3_bind_int64(st, 1, g->queue_id);
	sqlite3_bind_text(st, 2, g->name, -1, SQLITE_STATIC);
	sqlite3_bind_int64(st, 3, g->mode);
	sqlite3_bind_int64(st, 4, g->since);
	sqlite3_bind_int64(st, 5, g->created_at);
	sqlite3_bind_int64(st, 6, g->batch);
	sqlite3_bind_int64(st, 7, g->wait);
	sqlite3_bind_int64(st, 8, g->auto_ack);
	if (g->has_owner) {
		sqlite3_bind_int64(st, 9, g->owner.uid);
		sqlite3_bind_int64(st, 10, g->owner.gid);
		sqlite3_bind_int64(st, 11, g->owner.mode);
	}
}

int
s_group_insert(struct store *s, struct group_row *g)
{
	sqlite3_stmt *st;
	int rc;

	STMT(s, ST_GROUP_INSERT, st);
	bind_group(st, g);
	rc = run(s, st);
	if (rc == 0)
		g->id = sqlite3_last_insert_rowid(s->db);
	return rc;
}

int
s_group_update(struct store *s, const struct group_row *g)
{
	sqlite3_stmt *st;

	rcache_group_drop(s->rc, g->id);
	STMT(s, ST_GROUP_UPDATE, st);
	bind_group(st, g);
	sqlite3_bind_int64(st, 12, g->id);
	return run(s, st);
}

int
s_group_delete(struct store *s, int64_t id)
{
	sqlite3_stmt *st;

	rcache_group_drop(s->rc, id);
	STMT(s, ST_GROUP_DELETE, st);
	sqlite3_bind_int64(st, 1, id);
	return run(s, st);
}

int
s_group_list(struct store *s, int64_t qid, group_row_cb cb, void *arg)
{
	sqlite3_stmt *st;
	struct group_row *v = NULL, g;
	size_t n = 0, cap = 0, i;
	int rc;

	STMT(s, ST_GROUP_LIST, st);
	sqlite3_bind_int64(st, 1, qid);
	while ((rc = row(s, st)) == 1) {
		if (n == cap) {
			struct group_row *nv;

			cap = cap ? cap * 2 : 8;
			nv = realloc(v, cap * sizeof(*v));
			if (!nv) {
				rc = -ENOMEM;
				break;
			}
			v = nv;
		}
		read_group(st, &g);
		v[n++] = g;
	}
	sqlite3_reset(st);
	for (i = 0; rc == 0 && i < n; i++)
		rc = cb(arg, &v[i]);
	free(v);
	return rc;
}

/* ---- cursors ---- */

static void
read_cursor(sqlite3_stmt *st, struct cursor_row *c)
{
	c->partition_id = sqlite3_column_int64(st, 0);
	c->group_id = sqlite3_column_int64(st, 1);
	c->committed = sqlite3_column_int64(st, 2);
	c->batch_end = sqlite3_column_int64(st, 3);
	col_text(st, 4, c->lease_id, sizeof(c->lease_id));
	c->lease_expires_at = sqlite3_column_int64(st, 5);
	c->retry_count = sqlite3_column_int64(st, 6);
	c->next_at = sqlite3_column_int64(st, 7);
}

static int
get_cursor(struct store *s, sqlite3_stmt *st, struct cursor_row *out)
{
	int rc = row(s, st);

	if (rc <= 0)
		return rc < 0 ? rc : -ENOENT;
	read_cursor(st, out);
	sqlite3_reset(st);
	return 0;
}

int
s_cursor_get(struct store *s, int64_t pid, int64_t gid,
    struct cursor_row *out)
{
	sqlite3_stmt *st;

	STMT(s, ST_CUR_GET, st);
	sqlite3_bind_int64(st, 1, pid);
	sqlite3_bind_int64(st, 2, gid);
	return get_cursor(s, st, out);
}

int
s_cursor_put(struct store *s, const struct cursor_row *c)
{
	sqlite3_stmt *st;

	STMT(s, ST_CUR_PUT, st);
	sqlite3_bind_int64(st, 1, c->partition_id);
	sqlite3_bind_int64(st, 2, c->group_id);
	sqlite3_bind_int64(st, 3, c->committed);
	sqlite3_bind_int64(st, 4, c->batch_end);
	if (c->lease_id[0])
		sqlite3_bind_text(st, 5, c->lease_id, -1, SQLITE_STATIC);
	sqlite3_bind_int64(st, 6, c->lease_expires_at);
	sqlite3_bind_int64(st, 7, c->retry_count);
	sqlite3_bind_int64(st, 8, c->next_at);
	return run(s, st);
}

int
s_cursor_by_lease(struct store *s, const char *lease, struct cursor_row *out)
{
	sqlite3_stmt *st;

	STMT(s, ST_CUR_BY_LEASE, st);
	sqlite3_bind_text(st, 1, lease, -1, SQLITE_STATIC);
	return get_cursor(s, st, out);
}

/* Collect the rows first: callbacks may step other statements. */
static int
cursor_walk(struct store *s, sqlite3_stmt *st, cursor_row_cb cb, void *arg)
{
	struct cursor_row *v = NULL, c;
	size_t n = 0, cap = 0, i;
	int rc;

	while ((rc = row(s, st)) == 1) {
		if (n == cap) {
			struct cursor_row *nv;

			cap = cap ? cap * 2 : 16;
			nv = realloc(v, cap * sizeof(*v));
			if (!nv) {
				rc = -ENOMEM;
				break;
			}
			v = nv;
		}
		read_cursor(st, &c);
		v[n++] = c;
	}
	sqlite3_reset(st);
	for (i = 0; rc == 0 && i < n; i++)
		rc = cb(arg, &v[i]);
	free(v);
	return rc;
}

int
s_cursor_ready(struct store *s, int64_t gid, int64_t upto, int64_t after_at,
    int64_t after_pid, int64_t now, cursor_row_cb cb, void *arg)
{
	sqlite3_stmt *st;

	(void)now; /* leased rows are few to step over, and lock nothing */
	STMT(s, ST_CUR_READY, st);
	sqlite3_bind_int64(st, 1, gid);
	sqlite3_bind_int64(st, 2, upto);
	sqlite3_bind_int64(st, 3, after_at);
	sqlite3_bind_int64(st, 4, after_pid);
	return cursor_walk(s, st, cb, arg);
}

int
s_cursor_list_group(struct store *s, int64_t gid, cursor_row_cb cb,
    void *arg)
{
	sqlite3_stmt *st;

	STMT(s, ST_CUR_LIST_GROUP, st);
	sqlite3_bind_int64(st, 1, gid);
	return cursor_walk(s, st, cb, arg);
}

int
s_cursor_list_part(struct store *s, int64_t pid, cursor_row_cb cb, void *arg)
{
	sqlite3_stmt *st;

	STMT(s, ST_CUR_LIST_PART, st);
	sqlite3_bind_int64(st, 1, pid);
	return cursor_walk(s, st, cb, arg);
}

int
s_cursor_wake(struct store *s, int64_t pid, int64_t at)
{
	sqlite3_stmt *st;
	int rc;

	STMT(s, ST_CUR_WAKE, st);
	sqlite3_bind_int64(st, 1, pid);
	sqlite3_bind_int64(st, 2, at);
	rc = run(s, st);
	return rc < 0 ? rc : sqlite3_changes(s->db);
}

int
s_cursor_delete_group(struct store *s, int64_t gid)
{
	sqlite3_stmt *st;

	STMT(s, ST_CUR_DEL_GROUP, st);
	sqlite3_bind_int64(st, 1, gid);
	return run(s, st);
}

int
s_cursor_min_committed(struct store *s, int64_t pid, int64_t *out)
{
	sqlite3_stmt *st;

	STMT(s, ST_CUR_MIN, st);
	sqlite3_bind_int64(st, 1, pid);
	return one_int(s, st, out);
}
