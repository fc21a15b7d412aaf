/*
 * txn.c - transactions (docs/design.md#transactions): acks, pushes, KV and
 * timer operations
 * applied as one storage transaction or not at all.  Checks run in the
 * contract's order and the first refusal names the reason.  The ack and push
 * bodies are ack.c's and push.c's, run with their "fence" on.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core.h"

struct txn_res {
	struct queen_txn_result pub;
	struct queen_kv_value **owned;
	size_t nowned;
};

static const char *const reason_names[] = {
	[QUEEN_TXN_OK] = "ok",
	[QUEEN_TXN_REJECTED_ACK] = "rejected_ack",
	[QUEEN_TXN_DUPLICATE] = "duplicate",
	[QUEEN_TXN_KV_PRECONDITION] = "kv_precondition",
	[QUEEN_TXN_RESERVED] = "reserved",
	[QUEEN_TXN_BAD_REQUEST] = "bad_request",
	[QUEEN_TXN_TOO_LARGE] = "too_large",
};

const char *
queen_txn_reason_name(enum queen_txn_reason r)
{
	if ((unsigned)r >= sizeof(reason_names) / sizeof(reason_names[0]))
		return "bad_request";
	return reason_names[r];
}

void
queen_txn_result_free(struct queen_txn_result *pub)
{
	struct txn_res *r = (struct txn_res *)pub;
	size_t i;

	if (!r)
		return;
	for (i = 0; i < r->nowned; i++)
		free(r->owned[i]);
	free(r->owned);
	free(pub->acks);
	free(pub->pushes);
	free(pub->kv);
	free(pub->kv_many);
	free(pub->timer_missing);
	free(r);
}

static int refuse(struct queen_txn_result *r, enum queen_txn_reason why,
    int index, const char *fmt, ...) __attribute__((format(printf, 4, 5)));

static int
refuse(struct queen_txn_result *r, enum queen_txn_reason why, int index,
    const char *fmt, ...)
{
	va_list ap;

	r->reason = why;
	r->failed_index = index;
	va_start(ap, fmt);
	vsnprintf(r->error, sizeof(r->error), fmt, ap);
	va_end(ap);
	return 1;
}

static bool
is_write(enum queen_kv_op_type t)
{
	return t == QUEEN_KV_PUT || t == QUEEN_KV_PUT_IF_ABSENT ||
	    t == QUEEN_KV_DELETE || t == QUEEN_KV_INCR;
}

/* The limits (design.md#transactions) and every part's shape; 1 = refused. */
static int
validate(const struct queen_txn *t, struct queen_txn_result *r,
    size_t *nmany)
{
	size_t i, j, keys = 0;

	*nmany = 0;
	if (t->nkv > QUEEN_TXN_MAX_KV_OPS)
		return refuse(r, QUEEN_TXN_TOO_LARGE, -1, "%s", "more than 64 "
		    "KV operations");
	for (i = 0; i < t->nkv; i++) {
		const struct queen_kv_op *o = &t->kv[i];

		if ((unsigned)o->type > QUEEN_KV_GET_MANY)
			return refuse(r, QUEEN_TXN_BAD_REQUEST, (int)i, "%s",
			    "unknown KV operation");
		if (!queen_name_valid(o->ns))
			return refuse(r, QUEEN_TXN_BAD_REQUEST, (int)i,
			    "invalid KV namespace '%.64s'", o->ns);
		if (o->type == QUEEN_KV_GET_MANY) {
			for (j = 0; j < o->nkeys; j++) {
				if (!queen_name_valid(o->keys[j]))
					return refuse(r, QUEEN_TXN_BAD_REQUEST,
					    (int)i, "invalid KV key '%.64s'",
					    o->keys[j]);
			}
			keys += o->nkeys;
			*nmany += o->nkeys;
			continue;
		}
		if (!queen_name_valid(o->key))
			return refuse(r, QUEEN_TXN_BAD_REQUEST, (int)i,
			    "invalid KV key '%.64s'", o->key);
		if (o->ttl_ms < 0 || o->ttl_ms > QUEEN_SECONDS_MAX * 1000)
			return refuse(r, QUEEN_TXN_BAD_REQUEST, (int)i,
			    "ttl outside 0..%lld s (100 years)",
			    QUEEN_SECONDS_MAX);
		keys++;
		if (!is_write(o->type))
			continue;
		for (j = 0; j < i; j++) {
			if (is_write(t->kv[j].type) &&
			    !strcmp(t->kv[j].ns, o->ns) &&
			    !strcmp(t->kv[j].key, o->key))
				return refuse(r, QUEEN_TXN_BAD_REQUEST, (int)i,
				    "two writes to KV key '%.64s' in one "
				    "transaction", o->key);
		}
	}
	if (keys > QUEEN_TXN_MAX_KV_KEYS)
		return refuse(r, QUEEN_TXN_TOO_LARGE, -1, "%s", "KV operations "
		    "over more than 256 keys");
	for (i = 0; i < t->ntimers; i++) {
		const struct queen_timer_op *o = &t->timers[i];

		if ((unsigned)o->type > QUEEN_TIMER_CANCEL || !o->queue ||
		    !queen_name_valid(o->queue) || !queen_name_valid(o->key))
			return refuse(r, QUEEN_TXN_BAD_REQUEST, (int)i, "%s",
			    "a timer operation needs a valid queue and key");
		if (o->delay_ms < 0)
			return refuse(r, QUEEN_TXN_BAD_REQUEST, (int)i, "%s",
			    "negative timer delay");
		for (j = 0; j < i; j++) {
			if (!strcmp(t->timers[j].queue, o->queue) &&
			    !strcmp(t->timers[j].key, o->key))
				return refuse(r, QUEEN_TXN_BAD_REQUEST, (int)i,
				    "two operations on timer '%.64s' in one "
				    "transaction", o->key);
		}
	}
	for (i = 0; i < t->npushes; i++) {
		if (!t->pushes[i].queue || !queen_name_valid(t->pushes[i].queue))
			return refuse(r, QUEEN_TXN_BAD_REQUEST, (int)i, "%s",
			    "a push needs a valid queue");
	}
	return 0;
}

