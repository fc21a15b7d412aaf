/*
 * t-pop.c - queen_pop and leases: the batch and its lease, one lease per
 * (partition, group), batch sizes, fairness across partitions, auto_ack,
 * -EAGAIN, lazy expiry by the clock, renewal, lease_get/read/list.
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "qtest.h"
#include "tap.h"

#define Q "jobs"

/*
 * queen_pop on a missing queue, in a child process with its own handle:
 * returns the child's rc, or 1000 + the signal that killed it.
 */
static int
pop_in_child(struct fix *f, const char *queue, const char *group)
{
	const char *path = f->path;
	struct queen_options o = { 0 };
	struct queen_pop_req req = { 0 };
	struct queen_batch *b = NULL;
	struct queen *q = NULL;
	int status, rc;
	pid_t pid;

	/* the store is locked exclusively: hand it to the child */
	queen_close(f->q);
	f->q = NULL;
	fflush(stdout);
	pid = fork();
	if (pid < 0)
		return -errno;
	if (pid == 0) {
		o.path = path;
		if (queen_open(&o, &q) != 0)
			_exit(99);
		req.queue = queue;
		req.group = group;
		req.auto_ack = -1;
		rc = queen_pop(q, &req, &b);
		if (rc == 0 || b != NULL)
			_exit(98);
		queen_close(q);
		_exit(-rc & 0x7f);
	}
	rc = waitpid(pid, &status, 0);
	fix_reopen(f);
	if (rc < 0)
		return -errno;
	if (WIFSIGNALED(status)) {
		diag("child killed by signal %d", WTERMSIG(status));
		return 1000 + WTERMSIG(status);
	}
	rc = WEXITSTATUS(status);
	return rc >= 98 ? rc : -rc;
}

static void
test_basic(void)
{
	struct fix f;
	struct queen *q = fix_open(&f, "pop-basic");
	struct queen_batch *b = NULL;
	struct queen_partition_info pi;
	int rc;

	is_int(pop_in_child(&f, "nosuch", NULL), -ENOENT,
	    "basic: no queue: -ENOENT (run in a child: a crash is a "
	    "failure, not the end of the file)");
	q = f.q;
	queen_queue_create(q, Q, NULL);
	is_int(pop_first(q, Q, NULL, NULL, 1, NULL, NULL), -EAGAIN,
	    "basic: empty queue: -EAGAIN");
	is_int(queen_next_due(q, Q, NULL), INT64_MAX,
	    "basic: next_due of an empty queue is INT64_MAX");

	is_int(pop_in_child(&f, Q, "bad/group"), -EINVAL,
	    "basic: a bad group name: -EINVAL (in a child)");
	q = f.q;
	push1(q, Q, NULL, "t1", "hello");
	push1(q, Q, NULL, "t2", "world");
	queen_partition_get(q, Q, "default", &pi);
	rc = pop1(q, Q, NULL, NULL, 0, &b);
	is_int(rc, 0, "basic: pop");
	if (rc == 0) {
		is_int((int64_t)b->n, 1, "basic: default batch is 1");
		is_int(b->msgs[0].offset, 1, "basic: offset 1 first");
		is_str(b->msgs[0].txid, "t1", "basic: txid t1");
		ok(b->msgs[0].len == 5 &&
		    memcmp(b->msgs[0].payload, "hello", 5) == 0,
		    "basic: payload");
		is_str(b->queue, Q, "basic: batch queue");
		is_str(b->partition, "default", "basic: batch partition");
		is_str(b->partition_uuid, pi.uuid, "basic: batch partition_uuid");
		is_str(b->group, QUEEN_QUEUE_MODE, "basic: queue-mode group");
		is_int((int64_t)strlen(b->lease_id), QUEEN_ID_LEN,
		    "basic: lease id is 36 chars");
		is_int(b->lease_expires_at, f.now + 300 * SEC,
		    "basic: lease expires after the default 300 s");
		is_int(b->retry_count, 0, "basic: retry_count 0");
		is_int(queen_next_due(q, Q, NULL), b->lease_expires_at,
		    "basic: next_due is the lease expiry");
		queen_batch_free(b);
	}
	is_int(committed(q, Q, NULL, NULL), 0,
	    "basic: cursor starts at 0 and a pop does not move it");
	fix_close(&f);
}

