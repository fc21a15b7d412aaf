/*
 * ops_dlq.c - managing dead letters through the mount: a dead letter
 * dlq/<p>/<name> renamed into its queue's directory (or into
 * partitions/<p>/) is requeued under the same name; unlinked, it is
 * purged.  Both need write permission on the directory that holds dlq/
 * (the queue's, or the group's).  Core does the work (core/dlq.c).
 * Nothing here answers EINVAL, which mv shows as "subdirectory of itself".
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fs.h"

struct dlq_job {
	struct job j;
	struct node *dir;       /* dlq/<p>/ */
	fuse_ino_t target;      /* where a requeued name appears (or 0) */
	char *name, *what, *queue, *group, *part;
	bool requeue;
};

static void
dlq_run(struct job *j, struct queen *q)
{
	struct dlq_job *dj = (struct dlq_job *)j;
	char tx[QUEEN_TXID_MAX + 1];
	const char *txid = name_to_txid(dj->name, tx, sizeof(tx)) == 0 ? tx :
	    dj->name;
	int64_t off = 0;

	if (dj->requeue)
		j->rc = queen_dlq_requeue(q, dj->queue, dj->group, dj->part,
		    txid, &off);
	else
		j->rc = queen_dlq_purge(q, dj->queue, dj->group, dj->part,
		    txid);
	if (j->rc == -EINVAL)
		j->rc = -ENOENT;  /* a name no dead letter can have */
	if (j->rc < 0) {
		fs_log("%s %s: %s (%s)", dj->requeue ? "requeue" : "purge",
		    dj->what, queen_errmsg(q), errname(j->rc));
		return;
	}
	if (dj->requeue) {
		fs_log("requeue %s: pushed again at offset %lld of %s/%s",
		    dj->what, (long long)off, dj->queue, dj->part);
		j->notify = strdup(dj->queue);
	} else {
		fs_log("purge %s", dj->what);
	}
}

static void
dlq_reply(struct job *j)
{
	struct dlq_job *dj = (struct dlq_job *)j;

	if (j->rc == 0) {
		node_unhash(dj->dir, dj->name);
		if (dj->target)
			inval_later(dj->target, dj->name);
	}
	reply_rc(j);
	free(dj->name);
	free(dj->what);
	free(dj->queue);
	free(dj->group);
	free(dj->part);
}

/* Write permission where dlq/ is: the queue's directory or the group's. */
static int
may_manage(fuse_req_t req, struct node *dir, const char *what)
{
	struct node *holder = dir->parent ? dir->parent->parent : NULL;
	struct cred c;
	struct stat st;

	if (!holder)
		return -ENOENT;
	cred_of(req, &c);
	node_attr(holder, &st);
	if (cred_may(&c, st.st_uid, st.st_gid, st.st_mode, 2))
		return 0;
	fs_log("%s: uid %u may not write %s (%u:%u %03o) (EACCES)", what,
	    (unsigned)c.uid, dir->group ? "the group" : "the queue",
	    (unsigned)st.st_uid, (unsigned)st.st_gid,
	    (unsigned)(st.st_mode & 07777));
	return -EACCES;
}

static int
dlq_submit(fuse_req_t req, struct node *dir, const char *name,
    fuse_ino_t target, const char *what, bool requeue)
{
	struct dlq_job *dj;
	int rc;

	if ((rc = may_manage(req, dir, what)) < 0)
		return rc;
	if (!(dj = job_new(sizeof(*dj), dlq_run, dlq_reply, req)))
		return -ENOMEM;
	dj->j.write = true;
	dj->dir = dir;
	dj->target = target;
	dj->requeue = requeue;
	dj->name = strdup(name);
	dj->what = strdup(what);
	dj->queue = dir->queue ? strdup(dir->queue) : NULL;
	dj->group = dir->group ? strdup(dir->group) : NULL;
	dj->part = dir->part ? strdup(dir->part) : NULL;
	if (!dj->name || !dj->what || !dj->queue || !dj->part ||
	    (dir->group && !dj->group)) {
		dj->j.rc = -ENOMEM;
		dlq_reply(&dj->j);
		free(dj);
		return 0;
	}
	engine_submit(&dj->j);
	return 0;
}

/*
 * dlq/<p>/<name> -> queues/<q>/<name> or queues/<q>/partitions/<p>/<name>,
 * the same queue, partition and name.  0 when submitted, or the errno.
 */
int
dlq_rename(fuse_req_t req, struct node *p, const char *name, struct node *np,
    const char *newname, const char *what)
{
	const char *why = NULL;

	if (strcmp(name, newname) != 0)
		why = "a dead letter keeps its name";
	else if (!p->queue || !np->queue || strcmp(p->queue, np->queue) != 0)
		why = "a dead letter goes back into its own queue";
	else if (np->kind == K_PART && strcmp(np->part, p->part) != 0)
		why = "a dead letter goes back into its own partition";
	else if (np->kind != K_QUEUE && np->kind != K_PART)
		why = "requeue into queues/<q>/ or its partitions/<p>/";
	if (why) {
		fs_log("rename %s: %s (EPERM)", what, why);
		return -EPERM;
	}
	return dlq_submit(req, p, name, np->ino, what, true);
}

/* unlink dlq/<p>/<name>: purge it.  0 when submitted, or the errno. */
int
dlq_unlink(fuse_req_t req, struct node *p, const char *name)
{
	char path[512], what[800];

	node_path(p, path, sizeof(path));
	snprintf(what, sizeof(what), "%s/%s", path, name);
	return dlq_submit(req, p, name, 0, what, false);
}