static int
own(struct txn_res *r, struct queen_kv_value *v)
{
	struct queen_kv_value **n = realloc(r->owned,
	    (r->nowned + 1) * sizeof(*n));

	if (!n) {
		free(v);
		return -ENOMEM;
	}
	r->owned = n;
	r->owned[r->nowned++] = v;
	return 0;
}

/* One KV write with its precondition; 1 = refused (required). */
static int
kv_write(struct queen *q, struct txn_res *tr, const struct queen_kv_op *o,
    int index)
{
	struct queen_txn_result *r = &tr->pub;
	struct queen_kv_result *kr = &r->kv[index];
	struct queen_kv_value *cur = NULL;
	int64_t now = queen_now(q), ver;
	const char *why = NULL;
	char num[32];
	int rc;

	rc = q->ops->kv_get(q->st, o->ns, o->key, now, &cur);
	if (rc != 0 && rc != -ENOENT)
		return rc;
	ver = cur ? cur->version : 0;
	kr->found = cur != NULL;
	kr->version = ver;
	if (o->expect_version >= 0 && o->expect_version != ver)
		why = "version";
	else if (o->type == QUEEN_KV_PUT_IF_ABSENT && cur)
		why = "exists";
	else if (o->type == QUEEN_KV_DELETE && !cur && o->required)
		why = "missing";
	if (why) {
		free(cur);
		if (!o->required) {
			kr->skipped = why;
			return 0;
		}
		snprintf(r->kv_reason, sizeof(r->kv_reason), "%s", why);
		return refuse(r, QUEEN_TXN_KV_PRECONDITION, index,
		    "KV precondition failed on '%.64s'", o->key);
	}
	switch (o->type) {
	case QUEEN_KV_DELETE:
		rc = cur ? q->ops->kv_delete(q->st, o->ns, o->key, now) : 0;
		kr->version = 0;
		break;
	case QUEEN_KV_INCR: {
		int64_t v = 0;
		char *end;

		if (cur) {
			errno = 0;
			v = strtoll((const char *)cur->data, &end, 10);
			if (cur->len == 0 || *end != '\0' || errno) {
				free(cur);
				return refuse(r, QUEEN_TXN_BAD_REQUEST, index,
				    "incr of '%.64s': the value is not an "
				    "integer", o->key);
			}
		}
		if ((o->by > 0 && v > INT64_MAX - o->by) ||
		    (o->by < 0 && v < INT64_MIN - o->by)) {
			free(cur);
			return refuse(r, QUEEN_TXN_BAD_REQUEST, index,
			    "incr of '%.64s' by %" PRId64 " overflows a 64-bit "
			    "integer", o->key, o->by);
		}
		v += o->by;
		snprintf(num, sizeof(num), "%" PRId64, v);
		kr->number = v;
		rc = q->ops->kv_put(q->st, o->ns, o->key, num, strlen(num),
		    o->ttl_ms ? clamp_add(now, o->ttl_ms) :
		    cur ? cur->expires_at : 0, now);
		kr->version = ver + 1;
		break;
	}
	default:
		rc = q->ops->kv_put(q->st, o->ns, o->key, o->value, o->len,
		    o->ttl_ms ? clamp_add(now, o->ttl_ms) : 0, now);
		kr->version = ver + 1;
		break;
	}
	free(cur);
	return rc;
}

