/*
 * ops_file.c - open files: generated text (config, stats, sys files) rendered
 * at open, payloads read at open, pending files (create + write + close =
 * push, put or schedule).  Control writes (config, seek) are gathered in
 * ops_ctl.c, reads of `next` and poll live in ops_next.c, renames in
 * ops_ack.c.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "fs.h"

struct open_job {
	struct job j;
	struct handle *h;
	struct fuse_file_info fi;
	struct cred c;      /* generated text shows what its reader may see */
};

static void
open_run(struct job *j, struct queen *q)
{
	struct open_job *oj = (struct open_job *)j;
	struct handle *h = oj->h;
	struct node *n = h->node;
	struct msginfo mi;

	switch (n->kind) {
	case K_README:
		j->rc = text_readme(&h->text, &h->len);
		break;
	case K_SYS_VERSION:
		h->text = strdup(QUEENFS_VERSION "\n");
		h->len = h->text ? strlen(h->text) : 0;
		j->rc = h->text ? 0 : -ENOMEM;
		break;
	case K_SYS_STATS:
		j->rc = text_sys_stats(q, &oj->c, &h->text, &h->len);
		break;
	case K_SYS_QUEUES:
		j->rc = text_sys_queues(q, &oj->c, &h->text, &h->len);
		break;
	case K_SYS_METRICS:
		j->rc = text_metrics(q, &oj->c, &h->text, &h->len);
		break;
	case K_SYS_HEALTH:
		j->rc = text_health(q, &h->text, &h->len);
		break;
	case K_CONFIG:
		j->rc = text_config(q, n, &h->text, &h->len);
		break;
	case K_STATS:
		j->rc = text_stats(q, n, &h->text, &h->len);
		break;
	default:
		if ((j->rc = msg_info(q, n, true, &mi)) < 0)
			break;
		h->text = mi.payload;
		h->len = mi.len;
		mi.payload = NULL;
		msginfo_release(&mi);
		break;
	}
}

static void
open_reply(struct job *j)
{
	struct open_job *oj = (struct open_job *)j;

	if (j->rc < 0) {
		handle_put(oj->h);
		fuse_reply_err(j->req, -j->rc);
		return;
	}
	oj->fi.fh = (uint64_t)(uintptr_t)oj->h;
	if (fuse_reply_open(j->req, &oj->fi) != 0)
		handle_put(oj->h);
}

/*
 * An open for write: its own attempt under the name (first publish wins,
 * the others are duplicates), so two opens never share bytes.  Dot-files
 * are ordinary files, shared by every open of them.
 */
static int
open_pending(struct node *n, struct handle *h, int flags)
{
	enum pend_what w = n->kind == K_KV_KEY ? PW_KV :
	    n->kind == K_TIMER ? PW_TIMER : PW_PUSH;
	struct pending *pe;

	pthread_mutex_lock(&fs_lock);
	if (n->kind == K_PENDING && n->pend->name[0] == '.') {
		/* read under the lock: a lookup may swap (and free) n->pend */
		pe = n->pend;
		pe->refs++;
		pe->excl = false;  /* it exists: this open is not the create */
		pthread_mutex_unlock(&fs_lock);
		if (flags & O_TRUNC)
			pend_truncate(pe, 0, fs_now());
	} else {
		if (n->kind == K_PENDING)
			w = n->pend->what;
		pthread_mutex_unlock(&fs_lock);
		pe = pend_new(w, n->queue, w == PW_PUSH ? n->part : NULL,
		    n->name, fs_now());
		if (!pe)
			return -ENOMEM;
		pthread_mutex_lock(&fs_lock);  /* pe is in the table already */
		pe->dir = n->parent ? n->parent->ino : 0;
		pe->dirty = (flags & O_TRUNC) != 0;
		pe->based = w != PW_PUSH && !(flags & O_TRUNC);
		pe->refs++;
		pend_put(n->pend);
		n->pend = pe;
		n->kind = K_PENDING;
		pthread_mutex_unlock(&fs_lock);
	}
	h->pend = pe;
	h->writable = true;
	return 0;
}

