/*
 * api.c - the JSON front end: one request body in, one answer out, in the
 * wire shapes of docs/design.md#mount-api: push, pop, ack and renew here,
 * transaction in api_txn.c.  It decodes with jansson, calls the engine,
 * and encodes; no queue rules live here.  docs/api.md describes every
 * field.
 */
#include <errno.h>
#include <jansson.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "api_int.h"

int
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
int
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

int
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
int
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

/* n base64 characters into buf (room for n * 3 / 4 + 3); -EINVAL if bad */
static int
b64_into(const char *s, size_t n, unsigned char *buf, size_t *len)
{
	size_t i, o = 0;
	unsigned v = 0;
	int bits = 0;

	for (i = 0; i < n; i++) {
		const char *c = strchr(b64, s[i]);

		if (s[i] == '=')
			break;
		if (!c || !s[i])
			return -EINVAL;
		v = (v << 6) | (unsigned)(c - b64);
		bits += 6;
		if (bits >= 8) {
			bits -= 8;
			buf[o++] = (unsigned char)(v >> bits);
		}
	}
	*len = o;
	return 0;
}

static int
b64_decode(const char *s, unsigned char **out, size_t *len)
{
	size_t n = strlen(s);
	unsigned char *buf = malloc(n * 3 / 4 + 3);

	if (!buf)
		return -ENOMEM;
	if (b64_into(s, n, buf, len) != 0) {
		free(buf);
		return -EINVAL;
	}
	*out = buf;
	return 0;
}

/*
 * A payload as it travels: JSON if it is one JSON text, else base64.  Which
 * of the two is json_text's verdict alone, here and in payload_text.
 */
json_t *
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
int
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

int
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

json_t *
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

void
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
 * hold no keys but queue, partition, transactionId, traceId, payload and
 * encoding ("json" or "base64"), each once, each a string of printable
 * ASCII with no escape, and a queue and a payload in every item, is read
 * in place with no jansson: on a big request decoding was a third of the
 * daemon's time, and a big base64 payload cost jansson's two copies of
 * it.  Such an item is what push_item makes of it: the strings as they
 * are, and the payload as its JSON text, which for such a string is the
 * token as sent, quotes and all, or its base64 decoded into the arena.
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
    "transactionId", "traceId", "payload", "encoding" };
#define NFAST 6

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
		const char *val[NFAST] = { NULL };
		size_t vlen[NFAST] = { 0 };

		if (!sc_lit(&c, '{'))
			goto no;
		do {
			if (!sc_str(&c, &s, &sl))
				goto no;
			for (k = 0; k < NFAST; k++)
				if (strlen(fast_keys[k]) == sl &&
				    !memcmp(fast_keys[k], s, sl))
					break;
			if (k == NFAST || val[k] || !sc_lit(&c, ':') ||
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
		if (val[5] && vlen[5] == 6 && !memcmp(val[5], "base64", 6)) {
			/* decoded into the arena: 3/4 of the token's room */
			if (b64_into(val[4], vlen[4], (unsigned char *)ar +
			    used, &v[*n].len) != 0)
				goto no;
			v[*n].payload = ar + used;
			used += v[*n].len;
		} else if (val[5] && !(vlen[5] == 4 &&
		    !memcmp(val[5], "json", 4))) {
			goto no;
		} else {
			v[*n].payload = val[4] - 1;
			v[*n].len = vlen[4] + 2;
		}
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
	if (wait < 0 || wait > QUEEN_WAIT_MAX) {
		*rc = bad(a, "'wait' is a number of seconds, 0 to %d",
		    QUEEN_WAIT_MAX);
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
		a->wait->wait_ms = wait * 1000;
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

int
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

json_t *
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
	if (!lease || secs < 0 || secs > QUEEN_SECONDS_MAX) {
		*rc = bad(a, "renew needs a leaseId and seconds from 0 to "
		    "%lld (100 years)", QUEEN_SECONDS_MAX);
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


/*
 * The calls that are one all-or-nothing change of the store: refused
 * with -EBUSY they kept nothing, and may run again whole.
 */
bool
queen_api_redoable(const char *endpoint)
{
	return !strcmp(endpoint, "push") || !strcmp(endpoint, "ack") ||
	    !strcmp(endpoint, "transaction");
}

int
queen_api(struct queen *q, const char *endpoint, const char *req, size_t len,
    char **resp)
{
	return queen_api_ex(q, endpoint, req, len, resp, NULL);
}

static int
api_call(struct queen *q, const char *endpoint, const char *req, size_t len,
    char **resp, struct queen_api_wait *wait)
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
	return rc == 0 || rc == -ENOMEM || rc == -EBUSY ? rc : -EIO;
}

/*
 * Queen's API makes a group on its first use, whatever the handle's
 * queen_groups_explicit says (the mount turns it on for its own calls).
 */
int
queen_api_ex(struct queen *q, const char *endpoint, const char *req, size_t len,
    char **resp, struct queen_api_wait *wait)
{
	bool was = queen_groups_explicit(q, false);
	int rc = api_call(q, endpoint, req, len, resp, wait);

	queen_groups_explicit(q, was);
	return rc;
}
