/*
 * http_msg.c - the HTTP routes that move messages (docs/http.md):
 * configure and queue delete, push, pop, ack (one and batch),
 * transaction and lease extend.  Helpers and routing: api_http.c.
 */
#include <errno.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core.h"
#include "queen_api.h"
#include "http_int.h"

/* ---- configure, queue delete ---- */

struct optdef {
	const char *key;
	int type;            /* JSON_INTEGER or JSON_TRUE (bool) */
	json_int_t dflt;
	const char *cfg;     /* the queue's config key, or NULL: echoed */
};

static const struct optdef optdefs[] = {
	{ "leaseTime", JSON_INTEGER, 300, "lease_time" },
	{ "retryLimit", JSON_INTEGER, 3, "retry_limit" },
	{ "retryDelay", JSON_INTEGER, 1000, NULL },
	{ "priority", JSON_INTEGER, 0, NULL },
	{ "maxSize", JSON_INTEGER, 0, NULL },
	{ "ttl", JSON_INTEGER, 3600, NULL },
	{ "deadLetterQueue", JSON_TRUE, 0, NULL },
	{ "dlqAfterMaxRetries", JSON_TRUE, 0, NULL },
	{ "delayedProcessing", JSON_INTEGER, 0, "delay" },
	{ "windowBuffer", JSON_INTEGER, 0, "window_buffer" },
	{ "retentionEnabled", JSON_TRUE, 0, NULL },
	{ "retentionSeconds", JSON_INTEGER, 0, "retention" },
	{ "completedRetentionSeconds", JSON_INTEGER, 0,
	    "completed_retention" },
	{ "maxWaitTimeSeconds", JSON_INTEGER, 0, NULL },
	{ "encryptionEnabled", JSON_TRUE, 0, NULL },
};
#define NOPTS (sizeof(optdefs) / sizeof(optdefs[0]))

/* The Default partition exists after a configure (0.15 names its id). */
static int
default_partition(struct queen *q, const char *queue,
    struct queen_partition_info *pi)
{
	struct queue_row qr;
	struct part_row pr;
	int rc;

	if ((rc = tx_begin(q)) != 0)
		return rc;
	if ((rc = queue_load(q, queue, &qr)) == 0)
		rc = part_load(q, &qr, QUEEN_DEFAULT_PARTITION, true, &pr);
	if ((rc = tx_end(q, rc)) == 0)
		rc = queen_partition_get(q, queue, QUEEN_DEFAULT_PARTITION, pi);
	return rc;
}

int
do_configure(struct hctx *h, json_t *b)
{
	json_t *opts = json_object_get(b, "options"), *echo, *v, *out;
	const char *queue, *ns, *task;
	const char *keys[NOPTS + 1], *vals[NOPTS + 1];
	char valbuf[NOPTS + 1][24];
	struct queen_partition_info pi;
	bool dlq = false;
	size_t n = 0, i;
	int rc;

	if (opt_string(h, b, "queue", &queue) < 0 ||
	    opt_string(h, b, "namespace", &ns) < 0 ||
	    opt_string(h, b, "task", &task) < 0)
		return 0;
	if (!queue)
		return refuse(h, 400, "configure needs a string 'queue'");
	if (!name_ok(h, "queue", queue))
		return 0;
	if (opts && !json_is_object(opts) && !json_is_null(opts))
		return refuse(h, 400, "'options' must be an object");
	echo = json_object();
	for (i = 0; i < NOPTS; i++) {
		const struct optdef *d = &optdefs[i];
		json_int_t x = d->dflt;

		v = json_is_object(opts) ? json_object_get(opts, d->key) : NULL;
		if (v && !json_is_null(v)) {
			if (d->type == JSON_TRUE && !json_is_boolean(v)) {
				json_decref(echo);
				return refuse(h, 400, "option '%s' is true or "
				    "false", d->key);
			}
			if (d->type == JSON_INTEGER && (!json_is_integer(v) ||
			    json_integer_value(v) < 0)) {
				json_decref(echo);
				return refuse(h, 400, "option '%s' is a whole "
				    "number, 0 or more", d->key);
			}
			x = d->type == JSON_TRUE ? json_is_true(v) :
			    json_integer_value(v);
		}
		json_object_set_new(echo, d->key, d->type == JSON_TRUE ?
		    json_boolean(x) : json_integer(x));
		if (d->type == JSON_TRUE && x && strstr(d->key, "ead"))
			dlq = true;
		if (d->type == JSON_TRUE && x && !strcmp(d->key,
		    "dlqAfterMaxRetries"))
			dlq = true;
		if (!d->cfg)
			continue;
		if (!strcmp(d->cfg, "lease_time") && x == 0)
			x = 300;
		snprintf(valbuf[n], sizeof(valbuf[n]), "%lld", (long long)x);
		keys[n] = d->cfg;
		vals[n] = valbuf[n];
		n++;
	}
	keys[n] = "dlq";
	vals[n] = dlq ? "1" : "0";
	n++;
	rc = queen_queue_create(h->q, queue, NULL);
	if (rc == 0 || rc == -EEXIST)
		rc = queen_config_set(h->q, queue, NULL, keys, vals, n);
	if (rc == 0)
		rc = default_partition(h->q, queue, &pi);
	if (rc != 0) {
		json_decref(echo);
		return refuse_rc(h, rc);
	}
	h->ans->wrote = true;
	out = json_pack("{s:b, s:s, s:s, s:s, s:o}", "configured", 1, "queue",
	    queue, "namespace", ns ? ns : "", "task", task ? task : "",
	    "options", echo);
	if (out && pi.uuid[0])
		json_object_set_new(out, "partitionId", json_string(pi.uuid));
	answer_json(h, 200, out);
	return 0;
}

