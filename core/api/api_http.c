/*
 * api_http.c - the JSON front end's /api/v1 routes (Queen's HTTP wire,
 * docs/http.md): one (method, path, query, body) in, one status and JSON
 * answer out.  This file owns the helpers every route uses (http_int.h),
 * the router and queen_http; the routes are in http_msg.c (messages),
 * http_status.c (status and the message browser) and http_admin.c (the
 * rest).  The transport (fs/http.c) owns sockets,
 * waiting and limits.
 */
#include <errno.h>
#include <jansson.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core.h"
#include "queen_api.h"
#include "http_int.h"

void
answer_json(struct hctx *h, int status, json_t *o)
{
	h->ans->status = status;
	h->ans->body = o ? json_dumps(o, JSON_COMPACT | JSON_ENCODE_ANY) :
	    NULL;
	if (o && !h->ans->body)
		h->ans->status = 500;
	json_decref(o);
}

int
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
int
refuse_rc(struct hctx *h, int rc)
{
	if (rc == -EINVAL || rc == -ENOENT || rc == -EEXIST || rc == -EFBIG ||
	    rc == -ENOTEMPTY || rc == -ESTALE)
		return refuse(h, rc == -EFBIG ? 413 : rc == -ENOENT ? 404 :
		    rc == -EINVAL ? 400 : 409, "%s", queen_errmsg(h->q));
	h->ans->busy = rc == -EBUSY;
	return refuse(h, 500, "storage failed: %s", queen_errmsg(h->q));
}

const char *
http_arg(struct hctx *h, const char *key)
{
	for (size_t i = 0; i < h->r->nargs; i++)
		if (!strcmp(h->r->args[i].key, key))
			return h->r->args[i].value ? h->r->args[i].value : "";
	return NULL;
}

int64_t
arg_int(struct hctx *h, const char *key, int64_t dflt, int64_t min,
    int64_t max)
{
	const char *s = http_arg(h, key);
	char *end;
	long long v;

	if (!s || !*s)
		return dflt;
	errno = 0;
	v = strtoll(s, &end, 10);
	if (errno || *end || v < min || v > max) {
		/* a 4xx would stop a consumer: the default, and a word in
		 * the log (the first such of the request) */
		if (!h->ans->note[0])
			snprintf(h->ans->note, sizeof(h->ans->note),
			    "%s=%.40s is not an integer in [%lld, %lld]: "
			    "%lld used",
			    key, s, (long long)min, (long long)max,
			    (long long)dflt);
		return dflt;
	}
	return v;
}

bool
arg_true(struct hctx *h, const char *key)
{
	const char *s = http_arg(h, key);

	return s && (!strcmp(s, "true") || !strcmp(s, "1"));
}

/* Queen's "Default" partition is the mount's "default" */
const char *
part_in(const char *p)
{
	return !p || !strcmp(p, HTTP_DEFAULT) ? QUEEN_DEFAULT_PARTITION : p;
}

const char *
part_out(const char *p)
{
	return !strcmp(p, QUEEN_DEFAULT_PARTITION) ? HTTP_DEFAULT : p;
}

const char *
group_in(const char *g)
{
	return !g || !*g || !strcmp(g, QUEUE_MODE) ? NULL : g;
}

json_t *
time_json(int64_t ms)
{
	char buf[40];

	queen_time_format(ms, buf, sizeof(buf));
	return json_string(buf);
}

/* The body as an object; an absent body is {} (Python sends none). */
json_t *
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

int
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

bool
name_ok(struct hctx *h, const char *what, const char *name)
{
	if (queen_name_valid(name))
		return true;
	refuse(h, 400, "bad %s name '%.64s': 1 to 255 of [A-Za-z0-9._:@=+-], "
	    "not starting with '.'", what, name);
	return false;
}

/* A payload as Queen's `data`: JSON as it is, else the text, else base64. */
json_t *
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
	if (is(h, "GET", 1, "status"))
		return do_status(h);
	if (is(h, "GET", 2, "status", "queues"))
		return do_status_queues(h);
	if (is(h, "GET", 3, "status", "queues", "*"))
		return do_status_queue(h, h->seg[2]);
	if (is(h, "GET", 1, "messages"))
		return do_messages(h);
	if (is(h, "GET", 3, "messages", "*", "*") ||
	    is(h, "DELETE", 3, "messages", "*", "*"))
		return do_message(h, h->seg[1], h->seg[2]);
	if (is(h, "GET", 2, "traces", "names"))
		return do_trace_names(h);
	if (is(h, "GET", 3, "traces", "by-name", "*"))
		return do_trace_by_name(h, h->seg[2]);
	if (is(h, "GET", 3, "traces", "*", "*"))
		return do_trace_message(h, h->seg[1], h->seg[2]);
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
	else if (is(h, "POST", 1, "traces"))
		rc = do_trace_add(h, b);
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

/* h->r->path into h->seg; false if it has more segments than fit. */
static bool
split(struct hctx *h)
{
	char *save = NULL;

	snprintf(h->pathbuf, sizeof(h->pathbuf), "%s", h->r->path);
	for (char *t = strtok_r(h->pathbuf, "/", &save); t;
	     t = strtok_r(NULL, "/", &save)) {
		if (h->nseg == sizeof(h->seg) / sizeof(h->seg[0]))
			return false;
		h->seg[h->nseg++] = t;
	}
	return true;
}

/*
 * Whether route() sends this request to a call queen_api_redoable names
 * (a push, an ack or a transaction), which keeps nothing when the store
 * refuses it with ans.busy, so that the caller may run it again whole.
 */
bool
queen_http_redoable(const char *method, const char *path)
{
	struct queen_http_req r = { .method = method, .path = path };
	struct hctx h;

	memset(&h, 0, sizeof(h));
	h.r = &r;
	if (!split(&h) || h.nseg < 3 || strcmp(method, "POST") ||
	    strcmp(h.seg[0], "api") || strcmp(h.seg[1], "v1"))
		return false;
	return (h.nseg == 3 && queen_api_redoable(h.seg[2])) ||
	    is(&h, "POST", 4, "api", "v1", "ack", "batch");
}

int
queen_http(struct queen *q, const struct queen_http_req *r,
    struct queen_http_answer *ans, struct queen_api_wait *wait)
{
	struct hctx h;
	bool was;
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
	if (!split(&h))
		return refuse(&h, 404, "no route %.200s", r->path);
	/* groups made on first use, as queen_api_ex */
	was = queen_groups_explicit(q, false);
	rc = route(&h);
	queen_groups_explicit(q, was);
	if (rc == -ENOMEM && !ans->body)
		ans->status = 500;
	return rc;
}