static void
test_one_lease(void)
{
	struct fix f;
	struct queen *q = fix_open(&f, "pop-one");
	struct queen_batch *b = NULL;
	struct queen_ack_result r;

	pushn(q, Q, NULL, "m", 3);
	if (pop1(q, Q, NULL, NULL, 1, &b) != 0) {
		ok(0, "one: pop");
		fix_close(&f);
		return;
	}
	is_int(pop_first(q, Q, NULL, NULL, 1, NULL, NULL), -EAGAIN,
	    "one: a second pop of the same partition+group waits");
	is_int(pop_first(q, Q, "default", NULL, 1, NULL, NULL), -EAGAIN,
	    "one: naming the partition does not bypass the lease");
	is_int(pop_first(q, Q, NULL, "other", 1, NULL, NULL), 1,
	    "one: another group gets its own lease on offset 1");
	is_int(lease_count(q, Q, NULL), 1, "one: queue mode holds 1 lease");
	is_int(lease_count(q, Q, "other"), 1, "one: other group holds 1");
	ack1(q, Q, NULL, NULL, "m1", "completed", b->lease_id, &r);
	ok(r.success && r.lease_released, "one: ack of the span releases");
	is_int(lease_count(q, Q, NULL), 0, "one: no queue-mode lease left");
	is_int(pop_first(q, Q, NULL, NULL, 1, NULL, NULL), 2,
	    "one: next pop continues at 2");
	queen_batch_free(b);
	fix_close(&f);
}

static void
test_batch_sizes(void)
{
	struct fix f;
	struct queen *q = fix_open(&f, "pop-batch");
	struct queen_batch *b = NULL;
	struct queen_ack_result r;
	int64_t n = 0;

	pushn(q, Q, NULL, "m", 10);
	if (pop1(q, Q, NULL, NULL, 3, &b) == 0) {
		is_int((int64_t)b->n, 3, "batch: req.batch 3 gives 3");
		is_int(b->msgs[0].offset, 1, "batch: from 1");
		is_int(b->msgs[2].offset, 3, "batch: to 3, in order");
		ack1(q, Q, NULL, NULL, "m3", NULL, b->lease_id, &r);
		queen_batch_free(b);
	}
	is_int(cfg(q, Q, NULL, "batch", "4"), 0, "batch: config batch 4");
	is_int(pop_first(q, Q, NULL, NULL, 0, &n, NULL), 4,
	    "batch: config batch: starts at 4");
	is_int(n, 4, "batch: config batch gives 4");
	ack1(q, Q, NULL, NULL, "m7", NULL, NULL, &r);
	is_int(pop_first(q, Q, NULL, NULL, 100, &n, NULL), 8,
	    "batch: a big batch starts at 8");
	is_int(n, 3, "batch: a big batch gives what there is (3)");
	fix_close(&f);
}

static void
test_fairness(void)
{
	struct fix f;
	struct queen *q = fix_open(&f, "pop-fair");
	struct queen_batch *b = NULL;
	struct queen_ack_result r;
	int64_t t0 = f.now;

	push1(q, Q, "p3", "c1", "x");
	f.now = t0 + 1 * SEC;
	push1(q, Q, "p1", "a1", "x");
	f.now = t0 + 2 * SEC;
	push1(q, Q, "p2", "b1", "x");
	f.now = t0 + 3 * SEC;
	push1(q, Q, "p3", "c2", "x");
	f.now = t0 + 10 * SEC;

	if (pop1(q, Q, NULL, NULL, 1, &b) == 0) {
		is_str(b->partition, "p3", "fair: the oldest waiting (p3) first");
		ack1(q, Q, "p3", NULL, b->msgs[0].txid, NULL, b->lease_id, &r);
		queen_batch_free(b);
	}
	if (pop1(q, Q, NULL, NULL, 1, &b) == 0) {
		is_str(b->partition, "p1",
		    "fair: then p1 (t0+1 is older than p3's t0+3)");
		queen_batch_free(b);
	}
	if (pop1(q, Q, NULL, NULL, 1, &b) == 0) {
		is_str(b->partition, "p2",
		    "fair: p1 is leased, so p2 (t0+2) next");
		queen_batch_free(b);
	}
	if (pop1(q, Q, NULL, NULL, 1, &b) == 0) {
		is_str(b->partition, "p3", "fair: then p3's second message");
		is_str(b->msgs[0].txid, "c2", "fair: which is c2");
		queen_batch_free(b);
	}
	is_int(pop_first(q, Q, NULL, NULL, 1, NULL, NULL), -EAGAIN,
	    "fair: every partition leased: -EAGAIN");
	is_int(lease_count(q, Q, NULL), 3, "fair: three leases live");
	if (pop1(q, Q, "p2", "g", 1, &b) == 0) {
		is_str(b->partition, "p2", "fair: an explicit partition wins");
		queen_batch_free(b);
	} else {
		ok(0, "fair: explicit pop");
	}
	fix_close(&f);
}

