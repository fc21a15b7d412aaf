/*
 * http_admin.c - the HTTP routes that look at and manage the store
 * (docs/http.md): DLQ, consumer groups (list, lag, delete, seek,
 * subscription), maintenance, health, resources/queues, overview,
 * metrics and Prometheus.  Helpers and routing: api_http.c.
 */
#include <errno.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core.h"
#include "queen_api.h"
#include "http_int.h"

/* ---- DLQ ---- */

struct dlqwalk {
	struct hctx *h;
	json_t *msgs;
	const char *queue, *partition;
	int64_t from, to, limit, offset, total;
	char part_uuid[QUEEN_ID_LEN + 1];
};

static int
dlq_one(void *arg, const struct queen_dlq_entry *e)
{
	struct dlqwalk *w = arg;
	struct queen_partition_info pi;
	char id[80];

	if (w->partition && strcmp(w->partition, e->partition))
		return 0;
	if ((w->from && e->failed_at < w->from) || (w->to && e->failed_at >
	    w->to))
		return 0;
	if (w->total++ < w->offset || (int64_t)json_array_size(w->msgs) >=
	    w->limit)
		return 0;
	pi.uuid[0] = '\0';
	queen_partition_get(w->h->q, w->queue, e->partition, &pi);
	snprintf(id, sizeof(id), "%s:%lld", pi.uuid, (long long)e->offset);
	json_array_append_new(w->msgs, json_pack("{s:s, s:s, s:s, s:s, s:s, "
	    "s:s, s:s, s:I, s:o, s:n, s:o, s:o}", "id", id, "transactionId",
	    e->txid ? e->txid : "", "partitionId", pi.uuid, "queue", w->queue,
	    "partition", part_out(e->partition), "consumerGroup",
	    e->group[0] ? e->group : QUEUE_MODE, "errorMessage", e->error &&
	    *e->error ? e->error : "Retries exhausted", "retryCount",
	    (json_int_t)e->retry_count, "data", payload_data(e->payload,
	    e->len), "producerSub", "createdAt", time_json(e->created_at),
	    "failedAt", time_json(e->failed_at)));
	return 0;
}

int
do_dlq(struct hctx *h)
{
	struct dlqwalk w = { .h = h };
	const char *from = http_arg(h, "from"), *to = http_arg(h, "to");
	int rc;

	w.queue = http_arg(h, "queue");
	w.partition = http_arg(h, "partition");
	if (w.partition)
		w.partition = part_in(w.partition);
	w.limit = arg_int(h, "limit", 100, 0, 100000);
	w.offset = arg_int(h, "offset", 0, 0, INT64_MAX);
	if ((from && *from && queen_time_parse(from, strlen(from), &w.from)) ||
	    (to && *to && queen_time_parse(to, strlen(to), &w.to)))
		return refuse(h, 400, "'from' and 'to' are ISO-8601 times");
	if (!w.queue)
		return refuse(h, 400, "the DLQ listing needs a 'queue'");
	w.msgs = json_array();
	rc = queen_name_valid(w.queue) ? queen_dlq_list(h->q, w.queue,
	    group_in(http_arg(h, "consumerGroup")), true, dlq_one, &w) : 0;
	if (rc != 0 && rc != -ENOENT) {
		json_decref(w.msgs);
		return refuse_rc(h, rc);
	}
	answer_json(h, 200, json_pack("{s:o, s:{s:I, s:I}, s:I}", "messages",
	    w.msgs, "pagination", "limit", (json_int_t)w.limit, "offset",
	    (json_int_t)w.offset, "total", (json_int_t)w.total));
	return 0;
}

/* ---- consumer groups: delete, seek, subscription ---- */

struct qnames {
	char (*names)[QUEEN_NAME_MAX + 1];
	size_t n, cap;
};

