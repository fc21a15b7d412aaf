/*
 * t-store.c - the store as a whole: config (defaults, validation, format,
 * restart), persistence of every kind of state across a reopen, error
 * paths (read-only, file-size limit, corrupt and foreign files),
 * queen_maintain retention and hash purge, stats, KV and timers.
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <sqlite3.h>

#include "qtest.h"
#include "tap.h"

#define Q "store"

static const char *self;        /* argv[0], to run again */

static int64_t
my_clock(void *arg)
{
	return ((struct fix *)arg)->now;
}

/* queen_open of path with options of our own and the fixture's clock. */
static int
open_with(struct fix *f, const char *path, enum queen_sync sync,
    bool read_only, const char *fault, struct queen **out)
{
	struct queen_options o = { 0 };
	struct queen_tune tune = { 0 };

	o.path = path;
	o.sync = sync;
	o.read_only = read_only;
	tune.fault = fault;
	o.tune = &tune;
	o.clock = my_clock;
	o.clock_arg = f;
	return queen_open(&o, out);
}

/* On PostgreSQL: skip n tests of a SQLite-only case and close f. */
static bool
pg_skips(struct fix *f, int n, const char *why)
{
	if (!fix_is_pg())
		return false;
	skip(n, why);
	fix_close(f);
	return true;
}

static int
raw_open(struct fix *f, const char *path, bool read_only,
    struct queen **out)
{
	return open_with(f, path, QUEEN_SYNC_OFF, read_only, NULL, out);
}

static void
restart(struct fix *f)
{
	queen_close(f->q);
	f->q = NULL;
	fix_reopen(f);
}

static int64_t
msg_count(struct queen *q, const char *queue)
{
	struct queen_stats st;

	memset(&st, 0, sizeof(st));
	if (queen_stats_get(q, queue, NULL, &st) != 0)
		return -1;
	return st.messages;
}

static int
timer_count_cb(void *arg, const struct queen_timer_info *ti)
{
	(void)ti;
	(*(int *)arg)++;
	return 0;
}

static int
timers(struct queen *q)
{
	int n = 0;

	if (queen_timer_list(q, Q, timer_count_cb, &n) < 0)
		return -1;
	return n;
}

/* queen_config_check: the same verdicts as a set, with no store at all. */
static void
test_config_check(void)
{
	const char *k[2] = { "lease_time", "batch" };
	const char *v[2] = { "60", "2" };
	char why[128];

	is_int(queen_config_check(false, k, v, 2, why, sizeof(why)), 0,
	    "config check: good queue keys pass");
	is_str(why, "", "config check: no reason when good");
	v[1] = "0";
	is_int(queen_config_check(false, k, v, 2, why, sizeof(why)), -EINVAL,
	    "config check: batch 0 refused");
	ok(strstr(why, "batch") != NULL, "config check: the reason names it");
	k[1] = "bogus";
	v[1] = "1";
	is_int(queen_config_check(false, k, v, 2, NULL, 0), -EINVAL,
	    "config check: an unknown key refused, no reason buffer");
	is_int(queen_config_check(true, k, v, 1, why, sizeof(why)), -EINVAL,
	    "config check: lease_time is not a group key");
	ok(strstr(why, "unknown group config key") != NULL,
	    "config check: the group reason");
	k[0] = "batch";
	v[0] = "3";
	is_int(queen_config_check(true, k, v, 1, why, sizeof(why)), 0,
	    "config check: batch is a group key");
}

static void
test_config(void)
{
	static const char *const keys[] = { "lease_time", "retry_limit",
		"dlq", "batch", "wait", "delay", "window_buffer",
		"dedup_window", "retention", "completed_retention",
		"max_message_bytes", "expiry_charges_retry", "auto_ack",
		"timer_delay", "hash_retention" };
	struct fix f;
	struct queen *q = fix_open(&f, "store-config");
	const char *k[2], *v[2];
	char buf[4096], line[64], small[8];
	ssize_t len, len2;
	size_t i;

	is_int(cfgget(q, Q, NULL, "lease_time"), INT64_MIN,
	    "config: get on a missing queue fails");
	is_int(cfg(q, Q, NULL, "lease_time", "60"), -ENOENT,
	    "config: set on a missing queue is -ENOENT");
	queen_queue_create(q, Q, NULL);
	is_int(cfgget(q, Q, NULL, "lease_time"), 300, "config: lease_time 300");
	is_int(cfgget(q, Q, NULL, "retry_limit"), 3, "config: retry_limit 3");
	is_int(cfgget(q, Q, NULL, "dlq"), 1, "config: dlq on");
	is_int(cfgget(q, Q, NULL, "batch"), 1, "config: batch 1");
	is_int(cfgget(q, Q, NULL, "wait"), 30, "config: wait 30");
	is_int(cfgget(q, Q, NULL, "delay"), 0, "config: delay 0");
	is_int(cfgget(q, Q, NULL, "window_buffer"), 0,
	    "config: window_buffer 0");
	is_int(cfgget(q, Q, NULL, "dedup_window"), 3600,
	    "config: dedup_window 3600");
	is_int(cfgget(q, Q, NULL, "retention"), 0, "config: retention 0");
	is_int(cfgget(q, Q, NULL, "completed_retention"), 0,
	    "config: completed_retention 0");
	is_int(cfgget(q, Q, NULL, "expiry_charges_retry"), 0,
	    "config: expiry_charges_retry off");
	is_int(cfgget(q, Q, NULL, "auto_ack"), 0, "config: auto_ack off");
	{
		int64_t v64 = 0;

		is_int(queen_config_get(q, Q, NULL, "bogus", &v64), -EINVAL,
		    "config: get of an unknown key is -EINVAL");
	}

	len = queen_config_format(q, Q, NULL, buf, sizeof(buf));
	ok(len > 0 && (size_t)len < sizeof(buf), "config: format");
	is_int((int64_t)strlen(buf), len, "config: format length");
	for (i = 0; i < sizeof(keys) / sizeof(keys[0]); i++) {
		snprintf(line, sizeof(line), "%s = ", keys[i]);
		ok(strncmp(buf, line, strlen(line)) == 0 ||
		    strstr(buf, line) != NULL, "config: format lists %s",
		    keys[i]);
	}
	ok(strstr(buf, "lease_time = 300\n") != NULL,
	    "config: format 'lease_time = 300'");
	ok(strstr(buf, "dlq = on\n") != NULL, "config: format 'dlq = on'");
	len2 = queen_config_format(q, Q, NULL, small, sizeof(small));
	is_int(len2, len, "config: a short buffer gets the needed length");
	is_int((int64_t)strlen(small), (int64_t)sizeof(small) - 1,
	    "config: a short buffer is NUL-terminated");

	k[0] = "lease_time";
	v[0] = "60";
	k[1] = "retry_limit";
	v[1] = "5";
	is_int(queen_config_set(q, Q, NULL, k, v, 2), 0, "config: set two");
	is_int(cfgget(q, Q, NULL, "lease_time"), 60, "config: lease_time 60");
	is_int(cfgget(q, Q, NULL, "retry_limit"), 5, "config: retry_limit 5");
	is_int(cfgget(q, Q, NULL, "batch"), 1, "config: others unchanged");

	v[0] = "61";
	k[1] = "bogus";
	v[1] = "1";
	is_int(queen_config_set(q, Q, NULL, k, v, 2), -EINVAL,
	    "config: an unknown key is -EINVAL");
	ok(strstr(queen_errmsg(q), "bogus") != NULL,
	    "config: errmsg names the key (%s)", queen_errmsg(q));
	is_int(cfgget(q, Q, NULL, "lease_time"), 60,
	    "config: valid key in the failed call not applied");
	k[1] = "retry_limit";
	v[1] = "abc";
	is_int(queen_config_set(q, Q, NULL, k, v, 2), -EINVAL,
	    "config: a bad value is -EINVAL");
	is_int(cfgget(q, Q, NULL, "lease_time"), 60,
	    "config: bad value: the other key not applied");
	is_int(cfg(q, Q, NULL, "dlq", "maybe"), -EINVAL,
	    "config: a bad boolean is -EINVAL");
	is_int(cfg(q, Q, NULL, "lease_time", "-5"), -EINVAL,
	    "config: a negative lease_time is -EINVAL");
	is_int(cfg(q, Q, NULL, "batch", ""), -EINVAL,
	    "config: an empty value is -EINVAL");
	is_int(cfg(q, Q, NULL, "dlq", "off"), 0, "config: dlq off");
	is_int(cfgget(q, Q, NULL, "dlq"), 0, "config: dlq reads 0");
	is_int(cfg(q, Q, NULL, "expiry_charges_retry", "on"), 0,
	    "config: expiry_charges_retry on");
	is_int(cfg(q, Q, NULL, "dedup_window", "0"), 0, "config: dedup 0");
	is_int(cfg(q, Q, NULL, "hash_retention", "120"), 0,
	    "config: hash_retention");
	is_int(cfg(q, Q, NULL, "timer_delay", "9"), 0, "config: timer_delay");
	is_int(cfg(q, Q, "g", "batch", "4"), 0, "config: group batch");

	restart(&f);
	q = f.q;
	is_int(cfgget(q, Q, NULL, "lease_time"), 60,
	    "config: lease_time survives a restart");
	is_int(cfgget(q, Q, NULL, "retry_limit"), 5,
	    "config: retry_limit survives");
	is_int(cfgget(q, Q, NULL, "dlq"), 0, "config: dlq off survives");
	is_int(cfgget(q, Q, NULL, "expiry_charges_retry"), 1,
	    "config: expiry_charges_retry survives");
	is_int(cfgget(q, Q, NULL, "dedup_window"), 0,
	    "config: dedup_window 0 survives");
	is_int(cfgget(q, Q, NULL, "hash_retention"), 120,
	    "config: hash_retention survives");
	is_int(cfgget(q, Q, NULL, "timer_delay"), 9,
	    "config: timer_delay survives");
	is_int(cfgget(q, Q, "g", "batch"), 4, "config: group batch survives");
	len = queen_config_format(q, Q, NULL, buf, sizeof(buf));
	ok(len > 0 && strstr(buf, "dlq = off\n") != NULL,
	    "config: format 'dlq = off' after restart");
	fix_close(&f);
}

static void
test_persistence(void)
{
	struct fix f;
	struct queen *q = fix_open(&f, "store-persist");
	struct queen_batch *b = NULL;
	struct queen_ack_result r;
	struct queen_lease_info li;
	struct queen_kv_value *kv = NULL;
	struct queen_push_result pr;
	struct queen_push_item it = { 0 };
	struct dlq_find d;
	char lease[QUEEN_ID_LEN + 1] = "";
	int64_t expires = 0;

	pushn(q, Q, NULL, "m", 5);
	push1(q, Q, "p2", "x1", "x");
	cfg(q, Q, NULL, "lease_time", "120");
	if (pop1(q, Q, NULL, NULL, 3, &b) == 0) {
		snprintf(lease, sizeof(lease), "%s", b->lease_id);
		expires = b->lease_expires_at;
		ack1(q, Q, NULL, NULL, "m1", "completed", b->lease_id, &r);
		queen_batch_free(b);
	}
	queen_group_ensure(q, Q, "g");
	ack1(q, Q, NULL, "g", "m2", "dlq", NULL, &r);
	ok(r.dlq, "persist: lease-less dlq for group g");
	is_int(queen_kv_put(q, "ns", "k", "val", 3, 0, false), 0,
	    "persist: kv put");
	is_int(queen_timer_schedule(q, Q, "t", NULL, f.now + 60 * SEC, "tick",
	    4), 0, "persist: timer scheduled");

	restart(&f);
	q = f.q;
	is_int(queen_queue_get(q, Q, &(struct queen_queue_info){ 0 }), 0,
	    "persist: queue");
	is_int(tail_of(q, Q, NULL), 5, "persist: default tail 5");
	is_int(tail_of(q, Q, "p2"), 1, "persist: p2 tail 1");
	is_int(committed(q, Q, NULL, NULL), 1, "persist: queue-mode cursor");
	is_int(committed(q, Q, "g", NULL), 2, "persist: group cursor");
	is_int(queen_lease_get(q, lease, &li), 0, "persist: lease is live");
	is_int(li.last, 3, "persist: lease span end");
	is_int(li.committed, 1, "persist: lease's committed");
	is_int(li.expires_at, expires, "persist: lease expiry");
	is_int(pop_first(q, Q, "default", NULL, 1, NULL, NULL), -EAGAIN,
	    "persist: the lease still blocks the partition");
	is_int(dlq_count(q, Q, "g", &d), 1, "persist: DLQ entry");
	is_str(d.txid, "m2", "persist: DLQ txid");
	is_int(queen_kv_get(q, "ns", "k", &kv), 0, "persist: kv");
	if (kv) {
		ok(kv->len == 3 && memcmp(kv->data, "val", 3) == 0,
		    "persist: kv value");
		free(kv);
	}
	is_int(timers(q), 1, "persist: timer pending");
	is_int(cfgget(q, Q, NULL, "lease_time"), 120, "persist: config");
	it.queue = Q;
	it.txid = "m3";
	it.payload = "again";
	it.len = 5;
	queen_push(q, &it, 1, false, &pr);
	is_int(pr.status, QUEEN_PUSH_DUPLICATE, "persist: dedup state");
	f.now = expires + 1;
	is_int(pop_first(q, Q, "default", NULL, 1, NULL, NULL), 2,
	    "persist: after expiry the span redelivers from 2");
	fix_close(&f);
}

