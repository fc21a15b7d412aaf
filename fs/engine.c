/*
 * engine.c - who runs the jobs, and when they are answered.  One thread at
 * a time holds the struct queen (the token).  A FUSE handler submits a job;
 * if nobody holds the token, the handler's own thread takes it and runs
 * every pending job as one queen_batch (group commit), then whatever
 * queued meanwhile, and gives it back: no hand-off to another thread when
 * the mount is quiet, one batch for many closes when it is busy.  The
 * engine thread takes the token for what nobody submits: readers of `next`
 * that wait (no worker is held), poll handles, and a one-second tick.
 *
 * At sync level full a batch commits without waiting for the disk; the
 * syncer thread then fsyncs the log once for everything committed so far
 * and only then answers the writes (early lock release: the next batch
 * runs while the disk works).  A pop that took a message whose push is
 * not yet synced is answered after that sync too (core names it:
 * queen_pop_ticket), so nobody is handed a message that a crash could
 * still take back.  Plain reads answer at once, as a filesystem shows
 * written data before it is synced.
 *
 * On a store shared by several mounts (PostgreSQL), what other daemons
 * commit that may let a waiting reader succeed is announced on
 * queen_event_fd, for the queues this mount watches (those its waiters
 * and poll handles wait on).  The engine thread sleeps in poll() on that
 * descriptor and on an eventfd that is kicked when it must wake sooner;
 * it takes the token to read the descriptor, and whoever ran a batch
 * that started or stopped watching a queue reads what the store received
 * meanwhile (poll() does not see what the store has read already), so a
 * submitter still runs its own job.
 * Each announcement wakes the waiters and poll handles of its queue like
 * a push through this mount.
 *
 * In a batch, the publishes go first, ordered by the row they lock
 * (lock_order), and a run of them into one partition is one call of the
 * store (job.run_many): on a server, a few round trips for all of them.
 *
 * On a shared store a second connection answers the jobs that only read
 * (job.reader: lookups, the reads of a message at open, the close's size
 * check), in the same way: whoever submits one while no reader runs
 * takes the readers' queue and runs it, one job after another.  They
 * neither wait behind the writer's batch nor add to its round trips.
 * What they see is committed: a write is answered only after its commit.
 * A push's close() returns before its publish commits: a lookup of its
 * name meanwhile (under either name of the default partition) goes to
 * the writer's queue, behind the publish (lookup_pending).
 */
#include <errno.h>
#include <poll.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <time.h>
#include <unistd.h>

#include "fs.h"

#define TICK_MS 1000

static struct {
	pthread_mutex_t mu;
	pthread_cond_t cv;      /* the engine thread: work, token, wake time */
	struct job *head, **tail;
	bool stop;
	bool busy;              /* a thread holds the token */
	bool want;              /* the engine thread waits for the token */
	int64_t wake_at;        /* when the engine thread must run */
	/* the syncer: writes answered once the log is on the disk */
	pthread_t sync_th;
	pthread_cond_t scv;
	struct job *unsynced, **unsynced_tail;
	uint64_t need, synced;  /* tickets: the highest due, the highest done */
	int sync_rc;            /* a failed sync's, for all held after it */
	uint64_t lost_upto;     /* tickets a lost connection left unsure */
	bool sync_stop, sync_logged;
	/* an event channel: the engine sleeps in poll(), kicked by kickfd */
	bool sleeping, kicked;
	int kickfd;
	pthread_t th;
	struct queen *q;
	/* below: the token holder's */
	struct job *waiters;
	struct handle *polls;
	/* publishes set aside for company (hold_take) */
	struct job *held, **held_tail;
	size_t held_n;
	int64_t held_until;      /* us, mono_us(): when they run anyway */
	int64_t pub_at, pub_gap; /* the last publish submitted, and the gap
				  * before it (E.mu) */
	int64_t hold_us, gap_us; /* the hold, and the gap below which
				  * publishes are a stream */
	uint64_t next_waiter_id;
	int64_t last_tick, poll_due_min;
	int evfd;               /* the store's, as last asked; -1: none now */
	atomic_bool ev_hup;     /* it broke (the engine's poll saw it) */
	int64_t ev_retry;       /* when to ask again after an error */
	bool ev_logged;
	bool events;           /* the store announces across mounts */
	bool ev_unread;        /* a watch since the last queen_events */
	struct watch *watches; /* the queues whose announcements we get */
	bool watch_logged;
	struct engine_counters c;
} E = { .mu = PTHREAD_MUTEX_INITIALIZER,
	.kickfd = -1,
	.evfd = -1,
	.held_tail = &E.held };

/* the readers' connection and its queue (NULL q: every job is E's) */
static struct {
	pthread_mutex_t mu;
	pthread_cond_t idle;
	struct job *head, **tail;
	bool busy;
	struct queen *q;
	uint64_t seen; /* the writer's commits its reads follow */
} R = { .mu = PTHREAD_MUTEX_INITIALIZER, .idle = PTHREAD_COND_INITIALIZER };