int
do_queue_delete(struct hctx *h, const char *queue)
{
	bool existed = false;
	int rc = queen_queue_purge(h->q, queue, &existed);

	if (rc == -EINVAL)
		existed = false;   /* no such name can exist */
	else if (rc != 0)
		return refuse_rc(h, rc);
	h->ans->wrote = existed;
	answer_json(h, 200, json_pack("{s:b, s:s, s:b}", "deleted", 1,
	    "queue", queue, "existed", existed));
	return 0;
}

/* ---- push ---- */

/*
 * A push's answer, written as text like a pop's: a jansson tree of ten
 * values per item and its dump were a quarter of the daemon's CPU per
 * message on batch pushes.
 */
static void
push_text(struct hctx *h, const struct queen_push_item *items,
    const struct queen_push_result *res, size_t n)
{
	struct jw w = { 0 };

	jw_raw(&w, "[", 1);
	for (size_t i = 0; i < n; i++) {
		const struct queen_push_item *it = &items[i];
		const struct queen_push_result *r = &res[i];
		const char *txid = queen_push_txid(it, r);

		jw_lit(&w, i ? ",{\"index\":" : "{\"index\":");
		jw_int(&w, (int64_t)i);
		jw_lit(&w,
		    r->status == QUEEN_PUSH_DUPLICATE ?
			",\"status\":\"duplicate\",\"message_id\":\"" :
			",\"status\":\"queued\",\"message_id\":\"");
		jw_lit(&w, r->partition_uuid);
		jw_raw(&w, ":", 1);
		jw_int(&w, r->offset);
		jw_lit(&w, "\",\"transaction_id\":");
		jw_str(&w, txid);
		jw_lit(&w, ",\"transactionId\":");
		jw_str(&w, txid);
		jw_lit(&w, ",\"partition_id\":");
		jw_str(&w, r->partition_uuid);
		jw_lit(&w, ",\"queueName\":");
		jw_str(&w, it->queue);
		jw_lit(&w, ",\"trace_id\":");
		jw_str(&w, it->trace_id);
		jw_raw(&w, "}", 1);
	}
	jw_raw(&w, "]", 1);
	h->ans->status = 201;
	if (!(h->ans->body = jw_finish(&w)))
		h->ans->status = 500;
}

