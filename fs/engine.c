/*
 * engine.c - the one thread that owns the struct queen.  FUSE handlers
 * submit jobs; this thread takes every pending job, runs them all inside
 * one queen_batch (group commit: one fsync for many closes), then replies.
 * It also keeps the readers of `next` that wait (no worker is held), the
 * poll handles of open `next` files, and a one-second maintenance tick.
 * Knows nothing of what a job does: that is in the ops files.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "fs.h"

#define TICK_MS 1000

static struct {
	pthread_mutex_t mu;
	pthread_cond_t cv;
	struct job *head, **tail;
	bool stop;
	pthread_t th;
	struct queen *q;
	/* below: engine thread only */
	struct job *waiters;
	struct handle *polls;
	uint64_t next_waiter_id;
	int64_t last_tick, poll_due_min;
	struct engine_counters c;
} E = { .mu = PTHREAD_MUTEX_INITIALIZER };

struct ijob {
	struct job j;
	uint64_t id;
};

static void
job_free(struct job *j)
{
	free(j->notify);
	free(j->wait_queue);
	free(j);
}

void
engine_submit(struct job *j)
{
	j->next = NULL;
	pthread_mutex_lock(&E.mu);
	*E.tail = j;
	E.tail = &j->next;
	pthread_cond_signal(&E.cv);
	pthread_mutex_unlock(&E.mu);
}

static void
finish(struct job *j)
{
	if (j->reply)
		j->reply(j);
	job_free(j);
}

/* An interrupted waiter answers EINTR; any other request is left alone. */
static void
interrupt_run(struct job *j, struct queen *q)
{
	uint64_t id = ((struct ijob *)j)->id;

	for (struct job **pp = &E.waiters; *pp; pp = &(*pp)->next) {
		struct job *w = *pp;
		if (w->waiter_id == id) {
			*pp = w->next;
			w->rc = -EINTR;
			finish(w);
			E.c.waiters--;
			return;
		}
	}
}

/* May run on any thread, even inside fuse_req_interrupt_func. */
static void
interrupt_cb(fuse_req_t req, void *data)
{
	struct ijob *ij = calloc(1, sizeof(*ij));

	if (!ij)
		return;
	ij->j.run = interrupt_run;
	ij->id = (uint64_t)(uintptr_t)data;
	engine_submit(&ij->j);
}

static void
park(struct job *j)
{
	bool first = j->waiter_id == 0;

	if (j->deadline <= fs_now()) {
		j->rc = -ENODATA;
		finish(j);
		return;
	}
	if (first)
		j->waiter_id = ++E.next_waiter_id;
	j->next = E.waiters;
	E.waiters = j;
	E.c.waiters++;
	if (first)
		fuse_req_interrupt_func(j->req, interrupt_cb,
		    (void *)(uintptr_t)j->waiter_id);
}

static void
poll_fire(struct handle *h)
{
	fuse_lowlevel_notify_poll(h->ph);
	engine_poll_drop(h);
}

/* Something may have become available in queue (NULL: anywhere). */
static void
notify_queue(const char *queue)
{
	for (struct job *w = E.waiters; w; w = w->next)
		if (!queue || strcmp(w->wait_queue, queue) == 0)
			w->due = 0;
	for (struct handle *h = E.polls, *nx; h; h = nx) {
		nx = h->poll_next;
		if (!queue || strcmp(h->node->queue, queue) == 0)
			poll_fire(h);
	}
}

static void
run_batch(struct job *list)
{
	struct queen *q = E.q;
	char why[256];
	bool failed = queen_failed(q, why, sizeof(why)), durable = false;
	int brc, crc = 0;
	uint64_t n = 0;
	struct job *j, *nx;

	/* a batch of leases and reads alone need not wait for the disk */
	for (j = list; j; j = j->next)
		durable = durable || (j->write && !j->lazy);
	brc = durable ? queen_batch_begin(q) : queen_batch_begin_lazy(q);

	for (j = list; j; j = j->next) {
		n++;
		j->wait = false;
		if (j->write && (failed || brc < 0)) {
			j->rc = -EIO;
			continue;
		}
		j->run(j, q);
	}
	if (brc == 0 && (crc = queen_batch_commit(q)) < 0) {
		fs_log("commit of %llu requests failed: %s",
		    (unsigned long long)n, queen_errmsg(q));
		queen_batch_rollback(q);
		E.c.commit_failures++;
		for (j = list; j; j = j->next)
			if (j->write && j->rc == 0)
				j->rc = -EIO;
	}
	E.c.commits++;
	E.c.commit_jobs += n;
	if (n > E.c.commit_max)
		E.c.commit_max = n;
	for (j = list; j; j = j->next)
		if (j->notify && j->rc == 0)
			notify_queue(j->notify[0] ? j->notify : NULL);
	for (j = list; j; j = nx) {
		nx = j->next;
		if (j->wait && crc == 0)
			park(j);
		else
			finish(j);
	}
}