static int
kv_read(struct queen *q, struct txn_res *tr, const struct queen_kv_op *o,
    struct queen_kv_result *kr)
{
	struct queen_kv_value *v = NULL;
	int rc;

	rc = q->ops->kv_get(q->st, o->ns, o->key, queen_now(q), &v);
	if (rc == -ENOENT)
		return 0;
	if (rc != 0)
		return rc;
	kr->found = true;
	kr->version = v->version;
	kr->value = v->data;
	kr->len = v->len;
	return own(tr, v);
}

static int
apply(struct queen *q, const struct queen_txn *t, struct txn_res *tr)
{
	struct queen_txn_result *r = &tr->pub;
	struct queen_ack_item *acks = NULL;
	size_t i, j, m = 0, bad;
	int dup = -1, rc = 0;

	/* acks, fenced by their leases (or the one required lease); the
	 * required leases held and live until the commit */
	if (t->nacks) {
		acks = calloc(t->nacks, sizeof(*acks));
		if (!acks)
			return -ENOMEM;
		for (i = 0; i < t->nacks; i++) {
			acks[i] = t->acks[i];
			if ((!acks[i].lease_id || !acks[i].lease_id[0]) &&
			    t->nleases == 1)
				acks[i].lease_id = t->required_leases[0];
		}
	}
	rc = ack_items(q, acks, t->nacks, r->acks, true, t->required_leases,
	    t->nleases, &bad);
	free(acks);
	if (rc == 0 && bad < t->nleases)
		return refuse(r, QUEEN_TXN_REJECTED_ACK, (int)bad, "%s",
		    QUEEN_E_LEASE);
	if (t->nacks &&
	    (rc == -ESTALE || rc == -ENOENT || rc == -EALREADY ||
		rc == -EINVAL)) {
		/* the item refused (ack_items runs them in the
		 * order of their rows, not the request's) */
		for (i = 0; i < t->nacks; i++) {
			if (r->acks[i].err)
				break;
		}
		for (j = 0; i == t->nacks && j < t->nacks; j++) {
			if (!r->acks[j].success) {
				i = j;
				break;
			}
		}
		return refuse(r, QUEEN_TXN_REJECTED_ACK,
		    i < t->nacks ? (int)i : -1, "%s", queen_errmsg(q));
	}
	if (rc != 0)
		return rc;
	/* pushes and their dedup */
	if (t->npushes) {
		rc = push_items(q, t->pushes, t->npushes, true, r->pushes, &dup);
		if (rc == -EEXIST)
			return refuse(r, QUEEN_TXN_DUPLICATE, dup, "%s",
			    queen_errmsg(q));
		if (rc == -EFBIG)
			return refuse(r, QUEEN_TXN_TOO_LARGE, -1, "%s",
			    queen_errmsg(q));
		if (rc == -EINVAL || rc == -EOVERFLOW)
			return refuse(r, QUEEN_TXN_BAD_REQUEST, -1, "%s",
			    queen_errmsg(q));
		if (rc != 0)
			return rc;
	}
	/* KV writes; reads are answered after everything applied */
	for (i = 0; i < t->nkv; i++) {
		if (!is_write(t->kv[i].type))
			continue;
		if ((rc = kv_write(q, tr, &t->kv[i], (int)i)) != 0)
			return rc;
	}
	/* timers */
	for (i = 0; i < t->ntimers; i++) {
		const struct queen_timer_op *o = &t->timers[i];

		if (o->type == QUEEN_TIMER_CANCEL) {
			rc = timer_cancel_locked(q, o->queue, o->key);
			if (rc == -ENOENT) {
				r->timer_missing[i] = true;
				rc = 0;
			}
		} else {
			int64_t due = o->due_at;

			if (!due && o->delay_ms)
				due = clamp_add(queen_now(q), o->delay_ms);
			rc = timer_schedule_locked(q, o->queue, o->key,
			    o->partition, due, o->payload, o->len);
			if (rc == -EFBIG)
				return refuse(r, QUEEN_TXN_TOO_LARGE, (int)i,
				    "%s", queen_errmsg(q));
			if (rc == -EINVAL)
				return refuse(r, QUEEN_TXN_BAD_REQUEST, (int)i,
				    "%s", queen_errmsg(q));
		}
		if (rc != 0)
			return rc;
	}
	for (i = 0; i < t->nkv; i++) {
		const struct queen_kv_op *o = &t->kv[i];

		if (o->type == QUEEN_KV_GET) {
			rc = kv_read(q, tr, o, &r->kv[i]);
		} else if (o->type == QUEEN_KV_GET_MANY) {
			r->kv[i].first = m;
			r->kv[i].count = o->nkeys;
			for (j = 0; j < o->nkeys && rc == 0; j++) {
				struct queen_kv_op one = *o;

				one.key = o->keys[j];
				rc = kv_read(q, tr, &one, &r->kv_many[m++]);
			}
		}
		if (rc != 0)
			return rc;
	}
	return 0;
}

