/*
 * api_txn.c - api/transaction: the request's operations, kv and timers
 * arrays decoded into one struct queen_txn, run by queen_txn, and its
 * verdict encoded (docs/design.md#transactions, docs/api.md).
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "api_int.h"

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
	/* a precondition not required failed: say the step did nothing */
	if (r->skipped) {
		json_object_set_new(j, "applied", json_false());
		json_object_set_new(j, "kvReason", json_string(r->skipped));
	} else if (o->type == QUEEN_KV_INCR) {
		json_object_set_new(j, "value", json_integer(r->number));
	}
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

json_t *
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
		/* reserved: the store was busy (a deadlock, a lock
		 * timeout), and a run again may commit */
		*rc = r->reason == QUEEN_TXN_RESERVED ? -EBUSY : -EIO;
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
		    t.timers[i].type != QUEEN_TIMER_CANCEL ? "scheduled" :
		    r->timer_missing[i] ? "not_found" : "cancelled"));
	out = json_pack("{s:b, s:o}", "success", 1, "results", res);
out_free:
	queen_txn_result_free(r);
	txbuild_free(&b, nkv, nt);
	return out;
out:
	txbuild_free(&b, nkv, nt);
	return NULL;
}
