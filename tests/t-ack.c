/*
 * t-ack.c - ack resolution as in docs/design.md#offset-commit (an ack
 * commits an offset): the ack window, implicit completion, status normalisation, the
 * clamp rule, the "reported, not swallowed" table, leases and the retry
 * budget.  Each case runs on a fresh store.
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "qtest.h"
#include "tap.h"

#define Q "orders"
#define G "billing"

/* design.md#offset-commit: a pop delivers 100..109 and only 109 is acked completed. */
static void
test_offset_commit_example(void)
{
	struct fix f;
	struct queen *q = fix_open(&f, "ack-example");
	struct queen_batch *b = NULL;
	struct queen_lease_info li;
	struct queen_ack_result r;
	int rc;

	is_int(pushn(q, Q, NULL, "m", 109), 0, "example: push 109 messages");
	is_int(queen_group_ensure(q, Q, G), 0, "example: group ensured");
	is_int(queen_seek(q, Q, G, NULL, QUEEN_POS_OFFSET, 100), 0,
	    "example: seek to offset 100");
	rc = pop1(q, Q, NULL, G, 10, &b);
	is_int(rc, 0, "example: pop batch 10");
	if (rc == 0) {
		is_int((int64_t)b->n, 10, "example: pop delivers ten messages");
		is_int(b->msgs[0].offset, 100, "example: first offset is 100");
		is_int(b->msgs[b->n - 1].offset, 109,
		    "example: last offset is 109");
		is_str(b->msgs[b->n - 1].txid, "m109",
		    "example: offset 109 is txid m109");
		rc = ack1(q, Q, NULL, G, "m109", "completed", b->lease_id, &r);
		is_int(rc, 0, "example: ack call ran");
		ok(r.success, "example: ack of 109 succeeds");
		ok(!r.noop, "example: ack of 109 is not a noop");
		ok(r.lease_released, "example: acking the span end releases "
		    "the lease");
		is_int(committed(q, Q, G, NULL), 109,
		    "example: cursor lands on 109 (100..108 implicitly "
		    "completed)");
		is_int(queen_lease_get(q, b->lease_id, &li), -ESTALE,
		    "example: the batch's lease is finished");
		queen_batch_free(b);
		is_int(pop1(q, Q, NULL, G, 10, &b), -EAGAIN,
		    "example: nothing of 100..109 redelivers");
		queen_batch_free(b);
	}
	fix_close(&f);
}

/* design.md#clamp: m1 completed, m2 failed, m3 completed, m4 completed. */
static void
test_clamp_example(void)
{
	struct fix f;
	struct queen *q = fix_open(&f, "ack-clamp");
	struct queen_batch *b = NULL;
	struct queen_ack_item it[4];
	struct queen_ack_result r[4];
	static const char *const st[4] = { "completed", "failed",
		"completed", "completed" };
	int64_t n = 0, retry = -1;
	int i, rc;

	pushn(q, Q, NULL, "m", 4);
	rc = pop1(q, Q, NULL, NULL, 4, &b);
	is_int(rc, 0, "clamp: pop m1..m4");
	if (rc != 0) {
		fix_close(&f);
		return;
	}
	is_int((int64_t)b->n, 4, "clamp: four messages leased");
	for (i = 0; i < 4; i++)
		ack_item(&it[i], Q, NULL, NULL, b->msgs[i].txid, st[i],
		    b->lease_id);
	memset(r, 0, sizeof(r));
	is_int(queen_ack(q, it, 4, r), 0, "clamp: batch ack ran");
	ok(r[0].success, "clamp: m1 completed succeeds");
	ok(r[1].success, "clamp: m2 failed is honoured");
	ok(r[1].lease_released, "clamp: m2 failed releases the lease");
	ok(!r[1].dlq, "clamp: m2 failed with budget left is not "
	    "dead-lettered");
	is_int(committed(q, Q, NULL, NULL), 1,
	    "clamp: commits past m1 only");
	is_int(pop_first(q, Q, NULL, NULL, 4, &n, &retry), 2,
	    "clamp: m2 is the failure head and redelivers first");
	is_int(n, 3, "clamp: m2, m3 and m4 all redeliver");
	is_int(retry, 1, "clamp: the failure charged one retry unit");
	is_int(dlq_count(q, Q, NULL, NULL), 0, "clamp: nothing dead-lettered");
	queen_batch_free(b);
	fix_close(&f);
}

/* Implicit completion: acking N inside the span completes everything < N. */
static void
test_implicit_completion(void)
{
	struct fix f;
	struct queen *q = fix_open(&f, "ack-implicit");
	struct queen_batch *b = NULL;
	struct queen_ack_result r;

	pushn(q, Q, NULL, "m", 5);
	if (pop1(q, Q, NULL, NULL, 5, &b) != 0) {
		ok(0, "implicit: pop");
		fix_close(&f);
		return;
	}
	ack1(q, Q, NULL, NULL, "m3", NULL, b->lease_id, &r);
	ok(r.success, "implicit: ack of m3 with NULL status succeeds");
	is_int(committed(q, Q, NULL, NULL), 3,
	    "implicit: cursor at 3, m1 and m2 never mentioned");
	ack1(q, Q, NULL, NULL, "m5", "completed", b->lease_id, &r);
	ok(r.success, "implicit: ack of the span end succeeds");
	is_int(committed(q, Q, NULL, NULL), 5, "implicit: cursor at 5");
	is_int(pop_first(q, Q, NULL, NULL, 5, NULL, NULL), -EAGAIN,
	    "implicit: nothing redelivers");
	queen_batch_free(b);
	fix_close(&f);
}

