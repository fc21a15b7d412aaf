/*
 * ops_ack.c - rename(2), the only way to acknowledge: a leased message (or
 * a whole lease, or a message of the log) renamed into ack/, failed/,
 * retry/ or dlq/ becomes one queen_ack call, and its result becomes the
 * rename's errno.  Renaming a staged dot-file to a plain name in the same
 * directory publishes it (ops_push.c).  Nothing here ever answers EXDEV.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fs.h"

#ifndef RENAME_NOREPLACE
#define RENAME_NOREPLACE (1 << 0)
#endif

struct ack_job {
	struct job j;
	struct node *srcdir;
	fuse_ino_t sink;        /* where the name went */
	fuse_ino_t leased;      /* a leased file's: leased/ (else 0) */
	char *name;             /* the source's name (and the target's) */
	char *what;             /* "from -> to", for the log */
	const char *status;
	char *queue, *part, *group, *lease;
	char *noted;            /* the name of the error note the run read
				 * (taken at the reply, once committed) */
	char *notekey;          /* what the notes are kept under: the lease,
				 * or the message's queue and partition */
	bool whole;             /* leased/L -> ack/L */
	bool acked;             /* the run acked something */
	bool released;          /* the ack ended the lease */
	bool noop;              /* it was at or below the cursor */
};

static bool
same(const char *a, const char *b)
{
	return a == b || (a && b && strcmp(a, b) == 0);
}

static void
ack_run(struct job *j, struct queen *q)
{
	struct ack_job *aj = (struct ack_job *)j;
	struct queen_ack_item it;
	struct queen_ack_result res;
	struct queen_lease_info li;
	struct queen_batch *b = NULL;
	const char *reason = NULL;
	char *error = NULL;
	int rc;

	char tx[QUEEN_TXID_MAX + 1], nm[NAME_MAX_BYTES + 1];
	const char *name = aj->name;  /* notes are kept by file name */

	/* a run again starts afresh: what the run before kept was rolled
	 * back, and the note it read is still there */
	free(aj->noted);
	aj->noted = NULL;
	aj->acked = aj->released = aj->noop = false;
	memset(&it, 0, sizeof(it));
	memset(&res, 0, sizeof(res));
	it.status = aj->status;
	it.group = aj->group;
	it.txid = name_to_txid(aj->name, tx, sizeof(tx)) == 0 ? tx : aj->name;
	if (aj->lease && !aj->whole) {
		/* the ack finds the lease's partition itself, its cursor
		 * read (locked) with the lease and the message */
		it.lease_id = aj->lease;
		error = note_get(aj->notekey, name);
		it.error = error;
	} else if (aj->lease) {
		if ((rc = queen_lease_get(q, aj->lease, &li)) < 0) {
			j->rc = rc == -ENOENT ? -ESTALE : rc;
			reason = rc == -ESTALE || rc == -ENOENT ? QUEEN_E_LEASE :
			    queen_errmsg(q);
			goto out;
		}
		it.partition_uuid = li.partition_uuid;
		it.lease_id = aj->lease;
		if ((rc = queen_lease_read(q, aj->lease, false, &b)) < 0 ||
		    !b || b->n == 0) {
			j->rc = rc < 0 ? rc : 0;
			reason = rc < 0 ? queen_errmsg(q) : QUEEN_E_LEASE;
			goto out;
		}
		/* completed: the span's end; failed/retry: its start */
		it.txid =
		    b->msgs[strcmp(aj->status, "completed") == 0 ? b->n - 1 : 0]
			.txid;
		name = txid_to_name(it.txid, nm, sizeof(nm)) == 0 ? nm :
								    it.txid;
		error = note_get(aj->notekey, name);
		it.error = error;
	} else {
		it.queue = aj->queue;
		it.partition = aj->part;
		/* a note set on the stored message (partitions/<p>/<x>) */
		error = note_get(aj->notekey, name);
		it.error = error;
	}
	/* the note goes once the ack is committed (ack_reply) */
	if (error && !(aj->noted = strdup(name))) {
		j->rc = -ENOMEM;
		reason = "out of memory";
		goto out;
	}
	rc = queen_ack(q, &it, 1, &res);
	if (rc < 0) {
		/* a deadlock or a lock timeout: the engine runs it again */
		j->rc = rc == -EBUSY ? -EBUSY : -EIO;
		reason = queen_errmsg(q);
	} else if (!res.success) {
		j->rc = res.err ? res.err : -EIO;
		reason = res.error;
	} else {
		j->rc = 0;
		aj->acked = true;
		aj->released = res.lease_released;
		aj->noop = res.noop;
		j->notify = strdup(aj->queue);
	}
out:
	if (j->rc == -EBUSY && engine_will_redo(j))
		fs_logl(FSL_INFO, "rename %s: %s (to run again)", aj->what,
		    reason ? reason : "");
	else if (j->rc < 0)
		fs_log("rename %s: %s (%s)", aj->what, reason ? reason : "",
		    errname(j->rc == -EBUSY ? -EIO : j->rc));
	free(error);
	queen_batch_free(b);
}

