/*
 * t-txn.c - transactions (docs/design.md#transactions) through queen_txn: one step (acks,
 * pushes, KV and timer operations) applies whole or not at all.  Every
 * rollback reason, and after each refusal a check that nothing at all was
 * written; the worker A / worker B story; the once gate; a retried
 * committed step with and without a gate; requiredLeases; KV reads answered
 * after apply; timers scheduled and cancelled inside a transaction.
 * Each case runs on a fresh store.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "qtest.h"
#include "tap.h"

#define Q "orders"
#define G "billing"
#define OUT "receipts"
#define NS "state"
#define TQ "reminders"
#define LEASE_MS (300 * SEC) /* the default lease_time */

#include "world.h"


/* ---- small helpers ---- */

static void
kvop(struct queen_kv_op *o, enum queen_kv_op_type type, const char *ns,
    const char *key, const char *value)
{
	memset(o, 0, sizeof(*o));
	o->type = type;
	o->ns = ns;
	o->key = key;
	o->value = value;
	o->len = value ? strlen(value) : 0;
	o->expect_version = -1;
	o->by = 1;
}

static void
pushop(struct queen_push_item *p, const char *queue, const char *txid,
    const char *payload)
{
	memset(p, 0, sizeof(*p));
	p->queue = queue;
	p->txid = txid;
	p->payload = payload;
	p->len = strlen(payload);
}

static void
timerop(struct queen_timer_op *t, enum queen_timer_op_type type,
    const char *queue, const char *key, int64_t delay_ms,
    const char *payload)
{
	memset(t, 0, sizeof(*t));
	t->type = type;
	t->queue = queue;
	t->key = key;
	t->delay_ms = delay_ms;
	t->payload = payload;
	t->len = payload ? strlen(payload) : 0;
}

/*
 * One whole step, as in design.md's example: ack one message, put a KV
 * value, push a receipt, schedule a reminder.  The struct points into
 * itself: do not copy it after step_init.
 */
struct step {
	struct queen_ack_item ack[2];
	struct queen_push_item push[2];
	struct queen_kv_op kv[4];
	struct queen_timer_op tm[2];
	const char *leases[2];
	struct queen_txn t;
};

static void
step_init(struct step *s, const char *txid, const char *lease,
    const char *receipt)
{
	memset(s, 0, sizeof(*s));
	ack_item(&s->ack[0], Q, NULL, G, txid, "completed", lease);
	pushop(&s->push[0], OUT, receipt, "{\"receipt\":1}");
	kvop(&s->kv[0], QUEEN_KV_PUT, NS, "order-1", "{\"status\":\"paid\"}");
	timerop(&s->tm[0], QUEEN_TIMER_SCHEDULE, TQ, "order-1", 3600 * SEC,
	    "{\"remind\":1}");
	s->t.acks = s->ack;
	s->t.nacks = 1;
	s->t.pushes = s->push;
	s->t.npushes = 1;
	s->t.kv = s->kv;
	s->t.nkv = 1;
	s->t.timers = s->tm;
	s->t.ntimers = 1;
	s->t.required_leases = s->leases;
}

/* A fresh store with m1..m3 in Q and (optionally) one receipt in OUT. */
static struct queen *
setup(struct fix *f, const char *name, bool with_out)
{
	struct queen *q = fix_open(f, name);

	if (pushn(q, Q, NULL, "m", 3) != 0)
		diag("%s: setup push failed", name);
	if (queen_group_ensure(q, Q, G) != 0)
		diag("%s: group ensure failed", name);
	if (with_out && push1(q, OUT, NULL, "receipt-0", "r0") != 1)
		diag("%s: setup receipt failed", name);
	return q;
}

/* Pop m1..m3 for G with a lease; the lease id into lease. */
static int
take(struct queen *q, int64_t batch, char *lease)
{
	struct queen_batch *b = NULL;
	int rc = pop1(q, Q, NULL, G, batch, &b);

	lease[0] = '\0';
	if (rc == 0)
		snprintf(lease, QUEEN_ID_LEN + 1, "%s", b->lease_id);
	queen_batch_free(b);
	return rc;
}

static int
run(struct queen *q, const struct queen_txn *t, struct queen_txn_result **r)
{
	int rc = queen_txn(q, t, r);

	if (rc != 0)
		diag("queen_txn: %d (%s)", rc, queen_errmsg(q));
	return rc;
}

/* ---- rollback reasons ---- */

static void
test_rejected_ack_wrong_lease(void)
{
	struct fix f;
	struct queen *q = setup(&f, "txn-rej", true);
	struct queen_txn_result *r = NULL;
	struct world w;
	struct step s;
	char lease[QUEEN_ID_LEN + 1], released[QUEEN_ID_LEN + 1];
	struct queen_ack_result ar;

	/* a lease that was released by a full ack, then a new one */
	is_int(take(q, 1, released), 0, "rej: first pop (m1)");
	ack1(q, Q, NULL, G, "m1", "completed", released, &ar);
	ok(ar.success && ar.lease_released, "rej: m1 acked, lease released");
	is_int(take(q, 2, lease), 0, "rej: second pop (m2, m3)");
	snap(q, lease, &w);
	is_int(w.committed, 1, "rej: cursor at 1 before");
	ok(w.lease_live, "rej: the new lease is live before");

	step_init(&s, "m3", released, "receipt-1");
	is_int(run(q, &s.t, &r), 0, "rej: verdict reached");
	is_str(queen_txn_reason_name(r->reason), "rejected_ack",
	    "rej: an ack under a released lease is rejected_ack");
	is_int(r->failed_index, 0, "rej: failedIndex names the ack");
	is_str(r->error, QUEEN_E_LEASE, "rej: error is the contract's lease "
	    "words");
	queen_txn_result_free(r);
	nothing_written(q, &w, lease, "rej released lease");

	step_init(&s, "m3", "0190aaaa-0000-7000-8000-000000000000",
	    "receipt-1");
	is_int(run(q, &s.t, &r), 0, "rej: verdict reached (bogus lease)");
	is_int(r->reason, QUEEN_TXN_REJECTED_ACK,
	    "rej: an ack under a lease id never issued is rejected_ack");
	queen_txn_result_free(r);
	nothing_written(q, &w, lease, "rej bogus lease");

	/* an ack that resolves nowhere fails the whole call, too */
	step_init(&s, "ghost", lease, "receipt-1");
	is_int(run(q, &s.t, &r), 0, "rej: verdict reached (unknown txid)");
	is_int(r->reason, QUEEN_TXN_REJECTED_ACK,
	    "rej: an unresolvable ack rolls the call back as rejected_ack");
	queen_txn_result_free(r);
	nothing_written(q, &w, lease, "rej unresolvable");

	/* and the same step under the live lease commits */
	step_init(&s, "m3", lease, "receipt-1");
	is_int(run(q, &s.t, &r), 0, "rej: verdict reached (live lease)");
	is_int(r->reason, QUEEN_TXN_OK, "rej: under the live lease it "
	    "commits");
	queen_txn_result_free(r);
	is_int(committed(q, Q, G, NULL), 3, "rej: cursor moved to 3");
	fix_close(&f);
}

/*
 * The refused ack is the one failedIndex names, whatever order the acks
 * run in: they run in the order of the rows they lock (by partition and
 * cursor), not the request's.  Partition pa is made first, so its cursor
 * comes first: the ack refused there (a transactionId pa never had) runs
 * before the request's first, and the index is still 1.  Then a partition
 * that does not exist, named second: resolved first (by name), index 1.
 */