static void
test_auto_ack(void)
{
	struct fix f;
	struct queen *q = fix_open(&f, "pop-auto");
	struct queen_pop_req req = { 0 };
	struct queen_batch *b = NULL;

	pushn(q, Q, NULL, "m", 5);
	req.queue = Q;
	req.batch = 2;
	req.auto_ack = 1;
	if (queen_pop(q, &req, &b) == 0) {
		is_int((int64_t)b->n, 2, "auto: two messages");
		is_str(b->lease_id, "", "auto: lease_id is empty");
		is_int(b->lease_expires_at, 0, "auto: no expiry");
		queen_batch_free(b);
		b = NULL;
	} else {
		ok(0, "auto: pop");
	}
	is_int(committed(q, Q, NULL, NULL), 2,
	    "auto: cursor moved to the end of the span at once");
	{
		struct queen_ack_result r;

		ack1(q, Q, NULL, NULL, "m2", "completed", NULL, &r);
		ok(r.success && r.noop, "auto: a later ack is a noop");
		ack1(q, Q, NULL, NULL, "m2", "failed", NULL, &r);
		is_int(r.err, -EALREADY, "auto: a later failed is -EALREADY");
	}
	is_int(lease_count(q, Q, NULL), 0, "auto: no lease held");

	is_int(cfg(q, Q, NULL, "auto_ack", "on"), 0, "auto: config on");
	is_int(cfgget(q, Q, NULL, "auto_ack"), 1, "auto: reads 1");
	req.auto_ack = -1;
	if (queen_pop(q, &req, &b) == 0) {
		is_int(b->msgs[0].offset, 3, "auto: config: from 3");
		is_str(b->lease_id, "", "auto: config: no lease");
		queen_batch_free(b);
		b = NULL;
	} else {
		ok(0, "auto: config pop");
	}
	is_int(committed(q, Q, NULL, NULL), 4, "auto: config: cursor at 4");
	req.auto_ack = 0;
	if (queen_pop(q, &req, &b) == 0) {
		ok(strlen(b->lease_id) == QUEEN_ID_LEN,
		    "auto: req.auto_ack 0 overrides the config (leased)");
		queen_batch_free(b);
	} else {
		ok(0, "auto: pop with override");
	}
	is_int(committed(q, Q, NULL, NULL), 4, "auto: leased pop moved nothing");
	fix_close(&f);
}