int
queen_txn(struct queen *q, const struct queen_txn *t,
    struct queen_txn_result **out)
{
	struct txn_res *tr;
	struct queen_txn_result *r;
	size_t nmany;
	int rc;

	*out = NULL;
	tr = calloc(1, sizeof(*tr));
	if (!tr)
		return -ENOMEM;
	r = &tr->pub;
	*out = r;
	r->failed_index = -1;
	r->acks = calloc(t->nacks + 1, sizeof(*r->acks));
	r->pushes = calloc(t->npushes + 1, sizeof(*r->pushes));
	r->kv = calloc(t->nkv + 1, sizeof(*r->kv));
	r->timer_missing = calloc(t->ntimers + 1, sizeof(*r->timer_missing));
	if (!r->acks || !r->pushes || !r->kv || !r->timer_missing)
		return -ENOMEM;
	if (validate(t, r, &nmany))
		return 0;
	r->kv_many = calloc(nmany + 1, sizeof(*r->kv_many));
	if (!r->kv_many)
		return -ENOMEM;
	r->nkv_many = nmany;
	if ((rc = tx_begin(q)) != 0) {
		if (rc == -EBUSY) {
			refuse(r, QUEEN_TXN_RESERVED, -1, "%s", "the store is "
			    "busy; retry");
			return 0;
		}
		return rc;
	}
	rc = apply(q, t, tr);
	if (rc == 1) {
		tx_end(q, -ECANCELED);
		return 0;
	}
	rc = tx_end(q, rc);
	if (rc == -EBUSY) {
		refuse(r, QUEEN_TXN_RESERVED, -1, "%s", "the store is busy; "
		    "retry");
		return 0;
	}
	return rc;
}
