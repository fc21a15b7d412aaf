/*
 * ops.c - lookup, getattr and forget, and the helpers every handler shares:
 * making a job, answering an entry or an attribute, naming an errno.  A
 * lookup of a fixed name is answered here; a lookup of something that lives
 * in the store (a queue, a lease, a message) is resolved on the engine
 * thread.  No queue rule lives here: core says what exists.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "fs.h"

_Atomic uint64_t fs_lookups;

void *
job_new(size_t size, void (*run)(struct job *, struct queen *),
    void (*reply)(struct job *), fuse_req_t req)
{
	struct job *j = calloc(1, size);

	if (!j)
		return NULL;
	j->run = run;
	j->reply = reply;
	j->req = req;
	return j;
}

void
reply_rc(struct job *j)
{
	fuse_reply_err(j->req, -j->rc);
}

const char *
errname(int err)
{
	static const struct {
		int e;
		const char *s;
	} t[] = {
		{ ESTALE, "ESTALE" }, { EALREADY, "EALREADY" },
		{ ENOENT, "ENOENT" }, { EINVAL, "EINVAL" }, { EIO, "EIO" },
		{ EFBIG, "EFBIG" }, { ENOSPC, "ENOSPC" }, { EEXIST, "EEXIST" },
		{ EPERM, "EPERM" }, { EACCES, "EACCES" }, { EROFS, "EROFS" },
		{ ENOTEMPTY, "ENOTEMPTY" }, { ENOMEM, "ENOMEM" },
		{ EBUSY, "EBUSY" }, { EAGAIN, "EAGAIN" }, { ENODATA, "ENODATA" },
	};

	if (err < 0)
		err = -err;
	for (size_t i = 0; i < sizeof(t) / sizeof(t[0]); i++)
		if (t[i].e == err)
			return t[i].s;
	return "error";
}

static double
timeout_of(const struct node *n)
{
	return node_dynamic(n->kind) ? 0.0 : 1.0;
}

/*
 * How long the kernel may keep the name itself.  A file whose contents or
 * size change may still have a name that does not: the control files are
 * there by name, and a leased message resolves for as long as its lease
 * is known, dead or alive (an ack through a dead one fails at rename).
 * Every name under partitions/ is a partition directory, whether the
 * store has that partition yet or not, so the kernel may keep it for an
 * hour: a producer spread over many partitions, each visited less often
 * than once a second, would otherwise pay a LOOKUP per push.  Names that
 * come and go with the store (messages in the queue dir, KV keys,
 * timers, files being written) are asked again every time.
 */
static double
entry_timeout_of(const struct node *n)
{
	switch (n->kind) {
	case K_CONFIG: case K_STATS: case K_NEXT: case K_SEEK:
	case K_LEASE_MSG: case K_SYS_STATS: case K_SYS_QUEUES:
	case K_SYS_METRICS:
	case K_SYS_HEALTH: case K_API_FILE:
		return 1.0;
	case K_PART:
		return 3600.0;
	default:
		return timeout_of(n);
	}
}

void
reply_entry(fuse_req_t req, struct node *n)
{
	struct fuse_entry_param e;

	memset(&e, 0, sizeof(e));
	e.ino = n->ino;
	e.generation = 1;
	node_attr(n, &e.attr);
	e.attr_timeout = timeout_of(n);
	e.entry_timeout = entry_timeout_of(n);
	if (fuse_reply_entry(req, &e) != 0)
		node_forget(n, 1);
}

void
reply_attr(fuse_req_t req, struct node *n)
{
	struct stat st;

	node_attr(n, &st);
	fuse_reply_attr(req, &st, timeout_of(n));
}

void
reply_slice(fuse_req_t req, const char *text, size_t len, size_t size,
    off_t off)
{
	if (off < 0 || (size_t)off >= len) {
		fuse_reply_buf(req, NULL, 0);
		return;
	}
	if (size > len - (size_t)off)
		size = len - (size_t)off;
	fuse_reply_buf(req, text + off, size);
}

struct handle *
handle_new(struct node *n)
{
	struct handle *h = calloc(1, sizeof(*h));

	if (h) {
		h->refs = 1;
		h->node = n;
		node_open(n);
	}
	return h;
}