static void
ack_reply(struct job *j)
{
	struct ack_job *aj = (struct ack_job *)j;

	if (j->rc == -EBUSY)
		j->rc = -EIO; /* no run again left (ack_run logged it) */
	if (j->rc == 0 && aj->acked) {
		/* committed: the mount's view of the lease changes now */
		if (aj->lease)
			lease_acked(aj->lease, aj->whole ? NULL : aj->name);
		if (aj->noted)
			free(note_take(aj->notekey, aj->noted));
		/* a repeat of a done ack answers 0 but acks nothing */
		if (!aj->noop)
			engine_count_ack();
	}
	if (j->rc == 0) {
		node_unhash(aj->srcdir, aj->name);
		/* the kernel moved the entry into the sink: let it go */
		inval_later(aj->sink, aj->name);
		/* and a lease that ended takes with it the names of its other
		 * files a reader looked up (a batch of 1000 kept 1000 nodes) */
		if (aj->released && aj->leased)
			inval_later(aj->leased, aj->lease);
	}
	reply_rc(j);
	free(aj->name);
	free(aj->what);
	free(aj->queue);
	free(aj->part);
	free(aj->group);
	free(aj->lease);
	free(aj->noted);
	free(aj->notekey);
}

static char *
dup_or_null(const char *s)
{
	return s ? strdup(s) : NULL;
}

static int
ack_rename(fuse_req_t req, struct node *p, const char *name,
    struct node *np, const char *newname, const char *what)
{
	struct ack_job *aj;

	if (strcmp(name, newname) != 0 || !same(p->queue, np->queue))
		return -EINVAL;
	switch (p->kind) {
	case K_LEASE:
		if (!same(p->group, np->group))
			return -EINVAL;
		break;
	case K_LEASED:
		if (!same(p->group, np->group) || np->kind == K_DLQ)
			return -EINVAL;
		break;
	case K_PART:
		break;
	default:
		return -EINVAL;
	}
	if (!(aj = job_new(sizeof(*aj), ack_run, ack_reply, req)))
		return -ENOMEM;
	aj->j.write = true;
	/* all or nothing in the store, and what it changes in the mount
	 * waits for the commit: it runs again after a deadlock or a lost
	 * claim of the batch it is in */
	aj->j.redo = true;
	aj->srcdir = p;
	aj->sink = np->ino;
	aj->leased = p->kind == K_LEASE && p->parent ? p->parent->ino : 0;
	aj->status = np->status;
	aj->whole = p->kind == K_LEASED;
	aj->name = strdup(name);
	aj->what = strdup(what);
	aj->queue = dup_or_null(p->queue);
	aj->part = dup_or_null(p->part);
	aj->group = dup_or_null(np->group);
	aj->lease = p->kind == K_LEASED ? strdup(name) : dup_or_null(p->lease);
	if (p->kind == K_PART) {
		char key[2 * QUEEN_NAME_MAX + 8];

		note_msg_key(p->queue, p->part, key, sizeof(key));
		aj->notekey = strdup(key);
	} else {
		aj->notekey = dup_or_null(aj->lease);
	}
	if (!aj->name || !aj->what || !aj->queue ||
	    (!aj->notekey && (p->kind == K_PART || aj->lease))) {
		aj->j.rc = -ENOMEM;
		ack_reply(&aj->j);
		free(aj);
		return 0;
	}
	engine_submit(&aj->j);
	return 0;
}

