/*
 * http_status.c - the HTTP routes that report on the store without
 * changing it (docs/http.md): /status, /status/queues[/{queue}] and the
 * message browser /messages[/{partitionId}/{transactionId}].  Every
 * figure is queue mode's view (the group-less cursor), as in
 * /resources.  Helpers and routing: api_http.c.
 */
#include <errno.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core.h"
#include "queen_api.h"
#include "http_int.h"

#define MSG_CHUNK 256

/* ---- small lists gathered before the next core call ---- */

struct plist {
	struct queen_partition_info *p;
	size_t n, cap;
};

static int
plist_one(void *arg, const struct queen_partition_info *pi)
{
	struct plist *l = arg;

	if (l->n == l->cap) {
		size_t cap = l->cap ? l->cap * 2 : 16;
		void *p = realloc(l->p, cap * sizeof(*l->p));

		if (!p)
			return -ENOMEM;
		l->p = p;
		l->cap = cap;
	}
	l->p[l->n++] = *pi;
	return 0;
}

struct qinfos {
	struct queen_queue_info *v;
	size_t n, cap;
};

static int
qinfo_one(void *arg, const struct queen_queue_info *qi)
{
	struct qinfos *l = arg;

	if (l->n == l->cap) {
		size_t cap = l->cap ? l->cap * 2 : 16;
		void *p = realloc(l->v, cap * sizeof(*l->v));

		if (!p)
			return -ENOMEM;
		l->v = p;
		l->cap = cap;
	}
	l->v[l->n++] = *qi;
	return 0;
}

/* ---- status ---- */

/* queue mode's message counts of one queue, added into *t */
static int
queue_counts(struct hctx *h, const char *queue, struct queen_stats *t,
    struct queen_queue_summary *s)
{
	struct queen_stats st = { 0 };
	struct queen_queue_summary qs = { 0 };
	int rc;

	if ((rc = queen_stats_get(h->q, queue, NULL, &st)) != 0 ||
	    (rc = queen_queue_summary(h->q, queue, &qs)) != 0)
		return rc;
	t->partitions += st.partitions;
	t->messages += st.messages;
	t->depth += st.depth;
	t->leased_msgs += st.leased_msgs;
	s->leases += qs.leases;
	s->dlq += qs.dlq;
	return 0;
}

static json_t *
counts_json(const struct queen_stats *t, const struct queen_queue_summary *s)
{
	return json_pack("{s:I, s:I, s:I, s:I, s:I}", "total",
	    (json_int_t)t->messages, "pending",
	    (json_int_t)(t->depth - t->leased_msgs), "processing",
	    (json_int_t)t->leased_msgs, "completed",
	    (json_int_t)(t->messages - t->depth), "deadLetter",
	    (json_int_t)s->dlq);
}

int
do_status(struct hctx *h)
{
	const char *from = http_arg(h, "from"), *to = http_arg(h, "to");
	const char *only = http_arg(h, "queue");
	struct qinfos l = { 0 };
	struct queen_stats t = { 0 };
	struct queen_queue_summary s = { 0 };
	int64_t f = 0, e = queen_now(h->q), nq = 0;
	int rc;

	if ((from && *from && queen_time_parse(from, strlen(from), &f)) ||
	    (to && *to && queen_time_parse(to, strlen(to), &e)))
		return refuse(h, 400, "'from' and 'to' are ISO-8601 times");
	if (!from || !*from)
		f = e - 3600 * 1000;
	rc = queen_queue_list(h->q, qinfo_one, &l);
	for (size_t i = 0; rc == 0 && i < l.n; i++) {
		if (only && *only && strcmp(only, l.v[i].name))
			continue;
		nq++;
		rc = queue_counts(h, l.v[i].name, &t, &s);
	}
	free(l.v);
	if (rc != 0)
		return refuse_rc(h, rc);
	answer_json(h, 200,
	    json_pack("{s:{s:o, s:o}, s:[], s:{s:I, s:I}, "
		      "s:o, s:{s:I}, s:{s:I}}",
		"timeRange", "from", time_json(f), "to", time_json(e),
		"throughput", "queues", "total", (json_int_t)nq, "partitions",
		(json_int_t)t.partitions, "messages", counts_json(&t, &s),
		"leases", "active", (json_int_t)s.leases, "deadLetterQueue",
		"totalMessages", (json_int_t)s.dlq));
	return 0;
}