static void
test_expiry_and_renew(void)
{
	struct fix f;
	struct queen *q = fix_open(&f, "pop-expiry");
	struct queen_batch *b = NULL, *b2 = NULL;
	struct queen_lease_info li;
	int64_t t0 = f.now, exp = 0;

	pushn(q, Q, NULL, "m", 2);
	if (pop1(q, Q, NULL, NULL, 1, &b) != 0) {
		ok(0, "expiry: pop");
		fix_close(&f);
		return;
	}
	f.now = t0 + 300 * SEC - 1;
	is_int(pop_first(q, Q, NULL, NULL, 1, NULL, NULL), -EAGAIN,
	    "expiry: still leased 1 ms before expiry");
	is_int(queen_lease_get(q, b->lease_id, &li), 0,
	    "expiry: lease_get live before expiry");
	f.now = t0 + 300 * SEC + 1;
	is_int(queen_lease_get(q, b->lease_id, &li), -ESTALE,
	    "expiry: lease_get -ESTALE once the clock passed");
	is_int(queen_lease_renew(q, b->lease_id, 0, &exp), -ESTALE,
	    "expiry: renew of an expired lease is -ESTALE");
	if (pop1(q, Q, NULL, NULL, 1, &b2) == 0) {
		is_int(b2->msgs[0].offset, 1, "expiry: span redelivered");
		ok(strcmp(b2->lease_id, b->lease_id) != 0,
		    "expiry: under a new lease id");
		is_int(b2->lease_expires_at, f.now + 300 * SEC,
		    "expiry: new lease runs from now");
		is_int(b2->retry_count, 0, "expiry: no charge by default");

		/* Renew. */
		f.now += 200 * SEC;
		is_int(queen_lease_renew(q, b2->lease_id, 0, &exp), 0,
		    "renew: live lease");
		is_int(exp, f.now + 300 * SEC, "renew: 0 means lease_time");
		is_int(queen_lease_renew(q, b2->lease_id, 60, &exp), 0,
		    "renew: 60 s");
		is_int(exp, f.now + 60 * SEC, "renew: to now + 60 s");
		queen_lease_get(q, b2->lease_id, &li);
		is_int(li.expires_at, f.now + 60 * SEC,
		    "renew: lease_get shows the new expiry");
		f.now += 59 * SEC;
		is_int(pop_first(q, Q, NULL, NULL, 1, NULL, NULL), -EAGAIN,
		    "renew: still held within the renewed time");
		f.now += 2 * SEC;
		is_int(queen_lease_renew(q, b2->lease_id, 60, &exp), -ESTALE,
		    "renew: too late is -ESTALE");
		queen_batch_free(b2);
	} else {
		ok(0, "expiry: re-pop");
	}
	is_int(cfg(q, Q, NULL, "lease_time", "10"), 0, "expiry: lease_time 10");
	if (pop1(q, Q, NULL, NULL, 1, &b2) == 0) {
		is_int(b2->lease_expires_at, f.now + 10 * SEC,
		    "expiry: lease_time config applies");
		queen_batch_free(b2);
	}
	queen_batch_free(b);
	fix_close(&f);
}

static int
lease_info_cb(void *arg, const struct queen_lease_info *li)
{
	*(struct queen_lease_info *)arg = *li;
	return 0;
}

static void
test_lease_get_read_list(void)
{
	struct fix f;
	struct queen *q = fix_open(&f, "pop-lease");
	struct queen_batch *b = NULL, *rb = NULL;
	struct queen_lease_info li, ll;
	struct queen_ack_result r;
	int rc;

	pushn(q, Q, "p", "m", 5);
	if (pop1(q, Q, "p", "g", 3, &b) != 0) {
		ok(0, "lease: pop");
		fix_close(&f);
		return;
	}
	memset(&li, 0, sizeof(li));
	is_int(queen_lease_get(q, b->lease_id, &li), 0, "lease: get");
	is_str(li.lease_id, b->lease_id, "lease: get id");
	is_str(li.queue, Q, "lease: get queue");
	is_str(li.partition, "p", "lease: get partition");
	is_str(li.partition_uuid, b->partition_uuid, "lease: get uuid");
	is_str(li.group, "g", "lease: get group");
	is_int(li.first, 1, "lease: first = committed + 1");
	is_int(li.last, 3, "lease: last = batch_end");
	is_int(li.committed, 0, "lease: committed 0");
	is_int(li.expires_at, b->lease_expires_at, "lease: expires_at");
	is_int(queen_lease_get(q, "01900000-0000-7000-8000-000000000000",
	    &li), -ESTALE, "lease: unknown id is -ESTALE (not a live lease)");

	memset(&ll, 0, sizeof(ll));
	is_int(queen_lease_list(q, Q, "g", lease_info_cb, &ll), 0,
	    "lease: list");
	is_str(ll.lease_id, b->lease_id, "lease: list shows the lease");
	is_int(lease_count(q, Q, NULL), 0, "lease: queue mode lists none");

	rc = queen_lease_read(q, b->lease_id, true, &rb);
	is_int(rc, 0, "lease: read");
	if (rc == 0 && rb) {
		is_int((int64_t)rb->n, 3, "lease: read gives 3");
		ok(rb->msgs[0].len == 2 &&
		    memcmp(rb->msgs[0].payload, "m1", 2) == 0,
		    "lease: read with payload");
		queen_batch_free(rb);
		rb = NULL;
	}
	ack1(q, Q, "p", "g", "m1", "completed", b->lease_id, &r);
	ok(r.success && !r.lease_released,
	    "lease: a partial ack keeps the lease");
	rc = queen_lease_read(q, b->lease_id, false, &rb);
	is_int(rc, 0, "lease: read after partial ack");
	if (rc == 0 && rb) {
		is_int((int64_t)rb->n, 2, "lease: 2 unacked messages remain");
		is_int(rb->msgs[0].offset, 2, "lease: from offset 2");
		queen_batch_free(rb);
		rb = NULL;
	}
	queen_lease_get(q, b->lease_id, &li);
	is_int(li.committed, 1, "lease: committed 1 after partial ack");
	ack1(q, Q, "p", "g", "m3", "completed", b->lease_id, &r);
	ok(r.lease_released, "lease: acking the end releases");
	is_int(queen_lease_get(q, b->lease_id, &li), -ESTALE,
	    "lease: released lease is -ESTALE");
	is_int(queen_lease_read(q, b->lease_id, false, &rb), -ESTALE,
	    "lease: read of a released lease is -ESTALE");
	is_int(lease_count(q, Q, "g"), 0, "lease: list empty after release");
	queen_batch_free(b);
	fix_close(&f);
}