/* Within one queue or partition dir: publish or rename a staged file. */
static int
stage_rename(fuse_req_t req, struct node *p, const char *name,
    const char *newname)
{
	enum pend_what w = p->kind == K_TIMERS ? PW_TIMER : PW_PUSH;
	struct pending *pe, *old;

	if (name[0] != '.')
		return -EINVAL;
	if (!(pe = pend_find(w, p->queue, p->part, name, fs_now())))
		return -ENOENT;
	if (node_staging_name(newname)) {
		old = pend_find(w, p->queue, p->part, newname, fs_now());
		if (old)
			pend_drop(old);
		pend_put(old);
		pend_rename(pe, newname);
		pend_put(pe);
		node_move(p, name, newname);
		fuse_reply_err(req, 0);
		return 0;
	}
	if ((w == PW_TIMER ? !queen_name_valid(newname) :
	    !name_is_msg(newname)) ||
	    (p->kind == K_QUEUE && node_is_reserved(newname))) {
		pend_put(pe);
		return -EINVAL;
	}
	if (pend_kept_as(w, p->queue, p->part, newname)) {
		char path[512];

		/* it would land first and make the kept one its duplicate:
		 * that close() said the kept bytes will be published */
		pend_put(pe);
		node_path(p, path, sizeof(path));
		fs_log("rename %s/%s -> %s: the publish of %s is kept for the "
		       "tick, which publishes it (EPERM)",
		    path, name, newname, newname);
		fuse_reply_err(req, EPERM);
		return 0;
	}
	push_rename(req, p, pe, name, newname);
	return 0;
}

void
op_rename(fuse_req_t req, fuse_ino_t parent, const char *name,
    fuse_ino_t newparent, const char *newname, unsigned int flags)
{
	struct node *p = node_get(parent), *np = node_get(newparent);
	char from[512], to[512], what[1100];
	int rc = -EINVAL;

	if (!p || !np) {
		fuse_reply_err(req, ENOENT);
		return;
	}
	node_path(p, from, sizeof(from));
	node_path(np, to, sizeof(to));
	snprintf(what, sizeof(what), "%s/%s -> %s/%s", from, name, to,
	    newname);
	if (flags & ~RENAME_NOREPLACE)
		rc = -EINVAL;
	else if (p->kind == K_DLQ_PART) {
		if ((rc = dlq_rename(req, p, name, np, newname, what)) < 0)
			fuse_reply_err(req, -rc);
		return;
	} else if (np->kind == K_SINK || np->kind == K_DLQ)
		rc = ack_rename(req, p, name, np, newname, what);
	else if (p == np && (p->kind == K_QUEUE || p->kind == K_PART ||
	    p->kind == K_TIMERS))
		rc = stage_rename(req, p, name, newname);
	if (rc < 0) {
		fs_log("rename %s: %s (%s)", what, rc == -EINVAL ?
		    "not an ack (leased/<lease>/<name> or partitions/<p>/<name> "
		    "into ack/ failed/ retry/ dlq/ under the same name) nor a "
		    "dot-file published in its own directory" :
		    rc == -ENOENT ? "no such staged file" : "out of memory",
		    errname(rc));
		fuse_reply_err(req, -rc);
	}
}
