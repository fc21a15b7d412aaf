/*
 * ops_push.c - publishing pending files.  Every close(2) of a descriptor
 * (FLUSH) with bytes not yet staged checks them against core's limits and
 * stages them on disk (stage.c), so that close() reports a refusal; the
 * last close of the open file (RELEASE) publishes the attempt once: a
 * message, a KV value or a timer.  Renaming a dot-file to a plain name in
 * the same directory publishes it too.  Dedup, size limits and every other
 * rule are core's: this file passes bytes and maps errors.
 */
#include <errno.h>
#include <malloc.h>
#include <stdlib.h>
#include <string.h>

#include "fs.h"

struct push_job {
	struct job j;
	struct pending *pe;
	struct node *parent;     /* rename: the directory */
	char *txid, *oldname;    /* rename: the new and the staged names */
	char *buf;               /* pend_snapshot's */
	size_t len;
	unsigned gen;
	bool excl, dup;
	struct handle *h;        /* release: freed after the push */
};

int
push_pending(struct queen *q, struct pending *p, const char *txid,
    const char *buf, size_t len, bool excl, bool confirmed, char **notify,
    bool *dup)
{
	struct queen_push_item it;
	struct queen_push_result res;
	char tx[QUEEN_TXID_MAX + 1];
	int64_t ttl_ms, due_at;
	int rc;

	/* setattr and setxattr set these from worker threads */
	pthread_mutex_lock(&fs_lock);
	ttl_ms = p->ttl_ms;
	due_at = p->due_at;
	pthread_mutex_unlock(&fs_lock);
	switch (p->what) {
	case PW_KV:
		rc = queen_kv_put(q, p->queue, txid, buf, len, ttl_ms, excl);
		break;
	case PW_TIMER:
		rc = queen_timer_schedule(q, p->queue, txid, NULL, due_at,
		    buf, len);
		break;
	default:
		memset(&it, 0, sizeof(it));
		it.queue = p->queue;
		it.partition = p->part;
		it.txid = name_to_txid(txid, tx, sizeof(tx)) == 0 ? tx : txid;
		it.payload = buf;
		it.len = len;
		/* close() checked the size and said 0: a limit lowered since
		 * (on another mount) does not drop it */
		it.size_checked = confirmed;
		if ((rc = queen_push(q, &it, 1, excl, &res)) == 0) {
			*dup = res.status == QUEEN_PUSH_DUPLICATE;
			*notify = strdup(p->queue);
		}
		break;
	}
	if (rc < 0)
		fs_log("push %s%s%s/%s: %s (%s)", p->queue,
		    p->part ? "/partitions/" : "", p->part ? p->part : "",
		    txid, queen_errmsg(q), errname(rc));
	return rc;
}

/* whether publishes kept for the tick go to j's partition */
static bool
kept_ahead(const struct job *j)
{
	return stage_kept_for(((const struct push_job *)j)->pe);
}

static void
push_run(struct job *j, struct queen *q)
{
	struct push_job *pj = (struct push_job *)j;

	/* a release's publish waits behind those kept for its partition
	 * (it is kept too, and the tick publishes them in their order) */
	if (pj->h && kept_ahead(j)) {
		/* a listing later in this batch counts it as kept */
		pthread_mutex_lock(&fs_lock);
		pj->pe->gated = true;
		pthread_mutex_unlock(&fs_lock);
		j->rc = -EAGAIN;
		return;
	}
	j->rc = push_pending(q, pj->pe, pj->txid, pj->buf, pj->len, pj->excl,
	    pj->h != NULL, &j->notify, &pj->dup);
}

/* publishes lock their partition's row: by queue, then partition */
static int
push_lock_cmp(const struct job *a, const struct job *b)
{
	const struct pending *x = ((const struct push_job *)a)->pe;
	const struct pending *y = ((const struct push_job *)b)->pe;
	int c = strcmp(x->queue, y->queue);

	if (c)
		return c;
	return strcmp(x->part ? x->part : QUEEN_DEFAULT_PARTITION,
	    y->part ? y->part : QUEEN_DEFAULT_PARTITION);
}

/* the most publishes one call carries */
#define PUSH_MANY_MAX 256
#define TXID_CAP (QUEEN_TXID_MAX + 1)

