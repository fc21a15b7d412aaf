/*
 * t-api.c - the JSON front end (queen_api) in the wire shapes of docs/design.md:
 * api/ack (top-level array, both honesty guarantees), api/push
 * (per-item results, generated ids, base64 and JSON payloads), api/pop,
 * api/renew, and api/transaction (design.md#transactions): every rollback reason with a
 * check that nothing at all was written, the worker A / worker B story,
 * requiredLeases, and a committed step with its per-part results.
 * Answers are parsed with jansson.  Each case runs on a fresh store.
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

#define Q "orders"
#define G "billing"
#define OUT "receipts"
#define NS "state"
#define TQ "reminders"
#define LEASE_MS (300 * SEC) /* the default lease_time */

#include "world.h"

/* ---- calling the API ---- */

/* One call with body text; the parsed answer (NULL: not JSON). */
static json_t *
api(struct queen *q, const char *ep, const char *body, int *rc)
{
	char *resp = NULL;
	json_error_t e;
	json_t *j = NULL;

	*rc = queen_api(q, ep, body, strlen(body), &resp);
	if (resp)
		j = json_loads(resp, JSON_DECODE_ANY, &e);
	if (!j)
		diag("api/%s: unparsable answer: %s", ep, resp ? resp :
		    "(null)");
	free(resp);
	return j;
}

/* The same with a request built by jansson (the reference is stolen). */
static json_t *
apij(struct queen *q, const char *ep, json_t *req, int *rc)
{
	char *body = json_dumps(req, JSON_COMPACT);
	json_t *j;

	json_decref(req);
	if (!body) {
		*rc = -ENOMEM;
		return NULL;
	}
	j = api(q, ep, body, rc);
	free(body);
	return j;
}

static const char *
jstr(json_t *o, const char *k)
{
	return json_string_value(json_object_get(o, k));
}

static int64_t
jint(json_t *o, const char *k)
{
	json_t *v = json_object_get(o, k);

	return json_is_integer(v) ? json_integer_value(v) : INT64_MIN;
}

/* 1 true, 0 false, -1 missing or not a boolean */
static int
jbool(json_t *o, const char *k)
{
	json_t *v = json_object_get(o, k);

	return json_is_boolean(v) ? json_is_true(v) : -1;
}

static int
jnull(json_t *o, const char *k)
{
	return json_is_null(json_object_get(o, k));
}

/* ---- base64, to build binary payloads ---- */

static const char b64c[] =
    "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";

static void
b64enc(const unsigned char *p, size_t n, char *out)
{
	size_t i;
	uint32_t v;

	for (i = 0; i + 2 < n; i += 3) {
		v = (uint32_t)p[i] << 16 | (uint32_t)p[i + 1] << 8 | p[i + 2];
		*out++ = b64c[v >> 18];
		*out++ = b64c[(v >> 12) & 63];
		*out++ = b64c[(v >> 6) & 63];
		*out++ = b64c[v & 63];
	}
	if (i < n) {
		v = (uint32_t)p[i] << 16 | (i + 1 < n ? (uint32_t)p[i + 1] << 8 :
		    0);
		*out++ = b64c[v >> 18];
		*out++ = b64c[(v >> 12) & 63];
		*out++ = i + 1 < n ? b64c[(v >> 6) & 63] : '=';
		*out++ = '=';
	}
	*out = '\0';
}

static size_t
b64dec(const char *s, unsigned char *out, size_t max)
{
	size_t o = 0;
	uint32_t v = 0;
	int bits = 0;
	const char *c;

	for (; *s && *s != '='; s++) {
		if (!(c = strchr(b64c, *s)))
			return (size_t)-1;
		v = (v << 6) | (uint32_t)(c - b64c);
		bits += 6;
		if (bits >= 8) {
			bits -= 8;
			if (o < max)
				out[o] = (unsigned char)(v >> bits);
			o++;
		}
	}
	return o;
}


/* ---- fixtures for transactions ---- */

struct env {
	char pid[QUEEN_ID_LEN + 1];   /* Q/default's partitionId */
	char lease[QUEEN_ID_LEN + 1];
};

/* m1..m3 in Q, a receipt in OUT (optional), m1..m3 leased to G. */
static struct queen *
setup(struct fix *f, const char *name, bool with_out, struct env *e)
{
	struct queen *q = fix_open(f, name);
	struct queen_partition_info pi;
	struct queen_batch *b = NULL;

	memset(e, 0, sizeof(*e));
	pushn(q, Q, NULL, "m", 3);
	queen_group_ensure(q, Q, G);
	if (with_out)
		push1(q, OUT, NULL, "receipt-0", "r0");
	if (queen_partition_get(q, Q, NULL, &pi) == 0)
		snprintf(e->pid, sizeof(e->pid), "%s", pi.uuid);
	if (pop1(q, Q, NULL, G, 3, &b) == 0)
		snprintf(e->lease, sizeof(e->lease), "%s", b->lease_id);
	else
		diag("%s: setup pop failed", name);
	queen_batch_free(b);
	return q;
}

/* design.md#transactions' whole step: ack, push a receipt, put KV, schedule a timer. */
static json_t *
step_req(const char *pid, const char *lease, const char *txid,
    const char *receipt)
{
	json_t *ack = json_pack("{s:s, s:s, s:s, s:s, s:s}", "type", "ack",
	    "transactionId", txid, "partitionId", pid, "consumerGroup", G,
	    "status", "completed");

	if (lease)
		json_object_set_new(ack, "leaseId", json_string(lease));
	return json_pack("{s:[o, {s:s, s:s, s:[{s:s, s:{s:i}}]}], "
	    "s:[{s:s, s:s, s:s, s:{s:s}}], "
	    "s:[{s:s, s:s, s:s, s:i, s:{s:i}}]}",
	    "operations", ack,
	    "type", "push", "queue", OUT, "items", "transactionId", receipt,
	    "payload", "receipt", 1,
	    "kv", "op", "put", "ns", NS, "key", "order-1", "value",
	    "status", "paid",
	    "timers", "type", "schedule", "queue", TQ, "key", "order-1",
	    "delay", 3600, "payload", "remind", 1);
}

/* A refusal: success false, the reason, an empty results, rc -EIO. */
static void
is_refused(json_t *a, int rc, const char *reason, bool engine,
    const char *label)
{
	is_int(rc, -EIO, "%s: queen_api says the call failed", label);
	ok(json_is_object(a), "%s: the answer is an object", label);
	is_int(jbool(a, "success"), 0, "%s: success false", label);
	is_str(jstr(a, "reason"), reason, "%s: reason %s", label, reason);
	ok(jstr(a, "error") && jstr(a, "error")[0], "%s: an error in words",
	    label);
	if (engine)
		ok(json_is_array(json_object_get(a, "results")) &&
		    json_array_size(json_object_get(a, "results")) == 0,
		    "%s: an empty results", label);
}

/* ---- api/ack ---- */

