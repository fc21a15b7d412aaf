/*
 * ops_xattr.c - user.queen.* extended attributes: the facts of a leased
 * message, a message of the log or a dead letter (read-only, from core),
 * the error text to attach to the next ack of a leased message (kept in
 * note.c until the rename), and a KV key's TTL.  Attributes set on a
 * pending file by cp/mv/rsync are accepted and ignored.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fs.h"

#define X_PREFIX "user.queen."

static const char *const lease_x[] = { "partition", "partition_id",
	"offset", "transaction_id", "lease_expires_at", "retry_count",
	"created_at", NULL };
static const char *const msg_x[] = { "partition", "partition_id", "offset",
	"transaction_id", "created_at", NULL };
static const char *const dlq_x[] = { "partition", "transaction_id",
	"offset", "error", "group", "retry_count", "created_at", "failed_at",
	NULL };
static const char *const kv_x[] = { "ttl", NULL };

static const char *const *
names_of(enum kind k)
{
	switch (k) {
	case K_LEASE_MSG:
		return lease_x;
	case K_MSG:
		return msg_x;
	case K_DLQ_MSG:
		return dlq_x;
	case K_KV_KEY:
		return kv_x;
	default:
		return NULL;
	}
}

static bool
has_name(enum kind k, const char *attr)
{
	const char *const *t = names_of(k);

	for (; t && *t; t++)
		if (strcmp(*t, attr) == 0)
			return true;
	return k == K_LEASE_MSG && strcmp(attr, "error") == 0;
}

struct xattr_job {
	struct job j;
	struct node *n;
	char *attr;     /* without the prefix */
	size_t size;
	char *value;
	size_t len;
	int64_t ttl_ms;
};

static int
format_value(struct queen *q, struct node *n, const char *a,
    struct msginfo *mi, char *buf, size_t len)
{
	char tx[QUEEN_TXID_MAX + 1];

	if (strcmp(a, "partition") == 0)
		snprintf(buf, len, "%s", mi->partition);
	else if (strcmp(a, "partition_id") == 0)
		snprintf(buf, len, "%s", mi->partition_uuid);
	else if (strcmp(a, "transaction_id") == 0 &&
	    name_to_txid(n->name, tx, sizeof(tx)) == 0)
		snprintf(buf, len, "%s", tx);  /* the id, not its file name */
	else if (strcmp(a, "transaction_id") == 0)
		snprintf(buf, len, "%s", n->name);
	else if (strcmp(a, "group") == 0)
		snprintf(buf, len, "%s", mi->group);
	else if (strcmp(a, "offset") == 0)
		snprintf(buf, len, "%lld", (long long)mi->offset);
	else if (strcmp(a, "retry_count") == 0)
		snprintf(buf, len, "%lld", (long long)mi->retry_count);
	else if (strcmp(a, "created_at") == 0)
		ctl_time_format(mi->created_at, buf, len);
	else if (strcmp(a, "failed_at") == 0)
		ctl_time_format(mi->failed_at, buf, len);
	else if (strcmp(a, "lease_expires_at") == 0)
		ctl_time_format(mi->expires_at, buf, len);
	else if (strcmp(a, "error") == 0 && mi->error)
		snprintf(buf, len, "%s", mi->error);
	else if (strcmp(a, "ttl") == 0 && mi->expires_at > 0)
		snprintf(buf, len, "%lld", (long long)((mi->expires_at -
		    queen_now(q) + 999) / 1000));
	else
		return -ENODATA;
	return 0;
}

static void
get_run(struct job *j, struct queen *q)
{
	struct xattr_job *xj = (struct xattr_job *)j;
	struct node *n = xj->n;
	struct msginfo mi;
	char buf[QUEEN_ERR_LEN + 1024];

	if ((j->rc = msg_info(q, n, false, &mi)) < 0)
		return;
	if (n->kind == K_LEASE_MSG && strcmp(xj->attr, "error") == 0)
		mi.error = note_get(n->lease, n->name);
	if ((j->rc = format_value(q, n, xj->attr, &mi, buf, sizeof(buf))) == 0) {
		xj->value = strdup(buf);
		xj->len = strlen(buf);
		j->rc = xj->value ? 0 : -ENOMEM;
	}
	msginfo_release(&mi);
}

