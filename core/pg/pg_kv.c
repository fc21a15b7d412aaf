/*
 * pg_kv.c - the PostgreSQL backend's rows beside the log: dead letters,
 * KV entries and their namespaces' owners, and timers.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "pg_store.h"

/* ---- dead letters ---- */

int
pg_dlq_insert(struct store *s, const struct dlq_row *d)
{
	struct args a = { 0 };

	a_int(&a, d->queue_id);
	a_int(&a, d->partition_id);
	a_text(&a, d->group);
	a_int(&a, d->offset);
	a_str(&a, d->txid);
	a_bytes(&a, d->payload, d->len);
	a_int(&a, d->created_at);
	a_int(&a, d->failed_at);
	a_int(&a, d->retry_count);
	a_str(&a, d->error);
	return pg_run(s, ST_DLQ_INSERT, &a, NULL);
}

int
pg_dlq_list(struct store *s, int64_t qid, const char *group, const char *part,
    const char *txid, bool payload, queen_dlq_cb cb, void *arg)
{
	struct args a = { 0 };
	struct queen_dlq_entry e;
	PGresult *r;
	int rc, i;

	a_int(&a, qid);
	a_text(&a, group);
	if (txid) {
		a_text(&a, part);
		a_str(&a, txid);
		r = exec(s, payload ? ST_DLQ_GET : ST_DLQ_GET_META, &a, &rc);
	} else {
		r = exec(s, payload ? ST_DLQ_LIST : ST_DLQ_LIST_META, &a, &rc);
	}
	if (!r)
		return rc;
	for (i = 0; rc == 0 && i < PQntuples(r); i++) {
		memset(&e, 0, sizeof(e));
		e.id = col_int(r, i, 0);
		pg_col_text(r, i, 1, e.partition, sizeof(e.partition));
		pg_col_text(r, i, 2, e.group, sizeof(e.group));
		e.txid = col_str(r, i, 3);
		e.error = col_str(r, i, 4);
		e.offset = col_int(r, i, 5);
		e.retry_count = col_int(r, i, 6);
		e.created_at = col_int(r, i, 7);
		e.failed_at = col_int(r, i, 8);
		if (payload) {
			e.payload = PQgetvalue(r, i, 9);
			e.len = (size_t)PQgetlength(r, i, 9);
		} else {
			e.len = (size_t)col_int(r, i, 9);
		}
		rc = cb(arg, &e);
	}
	PQclear(r);
	return rc;
}

int
pg_dlq_delete(struct store *s, int64_t id)
{
	struct args a = { 0 };

	a_int(&a, id);
	return pg_run(s, ST_DLQ_DELETE, &a, NULL);
}

int
pg_dlq_count(struct store *s, int64_t qid, const char *group, int64_t *out)
{
	struct args a = { 0 };

	a_int(&a, qid);
	a_text(&a, group);
	return pg_one_int(s, ST_DLQ_COUNT, &a, out);
}

/* ---- KV ---- */

/* value, version, expires_at, updated_at from column vcol on */
static struct queen_kv_value *
kv_copy(const PGresult *r, int vcol)
{
	struct queen_kv_value *v;
	size_t len = (size_t)PQgetlength(r, 0, vcol);

	v = malloc(sizeof(*v) + len + 1);
	if (!v)
		return NULL;
	v->version = col_int(r, 0, vcol + 1);
	v->expires_at = col_int(r, 0, vcol + 2);
	v->updated_at = col_int(r, 0, vcol + 3);
	v->len = len;
	v->data = v + 1;
	if (len)
		memcpy(v + 1, PQgetvalue(r, 0, vcol), len);
	((char *)(v + 1))[len] = '\0';
	return v;
}

/*
 * The key's lock, to the commit, sent ahead of a write's statement (no
 * round trip of its own).  A read-modify-write of a transaction (incr,
 * putIfAbsent, an expected version) takes it before its read, and every
 * write of the key takes it before it writes: where the read found no
 * row there is no row to lock, and another session's insert would
 * otherwise land between the read and the write.
 */
static int
kv_lock(struct store *s, const char *ns, const char *key)
{
	struct args a = { 0 };

	if (!s->in_tx)
		return 0;
	a_text(&a, ns);
	a_text(&a, key);
	return pipe_defer(s, ST_KV_LOCK, NULL, &a);
}