static bool
same_target(const struct push_job *a, const struct push_job *b)
{
	const struct pending *x = a->pe, *y = b->pe;

	return y->what == PW_PUSH && a->excl == b->excl &&
	    strcmp(x->queue, y->queue) == 0 &&
	    (x->part == y->part ||
		(x->part && y->part && strcmp(x->part, y->part) == 0));
}

/*
 * k publishes into one partition as one call: one lock of the partition
 * and one dedup lookup for all of them (on a server, a few round trips
 * in all instead of one each).  Nonzero: the call failed and kept
 * nothing, and nothing was logged.
 */
static int
publish_many(struct queen *q, struct job *first, size_t k)
{
	struct queen_push_item *it = calloc(k, sizeof(*it));
	struct queen_push_result *res = calloc(k, sizeof(*res));
	char *tx = calloc(k, TXID_CAP);
	struct push_job *pj;
	struct job *j = first;
	int rc = -ENOMEM;

	if (it && res && tx) {
		for (size_t i = 0; i < k; i++, j = j->next) {
			pj = (struct push_job *)j;
			it[i].queue = pj->pe->queue;
			it[i].partition = pj->pe->part;
			it[i].txid = pj->txid;
			if (name_to_txid(pj->txid, tx + i * TXID_CAP,
				TXID_CAP) == 0)
				it[i].txid = tx + i * TXID_CAP;
			it[i].payload = pj->buf;
			it[i].len = pj->len;
			it[i].size_checked = pj->h != NULL;
		}
		pj = (struct push_job *)first;
		rc = queen_push(q, it, k, pj->excl, res);
	}
	/* the waiters of the queue are woken once for all of them (without
	 * the memory for it, when their time comes) */
	if (rc == 0)
		first->notify = strdup(pj->pe->queue);
	j = first;
	for (size_t i = 0; rc == 0 && i < k; i++, j = j->next) {
		pj = (struct push_job *)j;
		pj->dup = res[i].status == QUEEN_PUSH_DUPLICATE;
		j->rc = 0;
	}
	free(it);
	free(res);
	free(tx);
	return rc;
}

/*
 * The publishes of a batch, in a row: those into one partition go as
 * one call.  If that call fails, each of its publishes is tried alone,
 * so that one refused (a duplicate at O_EXCL, a size over a lowered
 * limit) fails only itself, with its own reason in the log.  A call
 * rolled back by a deadlock (EBUSY) is not: it and every later publish
 * into that partition in the batch go back to the engine's queue
 * together, in their order, so none lands ahead of one that came
 * before it.
 */
static void
push_run_many(struct job *first, size_t n, struct queen *q)
{
	struct job *j = first, *e, *busy = NULL;
	size_t k;
	int rc;

	while (n > 0) {
		for (k = 1, e = j->next; k < n && k < PUSH_MANY_MAX &&
		     same_target((struct push_job *)j, (struct push_job *)e);
		     k++)
			e = e->next;
		if (busy && push_lock_cmp(busy, j) != 0)
			busy = NULL;
		if (busy)
			rc = -EBUSY;
		else if (k == 1 || kept_ahead(j))
			rc = 1; /* each alone */
		else
			rc = publish_many(q, j, k);
		if (rc == -EBUSY && !busy)
			fs_log("push of %zu into %s: %s (EBUSY)", k,
			    ((struct push_job *)j)->pe->queue, queen_errmsg(q));
		for (struct job *r = j; rc != 0 && r != e; r = r->next) {
			if (rc == -EBUSY || busy)
				r->rc = -EBUSY;
			else
				push_run(r, q);
			if (r->rc == -EBUSY && !busy)
				busy = r;
		}
		j = e;
		n -= k;
	}
}