static void
test_ack(void)
{
	struct fix f;
	struct queen *q = fix_open(&f, "api-ack");
	struct cur_find cf = { "default", -1, -1, 0 };
	json_t *a, *req, *acks, *it;
	const char *lease, *pid;
	char lease_s[QUEEN_ID_LEN + 1] = "", pid_s[QUEEN_ID_LEN + 1] = "";
	static const char *const st[4] = { "completed", "failed",
		"completed", "completed" };
	int64_t n = 0;
	size_t i;
	int rc;

	pushn(q, Q, NULL, "m", 4);
	a = api(q, "pop", "{\"queue\":\"" Q "\",\"consumerGroup\":\"" G
	    "\",\"batch\":4,\"autoAck\":false}", &rc);
	is_int(rc, 0, "ack: pop ran");
	lease = jstr(a, "leaseId");
	pid = jstr(json_array_get(json_object_get(a, "messages"), 0),
	    "partitionId");
	ok(lease && pid, "ack: pop answered a leaseId and a partitionId");
	snprintf(lease_s, sizeof(lease_s), "%s", lease ? lease : "");
	snprintf(pid_s, sizeof(pid_s), "%s", pid ? pid : "");
	json_decref(a);

	/* design.md#clamp: m1 completed, m2 failed, m3 completed, m4 completed */
	acks = json_array();
	for (i = 0; i < 4; i++) {
		char tx[24];

		snprintf(tx, sizeof(tx), "m%zu", i + 1);
		json_array_append_new(acks, json_pack("{s:s, s:s, s:s, s:s}",
		    "transactionId", tx, "partitionId", pid_s, "status", st[i],
		    "leaseId", lease_s));
	}
	req = json_pack("{s:s, s:o}", "consumerGroup", G, "acknowledgments",
	    acks);
	a = apij(q, "ack", req, &rc);
	is_int(rc, 0, "ack: batch ack ran");
	ok(json_is_array(a), "ack: the answer is a top-level array");
	is_int((int64_t)json_array_size(a), 4, "ack: one element per item");
	for (i = 0; i < json_array_size(a) && i < 4; i++) {
		char tx[24];

		it = json_array_get(a, i);
		snprintf(tx, sizeof(tx), "m%zu", i + 1);
		is_int(jint(it, "index"), (int64_t)i, "ack: [%zu] index", i);
		is_str(jstr(it, "transactionId"), tx, "ack: [%zu] "
		    "transactionId", i);
		is_int(jbool(it, "success"), 1, "ack: [%zu] success", i);
		ok(jnull(it, "error"), "ack: [%zu] error null", i);
		is_int(jbool(it, "leaseReleased"), 1, "ack: [%zu] "
		    "leaseReleased (the failure released the lease)", i);
		is_int(jbool(it, "dlq"), 0, "ack: [%zu] dlq false", i);
		is_int(jbool(it, "noop"), 0, "ack: [%zu] noop false", i);
	}
	json_decref(a);
	is_int(committed(q, Q, G, NULL), 1, "ack: the cursor is past m1 "
	    "only");
	is_int(pop_first(q, Q, NULL, G, 4, &n, NULL), 2,
	    "ack: m2 redelivers first");
	is_int(n, 3, "ack: m2, m3, m4 all redeliver");
	/* let that lease run out so nothing is leased below */
	f.now += LEASE_MS + 1;

	/* the reported-not-swallowed table, in one call */
	req = json_pack("{s:s, s:[{s:s, s:s, s:s}, {s:s, s:s, s:s}, "
	    "{s:s, s:s, s:s}]}", "consumerGroup", G, "acknowledgments",
	    "transactionId", "m1", "partitionId", pid_s, "status", "completed",
	    "transactionId", "m1", "partitionId", pid_s, "status", "failed",
	    "transactionId", "ghost", "partitionId", pid_s, "status",
	    "completed");
	a = apij(q, "ack", req, &rc);
	is_int(rc, 0, "ack: second call ran");
	is_int((int64_t)json_array_size(a), 3, "ack: three elements");
	it = json_array_get(a, 0);
	is_int(jbool(it, "success"), 1, "ack: completed at the cursor "
	    "succeeds");
	is_int(jbool(it, "noop"), 1, "ack: ... as a noop");
	ok(jnull(it, "error"), "ack: ... with error null");
	it = json_array_get(a, 1);
	is_int(jbool(it, "success"), 0, "ack: failed at the cursor fails");
	is_str(jstr(it, "error"), QUEEN_E_ALREADY, "ack: ... with the "
	    "'already committed' words");
	is_int(jbool(it, "noop"), 0, "ack: ... and is no noop");
	it = json_array_get(a, 2);
	is_int(jbool(it, "success"), 0, "ack: an unknown txid fails");
	is_str(jstr(it, "error"), QUEEN_E_UNRESOLVABLE, "ack: ... with the "
	    "'unresolvable' words");
	is_str(jstr(it, "transactionId"), "ghost", "ack: ... and its txid");
	json_decref(a);
	queen_cursor_list(q, Q, G, cur_cb, &cf);
	is_int(cf.committed, 1, "ack: the cursor did not move");
	is_int(cf.retry, 1, "ack: no retry charged by the refused signal");

	/* a single ack (no acknowledgments array), status "ok" */
	req = json_pack("{s:s, s:s, s:s, s:s}", "transactionId", "m3",
	    "partitionId", pid_s, "status", "ok", "consumerGroup", G);
	a = apij(q, "ack", req, &rc);
	is_int(rc, 0, "ack: single ack ran");
	ok(json_is_array(a) && json_array_size(a) == 1,
	    "ack: a single ack answers an array of one");
	it = json_array_get(a, 0);
	is_int(jint(it, "index"), 0, "ack: single index 0");
	is_int(jbool(it, "success"), 1, "ack: single success");
	is_int(jbool(it, "leaseReleased"), 0, "ack: no lease to release");
	json_decref(a);
	is_int(committed(q, Q, G, NULL), 3, "ack: status ok committed m3");

	/* a typo counts as failed */
	req = json_pack("{s:s, s:s, s:s, s:s}", "transactionId", "m4",
	    "partitionId", pid_s, "status", "compleetd", "consumerGroup", G);
	a = apij(q, "ack", req, &rc);
	is_int(jbool(json_array_get(a, 0), "success"), 1, "ack: a typo'd "
	    "status is honoured ...");
	json_decref(a);
	cf.committed = cf.retry = -1;
	queen_cursor_list(q, Q, G, cur_cb, &cf);
	is_int(cf.committed, 3, "ack: ... as failed (cursor stays at 3)");
	is_int(cf.retry, 1, "ack: ... charging one retry");

	/* partitionId is required */
	a = api(q, "ack", "{\"transactionId\":\"m4\",\"consumerGroup\":\"" G
	    "\"}", &rc);
	is_refused(a, rc, "bad_request", false, "ack no partitionId");
	json_decref(a);
	is_int(committed(q, Q, G, NULL), 3, "ack: no partitionId moved "
	    "nothing");
	a = api(q, "ack", "{\"acknowledgments\":{}}", &rc);
	is_refused(a, rc, "bad_request", false, "ack acknowledgments object");
	json_decref(a);
	fix_close(&f);
}

/* ---- api/push ---- */

static void
test_push(void)
{
	struct fix f;
	struct queen *q = fix_open(&f, "api-push");
	struct queen_partition_info pi;
	struct queen_stats st;
	json_t *a, *it;
	char buf[64];
	int64_t off = 0;
	int rc;

	a = api(q, "push", "{\"items\":[{\"queue\":\"" Q "\",\"partition\":"
	    "\"p1\",\"transactionId\":\"a\",\"payload\":{\"x\":1}},"
	    "{\"queue\":\"" Q "\",\"partition\":\"p1\",\"payload\":\"hi\"}]}",
	    &rc);
	is_int(rc, 0, "push: ran");
	ok(json_is_array(a) && json_array_size(a) == 2,
	    "push: one result per item");
	is_int(queen_partition_get(q, Q, "p1", &pi), 0, "push: p1 created");
	it = json_array_get(a, 0);
	is_int(jint(it, "index"), 0, "push: [0] index");
	is_str(jstr(it, "transactionId"), "a", "push: [0] transactionId");
	is_str(jstr(it, "status"), "queued", "push: [0] queued");
	is_str(jstr(it, "partitionId"), pi.uuid, "push: [0] partitionId is "
	    "the partition's stable id");
	is_str(jstr(it, "partition"), "p1", "push: [0] partition");
	ok(jstr(it, "messageId") != NULL, "push: [0] a messageId");
	it = json_array_get(a, 1);
	is_int(jint(it, "index"), 1, "push: [1] index");
	is_str(jstr(it, "status"), "queued", "push: [1] queued");
	is_int(jstr(it, "transactionId") ?
	    (int64_t)strlen(jstr(it, "transactionId")) : -1, QUEEN_ID_LEN,
	    "push: [1] a generated 36-char transactionId");
	is_int(queen_msg_find(q, Q, "p1", jstr(it, "transactionId") ?
	    jstr(it, "transactionId") : "?", &off), 0,
	    "push: the generated id names the stored message");
	is_int(off, 2, "push: ... at offset 2");
	json_decref(a);
	is_int(msg_at(q, Q, "p1", 1, buf, sizeof(buf), NULL, 0), 0,
	    "push: message 1 stored");
	is_str(buf, "{\"x\":1}", "push: a JSON payload is stored as JSON "
	    "text");

	a = api(q, "push", "{\"items\":[{\"queue\":\"" Q "\",\"partition\":"
	    "\"p1\",\"transactionId\":\"a\",\"payload\":2}]}", &rc);
	is_int(rc, 0, "push: again ran");
	it = json_array_get(a, 0);
	is_str(jstr(it, "status"), "duplicate", "push: the same txid is a "
	    "duplicate");
	is_str(jstr(it, "transactionId"), "a", "push: duplicate's "
	    "transactionId");
	is_int(jint(it, "offset"), 1, "push: duplicate names the original's "
	    "offset");
	json_decref(a);
	is_int(tail_of(q, Q, "p1"), 2, "push: the duplicate was not stored");
	memset(&st, 0, sizeof(st));
	queen_stats_get(q, Q, NULL, &st);
	is_int(st.duplicates, 1, "push: one duplicate counted");

	/* refusals write nothing */
	a = api(q, "push", "{\"items\":[{\"queue\":\"" Q "\",\"partition\":"
	    "\"p1\",\"payload\":1},{\"queue\":\"" Q "\",\"partition\":\"p1\","
	    "\"payload\":\"%%%\",\"encoding\":\"base64\"}]}", &rc);
	is_refused(a, rc, "bad_request", false, "push bad base64");
	json_decref(a);
	a = api(q, "push", "{\"items\":{}}", &rc);
	is_refused(a, rc, "bad_request", false, "push items object");
	json_decref(a);
	a = api(q, "push", "{\"items\":[{\"queue\":7,\"payload\":1}]}", &rc);
	is_refused(a, rc, "bad_request", false, "push queue number");
	json_decref(a);
	is_int(cfg(q, Q, NULL, "max_message_bytes", "8"), 0,
	    "push: max_message_bytes 8");
	a = api(q, "push", "{\"items\":[{\"queue\":\"" Q "\",\"partition\":"
	    "\"p1\",\"payload\":1},{\"queue\":\"" Q "\",\"partition\":\"p1\","
	    "\"payload\":\"0123456789\"}]}", &rc);
	is_refused(a, rc, "too_large", false, "push over max_message_bytes");
	json_decref(a);
	is_int(tail_of(q, Q, "p1"), 2, "push: the refused calls stored "
	    "nothing");
	fix_close(&f);
}