int
pg_kv_get(struct store *s, const char *ns, const char *key, int64_t now,
    struct queen_kv_value **out)
{
	struct args a = { 0 };
	enum stmt id = locked(s, ST_KV_GET);
	PGresult *r;
	int rc;

	*out = NULL;
	/* in a call that writes: the key, and its row if it has one, are
	 * held to the commit (the read waits for a writer before it) */
	if (id == ST_KV_GET_LK && (rc = kv_lock(s, ns, key)) != 0)
		return rc;
	a_text(&a, ns);
	a_text(&a, key);
	a_int(&a, now);
	if (!(r = exec(s, id, &a, &rc)))
		return rc;
	if (PQntuples(r) == 0) {
		PQclear(r);
		return -ENOENT;
	}
	*out = kv_copy(r, 0);
	PQclear(r);
	return *out ? 0 : -ENOMEM;
}

int
pg_kv_put(struct store *s, const char *ns, const char *key, const void *data,
    size_t len, int64_t expires_at, int64_t now)
{
	struct args a = { 0 };
	int rc;

	if ((rc = kv_lock(s, ns, key)) != 0)
		return rc;
	a_text(&a, ns);
	a_text(&a, key);
	a_bytes(&a, data, len);
	a_int(&a, expires_at);
	a_int(&a, now);
	return pg_run(s, ST_KV_PUT, &a, NULL);
}

int
pg_kv_delete(struct store *s, const char *ns, const char *key, int64_t now)
{
	struct args a = { 0 };
	int rc;

	if ((rc = kv_lock(s, ns, key)) != 0)
		return rc;
	a_text(&a, ns);
	a_text(&a, key);
	a_int(&a, now);
	return changed_or_enoent(s, ST_KV_DELETE, &a);
}

int
pg_kv_set_expiry(struct store *s, const char *ns, const char *key,
    int64_t expires_at, int64_t now)
{
	struct args a = { 0 };
	int rc;

	if ((rc = kv_lock(s, ns, key)) != 0)
		return rc;
	a_text(&a, ns);
	a_text(&a, key);
	a_int(&a, now);
	a_int(&a, expires_at);
	return changed_or_enoent(s, ST_KV_EXPIRY, &a);
}

int
pg_kv_list(struct store *s, const char *ns, int64_t now, queen_kv_cb cb,
    void *arg)
{
	struct args a = { 0 };
	struct queen_kv_value v;
	PGresult *r;
	int rc, i;

	a_text(&a, ns);
	a_int(&a, now);
	if (!(r = exec(s, ST_KV_LIST, &a, &rc)))
		return rc;
	for (i = 0; rc == 0 && i < PQntuples(r); i++) {
		v.data = PQgetvalue(r, i, 1);
		v.len = (size_t)PQgetlength(r, i, 1);
		v.version = col_int(r, i, 2);
		v.expires_at = col_int(r, i, 3);
		v.updated_at = col_int(r, i, 4);
		rc = cb(arg, col_str(r, i, 0), &v);
	}
	PQclear(r);
	return rc;
}

int
pg_kv_purge(struct store *s, int64_t now, int64_t limit, int64_t *deleted)
{
	struct args a = { 0 };

	a_int(&a, now);
	a_int(&a, limit);
	return pg_run(s, ST_KV_PURGE, &a, deleted);
}

int
pg_ns_get(struct store *s, const char *ns, struct queen_owner *o)
{
	struct args a = { 0 };
	PGresult *r;
	int rc;

	a_text(&a, ns);
	if (!(r = exec(s, ST_NS_GET, &a, &rc)))
		return rc;
	rc = PQntuples(r) ? 0 : -ENOENT;
	if (rc == 0) {
		o->uid = (uid_t)col_int(r, 0, 0);
		o->gid = (gid_t)col_int(r, 0, 1);
		o->mode = (mode_t)col_int(r, 0, 2);
	}
	PQclear(r);
	return rc;
}

int
pg_ns_put(struct store *s, const char *ns, const struct queen_owner *o,
    int64_t now)
{
	struct args a = { 0 };

	a_text(&a, ns);
	a_int(&a, o->uid);
	a_int(&a, o->gid);
	a_int(&a, o->mode);
	a_int(&a, now);
	return pg_run(s, ST_NS_PUT, &a, NULL);
}

