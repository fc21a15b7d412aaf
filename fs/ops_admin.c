/*
 * ops_admin.c - changes to the tree that are not pushes or acks: mkdir and
 * rmdir of queues, groups and KV namespaces, unlink of KV keys, timers and
 * staging files, and setattr (chmod/chown of owners, touch to renew a lease
 * or reschedule a timer, truncation of a pending file).  Core owns every
 * rule; a refusal here is only about the shape of the namespace.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "fs.h"

struct admin_job {
	struct job j;
	struct node *parent, *n;
	char *name;
	struct queen_owner own;
	int to_set;
	int64_t mtime;
	bool keep_own;
	bool unstored_ok; /* an unpublished attempt went: none stored is 0 */
};

static void
admin_free(struct admin_job *aj)
{
	free(aj->name);
}

static void
mkdir_run(struct job *j, struct queen *q)
{
	struct admin_job *aj = (struct admin_job *)j;
	struct node *p = aj->parent;
	enum kind k = p->kind == K_QUEUES ? K_QUEUE :
	    p->kind == K_GROUPS ? K_GROUP : K_KV_NS;

	if (k == K_QUEUE)
		j->rc = queen_queue_create(q, aj->name, &aj->own);
	else if (k == K_GROUP)
		j->rc = queen_group_create(q, p->queue, aj->name, &aj->own);
	else
		j->rc = queen_kv_ns_create(q, aj->name, &aj->own);
	if (j->rc < 0) {
		char path[512];

		node_path(p, path, sizeof(path));
		fs_log("mkdir %s/%s: %s (%s)", path, aj->name, queen_errmsg(q),
		    errname(j->rc));
		return;
	}
	if (!(aj->n = node_child(p, aj->name, k))) {
		j->rc = -ENOMEM;
		return;
	}
	pthread_mutex_lock(&fs_lock);
	aj->n->own = aj->own;
	aj->n->has_own = true;
	pthread_mutex_unlock(&fs_lock);
}

static void
entry_reply(struct job *j)
{
	struct admin_job *aj = (struct admin_job *)j;

	if (j->rc == 0)
		reply_entry(j->req, aj->n);
	else
		fuse_reply_err(j->req, -j->rc);
	admin_free(aj);
}

static struct admin_job *
admin_new(fuse_req_t req, void (*run)(struct job *, struct queen *),
    void (*reply)(struct job *), struct node *p, const char *name)
{
	struct admin_job *aj = job_new(sizeof(*aj), run, reply, req);

	if (aj && name && !(aj->name = strdup(name))) {
		free(aj);
		aj = NULL;
	}
	if (!aj) {
		fuse_reply_err(req, ENOMEM);
		return NULL;
	}
	aj->parent = p;
	aj->j.write = true;
	return aj;
}

/* No symbolic or hard links anywhere: a message is one file by one name. */
void
op_symlink(fuse_req_t req, const char *link, fuse_ino_t parent,
    const char *name)
{
	struct node *p = node_get(parent);
	char path[512] = "?";

	if (p)
		node_path(p, path, sizeof(path));
	fs_log("symlink %s/%s -> %s: the mount holds no links (EPERM)", path,
	    name, link);
	fuse_reply_err(req, EPERM);
}

void
op_link(fuse_req_t req, fuse_ino_t ino, fuse_ino_t newparent,
    const char *newname)
{
	struct node *p = node_get(newparent);
	char path[512] = "?";

	if (p)
		node_path(p, path, sizeof(path));
	fs_log("link %s/%s: the mount holds no links; push a copy (EPERM)",
	    path, newname);
	fuse_reply_err(req, EPERM);
}

/*
 * Whether name may become a directory under p, with the reason logged if
 * not.  A group changes its queue, so it needs write permission there
 * (the kernel checks that too under default_permissions).
 */
