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
	else if (k == K_GROUP && (j->rc = queen_group_ensure(q, p->queue,
	    aj->name)) == 0)
		j->rc = queen_group_set_owner(q, p->queue, aj->name, &aj->own);
	else if (k == K_KV_NS)
		j->rc = queen_kv_ns_create(q, aj->name, &aj->own);
	if (j->rc < 0) {
		fs_log("mkdir %s: %s (%s)", aj->name, queen_errmsg(q),
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

void
op_mkdir(fuse_req_t req, fuse_ino_t parent, const char *name, mode_t mode)
{
	struct node *p = node_get(parent);
	const struct fuse_ctx *ctx = fuse_req_ctx(req);
	struct admin_job *aj;

	if (!p) {
		fuse_reply_err(req, ENOENT);
		return;
	}
	if (p->kind != K_QUEUES && p->kind != K_GROUPS && p->kind != K_KV) {
		fuse_reply_err(req, EPERM);
		return;
	}
	if (!queen_name_valid(name)) {
		fuse_reply_err(req, EINVAL);
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
	struct pending *pe;
	enum pend_what w = p && p->kind == K_KV_NS ? PW_KV :
	    p && p->kind == K_TIMERS ? PW_TIMER : PW_PUSH;

	if (!p) {
		fuse_reply_err(req, ENOENT);
		return;
	}
	pe = pend_find(w, p->queue, w == PW_PUSH ? p->part : NULL, name,
	    fs_now());
	if (pe && (name[0] == '.' || !pe->pushed)) {
		/* An unpublished file is forgotten, never pushed, even if
		 * it is still open: its bytes are thrown away. */
		pthread_mutex_lock(&fs_lock);
		pe->dead = true;
		pthread_mutex_unlock(&fs_lock);
		stage_remove(pe);
		pend_drop(pe);
		pend_put(pe);
		node_unhash(p, name);
		if (w == PW_PUSH) {
			fuse_reply_err(req, 0);
			return;
		}
	} else {
		pend_put(pe);
	}
	if (p->kind != K_KV_NS && p->kind != K_TIMERS) {
		fuse_reply_err(req, EPERM);
		return;
	}
	if ((aj = admin_new(req, remove_run, remove_reply, p, name)))
		engine_submit(&aj->j);
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
		/* groups/<g> exists for any name; chmod makes it real */
		if ((j->rc = queen_group_ensure(q, n->queue, n->group)) == 0)
			j->rc = queen_group_set_owner(q, n->queue, n->group,
			    &aj->own);
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

void
op_setattr(fuse_req_t req, fuse_ino_t ino, struct stat *attr, int to_set,
    struct fuse_file_info *fi)
{
	struct node *n = node_get(ino);
	struct admin_job *aj;
	int own_bits = FUSE_SET_ATTR_MODE | FUSE_SET_ATTR_UID |
	    FUSE_SET_ATTR_GID;
	int time_bits = FUSE_SET_ATTR_MTIME | FUSE_SET_ATTR_MTIME_NOW |
	    FUSE_SET_ATTR_ATIME | FUSE_SET_ATTR_ATIME_NOW;
	bool retime = false;
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
	if ((to_set & FUSE_SET_ATTR_SIZE) && pe) {
		if ((rc = pend_truncate(pe, attr->st_size, fs_now())) < 0) {
			pend_put(pe);
			fuse_reply_err(req, -rc);
			return;
		}
	}
	pthread_mutex_lock(&fs_lock);
	if (n->kind == K_PENDING && pe && pe->what == PW_TIMER &&
	    (to_set & time_bits)) {
		/* Written in this open: the time goes with the coming push. */
		pe->due_at = (to_set & FUSE_SET_ATTR_MTIME) &&
		    !(to_set & FUSE_SET_ATTR_MTIME_NOW) ?
		    (int64_t)attr->st_mtim.tv_sec * 1000 +
		    attr->st_mtim.tv_nsec / 1000000 : fs_now();
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
	    n->kind == K_TIMER || retime) && (to_set & time_bits)) {
		/* touch on a lease renews it; on a timer, reschedules it */
		if (!(aj = admin_new(req, setattr_run, attr_reply, NULL, NULL)))
			return;
		aj->mtime = (to_set & FUSE_SET_ATTR_MTIME_NOW) ||
		    !(to_set & FUSE_SET_ATTR_MTIME) ? fs_now() :
		    (int64_t)attr->st_mtim.tv_sec * 1000 +
		    attr->st_mtim.tv_nsec / 1000000;
	}
	if (!aj) {
		/* anything else (cp -p, mv, rsync metadata): accepted */
		reply_attr(req, n);
		return;
	}
	aj->n = n;
	engine_submit(&aj->j);
}
