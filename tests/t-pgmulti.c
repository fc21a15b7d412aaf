/*
 * t-pgmulti.c - several handles on one PostgreSQL store, as several
 * mounts would be: pushes seen across handles, one lease per (partition,
 * group) across connections and processes, acks through another handle,
 * wake-ups by NOTIFY, racing creation, and a lost connection.  Skips
 * unless QUEEN_TEST_PG is set (tests/pg.sh sets it).
 */
#include <errno.h>
#include <libpq-fe.h>
#include <malloc.h>
#include <poll.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <signal.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include "qtest.h"
#include "tap.h"

#define Q "multi"
#define NMSG 60

/* under a sanitizer the resident set says nothing of the heap */
#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
#define RSS_MEANS_NOTHING 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer) || __has_feature(thread_sanitizer)
#define RSS_MEANS_NOTHING 1
#endif
#endif
#ifndef RSS_MEANS_NOTHING
#define RSS_MEANS_NOTHING 0
#endif

static int64_t
my_clock(void *arg)
{
	return ((struct fix *)arg)->now;
}

/*
 * A second handle on the fixture's store: another connection, named app
 * (or not), with a setting of the server's set for its session (set:
 * "name%3Dvalue", added to the URI's options) or none.
 */
static struct queen *
open_with(struct fix *f, const char *app, const char *set)
{
	struct queen_options o = { 0 };
	struct queen *q = NULL;
	char path[400];
	int rc;

	snprintf(path, sizeof(path), "%s%s%s%s%s", f->path, set ? "%20-c" : "",
	    set ? set : "", app ? "&application_name=" : "", app ? app : "");
	o.path = path;
	o.sync = QUEEN_SYNC_OFF;
	o.clock = my_clock;
	o.clock_arg = f;
	if ((rc = queen_open(&o, &q)) != 0) {
		diag("queen_open(%s): %d", path, rc);
		exit(1);
	}
	return q;
}

static struct queen *
open_other(struct fix *f, const char *app)
{
	return open_with(f, app, NULL);
}

static void
test_cross_handles(void)
{
	struct fix f;
	struct queen *a = fix_open(&f, "pgm-cross");
	struct queen *b = open_other(&f, NULL);
	struct queen_batch *ba = NULL, *bb = NULL;
	struct queen_ack_result r;
	int rc;

	is_int(push1(a, Q, NULL, "m1", "one"), 1, "cross: push through a");
	is_int(push1(a, Q, NULL, "m2", "two"), 2, "cross: push through a");
	rc = pop1(b, Q, NULL, NULL, 1, &bb);
	is_int(rc, 0, "cross: pop through b");
	if (rc == 0) {
		is_int(bb->msgs[0].offset, 1, "cross: b gets offset 1");
		ok(bb->msgs[0].len == 3 &&
		    memcmp(bb->msgs[0].payload, "one", 3) == 0,
		    "cross: payload intact");
	} else {
		skip(2, "no batch");
	}
	is_int(pop1(a, Q, NULL, NULL, 1, &ba), -EAGAIN,
	    "cross: a's pop is -EAGAIN while b holds the lease");
	is_int(lease_count(a, Q, NULL), 1, "cross: a sees b's lease");
	rc = ack1(a, Q, NULL, NULL, "m1", "completed",
	    bb ? bb->lease_id : "x", &r);
	ok(rc == 0 && r.success, "cross: a acks b's lease (%s)", r.error);
	is_int(committed(b, Q, NULL, NULL), 1, "cross: b sees the ack");
	queen_batch_free(bb);
	bb = NULL;

	/* a lease taken in an open transaction: the row is locked, and the
	 * other handle skips the partition without waiting */
	is_int(queen_batch_begin(a, 0), 0, "cross: a opens a batch");
	rc = pop1(a, Q, NULL, NULL, 1, &ba);
	is_int(rc, 0, "cross: a pops m2 inside it");
	is_int(pop1(b, Q, NULL, NULL, 1, &bb), -EAGAIN,
	    "cross: b's pop skips the locked partition (-EAGAIN)");
	is_int(queen_batch_commit(a), 0, "cross: a commits");
	is_int(pop1(b, Q, NULL, NULL, 1, &bb), -EAGAIN,
	    "cross: and after the commit the lease holds (-EAGAIN)");
	queen_batch_free(ba);
	queen_close(b);
	fix_close(&f);
}

struct ack_arg {
	struct queen *q;
	const char *lease;
	struct queen_ack_result r;
	int rc;
	atomic_int done;
};

static void *
ack_thread(void *arg)
{
	struct ack_arg *a = arg;

	a->rc = ack1(a->q, Q, NULL, NULL, "r1", "completed", a->lease, &a->r);
	atomic_store(&a->done, 1);
	return NULL;
}

/*
 * What a batch reads between its calls locks nothing.  A mount looks a
 * lease up (the lookup of leased/<id>) inside its batch; had that taken
 * the cursor row FOR UPDATE until the batch's commit, another daemon's
 * ack of the lease would wait for it, and two daemons doing this the
 * other way round deadlocked: PostgreSQL then aborted a statement outside
 * any savepoint, and every request of the batch failed.
 */
static void
test_batch_reads(void)
{
	struct fix f;
	struct queen *a = fix_open(&f, "pgm-reads");
	struct queen *b = open_other(&f, NULL);
	struct queen_batch *bb = NULL;
	struct queen_lease_info li;
	struct ack_arg ack = { 0 };
	pthread_t th;
	int i, rc;

	is_int(push1(a, Q, NULL, "r1", "x"), 1, "reads: push");
	rc = pop1(b, Q, NULL, NULL, 1, &bb);
	is_int(rc, 0, "reads: b leases it");
	if (rc != 0) {
		queen_close(b);
		fix_close(&f);
		return;
	}
	is_int(queen_batch_begin(a, 0), 0, "reads: a opens a batch");
	is_int(queen_lease_get(a, bb->lease_id, &li), 0,
	    "reads: a looks the lease up inside it");
	ack.q = b;
	ack.lease = bb->lease_id;
	if (pthread_create(&th, NULL, ack_thread, &ack) != 0) {
		diag("pthread_create failed");
		exit(1);
	}
	for (i = 0; i < 300 && !atomic_load(&ack.done); i++)
		usleep(10000);
	ok(atomic_load(&ack.done),
	    "reads: b's ack of that lease went through while a's batch was "
	    "open (it waited %d ms)", i * 10);
	is_int(queen_batch_commit(a), 0, "reads: a commits");
	pthread_join(th, NULL);
	ok(ack.rc == 0 && ack.r.success, "reads: the ack succeeded (%s)",
	    ack.r.error);
	is_int(committed(a, Q, NULL, NULL), 1, "reads: a sees it committed");
	queen_batch_free(bb);
	queen_close(b);
	fix_close(&f);
}

/* Child: pop (and ack) until the queue is drained; offsets to fd. */
static int
drain_child(struct fix *f, int fd, int start, const char *group)
{
	struct queen *q = open_other(f, NULL);
	struct queen_batch *b;
	struct queen_ack_result r;
	int64_t off;
	char c;
	int rc, idle = 0;

	if (read(start, &c, 1) != 1)
		return 2;
	while (idle < 200) {
		rc = pop1(q, Q, NULL, group, 1, &b);
		if (rc == -EAGAIN) {
			if (committed(q, Q, group, NULL) >= NMSG)
				break;
			idle++;
			usleep(2000);
			continue;
		}
		if (rc != 0)
			return 3;
		idle = 0;
		off = b->msgs[0].offset;
		rc = ack1(q, Q, NULL, group, b->msgs[0].txid, "completed",
		    b->lease_id, &r);
		queen_batch_free(b);
		if (rc != 0 || !r.success)
			return 4;
		if (write(fd, &off, sizeof(off)) != (ssize_t)sizeof(off))
			return 5;
	}
	queen_close(q);
	return 0;
}

/* Child: one pop, no ack; writes 1 if it got a lease. */
static int
once_child(struct fix *f, int fd, int start)
{
	struct queen *q = open_other(f, NULL);
	struct queen_batch *b;
	char c, got;
	int rc;

	if (read(start, &c, 1) != 1)
		return 2;
	rc = pop1(q, Q, NULL, "g1", 1, &b);
	got = rc == 0;
	if (rc == 0)
		queen_batch_free(b);
	else if (rc != -EAGAIN)
		return 3;
	if (write(fd, &got, 1) != 1)
		return 5;
	queen_close(q);
	return 0;
}

static pid_t
spawn(struct fix *f, int mode, int out[2], int start[2], const char *group)
{
	pid_t pid = fork();

	if (pid == 0) {
		close(out[0]);
		close(start[1]);
		_exit(mode ? drain_child(f, out[1], start[0], group) :
		    once_child(f, out[1], start[0]));
	}
	return pid;
}

static int
reap(pid_t pid)
{
	int st;

	if (waitpid(pid, &st, 0) != pid || !WIFEXITED(st))
		return -1;
	return WEXITSTATUS(st);
}

static void
test_processes(void)
{
	struct fix f;
	struct queen *q = fix_open(&f, "pgm-procs");
	int out[2], start[2], seen[NMSG + 1], i, dups = 0, missing = 0;
	int leases = 0, round;
	pid_t p1, p2;
	int64_t off;
	char got;

	is_int(pushn(q, Q, NULL, "m", NMSG), 0, "procs: pushed");
	queen_close(q);
	f.q = NULL;
	/* two processes pop at once, without acking: one lease at most */
	for (round = 0; round < 5; round++) {
		if (pipe(out) || pipe(start))
			exit(1);
		fflush(stdout);
		p1 = spawn(&f, 0, out, start, NULL);
		p2 = spawn(&f, 0, out, start, NULL);
		close(out[1]);
		close(start[0]);
		if (write(start[1], "xx", 2) != 2)
			exit(1);
		close(start[1]);
		leases = 0;
		while (read(out[0], &got, 1) == 1)
			leases += got;
		close(out[0]);
		ok(reap(p1) == 0 && reap(p2) == 0, "procs: round %d: children "
		    "ran", round);
		is_int(leases, round == 0 ? 1 : 0, "procs: round %d: %d "
		    "lease(s) between two processes", round, round == 0);
	}
	/* two processes drain a 1-partition queue: each offset once */
	memset(seen, 0, sizeof(seen));
	if (pipe(out) || pipe(start))
		exit(1);
	fflush(stdout);
	p1 = spawn(&f, 1, out, start, "drain");
	p2 = spawn(&f, 1, out, start, "drain");
	close(out[1]);
	close(start[0]);
	if (write(start[1], "xx", 2) != 2)
		exit(1);
	close(start[1]);
	while (read(out[0], &off, sizeof(off)) == (ssize_t)sizeof(off)) {
		if (off >= 1 && off <= NMSG && seen[off]++)
			dups++;
	}
	close(out[0]);
	i = reap(p1);
	ok(i == 0, "drain: first child exit %d", i);
	i = reap(p2);
	ok(i == 0, "drain: second child exit %d", i);
	for (i = 1; i <= NMSG; i++)
		missing += !seen[i];
	is_int(dups, 0, "drain: no offset delivered twice");
	is_int(missing, 0, "drain: every offset delivered");
	fix_reopen(&f);
	fix_close(&f);
}

/*
 * Child: pushes the same NDUP transactionIds as the other NDUPP - 1,
 * at the same time, to one partition; writes how many it found queued.  Both wait on
 * the partition's row lock in turn, and each must see the other's hash
 * rows once it holds it (the push's rows are read ahead in one statement
 * under that lock: t-pgmulti checks nothing slips between them).
 */
#define NDUP 600
#define NDUPP 3
#define DUP_BATCH 10
/* the pushes go one a call, or DUP_BATCH a call (into queue dupm) */
static bool dup_many;

static int
dup_child(struct fix *f, int fd, int start)
{
	struct queen *q = open_other(f, NULL);
	struct queen_push_item it[DUP_BATCH];
	struct queen_push_result res[DUP_BATCH];
	char txid[DUP_BATCH][32], c;
	int i, j, queued = 0;
	int64_t rc;
	bool dup = false;

	if (read(start, &c, 1) != 1)
		return 2;
	for (i = 0; !dup_many && i < NDUP; i++) {
		snprintf(txid[0], sizeof(txid[0]), "same-%d", i);
		rc = push_ex(q, "dupq", "p", txid[0], txid[0], false, &dup);
		if (rc < 0)
			return 3;
		queued += !dup;
	}
	for (i = 0; dup_many && i < NDUP; i += DUP_BATCH) {
		for (j = 0; j < DUP_BATCH; j++) {
			snprintf(txid[j], sizeof(txid[j]), "same-%d", i + j);
			it[j] = push_item("dupm", "p", txid[j], txid[j]);
		}
		if (queen_push(q, it, DUP_BATCH, false, res) != 0)
			return 3;
		for (j = 0; j < DUP_BATCH; j++)
			queued += res[j].status == QUEEN_PUSH_QUEUED;
	}
	if (write(fd, &queued, sizeof(queued)) != (ssize_t)sizeof(queued))
		return 5;
	queen_close(q);
	return 0;
}

/*
 * many: in calls of DUP_BATCH, whose partition row and dedup lookups
 * are one statement (push_ahead): one that waited for the row's lock
 * must not keep lookups that missed the other's hash rows.
 */
static void
test_dedup_race(bool many)
{
	const char *queue = many ? "dupm" : "dupq",
		   *how = many ? "many" : "one";
	struct fix f;
	struct queen *q = fix_open(&f, many ? "pgm-dupm" : "pgm-dup");
	struct queen_partition_info pi;
	int out[2], start[2], n, queued = 0, k;
	pid_t p[NDUPP];

	dup_many = many;
	is_int(push1(q, queue, "p", "same-0", "first"), 1,
	    "dup: %s a call: first push", how);
	queen_close(q);
	f.q = NULL;
	if (pipe(out) || pipe(start))
		exit(1);
	fflush(stdout);
	for (k = 0; k < NDUPP; k++) {
		if ((p[k] = fork()) == 0) {
			close(out[0]);
			close(start[1]);
			_exit(dup_child(&f, out[1], start[0]));
		}
	}
	close(out[1]);
	close(start[0]);
	if (write(start[1], "xxx", NDUPP) != NDUPP)
		exit(1);
	close(start[1]);
	while (read(out[0], &n, sizeof(n)) == (ssize_t)sizeof(n))
		queued += n;
	close(out[0]);
	for (n = 0, k = 0; k < NDUPP; k++)
		n += reap(p[k]) != 0;
	is_int(n, 0, "dup: %s a call: the %d pushers ran", how, NDUPP);
	is_int(queued, NDUP - 1,
	    "dup: %s a call: each id queued once between "
	    "them",
	    how);
	fix_reopen(&f);
	memset(&pi, 0, sizeof(pi));
	k = queen_partition_get(f.q, queue, "p", &pi);
	ok(k == 0 && pi.tail == NDUP,
	    "dup: %s a call: the partition holds %d (%lld)", how, NDUP,
	    (long long)pi.tail);
	fix_close(&f);
}

/*
 * KV read-modify-writes of transactions on several handles at once: an
 * incr reads the value and writes it plus one, a putIfAbsent reads that
 * the key is missing and writes it.  Each must hold what it read until
 * its commit, also where it read nothing: no incr is lost, and each gate
 * key lets exactly one of the racers through.
 */
#define KV_INCRS 40
#define KV_GATES 30
#define KV_PROCS 3

static int
kv_txn_retry(struct queen *q, const struct queen_kv_op *op,
    enum queen_txn_reason *why)
{
	struct queen_txn t = { .kv = op, .nkv = 1 };
	struct queen_txn_result *r = NULL;
	int rc, tries = 0;

	do {
		queen_txn_result_free(r);
		r = NULL;
		rc = queen_txn(q, &t, &r);
	} while (rc == -EBUSY && ++tries < 50);
	*why = r ? r->reason : QUEEN_TXN_BAD_REQUEST;
	queen_txn_result_free(r);
	return rc;
}

static int
kv_child(struct fix *f, int fd, int start, int who)
{
	struct queen *q = open_other(f, NULL);
	struct queen_kv_op op;
	enum queen_txn_reason why;
	char key[32], val[12], c;
	int i, won = 0;

	if (read(start, &c, 1) != 1)
		return 2;
	snprintf(val, sizeof(val), "%d", who);
	for (i = 0; i < KV_INCRS + KV_GATES; i++) {
		memset(&op, 0, sizeof(op));
		op.ns = "race";
		op.expect_version = -1;
		/* the gates first, while the racers are still in step */
		if (i >= KV_GATES) {
			op.type = QUEEN_KV_INCR;
			op.key = "counter";
			op.by = 1;
		} else {
			snprintf(key, sizeof(key), "gate-%d", i);
			op.type = QUEEN_KV_PUT_IF_ABSENT;
			op.key = key;
			op.value = val;
			op.len = strlen(val);
			op.required = true;
		}
		if (kv_txn_retry(q, &op, &why) != 0)
			return 3;
		if (i >= KV_GATES && why != QUEEN_TXN_OK)
			return 4;
		won += i < KV_GATES && why == QUEEN_TXN_OK;
	}
	if (write(fd, &won, sizeof(won)) != (ssize_t)sizeof(won))
		return 5;
	queen_close(q);
	return 0;
}

static void
test_kv_race(void)
{
	struct fix f;
	struct queen *q = fix_open(&f, "pgm-kvrace");
	struct queen_kv_value *v = NULL;
	int out[2], start[2], n, won = 0, k;
	pid_t p[KV_PROCS];

	queen_close(q);
	f.q = NULL;
	if (pipe(out) || pipe(start))
		exit(1);
	fflush(stdout);
	for (k = 0; k < KV_PROCS; k++) {
		if ((p[k] = fork()) == 0) {
			close(out[0]);
			close(start[1]);
			_exit(kv_child(&f, out[1], start[0], k));
		}
	}
	close(out[1]);
	close(start[0]);
	if (write(start[1], "xxx", KV_PROCS) != KV_PROCS)
		exit(1);
	close(start[1]);
	while (read(out[0], &n, sizeof(n)) == (ssize_t)sizeof(n))
		won += n;
	close(out[0]);
	for (n = 0, k = 0; k < KV_PROCS; k++)
		n += reap(p[k]) != 0;
	is_int(n, 0, "kv race: the %d processes ran", KV_PROCS);
	fix_reopen(&f);
	is_int(queen_kv_get(f.q, "race", "counter", &v), 0,
	    "kv race: the counter is there");
	is_str(v ? (const char *)v->data : "", "120",
	    "kv race: no incr of %d x %d lost", KV_PROCS, KV_INCRS);
	free(v);
	is_int(won, KV_GATES, "kv race: each putIfAbsent gate let one through");
	fix_close(&f);
}

/*
 * Rows read ahead of a call answer only that call's own lookups: a later
 * call (another FUSE request) sees what another handle changed meanwhile,
 * though no statement went out between.
 */