/* After the commit: the file is published, or dirty again. */
static void
push_done(struct push_job *pj)
{
	struct pending *pe = pj->pe;

	/*
	 * A release's publish that failed keeps its staged bytes for the
	 * tick to publish (close() confirmed them); one that was published
	 * lets them go.  A failed rename's push is not retried: rename
	 * said nothing was pushed.
	 */
	if (pj->h && pj->j.rc == 0)
		stage_remove(pe);
	else if (pj->h)
		stage_keep(pe);
	pthread_mutex_lock(&fs_lock);
	if (pj->j.rc == 0 && !pe->dirty) {
		pe->pushed = true;
		pe->mtime = fs_now();
	}
	pe->publishing--;
	pthread_mutex_unlock(&fs_lock);
	/* A duplicate's bytes are not what the store holds: stop showing them. */
	if (pj->j.rc == 0 && pj->dup && !pj->parent)
		pend_drop(pe);
	if (pj->j.rc == 0 && pj->parent) {
		struct pending *old = pend_find(pe->what, pe->queue, pe->part,
		    pj->txid, fs_now());
		if (old && old != pe)
			pend_drop(old);
		pend_put(old);
		pend_rename(pe, pj->txid);
		node_move(pj->parent, pj->oldname, pj->txid);
	}
	if (pj->j.rc == 0) {
		if (pe->what == PW_PUSH)
			engine_count_push(pj->dup);
		pend_published(pe);
		inval_later(pj->parent ? pj->parent->ino : pe->dir, pe->name);
	}
	fuse_reply_err(pj->j.req, -pj->j.rc);
	pend_unsnap(pe, pj->buf, pj->len, pj->gen);
	pend_put(pe);
	free(pj->txid);
	free(pj->oldname);
	/* the engine's copies of a big message go back to the system */
	if (pj->len > PEND_MEM_ONE)
		malloc_trim(0);
}

static void
push_reply(struct job *j)
{
	push_done((struct push_job *)j);
}

/*
 * A release's publish failed for good: its record is kept for the tick
 * now, on the token holder, so that the next batch's publishes into its
 * partition wait behind it (push_done, after the sync, would be late).
 */
static void
release_push_failed(struct job *j)
{
	stage_keep(((struct push_job *)j)->pe);
}

/* A job carrying a snapshot of pe; the file is clean until it fails. */
static struct push_job *
push_job_new(fuse_req_t req, struct pending *pe, const char *txid)
{
	struct push_job *pj = job_new(sizeof(*pj), push_run, push_reply, req);

	if (!pj)
		return NULL;
	pj->j.write = true;
	pj->j.redo = true; /* run again, it makes the same call */
	if (pe->what == PW_PUSH) {
		pj->j.run_many = push_run_many;
		pj->j.lock_cmp = push_lock_cmp;
	}
	pj->pe = pe;
	pj->txid = strdup(txid);
	pj->buf = pend_snapshot(pe, &pj->len, &pj->gen);
	if (!pj->txid || !pj->buf) {
		free(pj->txid);
		if (pj->buf)
			pend_unsnap(pe, pj->buf, pj->len, pj->gen);
		free(pj);
		return NULL;
	}
	pthread_mutex_lock(&fs_lock);
	pe->refs++;
	pe->publishing++;
	pe->dirty = pe->written = false;
	pj->excl = pe->excl;
	pthread_mutex_unlock(&fs_lock);
	return pj;
}

/*
 * The limits a staged attempt must meet, asked of core before the bytes
 * are staged, so that close(2) reports them (the push itself waits for
 * the release).  The flush waits for the answer on its own thread.
 */
struct check_job {
	struct job j;
	struct pending *pe;
	size_t len;              /* the size to check: the file's, or more */
	struct waitbox *wb;
};

/*
 * Each queue's max_message_bytes as last asked (fs_lock): write(2) checks
 * against it and asks again only when a write would pass it, so a limit
 * raised since is never refused on an old figure.  A slot per queue name
 * hash; a collision only means one more question.
 */
#define LIMIT_SLOTS 64
static struct {
	char queue[QUEEN_NAME_MAX + 1];
	int64_t max;
} limits[LIMIT_SLOTS];

static unsigned
limit_slot(const char *queue)
{
	uint64_t h = 1469598103934665603ull;

	for (const unsigned char *c = (const unsigned char *)queue; *c; c++)
		h = (h ^ *c) * 1099511628211ull;
	return (unsigned)(h % LIMIT_SLOTS);
}

struct waitbox {
	pthread_mutex_t mu;
	pthread_cond_t cv;
	bool done;
	int rc;
};

