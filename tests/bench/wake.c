/*
 * wake.c - the wake-up latency of a blocked reader of `next`: a consumer
 * thread sits in read(2) of DIR/next, the producer pushes one file, and
 * the sample is the time from the producer's close(2) call to the return
 * of the consumer's read.  With -D the producer pushes into that directory
 * instead (the same queue through another mount).  Prints "P50_US P99_US
 * SAMPLES".
 */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "load.h"

static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t cv = PTHREAD_COND_INITIALIZER;
static int ready;               /* the consumer is about to block */
static _Atomic double t_close;  /* when the producer called close() */
static double *lat;
static int nlat;

static void *
consumer(void *arg)
{
	char path[8200], to[8200], buf[4096], *nl;
	ssize_t n;
	double t1;
	int i;

	(void)arg;
	for (i = 0; i < opt.samples; i++) {
		pthread_mutex_lock(&mu);
		ready = 1;
		pthread_cond_signal(&cv);
		pthread_mutex_unlock(&mu);
		snprintf(path, sizeof(path), "%s/next", opt.dir);
		n = get_file(path, buf, sizeof(buf) - 1, 0);
		t1 = now_s();
		if (n <= 0) {
			fail("read", path, n < 0 ? (int)-n : ENODATA);
			break;
		}
		lat[nlat++] = t1 - t_close;
		buf[n] = 0;
		if ((nl = strchr(buf, '\n')))
			*nl = 0;
		snprintf(path, sizeof(path), "%s/%s", opt.dir, buf);
		snprintf(to, sizeof(to), "%s/ack/%s", opt.dir,
		    strrchr(buf, '/') ? strrchr(buf, '/') + 1 : buf);
		if (rename(path, to) != 0) {
			fail("ack rename", path, errno);
			break;
		}
	}
	pthread_mutex_lock(&mu);
	ready = -1;
	pthread_cond_signal(&cv);
	pthread_mutex_unlock(&mu);
	return NULL;
}

static int
cmp(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return x < y ? -1 : x > y;
}

int
run_wake(const char *payload, size_t len)
{
	char path[4096];
	pthread_t th;
	int i, fd, r;

	lat = calloc(opt.samples, sizeof(*lat));
	if (!lat)
		return 1;
	pthread_create(&th, NULL, consumer, NULL);
	for (i = 0; i < opt.samples; i++) {
		pthread_mutex_lock(&mu);
		while (ready == 0)
			pthread_cond_wait(&cv, &mu);
		r = ready;
		ready = 0;
		pthread_mutex_unlock(&mu);
		if (r < 0)
			break;
		usleep(2000);   /* let the read reach the daemon and block */
		snprintf(path, sizeof(path), "%s/w%d-%d",
		    opt.push_dir ? opt.push_dir : opt.dir, (int)getpid(), i);
		fd = open(path, O_CREAT | O_EXCL | O_WRONLY, 0644);
		if (fd < 0 || write(fd, payload, len) != (ssize_t)len) {
			fail("push", path, errno);
			break;
		}
		t_close = now_s();
		if (close(fd) != 0) {
			fail("push close", path, errno);
			break;
		}
	}
	pthread_join(th, NULL);
	if (nlat == 0)
		return 1;
	qsort(lat, nlat, sizeof(*lat), cmp);
	printf("%.0f %.0f %d\n", lat[nlat / 2] * 1e6,
	    lat[(nlat * 99) / 100 < nlat ? (nlat * 99) / 100 : nlat - 1] * 1e6,
	    nlat);
	free(lat);
	return 0;
}