static void
get_reply(struct job *j)
{
	struct xattr_job *xj = (struct xattr_job *)j;

	if (j->rc < 0)
		fuse_reply_err(j->req, -j->rc);
	else if (xj->size == 0)
		fuse_reply_xattr(j->req, xj->len);
	else if (xj->size < xj->len)
		fuse_reply_err(j->req, ERANGE);
	else
		fuse_reply_buf(j->req, xj->value, xj->len);
	free(xj->value);
	free(xj->attr);
}

void
op_getxattr(fuse_req_t req, fuse_ino_t ino, const char *name, size_t size)
{
	struct node *n = node_get(ino);
	struct xattr_job *xj;
	const char *a = name;

	if (!n) {
		fuse_reply_err(req, ENOENT);
		return;
	}
	if (strncmp(name, X_PREFIX, strlen(X_PREFIX)) != 0 ||
	    !has_name(n->kind, a += strlen(X_PREFIX))) {
		fuse_reply_err(req, ENODATA);
		return;
	}
	if (!(xj = job_new(sizeof(*xj), get_run, get_reply, req)) ||
	    !(xj->attr = strdup(a))) {
		free(xj);
		fuse_reply_err(req, ENOMEM);
		return;
	}
	xj->n = n;
	xj->size = size;
	/* a file being published is the writer's to answer for */
	xj->j.reader = n->kind != K_PENDING;
	engine_submit(&xj->j);
}

void
op_listxattr(fuse_req_t req, fuse_ino_t ino, size_t size)
{
	struct node *n = node_get(ino);
	const char *const *t;
	char buf[1024], *e;
	size_t at = 0;

	if (!n) {
		fuse_reply_err(req, ENOENT);
		return;
	}
	for (t = names_of(n->kind); t && *t; t++)
		at += (size_t)snprintf(buf + at, sizeof(buf) - at, "%s%s",
		    X_PREFIX, *t) + 1;
	if (n->kind == K_LEASE_MSG && (e = note_get(n->lease, n->name))) {
		at += (size_t)snprintf(buf + at, sizeof(buf) - at, "%serror",
		    X_PREFIX) + 1;
		free(e);
	}
	if (size == 0) {
		fuse_reply_xattr(req, at);
		return;
	}
	if (size < at) {
		fuse_reply_err(req, ERANGE);
		return;
	}
	fuse_reply_buf(req, buf, at);
}

static void
ttl_run(struct job *j, struct queen *q)
{
	struct xattr_job *xj = (struct xattr_job *)j;

	if ((j->rc = queen_kv_set_ttl(q, xj->n->queue, xj->n->name,
	    xj->ttl_ms)) < 0)
		fs_log("setxattr kv/%s/%s user.queen.ttl: %s (%s)", xj->n->queue,
		    xj->n->name, queen_errmsg(q), errname(j->rc));
}

static void
ttl_reply(struct job *j)
{
	reply_rc(j);
}

static int
parse_ttl(const char *value, size_t size, int64_t *ms)
{
	int64_t v = 0;

	if (size == 0 || size > 12)
		return -EINVAL;
	for (size_t i = 0; i < size; i++) {
		if (value[i] == '\n' && i == size - 1 && i > 0)
			break;
		if (value[i] < '0' || value[i] > '9')
			return -EINVAL;
		v = v * 10 + (value[i] - '0');
	}
	*ms = v * 1000;
	return 0;
}