static void
test_read_only(void)
{
	struct fix f;
	struct queen *q = fix_open(&f, "store-ro");
	struct queen *ro = NULL;
	struct queen_ack_result r;
	char dbdir[300];
	int rc;

	pushn(q, Q, NULL, "m", 2);
	queen_close(q);
	f.q = NULL;
	rc = raw_open(&f, f.path, true, &ro);
	is_int(rc, 0, "ro: open read_only");
	if (rc == 0) {
		is_int(tail_of(ro, Q, NULL), 2, "ro: reads work");
		is_int(push1(ro, Q, NULL, "m3", "x"), -EROFS,
		    "ro: push is -EROFS");
		is_int(cfg(ro, Q, NULL, "batch", "2"), -EROFS,
		    "ro: config set is -EROFS");
		is_int(queen_kv_put(ro, "ns", "k", "v", 1, 0, false), -EROFS,
		    "ro: kv put is -EROFS");
		rc = ack1(ro, Q, NULL, NULL, "m1", "completed", NULL, &r);
		ok(rc == -EROFS || (!r.success && r.err != 0),
		    "ro: ack does not land (rc %d, err %d)", rc, r.err);
		queen_close(ro);
	}
	fix_reopen(&f);
	is_int(tail_of(f.q, Q, NULL), 2, "ro: store unchanged");
	is_int(committed(f.q, Q, NULL, NULL) <= 0 ? 0 : 1, 0,
	    "ro: no cursor moved");
	is_int(cfgget(f.q, Q, NULL, "batch"), 1, "ro: config unchanged");

	queen_close(f.q);
	f.q = NULL;
	if (fix_is_pg()) {
		skip(2, "SQLite file test");
	} else if (geteuid() == 0) {
		skip(2, "running as root: file modes do not bind");
	} else {
		snprintf(dbdir, sizeof(dbdir), "%s", f.dir);
		chmod(f.path, 0444);
		chmod(dbdir, 0555);
		rc = raw_open(&f, f.path, false, &ro);
		if (rc == 0) {
			ok(1, "ro: chmod 0444: opened");
			is_int(push1(ro, Q, NULL, "m3", "x"), -EROFS,
			    "ro: chmod 0444: push is -EROFS");
			queen_close(ro);
		} else {
			ok(rc == -EROFS || rc == -EACCES || rc == -EIO,
			    "ro: chmod 0444: open fails cleanly (%d)", rc);
			ok(ro == NULL, "ro: chmod 0444: *out NULL");
		}
		chmod(dbdir, 0755);
		chmod(f.path, 0644);
	}
	fix_reopen(&f);
	is_int(tail_of(f.q, Q, NULL), 2, "ro: still unchanged");
	fix_close(&f);
}

static void
test_size_limit(void)
{
	struct fix f;
	struct queen *q;
	struct rlimit old, lim;
	struct stat st;
	char wal[320];
	static char big[1 << 20];
	int64_t rc;
	off_t sz = 0;

	if (fix_is_pg()) {
		skip(8, "SQLite file test");
		return;
	}
	q = fix_open(&f, "store-full");
	pushn(q, Q, NULL, "m", 3);
	is_int(cfg(q, Q, NULL, "max_message_bytes", "16777216"), 0,
	    "full: max_message_bytes 16 MiB (so the limit is the disk's)");
	memset(big, 'z', sizeof(big) - 1);
	if (stat(f.path, &st) == 0)
		sz = st.st_size;
	snprintf(wal, sizeof(wal), "%s-wal", f.path);
	if (stat(wal, &st) == 0 && st.st_size > sz)
		sz = st.st_size;
	getrlimit(RLIMIT_FSIZE, &old);
	signal(SIGXFSZ, SIG_IGN);
	lim = old;
	lim.rlim_cur = (rlim_t)sz + 16384;
	setrlimit(RLIMIT_FSIZE, &lim);
	rc = push1(q, Q, NULL, "huge", big);
	setrlimit(RLIMIT_FSIZE, &old);
	ok(rc == -ENOSPC || rc == -EFBIG || rc == -EIO,
	    "full: a push over the file-size limit fails (%lld)",
	    (long long)rc);
	if (rc == -EIO) {
		char why[200] = "";

		ok(queen_failed(q, why, sizeof(why)),
		    "full: after an I/O error the handle is failed (%s)", why);
		is_int(push1(q, Q, NULL, "m4", "x"), -EIO,
		    "full: ... and refuses later writes with -EIO");
	}
	restart(&f);
	ok(!queen_failed(f.q, NULL, 0), "full: a reopened handle is healthy");
	is_int(msg_count(f.q, Q), 3, "full: after reopen, 3 messages");
	is_int(tail_of(f.q, Q, NULL), 3, "full: tail still 3");
	is_int(push1(f.q, Q, NULL, "m4", "x"), 4,
	    "full: the store works again without the limit");
	fix_close(&f);
}

static int
write_file(const char *path, const void *data, size_t len, off_t at,
    bool trunc)
{
	int fd = open(path, O_WRONLY | O_CREAT | (trunc ? O_TRUNC : 0), 0644);
	ssize_t w;

	if (fd < 0)
		return -1;
	w = pwrite(fd, data, len, at);
	close(fd);
	return w == (ssize_t)len ? 0 : -1;
}

static void
test_corrupt(void)
{
	struct fix f;
	struct queen *q;
	struct queen *c = NULL;
	struct stat st;
	char garbage[200], text[] = "this is not a database, just text\n";
	char path[320];
	int rc;

	if (fix_is_pg()) {
		skip(9, "SQLite file test");
		return;
	}
	q = fix_open(&f, "store-corrupt");
	pushn(q, Q, NULL, "m", 200);
	queen_close(q);
	f.q = NULL;

	memset(garbage, 0xAB, sizeof(garbage));
	ok(write_file(f.path, garbage, sizeof(garbage), 0, false) == 0,
	    "corrupt: garbage written over the header");
	c = (struct queen *)1;
	rc = raw_open(&f, f.path, false, &c);
	is_int(rc, -EIO, "corrupt: garbage header: open is -EIO");
	ok(c == NULL, "corrupt: *out NULL");
	if (rc == 0)
		queen_close(c);

	/* A fresh valid store, then truncated to an odd size. */
	snprintf(path, sizeof(path), "%s/t.db", f.dir);
	rc = raw_open(&f, path, false, &c);
	if (rc == 0) {
		pushn(c, Q, NULL, "m", 200);
		queen_close(c);
	}
	stat(path, &st);
	diag("truncating %lld bytes to %lld", (long long)st.st_size,
	    (long long)(st.st_size / 2 + 7));
	ok(truncate(path, st.st_size / 2 + 7) == 0, "corrupt: truncated");
	c = NULL;
	rc = raw_open(&f, path, false, &c);
	is_int(rc, -EIO, "corrupt: truncated file: open is -EIO");
	if (rc == 0)
		queen_close(c);

	snprintf(path, sizeof(path), "%s/text.db", f.dir);
	write_file(path, text, sizeof(text) - 1, 0, true);
	rc = raw_open(&f, path, false, &c);
	is_int(rc, -EIO, "corrupt: a text file: open is -EIO");
	if (rc == 0)
		queen_close(c);

	snprintf(path, sizeof(path), "%s/big-text.db", f.dir);
	{
		char page[8192];
		size_t i;

		for (i = 0; i < sizeof(page); i++)
			page[i] = "lorem ipsum dolor sit amet\n"[i % 27];
		write_file(path, page, sizeof(page), 0, true);
	}
	rc = raw_open(&f, path, false, &c);
	is_int(rc, -EIO, "corrupt: a large text file: open is -EIO");
	if (rc == 0)
		queen_close(c);

	rc = raw_open(&f, NULL, false, &c);
	is_int(rc, -EINVAL, "open: a NULL path is -EINVAL");
	snprintf(path, sizeof(path), "%s/no/such/dir/q.db", f.dir);
	rc = raw_open(&f, path, false, &c);
	ok(rc < 0, "open: a path in a missing dir fails (%d)", rc);
	fix_close(&f);
}

static void
test_retention(void)
{
	struct fix f;
	struct queen *q = fix_open(&f, "store-retention");
	struct queen_partition_info pi;
	struct queen_batch *b = NULL;
	int64_t t0 = f.now;

	push1(q, Q, NULL, "m1", "x");
	f.now = t0 + 30 * SEC;
	push1(q, Q, NULL, "m2", "x");
	is_int(cfg(q, Q, NULL, "retention", "60"), 0, "retention: 60 s");
	f.now = t0 + 59 * SEC;
	ok(maintain_all(q) >= 0, "retention: maintain at 59 s");
	is_int(msg_count(q, Q), 2, "retention: nothing old enough yet");
	f.now = t0 + 61 * SEC;
	ok(maintain_all(q) > 0, "retention: maintain changed rows");
	is_int(msg_count(q, Q), 1, "retention: m1 deleted, unconsumed or not");
	queen_partition_get(q, Q, "default", &pi);
	is_int(pi.head, 2, "retention: head 2");
	is_int(pi.tail, 2, "retention: tail 2");
	if (queen_msg_read(q, Q, NULL, 1, 10, false, &b) == 0 && b) {
		is_int(b->msgs[0].offset, 2, "retention: read skips purged");
		queen_batch_free(b);
	} else {
		ok(0, "retention: msg_read");
	}
	is_int(pop_first(q, Q, NULL, NULL, 5, NULL, NULL), 2,
	    "retention: pop skips to the head");
	f.now = t0 + 91 * SEC;
	maintain_all(q);
	queen_partition_get(q, Q, "default", &pi);
	is_int(pi.head, 3, "retention: empty partition has head = tail+1");
	is_int(push1(q, Q, NULL, "m3", "x"), 3,
	    "retention: offsets never reuse");
	fix_close(&f);
}

static void
test_completed_retention(void)
{
	struct fix f;
	struct queen *q = fix_open(&f, "store-cret");
	struct queen_ack_result r;

	pushn(q, Q, NULL, "m", 3);
	is_int(cfg(q, Q, NULL, "completed_retention", "10"), 0,
	    "cret: completed_retention 10");
	queen_group_ensure(q, Q, "g1");
	queen_group_ensure(q, Q, "g2");
	ack1(q, Q, NULL, NULL, "m2", "completed", NULL, &r);
	ack1(q, Q, NULL, "g1", "m2", "completed", NULL, &r);
	ack1(q, Q, NULL, "g2", "m1", "completed", NULL, &r);
	f.now += 11 * SEC;
	ok(maintain_all(q) > 0, "cret: maintain changed rows");
	is_int(msg_count(q, Q), 2,
	    "cret: only m1 (passed by every group) deleted");
	is_int(pop_first(q, Q, NULL, "g2", 1, NULL, NULL), 2,
	    "cret: g2 still gets m2");
	fix_close(&f);
}

/* Nothing that some group has not passed is "completed". */
static void
test_completed_retention_unconsumed(void)
{
	struct fix f;
	struct queen *q = fix_open(&f, "store-cret-none");
	struct queen_ack_result r;

	pushn(q, Q, NULL, "m", 3);
	is_int(cfg(q, Q, NULL, "completed_retention", "10"), 0,
	    "cret none: completed_retention 10");
	f.now += 11 * SEC;
	maintain_all(q);
	is_int(msg_count(q, Q), 3,
	    "cret none: messages no group consumed are kept");
	is_int(pop_first(q, Q, NULL, NULL, 1, NULL, NULL), 1,
	    "cret none: the queue-mode consumer still gets m1");
	fix_close(&f);

	q = fix_open(&f, "store-cret-idle");
	pushn(q, Q, NULL, "m", 3);
	cfg(q, Q, NULL, "completed_retention", "10");
	is_int(queen_group_ensure(q, Q, "idle"), 0,
	    "cret idle: a group that never popped");
	ack1(q, Q, NULL, NULL, "m3", "completed", NULL, &r);
	f.now += 11 * SEC;
	maintain_all(q);
	is_int(msg_count(q, Q), 3,
	    "cret idle: kept while an existing group has not passed them");
	is_int(pop_first(q, Q, NULL, "idle", 1, NULL, NULL), 1,
	    "cret idle: the idle group still gets m1");
	fix_close(&f);
}

static void
test_hash_purge(void)
{
	struct fix f;
	struct queen *q = fix_open(&f, "store-hash");
	struct queen_partition_info pi;
	struct queen_ack_result r;
	int64_t off = 0;

	push1(q, Q, NULL, "m1", "x");
	cfg(q, Q, NULL, "hash_retention", "60");
	f.now += 61 * SEC;
	push1(q, Q, NULL, "m2", "x");
	queen_partition_get(q, Q, "default", &pi);
	is_int(pi.txns_start, 1, "hash: txns_start 1 before maintain");
	ok(maintain_all(q) > 0, "hash: maintain purged rows");
	queen_partition_get(q, Q, "default", &pi);
	is_int(pi.txns_start, 2, "hash: txns_start raised to 2");
	is_int(msg_count(q, Q), 2, "hash: messages are not deleted");
	ack1(q, Q, NULL, NULL, "m1", "completed", NULL, &r);
	is_int(r.err, -ENOENT, "hash: purged txid is unresolvable");
	is_int(queen_msg_find(q, Q, NULL, "m2", &off), 0, "hash: m2 found");
	off = 0;
	is_int(queen_msg_find(q, Q, NULL, "m1", &off), 0,
	    "hash: a retained message is found after its hash row went");
	is_int(off, 1, "hash: ... at its offset");
	is_int(queen_msg_find(q, Q, NULL, "nope", &off), -ENOENT,
	    "hash: an id never pushed is still -ENOENT");
	restart(&f);
	queen_partition_get(f.q, Q, "default", &pi);
	is_int(pi.txns_start, 2, "hash: txns_start survives a restart");
	fix_close(&f);
}

