/*
 * order.c - read-your-writes across processes.  A message is published by
 * the RELEASE of its open file, which the kernel sends once the last
 * close(2) is done, but queues on /dev/fuse before the closing process
 * returns to user space: a command started after it sends its requests
 * behind that RELEASE.  libfuse's workers read requests in that order but
 * run them at once, so the reader's LOOKUP or READ could reach the engine
 * before the RELEASE handler submitted its publish.  Every request is read
 * here, through libfuse's custom I/O hook, under one lock that numbers the
 * RELEASEs; any other request waits, before libfuse dispatches it, until
 * every RELEASE read before it has put its publish in the engine's queue
 * (engine_submit marks it then, before it runs any batch itself), or
 * returned without one.  So the wait is a short handler's length, never a
 * round trip to the store.
 *
 * The lock is never held while a worker waits for a request: the device
 * is read without blocking, and an idle worker sleeps in epoll_wait on an
 * epoll instance of its own that watches the device with EPOLLEXCLUSIVE,
 * so the kernel wakes one idle worker a request.  (A worker that slept in
 * read(2) holding the lock made every request cost a second wake-up, of
 * the worker waiting for the lock, and two more context switches.)
 */
#include <errno.h>
#include <fcntl.h>
#include <linux/fuse.h>
#include <poll.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdlib.h>
#include <sys/epoll.h>
#include <sys/uio.h>
#include <time.h>
#include <unistd.h>

#include "fs.h"

/* RELEASEs in flight at once, at most: the kernel's max_background is 1024 */
#define ORDER_RING 4096

static pthread_mutex_t rd_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_mutex_t done_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t done_cond = PTHREAD_COND_INITIALIZER;
static uint64_t rel_read;       /* RELEASEs read so far (rd_lock) */
static uint64_t rel_low;        /* every RELEASE up to this one has run */
static bool ring[ORDER_RING];   /* ran, past rel_low (done_lock) */
static pthread_key_t cur_key;   /* this worker's RELEASE not yet marked */
static pthread_key_t ep_key;    /* this worker's epoll instance, fd + 1 */
static pthread_once_t key_once = PTHREAD_ONCE_INIT;
/* tests only: each RELEASE handler first sleeps this long, as a worker
 * the scheduler left behind would (QUEENFS_TEST_RELEASE_DELAY_MS) */
static long test_delay_ms;

static void
mark(uint64_t seq)
{
	pthread_mutex_lock(&done_lock);
	ring[seq % ORDER_RING] = true;
	while (ring[(rel_low + 1) % ORDER_RING]) {
		ring[(rel_low + 1) % ORDER_RING] = false;
		rel_low++;
	}
	pthread_cond_broadcast(&done_cond);
	pthread_mutex_unlock(&done_lock);
}

/* A worker that libfuse retires marks the RELEASE it still held. */
static void
cur_destroy(void *v)
{
	mark((uint64_t)(uintptr_t)v);
}

static void
ep_destroy(void *v)
{
	close((int)(uintptr_t)v - 1);
}

static void
key_init(void)
{
	pthread_key_create(&cur_key, cur_destroy);
	pthread_key_create(&ep_key, ep_destroy);
}

void
order_test_delay(void)
{
	struct timespec ts;

	if (test_delay_ms <= 0)
		return;
	ts.tv_sec = test_delay_ms / 1000;
	ts.tv_nsec = test_delay_ms % 1000 * 1000000L;
	nanosleep(&ts, NULL);
}

void
order_release_done(void)
{
	void *v;

	pthread_once(&key_once, key_init);
	if ((v = pthread_getspecific(cur_key)) != NULL) {
		pthread_setspecific(cur_key, NULL);
		mark((uint64_t)(uintptr_t)v);
	}
}

static void
unlock(void *m)
{
	pthread_mutex_unlock(m);
}

/*
 * One read of the device, which does not block (order_start): the number
 * of a RELEASE, or the last one read before any other request, is taken
 * with the read, under the lock.  libfuse cancels its idle workers at
 * exit; the cleanup handler gives the lock back.
 */