/* The offset of txid as queen_lease_read_msg finds it; -errno, or -1000
 * when it answers anything but one message with txid's payload. */
static int64_t
lease_msg_at(struct queen *q, const char *lease, const char *txid,
    const char *payload)
{
	struct queen_batch *one = NULL;
	int64_t off;
	int rc = queen_lease_read_msg(q, lease, txid, true, &one);

	if (rc != 0)
		return rc;
	off = one->n == 1 && strcmp(one->msgs[0].txid, txid) == 0 &&
	    one->msgs[0].len == strlen(payload) &&
	    memcmp(one->msgs[0].payload, payload, one->msgs[0].len) == 0 &&
	    strcmp(one->lease_id, lease) == 0 ? one->msgs[0].offset : -1000;
	queen_batch_free(one);
	return off;
}

/* One message of a lease's unacked span, by its hash row or, where those
 * are purged, by the ids themselves; never one outside the span. */
static void
test_lease_read_msg(void)
{
	struct fix f;
	struct queen *q = fix_open(&f, "pop-leasemsg");
	struct queen_batch *b = NULL;
	struct queen_ack_result r;
	char txid[16];
	int wrong = 0;

	queen_queue_create(q, Q, NULL);
	is_int(cfg(q, Q, NULL, "dedup_window", "0"), 0, "leasemsg: no dedup");
	pushn(q, Q, NULL, "m", 6);              /* payload = txid */
	push1(q, Q, NULL, "m2", "again");       /* offset 7 */
	push1(q, Q, NULL, "m5", "again");       /* offset 8 */
	push1(q, Q, NULL, "m9", "m9");          /* offset 9 */
	if (pop1(q, Q, NULL, NULL, 8, &b) != 0) {
		ok(0, "leasemsg: pop");
		fix_close(&f);
		return;
	}
	for (int i = 1; i <= 6; i++) {
		snprintf(txid, sizeof(txid), "m%d", i);
		wrong += lease_msg_at(q, b->lease_id, txid, txid) != i;
	}
	is_int(wrong, 0, "leasemsg: each of the span at its offset, with its "
	    "payload and the lease's facts");
	is_int(lease_msg_at(q, b->lease_id, "m9", "m9"), -ENOENT,
	    "leasemsg: a message after the span is not under the lease");
	is_int(lease_msg_at(q, b->lease_id, "nope", ""), -ENOENT,
	    "leasemsg: an id never pushed");
	is_int(lease_msg_at(q, b->lease_id, "", ""), -EINVAL,
	    "leasemsg: an empty id");
	ack1(q, Q, NULL, NULL, "m3", "completed", b->lease_id, &r);
	ok(r.success && !r.lease_released, "leasemsg: a partial ack");
	is_int(lease_msg_at(q, b->lease_id, "m1", "m1"), -ENOENT,
	    "leasemsg: an acked message is no longer under it");
	is_int(lease_msg_at(q, b->lease_id, "m2", "again"), 7,
	    "leasemsg: an id twice in the log: the one still in the span");
	is_int(lease_msg_at(q, b->lease_id, "m4", "m4"), 4,
	    "leasemsg: the rest still at their offsets");
	{
		struct queen_batch *one = NULL;

		is_int(queen_lease_read_done(q, b->lease_id, "m1", 1, true,
		    &one), 0, "leasemsg: a committed one of the live lease, "
		    "from its first offset");
		ok(one && one->n == 1 && one->msgs[0].offset == 1 &&
		    strcmp(one->lease_id, b->lease_id) == 0,
		    "leasemsg: ... at its offset, with the lease's facts");
		queen_batch_free(one);
		is_int(queen_lease_read_done(q, b->lease_id, "m1", 2, true,
		    &one), -ENOENT, "leasemsg: not below the first offset");
		is_int(queen_lease_read_done(q, b->lease_id, "m4", 1, true,
		    &one), -ENOENT, "leasemsg: not one still unacked");
		is_int(queen_lease_read_done(q, b->lease_id, "m1", 0, true,
		    &one), -EINVAL, "leasemsg: no first offset");
	}
	cfg(q, Q, NULL, "hash_retention", "60");
	f.now += 61 * SEC;
	ok(maintain_all(q) > 0, "leasemsg: the hash rows purged");
	is_int(lease_msg_at(q, b->lease_id, "m4", "m4"), 4,
	    "leasemsg: without its hash row, found by its id");
	is_int(lease_msg_at(q, b->lease_id, "m5", "m5"), 5,
	    "leasemsg: ... the lowest in the span");
	is_int(lease_msg_at(q, b->lease_id, "m2", "again"), 7,
	    "leasemsg: ... and not one below it");
	is_int(lease_msg_at(q, b->lease_id, "m9", "m9"), -ENOENT,
	    "leasemsg: ... and none after it");
	f.now += 300 * SEC;
	is_int(lease_msg_at(q, b->lease_id, "m5", "m5"), -ESTALE,
	    "leasemsg: an expired lease is -ESTALE");
	queen_batch_free(b);
	fix_close(&f);
}

