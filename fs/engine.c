/*
 * engine.c - the one thread that owns the struct queen.  FUSE handlers
 * submit jobs; this thread takes every pending job, runs them all inside
 * one queen_batch (group commit: one fsync for many closes), then replies.
 * It also keeps the readers of `next` that wait (no worker is held), the
 * poll handles of open `next` files, and a one-second maintenance tick.
 * Knows nothing of what a job does: that is in the ops files.
 *
 * On a store shared by several mounts (PostgreSQL), pushes committed by
 * other daemons are announced on queen_event_fd: then the thread sleeps
 * in poll() on that descriptor and on an eventfd the submitters kick,
 * instead of on the condition variable, and each announcement wakes the
 * waiters and poll handles of its queue like a push through this mount.
 */
#include <errno.h>
#include <poll.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <time.h>
#include <unistd.h>

#include "fs.h"

#define TICK_MS 1000

static struct {
	pthread_mutex_t mu;
	pthread_cond_t cv;
	struct job *head, **tail;
	bool stop;
	/* an event channel: the engine sleeps in poll(), kicked by kickfd */
	bool sleeping, kicked;
	int kickfd;
	pthread_t th;
	struct queen *q;
	/* below: engine thread only */
	struct job *waiters;
	struct handle *polls;
	uint64_t next_waiter_id;
	int64_t last_tick, poll_due_min;
	int evfd;               /* the store's, as last asked; -1: none now */
	int64_t ev_retry;       /* when to ask again after an error */
	bool ev_logged;
	uint64_t ev_failures;   /* commit_failures when last asked */
	struct engine_counters c;
} E = { .mu = PTHREAD_MUTEX_INITIALIZER, .kickfd = -1, .evfd = -1 };

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

/* With E.mu held: the engine may sleep in poll() rather than on E.cv. */
static void
kick_locked(void)
{
	uint64_t one = 1;

	if (E.sleeping && !E.kicked) {
		E.kicked = true;
		if (write(E.kickfd, &one, sizeof(one)) < 0) {
			/* the counter is full, so it is readable anyway */
		}
	}
}

void
engine_submit(struct job *j)
{
	j->next = NULL;
	pthread_mutex_lock(&E.mu);
	*E.tail = j;
	E.tail = &j->next;
	pthread_cond_signal(&E.cv);
	kick_locked();
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
		/* a full disk is worth saying: the writer may free space */
		for (j = list; j; j = j->next)
			if (j->write && j->rc == 0)
				j->rc = crc == -ENOSPC ? -ENOSPC : -EIO;
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

/* ---- pushes announced by other mounts on the same store ---- */

static int
event_cb(void *arg, const char *queue)
{
	(void)arg;
	notify_queue(queue);
	return 0;
}

static void
event_lost(int rc, int64_t now)
{
	if (!E.ev_logged)
		fs_log("wake-ups from other mounts: %s (%s); retrying",
		    queen_errmsg(E.q), strerror(-rc));
	E.ev_logged = true;
	E.evfd = -1;
	E.ev_retry = now + TICK_MS;
}

/*
 * The descriptor to poll, asked again every time (cheap: it can change
 * when the store reconnects), after draining what the store has read off
 * it already.  When it changed, or a commit failed (perhaps a reconnect
 * under the same number), announcements may have been lost in between:
 * every waiter tries again once.
 */
static int
event_fd(int64_t now)
{
	int fd, rc;

	if (E.evfd < 0 && now < E.ev_retry)
		return -1;
	if ((fd = queen_event_fd(E.q)) < 0) {
		event_lost(fd, now);
		return -1;
	}
	/* a failed commit may have been a lost connection, re-made since
	 * under the same descriptor number: retry the waiters too */
	if (E.c.commit_failures != E.ev_failures) {
		E.ev_failures = E.c.commit_failures;
		notify_queue(NULL);
	}
	if (fd != E.evfd) {
		if (E.ev_logged)
			fs_log("wake-ups from other mounts: listening again");
		E.ev_logged = false;
		E.evfd = fd;
		notify_queue(NULL);
	}
	if ((rc = queen_events(E.q, event_cb, NULL)) < 0) {
		event_lost(rc, now);
		return -1;
	}
	return fd;
}

/*
 * Sleep until a job, an announcement or wake; with E.mu held, as the
 * condition-variable wait, which it replaces when there is a channel.
 */
static void
event_wait(int64_t wake)
{
	struct pollfd p[2];
	int64_t now;
	uint64_t n;
	int fd, nfds = 1;

	pthread_mutex_unlock(&E.mu);
	now = fs_now();
	fd = event_fd(now);
	pthread_mutex_lock(&E.mu);
	/* draining may have made waiters due: then no sleep at all */
	if ((wake = next_wake()) <= now || E.head || E.stop)
		return;
	p[0] = (struct pollfd){ .fd = E.kickfd, .events = POLLIN };
	if (fd >= 0)
		p[nfds++] = (struct pollfd){ .fd = fd, .events = POLLIN };
	if (fd < 0 && wake > E.ev_retry && E.ev_retry > now)
		wake = E.ev_retry;
	E.sleeping = true;
	E.kicked = false;
	pthread_mutex_unlock(&E.mu);
	if (poll(p, (nfds_t)nfds, (int)(wake > now ? wake - now : 0)) > 0 &&
	    nfds > 1 && (p[1].revents & (POLLERR | POLLHUP | POLLNVAL)))
		E.evfd = -2;        /* ask again at once, and retry waiters */
	pthread_mutex_lock(&E.mu);
	E.sleeping = false;
	if (E.kicked && read(E.kickfd, &n, sizeof(n)) < 0) {
		/* EAGAIN: already drained */
	}
	E.kicked = false;
}

static void *
engine_main(void *arg)
{
	int rc = queen_event_fd(E.q);

	/* SQLite: -ENOTSUP, and the thread sleeps on E.cv alone */
	if (rc != -ENOTSUP &&
	    (E.kickfd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC)) < 0)
		fs_log("no eventfd (%s): no wake-ups from other mounts",
		    strerror(errno));
	else if (rc < 0 && rc != -ENOTSUP)
		event_lost(rc, fs_now());
	for (;;) {
		struct job *list;
		bool stop;
		int64_t wake = next_wake(), now;

		pthread_mutex_lock(&E.mu);
		if (E.kickfd >= 0) {
			if (!E.head && !E.stop && fs_now() < wake)
				event_wait(wake);
		} else {
			while (!E.head && !E.stop && (now = fs_now()) < wake) {
				struct timespec ts = {
					.tv_sec = wake / 1000,
					.tv_nsec = (wake % 1000) * 1000000,
				};
				pthread_cond_timedwait(&E.cv, &E.mu, &ts);
			}
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
	if (E.kickfd >= 0)
		close(E.kickfd);
	E.kickfd = -1;
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
	kick_locked();
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
