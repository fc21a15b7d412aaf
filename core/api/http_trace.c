/*
 * http_trace.c - Queen's traces (QUEEN-HTTP.md 4.1): events a consumer
 * records on a message, kept as keys of the engine's KV namespace
 * queen.traces (one key per event, "<partitionId>:<transactionId>:<id>",
 * the event as JSON, expiring after HTTP_TRACE_TTL_S) and read back by
 * message, by name and as a list of names.  No table of its own: every
 * read walks the namespace.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "http_int.h"

#define TRACE_NS "queen.traces"
#define HTTP_TRACE_TTL_S (7 * 86400)
#define MAX_NAMES 32

/* POST /api/v1/traces */
int
do_trace_add(struct hctx *h, json_t *b)
{
	const char *txid = NULL, *pid = NULL, *group = NULL, *type = NULL;
	json_t *data = json_object_get(b, "data");
	json_t *names = json_object_get(b, "traceNames"), *ev, *nl, *v;
	char id[QUEEN_ID_LEN + 1], key[QUEEN_NAME_MAX + 1], t[40];
	char *text;
	size_t i;
	int rc;

	if (opt_string(h, b, "transactionId", &txid) < 0 ||
	    opt_string(h, b, "partitionId", &pid) < 0 ||
	    opt_string(h, b, "consumerGroup", &group) < 0 ||
	    opt_string(h, b, "eventType", &type) < 0)
		return 0;
	if (!txid || !pid || !data)
		return refuse(h, 400,
		    "a trace needs transactionId, "
		    "partitionId and data");
	if (names && !json_is_null(names) &&
	    (!json_is_array(names) || json_array_size(names) > MAX_NAMES))
		return refuse(h, 400,
		    "traceNames is an array of at most %d "
		    "strings",
		    MAX_NAMES);
	nl = json_array();
	for (i = 0; (v = json_array_get(names, i)); i++) {
		if (!json_is_string(v) || !json_string_length(v)) {
			json_decref(nl);
			return refuse(h, 400,
			    "traceNames is an array of at "
			    "most %d strings",
			    MAX_NAMES);
		}
		json_array_append(nl, v);
	}
	uuid_v7(h->q, id);
	if ((size_t)snprintf(key, sizeof(key), "%s:%s:%s", pid, txid, id) >=
		sizeof(key) ||
	    !queen_name_valid(key)) {
		json_decref(nl);
		return refuse(h, 400,
		    "a trace is kept for a partitionId and a "
		    "transactionId of [A-Za-z0-9._:@=+-], %d bytes at most "
		    "together",
		    QUEEN_NAME_MAX - QUEEN_ID_LEN - 2);
	}
	queen_time_format(queen_now(h->q), t, sizeof(t));
	ev = json_pack("{s:s, s:s, s:O, s:s, s:s, s:o, s:s, s:s}", "id", id,
	    "event_type", type ? type : "info", "data", data, "consumer_group",
	    group ? group : QUEUE_MODE, "created_at", t, "trace_names", nl,
	    "partition_id", pid, "transaction_id", txid);
	text = ev ? json_dumps(ev, JSON_COMPACT) : NULL;
	json_decref(ev);
	if (!text)
		return -ENOMEM;
	rc = queen_kv_put(h->q, TRACE_NS, key, text, strlen(text),
	    (int64_t)HTTP_TRACE_TTL_S * 1000, false);
	free(text);
	if (rc != 0)
		return refuse_rc(h, rc);
	answer_json(h, 201,
	    json_pack("{s:b, s:s}", "success", 1, "traceId", id));
	return 0;
}

struct walk {
	const char *prefix; /* by message: "<pid>:<txid>:" */
	const char *name;   /* by name */
	json_t *out;        /* the matching events, or the names */
};

