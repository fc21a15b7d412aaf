/*
 * t-http.c - the front end under Queen's HTTP routes (queen_http), with
 * no sockets: routing and status codes (201, 204, 400, 404, 409, 413),
 * the push and pop shapes, the Default partition, a long poll's -EAGAIN
 * and what it asks to watch, group start, queue purge with its dedup
 * state, the DLQ listing, a pop over several partitions, traces, and
 * which routes a front end may run again.
 * Answers are parsed with jansson.
 */
#include <errno.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../core/core.h"
#include "../core/queen_api.h"
#include "qtest.h"
#include "tap.h"

struct res {
	int rc, status;
	json_t *js;
	char note[192];
};

static struct res
call(struct queen *q, const char *method, const char *path,
    const struct queen_http_arg *args, size_t nargs, const char *body,
    struct queen_api_wait *wait)
{
	struct queen_http_req r = { .method = method, .path = path,
	    .args = args, .nargs = nargs, .body = body ? body : "",
	    .len = body ? strlen(body) : 0, .version = "t" };
	struct queen_http_answer a;
	struct res out = { 0 };
	json_error_t e;

	out.rc = queen_http(q, &r, &a, wait);
	out.status = a.status;
	memcpy(out.note, a.note, sizeof(out.note));
	if (a.body && !a.text)
		out.js = json_loads(a.body, JSON_DECODE_ANY, &e);
	free(a.body);
	return out;
}

static const char *
str(json_t *o, const char *k)
{
	json_t *v = json_object_get(o, k);

	return json_is_string(v) ? json_string_value(v) : "";
}

static void
test_routes(void)
{
	struct fix f;
	struct queen *q = fix_open(&f, "http-routes");
	struct queen_http_arg a[2] = { { "batch", "10" }, { "wait", "false" } };
	struct res r;

	r = call(q, "GET", "/health", NULL, 0, NULL, NULL);
	is_int(r.status, 200, "/health");
	is_str(str(r.js, "status"), "healthy", "healthy");
	json_decref(r.js);
	r = call(q, "GET", "/api/v1/nothing", NULL, 0, NULL, NULL);
	is_int(r.status, 404, "unknown route: 404");
	ok(*str(r.js, "error"), "with an error");
	json_decref(r.js);
	r = call(q, "PUT", "/api/v1/push", NULL, 0, "{}", NULL);
	is_int(r.status, 405, "unknown method: 405");
	json_decref(r.js);
	r = call(q, "POST", "/api/v1/push", NULL, 0, "{\"items\":", NULL);
	is_int(r.status, 400, "bad JSON: 400");
	json_decref(r.js);
	r = call(q, "POST", "/api/v1/push", NULL, 0,
	    "{\"items\":[{\"queue\":\"a b\",\"payload\":1}]}", NULL);
	is_int(r.status, 400, "bad queue name: 400");
	json_decref(r.js);
	r = call(q, "GET", "/api/v1/pop/queue/none", a, 2, NULL, NULL);
	is_int(r.status, 204, "unknown queue pops nothing: 204");
	ok(r.js == NULL, "and no body");
	r = call(q, "POST", "/api/v1/push", NULL, 0,
	    "{\"items\":[{\"queue\":\"o\",\"payload\":{\"a\":1},"
	    "\"transactionId\":\"x\"},{\"queue\":\"o\",\"payload\":null,"
	    "\"transactionId\":\"x\"}]}", NULL);
	is_int(r.status, 201, "push: 201");
	is_int((int64_t)json_array_size(r.js), 2, "two results");
	is_str(str(json_array_get(r.js, 0), "status"), "queued", "queued");
	is_str(str(json_array_get(r.js, 1), "status"), "duplicate",
	    "duplicate");
	is_str(str(json_array_get(r.js, 1), "message_id"),
	    str(json_array_get(r.js, 0), "message_id"), "the stored id");
	json_decref(r.js);
	r = call(q, "GET", "/api/v1/pop/queue/o", a, 2, NULL, NULL);
	is_int(r.status, 200, "pop: 200");
	{
		json_t *m = json_array_get(json_object_get(r.js, "messages"),
		    0);

		is_str(str(m, "partition"), "Default", "Queen's Default");
		is_str(str(m, "transactionId"), "x", "txid");
		ok(json_is_object(json_object_get(m, "data")), "data");
	}
	is_str(r.note, "", "good numbers: nothing to note");
	json_decref(r.js);
	/* a group on first use, though the handle's own calls make none */
	queen_groups_explicit(q, true);
	r = call(q, "POST", "/api/v1/push", NULL, 0,
	    "{\"items\":[{\"queue\":\"o\",\"payload\":2}]}", NULL);
	json_decref(r.js);
	{
		struct queen_http_arg g[3] = { a[0], a[1],
			{ "consumerGroup", "fresh" } };
		struct queen_group_info gi;

		r = call(q, "GET", "/api/v1/pop/queue/o", g, 3, NULL, NULL);
		is_int(r.status, 200, "a new consumer group pops: 200");
		json_decref(r.js);
		is_int(queen_group_get(q, "o", "fresh", &gi), 0,
		    "and the group is made");
	}
	ok(queen_groups_explicit(q, false), "the handle's setting is kept");
	fix_close(&f);
}