static void
test_ahead_ages(void)
{
	struct fix f;
	struct queen *a = fix_open(&f, "pgm-ahead");
	struct queen *b = open_other(&f, NULL);
	const char *key[] = { "max_message_bytes" }, *val[] = { "10" };
	int64_t v = 0;

	is_int(push1(a, "aq", NULL, "m1", "one"), 1, "ahead: pushed");
	is_int(queen_push_is_dup(a, "aq", QUEEN_DEFAULT_PARTITION, "m1"), 0,
	    "ahead: m1 is a duplicate-to-be (its rows read ahead)");
	is_int(queen_config_set(b, "aq", NULL, key, val, 1), 0,
	    "ahead: b lowers max_message_bytes");
	usleep(5000);
	is_int(queen_config_get(a, "aq", NULL, "max_message_bytes", &v), 0,
	    "ahead: a asks again");
	is_int(v, 10, "ahead: a sees b's limit");
	queen_close(b);
	fix_close(&f);
}

/* A line of /proc/self/status in kB ("VmRSS", "VmHWM"); -1 if none. */
static long
status_kib(const char *key)
{
	FILE *fp = fopen("/proc/self/status", "r");
	char line[256];
	size_t kl = strlen(key);
	long v = -1;

	while (fp && fgets(line, sizeof(line), fp)) {
		if (strncmp(line, key, kl) == 0 && line[kl] == ':') {
			v = strtol(line + kl + 1, NULL, 10);
			break;
		}
	}
	if (fp)
		fclose(fp);
	return v;
}

/* false under valgrind or a sanitizer, or without VmHWM to reset */
static bool
rss_meaningful(void)
{
	char line[512];
	bool vg = false;
	FILE *fp;

	if (RSS_MEANS_NOTHING)
		return false;
	if ((fp = fopen("/proc/self/maps", "r")) != NULL) {
		while (!vg && fgets(line, sizeof(line), fp))
			vg = strstr(line, "vgpreload") != NULL;
		fclose(fp);
	}
	if (vg || !(fp = fopen("/proc/self/clear_refs", "w")))
		return false;
	fclose(fp);
	return status_kib("VmHWM") > 0;
}

/* Start VmHWM again from the resident set now. */
static void
hwm_reset(void)
{
	FILE *fp = fopen("/proc/self/clear_refs", "w");

	if (fp) {
		fputs("5", fp);
		fclose(fp);
	}
}

/*
 * A big message in a push of several: the small ones around it are
 * buffered, it is not.  libpq's send buffer holds one copy of it while
 * it goes out, and keeps that buffer: no other copy is made (at its peak,
 * and after) than that one, and all arrive in order, intact (the second
 * small one is still buffered when the big one goes out).  The same for
 * a big traceId (trace), which no limit bounds.
 */
#define BIG (12 << 20)
#define NBIG 4
static void
test_big_append(bool trace)
{
	static const char *const txid[NBIG] = { "s0", "s1", "b1", "s2" };
	struct fix f;
	struct queen *q = fix_open(&f, trace ? "pgm-bigtrace" : "pgm-big");
	const char *what = trace ? "bigtrace" : "big";
	const char *key[] = { "max_message_bytes" }, *val[] = { "16777216" };
	struct queen_push_item it[NBIG];
	struct queen_push_result res[NBIG];
	struct queen_batch *b = NULL;
	bool meaningful = rss_meaningful();
	long rss0, rss1, hwm0, hwm1;
	char *big;
	int rc, i, good;

	is_int(push1(q, "big", NULL, "w", "warm"), 1, "%s: a first push", what);
	is_int(queen_config_set(q, "big", NULL, key, val, 1), 0,
	    "%s: max_message_bytes 16 MiB", what);
	malloc_trim(0);
	rss0 = status_kib("VmRSS");
	if (!(big = malloc(BIG + 1)))
		exit(1);
	memset(big, 'b', BIG);
	big[BIG] = '\0';
	memset(it, 0, sizeof(it));
	for (i = 0; i < NBIG; i++) {
		it[i].queue = "big";
		it[i].txid = txid[i];
		it[i].payload = i == 2 && !trace ? big : txid[i];
		it[i].len = i == 2 && !trace ? BIG : 2;
		it[i].trace_id = i == 2 && trace ? big : NULL;
	}
	hwm_reset();
	hwm0 = status_kib("VmHWM");
	rc = queen_push(q, it, NBIG, false, res);
	hwm1 = status_kib("VmHWM");
	free(big);
	malloc_trim(0);
	rss1 = status_kib("VmRSS");
	is_int(rc, 0, "%s: the four pushed in one call", what);
	if (meaningful) {
		diag("%s: %d kB pushed, %ld kB more at the peak, %ld kB kept",
		    what, BIG >> 10, hwm1 - hwm0, rss1 - rss0);
		ok(hwm1 - hwm0 < (BIG >> 10) * 3 / 2,
		    "%s: one copy more at most while it goes out (%ld kB)",
		    what, hwm1 - hwm0);
		ok(rss1 - rss0 < (BIG >> 10) * 3 / 2,
		    "%s: one copy kept at most after it (%ld kB)", what,
		    rss1 - rss0);
	} else {
		skip(2, "the resident set says nothing here");
	}
	rc = queen_msg_read(q, "big", NULL, 2, 10, true, &b);
	ok(rc == 0 && b && b->n == NBIG, "%s: offsets 2 to 5 read back (%d)",
	    what, rc);
	for (i = 0, good = 0; rc == 0 && b && i < (int)b->n && i < NBIG; i++) {
		const struct queen_msg *m = &b->msgs[i];
		const char *p = m->payload, *t = m->trace_id;
		bool one = i == 2 && !trace, tr = i == 2 && trace;

		good += m->offset == i + 2 && strcmp(m->txid, txid[i]) == 0 &&
		    m->len == (one ? BIG : 2) &&
		    (one ? p[0] == 'b' && p[BIG - 1] == 'b' :
			   memcmp(p, txid[i], 2) == 0) &&
		    (tr ? t && strlen(t) == BIG : !t);
	}
	is_int(good, NBIG, "%s: each in its place, whole", what);
	queen_batch_free(b);
	is_int(queen_push_is_dup(q, "big", QUEEN_DEFAULT_PARTITION, "b1"), 0,
	    "%s: its hash row is there", what);
	fix_close(&f);
}

/* Two processes create the same queue, partition and group at once. */
static int
race_child(struct fix *f, int start, int who)
{
	struct queen *q = open_other(f, NULL);
	struct queen_batch *b;
	char txid[32], c;
	int i, rc;

	if (read(start, &c, 1) != 1)
		return 2;
	for (i = 0; i < 20; i++) {
		snprintf(txid, sizeof(txid), "c%d-%d", who, i);
		if (push1(q, "fresh", "p", txid, txid) < 0)
			return 3;
	}
	rc = pop1(q, "fresh", NULL, "newgroup", 1, &b);
	if (rc == 0)
		queen_batch_free(b);
	else if (rc != -EAGAIN)
		return 4;
	queen_close(q);
	return 0;
}

static void
test_create_race(void)
{
	struct fix f;
	struct queen *q = fix_open(&f, "pgm-race");
	int start[2], i, rc;
	pid_t p[2];

	if (pipe(start))
		exit(1);
	fflush(stdout);
	for (i = 0; i < 2; i++) {
		if ((p[i] = fork()) == 0) {
			close(start[1]);
			_exit(race_child(&f, start[0], i));
		}
	}
	close(start[0]);
	if (write(start[1], "xx", 2) != 2)
		exit(1);
	close(start[1]);
	for (i = 0; i < 2; i++) {
		rc = reap(p[i]);
		is_int(rc, 0, "race: child %d pushed and popped", i);
	}
	is_int(tail_of(q, "fresh", "p"), 40, "race: one partition, 40 "
	    "messages");
	is_int(lease_count(q, "fresh", "newgroup"), 1,
	    "race: one group, one lease");
	fix_close(&f);
}

struct names {
	char got[8][QUEEN_NAME_MAX + 1];
	int64_t part[8];
	int n;
};

static int64_t last_part;

static int
name_cb(void *arg, const char *name, int64_t part_id)
{
	struct names *nm = arg;

	last_part = part_id;
	if (nm->n < 8) {
		nm->part[nm->n] = part_id;
		snprintf(nm->got[nm->n++], sizeof(nm->got[0]), "%s", name);
	}
	return 0;
}

/* Drains b's descriptor: how many announcements named queue. */
static int
named(struct queen *b, int fd, int ms, const char *queue)
{
	struct pollfd pfd = { .fd = fd, .events = POLLIN };
	struct names nm;
	int i, found = 0;

	memset(&nm, 0, sizeof(nm));
	queen_events(b, name_cb, &nm);
	if (poll(&pfd, 1, ms) == 1)
		queen_events(b, name_cb, &nm);
	for (i = 0; i < nm.n; i++)
		found += strcmp(nm.got[i], queue) == 0;
	return nm.n == found ? found : -1;
}

static void
test_events(void)
{
	struct fix f, g;
	struct queen *a = fix_open(&f, "pgm-events");
	struct queen *b = open_other(&f, NULL);
	struct queen *c = fix_open(&g, "pgm-events-other");
	struct queen *lite = NULL;
	struct queen_options o = { 0 };
	struct queen_batch *ba = NULL;
	struct queen_ack_result ar;
	struct queen_event_counts ca, cb;
	struct pollfd pfd;
	char path[320];
	int fd, fc, rc;

	fd = queen_event_fd(b);
	ok(fd >= 0, "events: b has a descriptor (%d)", fd);
	is_int(queen_event_watch(b, "evq", true), -ENOENT,
	    "events: no watch of a queue that does not exist");
	push1(a, "evq", NULL, "e1", "x");
	push1(c, "evq", NULL, "o1", "x");
	is_int(queen_event_watch(b, "evq", true), 1,
	    "events: b starts watching evq");
	is_int(queen_event_watch(b, "evq", true), 0,
	    "events: watching it again changes nothing");
	fc = queen_event_fd(c);
	is_int(queen_event_watch(c, "evq", true), 1,
	    "events: c watches its own evq, in another schema");

	/* e1 is waiting: a push behind it wakes nobody */
	push1(a, "evq", NULL, "e2", "x");
	is_int(named(b, fd, 300, "evq"), 0,
	    "events: a push behind a waiting message announces nothing");
	is_int(pop1(a, "evq", NULL, NULL, 1, &ba), 0, "events: a leases e1");
	is_int(named(b, fd, 300, "evq"), 0, "events: a pop announces nothing");
	rc = ack1(a, "evq", NULL, NULL, "e1", "completed",
	    ba ? ba->lease_id : "x", &ar);
	ok(rc == 0 && ar.success, "events: a acks e1");
	ok(named(b, fd, 5000, "evq") >= 1,
	    "events: the ack released the "
	    "partition with e2 behind: announced");
	queen_batch_free(ba);
	ba = NULL;
	is_int(pop1(a, "evq", NULL, NULL, 1, &ba), 0, "events: a leases e2");
	rc = ack1(a, "evq", NULL, NULL, "e2", "completed",
	    ba ? ba->lease_id : "x", &ar);
	ok(rc == 0 && ar.success, "events: a acks e2");
	is_int(named(b, fd, 300, "evq"), 0,
	    "events: an ack with nothing "
	    "behind announces nothing");
	queen_batch_free(ba);
	ba = NULL;

	/* the group has read the partition to its end: the next push is
	 * announced, at commit */
	is_int(queen_batch_begin(a, 0), 0, "events: a opens a batch");
	push1(a, "evq", NULL, "e3", "x");
	push1(a, "evq", NULL, "e4", "x");
	pfd.fd = fd;
	pfd.events = POLLIN;
	is_int(poll(&pfd, 1, 200), 0, "events: nothing before the commit");
	is_int(queen_batch_commit(a), 0, "events: a commits");
	ok(named(b, fd, 5000, "evq") == 1,
	    "events: one announcement for "
	    "the two pushes");
	ok(last_part > 0, "events: it names the partition (%lld)",
	    (long long)last_part);
	is_int(named(c, fc, 300, "evq"), 0,
	    "events: the other schema's evq heard nothing");
	is_int(pop1(a, "evq", NULL, NULL, 1, &ba), 0, "events: a leases e3");
	rc = ack1(a, "evq", NULL, NULL, "e3", "failed", ba ? ba->lease_id : "x",
	    &ar);
	ok(rc == 0 && ar.success, "events: a fails e3");
	ok(named(b, fd, 5000, "evq") >= 1,
	    "events: the failure released the "
	    "lease for the redelivery: announced");
	queen_batch_free(ba);
	ba = NULL;
	is_int(queen_seek(a, "evq", NULL, NULL, QUEEN_POS_END, 0), 0,
	    "events: a seeks to the end");
	ok(named(b, fd, 5000, "evq") >= 1, "events: a seek is announced");
	is_int((int)last_part, 0, "events: for the whole queue");

	is_int(queen_event_watch(b, "evq", false), 0, "events: b stops");
	push1(a, "evq", NULL, "e5", "x");
	is_int(named(b, fd, 300, "evq"), 0, "events: b hears nothing then");
	queen_event_counts(a, &ca);
	queen_event_counts(b, &cb);
	ok(ca.sent >= 4, "events: a announced %llu times",
	    (unsigned long long)ca.sent);
	ok(cb.received >= 4 && cb.watching == 0 && cb.watches == 1,
	    "events: b received %llu, watches %llu, started %llu",
	    (unsigned long long)cb.received, (unsigned long long)cb.watching,
	    (unsigned long long)cb.watches);
	queen_event_counts(c, &ca);
	is_int((int)ca.received, 0, "events: c received nothing");

	snprintf(path, sizeof(path), "%s/lite.db", f.dir);
	o.path = path;
	o.sync = QUEEN_SYNC_OFF;
	if (queen_open(&o, &lite) == 0) {
		is_int(queen_event_fd(lite), -ENOTSUP,
		    "events: SQLite has no descriptor");
		is_int(queen_event_watch(lite, "evq", true), -ENOTSUP,
		    "events: nor watches");
		is_int(queen_events(lite, name_cb, NULL), -ENOTSUP,
		    "events: nor events");
		queen_close(lite);
	} else {
		ok(0, "events: SQLite store opens");
	}
	queen_close(b);
	fix_close(&g);
	fix_close(&f);
}

/* One statement on the fixture's schema: its first value, or -1. */
static int64_t
sql_value(const struct fix *f, const char *sql)
{
	PGconn *c = PQconnectdb(f->path);
	PGresult *r = PQexec(c, sql);
	int64_t v = -1;
	ExecStatusType st = PQresultStatus(r);

	if (st == PGRES_TUPLES_OK && PQntuples(r) > 0)
		v = strtoll(PQgetvalue(r, 0, 0), NULL, 10);
	else if (st == PGRES_COMMAND_OK)
		v = 0;
	else
		diag("%s: %s", sql, PQresultErrorMessage(r));
	PQclear(r);
	PQfinish(c);
	return v;
}

/* One racer at a held gate: 1 through it, 0 refused, else a failure. */
static int
gate_child(struct fix *f, int fd)
{
	struct queen *q = open_other(f, NULL);
	struct queen_kv_op op = { .type = QUEEN_KV_PUT_IF_ABSENT,
		.ns = "race",
		.key = "held",
		.value = "v",
		.len = 1,
		.expect_version = -1,
		.required = true };
	enum queen_txn_reason why;
	int won;

	if (kv_txn_retry(q, &op, &why) != 0)
		return 3;
	won = why == QUEEN_TXN_OK;
	if (write(fd, &won, sizeof(won)) != (ssize_t)sizeof(won))
		return 5;
	queen_close(q);
	return 0;
}

/*
 * The race at its worst: another session's insert of the gate key, not
 * yet committed, keeps both racers' reads finding it missing and makes
 * each insert wait; then it rolls back.  Exactly one racer gets through.
 */
static void
test_kv_gate_held(void)
{
	struct fix f;
	struct queen *q = fix_open(&f, "pgm-kvgate");
	struct queen_kv_value *v = NULL;
	PGconn *c;
	PGresult *r;
	int out[2], n, won = 0, k, waited;
	pid_t p[2];

	/* the namespace exists, the key does not */
	is_int(queen_kv_put(q, "race", "other", "x", 1, 0, false), 0,
	    "kv gate: a namespace");
	c = PQconnectdb(f.path);
	r = PQexec(c,
	    "BEGIN; INSERT INTO kv (ns, key, value, version, "
	    "expires_at, updated_at) VALUES ('race', 'held', 'x', 1, 0, 0)");
	is_int(PQresultStatus(r), PGRES_COMMAND_OK,
	    "kv gate: another session inserts the key, uncommitted");
	PQclear(r);
	if (pipe(out))
		exit(1);
	fflush(stdout);
	for (k = 0; k < 2; k++) {
		if ((p[k] = fork()) == 0) {
			close(out[0]);
			_exit(gate_child(&f, out[1]));
		}
	}
	close(out[1]);
	/* both racers waiting on a lock (up to 10 s) */
	for (waited = 0; waited < 1000; waited++) {
		if (sql_value(&f,
			"SELECT count(*) FROM pg_stat_activity "
			"WHERE wait_event_type = 'Lock' AND "
			"datname = current_database()") >= 2)
			break;
		usleep(10000);
	}
	ok(waited < 1000, "kv gate: both racers wait on a lock");
	PQclear(PQexec(c, "ROLLBACK"));
	PQfinish(c);
	while (read(out[0], &n, sizeof(n)) == (ssize_t)sizeof(n))
		won += n;
	close(out[0]);
	for (n = 0, k = 0; k < 2; k++)
		n += reap(p[k]) != 0;
	is_int(n, 0, "kv gate: the racers ran");
	is_int(won, 1, "kv gate: exactly one racer got through");
	is_int(queen_kv_get(q, "race", "held", &v), 0,
	    "kv gate: the key is "
	    "there");
	ok(v && v->version == 1, "kv gate: written once (version %lld)",
	    v ? (long long)v->version : -1LL);
	free(v);
	fix_close(&f);
}

/*
 * The maintenance tick locks only the partitions it changes: another
 * handle holding a partition row (a push not yet committed) does not
 * hold it up, and an expired partition elsewhere is purged meanwhile.
 */
static void
test_maint_locks(void)
{
	struct fix f;
	struct queen *a = fix_open(&f, "pgm-maint");
	struct queen *b = open_other(&f, NULL);
	bool more = true;
	ssize_t n;

	push1(a, Q, "busy", "m1", "x");
	push1(a, "old", "p", "o1", "x");
	push1(a, "old", "p", "o2", "x");
	cfg(a, "old", NULL, "retention", "60");
	f.now += 61 * 1000;
	is_int(queen_batch_begin(a, 0), 0, "maint: a opens a batch");
	is_int(push1(a, Q, "busy", "m2", "x"), 2,
	    "maint: a pushes, holding "
	    "the partition row");
	n = queen_maintain(b, &more);
	ok(n == 2,
	    "maint: b's tick purged the expired partition without "
	    "waiting for a's (%zd)",
	    n);
	is_int(queen_batch_commit(a), 0, "maint: a commits");
	is_int(tail_of(b, Q, "busy"), 2, "maint: a's push is there");
	queen_close(b);
	fix_close(&f);
}