/* Status normalisation: completed/success/acked/ok/NULL; anything else. */
static void
test_status_normalisation(void)
{
	static const char *const done[] = { "completed", "success", "acked",
		"ok", NULL };
	struct queen_ack_result r;
	struct queen_batch *b;
	struct fix f;
	struct queen *q;
	int64_t retry = -1;
	size_t i;

	for (i = 0; i < sizeof(done) / sizeof(done[0]); i++) {
		q = fix_open(&f, "ack-norm");
		pushn(q, Q, NULL, "m", 2);
		if (pop1(q, Q, NULL, NULL, 1, &b) == 0) {
			ack1(q, Q, NULL, NULL, "m1", done[i], b->lease_id,
			    &r);
			ok(r.success && !r.noop, "status '%s' succeeds",
			    done[i] ? done[i] : "(absent)");
			is_int(committed(q, Q, NULL, NULL), 1,
			    "status '%s' means completed: cursor at 1",
			    done[i] ? done[i] : "(absent)");
			queen_batch_free(b);
		} else {
			ok(0, "status '%s': pop", done[i] ? done[i] : "-");
		}
		fix_close(&f);
	}

	q = fix_open(&f, "ack-norm-typo");
	pushn(q, Q, NULL, "m", 2);
	if (pop1(q, Q, NULL, NULL, 1, &b) == 0) {
		ack1(q, Q, NULL, NULL, "m1", "complete", b->lease_id, &r);
		ok(r.success, "status 'complete' (a typo) is accepted");
		ok(r.lease_released, "typo status releases the lease");
		is_int(committed(q, Q, NULL, NULL), 0,
		    "typo status is failed: cursor stays at 0");
		is_int(pop_first(q, Q, NULL, NULL, 1, NULL, &retry), 1,
		    "typo status: m1 redelivers");
		is_int(retry, 1, "typo status is failed: charged one unit");
		queen_batch_free(b);
	} else {
		ok(0, "typo: pop");
	}
	fix_close(&f);

	q = fix_open(&f, "ack-norm-upper");
	pushn(q, Q, NULL, "m", 2);
	if (pop1(q, Q, NULL, NULL, 1, &b) == 0) {
		ack1(q, Q, NULL, NULL, "m1", "", b->lease_id, &r);
		is_int(committed(q, Q, NULL, NULL), 0,
		    "empty status string is failed: cursor stays at 0");
		is_int(pop_first(q, Q, NULL, NULL, 1, NULL, &retry), 1,
		    "empty status string: m1 redelivers");
		is_int(retry, 1, "empty status string charged one unit");
		queen_batch_free(b);
	} else {
		ok(0, "empty status: pop");
	}
	fix_close(&f);
}

/* The clamp rule: the lowest explicit signal clamps the cursor below it. */
static void
test_lowest_signal_clamps(void)
{
	struct fix f;
	struct queen *q = fix_open(&f, "ack-lowest");
	struct queen_batch *b = NULL;
	struct queen_ack_item it[4];
	struct queen_ack_result r[4];
	int64_t retry = -1, n = 0;

	pushn(q, Q, NULL, "m", 6);
	if (pop1(q, Q, NULL, NULL, 6, &b) != 0) {
		ok(0, "lowest: pop");
		fix_close(&f);
		return;
	}
	ack_item(&it[0], Q, NULL, NULL, "m6", "completed", b->lease_id);
	ack_item(&it[1], Q, NULL, NULL, "m5", "retry", b->lease_id);
	ack_item(&it[2], Q, NULL, NULL, "m3", "completed", b->lease_id);
	ack_item(&it[3], Q, NULL, NULL, "m4", "retry", b->lease_id);
	is_int(queen_ack(q, it, 4, r), 0, "lowest: ack ran");
	is_int(committed(q, Q, NULL, NULL), 3,
	    "lowest: retry at 4 is the head; cursor is m3 (m1, m2 silent, "
	    "implicitly done)");
	is_int(pop_first(q, Q, NULL, NULL, 6, &n, &retry), 4,
	    "lowest: redelivery starts at the lowest signal");
	is_int(n, 3, "lowest: m4, m5, m6 redeliver (m6's completed "
	    "does not survive)");
	is_int(retry, 0, "lowest: retry charges nothing");
	queen_batch_free(b);
	fix_close(&f);
}

/* Two signals resolving to one offset: dlq beats failed beats retry. */
static void
precedence_case(const char *s1, const char *s2, const char *name,
    int want_dlq, int64_t want_retry)
{
	struct fix f;
	struct queen *q = fix_open(&f, "ack-prec");
	struct queen_batch *b = NULL;
	struct queen_ack_item it[3];
	struct queen_ack_result r[3];
	int64_t retry = -1, first;

	pushn(q, Q, NULL, "m", 3);
	if (pop1(q, Q, NULL, NULL, 3, &b) != 0) {
		ok(0, "%s: pop", name);
		fix_close(&f);
		return;
	}
	ack_item(&it[0], Q, NULL, NULL, "m1", "completed", b->lease_id);
	ack_item(&it[1], Q, NULL, NULL, "m2", s1, b->lease_id);
	ack_item(&it[2], Q, NULL, NULL, "m2", s2, b->lease_id);
	is_int(queen_ack(q, it, 3, r), 0, "%s: ack ran", name);
	is_int(dlq_count(q, Q, NULL, NULL), want_dlq,
	    "%s: dead letters", name);
	is_int(committed(q, Q, NULL, NULL), want_dlq ? 2 : 1,
	    "%s: cursor", name);
	first = pop_first(q, Q, NULL, NULL, 3, NULL, &retry);
	is_int(first, want_dlq ? 3 : 2, "%s: redelivery starts", name);
	is_int(retry, want_retry, "%s: retry budget used", name);
	queen_batch_free(b);
	fix_close(&f);
}

/*
 * A lone signal above a silent gap: design.md#clamp reads silence as
 * done and a signal as "clamp below me"; whether the gap commits is
 * reported, not asserted: docs/engine.md, "Decisions where the contract
 * is silent", says which way the engine reads it.
 */
static void
test_gap_below_signal(void)
{
	struct fix f;
	struct queen *q = fix_open(&f, "ack-gap");
	struct queen_batch *b = NULL;
	struct queen_ack_result r;

	pushn(q, Q, NULL, "m", 3);
	if (pop1(q, Q, NULL, NULL, 3, &b) == 0) {
		ack1(q, Q, NULL, NULL, "m2", "retry", b->lease_id, &r);
		ok(r.success && r.lease_released,
		    "gap: a lone retry on m2 is accepted and releases");
		diag("lone retry at 2 over a silent m1: cursor %lld "
		    "(1 = gap committed, 0 = not)",
		    (long long)committed(q, Q, NULL, NULL));
		ok(committed(q, Q, NULL, NULL) <= 1,
		    "gap: the cursor never passes the signal");
		queen_batch_free(b);
	}
	fix_close(&f);
}

