/*
 * t-fault.c - storage faults through the C API, with the "queen-fault" VFS
 * (queen_tune.fault): after an injected fsync or write failure the call
 * fails with -EIO, queen_failed() says why, every later write is refused,
 * reads still work, and a reopen without the fault finds every write that
 * returned 0 and a store that passes PRAGMA integrity_check.
 */
#include <errno.h>
#include <sqlite3.h>
#include <stdio.h>
#include <string.h>

#include "qtest.h"
#include "tap.h"

#define Q "f"
#define MAXN 64

static int
open_fault(struct fix *f, const char *fault, struct queen **out)
{
	struct queen_options o = { 0 };
	struct queen_tune tune = { 0 };

	o.path = f->path;
	o.sync = QUEEN_SYNC_FULL;
	tune.fault = fault;
	o.tune = &tune;
	return queen_open(&o, out);
}

/* "ok", or the first line integrity_check answered, into buf. */
static void
integrity(const char *path, char *buf, size_t len)
{
	sqlite3 *db = NULL;
	sqlite3_stmt *st = NULL;

	snprintf(buf, len, "cannot open");
	if (sqlite3_open_v2(path, &db, SQLITE_OPEN_READONLY, NULL) != SQLITE_OK)
		goto out;
	if (sqlite3_prepare_v2(db, "PRAGMA integrity_check", -1, &st,
	    NULL) != SQLITE_OK) {
		snprintf(buf, len, "%s", sqlite3_errmsg(db));
		goto out;
	}
	if (sqlite3_step(st) == SQLITE_ROW)
		snprintf(buf, len, "%s", sqlite3_column_text(st, 0));
	else
		snprintf(buf, len, "%s", sqlite3_errmsg(db));
out:
	sqlite3_finalize(st);
	sqlite3_close(db);
}

/* The payload of txid in partition p, compared with want: 1 same, 0 no. */
static int
has_msg(struct queen *q, const char *p, const char *txid, const char *want)
{
	struct queen_batch *b = NULL;
	int64_t off;
	int same;

	if (queen_msg_find(q, Q, p, txid, &off) != 0)
		return 0;
	if (queen_msg_read(q, Q, p, off, 1, true, &b) != 0 || !b)
		return -1;
	same = b->n == 1 && b->msgs[0].len == strlen(want) &&
	    !memcmp(b->msgs[0].payload, want, b->msgs[0].len);
	queen_batch_free(b);
	return same ? 1 : -1;
}

/*
 * One run: a fresh store with a queue and one acked message made without
 * the fault, then a reopen with it and pushes until one fails.
 */
static void
run(const char *fault)
{
	struct fix f;
	struct queen *q;
	struct queen_batch *b = NULL;
	struct queen_ack_item ai = { 0 };
	struct queen_ack_result ar;
	struct queen_stats st;
	struct queen_kv_value *kv = NULL;
	char why[256], ic[128], txid[32];
	int64_t rc = 0;
	int i, pushed = 0, lost = 0, bad = 0;

	diag("fault %s", fault);
	q = fix_open(&f, "fault");
	ok(queen_queue_create(q, Q, NULL) == 0, "queue");
	ok(push1(q, Q, "p", "before", "before") > 0, "a push before the fault");
	ok(push1(q, Q, "p", "held", "held") > 0, "a second one to lease later");
	ok(queen_kv_put(q, "ns", "k", "v1", 2, 0, false) == 0, "a KV key");
	queen_close(q);
	f.q = NULL;

	is_int(open_fault(&f, fault, &q), 0, "open with the fault armed");
	if (!q) {
		fix_close(&f);
		return;
	}
	f.q = q;
	ok(!queen_failed(q, why, sizeof(why)), "not failed at open");
	for (i = 1; i <= MAXN; i++) {
		snprintf(txid, sizeof(txid), "m%d", i);
		rc = push1(q, Q, "p", txid, txid);
		if (rc < 0)
			break;
		pushed++;
	}
	is_int(rc, -EIO, "the push hit by the fault fails with -EIO");
	ok(i <= MAXN, "the fault hit within %d pushes (%d went through)",
	    MAXN, pushed);
	why[0] = '\0';
	ok(queen_failed(q, why, sizeof(why)), "queen_failed is true");
	ok(strstr(why, "I/O") != NULL, "and says why: %s", why);

	is_int(push1(q, Q, "p", "later", "later"), -EIO, "a later push: -EIO");
	ai.queue = Q;
	ai.partition = "p";
	ai.txid = "before";
	memset(&ar, 0, sizeof(ar));
	rc = queen_ack(q, &ai, 1, &ar);
	ok(rc == -EIO || (rc == 0 && ar.err == -EIO),
	    "a later ack: -EIO (rc %d, item %d)", (int)rc, ar.err);
	is_int(queen_kv_put(q, "ns", "k", "v2", 2, 0, false), -EIO,
	    "a later KV put: -EIO");
	is_int(queen_timer_schedule(q, Q, "t", NULL, 0, "x", 1), -EIO,
	    "a later timer: -EIO");
	is_int(queen_queue_create(q, "other", NULL), -EIO,
	    "a later mkdir: -EIO");

	is_int(has_msg(q, "p", "before", "before"), 1,
	    "reads still work: a message");
	ok(queen_kv_get(q, "ns", "k", &kv) == 0 && kv && kv->len == 2 &&
	    !memcmp(kv->data, "v1", 2), "reads still work: the KV key unchanged");
	free(kv);
	memset(&st, 0, sizeof(st));
	is_int(queen_stats_get(q, Q, NULL, &st), 0, "stats still work");
	is_int(st.messages, 2 + pushed, "stats count what returned 0");
	rc = queen_msg_read(q, Q, "p", 1, MAXN * 2, false, &b);
	ok(rc == 0 && b && b->n == (size_t)(2 + pushed),
	    "the log reads %zu messages", b ? b->n : 0);
	queen_batch_free(b);
	queen_close(q);
	f.q = NULL;

	integrity(f.path, ic, sizeof(ic));
	is_str(ic, "ok", "integrity_check after the failure");
	q = fix_reopen(&f);
	ok(!queen_failed(q, NULL, 0), "reopened without the fault: not failed");
	ok(has_msg(q, "p", "before", "before") == 1 &&
	    has_msg(q, "p", "held", "held") == 1, "the old messages are there");
	for (i = 1; i <= pushed; i++) {
		snprintf(txid, sizeof(txid), "m%d", i);
		if (has_msg(q, "p", txid, txid) != 1)
			lost++;
	}
	is_int(lost, 0, "every push that returned 0 (%d) is there", pushed);
	/* the failed one may or may not have reached the file, but whole */
	snprintf(txid, sizeof(txid), "m%d", pushed + 1);
	bad = has_msg(q, "p", txid, txid);
	ok(bad >= 0, "the failed push: whole or absent");
	diag("the push that failed with -EIO is %s after the reopen",
	    bad == 1 ? "there" : "absent");
	bad = has_msg(q, "p", "later", "later");
	is_int(bad, 0, "a push refused after the failure is absent");
	ok(queen_kv_get(q, "ns", "k", &kv) == 0 && kv && kv->len == 2 &&
	    !memcmp(kv->data, "v1", 2), "the KV key kept its value");
	free(kv);
	ok(push1(q, Q, "p", "after", "after") > 0, "writes work again");
	ok(pop1(q, Q, "p", NULL, 1, &b) == 0 && b && b->n == 1 &&
	    !strcmp(b->msgs[0].txid, "before"), "the log pops in order");
	queen_batch_free(b);
	queen_close(q);
	f.q = NULL;
	integrity(f.path, ic, sizeof(ic));
	is_str(ic, "ok", "integrity_check after the reopen");
	fix_close(&f);
}