/*
 * A database at schema version 2 (the lease id indexed on cursors)
 * migrates on first open: a lease taken before is still found and acked.
 */
static void
test_migrate(void)
{
	struct fix f;
	struct queen *q = fix_open(&f, "pgm-migrate");
	struct queen_batch *ba = NULL;
	struct queen_lease_info li;
	struct queen_ack_result ar;
	char lease[QUEEN_ID_LEN + 1] = "";
	int rc;

	push1(q, Q, NULL, "m1", "x");
	push1(q, Q, NULL, "m2", "x");
	is_int(pop1(q, Q, NULL, NULL, 1, &ba), 0, "migrate: m1 leased");
	if (ba)
		snprintf(lease, sizeof(lease), "%s", ba->lease_id);
	queen_batch_free(ba);
	is_int((int)sql_value(&f,
		   "DROP TRIGGER cursors_lease ON cursors; "
		   "DROP FUNCTION queen_lease_index(); DROP TABLE leases; "
		   "CREATE INDEX cursors_lease ON cursors (lease_id) "
		   "WHERE lease_id IS NOT NULL; "
		   "ALTER TABLE cursors DROP COLUMN ready_slot; "
		   "DROP TABLE queen_flush; "
		   "DROP FUNCTION queen_part_claim(bigint, bigint, bigint, "
		   "bigint, bigint, bigint); "
		   "ALTER TABLE cursors RESET (fillfactor); "
		   "CREATE INDEX cursors_ready ON cursors "
		   "(group_id, next_at, partition_id); "
		   "UPDATE queen_meta SET version = 2"),
	    0, "migrate: the schema made a version 2 one");
	queen_close(q);
	q = fix_reopen(&f);
	is_int((int)sql_value(&f, "SELECT version FROM queen_meta"), 7,
	    "migrate: version 7 after the open");
	/* version 7: a push's claim of its partition */
	is_int((int)sql_value(&f,
		   "SELECT count(*) FROM pg_proc WHERE proname = "
		   "'queen_part_claim' AND pronamespace = "
		   "current_schema()::regnamespace"),
	    1, "migrate: queen_part_claim is there");
	/* version 5: the ready index holds next_at's 10 ms slot */
	is_int((int)sql_value(&f,
		   "SELECT count(*) FROM pg_indexes WHERE "
		   "schemaname = current_schema() AND indexname = "
		   "'cursors_ready' AND indexdef LIKE "
		   "'%(group_id, ready_slot, partition_id)'"),
	    1, "migrate: cursors_ready is on the slot");
	is_int((int)sql_value(&f,
		   "SELECT count(*) FROM cursors WHERE ready_slot <> CASE WHEN "
		   "next_at < 0 THEN -1 ELSE next_at / 10 END"),
	    0, "migrate: every cursor has its slot");
	/* version 4: the name lookup of a dead letter has its order from
	 * dlq_txid, whatever the planner's statistics */
	is_int((int)sql_value(&f,
		   "SELECT count(*) FROM pg_indexes WHERE "
		   "schemaname = current_schema() AND indexname = 'dlq_txid' "
		   "AND indexdef LIKE '%(queue_id, group_name, txid, id)'"),
	    1, "migrate: dlq_txid ends with the id");
	is_int((int)sql_value(&f,
		   "SELECT count(*) FROM pg_indexes WHERE "
		   "schemaname = current_schema() AND tablename = 'cursors' "
		   "AND "
		   "indexdef LIKE '%lease_id%'"),
	    0, "migrate: no index on a cursor's lease_id");
	is_int((int)sql_value(&f, "SELECT count(*) FROM leases"), 1,
	    "migrate: the live lease is in the leases table");
	is_int(queen_lease_get(q, lease, &li), 0,
	    "migrate: the old lease is "
	    "found");
	rc = ack1(q, Q, NULL, NULL, "m1", "completed", lease, &ar);
	ok(rc == 0 && ar.success, "migrate: and acked with");
	is_int((int)sql_value(&f, "SELECT count(*) FROM leases"), 0,
	    "migrate: the ack took it out of the leases table");
	is_int(pop1(q, Q, NULL, NULL, 1, &ba), 0, "migrate: m2 leased");
	ok(ba && queen_lease_get(q, ba->lease_id, &li) == 0 && li.first == 2,
	    "migrate: a new lease is found by its id");
	queen_batch_free(ba);
	fix_close(&f);
}

/* idx_tup_read (or idx_scan) of one index */
static int64_t
index_stat(const struct fix *f, const char *index, const char *col)
{
	char sql[256];

	snprintf(sql, sizeof(sql),
	    "SELECT %s FROM pg_stat_user_indexes WHERE "
	    "schemaname = current_schema() AND indexrelname = '%s'",
	    col, index);
	return sql_value(f, sql);
}

/*
 * A dead letter's lookup by name reads its own rows, not the group's
 * DLQ, also before the table's first ANALYZE (schema version 4): the
 * server's statistics of the indexes over that one lookup.  A backend
 * reports them when it goes idle a second or more after its last
 * report (else up to 10 s later), so each step waits that second.
 */
static void
test_dlq_lookup(void)
{
	enum { N = 1000 };
	struct fix f;
	struct queen *q = fix_open(&f, "pgm-dlqget");
	struct queen_ack_result ar;
	struct queen_batch *b;
	struct dlq_find d = { 0 };
	int i, ok_all = 1;
	int64_t g0, g1, t0, t1 = -1;
	char txid[32];

	/* no ANALYZE by autovacuum in between */
	is_int((int)sql_value(&f,
		   "ALTER TABLE dlq SET "
		   "(autovacuum_enabled = off)"),
	    0, "dlq lookup: autovacuum off on dlq");
	for (i = 0; i < N; i++) {
		snprintf(txid, sizeof(txid), "d%04d", i);
		if (push1(q, Q, NULL, txid, "x") < 0)
			ok_all = 0;
	}
	for (i = 0; i < N && ok_all; i++) {
		if (pop1(q, Q, NULL, NULL, 1, &b) != 0 || b->n != 1) {
			ok_all = 0;
		} else if (ack1(q, Q, NULL, NULL, b->msgs[0].txid, "dlq",
			       b->lease_id, &ar) != 0 ||
		    !ar.success) {
			ok_all = 0;
		}
		queen_batch_free(b);
	}
	ok(ok_all, "dlq lookup: %d messages dead-lettered", N);
	/* a push elsewhere reports what came before it (a backend reports
	 * before it says it is ready for the next statement) */
	usleep(1200 * 1000);
	push1(q, "elsewhere", NULL, "e1", "x");
	usleep(1200 * 1000);
	g0 = index_stat(&f, "dlq_group", "idx_tup_read");
	t0 = index_stat(&f, "dlq_txid", "idx_scan");
	is_int(queen_dlq_get(q, Q, NULL, QUEEN_DEFAULT_PARTITION, "d0500",
		   false, dlq_cb, &d),
	    0, "dlq lookup: d0500 asked");
	is_int(d.n, 1, "dlq lookup: one dead letter found");
	/* reported at the end of that statement; at the latest by the
	 * idle backend's timer */
	for (i = 0; i < 150 && t1 <= t0; i++) {
		usleep(100 * 1000);
		t1 = index_stat(&f, "dlq_txid", "idx_scan");
	}
	g1 = index_stat(&f, "dlq_group", "idx_tup_read");
	ok(t1 > t0, "dlq lookup: by the name index (%lld -> %lld scans)",
	    (long long)t0, (long long)t1);
	ok(g1 - g0 < 10, "dlq lookup: %lld rows of the group's index read",
	    (long long)(g1 - g0));
	fix_close(&f);
}

/*
 * n_tup_upd and n_tup_hot_upd of cursors once the backend has reported
 * what came before (as txns_stats_now: a push elsewhere, each side of a
 * second).
 */
static void
cursor_stats_now(struct fix *f, struct queen *q, int64_t *upd, int64_t *hot)
{
	static int n;
	char txid[16];

	snprintf(txid, sizeof(txid), "c%d", ++n);
	usleep(1200 * 1000);
	push1(q, "elsewhere", NULL, txid, "x");
	usleep(1200 * 1000);
	*upd = sql_value(f,
	    "SELECT n_tup_upd FROM pg_stat_user_tables WHERE "
	    "schemaname = current_schema() AND relname = "
	    "'cursors'");
	*hot = sql_value(f,
	    "SELECT n_tup_hot_upd FROM pg_stat_user_tables "
	    "WHERE schemaname = current_schema() AND relname = "
	    "'cursors'");
}

/*
 * Pops and acks through a backlog are HOT updates of the cursor (schema
 * version 5): a pop changes no indexed column, and an ack changes the
 * ready index's slot of next_at only when the next message was pushed in
 * another 10 ms.  40 messages pushed 3 ms apart (the fixture's clock),
 * popped and acked one at a time: every pop, and every ack whose next
 * message is in its message's slot, must be HOT (with next_at itself in
 * the index, before version 5, no ack was).
 */
static void
test_hot_acks(void)
{
	enum { N = 40 };
	struct fix f;
	struct queen *q = fix_open(&f, "pgm-hot");
	struct queen_ack_result ar;
	struct queen_batch *b;
	int64_t at[N], u0 = 0, h0 = 0, u1 = 0, h1 = 0;
	char txid[16];
	int i, same = 0, ok_all = 1;

	for (i = 0; i < N; i++) {
		snprintf(txid, sizeof(txid), "h%02d", i);
		if (push1(q, "hot", NULL, txid, "x") < 0)
			ok_all = 0;
		f.now += 3;
	}
	/* the first pair makes the cursor what it will be */
	for (i = 0; i < N - 1 && ok_all; i++) {
		if (i == 1)
			cursor_stats_now(&f, q, &u0, &h0);
		if (pop1(q, "hot", NULL, NULL, 1, &b) != 0 || b->n != 1) {
			ok_all = 0;
		} else {
			at[i] = b->msgs[0].created_at;
			if (ack1(q, "hot", NULL, NULL, b->msgs[0].txid,
				"completed", b->lease_id, &ar) != 0 ||
			    !ar.success)
				ok_all = 0;
		}
		queen_batch_free(b);
	}
	ok(ok_all, "hot: %d pushed, %d popped and acked", N, N - 1);
	at[N - 1] = -1;
	if (ok_all && pop1(q, "hot", NULL, NULL, 1, &b) == 0 && b->n == 1)
		at[N - 1] = b->msgs[0].created_at;
	queen_batch_free(b);
	for (i = 1; i < N - 1; i++)
		same += at[i + 1] / 10 == at[i] / 10;
	cursor_stats_now(&f, q, &u1, &h1);
	diag("hot: %lld cursor updates, %lld HOT; %d of %d acks kept their "
	     "slot",
	    (long long)(u1 - u0), (long long)(h1 - h0), same, N - 2);
	ok(same >= (N - 2) / 2, "hot: most next messages in their slot (%d)",
	    same);
	ok(h1 - h0 >= (N - 1) + same,
	    "hot: every pop and every ack within a slot is HOT (%lld >= %d)",
	    (long long)(h1 - h0), (N - 1) + same);
	fix_close(&f);
}

/*
 * The index statistics of txns once the backend has reported what came
 * before (it reports when it goes idle a second after its last report):
 * idx_tup_read of its primary key, idx_scan of its (hash, id) index.
 */
static void
txns_stats_now(struct fix *f, struct queen *q, int64_t *pkey, int64_t *hash)
{
	static int n;
	char txid[16];

	snprintf(txid, sizeof(txid), "e%d", ++n);
	usleep(1200 * 1000);
	push1(q, "elsewhere", NULL, txid, "x");
	usleep(1200 * 1000);
	*pkey = index_stat(f, "txns_pkey", "idx_tup_read");
	*hash = index_stat(f, "txns_hash", "idx_scan");
}

/* the same once at least want probes of (hash, id) have been reported */
static void
txns_stats_after(struct fix *f, int64_t want, int64_t *pkey, int64_t *hash)
{
	int i;

	*hash = -1;
	for (i = 0; i < 150 && *hash < want; i++) {
		usleep(100 * 1000);
		*hash = index_stat(f, "txns_hash", "idx_scan");
	}
	*pkey = index_stat(f, "txns_pkey", "idx_tup_read");
}

/*
 * n new items into queue probe (transactionIds PREFIX and the numbers from
 * first) and, with old, one of the fill (f01234) last; *dups: how many
 * were duplicates.
 */
static int
probe_push(struct queen *q, const char *prefix, int first, int n, bool old,
    int *dups)
{
	struct queen_push_item it[501];
	struct queen_push_result res[501];
	char txid[501][24];
	int i, rc;

	memset(it, 0, sizeof(it));
	for (i = 0; i < n + old && i < 501; i++) {
		if (i < n)
			snprintf(txid[i], sizeof(txid[i]), "%s%05d", prefix,
			    first + i);
		else
			snprintf(txid[i], sizeof(txid[i]), "f%05d", 1234);
		it[i].queue = "probe";
		it[i].txid = txid[i];
		it[i].payload = "x";
		it[i].len = 1;
	}
	if ((rc = queen_push(q, it, (size_t)i, false, res)) != 0)
		return rc;
	for (*dups = 0, n = i, i = 0; i < n; i++)
		*dups += res[i].status == QUEEN_PUSH_DUPLICATE;
	return 0;
}

/*
 * The dedup lookups of a batch push are one probe of txns_hash per
 * transactionId, however long the partition: both plans of the
 * semi-join they would read every hash row of the dedup window
 * (through txns_pkey), so an api/push of 1000 items cost more with
 * each message already in the partition.  Before any ANALYZE and after
 * one, past the five runs after which a prepared statement may keep a
 * generic plan.
 */
static void
test_push_probe(void)
{
	enum { FILL = 4000 };
	struct fix f;
	struct queen *q = fix_open(&f, "pgm-probe");
	int64_t k0, k1, h0, h1;
	int i, round, d, dups = 0, fails = 0;
	bool dup = false;
	struct queen_batch *b = NULL;
	struct queen_ack_item ai[100];
	struct queen_ack_result ar[100];

	memset(ai, 0, sizeof(ai));
	memset(ar, 0, sizeof(ar));
	is_int((int)sql_value(&f,
		   "ALTER TABLE txns SET (autovacuum_enabled = off)"),
	    0, "probe: autovacuum off on txns");
	for (i = 0; i < FILL; i += 500) {
		fails += probe_push(q, "f", i, 500, false, &d) != 0;
		dups += d;
	}
	ok(fails == 0 && dups == 0, "probe: %d messages in one partition",
	    FILL);
	for (round = 0; round < 2; round++) {
		const char *when = round ? "analyzed" : "no statistics";

		if (round)
			is_int((int)sql_value(&f, "ANALYZE txns"), 0,
			    "probe: txns analyzed");
		txns_stats_now(&f, q, &k0, &h0);
		is_int(probe_push(q, round ? "s" : "r", 0, 499, true, &d), 0,
		    "probe: %s: 499 new ones and one of the fill pushed", when);
		is_int(d, 1, "probe: %s: the one of the fill a duplicate",
		    when);
		/* one push at a time: new names, and the fill's 43rd */
		is_int(pushn(q, "probe", NULL, round ? "u" : "t", 10), 0,
		    "probe: %s: 10 pushed one by one", when);
		is_int(push_ex(q, "probe", NULL, "f00042", "x", false, &dup),
		    43, "probe: %s: a fill's name pushed again: its offset",
		    when);
		ok(dup, "probe: %s: as a duplicate", when);
		txns_stats_after(&f, h0 + 511, &k1, &h1);
		ok(h1 >= h0 + 511,
		    "probe: %s: txns_hash probed for each (%lld)", when,
		    (long long)(h1 - h0));
		ok(k1 - k0 < 100, "probe: %s: %lld rows of txns_pkey read",
		    when, (long long)(k1 - k0));
	}
	/* and an ack of 100 looks its hashes up the same way */
	is_int(pop1(q, "probe", NULL, NULL, 100, &b), 0, "probe: 100 leased");
	for (i = 0; b && i < (int)b->n && i < 100; i++) {
		ai[i].txid = b->msgs[i].txid;
		ai[i].queue = "probe";
		ai[i].lease_id = b->lease_id;
		ai[i].status = "completed";
	}
	txns_stats_now(&f, q, &k0, &h0);
	ok(i == 100 && queen_ack(q, ai, 100, ar) == 0 && ar[99].success,
	    "probe: the 100 acked in one call");
	queen_batch_free(b);
	txns_stats_after(&f, h0 + 100, &k1, &h1);
	ok(h1 >= h0 + 100, "probe: ack: txns_hash probed for each (%lld)",
	    (long long)(h1 - h0));
	ok(k1 - k0 < 100, "probe: ack: %lld rows of txns_pkey read",
	    (long long)(k1 - k0));
	fix_close(&f);
}

/*
 * A push of many into one partition: the partition's rows, locked, and
 * the dedup lookups of all its transactionIds go as one statement, then
 * the commit with the writes: two round trips however many items.  Its
 * answer is a prefetch's: the names already in the window, one pushed
 * by the call before and one named twice in the call are duplicates at
 * their offsets, the rest pushed once in item order.  (A partition that
 * another handle appended to while the statement waited for its lock is
 * in test_dedup_race.)
 */
static void
test_push_many_ahead(void)
{
	enum { N = 10 };
	struct fix f;
	struct queen *a = fix_open(&f, "pgm-many");
	struct queen_push_item it[N];
	struct queen_push_result r[N];
	char txid[N][16];
	uint64_t t;
	int i, bad = 0;

	is_int(push1(a, "many", "p", "old3", "x"), 1, "many: a first push");
	is_int(push1(a, "many", "p", "old7", "x"), 2, "many: a second");
	for (i = 0; i < N; i++) {
		snprintf(txid[i], sizeof(txid[i]), "new%d", i);
		it[i] = push_item("many", "p", txid[i], "y");
	}
	t = queen_round_trips(a);
	is_int(queen_push(a, it, N, false, r), 0, "many: %d new ones in a call",
	    N);
	t = queen_round_trips(a) - t;
	is_int((int)t, 2, "many: in two round trips");
	for (i = 0; i < N; i++)
		bad += r[i].status != QUEEN_PUSH_QUEUED || r[i].offset != 3 + i;
	is_int(bad, 0, "many: each queued, offsets 3 to %d in item order",
	    2 + N);
	for (i = 0; i < N; i++)
		snprintf(txid[i], sizeof(txid[i]), "next%d", i);
	snprintf(txid[3], sizeof(txid[3]), "old3");
	snprintf(txid[5], sizeof(txid[5]), "new5");
	snprintf(txid[7], sizeof(txid[7]), "old7");
	snprintf(txid[9], sizeof(txid[9]), "next8");
	is_int(queen_push(a, it, N, false, r), 0,
	    "many: again, with four names that are there or twice");
	ok(r[3].status == QUEEN_PUSH_DUPLICATE && r[3].offset == 1 &&
		r[7].status == QUEEN_PUSH_DUPLICATE && r[7].offset == 2,
	    "many: the first two pushes' names: duplicates at 1 and 2");
	ok(r[5].status == QUEEN_PUSH_DUPLICATE && r[5].offset == 8,
	    "many: the last call's new5: a duplicate at 8");
	ok(r[9].status == QUEEN_PUSH_DUPLICATE &&
		r[8].status == QUEEN_PUSH_QUEUED && r[9].offset == r[8].offset,
	    "many: next8 twice: pushed once, the second its duplicate");
	bad = 0;
	for (i = 0; i < 9; i++)
		if (i != 3 && i != 5 && i != 7)
			bad += r[i].status != QUEEN_PUSH_QUEUED;
	ok(bad == 0 && r[0].offset == 13 && r[8].offset == 18,
	    "many: the other six queued at 13 to 18");
	is_int(tail_of(a, "many", "p"), 18, "many: the partition ends at 18");
	fix_close(&f);
}