static void
check_run(struct job *j, struct queen *q)
{
	struct pending *pe = ((struct check_job *)j)->pe;
	int64_t max = 0;
	size_t len;
	char why[256];

	pthread_mutex_lock(&fs_lock);
	len = pe->len > ((struct check_job *)j)->len ? pe->len :
	    ((struct check_job *)j)->len;
	pthread_mutex_unlock(&fs_lock);
	/* a store that stopped taking writes will not take this one */
	if (queen_failed(q, why, sizeof(why))) {
		j->rc = -EIO;
		fs_log("push %s/%s: the store failed: %s (EIO)", pe->queue,
		    pe->name, why);
		return;
	}
	if (pe->what == PW_KV)
		return;
	if ((j->rc = queen_config_get(q, pe->queue, NULL, "max_message_bytes",
	    &max)) < 0) {
		fs_log("push %s/%s: %s (%s)", pe->queue, pe->name,
		    queen_errmsg(q), errname(j->rc));
		return;
	}
	if (strlen(pe->queue) <= QUEEN_NAME_MAX) {
		unsigned i = limit_slot(pe->queue);
		pthread_mutex_lock(&fs_lock);
		strcpy(limits[i].queue, pe->queue);
		limits[i].max = max;
		pthread_mutex_unlock(&fs_lock);
	}
	if ((int64_t)len > max) {
		j->rc = -EFBIG;
		fs_log("push %s/%s: %zu bytes exceed max_message_bytes (%lld) "
		    "of queue '%s' (EFBIG)", pe->queue, pe->name, len,
		    (long long)max, pe->queue);
	}
}

static void
check_reply(struct job *j)
{
	struct waitbox *wb = ((struct check_job *)j)->wb;

	pthread_mutex_lock(&wb->mu);
	wb->rc = j->rc;
	wb->done = true;
	pthread_cond_signal(&wb->cv);
	pthread_mutex_unlock(&wb->mu);
}

static int
check_limits(struct pending *pe, size_t len)
{
	struct waitbox wb = { .mu = PTHREAD_MUTEX_INITIALIZER,
	    .cv = PTHREAD_COND_INITIALIZER };
	struct check_job *cj = job_new(sizeof(*cj), check_run, check_reply,
	    NULL);

	if (!cj)
		return -ENOMEM;
	cj->pe = pe;
	cj->len = len;
	cj->wb = &wb;
	cj->j.reader = true;
	engine_submit(&cj->j);
	pthread_mutex_lock(&wb.mu);
	while (!wb.done)
		pthread_cond_wait(&wb.cv, &wb.mu);
	pthread_mutex_unlock(&wb.mu);
	pthread_cond_destroy(&wb.cv);
	pthread_mutex_destroy(&wb.mu);
	return wb.rc;
}

/*
 * A write that would make the file pass its queue's max_message_bytes is
 * refused there (EFBIG), not at close.  KV values have no such limit.
 */
int
push_write_check(struct pending *pe, size_t end)
{
	unsigned i;
	bool known, over;

	if (pe->what == PW_KV || pe->name[0] == '.' ||
	    strlen(pe->queue) > QUEEN_NAME_MAX)
		return 0;
	i = limit_slot(pe->queue);
	pthread_mutex_lock(&fs_lock);
	known = strcmp(limits[i].queue, pe->queue) == 0;
	over = known && (int64_t)end > limits[i].max;
	pthread_mutex_unlock(&fs_lock);
	if (known && !over)
		return 0;
	return check_limits(pe, end);
}

/* A refusal ends the attempt: nothing of it is published. */
void
push_refuse(struct pending *pe, int rc)
{
	pthread_mutex_lock(&fs_lock);
	pe->dead = true;
	pe->dirty = false;
	pe->refused = rc;
	pthread_mutex_unlock(&fs_lock);
	stage_remove(pe);
	/* the store answers for the name again */
	pend_drop(pe);
	inval_later(pe->dir, pe->name);
}

/*
 * Every close(2) of a descriptor of the file (a dup, a child's exit, the
 * shell restoring a redirection) sends FLUSH and waits for it: bytes not
 * yet staged are checked and staged, so its 0 means they are kept.  A
 * refusal kills the attempt: nothing of it is published, and every later
 * close of it reports the same error.
 */