static bool
has_name(json_t *ev, const char *name)
{
	json_t *v;
	size_t i;

	for (i = 0; (v = json_array_get(json_object_get(ev, "trace_names"), i));
	     i++)
		if (!strcmp(json_string_value(v), name))
			return true;
	return false;
}

static int
walk_one(void *arg, const char *key, const struct queen_kv_value *kv)
{
	struct walk *w = arg;
	json_error_t e;
	json_t *ev;

	/* the id after the prefix has no ':', a longer transactionId does */
	if (w->prefix &&
	    (strncmp(key, w->prefix, strlen(w->prefix)) ||
		strchr(key + strlen(w->prefix), ':')))
		return 0;
	ev = json_loadb(kv->data, kv->len, 0, &e);
	if (!json_is_object(ev)) {
		json_decref(ev);
		return 0; /* not one of ours: someone wrote the key */
	}
	if (w->name && !has_name(ev, w->name)) {
		json_decref(ev);
		return 0;
	}
	json_array_append_new(w->out, ev);
	return 0;
}

/* newest first; the ids are UUIDv7, so they sort as their times */
static int
by_id_desc(const void *a, const void *b)
{
	const char *x = json_string_value(json_object_get(*(json_t **)a, "id"));
	const char *y = json_string_value(json_object_get(*(json_t **)b, "id"));

	return strcmp(y ? y : "", x ? x : "");
}

static int
by_name(const void *a, const void *b)
{
	const char *x = json_string_value(
	    json_object_get(*(json_t **)a, "trace_name"));
	const char *y = json_string_value(
	    json_object_get(*(json_t **)b, "trace_name"));

	return strcmp(x ? x : "", y ? y : "");
}

static json_t *
sorted_by(json_t *arr, int (*cmp)(const void *, const void *), bool rev)
{
	size_t n = json_array_size(arr), i;
	json_t **v = calloc(n + 1, sizeof(*v)), *out;

	if (!v)
		return NULL;
	for (i = 0; i < n; i++)
		v[i] = json_array_get(arr, i);
	qsort(v, n, sizeof(*v), cmp);
	out = json_array();
	for (i = 0; i < n; i++)
		json_array_append(out, v[rev ? n - 1 - i : i]);
	free(v);
	return out;
}

static json_t *
sorted(json_t *arr, bool newest_first)
{
	return sorted_by(arr, by_id_desc, !newest_first);
}

static json_t *
page(json_t *arr, int64_t limit, int64_t offset)
{
	json_t *out = json_array();

	for (int64_t i = offset;
	     i < offset + limit && i < (int64_t)json_array_size(arr); i++)
		json_array_append(out, json_array_get(arr, (size_t)i));
	return out;
}

static int
walk(struct hctx *h, struct walk *w)
{
	int rc;

	if (!(w->out = json_array()))
		return -ENOMEM;
	rc = queen_kv_list(h->q, TRACE_NS, walk_one, w);
	if (rc == -ENOENT)
		rc = 0;
	if (rc != 0) {
		json_decref(w->out);
		refuse_rc(h, rc);
	}
	return rc;
}

/* GET /api/v1/traces/{partitionId}/{transactionId}: oldest first */
int
do_trace_message(struct hctx *h, const char *pid, const char *txid)
{
	char prefix[QUEEN_NAME_MAX + 2];
	struct walk w = { .prefix = prefix };
	json_t *all;
	size_t i;
	json_t *ev;

	snprintf(prefix, sizeof(prefix), "%s:%s:", pid, txid);
	if (walk(h, &w) != 0)
		return 0;
	all = sorted(w.out, false);
	json_decref(w.out);
	if (!all)
		return -ENOMEM;
	for (i = 0; (ev = json_array_get(all, i)); i++) {
		json_object_del(ev, "partition_id");
		json_object_del(ev, "transaction_id");
	}
	answer_json(h, 200, json_pack("{s:o}", "traces", all));
	return 0;
}