static int
may_mkdir(fuse_req_t req, struct node *p, const char *name)
{
	char path[512];
	struct cred c;
	struct stat st;

	node_path(p, path, sizeof(path));
	if (p->kind != K_QUEUES && p->kind != K_GROUPS && p->kind != K_KV) {
		fs_log("mkdir %s/%s: only queues/, queues/<q>/groups/ and kv/ "
		       "take new directories (EPERM)",
		    path, name);
		return -EPERM;
	}
	if (strlen(name) > QUEEN_NAME_MAX) {
		fs_log("mkdir %s/%.32s...: a name is at most %d bytes "
		       "(ENAMETOOLONG)",
		    path, name, QUEEN_NAME_MAX);
		return -ENAMETOOLONG;
	}
	if (!queen_name_valid(name) ||
	    (p->kind == K_GROUPS && strcmp(name, QUEEN_QUEUE_MODE) == 0)) {
		fs_log("mkdir %s/%s: invalid name: use 1-255 bytes of A-Z a-z "
		       "0-9 . _ : @ = + -, not starting with '.'%s (EINVAL)",
		    path, name,
		    p->kind == K_GROUPS ? ", and not " QUEEN_QUEUE_MODE : "");
		return -EINVAL;
	}
	if (p->kind != K_GROUPS)
		return 0;
	cred_of(req, &c);
	node_attr(p, &st);
	if (cred_may(&c, st.st_uid, st.st_gid, st.st_mode, 2))
		return 0;
	fs_log("mkdir %s/%s: uid %u may not write the queue (%u:%u %03o), "
	       "and a new group changes it (EACCES)",
	    path, name, (unsigned)c.uid, (unsigned)st.st_uid,
	    (unsigned)st.st_gid, (unsigned)(st.st_mode & 07777));
	return -EACCES;
}

void
op_mkdir(fuse_req_t req, fuse_ino_t parent, const char *name, mode_t mode)
{
	struct node *p = node_get(parent);
	const struct fuse_ctx *ctx = fuse_req_ctx(req);
	struct admin_job *aj;
	int rc;

	if (!p) {
		fuse_reply_err(req, ENOENT);
		return;
	}
	if ((rc = may_mkdir(req, p, name)) < 0) {
		fuse_reply_err(req, -rc);
		return;
	}
	if (!(aj = admin_new(req, mkdir_run, entry_reply, p, name)))
		return;
	aj->own.uid = ctx->uid;
	aj->own.gid = ctx->gid;
	aj->own.mode = mode & 07777 & ~ctx->umask;
	engine_submit(&aj->j);
}

static void
remove_run(struct job *j, struct queen *q)
{
	struct admin_job *aj = (struct admin_job *)j;
	struct node *p = aj->parent;

	switch (p->kind) {
	case K_QUEUES:
		j->rc = queen_queue_delete(q, aj->name);
		break;
	case K_GROUPS:
		j->rc = queen_group_delete(q, p->queue, aj->name);
		break;
	case K_KV:
		j->rc = queen_kv_ns_delete(q, aj->name);
		break;
	case K_KV_NS:
		j->rc = queen_kv_delete(q, p->queue, aj->name);
		break;
	case K_TIMERS:
		j->rc = queen_timer_cancel(q, p->queue, aj->name);
		break;
	default:
		j->rc = -EPERM;
	}
	if (j->rc == -ENOENT && aj->unstored_ok)
		j->rc = 0;
	if (j->rc < 0)
		fs_log("remove %s: %s (%s)", aj->name, queen_errmsg(q),
		    errname(j->rc));
	else
		node_unhash(p, aj->name);
}

static void
remove_reply(struct job *j)
{
	reply_rc(j);
	admin_free((struct admin_job *)j);
}

void
op_rmdir(fuse_req_t req, fuse_ino_t parent, const char *name)
{
	struct node *p = node_get(parent);
	struct admin_job *aj;

	if (!p) {
		fuse_reply_err(req, ENOENT);
		return;
	}
	if (p->kind != K_QUEUES && p->kind != K_GROUPS && p->kind != K_KV) {
		char path[512];

		node_path(p, path, sizeof(path));
		fs_log("rmdir %s/%s: only a queue, a group or a KV namespace "
		       "is removed (EPERM)",
		    path, name);
		fuse_reply_err(req, EPERM);
		return;
	}
	if ((aj = admin_new(req, remove_run, remove_reply, p, name)))
		engine_submit(&aj->j);
}

