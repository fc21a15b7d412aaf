/*
 * db_kv.c - the SQLite backend's rows beside the log: dead letters, KV
 * entries and their namespaces' owners, and timers.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "store.h"

/* ---- dead letters ---- */

int
s_dlq_insert(struct store *s, const struct dlq_row *d)
{
	sqlite3_stmt *st;

	STMT(s, ST_DLQ_INSERT, st);
	sqlite3_bind_int64(st, 1, d->queue_id);
	sqlite3_bind_int64(st, 2, d->partition_id);
	sqlite3_bind_text(st, 3, d->group, -1, SQLITE_TRANSIENT);
	sqlite3_bind_int64(st, 4, d->offset);
	sqlite3_bind_text(st, 5, d->txid, -1, SQLITE_TRANSIENT);
	sqlite3_bind_blob64(st, 6, d->len ? d->payload : "", d->len,
	    SQLITE_TRANSIENT);
	sqlite3_bind_int64(st, 7, d->created_at);
	sqlite3_bind_int64(st, 8, d->failed_at);
	sqlite3_bind_int64(st, 9, d->retry_count);
	if (d->error)
		sqlite3_bind_text(st, 10, d->error, -1, SQLITE_TRANSIENT);
	return run(s, st);
}

int
s_dlq_list(struct store *s, int64_t qid, const char *group, const char *part,
    const char *txid, bool payload, queen_dlq_cb cb, void *arg)
{
	sqlite3_stmt *st;
	struct queen_dlq_entry e;
	int rc;

	if (txid) {
		STMT(s, payload ? ST_DLQ_GET : ST_DLQ_GET_META, st);
		sqlite3_bind_text(st, 3, part, -1, SQLITE_STATIC);
		sqlite3_bind_text(st, 4, txid, -1, SQLITE_STATIC);
	} else {
		STMT(s, payload ? ST_DLQ_LIST : ST_DLQ_LIST_META, st);
	}
	sqlite3_bind_int64(st, 1, qid);
	sqlite3_bind_text(st, 2, group, -1, SQLITE_STATIC);
	while ((rc = row(s, st)) == 1) {
		memset(&e, 0, sizeof(e));
		e.id = sqlite3_column_int64(st, 0);
		col_text(st, 1, e.partition, sizeof(e.partition));
		col_text(st, 2, e.group, sizeof(e.group));
		e.txid = (const char *)sqlite3_column_text(st, 3);
		e.error = (const char *)sqlite3_column_text(st, 4);
		e.offset = sqlite3_column_int64(st, 5);
		e.retry_count = sqlite3_column_int64(st, 6);
		e.created_at = sqlite3_column_int64(st, 7);
		e.failed_at = sqlite3_column_int64(st, 8);
		if (payload) {
			e.payload = sqlite3_column_blob(st, 9);
			e.len = (size_t)sqlite3_column_bytes(st, 9);
		} else {
			e.len = (size_t)sqlite3_column_int64(st, 9);
		}
		if ((rc = cb(arg, &e)) != 0)
			break;
	}
	sqlite3_reset(st);
	return rc;
}

int
s_dlq_delete(struct store *s, int64_t id)
{
	sqlite3_stmt *st;

	STMT(s, ST_DLQ_DELETE, st);
	sqlite3_bind_int64(st, 1, id);
	return run(s, st);
}

int
s_dlq_count(struct store *s, int64_t qid, const char *group, int64_t *out)
{
	sqlite3_stmt *st;

	STMT(s, ST_DLQ_COUNT, st);
	sqlite3_bind_int64(st, 1, qid);
	sqlite3_bind_text(st, 2, group, -1, SQLITE_STATIC);
	return one_int(s, st, out);
}

/* ---- KV ---- */

static struct queen_kv_value *
kv_copy(sqlite3_stmt *st, int vcol)
{
	struct queen_kv_value *v;
	size_t len = (size_t)sqlite3_column_bytes(st, vcol);
	const void *data = sqlite3_column_blob(st, vcol);

	v = malloc(sizeof(*v) + len + 1);
	if (!v)
		return NULL;
	v->version = sqlite3_column_int64(st, vcol + 1);
	v->expires_at = sqlite3_column_int64(st, vcol + 2);
	v->updated_at = sqlite3_column_int64(st, vcol + 3);
	v->len = len;
	v->data = v + 1;
	if (len)
		memcpy(v + 1, data, len);
	((char *)(v + 1))[len] = '\0';
	return v;
}

int
s_kv_get(struct store *s, const char *ns, const char *key, int64_t now,
    struct queen_kv_value **out)
{
	sqlite3_stmt *st;
	int rc;

