/*
 * ops_next.c - reading `next` pops, and poll() on it.  The first read of an
 * open handle pops once for the directory's group and keeps the answer in
 * the handle; later reads return the rest of it, then EOF.  An empty queue
 * parks the read with the engine (no worker is held) until a push, a due
 * time, the `wait` deadline (ENODATA) or an interrupt (EINTR).
 */
#include <errno.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fs.h"

struct pop_job {
	struct job j;
	struct handle *h;
	size_t size;
	off_t off;
	char *text;
	size_t len;
};

/*
 * One line per message, relative to the directory that holds `next`:
 * `leased/<lease>/<txid>`.  An auto-acked pop has no lease, so its lines
 * name the messages in the log instead: `partitions/<p>/<txid>` from the
 * queue dir, `../../partitions/<p>/<txid>` from groups/<g>/.
 */
static int
format_batch(const struct queen_batch *b, bool in_group, char **out,
    size_t *len)
{
	size_t cap = 0, at = 0;
	char *t = NULL;
	FILE *f = open_memstream(&t, &cap);

	if (!f)
		return -ENOMEM;
	for (size_t i = 0; i < b->n; i++) {
		char nm[NAME_MAX_BYTES + 1];

		if (txid_to_name(b->msgs[i].txid, nm, sizeof(nm)) < 0)
			snprintf(nm, sizeof(nm), "?");  /* only api/ reaches it */
		if (b->lease_id[0])
			fprintf(f, "leased/%s/%s\n", b->lease_id, nm);
		else
			fprintf(f, "%spartitions/%s/%s\n", in_group ? "../../" :
			    "", b->partition, nm);
	}
	if (fclose(f) != 0) {
		free(t);
		return -ENOMEM;
	}
	at = cap;
	*out = t;
	*len = at;
	return 0;
}

static void
pop_run(struct job *j, struct queen *q)
{
	struct pop_job *pj = (struct pop_job *)j;
	struct node *n = pj->h->node;
	struct queen_pop_req r = {
		.queue = n->queue,
		.group = n->group,
		.auto_ack = -1,
		.whole = j->ahead,
	};
	struct queen_batch *b = NULL;
	int64_t wait = 30;
	/* before the pop: an ack of its lease may start the moment it is
	 * committed, before the answer is kept */
	uint64_t epoch = queen_lease_epoch();

	/* no group is made here (open_store) */
	j->rc = queen_pop(q, &r, &b);
	j->empty = j->rc == -EAGAIN;
	if (j->rc == -EAGAIN && !pj->h->nonblock) {
		if (j->deadline == 0) {
			queen_config_get(q, n->queue, n->group, "wait", &wait);
			if (wait <= 0) {
				j->rc = -ENODATA;
				return;
			}
			j->deadline = fs_now() + wait * 1000;
			if (!(j->wait_queue = strdup(n->queue)) ||
			    (n->group && !(j->wait_group = strdup(n->group)))) {
				j->rc = -ENOMEM;
				j->empty = false; /* answered: not run again */
				return;
			}
		}
		/*
		 * A due time already past would retry at once, forever: core
		 * may say "now" for a group with nothing left.  Retry on
		 * pushes and acks, and otherwise once a second.
		 */
		j->due = queen_next_due(q, n->queue, n->group);
		if (j->due <= queen_now(q))
			j->due = queen_now(q) + 1000;
		j->wait = true;
		return;
	}
	if (j->rc < 0) {
		if (j->rc != -EAGAIN)
			fs_log("pop %s%s%s: %s (%s)", n->queue,
			    n->group ? "/groups/" : "", n->group ? n->group : "",
			    queen_errmsg(q), errname(j->rc));
		return;
	}
	engine_count_pop();
	if (b->lease_id[0])
		lease_seen(b->lease_id, b->n ? b->msgs[0].offset : 0);
	j->rc = format_batch(b, n->group != NULL, &pj->text, &pj->len);
	lease_keep(b, epoch); /* what reading the lease back asks for */
}

