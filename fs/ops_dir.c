/*
 * ops_dir.c - directories: listing (a snapshot taken at opendir, except a
 * partition's log, which is paged by offset at each readdir), mkdir and
 * rmdir of queues, groups and KV namespaces, and setattr (ownership, lease
 * renewal by touch, truncation of pending files).  What a listing holds is
 * whatever core lists; this file only names it.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "fs.h"

#define UNKNOWN_INO 0xffffffffu
#define PAGE_MSGS 256

struct dir_job {
	struct job j;
	struct handle *h;
	struct fuse_file_info fi;
	size_t cap;
	/* readdir of a partition */
	size_t size;
	off_t off;
	char *buf;
	size_t len;
};

static int
add(struct handle *h, size_t *cap, const char *name, mode_t type)
{
	struct dent *d;

	if (h->ndents == *cap) {
		*cap = *cap ? *cap * 2 : 16;
		if (!(d = realloc(h->dents, *cap * sizeof(*d))))
			return -ENOMEM;
		h->dents = d;
	}
	if (!(h->dents[h->ndents].name = strdup(name)))
		return -ENOMEM;
	h->dents[h->ndents++].type = type;
	return 0;
}

/* A message by its file name; an id too long for one is only in api/. */
static int
add_txid(struct handle *h, size_t *cap, const char *txid)
{
	char nm[NAME_MAX_BYTES + 1];

	if (txid_to_name(txid, nm, sizeof(nm)) < 0)
		return 0;
	return add(h, cap, nm, S_IFREG);
}

static int
queue_cb(void *arg, const struct queen_queue_info *qi)
{
	struct dir_job *dj = arg;
	return add(dj->h, &dj->cap, qi->name, S_IFDIR);
}

static int
group_cb(void *arg, const struct queen_group_info *gi)
{
	struct dir_job *dj = arg;
	return strcmp(gi->name, QUEEN_QUEUE_MODE) == 0 ? 0 :
	    add(dj->h, &dj->cap, gi->name, S_IFDIR);
}

static int
part_cb(void *arg, const struct queen_partition_info *pi)
{
	struct dir_job *dj = arg;
	return add(dj->h, &dj->cap, pi->name, S_IFDIR);
}

static int
lease_cb(void *arg, const struct queen_lease_info *li)
{
	struct dir_job *dj = arg;

	lease_seen(li->lease_id, li->first);
	return add(dj->h, &dj->cap, li->lease_id, S_IFDIR);
}

static int
dlq_cb(void *arg, const struct queen_dlq_entry *e)
{
	struct dir_job *dj = arg;
	struct handle *h = dj->h;

	if (h->node->kind == K_DLQ_PART)
		return strcmp(e->partition, h->node->part) ? 0 :
		    add_txid(h, &dj->cap, e->txid);
	for (size_t i = 0; i < h->ndents; i++)
		if (strcmp(h->dents[i].name, e->partition) == 0)
			return 0;
	return add(h, &dj->cap, e->partition, S_IFDIR);
}

static int
name_cb(void *arg, const char *name)
{
	struct dir_job *dj = arg;
	return add(dj->h, &dj->cap, name, S_IFDIR);
}

static int
kv_cb(void *arg, const char *key, const struct queen_kv_value *v)
{
	struct dir_job *dj = arg;
	return add(dj->h, &dj->cap, key, S_IFREG);
}

static int
timer_cb(void *arg, const struct queen_timer_info *ti)
{
	struct dir_job *dj = arg;
	return add(dj->h, &dj->cap, ti->key, S_IFREG);
}

/*
 * A KV namespace or timers/: what the store lists, then what this mount
 * wrote there that the store does not list yet (a staging dot-file, a
 * put or a timer still open for writing or kept for the tick), each
 * name once.  The attempts are taken first: one that leaves the table
 * meanwhile does so after its commit, which the store's list then shows.
 */
static int
list_with_pending(struct dir_job *dj, struct queen *q, enum pend_what w,
    const char *queue)
{
	struct dent *d;
	size_t np = pend_list(w, queue, NULL, fs_now(), true, &d), base, i, k;
	int rc = w == PW_KV ? queen_kv_list(q, queue, kv_cb, dj) :
			      queen_timer_list(q, queue, timer_cb, dj);

	base = dj->h->ndents;
	for (i = 0; i < np; i++) {
		for (k = 0; k < base; k++)
			if (strcmp(dj->h->dents[k].name, d[i].name) == 0)
				break;
		if (k == base && rc == 0)
			rc = add(dj->h, &dj->cap, d[i].name, S_IFREG);
		free(d[i].name);
	}
	free(d);
	return rc;
}

