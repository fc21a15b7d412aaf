/*
 * api_http.c - the JSON front end's /api/v1 routes (Queen's HTTP wire,
 * docs/http.md): one (method, path, query, body) in, one status and JSON
 * answer out.  It decodes with jansson, calls the engine's public calls
 * and encodes; the transport (fs/http.c) owns sockets, waiting and limits.
 */
#include <errno.h>
#include <jansson.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core.h"
#include "queen_api.h"

#define QUEUE_MODE "__QUEUE_MODE__"
#define HTTP_DEFAULT "Default"

struct hctx {
	struct queen *q;
	const struct queen_http_req *r;
	struct queen_http_answer *ans;
	struct queen_api_wait *wait;
	const char *seg[8];
	size_t nseg;
	char pathbuf[2048];
};

static void answer_json(struct hctx *h, int status, json_t *o);
static int refuse(struct hctx *h, int status, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

static void
answer_json(struct hctx *h, int status, json_t *o)
{
	h->ans->status = status;
	h->ans->body = o ? json_dumps(o, JSON_COMPACT | JSON_ENCODE_ANY) :
	    NULL;
	if (o && !h->ans->body)
		h->ans->status = 500;
	json_decref(o);
}

static int
refuse(struct hctx *h, int status, const char *fmt, ...)
{
	char why[512];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(why, sizeof(why), fmt, ap);
	va_end(ap);
	answer_json(h, status, json_pack("{s:s}", "error", why));
	return 0;
}

/* errno from a core call: storage trouble is worth a retry, the rest not */
static int
refuse_rc(struct hctx *h, int rc)
{
	if (rc == -EINVAL || rc == -ENOENT || rc == -EEXIST || rc == -EFBIG ||
	    rc == -ENOTEMPTY || rc == -ESTALE)
		return refuse(h, rc == -EFBIG ? 413 : rc == -ENOENT ? 404 :
		    rc == -EINVAL ? 400 : 409, "%s", queen_errmsg(h->q));
	return refuse(h, 500, "storage failed: %s", queen_errmsg(h->q));
}

static const char *
arg(struct hctx *h, const char *key)
{
	for (size_t i = 0; i < h->r->nargs; i++)
		if (!strcmp(h->r->args[i].key, key))
			return h->r->args[i].value ? h->r->args[i].value : "";
	return NULL;
}

static int64_t
arg_int(struct hctx *h, const char *key, int64_t dflt, int64_t min,
    int64_t max)
{
	const char *s = arg(h, key);
	char *end;
	long long v;

	if (!s || !*s)
		return dflt;
	errno = 0;
	v = strtoll(s, &end, 10);
	if (errno || *end || v < min || v > max)
		return dflt;     /* a 4xx would stop a consumer: the default */
	return v;
}

static bool
arg_true(struct hctx *h, const char *key)
{
	const char *s = arg(h, key);

	return s && (!strcmp(s, "true") || !strcmp(s, "1"));
}

/* Queen's "Default" partition is the mount's "default" */
static const char *
part_in(const char *p)
{
	return !p || !strcmp(p, HTTP_DEFAULT) ? QUEEN_DEFAULT_PARTITION : p;
}

static const char *
part_out(const char *p)
{
	return !strcmp(p, QUEEN_DEFAULT_PARTITION) ? HTTP_DEFAULT : p;
}

static const char *
group_in(const char *g)
{
	return !g || !*g || !strcmp(g, QUEUE_MODE) ? NULL : g;
}

static json_t *
time_json(int64_t ms)
{
	char buf[40];

	queen_time_format(ms, buf, sizeof(buf));
	return json_string(buf);
}

/* The body as an object; an absent body is {} (Python sends none). */
static json_t *
body_object(struct hctx *h)
{
	json_error_t e;
	json_t *o;

	if (h->r->len == 0)
		return json_object();
	o = json_loadb(h->r->body, h->r->len, JSON_REJECT_DUPLICATES, &e);
	if (!o) {
		refuse(h, 400, "malformed JSON: %.200s", e.text);
		return NULL;
	}
	if (!json_is_object(o)) {
		json_decref(o);
		refuse(h, 400, "the body must be a JSON object");
		return NULL;
	}
	return o;
}

static int
opt_string(struct hctx *h, json_t *o, const char *k, const char **out)
{
	json_t *v = json_object_get(o, k);

	*out = NULL;
	if (!v || json_is_null(v))
		return 0;
	if (!json_is_string(v))
		return refuse(h, 400, "'%s' must be a string", k), -1;
	*out = json_string_value(v);
	return 0;
}

static bool
name_ok(struct hctx *h, const char *what, const char *name)
{
	if (queen_name_valid(name))
		return true;
	refuse(h, 400, "bad %s name '%.64s': 1 to 255 of [A-Za-z0-9._:@=+-], "
	    "not starting with '.'", what, name);
	return false;
}

/* A payload as Queen's `data`: JSON as it is, else the text, else base64. */
static json_t *
payload_data(const void *p, size_t n)
{
	json_error_t e;
	size_t from, len;
	json_t *v;

	if (n && json_text(p, n, &from, &len) &&
	    (v = json_loadb((const char *)p + from, len, JSON_DECODE_ANY, &e)))
		return v;
	if ((v = json_stringn(p, n)))
		return v;
	return json_null();
}

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

static int
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

static int
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

static int
do_push(struct hctx *h, json_t *b)
{
	json_t *arr = json_object_get(b, "items"), *out = NULL;
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
	out = json_array();
	for (i = 0; i < n; i++) {
		const struct queen_push_item *it = &items[i];
		const struct queen_push_result *r = &res[i];
		char id[80];

		snprintf(id, sizeof(id), "%s:%lld", r->partition_uuid,
		    (long long)r->offset);
		json_array_append_new(out, json_pack("{s:I, s:s, s:s, s:s, "
		    "s:s, s:s, s:s, s:o}", "index", (json_int_t)i, "status",
		    r->status == QUEEN_PUSH_DUPLICATE ? "duplicate" : "queued",
		    "message_id", id, "transaction_id",
		    queen_push_txid(it, r), "transactionId",
		    queen_push_txid(it, r), "partition_id", r->partition_uuid,
		    "queueName", it->queue, "trace_id", it->trace_id ?
		    json_string(it->trace_id) : json_null()));
	}
	answer_json(h, 201, out);
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
	const char *mode = arg(h, "subscriptionMode");
	const char *from = arg(h, "subscriptionFrom");
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
 * A pop's answer, written as text: a big batch through jansson cost
 * more than the pop itself (every payload parsed and printed again).
 */
static void
pop_text(struct hctx *h, struct queen_batch *b)
{
	const char *group = b->group[0] ? b->group : QUEUE_MODE;
	const char *part = part_out(b->partition);
	struct jw w = { 0 };
	char t[40];

	jw_lit(&w, "{\"success\":true,\"queue\":");
	jw_str(&w, b->queue);
	jw_lit(&w, ",\"partition\":");
	jw_str(&w, part);
	jw_lit(&w, ",\"partitionId\":");
	jw_str(&w, b->partition_uuid);
	jw_lit(&w, ",\"leaseId\":");
	jw_str(&w, b->lease_id);
	jw_lit(&w, ",\"consumerGroup\":");
	jw_str(&w, group);
	jw_lit(&w, ",\"partitionsClaimed\":1,\"messages\":[");
	for (size_t i = 0; i < b->n; i++) {
		const struct queen_msg *m = &b->msgs[i];

		jw_lit(&w, i ? ",{\"id\":\"" : "{\"id\":\"");
		jw_lit(&w, b->partition_uuid);
		jw_raw(&w, ":", 1);
		jw_int(&w, m->offset);
		jw_lit(&w, "\",\"transactionId\":");
		jw_str(&w, m->txid);
		jw_lit(&w, ",\"partitionId\":");
		jw_str(&w, b->partition_uuid);
		jw_lit(&w, ",\"leaseId\":");
		jw_str(&w, b->lease_id);
		jw_lit(&w, ",\"data\":");
		data_text(&w, m->payload, m->len);
		jw_lit(&w, ",\"traceId\":");
		jw_str(&w, m->trace_id);
		queen_time_format(m->created_at, t, sizeof(t));
		jw_lit(&w, ",\"createdAt\":");
		jw_str(&w, t);
		jw_lit(&w, ",\"partition\":");
		jw_str(&w, part);
		jw_lit(&w, ",\"queue\":");
		jw_str(&w, b->queue);
		jw_lit(&w, ",\"consumerGroup\":");
		jw_str(&w, group);
		jw_lit(&w, ",\"producerSub\":null,\"retryCount\":");
		jw_int(&w, b->retry_count);
		jw_raw(&w, "}", 1);
	}
	jw_lit(&w, "]}");
	h->ans->status = 200;
	if (!(h->ans->body = jw_finish(&w)))
		h->ans->status = 500;
}

static int
do_pop(struct hctx *h, const char *queue, const char *partition)
{
	struct queen_pop_req pr = { 0 };
	struct queen_batch *b = NULL;
	struct queen_queue_info qi;
	int64_t timeout = arg_int(h, "timeout", 30000, 0, 86400000);
	bool wait = arg_true(h, "wait");
	int rc;

	pr.queue = queue;
	pr.partition = partition ? part_in(partition) : NULL;
	pr.group = group_in(arg(h, "consumerGroup"));
	pr.batch = arg_int(h, "batch", 1, 1, 100000);
	pr.auto_ack = arg_true(h, "autoAck") ? 1 : 0;
	if (h->q->http_pop_maint || !queen_name_valid(queue) ||
	    (pr.partition && !queen_name_valid(pr.partition)))
		goto empty;
	rc = queen_queue_get(h->q, queue, &qi);
	if (rc == 0 && pr.group && (rc = group_start(h, queue, pr.group)) != 0)
		return refuse_rc(h, rc);
	rc = rc == 0 ? queen_pop(h->q, &pr, &b) : rc;
	if (rc == -EAGAIN || rc == -ENOENT)
		goto empty;
	if (rc != 0)
		return refuse_rc(h, rc);
	h->ans->wrote = true;
	pop_text(h, b);
	queen_batch_free(b);
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

static int
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
		queen_ack(h->q, items, n, res);   /* failures: per item */
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

static int
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

static int
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

static int
do_dlq(struct hctx *h)
{
	struct dlqwalk w = { .h = h };
	const char *from = arg(h, "from"), *to = arg(h, "to");
	int rc;

	w.queue = arg(h, "queue");
	w.partition = arg(h, "partition");
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
	    group_in(arg(h, "consumerGroup")), true, dlq_one, &w) : 0;
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

static int
do_group_delete(struct hctx *h, const char *group, const char *queue)
{
	struct qnames l = { 0 };
	int64_t deleted = 0;
	bool meta = !arg(h, "deleteMetadata") || arg_true(h, "deleteMetadata");
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

static int
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

static int
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

static int
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

static int
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

static int
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
static int
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

static int
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

static int
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

static int
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

/* ---- routing ---- */

static bool
is(struct hctx *h, const char *method, size_t nseg, ...)
{
	va_list ap;
	bool ok;

	if (strcmp(h->r->method, method) || h->nseg != nseg)
		return false;
	va_start(ap, nseg);
	ok = true;
	for (size_t i = 0; i < nseg && ok; i++) {
		const char *want = va_arg(ap, const char *);

		ok = !strcmp(want, "*") || !strcmp(want, h->seg[i]);
	}
	va_end(ap);
	return ok;
}

static int
route(struct hctx *h)
{
	const char *m = h->r->method;
	json_t *b = NULL;
	int rc = 0;

	if (h->nseg == 1 && !strcmp(h->seg[0], "health"))
		return do_health(h);
	if (h->nseg == 1 && !strcmp(h->seg[0], "metrics"))
		return do_queues(h, true);
	if (is(h, "GET", 2, "metrics", "prometheus"))
		return do_prometheus(h);
	if (h->nseg < 2 || strcmp(h->seg[0], "api") || strcmp(h->seg[1], "v1"))
		return refuse(h, 404, "no route %s %.200s", m, h->r->path);
	memmove(h->seg, h->seg + 2, (h->nseg - 2) * sizeof(h->seg[0]));
	h->nseg -= 2;
	if (is(h, "GET", 3, "pop", "queue", "*"))
		return do_pop(h, h->seg[2], NULL);
	if (is(h, "GET", 5, "pop", "queue", "*", "partition", "*"))
		return do_pop(h, h->seg[2], h->seg[4]);
	if (is(h, "DELETE", 3, "resources", "queues", "*"))
		return do_queue_delete(h, h->seg[2]);
	if (is(h, "GET", 2, "resources", "queues"))
		return do_queues(h, false);
	if (is(h, "GET", 3, "resources", "queues", "*"))
		return do_queue_detail(h, h->seg[2]);
	if (is(h, "GET", 2, "resources", "overview"))
		return do_overview(h);
	if (is(h, "GET", 1, "dlq"))
		return do_dlq(h);
	if (is(h, "GET", 2, "system", "maintenance"))
		return do_maintenance(h, NULL, false);
	if (is(h, "GET", 3, "system", "maintenance", "pop"))
		return do_maintenance(h, NULL, true);
	if (is(h, "GET", 1, "consumer-groups"))
		return do_groups(h, NULL, false);
	if (is(h, "GET", 2, "consumer-groups", "lagging"))
		return do_groups(h, NULL, true);
	if (is(h, "GET", 2, "consumer-groups", "*"))
		return do_groups(h, h->seg[1], false);
	if (is(h, "DELETE", 2, "consumer-groups", "*"))
		return do_group_delete(h, h->seg[1], NULL);
	if (is(h, "DELETE", 4, "consumer-groups", "*", "queues", "*"))
		return do_group_delete(h, h->seg[1], h->seg[3]);
	if (strcmp(m, "POST"))
		return refuse(h, strcmp(m, "GET") && strcmp(m, "DELETE") ?
		    405 : 404, "no route %s %.200s", m, h->r->path);
	if (!(b = body_object(h)))
		return 0;
	if (is(h, "POST", 1, "configure"))
		rc = do_configure(h, b);
	else if (is(h, "POST", 1, "push"))
		rc = do_push(h, b);
	else if (is(h, "POST", 1, "ack"))
		rc = do_ack(h, b, false);
	else if (is(h, "POST", 2, "ack", "batch"))
		rc = do_ack(h, b, true);
	else if (is(h, "POST", 1, "transaction"))
		rc = do_transaction(h, b);
	else if (is(h, "POST", 3, "lease", "*", "extend"))
		rc = do_extend(h, h->seg[1], b);
	else if (is(h, "POST", 5, "consumer-groups", "*", "queues", "*",
	    "seek"))
		rc = do_seek(h, h->seg[1], h->seg[3], b);
	else if (is(h, "POST", 3, "consumer-groups", "*", "subscription"))
		rc = do_subscription(h, h->seg[1], b);
	else if (is(h, "POST", 2, "system", "maintenance"))
		rc = do_maintenance(h, b, false);
	else if (is(h, "POST", 3, "system", "maintenance", "pop"))
		rc = do_maintenance(h, b, true);
	else if (is(h, "POST", 2, "stats", "refresh"))
		answer_json(h, 200, json_pack("{s:b}", "success", 1));
	else
		refuse(h, 404, "no route POST %.200s", h->r->path);
	json_decref(b);
	return rc;
}

int
queen_http(struct queen *q, const struct queen_http_req *r,
    struct queen_http_answer *ans, struct queen_api_wait *wait)
{
	struct hctx h;
	char *save = NULL;
	int rc;

	memset(&h, 0, sizeof(h));
	memset(ans, 0, sizeof(*ans));
	h.q = q;
	h.r = r;
	h.ans = ans;
	h.wait = wait;
	if (r->len > QUEEN_API_MAX_BODY)
		return refuse(&h, 413, "the body is over %u bytes",
		    QUEEN_API_MAX_BODY);
	snprintf(h.pathbuf, sizeof(h.pathbuf), "%s", r->path);
	for (char *t = strtok_r(h.pathbuf, "/", &save); t;
	    t = strtok_r(NULL, "/", &save)) {
		if (h.nseg == sizeof(h.seg) / sizeof(h.seg[0]))
			return refuse(&h, 404, "no route %.200s", r->path);
		h.seg[h.nseg++] = t;
	}
	rc = route(&h);
	if (rc == -ENOMEM && !ans->body)
		ans->status = 500;
	return rc;
}