int
pg_ns_delete(struct store *s, const char *ns)
{
	struct args a = { 0 };

	a_text(&a, ns);
	return changed_or_enoent(s, ST_NS_DELETE, &a);
}

int
pg_ns_list(struct store *s, int64_t now, queen_name_cb cb, void *arg)
{
	struct args a = { 0 };
	PGresult *r;
	int rc, i;

	a_int(&a, now);
	if (!(r = exec(s, ST_NS_LIST, &a, &rc)))
		return rc;
	for (i = 0; rc == 0 && i < PQntuples(r); i++)
		rc = cb(arg, col_str(r, i, 0));
	PQclear(r);
	return rc;
}

/* ---- timers ---- */

static struct queen_timer_info *
timer_copy(const PGresult *r, bool payload)
{
	struct queen_timer_info *t;
	size_t len = (size_t)PQgetlength(r, 0, 4);

	t = calloc(1, sizeof(*t) + (payload ? len : 0) + 1);
	if (!t)
		return NULL;
	pg_col_text(r, 0, 0, t->key, sizeof(t->key));
	pg_col_text(r, 0, 1, t->partition, sizeof(t->partition));
	t->due_at = col_int(r, 0, 2);
	t->created_at = col_int(r, 0, 3);
	t->len = len;
	t->payload = t + 1;
	if (payload && len)
		memcpy(t + 1, PQgetvalue(r, 0, 4), len);
	return t;
}

int
pg_timer_put(struct store *s, int64_t qid, const char *key, const char *part,
    int64_t due_at, const void *payload, size_t len, int64_t now)
{
	struct args a = { 0 };

	a_int(&a, qid);
	a_text(&a, key);
	a_text(&a, part);
	a_int(&a, due_at);
	a_bytes(&a, payload, len);
	a_int(&a, now);
	return pg_run(s, ST_TIMER_PUT, &a, NULL);
}

int
pg_timer_delete(struct store *s, int64_t qid, const char *key)
{
	struct args a = { 0 };

	a_int(&a, qid);
	a_text(&a, key);
	return changed_or_enoent(s, ST_TIMER_DELETE, &a);
}

static int
one_timer(struct store *s, enum stmt id, const struct args *a, bool payload,
    int64_t *qid, struct queen_timer_info **out)
{
	PGresult *r;
	int rc;

	*out = NULL;
	if (!(r = exec(s, id, a, &rc)))
		return rc;
	if (PQntuples(r) == 0) {
		PQclear(r);
		return -ENOENT;
	}
	if (qid)
		*qid = col_int(r, 0, 5);
	*out = timer_copy(r, payload);
	PQclear(r);
	return *out ? 0 : -ENOMEM;
}

int
pg_timer_get(struct store *s, int64_t qid, const char *key, bool payload,
    struct queen_timer_info **out)
{
	struct args a = { 0 };

	a_int(&a, qid);
	a_text(&a, key);
	return one_timer(s, ST_TIMER_GET, &a, payload, NULL, out);
}

int
pg_timer_list(struct store *s, int64_t qid, queen_timer_cb cb, void *arg)
{
	struct args a = { 0 };
	struct queen_timer_info t;
	PGresult *r;
	int rc, i;

	a_int(&a, qid);
	if (!(r = exec(s, ST_TIMER_LIST, &a, &rc)))
		return rc;
	for (i = 0; rc == 0 && i < PQntuples(r); i++) {
		memset(&t, 0, sizeof(t));
		pg_col_text(r, i, 0, t.key, sizeof(t.key));
		pg_col_text(r, i, 1, t.partition, sizeof(t.partition));
		t.due_at = col_int(r, i, 2);
		t.created_at = col_int(r, i, 3);
		t.payload = PQgetvalue(r, i, 4);
		t.len = (size_t)PQgetlength(r, i, 4);
		rc = cb(arg, &t);
	}
	PQclear(r);
	return rc;
}

int
pg_timer_due(struct store *s, int64_t now, int64_t *qid,
    struct queen_timer_info **out)
{
	struct args a = { 0 };

	a_int(&a, now);
	return one_timer(s, ST_TIMER_DUE, &a, true, qid, out);
}