void
op_unlink(fuse_req_t req, fuse_ino_t parent, const char *name)
{
	struct node *p = node_get(parent);
	struct admin_job *aj;
	struct pending *pe = NULL;
	bool gone = false, kept = false, cancel;
	enum pend_what w = p && p->kind == K_KV_NS ? PW_KV :
	    p && p->kind == K_TIMERS ? PW_TIMER : PW_PUSH;

	if (!p) {
		fuse_reply_err(req, ENOENT);
		return;
	}
	/*
	 * An unpublished file is forgotten, never pushed, even if it is
	 * still open: its bytes are thrown away.  Each open of the name
	 * that is not published yet is an attempt of its own: all go.  One
	 * kept for the tick is not (EPERM, as a published message): its
	 * close() said it will be published, and a put or a timer kept
	 * would land after the removal.  Nor is one whose publish is in
	 * the engine's queue: its last close() returned 0, and an rm right
	 * after it is an rm of what that close() stored (order.c has the
	 * publish queued before this request runs).  Looked at and marked
	 * dead in one hold of fs_lock, as the keep marks it kept.
	 */
	/* one kept behind a newer open of the name is not in the table */
	kept = name[0] != '.' &&
	    pend_kept_as(w, p->queue, w == PW_PUSH ? p->part : NULL, name);
	while (!kept &&
	    (pe = pend_find(w, p->queue, w == PW_PUSH ? p->part : NULL, name,
		 fs_now()))) {
		pthread_mutex_lock(&fs_lock);
		kept = pe->kept;
		cancel = name[0] == '.' ||
		    (!pe->pushed && !kept && !pe->publishing);
		if (cancel)
			pe->dead = true;
		pthread_mutex_unlock(&fs_lock);
		if (!cancel)
			break;
		stage_remove(pe);
		pend_drop(pe);
		pend_put(pe);
		gone = true;
	}
	pend_put(pe);
	if (kept) {
		char path[512];

		node_path(p, path, sizeof(path));
		fs_log("unlink %s/%s: its publish is kept for the tick, which "
		       "publishes it (EPERM)",
		    path, name);
		fuse_reply_err(req, EPERM);
		return;
	}
	if (pend_kill_replaced(w, p->queue, w == PW_PUSH ? p->part : NULL,
		name) > 0)
		gone = true;
	if (gone) {
		node_unhash(p, name);
		/* a message, or a staging file: nothing of it is stored */
		if (w == PW_PUSH || name[0] == '.') {
			fuse_reply_err(req, 0);
			return;
		}
	}
	if (p->kind == K_DLQ_PART) {
		int rc = dlq_unlink(req, p, name);

		if (rc < 0)
			fuse_reply_err(req, -rc);
		return;
	}
	if (p->kind != K_KV_NS && p->kind != K_TIMERS) {
		char path[512];
		const char *why = p->kind == K_QUEUE || p->kind == K_PART ?
		    "a stored message stays until retention or the queue's "
		    "removal: consume it (next, then a rename into ack/)" :
		    "only a KV key, a timer or a dead letter is removed";

		node_path(p, path, sizeof(path));
		fs_log("unlink %s/%s: %s (EPERM)", path, name, why);
		fuse_reply_err(req, EPERM);
		return;
	}
	if ((aj = admin_new(req, remove_run, remove_reply, p, name))) {
		aj->unstored_ok = gone;
		engine_submit(&aj->j);
	}
}

static void
setattr_run(struct job *j, struct queen *q)
{
	struct admin_job *aj = (struct admin_job *)j;
	struct node *n = aj->n;
	struct queen_timer_info *ti = NULL;

	switch (n->kind) {
	case K_QUEUE:
		j->rc = queen_queue_set_owner(q, n->queue, &aj->own);
		break;
	case K_GROUP:
		j->rc = queen_group_set_owner(q, n->queue, n->group, &aj->own);
		break;
	case K_KV_NS:
		j->rc = queen_kv_ns_set_owner(q, n->queue, &aj->own);
		break;
	case K_LEASE:
	case K_LEASE_MSG:
		j->rc = queen_lease_renew(q, n->lease, 0, NULL);
		break;
	case K_TIMER:
	case K_PENDING:  /* a timer opened by touch, not written */
		if ((j->rc = queen_timer_get(q, n->queue, n->name, true,
		    &ti)) == 0)
			j->rc = queen_timer_schedule(q, n->queue, n->name,
			    ti->partition, aj->mtime, ti->payload, ti->len);
		free(ti);
		if (j->rc == 0) {
			pthread_mutex_lock(&fs_lock);  /* node_attr reads it */
			n->mtime = aj->mtime;
			pthread_mutex_unlock(&fs_lock);
		}
		break;
	default:
		break;
	}
	if (j->rc < 0) {
		char path[512];
		node_path(n, path, sizeof(path));
		fs_log("setattr %s: %s (%s)", path, queen_errmsg(q),
		    errname(j->rc));
		return;
	}
	if (aj->keep_own) {
		pthread_mutex_lock(&fs_lock);
		n->own = aj->own;
		n->has_own = true;
		pthread_mutex_unlock(&fs_lock);
	}
}