enum { ORD_PARTS = 4, ORD_ROUNDS = 60 };

struct ord_arg {
	struct queen *q;
	bool backwards;
	int failed;
	int64_t last[ORD_PARTS]; /* the offset each partition gave last */
	int disorder;
};

/* ORD_ROUNDS pushes of one item into each partition, one call each */
static void *
ord_thread(void *arg)
{
	static const char *const part[ORD_PARTS] = { "o1", "o2", "o3", "o4" };
	struct ord_arg *a = arg;
	struct queen_push_item it[ORD_PARTS];
	struct queen_push_result r[ORD_PARTS];
	char txid[ORD_PARTS][32];
	int k, i, p;

	for (k = 0; k < ORD_ROUNDS; k++) {
		for (i = 0; i < ORD_PARTS; i++) {
			p = a->backwards ? ORD_PARTS - 1 - i : i;
			snprintf(txid[i], sizeof(txid[i]), "%c%d-%d",
			    a->backwards ? 'b' : 'f', k, p);
			it[i] = push_item("ord", part[p], txid[i], txid[i]);
		}
		if (queen_push(a->q, it, ORD_PARTS, false, r) != 0) {
			if (a->failed++ == 0)
				diag("ord: %s", queen_errmsg(a->q));
			continue;
		}
		for (i = 0; i < ORD_PARTS; i++) {
			p = a->backwards ? ORD_PARTS - 1 - i : i;
			a->disorder += r[i].offset <= a->last[p];
			a->last[p] = r[i].offset;
		}
	}
	return NULL;
}

/*
 * Two handles push into the same four partitions at once, one naming
 * them forwards and one backwards in every call: each call locks the
 * partitions in one order whatever the client's, so neither ever waits
 * for the other in a ring (PostgreSQL's deadlock detector would fail
 * one of them after a second).  And the items of one call interleaved
 * over partitions go out a partition at a time: a round trip or two a
 * partition, not one an item.
 */
static void
test_push_order(void)
{
	enum { MIX = 300 };
	struct fix f;
	struct queen *a = fix_open(&f, "pgm-order");
	struct queen *b = open_other(&f, NULL);
	struct ord_arg x = { .q = a }, y = { .q = b, .backwards = true };
	struct queen_push_item it[MIX];
	struct queen_push_result r[MIX];
	static const char *const part[3] = { "m3", "m1", "m2" };
	char txid[MIX][16];
	pthread_t tx, ty;
	uint64_t t;
	int i;

	/* the queue and partitions exist: creating them is not the race */
	for (i = 0; i < ORD_PARTS; i++) {
		char p[16];

		snprintf(p, sizeof(p), "o%d", i + 1);
		push1(a, "ord", p, "warm", "x");
	}
	pthread_create(&tx, NULL, ord_thread, &x);
	pthread_create(&ty, NULL, ord_thread, &y);
	pthread_join(tx, NULL);
	pthread_join(ty, NULL);
	is_int(x.failed + y.failed, 0, "order: %d calls each way, none failed",
	    ORD_ROUNDS);
	is_int(x.disorder + y.disorder, 0,
	    "order: each handle's offsets grow in every partition");
	for (i = 0; i < ORD_PARTS; i++) {
		char p[16];

		snprintf(p, sizeof(p), "o%d", i + 1);
		is_int(tail_of(a, "ord", p), 1 + 2 * ORD_ROUNDS,
		    "order: %s holds every push", p);
	}
	for (i = 0; i < 3; i++)
		push1(a, "ord", part[i], "warm", "x");
	for (i = 0; i < MIX; i++) {
		snprintf(txid[i], sizeof(txid[i]), "x%d", i);
		it[i] = push_item("ord", part[i % 3], txid[i], "x");
	}
	t = queen_round_trips(a);
	is_int(queen_push(a, it, MIX, false, r), 0,
	    "order: %d items round robin over 3 partitions", MIX);
	t = queen_round_trips(a) - t;
	/* each partition's rows locked with its dedup lookups; COMMIT */
	ok(t <= 3 + 1, "order: in %llu round trips", (unsigned long long)t);
	queen_close(b);
	fix_close(&f);
}

struct aord_arg {
	struct queen *q;
	bool backwards;
	int failed, refused;
};

/* ORD_ROUNDS acks of one message in each partition, one call each */
static void *
aord_thread(void *arg)
{
	static const char *const part[ORD_PARTS] = { "o1", "o2", "o3", "o4" };
	struct aord_arg *a = arg;
	struct queen_ack_item it[ORD_PARTS];
	struct queen_ack_result r[ORD_PARTS];
	char txid[ORD_PARTS][32];
	int k, i, p;

	for (k = 0; k < ORD_ROUNDS; k++) {
		for (i = 0; i < ORD_PARTS; i++) {
			p = a->backwards ? ORD_PARTS - 1 - i : i;
			snprintf(txid[i], sizeof(txid[i]), "%c%d",
			    a->backwards ? 'b' : 'f', k);
			ack_item(&it[i], "aord", part[p], NULL, txid[i],
			    "completed", NULL);
		}
		if (queen_ack(a->q, it, ORD_PARTS, r) != 0) {
			if (a->failed++ == 0)
				diag("ack order: %s", queen_errmsg(a->q));
			continue;
		}
		for (i = 0; i < ORD_PARTS; i++)
			a->refused += !r[i].success;
	}
	return NULL;
}

/*
 * The same for acks by name: two handles ack one message in each of four
 * partitions a call, one naming them forwards and one backwards.  An ack
 * reads its partitions' rows locked and then locks their cursors; in the
 * client's order, the two handles waited for each other in a ring and
 * the server failed one as a deadlock.  Every ack is of a completed
 * message: at or below the cursor it is a no-op, never a refusal.
 */
static void
test_ack_order(void)
{
	static const char *const part[ORD_PARTS] = { "o1", "o2", "o3", "o4" };
	struct fix f;
	struct queen *a = fix_open(&f, "pgm-aorder");
	struct queen *b = open_other(&f, NULL);
	struct aord_arg x = { .q = a }, y = { .q = b, .backwards = true };
	pthread_t tx, ty;
	char txid[32];
	int i, k;

	for (i = 0; i < ORD_PARTS; i++)
		for (k = 0; k < ORD_ROUNDS; k++) {
			snprintf(txid, sizeof(txid), "f%d", k);
			push1(a, "aord", part[i], txid, "x");
			snprintf(txid, sizeof(txid), "b%d", k);
			push1(a, "aord", part[i], txid, "x");
		}
	pthread_create(&tx, NULL, aord_thread, &x);
	pthread_create(&ty, NULL, aord_thread, &y);
	pthread_join(tx, NULL);
	pthread_join(ty, NULL);
	is_int(x.failed + y.failed, 0,
	    "ack order: %d calls each way, none failed", ORD_ROUNDS);
	is_int(x.refused + y.refused, 0, "ack order: no ack refused");
	for (i = 0; i < ORD_PARTS; i++)
		is_int(committed(a, "aord", NULL, part[i]), 2 * ORD_ROUNDS,
		    "ack order: %s committed to its last message", part[i]);
	queen_close(b);
	fix_close(&f);
}

/* how alease_thread acks the four leases of a round */
enum amode {
	A_LEASE, /* one ack call, each item named by its lease alone */
	A_TXN,   /* so, as a transaction requiring the four leases */
	A_NAMES, /* a transaction requiring them, the items named by queue
		     and partition */
	A_CROSS, /* a transaction requiring the last two, the items named
		     by partition id */
};

static const char *const amode_name[] = { "ack by lease", "txn of leases",
	"txn of leases by names", "txn of two leases by ids" };

struct alease_arg {
	struct queen *q;
	volatile bool *done;
	enum amode mode;
	int failed, refused, calls;
};

/*
 * a's acks it[0..n-1] as one transaction that requires their leases (the
 * last two of them, A_CROSS)
 */
static int
alease_txn(struct alease_arg *a, const struct queen_ack_item *it, size_t n,
    struct queen_ack_result *r)
{
	const char *lease[ORD_PARTS];
	struct queen_txn t = { 0 };
	struct queen_txn_result *tr = NULL;
	size_t i, from = a->mode == A_CROSS && n > 2 ? n - 2 : 0;
	int rc;

	for (i = from; i < n; i++)
		lease[i - from] = it[i].lease_id;
	t.acks = it;
	t.nacks = n;
	t.required_leases = lease;
	t.nleases = n - from;
	rc = queen_txn(a->q, &t, &tr);
	if (rc == 0 && tr->reason != QUEEN_TXN_OK)
		diag("%s: transaction refused: %s", amode_name[a->mode],
		    tr->error);
	for (i = 0; i < n && rc == 0; i++)
		r[i] = tr->reason == QUEEN_TXN_OK ?
		    tr->acks[i] :
		    (struct queen_ack_result){ .success = false };
	queen_txn_result_free(tr);
	return rc;
}

/*
 * ORD_ROUNDS times: a lease in each of the four partitions (a pop skips
 * the cursors the other handle's ack holds: tried again), then one call
 * acking the four by their leases alone (no queue, no partition)
 */
static void *
alease_thread(void *arg)
{
	struct alease_arg *a = arg;
	struct queen_batch *ba[ORD_PARTS] = { 0 };
	struct queen_ack_item it[ORD_PARTS];
	struct queen_ack_result r[ORD_PARTS];
	int k, i, n, tries;

	for (k = 0; k < ORD_ROUNDS; k++) {
		for (n = 0, tries = 0; n < ORD_PARTS && tries < 10000;
		     tries++) {
			if (pop1(a->q, "alord", NULL, NULL, 1, &ba[n]) == 0 &&
			    ba[n]->n == 1)
				n++;
			else if (ba[n]) {
				queen_batch_free(ba[n]);
				ba[n] = NULL;
			}
		}
		for (i = 0; i < n; i++) {
			memset(&it[i], 0, sizeof(it[i]));
			it[i].txid = ba[i]->msgs[0].txid;
			it[i].status = "completed";
			it[i].lease_id = ba[i]->lease_id;
			if (a->mode == A_NAMES) {
				it[i].queue = ba[i]->queue;
				it[i].partition = ba[i]->partition;
			} else if (a->mode == A_CROSS) {
				it[i].partition_uuid = ba[i]->partition_uuid;
			}
		}
		if (n > 0 &&
		    (a->mode != A_LEASE ?
			    alease_txn(a, it, (size_t)n, r) :
			    queen_ack(a->q, it, (size_t)n, r)) != 0) {
			if (a->failed++ == 0)
				diag("%s: %s", amode_name[a->mode],
				    queen_errmsg(a->q));
		} else {
			for (i = 0; i < n; i++)
				a->refused += !r[i].success;
		}
		a->calls += n == ORD_PARTS;
		for (i = 0; i < ORD_PARTS; i++) {
			queen_batch_free(ba[i]);
			ba[i] = NULL;
		}
		/* leases not acked stay held till they expire: no round
		 * after a failed one could lease the four again */
		if (a->failed || a->refused)
			break;
	}
	*a->done = true;
	return NULL;
}

/* acks by name of each partition's first message, till the other ends */
static void *
aname_thread(void *arg)
{
	static const char *const part[ORD_PARTS] = { "o1", "o2", "o3", "o4" };
	struct alease_arg *a = arg;
	struct queen_ack_item it[ORD_PARTS];
	struct queen_ack_result r[ORD_PARTS];
	int i;

	while (!*a->done) {
		for (i = 0; i < ORD_PARTS; i++)
			ack_item(&it[i], "alord", part[i], NULL, "w",
			    "completed", NULL);
		if (queen_ack(a->q, it, ORD_PARTS, r) != 0) {
			if (a->failed++ == 0)
				diag("ack by name: %s", queen_errmsg(a->q));
			continue;
		}
		for (i = 0; i < ORD_PARTS; i++)
			a->refused += !r[i].success;
		a->calls++;
	}
	return NULL;
}

/*
 * An ack named by its lease alone is found through the lease, whose id
 * is random: one handle acks four leases a call that way while another
 * acks by name, in the order of the partitions, a message of each that
 * is acked already (a no-op that still locks its cursor).  When the
 * lease lookups locked their cursors as they went, in the leases' order,
 * the two locked the same cursors in orders that differ and the server
 * failed one as a deadlock.  A_TXN: the acks go as a transaction that
 * requires the four leases, which it locked in the request's order.
 * A_NAMES: it locked the leases' cursors, then the partitions its items
 * name, which the acks by name lock before those cursors.  A_CROSS: it
 * locked the two leases' cursors, then those of its items in their order.
 */
static void
test_ack_lease_order(enum amode mode)
{
	static const char *const part[ORD_PARTS] = { "o1", "o2", "o3", "o4" };
	static const char *const schema[] = { "pgm-alorder", "pgm-altxn",
		"pgm-alnames", "pgm-alcross" };
	const char *w = amode_name[mode];
	volatile bool done = false;
	struct fix f;
	struct queen *a = fix_open(&f, schema[mode]);
	struct queen *b = open_other(&f, NULL);
	struct alease_arg x = { .q = a, .done = &done, .mode = mode };
	struct alease_arg y = { .q = b, .done = &done };
	struct queen_ack_result ar;
	pthread_t tx, ty;
	char txid[32];
	int i, k;

	for (i = 0; i < ORD_PARTS; i++) {
		push1(a, "alord", part[i], "w", "x");
		ack1(a, "alord", part[i], NULL, "w", "completed", NULL, &ar);
		for (k = 0; k < ORD_ROUNDS; k++) {
			snprintf(txid, sizeof(txid), "m%d", k);
			push1(a, "alord", part[i], txid, "x");
		}
	}
	pthread_create(&ty, NULL, aname_thread, &y);
	pthread_create(&tx, NULL, alease_thread, &x);
	pthread_join(tx, NULL);
	pthread_join(ty, NULL);
	is_int(x.calls, ORD_ROUNDS, "%s: each round leased all %d partitions",
	    w, ORD_PARTS);
	is_int(x.failed + y.failed, 0,
	    "%s: %d calls by lease, %d by name, none failed", w, x.calls,
	    y.calls);
	is_int(x.refused + y.refused, 0, "%s: no ack refused", w);
	ok(y.calls > 0, "%s: the acks by name ran meanwhile", w);
	for (i = 0; i < ORD_PARTS; i++)
		is_int(committed(a, "alord", NULL, part[i]), 1 + ORD_ROUNDS,
		    "%s: %s committed to its last message", w, part[i]);
	queen_close(b);
	fix_close(&f);
}

/*
 * A transaction as Queen's clients send one: it requires the lease of
 * the message it acks (named by partition id) and pushes the next step.
 * Its round trips, the flush's included: 6, before its lease was locked
 * in cursor order with its acks and since.
 */
static void
test_txn_round_trips(void)
{
	struct fix f;
	struct queen *a = fix_open(&f, "pgm-txnrt");
	struct queen_batch *ba = NULL;
	struct queen_ack_item ack = { 0 };
	struct queen_push_item push = push_item("step2", NULL, "n1", "y");
	struct queen_txn t = { 0 };
	struct queen_txn_result *tr = NULL;
	const char *lease[1];
	uint64_t n;

	push1(a, "step1", NULL, "m1", "x");
	push1(a, "step2", NULL, "n0", "x");
	is_int(pop1(a, "step1", NULL, NULL, 1, &ba), 0, "txnrt: popped m1");
	lease[0] = ba->lease_id;
	ack.txid = "m1";
	ack.partition_uuid = ba->partition_uuid;
	ack.status = "completed";
	t.acks = &ack;
	t.nacks = 1;
	t.pushes = &push;
	t.npushes = 1;
	t.required_leases = lease;
	t.nleases = 1;
	n = queen_round_trips(a);
	is_int(queen_txn(a, &t, &tr), 0, "txnrt: the transaction ran");
	n = queen_round_trips(a) - n;
	ok(tr && tr->reason == QUEEN_TXN_OK, "txnrt: and committed");
	ok(n <= 6, "txnrt: in %d round trips (at most 6)", (int)n);
	queen_txn_result_free(tr);
	queen_batch_free(ba);
	fix_close(&f);
}

struct ng_arg {
	struct queen *q;
	volatile bool *done;
	bool two;
	int failed, refused, calls;
};

/*
 * ORD_ROUNDS acks by name in partition o3, each for a group not made
 * yet; with two, each call first acks o3 for group a, which exists
 */
static void *
ng_ack_thread(void *arg)
{
	struct ng_arg *a = arg;
	struct queen_ack_item it[2];
	struct queen_ack_result r[2];
	char g[16];
	int k, n = a->two ? 2 : 1;

	for (k = 0; k < ORD_ROUNDS; k++) {
		snprintf(g, sizeof(g), "g%d", k);
		ack_item(&it[0], "ng", "o3", "a", "w", "completed", NULL);
		ack_item(&it[n - 1], "ng", "o3", g, "w", "completed", NULL);
		if (queen_ack(a->q, it, (size_t)n, r) != 0) {
			if (a->failed++ == 0)
				diag("new group: ack: %s", queen_errmsg(a->q));
			continue;
		}
		a->refused += !r[n - 1].success;
		a->calls++;
	}
	*a->done = true;
	return NULL;
}

/* a push into each of the four partitions a call, till the acks end */
static void *
ng_push_thread(void *arg)
{
	static const char *const part[ORD_PARTS] = { "o1", "o2", "o3", "o4" };
	struct ng_arg *a = arg;
	struct queen_push_item it[ORD_PARTS];
	struct queen_push_result r[ORD_PARTS];
	int i;

	while (!*a->done) {
		for (i = 0; i < ORD_PARTS; i++)
			it[i] = push_item("ng", part[i], NULL, "x");
		if (queen_push(a->q, it, ORD_PARTS, false, r) != 0) {
			if (a->failed++ == 0)
				diag("new group: push: %s", queen_errmsg(a->q));
			continue;
		}
		a->calls++;
	}
	return NULL;
}