static json_t *
pagination(int64_t limit, int64_t offset, size_t total)
{
	return json_pack("{s:I, s:I, s:I}", "limit", (json_int_t)limit,
	    "offset", (json_int_t)offset, "total", (json_int_t)total);
}

/* GET /api/v1/traces/by-name/{name}: newest first */
int
do_trace_by_name(struct hctx *h, const char *name)
{
	int64_t limit = arg_int(h, "limit", 100, 1, 10000);
	int64_t offset = arg_int(h, "offset", 0, 0, INT64_MAX / 2);
	struct walk w = { .name = name };
	json_t *all;
	size_t total;

	if (walk(h, &w) != 0)
		return 0;
	all = sorted(w.out, true);
	json_decref(w.out);
	if (!all)
		return -ENOMEM;
	total = json_array_size(all);
	answer_json(h, 200,
	    json_pack("{s:o, s:I, s:o}", "traces", page(all, limit, offset),
		"total", (json_int_t)total, "pagination",
		pagination(limit, offset, total)));
	json_decref(all);
	return 0;
}

/* GET /api/v1/traces/names: every name, with its counts, by name */
int
do_trace_names(struct hctx *h)
{
	int64_t limit = arg_int(h, "limit", 50, 1, 10000);
	int64_t offset = arg_int(h, "offset", 0, 0, INT64_MAX / 2);
	struct walk w = { 0 };
	json_t *by = json_object(), *msgs = json_object(), *ev, *v, *row;
	json_t *list = json_array(), *all;
	void *it;
	size_t i, j, total;

	if (!by || !msgs || !list || walk(h, &w) != 0) {
		json_decref(by);
		json_decref(msgs);
		json_decref(list);
		return by && msgs && list ? 0 : -ENOMEM;
	}
	for (i = 0; (ev = json_array_get(w.out, i)); i++) {
		const char *at = json_string_value(
		    json_object_get(ev, "created_at"));
		char mk[QUEEN_NAME_MAX * 2 + 2];

		snprintf(mk, sizeof(mk), "%s:%s",
		    json_string_value(json_object_get(ev, "partition_id")),
		    json_string_value(json_object_get(ev, "transaction_id")));
		for (j = 0;
		     (v = json_array_get(json_object_get(ev, "trace_names"),
			  j));
		     j++) {
			const char *n = json_string_value(v);
			json_t *seen;

			if (!(row = json_object_get(by, n))) {
				row = json_pack("{s:s, s:I, s:I, s:s}",
				    "trace_name", n, "trace_count",
				    (json_int_t)0, "message_count",
				    (json_int_t)0, "last_seen", at ? at : "");
				json_object_set_new(by, n, row);
				json_object_set_new(msgs, n, json_object());
			}
			json_object_set_new(row, "trace_count",
			    json_integer(json_integer_value(json_object_get(row,
					     "trace_count")) +
				1));
			seen = json_object_get(msgs, n);
			if (!json_object_get(seen, mk)) {
				json_object_set_new(seen, mk, json_true());
				json_object_set_new(row, "message_count",
				    json_integer(
					json_integer_value(json_object_get(row,
					    "message_count")) +
					1));
			}
			if (at &&
			    strcmp(at,
				json_string_value(
				    json_object_get(row, "last_seen"))) > 0)
				json_object_set_new(row, "last_seen",
				    json_string(at));
		}
	}
	json_decref(w.out);
	json_decref(msgs);
	for (it = json_object_iter(by); it; it = json_object_iter_next(by, it))
		json_array_append(list, json_object_iter_value(it));
	json_decref(by);
	all = sorted_by(list, by_name, false);
	json_decref(list);
	if (!(list = all))
		return -ENOMEM;
	total = json_array_size(list);
	answer_json(h, 200,
	    json_pack("{s:o, s:I, s:o}", "trace_names",
		page(list, limit, offset), "total", (json_int_t)total,
		"pagination", pagination(limit, offset, total)));
	json_decref(list);
	return 0;
}