static void
test_payloads(void)
{
	static const unsigned char bin[] = { 0x00, 0xff, 0x80, '{', '\n',
		0x01, 'q', 0xc3, 0x28, 0x00 };
	struct fix f;
	struct queen *q = fix_open(&f, "api-payload");
	struct queen_batch *b = NULL;
	json_t *a, *m, *req, *want;
	unsigned char back[64];
	char enc[64];
	size_t n;
	int rc;

	b64enc(bin, sizeof(bin), enc);
	req = json_pack("{s:[{s:s, s:s, s:s, s:s, s:s}]}", "items", "queue",
	    Q, "partition", "bin", "transactionId", "b1", "payload", enc,
	    "encoding", "base64");
	a = apij(q, "push", req, &rc);
	is_int(rc, 0, "payload: binary push ran");
	is_str(jstr(json_array_get(a, 0), "status"), "queued",
	    "payload: binary queued");
	json_decref(a);
	is_int(queen_msg_read(q, Q, "bin", 1, 1, true, &b), 0,
	    "payload: stored binary readable");
	if (b && b->n == 1) {
		is_int((int64_t)b->msgs[0].len, (int64_t)sizeof(bin),
		    "payload: stored length");
		ok(memcmp(b->msgs[0].payload, bin, sizeof(bin)) == 0,
		    "payload: stored byte for byte");
	}
	queen_batch_free(b);
	a = api(q, "pop", "{\"queue\":\"" Q "\",\"partition\":\"bin\","
	    "\"consumerGroup\":\"" G "\"}", &rc);
	is_int(rc, 0, "payload: pop ran");
	m = json_array_get(json_object_get(a, "messages"), 0);
	is_str(jstr(m, "encoding"), "base64", "payload: binary comes back "
	    "marked base64");
	n = jstr(m, "payload") ? b64dec(jstr(m, "payload"), back,
	    sizeof(back)) : (size_t)-1;
	is_int((int64_t)n, (int64_t)sizeof(bin), "payload: decoded length");
	ok(n == sizeof(bin) && memcmp(back, bin, sizeof(bin)) == 0,
	    "payload: binary comes back byte for byte");
	json_decref(a);

	a = api(q, "push", "{\"items\":[{\"queue\":\"" Q "\",\"partition\":"
	    "\"js\",\"payload\":{\"a\":[1,2],\"b\":\"c\"}},{\"queue\":\"" Q
	    "\",\"partition\":\"js\",\"payload\":\"hello\"}]}", &rc);
	is_int(rc, 0, "payload: JSON push ran");
	json_decref(a);
	a = api(q, "pop", "{\"queue\":\"" Q "\",\"partition\":\"js\","
	    "\"consumerGroup\":\"" G "\",\"batch\":2}", &rc);
	is_int(rc, 0, "payload: JSON pop ran");
	m = json_array_get(json_object_get(a, "messages"), 0);
	is_str(jstr(m, "encoding"), "json", "payload: JSON comes back "
	    "marked json");
	want = json_pack("{s:[i, i], s:s}", "a", 1, 2, "b", "c");
	ok(json_equal(json_object_get(m, "payload"), want),
	    "payload: JSON comes back as the same JSON value");
	json_decref(want);
	m = json_array_get(json_object_get(a, "messages"), 1);
	is_str(jstr(m, "encoding"), "json", "payload: a JSON string is json");
	is_str(jstr(m, "payload"), "hello", "payload: ... and comes back as "
	    "the string");
	json_decref(a);
	fix_close(&f);
}

/* ---- api/pop ---- */

static void
test_pop(void)
{
	struct fix f;
	struct queen *q = fix_open(&f, "api-pop");
	struct queen_partition_info pi;
	struct queen_lease_info li;
	json_t *a, *msgs, *m;
	const char *lease;
	int64_t t_push = f.now;
	unsigned char raw[16];
	size_t i;
	int rc;

	pushn(q, Q, "p1", "m", 2);
	queen_partition_get(q, Q, "p1", &pi);
	f.now += 5 * SEC;
	a = api(q, "pop", "{\"queue\":\"" Q "\",\"partition\":\"p1\","
	    "\"consumerGroup\":\"" G "\",\"batch\":10,\"autoAck\":false}",
	    &rc);
	is_int(rc, 0, "pop: ran");
	is_int(jbool(a, "success"), 1, "pop: success true");
	lease = jstr(a, "leaseId");
	is_int(lease ? (int64_t)strlen(lease) : -1, QUEEN_ID_LEN,
	    "pop: a 36-char leaseId");
	is_int(queen_lease_get(q, lease ? lease : "?", &li), 0,
	    "pop: the leaseId is a live lease");
	is_int(li.expires_at, f.now + LEASE_MS, "pop: leased for lease_time");
	msgs = json_object_get(a, "messages");
	is_int((int64_t)json_array_size(msgs), 2, "pop: two messages");
	for (i = 0; i < json_array_size(msgs); i++) {
		char tx[24];

		m = json_array_get(msgs, i);
		snprintf(tx, sizeof(tx), "m%zu", i + 1);
		is_str(jstr(m, "transactionId"), tx, "pop: [%zu] "
		    "transactionId", i);
		is_str(jstr(m, "partitionId"), pi.uuid, "pop: [%zu] "
		    "partitionId", i);
		is_str(jstr(m, "partition"), "p1", "pop: [%zu] partition", i);
		is_str(jstr(m, "leaseId"), lease, "pop: [%zu] leaseId", i);
		is_str(jstr(m, "consumerGroup"), G, "pop: [%zu] consumerGroup",
		    i);
		is_int(jint(m, "createdAt"), t_push, "pop: [%zu] createdAt is "
		    "the push time", i);
		is_str(jstr(m, "encoding"), "base64", "pop: [%zu] raw bytes "
		    "that are not JSON travel as base64", i);
		memset(raw, 0, sizeof(raw));
		if (jstr(m, "payload"))
			b64dec(jstr(m, "payload"), raw, sizeof(raw) - 1);
		is_str((const char *)raw, tx, "pop: [%zu] payload decodes to "
		    "the pushed bytes", i);
	}
	json_decref(a);
	is_int(lease_count(q, Q, G), 1, "pop: one live lease");

	/* nothing available: success with empty messages */
	a = api(q, "pop", "{\"queue\":\"" Q "\",\"partition\":\"p1\","
	    "\"consumerGroup\":\"" G "\"}", &rc);
	is_int(rc, 0, "pop: leased-out partition ran");
	is_int(jbool(a, "success"), 1, "pop: nothing available is success");
	ok(json_is_array(json_object_get(a, "messages")) &&
	    json_array_size(json_object_get(a, "messages")) == 0,
	    "pop: ... with empty messages");
	json_decref(a);
	is_int(queen_queue_create(q, "empty", NULL), 0, "pop: an empty queue");
	a = api(q, "pop", "{\"queue\":\"empty\"}", &rc);
	is_int(rc, 0, "pop: empty queue ran");
	is_int(jbool(a, "success"), 1, "pop: empty queue is success");
	ok(json_is_array(json_object_get(a, "messages")) &&
	    json_array_size(json_object_get(a, "messages")) == 0,
	    "pop: empty queue gives empty messages");
	ok(jnull(a, "leaseId"), "pop: empty queue gives no lease");
	json_decref(a);

	/* autoAck: no lease, the cursor moves */
	pushn(q, Q, "p2", "n", 2);
	a = api(q, "pop", "{\"queue\":\"" Q "\",\"partition\":\"p2\","
	    "\"consumerGroup\":\"" G "\",\"batch\":5,\"autoAck\":true}", &rc);
	is_int(rc, 0, "pop: autoAck ran");
	ok(jnull(a, "leaseId"), "pop: autoAck has no leaseId");
	is_int((int64_t)json_array_size(json_object_get(a, "messages")), 2,
	    "pop: autoAck delivered two");
	json_decref(a);
	is_int(committed(q, Q, G, "p2"), 2, "pop: autoAck moved the cursor");

	a = api(q, "pop", "{\"queue\":\"nosuch\"}", &rc);
	is_int(rc, -EIO, "pop: an unknown queue fails");
	is_int(jbool(a, "success"), 0, "pop: ... with success false");
	json_decref(a);
	a = api(q, "pop", "{\"queue\":\"" Q "\",\"batch\":\"ten\"}", &rc);
	is_refused(a, rc, "bad_request", false, "pop batch string");
	json_decref(a);
	a = api(q, "pop", "{\"queue\":\"" Q "\",\"autoAck\":\"yes\"}", &rc);
	is_refused(a, rc, "bad_request", false, "pop autoAck string");
	json_decref(a);
	is_int(lease_count(q, Q, NULL), 0, "pop: the refused pops leased "
	    "nothing");
	fix_close(&f);
}

/* ---- api/renew ---- */

/*
 * Queen's API makes a group on its first use even on a handle whose
 * own calls make none (queen_groups_explicit on, as the mount's), and
 * leaves that setting as it found it.
 */
static void
test_groups_first_use(void)
{
	struct fix f;
	struct queen *q = fix_open(&f, "api-groups");
	struct queen_group_info gi;
	struct queen_pop_req pr = { .queue = Q,
		.group = "gb",
		.batch = 1,
		.auto_ack = -1 };
	struct queen_batch *b = NULL;
	json_t *a;
	int rc;

	pushn(q, Q, "p1", "m", 1);
	queen_groups_explicit(q, true);
	is_int(queen_pop(q, &pr, &b), -ENOENT,
	    "groups: the handle's own pop makes no group");
	queen_batch_free(b);
	a = api(q, "pop",
	    "{\"queue\":\"" Q "\",\"consumerGroup\":\"ga\","
	    "\"batch\":1,\"autoAck\":false}",
	    &rc);
	is_int(rc, 0, "groups: api/pop of a new group ran");
	is_int((int64_t)json_array_size(json_object_get(a, "messages")), 1,
	    "groups: and got the message");
	json_decref(a);
	is_int(queen_group_get(q, Q, "ga", &gi), 0, "groups: the API made ga");
	ok(queen_groups_explicit(q, true),
	    "groups: the handle's setting is on again after the call");
	is_int(queen_group_get(q, Q, "gb", &gi), -ENOENT,
	    "groups: gb was not made");
	fix_close(&f);
}

