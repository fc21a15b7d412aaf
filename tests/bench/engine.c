/*
 * engine.c - the engine's own speed, through its C API with no FUSE: the
 * reference "limit" beside the mount's figures in `make bench`.  Prints
 * one line per figure: name, messages per second.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>
#include <unistd.h>

#include "../../core/queen.h"

static double
now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

static struct queen *
open_store(const char *dir, const char *name, enum queen_sync sync)
{
	struct queen_options o = { 0 };
	struct queen *q;
	char path[512];

	snprintf(path, sizeof(path), "%s/%s.db", dir, name);
	o.path = path;
	o.sync = sync;
	if (queen_open(&o, &q) != 0) {
		fprintf(stderr, "open %s failed\n", path);
		exit(1);
	}
	return q;
}

/* this process's CPU time so far (user + system), in microseconds */
static double
cpu_us(void)
{
	struct rusage ru;

	getrusage(RUSAGE_SELF, &ru);
	return (ru.ru_utime.tv_sec + ru.ru_stime.tv_sec) * 1e6 +
	    ru.ru_utime.tv_usec + ru.ru_stime.tv_usec;
}

static double cpu0;

static void
report(const char *name, long n, double secs)
{
	printf("%-28s %10.0f msg/s  (%ld in %.2f s)  cpu %.1f us/msg\n", name,
	    n / secs, n, secs, n ? (cpu_us() - cpu0) / n : 0.0);
	fflush(stdout);
	cpu0 = cpu_us();
}

/*
 * Single pushes, one transaction each.  group 0: each commit durable by
 * itself.  group N (sync full): what the daemon does for single-item HTTP
 * pushes from several connections, a commit that does not wait for the
 * disk and one sync of the log per N commits (the daemon syncs what
 * committed while the last sync ran); its CPU per message is the
 * engine's own work in the HTTP push figures.
 */
static void
bench_push1(const char *dir, enum queen_sync sync, int group, const char *label,
    double dur)
{
	struct queen *q = open_store(dir, label, sync);
	struct queen_push_item it = { 0 };
	struct queen_push_result r;
	char payload[200], txid[32];
	double t0;
	long n = 0;

	memset(payload, 'x', sizeof(payload));
	it.queue = "bench";
	it.payload = payload;
	it.len = sizeof(payload);
	it.txid = txid;
	cpu0 = cpu_us();
	t0 = now_s();
	while (now_s() - t0 < dur) {
		snprintf(txid, sizeof(txid), "m%ld", n);
		if (group && queen_batch_begin(q, QUEEN_BATCH_DEFERRED) != 0)
			break;
		if (queen_push(q, &it, 1, false, &r) != 0 ||
		    (group && queen_batch_commit(q) != 0)) {
			queen_batch_rollback(q);
			break;
		}
		n++;
		if (group && n % group == 0 &&
		    queen_sync(q, queen_sync_ticket(q)) != 0)
			break;
	}
	report(label, n, now_s() - t0);
	queen_close(q);
}

static void
bench_batch(const char *dir, double dur)
{
	struct queen *q = open_store(dir, "batch", QUEEN_SYNC_FULL);
	static struct queen_push_item it[1000];
	static struct queen_push_result r[1000];
	static char txid[1000][32];
	struct queen_pop_req pr = { 0 };
	struct queen_batch *b;
	char payload[200];
	double t0;
	long n = 0, i, c = 0;

	memset(payload, 'x', sizeof(payload));
	cpu0 = cpu_us();
	t0 = now_s();
	while (now_s() - t0 < dur) {
		for (i = 0; i < 1000; i++) {
			snprintf(txid[i], 32, "b%ld", n + i);
			it[i].queue = "bench";
			it[i].txid = txid[i];
			it[i].payload = payload;
			it[i].len = sizeof(payload);
		}
		if (queen_push(q, it, 1000, false, r) != 0)
			break;
		n += 1000;
	}
	report("push batch 1000 (full)", n, now_s() - t0);
	pr.queue = "bench";
	pr.batch = 1000;
	pr.auto_ack = 0;
	cpu0 = cpu_us();
	t0 = now_s();
	while (queen_pop(q, &pr, &b) == 0) {
		struct queen_ack_item a = { 0 };
		struct queen_ack_result ar;

		a.txid = b->msgs[b->n - 1].txid;
		a.partition_uuid = b->partition_uuid;
		a.lease_id = b->lease_id;
		queen_ack(q, &a, 1, &ar);
		c += (long)b->n;
		queen_batch_free(b);
	}
	report("pop+ack batch 1000 (full)", c, now_s() - t0);
	queen_close(q);
}

static void
bench_cycle(const char *dir, enum queen_sync sync, const char *label,
    double dur)
{
	struct queen *q = open_store(dir, label, sync);
	struct queen_push_item it = { 0 };
	struct queen_push_result r;
	struct queen_pop_req pr = { 0 };
	struct queen_batch *b;
	char payload[200], txid[32];
	double t0;
	long n = 0;

	memset(payload, 'x', sizeof(payload));
	it.queue = "bench";
	it.payload = payload;
	it.len = sizeof(payload);
	it.txid = txid;
	pr.queue = "bench";
	pr.auto_ack = 0;
	cpu0 = cpu_us();
	t0 = now_s();
	while (now_s() - t0 < dur) {
		struct queen_ack_item a = { 0 };
		struct queen_ack_result ar;

		snprintf(txid, sizeof(txid), "c%ld", n);
		if (queen_push(q, &it, 1, false, &r) != 0)
			break;
		if (queen_pop(q, &pr, &b) != 0)
			break;
		a.txid = b->msgs[0].txid;
		a.partition_uuid = b->partition_uuid;
		a.lease_id = b->lease_id;
		queen_ack(q, &a, 1, &ar);
		queen_batch_free(b);
		n++;
	}
	report(label, n, now_s() - t0);
	queen_close(q);
}

int
main(int argc, char **argv)
{
	char dir[] = "/tmp/queen-bench-XXXXXX";
	double dur = argc > 1 ? atof(argv[1]) : 1.0;
	char cmd[64];

	if (!mkdtemp(dir))
		return 1;
	bench_push1(dir, QUEEN_SYNC_FULL, 0, "push 1 (full)", dur);
	bench_push1(dir, QUEEN_SYNC_NORMAL, 0, "push 1 (normal)", dur);
	bench_push1(dir, QUEEN_SYNC_FULL, 3, "push 1, sync per 3 (full)", dur);
	bench_cycle(dir, QUEEN_SYNC_FULL, "cycle (full)", dur);
	bench_cycle(dir, QUEEN_SYNC_NORMAL, "cycle (normal)", dur);
	bench_batch(dir, dur);
	snprintf(cmd, sizeof(cmd), "rm -rf %s", dir);
	return system(cmd) != 0;
}