int
do_push(struct hctx *h, json_t *b)
{
	json_t *arr = json_object_get(b, "items");
	struct queen_push_item *items = NULL;
	struct queen_push_result *res = NULL;
	char **keeps = NULL;
	size_t n, i;
	int rc = 0;

	if (!json_is_array(arr))
		return refuse(h, 400, "'items' must be an array");
	n = json_array_size(arr);
	items = calloc(n + 1, sizeof(*items));
	res = calloc(n + 1, sizeof(*res));
	keeps = calloc(n + 1, sizeof(*keeps));
	if (!items || !res || !keeps) {
		rc = -ENOMEM;
		goto out;
	}
	for (i = 0; i < n; i++) {
		json_t *o = json_array_get(arr, i), *p;
		struct queen_push_item *it = &items[i];
		const char *part;

		if (!json_is_object(o)) {
			refuse(h, 400, "item %zu is not an object", i);
			goto out;
		}
		if (opt_string(h, o, "queue", &it->queue) < 0 ||
		    opt_string(h, o, "partition", &part) < 0 ||
		    opt_string(h, o, "transactionId", &it->txid) < 0 ||
		    opt_string(h, o, "traceId", &it->trace_id) < 0)
			goto out;
		if (!it->queue) {
			refuse(h, 400, "item %zu needs a string 'queue'", i);
			goto out;
		}
		it->partition = part_in(part);
		if (!name_ok(h, "queue", it->queue) ||
		    !name_ok(h, "partition", it->partition))
			goto out;
		if (it->txid && !*it->txid)
			it->txid = NULL;
		p = json_object_get(o, "payload");
		if (!p)
			p = json_null();
		if (!(keeps[i] = json_dumps(p, JSON_COMPACT |
		    JSON_ENCODE_ANY))) {
			rc = -ENOMEM;
			goto out;
		}
		it->payload = keeps[i];
		it->len = strlen(keeps[i]);
	}
	if (n && (rc = queen_push(h->q, items, n, false, res)) != 0) {
		refuse_rc(h, rc);
		rc = 0;
		goto out;
	}
	h->ans->wrote = n > 0;
	push_text(h, items, res, n);
out:
	for (i = 0; keeps && i < n; i++)
		free(keeps[i]);
	free(keeps);
	free(items);
	free(res);
	return rc;
}

/* ---- pop ---- */

/* A named group's first pop fixes its start (QUEEN-HTTP.md 5.3). */
static int
group_start(struct hctx *h, const char *queue, const char *group)
{
	struct queen_group_info gi;
	const char *mode = http_arg(h, "subscriptionMode");
	const char *from = http_arg(h, "subscriptionFrom");
	const char *key = "subscription";
	char val[64];
	int64_t ms;
	int rc = queen_group_get(h->q, queue, group, &gi);

	if (rc != -ENOENT)
		return rc;
	snprintf(val, sizeof(val), "all");
	if (from && *from && strcmp(from, "now") &&
	    queen_time_parse(from, strlen(from), &ms) == 0) {
		char t[40];

		queen_time_format(ms + 1, t, sizeof(t));
		snprintf(val, sizeof(val), "since %s", t);
	} else if ((from && !strcmp(from, "now")) || (mode &&
	    (!strcmp(mode, "new") || !strcmp(mode, "new-only")))) {
		snprintf(val, sizeof(val), "new");
	}
	{
		const char *v = val;

		return queen_config_set(h->q, queue, group, &key, &v, 1);
	}
}

/* A payload as Queen's `data`, as text: JSON as it is, else a string. */
static void
data_text(struct jw *w, const void *p, size_t n)
{
	size_t from, len;
	json_t *v;
	char *s;

	if (n && json_text(p, n, &from, &len)) {
		jw_raw(w, (const char *)p + from, len);
		return;
	}
	v = payload_data(p, n);
	s = v ? json_dumps(v, JSON_COMPACT | JSON_ENCODE_ANY) : NULL;
	json_decref(v);
	if (s)
		jw_lit(w, s);
	else
		w->oom = true;
	free(s);
}

/*
 * One partition's messages as Queen's message objects, written as text:
 * a big batch through jansson cost more than the pop itself (every
 * payload parsed and printed again).
 */
static void
pop_msgs(struct jw *w, const struct queen_batch *b, bool first)
{
	const char *group = b->group[0] ? b->group : QUEUE_MODE;
	const char *part = part_out(b->partition);
	char t[40];

	for (size_t i = 0; i < b->n; i++) {
		const struct queen_msg *m = &b->msgs[i];

		jw_lit(w, i || !first ? ",{\"id\":\"" : "{\"id\":\"");
		jw_lit(w, b->partition_uuid);
		jw_raw(w, ":", 1);
		jw_int(w, m->offset);
		jw_lit(w, "\",\"transactionId\":");
		jw_str(w, m->txid);
		jw_lit(w, ",\"partitionId\":");
		jw_str(w, b->partition_uuid);
		jw_lit(w, ",\"leaseId\":");
		jw_str(w, b->lease_id);
		jw_lit(w, ",\"data\":");
		data_text(w, m->payload, m->len);
		jw_lit(w, ",\"traceId\":");
		jw_str(w, m->trace_id);
		queen_time_format(m->created_at, t, sizeof(t));
		jw_lit(w, ",\"createdAt\":");
		jw_str(w, t);
		jw_lit(w, ",\"partition\":");
		jw_str(w, part);
		jw_lit(w, ",\"queue\":");
		jw_str(w, b->queue);
		jw_lit(w, ",\"consumerGroup\":");
		jw_str(w, group);
		jw_lit(w, ",\"producerSub\":null,\"retryCount\":");
		jw_int(w, b->retry_count);
		jw_raw(w, "}", 1);
	}
}