static void
test_stats(void)
{
	struct fix f;
	struct queen *q = fix_open(&f, "store-stats");
	struct queen_batch *b = NULL;
	struct queen_ack_result r;
	struct queen_stats st;

	pushn(q, Q, "p1", "a", 5);
	pushn(q, Q, "p2", "b", 2);
	push1(q, Q, "p1", "a1", "dup");
	pop1(q, Q, "p1", NULL, 2, &b);
	memset(&st, 0, sizeof(st));
	is_int(queen_stats_get(q, Q, NULL, &st), 0, "stats: get");
	is_int(st.partitions, 2, "stats: partitions 2");
	is_int(st.messages, 7, "stats: messages 7");
	is_int(st.pushed, 7, "stats: pushed 7");
	is_int(st.depth, 7, "stats: depth 7 (nothing acked)");
	is_int(st.leases, 1, "stats: one live lease");
	is_int(st.leased_msgs, 2, "stats: two leased messages");
	is_int(st.dlq, 0, "stats: dlq 0");
	is_int(st.duplicates, 1, "stats: duplicates 1");
	is_int(st.oldest_waiting, f.now, "stats: oldest waiting");
	if (b) {
		ack1(q, Q, "p1", NULL, "a2", "completed", b->lease_id, &r);
		queen_batch_free(b);
	}
	ack1(q, Q, "p2", NULL, "b1", "dlq", NULL, &r);
	queen_stats_get(q, Q, NULL, &st);
	is_int(st.depth, 4, "stats: depth 4 after acks");
	is_int(st.leases, 0, "stats: no leases");
	is_int(st.dlq, 1, "stats: dlq 1");
	is_int(st.messages, 7, "stats: messages retained 7");
	queen_stats_get(q, Q, "other", &st);
	is_int(st.depth, 7, "stats: another group's depth is 7");
	is_int(st.dlq, 0, "stats: another group's dlq is 0");
	is_int(queen_stats_get(q, "nosuch", NULL, &st), -ENOENT,
	    "stats: missing queue");
	fix_close(&f);
}

static int
kv_count_cb(void *arg, const char *key, const struct queen_kv_value *v)
{
	(void)key;
	(void)v;
	(*(int *)arg)++;
	return 0;
}

static void
test_kv(void)
{
	struct fix f;
	struct queen *q = fix_open(&f, "store-kv");
	struct queen_kv_value *v = NULL;
	int64_t t0 = f.now;
	int n = 0;

	is_int(queen_kv_get(q, "ns", "k", &v), -ENOENT, "kv: missing");
	is_int(queen_kv_put(q, "ns", "k", "v1", 2, 0, false), 0, "kv: put");
	if (queen_kv_get(q, "ns", "k", &v) == 0 && v) {
		ok(v->len == 2 && memcmp(v->data, "v1", 2) == 0, "kv: get v1");
		is_int(v->version, 1, "kv: version 1");
		is_int(v->expires_at, 0, "kv: no expiry");
		is_int(v->updated_at, t0, "kv: updated_at");
		free(v);
		v = NULL;
	} else {
		ok(0, "kv: get");
	}
	f.now += SEC;
	queen_kv_put(q, "ns", "k", "v22", 3, 0, false);
	if (queen_kv_get(q, "ns", "k", &v) == 0 && v) {
		ok(v->len == 3 && memcmp(v->data, "v22", 3) == 0,
		    "kv: overwrite");
		is_int(v->version, 2, "kv: version 2");
		free(v);
		v = NULL;
	}
	is_int(queen_kv_put(q, "ns", "k", "zz", 2, 0, true), -EEXIST,
	    "kv: if_absent on a live key is -EEXIST");
	if (queen_kv_get(q, "ns", "k", &v) == 0 && v) {
		ok(v->len == 3 && memcmp(v->data, "v22", 3) == 0,
		    "kv: if_absent left the value");
		free(v);
		v = NULL;
	}
	is_int(queen_kv_put(q, "ns", "k2", "a", 1, 0, true), 0,
	    "kv: if_absent on a new key");
	queen_kv_list(q, "ns", kv_count_cb, &n);
	is_int(n, 2, "kv: list 2 keys");
	is_int(queen_kv_delete(q, "ns", "k"), 0, "kv: delete");
	is_int(queen_kv_get(q, "ns", "k", &v), -ENOENT, "kv: deleted");
	is_int(queen_kv_delete(q, "ns", "k"), -ENOENT, "kv: delete twice");

	t0 = f.now;
	is_int(queen_kv_put(q, "ns", "t", "x", 1, 1000, false), 0,
	    "kv: put with ttl 1 s");
	if (queen_kv_get(q, "ns", "t", &v) == 0 && v) {
		is_int(v->expires_at, t0 + 1000, "kv: expires_at");
		free(v);
		v = NULL;
	}
	f.now = t0 + 999;
	is_int(queen_kv_get(q, "ns", "t", &v), 0, "kv: live before ttl");
	free(v);
	v = NULL;
	f.now = t0 + 1001;
	is_int(queen_kv_get(q, "ns", "t", &v), -ENOENT, "kv: expired by clock");
	n = 0;
	queen_kv_list(q, "ns", kv_count_cb, &n);
	is_int(n, 1, "kv: list hides the expired key");
	is_int(queen_kv_put(q, "ns", "t", "y", 1, 0, true), 0,
	    "kv: if_absent succeeds over an expired key");
	is_int(queen_kv_set_ttl(q, "ns", "t", 5000), 0, "kv: set_ttl");
	if (queen_kv_get(q, "ns", "t", &v) == 0 && v) {
		is_int(v->expires_at, f.now + 5000, "kv: set_ttl expiry");
		free(v);
		v = NULL;
	}
	is_int(queen_kv_set_ttl(q, "ns", "t", 0), 0, "kv: set_ttl 0");
	f.now += 10 * SEC;
	is_int(queen_kv_get(q, "ns", "t", &v), 0, "kv: ttl 0 never expires");
	free(v);
	v = NULL;
	is_int(queen_kv_put(q, "bad/ns", "k", "v", 1, 0, false), -EINVAL,
	    "kv: a bad namespace is -EINVAL");
	is_int(queen_kv_put(q, "ns", ".k", "v", 1, 0, false), -EINVAL,
	    "kv: a bad key is -EINVAL");
	is_int(queen_kv_set_ttl(q, "ns", "nope", 5), -ENOENT,
	    "kv: set_ttl on a missing key");
	queen_kv_put(q, "ns", "e", "x", 1, 10, false);
	f.now += 20;
	ok(maintain_all(q) >= 1, "kv: maintain removes expired keys");
	restart(&f);
	q = f.q;
	is_int(queen_kv_get(q, "ns", "k2", &v), 0, "kv: survives restart");
	free(v);
	v = NULL;
	is_int(queen_kv_get(q, "ns", "e", &v), -ENOENT,
	    "kv: expired key stays gone");
	fix_close(&f);
}

static void
test_timers(void)
{
	struct fix f;
	struct queen *q = fix_open(&f, "store-timers");
	struct queen_timer_info *ti = NULL;
	struct queen_batch *b = NULL;
	int64_t t0 = f.now;

	queen_queue_create(q, Q, NULL);
	is_int(queen_timer_schedule(q, Q, "t1", NULL, t0 + 10 * SEC, "tick",
	    4), 0, "timer: schedule");
	is_int(timers(q), 1, "timer: listed");
	if (queen_timer_get(q, Q, "t1", true, &ti) == 0 && ti) {
		is_int(ti->due_at, t0 + 10 * SEC, "timer: due_at");
		is_str(ti->partition, "default", "timer: partition default");
		ok(ti->len == 4 && memcmp(ti->payload, "tick", 4) == 0,
		    "timer: payload");
		free(ti);
		ti = NULL;
	} else {
		ok(0, "timer: get");
	}
	f.now = t0 + 5 * SEC;
	maintain_all(q);
	ok(tail_of(q, Q, NULL) <= 0, "timer: not fired before due");
	f.now = t0 + 10 * SEC;
	ok(maintain_all(q) > 0, "timer: maintain fired it");
	is_int(tail_of(q, Q, NULL), 1, "timer: payload pushed once");
	maintain_all(q);
	is_int(tail_of(q, Q, NULL), 1, "timer: not again");
	is_int(timers(q), 0, "timer: gone after firing");
	is_int(queen_timer_get(q, Q, "t1", false, &ti), -ENOENT,
	    "timer: get after firing is -ENOENT");
	if (queen_msg_read(q, Q, NULL, 1, 5, true, &b) == 0 && b) {
		ok(b->msgs[0].len == 4 &&
		    memcmp(b->msgs[0].payload, "tick", 4) == 0,
		    "timer: the message carries the payload");
		queen_batch_free(b);
		b = NULL;
	}

	/* Across restarts. */
	queen_timer_schedule(q, Q, "t2", "px", f.now + 100 * SEC, "two", 3);
	restart(&f);
	q = f.q;
	is_int(timers(q), 1, "timer: pending survives a restart");
	f.now += 100 * SEC;
	maintain_all(q);
	is_int(tail_of(q, Q, "px"), 1, "timer: fired into partition px");
	restart(&f);
	q = f.q;
	maintain_all(q);
	is_int(tail_of(q, Q, "px"), 1, "timer: exactly once across restart");
	is_int(timers(q), 0, "timer: none pending");

	/* Cancel and upsert. */
	queen_timer_schedule(q, Q, "t3", NULL, f.now + SEC, "c", 1);
	is_int(queen_timer_cancel(q, Q, "t3"), 0, "timer: cancel");
	is_int(queen_timer_cancel(q, Q, "t3"), -ENOENT,
	    "timer: cancel twice is -ENOENT");
	queen_timer_schedule(q, Q, "t4", "up", f.now + SEC, "old", 3);
	queen_timer_schedule(q, Q, "t4", "up", f.now + 2 * SEC, "new", 3);
	is_int(timers(q), 1, "timer: schedule upserts");
	f.now += 3 * SEC;
	maintain_all(q);
	is_int(tail_of(q, Q, NULL), 1, "timer: the cancelled one never fired");
	is_int(tail_of(q, Q, "up"), 1, "timer: upserted fires once");
	if (queen_msg_read(q, Q, "up", 1, 5, true, &b) == 0 && b) {
		ok(b->msgs[0].len == 3 &&
		    memcmp(b->msgs[0].payload, "new", 3) == 0,
		    "timer: with the latest payload");
		queen_batch_free(b);
		b = NULL;
	}

	/* scheduled under the queue's limit, it fires though the limit
	 * was lowered since: the schedule was the check its writer saw */
	is_int(queen_timer_schedule(q, Q, "t5", "lim", f.now + SEC, "longer",
		   6),
	    0, "timer: a 6-byte payload scheduled");
	is_int(cfg(q, Q, NULL, "max_message_bytes", "3"), 0,
	    "timer: the limit lowered to 3 bytes");
	f.now += 2 * SEC;
	maintain_all(q);
	is_int(tail_of(q, Q, "lim"), 1, "timer: it fires all the same");
	is_int(cfg(q, Q, NULL, "max_message_bytes", "16777216"), 0,
	    "timer: the limit back");

	is_int(queen_timer_schedule(q, Q, "bad/key", NULL, f.now + SEC, "x",
	    1), -EINVAL, "timer: a bad key is -EINVAL");
	is_int(queen_timer_schedule(q, Q, "k", "bad part", f.now + SEC, "x",
	    1), -EINVAL, "timer: a bad partition is -EINVAL");
	{
		int rc = queen_timer_schedule(q, "nosuch", "k", NULL,
		    f.now + SEC, "x", 1), n = 0;

		if (rc == 0)
			queen_timer_list(q, "nosuch", timer_count_cb, &n);
		ok(rc == -ENOENT || (rc == 0 && n == 1),
		    "timer: a missing queue is -ENOENT or is created with "
		    "the timer (rc %d, timers %d)", rc, n);
	}

	/* due_at 0 uses timer_delay. */
	cfg(q, Q, NULL, "timer_delay", "30");
	queen_timer_schedule(q, Q, "t5", NULL, 0, "d", 1);
	if (queen_timer_get(q, Q, "t5", false, &ti) == 0 && ti) {
		is_int(ti->due_at, f.now + 30 * SEC,
		    "timer: due_at 0 is now + timer_delay");
		free(ti);
		ti = NULL;
	} else {
		ok(0, "timer: get t5");
	}
	fix_close(&f);
}