/*
 * An ack whose group does not exist makes it, and a cursor in each of
 * the queue's partitions, whose rows it locks in the order of their
 * names, as a push of many does.  It did so after it had locked the
 * partition it names (o3): against a push into o1 to o4 holding o1 and
 * o2 and waiting for o3, the two waited for each other in a ring.  With
 * two, the call's first item (group a, which exists) locks o3 before
 * its second comes to the group it makes: all the call's groups are now
 * made before any of its rows is locked.
 */
static void
test_ack_new_group(bool two)
{
	static const char *const part[ORD_PARTS] = { "o1", "o2", "o3", "o4" };
	volatile bool done = false;
	struct fix f;
	struct queen *a = fix_open(&f, two ? "pgm-newgroup2" : "pgm-newgroup");
	struct queen *b = open_other(&f, NULL);
	struct ng_arg x = { .q = a, .done = &done, .two = two };
	const char *v = two ? "new group, two items" : "new group";
	struct ng_arg y = { .q = b, .done = &done };
	struct queen_ack_item it, two_it[2];
	struct queen_ack_result r, two_r[2];
	struct queen_group_info gi;
	pthread_t tx, ty;
	int i;

	for (i = 0; i < ORD_PARTS; i++)
		push1(a, "ng", part[i], "w", "x");
	if (two) {
		ack_item(&it, "ng", "o3", "a", "w", "completed", NULL);
		ok(queen_ack(a, &it, 1, &r) == 0 && r.success,
		    "%s: group a made", v);
	}
	pthread_create(&ty, NULL, ng_push_thread, &y);
	pthread_create(&tx, NULL, ng_ack_thread, &x);
	pthread_join(tx, NULL);
	pthread_join(ty, NULL);
	is_int(x.failed + y.failed, 0,
	    "%s: %d acks, %d pushes of four, none failed", v, x.calls, y.calls);
	is_int(x.refused, 0, "%s: every new group's ack applied", v);
	ok(y.calls > 0, "%s: the pushes ran meanwhile", v);
	ok(committed(a, "ng", "g7", "o3") >= 1,
	    "%s: g7 committed o3's first message", v);
	/* a call whose item names no partition: that one alone refused */
	ack_item(&two_it[0], "ng", "o2", "g98", "w", "completed", NULL);
	ack_item(&two_it[1], "ng", "o9", "g99", "w", "completed", NULL);
	is_int(queen_ack(a, two ? two_it : &two_it[1], two ? 2 : 1, two_r), 0,
	    "%s: an ack naming no partition is answered", v);
	ok(!two_r[two].success && two_r[two].err == -ENOENT, "%s: refused (%s)",
	    v, two_r[two].error);
	is_int(queen_group_get(a, "ng", "g99", &gi), -ENOENT,
	    "%s: and made no group", v);
	if (two) {
		uint64_t t;

		ok(two_r[0].success && committed(a, "ng", "g98", "o2") >= 1,
		    "%s: the other item's new group made and acked", v);
		/* groups that exist: looking them up before the locks costs
		 * no round trip (10 before groups_first and after, at sync
		 * off: no flush) */
		ack_item(&two_it[0], "ng", "o1", "a", "w", "completed", NULL);
		ack_item(&two_it[1], "ng", "o2", "a", "w", "completed", NULL);
		t = queen_round_trips(a);
		is_int(queen_ack(a, two_it, 2, two_r), 0,
		    "%s: an ack in two partitions", v);
		t = queen_round_trips(a) - t;
		ok(two_r[0].success && two_r[1].success && t <= 10,
		    "%s: in %d round trips (at most 10)", v, (int)t);
	}
	queen_close(b);
	fix_close(&f);
}

/*
 * A batch ack as Queen's clients send one: each of a pop's 100 messages
 * by partitionId and leaseId; then by queue and partition names, as the
 * C API allows (api/ and HTTP acks name partitionId).  By id,
 * 5 round trips at sync off (no flush), before groups_first and after;
 * by names, 106 before the items of one target were looked up once (one
 * a message), 7 after.
 */
static void
test_batch_ack_round_trips(void)
{
	struct fix f;
	struct queen *a = fix_open(&f, "pgm-batchack");
	struct queen_batch *ba = NULL;
	struct queen_ack_item it[100];
	struct queen_ack_result r[100];
	uint64_t t;
	size_t i, good = 0;
	int names;

	for (names = 0; names < 2; names++) {
		good = 0;
		pushn(a, "ba", NULL, names ? "n" : "i", 100);
		ok(pop1(a, "ba", NULL, "g", 100, &ba) == 0 && ba &&
			ba->n == 100,
		    "batchrt: 100 leased");
		if (!ba || ba->n != 100)
			break;
		for (i = 0; i < 100; i++) {
			ack_item(&it[i], names ? "ba" : NULL, NULL, "g",
			    ba->msgs[i].txid, "completed", ba->lease_id);
			if (!names)
				it[i].partition_uuid = ba->partition_uuid;
		}
		t = queen_round_trips(a);
		is_int(queen_ack(a, it, 100, r), 0, "batchrt: the ack call");
		t = queen_round_trips(a) - t;
		for (i = 0; i < 100; i++)
			good += r[i].success;
		is_int((int)good, 100, "batchrt: every item acked");
		ok(t <= (names ? 7u : 5u),
		    "batchrt: by %s in %d round trips (at most %d)",
		    names ? "names" : "partition id", (int)t, names ? 7 : 5);
		queen_batch_free(ba);
		ba = NULL;
	}
	queen_batch_free(ba);
	fix_close(&f);
}

struct gone_arg {
	struct queen *q;
	bool txn;
	struct queen_ack_item it[2];
	struct queen_ack_result r[2];
	struct queen_txn_result *tr;
	int rc;
};

/* the two acks as one call, or a push requiring the two leases */
static void *
gone_ack_thread(void *arg)
{
	struct gone_arg *a = arg;
	const char *lease[2] = { a->it[0].lease_id, a->it[1].lease_id };
	struct queen_push_item push = push_item("gq", "p1", "m2", "y");
	struct queen_txn t = { 0 };

	if (!a->txn) {
		a->rc = queen_ack(a->q, a->it, 2, a->r);
		return NULL;
	}
	t.pushes = &push;
	t.npushes = 1;
	t.required_leases = lease;
	t.nleases = 2;
	a->rc = queen_txn(a->q, &t, &a->tr);
	return NULL;
}

/* Wait (up to 10 s) until a session of app waits for a row lock. */
static bool
waits_for_lock(const struct fix *f, const char *app)
{
	char sql[200];
	int i;

	snprintf(sql, sizeof(sql),
	    "SELECT count(*) FROM pg_stat_activity "
	    "WHERE application_name = '%s' AND wait_event_type = 'Lock'",
	    app);
	for (i = 0; i < 1000; i++) {
		if (sql_value(f, sql) > 0)
			return true;
		usleep(10000);
	}
	return false;
}

/*
 * An ack call of two leases looks their cursors up unlocked, then locks
 * them in cursor order.  Another session holds the second lease's cursor
 * and deletes its group meanwhile: the call must answer that lease as
 * stale and ack the other, and make nothing for the group that is gone
 * (it made the cursor again, and the insert, naming a deleted group,
 * failed the whole call).  With txn, a transaction requiring the two
 * leases is refused, naming the second, and its push is not made.
 */
static void
test_ack_gone_cursor(bool txn)
{
	struct fix f;
	struct queen *a = fix_open(&f, txn ? "pgm-curgonetxn" : "pgm-curgone");
	struct queen *b;
	struct queen_batch *b1 = NULL, *b2 = NULL;
	struct gone_arg x = { .txn = txn };
	struct queen_group_info gi;
	PGconn *c = PQconnectdb(f.path);
	PGresult *r;
	pthread_t th;
	char app[40];
	bool waited;
	const char *v = txn ? "cursor gone, txn" : "cursor gone";

	snprintf(app, sizeof(app), "queen_gone_%d", (int)getpid());
	b = open_other(&f, app);
	push1(a, "gq", "p1", "m1", "x");
	ok(pop1(b, "gq", "p1", "g1", 1, &b1) == 0 && b1 &&
		pop1(b, "gq", "p1", "g2", 1, &b2) == 0 && b2,
	    "%s: m1 leased in groups g1 and g2", v);
	if (!b1 || !b2)
		goto out;
	r = PQexec(c,
	    "SET idle_in_transaction_session_timeout = '20s'; BEGIN; "
	    "SELECT 1 FROM cursors WHERE group_id = "
	    "(SELECT id FROM groups WHERE name = 'g2') FOR UPDATE");
	ok(PQresultStatus(r) == PGRES_TUPLES_OK && PQntuples(r) == 1,
	    "%s: another session holds g2's cursor", v);
	PQclear(r);
	x.q = b;
	ack_item(&x.it[0], NULL, NULL, "g1", "m1", "completed", b1->lease_id);
	ack_item(&x.it[1], NULL, NULL, "g2", "m1", "completed", b2->lease_id);
	pthread_create(&th, NULL, gone_ack_thread, &x);
	waited = waits_for_lock(&f, app);
	ok(waited, "%s: the call waits for g2's cursor", v);
	r = PQexec(c, "DELETE FROM groups WHERE name = 'g2'; COMMIT");
	ok(PQresultStatus(r) == PGRES_COMMAND_OK,
	    "%s: and g2 is deleted meanwhile", v);
	PQclear(r);
	pthread_join(th, NULL);
	if (txn) {
		is_int(x.rc, 0, "%s: the transaction is answered", v);
		ok(x.tr && x.tr->reason == QUEEN_TXN_REJECTED_ACK &&
			x.tr->failed_index == 1,
		    "%s: refused, naming g2's lease (%s)", v,
		    x.tr ? x.tr->error : "");
		is_int(tail_of(a, "gq", "p1"), 1, "%s: m2 not pushed", v);
		queen_txn_result_free(x.tr);
	} else {
		is_int(x.rc, 0, "%s: the ack call is answered (%s)", v,
		    x.rc ? queen_errmsg(b) : "ok");
		ok(x.r[0].success, "%s: g1's lease acked", v);
		ok(!x.r[1].success && x.r[1].err == -ESTALE,
		    "%s: g2's refused as a stale lease (%s)", v, x.r[1].error);
		ok(committed(a, "gq", "g1", "p1") >= 1, "%s: g1 committed m1",
		    v);
	}
	is_int(queen_group_get(a, "gq", "g2", &gi), -ENOENT,
	    "%s: g2 stays deleted", v);
	is_int(sql_value(&f,
		   "SELECT count(*) FROM cursors c "
		   "LEFT JOIN groups g ON g.id = c.group_id "
		   "WHERE g.id IS NULL"),
	    0, "%s: no cursor without its group", v);
out:
	queen_batch_free(b1);
	queen_batch_free(b2);
	PQfinish(c);
	queen_close(b);
	fix_close(&f);
}

/*
 * How many sessions of app last ran a query that starts with what (or,
 * with unlike, does not); terminated, with terminate.
 */
static int64_t
sessions_like(const struct fix *f, const char *app, const char *what,
    bool unlike, bool terminate)
{
	char sql[300];

	snprintf(sql, sizeof(sql),
	    "SELECT %s FROM pg_stat_activity "
	    "WHERE application_name = '%s' AND query %sLIKE '%s%%'",
	    terminate ? "count(pg_terminate_backend(pid))" : "count(*)", app,
	    unlike ? "NOT " : "", what);
	return sql_value(f, sql);
}

/* The server drops a's connection; a's next call reconnects. */
static void
test_lost_connection(void)
{
	struct fix f;
	struct queen *q = fix_open(&f, "pgm-lost");
	struct queen *a;
	char app[40], why[200] = "";

	snprintf(app, sizeof(app), "queen_lost_%d", (int)getpid());
	a = open_other(&f, app);
	is_int(push1(a, Q, NULL, "m1", "x"), 1, "lost: push");
	is_int(sessions_like(&f, app, "", false, true), 1,
	    "lost: a's backend terminated");
	usleep(100000);
	is_int(push1(a, Q, NULL, "m2", "x"), 2,
	    "lost: the next push reconnects and lands");
	ok(!queen_failed(a, why, sizeof(why)), "lost: a is not failed (%s)",
	    why);
	is_int(tail_of(q, Q, NULL), 2, "lost: the other handle sees it");
	queen_close(a);
	fix_close(&f);
}

/* Lease the queue's next message, txid, and ack it. */
static void
take(struct queen *a, const char *queue, const char *txid)
{
	struct queen_batch *ba = NULL;
	struct queen_ack_result ar = { 0 };
	int rc;

	rc = pop1(a, queue, NULL, NULL, 1, &ba);
	if (rc == 0)
		rc = ack1(a, queue, NULL, NULL, txid, "completed", ba->lease_id,
		    &ar);
	ok(rc == 0 && ar.success, "listener: %s leased and acked", txid);
	queen_batch_free(ba);
}

/*
 * Announcements come on a connection of the handle's own, not on the one
 * its calls use: they reach it while a batch of its calls keeps that one
 * in a transaction (PostgreSQL hands a session its notifications only
 * between transactions), and a lost listener is made again, listening to
 * what the old one did, without touching the calls.
 */
static void
test_listener(void)
{
	struct fix f;
	struct queen *a = fix_open(&f, "pgm-listener");
	struct queen *b;
	char app[40], why[200] = "";
	struct pollfd pfd;
	int fd, fd2, rc, i, polls;

	snprintf(app, sizeof(app), "queen_lsn_%d", (int)getpid());
	b = open_other(&f, app);
	/* the group reads lq to its end: the next push is announced */
	push1(a, "lq", NULL, "m1", "x");
	take(a, "lq", "m1");
	fd = queen_event_fd(b);
	ok(fd >= 0, "listener: b has a descriptor");
	is_int(queen_event_watch(b, "lq", true), 1, "listener: b watches lq");
	is_int(sessions_like(&f, app, "LISTEN", false, false), 1,
	    "listener: one session of b listens");

	is_int(queen_batch_begin(b, 0), 0, "listener: b opens a batch");
	is_int(push1(b, "other", NULL, "o1", "x"), 1,
	    "listener: b pushes inside it");
	is_int(push1(a, "lq", NULL, "m2", "x"), 2, "listener: a pushes m2");
	is_int(named(b, fd, 5000, "lq"), 1,
	    "listener: announced while b's batch is open");
	is_int(queen_batch_commit(b), 0, "listener: b commits its batch");

	take(a, "lq", "m2");
	is_int(push1(a, "lq", NULL, "m3", "x"), 3, "listener: a pushes m3");
	is_int(named(b, fd, 5000, "lq"), 1, "listener: b hears it");
	take(a, "lq", "m3");
	is_int(sessions_like(&f, app, "LISTEN", false, true), 1,
	    "listener: the server drops b's listening session");
	/* the server's goodbye, then the end of the stream: libpq may
	 * take one read for each */
	pfd = (struct pollfd){ .fd = fd, .events = POLLIN };
	for (i = 0, rc = 0, polls = 0; i < 3 && rc == 0; i++) {
		polls += poll(&pfd, 1, 5000) == 1;
		rc = queen_events(b, name_cb, NULL);
	}
	is_int(polls, i, "listener: b's descriptor says so");
	is_int(rc, -EIO, "listener: draining it fails");
	ok(strstr(queen_errmsg(b), "storage:") != NULL,
	    "listener: with the reason (%s)", queen_errmsg(b));
	fd2 = queen_event_fd(b);
	ok(fd2 >= 0, "listener: asked again, b listens on a new session");
	is_int(sessions_like(&f, app, "LISTEN", false, false), 1,
	    "listener: which listens to lq again");
	last_part = -1;
	is_int(named(b, fd2, 0, "lq"), 1,
	    "listener: and says lq may have changed unheard");
	is_int((int)last_part, 0, "listener: all of it");
	is_int(named(b, fd2, 300, "lq"), 0, "listener: once");
	is_int(push1(a, "lq", NULL, "m4", "x"), 4, "listener: a pushes m4");
	is_int(named(b, fd2, 5000, "lq"), 1, "listener: b hears it");
	ok(!queen_failed(b, why, sizeof(why)),
	    "listener: b's calls are "
	    "not failed (%s)",
	    why);
	is_int(push1(b, "other", NULL, "o2", "x"), 2,
	    "listener: b's calls carry on on their own session");

	/* the calls' session is lost: the listening one is made again
	 * with it (its server may be gone without a word) */
	is_int(sessions_like(&f, app, "LISTEN", true, true), 1,
	    "listener: the server drops b's calls' session");
	usleep(100000);
	is_int(push1(b, "other", NULL, "o3", "x"), 3,
	    "listener: b's next call reconnects");
	fd2 = queen_event_fd(b);
	ok(fd2 >= 0, "listener: b has a descriptor after it");
	last_part = -1;
	is_int(named(b, fd2, 0, "lq"), 1,
	    "listener: on a new session, which says lq may have changed");
	is_int((int)last_part, 0, "listener: all of it, again");
	take(a, "lq", "m4");
	is_int(push1(a, "lq", NULL, "m5", "x"), 5, "listener: a pushes m5");
	is_int(named(b, fd2, 5000, "lq"), 1, "listener: b hears it there");
	queen_close(b);
	/* the server's backends exit a moment after the client goes */
	for (i = 0; i < 50 && sessions_like(&f, app, "", false, false); i++)
		usleep(100000);
	is_int(sessions_like(&f, app, "", false, false), 0,
	    "listener: closing b ends all its sessions");
	fix_close(&f);
}

/*
 * A relay between a handle and the server, on a unix socket of its own,
 * that can go the way a host that vanished does: cut, the first session
 * through it is closed, new ones are refused, and the others are left
 * open and never answered again (nothing tells their client).
 */
#define RELAY_MAX 8
struct relay {
	char dir[64];          /* its socket: dir/.s.PGSQL.5432 */
	struct sockaddr_un up; /* the server's */
	int lfd;
	int cfd[RELAY_MAX], sfd[RELAY_MAX]; /* client, server ends */
	atomic_int n;
	atomic_bool cut, stop, was_cut;
	pthread_t th;
};