static void
test_precedence(void)
{
	precedence_case("retry", "failed", "failed beats retry", 0, 1);
	precedence_case("failed", "retry", "failed beats retry (reversed)",
	    0, 1);
	precedence_case("failed", "dlq", "dlq beats failed", 1, 0);
	precedence_case("dlq", "failed", "dlq beats failed (reversed)", 1, 0);
	precedence_case("retry", "dlq", "dlq beats retry", 1, 0);
}

/* The "reported, not swallowed" table, row by row. */
static void
test_reported_table(void)
{
	static const char *const sig[] = { "failed", "retry", "dlq" };
	struct fix f;
	struct queen *q = fix_open(&f, "ack-table");
	struct queen_batch *b = NULL;
	struct queen_ack_result r;
	struct queen_partition_info pi;
	struct queen_ack_item it;
	size_t i;

	pushn(q, Q, NULL, "m", 5);
	if (pop1(q, Q, NULL, NULL, 2, &b) != 0) {
		ok(0, "table: pop");
		fix_close(&f);
		return;
	}
	ack1(q, Q, NULL, NULL, "m2", "completed", b->lease_id, &r);
	is_int(committed(q, Q, NULL, NULL), 2, "table: cursor at 2");
	queen_batch_free(b);

	/* Row 1: completed at or below the cursor. */
	ack1(q, Q, NULL, NULL, "m1", "completed", NULL, &r);
	ok(r.success, "row 1: completed below cursor: success true");
	ok(r.noop, "row 1: completed below cursor: noop true");
	is_int(r.err, 0, "row 1: no errno");
	is_str(r.error, "", "row 1: no error text");
	ack1(q, Q, NULL, NULL, "m2", "completed", NULL, &r);
	ok(r.success && r.noop, "row 1: completed at cursor is a noop too");
	is_int(committed(q, Q, NULL, NULL), 2, "row 1: cursor unchanged");

	/* Row 2: failed / retry / dlq at or below the cursor. */
	for (i = 0; i < 3; i++) {
		ack1(q, Q, NULL, NULL, "m1", sig[i], NULL, &r);
		ok(!r.success, "row 2: %s below cursor: success false",
		    sig[i]);
		is_int(r.err, -EALREADY, "row 2: %s below cursor: -EALREADY",
		    sig[i]);
		is_str(r.error, QUEEN_E_ALREADY,
		    "row 2: %s below cursor: 'already committed' text",
		    sig[i]);
		ok(!r.dlq, "row 2: %s below cursor: not dead-lettered",
		    sig[i]);
	}
	ack1(q, Q, NULL, NULL, "m2", "failed", NULL, &r);
	is_int(r.err, -EALREADY, "row 2: failed at the cursor: -EALREADY");
	is_int(committed(q, Q, NULL, NULL), 2, "row 2: cursor unchanged");
	is_int(dlq_count(q, Q, NULL, NULL), 0,
	    "row 2: dlq at/below cursor wrote no dead letter");

	/* Row 3: a txid that resolves nowhere. */
	ack1(q, Q, NULL, NULL, "never-pushed", "completed", NULL, &r);
	ok(!r.success, "row 3: never pushed: success false");
	is_int(r.err, -ENOENT, "row 3: never pushed: -ENOENT");
	is_str(r.error, QUEEN_E_UNRESOLVABLE,
	    "row 3: never pushed: 'unresolvable' text");
	ack1(q, Q, NULL, NULL, "never-pushed", "failed", NULL, &r);
	ok(!r.success && r.err == -ENOENT,
	    "row 3: a failed for an unresolvable txid is reported, not "
	    "swallowed");
	is_int(committed(q, Q, NULL, NULL), 2, "row 3: cursor unchanged");
	is_int(pop_first(q, Q, NULL, NULL, 1, NULL, NULL), 3,
	    "row 3: no retry charged, delivery continues at 3");

	/* The partitionId form resolves the same partition. */
	if (queen_partition_get(q, Q, QUEEN_DEFAULT_PARTITION, &pi) == 0) {
		memset(&it, 0, sizeof(it));
		it.txid = "m1";
		it.partition_uuid = pi.uuid;
		it.status = "completed";
		memset(&r, 0, sizeof(r));
		queen_ack(q, &it, 1, &r);
		ok(r.success && r.noop,
		    "partitionId form: completed below cursor is a noop");
		it.txid = "nope";
		queen_ack(q, &it, 1, &r);
		is_int(r.err, -ENOENT, "partitionId form: unresolvable");
		it.txid = "m1";
		it.partition_uuid = "00000000-0000-0000-0000-000000000000";
		queen_ack(q, &it, 1, &r);
		ok(!r.success, "unknown partitionId: success false");
	} else {
		ok(0, "partition_get");
	}
	fix_close(&f);
}

/* One call acking every message of the span (the fast-path shape). */
static void
test_full_cover(void)
{
	struct fix f;
	struct queen *q = fix_open(&f, "ack-cover");
	struct queen_batch *b = NULL;
	struct queen_ack_item it[4];
	struct queen_ack_result r[4];
	size_t i;

	pushn(q, Q, NULL, "m", 5);
	if (pop1(q, Q, NULL, NULL, 4, &b) != 0) {
		ok(0, "cover: pop");
		fix_close(&f);
		return;
	}
	for (i = 0; i < 4; i++)
		ack_item(&it[i], Q, NULL, NULL, b->msgs[i].txid, "completed",
		    b->lease_id);
	queen_ack(q, it, 4, r);
	ok(r[0].success && r[1].success && r[2].success && r[3].success,
	    "cover: every item succeeds");
	ok(r[3].lease_released, "cover: the lease is released");
	is_int(committed(q, Q, NULL, NULL), 4, "cover: cursor at 4");
	is_int(pop_first(q, Q, NULL, NULL, 4, NULL, NULL), 5,
	    "cover: next pop at 5");
	queen_batch_free(b);
	fix_close(&f);
}