/* A timer that cannot be pushed must not wedge all housekeeping. */
static void
test_poison_timer(void)
{
	struct fix f;
	struct queen *q = fix_open(&f, "store-poison");
	int64_t t0 = f.now;
	ssize_t rc;

	queen_queue_create(q, Q, NULL);
	queen_timer_schedule(q, Q, "big", NULL, t0 + SEC, "0123456789abcdef",
	    16);
	cfg(q, Q, NULL, "max_message_bytes", "10");
	is_int(queen_timer_schedule(q, Q, "big2", NULL, t0 + SEC,
	    "0123456789abcdef", 16), -EFBIG,
	    "poison: scheduling an oversize payload is -EFBIG");
	push1(q, "old", NULL, "m1", "x");
	cfg(q, "old", NULL, "retention", "60");
	f.now = t0 + 61 * SEC;
	rc = maintain_all(q);
	ok(rc >= 0, "poison: maintain does not fail on an unpushable timer "
	    "(%zd)", rc);
	rc = maintain_all(q);
	ok(rc >= 0, "poison: ... nor on the next call (%zd)", rc);
	is_int(msg_count(q, "old"), 0,
	    "poison: retention still runs in another queue");
	is_int(timers(q), 0, "poison: the unpushable timer was dropped");
	fix_close(&f);
}

static uint64_t
row_hits(struct queen *q, uint64_t *misses)
{
	struct queen_hash_stats hs;

	queen_hash_stats(q, &hs);
	*misses = hs.row_misses;
	return hs.row_hits;
}

/*
 * The SQLite store's copies of queue, group and partition rows: pushes
 * read them from memory, and no write, rollback or delete leaves a copy
 * that SQLite would not answer.
 */
static void
test_row_cache(void)
{
	struct fix f;
	struct queen *q = fix_open(&f, "store-rows");
	struct queen_partition_info pi;
	struct queen_group_info gi;
	struct queen_push_item it[2];
	struct queen_push_result res[2];
	char big[64];
	uint64_t h0, m0, h1, m1;

	if (pg_skips(&f, 22, "the row copies are the SQLite store's"))
		return;
	/* the first push makes the rows, the second reads them once */
	push1(q, Q, NULL, "v1", "x");
	push1(q, Q, NULL, "v2", "x");
	h0 = row_hits(q, &m0);
	pushn(q, Q, NULL, "w", 100);
	h1 = row_hits(q, &m1);
	ok(h1 - h0 >= 100, "rows: 100 pushes read %llu rows from the copies",
	    (unsigned long long)(h1 - h0));
	is_int((int64_t)(m1 - m0), 0, "rows: and none from SQLite");

	/* a partition made and read in a batch, then rolled back */
	is_int(queen_batch_begin(q, 0), 0, "rows: batch");
	is_int(push1(q, Q, "np", "n1", "x"), 1, "rows: a new partition");
	is_int(push1(q, Q, "np", "n2", "x"), 2, "rows: read back in it");
	queen_batch_rollback(q);
	is_int(queen_partition_get(q, Q, "np", &pi), -ENOENT,
	    "rows: a rolled-back partition is gone");
	is_int(push1(q, Q, "np", "n3", "x"), 1,
	    "rows: made again, it starts at offset 1");

	/* a call undone inside a batch (its savepoint) takes back the
	 * counters it wrote: here partition a's, written as the push moved
	 * on to b, where its item is too large */
	is_int(push1(q, Q, "a", "a1", "x"), 1, "rows: partition a");
	cfg(q, Q, NULL, "max_message_bytes", "8");
	memset(big, 'b', sizeof(big) - 1);
	big[sizeof(big) - 1] = 0;
	memset(it, 0, sizeof(it));
	it[0] = (struct queen_push_item){ .queue = Q, .partition = "a",
		.txid = "a2", .payload = "x", .len = 1 };
	it[1] = (struct queen_push_item){ .queue = Q, .partition = "b",
		.txid = "b1", .payload = big, .len = strlen(big) };
	is_int(queen_batch_begin(q, 0), 0, "rows: batch again");
	is_int(queen_push(q, it, 2, false, res), -EFBIG,
	    "rows: a push to a and b, b's item too large");
	is_int(push1(q, Q, "a", "a3", "x"), 2,
	    "rows: the next push to a takes the offset the undone one had");
	is_int(queen_batch_commit(q), 0, "rows: commit");
	is_int(tail_of(q, Q, "a"), 2, "rows: a's tail after the batch");

	/* a queue deleted and made again under its name (and perhaps id) */
	is_int(queen_queue_create(q, "tmp", NULL), 0, "rows: a queue");
	is_int(cfg(q, "tmp", NULL, "lease_time", "7"), 0, "rows: its config");
	is_int(cfgget(q, "tmp", NULL, "lease_time"), 7,
	    "rows: the config is read back");
	is_int(queen_queue_delete(q, "tmp"), 0, "rows: the queue deleted");
	is_int(queen_queue_create(q, "tmp", NULL), 0, "rows: and made again");
	is_int(cfgget(q, "tmp", NULL, "lease_time"), 300,
	    "rows: with the default config, not the old one's");

	/* a group's config changed twice, then the group deleted */
	cfg(q, Q, "g", "batch", "5");
	is_int(cfgget(q, Q, "g", "batch"), 5, "rows: a group's config");
	cfg(q, Q, "g", "batch", "7");
	is_int(cfgget(q, Q, "g", "batch"), 7, "rows: changed again");
	queen_group_delete(q, Q, "g");
	is_int(queen_group_get(q, Q, "g", &gi), -ENOENT,
	    "rows: a deleted group is gone");
	fix_close(&f);
}

static void
test_group_commit(void)
{
	struct fix f;
	struct queen *q = fix_open(&f, "store-batch");

	push1(q, Q, NULL, "m1", "x");
	is_int(queen_batch_begin(q, 0), 0, "batch: begin");
	is_int(push1(q, Q, NULL, "m2", "x"), 2, "batch: push inside");
	is_int(queen_kv_put(q, "ns", "k", "v", 1, 0, false), 0,
	    "batch: kv inside");
	queen_batch_rollback(q);
	is_int(tail_of(q, Q, NULL), 1, "batch: rollback undid the push");
	is_int(queen_kv_get(q, "ns", "k", &(struct queen_kv_value *){ NULL }),
	    -ENOENT, "batch: rollback undid the kv put");
	is_int(queen_batch_begin(q, 0), 0, "batch: begin again");
	is_int(push1(q, Q, NULL, "m2", "x"), 2, "batch: push m2");
	is_int(push1(q, Q, "bad name", "m3", "x"), -EINVAL,
	    "batch: a failing call inside");
	is_int(push1(q, Q, NULL, "m3", "x"), 3, "batch: push m3");
	is_int(queen_batch_commit(q), 0, "batch: commit");
	restart(&f);
	is_int(tail_of(f.q, Q, NULL), 3,
	    "batch: both pushes durable, the failed call undone alone");
	fix_close(&f);
}

static void
test_queue_delete(void)
{
	struct fix f;
	struct queen *q = fix_open(&f, "store-qdel");

	is_int(queen_queue_create(q, "empty", NULL), 0, "qdel: create");
	is_int(queen_queue_delete(q, "empty"), 0, "qdel: delete empty");
	is_int(queen_queue_get(q, "empty", &(struct queen_queue_info){ 0 }),
	    -ENOENT, "qdel: gone");
	is_int(queen_queue_delete(q, "empty"), -ENOENT, "qdel: twice");
	queen_queue_create(q, "grp", NULL);
	queen_group_ensure(q, "grp", "g");
	is_int(queen_queue_delete(q, "grp"), -ENOTEMPTY,
	    "qdel: a queue with a group is -ENOTEMPTY");
	queen_queue_create(q, "tmr", NULL);
	queen_timer_schedule(q, "tmr", "t", NULL, f.now + SEC, "x", 1);
	is_int(queen_queue_delete(q, "tmr"), -ENOTEMPTY,
	    "qdel: a queue with a timer is -ENOTEMPTY");
	push1(q, Q, NULL, "m1", "x");
	is_int(queen_queue_delete(q, Q), -ENOTEMPTY,
	    "qdel: a queue with messages is -ENOTEMPTY");
	is_int(tail_of(q, Q, NULL), 1, "qdel: and keeps them");
	fix_close(&f);
}

static int
dlq_times_cb(void *arg, const struct queen_dlq_entry *e)
{
	int64_t *t = arg;

	t[0] = e->created_at;
	t[1] = e->failed_at;
	return 0;
}

static void
test_dlq_times(void)
{
	struct fix f;
	struct queen *q = fix_open(&f, "store-dlqt");
	struct queen_ack_result r;
	int64_t t0 = f.now, t[2] = { 0, 0 };

	push1(q, Q, NULL, "m1", "x");
	f.now = t0 + 5 * SEC;
	ack1(q, Q, NULL, NULL, "m1", "dlq", NULL, &r);
	queen_dlq_list(q, Q, NULL, false, dlq_times_cb, t);
	is_int(t[0], t0, "dlq: created_at is the push time");
	is_int(t[1], t0 + 5 * SEC, "dlq: failed_at is the ack time");
	fix_close(&f);
}

/* A lazy batch (leases only) commits, and a later durable one follows. */
static void
test_lazy_batch(void)
{
	struct fix f;
	struct queen *q = fix_open(&f, "store-lazy");
	struct queen_batch *b = NULL;

	push1(q, Q, NULL, "m1", "x");
	is_int(queen_batch_begin(q, QUEEN_BATCH_LAZY), 0, "lazy: begin");
	is_int(queen_batch_begin(q, 0), -EBUSY, "lazy: no nested batch");
	is_int(queen_batch_begin(q, (enum queen_batch_flags)(1 << 5)), -EINVAL,
	    "lazy: unknown batch flags");
	is_int(pop1(q, Q, NULL, NULL, 1, &b), 0, "lazy: pop inside");
	is_int(queen_batch_commit(q), 0, "lazy: commit");
	is_int(push1(q, Q, NULL, "m2", "y"), 2, "lazy: a durable push after");
	restart(&f);
	q = f.q;
	if (b)
		is_int(queen_lease_get(q, b->lease_id, NULL), 0,
		    "lazy: the lease survived a clean restart");
	queen_batch_free(b);
	is_int(tail_of(q, Q, NULL), 2, "lazy: both pushes are there");
	fix_close(&f);
}

struct sync_arg {
	struct queen *q;
	uint64_t ticket;
	int rc;
};

static void *
sync_thread(void *arg)
{
	struct sync_arg *a = arg;

	a->rc = queen_sync(a->q, a->ticket);
	return NULL;
}

static struct queen *
open_sync(struct fix *f, enum queen_sync level)
{
	struct queen_options o = { 0 };
	struct queen *q = NULL;

	queen_close(f->q);
	o.path = f->path;
	o.sync = level;
	if (queen_open(&o, &q) != 0) {
		fprintf(stderr, "Bail out! cannot reopen %s\n", f->path);
		exit(1);
	}
	f->q = q;
	return q;
}

/*
 * A deferred batch commits without waiting for the disk and names a
 * ticket; queen_sync of it, on a second thread while the first goes on
 * with the next batch, makes it durable.  Where a commit is durable by
 * itself there is nothing to wait for: the ticket is 0.
 */
static void
test_deferred_batch(void)
{
	struct fix f;
	struct queen *q = fix_open(&f, "store-deferred");
	struct sync_arg a = { 0 };
	pthread_t th;
	uint64_t t1, t2;

	if (fix_is_pg()) {
		is_int(queen_batch_begin(q, QUEEN_BATCH_DEFERRED), 0, "deferred: begin");
		ok(push1(q, Q, NULL, "d1", "x") > 0, "deferred: a push");
		is_int(queen_batch_commit(q), 0, "deferred: commit");
		ok(queen_sync_ticket(q) == 0, "deferred: PostgreSQL commits "
		    "are durable by themselves (ticket 0)");
		is_int(queen_sync(q, 0), 0, "deferred: sync of ticket 0");
		fix_close(&f);
		return;
	}
	q = open_sync(&f, QUEEN_SYNC_FULL);
	is_int(queen_batch_begin(q, QUEEN_BATCH_DEFERRED), 0, "deferred: begin");
	is_int(queen_batch_begin(q, 0), -EBUSY, "deferred: no nested batch");
	is_int(push1(q, Q, NULL, "d1", "x"), 1, "deferred: a push inside");
	is_int(queen_batch_commit(q), 0, "deferred: commit");
	t1 = queen_sync_ticket(q);
	ok(t1 > 0, "deferred: the commit names a ticket (%llu)",
	    (unsigned long long)t1);

	a.q = q;
	a.ticket = t1;
	a.rc = 1;
	if (pthread_create(&th, NULL, sync_thread, &a) != 0) {
		fprintf(stderr, "Bail out! pthread_create\n");
		exit(1);
	}
	is_int(queen_batch_begin(q, QUEEN_BATCH_DEFERRED), 0,
	    "deferred: the next batch runs while another thread syncs");
	is_int(push1(q, Q, NULL, "d2", "y"), 2, "deferred: a second push");
	is_int(queen_batch_commit(q), 0, "deferred: second commit");
	t2 = queen_sync_ticket(q);
	ok(t2 > t1, "deferred: tickets grow (%llu > %llu)",
	    (unsigned long long)t2, (unsigned long long)t1);
	pthread_join(th, NULL);
	is_int(a.rc, 0, "deferred: queen_sync on the second thread");
	is_int(queen_sync(q, t2), 0, "deferred: sync of the second ticket");
	is_int(queen_sync(q, t1), 0, "deferred: an older ticket is done");

	is_int(queen_batch_begin(q, QUEEN_BATCH_LAZY), 0, "deferred: a lazy batch");
	is_int(queen_batch_commit(q), 0, "deferred: lazy commit");
	ok(queen_sync_ticket(q) == 0, "deferred: a lazy commit has no ticket");
	is_int(queen_batch_begin(q, 0), 0, "deferred: a durable batch");
	is_int(push1(q, Q, NULL, "d3", "z"), 3, "deferred: a push in it");
	is_int(queen_batch_commit(q), 0, "deferred: durable commit");
	ok(queen_sync_ticket(q) == 0,
	    "deferred: a durable commit synced itself (ticket 0)");

	q = open_sync(&f, QUEEN_SYNC_NORMAL);
	is_int(tail_of(q, Q, NULL), 3, "deferred: all three after a restart");
	is_int(queen_batch_begin(q, QUEEN_BATCH_DEFERRED), 0, "deferred: begin at normal");
	is_int(push1(q, Q, NULL, "d4", "w"), 4, "deferred: push at normal");
	is_int(queen_batch_commit(q), 0, "deferred: commit at normal");
	ok(queen_sync_ticket(q) == 0,
	    "deferred: below full a commit is all there is (ticket 0)");
	fix_close(&f);
}