static void
attr_reply(struct job *j)
{
	struct admin_job *aj = (struct admin_job *)j;

	/* before the reply: once chmod returns, what lies below follows */
	if (j->rc == 0 && aj->keep_own)
		node_inval_heirs(aj->n);
	if (j->rc == 0)
		reply_attr(j->req, aj->n);
	else
		fuse_reply_err(j->req, -j->rc);
}

/* chmod and chown as the kernel would check them without default_permissions. */
static int
owner_change(fuse_req_t req, struct node *n, struct stat *attr, int to_set,
    struct queen_owner *own)
{
	const struct fuse_ctx *ctx = fuse_req_ctx(req);
	struct node *o;

	pthread_mutex_lock(&fs_lock);
	o = node_owner_of(n);
	*own = o ? o->own : (struct queen_owner){ fs.uid, fs.gid, 0755 };
	pthread_mutex_unlock(&fs_lock);
	if (ctx->uid != 0 && ctx->uid != own->uid)
		return -EPERM;
	if ((to_set & FUSE_SET_ATTR_UID) && attr->st_uid != own->uid &&
	    ctx->uid != 0)
		return -EPERM;
	if (to_set & FUSE_SET_ATTR_MODE)
		own->mode = attr->st_mode & 07777;
	if (to_set & FUSE_SET_ATTR_UID)
		own->uid = attr->st_uid;
	if (to_set & FUSE_SET_ATTR_GID)
		own->gid = attr->st_gid;
	return 0;
}

/*
 * The mtime a touch asks for, in ms.  Only timers and leases take a time
 * (a timer's mtime is its due time; a lease's touch renews it whatever the
 * date): a date after QUEEN_TIME_MAX_MS is -EINVAL there, and one at or
 * before 1970 is due in the past (1 ms: the timer fires at once).
 */
static int
set_time(struct node *n, bool timed, const struct stat *attr, int to_set,
    int64_t *ms)
{
	const struct timespec *t = &attr->st_mtim;
	char path[512];

	if ((to_set & FUSE_SET_ATTR_MTIME_NOW) ||
	    !(to_set & FUSE_SET_ATTR_MTIME)) {
		*ms = fs_now();
		return 0;
	}
	if (t->tv_sec > QUEEN_TIME_MAX_MS / 1000) {
		if (!timed)
			return 0;  /* ignored, as any other node's times */
		node_path(n, path, sizeof(path));
		fs_log("setattr %s: mtime %lld s is after 9999-12-31 (%s)",
		    path, (long long)t->tv_sec, errname(-EINVAL));
		return -EINVAL;
	}
	*ms = t->tv_sec < 0 ? 1 : (int64_t)t->tv_sec * 1000 +
	    t->tv_nsec / 1000000;
	if (*ms <= 0)
		*ms = 1;
	return 0;
}

static int setattr_refused(struct node *n, const struct stat *attr,
    bool pending, int to_set);

void
op_setattr(fuse_req_t req, fuse_ino_t ino, struct stat *attr, int to_set,
    struct fuse_file_info *fi)
{
	struct node *n = node_get(ino);
	struct admin_job *aj;
	int own_bits = FUSE_SET_ATTR_MODE | FUSE_SET_ATTR_UID |
	    FUSE_SET_ATTR_GID;
	int mtime_bits = FUSE_SET_ATTR_MTIME | FUSE_SET_ATTR_MTIME_NOW;
	int time_bits = mtime_bits | FUSE_SET_ATTR_ATIME |
	    FUSE_SET_ATTR_ATIME_NOW;
	int64_t mtime = 0;
	bool retime = false, timed;
	struct pending *pe;
	int rc;