static void
test_rejected_ack_index(void)
{
	struct fix f;
	struct queen *q = fix_open(&f, "txn-rejidx");
	struct queen_txn_result *r = NULL;
	struct queen_ack_item a[3];
	struct queen_txn t = { 0 };

	push1(q, Q, "pa", "a1", "x");
	push1(q, Q, "pz", "z1", "x");
	push1(q, Q, "pm", "m1", "x");
	if (queen_group_ensure(q, Q, G) != 0)
		diag("rejidx: group ensure failed");
	ack_item(&a[0], Q, "pz", G, "z1", "completed", NULL);
	ack_item(&a[1], Q, "pa", G, "never", "completed", NULL);
	ack_item(&a[2], Q, "pm", G, "m1", "completed", NULL);
	t.acks = a;
	t.nacks = 3;
	is_int(run(q, &t, &r), 0, "rejidx: verdict reached");
	is_int(r->reason, QUEEN_TXN_REJECTED_ACK,
	    "rejidx: an unknown transactionId is rejected_ack");
	is_int(r->failed_index, 1, "rejidx: failedIndex names that ack");
	queen_txn_result_free(r);
	is_int(committed(q, Q, G, "pz"), 0, "rejidx: pz's ack rolled back");

	ack_item(&a[1], Q, "nowhere", G, "a1", "completed", NULL);
	is_int(run(q, &t, &r), 0, "rejidx: verdict reached (no partition)");
	is_int(r->reason, QUEEN_TXN_REJECTED_ACK,
	    "rejidx: an ack into no partition is rejected_ack");
	is_int(r->failed_index, 1,
	    "rejidx: failedIndex names that ack, not the first");
	queen_txn_result_free(r);
	fix_close(&f);
}

static void
test_duplicate(void)
{
	struct fix f;
	struct queen *q = setup(&f, "txn-dup", true);
	struct queen_txn_result *r = NULL;
	struct world w;
	struct step s;
	char lease[QUEEN_ID_LEN + 1];

	is_int(take(q, 3, lease), 0, "dup: pop");
	snap(q, lease, &w);
	step_init(&s, "m1", lease, "receipt-new");
	pushop(&s.push[1], OUT, "receipt-0", "again");
	s.t.npushes = 2;
	is_int(run(q, &s.t, &r), 0, "dup: verdict reached");
	is_str(queen_txn_reason_name(r->reason), "duplicate",
	    "dup: a pushed txid already in the dedup window is duplicate");
	is_int(r->failed_index, 1, "dup: failedIndex names the second push");
	queen_txn_result_free(r);
	nothing_written(q, &w, lease, "dup");
	is_int(queen_push_is_dup(q, OUT, NULL, "receipt-new"), -ENOENT,
	    "dup: the first push of the refused call left no dedup hash");
	fix_close(&f);
}

static void
test_kv_exists(void)
{
	struct fix f;
	struct queen *q = setup(&f, "txn-exists", true);
	struct queen_txn_result *r = NULL;
	struct world w;
	struct step s;
	char lease[QUEEN_ID_LEN + 1], buf[64];

	is_int(queen_kv_put(q, NS, "gate", "first", 5, 0, false), 0,
	    "exists: the marker is there");
	is_int(take(q, 3, lease), 0, "exists: pop");
	snap(q, lease, &w);
	step_init(&s, "m1", lease, "receipt-1");
	kvop(&s.kv[1], QUEEN_KV_PUT_IF_ABSENT, NS, "gate", "second");
	s.kv[1].required = true;
	s.t.nkv = 2;
	is_int(run(q, &s.t, &r), 0, "exists: verdict reached");
	is_str(queen_txn_reason_name(r->reason), "kv_precondition",
	    "exists: putIfAbsent on an existing key is kv_precondition");
	is_str(r->kv_reason, "exists", "exists: kvReason is exists");
	is_int(r->failed_index, 1, "exists: failedIndex names the gate");
	queen_txn_result_free(r);
	nothing_written(q, &w, lease, "exists");
	is_int(kv_str(q, NS, "gate", buf, sizeof(buf)), 1,
	    "exists: marker still at version 1");
	is_str(buf, "first", "exists: marker value untouched");
	is_int(kv_str(q, NS, "order-1", buf, sizeof(buf)), -ENOENT,
	    "exists: the put before the gate rolled back");
	fix_close(&f);
}

static void
test_kv_version(void)
{
	struct fix f;
	struct queen *q = setup(&f, "txn-version", true);
	struct queen_txn_result *r = NULL;
	struct world w;
	struct step s;
	char lease[QUEEN_ID_LEN + 1], buf[64];

	is_int(queen_kv_put(q, NS, "acct", "100", 3, 0, false), 0,
	    "version: acct at version 1");
	is_int(take(q, 3, lease), 0, "version: pop");
	snap(q, lease, &w);

	step_init(&s, "m1", lease, "receipt-1");
	s.kv[0].key = "acct";
	s.kv[0].value = "90";
	s.kv[0].len = 2;
	s.kv[0].expect_version = 5;
	s.kv[0].required = true;
	is_int(run(q, &s.t, &r), 0, "version: verdict reached");
	is_int(r->reason, QUEEN_TXN_KV_PRECONDITION,
	    "version: expect on a different version is kv_precondition");
	is_str(r->kv_reason, "version", "version: kvReason is version");
	is_int(r->failed_index, 0, "version: failedIndex 0");
	queen_txn_result_free(r);
	nothing_written(q, &w, lease, "version");
	is_int(kv_str(q, NS, "acct", buf, sizeof(buf)), 1,
	    "version: acct still version 1");
	is_str(buf, "100", "version: acct still 100");

	/* expect 0 means "must be absent" */
	s.kv[0].expect_version = 0;
	is_int(run(q, &s.t, &r), 0, "version: verdict reached (expect 0)");
	is_int(r->reason, QUEEN_TXN_KV_PRECONDITION,
	    "version: expect 0 on an existing key is kv_precondition");
	is_str(r->kv_reason, "version", "version: expect 0 kvReason");
	queen_txn_result_free(r);
	nothing_written(q, &w, lease, "version expect 0");

	/* a matching expect commits */
	s.kv[0].expect_version = 1;
	is_int(run(q, &s.t, &r), 0, "version: verdict reached (expect 1)");
	is_int(r->reason, QUEEN_TXN_OK, "version: a matching expect commits");
	is_int(r->kv[0].version, 2, "version: the answer says version 2");
	queen_txn_result_free(r);
	is_int(kv_str(q, NS, "acct", buf, sizeof(buf)), 2,
	    "version: acct at version 2");
	is_str(buf, "90", "version: acct now 90");

	/* a lost precondition that is not required does not roll back */
	kvop(&s.kv[0], QUEEN_KV_PUT_IF_ABSENT, NS, "acct", "0");
	kvop(&s.kv[1], QUEEN_KV_PUT, NS, "other", "o");
	s.t.nkv = 2;
	s.t.nacks = 0;
	s.t.npushes = 0;
	s.t.ntimers = 0;
	is_int(run(q, &s.t, &r), 0, "version: verdict reached (optional)");
	is_int(r->reason, QUEEN_TXN_OK, "version: a non-required putIfAbsent "
	    "that finds a value does not roll back");
	ok(r->kv[0].found, "version: its answer says found");
	queen_txn_result_free(r);
	is_int(kv_str(q, NS, "acct", buf, sizeof(buf)), 2,
	    "version: acct not overwritten by the optional putIfAbsent");
	is_str(buf, "90", "version: acct still 90");
	is_int(kv_str(q, NS, "other", buf, sizeof(buf)), 1,
	    "version: the rest of that call applied");

	/* delete of a missing key with required */
	kvop(&s.kv[0], QUEEN_KV_DELETE, NS, "nope", NULL);
	s.kv[0].required = true;
	s.t.nkv = 1;
	snap(q, lease, &w);
	is_int(run(q, &s.t, &r), 0, "version: verdict reached (delete)");
	is_int(r->reason, QUEEN_TXN_KV_PRECONDITION,
	    "version: required delete of a missing key is kv_precondition");
	is_str(r->kv_reason, "missing", "version: kvReason is missing");
	queen_txn_result_free(r);
	nothing_written(q, &w, lease, "delete missing");
	fix_close(&f);
}