static void
pop_reply(struct job *j)
{
	struct pop_job *pj = (struct pop_job *)j;
	struct handle *h = pj->h;

	pthread_mutex_lock(&fs_lock);
	h->popping = false;
	if (j->rc >= 0) {
		h->text = pj->text;
		h->len = pj->len;
		h->loaded = true;
	}
	pthread_mutex_unlock(&fs_lock);
	if (j->rc < 0) {
		free(pj->text);
		fuse_reply_err(j->req, -j->rc);
	} else {
		reply_slice(j->req, h->text, h->len, pj->size, pj->off);
	}
	handle_put(h);
}

void
next_read(fuse_req_t req, struct handle *h, size_t size, off_t off)
{
	struct pop_job *pj;
	bool loaded, busy;

	pthread_mutex_lock(&fs_lock);
	loaded = h->loaded;
	busy = !loaded && h->popping;
	if (!loaded && !busy)
		h->popping = true;
	pthread_mutex_unlock(&fs_lock);
	if (loaded || busy) {
		/* one descriptor, one pop.  The kernel already serializes
		 * reads of one open file (f_pos lock); this holds even if
		 * it did not */
		if (busy)
			fuse_reply_err(req, EBUSY);
		else
			reply_slice(req, h->text, h->len, size, off);
		handle_put(h);
		return;
	}
	if (!(pj = job_new(sizeof(*pj), pop_run, pop_reply, req))) {
		pthread_mutex_lock(&fs_lock);
		h->popping = false;
		pthread_mutex_unlock(&fs_lock);
		fuse_reply_err(req, ENOMEM);
		handle_put(h);
		return;
	}
	pj->j.write = true;
	pj->j.lazy = true;  /* a lease lost in a crash is granted again */
	pj->j.pass = true;  /* it sees what it needs: see hold_take */
	pj->h = h;
	pj->size = size;
	pj->off = off;
	engine_submit(&pj->j);
}

struct poll_job {
	struct job j;
	struct handle *h;
	struct fuse_pollhandle *ph;
	unsigned revents;
};

/*
 * queen_next_due may answer "now" for a group whose cursors are all at the
 * tail; readable also needs something retained past the cursors.
 */
static bool
has_depth(struct queen *q, struct node *n)
{
	struct queen_stats st;

	return queen_stats_get(q, n->queue, n->group, &st) != 0 ||
	    st.depth > 0;
}

static void
poll_run(struct job *j, struct queen *q)
{
	struct poll_job *pj = (struct poll_job *)j;
	struct node *n = pj->h->node;
	int64_t due;

	if (pj->h->released) {
		pj->revents = 0;
	} else if (pj->h->loaded) {
		pj->revents = POLLIN | POLLRDNORM;
	} else if ((due = queen_next_due(q, n->queue, n->group)) <=
	    queen_now(q) && has_depth(q, n)) {
		pj->revents = POLLIN | POLLRDNORM;
	} else if (pj->ph) {
		engine_poll_watch(pj->h, n->queue, pj->ph, due);
		pj->ph = NULL;
	}
	if (pj->ph)
		fuse_pollhandle_destroy(pj->ph);
}

static void
poll_reply(struct job *j)
{
	struct poll_job *pj = (struct poll_job *)j;

	fuse_reply_poll(j->req, pj->revents);
	handle_put(pj->h);
}

void
op_poll(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi,
    struct fuse_pollhandle *ph)
{
	struct handle *h = (struct handle *)(uintptr_t)fi->fh;
	struct poll_job *pj;


	if (h->node->kind != K_NEXT) {
		if (ph)
			fuse_pollhandle_destroy(ph);
		fuse_reply_poll(req, POLLIN | POLLOUT |
		    POLLRDNORM | POLLWRNORM);
		return;
	}
	if (!(pj = job_new(sizeof(*pj), poll_run, poll_reply, req))) {
		if (ph)
			fuse_pollhandle_destroy(ph);
		fuse_reply_err(req, ENOMEM);
		return;
	}
	pj->h = handle_get(fi);
	pj->ph = ph;
	pthread_mutex_lock(&fs_lock);
	pj->h->polled = true;  /* its release must drop the watch */
	pthread_mutex_unlock(&fs_lock);
	engine_submit(&pj->j);
}