static int
qname_one(void *arg, const struct queen_queue_info *qi)
{
	struct qnames *l = arg;

	if (l->n == l->cap) {
		size_t cap = l->cap ? l->cap * 2 : 16;
		void *p = realloc(l->names, cap * sizeof(*l->names));

		if (!p)
			return -ENOMEM;
		l->names = p;
		l->cap = cap;
	}
	snprintf(l->names[l->n++], sizeof(l->names[0]), "%s", qi->name);
	return 0;
}

int
do_group_delete(struct hctx *h, const char *group, const char *queue)
{
	struct qnames l = { 0 };
	int64_t deleted = 0;
	bool meta = !http_arg(h, "deleteMetadata") ||
	    arg_true(h, "deleteMetadata");
	int rc = 0;
	json_t *out;

	if (!queue)
		rc = queen_queue_list(h->q, qname_one, &l);
	else if (qname_one(&l, &(struct queen_queue_info){ 0 }) == 0)
		snprintf(l.names[0], sizeof(l.names[0]), "%s", queue);
	for (size_t i = 0; rc == 0 && i < l.n; i++) {
		struct queen_cursor_info;
		int r = queen_group_delete(h->q, l.names[i], group);

		if (r == 0)
			deleted++;
		else if (r != -ENOENT && r != -EINVAL)
			rc = r;
	}
	free(l.names);
	if (rc != 0)
		return refuse_rc(h, rc);
	h->ans->wrote = deleted > 0;
	out = json_pack("{s:b, s:s, s:I, s:b}", "success", 1, "consumerGroup",
	    group, "deletedPartitions", (json_int_t)deleted, "metadataDeleted",
	    meta);
	if (queue)
		json_object_set_new(out, "queueName", json_string(queue));
	answer_json(h, 200, out);
	return 0;
}

static int
count_part(void *arg, const struct queen_partition_info *pi)
{
	(*(int64_t *)arg)++;
	return 0;
}

int
do_seek(struct hctx *h, const char *group, const char *queue, json_t *b)
{
	json_t *ts = json_object_get(b, "timestamp");
	bool end = json_is_true(json_object_get(b, "toEnd"));
	int64_t ms = 0, parts = 0;
	int rc;

	if (!end && (!json_is_string(ts) || queen_time_parse(
	    json_string_value(ts), strlen(json_string_value(ts)), &ms)))
		return refuse(h, 400, "seek needs an ISO-8601 'timestamp' or "
		    "'toEnd': true");
	if (!name_ok(h, "queue", queue) || !name_ok(h, "group", group))
		return 0;
	if ((rc = queen_group_ensure(h->q, queue, group)) != 0 ||
	    (rc = queen_seek(h->q, queue, group, NULL, end ? QUEEN_POS_END :
	    QUEEN_POS_TIME, end ? 0 : ms + 1)) != 0)
		return refuse_rc(h, rc);
	queen_partition_list(h->q, queue, count_part, &parts);
	h->ans->wrote = true;
	answer_json(h, 200, json_pack("{s:b, s:s, s:s, s:b, s:o, s:I}",
	    "success", 1, "consumerGroup", group, "queueName", queue,
	    "seekToEnd", end, "targetTimestamp", end ? json_null() :
	    json_string(json_string_value(ts)), "partitionsUpdated",
	    (json_int_t)parts));
	return 0;
}