static void
bad_spec(void)
{
	static const char *const specs[] = { "", "fsync", "fsync:", "fsync:-1",
		"fsync:x", "write:1x", "read:3", ":5" };
	struct fix f;
	struct queen *q;
	size_t i;

	q = fix_open(&f, "fault");
	queen_close(q);
	f.q = NULL;
	for (i = 0; i < sizeof(specs) / sizeof(specs[0]); i++) {
		is_int(open_fault(&f, specs[i], &q), -EINVAL,
		    "fault '%s' refused", specs[i]);
		ok(q == NULL, "and no handle");
		queen_close(q);
	}
	fix_close(&f);
}

/*
 * A deferred batch's own fsync (queen_sync) fails: -EIO, the handle says
 * why, every later write is refused, and the database is sound.
 */
static void
deferred(void)
{
	struct fix f;
	struct queen *q;
	char why[256] = "", ic[128];
	uint64_t t;

	/* one fsync goes through: SQLite syncs a new log's header itself */
	diag("fault fsync:1 on queen_sync");
	q = fix_open(&f, "fault-deferred");
	ok(queen_queue_create(q, Q, NULL) == 0, "deferred: queue");
	queen_close(q);
	f.q = NULL;
	is_int(open_fault(&f, "fsync:1", &q), 0, "deferred: open, armed");
	if (!q) {
		fix_close(&f);
		return;
	}
	f.q = q;
	is_int(queen_batch_begin(q, QUEEN_BATCH_DEFERRED), 0, "deferred: begin");
	ok(push1(q, Q, "p", "d1", "d1") > 0, "deferred: a push");
	is_int(queen_batch_commit(q), 0,
	    "deferred: the commit itself does not sync");
	t = queen_sync_ticket(q);
	ok(t > 0, "deferred: a ticket");
	is_int(queen_sync(q, t), -EIO, "deferred: the failed fsync is -EIO");
	is_int(queen_sync(q, t), -EIO, "deferred: and stays so");
	ok(queen_failed(q, why, sizeof(why)) &&
	    strstr(why, "fsync of the log failed"), "deferred: why: %s", why);
	is_int(push1(q, Q, "p", "d2", "d2"), -EIO, "deferred: a later push");
	is_int(queen_batch_begin(q, QUEEN_BATCH_DEFERRED), -EIO, "deferred: a later batch");
	queen_close(q);
	f.q = NULL;
	integrity(f.path, ic, sizeof(ic));
	is_str(ic, "ok", "deferred: integrity_check after the failure");
	fix_close(&f);
}

int
main(void)
{
	plan_lazy();
	if (fix_is_pg()) {
		skip(1, "the fault VFS is SQLite's");
		return done_testing();
	}
	run("fsync:0");
	run("fsync:3");
	run("write:0");
	run("write:40");
	deferred();
	bad_spec();
	return done_testing();
}