static void
list_run(struct job *j, struct queen *q)
{
	struct dir_job *dj = (struct dir_job *)j;
	struct node *n = dj->h->node;
	struct queen_batch *b = NULL;
	int rc = 0;

	switch (n->kind) {
	case K_QUEUES:
		rc = queen_queue_list(q, queue_cb, dj);
		break;
	case K_GROUPS:
		rc = queen_group_list(q, n->queue, group_cb, dj);
		break;
	case K_PARTS:
		rc = queen_partition_list(q, n->queue, part_cb, dj);
		break;
	case K_LEASED:
		rc = queen_lease_list(q, n->queue, n->group, lease_cb, dj);
		break;
	case K_LEASE:
		if ((rc = queen_lease_read(q, n->lease, false, &b)) < 0) {
			rc = rc == -ESTALE ? 0 : rc;  /* a dead lease is empty */
			break;
		}
		for (size_t i = 0; b && i < b->n && rc == 0; i++)
			rc = add_txid(dj->h, &dj->cap, b->msgs[i].txid);
		queen_batch_free(b);
		break;
	case K_DLQ:
	case K_DLQ_PART:
		rc = queen_dlq_list(q, n->queue, n->group, false, dlq_cb, dj);
		break;
	case K_KV:
		rc = queen_kv_ns_list(q, name_cb, dj);
		break;
	case K_KV_NS:
		rc = list_with_pending(dj, q, PW_KV, n->queue);
		break;
	case K_TIMERS:
		rc = list_with_pending(dj, q, PW_TIMER, n->queue);
		break;
	default:
		break;
	}
	j->rc = rc < 0 ? rc : 0;
}

static void
opendir_reply(struct job *j)
{
	struct dir_job *dj = (struct dir_job *)j;

	if (j->rc < 0) {
		handle_put(dj->h);
		fuse_reply_err(j->req, -j->rc);
		return;
	}
	dj->fi.fh = (uint64_t)(uintptr_t)dj->h;
	if (fuse_reply_open(j->req, &dj->fi) != 0)
		handle_put(dj->h);
}

void
op_opendir(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi)
{
	struct node *n = node_get(ino);
	struct handle *h;
	struct dir_job *dj;
	size_t cap = 0;
	enum kind k;
	const char *nm;

	if (!n) {
		fuse_reply_err(req, ENOENT);
		return;
	}
	if (!node_is_dir(n->kind)) {
		fuse_reply_err(req, ENOTDIR);
		return;
	}
	if (!(h = handle_new(n))) {
		fuse_reply_err(req, ENOMEM);
		return;
	}
	add(h, &cap, ".", S_IFDIR);
	add(h, &cap, "..", S_IFDIR);
	for (size_t i = 0; (nm = node_static_at(n->kind, i, &k)) != NULL; i++)
		add(h, &cap, nm, node_is_dir(k) ? S_IFDIR : S_IFREG);
	if (n->kind == K_QUEUE) {
		struct dent *d;
		size_t np = pend_list(PW_PUSH, n->queue, NULL, fs_now(), false,
		    &d);
		for (size_t i = 0; i < np; i++) {
			add(h, &cap, d[i].name, S_IFREG);
			free(d[i].name);
		}
		free(d);
	}
	switch (n->kind) {
	case K_ROOT: case K_SYS: case K_QUEUE: case K_GROUP: case K_SINK:
	case K_PART: case K_API:
		fi->fh = (uint64_t)(uintptr_t)h;
		if (fuse_reply_open(req, fi) != 0)
			handle_put(h);
		return;
	default:
		break;
	}
	if (!(dj = job_new(sizeof(*dj), list_run, opendir_reply, req))) {
		handle_put(h);
		fuse_reply_err(req, ENOMEM);
		return;
	}
	dj->h = h;
	dj->cap = cap;
	dj->fi = *fi;
	engine_submit(&dj->j);
}

static size_t
fill(fuse_req_t req, char *buf, size_t size, size_t at, const char *name,
    mode_t type, off_t next)
{
	struct stat st;
	size_t need;

	memset(&st, 0, sizeof(st));
	st.st_ino = UNKNOWN_INO;
	st.st_mode = type;
	need = fuse_add_direntry(req, buf + at, size - at, name, &st, next);
	return need > size - at ? 0 : need;
}

/*
 * A partition's log, paged: cookie = offset + 2 ("." and ".." are 1, 2).
 * After its end, the files written into the partition whose publish is
 * kept for the tick: taken once, when the listing first reaches the end
 * of the log (the tick runs on the token holder, as this does, so each
 * is then either in the log or kept), and kept in the handle's entries
 * so the rest of the listing pages through the same ones; their
 * cookies are KEPT_COOKIE + index + 1, past any offset.
 */
#define KEPT_COOKIE ((off_t)1 << 62)

static void
take_kept(struct handle *h)
{
	struct dent *d, *nd;
	size_t nk = pend_list_kept(h->node->queue, h->node->part, &d), i;

	h->kept_at = h->ndents;
	if (nk == 0 ||
	    !(nd = realloc(h->dents, (h->ndents + nk) * sizeof(*nd)))) {
		for (i = 0; i < nk; i++)
			free(d[i].name);
		free(d);
		return;
	}
	h->dents = nd;
	memcpy(h->dents + h->ndents, d, nk * sizeof(*d));
	h->ndents += nk;
	free(d);
}