/* In one call, a stale-lease item and a live-lease item are judged apart. */
static void
test_mixed_leases(void)
{
	struct fix f;
	struct queen *q = fix_open(&f, "ack-mixed");
	struct queen_batch *b1 = NULL, *b2 = NULL;
	struct queen_ack_item it[2];
	struct queen_ack_result r[2];

	pushn(q, Q, NULL, "m", 3);
	if (pop1(q, Q, NULL, NULL, 2, &b1) != 0) {
		ok(0, "mixed: pop");
		fix_close(&f);
		return;
	}
	f.now += 301 * SEC;
	if (pop1(q, Q, NULL, NULL, 2, &b2) == 0) {
		ack_item(&it[0], Q, NULL, NULL, "m2", "completed",
		    b1->lease_id);
		ack_item(&it[1], Q, NULL, NULL, "m1", "completed",
		    b2->lease_id);
		queen_ack(q, it, 2, r);
		is_int(r[0].err, -ESTALE, "mixed: the old lease's item is "
		    "-ESTALE");
		ok(r[1].success, "mixed: the live lease's item lands");
		is_int(committed(q, Q, NULL, NULL), 1,
		    "mixed: only the live item moved the cursor");
		queen_batch_free(b2);
	} else {
		ok(0, "mixed: re-pop");
	}
	queen_batch_free(b1);
	fix_close(&f);
}

/* An ack above the leased span is unresolvable while the lease is held. */
/* The table holds while a lease is held on a later span, too. */
static void
test_table_under_lease(void)
{
	struct fix f;
	struct queen *q = fix_open(&f, "ack-table-lease");
	struct queen_batch *b = NULL;
	struct queen_ack_result r;
	struct queen_partition_info pi;
	struct queen_ack_item it;

	pushn(q, Q, NULL, "m", 5);
	ack1(q, Q, NULL, NULL, "m2", "completed", NULL, &r);
	if (pop1(q, Q, NULL, NULL, 2, &b) != 0) {
		ok(0, "table+lease: pop");
		fix_close(&f);
		return;
	}
	is_int(b->msgs[0].offset, 3, "table+lease: leased 3..4");
	ack1(q, Q, NULL, NULL, "m1", "completed", b->lease_id, &r);
	ok(r.success && r.noop,
	    "table+lease: completed below the cursor is a noop");
	ack1(q, Q, NULL, NULL, "m2", "dlq", b->lease_id, &r);
	is_int(r.err, -EALREADY,
	    "table+lease: dlq below the cursor is -EALREADY");
	is_int(dlq_count(q, Q, NULL, NULL), 0,
	    "table+lease: no dead letter written");
	ok(queen_lease_get(q, b->lease_id,
	    &(struct queen_lease_info){ 0 }) == 0,
	    "table+lease: the lease is untouched");
	queen_partition_get(q, Q, QUEEN_DEFAULT_PARTITION, &pi);
	memset(&it, 0, sizeof(it));
	it.txid = "m4";
	it.partition_uuid = pi.uuid;
	it.lease_id = b->lease_id;
	memset(&r, 0, sizeof(r));
	queen_ack(q, &it, 1, &r);
	ok(r.success && r.lease_released,
	    "table+lease: an ack by partitionId closes the span");
	is_int(committed(q, Q, NULL, NULL), 4,
	    "table+lease: cursor at 4 via partitionId");
	queen_batch_free(b);
	fix_close(&f);
}

static void
test_window_bounded_by_lease(void)
{
	struct fix f;
	struct queen *q = fix_open(&f, "ack-bounded");
	struct queen_batch *b = NULL;
	struct queen_ack_result r;

	pushn(q, Q, NULL, "m", 5);
	if (pop1(q, Q, NULL, NULL, 2, &b) != 0) {
		ok(0, "bounded: pop");
		fix_close(&f);
		return;
	}
	ack1(q, Q, NULL, NULL, "m4", "completed", b->lease_id, &r);
	ok(!r.success, "bounded: ack above the span with the lease fails");
	is_int(r.err, -ENOENT, "bounded: above the span is unresolvable");
	is_str(r.error, QUEEN_E_UNRESOLVABLE, "bounded: unresolvable text");
	ack1(q, Q, NULL, NULL, "m4", "completed", NULL, &r);
	is_int(r.err, -ENOENT, "bounded: lease-less ack above the span is "
	    "unresolvable while a lease is held");
	is_int(committed(q, Q, NULL, NULL), 0, "bounded: cursor unchanged");
	ack1(q, Q, NULL, NULL, "m2", "completed", NULL, &r);
	ok(r.success, "bounded: lease-less ack inside the span succeeds");
	is_int(committed(q, Q, NULL, NULL), 2,
	    "bounded: lease-less ack inside the span moves the cursor");
	queen_batch_free(b);
	fix_close(&f);
}

/* No lease on the row: lease-less resolution is unbounded above. */
static void
test_unbounded_without_lease(void)
{
	struct fix f;
	struct queen *q = fix_open(&f, "ack-unbounded");
	struct queen_batch *b = NULL;
	struct queen_ack_result r;

	pushn(q, Q, NULL, "m", 6);
	queen_group_ensure(q, Q, G);
	ack1(q, Q, NULL, G, "m4", "completed", NULL, &r);
	ok(r.success, "unbounded: lease-less ack of m4, never popped");
	is_int(committed(q, Q, G, NULL), 4, "unbounded: cursor at 4");
	is_int(pop_first(q, Q, NULL, G, 1, NULL, NULL), 5,
	    "unbounded: next delivery is 5");

	/* Once the lease expired, the row holds none: unbounded again. */
	if (pop1(q, Q, NULL, NULL, 1, &b) == 0) {
		f.now += 301 * SEC;
		ack1(q, Q, NULL, NULL, "m6", "completed", NULL, &r);
		ok(r.success, "unbounded: lease-less ack after expiry beyond "
		    "the old span");
		is_int(committed(q, Q, NULL, NULL), 6,
		    "unbounded: expired lease does not bound the window");
		queen_batch_free(b);
	} else {
		ok(0, "unbounded: pop");
	}
	fix_close(&f);
}