static void
test_renew(void)
{
	struct fix f;
	struct queen *q = fix_open(&f, "api-renew");
	struct queen_lease_info li;
	json_t *a, *req;
	char lease[QUEEN_ID_LEN + 1] = "";
	int64_t t0 = f.now;
	int rc;

	pushn(q, Q, NULL, "m", 2);
	a = api(q, "pop", "{\"queue\":\"" Q "\",\"consumerGroup\":\"" G
	    "\",\"batch\":2}", &rc);
	snprintf(lease, sizeof(lease), "%s", jstr(a, "leaseId") ?
	    jstr(a, "leaseId") : "");
	json_decref(a);
	ok(lease[0], "renew: popped with a lease");
	f.now = t0 + 200 * SEC;
	req = json_pack("{s:s, s:i}", "leaseId", lease, "seconds", 600);
	a = apij(q, "renew", req, &rc);
	is_int(rc, 0, "renew: ran");
	is_int(jbool(a, "success"), 1, "renew: success true");
	is_str(jstr(a, "leaseId"), lease, "renew: echoes the leaseId");
	is_int(jint(a, "expiresAt"), f.now + 600 * SEC, "renew: expiresAt is "
	    "now + 600 s");
	json_decref(a);
	is_int(queen_lease_get(q, lease, &li), 0, "renew: lease live");
	is_int(li.expires_at, f.now + 600 * SEC, "renew: the store agrees");
	f.now = t0 + LEASE_MS + 1;
	is_int(queen_lease_get(q, lease, &li), 0, "renew: still live past "
	    "the original expiry");
	f.now = t0 + 200 * SEC + 600 * SEC;
	req = json_pack("{s:s}", "leaseId", lease);
	a = apij(q, "renew", req, &rc);
	is_int(rc, -EIO, "renew: a stale renew fails");
	is_int(jbool(a, "success"), 0, "renew: stale answers success false");
	is_str(jstr(a, "error"), QUEEN_E_LEASE, "renew: ... with the lease "
	    "words");
	json_decref(a);
	is_int(queen_lease_get(q, lease, &li), -ESTALE, "renew: the stale "
	    "renew did not revive it");
	a = api(q, "renew", "{\"leaseId\":\"0190aaaa-0000-7000-8000-"
	    "000000000000\"}", &rc);
	is_int(jbool(a, "success"), 0, "renew: an unknown lease answers "
	    "success false");
	json_decref(a);
	a = api(q, "renew", "{\"seconds\":5}", &rc);
	is_refused(a, rc, "bad_request", false, "renew without leaseId");
	json_decref(a);
	fix_close(&f);
}

/* ---- api/transaction: a commit and its results ---- */

static void
test_txn_commit(void)
{
	struct fix f;
	struct env e;
	struct queen *q = setup(&f, "api-txn-commit", false, &e);
	struct queen_kv_value *v = NULL;
	struct queen_timer_info *ti = NULL;
	json_t *req, *a, *res, *r, *want;
	char buf[128], txid[64];
	int rc;

	req = step_req(e.pid, e.lease, "m3", "receipt-1");
	json_object_set_new(json_array_get(json_object_get(req, "kv"), 0),
	    "ttl", json_string("30d"));
	json_array_append_new(json_object_get(req, "kv"), json_pack(
	    "{s:s, s:s, s:s}", "type", "get", "ns", NS, "key", "order-1"));
	json_array_append_new(json_object_get(req, "kv"), json_pack(
	    "{s:s, s:s, s:s, s:i}", "op", "incr", "ns", NS, "key", "count",
	    "by", 3));
	json_array_append_new(json_object_get(req, "kv"), json_pack(
	    "{s:s, s:s, s:[s, s, s]}", "op", "getMany", "ns", NS, "keys",
	    "order-1", "count", "nope"));
	a = apij(q, "transaction", req, &rc);
	is_int(rc, 0, "commit: ran");
	is_int(jbool(a, "success"), 1, "commit: success true");
	res = json_object_get(a, "results");
	is_int((int64_t)json_array_size(res), 7, "commit: one result per ack, "
	    "push, KV op and timer op");
	r = json_array_get(res, 0);
	is_str(jstr(r, "type"), "ack", "commit: [0] is the ack");
	is_int(jbool(r, "success"), 1, "commit: [0] ack success");
	is_int(jbool(r, "leaseReleased"), 1, "commit: [0] released the lease");
	r = json_array_get(res, 1);
	is_str(jstr(r, "type"), "push", "commit: [1] is the push");
	is_str(jstr(r, "status"), "queued", "commit: [1] queued");
	is_str(jstr(r, "transactionId"), "receipt-1", "commit: [1] txid");
	r = json_array_get(res, 2);
	is_str(jstr(r, "op"), "put", "commit: [2] is the put");
	is_int(jint(r, "version"), 1, "commit: [2] version 1");
	r = json_array_get(res, 3);
	is_str(jstr(r, "op"), "get", "commit: [3] is the get");
	is_int(jbool(r, "found"), 1, "commit: [3] the get, answered after "
	    "apply, finds the put");
	want = json_pack("{s:s}", "status", "paid");
	ok(json_equal(json_object_get(r, "value"), want), "commit: [3] the "
	    "get returns the new value");
	r = json_array_get(res, 4);
	is_str(jstr(r, "op"), "incr", "commit: [4] is the incr");
	is_int(jint(r, "value"), 3, "commit: [4] incr on an absent key "
	    "starts from 0");
	r = json_array_get(res, 5);
	is_str(jstr(r, "op"), "getMany", "commit: [5] is the getMany");
	ok(json_equal(json_object_get(json_object_get(r, "values"),
	    "order-1"), want), "commit: [5] getMany order-1");
	is_int(json_is_integer(json_object_get(json_object_get(r, "values"),
	    "count")) ? json_integer_value(json_object_get(json_object_get(r,
	    "values"), "count")) : -1, 3, "commit: [5] getMany count is 3");
	ok(json_is_null(json_object_get(json_object_get(r, "values"),
	    "nope")), "commit: [5] getMany nope is null");
	json_decref(want);
	r = json_array_get(res, 6);
	is_str(jstr(r, "type"), "timer", "commit: [6] is the timer");
	is_str(jstr(r, "status"), "scheduled", "commit: [6] scheduled");
	json_decref(a);

	is_int(committed(q, Q, G, NULL), 3, "commit: cursor at 3");
	is_int(queen_kv_get(q, NS, "order-1", &v), 0, "commit: KV written");
	if (v) {
		snprintf(buf, sizeof(buf), "%.*s", (int)v->len,
		    (const char *)v->data);
		is_str(buf, "{\"status\":\"paid\"}", "commit: KV value");
		is_int(v->expires_at, f.now + 30LL * 86400 * SEC,
		    "commit: ttl 30d");
	}
	free(v);
	is_int(msg_at(q, OUT, NULL, 1, buf, sizeof(buf), txid, sizeof(txid)),
	    0, "commit: the receipt landed");
	is_str(txid, "receipt-1", "commit: receipt txid");
	is_str(buf, "{\"receipt\":1}", "commit: receipt payload");
	is_int(queen_timer_get(q, TQ, "order-1", true, &ti), 0,
	    "commit: the timer is there");
	if (ti)
		is_int(ti->due_at, f.now + 3600 * SEC, "commit: due in an hour");
	free(ti);
	f.now += 3600 * SEC;
	maintain_all(q);
	maintain_all(q);
	is_int(tail_of(q, TQ, NULL), 1, "commit: the timer fired exactly "
	    "once");
	is_int(msg_at(q, TQ, NULL, 1, buf, sizeof(buf), NULL, 0), 0,
	    "commit: fired message readable");
	is_str(buf, "{\"remind\":1}", "commit: with the timer payload");

	/* cancel through the API */
	a = api(q, "transaction", "{\"timers\":[{\"type\":\"schedule\","
	    "\"queue\":\"" TQ "\",\"timerKey\":\"t2\",\"delay\":\"10m\"}]}",
	    &rc);
	is_int(jbool(a, "success"), 1, "commit: schedule t2");
	json_decref(a);
	a = api(q, "transaction", "{\"timers\":[{\"op\":\"cancel\","
	    "\"queue\":\"" TQ "\",\"key\":\"t2\"}]}", &rc);
	is_int(jbool(a, "success"), 1, "commit: cancel t2");
	is_str(jstr(json_array_get(json_object_get(a, "results"), 0),
	    "status"), "cancelled", "commit: cancel answers cancelled");
	json_decref(a);
	ti = NULL;
	is_int(queen_timer_get(q, TQ, "t2", false, &ti), -ENOENT,
	    "commit: t2 is gone");
	free(ti);
	/* again: no such timer now, as rm would answer ENOENT */
	a = api(q, "transaction", "{\"timers\":[{\"op\":\"cancel\","
	    "\"queue\":\"" TQ "\",\"key\":\"t2\"}]}", &rc);
	is_int(jbool(a, "success"), 1, "commit: cancel of a missing timer "
	    "commits");
	is_str(jstr(json_array_get(json_object_get(a, "results"), 0),
	    "status"), "not_found", "commit: and answers not_found, not "
	    "cancelled");
	json_decref(a);
	f.now += 3600 * SEC;
	maintain_all(q);
	is_int(tail_of(q, TQ, NULL), 1, "commit: the cancelled t2 never "
	    "fired");

	/* KV ttl in a transaction expires with the clock */
	a = api(q, "transaction", "{\"kv\":[{\"op\":\"put\",\"ns\":\"" NS
	    "\",\"key\":\"tmp\",\"value\":\"x\",\"ttl\":10}]}", &rc);
	is_int(jbool(a, "success"), 1, "commit: put with ttl 10");
	json_decref(a);
	f.now += 10 * SEC - 1;
	is_int(kv_str(q, NS, "tmp", buf, sizeof(buf)), 1, "commit: tmp alive "
	    "1 ms before expiry");
	f.now += 1;
	is_int(kv_str(q, NS, "tmp", buf, sizeof(buf)), -ENOENT,
	    "commit: tmp gone at expiry");
	fix_close(&f);
}