static void
log_refused(struct node *n, const char *why)
{
	char path[512];

	node_path(n, path, sizeof(path));
	fs_log("open %s: %s", path, why);
}

/*
 * A read of next takes a lease, and with auto_ack commits the group's
 * cursor: it changes the queue, so it needs what a write there needs.
 * The check is on the directory that holds next (the queue's, or the
 * group's, which inherits the queue's owner until given its own).
 */
static int
may_pop(fuse_req_t req, struct node *n)
{
	struct cred c;
	struct stat st;
	char path[512];

	cred_of(req, &c);
	node_attr(n->parent, &st);
	if (cred_may(&c, st.st_uid, st.st_gid, st.st_mode, 2))
		return 0;
	node_path(n, path, sizeof(path));
	fs_log("open %s: uid %u may not write %s (%u:%u %03o), and a pop "
	    "changes it (EACCES)", path, (unsigned)c.uid,
	    n->group ? "the group" : "the queue", (unsigned)st.st_uid,
	    (unsigned)st.st_gid, (unsigned)(st.st_mode & 07777));
	return -EACCES;
}

void
op_open(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi)
{
	struct node *n = node_get(ino);
	int acc = fi->flags & O_ACCMODE, rc = 0;
	bool wr = acc != O_RDONLY, rd = acc != O_WRONLY;
	struct handle *h;
	struct open_job *oj;

	if (!n) {
		fuse_reply_err(req, ENOENT);
		return;
	}
	if (!(h = handle_new(n))) {
		fuse_reply_err(req, ENOMEM);
		return;
	}
	fi->direct_io = 1;
	switch (n->kind) {
	case K_NEXT:
		fi->nonseekable = 1;
		h->nonblock = (fi->flags & O_NONBLOCK) != 0;
		rc = wr ? -EACCES : may_pop(req, n);
		rd = false;
		break;
	case K_SEEK:
		h->writable = wr;
		rd = false;  /* reads as empty: nothing to render */
		break;
	case K_LEASE_MSG:
		if (wr) {
			rc = -EPERM;
			log_refused(n, "a leased message's payload cannot "
			    "change (EPERM)");
		}
		break;
	case K_CONFIG:
		h->writable = wr;
		break;
	case K_API_FILE:
		fi->nonseekable = 1;
		h->writable = wr;
		rd = false;  /* the answer is made at the first read */
		break;
	case K_MSG:
	case K_PENDING:
	case K_KV_KEY:
	case K_TIMER:
		if (wr)
			rc = open_pending(n, h, fi->flags);
		if (n->kind == K_PENDING) {
			struct pending *kp;

			pthread_mutex_lock(&fs_lock);
			/* an open that wrote nothing (touch) left the node on
			 * its attempt: a kept one of the name answers (not
			 * for one published or written: it is the newer) */
			if (!h->pend && !pend_held(n->pend) &&
			    !n->pend->pushed && !n->pend->dirty &&
			    (kp = pend_kept_of(n->pend)) != NULL) {
				pend_put(n->pend);
				n->pend = kp;
			}
			if (!h->pend && pend_held(n->pend)) {
				h->pend = n->pend;
				h->pend->refs++;
				h->pend->readers++;
				h->reader = true;
			}
			/* read from the buffer, or from the store once the
			 * published bytes were let go */
			rd = !h->pend;
			pthread_mutex_unlock(&fs_lock);
		}
		break;
	default:
		rc = wr ? -EACCES : 0;
		break;
	}
	/*
	 * A handle that cannot write has nothing for close(2) to report:
	 * the kernel need not send FLUSH (two requests of every cycle).
	 */
	fi->noflush = !wr && n->kind != K_API_FILE;
	if (rc < 0 || !rd) {
		if (rc < 0) {
			handle_put(h);
			fuse_reply_err(req, -rc);
			return;
		}
		fi->fh = (uint64_t)(uintptr_t)h;
		if (fuse_reply_open(req, fi) != 0)
			handle_put(h);
		return;
	}
	if (!(oj = job_new(sizeof(*oj), open_run, open_reply, req))) {
		handle_put(h);
		fuse_reply_err(req, ENOMEM);
		return;
	}
	oj->h = h;
	oj->fi = *fi;
	cred_of(req, &oj->c);
	/* what reads only the store and needs no publish under way (the
	 * sys/ files read the engine's own state, which is its thread's;
	 * a queue's stats count the pushes whose close() returned) */
	switch (n->kind) {
	case K_CONFIG:
	case K_MSG:
	case K_PENDING:
	case K_LEASE_MSG:
	case K_DLQ_MSG:
	case K_KV_KEY:
	case K_TIMER:
		oj->j.reader = true;
		break;
	default:
		break;
	}
	engine_submit(&oj->j);
}