/* Stale vs absent lease id. */
static void
test_stale_vs_absent(void)
{
	struct fix f;
	struct queen *q = fix_open(&f, "ack-stale");
	struct queen_batch *b = NULL, *b2 = NULL;
	struct queen_ack_result r;
	char old[QUEEN_ID_LEN + 1];

	pushn(q, Q, NULL, "m", 4);
	if (pop1(q, Q, NULL, NULL, 2, &b) != 0) {
		ok(0, "stale: pop");
		fix_close(&f);
		return;
	}
	snprintf(old, sizeof(old), "%s", b->lease_id);
	f.now += 301 * SEC;
	ack1(q, Q, NULL, NULL, "m1", "completed", old, &r);
	ok(!r.success, "stale: expired lease id is refused");
	is_int(r.err, -ESTALE, "stale: expired lease: -ESTALE");
	is_str(r.error, QUEEN_E_LEASE, "stale: 'invalid or expired lease'");
	is_int(committed(q, Q, NULL, NULL), 0, "stale: nothing moved");

	ack1(q, Q, NULL, NULL, "m1", "failed", old, &r);
	is_int(r.err, -ESTALE, "stale: a failed with an expired lease: "
	    "-ESTALE");
	is_int(pop_first(q, Q, NULL, NULL, 1, NULL, NULL), 1,
	    "stale: refused failed charged nothing (pop sees m1)");
	/* pop_first leased m1 again under a new lease. */
	ack1(q, Q, NULL, NULL, "m1", "completed", old, &r);
	is_int(r.err, -ESTALE, "stale: lease now held by another worker: "
	    "-ESTALE");
	is_int(committed(q, Q, NULL, NULL), 0,
	    "stale: other worker's lease: nothing moved");

	ack1(q, Q, NULL, NULL, "m1", "completed", NULL, &r);
	ok(r.success, "absent: a NULL lease id skips the check");
	is_int(committed(q, Q, NULL, NULL), 1, "absent: cursor moved to 1");
	queen_batch_free(b);

	/* A lease released by a retry is stale too. */
	if (pop1(q, Q, NULL, G, 2, &b2) == 0) {
		snprintf(old, sizeof(old), "%s", b2->lease_id);
		ack1(q, Q, NULL, G, "m1", "retry", old, &r);
		ok(r.success && r.lease_released, "stale: retry released");
		ack1(q, Q, NULL, G, "m1", "completed", old, &r);
		is_int(r.err, -ESTALE, "stale: released lease: -ESTALE");
		is_int(committed(q, Q, G, NULL), 0,
		    "stale: released lease moved nothing");
		queen_batch_free(b2);
	} else {
		ok(0, "stale: group pop");
	}
	fix_close(&f);
}

/* Retry budget with retry_limit 2. */
static void
test_failed_budget(void)
{
	struct fix f;
	struct queen *q = fix_open(&f, "ack-budget");
	struct queen_batch *b = NULL;
	struct queen_ack_result r;
	struct queen_ack_item it;
	struct dlq_find d;
	int64_t retry = -1;
	int round;

	pushn(q, Q, NULL, "m", 3);
	is_int(cfg(q, Q, NULL, "retry_limit", "2"), 0, "budget: retry_limit 2");
	for (round = 0; round < 3; round++) {
		if (pop1(q, Q, NULL, NULL, 1, &b) != 0) {
			ok(0, "budget: pop round %d", round);
			break;
		}
		is_int(b->msgs[0].offset, 1, "budget: round %d delivers m1",
		    round + 1);
		is_int(b->retry_count, round, "budget: round %d retry_count",
		    round + 1);
		ack_item(&it, Q, NULL, NULL, "m1", "failed", b->lease_id);
		it.error = "boom";
		memset(&r, 0, sizeof(r));
		queen_ack(q, &it, 1, &r);
		ok(r.success, "budget: failed #%d accepted", round + 1);
		ok(r.lease_released, "budget: failed #%d releases the lease",
		    round + 1);
		if (round < 2) {
			ok(!r.dlq, "budget: failed #%d charges, no dlq",
			    round + 1);
			is_int(committed(q, Q, NULL, NULL), 0,
			    "budget: failed #%d: cursor stays", round + 1);
		} else {
			ok(r.dlq, "budget: failed #3 dead-letters (budget "
			    "exhausted)");
			is_int(committed(q, Q, NULL, NULL), 1,
			    "budget: cursor moves past the dead letter");
		}
		queen_batch_free(b);
		b = NULL;
	}
	is_int(dlq_count(q, Q, NULL, &d), 1, "budget: one dead letter");
	is_str(d.txid, "m1", "budget: dead letter is m1");
	is_int(d.offset, 1, "budget: dead letter offset 1");
	is_str(d.error, "boom", "budget: dead letter keeps the error text");
	is_int(d.retry_count, 2, "budget: dead letter retry_count 2");
	is_str(d.group, QUEEN_QUEUE_MODE, "budget: dead letter group");
	is_str(d.payload, "m1", "budget: dead letter keeps the payload");
	is_int(pop_first(q, Q, NULL, NULL, 1, NULL, &retry), 2,
	    "budget: m2 delivers next");
	is_int(retry, 0, "budget: budget reset to 0 after dead-lettering");
	fix_close(&f);

	/* dlq = off: an exhausted message is dropped. */
	q = fix_open(&f, "ack-budget-off");
	pushn(q, Q, NULL, "m", 2);
	cfg(q, Q, NULL, "retry_limit", "1");
	is_int(cfg(q, Q, NULL, "dlq", "off"), 0, "dlq off: set");
	for (round = 0; round < 2; round++) {
		if (pop1(q, Q, NULL, NULL, 1, &b) != 0)
			break;
		ack1(q, Q, NULL, NULL, "m1", "failed", b->lease_id, &r);
		queen_batch_free(b);
		b = NULL;
	}
	is_int(round, 2, "dlq off: two rounds popped");
	is_int(dlq_count(q, Q, NULL, NULL), 0, "dlq off: nothing dead-lettered");
	is_int(committed(q, Q, NULL, NULL), 1, "dlq off: cursor past m1 "
	    "(dropped)");
	is_int(pop_first(q, Q, NULL, NULL, 1, NULL, &retry), 2,
	    "dlq off: m2 delivers next");
	is_int(retry, 0, "dlq off: budget reset");
	fix_close(&f);
}