void
op_setxattr(fuse_req_t req, fuse_ino_t ino, const char *name,
    const char *value, size_t size, int flags)
{
	struct node *n = node_get(ino);
	struct xattr_job *xj;
	bool ttl = strcmp(name, X_PREFIX "ttl") == 0, kv_pend;
	int64_t ms;
	char *s, path[512];

	if (!n) {
		fuse_reply_err(req, ENOENT);
		return;
	}
	if ((n->kind == K_LEASE_MSG || (n->kind == K_MSG && n->queue)) &&
	    strcmp(name, X_PREFIX "error") == 0) {
		char key[2 * QUEEN_NAME_MAX + 8];

		if (n->kind == K_MSG)
			note_msg_key(n->queue, n->part, key, sizeof(key));
		if (size > NOTE_ERROR_MAX) {
			fs_log("setxattr %s on %s: %zu bytes, more than the %d an "
			    "error keeps (E2BIG)", name, n->name, size,
			    NOTE_ERROR_MAX);
			fuse_reply_err(req, E2BIG);
			return;
		}
		if (!(s = strndup(value, size))) {
			fuse_reply_err(req, ENOMEM);
			return;
		}
		note_set(n->kind == K_MSG ? key : n->lease, n->name, s,
		    fs_now());
		free(s);
		fuse_reply_err(req, 0);
		return;
	}
	pthread_mutex_lock(&fs_lock);  /* a lookup may swap n->pend */
	kv_pend = n->pend && n->pend->what == PW_KV;
	pthread_mutex_unlock(&fs_lock);
	if (ttl && (n->kind == K_KV_KEY || kv_pend)) {
		if (parse_ttl(value, size, &ms) < 0) {
			fs_log("setxattr user.queen.ttl of kv/%s/%s: not a "
			       "whole number of seconds, up to 12 digits "
			       "(EINVAL)",
			    n->queue, n->name);
			fuse_reply_err(req, EINVAL);
			return;
		}
		if (n->kind != K_KV_KEY) {
			bool kept;

			pthread_mutex_lock(&fs_lock);
			if (!(kept = n->pend->kept))
				n->pend->ttl_ms = ms;
			pthread_mutex_unlock(&fs_lock);
			if (kept)
				fs_log("user.queen.ttl of kv/%s/%s: its put is "
				       "kept for the tick with its ttl (EPERM)",
				    n->queue, n->name);
			fuse_reply_err(req, kept ? EPERM : 0);
			return;
		}
		if (!(xj = job_new(sizeof(*xj), ttl_run, ttl_reply, req))) {
			fuse_reply_err(req, ENOMEM);
			return;
		}
		xj->j.write = true;
		xj->n = n;
		xj->ttl_ms = ms;
		engine_submit(&xj->j);
		return;
	}
	/* cp -a, mv and rsync copy attributes onto new files: accept. */
	if (n->kind == K_PENDING || n->kind == K_MSG) {
		fuse_reply_err(req, 0);
		return;
	}
	/* cp -a and rsync -X copy every attribute of a tree onto its
	 * directories and ignore ENOTSUP: only queenfs's own names are
	 * logged at info */
	node_path(n, path, sizeof(path));
	fs_logl(strncmp(name, X_PREFIX, strlen(X_PREFIX)) == 0 ? FSL_INFO :
								 FSL_DEBUG,
	    "setxattr %.64s on %s: not an attribute it keeps (ENOTSUP)", name,
	    path[0] ? path : "/");
	fuse_reply_err(req, ENOTSUP);
}

void
op_removexattr(fuse_req_t req, fuse_ino_t ino, const char *name)
{
	struct node *n = node_get(ino);

	if (!n) {
		fuse_reply_err(req, ENOENT);
		return;
	}
	if (n->kind == K_LEASE_MSG && strcmp(name, X_PREFIX "error") == 0) {
		free(note_take(n->lease, n->name));
		fuse_reply_err(req, 0);
		return;
	}
	fuse_reply_err(req, n->kind == K_PENDING ? 0 : ENODATA);
}