/* pop one message of part in a lazy batch, ack it, and say what the
 * pop's ticket was (or ~0 if the pop failed) */
static uint64_t
pop_ack_ticket(struct queen *q, const char *part, const char *want,
    const char *what)
{
	struct queen_ack_result ar;
	struct queen_batch *b = NULL;
	uint64_t t;
	int rc;

	queen_batch_begin(q, QUEEN_BATCH_LAZY);
	rc = pop1(q, Q, part, NULL, 1, &b);
	queen_batch_commit(q);
	t = queen_pop_ticket(q);
	if (rc != 0 || b->n != 1) {
		ok(0, "%s: pop (rc %d)", what, rc);
		queen_batch_free(b);
		return ~(uint64_t)0;
	}
	is_str(b->msgs[0].txid, want, "%s: the pop took %s", what, want);
	is_int(ack1(q, Q, part, NULL, b->msgs[0].txid, NULL, b->lease_id,
	    &ar), 0, "%s: ack", what);
	ok(queen_pop_ticket(q) == 0, "%s: an ack names no ticket", what);
	queen_batch_free(b);
	return t;
}

/*
 * The pop rule's bookkeeping: a pop that took a message whose deferred
 * push is not yet synced names that push's ticket, once; a pop of
 * messages synced before names none, even while a later push of the same
 * partition is unsynced; a pop in the push's own batch names that batch;
 * a batch of pushes into more partitions than the engine notes one by one
 * makes any pop wait for it.
 */
static void
test_pop_ticket(void)
{
	struct fix f;
	struct queen *q = fix_open(&f, "store-popticket");
	struct queen_batch *b = NULL;
	uint64_t t2, t3, t4, t5;
	char part[16], tx[16];
	int i;

	if (fix_is_pg()) {
		is_int(queen_batch_begin(q, QUEEN_BATCH_DEFERRED), 0, "pop ticket: begin");
		ok(push1(q, Q, NULL, "k1", "x") > 0, "pop ticket: a push");
		is_int(queen_batch_commit(q), 0, "pop ticket: commit");
		ok(pop_ack_ticket(q, NULL, "k1", "pop ticket") == 0,
		    "pop ticket: PostgreSQL commits are durable (no ticket)");
		fix_close(&f);
		return;
	}
	q = open_sync(&f, QUEEN_SYNC_FULL);
	queen_batch_begin(q, QUEEN_BATCH_DEFERRED);
	is_int(push1(q, Q, NULL, "k1", "x"), 1, "pop ticket: push k1");
	queen_batch_commit(q);
	is_int(queen_sync(q, queen_sync_ticket(q)), 0, "pop ticket: sync k1");
	queen_batch_begin(q, QUEEN_BATCH_DEFERRED);
	is_int(push1(q, Q, NULL, "k2", "x"), 2, "pop ticket: push k2");
	queen_batch_commit(q);
	t2 = queen_sync_ticket(q);
	ok(t2 > 0, "pop ticket: k2 is not synced yet");
	ok(pop_ack_ticket(q, NULL, "k1", "pop ticket, synced") == 0,
	    "pop ticket: k1 was synced before: no ticket, though k2 is not");
	ok(pop_ack_ticket(q, NULL, "k2", "pop ticket, unsynced") == t2,
	    "pop ticket: a pop of k2 names k2's ticket");
	ok(queen_pop_ticket(q) == 0, "pop ticket: asked once, then forgotten");

	is_int(queen_sync(q, t2), 0, "pop ticket: sync k2");
	queen_batch_begin(q, QUEEN_BATCH_DEFERRED);
	is_int(push1(q, Q, NULL, "k3", "x"), 3, "pop ticket: push k3");
	queen_batch_commit(q);
	t3 = queen_sync_ticket(q);
	is_int(queen_sync(q, t3), 0, "pop ticket: sync k3");
	ok(pop_ack_ticket(q, NULL, "k3", "pop ticket, synced now") == 0,
	    "pop ticket: once synced, a pop names nothing");

	/* a pop in the push's own batch: that batch's ticket */
	queen_batch_begin(q, QUEEN_BATCH_DEFERRED);
	is_int(push1(q, Q, NULL, "k4", "x"), 4, "pop ticket: push k4");
	is_int(pop1(q, Q, NULL, NULL, 1, &b), 0, "pop ticket: pop in the "
	    "same batch");
	queen_batch_commit(q);
	t4 = queen_sync_ticket(q);
	ok(b && b->n == 1 && queen_pop_ticket(q) == t4,
	    "pop ticket: it names the batch's own ticket");
	queen_batch_free(b);
	is_int(queen_sync(q, t4), 0, "pop ticket: sync k4");

	/* pushes into 70 partitions in one batch: every pop waits */
	queen_batch_begin(q, QUEEN_BATCH_DEFERRED);
	for (i = 0; i < 70; i++) {
		snprintf(part, sizeof(part), "w%d", i);
		snprintf(tx, sizeof(tx), "w%d-1", i);
		if (push1(q, Q, part, tx, "x") != 1)
			ok(0, "pop ticket: push %s", tx);
	}
	queen_batch_commit(q);
	t5 = queen_sync_ticket(q);
	ok(pop_ack_ticket(q, "w3", "w3-1", "pop ticket, 70 partitions") ==
	    t5, "pop ticket: past 64 partitions in a batch, any pop waits");
	is_int(queen_sync(q, t5), 0, "pop ticket: sync them");
	ok(pop_ack_ticket(q, "w64", "w64-1", "pop ticket, 70 synced") == 0,
	    "pop ticket: and not once they are synced");
	fix_close(&f);
}

/* a child with a pipe to it (stdout flushed first); bail out if not */
static pid_t
fork_piped(int fds[2])
{
	pid_t pid;

	fflush(stdout);
	if (pipe(fds) != 0 || (pid = fork()) < 0) {
		fprintf(stderr, "Bail out! pipe/fork\n");
		exit(1);
	}
	return pid;
}

/*
 * A commit is in the kernel when it returns, even though core/vfs.c
 * gathers the log's writes: a child pushes at sync level normal (no fsync
 * at all), single messages, a batch bigger than the gathering buffer, and
 * enough to checkpoint and restart the log, says so on a pipe, and is
 * killed with SIGKILL before it can close anything.  Every push it
 * confirmed must be there, with its bytes.
 */
static void
test_kill_after_commit(void)
{
	struct fix f;
	struct queen *q = fix_open(&f, "store-kill");
	static struct queen_push_item it[500];
	static struct queen_push_result r[500];
	static char tx[500][32], body[701];
	struct queen_batch *b = NULL;
	int fds[2], st, n = 0, i, k;
	char done = 0;
	pid_t pid;

	if (fix_is_pg()) {
		fix_close(&f);
		return;
	}
	memset(body, 'k', 700);
	queen_close(f.q);
	f.q = NULL;
	if ((pid = fork_piped(fds)) == 0) {
		struct queen_options o = { 0 };

		close(fds[0]);
		o.path = f.path;
		o.sync = QUEEN_SYNC_NORMAL;
		if (queen_open(&o, &q) != 0)
			_exit(2);
		/* 3000 single pushes (past a checkpoint), then 4 batches
		 * of 500 x 700 bytes, each over the 64 KiB buffer */
		for (i = 0; i < 3000; i++)
			if (push1(q, Q, NULL, NULL, body) != i + 1)
				_exit(3);
		for (k = 0; k < 4; k++) {
			for (i = 0; i < 500; i++) {
				snprintf(tx[i], sizeof(tx[i]), "b%d-%d", k, i);
				memset(&it[i], 0, sizeof(it[i]));
				it[i].queue = Q;
				it[i].txid = tx[i];
				it[i].payload = body;
				it[i].len = 700;
			}
			if (queen_push(q, it, 500, false, r) != 0)
				_exit(4);
		}
		if (write(fds[1], "y", 1) != 1)
			_exit(5);
		pause();
		_exit(6);
	}
	close(fds[1]);
	ok(read(fds[0], &done, 1) == 1 && done == 'y',
	    "kill: the child confirmed its pushes");
	close(fds[0]);
	kill(pid, SIGKILL);
	waitpid(pid, &st, 0);
	ok(WIFSIGNALED(st) && WTERMSIG(st) == SIGKILL,
	    "kill: the child died of SIGKILL (status %d)", st);
	q = fix_reopen(&f);
	is_int(tail_of(q, Q, NULL), 5000, "kill: all 5000 pushes are there");
	if (queen_msg_read(q, Q, NULL, 1, 5000, true, &b) == 0 && b) {
		for (i = 0; i < (int)b->n; i++)
			n += b->msgs[i].len == 700 &&
			    !memcmp(b->msgs[i].payload, body, 700);
	}
	is_int(n, 5000, "kill: each with its bytes");
	queen_batch_free(b);
	fix_close(&f);
}

/*
 * The same for commits of every size from 1 to 40 pages of payload, each
 * the last thing a child does before SIGKILL: whichever frame of a commit
 * meets the end of vfs.c's buffer, the commit is in the kernel when it
 * returns.  (A commit of 16 frames once left its last page in the buffer
 * until the next write.)
 */
static void
test_kill_commit_sizes(void)
{
	struct fix f;
	struct queen *q = fix_open(&f, "store-kill-sizes");
	static struct queen_push_item it[40];
	static char body[3500];
	int fds[2], st, k, i, bad = 0;
	int64_t want = 0, got;
	char done;
	pid_t pid;

	if (fix_is_pg()) {
		fix_close(&f);
		return;
	}
	memset(body, 's', sizeof(body));
	for (k = 1; k <= 40; k++) {
		queen_close(f.q);
		f.q = NULL;
		if ((pid = fork_piped(fds)) == 0) {
			struct queen_options o = { 0 };
			struct queen_push_result r[40];

			close(fds[0]);
			o.path = f.path;
			o.sync = QUEEN_SYNC_NORMAL;
			if (queen_open(&o, &q) != 0)
				_exit(2);
			for (i = 0; i < k; i++) {
				memset(&it[i], 0, sizeof(it[i]));
				it[i].queue = Q;
				it[i].payload = body;
				it[i].len = sizeof(body);
			}
			if (queen_push(q, it, (size_t)k, false, r) != 0 ||
			    write(fds[1], "y", 1) != 1)
				_exit(3);
			pause();
			_exit(4);
		}
		close(fds[1]);
		done = 0;
		if (read(fds[0], &done, 1) == 1 && done == 'y')
			want += k;
		close(fds[0]);
		kill(pid, SIGKILL);
		waitpid(pid, &st, 0);
		q = fix_reopen(&f);
		got = tail_of(q, Q, NULL);
		if (got != want) {
			diag("sizes: after a commit of %d messages the tail is "
			    "%lld, not %lld", k, (long long)got,
			    (long long)want);
			bad++;
			want = got;
		}
	}
	is_int(bad, 0, "sizes: every confirmed commit of 1-40 pages survived "
	    "SIGKILL");
	is_int(want, 40 * 41 / 2, "sizes: all %d messages there", 40 * 41 / 2);
	fix_close(&f);
}

static long long
file_size(const char *path)
{
	struct stat st;

	return stat(path, &st) == 0 ? (long long)st.st_size : -1;
}

struct plist {
	int n, ordered;
	char last[QUEEN_NAME_MAX + 1];
};

static int
plist_cb(void *arg, const struct queen_partition_info *pi)
{
	struct plist *l = arg;

	if (l->n > 0 && strcmp(l->last, pi->name) >= 0)
		l->ordered = 0;
	snprintf(l->last, sizeof(l->last), "%s", pi->name);
	l->n++;
	return 0;
}

/*
 * Partitions are read a page at a time (128); every list must still see
 * each one once, in name order: the listing, stats, a new group's
 * cursors, and maintenance.
 */
static void
test_many_partitions(void)
{
	struct fix f;
	struct queen *q = fix_open(&f, "store-parts");
	struct plist l = { .ordered = 1 };
	struct queen_stats st;
	struct queen_batch *b = NULL;
	struct queen_pop_req req = { 0 };
	char name[16];
	bool more = true;
	int i, bad = 0, popped = 0;

	for (i = 299; i >= 0; i--) {   /* made out of name order */
		snprintf(name, sizeof(name), "p%03d", i);
		if (push1(q, Q, name, NULL, "x") != 1)
			bad++;
	}
	is_int(bad, 0, "parts: 300 partitions, one message each");
	is_int(queen_partition_list(q, Q, plist_cb, &l), 0, "parts: listed");
	is_int(l.n, 300, "parts: each of the 300 once");
	ok(l.ordered, "parts: in name order");
	memset(&st, 0, sizeof(st));
	is_int(queen_stats_get(q, Q, NULL, &st), 0, "parts: stats");
	is_int(st.partitions, 300, "parts: stats count 300 partitions");
	is_int(queen_group_ensure(q, Q, "g"), 0, "parts: a group");
	memset(&st, 0, sizeof(st));
	queen_stats_get(q, Q, "g", &st);
	is_int(st.depth, 300, "parts: the group sees all 300 messages");
	while (more && queen_maintain(q, &more) >= 0)
		;
	req.queue = Q;
	req.group = "g";
	req.auto_ack = 1;
	for (i = 0; i < 400 && queen_pop(q, &req, &b) == 0 && b; i++) {
		popped += (int)b->n;
		queen_batch_free(b);
		b = NULL;
	}
	is_int(popped, 300, "parts: and pops each one");
	fix_close(&f);
}