/* retry_limit 0: the first failure dead-letters. */
static void
test_zero_budget(void)
{
	struct fix f;
	struct queen *q = fix_open(&f, "ack-zero");
	struct queen_batch *b = NULL;
	struct queen_ack_result r;

	pushn(q, Q, NULL, "m", 2);
	is_int(cfg(q, Q, NULL, "retry_limit", "0"), 0, "zero: retry_limit 0");
	if (pop1(q, Q, NULL, NULL, 1, &b) == 0) {
		ack1(q, Q, NULL, NULL, "m1", "failed", b->lease_id, &r);
		ok(r.success && r.dlq, "zero: first failed dead-letters");
		is_int(committed(q, Q, NULL, NULL), 1, "zero: cursor past m1");
		is_int(dlq_count(q, Q, NULL, NULL), 1, "zero: one dead letter");
		queen_batch_free(b);
	} else {
		ok(0, "zero: pop");
	}
	fix_close(&f);
}

/* The budget resets whenever the cursor advances. */
static void
test_budget_resets_on_advance(void)
{
	struct fix f;
	struct queen *q = fix_open(&f, "ack-reset");
	struct queen_batch *b = NULL;
	struct queen_ack_result r;
	int64_t retry = -1;

	struct queen_ack_item it[2];
	struct queen_ack_result rr[2];

	pushn(q, Q, NULL, "m", 3);
	if (pop1(q, Q, NULL, NULL, 2, &b) == 0) {
		ack_item(&it[0], Q, NULL, NULL, "m1", "completed",
		    b->lease_id);
		ack_item(&it[1], Q, NULL, NULL, "m2", "failed", b->lease_id);
		queen_ack(q, it, 2, rr);
		is_int(committed(q, Q, NULL, NULL), 1,
		    "reset: m1 completed + m2 failed commits m1");
		queen_batch_free(b);
	}
	is_int(pop_first(q, Q, NULL, NULL, 1, NULL, &retry), 2,
	    "reset: m2 redelivers");
	is_int(retry, 1, "reset: the failure's charge survives the "
	    "implicit advance to 1");
	ack1(q, Q, NULL, NULL, "m2", "completed", NULL, &r);
	is_int(pop_first(q, Q, NULL, NULL, 1, NULL, &retry), 3,
	    "reset: m3 after m2 completed");
	is_int(retry, 0, "reset: budget back to 0 after the cursor advanced");
	fix_close(&f);
}

/* retry never charges; dlq dead-letters at once. */
static void
test_retry_and_dlq(void)
{
	struct fix f;
	struct queen *q = fix_open(&f, "ack-retry");
	struct queen_batch *b = NULL;
	struct queen_ack_result r;
	struct queen_ack_item it;
	struct dlq_find d;
	int64_t retry = -1, n = 0;
	int i;

	pushn(q, Q, NULL, "m", 4);
	cfg(q, Q, NULL, "retry_limit", "2");
	for (i = 0; i < 5; i++) {
		if (pop1(q, Q, NULL, NULL, 1, &b) != 0)
			break;
		ack1(q, Q, NULL, NULL, "m1", "retry", b->lease_id, &r);
		if (!r.success || r.dlq || b->retry_count != 0)
			break;
		queen_batch_free(b);
		b = NULL;
	}
	is_int(i, 5, "retry: five retries never charge or dead-letter");
	queen_batch_free(b);
	is_int(pop_first(q, Q, NULL, NULL, 1, NULL, &retry), 1,
	    "retry: m1 still redelivers");
	is_int(retry, 0, "retry: retry_count still 0");
	is_int(dlq_count(q, Q, NULL, NULL), 0, "retry: no dead letter");
	fix_close(&f);

	q = fix_open(&f, "ack-dlq");
	pushn(q, Q, NULL, "m", 4);
	if (pop1(q, Q, NULL, G, 4, &b) == 0) {
		ack_item(&it, Q, NULL, G, "m2", "dlq", b->lease_id);
		it.error = "poison";
		memset(&r, 0, sizeof(r));
		queen_ack(q, &it, 1, &r);
		ok(r.success, "dlq: accepted");
		ok(r.dlq, "dlq: reported as dead-lettered");
		ok(r.lease_released, "dlq: releases the lease");
		is_int(committed(q, Q, G, NULL), 2,
		    "dlq: cursor moves past m2 (m1 implicit)");
		is_int(dlq_count(q, Q, G, &d), 1, "dlq: one dead letter at "
		    "once, budget untouched");
		is_str(d.txid, "m2", "dlq: the dead letter is m2");
		is_str(d.error, "poison", "dlq: error text kept");
		is_str(d.group, G, "dlq: group recorded");
		is_int(d.retry_count, 0, "dlq: retry_count 0");
		is_int(dlq_count(q, Q, NULL, NULL), 0,
		    "dlq: queue-mode DLQ is separate");
		is_int(pop_first(q, Q, NULL, G, 4, &n, &retry), 3,
		    "dlq: messages above it redeliver from 3");
		is_int(n, 2, "dlq: m3 and m4 redeliver");
		queen_batch_free(b);
	} else {
		ok(0, "dlq: pop");
	}
	fix_close(&f);
}