/*
 * KV values through the API: what a put stores, a get in the same or a later
 * transaction answers as the same JSON value (a string stays a string).
 */
static void
test_kv_values(void)
{
	struct fix f;
	struct queen *q = fix_open(&f, "api-kv-values");
	json_t *a, *res, *vals;
	char buf[64];
	int rc;

	a = api(q, "transaction", "{\"kv\":["
	    "{\"op\":\"put\",\"ns\":\"" NS "\",\"key\":\"s\",\"value\":\"hello\"},"
	    "{\"op\":\"put\",\"ns\":\"" NS "\",\"key\":\"n\",\"value\":\"123\"},"
	    "{\"op\":\"put\",\"ns\":\"" NS "\",\"key\":\"o\",\"value\":{\"a\":1}},"
	    "{\"op\":\"get\",\"ns\":\"" NS "\",\"key\":\"s\"},"
	    "{\"op\":\"get\",\"ns\":\"" NS "\",\"key\":\"n\"},"
	    "{\"op\":\"get\",\"ns\":\"" NS "\",\"key\":\"o\"},"
	    "{\"op\":\"getMany\",\"ns\":\"" NS "\",\"keys\":[\"s\",\"n\"]}]}",
	    &rc);
	is_int(rc, 0, "kvval: ran");
	is_int(jbool(a, "success"), 1, "kvval: commits");
	res = json_object_get(a, "results");
	is_int((int64_t)json_array_size(res), 7, "kvval: seven results");
	is_int(kv_str(q, NS, "s", buf, sizeof(buf)), 1, "kvval: s stored");
	is_str(buf, "\"hello\"", "kvval: a value is stored as its JSON text "
	    "(so a string keeps its type)");
	is_str(jstr(json_array_get(res, 3), "value"), "hello",
	    "kvval: get of a string value answers the same string");
	is_str(jstr(json_array_get(res, 4), "value"), "123",
	    "kvval: get of the string \"123\" answers a string, not a "
	    "number");
	ok(json_is_object(json_object_get(json_array_get(res, 5), "value")) &&
	    jint(json_object_get(json_array_get(res, 5), "value"), "a") == 1,
	    "kvval: get of an object value answers the object");
	vals = json_object_get(json_array_get(res, 6), "values");
	is_str(jstr(vals, "s"), "hello", "kvval: getMany answers the string");
	is_str(jstr(vals, "n"), "123", "kvval: getMany answers \"123\" as a "
	    "string");
	json_decref(a);
	fix_close(&f);
}

/* ---- api/transaction: refusals ---- */

static void
test_txn_ab(void)
{
	struct fix f;
	struct env e;
	struct queen *q = setup(&f, "api-txn-ab", false, &e);
	struct queen_queue_info qi;
	struct queen_batch *b = NULL;
	struct world w;
	json_t *a;
	char l2[QUEEN_ID_LEN + 1] = "", buf[64];
	int rc;

	f.now += LEASE_MS + 1;
	is_int(pop1(q, Q, NULL, G, 3, &b), 0, "ab: worker B pops");
	if (b) {
		snprintf(l2, sizeof(l2), "%s", b->lease_id);
		is_int(b->msgs[0].offset, 1, "ab: B has the same span");
	}
	queen_batch_free(b);
	snap(q, l2, &w);
	a = apij(q, "transaction", step_req(e.pid, e.lease, "m3",
	    "receipt-1"), &rc);
	is_refused(a, rc, "rejected_ack", true, "ab A");
	is_str(jstr(a, "error"), QUEEN_E_LEASE, "ab: A's error in words");
	is_int(jint(a, "failedIndex"), 0, "ab: A's failedIndex is the ack");
	json_decref(a);
	nothing_written(q, &w, l2, "ab A");
	is_int(queen_queue_get(q, OUT, &qi), -ENOENT, "ab: A's push created "
	    "nothing");

	a = apij(q, "transaction", step_req(e.pid, l2, "m3", "receipt-1"),
	    &rc);
	is_int(rc, 0, "ab: B's call ran");
	is_int(jbool(a, "success"), 1, "ab: B's identical call commits");
	json_decref(a);
	is_int(committed(q, Q, G, NULL), 3, "ab: cursor moved to 3");
	is_int(kv_str(q, NS, "order-1", buf, sizeof(buf)), 1,
	    "ab: B's KV write landed");
	is_str(buf, "{\"status\":\"paid\"}", "ab: B's KV value");
	is_int(tail_of(q, OUT, NULL), 1, "ab: B's push landed");
	is_int(lease_count(q, Q, G), 0, "ab: L2 released by B's ack");
	fix_close(&f);

	/* design.md#transactions: an ack without consumerGroup is judged in queue mode */
	q = setup(&f, "api-txn-nogroup", false, &e);
	snap(q, e.lease, &w);
	{
		json_t *req = step_req(e.pid, e.lease, "m3", "receipt-1");

		json_object_del(json_array_get(json_object_get(req,
		    "operations"), 0), "consumerGroup");
		a = apij(q, "transaction", req, &rc);
	}
	is_refused(a, rc, "rejected_ack", true, "ab no consumerGroup");
	json_decref(a);
	nothing_written(q, &w, e.lease, "ab no consumerGroup");
	fix_close(&f);
}

static void
test_txn_refusals(void)
{
	struct fix f;
	struct env e;
	struct queen *q;
	struct world w;
	json_t *a, *req, *kv;
	char buf[64];
	int rc;

	/* duplicate */
	q = setup(&f, "api-txn-dup", true, &e);
	snap(q, e.lease, &w);
	req = step_req(e.pid, e.lease, "m1", "receipt-new");
	json_array_append_new(json_object_get(json_array_get(
	    json_object_get(req, "operations"), 1), "items"),
	    json_pack("{s:s, s:i}", "transactionId", "receipt-0", "payload",
	    0));
	a = apij(q, "transaction", req, &rc);
	is_refused(a, rc, "duplicate", true, "duplicate");
	is_int(jint(a, "failedIndex"), 1, "duplicate: failedIndex 1");
	json_decref(a);
	nothing_written(q, &w, e.lease, "duplicate");
	fix_close(&f);

	/* kv_precondition: the gate exists */
	q = setup(&f, "api-txn-exists", true, &e);
	queen_kv_put(q, NS, "gate", "g", 1, 0, false);
	snap(q, e.lease, &w);
	req = step_req(e.pid, e.lease, "m1", "receipt-1");
	json_array_append_new(json_object_get(req, "kv"), json_pack(
	    "{s:s, s:s, s:s, s:s}", "type", "putIfAbsent", "ns", NS, "key",
	    "gate", "value", "again"));
	a = apij(q, "transaction", req, &rc);
	is_refused(a, rc, "kv_precondition", true, "exists");
	is_str(jstr(a, "kvReason"), "exists", "exists: kvReason exists");
	is_int(jint(a, "failedIndex"), 1, "exists: failedIndex is the gate");
	json_decref(a);
	nothing_written(q, &w, e.lease, "exists");
	is_int(kv_str(q, NS, "gate", buf, sizeof(buf)), 1, "exists: gate "
	    "untouched");
	is_str(buf, "g", "exists: gate value untouched");
	fix_close(&f);

	/* kv_precondition: version */
	q = setup(&f, "api-txn-version", true, &e);
	queen_kv_put(q, NS, "order-1", "old", 3, 0, false);
	snap(q, e.lease, &w);
	req = step_req(e.pid, e.lease, "m1", "receipt-1");
	kv = json_array_get(json_object_get(req, "kv"), 0);
	json_object_set_new(kv, "expect", json_pack("{s:i}", "version", 7));
	json_object_set_new(kv, "required", json_true());
	a = apij(q, "transaction", req, &rc);
	is_refused(a, rc, "kv_precondition", true, "version");
	is_str(jstr(a, "kvReason"), "version", "version: kvReason version");
	is_int(jint(a, "failedIndex"), 0, "version: failedIndex 0");
	json_decref(a);
	nothing_written(q, &w, e.lease, "version");
	req = step_req(e.pid, e.lease, "m1", "receipt-1");
	kv = json_array_get(json_object_get(req, "kv"), 0);
	json_object_set_new(kv, "expect", json_integer(1));
	json_object_set_new(kv, "required", json_true());
	a = apij(q, "transaction", req, &rc);
	is_int(jbool(a, "success"), 1, "version: expect 1 commits");
	json_decref(a);
	is_int(kv_str(q, NS, "order-1", buf, sizeof(buf)), 2,
	    "version: now version 2");
	fix_close(&f);

	/* requiredLeases: expired, and fencing acks without a leaseId */
	q = setup(&f, "api-txn-req", false, &e);
	f.now += LEASE_MS + 1;
	snap(q, NULL, &w);
	req = step_req(e.pid, NULL, "m1", "receipt-1");
	json_object_set_new(req, "requiredLeases", json_pack("[s]", e.lease));
	a = apij(q, "transaction", req, &rc);
	is_refused(a, rc, "rejected_ack", true, "req expired");
	json_decref(a);
	nothing_written(q, &w, NULL, "req expired");
	{
		struct queen_batch *b = NULL;
		char l2[QUEEN_ID_LEN + 1] = "";

		pop1(q, Q, NULL, G, 3, &b);
		snprintf(l2, sizeof(l2), "%s", b ? b->lease_id : "");
		queen_batch_free(b);
		req = step_req(e.pid, NULL, "m1", "receipt-1");
		json_object_set_new(req, "requiredLeases", json_pack("[s]",
		    l2));
		a = apij(q, "transaction", req, &rc);
		is_int(jbool(a, "success"), 1, "req: an ack without leaseId "
		    "under the live required lease commits");
		json_decref(a);
		is_int(committed(q, Q, G, NULL), 1, "req: cursor moved to 1");
	}
	fix_close(&f);

	/* no lease at all: unchecked, moves the cursor */
	q = setup(&f, "api-txn-nolease", false, &e);
	a = apij(q, "transaction", step_req(e.pid, NULL, "m2", "receipt-1"),
	    &rc);
	is_int(jbool(a, "success"), 1, "nolease: an ack with no lease "
	    "commits");
	json_decref(a);
	is_int(committed(q, Q, G, NULL), 2, "nolease: cursor moved to 2");
	fix_close(&f);
}