/* A number out of range or not a number falls back to its default (a
 * 4xx would stop a consumer), and the answer notes it for the log. */
static void
test_bad_numbers(void)
{
	struct fix f;
	struct queen *q = fix_open(&f, "http-numbers");
	struct queen_http_arg a[2] = { { "batch", "-1" }, { "wait", "false" } };
	struct res r;

	r = call(q, "POST", "/api/v1/push", NULL, 0,
	    "{\"items\":[{\"queue\":\"n\",\"payload\":1},"
	    "{\"queue\":\"n\",\"payload\":2}]}",
	    NULL);
	is_int(r.status, 201, "two pushed");
	json_decref(r.js);
	r = call(q, "GET", "/api/v1/pop/queue/n", a, 2, NULL, NULL);
	is_int(r.status, 200, "batch=-1: 200");
	is_int((int64_t)json_array_size(json_object_get(r.js, "messages")), 1,
	    "one message: the default batch");
	is_str(r.note, "batch=-1 is not an integer in [1, 100000]: 1 used",
	    "the note for the log");
	json_decref(r.js);
	a[0].value = "99999999999999999999";
	r = call(q, "GET", "/api/v1/pop/queue/n", a, 2, NULL, NULL);
	ok(strstr(r.note, "batch=99999999999999999999 is not an integer") !=
		NULL,
	    "an overflow is noted: %s", r.note);
	json_decref(r.js);
	fix_close(&f);
}

static void
test_wait(void)
{
	struct fix f;
	struct queen *q = fix_open(&f, "http-wait");
	struct queen_http_arg a[3] = { { "wait", "true" },
		{ "timeout", "5000" }, { "consumerGroup", "g" } };
	struct queen_api_wait w;
	struct res r;

	memset(&w, 0, sizeof(w));
	r = call(q, "GET", "/api/v1/pop/queue/wq", a, 3, NULL, &w);
	is_int(r.rc, -EAGAIN, "a long poll that finds nothing waits");
	is_int(w.wait_ms, 5000, "for its timeout");
	is_str(w.queue, "wq", "on its queue");
	is_str(w.group, "g", "for its group");
	r = call(q, "GET", "/api/v1/pop/queue/wq", a, 3, NULL, NULL);
	is_int(r.rc, 0, "a caller that cannot wait");
	is_int(r.status, 204, "gets 204");
	fix_close(&f);
}