/* expiry_charges_retry: off by default, on charges one unit per re-pop. */
static void
test_expiry_charges(void)
{
	struct fix f;
	struct queen *q;
	int64_t retry = -1;

	q = fix_open(&f, "ack-expiry");
	pushn(q, Q, NULL, "m", 1);
	pop_first(q, Q, NULL, NULL, 1, NULL, NULL);
	f.now += 301 * SEC;
	is_int(pop_first(q, Q, NULL, NULL, 1, NULL, &retry), 1,
	    "expiry: m1 redelivers after expiry");
	is_int(retry, 0, "expiry: off by default, no charge");
	fix_close(&f);

	q = fix_open(&f, "ack-expiry-on");
	pushn(q, Q, NULL, "m", 1);
	is_int(cfg(q, Q, NULL, "expiry_charges_retry", "on"), 0,
	    "expiry: set on");
	pop_first(q, Q, NULL, NULL, 1, NULL, NULL);
	f.now += 301 * SEC;
	is_int(pop_first(q, Q, NULL, NULL, 1, NULL, &retry), 1,
	    "expiry on: m1 redelivers");
	is_int(retry, 1, "expiry on: one unit charged");
	fix_close(&f);

	q = fix_open(&f, "ack-expiry-spent");
	pushn(q, Q, NULL, "m", 2);
	cfg(q, Q, NULL, "expiry_charges_retry", "on");
	cfg(q, Q, NULL, "retry_limit", "1");
	pop_first(q, Q, NULL, NULL, 1, NULL, NULL);
	f.now += 301 * SEC;
	is_int(pop_first(q, Q, NULL, NULL, 1, NULL, &retry), 1,
	    "expiry spent: m1 once more");
	is_int(retry, 1, "expiry spent: budget now spent");
	f.now += 301 * SEC;
	is_int(pop_first(q, Q, NULL, NULL, 1, NULL, &retry), 2,
	    "expiry spent: m1 dead-lettered on the next expiry, m2 next");
	is_int(retry, 0, "expiry spent: budget reset");
	is_int(dlq_count(q, Q, NULL, NULL), 1, "expiry spent: m1 in the DLQ");
	fix_close(&f);
}

/* After the hash purge, a purged txid is unresolvable. */
static void
test_unresolvable_after_purge(void)
{
	struct fix f;
	struct queen *q = fix_open(&f, "ack-purge");
	struct queen_partition_info pi;
	struct queen_ack_result r;
	int64_t retry = -1;

	push1(q, Q, NULL, "m1", "a");
	is_int(cfg(q, Q, NULL, "hash_retention", "60"), 0,
	    "purge: hash_retention 60");
	f.now += 61 * SEC;
	push1(q, Q, NULL, "m2", "b");
	ok(maintain_all(q) >= 0, "purge: maintain ran");
	queen_partition_get(q, Q, QUEEN_DEFAULT_PARTITION, &pi);
	is_int(pi.txns_start, 2, "purge: txns_start raised to 2");
	ack1(q, Q, NULL, NULL, "m1", "completed", NULL, &r);
	ok(!r.success, "purge: ack of purged txid fails");
	is_int(r.err, -ENOENT, "purge: purged txid is unresolvable");
	is_str(r.error, QUEEN_E_UNRESOLVABLE, "purge: unresolvable text");
	is_int(committed(q, Q, NULL, NULL) <= 0 ? 0 : 1, 0,
	    "purge: cursor did not move");
	ack1(q, Q, NULL, NULL, "m1", "failed", NULL, &r);
	is_int(r.err, -ENOENT, "purge: a failed for a purged txid is "
	    "reported, not swallowed");
	is_int(pop_first(q, Q, NULL, NULL, 1, NULL, &retry), 1,
	    "purge: m1 still delivers");
	is_int(retry, 0, "purge: the unresolvable failed charged nothing");
	f.now += 301 * SEC;
	ack1(q, Q, NULL, NULL, "m2", "completed", NULL, &r);
	ok(r.success, "purge: ack of a live txid still resolves");
	is_int(committed(q, Q, NULL, NULL), 2, "purge: cursor at 2");
	fix_close(&f);
}

/* Dedup off: both copies stored and acks still resolve. */
static void
test_ack_dedup_off(void)
{
	struct fix f;
	struct queen *q = fix_open(&f, "ack-nodedup");
	struct queen_batch *b = NULL;
	struct queen_ack_result r;

	queen_queue_create(q, Q, NULL);
	is_int(cfg(q, Q, NULL, "dedup_window", "0"), 0,
	    "nodedup: dedup_window 0");
	push1(q, Q, NULL, "same", "1");
	push1(q, Q, NULL, "same", "2");
	is_int(tail_of(q, Q, NULL), 2, "nodedup: both stored");
	if (pop1(q, Q, NULL, NULL, 2, &b) == 0) {
		ack1(q, Q, NULL, NULL, "same", "completed", b->lease_id, &r);
		ok(r.success, "nodedup: ack by txid resolves");
		ok(committed(q, Q, NULL, NULL) >= 1,
		    "nodedup: the cursor moved");
		queen_batch_free(b);
	} else {
		ok(0, "nodedup: pop");
	}
	fix_close(&f);
}

/* Items naming different partitions in one call are judged apart. */
static void
test_multi_partition_call(void)
{
	struct fix f;
	struct queen *q = fix_open(&f, "ack-multi");
	struct queen_batch *b1 = NULL, *b2 = NULL;
	struct queen_ack_item it[2];
	struct queen_ack_result r[2];

	pushn(q, Q, "p1", "a", 2);
	pushn(q, Q, "p2", "b", 2);
	if (pop1(q, Q, "p1", NULL, 2, &b1) == 0 &&
	    pop1(q, Q, "p2", NULL, 2, &b2) == 0) {
		ack_item(&it[0], Q, "p1", NULL, "a2", "completed",
		    b1->lease_id);
		ack_item(&it[1], Q, "p2", NULL, "b1", "failed", b2->lease_id);
		queen_ack(q, it, 2, r);
		ok(r[0].success && r[1].success, "multi: both items land");
		is_int(committed(q, Q, NULL, "p1"), 2,
		    "multi: p1 committed to 2");
		is_int(committed(q, Q, NULL, "p2"), 0,
		    "multi: p2's failure does not clamp p1");
	} else {
		ok(0, "multi: pops");
	}
	queen_batch_free(b1);
	queen_batch_free(b2);
	fix_close(&f);
}