static json_t *
queue_row(struct hctx *h, const struct queen_queue_info *qi, int *rc)
{
	struct queen_stats t = { 0 };
	struct queen_queue_summary s = { 0 };

	if ((*rc = queue_counts(h, qi->name, &t, &s)) != 0)
		return NULL;
	return json_pack("{s:I, s:s, s:n, s:n, s:o, s:I, s:o, s:{s:I}}", "id",
	    (json_int_t)qi->id, "name", qi->name, "namespace", "task",
	    "createdAt", time_json(qi->created_at), "partitions",
	    (json_int_t)t.partitions, "messages", counts_json(&t, &s), "leases",
	    "active", (json_int_t)s.leases);
}

int
do_status_queues(struct hctx *h)
{
	struct qinfos l = { 0 };
	int64_t limit = arg_int(h, "limit", 100, 0, 100000);
	int64_t offset = arg_int(h, "offset", 0, 0, INT64_MAX);
	json_t *arr = json_array(), *row;
	int rc = queen_queue_list(h->q, qinfo_one, &l);

	for (size_t i = (size_t)offset; rc == 0 && offset < (int64_t)l.n &&
	     i < l.n && (int64_t)json_array_size(arr) < limit;
	     i++)
		if ((row = queue_row(h, &l.v[i], &rc)))
			json_array_append_new(arr, row);
	if (rc != 0) {
		free(l.v);
		json_decref(arr);
		return refuse_rc(h, rc);
	}
	answer_json(h, 200,
	    json_pack("{s:o, s:{s:I, s:I, s:I}}", "queues", arr, "pagination",
		"limit", (json_int_t)limit, "offset", (json_int_t)offset,
		"total", (json_int_t)l.n));
	free(l.v);
	return 0;
}

int
do_status_queue(struct hctx *h, const char *queue)
{
	struct queen_queue_info qi;
	struct plist pl = { 0 };
	json_t *row, *parts;
	int rc;

	if (!queen_name_valid(queue) ||
	    queen_queue_get(h->q, queue, &qi) == -ENOENT)
		return refuse(h, 404, "no queue '%.64s'", queue);
	if ((rc = queen_partition_list(h->q, queue, plist_one, &pl)) != 0 ||
	    !(row = queue_row(h, &qi, &rc))) {
		free(pl.p);
		return refuse_rc(h, rc ? rc : -ENOMEM);
	}
	parts = json_array();
	for (size_t i = 0; i < pl.n; i++) {
		const struct queen_partition_info *p = &pl.p[i];

		json_array_append_new(parts,
		    json_pack("{s:s, s:s, s:I, s:o}", "id", p->uuid, "name",
			part_out(p->name), "messages",
			(json_int_t)(p->tail >= p->head ?
				p->tail - p->head + 1 :
				0),
			"lastPushAt",
			p->last_push_at ? time_json(p->last_push_at) :
					  json_null()));
	}
	free(pl.p);
	answer_json(h, 200,
	    json_pack("{s:o, s:o}", "queue", row, "partitions", parts));
	return 0;
}

/* ---- the message browser ---- */

/* queue mode's cursors and live leases of one queue */
struct qstate {
	struct queen_cursor_info *c;
	size_t nc, capc;
	struct queen_lease_info *l;
	size_t nl, capl;
};

static int
cur_one(void *arg, const struct queen_cursor_info *ci)
{
	struct qstate *s = arg;

	if (s->nc == s->capc) {
		size_t cap = s->capc ? s->capc * 2 : 16;
		void *p = realloc(s->c, cap * sizeof(*s->c));

		if (!p)
			return -ENOMEM;
		s->c = p;
		s->capc = cap;
	}
	s->c[s->nc++] = *ci;
	return 0;
}

static int
lease_one(void *arg, const struct queen_lease_info *li)
{
	struct qstate *s = arg;

	if (s->nl == s->capl) {
		size_t cap = s->capl ? s->capl * 2 : 16;
		void *p = realloc(s->l, cap * sizeof(*s->l));

		if (!p)
			return -ENOMEM;
		s->l = p;
		s->capl = cap;
	}
	s->l[s->nl++] = *li;
	return 0;
}