struct handle *
handle_get(struct fuse_file_info *fi)
{
	struct handle *h = (struct handle *)(uintptr_t)fi->fh;

	pthread_mutex_lock(&fs_lock);
	h->refs++;
	pthread_mutex_unlock(&fs_lock);
	return h;
}

void
handle_put(struct handle *h)
{
	unsigned left;

	if (!h)
		return;
	pthread_mutex_lock(&fs_lock);
	left = --h->refs;
	pthread_mutex_unlock(&fs_lock);
	if (left)
		return;
	for (size_t i = 0; i < h->ndents; i++)
		free(h->dents[i].name);
	free(h->dents);
	free(h->text);
	api_release(h);
	if (h->reader) {
		pthread_mutex_lock(&fs_lock);
		h->pend->readers--;
		pthread_mutex_unlock(&fs_lock);
	}
	pend_put(h->pend);
	if (h->node)
		node_close(h->node);
	free(h);
}

struct lookup_job {
	struct job j;
	struct node *parent;
	char *name;
	char txid[QUEEN_TXID_MAX + 1];  /* name, decoded (name.c) */
	struct node *n;
};

struct found {
	enum kind kind;
	int64_t size, mtime;
	struct queen_owner own;
	bool has_own;
};

static int
find_dlq_cb(void *arg, const struct queen_dlq_entry *e)
{
	struct lookup_job *lj = arg;
	struct node *p = lj->parent;

	if (p->kind == K_DLQ)
		return strcmp(e->partition, lj->name) == 0;
	return strcmp(e->partition, p->part) == 0 &&
	    strcmp(e->txid, lj->txid) == 0;
}

/* What (parent, name) is in the store, if anything. */
static int
resolve(struct queen *q, struct lookup_job *lj, struct found *f)
{
	struct node *p = lj->parent;
	const char *name = lj->name;
	struct queen_queue_info qi;
	struct queen_group_info gi;
	struct queen_lease_info li;
	struct queen_partition_info pi;
	struct msginfo mi;
	int rc;

	memset(f, 0, sizeof(*f));
	switch (p->kind) {
	case K_QUEUES:
		if ((rc = queen_queue_get(q, name, &qi)) < 0)
			return rc;
		f->kind = K_QUEUE;
		f->own = qi.owner;
		f->has_own = true;
		f->mtime = qi.created_at;
		return 0;
	case K_GROUPS:
		/*
		 * Only a group that exists resolves: the kernel sends MKDIR
		 * only for a name its lookup did not find, and a name that
		 * cannot be a group is simply not there (mkdir says why).
		 */
		if (strcmp(name, QUEEN_QUEUE_MODE) == 0 ||
		    (rc = queen_group_get(q, p->queue, name, &gi)) == -EINVAL)
			return -ENOENT;
		if (rc < 0)
			return rc;
		f->kind = K_GROUP;
		f->mtime = gi.created_at;
		f->own = gi.owner;
		f->has_own = gi.owner.mode != 0;
		return 0;
	case K_KV:
		f->kind = K_KV_NS;
		f->has_own = queen_kv_ns_get(q, name, &f->own) == 0 &&
		    f->own.mode != 0;
		return 0;
	case K_PARTS:
		f->kind = K_PART;
		if (queen_partition_get(q, p->queue, name, &pi) == 0)
			f->mtime = pi.last_push_at;
		return 0;
	case K_LEASED:
		/*
		 * A lease that expired or was released still resolves (it is
		 * not listed), so that an ack through it reaches rename(2)
		 * and fails there with ESTALE instead of a lookup's ENOENT.
		 */
		if (lease_kept(name, p->queue, p->group, queen_now(q))) {
			f->kind = K_LEASE;
			return 0;
		}
		if ((rc = queen_lease_get(q, name, &li)) < 0 &&
		    (rc != -ESTALE || !lease_known(name, NULL)))
			return -ENOENT;
		if (rc == 0 && (strcmp(li.queue, p->queue) != 0 ||
		    strcmp(li.group, p->group ? p->group : QUEEN_QUEUE_MODE)))
			return -ENOENT;
		f->kind = K_LEASE;
		return 0;
	case K_DLQ:
		if (queen_dlq_list(q, p->queue, p->group, false, find_dlq_cb,
		    lj) <= 0)
			return -ENOENT;
		f->kind = K_DLQ_PART;
		return 0;
	case K_LEASE:
	case K_DLQ_PART:
	case K_QUEUE:
	case K_PART:
	case K_TIMERS:
	case K_KV_NS:
		break;
	default:
		return -ENOENT;
	}
	/* A file: ask for its facts through a stand-in node. */
	{
		struct node tmp;
		static const enum kind file_kind[] = {
			[K_LEASE] = K_LEASE_MSG, [K_DLQ_PART] = K_DLQ_MSG,
			[K_QUEUE] = K_MSG, [K_PART] = K_MSG,
			[K_TIMERS] = K_TIMER, [K_KV_NS] = K_KV_KEY,
		};
		/* the hash links in *p change under fs_lock as siblings go */
		pthread_mutex_lock(&fs_lock);
		tmp = *p;
		pthread_mutex_unlock(&fs_lock);
		tmp.kind = file_kind[p->kind];
		tmp.name = (char *)name;
		/* in the queue dir only a duplicate-to-be is visible: for the
		 * new name of every push, one look at the dedup window is all */
		if (p->kind == K_QUEUE && queen_push_is_dup(q, p->queue,
		    QUEEN_DEFAULT_PARTITION, lj->txid) != 0)
			return -ENOENT;
		rc = msg_info(q, &tmp, false, &mi);
		if (rc == -ESTALE && tmp.kind == K_LEASE_MSG &&
		    lease_known(p->lease, name)) {
			/* a dead lease's messages: see K_LEASED above */
			memset(&mi, 0, sizeof(mi));
			rc = 0;
		} else if (rc == -ENOENT && tmp.kind == K_MSG &&
		    queen_push_is_dup(q, p->queue, p->part ? p->part :
		    QUEEN_DEFAULT_PARTITION, lj->txid) == 0) {
			memset(&mi, 0, sizeof(mi));
			rc = 0;
		} else if (rc == 0 && tmp.kind == K_MSG && p->kind == K_QUEUE &&
		    queen_push_is_dup(q, p->queue, QUEEN_DEFAULT_PARTITION,
		    lj->txid) != 0) {
			/* In the queue dir only a duplicate-to-be is visible. */
			msginfo_release(&mi);
			rc = -ENOENT;
		}
		if (rc < 0)
			return rc;
		f->kind = tmp.kind;
		f->size = (int64_t)mi.len;
		f->mtime = mi.created_at;
		msginfo_release(&mi);
	}
	return 0;
}