static void *
relay_main(void *arg)
{
	struct relay *r = arg;
	char buf[16384];

	while (!atomic_load(&r->stop)) {
		struct pollfd p[1 + 2 * RELAY_MAX];
		int n = atomic_load(&r->n), np = 1, i;

		if (atomic_load(&r->cut) && !atomic_load(&r->was_cut)) {
			atomic_store(&r->was_cut, true);
			if (n > 0) {
				close(r->cfd[0]);
				close(r->sfd[0]);
				r->cfd[0] = r->sfd[0] = -1;
			}
		}
		p[0] = (struct pollfd){ .fd = r->lfd, .events = POLLIN };
		for (i = 0; !r->was_cut && i < n; i++) {
			p[np++] = (struct pollfd){ .fd = r->cfd[i],
				.events = POLLIN };
			p[np++] = (struct pollfd){ .fd = r->sfd[i],
				.events = POLLIN };
		}
		if (poll(p, (nfds_t)np, 50) <= 0)
			continue;
		if (p[0].revents & POLLIN) {
			int c = accept(r->lfd, NULL, NULL), u;

			if (c < 0)
				continue;
			u = socket(AF_UNIX, SOCK_STREAM, 0);
			if (r->was_cut || n == RELAY_MAX || u < 0 ||
			    connect(u, (struct sockaddr *)&r->up,
				sizeof(r->up)) < 0) {
				close(c);
				if (u >= 0)
					close(u);
				continue;
			}
			r->cfd[n] = c;
			r->sfd[n] = u;
			atomic_store(&r->n, n + 1);
		}
		for (i = 1; i < np; i++) {
			int from = p[i].fd, k = (i - 1) / 2;
			int to = from == r->cfd[k] ? r->sfd[k] : r->cfd[k];
			ssize_t got;

			if (!(p[i].revents & (POLLIN | POLLHUP)))
				continue;
			got = read(from, buf, sizeof(buf));
			if (got <= 0 || write(to, buf, (size_t)got) != got) {
				/* one end went: so does the pair */
				close(r->cfd[k]);
				close(r->sfd[k]);
				r->cfd[k] = r->sfd[k] = -1;
				i += i % 2; /* past the pair's other end */
			}
		}
	}
	for (int i = 0; i < atomic_load(&r->n); i++) {
		if (r->cfd[i] >= 0)
			close(r->cfd[i]);
		if (r->sfd[i] >= 0)
			close(r->sfd[i]);
	}
	close(r->lfd);
	return NULL;
}

/* 0, or -1 when QUEEN_TEST_PG names no unix socket to relay to. */
static int
relay_start(struct relay *r)
{
	const char *uri = getenv("QUEEN_TEST_PG"), *h = strstr(uri, "host=");
	struct sockaddr_un me = { .sun_family = AF_UNIX };
	size_t len = h ? strcspn(h + 5, "&") : 0;

	memset(r, 0, sizeof(*r));
	if (!h || h[5] != '/' || len + 20 > sizeof(r->up.sun_path))
		return -1;
	r->up.sun_family = AF_UNIX;
	snprintf(r->up.sun_path, sizeof(r->up.sun_path), "%.*s/.s.PGSQL.5432",
	    (int)len, h + 5);
	snprintf(r->dir, sizeof(r->dir), "/tmp/qrelay.XXXXXX");
	if (!mkdtemp(r->dir))
		return -1;
	snprintf(me.sun_path, sizeof(me.sun_path), "%s/.s.PGSQL.5432", r->dir);
	if ((r->lfd = socket(AF_UNIX, SOCK_STREAM, 0)) < 0 ||
	    bind(r->lfd, (struct sockaddr *)&me, sizeof(me)) < 0 ||
	    listen(r->lfd, 8) < 0)
		return -1;
	return pthread_create(&r->th, NULL, relay_main, r) == 0 ? 0 : -1;
}

static void
relay_stop(struct relay *r)
{
	char path[100];

	atomic_store(&r->stop, true);
	pthread_join(r->th, NULL);
	snprintf(path, sizeof(path), "%s/.s.PGSQL.5432", r->dir);
	unlink(path);
	rmdir(r->dir);
}

static void
on_alarm(int sig)
{
	static const char msg[] = "not ok - gone: a call on the vanished "
				  "server blocked for 20 s\n";

	(void)sig;
	if (write(1, msg, sizeof(msg) - 1) < 0) {
		/* nothing more to say */
	}
	_exit(1);
}

/*
 * The server vanishes under b: its calls' session is cut, new sessions
 * are refused, and its listening session is left hanging.  Once a call
 * has found the server gone, nothing b does waits on the hanging one:
 * no UNLISTEN is sent down it, and the descriptor is asked of a new one
 * (refused too) instead.
 */
static void
test_listener_gone(void)
{
	struct fix f;
	struct queen *a = fix_open(&f, "pgm-gone");
	struct queen *b = NULL;
	struct queen_options o = { 0 };
	struct relay r;
	char uri[400];
	int i, rc;

	if (relay_start(&r) != 0) {
		skip(9, "gone: QUEEN_TEST_PG names no unix socket to relay to");
		fix_close(&f);
		return;
	}
	snprintf(uri, sizeof(uri),
	    "postgresql:///postgres?host=%s&"
	    "user=postgres&options=-csearch_path%%3D%s",
	    r.dir, f.schema);
	o.path = uri;
	o.sync = QUEEN_SYNC_OFF;
	o.clock = my_clock;
	o.clock_arg = &f;
	is_int(queen_open(&o, &b), 0, "gone: b opens through the relay");
	push1(a, "gq", NULL, "m1", "x");
	take(a, "gq", "m1");
	ok(b && queen_event_fd(b) >= 0, "gone: b has a descriptor");
	is_int(b ? queen_event_watch(b, "gq", true) : -1, 1,
	    "gone: b watches gq");
	is_int(atomic_load(&r.n), 2,
	    "gone: b's calls and its listening go through the relay");
	atomic_store(&r.cut, true);
	for (i = 0; i < 100 && !atomic_load(&r.was_cut); i++)
		usleep(20000);
	signal(SIGALRM, on_alarm);
	alarm(20);
	rc = (int)push1(b, "other", NULL, "o1", "x");
	is_int(rc, -EIO, "gone: b's next call finds the server gone");
	rc = (int)push1(b, "other", NULL, "o2", "x");
	is_int(rc, -EIO, "gone: and the one after it cannot reconnect");
	is_int(queen_event_watch(b, "gq", false), 0,
	    "gone: b stops watching gq without waiting on its listener");
	ok(queen_event_fd(b) < 0, "gone: and has no descriptor meanwhile");
	alarm(0);
	queen_close(b);
	relay_stop(&r);
	fix_close(&f);
}

/* Run sql on the fixture's schema through a connection of our own. */
static bool
raw_sql(struct fix *f, const char *sql)
{
	PGconn *c = PQconnectdb(getenv("QUEEN_TEST_PG"));
	char set[80];
	PGresult *r;
	bool good;

	snprintf(set, sizeof(set), "SET search_path = %s", f->schema);
	PQclear(PQexec(c, set));
	r = PQexec(c, sql);
	good = PQresultStatus(r) == PGRES_COMMAND_OK;
	if (!good)
		diag("%s: %s %s", sql, PQresStatus(PQresultStatus(r)),
		    PQerrorMessage(c));
	PQclear(r);
	PQfinish(c);
	return good;
}

/*
 * An append is sent without waiting for its answer.  When it fails (here
 * a row in the way at the next offset, put there behind the engine's
 * back), the call was already told it succeeded, so nothing of the
 * transaction may commit: not even when a later call of the batch fails
 * and rolls its savepoint back, which would otherwise leave a healthy
 * transaction without the first call's message.
 */
static void
test_sent_write_fails(void)
{
	struct fix f;
	struct queen *q = fix_open(&f, "pgm-sent");
	char why[200] = "";
	int rc;

	is_int(push1(q, Q, NULL, "m1", "x"), 1, "sent: push m1");
	ok(raw_sql(&f,
	       "INSERT INTO messages (id, created_at, txid, payload) "
	       "SELECT (p.id << 40) + 2, 0, 'w'::bytea, 'in the way'::bytea "
	       "FROM partitions p JOIN queues q ON q.id = p.queue_id "
	       "WHERE q.name = '" Q "'"),
	    "sent: a row in the way of offset 2");
	is_int(push1(q, Q, NULL, "m2", "x"), -EIO,
	    "sent: a push alone fails at its commit");
	is_int(queen_batch_begin(q, 0), 0, "sent: a batch");
	/* answered before the append is, unless the call waits for a read
	 * after it (the wake of a partition read to its end does) */
	rc = push1(q, Q, NULL, "m2", "x");
	ok(rc == 2 || rc == -EIO,
	    "sent: its push is answered (2), or fails with the append (%d)",
	    rc);
	if (rc == 2)
		ok(push1(q, "other", NULL, "o1", "x") < 0,
		    "sent: the next call meets the failure");
	else /* the batch still may not commit it (below) */
		push1(q, "other", NULL, "o1", "x");
	ok(queen_batch_commit(q) < 0, "sent: and the batch cannot commit");
	ok(strstr(queen_errmsg(q), "duplicate") != NULL,
	    "sent: the reason is kept (%s)", queen_errmsg(q));
	queen_batch_rollback(q);
	is_int(tail_of(q, Q, NULL), 1, "sent: the partition is untouched");
	is_int(tail_of(q, "other", NULL), -1, "sent: nor was 'other' made");
	ok(raw_sql(&f,
	       "DELETE FROM messages WHERE payload = "
	       "'in the way'::bytea"),
	    "sent: the row out of the way");
	is_int(push1(q, Q, NULL, "m2", "x"), 2, "sent: the push lands now");
	ok(!queen_failed(q, why, sizeof(why)), "sent: q is not failed (%s)",
	    why);
	fix_close(&f);
}

/*
 * The same, when the append waits for another session's row until its
 * lock times out (as a deadlock's victim fails, EBUSY): the batch cannot
 * commit, and says it may run again (EBUSY), where any other failure
 * of a write sent ahead is EIO.  The engine runs its publishes again on
 * EBUSY (fs/engine.c); before, such a batch answered EIO.
 */
static void
test_sent_write_busy(void)
{
	struct fix f;
	struct queen *q = fix_open(&f, "pgm-sentbusy");
	struct queen *b = open_with(&f, NULL, "lock_timeout%3D1000");
	PGconn *c = PQconnectdb(f.path);
	PGresult *r;
	int rc;

	is_int(push1(q, Q, NULL, "m1", "x"), 1, "sent busy: push m1");
	r = PQexec(c,
	    "BEGIN; INSERT INTO messages (id, created_at, txid, payload) "
	    "SELECT (p.id << 40) + 2, 0, 'w'::bytea, 'in the way'::bytea "
	    "FROM partitions p JOIN queues q ON q.id = p.queue_id "
	    "WHERE q.name = '" Q "'");
	ok(PQresultStatus(r) == PGRES_COMMAND_OK,
	    "sent busy: another session's row, not committed, at offset 2");
	PQclear(r);
	is_int(queen_batch_begin(b, 0), 0, "sent busy: a batch");
	rc = push1(b, Q, NULL, "m2", "x");
	ok(rc == 2 || rc == -EBUSY,
	    "sent busy: its push is answered (2), or times out (%d)", rc);
	if (rc == 2)
		ok(push1(b, "other", NULL, "o1", "x") < 0,
		    "sent busy: the next call meets the time-out");
	rc = queen_batch_commit(b);
	is_int(rc, -EBUSY,
	    "sent busy: the batch cannot commit, and may run "
	    "again (%s)",
	    queen_errmsg(b));
	queen_batch_rollback(b);
	PQclear(PQexec(c, "ROLLBACK"));
	is_int(tail_of(q, Q, NULL), 1, "sent busy: the partition is untouched");
	is_int(push1(b, Q, NULL, "m2", "x"), 2,
	    "sent busy: run again, it lands");
	PQfinish(c);
	queen_close(b);
	fix_close(&f);
}

/* COMMIT on the connection after ms milliseconds */
struct later {
	PGconn *c;
	int ms;
};

static void *
commit_later(void *arg)
{
	struct later *l = arg;

	usleep((useconds_t)l->ms * 1000);
	PQclear(PQexec(l->c, "COMMIT"));
	return NULL;
}

/*
 * The lock_timeout a connection's options set is the one its statements
 * wait for a row; the store sets its own (5 s) only where none is set.
 * Another session holds the partition for 1.5 s: a handle that waits at
 * most 200 ms fails its push with EBUSY while the row is held (on the
 * code that overrode it with 5 s, the push waited and landed), so does
 * a batch begun QUEEN_BATCH_BRIEF (100 ms) on a handle without a setting,
 * and that handle's next batch waits the hold out and lands.
 */
static void
test_lock_timeout(void)
{
	struct fix f;
	struct queen *q = fix_open(&f, "pgm-locktime");
	struct queen *b = open_with(&f, NULL, "lock_timeout%3D200");
	PGconn *c = PQconnectdb(f.path);
	struct later l = { c, 1500 };
	pthread_t th;
	PGresult *r;
	int64_t rc;
	int i;

	is_int(push1(q, Q, NULL, "m1", "x"), 1, "lock timeout: push m1");
	/* b; q in a brief batch; q in a batch of its own (none left over) */
	for (i = 0; i < 3; i++) {
		struct queen *h = i == 0 ? b : q;

		r = PQexec(c,
		    "BEGIN; SELECT 1 FROM partitions p JOIN queues q "
		    "ON q.id = p.queue_id WHERE q.name = '" Q "' "
		    "FOR UPDATE OF p");
		ok(PQresultStatus(r) == PGRES_TUPLES_OK,
		    "lock timeout: another session holds the partition");
		PQclear(r);
		if (pthread_create(&th, NULL, commit_later, &l) != 0) {
			diag("pthread_create failed");
			exit(1);
		}
		if (i == 1 && queen_batch_begin(h, QUEEN_BATCH_BRIEF) != 0)
			diag("queen_batch_begin: %s", queen_errmsg(h));
		rc = push1(h, Q, NULL, i == 2 ? "m3" : "m2", "x");
		if (i == 1) {
			if (rc > 0)
				rc = queen_batch_commit(h);
			queen_batch_rollback(h);
		}
		if (i == 0)
			is_int(rc, -EBUSY,
			    "lock timeout: the handle whose connection waits "
			    "200 ms fails while the row is held (%s)",
			    queen_errmsg(h));
		else if (i == 1)
			is_int(rc, -EBUSY,
			    "lock timeout: a brief batch of the other fails "
			    "while the row is held (%s)",
			    queen_errmsg(h));
		else
			is_int(rc, 2,
			    "lock timeout: the handle with no "
			    "setting of its own waits the hold out");
		pthread_join(th, NULL);
	}
	is_int(push1(b, Q, NULL, "m4", "x"), 3,
	    "lock timeout: the row free, the first handle pushes");
	PQfinish(c);
	queen_close(b);
	fix_close(&f);
}

/*
 * A refusal the store makes (a constraint) is reported with the store's
 * reason, never with a message an earlier call left: another session
 * deletes the queue a push is writing, and commits while the push waits
 * for the partition's row.  The push fails (the queue is gone), and
 * queen_errmsg names the store's reason, not the "no queue 'nosuch'"
 * of the failed lookup before it (the code before left that one).
 */
static void
test_store_refusal_named(void)
{
	struct fix f;
	struct queen *q = fix_open(&f, "pgm-errname");
	PGconn *c = PQconnectdb(f.path);
	struct later l = { c, 500 };
	pthread_t th;
	PGresult *r;
	int64_t rc, off;

	is_int(push1(q, "ea", NULL, "m1", "x"), 1, "refusal: push m1");
	rc = queen_msg_find(q, "nosuch", "default", "m1", &off);
	ok(rc == -ENOENT && strstr(queen_errmsg(q), "no queue 'nosuch'"),
	    "refusal: a lookup in a missing queue says so (%s)",
	    queen_errmsg(q));
	r = PQexec(c, "BEGIN; DELETE FROM queues WHERE name = 'ea'");
	ok(PQresultStatus(r) == PGRES_COMMAND_OK,
	    "refusal: another session deletes the queue");
	PQclear(r);
	if (pthread_create(&th, NULL, commit_later, &l) != 0) {
		diag("pthread_create failed");
		exit(1);
	}
	rc = push1(q, "ea", "np", "m2", "x");
	pthread_join(th, NULL);
	diag("refusal: the push answered %lld: %s", (long long)rc,
	    queen_errmsg(q));
	ok(rc < 0, "refusal: the push into the deleted queue fails");
	ok(!strstr(queen_errmsg(q), "nosuch") &&
		strncmp(queen_errmsg(q), "storage: ", 9) == 0,
	    "refusal: the store's reason names it, not the lookup's before");
	PQfinish(c);
	fix_close(&f);
}

/*
 * A push and an ack of one partition committing at once on two daemons
 * can leave its cursor caught up with a message past it (the ack saw no
 * message, the push saw a leased cursor): made here by hand, as the race
 * leaves it.  The tick wakes such a cursor, but not while another
 * session holds it: it does not wait for it (holding the cursors it
 * woke before, it made a ring with a batch of publishes waking them),
 * and wakes it at a later tick.  The other handle waits at most 3 s for
 * a row: on the code that waited, its tick failed.
 */
static void
test_cursor_repair(void)
{
	struct fix f;
	struct queen *q = fix_open(&f, "pgm-repair");
	struct queen *b = open_with(&f, NULL, "lock_timeout%3D3000");
	struct queen_batch *ba = NULL;
	bool more = false;
	ssize_t n;
	PGconn *c = PQconnectdb(f.path);
	PGresult *r;

	push1(q, Q, NULL, "m1", "x");
	is_int(pop1(q, Q, NULL, NULL, 1, &ba), 0, "repair: m1 leased");
	queen_batch_free(ba);
	ba = NULL;
	push1(q, Q, NULL, "m2", "x");
	ok(raw_sql(&f,
	       "UPDATE cursors SET next_at = -1, lease_id = NULL, batch_end = "
	       "1, "
	       "lease_expires_at = 0, committed = 1"),
	    "repair: m1 acked, the cursor caught up, m2 never woke it");
	is_int(pop1(q, Q, NULL, NULL, 1, &ba), -EAGAIN,
	    "repair: so nothing is ready");
	queen_batch_free(ba);
	ba = NULL;
	r = PQexec(c, "BEGIN; SELECT 1 FROM cursors FOR UPDATE");
	ok(PQresultStatus(r) == PGRES_TUPLES_OK && PQntuples(r) == 1,
	    "repair: another session holds the cursor");
	PQclear(r);
	n = queen_maintain(b, &more);
	is_int((int)n, 0, "repair: a tick passes it by, without waiting (%s)",
	    n < 0 ? queen_errmsg(b) : "ok");
	is_int(sql_value(&f, "SELECT count(*) FROM cursors WHERE next_at < 0"),
	    1, "repair: so it is still caught up");
	PQclear(PQexec(c, "COMMIT"));
	n = queen_maintain(q, &more);
	ok(n >= 1, "repair: the next tick woke it (%zd)", n);
	is_int(pop1(q, Q, NULL, NULL, 1, &ba), 0, "repair: m2 is leased now");
	ok(ba && ba->n == 1 && strcmp(ba->msgs[0].txid, "m2") == 0,
	    "repair: and it is m2");
	queen_batch_free(ba);
	is_int((int)queen_maintain(q, &more), 0,
	    "repair: a tick with nothing to wake wakes nothing");
	PQfinish(c);
	queen_close(b);
	fix_close(&f);
}