static void
test_purge_and_dlq(void)
{
	struct fix f;
	struct queen *q = fix_open(&f, "http-purge");
	struct queen_http_arg a[2] = { { "queue", "pq" },
		{ "consumerGroup", "g" } };
	struct queen_batch *b = NULL;
	struct res r;
	char body[512];

	r = call(q, "POST", "/api/v1/configure", NULL, 0,
	    "{\"queue\":\"pq\",\"options\":{\"retryLimit\":0,"
	    "\"dlqAfterMaxRetries\":true}}", NULL);
	is_int(r.status, 200, "configure");
	ok(*str(r.js, "partitionId"), "the Default partition exists");
	json_decref(r.js);
	ok(push1(q, "pq", NULL, "t1", "{\"n\":1}") > 0, "pushed");
	ok(pop1(q, "pq", NULL, "g", 1, &b) == 0 && b, "popped by g");
	snprintf(body, sizeof(body), "{\"transactionId\":\"t1\","
	    "\"partitionId\":\"%s\",\"status\":\"failed\",\"error\":\"bad\","
	    "\"leaseId\":\"%s\",\"consumerGroup\":\"g\"}",
	    b ? b->partition_uuid : "", b ? b->lease_id : "");
	queen_batch_free(b);
	r = call(q, "POST", "/api/v1/ack", NULL, 0, body, NULL);
	is_int(r.status, 200, "ack: 200");
	ok(json_is_true(json_object_get(json_array_get(r.js, 0), "dlq")),
	    "dead-lettered");
	json_decref(r.js);
	r = call(q, "GET", "/api/v1/dlq", a, 2, NULL, NULL);
	is_int(json_integer_value(json_object_get(r.js, "total")), 1,
	    "one DLQ entry");
	is_str(str(json_array_get(json_object_get(r.js, "messages"), 0),
	    "errorMessage"), "bad", "with the ack's error");
	json_decref(r.js);
	r = call(q, "DELETE", "/api/v1/resources/queues/pq", NULL, 0, NULL,
	    NULL);
	is_int(r.status, 200, "delete a queue with a DLQ entry and a group");
	ok(json_is_true(json_object_get(r.js, "existed")), "it existed");
	json_decref(r.js);
	r = call(q, "DELETE", "/api/v1/resources/queues/pq", NULL, 0, NULL,
	    NULL);
	ok(json_is_false(json_object_get(r.js, "existed")), "then not");
	json_decref(r.js);
	bool dup = true;
	ok(push_ex(q, "pq", NULL, "t1", "x", false, &dup) > 0 && !dup,
	    "the old transactionId is new again");
	fix_close(&f);
}

static void
test_too_large(void)
{
	struct fix f;
	struct queen *q = fix_open(&f, "http-big");
	struct queen_http_req r = { .method = "POST", .path = "/api/v1/push",
	    .body = "{}", .len = (size_t)QUEEN_API_MAX_BODY + 1 };
	struct queen_http_answer a;

	is_int(queen_http(q, &r, &a, NULL), 0, "an oversize body");
	is_int(a.status, 413, "is 413");
	free(a.body);
	fix_close(&f);
}

/* partitions=N: several partitions in one answer, a lease each */
static void
test_partitions(void)
{
	struct fix f;
	struct queen *q = fix_open(&f, "http-parts");
	struct queen_http_arg a[3] = { { "batch", "5" }, { "partitions", "3" },
		{ "wait", "false" } };
	const char *parts[] = { "p1", "p2", "p3" };
	json_t *ms, *m;
	struct res r;
	char txid[24];
	size_t i;

	for (i = 0; i < 3; i++) {
		for (int k = 0; k < 2; k++) {
			snprintf(txid, sizeof(txid), "%s-%d", parts[i], k);
			push1(q, "mq", parts[i], txid, "1");
		}
	}
	r = call(q, "GET", "/api/v1/pop/queue/mq", a, 3, NULL, NULL);
	is_int(r.status, 200, "a pop over three partitions");
	is_int(json_integer_value(json_object_get(r.js, "partitionsClaimed")),
	    3, "claims three");
	ms = json_object_get(r.js, "messages");
	is_int((int)json_array_size(ms), 5, "batch caps the total at 5");
	for (i = 0; i + 1 < json_array_size(ms); i++) {
		json_t *n = json_array_get(ms, i + 1);
		bool same = !strcmp(str(m = json_array_get(ms, i), "partition"),
		    str(n, "partition"));

		ok(same == !strcmp(str(m, "leaseId"), str(n, "leaseId")),
		    "message %zu: one lease a partition", i);
	}
	json_decref(r.js);
	r = call(q, "GET", "/api/v1/pop/queue/mq", a, 3, NULL, NULL);
	is_int(r.status, 204, "every partition is leased now");
	json_decref(r.js);
	fix_close(&f);
}

static int
count_key(void *arg, const char *key, const struct queen_kv_value *v)
{
	(void)key;
	(void)v;
	(*(int *)arg)++;
	return 0;
}