static void
test_bad_request(void)
{
	struct fix f;
	struct queen *q;
	struct queen_txn_result *r = NULL;
	struct world w;
	struct step s;
	char lease[QUEEN_ID_LEN + 1];

	/* two writes to one key */
	q = setup(&f, "txn-bad1", true);
	take(q, 3, lease);
	snap(q, lease, &w);
	step_init(&s, "m1", lease, "receipt-1");
	kvop(&s.kv[1], QUEEN_KV_INCR, NS, "order-1", NULL);
	s.t.nkv = 2;
	is_int(run(q, &s.t, &r), 0, "bad: verdict reached (two writes)");
	is_str(queen_txn_reason_name(r->reason), "bad_request",
	    "bad: two writes to one key is bad_request");
	is_int(r->failed_index, 1, "bad: failedIndex names the second write");
	queen_txn_result_free(r);
	nothing_written(q, &w, lease, "bad two writes");
	fix_close(&f);

	/* a write and a read of one key are fine */
	q = setup(&f, "txn-bad1b", true);
	take(q, 3, lease);
	step_init(&s, "m1", lease, "receipt-1");
	kvop(&s.kv[1], QUEEN_KV_GET, NS, "order-1", NULL);
	s.t.nkv = 2;
	is_int(run(q, &s.t, &r), 0, "bad: verdict reached (write + read)");
	is_int(r->reason, QUEEN_TXN_OK, "bad: a write and a read of one key "
	    "commit");
	queen_txn_result_free(r);
	fix_close(&f);

	/* two operations on one timer */
	q = setup(&f, "txn-bad2", true);
	take(q, 3, lease);
	snap(q, lease, &w);
	step_init(&s, "m1", lease, "receipt-1");
	timerop(&s.tm[1], QUEEN_TIMER_CANCEL, TQ, "order-1", 0, NULL);
	s.t.ntimers = 2;
	is_int(run(q, &s.t, &r), 0, "bad: verdict reached (two timer ops)");
	is_int(r->reason, QUEEN_TXN_BAD_REQUEST,
	    "bad: two operations on one timer is bad_request");
	is_int(r->failed_index, 1, "bad: failedIndex names the second timer "
	    "op");
	queen_txn_result_free(r);
	nothing_written(q, &w, lease, "bad two timer ops");
	fix_close(&f);

	/* an unknown KV operation */
	q = setup(&f, "txn-bad3", true);
	take(q, 3, lease);
	snap(q, lease, &w);
	step_init(&s, "m1", lease, "receipt-1");
	s.kv[0].type = (enum queen_kv_op_type)42;
	is_int(run(q, &s.t, &r), 0, "bad: verdict reached (unknown KV op)");
	is_int(r->reason, QUEEN_TXN_BAD_REQUEST,
	    "bad: an unknown KV op type is bad_request");
	queen_txn_result_free(r);
	nothing_written(q, &w, lease, "bad unknown KV op");
	fix_close(&f);

	/* an unknown timer operation */
	q = setup(&f, "txn-bad4", true);
	take(q, 3, lease);
	snap(q, lease, &w);
	step_init(&s, "m1", lease, "receipt-1");
	s.tm[0].type = (enum queen_timer_op_type)7;
	is_int(run(q, &s.t, &r), 0, "bad: verdict reached (unknown timer "
	    "op)");
	is_int(r->reason, QUEEN_TXN_BAD_REQUEST,
	    "bad: an unknown timer op type is bad_request");
	queen_txn_result_free(r);
	nothing_written(q, &w, lease, "bad unknown timer op");
	fix_close(&f);

	/* an invalid KV namespace */
	q = setup(&f, "txn-bad5", true);
	take(q, 3, lease);
	snap(q, lease, &w);
	step_init(&s, "m1", lease, "receipt-1");
	s.kv[0].ns = "../etc";
	is_int(run(q, &s.t, &r), 0, "bad: verdict reached (bad ns)");
	is_int(r->reason, QUEEN_TXN_BAD_REQUEST,
	    "bad: an invalid KV namespace is bad_request");
	queen_txn_result_free(r);
	nothing_written(q, &w, lease, "bad namespace");
	fix_close(&f);

	/* incr of a value that is not an integer (found at apply time) */
	q = setup(&f, "txn-bad6", true);
	queen_kv_put(q, NS, "word", "abc", 3, 0, false);
	take(q, 3, lease);
	snap(q, lease, &w);
	step_init(&s, "m1", lease, "receipt-1");
	kvop(&s.kv[1], QUEEN_KV_INCR, NS, "word", NULL);
	s.t.nkv = 2;
	is_int(run(q, &s.t, &r), 0, "bad: verdict reached (incr of text)");
	is_int(r->reason, QUEEN_TXN_BAD_REQUEST,
	    "bad: incr of a non-integer is bad_request");
	queen_txn_result_free(r);
	nothing_written(q, &w, lease, "bad incr of text");
	fix_close(&f);
}

/*
 * Numbers past their limits (README "Limits"): refused with nothing
 * changed, never wrapped or saturated into a success.
 */