/* WAL positions as numbers, read on a connection of their own */
#define INSERT_LSN \
	"SELECT pg_wal_lsn_diff(pg_current_wal_insert_lsn(), '0/0')::bigint"
#define FLUSH_LSN \
	"SELECT pg_wal_lsn_diff(pg_current_wal_flush_lsn(), '0/0')::bigint"

static struct queen *
open_sync(struct fix *f, enum queen_sync sync)
{
	struct queen_options o = { 0 };
	struct queen *q = NULL;

	o.path = f->path;
	o.sync = sync;
	o.clock = my_clock;
	o.clock_arg = f;
	if (queen_open(&o, &q) != 0)
		exit(1);
	return q;
}

/* one lease in a batch of the given flags; *need (if asked) what its
 * answer waits for (queen_pop_ticket) */
static int
batch_pop(struct queen *q, enum queen_batch_flags fl, const char *part,
    int64_t batch, uint64_t *need)
{
	struct queen_batch *b = NULL;
	int rc;

	if ((rc = queen_batch_begin(q, fl)) != 0)
		return rc;
	rc = pop1(q, Q, part, NULL, batch, &b);
	if (need)
		*need = queen_pop_ticket(q);
	queen_batch_free(b);
	if (rc != 0) {
		queen_batch_rollback(q);
		return rc;
	}
	return queen_batch_commit(q);
}

/* one lease in a batch of leases alone, as the mount's `next` */
static int
lazy_pop(struct queen *q, const char *part, int64_t batch)
{
	return batch_pop(q, QUEEN_BATCH_LAZY, part, batch, NULL);
}

/* a deferred write of q's own into partition p3, then its sync */
static void
own_flush(struct queen *q, const char *txid, const char *what)
{
	struct queen_push_item it = { 0 };
	struct queen_push_result r;

	is_int(queen_batch_begin(q, QUEEN_BATCH_DEFERRED), 0,
	    "%s: a deferred batch", what);
	it.queue = Q;
	it.partition = "p3";
	it.txid = txid;
	it.payload = "own";
	it.len = 3;
	ok(queen_push(q, &it, 1, false, &r) == 0, "%s: a push into p3", what);
	is_int(queen_batch_commit(q), 0, "%s: its commit", what);
	is_int(queen_sync(q, queen_sync_ticket(q)), 0, "%s: its sync", what);
}

/*
 * A flush waits for no other session's (schema version 6).  Another
 * session holds queen_meta's row, which every flush updated before, and
 * a row of queen_flush of its own, in a transaction left open as a flush
 * under way: b's deferred push and its sync go through meanwhile (before,
 * the sync waited for that lock until lock_timeout and failed), and the
 * other session is still in its transaction after them.
 */
static void
test_flush_alone(void)
{
	struct fix f;
	struct queen *a = fix_open(&f, "pgm-flush");
	struct queen *b = open_sync(&f, QUEEN_SYNC_FULL);
	PGconn *c = PQconnectdb(f.path);
	PGresult *r;

	is_int(push1(a, Q, "p3", "warm", "w"), 1, "flush: the queue");
	own_flush(b, "f1", "flush: b's first flush");
	r = PQexec(c,
	    "SET idle_in_transaction_session_timeout = '20s'; "
	    "BEGIN; UPDATE queen_meta SET version = version; "
	    "INSERT INTO queen_flush VALUES (pg_backend_pid(), 0); "
	    "UPDATE queen_flush SET flushes = flushes + 1 "
	    "WHERE pid = pg_backend_pid()");
	ok(PQresultStatus(r) == PGRES_COMMAND_OK,
	    "flush: another session holds queen_meta's row and its own "
	    "flush row");
	PQclear(r);
	own_flush(b, "f2", "flush: b's second flush, meanwhile");
	r = PQexec(c, "SELECT 1");
	ok(PQresultStatus(r) == PGRES_TUPLES_OK,
	    "flush: the other session is still in its transaction");
	PQclear(r);
	PQclear(PQexec(c, "ROLLBACK"));
	/* the rows gone (by hand, say): the next flush writes its own again
	 * (before, it updated no row, which writes no WAL, and the sync
	 * failed as a lost connection) */
	r = PQexec(c, "DELETE FROM queen_flush");
	ok(PQresultStatus(r) == PGRES_COMMAND_OK, "flush: its rows deleted");
	PQclear(r);
	is_int(sql_value(&f, "SELECT count(*) FROM queen_flush"), 0,
	    "flush: no row left");
	own_flush(b, "f3", "flush: b's flush after that");
	is_int(sql_value(&f, "SELECT count(*) FROM queen_flush"), 1,
	    "flush: b's row made again");
	PQfinish(c);
	queen_close(b);
	fix_close(&f);
}

/*
 * A lease hands out only what is on the disk.  Another handle's push
 * committed without a flush (sync off): the lease of it must commit
 * durably, which flushes the WAL past that push.  A push a flush has
 * covered since: the lease need not wait for the disk.  The WAL writer
 * is slowed down meanwhile, so that only commits flush.
 */
static void
test_lease_durable(void)
{
	struct fix f;
	struct queen *a = fix_open(&f, "pgm-ldur");
	struct queen *w = open_sync(&f, QUEEN_SYNC_OFF);
	struct queen *b = open_sync(&f, QUEEN_SYNC_FULL);
	int64_t ins, fl;

	/* the queue and its partitions exist, and all of it is flushed */
	is_int(push1(a, Q, "p1", "warm1", "w"), 1, "ldur: set up p1");
	is_int(push1(a, Q, "p2", "warm2", "w"), 1, "ldur: set up p2");
	is_int(lazy_pop(b, "p1", 1), 0, "ldur: b leases p1's first");
	is_int(lazy_pop(b, "p2", 1), 0, "ldur: b leases p2's first");
	/* a server of one's own (tests/pg.sh); elsewhere, without the
	 * right to slow its WAL writer, the rest says nothing */
	if (sql_value(&f, "ALTER SYSTEM SET wal_writer_delay = '10s'") != 0 ||
	    sql_value(&f, "SELECT pg_reload_conf()::int") != 1) {
		skip(13, "cannot slow the server's WAL writer");
		goto out;
	}
	sql_value(&f, "SELECT pg_sleep(0.3)");
	sql_value(&f, "CHECKPOINT");

	/* 1: a push not flushed */
	is_int(push1(w, Q, "p1", "m1", "one"), 2, "ldur: w pushes, no flush");
	ins = sql_value(&f, INSERT_LSN);
	fl = sql_value(&f, FLUSH_LSN);
	if (fl >= ins) {
		skip(2, "the server flushed the WAL on its own");
	} else {
		/* the lease of warm1 expires: b takes it with m1 */
		f.now += 3600 * 1000;
		is_int(lazy_pop(b, "p1", 10), 0, "ldur: b leases p1 again");
		ok(sql_value(&f, FLUSH_LSN) >= ins,
		    "ldur: that lease flushed the WAL past the push");
	}

	/* 2: a push that a flush has covered */
	is_int(push1(w, Q, "p2", "m2", "two"), 2, "ldur: w pushes into p2");
	/* b's own deferred write and its sync vouch for m2 */
	own_flush(b, "m3", "ldur: b");
	ins = sql_value(&f, INSERT_LSN);
	f.now += 3600 * 1000;
	is_int(lazy_pop(b, "p2", 10), 0, "ldur: b leases p2 again (m2)");
	ok(sql_value(&f, FLUSH_LSN) < sql_value(&f, INSERT_LSN) &&
		sql_value(&f, INSERT_LSN) > ins,
	    "ldur: that lease wrote and did not wait for a flush");

	/* 3: a push after that flush, which vouches for nothing newer */
	is_int(push1(w, Q, "p5", "m5", "five"), 1, "ldur: w pushes into p5");
	ins = sql_value(&f, INSERT_LSN);
	fl = sql_value(&f, FLUSH_LSN);
	if (fl >= ins) {
		skip(2, "the server flushed the WAL on its own");
	} else {
		is_int(lazy_pop(b, "p5", 10), 0, "ldur: b leases p5 (m5)");
		ok(sql_value(&f, FLUSH_LSN) >= ins,
		    "ldur: that lease flushed the WAL past the push");
	}
	sql_value(&f, "ALTER SYSTEM RESET wal_writer_delay");
	sql_value(&f, "SELECT pg_reload_conf()::int");
out:
	queen_close(w);
	queen_close(b);
	fix_close(&f);
}

/*
 * A pop in a batch that also writes (deferred: answered once the batch's
 * sync is done) needs that sync only if what it hands out may not be on
 * the disk yet.  Another handle's push after b's last flush may not be;
 * one that flush covered is, and the pop is answered at the commit.
 */
static void
test_deferred_pop(void)
{
	struct fix f;
	struct queen *a = fix_open(&f, "pgm-dpop");
	struct queen *w = open_sync(&f, QUEEN_SYNC_OFF);
	struct queen *b = open_sync(&f, QUEEN_SYNC_FULL);
	uint64_t need = 0;

	is_int(push1(a, Q, "p1", "old", "o"), 1, "dpop: a pushes into p1");
	/* b's own deferred write and its sync: a flush after a's push */
	own_flush(b, "own", "dpop: b");
	/* w's push after that flush, committed without one */
	is_int(push1(w, Q, "p2", "young", "y"), 1, "dpop: w pushes into p2");
	is_int(batch_pop(b, QUEEN_BATCH_DEFERRED, "p2", 10, &need), 0,
	    "dpop: b pops w's push");
	ok(need > 0, "dpop: that pop waits for its batch's sync");
	is_int(batch_pop(b, QUEEN_BATCH_DEFERRED, "p1", 10, &need), 0,
	    "dpop: b pops a's push");
	ok(need == 0, "dpop: that pop needs no sync (got %llu)",
	    (unsigned long long)need);
	queen_close(w);
	queen_close(b);
	fix_close(&f);
}

/* Push len bytes; the offset, or a negative errno. */
static int64_t
push_len(struct queen *q, const char *queue, const char *part, const char *txid,
    const void *p, size_t len)
{
	struct queen_push_item it = { 0 };
	struct queen_push_result r;
	int rc;

	it.queue = queue;
	it.partition = part;
	it.txid = txid;
	it.payload = p;
	it.len = len;
	rc = queen_push(q, &it, 1, false, &r);
	return rc < 0 ? rc : r.offset;
}

/*
 * A pop locks only the ready cursor it takes: another handle's batch
 * that popped one partition leaves the next to this one's pop, and its
 * ack.  What a pop and the read of a leased message read along with
 * their first statement (the message after the ready cursor; a lease's
 * rows with the message a name hashes to): the message each caller
 * gets is its own, when the first ready cursor is locked by another
 * handle, when a name of a lease of three is asked for after another,
 * when a message is too large to read along; and the round trips.
 */
static void
test_read_along(void)
{
	struct fix f;
	struct queen *a = fix_open(&f, "pgm-along");
	struct queen *b = open_other(&f, NULL);
	struct queen_batch *ba = NULL, *bb = NULL, *one = NULL;
	struct queen_lease_info li;
	struct queen_ack_result r;
	size_t bigl = (3 << 20) / 2;
	char *big = malloc(bigl);
	uint64_t t;
	int rc;

	if (!big)
		exit(1);
	memset(big, 'z', bigl);
	big[bigl / 2] = 'y';
	/* the group's cursors of both partitions exist, committed */
	for (int i = 1; i <= 2; i++) {
		char part[16], tx[16];

		snprintf(part, sizeof(part), "p%d", i);
		snprintf(tx, sizeof(tx), "w%d", i);
		f.now += 1000;
		is_int(push1(a, "al", part, tx, "warm"), 1, "along: warm %s",
		    part);
		f.now += 1000;
		rc = pop1(a, "al", part, NULL, 1, &ba);
		ok(rc == 0 &&
			ack1(a, "al", part, NULL, tx, "completed", ba->lease_id,
			    &r) == 0 &&
			r.success,
		    "along: %s acked", tx);
		queen_batch_free(ba);
		ba = NULL;
	}
	f.now += 1000;
	is_int(push1(a, "al", "p1", "a1", "first"), 2, "along: push p1");
	f.now += 1000;
	is_int(push1(a, "al", "p2", "b1", "second"), 2, "along: push p2");
	f.now += 1000;

	/* the first ready cursor is a's, locked in its open batch */
	is_int(queen_batch_begin(a, 0), 0, "along: a opens a batch");
	rc = pop1(a, "al", NULL, NULL, 1, &ba);
	ok(rc == 0 && strcmp(ba->partition, "p1") == 0 &&
		ba->msgs[0].len == 5 &&
		memcmp(ba->msgs[0].payload, "first", 5) == 0,
	    "along: a leases p1's message (%d)", rc);
	rc = pop1(b, "al", NULL, NULL, 1, &bb);
	ok(rc == 0 && strcmp(bb->partition, "p2") == 0 &&
		bb->msgs[0].offset == 2 && bb->msgs[0].len == 6 &&
		memcmp(bb->msgs[0].payload, "second", 6) == 0,
	    "along: b skips it and gets p2's, whole (%d)", rc);
	if (rc != 0)
		diag("b: %s", queen_errmsg(b));
	/* a's batch holds p1's cursor only: b's ack of p2 does not wait */
	ok(bb &&
		ack1(b, "al", "p2", NULL, "b1", "completed", bb->lease_id,
		    &r) == 0 &&
		r.success,
	    "along: b acks p2's while a's batch is open");
	is_int(queen_batch_commit(a), 0, "along: a commits");
	ok(ba &&
		ack1(b, "al", "p1", NULL, "a1", "completed", ba->lease_id,
		    &r) == 0 &&
		r.success,
	    "along: p1's acked");
	queen_batch_free(ba);
	queen_batch_free(bb);

	/* a push: its rows with the partition locked, then the commit with
	 * the writes, the wake-up and its announcement */
	t = queen_round_trips(a);
	is_int(push1(a, "al", "p1", "a2", "again"), 3, "along: push again");
	t = queen_round_trips(a) - t;
	is_int((int)t, 2, "along: in two round trips");
	/* a pop: its queue and group with the ready cursor and the
	 * message in one statement, the commit */
	f.now += 1000;
	t = queen_round_trips(b);
	rc = pop1(b, "al", NULL, NULL, 1, &bb);
	t = queen_round_trips(b) - t;
	ok(rc == 0 && bb->msgs[0].offset == 3 && bb->msgs[0].len == 5 &&
		memcmp(bb->msgs[0].payload, "again", 5) == 0,
	    "along: b pops it (%d)", rc);
	is_int((int)t, 2, "along: in two round trips");
	/* nothing more is ready (p1 is leased): the same statement says */
	t = queen_round_trips(a);
	rc = pop1(a, "al", NULL, NULL, 1, &one);
	t = queen_round_trips(a) - t;
	is_int(rc, -EAGAIN, "along: a finds nothing ready");
	is_int((int)t, 2, "along: in two round trips");
	queen_batch_free(one);
	one = NULL;
	/* its read by name: one statement */
	t = queen_round_trips(b);
	rc = bb ? queen_lease_read_msg(b, bb->lease_id, "a2", true, &one) : -1;
	t = queen_round_trips(b) - t;
	ok(rc == 0 && one->n == 1 && one->msgs[0].offset == 3 &&
		memcmp(one->msgs[0].payload, "again", 5) == 0,
	    "along: and reads it by name (%d)", rc);
	is_int((int)t, 1, "along: in one round trip");
	queen_batch_free(one);
	one = NULL;
	/* the kernel's way: the lease's directory, then the name in it,
	 * once the rows read along by the read before are gone */
	usleep(2000);
	t = queen_round_trips(b);
	rc = bb ? queen_lease_get(b, bb->lease_id, &li) : -1;
	ok(rc == 0 && strcmp(li.partition, "p1") == 0 && li.first == 3,
	    "along: the lease's directory (%d)", rc);
	rc = bb ? queen_lease_read_msg(b, bb->lease_id, "a2", true, &one) : -1;
	t = queen_round_trips(b) - t;
	ok(rc == 0 && one->n == 1 && one->msgs[0].offset == 3 &&
		memcmp(one->msgs[0].payload, "again", 5) == 0,
	    "along: then its message by name (%d)", rc);
	is_int((int)t, 1, "along: both in one round trip");
	queen_batch_free(one);
	one = NULL;
	/* an ack by its lease alone (as by rename): the lease read with
	 * its cursor locked, its message and the one after; the commit */
	usleep(2000);
	t = queen_round_trips(b);
	ok(bb &&
		ack1(b, NULL, NULL, NULL, "a2", "completed", bb->lease_id,
		    &r) == 0 &&
		r.success && r.lease_released,
	    "along: acked by its lease alone");
	t = queen_round_trips(b) - t;
	is_int((int)t, 2, "along: in two round trips");
	is_int(committed(a, "al", NULL, "p1"), 3, "along: p1 committed to 3");
	queen_batch_free(bb);

	/* a lease of three: each name its own message */
	is_int(push1(a, "al", "p1", "a3", "three"), 4, "along: push a3");
	is_int(push1(a, "al", "p1", "a4", "four"), 5, "along: push a4");
	is_int(push1(a, "al", "p1", "a5", "five"), 6, "along: push a5");
	f.now += 1000;
	rc = pop1(b, "al", "p1", NULL, 3, &bb);
	ok(rc == 0 && bb->n == 3, "along: b leases three (%d)", rc);
	if (rc == 0) {
		static const char *names[] = { "a4", "a3", "a5", "a4" };
		static const char *want[] = { "four", "three", "five", "four" };
		static const int64_t offs[] = { 5, 4, 6, 5 };

		for (int i = 0; i < 4; i++) {
			/* the directory's first message is read along */
			rc = queen_lease_get(b, bb->lease_id, &li);
			if (rc == 0)
				rc = queen_lease_read_msg(b, bb->lease_id,
				    names[i], true, &one);
			ok(rc == 0 && one->n == 1 &&
				one->msgs[0].offset == offs[i] &&
				one->msgs[0].len == strlen(want[i]) &&
				memcmp(one->msgs[0].payload, want[i],
				    strlen(want[i])) == 0,
			    "along: %s is its own message (%d)", names[i], rc);
			queen_batch_free(one);
			one = NULL;
		}
		is_int(queen_lease_read_msg(b, bb->lease_id, "a2", true, &one),
		    -ENOENT, "along: a2, acked before, is not under it");
		ok(ack1(a, "al", "p1", NULL, "a4", "completed", bb->lease_id,
		       &r) == 0 &&
			r.success,
		    "along: a acks a4 by name");
		is_int(committed(a, "al", NULL, "p1"), 5,
		    "along: that committed a4's offset");
		ok(ack1(a, "al", "p1", NULL, "a5", "completed", bb->lease_id,
		       &r) == 0 &&
			r.success,
		    "along: and a5");
	}
	queen_batch_free(bb);

	/* over what the directory's lookup reads along: read by name */
	is_int(push_len(a, "al", "p4", "mid", big, 9000), 1,
	    "along: push 9000 bytes");
	f.now += 1000;
	rc = pop1(b, "al", "p4", NULL, 1, &bb);
	ok(rc == 0 && bb->msgs[0].len == 9000, "along: b pops it (%d)", rc);
	t = queen_round_trips(b);
	rc = bb ? queen_lease_get(b, bb->lease_id, &li) : -1;
	if (rc == 0)
		rc = queen_lease_read_msg(b, bb->lease_id, "mid", true, &one);
	t = queen_round_trips(b) - t;
	ok(rc == 0 && one->n == 1 && one->msgs[0].len == 9000 &&
		memcmp(one->msgs[0].payload, big, 9000) == 0,
	    "along: the directory, then it by name, whole (%d)", rc);
	is_int((int)t, 2, "along: in two round trips");
	queen_batch_free(one);
	one = NULL;
	ok(bb &&
		ack1(b, "al", "p4", NULL, "mid", "completed", bb->lease_id,
		    &r) == 0 &&
		r.success,
	    "along: acked");
	queen_batch_free(bb);

	/* too large to read along: read on its own, whole */
	is_int(push_len(a, "al", "p3", "big", big, bigl), 1,
	    "along: push 1.5 MiB");
	f.now += 1000;
	rc = pop1(b, "al", NULL, NULL, 1, &bb);
	ok(rc == 0 && bb->msgs[0].len == bigl &&
		memcmp(bb->msgs[0].payload, big, bigl) == 0,
	    "along: b pops it whole (%d)", rc);
	rc = bb ? queen_lease_get(b, bb->lease_id, &li) : -1;
	if (rc == 0)
		rc = queen_lease_read_msg(b, bb->lease_id, "big", true, &one);
	ok(rc == 0 && one->n == 1 && one->msgs[0].len == bigl &&
		memcmp(one->msgs[0].payload, big, bigl) == 0,
	    "along: and reads it by name whole (%d)", rc);
	queen_batch_free(one);
	queen_batch_free(bb);
	free(big);
	queen_close(b);
	fix_close(&f);
}

