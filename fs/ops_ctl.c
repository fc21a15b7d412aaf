/*
 * ops_ctl.c - writes to config and seek: the text of an open is gathered
 * as written and applied whole at close (FLUSH), all or nothing, through
 * fs/ctl.c's parsers and one core call.  Reads of config are ops_file.c's.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fs.h"

struct ctl_job {
	struct job j;
	struct node *n;
	struct ctl_config cfg;
	struct ctl_seek seek;
};

static void
ctl_run(struct job *j, struct queen *q)
{
	struct ctl_job *cj = (struct ctl_job *)j;
	struct node *n = cj->n;
	char path[512];

	if (n->kind == K_CONFIG)
		j->rc = queen_config_set(q, n->queue, n->group, cj->cfg.keys,
		    cj->cfg.values, cj->cfg.n);
	else
		j->rc = queen_seek(q, n->queue, n->group,
		    cj->seek.partition[0] ? cj->seek.partition : NULL,
		    (enum queen_pos_kind)cj->seek.kind, cj->seek.value);
	if (j->rc < 0) {
		node_path(n, path, sizeof(path));
		fs_log("close %s: %s (%s)", path, queen_errmsg(q),
		    errname(j->rc));
	} else if (n->kind == K_SEEK) {
		j->notify = strdup(n->queue);
	}
}

static void
ctl_reply(struct job *j)
{
	fuse_reply_err(j->req, j->rc < 0 ? -j->rc : 0);
}

/*
 * The complete lines of a config or seek write so far (up to its last
 * newline), checked as the close would parse them, so that `echo bad=1 >
 * config` fails at its write(2): a shell reports that, not a failed close().
 */
static int
config_lines_check(struct node *n, const char *text, size_t len)
{
	struct ctl_config *cfg;
	char path[512], why[256];
	int rc, line = 0;

	while (len && text[len - 1] != '\n')
		len--;
	if (!len)
		return 0;
	if (n->kind == K_SEEK) {
		struct ctl_seek sk;

		bool parsed = ctl_seek_parse(text, len, &sk) == 0;
		bool zero = parsed && sk.kind == CTL_POS_OFFSET && sk.value < 1;

		if (parsed && !zero)
			return 0;
		node_path(n, path, sizeof(path));
		fs_log("write %s: %s; nothing will be applied (EINVAL)", path,
		    zero ? "offsets start at 1" : "cannot parse position");
		return -EINVAL;
	}
	if (!(cfg = malloc(sizeof(*cfg))))
		return -ENOMEM;
	rc = ctl_config_parse(text, len, cfg, &line);
	if (rc == 0)
		rc = queen_config_check(n->group != NULL, cfg->keys,
		    cfg->values, cfg->n, why, sizeof(why));
	else
		snprintf(why, sizeof(why), line ? "line %d is not `key = "
		    "value`" : "too many keys", line);
	free(cfg);
	if (rc < 0) {
		node_path(n, path, sizeof(path));
		fs_log("write %s: %s; nothing will be applied (EINVAL)", path,
		    why);
		return -EINVAL;
	}
	return 0;
}

/*
 * A write to config or seek gathers the text (appended in the order
 * written, whatever the offset); the whole of it is parsed and applied at
 * close, all or nothing, so that a line split across write(2)s is one line.
 * A config line already complete and refused fails its write too.
 */
int
ctl_write(struct handle *h, const char *buf, size_t size)
{
	char *text = NULL;
	size_t len = 0;
	int rc = 0;

	pthread_mutex_lock(&fs_lock);
	if (h->req_big || size > CTL_TEXT_MAX - h->req_len) {
		h->req_big = true;  /* and close() refuses it all */
		rc = -EFBIG;
	} else {
		if (!h->req && !(h->req = malloc(CTL_TEXT_MAX)))
			rc = -ENOMEM;
		if (rc == 0) {
			memcpy(h->req + h->req_len, buf, size);
			h->req_len += size;
			h->req_cap = CTL_TEXT_MAX;
		}
	}
	if (rc == 0 || rc == -EFBIG)
		h->ctl_dirty = true;
	if (rc == 0 && !h->ctl_bad &&
	    memchr(buf, '\n', size) && (text = malloc(h->req_len)) != NULL) {
		len = h->req_len;
		memcpy(text, h->req, len);
	}
	pthread_mutex_unlock(&fs_lock);
	if (text) {
		rc = config_lines_check(h->node, text, len);
		free(text);
		if (rc == -EINVAL) {
			pthread_mutex_lock(&fs_lock);
			h->ctl_bad = true;
			pthread_mutex_unlock(&fs_lock);
		}
	}
	return rc;
}

/*
 * FLUSH of a config or seek handle (each close(2) of a descriptor of it):
 * apply what was written since the last one.
 */
void
ctl_flush(fuse_req_t req, struct handle *h)
{
	struct node *n = h->node;
	struct ctl_job *cj;
	char path[512], text[CTL_TEXT_MAX];
	size_t len;
	bool dirty, big, refused;
	int rc, line = 0;

	pthread_mutex_lock(&fs_lock);
	dirty = h->ctl_dirty;
	big = h->req_big;
	refused = h->ctl_bad;
	h->ctl_bad = false;
	len = h->req_len;
	if (len)
		memcpy(text, h->req, len);
	h->ctl_dirty = false;
	h->req_len = 0;  /* what the next close applies is written after */
	h->req_big = false;
	pthread_mutex_unlock(&fs_lock);
	if (!dirty) {
		fuse_reply_err(req, 0);
		return;
	}
	node_path(n, path, sizeof(path));
	if (refused) {
		/* its write(2) failed and said why; the close refuses it too */
		fs_log("close %s: a refused line was written; nothing applied "
		    "(EINVAL)", path);
		fuse_reply_err(req, EINVAL);
		return;
	}
	if (big) {
		fs_log("close %s: more than %d bytes written; nothing applied "
		    "(EINVAL)", path, CTL_TEXT_MAX);
		fuse_reply_err(req, EINVAL);
		return;
	}
	if (!(cj = job_new(sizeof(*cj), ctl_run, ctl_reply, req))) {
		fuse_reply_err(req, ENOMEM);
		return;
	}
	cj->n = n;
	cj->j.write = true;
	rc = n->kind == K_CONFIG ?
	    ctl_config_parse(text, len, &cj->cfg, &line) :
	    ctl_seek_parse(text, len, &cj->seek);
	if (rc < 0) {
		if (line)
			fs_log("close %s: line %d is not `key = value`; nothing "
			    "applied (EINVAL)", path, line);
		else
			fs_log("close %s: cannot parse %s; nothing applied (%s)",
			    path, n->kind == K_CONFIG ? "config" : "position",
			    errname(rc == -E2BIG ? -EINVAL : rc));
		free(cj);
		fuse_reply_err(req, rc == -E2BIG ? EINVAL : -rc);
		return;
	}
	engine_submit(&cj->j);
}