static void
test_hostile_numbers(void)
{
	struct fix f;
	struct queen *q;
	struct queen_txn_result *r = NULL;
	struct queen_kv_value *v = NULL;
	struct queen_lease_info li, li2;
	struct queen_timer_info *ti = NULL;
	struct queen_timer_op tm;
	struct queen_kv_op kv;
	struct queen_txn t;
	char lease[QUEEN_ID_LEN + 1], top[32];
	int64_t exp = 0;
	static const int64_t incr[][2] = {
		{ INT64_MAX - 1, 2 }, { INT64_MAX, INT64_MAX },
		{ INT64_MIN + 1, -2 }, { INT64_MIN, INT64_MIN },
	};
	static const int64_t due[] = { -1, QUEEN_TIME_MAX_MS + 1, INT64_MAX,
	    INT64_MIN };

	q = setup(&f, "txn-numbers", false);

	/* incr past either end of int64: bad_request, the value kept */
	for (size_t i = 0; i < sizeof(incr) / sizeof(incr[0]); i++) {
		char num[32];

		snprintf(num, sizeof(num), "%" PRId64, incr[i][0]);
		queen_kv_put(q, NS, "n", num, strlen(num), 0, false);
		kvop(&kv, QUEEN_KV_INCR, NS, "n", NULL);
		kv.by = incr[i][1];
		memset(&t, 0, sizeof(t));
		t.kv = &kv;
		t.nkv = 1;
		is_int(run(q, &t, &r), 0, "numbers: incr %zu verdict", i);
		ok(r && r->reason == QUEEN_TXN_BAD_REQUEST,
		    "numbers: %s by %" PRId64 " is bad_request (%s)", num,
		    incr[i][1], queen_errmsg(q));
		queen_txn_result_free(r);
		r = NULL;
		if (queen_kv_get(q, NS, "n", &v) == 0 && v) {
			ok(v->len == strlen(num) && !memcmp(v->data, num,
			    v->len), "numbers: %s kept", num);
			free(v);
			v = NULL;
		} else {
			ok(0, "numbers: kv get after incr %zu", i);
		}
	}
	/* a stored value past int64 is not an integer */
	queen_kv_put(q, NS, "n", "99999999999999999999", 20, 0, false);
	kvop(&kv, QUEEN_KV_INCR, NS, "n", NULL);
	memset(&t, 0, sizeof(t));
	t.kv = &kv;
	t.nkv = 1;
	is_int(run(q, &t, &r), 0, "numbers: incr of 20 digits verdict");
	ok(r && r->reason == QUEEN_TXN_BAD_REQUEST,
	    "numbers: incr of a value past int64 is bad_request");
	queen_txn_result_free(r);
	r = NULL;
	/* INT64_MAX itself is reached */
	queen_kv_put(q, NS, "n", "9223372036854775806", 19, 0, false);
	is_int(run(q, &t, &r), 0, "numbers: incr to INT64_MAX verdict");
	ok(r && r->reason == QUEEN_TXN_OK,
	    "numbers: incr up to INT64_MAX succeeds");
	queen_txn_result_free(r);
	r = NULL;
	snprintf(top, sizeof(top), "%" PRId64, INT64_MAX);
	if (queen_kv_get(q, NS, "n", &v) == 0 && v) {
		ok(v->len == strlen(top) && !memcmp(v->data, top, v->len),
		    "numbers: the value is INT64_MAX");
		free(v);
		v = NULL;
	}

	/* ttls past 100 years */
	is_int(queen_kv_put(q, NS, "t", "x", 1, QUEEN_SECONDS_MAX * 1000 + 1,
	    false), -EINVAL, "numbers: kv_put ttl past 100 years");
	is_int(queen_kv_get(q, NS, "t", &v), -ENOENT,
	    "numbers: nothing stored");
	free(v);
	v = NULL;
	is_int(queen_kv_set_ttl(q, NS, "n", INT64_MAX), -EINVAL,
	    "numbers: kv_set_ttl INT64_MAX");
	kvop(&kv, QUEEN_KV_PUT, NS, "t", "1");
	kv.ttl_ms = INT64_MAX;
	is_int(run(q, &t, &r), 0, "numbers: txn ttl verdict");
	ok(r && r->reason == QUEEN_TXN_BAD_REQUEST,
	    "numbers: a txn ttl of INT64_MAX ms is bad_request");
	queen_txn_result_free(r);
	r = NULL;

	/* timers due outside 0 .. 9999-12-31 */
	for (size_t i = 0; i < sizeof(due) / sizeof(due[0]); i++) {
		is_int(queen_timer_schedule(q, TQ, "d", NULL, due[i], "x", 1),
		    -EINVAL, "numbers: timer due %" PRId64 " is -EINVAL",
		    due[i]);
		timerop(&tm, QUEEN_TIMER_SCHEDULE, TQ, "d", 0, "x");
		tm.due_at = due[i];
		memset(&t, 0, sizeof(t));
		t.timers = &tm;
		t.ntimers = 1;
		is_int(run(q, &t, &r), 0, "numbers: txn timer %zu verdict", i);
		ok(r && r->reason == QUEEN_TXN_BAD_REQUEST,
		    "numbers: txn timer due %" PRId64 " is bad_request",
		    due[i]);
		queen_txn_result_free(r);
		r = NULL;
	}
	timerop(&tm, QUEEN_TIMER_SCHEDULE, TQ, "d", INT64_MAX, "x");
	is_int(run(q, &t, &r), 0, "numbers: txn timer delay verdict");
	ok(r && r->reason == QUEEN_TXN_BAD_REQUEST,
	    "numbers: a timer delay past 9999 is bad_request");
	queen_txn_result_free(r);
	r = NULL;
	is_int(queen_timer_get(q, TQ, "d", false, &ti), -ENOENT,
	    "numbers: no timer was stored");
	free(ti);
	ti = NULL;
	is_int(queen_timer_schedule(q, TQ, "d", NULL, QUEEN_TIME_MAX_MS, "x",
	    1), 0, "numbers: a timer due at the last ms of 9999");

	/* renew past 100 years: -EINVAL, the lease as it was */
	is_int(take(q, 1, lease), 0, "numbers: a lease");
	is_int(queen_lease_get(q, lease, &li), 0, "numbers: lease get");
	is_int(queen_lease_renew(q, lease, QUEEN_SECONDS_MAX + 1, &exp),
	    -EINVAL, "numbers: renew past 100 years");
	is_int(queen_lease_renew(q, lease, 9300000000000000LL, &exp), -EINVAL,
	    "numbers: renew 9.3e15 s");
	is_int(queen_lease_renew(q, lease, INT64_MAX, &exp), -EINVAL,
	    "numbers: renew INT64_MAX s");
	is_int(queen_lease_get(q, lease, &li2), 0, "numbers: lease still live");
	is_int(li2.expires_at, li.expires_at, "numbers: expiry unchanged");
	is_int(queen_lease_renew(q, lease, QUEEN_SECONDS_MAX, &exp), 0,
	    "numbers: renew for 100 years");
	is_int(exp, f.now + QUEEN_SECONDS_MAX * 1000,
	    "numbers: expiresAt now + 100 years");
	fix_close(&f);
}

static void
test_too_large(void)
{
	static char keys[QUEEN_TXN_MAX_KV_KEYS + 1][16];
	static const char *kp[QUEEN_TXN_MAX_KV_KEYS + 1];
	struct queen_kv_op ops[QUEEN_TXN_MAX_KV_OPS + 1];
	struct fix f;
	struct queen *q;
	struct queen_txn_result *r = NULL;
	struct queen_txn t;
	struct world w;
	struct step s;
	char lease[QUEEN_ID_LEN + 1], big[2048];
	int i;

	for (i = 0; i <= QUEEN_TXN_MAX_KV_KEYS; i++) {
		snprintf(keys[i], sizeof(keys[i]), "k%d", i);
		kp[i] = keys[i];
	}
	for (i = 0; i <= QUEEN_TXN_MAX_KV_OPS; i++)
		kvop(&ops[i], QUEEN_KV_PUT, NS, keys[i], "v");

	/* 65 KV operations */
	q = setup(&f, "txn-big1", true);
	take(q, 3, lease);
	snap(q, lease, &w);
	step_init(&s, "m1", lease, "receipt-1");
	t = s.t;
	t.kv = ops;
	t.nkv = QUEEN_TXN_MAX_KV_OPS + 1;
	is_int(run(q, &t, &r), 0, "big: verdict reached (65 KV ops)");
	is_str(queen_txn_reason_name(r->reason), "too_large",
	    "big: 65 KV operations is too_large");
	queen_txn_result_free(r);
	nothing_written(q, &w, lease, "big 65 ops");

	/* 64 is the limit, and allowed */
	t.nkv = QUEEN_TXN_MAX_KV_OPS;
	is_int(run(q, &t, &r), 0, "big: verdict reached (64 KV ops)");
	is_int(r->reason, QUEEN_TXN_OK, "big: 64 KV operations commit");
	queen_txn_result_free(r);
	snap(q, lease, &w);
	is_int(w.kv_keys, QUEEN_TXN_MAX_KV_OPS, "big: 64 keys written");
	fix_close(&f);

	/* getMany over 257 keys */
	q = setup(&f, "txn-big2", true);
	take(q, 3, lease);
	snap(q, lease, &w);
	step_init(&s, "m1", lease, "receipt-1");
	kvop(&s.kv[1], QUEEN_KV_GET_MANY, NS, NULL, NULL);
	s.kv[1].keys = kp;
	s.kv[1].nkeys = QUEEN_TXN_MAX_KV_KEYS + 1;
	s.t.nkv = 2;
	is_int(run(q, &s.t, &r), 0, "big: verdict reached (257 keys)");
	is_int(r->reason, QUEEN_TXN_TOO_LARGE,
	    "big: getMany over more than 256 keys is too_large");
	queen_txn_result_free(r);
	nothing_written(q, &w, lease, "big 257 keys");
	/* 255 + the put's key = 256 keys: allowed */
	s.kv[1].nkeys = QUEEN_TXN_MAX_KV_KEYS - 1;
	is_int(run(q, &s.t, &r), 0, "big: verdict reached (256 keys)");
	is_int(r->reason, QUEEN_TXN_OK, "big: 256 keys in all commit");
	if (r->reason == QUEEN_TXN_OK)
		is_int((int64_t)r->nkv_many, QUEEN_TXN_MAX_KV_KEYS - 1,
		    "big: one getMany answer per key");
	queen_txn_result_free(r);
	fix_close(&f);

	/* a push over max_message_bytes */
	q = setup(&f, "txn-big3", true);
	is_int(cfg(q, OUT, NULL, "max_message_bytes", "1K"), 0,
	    "big: " OUT " max_message_bytes = 1K");
	take(q, 3, lease);
	snap(q, lease, &w);
	step_init(&s, "m1", lease, "receipt-1");
	memset(big, 'x', sizeof(big));
	s.push[0].payload = big;
	s.push[0].len = 1025;
	is_int(run(q, &s.t, &r), 0, "big: verdict reached (large push)");
	is_int(r->reason, QUEEN_TXN_TOO_LARGE,
	    "big: a push over max_message_bytes is too_large");
	queen_txn_result_free(r);
	nothing_written(q, &w, lease, "big push");
	s.push[0].len = 1024;
	is_int(run(q, &s.t, &r), 0, "big: verdict reached (1024 bytes)");
	is_int(r->reason, QUEEN_TXN_OK, "big: exactly max_message_bytes "
	    "commits");
	queen_txn_result_free(r);
	is_int(tail_of(q, OUT, NULL), 2, "big: the receipt landed at 2");
	fix_close(&f);
}