int
do_subscription(struct hctx *h, const char *group, json_t *b)
{
	json_t *ts = json_object_get(b, "subscriptionTimestamp");
	struct qnames l = { 0 };
	struct queen_group_info gi;
	const char *key = "subscription", *vp;
	char val[64], t[40];
	int64_t ms, rows = 0;
	int rc;

	if (!json_is_string(ts) || queen_time_parse(json_string_value(ts),
	    strlen(json_string_value(ts)), &ms))
		return refuse(h, 400, "'subscriptionTimestamp' must be an "
		    "ISO-8601 time");
	queen_time_format(ms + 1, t, sizeof(t));
	snprintf(val, sizeof(val), "since %s", t);
	vp = val;
	rc = queen_queue_list(h->q, qname_one, &l);
	for (size_t i = 0; rc == 0 && i < l.n; i++) {
		if (queen_group_get(h->q, l.names[i], group, &gi) != 0)
			continue;
		rc = queen_config_set(h->q, l.names[i], group, &key, &vp, 1);
		rows++;
	}
	free(l.names);
	if (rc != 0)
		return refuse_rc(h, rc);
	h->ans->wrote = rows > 0;
	queen_time_format(ms, t, sizeof(t));
	answer_json(h, 200, json_pack("{s:b, s:s, s:s, s:I}", "success", 1,
	    "consumerGroup", group, "newTimestamp", t, "rowsUpdated",
	    (json_int_t)rows));
	return 0;
}

/* ---- maintenance, health, metrics, resources ---- */

int
do_maintenance(struct hctx *h, json_t *b, bool pop)
{
	bool *flag = pop ? &h->q->http_pop_maint : &h->q->http_maint;

	if (b) {
		json_t *en = json_object_get(b, "enabled");

		if (!json_is_boolean(en))
			return refuse(h, 400, "'enabled' must be true or false");
		*flag = json_is_true(en);
	}
	if (pop)
		answer_json(h, 200, json_pack("{s:b, s:s}",
		    "popMaintenanceMode", *flag, "message", *flag ?
		    "pops answer nothing" : "pops run"));
	else
		answer_json(h, 200, json_pack("{s:b, s:b, s:i, s:b, s:{}, s:s}",
		    "maintenanceMode", *flag, "popMaintenanceMode",
		    h->q->http_pop_maint, "bufferedMessages", 0,
		    "bufferHealthy", 1, "bufferStats", "message",
		    "queenfs stores pushes as usual in maintenance mode"));
	return 0;
}

int
do_health(struct hctx *h)
{
	char why[256];
	bool bad = queen_failed(h->q, why, sizeof(why));

	answer_json(h, bad ? 503 : 200, json_pack("{s:s, s:s, s:s, s:s}",
	    "status", bad ? "unhealthy" : "healthy", "database", bad ?
	    "failed" : "connected", "server", "queenfs", "version",
	    h->r->version ? h->r->version : ""));
	return 0;
}

struct qlist {
	struct hctx *h;
	json_t *arr;
	int64_t msgs;
};

static int
queue_one(void *arg, const struct queen_queue_info *qi)
{
	struct qlist *l = arg;
	struct queen_stats st = { 0 };

	queen_stats_get(l->h->q, qi->name, NULL, &st);
	l->msgs += st.messages;
	return json_array_append_new(l->arr, json_pack("{s:I, s:s, s:n, s:n, "
	    "s:o, s:I, s:{s:I, s:I, s:I}}", "id", (json_int_t)qi->id, "name",
	    qi->name, "namespace", "task", "createdAt",
	    time_json(qi->created_at), "partitions", (json_int_t)st.partitions,
	    "messages", "total", (json_int_t)st.messages, "pending",
	    (json_int_t)(st.depth - st.leased_msgs), "processing",
	    (json_int_t)st.leased_msgs)) ? -ENOMEM : 0;
}

int
do_queues(struct hctx *h, bool metrics)
{
	struct qlist l = { .h = h, .arr = json_array() };
	int rc = queen_queue_list(h->q, queue_one, &l);

	if (rc != 0) {
		json_decref(l.arr);
		return refuse_rc(h, rc);
	}
	if (!metrics) {
		answer_json(h, 200, json_pack("{s:o}", "queues", l.arr));
		return 0;
	}
	answer_json(h, 200, json_pack("{s:I, s:I, s:{s:I}, s:{s:s}, s:o}",
	    "uptime", (json_int_t)h->r->uptime_s, "requests",
	    (json_int_t)h->r->requests, "messages", "total",
	    (json_int_t)l.msgs, "database", "status", "connected", "queues",
	    l.arr));
	return 0;
}