/* traces in the KV namespace queen.traces */
static void
test_traces(void)
{
	struct fix f;
	struct queen *q = fix_open(&f, "http-traces");
	struct res r;
	json_t *t;
	int n;

	r = call(q, "POST", "/api/v1/traces", NULL, 0,
	    "{\"transactionId\":\"t1\",\"partitionId\":\"p-1\","
	    "\"traceNames\":[\"n\"],\"data\":{\"a\":1}}",
	    NULL);
	is_int(r.status, 201, "a trace: 201");
	ok(*str(r.js, "traceId"), "with its id");
	json_decref(r.js);
	r = call(q, "POST", "/api/v1/traces", NULL, 0,
	    "{\"transactionId\":\"t1\",\"partitionId\":\"p-1\"}", NULL);
	is_int(r.status, 400, "without data: 400");
	json_decref(r.js);
	r = call(q, "GET", "/api/v1/traces/p-1/t1", NULL, 0, NULL, NULL);
	t = json_array_get(json_object_get(r.js, "traces"), 0);
	is_int((int)json_array_size(json_object_get(r.js, "traces")), 1,
	    "read back by message");
	is_int(json_integer_value(
		   json_object_get(json_object_get(t, "data"), "a")),
	    1, "its data");
	is_str(str(t, "event_type"), "info", "info by default");
	json_decref(r.js);
	r = call(q, "GET", "/api/v1/traces/names", NULL, 0, NULL, NULL);
	is_int(json_integer_value(json_object_get(r.js, "total")), 1,
	    "one name");
	json_decref(r.js);
	r = call(q, "GET", "/api/v1/traces/by-name/n", NULL, 0, NULL, NULL);
	is_int(json_integer_value(json_object_get(r.js, "total")), 1,
	    "one trace by that name");
	json_decref(r.js);
	n = 0;
	ok(queen_kv_list(q, "queen.traces", count_key, &n) == 0 && n == 1,
	    "one key in the KV namespace queen.traces");
	fix_close(&f);
}

/* The calls a front end may run again whole after a passing refusal
 * (ans.busy) are the pushes, acks and transactions, however the path
 * spells their routes. */
static void
test_redoable(void)
{
	static const struct {
		const char *method, *path;
		bool redo;
	} c[] = {
		{ "POST", "/api/v1/push", true },
		{ "POST", "/api/v1/push/", true },
		{ "POST", "//api//v1/push", true },
		{ "GET", "/api/v1/push", false },
		{ "POST", "/api/v1/push/x", false },
		{ "POST", "/api/v1/pushes", false },
		{ "POST", "/api/v1/ack", true },
		{ "POST", "/api/v1/ack/batch", true },
		{ "POST", "/api/v1/ack/other", false },
		{ "POST", "/api/v1/lease/x/extend", false },
		{ "POST", "/api/v1/transaction", true },
		{ "POST", "/api/v1/transaction/", true },
		{ "GET", "/api/v1/transaction", false },
		{ "POST", "/push", false },
		{ "POST", "/a/b/c/d/e/f/g/h/i", false },
	};
	struct fix f;
	struct queen *q = fix_open(&f, "http-redoable");
	struct res r;

	for (size_t i = 0; i < sizeof(c) / sizeof(c[0]); i++)
		is_int(queen_http_redoable(c[i].method, c[i].path), c[i].redo,
		    "%s %s", c[i].method, c[i].path);
	/* and the api/ files' calls of the same kinds */
	ok(queen_api_redoable("push") && queen_api_redoable("ack") &&
		queen_api_redoable("transaction") &&
		!queen_api_redoable("pop") && !queen_api_redoable("renew"),
	    "api: push, ack, transaction run again; pop, renew do not");
	/* the router agrees: the spelling with a slash pushes */
	r = call(q, "POST", "/api/v1/push/", NULL, 0,
	    "{\"items\":[{\"queue\":\"rd\",\"payload\":1}]}", NULL);
	is_int(r.status, 201, "POST /api/v1/push/ pushes");
	json_decref(r.js);
	fix_close(&f);
}

int
main(void)
{
	plan_lazy();
	test_routes();
	test_bad_numbers();
	test_wait();
	test_purge_and_dlq();
	test_too_large();
	test_partitions();
	test_traces();
	test_redoable();
	return done_testing();
}