	*out = NULL;
	STMT(s, ST_KV_GET, st);
	sqlite3_bind_text(st, 1, ns, -1, SQLITE_STATIC);
	sqlite3_bind_text(st, 2, key, -1, SQLITE_STATIC);
	sqlite3_bind_int64(st, 3, now);
	rc = row(s, st);
	if (rc <= 0)
		return rc < 0 ? rc : -ENOENT;
	*out = kv_copy(st, 0);
	sqlite3_reset(st);
	return *out ? 0 : -ENOMEM;
}

int
s_kv_put(struct store *s, const char *ns, const char *key, const void *data,
    size_t len, int64_t expires_at, int64_t now)
{
	sqlite3_stmt *st;

	STMT(s, ST_KV_PUT, st);
	sqlite3_bind_text(st, 1, ns, -1, SQLITE_STATIC);
	sqlite3_bind_text(st, 2, key, -1, SQLITE_STATIC);
	sqlite3_bind_blob64(st, 3, len ? data : "", len, SQLITE_STATIC);
	sqlite3_bind_int64(st, 4, expires_at);
	sqlite3_bind_int64(st, 5, now);
	return run(s, st);
}

static int
changed_or_enoent(struct store *s, sqlite3_stmt *st)
{
	int rc = run(s, st);

	if (rc == 0 && sqlite3_changes(s->db) == 0)
		return -ENOENT;
	return rc;
}

int
s_kv_delete(struct store *s, const char *ns, const char *key, int64_t now)
{
	sqlite3_stmt *st;

	STMT(s, ST_KV_DELETE, st);
	sqlite3_bind_text(st, 1, ns, -1, SQLITE_STATIC);
	sqlite3_bind_text(st, 2, key, -1, SQLITE_STATIC);
	sqlite3_bind_int64(st, 3, now);
	return changed_or_enoent(s, st);
}

int
s_kv_set_expiry(struct store *s, const char *ns, const char *key,
    int64_t expires_at, int64_t now)
{
	sqlite3_stmt *st;

	STMT(s, ST_KV_EXPIRY, st);
	sqlite3_bind_text(st, 1, ns, -1, SQLITE_STATIC);
	sqlite3_bind_text(st, 2, key, -1, SQLITE_STATIC);
	sqlite3_bind_int64(st, 3, now);
	sqlite3_bind_int64(st, 4, expires_at);
	return changed_or_enoent(s, st);
}

int
s_kv_list(struct store *s, const char *ns, int64_t now, queen_kv_cb cb,
    void *arg)
{
	sqlite3_stmt *st;
	struct queen_kv_value v;
	int rc;

	STMT(s, ST_KV_LIST, st);
	sqlite3_bind_text(st, 1, ns, -1, SQLITE_STATIC);
	sqlite3_bind_int64(st, 3, now);
	while ((rc = row(s, st)) == 1) {
		v.data = sqlite3_column_blob(st, 1);
		v.len = (size_t)sqlite3_column_bytes(st, 1);
		v.version = sqlite3_column_int64(st, 2);
		v.expires_at = sqlite3_column_int64(st, 3);
		v.updated_at = sqlite3_column_int64(st, 4);
		if ((rc = cb(arg, (const char *)sqlite3_column_text(st, 0),
		    &v)) != 0)
			break;
	}
	sqlite3_reset(st);
	return rc;
}

int
s_kv_purge(struct store *s, int64_t now, int64_t limit, int64_t *deleted)
{
	sqlite3_stmt *st;
	int rc;

	STMT(s, ST_KV_PURGE, st);
	sqlite3_bind_int64(st, 1, now);
	sqlite3_bind_int64(st, 2, limit);
	rc = run(s, st);
	*deleted = rc == 0 ? sqlite3_changes(s->db) : 0;
	return rc;
}

int
s_ns_get(struct store *s, const char *ns, struct queen_owner *o)
{
	sqlite3_stmt *st;
	int rc;

	STMT(s, ST_NS_GET, st);
	sqlite3_bind_text(st, 1, ns, -1, SQLITE_STATIC);
	rc = row(s, st);
	if (rc <= 0)
		return rc < 0 ? rc : -ENOENT;
	o->uid = (uid_t)sqlite3_column_int64(st, 0);
	o->gid = (gid_t)sqlite3_column_int64(st, 1);
	o->mode = (mode_t)sqlite3_column_int64(st, 2);
	sqlite3_reset(st);
	return 0;
}

int
s_ns_put(struct store *s, const char *ns, const struct queen_owner *o,
    int64_t now)
{
	sqlite3_stmt *st;

	STMT(s, ST_NS_PUT, st);
	sqlite3_bind_text(st, 1, ns, -1, SQLITE_STATIC);
	sqlite3_bind_int64(st, 2, o->uid);
	sqlite3_bind_int64(st, 3, o->gid);
	sqlite3_bind_int64(st, 4, o->mode);
	sqlite3_bind_int64(st, 5, now);
	return run(s, st);
}