/* The checkpointer's rounds so far, waiting up to 5 s for more than n. */
static uint64_t
rounds_past(struct queen *q, uint64_t n)
{
	uint64_t beside = 0, in_writer;
	int i;

	for (i = 0; i < 500; i++) {
		queen_checkpoint_counts(q, &beside, &in_writer);
		if (beside > n)
			break;
		usleep(10000);
	}
	return beside;
}

/*
 * The hash rows in the file: how many are folded (in hashes), how many
 * wait for their fold (in young only), and how many are wrong (must be
 * none): a txns row whose h is not its hash's first 8 bytes or which is
 * in neither table, or a hashes row with no such txns row.  young may
 * hold rows txns has lost (rolled back, purged) until its stretch goes.
 */
static void
count_hashes(const char *path, int *young, int *folded, int *wrong)
{
	sqlite3 *db;
	sqlite3_stmt *st;

	*young = *folded = *wrong = -1;
	if (sqlite3_open_v2(path, &db, SQLITE_OPEN_READONLY, NULL) != SQLITE_OK)
		goto out;
	if (sqlite3_prepare_v2(db, "SELECT t.h, t.hash, "
	    "(SELECT count(*) FROM young y WHERE y.id = t.id AND y.h = t.h), "
	    "(SELECT count(*) FROM hashes x WHERE x.h = t.h AND x.id = t.id) "
	    "FROM txns t", -1, &st, NULL) != SQLITE_OK)
		goto out;
	*young = *folded = *wrong = 0;
	while (sqlite3_step(st) == SQLITE_ROW) {
		const unsigned char *b = sqlite3_column_blob(st, 1);
		int in_young = sqlite3_column_int(st, 2);
		int in_hashes = sqlite3_column_int(st, 3);
		uint64_t v = 0;
		int i;

		*folded += in_hashes;
		*young += !in_hashes && in_young;
		for (i = 0; i < 8 && sqlite3_column_bytes(st, 1) == 16; i++)
			v = v << 8 | b[i];
		if ((int64_t)(v ? v : 1) != sqlite3_column_int64(st, 0) ||
		    (!in_young && !in_hashes))
			(*wrong)++;
	}
	sqlite3_finalize(st);
	if (sqlite3_prepare_v2(db, "SELECT count(*) FROM hashes x WHERE NOT "
	    "EXISTS (SELECT 1 FROM txns t WHERE t.id = x.id AND t.h = x.h)",
	    -1, &st, NULL) != SQLITE_OK || sqlite3_step(st) != SQLITE_ROW)
		*wrong = -1;
	else
		*wrong += sqlite3_column_int(st, 0);
	sqlite3_finalize(st);
out:
	sqlite3_close(db);
}

/* the rows of a table in the file, or -1 */
static int
table_rows(const char *path, const char *table)
{
	char sql[128];
	sqlite3 *db;
	sqlite3_stmt *st;
	int n = -1;

	snprintf(sql, sizeof(sql), "SELECT count(*) FROM %s", table);
	if (sqlite3_open_v2(path, &db, SQLITE_OPEN_READONLY, NULL) ==
	    SQLITE_OK && sqlite3_prepare_v2(db, sql, -1, &st, NULL) ==
	    SQLITE_OK) {
		if (sqlite3_step(st) == SQLITE_ROW)
			n = sqlite3_column_int(st, 0);
		sqlite3_finalize(st);
	}
	sqlite3_close(db);
	return n;
}

/* the file's PRAGMA user_version, or -1 */
static int
file_version(const char *path)
{
	sqlite3 *db;
	sqlite3_stmt *st;
	int v = -1;

	if (sqlite3_open_v2(path, &db, SQLITE_OPEN_READONLY, NULL) ==
	    SQLITE_OK && sqlite3_prepare_v2(db, "PRAGMA user_version", -1,
	    &st, NULL) == SQLITE_OK) {
		if (sqlite3_step(st) == SQLITE_ROW)
			v = sqlite3_column_int(st, 0);
		sqlite3_finalize(st);
	}
	sqlite3_close(db);
	return v;
}

/*
 * A file of schema version 1: every hash row holds its h, none waits.
 * Made here from a new file by writing each row's h as version 1 did and
 * setting the version back; opened, it becomes version 2, and its ids
 * are found through the index alone.
 */
/*
 * The file as an older build left it.  Version 1: every row's h set and
 * indexed in txns_h.  Version 2: the same, but rows not folded yet hold
 * h = 0.  Neither has the young or hashes table, nor dlq_txid.
 */
static int
make_old(const char *path, int version)
{
	char sql[512];
	sqlite3 *db;
	int rc;

	snprintf(sql, sizeof(sql), "BEGIN;"
	    "CREATE INDEX txns_h ON txns (h);"
	    "UPDATE txns SET h = 0 WHERE %d = 2"
	    " AND id NOT IN (SELECT id FROM hashes);"
	    "DROP TRIGGER txns_gone; DROP TABLE young; DROP TABLE hashes;"
	    "DROP INDEX dlq_txid;"
	    "PRAGMA user_version = %d; COMMIT", version, version);
	if ((rc = sqlite3_open(path, &db)) == SQLITE_OK)
		rc = sqlite3_exec(db, sql, NULL, NULL, NULL);
	sqlite3_close(db);
	return rc;
}

/* a file's user_version set to v, nothing else changed */
static int
set_version(const char *path, int v)
{
	char sql[64];
	sqlite3 *db;
	int rc;

	snprintf(sql, sizeof(sql), "PRAGMA user_version = %d", v);
	if ((rc = sqlite3_open(path, &db)) == SQLITE_OK)
		rc = sqlite3_exec(db, sql, NULL, NULL, NULL);
	sqlite3_close(db);
	return rc;
}

/*
 * A file of a version newer than this build's is refused, read-only
 * too, and says so: its tables may mean what this build's statements do
 * not know.
 */
static void
test_schema_newer(void)
{
	struct fix f;
	struct queen *q = NULL;
	struct queen_options o = { 0 };
	char why[256];
	int i;

	fix_open(&f, "store-newer");
	push1(f.q, Q, NULL, "n1", "x");
	queen_close(f.q);
	f.q = NULL;
	ok(set_version(f.path, 5) == SQLITE_OK && file_version(f.path) == 5,
	    "newer: a file of version 5");
	o.path = f.path;
	o.err = why;
	o.errlen = sizeof(why);
	for (i = 0; i < 2; i++) {
		o.read_only = i == 0;
		why[0] = 0;
		is_int(queen_open(&o, &q), -EPROTO, "newer: a %s open is "
		    "refused", o.read_only ? "read-only" : "read-write");
		ok(q == NULL && strstr(why, "schema version 5 is newer"),
		    "newer: ... saying why (%s)", why);
		queen_close(q);
	}
	is_int(file_version(f.path), 5, "newer: the file left as it was");
	fix_close(&f);
}

/*
 * Files of schema versions 1 and 2 are brought to this version when
 * opened read-write, their hashes all found; a read-only open of one is
 * refused.  The fixture folds at 5, so of 12 pushes some are folded and
 * some wait.
 */
static void
test_schema_old(void)
{
	int v;

	for (v = 1; v <= 2; v++) {
		struct fix f;
		struct queen *ro = NULL;
		char txid[16];
		struct queen_hash_stats hs = { .held = 99 };
		int64_t off = 0;
		bool dup = false;
		int i, young, nfolded, wrong, was_young;

		fix_open(&f, "store-old");
		if (pg_skips(&f, 22, "SQLite schema versions"))
			return;
		for (i = 0; i < 12; i++) {
			snprintf(txid, sizeof(txid), "m%d", i);
			push1(f.q, Q, NULL, txid, "x");
		}
		queen_close(f.q);
		f.q = NULL;
		count_hashes(f.path, &was_young, &nfolded, &wrong);
		ok(was_young > 0 && nfolded > 0 && wrong == 0,
		    "v%d: some folded, some young (%d, %d)", v, nfolded,
		    was_young);
		ok(make_old(f.path, v) == SQLITE_OK &&
		    file_version(f.path) == v, "v%d: a file of version %d", v,
		    v);
		is_int(raw_open(&f, f.path, true, &ro), -EPROTO,
		    "v%d: a read-only open is refused", v);
		queen_close(ro);
		fix_reopen(&f);
		queen_hash_stats(f.q, &hs);
		is_int((int64_t)hs.held, v == 2 ? was_young : 0,
		    "v%d: opened, the young rows are held", v);
		off = push_ex(f.q, Q, NULL, "m1", NULL, false, &dup);
		ok(dup && off == 2, "v%d: an old id is a duplicate", v);
		is_int(queen_msg_find(f.q, Q, NULL, "m11", &off), 0,
		    "v%d: and the newest found by name", v);
		queen_close(f.q);
		f.q = NULL;
		is_int(file_version(f.path), 4,
		    "v%d: the file is version 4 now", v);
		count_hashes(f.path, &young, &nfolded, &wrong);
		ok(wrong == 0 && young + nfolded == 12,
		    "v%d: every row in young or hashes (%d, %d, %d wrong)", v,
		    young, nfolded, wrong);
		fix_close(&f);
	}
	test_schema_newer();
}

/* push n messages named <prefix>0.. to queue qn and count them found */
static int
push_found(struct queen *q, const char *qn, const char *prefix, int n)
{
	char txid[16];
	int64_t off;
	int i, found = 0;

	for (i = 0; i < n; i++) {
		snprintf(txid, sizeof(txid), "%s%d", prefix, i);
		push1(q, qn, NULL, txid, "x");
	}
	for (i = 0; i < n; i++) {
		snprintf(txid, sizeof(txid), "%s%d", prefix, i);
		found += queen_msg_find(q, qn, NULL, txid, &off) == 0;
	}
	return found;
}

/*
 * Whatever deletes hash rows (a queue deleted, hash_retention's purge)
 * takes their young and hashes rows too, and the pairs still in memory
 * for rows gone, whose ids a new partition takes again, fold nothing.
 */
static void
test_hash_tables(void)
{
	struct fix f;
	int young, folded, wrong, found;

	fix_open(&f, "store-htab");
	if (pg_skips(&f, 9, "the SQLite store's tables"))
		return;
	is_int(push_found(f.q, "Z", "m", 12), 12, "htab: 12 pushed, found");
	cfg(f.q, "Z", NULL, "retention", "1");
	f.now += 2 * SEC;
	maintain_all(f.q);
	is_int(queen_queue_delete(f.q, "Z"), 0, "htab: emptied and deleted");
	count_hashes(f.path, &young, &folded, &wrong);
	ok(young == 0 && folded == 0 && wrong == 0,
	    "htab: no young or hashes row left (%d, %d, %d)", young, folded,
	    wrong);
	found = push_found(f.q, "Z", "n", 12);
	is_int(found, 12, "htab: a new queue of that name, 12 found");
	is_int(push1(f.q, "Z", NULL, "m3", "x"), 13,
	    "htab: an id of the deleted queue is new");
	count_hashes(f.path, &young, &folded, &wrong);
	ok(young + folded == 13 && wrong == 0 && folded > 0,
	    "htab: each row in young or hashes (%d, %d, %d)", young, folded,
	    wrong);
	cfg(f.q, "Z", NULL, "hash_retention", "1");
	f.now += 2 * SEC;
	maintain_all(f.q);
	count_hashes(f.path, &young, &folded, &wrong);
	ok(young == 0 && folded == 0 && wrong == 0,
	    "htab: the hash rows' purge leaves none (%d, %d, %d)", young,
	    folded, wrong);
	cfg(f.q, "Z", NULL, "hash_retention", "3600");
	is_int(push_found(f.q, "Z", "p", 12), 12, "htab: 12 more, found");
	count_hashes(f.path, &young, &folded, &wrong);
	ok(wrong == 0 && young + folded == 12, "htab: their folds took "
	    "no pair of a purged row (%d, %d, %d wrong)", young, folded,
	    wrong);
	fix_close(&f);
}

/* the fixture's store again, with hashes folded past fold_at and a
 * filter for at most filter_max (0: the default) */
static int
reopen_sized(struct fix *f, size_t fold_at, size_t filter_max)
{
	struct queen_options o = { 0 };
	struct queen_tune tune = { 0 };

	queen_close(f->q);
	f->q = NULL;
	o.path = f->path;
	o.sync = QUEEN_SYNC_OFF;
	o.clock = my_clock;
	o.clock_arg = f;
	tune.fold_at = fold_at;
	tune.filter_max = filter_max;
	o.tune = &tune;
	return queen_open(&o, &f->q);
}

static int
reopen_folding(struct fix *f, size_t fold_at)
{
	return reopen_sized(f, fold_at, 0);
}