static void
partdir_run(struct job *j, struct queen *q)
{
	struct dir_job *dj = (struct dir_job *)j;
	struct node *n = dj->h->node;
	struct queen_batch *b = NULL;
	char *buf = malloc(dj->size);
	size_t at = 0, used;
	int64_t from = dj->off <= 2 ? 1 : dj->off - 1;
	bool ended = dj->off >= KEPT_COOKIE; /* the log is listed */
	bool sup[PAGE_MSGS];

	if (!buf) {
		j->rc = -ENOMEM;
		return;
	}
	if (dj->off <= 2 && dj->h->kept_at) {
		/* listed again from the start (rewinddir): the kept files
		 * are taken again, those that landed meanwhile in the log */
		while (dj->h->ndents > dj->h->kept_at)
			free(dj->h->dents[--dj->h->ndents].name);
		dj->h->kept_at = 0;
	}
	if (dj->off < 1 && (used = fill(j->req, buf, dj->size, at, ".",
	    S_IFDIR, 1)))
		at += used;
	if (dj->off < 2 && (used = fill(j->req, buf, dj->size, at, "..",
	    S_IFDIR, 2)))
		at += used;
	for (bool more = !ended; more;) {
		int rc = queen_msg_read(q, n->queue, n->part, from, PAGE_MSGS,
		    false, &b);
		if (rc < 0 || !b || b->n == 0) {
			ended = rc >= 0;
			break;
		}
		/* a name pushed again is listed once, at its newest offset,
		 * which a read of the name reads (if the store cannot say,
		 * every copy is listed) */
		if (queen_msg_superseded(q, b, sup) < 0)
			memset(sup, 0, sizeof(sup));
		for (size_t i = 0; i < b->n; i++) {
			char nm[NAME_MAX_BYTES + 1];

			/* an id too long to be a name is only in api/ */
			if (sup[i] ||
			    txid_to_name(b->msgs[i].txid, nm, sizeof(nm)) < 0) {
				from = b->msgs[i].offset + 1;
				continue;
			}
			used = fill(j->req, buf, dj->size, at, nm,
			    S_IFREG, b->msgs[i].offset + 2);
			if (!used) {
				more = false;
				break;
			}
			at += used;
			from = b->msgs[i].offset + 1;
		}
		queen_batch_free(b);
		b = NULL;
	}
	if (ended && !dj->h->kept_at)
		take_kept(dj->h);
	for (size_t k =
		 dj->off >= KEPT_COOKIE ? (size_t)(dj->off - KEPT_COOKIE) : 0;
	     ended && dj->h->kept_at + k < dj->h->ndents; k++) {
		if (!(used = fill(j->req, buf, dj->size, at,
			  dj->h->dents[dj->h->kept_at + k].name, S_IFREG,
			  KEPT_COOKIE + (off_t)k + 1)))
			break;
		at += used;
	}
	dj->buf = buf;
	dj->len = at;
}

static void
partdir_reply(struct job *j)
{
	struct dir_job *dj = (struct dir_job *)j;

	if (j->rc < 0)
		fuse_reply_err(j->req, -j->rc);
	else
		fuse_reply_buf(j->req, dj->buf, dj->len);
	free(dj->buf);
	handle_put(dj->h);
}

void
op_readdir(fuse_req_t req, fuse_ino_t ino, size_t size, off_t off,
    struct fuse_file_info *fi)
{
	struct handle *h = handle_get(fi);
	struct dir_job *dj;
	char *buf = NULL;
	size_t at = 0, used;

	if (h->node->kind == K_PART &&
	    (dj = job_new(sizeof(*dj), partdir_run, partdir_reply, req))) {
		dj->h = h;
		dj->size = size;
		dj->off = off;
		engine_submit(&dj->j);
		return;
	}
	if (h->node->kind == K_PART || !(buf = malloc(size))) {
		fuse_reply_err(req, ENOMEM);
		handle_put(h);
		return;
	}
	for (size_t i = (size_t)off; i < h->ndents; i++) {
		used = fill(req, buf, size, at, h->dents[i].name,
		    h->dents[i].type, (off_t)i + 1);
		if (!used)
			break;
		at += used;
	}
	fuse_reply_buf(req, buf, at);
	free(buf);
	handle_put(h);
}

void
op_releasedir(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi)
{
	handle_put((struct handle *)(uintptr_t)fi->fh);
	fuse_reply_err(req, 0);
}

/*
 * df: the room on the disk that holds what a close() confirms before it
 * returns, the spool's (beside the database on SQLite; on a server's
 * store the mount's own, whose pushes wait there until published).  A
 * server's room is not known here.  Inode counts are not the mount's.
 */
void
op_statfs(fuse_req_t req, fuse_ino_t ino)
{
	struct statvfs sv, disk;

	memset(&sv, 0, sizeof(sv));
	sv.f_bsize = sv.f_frsize = 4096;
	if (stage_dir()[0] && statvfs(stage_dir(), &disk) == 0) {
		sv.f_bsize = disk.f_bsize;
		sv.f_frsize = disk.f_frsize;
		sv.f_blocks = disk.f_blocks;
		sv.f_bfree = disk.f_bfree;
		sv.f_bavail = disk.f_bavail;
	}
	sv.f_namemax = QUEEN_NAME_MAX;
	fuse_reply_statfs(req, &sv);
}
