/*
 * api.c - the JSON front end: one request body in, one answer out, in the
 * wire shapes of docs/design.md#mount-api (push, pop, ack, transaction,
 * renew).  It decodes
 * with jansson, calls the engine, and encodes; no queue rules live here.
 * docs/api.md describes every field.
 */
#include <errno.h>
#include <jansson.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core.h"
#include "queen_api.h"

struct apictx {
	struct queen *q;
	char why[256];
	int reason;   /* QUEEN_TXN_BAD_REQUEST or _TOO_LARGE on refusal */
	struct queen_api_wait *wait;  /* a caller that can wait, or NULL */
	bool would_wait;
	char *text;   /* an answer written as text (jsonw.c), not as json_t */
};

static int bad(struct apictx *a, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

static int
bad(struct apictx *a, const char *fmt, ...)
{
	va_list ap;

	a->reason = QUEEN_TXN_BAD_REQUEST;
	va_start(ap, fmt);
	vsnprintf(a->why, sizeof(a->why), fmt, ap);
	va_end(ap);
	return -EINVAL;
}

/* optional string member; *out NULL when absent; -EINVAL wrong type */
static int
opt_str(struct apictx *a, json_t *o, const char *k, const char **out)
{
	json_t *v = json_object_get(o, k);

	*out = NULL;
	if (!v || json_is_null(v))
		return 0;
	if (!json_is_string(v))
		return bad(a, "'%s' must be a string", k);
	*out = json_string_value(v);
	return 0;
}

static int
opt_int(struct apictx *a, json_t *o, const char *k, int64_t *out)
{
	json_t *v = json_object_get(o, k);

	if (!v || json_is_null(v))
		return 0;
	if (!json_is_integer(v))
		return bad(a, "'%s' must be an integer", k);
	*out = json_integer_value(v);
	return 0;
}

/* seconds as a number, or a string with s/m/h/d; out in ms */
static int
opt_duration(struct apictx *a, json_t *o, const char *k, int64_t *ms)
{
	json_t *v = json_object_get(o, k);
	const char *s;
	char *end;
	long long n;
	int64_t mul = 1000;

	if (!v || json_is_null(v))
		return 0;
	if (json_is_integer(v) && json_integer_value(v) >= 0 &&
	    json_integer_value(v) < INT64_MAX / 1000) {
		*ms = json_integer_value(v) * 1000;
		return 0;
	}
	if (!json_is_string(v))
		return bad(a, "'%s' must be seconds or a string like 30d", k);
	s = json_string_value(v);
	n = strtoll(s, &end, 10);
	if (end == s || n < 0)
		return bad(a, "'%s' must be seconds or a string like 30d", k);
	if (!strcmp(end, "ms"))
		mul = 1;
	else if (!strcmp(end, "m"))
		mul = 60000;
	else if (!strcmp(end, "h"))
		mul = 3600000;
	else if (!strcmp(end, "d"))
		mul = 86400000;
	else if (*end && strcmp(end, "s"))
		return bad(a, "'%s' has an unknown unit", k);
	if (n > INT64_MAX / mul)
		return bad(a, "'%s' is too large", k);
	*ms = n * mul;
	return 0;
}

static const char b64[] =
    "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";

static char *
b64_encode(const unsigned char *p, size_t n)
{
	char *out = malloc(4 * ((n + 2) / 3) + 1), *o = out;
	size_t i;

	if (!out)
		return NULL;
	for (i = 0; i + 2 < n; i += 3) {
		*o++ = b64[p[i] >> 2];
		*o++ = b64[((p[i] & 3) << 4) | (p[i + 1] >> 4)];
		*o++ = b64[((p[i + 1] & 15) << 2) | (p[i + 2] >> 6)];
		*o++ = b64[p[i + 2] & 63];
	}
	if (i < n) {
		*o++ = b64[p[i] >> 2];
		if (i + 1 < n) {
			*o++ = b64[((p[i] & 3) << 4) | (p[i + 1] >> 4)];
			*o++ = b64[(p[i + 1] & 15) << 2];
		} else {
			*o++ = b64[(p[i] & 3) << 4];
			*o++ = '=';
		}
		*o++ = '=';
	}
	*o = '\0';
	return out;
}

static int
b64_decode(const char *s, unsigned char **out, size_t *len)
{
	size_t n = strlen(s), i, o = 0;
	unsigned char *buf;
	unsigned v = 0;
	int bits = 0;

	buf = malloc(n * 3 / 4 + 3);
	if (!buf)
		return -ENOMEM;
	for (i = 0; i < n; i++) {
		const char *c = strchr(b64, s[i]);

		if (s[i] == '=')
			break;
		if (!c || !s[i]) {
			free(buf);
			return -EINVAL;
		}
		v = (v << 6) | (unsigned)(c - b64);
		bits += 6;
		if (bits >= 8) {
			bits -= 8;
			buf[o++] = (unsigned char)(v >> bits);
		}
	}
	*out = buf;
	*len = o;
	return 0;
}

/*
 * A payload as it travels: JSON if it is one JSON text, else base64.  Which
 * of the two is json_text's verdict alone, here and in payload_text.
 */
static json_t *
payload_json(const void *p, size_t n, json_t *msg)
{
	json_error_t e;
	json_t *v = NULL;
	size_t from, len;
	char *s;

	if (n && json_text(p, n, &from, &len))
		v = json_loadb((const char *)p + from, len, JSON_DECODE_ANY,
		    &e);

	if (v) {
		json_object_set_new(msg, "encoding", json_string("json"));
		return v;
	}
	s = b64_encode(p, n);
	v = json_string(s ? s : "");
	free(s);
	json_object_set_new(msg, "encoding", json_string("base64"));
	return v;
}

/* The same, as text into w: "encoding":..., "payload":... */
static void
payload_text(struct jw *w, const void *p, size_t n)
{
	size_t from, len;
	char *s;

	/* JSON goes as it is, checked but not parsed into objects */
	if (n && json_text(p, n, &from, &len)) {
		jw_lit(w, ",\"encoding\":\"json\",\"payload\":");
		jw_raw(w, (const char *)p + from, len);
	} else {
		s = b64_encode(p, n);
		jw_lit(w, ",\"encoding\":\"base64\",\"payload\":\"");
		if (s)
			jw_lit(w, s);
		else
			w->oom = true;
		jw_raw(w, "\"", 1);
		free(s);
	}
}

/* The bytes of a request payload (owned by *keep when allocated). */
static int
payload_bytes(struct apictx *a, json_t *item, const void **p, size_t *n,
    char **keep)
{
	json_t *v = json_object_get(item, "payload");
	const char *enc = NULL;
	int rc;

	*keep = NULL;
	if (!v)
		v = json_object_get(item, "data");
	if (!v)
		return bad(a, "%s", "an item needs a payload");
	if ((rc = opt_str(a, item, "encoding", &enc)) != 0)
		return rc;
	if (enc && !strcmp(enc, "base64")) {
		if (!json_is_string(v))
			return bad(a, "%s", "a base64 payload is a string");
		if (b64_decode(json_string_value(v), (unsigned char **)keep,
		    n) != 0)
			return bad(a, "%s", "the payload is not base64");
		*p = *keep;
		return 0;
	}
	if (enc && strcmp(enc, "json"))
		return bad(a, "unknown encoding '%.32s'", enc);
	*keep = json_dumps(v, JSON_COMPACT | JSON_ENCODE_ANY);
	if (!*keep)
		return -ENOMEM;
	*p = *keep;
	*n = strlen(*keep);
	return 0;
}

static int
push_item(struct apictx *a, json_t *o, const char *queue_default,
    struct queen_push_item *it, char **keep)
{
	int rc;

	memset(it, 0, sizeof(*it));
	if (!json_is_object(o))
		return bad(a, "%s", "an item must be an object");
	if ((rc = opt_str(a, o, "queue", &it->queue)) != 0 ||
	    (rc = opt_str(a, o, "partition", &it->partition)) != 0 ||
	    (rc = opt_str(a, o, "transactionId", &it->txid)) != 0 ||
	    (rc = opt_str(a, o, "traceId", &it->trace_id)) != 0)
		return rc;
	if (!it->queue)
		it->queue = queue_default;
	if (!it->queue)
		return bad(a, "%s", "an item needs a queue");
	return payload_bytes(a, o, &it->payload, &it->len, keep);
}

static json_t *
push_result_json(size_t i, const struct queen_push_item *it,
    const struct queen_push_result *r)
{
	const char *partition = it->partition;
	char id[80];

	snprintf(id, sizeof(id), "%s:%lld", r->partition_uuid,
	    (long long)r->offset);
	return json_pack("{s:I, s:s, s:s, s:s, s:s, s:s, s:I}", "index",
	    (json_int_t)i, "transactionId", queen_push_txid(it, r), "status",
	    r->status == QUEEN_PUSH_DUPLICATE ? "duplicate" : "queued",
	    "messageId", id, "partition", partition ? partition :
	    QUEEN_DEFAULT_PARTITION, "partitionId", r->partition_uuid,
	    "offset", (json_int_t)r->offset);
}

/* push_result_json's object, as text, for the many results of api/push */
static void
push_result_text(struct jw *w, size_t i, const struct queen_push_item *it,
    const struct queen_push_result *r)
{
	const char *partition = it->partition;
	char id[80];

	snprintf(id, sizeof(id), "%s:%lld", r->partition_uuid,
	    (long long)r->offset);
	jw_lit(w, i ? ",{\"index\":" : "{\"index\":");
	jw_int(w, (int64_t)i);
	jw_lit(w, ",\"transactionId\":");
	jw_str(w, queen_push_txid(it, r));
	jw_lit(w, r->status == QUEEN_PUSH_DUPLICATE ?
	    ",\"status\":\"duplicate\",\"messageId\":" :
	    ",\"status\":\"queued\",\"messageId\":");
	jw_str(w, id);
	jw_lit(w, ",\"partition\":");
	jw_str(w, partition ? partition : QUEEN_DEFAULT_PARTITION);
	jw_lit(w, ",\"partitionId\":");
	jw_str(w, r->partition_uuid);
	jw_lit(w, ",\"offset\":");
	jw_int(w, r->offset);
	jw_raw(w, "}", 1);
}

static int
parse_pushes(struct apictx *a, json_t *arr, const char *qdef,
    struct queen_push_item **items, char ***keeps, size_t *n)
{
	size_t i, cnt = json_array_size(arr);
	int rc = 0;

	*n = 0;
	*items = calloc(cnt + 1, sizeof(**items));
	*keeps = calloc(cnt + 1, sizeof(**keeps));
	if (!*items || !*keeps)
		return -ENOMEM;
	for (i = 0; i < cnt && rc == 0; i++) {
		rc = push_item(a, json_array_get(arr, i), qdef, &(*items)[i],
		    &(*keeps)[i]);
		*n = i + 1;
	}
	return rc;
}

static void
free_pushes(struct queen_push_item *items, char **keeps, size_t n)
{
	size_t i;

	for (i = 0; keeps && i < n; i++)
		free(keeps[i]);
	free(keeps);
	free(items);
}

/* push the items and write their results as the answer text */
static int
push_answer(struct apictx *a, const struct queen_push_item *items, size_t n)
{
	struct queen_push_result *res = calloc(n + 1, sizeof(*res));
	struct jw w = { 0 };
	size_t i;
	int rc;

	if (!res)
		return -ENOMEM;
	rc = queen_push(a->q, items, n, false, res);
	if (rc == 0) {
		/* one result per item: written as text */
		jw_raw(&w, "[", 1);
		for (i = 0; i < n; i++)
			push_result_text(&w, i, &items[i], &res[i]);
		jw_raw(&w, "]", 1);
		if (!(a->text = jw_finish(&w)))
			rc = -ENOMEM;
	} else {
		if (rc == -EFBIG)
			a->reason = QUEEN_TXN_TOO_LARGE;
		snprintf(a->why, sizeof(a->why), "%s", queen_errmsg(a->q));
	}
	free(res);
	return rc;
}

static json_t *
do_push(struct apictx *a, json_t *req, int *rc)
{
	json_t *arr = json_object_get(req, "items");
	struct queen_push_item *items = NULL;
	char **keeps = NULL;
	size_t n = 0;

	if (!json_is_array(arr)) {
		*rc = bad(a, "%s", "'items' must be an array");
		return NULL;
	}
	if ((*rc = parse_pushes(a, arr, NULL, &items, &keeps, &n)) == 0)
		*rc = push_answer(a, items, n);
	free_pushes(items, keeps, n);
	return NULL;
}

/*
 * api/push's fast path.  A body that is only {"items":[...]}, whose items
 * hold no keys but queue, partition, transactionId, traceId and payload,
 * each once, each a string of printable ASCII with no escape, and a queue
 * and a payload in every item, is read in place with no jansson: on a big
 * request decoding was a third of the daemon's time.  Such an item is what
 * push_item makes of it: the strings as they are, and the payload as its
 * JSON text, which for such a string is the token as sent, quotes and all.
 * Anything else (another key, a number, an escape, UTF-8, a duplicate
 * key, an empty list, a missing payload) takes the general way, which also
 * words every refusal.  t-api sends the same bodies both ways.
 */
struct scan {
	const char *p, *end;
};

static void
sc_ws(struct scan *c)
{
	while (c->p < c->end && (*c->p == ' ' || *c->p == '\t' ||
	    *c->p == '\n' || *c->p == '\r'))
		c->p++;
}

static bool
sc_lit(struct scan *c, char ch)
{
	sc_ws(c);
	if (c->p == c->end || *c->p != ch)
		return false;
	c->p++;
	return true;
}

/* a plain string: its content at *s, n bytes; the token is n + 2 */
static bool
sc_str(struct scan *c, const char **s, size_t *n)
{
	const char *q;

	if (!sc_lit(c, '"'))
		return false;
	for (q = c->p; q < c->end && *q != '"'; q++)
		if ((unsigned char)*q < 0x20 || (unsigned char)*q > 0x7e ||
		    *q == '\\')
			return false;
	if (q == c->end)
		return false;
	*s = c->p;
	*n = (size_t)(q - c->p);
	c->p = q + 1;
	return true;
}

static const char *const fast_keys[] = { "queue", "partition",
    "transactionId", "traceId", "payload" };

/* 1: read into *items (strings in *arena); 0: not for the fast path */
static int
push_fast(const char *req, size_t len, struct queen_push_item **items,
    size_t *n, char **arena)
{
	struct scan c = { req, req + len };
	struct queen_push_item *v = NULL, *nv;
	size_t cap = 0, used = 0, sl, k;
	const char *s;
	char *ar;

	*items = NULL;
	*n = 0;
	if (!(*arena = ar = malloc(len + 1)))
		return -ENOMEM;
	if (!sc_lit(&c, '{') || !sc_str(&c, &s, &sl) || sl != 5 ||
	    memcmp(s, "items", 5) || !sc_lit(&c, ':') || !sc_lit(&c, '['))
		goto no;
	do {
		const char *val[5] = { NULL };
		size_t vlen[5] = { 0 };

		if (!sc_lit(&c, '{'))
			goto no;
		do {
			if (!sc_str(&c, &s, &sl))
				goto no;
			for (k = 0; k < 5; k++)
				if (strlen(fast_keys[k]) == sl &&
				    !memcmp(fast_keys[k], s, sl))
					break;
			if (k == 5 || val[k] || !sc_lit(&c, ':') ||
			    !sc_str(&c, &val[k], &vlen[k]))
				goto no;
		} while (sc_lit(&c, ','));
		if (!sc_lit(&c, '}') || !val[0] || !val[4])
			goto no;
		if (*n == cap) {
			cap = cap ? 2 * cap : 1024;
			if (!(nv = realloc(v, cap * sizeof(*v)))) {
				free(v);
				return -ENOMEM;
			}
			v = nv;
		}
		memset(&v[*n], 0, sizeof(*v));
		for (k = 0; k < 4; k++) {
			const char **to[4] = { &v[*n].queue, &v[*n].partition,
			    &v[*n].txid, &v[*n].trace_id };

			if (!val[k])
				continue;
			memcpy(ar + used, val[k], vlen[k]);
			ar[used + vlen[k]] = '\0';
			*to[k] = ar + used;
			used += vlen[k] + 1;
		}
		v[*n].payload = val[4] - 1;
		v[*n].len = vlen[4] + 2;
		(*n)++;
	} while (sc_lit(&c, ','));
	if (!sc_lit(&c, ']') || !sc_lit(&c, '}'))
		goto no;
	sc_ws(&c);
	if (c.p != c.end)
		goto no;
	*items = v;
	return 1;
no:
	free(v);
	*n = 0;
	return 0;
}

static json_t *
do_pop(struct apictx *a, json_t *req, int *rc)
{
	struct queen_pop_req pr = { 0 };
	struct queen_batch *b = NULL;
	struct jw w = { 0 };
	json_t *auto_ack;
	const char *lease;
	int64_t batch = 0, wait = 0;
	size_t i;

	pr.auto_ack = -1;
	if ((*rc = opt_str(a, req, "queue", &pr.queue)) != 0 ||
	    (*rc = opt_str(a, req, "partition", &pr.partition)) != 0 ||
	    (*rc = opt_str(a, req, "consumerGroup", &pr.group)) != 0 ||
	    (*rc = opt_int(a, req, "batch", &batch)) != 0 ||
	    (*rc = opt_int(a, req, "wait", &wait)) != 0)
		return NULL;
	if (wait < 0) {
		*rc = bad(a, "%s", "'wait' is a number of seconds, 0 or more");
		return NULL;
	}
	if (!pr.queue) {
		*rc = bad(a, "%s", "pop needs a queue");
		return NULL;
	}
	if (batch < 0 || batch > QUEEN_BATCH_MAX) {
		*rc = bad(a, "'batch' is 1 to %d", QUEEN_BATCH_MAX);
		return NULL;
	}
	pr.batch = batch;
	auto_ack = json_object_get(req, "autoAck");
	if (auto_ack && !json_is_boolean(auto_ack) && !json_is_null(auto_ack)) {
		*rc = bad(a, "%s", "'autoAck' must be true or false");
		return NULL;
	}
	if (auto_ack && json_is_boolean(auto_ack))
		pr.auto_ack = json_is_true(auto_ack);
	*rc = queen_pop(a->q, &pr, &b);
	if (*rc == -EAGAIN && wait > 0 && a->wait) {
		/* the caller waits (core never does) and asks again */
		a->would_wait = true;
		a->wait->wait_ms = wait > INT64_MAX / 1000 ? INT64_MAX :
		    wait * 1000;
		snprintf(a->wait->queue, sizeof(a->wait->queue), "%s",
		    pr.queue);
		snprintf(a->wait->group, sizeof(a->wait->group), "%s",
		    pr.group ? pr.group : "");
		return NULL;
	}
	if (*rc == -EAGAIN) {
		*rc = 0;
		return json_pack("{s:b, s:n, s:[]}", "success", 1, "leaseId",
		    "messages");
	}
	if (*rc != 0) {
		snprintf(a->why, sizeof(a->why), "%s", queen_errmsg(a->q));
		return NULL;
	}
	/* many messages: written as text, in the order jansson kept */
	lease = b->lease_id[0] ? b->lease_id : NULL;
	jw_lit(&w, "{\"success\":true,\"leaseId\":");
	jw_str(&w, lease);
	jw_lit(&w, ",\"messages\":[");
	for (i = 0; i < b->n; i++) {
		const struct queen_msg *m = &b->msgs[i];

		jw_lit(&w, i ? ",{\"transactionId\":" : "{\"transactionId\":");
		jw_str(&w, m->txid);
		jw_lit(&w, ",\"partitionId\":");
		jw_str(&w, b->partition_uuid);
		jw_lit(&w, ",\"partition\":");
		jw_str(&w, b->partition);
		jw_lit(&w, ",\"queue\":");
		jw_str(&w, b->queue);
		jw_lit(&w, ",\"offset\":");
		jw_int(&w, m->offset);
		jw_lit(&w, ",\"leaseId\":");
		jw_str(&w, lease);
		jw_lit(&w, ",\"consumerGroup\":");
		jw_str(&w, b->group);
		jw_lit(&w, ",\"createdAt\":");
		jw_int(&w, m->created_at);
		jw_lit(&w, ",\"retryCount\":");
		jw_int(&w, b->retry_count);
		if (m->trace_id) {
			jw_lit(&w, ",\"traceId\":");
			jw_str(&w, m->trace_id);
		}
		payload_text(&w, m->payload, m->len);
		jw_raw(&w, "}", 1);
	}
	jw_lit(&w, "]}");
	queen_batch_free(b);
	if (!(a->text = jw_finish(&w)))
		*rc = -ENOMEM;
	return NULL;
}

static int
ack_item(struct apictx *a, json_t *o, const char *group_default,
    struct queen_ack_item *it)
{
	int rc;

	memset(it, 0, sizeof(*it));
	if (!json_is_object(o))
		return bad(a, "%s", "an acknowledgment must be an object");
	if ((rc = opt_str(a, o, "transactionId", &it->txid)) != 0 ||
	    (rc = opt_str(a, o, "partitionId", &it->partition_uuid)) != 0 ||
	    (rc = opt_str(a, o, "status", &it->status)) != 0 ||
	    (rc = opt_str(a, o, "consumerGroup", &it->group)) != 0 ||
	    (rc = opt_str(a, o, "leaseId", &it->lease_id)) != 0 ||
	    (rc = opt_str(a, o, "error", &it->error)) != 0)
		return rc;
	if (!it->group)
		it->group = group_default;
	if (!it->txid)
		return bad(a, "%s", "an ack needs a transactionId");
	if (!it->partition_uuid)
		return bad(a, "%s", "partitionId is required");
	return 0;
}

static json_t *
ack_result_json(size_t i, const char *txid, const struct queen_ack_result *r)
{
	return json_pack("{s:I, s:s, s:b, s:o, s:b, s:b, s:b}", "index",
	    (json_int_t)i, "transactionId", txid ? txid : "", "success",
	    r->success, "error", r->error[0] ? json_string(r->error) :
	    json_null(), "leaseReleased", r->lease_released, "dlq", r->dlq,
	    "noop", r->noop);
}

static json_t *
do_ack(struct apictx *a, json_t *req, int *rc)
{
	json_t *arr = json_object_get(req, "acknowledgments"), *out;
	struct queen_ack_item *items;
	struct queen_ack_result *res;
	const char *group = NULL;
	size_t n, i;

	if ((*rc = opt_str(a, req, "consumerGroup", &group)) != 0)
		return NULL;
	if (arr && !json_is_array(arr)) {
		*rc = bad(a, "%s", "'acknowledgments' must be an array");
		return NULL;
	}
	n = arr ? json_array_size(arr) : 1;
	items = calloc(n + 1, sizeof(*items));
	res = calloc(n + 1, sizeof(*res));
	if (!items || !res) {
		*rc = -ENOMEM;
		goto out;
	}
	for (i = 0; i < n; i++) {
		*rc = ack_item(a, arr ? json_array_get(arr, i) : req, group,
		    &items[i]);
		if (*rc != 0)
			goto out;
	}
	*rc = queen_ack(a->q, items, n, res);
	out = json_array();
	for (i = 0; i < n; i++)
		json_array_append_new(out, ack_result_json(i, items[i].txid,
		    &res[i]));
	free(items);
	free(res);
	return out;
out:
	free(items);
	free(res);
	return NULL;
}

static json_t *
do_renew(struct apictx *a, json_t *req, int *rc)
{
	const char *lease = NULL;
	int64_t secs = 0, exp = 0;

	if ((*rc = opt_str(a, req, "leaseId", &lease)) != 0 ||
	    (*rc = opt_int(a, req, "seconds", &secs)) != 0)
		return NULL;
	if (!lease || secs < 0) {
		*rc = bad(a, "%s", "renew needs a leaseId and seconds >= 0");
		return NULL;
	}
	*rc = queen_lease_renew(a->q, lease, secs, &exp);
	if (*rc == -ESTALE || *rc == -EINVAL) {
		*rc = -EIO;
		return json_pack("{s:b, s:s, s:s}", "success", 0, "leaseId",
		    lease, "error", QUEEN_E_LEASE);
	}
	if (*rc != 0) {
		snprintf(a->why, sizeof(a->why), "%s", queen_errmsg(a->q));
		return NULL;
	}
	return json_pack("{s:b, s:s, s:I}", "success", 1, "leaseId", lease,
	    "expiresAt", (json_int_t)exp);
}

/* ---- transaction ---- */

struct txbuild {
	struct queen_ack_item *acks;
	size_t nacks;
	struct queen_push_item *pushes;
	char **keeps;
	size_t npushes;
	struct queen_kv_op *kv;
	char **kvkeep;
	const char ***kvkeys;
	struct queen_timer_op *timers;
	char **tkeep;
	const char **leases;
	size_t nleases;
};

static void
txbuild_free(struct txbuild *b, size_t nkv, size_t nt)
{
	size_t i;

	free(b->acks);
	free_pushes(b->pushes, b->keeps, b->npushes);
	for (i = 0; i < nkv; i++) {
		free(b->kvkeep[i]);
		free(b->kvkeys[i]);
	}
	free(b->kv);
	free(b->kvkeep);
	free(b->kvkeys);
	for (i = 0; i < nt; i++)
		free(b->tkeep[i]);
	free(b->timers);
	free(b->tkeep);
	free(b->leases);
}

static const char *
op_name(struct apictx *a, json_t *o, int *rc)
{
	const char *t = NULL;

	if ((*rc = opt_str(a, o, "type", &t)) != 0)
		return NULL;
	if (!t && (*rc = opt_str(a, o, "op", &t)) != 0)
		return NULL;
	if (!t)
		*rc = bad(a, "%s", "an operation needs a type");
	return t;
}

static int
tx_operations(struct apictx *a, json_t *arr, struct txbuild *b)
{
	size_t i, j, n = json_array_size(arr), np = 0;
	int rc = 0;

	b->acks = calloc(n + 1, sizeof(*b->acks));
	if (!b->acks)
		return -ENOMEM;
	for (i = 0; i < n; i++) {
		json_t *o = json_array_get(arr, i), *items;
		const char *t;

		if (!json_is_object(o))
			return bad(a, "%s", "an operation must be an object");
		if (!(t = op_name(a, o, &rc)))
			return rc;
		if (!strcmp(t, "ack")) {
			if ((rc = ack_item(a, o, NULL, &b->acks[b->nacks])))
				return rc;
			b->nacks++;
		} else if (!strcmp(t, "push")) {
			items = json_object_get(o, "items");
			np += items ? json_array_size(items) : 1;
		} else {
			return bad(a, "unknown operation type '%.32s'", t);
		}
	}
	b->pushes = calloc(np + 1, sizeof(*b->pushes));
	b->keeps = calloc(np + 1, sizeof(*b->keeps));
	if (!b->pushes || !b->keeps)
		return -ENOMEM;
	for (i = 0; i < n; i++) {
		json_t *o = json_array_get(arr, i), *items;
		const char *t = op_name(a, o, &rc), *qdef = NULL;

		if (strcmp(t, "push"))
			continue;
		if ((rc = opt_str(a, o, "queue", &qdef)) != 0)
			return rc;
		items = json_object_get(o, "items");
		if (items && !json_is_array(items))
			return bad(a, "%s", "'items' must be an array");
		for (j = 0; j < (items ? json_array_size(items) : 1); j++) {
			rc = push_item(a, items ? json_array_get(items, j) : o,
			    qdef, &b->pushes[b->npushes],
			    &b->keeps[b->npushes]);
			b->npushes++;
			if (rc != 0)
				return rc;
		}
	}
	return 0;
}

/* A KV value travels as JSON: it is stored as its compact JSON text. */
static int
kv_value(struct apictx *a, json_t *o, struct queen_kv_op *k, char **keep)
{
	json_t *v = json_object_get(o, "value");

	if (!v)
		return bad(a, "%s", "a put needs a value");
	*keep = json_dumps(v, JSON_COMPACT | JSON_ENCODE_ANY);
	if (!*keep)
		return -ENOMEM;
	k->value = *keep;
	k->len = strlen(*keep);
	return 0;
}

static int
tx_kv(struct apictx *a, json_t *arr, struct txbuild *b, size_t n)
{
	static const char *const names[] = { "put", "putIfAbsent", "delete",
	    "incr", "get", "getMany" };
	size_t i, j, t;
	int rc;

	for (i = 0; i < n; i++) {
		json_t *o = json_array_get(arr, i), *ex, *keys, *req;
		struct queen_kv_op *k = &b->kv[i];
		const char *name;

		if (!json_is_object(o))
			return bad(a, "%s", "a KV operation must be an object");
		if (!(name = op_name(a, o, &rc)))
			return rc;
		for (t = 0; t < 6 && strcmp(names[t], name); t++)
			;
		if (t == 6)
			return bad(a, "unknown KV operation '%.32s'", name);
		k->type = (enum queen_kv_op_type)t;
		k->expect_version = -1;
		k->by = 1;
		if ((rc = opt_str(a, o, "ns", &k->ns)) != 0)
			return rc;
		if (!k->ns && (rc = opt_str(a, o, "namespace", &k->ns)) != 0)
			return rc;
		if ((rc = opt_str(a, o, "key", &k->key)) != 0 ||
		    (rc = opt_duration(a, o, "ttl", &k->ttl_ms)) != 0 ||
		    (rc = opt_int(a, o, "by", &k->by)) != 0)
			return rc;
		req = json_object_get(o, "required");
		if (req && !json_is_boolean(req))
			return bad(a, "%s", "'required' must be true or false");
		k->required = req && json_is_true(req);
		ex = json_object_get(o, "expect");
		if (json_is_object(ex))
			ex = json_object_get(ex, "version");
		if (ex && !json_is_null(ex)) {
			if (!json_is_integer(ex) || json_integer_value(ex) < 0)
				return bad(a, "%s", "'expect' is a version "
				    "number (0: absent)");
			k->expect_version = json_integer_value(ex);
		}
		if (k->type == QUEEN_KV_PUT_IF_ABSENT && !req)
			k->required = true;
		if (k->type == QUEEN_KV_PUT || k->type == QUEEN_KV_PUT_IF_ABSENT) {
			if ((rc = kv_value(a, o, k, &b->kvkeep[i])) != 0)
				return rc;
		}
		if (k->type != QUEEN_KV_GET_MANY)
			continue;
		keys = json_object_get(o, "keys");
		if (!json_is_array(keys))
			return bad(a, "%s", "getMany needs 'keys'");
		k->nkeys = json_array_size(keys);
		b->kvkeys[i] = calloc(k->nkeys + 1, sizeof(char *));
		if (!b->kvkeys[i])
			return -ENOMEM;
		for (j = 0; j < k->nkeys; j++) {
			json_t *s = json_array_get(keys, j);

			if (!json_is_string(s))
				return bad(a, "%s", "'keys' holds strings");
			b->kvkeys[i][j] = json_string_value(s);
		}
		k->keys = b->kvkeys[i];
	}
	return 0;
}

static int
tx_timers(struct apictx *a, json_t *arr, struct txbuild *b, size_t n)
{
	size_t i;
	int rc;

	for (i = 0; i < n; i++) {
		json_t *o = json_array_get(arr, i), *due;
		struct queen_timer_op *t = &b->timers[i];
		const char *name;

		if (!json_is_object(o))
			return bad(a, "%s", "a timer operation must be an object");
		if (!(name = op_name(a, o, &rc)))
			return rc;
		if (!strcmp(name, "schedule"))
			t->type = QUEEN_TIMER_SCHEDULE;
		else if (!strcmp(name, "cancel"))
			t->type = QUEEN_TIMER_CANCEL;
		else
			return bad(a, "unknown timer operation '%.32s'", name);
		if ((rc = opt_str(a, o, "queue", &t->queue)) != 0 ||
		    (rc = opt_str(a, o, "key", &t->key)) != 0 ||
		    (rc = opt_str(a, o, "partition", &t->partition)) != 0 ||
		    (rc = opt_duration(a, o, "delay", &t->delay_ms)) != 0)
			return rc;
		if (!t->key && (rc = opt_str(a, o, "timerKey", &t->key)) != 0)
			return rc;
		due = json_object_get(o, "dueAt");
		if (json_is_integer(due)) {
			t->due_at = json_integer_value(due);
		} else if (json_is_string(due)) {
			if (parse_time(json_string_value(due), &t->due_at))
				return bad(a, "%s", "'dueAt' is ms or RFC 3339");
		} else if (due && !json_is_null(due)) {
			return bad(a, "%s", "'dueAt' is ms or RFC 3339");
		}
		if (t->type == QUEEN_TIMER_SCHEDULE &&
		    (json_object_get(o, "payload") ||
		    json_object_get(o, "data"))) {
			rc = payload_bytes(a, o, &t->payload, &t->len,
			    &b->tkeep[i]);
			if (rc != 0)
				return rc;
		}
	}
	return 0;
}

static json_t *
kv_result_json(const struct queen_kv_op *o, const struct queen_kv_result *r,
    const struct queen_kv_result *many)
{
	static const char *const names[] = { "put", "putIfAbsent", "delete",
	    "incr", "get", "getMany" };
	json_t *j = json_pack("{s:s, s:s, s:s}", "type", "kv", "op",
	    names[o->type], "ns", o->ns);
	size_t i;

	if (o->key)
		json_object_set_new(j, "key", json_string(o->key));
	json_object_set_new(j, "version", json_integer(r->version));
	if (o->type == QUEEN_KV_INCR)
		json_object_set_new(j, "value", json_integer(r->number));
	if (o->type == QUEEN_KV_GET) {
		json_object_set_new(j, "found", json_boolean(r->found));
		json_object_set_new(j, "value", r->found ?
		    payload_json(r->value, r->len, j) : json_null());
	}
	if (o->type == QUEEN_KV_GET_MANY) {
		json_t *vals = json_object(), *encs = json_object();

		/* each value's encoding marker goes into "encodings" */
		for (i = 0; i < r->count; i++) {
			const struct queen_kv_result *m = &many[r->first + i];
			json_t *e = json_object();

			json_object_set_new(vals, o->keys[i], m->found ?
			    payload_json(m->value, m->len, e) : json_null());
			if (m->found)
				json_object_set(encs, o->keys[i],
				    json_object_get(e, "encoding"));
			json_decref(e);
		}
		json_object_set_new(j, "values", vals);
		json_object_set_new(j, "encodings", encs);
	}
	return j;
}

static json_t *
api_transaction(struct apictx *a, json_t *req, int *rc)
{
	json_t *ops = json_object_get(req, "operations");
	json_t *kv = json_object_get(req, "kv");
	json_t *tm = json_object_get(req, "timers");
	json_t *rl = json_object_get(req, "requiredLeases"), *out, *res;
	size_t nkv = json_array_size(kv), nt = json_array_size(tm), i;
	struct queen_txn_result *r = NULL;
	struct txbuild b;
	struct queen_txn t;

	memset(&b, 0, sizeof(b));
	memset(&t, 0, sizeof(t));
	if ((ops && !json_is_array(ops)) || (kv && !json_is_array(kv)) ||
	    (tm && !json_is_array(tm)) || (rl && !json_is_array(rl))) {
		*rc = bad(a, "%s", "operations, kv, timers and requiredLeases "
		    "are arrays");
		return NULL;
	}
	if (nkv > QUEEN_TXN_MAX_KV_OPS) {
		a->reason = QUEEN_TXN_TOO_LARGE;
		snprintf(a->why, sizeof(a->why), "more than %d KV operations",
		    QUEEN_TXN_MAX_KV_OPS);
		*rc = -E2BIG;
		return NULL;
	}
	b.kv = calloc(nkv + 1, sizeof(*b.kv));
	b.kvkeep = calloc(nkv + 1, sizeof(*b.kvkeep));
	b.kvkeys = calloc(nkv + 1, sizeof(*b.kvkeys));
	b.timers = calloc(nt + 1, sizeof(*b.timers));
	b.tkeep = calloc(nt + 1, sizeof(*b.tkeep));
	b.leases = calloc(json_array_size(rl) + 1, sizeof(*b.leases));
	if (!b.kv || !b.kvkeep || !b.kvkeys || !b.timers || !b.tkeep ||
	    !b.leases) {
		*rc = -ENOMEM;
		goto out;
	}
	for (i = 0; i < json_array_size(rl); i++) {
		json_t *s = json_array_get(rl, i);

		if (!json_is_string(s)) {
			*rc = bad(a, "%s", "requiredLeases holds lease ids");
			goto out;
		}
		b.leases[b.nleases++] = json_string_value(s);
	}
	if ((ops && (*rc = tx_operations(a, ops, &b)) != 0) ||
	    (*rc = tx_kv(a, kv, &b, nkv)) != 0 ||
	    (*rc = tx_timers(a, tm, &b, nt)) != 0)
		goto out;
	t.acks = b.acks;
	t.nacks = b.nacks;
	t.pushes = b.pushes;
	t.npushes = b.npushes;
	t.kv = b.kv;
	t.nkv = nkv;
	t.timers = b.timers;
	t.ntimers = nt;
	t.required_leases = b.leases;
	t.nleases = b.nleases;
	*rc = queen_txn(a->q, &t, &r);
	if (*rc != 0) {
		snprintf(a->why, sizeof(a->why), "%s", queen_errmsg(a->q));
		out = NULL;
		goto out_free;
	}
	if (r->reason != QUEEN_TXN_OK) {
		out = json_pack("{s:b, s:s, s:s, s:[]}", "success", 0, "reason",
		    queen_txn_reason_name(r->reason), "error", r->error,
		    "results");
		if (r->reason == QUEEN_TXN_KV_PRECONDITION)
			json_object_set_new(out, "kvReason",
			    json_string(r->kv_reason));
		if (r->failed_index >= 0)
			json_object_set_new(out, "failedIndex",
			    json_integer(r->failed_index));
		*rc = -EIO;
		goto out_free;
	}
	res = json_array();
	for (i = 0; i < t.nacks; i++) {
		json_t *j = ack_result_json(i, t.acks[i].txid, &r->acks[i]);

		json_object_set_new(j, "type", json_string("ack"));
		json_array_append_new(res, j);
	}
	for (i = 0; i < t.npushes; i++) {
		json_t *j = push_result_json(i, &t.pushes[i], &r->pushes[i]);

		json_object_set_new(j, "type", json_string("push"));
		json_array_append_new(res, j);
	}
	for (i = 0; i < nkv; i++)
		json_array_append_new(res, kv_result_json(&t.kv[i], &r->kv[i],
		    r->kv_many));
	for (i = 0; i < nt; i++)
		json_array_append_new(res, json_pack("{s:s, s:s, s:s}", "type",
		    "timer", "key", t.timers[i].key, "status",
		    t.timers[i].type == QUEEN_TIMER_CANCEL ? "cancelled" :
		    "scheduled"));
	out = json_pack("{s:b, s:o}", "success", 1, "results", res);
out_free:
	queen_txn_result_free(r);
	txbuild_free(&b, nkv, nt);
	return out;
out:
	txbuild_free(&b, nkv, nt);
	return NULL;
}

int
queen_api(struct queen *q, const char *endpoint, const char *req, size_t len,
    char **resp)
{
	return queen_api_ex(q, endpoint, req, len, resp, NULL);
}

int
queen_api_ex(struct queen *q, const char *endpoint, const char *req,
    size_t len, char **resp, struct queen_api_wait *wait)
{
	struct apictx a;
	json_error_t e;
	json_t *body = NULL, *out = NULL;
	int rc = 0;

	*resp = NULL;
	memset(&a, 0, sizeof(a));
	a.q = q;
	a.wait = wait;
	if (len > QUEEN_API_MAX_BODY) {
		a.reason = QUEEN_TXN_TOO_LARGE;
		snprintf(a.why, sizeof(a.why), "the body is over %u bytes",
		    QUEEN_API_MAX_BODY);
		rc = -E2BIG;
		goto answer;
	}
	if (!strcmp(endpoint, "push")) {
		struct queen_push_item *items;
		char *arena;
		size_t n;

		rc = push_fast(req, len, &items, &n, &arena);
		if (rc == 1) {
			q->fast_pushes++;
			rc = push_answer(&a, items, n);
		}
		free(items);
		free(arena);
		if (rc != 0 || a.text)
			goto answer;
	}
	body = json_loadb(req, len, JSON_REJECT_DUPLICATES, &e);
	if (!body || !json_is_object(body)) {
		rc = bad(&a, "malformed JSON: %.200s", body ? "the body must "
		    "be an object" : e.text);
		goto answer;
	}
	if (!strcmp(endpoint, "push"))
		out = do_push(&a, body, &rc);
	else if (!strcmp(endpoint, "pop"))
		out = do_pop(&a, body, &rc);
	else if (!strcmp(endpoint, "ack"))
		out = do_ack(&a, body, &rc);
	else if (!strcmp(endpoint, "renew"))
		out = do_renew(&a, body, &rc);
	else if (!strcmp(endpoint, "transaction"))
		out = api_transaction(&a, body, &rc);
	else
		rc = bad(&a, "unknown endpoint '%.32s'", endpoint);
answer:
	if (a.would_wait) {
		json_decref(body);
		return -EAGAIN;
	}
	if (a.text && rc == 0) {
		json_decref(body);
		*resp = a.text;
		return 0;
	}
	free(a.text);
	if (!out) {
		/* a refusal of the request itself is the caller's to fix */
		const char *reason = a.reason ?
		    queen_txn_reason_name((enum queen_txn_reason)a.reason) :
		    rc == -EINVAL ? "bad_request" : rc == -EFBIG ?
		    "too_large" : "error";

		out = json_pack("{s:b, s:s, s:s}", "success", 0, "reason",
		    reason, "error", a.why[0] ? a.why : strerror(rc < 0 ? -rc :
		    EIO));
		/* a transaction's refusal always carries its empty results */
		if (out && !strcmp(endpoint, "transaction"))
			json_object_set_new(out, "results", json_array());
	}
	json_decref(body);
	*resp = out ? json_dumps(out, JSON_COMPACT) : NULL;
	json_decref(out);
	if (!*resp)
		return -ENOMEM;
	return rc == 0 ? 0 : rc == -ENOMEM ? -ENOMEM : -EIO;
}