/*
 * The checks run acks, then pushes and their dedup, then KV, then timers:
 * with several refusals in one call, the first in that order names it.
 */
static void
test_order(void)
{
	struct fix f;
	struct queen *q;
	struct queen_txn_result *r = NULL;
	struct world w;
	struct step s;
	char lease[QUEEN_ID_LEN + 1], big[64];

	memset(big, 'x', sizeof(big));
	/* a stale ack, a duplicate push, a lost gate, an oversize timer */
	q = setup(&f, "txn-order", true);
	queen_kv_put(q, NS, "gate", "g", 1, 0, false);
	cfg(q, OUT, NULL, "max_message_bytes", "32");
	queen_queue_create(q, TQ, NULL);
	cfg(q, TQ, NULL, "max_message_bytes", "32");
	take(q, 3, lease);
	snap(q, lease, &w);
	step_init(&s, "m1", "0190aaaa-0000-7000-8000-000000000000",
	    "receipt-0");
	kvop(&s.kv[1], QUEEN_KV_PUT_IF_ABSENT, NS, "gate", "again");
	s.kv[1].required = true;
	s.t.nkv = 2;
	s.tm[0].payload = big;
	s.tm[0].len = sizeof(big);
	is_int(run(q, &s.t, &r), 0, "order: verdict reached (all four)");
	is_int(r->reason, QUEEN_TXN_REJECTED_ACK, "order: the ack is checked "
	    "first");
	queen_txn_result_free(r);
	nothing_written(q, &w, lease, "order all four");

	s.ack[0].lease_id = lease;
	is_int(run(q, &s.t, &r), 0, "order: verdict reached (push, KV, "
	    "timer)");
	is_int(r->reason, QUEEN_TXN_DUPLICATE, "order: then the pushes");
	queen_txn_result_free(r);
	nothing_written(q, &w, lease, "order push KV timer");

	s.push[0].txid = "receipt-1";
	is_int(run(q, &s.t, &r), 0, "order: verdict reached (KV, timer)");
	is_int(r->reason, QUEEN_TXN_KV_PRECONDITION, "order: then KV");
	queen_txn_result_free(r);
	nothing_written(q, &w, lease, "order KV timer");

	s.t.nkv = 1;
	is_int(run(q, &s.t, &r), 0, "order: verdict reached (timer)");
	is_int(r->reason, QUEEN_TXN_TOO_LARGE, "order: then timers (payload "
	    "over max_message_bytes is too_large)");
	is_int(r->failed_index, 0, "order: failedIndex names the timer");
	queen_txn_result_free(r);
	nothing_written(q, &w, lease, "order timer");

	s.tm[0].len = 32;
	is_int(run(q, &s.t, &r), 0, "order: verdict reached (none)");
	is_int(r->reason, QUEEN_TXN_OK, "order: with every part fixed it "
	    "commits");
	queen_txn_result_free(r);
	is_int(committed(q, Q, G, NULL), 1, "order: cursor moved to 1");
	fix_close(&f);
}

/* ---- design.md#transactions: the lease is the fence ---- */

static void
test_worker_a_b(void)
{
	struct fix f;
	struct queen *q = setup(&f, "txn-ab", false);
	struct queen_txn_result *r = NULL;
	struct queen_batch *b1 = NULL, *b2 = NULL;
	struct queen_lease_info li;
	struct queen_queue_info qi;
	struct world w;
	struct step s;
	char buf[128], txid[64], l1[QUEEN_ID_LEN + 1], l2[QUEEN_ID_LEN + 1];
	int rc;

	rc = pop1(q, Q, NULL, G, 3, &b1);
	is_int(rc, 0, "ab: worker A pops");
	if (rc != 0) {
		fix_close(&f);
		return;
	}
	snprintf(l1, sizeof(l1), "%s", b1->lease_id);
	is_int((int64_t)b1->n, 3, "ab: A holds m1..m3 under L1");
	f.now += LEASE_MS + 1;
	is_int(queen_lease_get(q, l1, &li), -ESTALE, "ab: L1 has expired");
	rc = pop1(q, Q, NULL, G, 3, &b2);
	is_int(rc, 0, "ab: worker B pops");
	if (rc != 0) {
		queen_batch_free(b1);
		fix_close(&f);
		return;
	}
	snprintf(l2, sizeof(l2), "%s", b2->lease_id);
	is_int((int64_t)b2->n, 3, "ab: B gets the same span");
	is_int(b2->msgs[0].offset, b1->msgs[0].offset, "ab: same first "
	    "offset");
	is_int(b2->msgs[2].offset, b1->msgs[2].offset, "ab: same last "
	    "offset");
	ok(strcmp(l1, l2) != 0, "ab: under a new lease L2");
	snap(q, l2, &w);

	step_init(&s, "m3", l1, "receipt-1");
	is_int(run(q, &s.t, &r), 0, "ab: A's verdict reached");
	is_str(queen_txn_reason_name(r->reason), "rejected_ack",
	    "ab: A's transaction is refused with rejected_ack");
	is_str(r->error, QUEEN_E_LEASE, "ab: A's error is the lease words");
	queen_txn_result_free(r);
	nothing_written(q, &w, l2, "ab A");
	is_int(queen_queue_get(q, OUT, &qi), -ENOENT,
	    "ab: A's push did not even create " OUT);
	is_int(kv_str(q, NS, "order-1", buf, sizeof(buf)), -ENOENT,
	    "ab: A's KV write is not there");
	ok(w.lease_live, "ab: L2 still held after A's refusal");

	step_init(&s, "m3", l2, "receipt-1");
	is_int(run(q, &s.t, &r), 0, "ab: B's verdict reached");
	is_int(r->reason, QUEEN_TXN_OK, "ab: B's identical transaction "
	    "commits");
	ok(r->acks[0].success, "ab: B's ack succeeded");
	ok(r->acks[0].lease_released, "ab: B's ack of the span end released "
	    "L2");
	is_int(r->pushes[0].status, QUEEN_PUSH_QUEUED, "ab: B's push queued "
	    "(A's rolled-back push left no dedup trace)");
	is_int(r->pushes[0].offset, 1, "ab: B's push is offset 1");
	queen_txn_result_free(r);
	is_int(committed(q, Q, G, NULL), 3, "ab: cursor moved to 3");
	is_int(kv_str(q, NS, "order-1", buf, sizeof(buf)), 1,
	    "ab: B's KV write is at version 1");
	is_str(buf, "{\"status\":\"paid\"}", "ab: B's KV value");
	is_int(msg_at(q, OUT, NULL, 1, buf, sizeof(buf), txid, sizeof(txid)),
	    0, "ab: B's push landed");
	is_str(txid, "receipt-1", "ab: the receipt's transactionId");
	is_str(buf, "{\"receipt\":1}", "ab: the receipt's payload");
	snap(q, NULL, &w);
	is_int(w.timers, 1, "ab: B's timer is scheduled");
	is_int(w.timer_due_sum, f.now + 3600 * SEC, "ab: due in an hour");
	is_int(queen_lease_get(q, l2, &li), -ESTALE, "ab: L2 is finished");
	queen_batch_free(b1);
	queen_batch_free(b2);
	fix_close(&f);
}

/* ---- once, the gate ---- */