/* A bad_request body: answered bad_request (or too_large), nothing written. */
static void
refuse_body(const char *name, const char *body, const char *reason,
    bool engine, int64_t failed_index)
{
	struct fix f;
	struct env e;
	struct queen *q = setup(&f, name, true, &e);
	struct world w;
	json_t *a;
	int rc;

	snap(q, e.lease, &w);
	a = api(q, "transaction", body, &rc);
	is_refused(a, rc, reason, engine, name);
	if (failed_index >= 0)
		is_int(jint(a, "failedIndex"), failed_index,
		    "%s: failedIndex", name);
	json_decref(a);
	nothing_written(q, &w, e.lease, name);
	fix_close(&f);
}

/* The step with one part replaced, as text. */
static char *
step_with(const char *key, json_t *val)
{
	json_t *req = step_req("00000000-0000-0000-0000-000000000000", NULL,
	    "m1", "receipt-1");
	char *s;

	/* acks are dropped so only the part under test can refuse */
	json_array_remove(json_object_get(req, "operations"), 0);
	json_object_set_new(req, key, val);
	s = json_dumps(req, JSON_COMPACT);
	json_decref(req);
	return s;
}

static void
test_txn_bad(void)
{
	char *s;
	json_t *arr;
	int i;

	refuse_body("api-bad-malformed", "{\"operations\": [", "bad_request",
	    false, -1);
	refuse_body("api-bad-array", "[]", "bad_request", false, -1);
	refuse_body("api-bad-ops-type", "{\"operations\":\"ack\"}",
	    "bad_request", false, -1);
	refuse_body("api-bad-kv-object", "{\"kv\":{}}", "bad_request", false,
	    -1);
	refuse_body("api-bad-unknown-op", "{\"operations\":[{\"type\":"
	    "\"frobnicate\"},{\"type\":\"push\",\"queue\":\"" OUT "\","
	    "\"payload\":1}]}", "bad_request", false, -1);
	refuse_body("api-bad-no-type", "{\"kv\":[{\"ns\":\"" NS "\",\"key\":"
	    "\"a\",\"value\":1}]}", "bad_request", false, -1);
	refuse_body("api-bad-getprefix", "{\"kv\":[{\"op\":\"getPrefix\","
	    "\"ns\":\"" NS "\",\"prefix\":\"a\"}]}", "bad_request", false, -1);
	refuse_body("api-bad-timer-op", "{\"timers\":[{\"op\":\"snooze\","
	    "\"queue\":\"" TQ "\",\"key\":\"a\"}]}", "bad_request", false, -1);
	refuse_body("api-bad-ttl", "{\"kv\":[{\"op\":\"put\",\"ns\":\"" NS
	    "\",\"key\":\"a\",\"value\":1,\"ttl\":true}]}", "bad_request",
	    false, -1);
	refuse_body("api-bad-required", "{\"kv\":[{\"op\":\"put\",\"ns\":\""
	    NS "\",\"key\":\"a\",\"value\":1,\"required\":\"yes\"}]}",
	    "bad_request", false, -1);
	refuse_body("api-bad-by", "{\"kv\":[{\"op\":\"incr\",\"ns\":\"" NS
	    "\",\"key\":\"a\",\"by\":\"3\"}]}", "bad_request", false, -1);
	refuse_body("api-bad-expect", "{\"kv\":[{\"op\":\"put\",\"ns\":\"" NS
	    "\",\"key\":\"a\",\"value\":1,\"expect\":\"v1\"}]}", "bad_request",
	    false, -1);
	refuse_body("api-bad-leases", "{\"requiredLeases\":[5],\"kv\":[{\"op\":"
	    "\"put\",\"ns\":\"" NS "\",\"key\":\"a\",\"value\":1}]}",
	    "bad_request", false, -1);
	refuse_body("api-bad-dueat", "{\"timers\":[{\"op\":\"schedule\","
	    "\"queue\":\"" TQ "\",\"key\":\"a\",\"dueAt\":true}]}",
	    "bad_request", false, -1);
	refuse_body("api-bad-ack-nopid", "{\"operations\":[{\"type\":\"ack\","
	    "\"transactionId\":\"m1\"}],\"kv\":[{\"op\":\"put\",\"ns\":\"" NS
	    "\",\"key\":\"a\",\"value\":1}]}", "bad_request", false, -1);

	/* the engine's own bad_request: two writes, two timer ops */
	s = step_with("kv", json_pack("[{s:s, s:s, s:s, s:i}, {s:s, s:s, s:s}]",
	    "op", "put", "ns", NS, "key", "k", "value", 1, "op", "incr", "ns",
	    NS, "key", "k"));
	refuse_body("api-bad-two-writes", s, "bad_request", true, 1);
	free(s);
	s = step_with("timers", json_pack("[{s:s, s:s, s:s}, {s:s, s:s, "
	    "s:s}]", "op", "schedule", "queue", TQ, "key", "t", "op", "cancel",
	    "queue", TQ, "key", "t"));
	refuse_body("api-bad-two-timer-ops", s, "bad_request", true, 1);
	free(s);

	/* too_large: 65 KV operations; 257 keys */
	arr = json_array();
	for (i = 0; i < QUEEN_TXN_MAX_KV_OPS + 1; i++) {
		char k[16];

		snprintf(k, sizeof(k), "k%d", i);
		json_array_append_new(arr, json_pack("{s:s, s:s, s:s, s:i}",
		    "op", "put", "ns", NS, "key", k, "value", i));
	}
	s = step_with("kv", arr);
	refuse_body("api-big-65-ops", s, "too_large", false, -1);
	free(s);
	arr = json_array();
	for (i = 0; i < QUEEN_TXN_MAX_KV_KEYS + 1; i++) {
		char k[16];

		snprintf(k, sizeof(k), "k%d", i);
		json_array_append_new(arr, json_string(k));
	}
	s = step_with("kv", json_pack("[{s:s, s:s, s:o}]", "op", "getMany",
	    "ns", NS, "keys", arr));
	refuse_body("api-big-257-keys", s, "too_large", true, -1);
	free(s);
}

static void
test_txn_big(void)
{
	struct fix f;
	struct env e;
	struct queen *q;
	struct world w;
	json_t *a, *req;
	char *body, *big;
	int rc;

	/* a push over max_message_bytes */
	q = setup(&f, "api-big-push", true, &e);
	cfg(q, OUT, NULL, "max_message_bytes", "16");
	snap(q, e.lease, &w);
	req = step_req(e.pid, e.lease, "m1", "receipt-1");
	json_object_set_new(json_array_get(json_object_get(json_array_get(
	    json_object_get(req, "operations"), 1), "items"), 0), "payload",
	    json_string("0123456789abcdefghij"));
	a = apij(q, "transaction", req, &rc);
	is_refused(a, rc, "too_large", true, "big push");
	json_decref(a);
	nothing_written(q, &w, e.lease, "big push");
	fix_close(&f);

	/* a body over QUEEN_API_MAX_BODY (calloc: untouched pages are free) */
	q = setup(&f, "api-big-body", true, &e);
	snap(q, e.lease, &w);
	big = calloc(1, (size_t)QUEEN_API_MAX_BODY + 2);
	if (!big) {
		skip(3, "no memory for an oversize body");
		fix_close(&f);
		return;
	}
	body = NULL;
	big[0] = '{';
	big[1] = '}';
	rc = queen_api(q, "transaction", big, (size_t)QUEEN_API_MAX_BODY + 1,
	    &body);
	free(big);
	a = body ? json_loads(body, 0, NULL) : NULL;
	free(body);
	is_refused(a, rc, "too_large", false, "big body");
	json_decref(a);
	nothing_written(q, &w, e.lease, "big body");
	fix_close(&f);
}

/*
 * Answers written as text (pop's messages, push's results) are JSON a
 * parser takes, whatever the names hold: quotes, backslashes, control
 * bytes and UTF-8 come back as they went in; a byte that is not UTF-8
 * becomes U+FFFD.  Names come from files, so anything but NUL and '/'.
 */