/* Where a new file may be made, and what it becomes. */
static int
create_kind(struct node *p, const char *name, enum pend_what *w)
{
	switch (p->kind) {
	case K_QUEUE:
		if (node_is_reserved(name))
			return -EEXIST;
		/* fall through */
	case K_PART:
		*w = PW_PUSH;
		return name_is_msg(name) || node_staging_name(name) ? 0 :
		    -EINVAL;
	case K_KV_NS:
		*w = PW_KV;
		return queen_name_valid(name) ? 0 : -EINVAL;
	case K_TIMERS:
		*w = PW_TIMER;
		return queen_name_valid(name) || node_staging_name(name) ? 0 :
		    -EINVAL;
	default:
		/* ack/ failed/ retry/ dlq/ leased/: mv's copy must fail */
		return -EPERM;
	}
}

static int
make_pending(struct node *p, const char *name, int flags, struct node **out)
{
	enum pend_what w;
	struct pending *pe;
	struct node *n;
	int rc;

	if ((rc = create_kind(p, name, &w)) < 0)
		return rc;
	pe = pend_new(w, p->queue, w == PW_PUSH ? p->part : NULL, name,
	    fs_now());
	if (!pe)
		return -ENOMEM;
	pe->dir = p->ino;
	pe->excl = (flags & O_EXCL) != 0;
	if (!(n = node_child(p, name, K_PENDING))) {
		pend_drop(pe);
		pend_put(pe);
		return -ENOMEM;
	}
	pthread_mutex_lock(&fs_lock);
	pend_put(n->pend);
	n->pend = pe;
	pthread_mutex_unlock(&fs_lock);
	*out = n;
	return 0;
}

void
op_create(fuse_req_t req, fuse_ino_t parent, const char *name, mode_t mode,
    struct fuse_file_info *fi)
{
	struct node *p = node_get(parent), *n;
	struct fuse_entry_param e;
	struct handle *h;
	int rc;

	if (!p) {
		fuse_reply_err(req, ENOENT);
		return;
	}
	if ((rc = make_pending(p, name, fi->flags, &n)) < 0) {
		if (rc == -EINVAL || rc == -EPERM)
			fs_log("create %s: %s", name, rc == -EINVAL ?
			    "not a valid name here (EINVAL)" :
			    "no files can be made here (EPERM)");
		fuse_reply_err(req, -rc);
		return;
	}
	if (!(h = handle_new(n))) {
		node_forget(n, 1);
		fuse_reply_err(req, ENOMEM);
		return;
	}
	pthread_mutex_lock(&fs_lock);
	h->pend = n->pend;
	h->pend->refs++;
	pthread_mutex_unlock(&fs_lock);
	h->writable = true;
	fi->direct_io = 1;
	fi->fh = (uint64_t)(uintptr_t)h;
	memset(&e, 0, sizeof(e));
	e.ino = n->ino;
	e.generation = 1;
	node_attr(n, &e.attr);
	if (fuse_reply_create(req, &e, fi) != 0) {
		handle_put(h);
		node_forget(n, 1);
	}
}