static void
lookup_run(struct job *j, struct queen *q)
{
	struct lookup_job *lj = (struct lookup_job *)j;
	struct found f;

	if ((j->rc = resolve(q, lj, &f)) < 0)
		return;
	if (!(lj->n = node_child(lj->parent, lj->name, f.kind))) {
		j->rc = -ENOMEM;
		return;
	}
	pthread_mutex_lock(&fs_lock);
	lj->n->size = f.size;
	lj->n->mtime = f.mtime;
	if (f.has_own) {
		lj->n->own = f.own;
		lj->n->has_own = true;
	}
	pthread_mutex_unlock(&fs_lock);
}

static void
lookup_reply(struct job *j)
{
	struct lookup_job *lj = (struct lookup_job *)j;

	if (j->rc == 0) {
		enum kind k = lj->n->kind;  /* a failed reply may free it */

		reply_entry(j->req, lj->n);
		/*
		 * A file of the store (a message, a dead letter, a key, a
		 * timer) costs a node for as long as the kernel keeps its
		 * name, and `ls -l` of a big directory looks up every one:
		 * past inval.c's bound the name is handed back a moment
		 * later, so the nodes fall back under it.
		 */
		switch (k) {
		case K_MSG: case K_DLQ_MSG: case K_LEASE_MSG: case K_TIMER:
		case K_KV_KEY:
			inval_later(lj->parent->ino, lj->name);
			break;
		default:
			break;
		}
	} else {
		fuse_reply_err(j->req, -j->rc);
	}
	free(lj->name);
}

/*
 * A file being written shadows the store under its name.  *behind: its
 * publish (or the publish under the default partition's other name, the
 * queue's directory) is under way, so only the writer's connection,
 * behind it, answers for the name: the readers' may not see it yet.
 */
