/*
 * load.h - what the load generator's files share: options, the clock,
 * error reporting, whole-file helpers, and the modes kept apart from
 * load.c (wake.c, loadapi.c).
 */
#ifndef LOAD_H
#define LOAD_H

#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>
#include <time.h>

struct load_opts {
	const char *dir;        /* the target directory (a queue, or the mount) */
	const char *queue;      /* api modes: the queue's name */
	const char *push_dir;   /* wake: the producer's (another mount's) */
	int threads, producers, consumers, samples;
	long partitions, count; /* count: stop after this many (0: no cap) */
	double dur;             /* seconds */
	int wake_consumers;
	bool scan;              /* apipush: check answers by scanning, no parse */
};

extern struct load_opts opt;

double now_s(void);
void fail(const char *what, const char *path, int err);
int put_file(const char *path, const char *buf, size_t n, int flags);
ssize_t get_file(const char *path, char *buf, size_t cap, int flags);
int run_wake(const char *payload, size_t len);
int run_apipush(const char *payload, size_t len);
int run_apipop(void);

#endif