/*
 * The answer of a pop that took nb partitions (nb >= 1), each under its
 * own lease, in the order taken: the top-level fields name the first.
 */
static void
pop_text(struct hctx *h, struct queen_batch *const *bs, size_t nb)
{
	const struct queen_batch *b = bs[0];
	const char *group = b->group[0] ? b->group : QUEUE_MODE;
	struct jw w = { 0 };

	jw_lit(&w, "{\"success\":true,\"queue\":");
	jw_str(&w, b->queue);
	jw_lit(&w, ",\"partition\":");
	jw_str(&w, part_out(b->partition));
	jw_lit(&w, ",\"partitionId\":");
	jw_str(&w, b->partition_uuid);
	jw_lit(&w, ",\"leaseId\":");
	jw_str(&w, b->lease_id);
	jw_lit(&w, ",\"consumerGroup\":");
	jw_str(&w, group);
	jw_lit(&w, ",\"partitionsClaimed\":");
	jw_int(&w, (int64_t)nb);
	jw_lit(&w, ",\"messages\":[");
	for (size_t i = 0; i < nb; i++)
		pop_msgs(&w, bs[i], i == 0);
	jw_lit(&w, "]}");
	h->ans->status = 200;
	if (!(h->ans->body = jw_finish(&w)))
		h->ans->status = 500;
}

int
do_pop(struct hctx *h, const char *queue, const char *partition)
{
	struct queen_pop_req pr = { 0 };
	struct queen_batch *bs[HTTP_POP_MAX_PARTITIONS];
	struct queen_queue_info qi;
	int64_t timeout = arg_int(h, "timeout", 30000, 0, 86400000);
	int64_t nparts = arg_int(h, "partitions", 1, 1,
	    HTTP_POP_MAX_PARTITIONS);
	bool wait = arg_true(h, "wait");
	size_t nb = 0, left;
	int rc;

	pr.queue = queue;
	pr.partition = partition ? part_in(partition) : NULL;
	pr.group = group_in(http_arg(h, "consumerGroup"));
	pr.batch = arg_int(h, "batch", 1, 1, 100000);
	pr.auto_ack = arg_true(h, "autoAck") ? 1 : 0;
	if (h->q->http_pop_maint || !queen_name_valid(queue) ||
	    (pr.partition && !queen_name_valid(pr.partition)))
		goto empty;
	/* a group's first pop fixes its start, on a queue that exists;
	 * queue mode needs no look first (no queue: the pop says ENOENT) */
	rc = pr.group ? queen_queue_get(h->q, queue, &qi) : 0;
	if (rc == 0 && pr.group && (rc = group_start(h, queue, pr.group)) != 0)
		return refuse_rc(h, rc);
	rc = rc == 0 ? queen_pop(h->q, &pr, &bs[0]) : rc;
	if (rc == -EAGAIN || rc == -ENOENT)
		goto empty;
	if (rc != 0)
		return refuse_rc(h, rc);
	nb = 1;
	left = pr.batch - bs[0]->n;
	/* partitions=N (the short form only): more partitions, each under
	 * a lease of its own, while the global batch cap allows; the lease
	 * just taken keeps each pop off the partitions already claimed */
	while (!pr.partition && nb < (size_t)nparts && left > 0) {
		pr.batch = (int64_t)left;
		rc = queen_pop(h->q, &pr, &bs[nb]);
		if (rc == -EAGAIN || rc == -ENOENT)
			break;
		if (rc != 0)
			break; /* answer what was taken: those leases stand */
		left -= bs[nb]->n;
		nb++;
	}
	h->ans->wrote = true;
	pop_text(h, bs, nb);
	while (nb > 0)
		queen_batch_free(bs[--nb]);
	return 0;
empty:
	if (wait && timeout > 0 && h->wait) {
		h->wait->wait_ms = timeout;
		snprintf(h->wait->queue, sizeof(h->wait->queue), "%s", queue);
		snprintf(h->wait->group, sizeof(h->wait->group), "%s",
		    pr.group ? pr.group : "");
		return -EAGAIN;
	}
	h->ans->status = 204;
	return 0;
}