/*
 * An ack naming only its lease (an ack by rename): the lease's own
 * partition and group; a group other than the lease's, a lease that
 * expired or was released, an id never issued are each refused with
 * -ESTALE and move nothing.
 */
static void
ack_lease(struct queen *q, const char *group, const char *txid,
    const char *status, const char *lease, struct queen_ack_result *r)
{
	struct queen_ack_item it;

	memset(&it, 0, sizeof(it));
	it.group = group;
	it.txid = txid;
	it.status = status;
	it.lease_id = lease;
	memset(r, 0, sizeof(*r));
	if (queen_ack(q, &it, 1, r) != 0)
		r->err = -EIO;
}

static void
test_ack_by_lease_alone(void)
{
	struct fix f;
	struct queen *q = fix_open(&f, "ack-bylease");
	struct queen_batch *b = NULL;
	struct queen_ack_result r;
	char old[QUEEN_ID_LEN + 1];

	pushn(q, Q, "p2", "m", 3);
	if (pop1(q, Q, "p2", G, 2, &b) != 0) {
		ok(0, "by lease: pop");
		fix_close(&f);
		return;
	}
	snprintf(old, sizeof(old), "%s", b->lease_id);
	ack_lease(q, "other", "m1", "completed", old, &r);
	is_int(r.err, -ESTALE, "by lease: another group's name: -ESTALE");
	ack_lease(q, NULL, "m1", "completed", old, &r);
	is_int(r.err, -ESTALE, "by lease: queue mode for a group's: -ESTALE");
	ack_lease(q, G, "m1", "completed", "no-such-lease", &r);
	is_int(r.err, -ESTALE, "by lease: an id never issued: -ESTALE");
	is_str(r.error, QUEEN_E_LEASE, "by lease: 'invalid or expired lease'");
	is_int(committed(q, Q, G, "p2"), 0, "by lease: nothing moved");

	ack_lease(q, G, "m1", "completed", old, &r);
	ok(r.success && !r.lease_released, "by lease: m1 acked, lease held");
	is_int(committed(q, Q, G, "p2"), 1, "by lease: p2's cursor at 1");
	ack_lease(q, G, "m2", "completed", old, &r);
	ok(r.success && r.lease_released, "by lease: m2 releases it");
	is_int(committed(q, Q, G, "p2"), 2, "by lease: at 2");
	ack_lease(q, G, "m2", "completed", old, &r);
	is_int(r.err, -ESTALE, "by lease: released: -ESTALE");
	queen_batch_free(b);
	b = NULL;

	if (pop1(q, Q, "p2", G, 1, &b) == 0) {
		snprintf(old, sizeof(old), "%s", b->lease_id);
		f.now += 301 * SEC;
		ack_lease(q, G, "m3", "completed", old, &r);
		is_int(r.err, -ESTALE, "by lease: expired: -ESTALE");
		is_int(committed(q, Q, G, "p2"), 2, "by lease: still at 2");
	} else {
		ok(0, "by lease: pop m3");
	}
	queen_batch_free(b);
	fix_close(&f);
}

/*
 * queen_lease_epoch counts the calls that may end or move a lease, and
 * only those: what the mount kept of a pop (fs/lease.c) holds while the
 * count stays.  A push, a pop and a read leave it be.
 */
static void
test_lease_epoch(void)
{
	struct fix f;
	struct queen *q = fix_open(&f, "ack-epoch");
	struct queen_batch *b = NULL;
	struct queen_ack_result r;
	uint64_t e;

	is_int(pushn(q, Q, NULL, "e", 3), 0, "epoch: push 3");
	is_int(queen_group_ensure(q, Q, G), 0, "epoch: a group");
	e = queen_lease_epoch();
	is_int(pop1(q, Q, NULL, NULL, 1, &b), 0, "epoch: a pop");
	ok(queen_lease_epoch() == e, "epoch: a push and a pop leave it");
	is_int(ack1(q, Q, NULL, NULL, "e1", "completed", b ? b->lease_id : "",
		   &r),
	    0, "epoch: an ack");
	ok(r.success && queen_lease_epoch() > e, "epoch: an ack moves it");
	queen_batch_free(b);
	b = NULL;
	is_int(pop1(q, Q, NULL, NULL, 1, &b), 0, "epoch: another pop");
	e = queen_lease_epoch();
	is_int(queen_lease_renew(q, b ? b->lease_id : "", 60, NULL), 0,
	    "epoch: a renewal");
	ok(queen_lease_epoch() > e, "epoch: a renewal moves it");
	queen_batch_free(b);
	e = queen_lease_epoch();
	is_int(queen_seek(q, Q, G, NULL, QUEEN_POS_END, 0), 0, "epoch: a seek");
	ok(queen_lease_epoch() > e, "epoch: a seek moves it");
	/* a batch rolled back: the leases its pops handed out never were */
	is_int(push1(q, Q, "p2", "e4", "x"), 1, "epoch: a push elsewhere");
	is_int(queen_batch_begin(q, 0), 0, "epoch: a batch");
	is_int(pop1(q, Q, "p2", NULL, 1, &b), 0, "epoch: a pop in it");
	queen_batch_free(b);
	e = queen_lease_epoch();
	queen_batch_rollback(q);
	ok(queen_lease_epoch() > e, "epoch: its rollback moves it");
	fix_close(&f);
}

int
main(void)
{
	plan_lazy();
	test_lease_epoch();
	test_offset_commit_example();
	test_clamp_example();
	test_implicit_completion();
	test_status_normalisation();
	test_lowest_signal_clamps();
	test_precedence();
	test_gap_below_signal();
	test_reported_table();
	test_table_under_lease();
	test_full_cover();
	test_mixed_leases();
	test_window_bounded_by_lease();
	test_unbounded_without_lease();
	test_stale_vs_absent();
	test_failed_budget();
	test_zero_budget();
	test_budget_resets_on_advance();
	test_retry_and_dlq();
	test_expiry_charges();
	test_unresolvable_after_purge();
	test_ack_dedup_off();
	test_multi_partition_call();
	test_ack_by_lease_alone();
	return done_testing();
}