static void
test_once_gate(void)
{
	struct fix f;
	struct queen *q = setup(&f, "txn-once", false);
	struct queen_txn_result *r = NULL;
	struct queen_ack_result ar;
	struct world w;
	struct step s;
	char lease[QUEEN_ID_LEN + 1], buf[64];

	/* first delivery of payment pay-1 (message m1) */
	is_int(take(q, 1, lease), 0, "once: first delivery");
	step_init(&s, "m1", lease, NULL);
	kvop(&s.kv[1], QUEEN_KV_PUT_IF_ABSENT, "payments", "pay-1", "1");
	s.kv[1].required = true;
	s.kv[1].ttl_ms = 30LL * 86400 * SEC;
	s.t.nkv = 2;
	is_int(run(q, &s.t, &r), 0, "once: first verdict reached");
	is_int(r->reason, QUEEN_TXN_OK, "once: first delivery commits");
	queen_txn_result_free(r);
	is_int(kv_str(q, "payments", "pay-1", buf, sizeof(buf)), 1,
	    "once: the marker is written");
	is_int(committed(q, Q, G, NULL), 1, "once: cursor at 1");
	is_int(tail_of(q, OUT, NULL), 1, "once: one receipt");

	/* the provider retries: the same payment arrives again as m4 */
	is_int(push1(q, Q, NULL, "m4", "pay-1 again"), 4, "once: retry "
	    "pushed as m4");
	is_int(queen_seek(q, Q, G, NULL, QUEEN_POS_OFFSET, 4), 0,
	    "once: skip m2, m3 for the story");
	is_int(take(q, 1, lease), 0, "once: second delivery");
	snap(q, lease, &w);
	step_init(&s, "m4", lease, NULL);
	kvop(&s.kv[1], QUEEN_KV_PUT_IF_ABSENT, "payments", "pay-1", "1");
	s.kv[1].required = true;
	s.t.nkv = 2;
	is_int(run(q, &s.t, &r), 0, "once: second verdict reached");
	is_str(queen_txn_reason_name(r->reason), "kv_precondition",
	    "once: second delivery is kv_precondition");
	is_str(r->kv_reason, "exists", "once: kvReason exists");
	is_int(r->failed_index, 1, "once: failedIndex is the gate's");
	queen_txn_result_free(r);
	nothing_written(q, &w, lease, "once");
	is_int(tail_of(q, OUT, NULL), 1, "once: still one receipt");
	/* the handler then acks on its own */
	ack1(q, Q, NULL, G, "m4", "completed", lease, &ar);
	ok(ar.success, "once: the handler's own ack succeeds");
	is_int(committed(q, Q, G, NULL), 4, "once: cursor past the retry");
	fix_close(&f);
}

/* ---- a retried committed step ---- */

static void
test_retry(void)
{
	struct fix f;
	struct queen *q;
	struct queen_txn_result *r = NULL;
	struct world w;
	struct step s;
	char lease[QUEEN_ID_LEN + 1], buf[64];

	/* with a once gate: the retry is refused whole */
	q = setup(&f, "txn-retry-once", false);
	take(q, 2, lease);
	step_init(&s, "m1", lease, NULL);
	s.t.npushes = 0;
	s.t.ntimers = 0;
	kvop(&s.kv[0], QUEEN_KV_INCR, NS, "count", NULL);
	kvop(&s.kv[1], QUEEN_KV_PUT_IF_ABSENT, "once", "m1", "1");
	s.kv[1].required = true;
	s.t.nkv = 2;
	is_int(run(q, &s.t, &r), 0, "retry once: first attempt ran");
	is_int(r->reason, QUEEN_TXN_OK, "retry once: first attempt commits");
	queen_txn_result_free(r);
	is_int(committed(q, Q, G, NULL), 1, "retry once: cursor at 1");
	snap(q, lease, &w);
	ok(w.lease_live, "retry once: the lease still covers m2");
	is_int(run(q, &s.t, &r), 0, "retry once: retry ran");
	is_int(r->reason, QUEEN_TXN_KV_PRECONDITION,
	    "retry once: the retry is refused by the gate");
	queen_txn_result_free(r);
	nothing_written(q, &w, lease, "retry once");
	kv_str(q, NS, "count", buf, sizeof(buf));
	is_str(buf, "1", "retry once: the incr counted once");
	fix_close(&f);

	/* with a deterministic push transactionId */
	q = setup(&f, "txn-retry-push", false);
	take(q, 2, lease);
	step_init(&s, "m1", lease, "receipt-of-m1");
	s.t.ntimers = 0;
	kvop(&s.kv[0], QUEEN_KV_INCR, NS, "count", NULL);
	is_int(run(q, &s.t, &r), 0, "retry push: first attempt ran");
	is_int(r->reason, QUEEN_TXN_OK, "retry push: first attempt commits");
	queen_txn_result_free(r);
	snap(q, lease, &w);
	is_int(run(q, &s.t, &r), 0, "retry push: retry ran");
	is_int(r->reason, QUEEN_TXN_DUPLICATE,
	    "retry push: the retry is refused as duplicate");
	is_int(r->failed_index, 0, "retry push: failedIndex is the push");
	queen_txn_result_free(r);
	nothing_written(q, &w, lease, "retry push");
	kv_str(q, NS, "count", buf, sizeof(buf));
	is_str(buf, "1", "retry push: the incr counted once");
	is_int(tail_of(q, OUT, NULL), 1, "retry push: one receipt");
	fix_close(&f);

	/*
	 * Without a gate, while the same lease still covers other messages of
	 * the batch, re-acking is a no-op and the KV ops apply again: the
	 * contract states that an incr counts twice.
	 */
	q = setup(&f, "txn-retry-nogate", false);
	take(q, 2, lease);
	step_init(&s, "m1", lease, NULL);
	s.t.npushes = 0;
	s.t.ntimers = 0;
	kvop(&s.kv[0], QUEEN_KV_INCR, NS, "count", NULL);
	is_int(run(q, &s.t, &r), 0, "retry nogate: first attempt ran");
	is_int(r->reason, QUEEN_TXN_OK, "retry nogate: first commits");
	queen_txn_result_free(r);
	is_int(run(q, &s.t, &r), 0, "retry nogate: retry ran");
	is_int(r->reason, QUEEN_TXN_OK, "retry nogate: the retry commits too "
	    "(the ack alone is not a gate)");
	ok(r->acks[0].success && r->acks[0].noop, "retry nogate: the "
	    "repeated ack is a no-op");
	is_int(r->kv[0].number, 2, "retry nogate: incr answers 2");
	queen_txn_result_free(r);
	kv_str(q, NS, "count", buf, sizeof(buf));
	is_str(buf, "2", "retry nogate: the incr counted twice, as design.md "
	    "says");
	is_int(committed(q, Q, G, NULL), 1, "retry nogate: cursor still 1");
	fix_close(&f);

	/* without a gate, but the first attempt released the lease */
	q = setup(&f, "txn-retry-released", false);
	take(q, 1, lease);
	step_init(&s, "m1", lease, NULL);
	s.t.npushes = 0;
	s.t.ntimers = 0;
	kvop(&s.kv[0], QUEEN_KV_INCR, NS, "count", NULL);
	is_int(run(q, &s.t, &r), 0, "retry released: first attempt ran");
	is_int(r->reason, QUEEN_TXN_OK, "retry released: first commits");
	ok(r->acks[0].lease_released, "retry released: it released the "
	    "lease");
	queen_txn_result_free(r);
	snap(q, lease, &w);
	is_int(run(q, &s.t, &r), 0, "retry released: retry ran");
	is_int(r->reason, QUEEN_TXN_REJECTED_ACK,
	    "retry released: the repeated ack is refused");
	queen_txn_result_free(r);
	nothing_written(q, &w, NULL, "retry released");
	kv_str(q, NS, "count", buf, sizeof(buf));
	is_str(buf, "1", "retry released: the incr counted once");
	fix_close(&f);
}

/* ---- requiredLeases ---- */