static void
test_escapes(void)
{
	static const char *const ids[] = {
		"q\"uote", "back\\slash", "tab\tnl\ncr\r\x01\x1f",
		"caf\xc3\xa9 \xe2\x82\xac \xf0\x9f\x90\x9d",
		"bad\xff\xfe", "cut\xe2\x82", "over\xc0\xafx",
		"sur\xed\xa0\x80x",
	};
	static const char *const want[] = {
		"q\"uote", "back\\slash", "tab\tnl\ncr\r\x01\x1f",
		"caf\xc3\xa9 \xe2\x82\xac \xf0\x9f\x90\x9d",
		"bad\xef\xbf\xbd\xef\xbf\xbd",
		"cut\xef\xbf\xbd\xef\xbf\xbd",
		"over\xef\xbf\xbd\xef\xbf\xbdx",
		"sur\xef\xbf\xbd\xef\xbf\xbd\xef\xbf\xbdx",
	};
	struct fix f;
	struct queen *q = fix_open(&f, "api-escape");
	size_t i, n = sizeof(ids) / sizeof(ids[0]);
	json_t *a, *msgs;
	int rc;

	for (i = 0; i < n; i++)
		ok(push1(q, Q, "esc", ids[i], "x") > 0, "escape: push %zu", i);
	a = api(q, "pop", "{\"queue\":\"" Q "\",\"partition\":\"esc\","
	    "\"batch\":20}", &rc);
	is_int(rc, 0, "escape: pop ran");
	msgs = json_object_get(a, "messages");
	is_int((int64_t)json_array_size(msgs), (int64_t)n,
	    "escape: the answer parses, with every message");
	for (i = 0; i < n && i < json_array_size(msgs); i++)
		is_str(jstr(json_array_get(msgs, i), "transactionId"), want[i],
		    "escape: name %zu", i);
	json_decref(a);

	a = api(q, "push", "{\"items\":[{\"queue\":\"" Q "\",\"transactionId\":"
	    "\"p\\\"q\\\\r\\u0001\",\"payload\":1}]}", &rc);
	is_int(rc, 0, "escape: push ran");
	is_str(jstr(json_array_get(a, 0), "transactionId"), "p\"q\\r\x01",
	    "escape: push answers the name as sent");
	json_decref(a);
	fix_close(&f);
}

/*
 * A payload travels as JSON exactly when jansson would take it as JSON
 * text, and then it parses to what jansson parses the stored bytes to.
 * The answer checks payloads without parsing them (jsonw.c), so this
 * holds the two to the same grammar, edge by edge.
 */
static void
test_json_payloads(void)
{
	static const char *const cases[] = {
		"{}", "[]", "0", "-0", "1.5", "-1.5e10", "1E+2", "1e-400",
		"1e999", "-1e999", "9223372036854775807",
		"9223372036854775808", "-9223372036854775808",
		"-9223372036854775809", "01", "1.", ".5", "+1", "-", "1e",
		"true", "false", "null", "tru", "nul", "\"\"", "\"a\"",
		"  {\"a\" : [1, 2, {\"b\":null}] }\n", "{\"a\":1,}", "[1,]",
		"[1 2]", "{\"a\" 1}", "{1:2}", "\"\\u00e9\\ud83d\\ude00\"",
		"\"\\ud83d\"", "\"\\ude00\"", "\"\\u0000\"", "\"\\x\"",
		"\"tab\there\"", "\"caf\xc3\xa9\"", "\"bad\xff\"",
		"\"\xed\xa0\x80\"", "[1] [2]", "\"unterminated", "x",
		"{\"a\":{\"a\":{\"a\":[[[[[]]]]]}}}", "[\"\\/\\b\\f\\n\\r\\t\"]",
	};
	size_t nc = sizeof(cases) / sizeof(cases[0]), i, k;
	char deep[2 * 600 + 1], *all[64];
	struct fix f;
	struct queen *q = fix_open(&f, "api-jsonpay");
	json_t *a, *msgs;
	int rc;

	memset(deep, '[', 600);
	memset(deep + 600, ']', 600);
	deep[1200] = '\0';
	for (i = 0; i < nc; i++)
		all[i] = (char *)cases[i];
	all[nc++] = deep;
	for (i = 0; i < nc; i++) {
		char id[16];

		snprintf(id, sizeof(id), "j%02zu", i);
		push1(q, Q, "jp", id, all[i]);
	}
	a = api(q, "pop", "{\"queue\":\"" Q "\",\"partition\":\"jp\","
	    "\"batch\":100}", &rc);
	msgs = json_object_get(a, "messages");
	is_int((int64_t)json_array_size(msgs), (int64_t)nc,
	    "json payload: the answer parses, all %zu there", nc);
	for (k = 0; k < json_array_size(msgs) && k < nc; k++) {
		json_t *m = json_array_get(msgs, k), *ref;
		json_error_t e;
		const char *enc = jstr(m, "encoding");

		i = k;
		ref = json_loadb(all[i], strlen(all[i]), JSON_DECODE_ANY, &e);
		if (i == nc - 1) {
			/* 600 deep: jansson's limit is higher, ours 512 */
			is_str(enc, "base64", "json payload: 600 deep goes "
			    "as base64");
		} else if (ref) {
			is_str(enc, "json", "json payload %zu: json", i);
			ok(json_equal(ref, json_object_get(m, "payload")),
			    "json payload %zu: the same value", i);
		} else {
			is_str(enc, "base64", "json payload %zu: base64", i);
		}
		json_decref(ref);
	}
	json_decref(a);
	fix_close(&f);
}

/*
 * The answers' strings are scanned eight bytes at a time (jsonw.c): a
 * byte that needs care at any place in a word, or across two, is still
 * found.  Each kind (a bare quote, an escape, a control byte, UTF-8, a
 * byte that is not UTF-8) at each of the first 20 places of a payload and
 * of a transactionId: the payload travels as JSON exactly when jansson
 * takes it, the id comes back as jansson reads what it should be.
 */
static void
test_json_words(void)
{
	static const char *const kinds[] = { "\"", "\\n", "\x01", "\xc3\xa9",
		"\xff" };
	static const char *const want_id[] = { "\"", "\\n", "\x01", "\xc3\xa9",
		"\xef\xbf\xbd" };
	const size_t nk = sizeof(kinds) / sizeof(kinds[0]), np = 20;
	struct fix f;
	struct queen *q = fix_open(&f, "api-jsonwords");
	int wrong_enc = 0, wrong_val = 0, wrong_id = 0, rc;
	json_t *a, *msgs;
	size_t k, i, n = 0;

	for (k = 0; k < nk; k++) {
		for (i = 0; i < np; i++) {
			char pay[64], id[64];

			snprintf(pay, sizeof(pay), "\"%.*s%s%.*s\"", (int)i,
			    "aaaaaaaaaaaaaaaaaaaaaaaa", kinds[k], 23 - (int)i,
			    "bbbbbbbbbbbbbbbbbbbbbbbb");
			snprintf(id, sizeof(id), "%.*s%s%.*s", (int)i,
			    "cccccccccccccccccccccccc", kinds[k], 23 - (int)i,
			    "dddddddddddddddddddddddd");
			push1(q, Q, "w", id, pay);
		}
	}
	a = api(q, "pop", "{\"queue\":\"" Q "\",\"partition\":\"w\","
	    "\"batch\":200}", &rc);
	msgs = json_object_get(a, "messages");
	is_int((int64_t)json_array_size(msgs), (int64_t)(nk * np),
	    "words: the answer parses, all there");
	for (k = 0; k < nk; k++) {
		for (i = 0; i < np && n < json_array_size(msgs); i++, n++) {
			json_t *m = json_array_get(msgs, n), *ref;
			json_error_t e;
			char pay[64], id[64];
			bool is_json;

			snprintf(pay, sizeof(pay), "\"%.*s%s%.*s\"", (int)i,
			    "aaaaaaaaaaaaaaaaaaaaaaaa", kinds[k], 23 - (int)i,
			    "bbbbbbbbbbbbbbbbbbbbbbbb");
			snprintf(id, sizeof(id), "%.*s%s%.*s", (int)i,
			    "cccccccccccccccccccccccc", want_id[k],
			    23 - (int)i, "dddddddddddddddddddddddd");
			ref = json_loadb(pay, strlen(pay), JSON_DECODE_ANY, &e);
			is_json = strcmp(jstr(m, "encoding"), "json") == 0;
			wrong_enc += is_json != (ref != NULL);
			wrong_val += ref && !json_equal(ref,
			    json_object_get(m, "payload"));
			wrong_id += strcmp(jstr(m, "transactionId"), id) != 0;
			json_decref(ref);
		}
	}
	is_int(wrong_enc, 0, "words: json or base64 as jansson says, "
	    "whatever the place");
	is_int(wrong_val, 0, "words: a JSON payload keeps its value");
	is_int(wrong_id, 0, "words: every transactionId written right");
	json_decref(a);
	fix_close(&f);
}

/*
 * api/push writes its results as text (jsonw.c), a transaction builds them
 * with jansson: two writers of one wire shape.  The same push through
 * each answers the same members with the same values, but for the
 * transaction's "type" and the offsets that differ by one.
 */
static void
test_push_shapes(void)
{
	struct fix f;
	struct queen *q = fix_open(&f, "api-shapes");
	json_t *a, *t, *pa, *pt, *v;
	const char *k;
	int rc, same = 1;

	a = api(q, "push", "{\"items\":[{\"queue\":\"" Q "\",\"partition\":"
	    "\"s\",\"transactionId\":\"one\",\"payload\":1}]}", &rc);
	t = api(q, "transaction", "{\"operations\":[{\"type\":\"push\","
	    "\"queue\":\"" Q "\",\"items\":[{\"partition\":\"s\","
	    "\"transactionId\":\"two\",\"payload\":2}]}]}", &rc);
	pa = json_array_get(a, 0);
	pt = json_array_get(json_object_get(t, "results"), 0);
	ok(pa && pt, "shapes: a result from each");
	is_int((int64_t)json_object_size(pt), (int64_t)json_object_size(pa) + 1,
	    "shapes: the transaction's has one member more (type)");
	json_object_foreach(pa, k, v) {
		json_t *w = json_object_get(pt, k);

		if (!strcmp(k, "transactionId") || !strcmp(k, "offset") ||
		    !strcmp(k, "messageId"))
			same = same && w && json_typeof(w) == json_typeof(v);
		else
			same = same && w && json_equal(w, v);
		if (!same) {
			diag("shapes: member %s differs", k);
			break;
		}
	}
	ok(same, "shapes: every member of api/push's result is there, alike");
	is_int(jint(pt, "offset"), jint(pa, "offset") + 1,
	    "shapes: the second push is the next offset");
	json_decref(a);
	json_decref(t);
	fix_close(&f);
}