void
op_flush(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi)
{
	struct handle *h = (struct handle *)(uintptr_t)fi->fh;
	struct pending *pe = h->pend;
	bool need;
	int rc;

	if (h->node->kind == K_API_FILE) {
		api_flush(req, h);
		return;
	}
	if (h->writable && (h->node->kind == K_CONFIG ||
	    h->node->kind == K_SEEK)) {
		ctl_flush(req, h);
		return;
	}
	if (!pe || !h->writable) {
		fuse_reply_err(req, 0);
		return;
	}
	pthread_mutex_lock(&fs_lock);
	rc = pe->refused;
	/*
	 * An empty file has no bytes to keep (`sh` closes the descriptor
	 * it dup2()ed before the command writes): it is checked and
	 * published at its release.
	 */
	need = rc == 0 && stage_needed(pe);
	pthread_mutex_unlock(&fs_lock);
	if (!need) {
		fuse_reply_err(req, -rc);
		return;
	}
	if ((rc = check_limits(pe, 0)) == 0)
		rc = stage_save(pe);
	if (rc < 0)
		push_refuse(pe, rc);
	fuse_reply_err(req, -rc);
}

/* rename(dir/.staged, dir/name): publish the staged bytes as name. */
void
push_rename(fuse_req_t req, struct node *dir, struct pending *pe,
    const char *oldname, const char *newname)
{
	struct push_job *pj = push_job_new(req, pe, newname);

	pend_put(pe);  /* the caller's reference; the job holds its own */
	if (!pj || !(pj->oldname = strdup(oldname))) {
		if (pj) {
			pend_unsnap(pj->pe, pj->buf, pj->len, pj->gen);
			free(pj->txid);
			pthread_mutex_lock(&fs_lock);
			pj->pe->publishing--;
			pthread_mutex_unlock(&fs_lock);
			pend_put(pj->pe);
			free(pj);
		}
		fuse_reply_err(req, ENOMEM);
		return;
	}
	pj->parent = dir;
	engine_submit(&pj->j);
}

void
op_fsync(fuse_req_t req, fuse_ino_t ino, int datasync,
    struct fuse_file_info *fi)
{
	fuse_reply_err(req, 0);
}

static void
release_push_reply(struct job *j)
{
	struct push_job *pj = (struct push_job *)j;
	handle_put(pj->h);
	push_done(pj);
}

/*
 * The last reference to the open file is gone: publish the attempt, once.
 * The job is submitted before this handler returns, and the kernel sends
 * RELEASE before the closing process returns to user space, so whatever
 * that process's parent does next (a pop) runs after the push.
 */
static bool
release_push(fuse_req_t req, struct handle *h)
{
	struct pending *pe = h->pend;
	struct push_job *pj;
	bool dirty;
	char *name;

	if (!pe || !h->writable)
		return false;
	pthread_mutex_lock(&fs_lock);
	dirty = pe->dirty && !pe->dead && pe->name[0] != '.';
	name = strdup(pe->name);
	pthread_mutex_unlock(&fs_lock);
	pj = dirty && name ? push_job_new(req, pe, name) : NULL;
	if (pj)
		pj->j.hold = true; /* nobody waits for it (engine.c) */
	free(name);
	if (!pj)
		return false;
	pj->j.reply = release_push_reply;
	pj->j.failed = release_push_failed;
	pj->h = h;
	engine_submit(&pj->j);
	return true;
}

struct release_job {
	struct job j;
	struct handle *h;
};

static void
release_run(struct job *j, struct queen *q)
{
	struct handle *h = ((struct release_job *)j)->h;

	h->released = true;  /* a poll still in flight must not re-watch */
	engine_poll_drop(h);
}

static void
release_reply(struct job *j)
{
	handle_put(((struct release_job *)j)->h);
	fuse_reply_err(j->req, 0);
}

static void
release(fuse_req_t req, struct fuse_file_info *fi)
{
	struct handle *h = (struct handle *)(uintptr_t)fi->fh;
	struct release_job *rj;
	bool polled;

	if (release_push(req, h))
		return;
	pthread_mutex_lock(&fs_lock);
	polled = h->polled;
	pthread_mutex_unlock(&fs_lock);
	/* only a watched `next` has something held by the token holder */
	if (h->node->kind != K_NEXT || !polled) {
		handle_put(h);
		fuse_reply_err(req, 0);
		return;
	}
	if (!(rj = job_new(sizeof(*rj), release_run, release_reply, req))) {
		/* Leak the handle rather than free what the engine holds. */
		fuse_reply_err(req, 0);
		return;
	}
	rj->h = h;
	engine_submit(&rj->j);
}

/* A RELEASE's publish is in line before any later request runs (order.c). */
void
op_release(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi)
{
	order_test_delay();
	release(req, fi);
	order_release_done();
}