/* ---- ack ---- */

static int
ack_fill(struct hctx *h, json_t *o, const char *group,
    struct queen_ack_item *it, size_t i)
{
	json_t *st;

	memset(it, 0, sizeof(*it));
	if (!json_is_object(o))
		return refuse(h, 400, "acknowledgment %zu is not an object",
		    i), -1;
	if (opt_string(h, o, "transactionId", &it->txid) < 0 ||
	    opt_string(h, o, "partitionId", &it->partition_uuid) < 0 ||
	    opt_string(h, o, "leaseId", &it->lease_id) < 0)
		return -1;
	if (!it->txid || !it->partition_uuid)
		return refuse(h, 400, "an ack needs a string transactionId "
		    "and partitionId"), -1;
	st = json_object_get(o, "status");
	if (json_is_string(st))
		it->status = json_string_value(st);
	else if (json_is_boolean(st))
		it->status = json_is_true(st) ? "completed" : "failed";
	else if (st && !json_is_null(st))
		it->status = "failed";   /* not a status: the seed's rule */
	st = json_object_get(o, "error");
	it->error = json_is_string(st) ? json_string_value(st) : NULL;
	st = json_object_get(o, "consumerGroup");
	it->group = json_is_string(st) ? group_in(json_string_value(st)) :
	    group;
	if (it->lease_id && !*it->lease_id)
		it->lease_id = NULL;
	return 0;
}

int
do_ack(struct hctx *h, json_t *b, bool batch)
{
	json_t *arr = batch ? json_object_get(b, "acknowledgments") : NULL;
	json_t *g = json_object_get(b, "consumerGroup");
	struct queen_ack_item *items;
	struct jw w = { 0 };
	struct queen_ack_result *res;
	const char *group = json_is_string(g) ?
	    group_in(json_string_value(g)) : NULL;
	size_t n, i;
	int rc = 0;

	if (batch && !json_is_array(arr))
		return refuse(h, 400, "'acknowledgments' must be an array");
	n = batch ? json_array_size(arr) : 1;
	items = calloc(n + 1, sizeof(*items));
	res = calloc(n + 1, sizeof(*res));
	if (!items || !res) {
		free(items);
		free(res);
		return -ENOMEM;
	}
	for (i = 0; i < n; i++)
		if (ack_fill(h, batch ? json_array_get(arr, i) : b, group,
		    &items[i], i) < 0)
			goto out;
	if (n)
		rc = queen_ack(h->q, items, n, res); /* failures: per item */
	/* the store was busy (a deadlock, a lock timeout): nothing of the
	 * call was kept, and it may run again */
	h->ans->busy = rc == -EBUSY;
	h->ans->wrote = true;
	/* one result per item, written as text */
	jw_raw(&w, "[", 1);
	for (i = 0; i < n; i++) {
		const struct queen_ack_result *r = &res[i];

		jw_lit(&w, i ? ",{\"index\":" : "{\"index\":");
		jw_int(&w, (int64_t)i);
		jw_lit(&w, ",\"transactionId\":");
		jw_str(&w, items[i].txid);
		jw_lit(&w, r->success ? ",\"success\":true,\"error\":" :
		    ",\"success\":false,\"error\":");
		jw_str(&w, r->error[0] ? r->error : NULL);
		jw_lit(&w, r->lease_released ? ",\"leaseReleased\":true" :
		    ",\"leaseReleased\":false");
		jw_lit(&w, r->dlq ? ",\"dlq\":true" : ",\"dlq\":false");
		jw_lit(&w, r->noop ? ",\"noop\":true}" : ",\"noop\":false}");
	}
	jw_raw(&w, "]", 1);
	h->ans->status = 200;
	if (!(h->ans->body = jw_finish(&w)))
		h->ans->status = 500;
out:
	free(items);
	free(res);
	return 0;
}

/* ---- transaction: api/transaction's handler, Queen's names ---- */