/* the writer's commits of writes so far: the readers' rows read ahead
 * before the last one are not answered from again */
static _Atomic uint64_t writer_commits;

/*
 * A queue whose announcements this mount receives: while a reader waits
 * on it or a poll handle watches it, and until the first tick at least
 * WATCH_LINGER_MS after the last one left (a consumer that loops on
 * `next` does not LISTEN and UNLISTEN at every message).
 */
#define WATCH_LINGER_MS 1000
struct watch {
	struct watch *next;
	int64_t seen;      /* when a reader last used it */
	int64_t failed_at; /* LISTEN failed then: not again this tick */
	bool on;           /* the store listens */
	char queue[];
};

struct ijob {
	struct job j;
	uint64_t id;
};

static void
job_free(struct job *j)
{
	free(j->notify);
	free(j->wait_queue);
	free(j->wait_group);
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

static void run_batch(struct job *list);
static struct job *hold_take(void);
static bool hold_due(void);
static int event_fd(int64_t now);
static void tend_waiters(int64_t now);
static int64_t next_wake(void);

static int64_t
mono_us(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000000 + ts.tv_nsec / 1000;
}

/*
 * Publishes held back.  On a shared store a commit costs round trips and
 * a flush on the server, and the publish of a RELEASE keeps nobody
 * waiting (close() returned once the spool held it: job.hold).  So such
 * publishes, when they come as a stream (each less than HOLD_GAP_US
 * after the one before), wait up to HOLD_US for others to share their
 * commit, and the pops that come meanwhile (job.pass) run first, on their
 * own, rather than behind them or in a batch they make longer.  Such a
 * pop takes a span only if it fills its batch (job.ahead: a publish held
 * could lengthen a shorter one, or keep a window open); one that takes
 * nothing so runs again behind the publishes (run_batch).  So a read of
 * `next` gets what it would have had with every push whose close()
 * returned before it in the store (order.c): those pushes are newer than
 * anything the store holds from this mount.  A lease is all a pop
 * commits, and nothing durable waits on it.  An ack does not pass them:
 * it may come from a process that pushed first (consume, produce, ack),
 * and it must not commit before that push.  Any other job (an ack, a
 * listing, the lookup of a name still pending, a transaction, a rename
 * that publishes) takes the held publishes along, ahead of it, in the
 * order they all came.  Nothing is held while a reader waits or a poll
 * handle watches on this mount: they wait for a push.  With the token
 * held (and E.mu for E.head).
 */
#define HOLD_US 2000
#define HOLD_GAP_US 1000
#define HOLD_MAX 64

static bool
hold_due(void)
{
	return E.held && (E.held_n >= HOLD_MAX || mono_us() >= E.held_until);
}

/* what to run next: the held publishes and the queue, or some of them;
 * NULL when nothing is queued or only publishes that wait */
static struct job *
hold_take(void)
{
	struct job *list, *j, *nx, *pubs = NULL, **pt = &pubs;
	struct job *rest = NULL, **rt = &rest;
	bool other = false, was = E.held != NULL;
	size_t n = 0;

	*E.held_tail = E.head;
	list = E.held;
	E.held = NULL;
	E.held_tail = &E.held;
	E.head = NULL;
	E.tail = &E.head;
	E.held_n = 0;
	if (!list || !R.q || E.stop || E.waiters || E.polls)
		return list;
	for (j = list; j; j = j->next) {
		n += j->hold;
		other = other || (!j->hold && !j->pass);
	}
	if (n && !was)
		E.held_until = mono_us() +
		    (E.pub_gap < E.gap_us ? E.hold_us : 0);
	if (!n || other || n >= HOLD_MAX || mono_us() >= E.held_until)
		return list; /* all at once, in the order they came */
	for (j = list; j; j = nx) {
		nx = j->next;
		if (j->hold) {
			*pt = j;
			pt = &j->next;
		} else {
			j->ahead = true;
			*rt = j;
			rt = &j->next;
		}
	}
	*pt = NULL;
	*rt = NULL;
	E.c.holds += !was;
	E.held = pubs;
	E.held_tail = pt;
	E.held_n = n;
	return rest;
}

/*
 * With E.mu and the token held: run what is queued, batch after batch,
 * then give the token back, telling the engine thread if it waits for it
 * or must now wake earlier (a reader parked with a deadline).
 */
static void
drain_locked(void)
{
	int64_t w;

	while (E.head || hold_due()) {
		struct job *list = hold_take();

		if (!list)
			break; /* publishes held: next_wake says when */
		pthread_mutex_unlock(&E.mu);
		run_batch(list);
		tend_waiters(fs_now());
		/* a watch (in those batches, or the waiters' retries) may
		 * have read announcements off the descriptor: poll() would
		 * not see them.  Those it wakes are due now (next_wake). */
		if (E.ev_unread)
			event_fd(fs_now());
		pthread_mutex_lock(&E.mu);
	}
	w = next_wake();
	if (w < E.wake_at || E.want) {
		if (w < E.wake_at)
			E.wake_at = w;
		pthread_cond_signal(&E.cv);
		kick_locked();
	}
	E.busy = false;
}

/* Queue j for the engine thread (or the token holder); never runs it. */
static void
post(struct job *j)
{
	j->next = NULL;
	pthread_mutex_lock(&E.mu);
	*E.tail = j;
	E.tail = &j->next;
	pthread_cond_signal(&E.cv);
	kick_locked();
	pthread_mutex_unlock(&E.mu);
}

/*
 * Run j on this thread if nobody holds the token, else queue it for the
 * holder.  On a shared store a batch waits on the server for a millisecond
 * or more: an event loop's thread (HTTP) does not, since the other
 * connections it serves would wait too; it hands j to the engine thread.
 */
static void finish(struct job *j);

/* Run j on the readers' connection now, or queue it for their runner. */
static void
reader_submit(struct job *j)
{
	struct job *list, *nx;

	j->next = NULL;
	pthread_mutex_lock(&R.mu);
	*R.tail = j;
	R.tail = &j->next;
	if (R.busy) {
		pthread_mutex_unlock(&R.mu);
		return;
	}
	R.busy = true;
	while ((list = R.head) != NULL) {
		R.head = NULL;
		R.tail = &R.head;
		pthread_mutex_unlock(&R.mu);
		for (; list; list = nx) {
			uint64_t c = atomic_load(&writer_commits);

			nx = list->next;
			if (c != R.seen) {
				queen_forget_reads(R.q);
				R.seen = c;
			}
			list->run(list, R.q);
			finish(list);
		}
		pthread_mutex_lock(&R.mu);
	}
	R.busy = false;
	pthread_cond_broadcast(&R.idle);
	pthread_mutex_unlock(&R.mu);
}

void
engine_submit(struct job *j)
{
	if (j->reader && !j->evloop && R.q) {
		reader_submit(j);
		return;
	}
	if (j->evloop && E.events) {
		post(j);
		return;
	}
	j->next = NULL;
	pthread_mutex_lock(&E.mu);
	*E.tail = j;
	E.tail = &j->next;
	if (j->hold) {
		int64_t t = mono_us();

		E.pub_gap = t - E.pub_at;
		E.pub_at = t;
	}
	/*
	 * A RELEASE's publish is in line now: a later request that could
	 * see it runs behind it here (a lookup of its name is sent here
	 * too, lookup_pending), so none need wait for its batch (order.c).
	 */
	order_release_done();
	if (!E.busy && !E.stop) {
		E.busy = true;
		drain_locked();
	}
	/* else the holder takes it before it lets go */
	pthread_mutex_unlock(&E.mu);
}

static void
finish(struct job *j)
{
	if (j->reply)
		j->reply(j);
	job_free(j);
}

static void wake_one(const char *queue, const char *group);

/* An interrupted waiter answers EINTR; any other request is left alone. */
static void
interrupt_run(struct job *j, struct queen *q)
{
	uint64_t id = ((struct ijob *)j)->id;

	for (struct job **pp = &E.waiters; *pp; pp = &(*pp)->next) {
		struct job *w = *pp;
		if (w->waiter_id == id) {
			*pp = w->next;
			/* it was to take what was announced: another may */
			if (w->due == 0)
				wake_one(w->wait_queue, w->wait_group);
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
	/* never run here: libfuse holds the request's lock around us */
	post(&ij->j);
}

/* Drop the waiter of that id (a client gone); nothing if it was answered. */
void
engine_interrupt(uint64_t waiter_id)
{
	struct ijob *ij = calloc(1, sizeof(*ij));

	if (!ij)
		return;
	ij->j.run = interrupt_run;
	ij->id = waiter_id;
	post(&ij->j);
}

/* queue has a reader now: receive its announcements (watch_flush) */
static void
watch_note(const char *queue)
{
	struct watch *w;
	size_t n;

	if (!E.events || !queue)
		return;
	for (w = E.watches; w; w = w->next) {
		if (strcmp(w->queue, queue) == 0) {
			w->seen = fs_now();
			/* a reader waits on it, so it exists now: try at once
			 * even if it did not a moment ago */
			if (!w->on)
				w->failed_at = 0;
			return;
		}
	}
	n = strlen(queue) + 1;
	/* without it the reader still retries when its due time comes */
	if (!(w = calloc(1, sizeof(*w) + n)))
		return;
	memcpy(w->queue, queue, n);
	w->seen = fs_now();
	w->next = E.watches;
	E.watches = w;
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
	watch_note(j->wait_queue);
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

static bool
same_group(const char *a, const char *b)
{
	return a == b || (a && b && strcmp(a, b) == 0);
}

/* Wake the first waiter of (queue, group) not woken yet, if any. */
static void
wake_one(const char *queue, const char *group)
{
	for (struct job *w = E.waiters; w; w = w->next) {
		if (w->due != 0 && strcmp(w->wait_queue, queue) == 0 &&
		    same_group(w->wait_group, group)) {
			w->due = 0;
			return;
		}
	}
}

/*
 * Another mount announced one partition of queue: at most one lease of it
 * per group is to be had, so one waiter of each group tries, not every
 * waiter of the queue; every poll handle is told (polling takes nothing).
 */
static void
notify_remote(const char *queue)
{
	const char *done[16];
	size_t nd = 0, i;

	for (struct job *w = E.waiters; w; w = w->next) {
		if (strcmp(w->wait_queue, queue) != 0)
			continue;
		for (i = 0; i < nd && !same_group(done[i], w->wait_group); i++)
			;
		if (i < nd)
			continue;
		/* past 16 groups on one queue, the rest all try */
		if (nd == sizeof(done) / sizeof(done[0])) {
			w->due = 0;
			continue;
		}
		done[nd++] = w->wait_group;
		wake_one(queue, w->wait_group);
	}
	for (struct handle *h = E.polls, *nx; h; h = nx) {
		nx = h->poll_next;
		if (strcmp(h->node->queue, queue) == 0)
			poll_fire(h);
	}
}

/*
 * Outside a batch: listen to the queues watch_note added.  What was
 * announced before the LISTEN was missed, so their readers try again.
 */
static void
watch_flush(void)
{
	int64_t now = fs_now();
	int rc;

	for (struct watch *w = E.watches; w; w = w->next) {
		if (w->on || now - w->failed_at < TICK_MS)
			continue;
		E.ev_unread = true;
		if ((rc = queen_event_watch(E.q, w->queue, true)) < 0) {
			w->failed_at = now;
			if (rc != -ENOENT && !E.watch_logged)
				fs_log("listening to queue %s: %s (%s); its "
				       "readers retry when due",
				    w->queue, queen_errmsg(E.q), strerror(-rc));
			E.watch_logged = rc != -ENOENT;
			continue;
		}
		w->on = true;
		if (rc > 0)
			notify_queue(w->queue);
	}
}

static bool
watch_used(const char *queue)
{
	for (struct job *w = E.waiters; w; w = w->next)
		if (strcmp(w->wait_queue, queue) == 0)
			return true;
	for (struct handle *h = E.polls; h; h = h->poll_next)
		if (strcmp(h->node->queue, queue) == 0)
			return true;
	return false;
}

/* At the tick: stop listening to the queues nobody waits on any more. */
static void
watch_sweep(int64_t now)
{
	struct watch *w, **pp;

	for (pp = &E.watches; (w = *pp);) {
		if (watch_used(w->queue))
			w->seen = now;
		if (now - w->seen < WATCH_LINGER_MS) {
			pp = &w->next;
			continue;
		}
		*pp = w->next;
		E.ev_unread = true;
		if (queen_event_watch(E.q, w->queue, false) < 0)
			fs_log("wake-ups of queue %s: %s", w->queue,
			    queen_errmsg(E.q));
		free(w);
	}
}

/*
 * After a commit that did not wait for the disk (ticket; 0 if it did):
 * the writes in later are answered once the log is synced up to their
 * ticket, by the syncer.  A durable write needs its own commit's.  A lazy
 * one (a pop) needs the sync of the pushes it hands out, if any is not yet
 * on the disk: core says which (queen_pop_ticket, kept in j->need).  What
 * needs nothing not yet synced is returned, for the caller to answer now.
 */
static struct job *
hold_for_sync(uint64_t ticket, struct job *later)
{
	struct job *now = NULL, **nt = &now, *j, *nx;
	bool held = false;

	pthread_mutex_lock(&E.mu);
	if (ticket > E.need)
		E.need = ticket;
	for (j = later; j; j = nx) {
		nx = j->next;
		j->next = NULL;
		if (!j->lazy)
			j->ticket = ticket ? ticket : E.need;
		else
			j->ticket = j->need;
		if (j->ticket > E.need)
			E.need = j->ticket;
		if (j->ticket <= E.synced) {
			*nt = j;
			nt = &j->next;
		} else {
			*E.unsynced_tail = j;
			E.unsynced_tail = &j->next;
			held = true;
		}
	}
	if (held || E.need > E.synced)
		pthread_cond_signal(&E.scv);
	pthread_mutex_unlock(&E.mu);
	return now;
}

/*
 * Sync up to the highest ticket due, then answer every held job that
 * sync covers.  A job is held for a ticket no higher than E.need, so
 * while any is held a sync is due, and none waits for ever.
 */
static void *
syncer_main(void *arg)
{
	struct job *list, **lt, *j, *nx, **pp;
	uint64_t t, lost;
	int rc;

	(void)arg;
	pthread_mutex_lock(&E.mu);
	for (;;) {
		while (!E.sync_stop && E.need <= E.synced && !E.unsynced)
			pthread_cond_wait(&E.scv, &E.mu);
		if (E.need > E.synced) {
			t = E.need;
			pthread_mutex_unlock(&E.mu);
			rc = queen_sync(E.q, t);
			if (rc == -ENOTCONN)
				fs_log("syncing the log failed: the connection "
				       "to the store was lost; the writes it "
				       "covers fail with EIO");
			else if (rc < 0 && !E.sync_logged) {
				E.sync_logged = true;
				fs_log("syncing the log failed (%s): writes "
				    "stopped", strerror(-rc));
			}
			pthread_mutex_lock(&E.mu);
			E.synced = t;
			/* lost: what it covers is unsure, later syncs are not */
			if (rc == -ENOTCONN)
				E.lost_upto = t;
			else if (rc < 0)
				E.sync_rc = rc;
		}
		/* take what the sync covers; the rest waits for the next */
		list = NULL;
		lt = &list;
		for (pp = &E.unsynced; *pp;) {
			j = *pp;
			if (j->ticket <= E.synced) {
				*pp = j->next;
				j->next = NULL;
				*lt = j;
				lt = &j->next;
			} else {
				pp = &j->next;
			}
		}
		E.unsynced_tail = pp;
		rc = E.sync_rc;
		lost = E.lost_upto;
		if (!list && E.sync_stop && E.need <= E.synced)
			break;
		pthread_mutex_unlock(&E.mu);
		for (j = list; j; j = nx) {
			nx = j->next;
			if (rc < 0 && j->rc >= 0)
				j->rc = rc == -ENOSPC ? -ENOSPC : -EIO;
			else if (j->ticket <= lost && j->rc >= 0)
				j->rc = -EIO;
			finish(j);
		}
		pthread_mutex_lock(&E.mu);
	}
	pthread_mutex_unlock(&E.mu);
	return NULL;
}

struct ranked {
	struct job *j;
	size_t at;
};

static int
by_lock(const void *a, const void *b)
{
	const struct ranked *x = a, *y = b;
	int c = x->j->lock_cmp(x->j, y->j);

	return c ? c : x->at < y->at ? -1 : 1;
}

/*
 * The jobs that lock rows held until the commit (publishes: their
 * partition's) go first, in one order every daemon keeps, so that two
 * daemons' batches never wait for each other in a ring (a deadlock,
 * which PostgreSQL breaks by failing one).  Among jobs of one row the
 * order they came in stays.  Every job of a batch was submitted before
 * any was answered, so any order of them is one they could have had.
 */
static struct job *
lock_order(struct job *list)
{
	struct ranked *r;
	struct job *j, *rest = NULL, **rt = &rest, *out = NULL, **ot = &out;
	size_t n = 0, k = 0;

	for (j = list; j; j = j->next)
		n += j->lock_cmp != NULL;
	if (n < 2 || !(r = malloc(n * sizeof(*r))))
		return list;
	for (j = list; j; j = j->next) {
		if (j->lock_cmp) {
			r[k].j = j;
			r[k].at = k;
			k++;
		} else {
			*rt = j;
			rt = &j->next;
		}
	}
	*rt = NULL;
	qsort(r, n, sizeof(*r), by_lock);
	for (k = 0; k < n; k++) {
		*ot = r[k].j;
		ot = &r[k].j->next;
	}
	*ot = rest;
	free(r);
	return out;
}

/* the times a job is run again after a deadlock, before it fails */
#define REDO_MAX 4

static bool
can_redo(const struct job *j)
{
	return j->redo && j->tries < REDO_MAX;
}

bool
engine_will_redo(const struct job *j)
{
	return can_redo(j);
}

/* whether the jobs from j on may wait for another batch again */
static bool
may_defer(const struct job *j)
{
	for (; j; j = j->next)
		if (j->tries >= REDO_MAX)
			return false;
	return true;
}

/* what run and the batch set, undone for the next run */
static void
redo_reset(struct job *j)
{
	free(j->notify);
	j->notify = NULL;
	j->rc = 0;
	j->wait = j->ahead = j->empty = false;
	j->need = j->ticket = 0;
	j->next = NULL;
	j->tries++;
}

/*
 * What a write of a batch whose commit failed answers: a full disk is
 * worth saying (the writer may free space); a deadlock only says that
 * the job can run again.
 */
static int
commit_lost(const struct job *j, int crc)
{
	if (crc == -ENOSPC)
		return -ENOSPC;
	return crc == -EBUSY && can_redo(j) ? -EBUSY : -EIO;
}

static void
run_batch(struct job *list)
{
	struct queen *q = E.q;
	char why[256];
	bool failed = queen_failed(q, why, sizeof(why)), durable = false;
	bool writes = false, again_ok = true;
	int brc, crc = 0;
	uint64_t n = 0, ticket = 0;
	struct job *j, *nx, *later = NULL, **lt = &later;
	struct job *again = NULL, **at = &again;
	struct job *redo = NULL, **rt = &redo, *unrun = NULL, *last = NULL;
	size_t nredo = 0;
	bool busy = false;

	list = lock_order(list);
	/* a batch of leases and reads alone need not wait for the disk,
	 * and one of reads alone needs no transaction of its own */
	for (j = list; j; j = j->next) {
		durable = durable || (j->write && !j->lazy);
		writes = writes || j->write;
		/* each job will run again if the commit fails with EBUSY,
		 * and it is the first time for each: the store may then
		 * check rows at the commit rather than lock them as read */
		again_ok = again_ok && j->redo && j->tries == 0;
	}
	if (!writes)
		brc = 1;
	else if (durable)
		brc = queen_batch_begin(q,
		    QUEEN_BATCH_DEFERRED | (again_ok ? QUEEN_BATCH_REDO : 0));
	else
		brc = queen_batch_begin(q,
		    QUEEN_BATCH_LAZY | (again_ok ? QUEEN_BATCH_REDO : 0));

	for (j = list; j; j = nx) {
		size_t k = 1;

		/* a run of jobs that go to the store as one call */
		nx = j->next;
		if (j->run_many && !failed && brc >= 0)
			for (; nx && nx->run_many == j->run_many; nx = nx->next)
				k++;
		n += k;
		for (struct job *r = j; r != nx; r = r->next)
			r->wait = false;
		if (j->write && (failed || brc < 0)) {
			j->rc = -EIO;
			continue;
		}
		if (k > 1)
			j->run_many(j, k, q);
		else
			j->run(j, q);
		for (struct job *r = j; r != nx; r = r->next) {
			r->need = queen_pop_ticket(q);
			busy = busy || (r->rc == -EBUSY && brc == 0);
			last = r;
		}
		/*
		 * One that will run again (or a call that met a write of
		 * one that failed late, which fails the batch): what comes
		 * after it waits for it, unrun, so that a read or an ack of
		 * the same producer, a later put of the same key, does not
		 * overtake it.  A job left unrun REDO_MAX times runs on.
		 */
		if (busy && may_defer(nx)) {
			last->next = NULL;
			unrun = nx;
			break;
		}
	}
	if (brc < 0 && !failed)
		fs_log("cannot start a batch of %llu requests: %s",
		    (unsigned long long)n, queen_errmsg(q));
	if (brc == 0 && (crc = queen_batch_commit(q)) < 0) {
		fs_log("commit of %llu requests failed: %s",
		    (unsigned long long)n, queen_errmsg(q));
		queen_batch_rollback(q);
		E.c.commit_failures++;
		/* all of it rolled back: a write refused (or failed, the
		 * transaction aborted) may run again too */
		for (j = list; j; j = j->next)
			if (j->write &&
			    (j->rc == 0 ||
				(crc == -EBUSY && can_redo(j) &&
				    j->rc != -EAGAIN)))
				j->rc = commit_lost(j, crc);
	} else if (brc == 0) {
		ticket = queen_sync_ticket(q);
		atomic_fetch_add(&writer_commits, 1);
	}
	if (!failed && queen_failed(q, why, sizeof(why)))
		fs_log("%s", why);      /* once: from now on writes fail */
	if (brc == 0) {
		E.c.commits++;
		E.c.commit_jobs += n;
		if (n > E.c.commit_max)
			E.c.commit_max = n;
	}
	for (j = list; j; j = j->next)
		if (j->notify && j->rc == 0)
			notify_queue(j->notify[0] ? j->notify : NULL);
	for (j = list; j; j = nx) {
		nx = j->next;
		if (j->rc == -EBUSY && can_redo(j)) {
			redo_reset(j);
			*rt = j;
			rt = &j->next;
			nredo++;
		} else if (j->ahead && j->empty && E.held && crc == 0) {
			/* it may want a publish held back: again, behind them */
			j->pass = j->ahead = j->empty = j->wait = false;
			j->rc = 0;
			j->next = NULL;
			*at = j;
			at = &j->next;
		} else if (j->wait && crc == 0) {
			j->ahead = false;
			park(j);
		} else if (j->write) {
			/* settled here, before a sync lets another batch run */
			if (j->rc != 0 && j->failed)
				j->failed(j);
			j->next = NULL;
			*lt = j;
			lt = &j->next;
		} else {
			finish(j);
		}
	}
	for (j = hold_for_sync(ticket, later); j; j = nx) {
		nx = j->next;
		finish(j);
	}
	if (again) {
		pthread_mutex_lock(&E.mu);
		*at = E.head;
		if (!E.head)
			E.tail = at;
		*E.held_tail = again;
		E.head = E.held;
		E.held = NULL;
		E.held_tail = &E.held;
		E.held_n = 0;
		pthread_mutex_unlock(&E.mu);
	}
	if (redo || unrun) {
		/* ahead of all that came after them, the batch's unrun jobs
		 * first (nothing is held now: a batch that held publishes
		 * back ran only pops) */
		if (nredo)
			fs_log("%zu writes rolled back by a deadlock, a lock "
			       "timeout or a serialization failure: run again",
			    nredo);
		*rt = unrun;
		while (*rt) {
			(*rt)->tries++;
			rt = &(*rt)->next;
		}
		pthread_mutex_lock(&E.mu);
		*rt = E.head;
		if (!E.head)
			E.tail = rt;
		E.head = redo;
		E.c.redos += nredo;
		pthread_mutex_unlock(&E.mu);
	}
	watch_flush();
}

static void
maintain(void)
{
	struct queen *q = E.q;
	char why[256];
	bool more = true;
	ssize_t rows = 0, r = 0;

	if (queen_failed(q, why, sizeof(why)) ||
	    queen_batch_begin(q, QUEEN_BATCH_DEFERRED) < 0)
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
		atomic_fetch_add(&writer_commits, 1);
	/* nobody waits for this one: a crash before the sync loses a
	 * timer's push and its removal together, and it fires later (a
	 * pop of what it pushed waits for the sync, as for any push) */
	if (rows > 0)   /* an idle tick wrote nothing: no fsync for it */
		hold_for_sync(queen_sync_ticket(q), NULL);
	/* the store's checkpointer copies the log beside the writer every
	 * 1000 pages; a quiet mount's last pages go once a second */
	if ((r = queen_checkpoint(q)) < 0) /* why writes stopped */
		fs_log("%s", queen_failed(q, why, sizeof(why)) ? why :
		    queen_errmsg(q));
	else if (r > 0)
		fs_log("the disk was full: the store's write-ahead log was "
		       "copied and cut to nothing, to give its space back");
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
				E.c.retries++;
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

	if (E.held) {
		int64_t d = fs_now() + (E.held_until - mono_us() + 999) / 1000;

		if (d < t)
			t = d;
	}
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
event_cb(void *arg, const char *queue, int64_t part_id)
{
	(void)arg;
	if (part_id > 0) {
		notify_remote(queue);
		return 0;
	}
	/* a seek, or the queue's deletion: one made again under its name
	 * is another channel, so ask again what to listen to */
	for (struct watch *w = E.watches; w; w = w->next)
		if (strcmp(w->queue, queue) == 0)
			w->on = false;
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
 * it already.  When it changed, announcements may have been lost in
 * between: every waiter tries again once.  A store that listens again
 * under the same number says so itself, in queen_events (queen.h).
 */
static int
event_fd(int64_t now)
{
	int fd, rc;

	/* the descriptor broke under the engine's poll: ask again at once,
	 * and retry waiters */
	if (atomic_exchange(&E.ev_hup, false))
		E.evfd = -2;
	if (E.evfd < 0 && now < E.ev_retry)
		return -1;
	if ((fd = queen_event_fd(E.q)) < 0) {
		event_lost(fd, now);
		return -1;
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
	E.ev_unread = false;
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

	/* with the token: the store's connection, the waiters */
	E.busy = true;
	pthread_mutex_unlock(&E.mu);
	now = fs_now();
	fd = event_fd(now);
	wake = next_wake();
	if (fd < 0 && wake > E.ev_retry && E.ev_retry > now)
		wake = E.ev_retry;
	pthread_mutex_lock(&E.mu);
	E.busy = false;
	/* a token holder that parks a reader due sooner kicks the poll */
	E.wake_at = wake;
	/* draining may have made waiters due: then no sleep at all */
	if (wake <= now || E.head || E.stop)
		return;
	p[0] = (struct pollfd){ .fd = E.kickfd, .events = POLLIN };
	if (fd >= 0)
		p[nfds++] = (struct pollfd){ .fd = fd, .events = POLLIN };
	E.sleeping = true;
	E.kicked = false;
	pthread_mutex_unlock(&E.mu);
	if (poll(p, (nfds_t)nfds, (int)(wake > now ? wake - now : 0)) > 0 &&
	    nfds > 1 && (p[1].revents & (POLLERR | POLLHUP | POLLNVAL)))
		atomic_store(&E.ev_hup, true); /* see event_fd */
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
	int64_t now;

	(void)arg;
	pthread_mutex_lock(&E.mu);
	for (;;) {
		struct job *list;
		bool stop;

		for (;;) {
			if (E.busy) {
				E.want = true;
				pthread_cond_wait(&E.cv, &E.mu);
				continue;
			}
			if (E.head || E.stop || fs_now() >= E.wake_at)
				break;
			if (E.kickfd >= 0) {
				event_wait(E.wake_at);
			} else {
				struct timespec ts = {
					.tv_sec = E.wake_at / 1000,
					.tv_nsec = (E.wake_at % 1000) * 1000000,
				};
				pthread_cond_timedwait(&E.cv, &E.mu, &ts);
			}
		}
		E.want = false;
		E.busy = true;
		list = hold_take();
		stop = E.stop;
		pthread_mutex_unlock(&E.mu);
		if (list) {
			run_batch(list);
		} else if (stop) {
			pthread_mutex_lock(&E.mu);
			E.busy = false;
			break;
		}
		now = fs_now();
		if (now - E.last_tick >= TICK_MS) {
			E.last_tick = now;
			maintain();
			watch_sweep(now);
			watch_flush();
			stage_replay(E.q);
			pend_sweep(now);
			note_sweep(now);
		}
		tend_waiters(now);
		pthread_mutex_lock(&E.mu);
		E.wake_at = INT64_MAX;   /* drain_locked sets the next one */
		drain_locked();
	}
	pthread_mutex_unlock(&E.mu);
	while (E.waiters) {
		struct job *w = E.waiters;
		E.waiters = w->next;
		w->rc = -EINTR;
		finish(w);
	}
	while (E.polls)
		engine_poll_drop(E.polls);
	while (E.watches) {
		struct watch *w = E.watches;
		E.watches = w->next;
		free(w);
	}
	return NULL;
}

int
engine_start(struct queen *q, struct queen *rq)
{
	pthread_condattr_t ca;
	int rc = queen_event_fd(q);
	const char *t;

	E.q = q;
	R.q = rq;
	R.tail = &R.head;
	E.tail = &E.head;
	E.unsynced_tail = &E.unsynced;
	E.last_tick = fs_now();
	E.wake_at = E.last_tick + TICK_MS;
	E.hold_us = HOLD_US;
	E.gap_us = HOLD_GAP_US;
	/* tests: every publish waits this long for company */
	if ((t = getenv("QUEENFS_TEST_PUBLISH_HOLD_MS")) && atoi(t) > 0) {
		E.hold_us = (int64_t)atoi(t) * 1000;
		E.gap_us = INT64_MAX;
	}
	/* SQLite: -ENOTSUP.  Another store announces what other mounts
	 * commit, on a descriptor the engine thread sleeps on */
	if (rc != -ENOTSUP &&
	    (E.kickfd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC)) < 0)
		fs_log("no eventfd (%s): no wake-ups from other mounts",
		    strerror(errno));
	else if (rc < 0 && rc != -ENOTSUP)
		event_lost(rc, fs_now());
	E.events = rc != -ENOTSUP && E.kickfd >= 0;
	pthread_condattr_init(&ca);
	pthread_condattr_setclock(&ca, CLOCK_REALTIME);
	pthread_cond_init(&E.cv, &ca);
	pthread_condattr_destroy(&ca);
	pthread_cond_init(&E.scv, NULL);
	if ((rc = pthread_create(&E.sync_th, NULL, syncer_main, NULL)) != 0)
		return -rc;
	if ((rc = pthread_create(&E.th, NULL, engine_main, NULL)) != 0) {
		pthread_mutex_lock(&E.mu);
		E.sync_stop = true;
		pthread_cond_signal(&E.scv);
		pthread_mutex_unlock(&E.mu);
		pthread_join(E.sync_th, NULL);
		return -rc;
	}
	return 0;
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
	/* the syncer answers what it still holds before it goes */
	pthread_mutex_lock(&E.mu);
	E.sync_stop = true;
	pthread_cond_signal(&E.scv);
	pthread_mutex_unlock(&E.mu);
	pthread_join(E.sync_th, NULL);
	if (E.kickfd >= 0)
		close(E.kickfd);
	E.kickfd = -1;
	queen_close(E.q);
	E.q = NULL;
	/* the requests are over: a reader still running is answering */
	pthread_mutex_lock(&R.mu);
	while (R.busy)
		pthread_cond_wait(&R.idle, &R.mu);
	pthread_mutex_unlock(&R.mu);
	queen_close(R.q);
	R.q = NULL;
}

void
engine_poll_watch(struct handle *h, const char *queue,
    struct fuse_pollhandle *ph, int64_t due)
{
	if (h->ph && h->ph != ph)
		fuse_pollhandle_destroy(h->ph);
	h->ph = ph;
	h->poll_due = due;
	watch_note(queue);
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

/* counted after their commit, on whichever thread answers them */
static _Atomic uint64_t n_pushes, n_duplicates, n_acks;

void
engine_counters(struct engine_counters *out)
{
	*out = E.c;
	out->pushes = atomic_load(&n_pushes);
	out->duplicates = atomic_load(&n_duplicates);
	out->acks = atomic_load(&n_acks);
}

/* the part of the round trips the readers' connection made */
uint64_t
engine_reader_round_trips(void)
{
	return R.q ? queen_round_trips(R.q) : 0;
}

void
engine_count_push(bool dup)
{
	atomic_fetch_add(&n_pushes, 1);
	if (dup)
		atomic_fetch_add(&n_duplicates, 1);
}

void
engine_count_ack(void)
{
	atomic_fetch_add(&n_acks, 1);
}

void
engine_count_pop(void)
{
	E.c.pops++;
}