struct pwalk {
	struct hctx *h;
	const char *queue;
	json_t *arr;
	int64_t total, pending, processing;
};

static int
part_one(void *arg, const struct queen_partition_info *pi)
{
	struct pwalk *w = arg;
	int64_t total = pi->tail >= pi->head ? pi->tail - pi->head + 1 : 0;

	w->total += total;
	return json_array_append_new(w->arr, json_pack("{s:s, s:s, s:{s:I}}",
	    "id", pi->uuid, "name", part_out(pi->name), "stats", "total",
	    (json_int_t)total)) ? -ENOMEM : 0;
}

/* One queue: its partitions, and queue-mode totals (404 if unknown). */
int
do_queue_detail(struct hctx *h, const char *queue)
{
	struct pwalk w = { .h = h, .queue = queue };
	struct queen_queue_info qi;
	struct queen_stats st = { 0 };
	int rc;

	if (!queen_name_valid(queue) ||
	    queen_queue_get(h->q, queue, &qi) == -ENOENT)
		return refuse(h, 404, "no queue '%.64s'", queue);
	w.arr = json_array();
	if ((rc = queen_partition_list(h->q, queue, part_one, &w)) != 0 ||
	    (rc = queen_stats_get(h->q, queue, NULL, &st)) != 0) {
		json_decref(w.arr);
		return refuse_rc(h, rc);
	}
	answer_json(h, 200, json_pack("{s:I, s:s, s:n, s:n, s:o, s:o, "
	    "s:{s:I, s:I, s:I, s:I}}", "id", (json_int_t)qi.id, "name",
	    qi.name, "namespace", "task", "createdAt",
	    time_json(qi.created_at), "partitions", w.arr, "totals",
	    "messages", (json_int_t)st.messages, "pending",
	    (json_int_t)(st.depth - st.leased_msgs), "processing",
	    (json_int_t)st.leased_msgs, "deadLetter", (json_int_t)st.dlq));
	return 0;
}

int
do_overview(struct hctx *h)
{
	struct qlist l = { .h = h, .arr = json_array() };
	int64_t parts = 0;
	int rc = queen_queue_list(h->q, queue_one, &l);

	for (size_t i = 0; rc == 0 && i < json_array_size(l.arr); i++)
		parts += json_integer_value(json_object_get(json_array_get(
		    l.arr, i), "partitions"));
	if (rc != 0) {
		json_decref(l.arr);
		return refuse_rc(h, rc);
	}
	answer_json(h, 200, json_pack("{s:I, s:I, s:i, s:i, s:{s:I}}",
	    "queues", (json_int_t)json_array_size(l.arr), "partitions",
	    (json_int_t)parts, "namespaces", 0, "tasks", 0, "messages",
	    "total", (json_int_t)l.msgs));
	json_decref(l.arr);
	return 0;
}

int
do_prometheus(struct hctx *h)
{
	struct qlist l = { .h = h, .arr = json_array() };
	int rc = queen_queue_list(h->q, queue_one, &l);
	char *s = NULL;
	size_t n;

	json_decref(l.arr);
	if (rc != 0)
		return refuse_rc(h, rc);
	n = 512;
	if (!(s = malloc(n)))
		return -ENOMEM;
	snprintf(s, n, "# TYPE queen_uptime_seconds gauge\n"
	    "queen_uptime_seconds %lld\n"
	    "# TYPE queen_http_requests_total counter\n"
	    "queen_http_requests_total %llu\n"
	    "# TYPE queen_messages gauge\nqueen_messages %lld\n",
	    (long long)h->r->uptime_s, (unsigned long long)h->r->requests,
	    (long long)l.msgs);
	h->ans->status = 200;
	h->ans->body = s;
	h->ans->text = true;
	return 0;
}