/*
 * mknod(S_IFREG) would make a file that no close ever publishes: refused,
 * so that its 0 never stands for a push that does not happen.  create(2)
 * (open with O_CREAT) is the way to make a file here.
 */
void
op_mknod(fuse_req_t req, fuse_ino_t parent, const char *name, mode_t mode,
    dev_t rdev)
{
	fs_log("mknod %s: only open(O_CREAT) makes files here (EPERM)", name);
	fuse_reply_err(req, EPERM);
}

void
op_read(fuse_req_t req, fuse_ino_t ino, size_t size, off_t off,
    struct fuse_file_info *fi)
{
	struct handle *h = handle_get(fi);

	if (h->node->kind == K_NEXT) {
		next_read(req, h, size, off);  /* keeps the reference */
		return;
	}
	if (h->node->kind == K_API_FILE) {
		api_read(req, h, size, off);  /* keeps the reference */
		return;
	}
	if (h->pend) {
		char *b = malloc(size ? size : 1);
		ssize_t got = b ? pend_read(h->pend, b, size, off) : -ENOMEM;

		if (got < 0)
			fuse_reply_err(req, (int)-got);
		else
			fuse_reply_buf(req, b, (size_t)got);
		free(b);
	} else {
		reply_slice(req, h->text, h->len, size, off);
	}
	handle_put(h);
}

/*
 * A KV value or timer opened without O_TRUNC starts an empty attempt (as
 * a message does), not one holding the stored bytes: a write past the
 * attempt's end, as `>>` makes at the stored size, would publish zeros
 * and the new bytes.  It is refused, and the stored value stays.
 */
static int
based_gap(struct node *n, struct pending *pe, off_t off)
{
	char path[512];
	size_t len;
	bool based;

	pthread_mutex_lock(&fs_lock);
	based = pe->based;
	len = pe->len;
	pthread_mutex_unlock(&fs_lock);
	if (!based || off <= (off_t)len)
		return 0;
	node_path(n, path, sizeof(path));
	fs_log("write %s at byte %lld: an open without O_TRUNC starts an "
	       "empty %s, so this would leave a hole (an append is not "
	       "kept: write the whole value with >) (EINVAL)",
	    path, (long long)off, pe->what == PW_KV ? "value" : "timer");
	return -EINVAL;
}

void
op_write(fuse_req_t req, fuse_ino_t ino, const char *buf, size_t size,
    off_t off, struct fuse_file_info *fi)
{
	struct handle *h = handle_get(fi);
	struct node *n = h->node;
	char path[512];
	int rc = 0;

	if (h->writable && n->kind == K_API_FILE) {
		if ((rc = api_write(h, buf, size, off)) == 0)
			fuse_reply_write(req, size);
		else
			fuse_reply_err(req, -rc);
		handle_put(h);
		return;
	}
	if (!h->writable || h->pend) {
		if (!h->writable)
			rc = -EBADF;
		else if ((rc = pend_refused(h->pend)) < 0)
			;
		else if ((rc = based_gap(n, h->pend, off)) < 0)
			push_refuse(h->pend, rc);
		else if (off >= 0 && (rc = push_write_check(h->pend,
		    (size_t)off + size)) < 0)
			push_refuse(h->pend, rc);
		else if ((rc = pend_write(h->pend, buf, size, off,
		    fs_now())) < 0)
			push_refuse(h->pend, rc);  /* never a message with a hole */
		if (rc == 0)
			fuse_reply_write(req, size);
		if (rc < 0)
			fuse_reply_err(req, -rc);
		handle_put(h);
		return;
	}
	rc = ctl_write(h, buf, size);
	handle_put(h);
	if (rc < 0 && rc != -EINVAL) {  /* ctl_write logged its EINVAL */
		node_path(n, path, sizeof(path));
		fs_log("write %s: %s (%s)", path, rc == -EFBIG ?
		    "more than 4096 bytes in one open" : "out of memory",
		    errname(rc));
	}
	if (rc < 0) {
		fuse_reply_err(req, -rc);
		return;
	}
	fuse_reply_write(req, size);
}