/* of txids <prefix><from>..<to - 1>, how many Q would call duplicates */
static int
dups(struct queen *q, const char *prefix, int from, int to)
{
	char txid[32];
	int i, n = 0;

	for (i = from; i < to; i++) {
		snprintf(txid, sizeof(txid), "%s%d", prefix, i);
		n += queen_push_is_dup(q, Q, NULL, txid) == 0;
	}
	return n;
}

static struct queen_hash_stats
hstats(struct queen *q)
{
	struct queen_hash_stats hs;

	queen_hash_stats(q, &hs);
	return hs;
}

/*
 * Killed in the middle of folds and filter builds: a child pushes "k0",
 * "k1", ... one per transaction, folding at 64 with a filter for at most
 * 1000 hashes, and reports each push that returned; it is killed after
 * n of them.  Reopened, every push reported is a duplicate, every hash
 * row is in young or hashes with its own h, and the young log holds no
 * more than three tables' worth; then 200 more pushes fold over it.
 */
static void
test_kill_folding(void)
{
	static const int at[] = { 300, 777, 1234 };
	size_t t;

	for (t = 0; t < sizeof(at) / sizeof(at[0]); t++) {
		struct fix f;
		int fds[2], st, got = 0, young, folded, wrong, n;
		pid_t pid;

		fix_open(&f, "store-killfold");
		if (pg_skips(&f, 12, "the young hashes are the SQLite store's"))
			return;
		queen_close(f.q);
		f.q = NULL;
		if ((pid = fork_piped(fds)) == 0) {
			struct queen_options o = { 0 };
			struct queen_tune tune = { 0 };
			struct queen *q;
			char txid[32];
			int i;

			close(fds[0]);
			o.path = f.path;
			o.sync = QUEEN_SYNC_NORMAL;
			tune.fold_at = 64;
			tune.filter_max = 1000;
			o.tune = &tune;
			if (queen_open(&o, &q) != 0)
				_exit(2);
			for (i = 0;; i++) {
				snprintf(txid, sizeof(txid), "k%d", i);
				if (push1(q, Q, NULL, txid, "x") != i + 1 ||
				    write(fds[1], "y", 1) != 1)
					_exit(3);
			}
		}
		close(fds[1]);
		while (got < at[t]) {
			char c[64];
			ssize_t r = read(fds[0], c, sizeof(c) < (size_t)(at[t] -
			    got) ? sizeof(c) : (size_t)(at[t] - got));

			if (r <= 0)
				break;
			got += (int)r;
		}
		kill(pid, SIGKILL);
		waitpid(pid, &st, 0);
		close(fds[0]);
		ok(got == at[t] && WIFSIGNALED(st), "killfold %d: killed after "
		    "%d pushes", at[t], got);
		reopen_sized(&f, 64, 1000);
		n = dups(f.q, "k", 0, got);
		is_int(n, got, "killfold %d: every push reported is a "
		    "duplicate", at[t]);
		count_hashes(f.path, &young, &folded, &wrong);
		n = table_rows(f.path, "young");
		ok(wrong == 0 && young + folded >= got && n <= 3 * 64 + 64,
		    "killfold %d: rows in young or hashes, none wrong (%d, %d, "
		    "%d wrong; log %d)", at[t], young, folded, wrong, n);
		pushn(f.q, Q, NULL, "after", 200);
		queen_close(f.q);
		f.q = NULL;
		count_hashes(f.path, &young, &folded, &wrong);
		reopen_sized(&f, 64, 1000);
		ok(wrong == 0 && dups(f.q, "after", 1, 201) == 200 &&
		    dups(f.q, "k", 0, got) == got, "killfold %d: 200 more fold "
		    "over it, all found (%d wrong)", at[t], wrong);
		fix_close(&f);
	}
}

/*
 * The hash filter, sized here for at most 1000 hashes: it answers the
 * lookups of new ids, never hides one pushed, goes away when there are
 * more than 750 hashes, comes back when purges bring them under 500,
 * is built again when stale hashes fill it (never two at once), and is
 * built at open.
 */
static void
test_filter(void)
{
	struct fix f;
	struct queen_hash_stats hs;
	uint64_t one, skips, builds;
	bool seen_build = false;
	int i, mid = -1;

	fix_open(&f, "store-filter");
	if (pg_skips(&f, 20, "the hash filter is the SQLite store's"))
		return;
	hs = hstats(f.q);
	ok(hs.filter_bytes == 81920 && hs.cache_kib == 4096 - 80,
	    "filter: the default, 80 KiB, taken from the page cache (%llu "
	    "KiB left)", (unsigned long long)hs.cache_kib);
	reopen_sized(&f, 64, 1000);
	hs = hstats(f.q);
	one = hs.filter_bytes;
	ok(one > 0 && hs.filter_builds == 1, "filter: built at open (%llu "
	    "bytes)", (unsigned long long)one);
	pushn(f.q, Q, NULL, "a", 600);
	hs = hstats(f.q);
	ok(hs.filter_skips >= 560, "filter: answered most of 600 new ids "
	    "(%llu)", (unsigned long long)hs.filter_skips);
	is_int(dups(f.q, "a", 1, 601), 600, "filter: every pushed id is a "
	    "duplicate");
	is_int(dups(f.q, "never", 0, 100), 0, "filter: no other id is");

	/* 1100 hashes: more than it holds */
	pushn(f.q, Q, NULL, "b", 500);
	hs = hstats(f.q);
	skips = hs.filter_skips;
	pushn(f.q, Q, NULL, "c", 10);
	is_int((int64_t)hs.filter_bytes, 0, "filter: none past 750 hashes");
	is_int((int64_t)hs.cache_kib, 4096, "filter: ... the page cache "
	    "whole again");
	ok(hstats(f.q).filter_skips == skips, "filter: ... so every lookup "
	    "asks the index");
	ok(dups(f.q, "a", 1, 601) + dups(f.q, "b", 1, 501) == 1100,
	    "filter: and finds every id");
	queen_close(f.q);
	f.q = NULL;
	reopen_sized(&f, 64, 1000);
	hs = hstats(f.q);
	ok(hs.filter_bytes == 0 && hs.filter_builds == 0, "filter: none "
	    "when opened with more than 750");
	ok(dups(f.q, "a", 1, 601) + dups(f.q, "b", 1, 501) == 1100,
	    "filter: ... and every id found");

	/* purged: it comes back, built a slice at a time */
	cfg(f.q, Q, NULL, "hash_retention", "1");
	f.now += 2 * SEC;
	maintain_all(f.q);
	cfg(f.q, Q, NULL, "hash_retention", "3600");
	builds = hstats(f.q).filter_builds;
	pushn(f.q, Q, NULL, "d", 400);
	hs = hstats(f.q);
	ok(hs.filter_builds == builds + 1 && hs.filter_bytes == one,
	    "filter: built again once purged (%llu builds)",
	    (unsigned long long)hs.filter_builds);
	is_int(dups(f.q, "d", 1, 401), 400, "filter: every new id found");
	is_int(dups(f.q, "a", 1, 11), 0, "filter: purged ids are new");

	/* stale hashes fill it: a new one is built, the index answering */
	f.now += 2 * SEC;
	cfg(f.q, Q, NULL, "hash_retention", "1");
	maintain_all(f.q);
	cfg(f.q, Q, NULL, "hash_retention", "3600");
	builds = hstats(f.q).filter_builds;
	for (i = 0; i < 740 && hstats(f.q).filter_builds == builds; i++) {
		char txid[32];

		snprintf(txid, sizeof(txid), "e%d", i);
		push1(f.q, Q, NULL, txid, "x");
		hs = hstats(f.q);
		if (!seen_build && hs.filter_building) {
			seen_build = true;
			skips = hs.filter_skips;
			mid = dups(f.q, "e", 0, i + 1) == i + 1 &&
			    dups(f.q, "never", 0, 100) == 0 &&
			    hstats(f.q).filter_skips == skips &&
			    hs.filter_bytes == one;
		}
	}
	hs = hstats(f.q);
	ok(seen_build, "filter: a new one built in its place");
	is_int(mid, 1, "filter: meanwhile the index answers, right");
	ok(hs.filter_builds > builds && hs.filter_bytes >= one,
	    "filter: ... and took its place (%llu builds)",
	    (unsigned long long)hs.filter_builds);
	is_int(dups(f.q, "e", 0, i), i, "filter: every id found after");

	/* reopened: built at open */
	queen_close(f.q);
	f.q = NULL;
	reopen_sized(&f, 64, 1000);
	hs = hstats(f.q);
	ok(hs.filter_builds == 1 && hs.filter_bytes == one, "filter: built "
	    "at open");
	is_int(dups(f.q, "e", 0, i), i, "filter: every id found after a "
	    "reopen");
	fix_close(&f);
}

/*
 * A fold is paid for by the pushes after its table froze, two rows a
 * push, not by the ones that filled it: those would fold the whole
 * table in one transaction, a stall of some 75 ms at the default size.
 */
static void
test_fold_slices(void)
{
	struct fix f;
	uint64_t held = 0, folded = 0, f65 = 0, f66 = 0;
	struct queen_hash_stats hs;
	char txid[32];
	int i;

	fix_open(&f, "store-slices");
	if (pg_skips(&f, 4, "the young hashes are the SQLite store's"))
		return;
	reopen_folding(&f, 64);
	for (i = 1; i <= 97; i++) {
		snprintf(txid, sizeof(txid), "s%d", i);
		push1(f.q, Q, NULL, txid, "x");
		queen_hash_stats(f.q, &hs);
		held = hs.held;
		folded = hs.folded;
		if (i == 64)
			ok(held == 64 && folded == 0, "slices: 64 held, none "
			    "folded (%llu, %llu)", (unsigned long long)held,
			    (unsigned long long)folded);
		if (i == 65)
			f65 = folded;
		if (i == 66)
			f66 = folded;
	}
	is_int((int64_t)f65, 0, "slices: the push that froze the table "
	    "folds nothing");
	is_int((int64_t)f66, 2, "slices: the next folds two, for the push "
	    "before it");
	ok(folded == 64 && held == 33, "slices: 32 pushes later all 64 are "
	    "folded and only the 33 new held (%llu, %llu)",
	    (unsigned long long)folded, (unsigned long long)held);
	fix_close(&f);
}

/*
 * A pushed hash waits in memory and in the h = 0 rows until it is folded
 * into the index; it must be found the same before, during and after its
 * fold, after a reopen, and not at all when its push was rolled back.
 */
static void
test_young_fold(void)
{
	enum { N = 1200, FOLD = 64 };
	static int64_t offs[N];
	struct fix f;
	struct queen *q;
	char txid[32], path[PATH_MAX];
	int i, miss = 0, wrongoff = 0, young, folded, wrong;
	int64_t off, before;
	bool dup;

	q = fix_open(&f, "store-fold");
	if (pg_skips(&f, 17, "the young hashes are the SQLite store's"))
		return;
	snprintf(path, sizeof(path), "%s", f.path);
	is_int(reopen_folding(&f, FOLD), 0, "fold: opened, folding at %d",
	    FOLD);
	q = f.q;
	/* singles and batches, in two partitions */
	for (i = 0; i < N; i++) {
		snprintf(txid, sizeof(txid), "m%d", i);
		if (i % 300 == 150)
			queen_batch_begin(q, 0);
		offs[i] = push_ex(q, Q, i % 2 ? "odd" : "even", txid, NULL,
		    false, NULL);
		if (i % 300 == 249)
			queen_batch_commit(q);
	}
	for (i = 0; i < N; i++) {
		snprintf(txid, sizeof(txid), "m%d", i);
		off = -1;
		if (queen_msg_find(q, Q, i % 2 ? "odd" : "even", txid,
		    &off) != 0)
			miss++;
		else if (off != offs[i] || off != i / 2 + 1)
			wrongoff++;
	}
	is_int(miss, 0, "fold: every one of %d pushes found", N);
	{
		struct queen_hash_stats hs;

		/* what young held at open is checked row by row; since,
		 * nothing was rolled back or deleted */
		queen_hash_stats(q, &hs);
		ok(hs.folded_fast > 0 && hs.folded_fast < hs.folded,
		    "fold: folds after the first without reading rows (%llu "
		    "of %llu)", (unsigned long long)hs.folded_fast,
		    (unsigned long long)hs.folded);
	}
	is_int(wrongoff, 0, "fold: each at its offset");
	off = push_ex(q, Q, "even", "m0", NULL, false, &dup);
	ok(dup && off == 1, "fold: a folded push is a duplicate (%lld)",
	    (long long)off);
	off = push_ex(q, Q, "odd", "m1199", NULL, false, &dup);
	ok(dup && off == 600, "fold: the newest push is a duplicate");
	ok(push_ex(q, Q, "odd", "m0", NULL, false, &dup) == 601 && !dup,
	    "fold: another partition's id is new");

	/* a push rolled back leaves a pair whose row is gone, then reused */
	{
		struct queen_push_item it[2] = { { 0 } };
		struct queen_push_result r[2];

		it[0].queue = it[1].queue = Q;
		it[0].partition = it[1].partition = "even";
		it[0].txid = "ghost";
		it[1].txid = "m2";
		it[0].payload = it[1].payload = "x";
		it[0].len = it[1].len = 1;
		is_int(queen_push(q, it, 2, true, r), -EEXIST,
		    "fold: a call with a duplicate refused whole");
	}
	before = push_ex(q, Q, "even", "real", NULL, false, &dup);
	is_int(before, 601, "fold: the next push takes the offset back");
	is_int(queen_msg_find(q, Q, "even", "ghost", &off), -ENOENT,
	    "fold: the rolled-back push is not found");
	for (i = 0; i < 3 * FOLD; i++) {
		snprintf(txid, sizeof(txid), "more%d", i);
		push_ex(q, Q, "odd", txid, NULL, false, NULL);
	}
	ok(queen_msg_find(q, Q, "even", "real", &off) == 0 && off == 601 &&
	    queen_msg_find(q, Q, "even", "ghost", &off) == -ENOENT,
	    "fold: after more folds, still the one and not the other");
	queen_close(q);
	f.q = NULL;
	count_hashes(path, &young, &folded, &wrong);
	ok(folded > N / 2, "fold: most hashes folded (%d, %d waiting)",
	    folded, young);
	ok(young > 0 && young <= 3 * FOLD, "fold: a few wait, no more than "
	    "%d", 3 * FOLD);
	is_int(wrong, 0, "fold: every folded row holds its own hash");
	young = table_rows(path, "young");
	ok(young >= 0 && young <= 3 * FOLD, "fold: the young log keeps no "
	    "more than %d rows (%d)", 3 * FOLD, young);

	/* reopened: the waiting ones are read back */
	fix_reopen(&f);
	q = f.q;
	snprintf(txid, sizeof(txid), "more%d", 3 * FOLD - 1);
	is_int(queen_msg_find(q, Q, "odd", txid, &off), 0,
	    "fold: after a reopen the newest is found");
	off = push_ex(q, Q, "odd", txid, NULL, false, &dup);
	ok(dup, "fold: ... and still a duplicate");
	fix_close(&f);
}