static void
test_required_leases(void)
{
	struct fix f;
	struct queen *q;
	struct queen_txn_result *r = NULL;
	struct queen_batch *b = NULL;
	struct queen_lease_info li;
	struct world w;
	struct step s;
	char la[QUEEN_ID_LEN + 1], lb[QUEEN_ID_LEN + 1], buf[64];

	/* one required lease fences acks that carry none */
	q = fix_open(&f, "txn-req-fence");
	pushn(q, Q, "pa", "a", 3);
	pushn(q, Q, "pb", "b", 3);
	is_int(pop1(q, Q, "pa", G, 3, &b), 0, "req: pop pa");
	snprintf(la, sizeof(la), "%s", b ? b->lease_id : "");
	queen_batch_free(b);
	is_int(pop1(q, Q, "pb", G, 3, &b), 0, "req: pop pb");
	snprintf(lb, sizeof(lb), "%s", b ? b->lease_id : "");
	queen_batch_free(b);
	step_init(&s, "a1", NULL, "receipt-1");
	s.ack[0].partition = "pa";
	s.leases[0] = lb;
	s.t.nleases = 1;
	is_int(run(q, &s.t, &r), 0, "req: verdict reached (wrong lease)");
	is_int(r->reason, QUEEN_TXN_REJECTED_ACK, "req: an ack without a "
	    "leaseId takes the one required lease, and pb's lease does not "
	    "cover pa");
	queen_txn_result_free(r);
	is_int(committed(q, Q, G, "pa"), 0, "req: pa cursor unchanged");
	is_int(queen_lease_get(q, la, &li), 0, "req: pa lease still held");
	is_int(tail_of(q, OUT, NULL), -1, "req: no receipt");
	is_int(kv_str(q, NS, "order-1", buf, sizeof(buf)), -ENOENT,
	    "req: no KV write");
	s.leases[0] = la;
	is_int(run(q, &s.t, &r), 0, "req: verdict reached (right lease)");
	is_int(r->reason, QUEEN_TXN_OK, "req: under pa's lease it commits");
	queen_txn_result_free(r);
	is_int(committed(q, Q, G, "pa"), 1, "req: pa cursor moved to 1");
	is_int(committed(q, Q, G, "pb"), 0, "req: pb cursor untouched");
	fix_close(&f);

	/* two required leases: each held, the refused one named in the
	 * request's order (their cursors are locked in their own order) */
	q = fix_open(&f, "txn-req-two");
	pushn(q, Q, "pa", "a", 3);
	pushn(q, Q, "pb", "b", 3);
	is_int(pop1(q, Q, "pb", G, 3, &b), 0, "req two: pop pb");
	snprintf(lb, sizeof(lb), "%s", b ? b->lease_id : "");
	queen_batch_free(b);
	is_int(pop1(q, Q, "pa", G, 3, &b), 0, "req two: pop pa");
	snprintf(la, sizeof(la), "%s", b ? b->lease_id : "");
	queen_batch_free(b);
	step_init(&s, "a1", la, "receipt-1");
	s.ack[0].partition = "pa";
	s.leases[0] = la;
	s.leases[1] = "0190aaaa-0000-7000-8000-000000000000";
	s.t.nleases = 2;
	is_int(run(q, &s.t, &r), 0,
	    "req two: verdict reached (second unknown)");
	is_int(r->reason, QUEEN_TXN_REJECTED_ACK,
	    "req two: an unknown second lease is rejected_ack");
	is_int(r->failed_index, 1, "req two: failedIndex names the second");
	queen_txn_result_free(r);
	s.leases[0] = s.leases[1];
	s.leases[1] = lb;
	is_int(run(q, &s.t, &r), 0, "req two: verdict reached (first unknown)");
	is_int(r->failed_index, 0, "req two: failedIndex names the first");
	queen_txn_result_free(r);
	is_int(committed(q, Q, G, "pa"), 0, "req two: pa cursor unchanged");
	s.leases[0] = lb;
	s.leases[1] = la;
	is_int(run(q, &s.t, &r), 0, "req two: verdict reached (both held)");
	is_int(r->reason, QUEEN_TXN_OK, "req two: under both it commits");
	queen_txn_result_free(r);
	is_int(committed(q, Q, G, "pa"), 1, "req two: pa cursor moved to 1");
	is_int(queen_lease_get(q, lb, &li), 0, "req two: pb's lease held");
	is_int(tail_of(q, OUT, NULL), 1, "req two: the receipt pushed once");
	fix_close(&f);

	/* an expired required lease refuses the call, even with no acks */
	q = setup(&f, "txn-req-expired", false);
	take(q, 3, la);
	f.now += LEASE_MS + 1;
	snap(q, NULL, &w);
	step_init(&s, "m1", NULL, "receipt-1");
	s.t.nacks = 0;
	s.leases[0] = la;
	s.t.nleases = 1;
	is_int(run(q, &s.t, &r), 0, "req: verdict reached (expired)");
	is_int(r->reason, QUEEN_TXN_REJECTED_ACK,
	    "req: an expired required lease is rejected_ack");
	is_int(r->failed_index, 0, "req: failedIndex names the lease");
	queen_txn_result_free(r);
	nothing_written(q, &w, NULL, "req expired");
	s.leases[0] = "0190aaaa-0000-7000-8000-000000000000";
	is_int(run(q, &s.t, &r), 0, "req: verdict reached (unknown)");
	is_int(r->reason, QUEEN_TXN_REJECTED_ACK,
	    "req: an unknown required lease is rejected_ack");
	queen_txn_result_free(r);
	nothing_written(q, &w, NULL, "req unknown");
	fix_close(&f);

	/* no lease at all: unchecked, and the cursor still moves */
	q = setup(&f, "txn-req-none", false);
	take(q, 3, la);
	step_init(&s, "m2", NULL, "receipt-1");
	is_int(run(q, &s.t, &r), 0, "req: verdict reached (no lease)");
	is_int(r->reason, QUEEN_TXN_OK, "req: an ack with no lease commits");
	queen_txn_result_free(r);
	is_int(committed(q, Q, G, NULL), 2, "req: cursor moved to 2");
	/* and with the lease expired and nobody holding the row */
	f.now += LEASE_MS + 1;
	step_init(&s, "m3", NULL, "receipt-2");
	kvop(&s.kv[0], QUEEN_KV_PUT, NS, "order-2", "x");
	timerop(&s.tm[0], QUEEN_TIMER_SCHEDULE, TQ, "order-2", SEC, NULL);
	is_int(run(q, &s.t, &r), 0, "req: verdict reached (no lease, "
	    "expired)");
	is_int(r->reason, QUEEN_TXN_OK, "req: a lease-less ack after expiry "
	    "commits");
	queen_txn_result_free(r);
	is_int(committed(q, Q, G, NULL), 3, "req: cursor moved to 3");
	fix_close(&f);
}

/* ---- KV reads are answered after apply ---- */