static ssize_t
read_one(int fd, void *buf, size_t len, uint64_t *wait_for, int *err)
{
	const struct fuse_in_header *in = buf;
	ssize_t n;

	pthread_mutex_lock(&rd_lock);
	pthread_cleanup_push(unlock, &rd_lock);
	n = read(fd, buf, len);
	*err = errno;
	if (n >= (ssize_t)sizeof(*in) && in->opcode == FUSE_RELEASE)
		pthread_setspecific(cur_key, (void *)(uintptr_t)++rel_read);
	else if (n >= (ssize_t)sizeof(*in) && in->opcode != FUSE_INTERRUPT &&
	    in->opcode != FUSE_FORGET && in->opcode != FUSE_BATCH_FORGET)
		*wait_for = rel_read;
	pthread_cleanup_pop(1);
	return n;
}

/*
 * Sleep until the device has a request (or is gone), on this worker's
 * epoll instance: exclusive, so that a request wakes one idle worker, not
 * all.  Without one (no descriptor left, or a kernel without
 * EPOLLEXCLUSIVE), poll(2) does the same for every idle worker at once.
 */
static void
wait_ready(int fd)
{
	static atomic_bool no_excl; /* a kernel before 4.5 refused the flag */
	uintptr_t v = (uintptr_t)pthread_getspecific(ep_key);
	struct epoll_event ev = { .events = EPOLLIN | EPOLLEXCLUSIVE };
	struct pollfd pf = { .fd = fd, .events = POLLIN };
	int ep;

	if (v == 0 && !atomic_load(&no_excl) &&
	    (ep = epoll_create1(EPOLL_CLOEXEC)) >= 0) {
		if (epoll_ctl(ep, EPOLL_CTL_ADD, fd, &ev) == 0) {
			v = (uintptr_t)ep + 1;
			pthread_setspecific(ep_key, (void *)v);
		} else {
			if (errno == EINVAL)
				atomic_store(&no_excl, true);
			close(ep);
		}
	}
	if (v != 0 &&
	    (epoll_wait((int)v - 1, &ev, 1, -1) >= 0 || errno == EINTR))
		return;
	(void)poll(&pf, 1, -1);
}

static void
wait_low(uint64_t seq)
{
	pthread_mutex_lock(&done_lock);
	pthread_cleanup_push(unlock, &done_lock);
	while (rel_low < seq)
		pthread_cond_wait(&done_cond, &done_lock);
	pthread_cleanup_pop(1);
}

static ssize_t
order_read(int fd, void *buf, size_t len, void *userdata)
{
	uint64_t wait_for = 0;
	ssize_t n;
	int err;

	order_release_done();  /* the previous request's, if it was one */
	/* epoll_wait answers at once while a request waits: no read(2)
	 * that finds nothing before each sleep */
	do {
		wait_ready(fd);
		n = read_one(fd, buf, len, &wait_for, &err);
	} while (n < 0 && (err == EAGAIN || err == EINTR));
	if (wait_for)
		wait_low(wait_for);
	errno = err;
	return n;
}

static ssize_t
order_writev(int fd, struct iovec *iov, int count, void *userdata)
{
	return writev(fd, iov, count);
}

int
order_start(struct fuse_session *se)
{
	static const struct fuse_custom_io io = {
		.read = order_read,
		.writev = order_writev,
	};

	const char *d = getenv("QUEENFS_TEST_RELEASE_DELAY_MS");

	int fd = fuse_session_fd(se), fl;

	pthread_once(&key_once, key_init);
	test_delay_ms = d ? strtol(d, NULL, 10) : 0;
	/* no worker sleeps in read(2): they wait in wait_ready, unlocked */
	if ((fl = fcntl(fd, F_GETFL)) < 0 ||
	    fcntl(fd, F_SETFL, fl | O_NONBLOCK) < 0)
		return -errno;
	return fuse_session_custom_io(se, &io, fd);
}