/*
 * The tick's walk over the partitions is spread over calls: each call of
 * queen_maintain visits at most 1000 partitions and the next goes on from
 * there, so 2500 partitions of expired messages take three calls, none of
 * which says more is due, and a fourth starts over.
 */
static void
test_maint_walk(void)
{
	enum { PARTS = 2500 };
	struct fix f;
	struct queen *q = fix_open(&f, "store-walk");
	int64_t left[5];
	char part[32];
	bool more[4] = { true, true, true, true };
	int i;

	queen_batch_begin(q, 0);
	for (i = 0; i < PARTS; i++) {
		snprintf(part, sizeof(part), "p%04d", i);
		push1(q, Q, part, NULL, "x");
	}
	queen_batch_commit(q);
	cfg(q, Q, NULL, "retention", "60");
	f.now += 61 * SEC;
	left[0] = msg_count(q, Q);
	for (i = 0; i < 3; i++) {
		queen_maintain(q, &more[i]);
		left[i + 1] = msg_count(q, Q);
	}
	is_int(left[0], PARTS, "walk: %d messages, one a partition", PARTS);
	ok(left[1] == PARTS - 1000 && left[2] == PARTS - 2000 &&
	    left[3] == 0, "walk: 1000 partitions a call (left %lld, %lld, "
	    "%lld)", (long long)left[1], (long long)left[2],
	    (long long)left[3]);
	ok(!more[0] && !more[1] && !more[2], "walk: no call says more is due");
	/* a push behind the walk is found by the next round */
	push1(q, Q, "p0000", NULL, "y");
	f.now += 61 * SEC;
	queen_maintain(q, &more[3]);
	is_int(msg_count(q, Q), 0, "walk: the next call starts over");
	fix_close(&f);
}

/*
 * queen_checkpoint asks the store's own thread to move the log's pages
 * into the database file; it is refused inside a batch.
 */
static void
test_checkpoint(void)
{
	struct fix f;
	struct queen *q = fix_open(&f, "store-ckpt");
	long long before, after = 0;
	uint64_t b0, w0;
	int i;

	if (fix_is_pg()) {
		is_int(queen_checkpoint(q), 0, "checkpoint: a no-op on "
		    "PostgreSQL");
		fix_close(&f);
		return;
	}
	is_int(queen_checkpoint(q), 0, "checkpoint: an empty log");
	/* measured first: the thread may copy most of the pushes unasked
	 * (every 1000 pages), leaving the round asked for little to add */
	before = file_size(f.path);
	for (i = 0; i < 300; i++)
		push1(q, Q, NULL, NULL, "0123456789abcdef0123456789abcdef");
	queen_checkpoint_counts(q, &b0, &w0);
	is_int(queen_checkpoint(q), 0, "checkpoint: after 300 pushes");
	ok(rounds_past(q, b0) > b0, "checkpoint: the thread ran a round");
	for (i = 0; i < 500 && (after = file_size(f.path)) <= before; i++)
		usleep(10000);
	ok(after > before, "checkpoint: the database file grew (%lld -> %lld)",
	    before, after);
	is_int(queen_batch_begin(q, 0), 0, "checkpoint: a batch");
	is_int(queen_checkpoint(q), -EBUSY, "checkpoint: not inside a batch");
	queen_batch_rollback(q);
	is_int(tail_of(q, Q, NULL), 300, "checkpoint: all 300 still there");
	fix_close(&f);
}

/*
 * Unasked, the log is copied beside the writer and stays bounded: 6000
 * pushes in their own transactions write some 24,000 pages of log
 * (about 100 MB); the log file must stay under 4000 pages and a commit's.
 */
static void
test_checkpoint_beside(void)
{
	struct fix f;
	struct queen *q = fix_open(&f, "store-beside");
	char wal[PATH_MAX];
	uint64_t beside, in_writer;
	long long size;
	int i, bad = 0;

	if (pg_skips(&f, 4, "SQLite's log"))
		return;
	snprintf(wal, sizeof(wal), "%s-wal", f.path);
	for (i = 0; i < 6000; i++)
		if (push1(q, Q, NULL, NULL, "a payload of some thirty bytes") !=
		    i + 1)
			bad++;
	is_int(bad, 0, "beside: 6000 pushes");
	ok(rounds_past(q, 0) > 0, "beside: the thread ran rounds unasked");
	size = file_size(wal);
	ok(size > 0 && size < (4000 + 64) * 4120LL,
	    "beside: the log stayed bounded (%lld bytes)", size);
	queen_checkpoint_counts(q, &beside, &in_writer);
	diag("beside: %llu rounds on the thread, %llu in the writer",
	    (unsigned long long)beside, (unsigned long long)in_writer);
	restart(&f);
	is_int(tail_of(f.q, Q, NULL), 6000, "beside: all there after a reopen");
	fix_close(&f);
}

/*
 * A checkpoint that fails on the disk stops the writes, as any other
 * storage failure does, and loses nothing.  The hook fails the first fsync
 * after N; N grows until the open and 20 pushes at sync normal (whose only
 * fsyncs are a new log's header) get through, so the next fsync is the
 * checkpoint's.
 */
static void
test_checkpoint_fails(void)
{
	struct fix f;
	struct queen *q = NULL;
	char why[300] = "", spec[32];
	int64_t tail = 0;
	int i, n, rc = 0;

	fix_open(&f, "store-ckfail");
	if (pg_skips(&f, 5, "SQLite's log"))
		return;
	queen_close(f.q);
	f.q = NULL;
	for (n = 0; n < 16 && !q; n++) {
		snprintf(spec, sizeof(spec), "fsync:%d", n);
		if (open_with(&f, f.path, QUEEN_SYNC_NORMAL, false, spec,
		    &q) != 0)
			continue;
		for (i = 0; i < 20 && push1(q, Q, NULL, NULL, "kept") > 0; i++)
			;
		if (i < 20) {
			queen_close(q);
			q = NULL;
		}
	}
	ok(q != NULL, "ckfail: open and 20 pushes with the fsync after %d "
	    "failing", n - 1);
	if (!q) {
		skip(4, "no store");
		fix_close(&f);
		return;
	}
	tail = tail_of(q, Q, NULL);
	is_int(queen_checkpoint(q), 0, "ckfail: asked");
	for (i = 0; i < 500; i++) {
		if ((rc = push1(q, Q, NULL, NULL, "late")) < 0)
			break;
		tail = rc;
		usleep(10000);
	}
	is_int(rc, -EIO, "ckfail: a later push is refused with -EIO");
	ok(queen_failed(q, why, sizeof(why)) && strstr(why, "checkpoint"),
	    "ckfail: queen_failed says why (%s)", why);
	is_int(tail_of(q, Q, NULL), tail, "ckfail: reads still work");
	queen_close(q);
	fix_reopen(&f);
	is_int(tail_of(f.q, Q, NULL), tail, "ckfail: every push that "
	    "returned is there after a reopen");
	fix_close(&f);
}

/*
 * One store per file: a second open in this process is refused at once,
 * another process's after the busy timeout, and neither disturbs the
 * first.
 */
static void
test_one_writer(void)
{
	struct fix f;
	struct queen *q = fix_open(&f, "store-one"), *q2 = NULL;
	int status = -1;
	pid_t pid;

	if (pg_skips(&f, 5, "SQLite's lock"))
		return;
	push1(q, Q, NULL, "m1", "x");
	is_int(raw_open(&f, f.path, false, &q2), -EBUSY,
	    "one: a second open in this process is -EBUSY");
	ok(q2 == NULL, "one: and hands back no store");
	fflush(stdout);
	pid = fork();
	if (pid == 0) {     /* a new program: no memory of this one's opens */
		execl(self, self, "--open", f.path, (char *)NULL);
		_exit(3);
	}
	if (pid > 0)
		waitpid(pid, &status, 0);
	ok(WIFEXITED(status) && WEXITSTATUS(status) == 0,
	    "one: another process's open is -EBUSY (status %d)", status);
	is_int(push1(q, Q, NULL, "m2", "y"), 2, "one: the first still writes");
	restart(&f);
	is_int(tail_of(f.q, Q, NULL), 2, "one: and its writes are there");
	fix_close(&f);
}

/* t-store --open PATH: exit 0 if the open is refused with -EBUSY */
static int
open_only(const char *path)
{
	struct queen_options o = { 0 };
	struct queen *q = NULL;
	int rc;

	o.path = path;
	rc = queen_open(&o, &q);
	queen_close(q);
	return rc == -EBUSY ? 0 : rc == 0 ? 1 : 2;
}

/*
 * SQLite's allocation counting takes a global mutex per allocation and
 * nothing reads it: the store turns it off before SQLite's first use in
 * the process, so with it off the count stays at 0 whatever runs.
 */
static void
test_memstatus(void)
{
	struct fix f;

	fix_open(&f, "store-memstatus");
	if (pg_skips(&f, 1, "SQLite's allocations"))
		return;
	pushn(f.q, Q, NULL, "ms", 50);
	is_int(sqlite3_memory_used(), 0, "memstatus: SQLite counts no "
	    "allocation");
	fix_close(&f);
}

/* which --db is a PostgreSQL URI: the one rule core and the mount share */
static void
test_path_is_pg(void)
{
	ok(queen_path_is_pg("postgresql://u@h/db") &&
	    queen_path_is_pg("postgres:///db?host=/run/postgresql"),
	    "path: both URI schemes are PostgreSQL");
	ok(!queen_path_is_pg("/tmp/odd://dir/queen.db") &&
	    !queen_path_is_pg("postgresqlx://h/db") &&
	    !queen_path_is_pg("queen.db") && !queen_path_is_pg(NULL),
	    "path: a file whose name holds :// is a file");
}

/*
 * A build without libpq (make PG=no) refuses a postgresql:// store with
 * -EOPNOTSUPP and says why; with libpq the same URI (nothing listens on
 * port 1) fails to connect instead.  Either way nothing opens.
 */
static void
test_pg_unavailable(void)
{
	struct queen_options o = { 0 };
	struct queen *q = NULL;
	char why[256] = "";
	int rc;

	o.path = "postgresql://127.0.0.1:1/none?connect_timeout=2";
	o.err = why;
	o.errlen = sizeof(why);
	rc = queen_open(&o, &q);
	ok(rc < 0 && !q, "no pg: the open fails (%d: %s)", rc, why);
	if (rc == -EOPNOTSUPP)
		ok(strstr(why, "built without PostgreSQL support") != NULL,
		    "no pg: a build without libpq says so");
	else
		ok(strstr(why, "built without") == NULL,
		    "no pg: a build with libpq tried to connect");
	queen_close(q);
}

int
main(int argc, char **argv)
{
	if (argc == 3 && strcmp(argv[1], "--open") == 0)
		return open_only(argv[2]);
	self = argv[0];
	plan_lazy();
	test_memstatus();       /* first: before this file uses SQLite */
	test_path_is_pg();
	test_pg_unavailable();
	test_many_partitions();
	test_young_fold();
	test_fold_slices();
	test_schema_old();
	test_hash_tables();
	test_filter();
	test_kill_folding();
	test_maint_walk();
	test_checkpoint();
	test_checkpoint_beside();
	test_checkpoint_fails();
	test_one_writer();
	test_lazy_batch();
	test_deferred_batch();
	test_pop_ticket();
	test_kill_after_commit();
	test_kill_commit_sizes();
	test_config();
	test_config_check();
	test_persistence();
	test_read_only();
	test_size_limit();
	test_corrupt();
	test_retention();
	test_completed_retention();
	test_completed_retention_unconsumed();
	test_hash_purge();
	test_stats();
	test_kv();
	test_poison_timer();
	test_timers();
	test_group_commit();
	test_row_cache();
	test_queue_delete();
	test_dlq_times();
	return done_testing();
}
