/*
 * cred.c - who is asking, and whether an owner and mode let them.  The
 * kernel checks modes itself under default_permissions; this file checks
 * what the kernel cannot see: a read of `next` pops (a change of state, so
 * it needs what a write needs), and generated text (sys/metrics) shows
 * only the queues its reader may read.  Root may do anything, as there.
 */
#include <string.h>
#include <sys/stat.h>

#include "fs.h"

/*
 * The supplementary groups are asked for only when a check needs them
 * (the kernel's answer is a read of /proc/PID/task/TID/status, twice):
 * root and a caller whose own uid or gid decides ask nothing, and those
 * are nearly every open of `next` and of a message.  c is used only
 * while req is unanswered.
 */
void
cred_of(fuse_req_t req, struct cred *c)
{
	const struct fuse_ctx *ctx = fuse_req_ctx(req);

	memset(c, 0, sizeof(*c));
	c->uid = ctx->uid;
	c->gid = ctx->gid;
	c->req = req;
	c->ngroups = -1;
}

static bool
in_group(struct cred *c, gid_t gid)
{
	if (c->gid == gid)
		return true;
	if (c->ngroups < 0) {
		int n = fuse_req_getgroups(c->req, CRED_GROUPS, c->groups);

		/* more groups than fit: those that fit are a subset, and a
		 * subset can only refuse what the full set would allow */
		c->ngroups = n < 0 ? 0 : n > CRED_GROUPS ? CRED_GROUPS : n;
	}
	for (int i = 0; i < c->ngroups; i++)
		if (c->groups[i] == gid)
			return true;
	return false;
}

/* want: a mask of 4 (read), 2 (write), 1 (search), as access(2) takes. */
bool
cred_may(struct cred *c, uid_t uid, gid_t gid, mode_t mode, int want)
{
	mode_t bits;

	if (c->uid == 0)
		return true;
	if (c->uid == uid)
		bits = (mode >> 6) & 7;
	else if (in_group(c, gid))
		bits = (mode >> 3) & 7;
	else
		bits = mode & 7;
	return ((mode_t)want & ~bits) == 0;
}

/* What the kernel would answer to access(path of n, want). */
bool
cred_may_node(struct cred *c, struct node *n, int want)
{
	struct stat st;

	node_attr(n, &st);
	return cred_may(c, st.st_uid, st.st_gid, st.st_mode, want);
}
