/*
 * load.c - the file-side load generator of `make bench`: N threads loop one
 * syscall sequence for D seconds against a directory (nullfs, queenfs or
 * any fs) and print "OPS_PER_S COUNT SECONDS" on one line (wake prints
 * "P50_US P99_US SAMPLES").  The api/ modes live in loadapi.c; the peers'
 * clients in bsload.c, rsload.c and dirqload.py.
 */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "load.h"

struct load_opts opt = { .threads = 1, .dur = 1.0, .producers = 1,
	.consumers = 1, .samples = 300, .queue = "bench" };

static _Atomic long rr;         /* round-robin partition counter */
static _Atomic int failures;
static char payload[200];

double
now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

void
fail(const char *what, const char *path, int err)
{
	if (failures++ < 5)
		fprintf(stderr, "load: %s %s: %s\n", what, path, strerror(err));
}

int
put_file(const char *path, const char *buf, size_t n, int flags)
{
	int fd = open(path, O_WRONLY | flags, 0644);

	if (fd < 0)
		return -errno;
	if (write(fd, buf, n) != (ssize_t)n) {
		int e = errno ? errno : EIO;

		close(fd);
		return -e;
	}
	return close(fd) ? -errno : 0;
}

/* one read(2) of up to cap bytes: `next` must not be read twice */
ssize_t
get_file(const char *path, char *buf, size_t cap, int flags)
{
	int fd = open(path, O_RDONLY | flags);
	ssize_t n;

	if (fd < 0)
		return -errno;
	n = read(fd, buf, cap);
	if (n < 0)
		n = -errno;
	close(fd);
	return n;
}

/* where push number n of thread t goes: DIR/name or DIR/partitions/pK/name */
static void
push_path(char *out, size_t cap, const char *dir, int t, long n)
{
	if (opt.partitions > 0)
		snprintf(out, cap, "%s/partitions/p%ld/m%d-%d-%ld", dir,
		    rr++ % opt.partitions, (int)getpid(), t, n);
	else
		snprintf(out, cap, "%s/m%d-%d-%ld", dir, (int)getpid(), t, n);
}

static int
push_one(const char *dir, int t, long n)
{
	char path[4096];
	int rc;

	push_path(path, sizeof(path), dir, t, n);
	rc = put_file(path, payload, sizeof(payload), O_CREAT | O_EXCL);
	if (rc)
		fail("push", path, -rc);
	return rc;
}

/*
 * Pop what one read of DIR/next gives, read each payload, ack the last line
 * (which commits the whole span).  Returns messages taken, 0 when nothing
 * came (ENODATA after `wait`, or EAGAIN under O_NONBLOCK), <0 on error.
 */
static long
pop_some(const char *dir, int flags)
{
	static _Thread_local char buf[256 * 1024];
	char path[4096], to[4096], data[4096], *line, *save, *last = NULL;
	ssize_t n;
	long got = 0;

	snprintf(path, sizeof(path), "%s/next", dir);
	n = get_file(path, buf, sizeof(buf) - 1, flags);
	if (n == -ENODATA || n == -EAGAIN || n == 0)
		return 0;
	if (n < 0) {
		fail("read", path, (int)-n);
		return -1;
	}
	buf[n] = 0;
	for (line = strtok_r(buf, "\n", &save); line;
	    line = strtok_r(NULL, "\n", &save)) {
		snprintf(path, sizeof(path), "%s/%s", dir, line);
		if ((n = get_file(path, data, sizeof(data), 0)) < 0) {
			fail("read payload", path, (int)-n);
			return -1;
		}
		last = line;
		got++;
	}
	if (!last)
		return 0;
	snprintf(path, sizeof(path), "%s/%s", dir, last);
	snprintf(to, sizeof(to), "%s/ack/%s", dir, strrchr(last, '/') + 1);
	if (rename(path, to) != 0) {
		fail("ack rename", path, errno);
		return -1;
	}
	return got;
}

static void
set_config(const char *dir, const char *line)
{
	char path[4096];
	int rc;

	snprintf(path, sizeof(path), "%s/config", dir);
	if ((rc = put_file(path, line, strlen(line), O_TRUNC)) != 0)
		fail("config write", path, -rc);
}

static bool
is_queue(const char *dir)
{
	char path[4096];

	snprintf(path, sizeof(path), "%s/next", dir);
	return access(path, F_OK) == 0;
}

/* ---- the loops: each returns operations done before the deadline ---- */

static long
loop_create(int t, double end)
{
	long n = 0;

	while (now_s() < end && push_one(opt.dir, t, n) == 0)
		n++;
	return n;
}