/* ---- consumer groups: listing and lag ---- */

struct gwalk {
	struct hctx *h;
	const char *queue;
	const char *only;       /* one group, or NULL */
	int64_t min_lag_s;      /* lagging: seconds, or -1 */
	json_t *out;            /* array, or object keyed by queue */
	json_t *parts;          /* the current group's partitions */
	int64_t total, maxlag_s, now;
	bool any_lease;
};

static int
cursor_one(void *arg, const struct queen_cursor_info *ci)
{
	struct gwalk *w = arg;

	w->total += ci->lag;
	w->any_lease = w->any_lease || ci->leased;
	if (w->parts)
		json_array_append_new(w->parts, json_pack("{s:s, s:I, s:I, "
		    "s:b}", "partition", part_out(ci->partition),
		    "totalConsumed", (json_int_t)ci->committed, "offsetLag",
		    (json_int_t)ci->lag, "leaseActive", ci->leased));
	return 0;
}

static int
group_one(void *arg, const struct queen_group_info *gi)
{
	struct gwalk *w = arg;
	struct queen_stats st = { 0 };
	int64_t lag_s;
	int rc;

	if (w->only && strcmp(w->only, gi->name))
		return 0;
	w->total = 0;
	w->any_lease = false;
	w->parts = w->only ? json_array() : NULL;
	if ((rc = queen_cursor_list(w->h->q, w->queue, gi->name, cursor_one,
	    w)) != 0 ||
	    (rc = queen_stats_get(w->h->q, w->queue, gi->name, &st)) != 0) {
		json_decref(w->parts);
		return rc;
	}
	lag_s = st.oldest_waiting ? (w->now - st.oldest_waiting) / 1000 : 0;
	if (w->only) {
		json_object_set_new(w->out, w->queue, json_pack("{s:o}",
		    "partitions", w->parts));
		return 0;
	}
	if (w->min_lag_s >= 0) {
		if (lag_s >= w->min_lag_s && st.depth > 0)
			json_array_append_new(w->out, json_pack("{s:s, s:s, "
			    "s:I, s:I}", "consumer_group", gi->name,
			    "queue_name", w->queue, "offset_lag",
			    (json_int_t)st.depth, "time_lag_seconds",
			    (json_int_t)lag_s));
		return 0;
	}
	return json_array_append_new(w->out, json_pack("{s:s, s:s, s:i, s:I, "
	    "s:I, s:s, s:s, s:o}", "name", gi->name, "queueName", w->queue,
	    "members", 0, "totalLag", (json_int_t)st.depth, "maxTimeLag",
	    (json_int_t)lag_s, "state", w->any_lease ? "active" : st.depth ?
	    "lagging" : "stable", "subscriptionMode", gi->mode ==
	    QUEEN_SUB_NEW ? "new" : gi->mode == QUEEN_SUB_SINCE ? "timestamp" :
	    "all", "subscriptionTimestamp", gi->mode == QUEEN_SUB_SINCE ?
	    time_json(gi->since) : json_null())) ? -ENOMEM : 0;
}

int
do_groups(struct hctx *h, const char *only, bool lagging)
{
	struct gwalk w = { .h = h, .only = only, .min_lag_s = -1,
	    .now = queen_now(h->q) };
	struct qnames l = { 0 };
	int rc;

	if (lagging)
		w.min_lag_s = arg_int(h, "minLagSeconds", 3600, 0, INT64_MAX);
	w.out = only ? json_object() : json_array();
	rc = queen_queue_list(h->q, qname_one, &l);
	for (size_t i = 0; rc == 0 && i < l.n; i++) {
		w.queue = l.names[i];
		rc = queen_group_list(h->q, w.queue, group_one, &w);
	}
	free(l.names);
	if (rc != 0) {
		json_decref(w.out);
		return refuse_rc(h, rc);
	}
	answer_json(h, 200, w.out);
	return 0;
}