/* ---- api/push's fast path against the general one ---- */

static unsigned long long rnd_state = 88172645463325252ULL;

static unsigned
rnd(unsigned n)
{
	rnd_state ^= rnd_state << 13;
	rnd_state ^= rnd_state >> 7;
	rnd_state ^= rnd_state << 17;
	return (unsigned)(rnd_state % n);
}

static void
add(char *b, size_t cap, const char *s)
{
	size_t l = strlen(b);

	snprintf(b + l, cap - l, "%s", s);
}

/* JSON whitespace, now and then */
static void
ws(char *b, size_t cap)
{
	static const char *const w[] = { "", "", "", " ", "\n  ", "\t", "\r\n" };

	add(b, cap, w[rnd(7)]);
}

/* a string token: mostly plain ASCII, sometimes what the fast path
 * leaves to jansson (an escape, UTF-8, a control character) */
static void
rnd_string(char *b, size_t cap, const char *pool, int maxlen)
{
	static const char *const odd[] = { "\\n", "\\u0041", "\\\"", "\\/",
	    "caf\xc3\xa9", "\xe2\x82\xac", "\x01", "\x7f", "\xff" };
	char s[400];
	int i, n = rnd((unsigned)maxlen + 1);

	for (i = 0; i < n; i++)
		s[i] = pool[rnd((unsigned)strlen(pool))];
	s[n] = '\0';
	add(b, cap, "\"");
	add(b, cap, s);
	if (rnd(30) == 0)
		add(b, cap, odd[rnd(9)]);
	add(b, cap, "\"");
}

static const char *const item_keys[] = { "queue", "partition",
    "transactionId", "traceId", "payload" };

static void
rnd_item(char *b, size_t cap)
{
	/* now and then a queue name refused, or not a string */
	static const char *const queues[] = { "\"b/d\"", "7", "null" };
	static const char printable[] = " !#$%&'()*+,-./0123456789:;<=>?@"
	    "ABCDEFGHIJKLMNOPQRSTUVWXYZ[]^_`abcdefghijklmnopqrstuvwxyz{|}~";
	int order[5] = { 0, 1, 2, 3, 4 }, i, k, n = 0;

	for (i = 4; i > 0; i--) {
		int j = (int)rnd((unsigned)i + 1), t = order[i];

		order[i] = order[j];
		order[j] = t;
	}
	add(b, cap, "{");
	for (i = 0; i < 5; i++) {
		k = order[i];
		/* queue and payload nearly always; the rest half the time */
		if (rnd(k == 0 || k == 4 ? 25 : 2) == 0)
			continue;
		if (n++)
			add(b, cap, ",");
		ws(b, cap);
		add(b, cap, "\"");
		add(b, cap, item_keys[k]);
		add(b, cap, "\"");
		ws(b, cap);
		add(b, cap, ":");
		ws(b, cap);
		if (k == 0)
			add(b, cap, rnd(40) ? rnd(2) ? "\"qa\"" : "\"qb\"" :
			    queues[rnd(3)]);
		else if (k == 1)
			add(b, cap, rnd(3) ? "\"p1\"" : rnd(2) ? "\"p2\"" :
			    "\"\"");
		else if (k == 2)
			/* a small pool, so ids come again: duplicates */
			rnd_string(b, cap, "abc", rnd(40) ? 3 : 300);
		else if (k == 4 && rnd(10) == 0)
			add(b, cap, rnd(2) ? "{\"n\": [1, 2.5, true]}" : "42");
		else
			rnd_string(b, cap, printable, 40);
		ws(b, cap);
	}
	if (rnd(60) == 0)
		add(b, cap, n ? ",\"encoding\":\"json\"" : "\"encoding\":\"json\"");
	if (rnd(60) == 0 && n)
		add(b, cap, ",\"traceId\":\"twice\"");
	add(b, cap, "}");
}

/* mask what two stores cannot agree on: partition UUIDs, generated ids */
static void
mask(json_t *ans)
{
	size_t i;
	json_t *r;

	if (!json_is_array(ans))
		return;
	json_array_foreach(ans, i, r) {
		json_object_del(r, "partitionId");
		json_object_del(r, "messageId");
		const char *id = json_string_value(json_object_get(r,
		    "transactionId"));

		if (id && strlen(id) == 36)
			json_object_del(r, "transactionId");
	}
}

static int
msgs_equal(struct queen *a, struct queen *b, const char *queue,
    const char *part, int *count)
{
	struct queen_batch *x = NULL, *y = NULL;
	size_t i;
	int same;

	queen_msg_read(a, queue, part, 1, 100000, true, &x);
	queen_msg_read(b, queue, part, 1, 100000, true, &y);
	same = (x ? x->n : 0) == (y ? y->n : 0);
	for (i = 0; same && x && i < x->n; i++) {
		const struct queen_msg *m = &x->msgs[i], *o = &y->msgs[i];

		same = m->offset == o->offset && m->len == o->len &&
		    !memcmp(m->payload, o->payload, m->len) &&
		    (strlen(m->txid) == 36 || !strcmp(m->txid, o->txid)) &&
		    !strcmp(m->trace_id ? m->trace_id : "-",
		    o->trace_id ? o->trace_id : "-");
	}
	*count += x ? (int)x->n : 0;
	queen_batch_free(x);
	queen_batch_free(y);
	return same;
}

/*
 * Random bodies, sent as they are to one store and with a key the fast
 * path does not take ("zz") to another, so that jansson reads them there:
 * the answers, the refusals word for word, and the messages stored must
 * be the same; and most bodies must have taken the fast path.
 */
static void
test_push_fast(void)
{
	enum { BODIES = 400 };
	struct fix fa, fb;
	struct queen *a = fix_open(&fa, "api-fast"), *b;
	static char body[1 << 16], slow[(1 << 16) + 16];
	int i, k, diff = 0, msgs = 0, fails = 0;

	b = fix_open(&fb, "api-slow");
	queen_queue_create(a, "qa", NULL);
	queen_queue_create(b, "qa", NULL);
	queen_queue_create(a, "qb", NULL);
	queen_queue_create(b, "qb", NULL);
	for (i = 0; i < BODIES; i++) {
		int n = 1 + (int)rnd(4), ra, rb;
		char *sa = NULL, *sb = NULL;
		json_t *ja, *jb;

		body[0] = '\0';
		ws(body, sizeof(body));
		add(body, sizeof(body), "{");
		ws(body, sizeof(body));
		add(body, sizeof(body), "\"items\"");
		ws(body, sizeof(body));
		add(body, sizeof(body), ":");
		ws(body, sizeof(body));
		add(body, sizeof(body), "[");
		for (k = 0; k < n; k++) {
			if (k)
				add(body, sizeof(body), ",");
			ws(body, sizeof(body));
			rnd_item(body, sizeof(body));
			ws(body, sizeof(body));
		}
		add(body, sizeof(body), "]");
		ws(body, sizeof(body));
		add(body, sizeof(body), "}");
		ws(body, sizeof(body));
		/* the same request, with a top-level key only jansson takes */
		snprintf(slow, sizeof(slow), "%s", body);
		*strrchr(slow, '}') = '\0';
		add(slow, sizeof(slow), ",\"zz\":0}");
		ra = queen_api(a, "push", body, strlen(body), &sa);
		rb = queen_api(b, "push", slow, strlen(slow), &sb);
		ja = sa ? json_loads(sa, 0, NULL) : NULL;
		jb = sb ? json_loads(sb, 0, NULL) : NULL;
		mask(ja);
		mask(jb);
		if (ra != rb || !ja || !jb || !json_equal(ja, jb)) {
			if (diff++ < 3)
				diag("body %d: %s\n fast: %d %s\n slow: %d %s",
				    i, body, ra, sa, rb, sb);
		}
		fails += ra != 0;
		json_decref(ja);
		json_decref(jb);
		free(sa);
		free(sb);
	}
	is_int(diff, 0, "fast push: %d random bodies answered the same both "
	    "ways", BODIES);
	ok(a->fast_pushes > BODIES / 4 && a->fast_pushes < BODIES &&
	    b->fast_pushes == 0, "fast push: %llu of them took the fast path",
	    (unsigned long long)a->fast_pushes);
	ok(fails > 10 && fails < BODIES - 10, "fast push: refusals (%d) and "
	    "pushes both among them", fails);
	k = 1;
	k &= msgs_equal(a, b, "qa", NULL, &msgs);
	k &= msgs_equal(a, b, "qa", "p1", &msgs);
	k &= msgs_equal(a, b, "qa", "p2", &msgs);
	k &= msgs_equal(a, b, "qb", NULL, &msgs);
	k &= msgs_equal(a, b, "qb", "p1", &msgs);
	k &= msgs_equal(a, b, "qb", "p2", &msgs);
	ok(k && msgs > 100, "fast push: the same %d messages stored", msgs);
	fix_close(&fb);
	fix_close(&fa);
}

int
main(void)
{
	plan_lazy();
	test_escapes();
	test_json_payloads();
	test_json_words();
	test_push_shapes();
	test_push_fast();
	test_ack();
	test_push();
	test_payloads();
	test_pop();
	test_groups_first_use();
	test_renew();
	test_txn_commit();
	test_kv_values();
	test_txn_ab();
	test_txn_refusals();
	test_txn_bad();
	test_txn_big();
	return done_testing();
}