static bool
lookup_pending(fuse_req_t req, struct node *p, const char *name, bool *behind)
{
	enum pend_what w;
	struct pending *pe, *alias = NULL;
	struct node *n;
	bool untouched;

	switch (p->kind) {
	case K_QUEUE:
	case K_PART:
		w = PW_PUSH;
		break;
	case K_KV_NS:
		w = PW_KV;
		break;
	case K_TIMERS:
		w = PW_TIMER;
		break;
	default:
		return false;
	}
	pe = pend_find(w, p->queue, w == PW_PUSH ? p->part : NULL, name,
	    fs_now());
	if (w == PW_PUSH &&
	    (!p->part || strcmp(p->part, QUEEN_DEFAULT_PARTITION) == 0))
		alias = pend_find(w, p->queue,
		    p->part ? NULL : QUEEN_DEFAULT_PARTITION, name, fs_now());
	pthread_mutex_lock(&fs_lock);  /* a flush may be changing them */
	*behind = (pe && pe->publishing) || (alias && alias->publishing);
	untouched = pe && !pe->dirty && !pe->pushed && !pe->kept &&
	    name[0] != '.';
	pthread_mutex_unlock(&fs_lock);
	pend_put(alias);
	if (!pe)
		return false;
	if (untouched && (alias = pend_kept_of(pe)) != NULL) {
		/* an open that wrote nothing (touch) is in front of an
		 * attempt kept for the tick: that one answers */
		pend_put(pe);
		pe = alias;
		untouched = false;
	}
	if (untouched) {
		/* opened for write but unchanged (touch), or its publish
		 * under way: the store answers (behind it) */
		pend_put(pe);
		return false;
	}
	if (!(n = node_child(p, name, K_PENDING))) {
		pend_put(pe);
		fuse_reply_err(req, ENOMEM);
		return true;
	}
	pthread_mutex_lock(&fs_lock);
	if (n->pend != pe) {
		pend_put(n->pend);
		n->pend = pe;
	} else {
		pend_put(pe);
	}
	pthread_mutex_unlock(&fs_lock);
	reply_entry(req, n);
	return true;
}

void
op_lookup(fuse_req_t req, fuse_ino_t parent, const char *name)
{
	struct node *p = node_get(parent), *n;
	struct lookup_job *lj;
	bool behind = false;
	enum kind k;

	atomic_fetch_add(&fs_lookups, 1);
	if (!p) {
		fuse_reply_err(req, ENOENT);
		return;
	}
	if (strlen(name) > QUEEN_NAME_MAX) {
		char path[512];

		node_path(p, path, sizeof(path));
		fs_log("lookup %s/%.32s...: a name is at most %d bytes "
		       "(ENAMETOOLONG)",
		    path, name, QUEEN_NAME_MAX);
		fuse_reply_err(req, ENAMETOOLONG);
		return;
	}
	if ((k = node_static(p->kind, name, NULL)) != 0) {
		if (!(n = node_child(p, name, k))) {
			fuse_reply_err(req, ENOMEM);
			return;
		}
		reply_entry(req, n);
		return;
	}
	if (lookup_pending(req, p, name, &behind))
		return;
	if (!name_is_msg(name) || !node_is_dir(p->kind)) {
		fuse_reply_err(req, ENOENT);
		return;
	}
	lj = job_new(sizeof(*lj), lookup_run, lookup_reply, req);
	if (!lj || !(lj->name = strdup(name))) {
		free(lj);
		fuse_reply_err(req, ENOMEM);
		return;
	}
	name_to_txid(name, lj->txid, sizeof(lj->txid));
	lj->parent = p;
	lj->j.reader = !behind;
	engine_submit(&lj->j);
}

void
op_forget(fuse_req_t req, fuse_ino_t ino, uint64_t nlookup)
{
	struct node *n = node_get(ino);

	if (n)
		node_forget(n, nlookup);
	fuse_reply_none(req);
}

void
op_forget_multi(fuse_req_t req, size_t count,
    struct fuse_forget_data *forgets)
{
	for (size_t i = 0; i < count; i++) {
		struct node *n = node_get(forgets[i].ino);
		if (n)
			node_forget(n, forgets[i].nlookup);
	}
	fuse_reply_none(req);
}

void
op_getattr(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi)
{
	struct node *n = node_get(ino);

	if (!n) {
		fuse_reply_err(req, ENOENT);
		return;
	}
	reply_attr(req, n);
}