/*
 * A message looked up by name, then read (the kernel's lookup, getattr
 * and read of partitions/<p>/<name>): one statement reads the rows, the
 * name's newest hash row and a small message; the answers are each
 * name's own, a large message is read whole on its own, a name pushed
 * by another handle is found once the rows read before are stale.
 */
static int
find_read(struct queen *q, const char *txid, int64_t *off,
    struct queen_batch **b)
{
	int rc;

	*b = NULL;
	if ((rc = queen_msg_find(q, "byname", "p", txid, off)) != 0)
		return rc;
	rc = queen_msg_read(q, "byname", "p", *off, 1, true, b);
	return rc == 0 && (!*b || (*b)->n != 1) ? -EIO : rc;
}

static void
test_find_by_name(void)
{
	struct fix f;
	struct queen *a = fix_open(&f, "pgm-byname");
	struct queen *b = open_other(&f, NULL);
	struct queen_batch *m = NULL;
	size_t bigl = 100 << 10;
	char *big = malloc(bigl);
	int64_t off = 0;
	uint64_t t;
	int rc;

	if (!big)
		exit(1);
	memset(big, 'q', bigl);
	big[bigl - 1] = 'r';
	is_int(push1(a, "byname", "p", "x1", "one"), 1, "byname: push x1");
	is_int(push1(a, "byname", "p", "x2", "two"), 2, "byname: push x2");
	is_int(push_len(a, "byname", "p", "x3", big, bigl), 3,
	    "byname: push x3 of 100 KiB");
	t = queen_round_trips(b);
	rc = find_read(b, "x2", &off, &m);
	t = queen_round_trips(b) - t;
	ok(rc == 0 && off == 2 && m->msgs[0].len == 3 &&
		memcmp(m->msgs[0].payload, "two", 3) == 0,
	    "byname: x2 found and read (%d)", rc);
	is_int((int)t, 1, "byname: in one round trip");
	queen_batch_free(m);
	rc = find_read(b, "x1", &off, &m);
	ok(rc == 0 && off == 1 && m->msgs[0].len == 3 &&
		memcmp(m->msgs[0].payload, "one", 3) == 0,
	    "byname: then x1, its own (%d)", rc);
	queen_batch_free(m);
	rc = find_read(b, "x3", &off, &m);
	ok(rc == 0 && off == 3 && m->msgs[0].len == bigl &&
		memcmp(m->msgs[0].payload, big, bigl) == 0,
	    "byname: x3 read whole (%d)", rc);
	queen_batch_free(m);
	is_int(find_read(b, "x4", &off, &m), -ENOENT,
	    "byname: x4 is not there");
	is_int(push1(a, "byname", "p", "x4", "four"), 4, "byname: a pushes x4");
	usleep(3000);
	rc = find_read(b, "x4", &off, &m);
	ok(rc == 0 && off == 4 && m->msgs[0].len == 4 &&
		memcmp(m->msgs[0].payload, "four", 4) == 0,
	    "byname: b finds it a moment later (%d)", rc);
	queen_batch_free(m);
	is_int(find_read(b, "x1", &off, &m), 0, "byname: x1 again");
	is_int(off, 1, "byname: at its offset");
	queen_batch_free(m);
	free(big);
	queen_close(b);
	fix_close(&f);
}

/* seq_scan of the cursors table, as the server reported it */
static int64_t
cursor_seq_scans(const struct fix *f)
{
	return sql_value(f,
	    "SELECT seq_scan FROM pg_stat_user_tables WHERE "
	    "schemaname = current_schema() AND "
	    "relname = 'cursors'");
}

/*
 * A lease is found through the leases table, not by reading every
 * cursor (cursors.lease_id has no index since schema version 3): the
 * server's count of whole-table reads of cursors over the read of a
 * leased message by name and its ack, with 1,000 cursors.  Reported as
 * in test_dlq_lookup.
 */
static void
test_lease_lookup(void)
{
	enum { N = 1000 };
	struct fix f;
	struct queen *q = fix_open(&f, "pgm-leasefind");
	struct queen_batch *b = NULL, *one = NULL;
	struct queen_ack_result ar;
	char part[32], tx[32];
	int64_t s0, s1 = -1;
	int i, ok_all = 1, rc;

	for (i = 0; i < N && ok_all; i++) {
		snprintf(part, sizeof(part), "p%04d", i);
		snprintf(tx, sizeof(tx), "m%04d", i);
		if (push1(q, Q, part, tx, "x") != 1 ||
		    pop1(q, Q, part, NULL, 1, &b) != 0)
			ok_all = 0;
		if (ok_all && i < N - 1 &&
		    (ack1(q, Q, part, NULL, tx, "completed", b->lease_id,
			 &ar) != 0 ||
			!ar.success))
			ok_all = 0;
		if (i < N - 1) {
			queen_batch_free(b);
			b = NULL;
		}
	}
	ok(ok_all && b, "lease lookup: %d cursors, the last one leased", N);
	if (!ok_all || !b) {
		queen_batch_free(b);
		fix_close(&f);
		return;
	}
	usleep(1200 * 1000);
	push1(q, "elsewhere", NULL, "e1", "x");
	usleep(1200 * 1000);
	s0 = cursor_seq_scans(&f);
	rc = queen_lease_read_msg(q, b->lease_id, "m0999", true, &one);
	ok(rc == 0 && one->n == 1, "lease lookup: m0999 read by name (%d)", rc);
	queen_batch_free(one);
	ok(ack1(q, Q, "p0999", NULL, "m0999", "completed", b->lease_id, &ar) ==
		    0 &&
		ar.success,
	    "lease lookup: and acked");
	push1(q, "elsewhere", NULL, "e2", "x");
	for (i = 0; i < 30 && s1 <= s0; i++) {
		usleep(100 * 1000);
		s1 = cursor_seq_scans(&f);
	}
	is_int(s1 - s0, 0, "lease lookup: no whole read of cursors");
	queen_batch_free(b);
	fix_close(&f);
}

/*
 * A batch its caller runs again (QUEEN_BATCH_REDO) reads a push's
 * partition without locking it and claims it with its writes, so that
 * another session pushing there meanwhile is not held up.  If that one
 * changed the row, the commit fails with -EBUSY and nothing of the
 * batch is kept; run again, it reads the row locked and lands behind,
 * and a transactionId the other pushed meanwhile is then a duplicate.
 */
static void
test_push_claim(void)
{
	struct fix f;
	struct queen *a = fix_open(&f, "pgm-claim");
	/* on the code before, b waited for a's lock: 500 ms, then -EBUSY */
	struct queen *b = open_with(&f, NULL, "lock_timeout%3D500");
	struct queen_push_item it[2];
	struct queen_push_result res[2];
	bool dup = false;
	int64_t rc;

	is_int(push1(a, Q, "p", "m1", "x"), 1, "claim: push m1");
	cfg(a, Q, NULL, "dedup_window", "600");

	/* no one else: the claim holds, and the commit keeps the push */
	is_int(queen_batch_begin(a, QUEEN_BATCH_REDO), 0,
	    "claim: a opens a batch it would run again");
	is_int(push1(a, Q, "p", "a1", "x"), 2, "claim: a pushes a1 in it");
	is_int(push1(a, Q, "p", "a2", "x"), 3, "claim: and a2, read again");
	is_int(queen_batch_commit(a), 0, "claim: a commits");
	is_int(tail_of(b, Q, "p"), 3, "claim: b sees both");

	/* b pushes while a's batch is open: b does not wait */
	is_int(queen_batch_begin(a, QUEEN_BATCH_REDO), 0,
	    "claim: a opens another");
	is_int(push1(a, Q, "p", "a3", "x"), 4, "claim: a pushes a3 as 4");
	rc = push1(b, Q, "p", "b1", "x");
	is_int(rc, 4, "claim: b pushes b1 as 4 meanwhile, not held up (%s)",
	    rc < 0 ? queen_errmsg(b) : "ok");
	rc = queen_batch_commit(a);
	is_int(rc, -EBUSY, "claim: a's commit fails: the row changed");
	ok(strstr(queen_errmsg(a), "changed since this push read it") != NULL,
	    "claim: and says why (%s)", queen_errmsg(a));
	queen_batch_rollback(a);
	is_int(tail_of(b, Q, "p"), 4, "claim: nothing of a's batch is kept");

	/* run again: the partition is read locked now, as it is for the
	 * next second (a claim of it failed): b waits, then times out */
	is_int(queen_batch_begin(a, QUEEN_BATCH_REDO), 0, "claim: a again");
	is_int(push1(a, Q, "p", "a3", "x"), 5, "claim: a3 lands as 5");
	is_int(push1(b, Q, "p", "b2", "x"), -EBUSY,
	    "claim: b waits for the row a read locked, and times out");
	is_int(queen_batch_commit(a), 0, "claim: and commits");

	/* a duplicate changes the row's count of them only: a claim
	 * checks every column it would write, not the tail alone */
	is_int(push1(a, Q, "s", "s1", "x"), 1, "claim: push s1 into s");
	is_int(queen_batch_begin(a, QUEEN_BATCH_REDO), 0,
	    "claim: a opens a batch");
	is_int(push1(a, Q, "s", "s2", "x"), 2, "claim: a pushes s2");
	is_int(push_ex(b, Q, "s", "s1", "x", false, &dup), 1,
	    "claim: b pushes s1 again meanwhile");
	ok(dup, "claim: a duplicate");
	is_int(queen_batch_commit(a), -EBUSY,
	    "claim: a's commit fails: the row's duplicates changed");
	queen_batch_rollback(a);
	is_int(tail_of(b, Q, "s"), 1, "claim: s holds s1 alone");

	/* the same transactionId from both, in another partition: b's
	 * lands, a's run again is its duplicate */
	is_int(push1(a, Q, "q", "q1", "x"), 1, "claim: push q1 into q");
	is_int(queen_batch_begin(a, QUEEN_BATCH_REDO), 0,
	    "claim: a opens a batch");
	it[0] = push_item(Q, "q", "same", "from a");
	it[1] = push_item(Q, "q", "a-next", "x");
	is_int(queen_push(a, it, 2, false, res), 0,
	    "claim: a pushes 'same' and another");
	ok(res[0].status == QUEEN_PUSH_QUEUED && res[0].offset == 2,
	    "claim: read unlocked, 'same' is new (%d %lld)", res[0].status,
	    (long long)res[0].offset);
	is_int(push_ex(b, Q, "q", "same", "from b", false, &dup), 2,
	    "claim: b pushes 'same' meanwhile");
	is_int(queen_batch_commit(a), -EBUSY, "claim: a's commit fails");
	queen_batch_rollback(a);
	is_int(queen_batch_begin(a, QUEEN_BATCH_REDO), 0, "claim: a again");
	is_int(queen_push(a, it, 2, false, res), 0, "claim: a pushes again");
	ok(res[0].status == QUEEN_PUSH_DUPLICATE && res[0].offset == 2 &&
		res[1].status == QUEEN_PUSH_QUEUED && res[1].offset == 3,
	    "claim: now 'same' is b's, and a-next lands as 3 (%d %lld %d "
	    "%lld)",
	    res[0].status, (long long)res[0].offset, res[1].status,
	    (long long)res[1].offset);
	is_int(queen_batch_commit(a), 0, "claim: and commits");
	is_int(tail_of(b, Q, "q"), 3, "claim: q holds q1, b's same, a-next");

	/* without the flag, a batch locks as it reads: b waits, then fails */
	is_int(queen_batch_begin(a, 0), 0, "claim: a opens a plain batch");
	is_int(push1(a, Q, "r", "r1", "x"), 1, "claim: a pushes r1");
	is_int(queen_batch_commit(a), 0, "claim: and commits");
	is_int(queen_batch_begin(a, 0), 0, "claim: a opens a plain batch");
	is_int(push1(a, Q, "r", "r2", "x"), 2, "claim: a pushes r2");
	is_int(push1(b, Q, "r", "r3", "x"), -EBUSY,
	    "claim: b waits for a's lock and times out");
	is_int(queen_batch_commit(a), 0, "claim: a commits");
	queen_close(b);
	fix_close(&f);
}

/*
 * An ack (as a rename makes it: by its lease) locks its cursor's row
 * from its read to its COMMIT, a round trip later.  Nothing else waits
 * for that row: it is leased, and what else touches a cursor passes
 * over a leased one (a push's wake-up of caught-up cursors) or skips a
 * locked one (a pop, the tick).  With a's ack open, b, whose statements
 * wait at most 500 ms for a row, pushes into the partition, pops the
 * other partition and runs the tick, none of them held up; only an
 * ack of the same lease waits, and times out.  Then a's ack commits
 * and b pops the message after the acked one.
 */
static void
test_ack_holds(void)
{
	struct fix f;
	struct queen *a = fix_open(&f, "pgm-ackhold");
	struct queen *b = open_with(&f, NULL, "lock_timeout%3D500");
	struct queen_batch *ba = NULL, *bb = NULL;
	struct queen_ack_item it;
	struct queen_ack_result r;
	bool more = false;
	int rc;

	is_int(push1(a, Q, "p", "m1", "x"), 1, "ack holds: push m1 into p");
	is_int(push1(a, Q, "p", "m2", "x"), 2, "ack holds: and m2");
	is_int(push1(a, Q, "o", "o1", "x"), 1, "ack holds: push o1 into o");
	rc = pop1(a, Q, "p", NULL, 1, &ba);
	is_int(rc, 0, "ack holds: a leases m1");
	if (rc != 0) {
		queen_close(b);
		fix_close(&f);
		return;
	}
	memset(&it, 0, sizeof(it));
	it.txid = "m1";
	it.status = "completed";
	it.lease_id = ba->lease_id;
	is_int(queen_batch_begin(a, 0), 0, "ack holds: a opens a batch");
	memset(&r, 0, sizeof(r));
	ok(queen_ack(a, &it, 1, &r) == 0 && r.success,
	    "ack holds: a acks m1 by its lease in it (%s)", r.error);

	rc = (int)push1(b, Q, "p", "m3", "x");
	is_int(rc, 3, "ack holds: b pushes m3 into p meanwhile (%s)",
	    rc < 0 ? queen_errmsg(b) : "ok");
	rc = pop1(b, Q, NULL, NULL, 1, &bb);
	ok(rc == 0 && bb && bb->n == 1 && strcmp(bb->msgs[0].txid, "o1") == 0,
	    "ack holds: b pops o1, passing over p (%d %s)", rc,
	    rc < 0 ? queen_errmsg(b) : "ok");
	queen_batch_free(bb);
	bb = NULL;
	ok(queen_maintain(b, &more) >= 0, "ack holds: b's tick runs (%s)",
	    queen_errmsg(b));
	memset(&r, 0, sizeof(r));
	is_int(queen_ack(b, &it, 1, &r), -EBUSY,
	    "ack holds: b's ack of the same lease waits for the row");
	ok(strstr(queen_errmsg(b), "lock timeout") != NULL,
	    "ack holds: and times out (%s)", queen_errmsg(b));
	is_int(queen_batch_commit(a), 0, "ack holds: a commits");
	queen_batch_free(ba);

	rc = pop1(b, Q, "p", NULL, 1, &bb);
	ok(rc == 0 && bb && bb->n == 1 && strcmp(bb->msgs[0].txid, "m2") == 0,
	    "ack holds: then b pops m2 (%d)", rc);
	queen_batch_free(bb);
	is_int(committed(b, Q, NULL, "p"), 1, "ack holds: p committed to m1");
	queen_close(b);
	fix_close(&f);
}

int
main(void)
{
	if (!fix_is_pg()) {
		printf("1..0 # SKIP QUEEN_TEST_PG is not set\n");
		return 0;
	}
	plan_lazy();
	test_cross_handles();
	test_batch_reads();
	test_processes();
	test_create_race();
	test_dedup_race(false);
	test_dedup_race(true);
	test_kv_race();
	test_kv_gate_held();
	test_ahead_ages();
	test_big_append(false);
	test_big_append(true);
	test_events();
	test_maint_locks();
	test_push_claim();
	test_ack_holds();
	test_migrate();
	test_hot_acks();
	test_dlq_lookup();
	test_push_probe();
	test_push_many_ahead();
	test_push_order();
	test_lost_connection();
	test_listener();
	test_listener_gone();
	test_sent_write_fails();
	test_sent_write_busy();
	test_lock_timeout();
	test_store_refusal_named();
	test_cursor_repair();
	test_lease_durable();
	test_ack_order();
	test_ack_lease_order(A_LEASE);
	test_ack_lease_order(A_TXN);
	test_ack_lease_order(A_NAMES);
	test_ack_lease_order(A_CROSS);
	test_txn_round_trips();
	test_ack_new_group(false);
	test_ack_new_group(true);
	test_batch_ack_round_trips();
	test_ack_gone_cursor(false);
	test_ack_gone_cursor(true);
	test_flush_alone();
	test_deferred_pop();
	test_read_along();
	test_find_by_name();
	test_lease_lookup();
	return done_testing();
}