static int
qstate_load(struct hctx *h, const char *queue, struct qstate *s)
{
	int rc = queen_cursor_list(h->q, queue, NULL, cur_one, s);

	if (rc == -ENOENT) /* queue mode never popped: no cursor */
		rc = 0;
	if (rc == 0)
		rc = queen_lease_list(h->q, queue, NULL, lease_one, s);
	return rc;
}

static int
dlq_hit(void *arg, const struct queen_dlq_entry *e)
{
	const struct queen_dlq_entry **out = arg;
	struct queen_dlq_entry *c = malloc(
	    sizeof(*c) + (e->error ? strlen(e->error) + 1 : 0));

	if (!c)
		return -ENOMEM;
	*c = *e;
	c->payload = NULL;
	c->txid = NULL;
	if (e->error) {
		c->error = (char *)(c + 1);
		strcpy((char *)(c + 1), e->error);
	}
	free((void *)*out);
	*out = c;
	return 0;
}

/*
 * The status of the message at off in partition: dead_letter when queue
 * mode dead-lettered it, completed at or below the cursor, processing
 * under a live lease, else pending.  *retries: the budget used on it.
 */
static const char *
msg_status(struct hctx *h, const struct qstate *s, const char *queue,
    const char *partition, int64_t off, const char *txid,
    struct queen_dlq_entry **dead, int64_t *retries)
{
	const struct queen_cursor_info *c = NULL;
	struct queen_dlq_entry *d = NULL;

	*retries = 0;
	for (size_t i = 0; i < s->nc && !c; i++)
		if (!strcmp(s->c[i].partition, partition))
			c = &s->c[i];
	if (txid &&
	    queen_dlq_get(h->q, queue, NULL, partition, txid, false, dlq_hit,
		&d) == 0 &&
	    d && d->offset == off) {
		*retries = d->retry_count;
		if (dead)
			*dead = d;
		else
			free(d);
		return "dead_letter";
	}
	free(d);
	if (c && off <= c->committed)
		return "completed";
	for (size_t i = 0; i < s->nl; i++)
		if (!strcmp(s->l[i].partition, partition) &&
		    off >= s->l[i].first && off <= s->l[i].last) {
			*retries = s->l[i].retry_count;
			return "processing";
		}
	if (c && off == c->committed + 1)
		*retries = c->retry_count;
	return "pending";
}

static json_t *
msg_json(struct hctx *h, const struct qstate *s, const char *queue,
    const struct queen_batch *b, const struct queen_msg *m,
    struct queen_dlq_entry **dead, int64_t *retries)
{
	char id[QUEEN_ID_LEN + 32];
	const char *st = msg_status(h, s, queue, b->partition, m->offset,
	    m->txid, dead, retries);

	snprintf(id, sizeof(id), "%s:%lld", b->partition_uuid,
	    (long long)m->offset);
	return json_pack("{s:s, s:s, s:s, s:s, s:s, s:s, s:s?, s:o}", "id", id,
	    "transactionId", m->txid ? m->txid : "", "partitionId",
	    b->partition_uuid, "queue", queue, "partition",
	    part_out(b->partition), "status", st, "traceId", m->trace_id,
	    "createdAt", time_json(m->created_at));
}

/* Append partition p's messages past *skip to arr, up to limit in all. */
static int
list_part(struct hctx *h, const struct qstate *s, const char *queue,
    const struct queen_partition_info *p, int64_t *skip, int64_t limit,
    json_t *arr)
{
	int64_t from = p->head, retries;
	struct queen_batch *b = NULL;
	int rc;

	while ((int64_t)json_array_size(arr) < limit) {
		if ((rc = queen_msg_read(h->q, queue, p->name, from, MSG_CHUNK,
			 false, &b)) != 0)
			return rc;
		if (!b)
			return 0;
		for (size_t i = 0; i < b->n; i++) {
			json_t *o;

			from = b->msgs[i].offset + 1;
			if (*skip > 0) {
				(*skip)--;
				continue;
			}
			if ((int64_t)json_array_size(arr) >= limit)
				break;
			o = msg_json(h, s, queue, b, &b->msgs[i], NULL,
			    &retries);
			if (!o || json_array_append_new(arr, o)) {
				queen_batch_free(b);
				return -ENOMEM;
			}
		}
		queen_batch_free(b);
		b = NULL;
	}
	return 0;
}