static void
test_kv_reads(void)
{
	struct fix f;
	struct queen *q = fix_open(&f, "txn-kv");
	struct queen_txn_result *r = NULL;
	struct queen_kv_op ops[6];
	struct queen_txn t;
	struct queen_kv_value *v = NULL;
	static const char *many[3] = { "k", "other", "nope" };
	char buf[64];
	int rc;

	queen_kv_put(q, NS, "k", "v1", 2, 0, false);
	kvop(&ops[0], QUEEN_KV_PUT, NS, "k", "v2");
	kvop(&ops[1], QUEEN_KV_GET, NS, "k", NULL);
	kvop(&ops[2], QUEEN_KV_PUT, NS, "other", "o");
	kvop(&ops[3], QUEEN_KV_GET_MANY, NS, NULL, NULL);
	ops[3].keys = many;
	ops[3].nkeys = 3;
	kvop(&ops[4], QUEEN_KV_INCR, NS, "ctr", NULL);
	ops[4].by = 5;
	kvop(&ops[5], QUEEN_KV_GET, NS, "ctr", NULL);
	memset(&t, 0, sizeof(t));
	t.kv = ops;
	t.nkv = 6;
	is_int(run(q, &t, &r), 0, "kv: verdict reached");
	is_int(r->reason, QUEEN_TXN_OK, "kv: commits");
	ok(r->kv[1].found, "kv: get after put finds the key");
	is_int(r->kv[1].version, 2, "kv: get answers the new version");
	snprintf(buf, sizeof(buf), "%.*s", (int)r->kv[1].len,
	    (const char *)r->kv[1].value);
	is_str(buf, "v2", "kv: get answers the value written in the same "
	    "transaction");
	is_int((int64_t)r->nkv_many, 3, "kv: three getMany entries");
	is_int((int64_t)r->kv[3].count, 3, "kv: getMany count 3");
	if (r->nkv_many == 3) {
		const struct queen_kv_result *m = &r->kv_many[r->kv[3].first];

		ok(m[0].found, "kv: getMany finds k");
		snprintf(buf, sizeof(buf), "%.*s", (int)m[0].len,
		    (const char *)m[0].value);
		is_str(buf, "v2", "kv: getMany k is v2");
		ok(m[1].found, "kv: getMany finds other");
		snprintf(buf, sizeof(buf), "%.*s", (int)m[1].len,
		    (const char *)m[1].value);
		is_str(buf, "o", "kv: getMany other is o (written in the txn)");
		ok(!m[2].found, "kv: getMany nope is absent");
	}
	is_int(r->kv[4].number, 5, "kv: incr on an absent key starts from "
	    "0 (answers 5)");
	ok(r->kv[5].found, "kv: get of the incremented key finds it");
	snprintf(buf, sizeof(buf), "%.*s", (int)r->kv[5].len,
	    (const char *)r->kv[5].value);
	is_str(buf, "5", "kv: the incremented value reads 5");
	queen_txn_result_free(r);
	is_int(kv_str(q, NS, "ctr", buf, sizeof(buf)), 1, "kv: ctr version 1");
	is_str(buf, "5", "kv: ctr stored as 5");
	is_int(kv_str(q, NS, "k", buf, sizeof(buf)), 2, "kv: k version 2");
	is_str(buf, "v2", "kv: k stored as v2");

	/* incr again, by a negative step */
	kvop(&ops[0], QUEEN_KV_INCR, NS, "ctr", NULL);
	ops[0].by = -2;
	kvop(&ops[1], QUEEN_KV_DELETE, NS, "other", NULL);
	kvop(&ops[2], QUEEN_KV_GET, NS, "other", NULL);
	t.nkv = 3;
	is_int(run(q, &t, &r), 0, "kv: second verdict reached");
	is_int(r->reason, QUEEN_TXN_OK, "kv: second commits");
	is_int(r->kv[0].number, 3, "kv: incr by -2 answers 3");
	ok(!r->kv[2].found, "kv: get after delete in one txn finds nothing");
	queen_txn_result_free(r);
	is_int(kv_str(q, NS, "ctr", buf, sizeof(buf)), 2, "kv: ctr version 2");
	is_str(buf, "3", "kv: ctr stored as 3");
	is_int(kv_str(q, NS, "other", buf, sizeof(buf)), -ENOENT,
	    "kv: other deleted");

	/* a TTL inside a transaction expires with the clock */
	kvop(&ops[0], QUEEN_KV_PUT, NS, "tmp", "soon gone");
	ops[0].ttl_ms = 10 * SEC;
	t.nkv = 1;
	is_int(run(q, &t, &r), 0, "kv: ttl verdict reached");
	is_int(r->reason, QUEEN_TXN_OK, "kv: ttl put commits");
	queen_txn_result_free(r);
	rc = queen_kv_get(q, NS, "tmp", &v);
	is_int(rc, 0, "kv: tmp readable at once");
	if (rc == 0)
		is_int(v->expires_at, f.now + 10 * SEC, "kv: tmp expires in "
		    "10 s");
	free(v);
	f.now += 10 * SEC - 1;
	is_int(kv_str(q, NS, "tmp", buf, sizeof(buf)), 1,
	    "kv: tmp still there 1 ms before expiry");
	f.now += 1;
	is_int(kv_str(q, NS, "tmp", buf, sizeof(buf)), -ENOENT,
	    "kv: tmp gone at its expiry");
	fix_close(&f);
}

/* ---- timers through a transaction ---- */

static void
test_timers(void)
{
	struct fix f;
	struct queen *q = fix_open(&f, "txn-timers");
	struct queen_txn_result *r = NULL;
	struct queen_timer_op tm[2];
	struct queen_timer_info *ti = NULL;
	struct queen_txn t;
	struct world w;
	char buf[64];
	int64_t t0 = f.now;

	is_int(queen_timer_schedule(q, TQ, "old", NULL, t0 + 30 * SEC, "o", 1),
	    0, "timers: an existing timer 'old'");
	timerop(&tm[0], QUEEN_TIMER_SCHEDULE, TQ, "t1", 60 * SEC, "ping");
	tm[0].partition = "p";
	timerop(&tm[1], QUEEN_TIMER_CANCEL, TQ, "old", 0, NULL);
	memset(&t, 0, sizeof(t));
	t.timers = tm;
	t.ntimers = 2;
	is_int(run(q, &t, &r), 0, "timers: verdict reached");
	is_int(r->reason, QUEEN_TXN_OK, "timers: commits");
	queen_txn_result_free(r);
	is_int(queen_timer_get(q, TQ, "old", false, &ti), -ENOENT,
	    "timers: 'old' cancelled");
	free(ti);
	ti = NULL;
	is_int(queen_timer_get(q, TQ, "t1", true, &ti), 0,
	    "timers: 't1' scheduled");
	if (ti) {
		is_int(ti->due_at, t0 + 60 * SEC, "timers: due in 60 s");
		is_str(ti->partition, "p", "timers: into partition p");
	}
	free(ti);
	snap(q, NULL, &w);
	is_int(w.timers, 1, "timers: one timer listed");

	f.now = t0 + 30 * SEC;
	maintain_all(q);
	is_int(tail_of(q, TQ, "default"), -1, "timers: the cancelled one "
	    "did not fire");
	is_int(tail_of(q, TQ, "p"), -1, "timers: t1 not fired before due");
	f.now = t0 + 60 * SEC;
	maintain_all(q);
	is_int(tail_of(q, TQ, "p"), 1, "timers: t1 fired once at its due "
	    "time");
	is_int(msg_at(q, TQ, "p", 1, buf, sizeof(buf), NULL, 0), 0,
	    "timers: the fired message is readable");
	is_str(buf, "ping", "timers: with the timer's payload");
	snap(q, NULL, &w);
	is_int(w.timers, 0, "timers: t1 is gone after firing");
	f.now += 3600 * SEC;
	maintain_all(q);
	is_int(tail_of(q, TQ, "p"), 1, "timers: it never fires twice");

	/* an absolute dueAt */
	timerop(&tm[0], QUEEN_TIMER_SCHEDULE, TQ, "t2", 0, "abs");
	tm[0].due_at = f.now + 5 * SEC;
	t.ntimers = 1;
	is_int(run(q, &t, &r), 0, "timers: dueAt verdict reached");
	is_int(r->reason, QUEEN_TXN_OK, "timers: dueAt commits");
	queen_txn_result_free(r);
	f.now += 5 * SEC;
	maintain_all(q);
	is_int(tail_of(q, TQ, "default"), 1, "timers: t2 fired at dueAt");
	fix_close(&f);
}

int
main(void)
{
	plan_lazy();
	test_rejected_ack_wrong_lease();
	test_rejected_ack_index();
	test_duplicate();
	test_kv_exists();
	test_kv_version();
	test_bad_request();
	test_too_large();
	test_hostile_numbers();
	test_order();
	test_worker_a_b();
	test_once_gate();
	test_retry();
	test_required_leases();
	test_kv_reads();
	test_timers();
	return done_testing();
}