static long
loop_read(int t, double end)
{
	char path[4096], buf[4096];
	unsigned seed = t;
	long n = 0;
	ssize_t r;

	while (now_s() < end) {
		snprintf(path, sizeof(path), "%s/r/f%d", opt.dir,
		    rand_r(&seed) % 1000);
		if ((r = get_file(path, buf, sizeof(buf), 0)) < 0) {
			fail("read", path, (int)-r);
			break;
		}
		n++;
	}
	return n;
}

static long
loop_rename(int t, double end)
{
	char a[4096], b[4096];
	long n = 0;
	int k, i;

	for (k = 0; k < 64; k++) {
		snprintf(a, sizeof(a), "%s/a/t%d-%d", opt.dir, t, k);
		put_file(a, payload, 1, O_CREAT | O_TRUNC);
	}
	for (i = 0; now_s() < end; i++) {
		k = i % 64;
		snprintf(a, sizeof(a), "%s/%c/t%d-%d", opt.dir,
		    (i / 64) % 2 ? 'b' : 'a', t, k);
		snprintf(b, sizeof(b), "%s/%c/t%d-%d", opt.dir,
		    (i / 64) % 2 ? 'a' : 'b', t, k);
		if (rename(a, b) != 0) {
			fail("rename", a, errno);
			break;
		}
		n++;
	}
	return n;
}

/* the reference cycle on a plain fs: create w/x, read w/x, rename to ack/x */
static long
loop_fcycle(int t, double end)
{
	char w[4096], a[4096], buf[4096];
	long n = 0;
	int rc;

	while (now_s() < end) {
		snprintf(w, sizeof(w), "%s/w/x%d-%d-%ld", opt.dir,
		    (int)getpid(), t, n);
		snprintf(a, sizeof(a), "%s/ack/x%d-%d-%ld", opt.dir,
		    (int)getpid(), t, n);
		if ((rc = put_file(w, payload, sizeof(payload),
		    O_CREAT | O_EXCL)) != 0) {
			fail("create", w, -rc);
			break;
		}
		if ((rc = (int)get_file(w, buf, sizeof(buf), 0)) < 0) {
			fail("read", w, -rc);
			break;
		}
		if (rename(w, a) != 0) {
			fail("rename", w, errno);
			break;
		}
		n++;
	}
	return n;
}

/* the queue cycle: push a file, read next, read the payload, ack */
static long
loop_qcycle(int t, double end)
{
	long n = 0, got;

	while (now_s() < end) {
		if (push_one(opt.dir, t, n) != 0)
			break;
		while ((got = pop_some(opt.dir, 0)) == 0 && now_s() < end + 5)
			;
		if (got <= 0)
			break;
		n++;
	}
	return n;
}

static long
loop_producer(int t, double end)
{
	return loop_create(t, end);
}

static _Atomic int stopping;

static long
loop_consumer(int t, double end)
{
	long n = 0, got;

	(void)t;
	while (!stopping) {
		if ((got = pop_some(opt.dir, 0)) < 0)
			break;
		if (now_s() < end)
			n += got;
	}
	return n;
}

/* batch consume through files: batch = 1000, drain until empty */
static long
loop_nextpop(int t, double end)
{
	long n = 0, got;

	(void)t;
	while (now_s() < end && (got = pop_some(opt.dir, O_NONBLOCK)) > 0)
		n += got;
	return n;
}

/* ---- running threads ---- */

struct worker {
	pthread_t th;
	int id;
	long (*fn)(int, double);
	double end, done;
	long count;
};

static void *
worker_main(void *arg)
{
	struct worker *w = arg;

	w->count = w->fn(w->id, w->end);
	w->done = now_s();
	return NULL;
}

static void
run_threads(long (*fn[])(int, double), size_t n, const char *label)
{
	struct worker *w = calloc(n, sizeof(*w));
	double t0 = now_s(), last = t0;
	long total = 0;
	size_t i;

	if (!w)
		exit(1);
	for (i = 0; i < n; i++) {
		w[i].id = (int)i;
		w[i].fn = fn[i];
		w[i].end = t0 + opt.dur;
		pthread_create(&w[i].th, NULL, worker_main, &w[i]);
	}
	if (opt.wake_consumers) {
		/* consumers may sit in a read of `next`: a message each */
		while (now_s() < t0 + opt.dur)
			usleep(10000);
		for (i = 0; i < (size_t)opt.producers; i++)
			pthread_join(w[i].th, NULL);
		stopping = 1;
		for (i = 0; i < (size_t)opt.consumers; i++)
			push_one(opt.dir, 999, (long)i);
	}
	for (i = 0; i < n; i++) {
		/* qcycle counts acks only: its producers were joined above */
		if (opt.wake_consumers && i < (size_t)opt.producers)
			continue;
		pthread_join(w[i].th, NULL);
		total += w[i].count;
		if (w[i].done > last)
			last = w[i].done;
	}
	if (opt.wake_consumers)
		last = t0 + opt.dur;   /* consumers count only until then */
	if (total == 0 && failures) {
		fprintf(stderr, "load: %s: every thread failed\n", label);
		exit(1);
	}
	printf("%.1f %ld %.3f\n", total / (last - t0), total, last - t0);
	free(w);
}