static void
maintain(void)
{
	struct queen *q = E.q;
	char why[256];
	bool more = true;
	ssize_t rows = 0, r = 0;

	if (queen_failed(q, why, sizeof(why)) || queen_batch_begin(q) < 0)
		return;
	for (int i = 0; i < 16 && more && r >= 0; i++)
		if ((r = queen_maintain(q, &more)) > 0)
			rows += r;
	if (r < 0)
		fs_log("maintenance: %s", queen_errmsg(q));
	if (queen_batch_commit(q) < 0) {
		fs_log("maintenance commit failed: %s", queen_errmsg(q));
		queen_batch_rollback(q);
		return;
	}
	if (rows > 0)
		notify_queue(NULL);
}

/* Retry the waiters that may now succeed; fail the ones out of time. */
static void
tend_waiters(int64_t now)
{
	struct job *retry = NULL, **rt = &retry;

	for (struct job **pp = &E.waiters; *pp;) {
		struct job *w = *pp;
		if (w->deadline <= now || w->due <= now) {
			*pp = w->next;
			E.c.waiters--;
			w->next = NULL;
			if (w->due <= now) {
				*rt = w;
				rt = &w->next;
			} else {
				w->rc = -ENODATA;
				finish(w);
			}
		} else {
			pp = &w->next;
		}
	}
	if (retry)
		run_batch(retry);
	for (struct handle *h = E.polls, *nx; h; h = nx) {
		nx = h->poll_next;
		if (h->poll_due <= now)
			poll_fire(h);
	}
}

static int64_t
next_wake(void)
{
	int64_t t = E.last_tick + TICK_MS;

	for (struct job *w = E.waiters; w; w = w->next) {
		if (w->deadline < t)
			t = w->deadline;
		if (w->due < t)
			t = w->due;
	}
	for (struct handle *h = E.polls; h; h = h->poll_next)
		if (h->poll_due < t)
			t = h->poll_due;
	return t;
}

static void *
engine_main(void *arg)
{
	for (;;) {
		struct job *list;
		bool stop;
		int64_t wake = next_wake(), now;

		pthread_mutex_lock(&E.mu);
		while (!E.head && !E.stop && (now = fs_now()) < wake) {
			struct timespec ts = {
				.tv_sec = wake / 1000,
				.tv_nsec = (wake % 1000) * 1000000,
			};
			pthread_cond_timedwait(&E.cv, &E.mu, &ts);
		}
		list = E.head;
		E.head = NULL;
		E.tail = &E.head;
		stop = E.stop;
		pthread_mutex_unlock(&E.mu);
		if (list)
			run_batch(list);
		else if (stop)
			break;
		now = fs_now();
		if (now - E.last_tick >= TICK_MS) {
			E.last_tick = now;
			maintain();
			pend_sweep(now);
			note_sweep(now);
		}
		tend_waiters(now);
	}
	while (E.waiters) {
		struct job *w = E.waiters;
		E.waiters = w->next;
		w->rc = -EINTR;
		finish(w);
	}
	while (E.polls)
		engine_poll_drop(E.polls);
	return NULL;
}

int
engine_start(struct queen *q)
{
	pthread_condattr_t ca;

	E.q = q;
	E.tail = &E.head;
	E.last_tick = fs_now();
	pthread_condattr_init(&ca);
	pthread_condattr_setclock(&ca, CLOCK_REALTIME);
	pthread_cond_init(&E.cv, &ca);
	pthread_condattr_destroy(&ca);
	return -pthread_create(&E.th, NULL, engine_main, NULL);
}

void
engine_stop(void)
{
	pthread_mutex_lock(&E.mu);
	E.stop = true;
	pthread_cond_signal(&E.cv);
	pthread_mutex_unlock(&E.mu);
	pthread_join(E.th, NULL);
	queen_close(E.q);
	E.q = NULL;
}

void
engine_poll_watch(struct handle *h, const char *queue,
    struct fuse_pollhandle *ph, int64_t due)
{
	if (h->ph && h->ph != ph)
		fuse_pollhandle_destroy(h->ph);
	h->ph = ph;
	h->poll_due = due;
	if (!h->polling) {
		h->poll_next = E.polls;
		E.polls = h;
		h->polling = true;
	}
}

void
engine_poll_drop(struct handle *h)
{
	if (h->ph)
		fuse_pollhandle_destroy(h->ph);
	h->ph = NULL;
	if (!h->polling)
		return;
	for (struct handle **pp = &E.polls; *pp; pp = &(*pp)->poll_next) {
		if (*pp == h) {
			*pp = h->poll_next;
			break;
		}
	}
	h->polling = false;
}

void
engine_counters(struct engine_counters *out)
{
	*out = E.c;
}

void
engine_count_push(bool dup)
{
	E.c.pushes++;
	if (dup)
		E.c.duplicates++;
}

void
engine_count_ack(void)
{
	E.c.acks++;
}

void
engine_count_pop(void)
{
	E.c.pops++;
}