int
s_ns_delete(struct store *s, const char *ns)
{
	sqlite3_stmt *st;

	STMT(s, ST_NS_DELETE, st);
	sqlite3_bind_text(st, 1, ns, -1, SQLITE_STATIC);
	return changed_or_enoent(s, st);
}

int
s_ns_list(struct store *s, int64_t now, queen_name_cb cb, void *arg)
{
	sqlite3_stmt *st;
	int rc;

	STMT(s, ST_NS_LIST, st);
	sqlite3_bind_int64(st, 1, now);
	while ((rc = row(s, st)) == 1) {
		if ((rc = cb(arg, (const char *)sqlite3_column_text(st, 0))))
			break;
	}
	sqlite3_reset(st);
	return rc;
}

/* ---- timers ---- */

static struct queen_timer_info *
timer_copy(sqlite3_stmt *st, bool payload)
{
	struct queen_timer_info *t;
	size_t len = (size_t)sqlite3_column_bytes(st, 4);

	t = calloc(1, sizeof(*t) + (payload ? len : 0) + 1);
	if (!t)
		return NULL;
	col_text(st, 0, t->key, sizeof(t->key));
	col_text(st, 1, t->partition, sizeof(t->partition));
	t->due_at = sqlite3_column_int64(st, 2);
	t->created_at = sqlite3_column_int64(st, 3);
	t->len = len;
	t->payload = t + 1;
	if (payload && len)
		memcpy(t + 1, sqlite3_column_blob(st, 4), len);
	return t;
}

int
s_timer_put(struct store *s, int64_t qid, const char *key, const char *part,
    int64_t due_at, const void *payload, size_t len, int64_t now)
{
	sqlite3_stmt *st;

	STMT(s, ST_TIMER_PUT, st);
	sqlite3_bind_int64(st, 1, qid);
	sqlite3_bind_text(st, 2, key, -1, SQLITE_STATIC);
	sqlite3_bind_text(st, 3, part, -1, SQLITE_STATIC);
	sqlite3_bind_int64(st, 4, due_at);
	sqlite3_bind_blob64(st, 5, len ? payload : "", len, SQLITE_STATIC);
	sqlite3_bind_int64(st, 6, now);
	return run(s, st);
}

int
s_timer_delete(struct store *s, int64_t qid, const char *key)
{
	sqlite3_stmt *st;

	STMT(s, ST_TIMER_DELETE, st);
	sqlite3_bind_int64(st, 1, qid);
	sqlite3_bind_text(st, 2, key, -1, SQLITE_STATIC);
	return changed_or_enoent(s, st);
}

int
s_timer_get(struct store *s, int64_t qid, const char *key, bool payload,
    struct queen_timer_info **out)
{
	sqlite3_stmt *st;
	int rc;

	*out = NULL;
	STMT(s, ST_TIMER_GET, st);
	sqlite3_bind_int64(st, 1, qid);
	sqlite3_bind_text(st, 2, key, -1, SQLITE_STATIC);
	rc = row(s, st);
	if (rc <= 0)
		return rc < 0 ? rc : -ENOENT;
	*out = timer_copy(st, payload);
	sqlite3_reset(st);
	return *out ? 0 : -ENOMEM;
}

int
s_timer_list(struct store *s, int64_t qid, queen_timer_cb cb, void *arg)
{
	sqlite3_stmt *st;
	struct queen_timer_info t;
	int rc;

	STMT(s, ST_TIMER_LIST, st);
	sqlite3_bind_int64(st, 1, qid);
	while ((rc = row(s, st)) == 1) {
		memset(&t, 0, sizeof(t));
		col_text(st, 0, t.key, sizeof(t.key));
		col_text(st, 1, t.partition, sizeof(t.partition));
		t.due_at = sqlite3_column_int64(st, 2);
		t.created_at = sqlite3_column_int64(st, 3);
		t.payload = sqlite3_column_blob(st, 4);
		t.len = (size_t)sqlite3_column_bytes(st, 4);
		if ((rc = cb(arg, &t)) != 0)
			break;
	}
	sqlite3_reset(st);
	return rc;
}

int
s_timer_due(struct store *s, int64_t now, int64_t *qid,
    struct queen_timer_info **out)
{
	sqlite3_stmt *st;
	int rc;

	*out = NULL;
	STMT(s, ST_TIMER_DUE, st);
	sqlite3_bind_int64(st, 1, now);
	rc = row(s, st);
	if (rc <= 0)
		return rc < 0 ? rc : -ENOENT;
	*qid = sqlite3_column_int64(st, 5);
	*out = timer_copy(st, true);
	sqlite3_reset(st);
	return *out ? 0 : -ENOMEM;
}