	if (!n) {
		fuse_reply_err(req, ENOENT);
		return;
	}
	/* a lookup may swap n->pend (and free the old one) meanwhile */
	pthread_mutex_lock(&fs_lock);
	if ((pe = n->pend) != NULL)
		pe->refs++;
	pthread_mutex_unlock(&fs_lock);
	if ((to_set & FUSE_SET_ATTR_SIZE) && n->kind == K_LEASE_MSG) {
		char path[512];
		node_path(n, path, sizeof(path));
		fs_log("truncate %s: a leased message's payload cannot change "
		    "(EPERM)", path);
		pend_put(pe);
		fuse_reply_err(req, EPERM);
		return;
	}
	if ((to_set & FUSE_SET_ATTR_SIZE) && pe) {
		if ((rc = pend_truncate(pe, attr->st_size, fs_now())) < 0) {
			pend_put(pe);
			fuse_reply_err(req, -rc);
			return;
		}
	}
	timed = n->kind == K_TIMER || n->kind == K_LEASE ||
	    n->kind == K_LEASE_MSG || (n->kind == K_PENDING && pe &&
	    pe->what == PW_TIMER);
	if ((to_set & time_bits) && (rc = set_time(n, timed, attr, to_set,
	    &mtime)) < 0) {
		pend_put(pe);
		fuse_reply_err(req, -rc);
		return;
	}
	pthread_mutex_lock(&fs_lock);
	if (n->kind == K_PENDING && pe && pe->what == PW_TIMER &&
	    (to_set & mtime_bits) &&
	    (pe->kept || (!pe->dirty && pend_kept_named(pe)))) {
		/* its record, due time and all, is what the tick publishes
		 * (touch(1) opens a new attempt: it reschedules that one) */
		pthread_mutex_unlock(&fs_lock);
		fs_log("touch timers/%s of %s: kept for the tick with its due "
		       "time (EPERM)",
		    pe->name, pe->queue);
		pend_put(pe);
		fuse_reply_err(req, EPERM);
		return;
	}
	if (n->kind == K_PENDING && pe && pe->what == PW_TIMER &&
	    (to_set & mtime_bits)) {
		/* Written in this open: the time goes with the coming push. */
		pe->due_at = mtime;
		retime = !pe->dirty;
	}
	pthread_mutex_unlock(&fs_lock);
	pend_put(pe);
	aj = NULL;
	if ((n->kind == K_QUEUE || n->kind == K_GROUP || n->kind == K_KV_NS) &&
	    (to_set & own_bits)) {
		struct queen_owner own;
		if ((rc = owner_change(req, n, attr, to_set, &own)) < 0) {
			fuse_reply_err(req, -rc);
			return;
		}
		if (!(aj = admin_new(req, setattr_run, attr_reply, NULL, NULL)))
			return;
		aj->own = own;
		aj->keep_own = true;
	} else if ((n->kind == K_LEASE || n->kind == K_LEASE_MSG ||
	    n->kind == K_TIMER || retime) && (to_set & mtime_bits)) {
		/*
		 * touch on a lease renews it; on a timer, reschedules it.
		 * An atime alone (tar --atime-preserve, a backup putting
		 * back what it read) changes neither.
		 */
		if (!(aj = admin_new(req, setattr_run, attr_reply, NULL, NULL)))
			return;
		aj->mtime = mtime;
	}
	if (!aj && (rc = setattr_refused(n, attr, pe != NULL, to_set)) < 0) {
		char path[512];

		node_path(n, path, sizeof(path));
		fs_log("setattr %s: %s (%s)", path, rc == -EPERM ?
		    "only queues, groups and KV namespaces have an owner and "
		    "mode; a stored file's size and a dead letter's time are "
		    "its own" : "", errname(rc));
		fuse_reply_err(req, -rc);
		return;
	}
	if (!aj) {
		/* a file being written or staged (cp -p, tar -x, rsync
		 * metadata), and times elsewhere: accepted */
		reply_attr(req, n);
		return;
	}
	aj->n = n;
	engine_submit(&aj->j);
}

/*
 * What setattr would answer 0 for while changing nothing: another owner
 * or mode on anything but a queue, a group, a KV namespace or a file still
 * being written; another size of a file that is not being written; a
 * time on a dead letter.  -EPERM for those, 0 for the rest (an owner,
 * mode or size equal to the current one is already true).
 */
static int
setattr_refused(struct node *n, const struct stat *attr, bool pending,
    int to_set)
{
	int time_bits = FUSE_SET_ATTR_MTIME | FUSE_SET_ATTR_MTIME_NOW |
	    FUSE_SET_ATTR_ATIME | FUSE_SET_ATTR_ATIME_NOW;

	struct stat st;

	if (pending || n->kind == K_PENDING)
		return 0;
	/* what is already so is no lie: `install -m 644`, `cp -p` of a
	 * just-pushed message */
	node_attr(n, &st);
	if ((to_set & FUSE_SET_ATTR_MODE) &&
	    (attr->st_mode & 07777) != (st.st_mode & 07777))
		return -EPERM;
	if ((to_set & FUSE_SET_ATTR_UID) && attr->st_uid != st.st_uid)
		return -EPERM;
	if ((to_set & FUSE_SET_ATTR_GID) && attr->st_gid != st.st_gid)
		return -EPERM;
	if ((to_set & FUSE_SET_ATTR_SIZE) && attr->st_size != st.st_size)
		return -EPERM;
	if ((to_set & time_bits) &&
	    (n->kind == K_DLQ_MSG || n->kind == K_DLQ_PART))
		return -EPERM;
	return 0;
}