/* whole: a span that does not fill the batch is not taken, nor is a
 * partition whose lease expired; what it then leaves is as it was */
static int
pop_whole(struct queen *q, const char *part, int64_t batch,
    struct queen_batch **out)
{
	struct queen_pop_req r = { .queue = Q,
		.partition = part,
		.batch = batch,
		.whole = true };

	*out = NULL;
	return queen_pop(q, &r, out);
}

static void
test_whole(void)
{
	struct fix f;
	struct queen *q = fix_open(&f, "pop-whole");
	struct queen_batch *b = NULL;
	struct queen_stats st;

	pushn(q, Q, NULL, "w", 2);
	is_int(pop_whole(q, NULL, 3, &b), -EAGAIN,
	    "whole: 2 messages do not fill a batch of 3");
	ok(b == NULL, "whole: and nothing is handed back");
	is_int(queen_stats_get(q, Q, NULL, &st), 0, "whole: stats");
	is_int(st.leases, 0, "whole: no lease taken");
	is_int(pop_whole(q, "default", 3, &b), -EAGAIN,
	    "whole: nor from the partition named");
	is_int(push1(q, Q, NULL, "w3", "w3") > 0, 1, "whole: a third");
	if (pop_whole(q, NULL, 3, &b) == 0) {
		is_int((int64_t)b->n, 3, "whole: then the batch is taken");
		is_int(b->msgs[0].offset, 1, "whole: from the first");
		queen_batch_free(b);
	} else {
		ok(0, "whole: pop of a full batch");
	}
	/* the lease runs out: the partition is skipped while whole */
	pushn(q, Q, NULL, "x", 3);
	f.now += 301 * SEC;
	is_int(pop_whole(q, NULL, 3, &b), -EAGAIN,
	    "whole: not past an expired lease");
	if (pop1(q, Q, NULL, NULL, 3, &b) == 0)
		is_int(b->msgs[0].offset, 1,
		    "whole: a plain pop then takes the expired span again");
	else
		ok(0, "whole: plain pop after expiry");
	queen_batch_free(b);
	fix_close(&f);
}

int
main(void)
{
	plan_lazy();
	test_basic();
	test_one_lease();
	test_batch_sizes();
	test_fairness();
	test_auto_ack();
	test_expiry_and_renew();
	test_lease_get_read_list();
	test_lease_read_msg();
	test_whole();
	return done_testing();
}