int
do_messages(struct hctx *h)
{
	const char *queue = http_arg(h, "queue");
	const char *part = http_arg(h, "partition");
	int64_t limit = arg_int(h, "limit", 200, 0, 10000);
	int64_t skip = arg_int(h, "offset", 0, 0, INT64_MAX);
	struct qstate s = { 0 };
	struct plist pl = { 0 };
	json_t *arr;
	int rc;

	if (!queue || !*queue)
		return refuse(h, 400, "the message listing needs a 'queue'");
	if (!queen_name_valid(queue) ||
	    queen_queue_get(h->q, queue, &(struct queen_queue_info){ 0 }) ==
		-ENOENT)
		return refuse(h, 404, "no queue '%.64s'", queue);
	if (part && *part)
		part = part_in(part);
	else
		part = NULL;
	arr = json_array();
	rc = qstate_load(h, queue, &s);
	if (rc == 0)
		rc = queen_partition_list(h->q, queue, plist_one, &pl);
	for (size_t i = 0; rc == 0 && i < pl.n; i++)
		if (!part || !strcmp(part, pl.p[i].name))
			rc = list_part(h, &s, queue, &pl.p[i], &skip, limit,
			    arr);
	free(pl.p);
	free(s.c);
	free(s.l);
	if (rc != 0) {
		json_decref(arr);
		return refuse_rc(h, rc);
	}
	answer_json(h, 200,
	    json_pack("{s:o, s:s}", "messages", arr, "mode", "queue"));
	return 0;
}

/* The (queue, partition) a partitionId names: a walk over partitions. */
static int
part_by_uuid(struct hctx *h, const char *uuid, char *queue, char *part)
{
	struct qinfos l = { 0 };
	int rc = queen_queue_list(h->q, qinfo_one, &l), found = -ENOENT;

	for (size_t i = 0; rc == 0 && found && i < l.n; i++) {
		struct plist pl = { 0 };

		rc = queen_partition_list(h->q, l.v[i].name, plist_one, &pl);
		for (size_t j = 0; rc == 0 && j < pl.n; j++)
			if (!strcmp(pl.p[j].uuid, uuid)) {
				snprintf(queue, QUEEN_NAME_MAX + 1, "%s",
				    l.v[i].name);
				snprintf(part, QUEEN_NAME_MAX + 1, "%s",
				    pl.p[j].name);
				found = 0;
				break;
			}
		free(pl.p);
	}
	free(l.v);
	return rc ? rc : found;
}

int
do_message(struct hctx *h, const char *uuid, const char *txid)
{
	char queue[QUEEN_NAME_MAX + 1], part[QUEEN_NAME_MAX + 1];
	struct queen_dlq_entry *dead = NULL;
	struct queen_batch *b = NULL;
	struct qstate s = { 0 };
	int64_t off, retries;
	json_t *o = NULL;
	int rc;

	rc = part_by_uuid(h, uuid, queue, part);
	if (rc == 0)
		rc = queen_msg_find(h->q, queue, part, txid, &off);
	if (rc == -ENOENT)
		return refuse(h, 404,
		    "no message '%.64s' in partition "
		    "'%.64s'",
		    txid, uuid);
	if (rc == 0 && strcmp(h->r->method, "GET"))
		return refuse(h, 409,
		    "queenfs cannot delete one message: a "
		    "partition is an append-only log; ack it, let retention "
		    "drop it, or delete the queue");
	if (rc == 0)
		rc = qstate_load(h, queue, &s);
	if (rc == 0)
		rc = queen_msg_read(h->q, queue, part, off, 1, true, &b);
	if (rc == 0 && (!b || b->msgs[0].offset != off))
		rc = -ENOENT; /* purged between the two calls */
	if (rc == 0 &&
	    !(o = msg_json(h, &s, queue, b, &b->msgs[0], &dead, &retries)))
		rc = -ENOMEM;
	if (rc == 0) {
		json_t *d = payload_data(b->msgs[0].payload, b->msgs[0].len);

		json_object_set(o, "data", d);
		json_object_set_new(o, "payload", d);
		json_object_set_new(o, "errorMessage",
		    dead && dead->error && *dead->error ?
			json_string(dead->error) :
			json_null());
		json_object_set_new(o, "retryCount", json_integer(retries));
	}
	queen_batch_free(b);
	free(dead);
	free(s.c);
	free(s.l);
	if (rc != 0)
		return refuse_rc(h, rc);
	answer_json(h, 200, o);
	return 0;
}