int
do_transaction(struct hctx *h, json_t *b)
{
	json_t *ops = json_object_get(b, "operations"), *o, *ans;
	json_error_t e;
	char *req, *resp = NULL;
	size_t i, j;
	int rc;

	if (!json_is_array(ops) || json_array_size(ops) == 0)
		return refuse(h, 400, "'operations' must be a non-empty array");
	for (i = 0; i < json_array_size(ops); i++) {
		json_t *t, *items, *it;

		o = json_array_get(ops, i);
		t = json_object_get(o, "type");

		if (!json_is_string(t) || (strcmp(json_string_value(t), "ack") &&
		    strcmp(json_string_value(t), "push")))
			return refuse(h, 400, "operation %zu: type is ack or "
			    "push", i);
		if (json_is_string(json_object_get(o, "consumerGroup")) &&
		    !group_in(json_string_value(json_object_get(o,
		    "consumerGroup"))))
			json_object_del(o, "consumerGroup");
		items = json_object_get(o, "items");
		for (j = 0; j < json_array_size(items); j++) {
			json_t *p;

			it = json_array_get(items, j);
			p = json_object_get(it, "partition");

			if (json_is_object(it) && (!p || (json_is_string(p) &&
			    !strcmp(json_string_value(p), HTTP_DEFAULT))))
				json_object_set_new(it, "partition",
				    json_string(QUEEN_DEFAULT_PARTITION));
			if (json_is_object(it) &&
			    !json_object_get(it, "payload"))
				json_object_set_new(it, "payload",
				    json_null());
		}
	}
	if (!(req = json_dumps(b, JSON_COMPACT)))
		return -ENOMEM;
	rc = queen_api(h->q, "transaction", req, strlen(req), &resp);
	free(req);
	/* refused as reserved (the store was busy): it may run again */
	h->ans->busy = rc == -EBUSY;
	if (!resp)
		return -ENOMEM;
	ans = json_loads(resp, 0, &e);
	free(resp);
	if (!ans)
		return -ENOMEM;
	o = json_object_get(ans, "reason");
	if (rc != 0 && json_is_string(o) && (!strcmp(json_string_value(o),
	    "bad_request") || !strcmp(json_string_value(o), "too_large")) &&
	    !json_object_get(ans, "failedIndex")) {
		json_t *err = json_object_get(ans, "error");

		refuse(h, !strcmp(json_string_value(o), "too_large") ? 413 :
		    400, "%s", json_is_string(err) ? json_string_value(err) :
		    "bad transaction");
		json_decref(ans);
		return 0;
	}
	if (rc != 0 && !json_is_string(o)) {
		json_decref(ans);
		return refuse(h, 500, "storage failed");
	}
	if (json_is_true(json_object_get(ans, "success"))) {
		json_t *queues = json_array(), *op, *it;
		size_t k, np = 0;

		/* the pushes' results follow the acks', in item order */
		for (i = 0; i < json_array_size(ops); i++) {
			op = json_array_get(ops, i);
			it = json_object_get(op, "items");
			for (k = 0; k < json_array_size(it); k++)
				json_array_append(queues, json_object_get(
				    json_array_get(it, k), "queue"));
		}
		h->ans->wrote = true;
		json_t *results = json_object_get(ans, "results");

		for (i = 0; i < json_array_size(results); i++) {
			json_t *p;

			o = json_array_get(results, i);
			p = json_object_get(o, "partition");

			if (!json_object_get(o, "success"))
				json_object_set_new(o, "success", json_true());
			if (!json_object_get(o, "messageId"))
				continue;
			if (json_is_string(p))
				json_object_set_new(o, "partition",
				    json_string(part_out(json_string_value(p))));
			json_object_set(o, "queueName", json_array_get(queues,
			    np++));
		}
		json_decref(queues);
	}
	answer_json(h, 200, ans);
	return 0;
}

/* ---- lease extend ---- */

int
do_extend(struct hctx *h, const char *lease, json_t *b)
{
	json_t *s = json_object_get(b, "seconds");
	int64_t exp = 0, secs = json_is_integer(s) ? json_integer_value(s) : 0;
	char t[40];
	int rc;

	if (secs < 0)
		secs = 0;
	rc = queen_lease_renew(h->q, lease, secs, &exp);
	if (rc == -ESTALE || rc == -EINVAL) {
		answer_json(h, 409, json_pack("{s:s, s:s, s:b}", "error",
		    QUEEN_E_LEASE, "leaseId", lease, "success", 0));
		return 0;
	}
	if (rc != 0)
		return refuse_rc(h, rc);
	h->ans->wrote = true;
	queen_time_format(exp, t, sizeof(t));
	answer_json(h, 200, json_pack("{s:s, s:b, s:s, s:s}", "leaseId", lease,
	    "success", 1, "newExpiresAt", t, "expiresAt", t));
	return 0;
}