static void
setup_dirs(const char *mode)
{
	char path[4096];
	int i;

	if (!strcmp(mode, "read")) {
		snprintf(path, sizeof(path), "%s/r", opt.dir);
		mkdir(path, 0755);
		for (i = 0; i < 1000; i++) {
			static char four[4096];

			snprintf(path, sizeof(path), "%s/r/f%d", opt.dir, i);
			if (access(path, F_OK) != 0)
				put_file(path, four, sizeof(four), O_CREAT);
		}
	} else if (!strcmp(mode, "rename")) {
		snprintf(path, sizeof(path), "%s/a", opt.dir);
		mkdir(path, 0755);
		snprintf(path, sizeof(path), "%s/b", opt.dir);
		mkdir(path, 0755);
	} else if (!strcmp(mode, "cycle") && !is_queue(opt.dir)) {
		snprintf(path, sizeof(path), "%s/w", opt.dir);
		mkdir(path, 0755);
		snprintf(path, sizeof(path), "%s/ack", opt.dir);
		mkdir(path, 0755);
	}
}

static void
usage(void)
{
	fputs("usage: load MODE DIR [-t threads] [-d seconds] [-p producers]\n"
	      "    [-c consumers] [-P partitions] [-n count] [-s samples]"
	      " [-q queue] [-D dir] [-x]\n"
	      "modes: create read rename cycle qpush qcycle nextpop wake\n"
	      "       apipush apipop (DIR = the mount, -q the queue;\n"
	      "       -x: apipush checks each answer by a scan, not jansson;\n"
	      "       -D: wake pushes into this dir, e.g. on another mount)\n",
	    stderr);
	exit(2);
}

int
main(int argc, char **argv)
{
	long (*fn[256])(int, double);
	const char *mode;
	int c, i, n;

	if (argc < 3)
		usage();
	mode = argv[1];
	opt.dir = argv[2];
	optind = 3;
	while ((c = getopt(argc, argv, "t:d:p:c:P:n:s:q:D:x")) != -1) {
		switch (c) {
		case 'x': opt.scan = true; break;
		case 't': opt.threads = atoi(optarg); break;
		case 'd': opt.dur = atof(optarg); break;
		case 'p': opt.producers = atoi(optarg); break;
		case 'c': opt.consumers = atoi(optarg); break;
		case 'P': opt.partitions = atol(optarg); break;
		case 'n': opt.count = atol(optarg); break;
		case 's': opt.samples = atoi(optarg); break;
		case 'q': opt.queue = optarg; break;
		case 'D':
			opt.push_dir = optarg;
			break;
		default: usage();
		}
	}
	if (opt.threads < 1 || opt.threads > 128 || opt.producers < 0 ||
	    opt.consumers < 0 || opt.producers + opt.consumers > 128)
		usage();
	memset(payload, 'x', sizeof(payload));
	setup_dirs(mode);
	n = opt.threads;
	for (i = 0; i < n; i++)
		fn[i] = NULL;
	if (!strcmp(mode, "create") || !strcmp(mode, "qpush"))
		fn[0] = loop_create;
	else if (!strcmp(mode, "read"))
		fn[0] = loop_read;
	else if (!strcmp(mode, "rename"))
		fn[0] = loop_rename;
	else if (!strcmp(mode, "cycle")) {
		if (is_queue(opt.dir))
			set_config(opt.dir, "wait = 2\n");
		fn[0] = is_queue(opt.dir) ? loop_qcycle : loop_fcycle;
	} else if (!strcmp(mode, "nextpop")) {
		set_config(opt.dir, "batch = 1000\n");
		n = 1;
		fn[0] = loop_nextpop;
	} else if (!strcmp(mode, "qcycle")) {
		set_config(opt.dir, "wait = 2\n");
		n = opt.producers + opt.consumers;
		for (i = 0; i < n; i++)
			fn[i] = i < opt.producers ? loop_producer :
			    loop_consumer;
		opt.wake_consumers = 1;
	} else if (!strcmp(mode, "wake")) {
		set_config(opt.dir, "wait = 5\n");
		return run_wake(payload, sizeof(payload));
	} else if (!strcmp(mode, "apipush"))
		return run_apipush(payload, sizeof(payload));
	else if (!strcmp(mode, "apipop"))
		return run_apipop();
	else
		usage();
	for (i = 1; i < n; i++)
		if (!fn[i])
			fn[i] = fn[0];
	run_threads(fn, (size_t)n, mode);
	return 0;
}
