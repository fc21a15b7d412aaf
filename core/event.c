/*
 * event.c - wake-ups across mounts: the descriptor to poll and the drain
 * of push announcements, for stores shared by several processes.  The
 * announcements themselves are sent by push.c through the store.
 */
#include <errno.h>

#include "core.h"

int
queen_event_fd(struct queen *q)
{
	int rc;

	if (!q->ops->event_fd)
		return queen_err(q, -ENOTSUP, "no event channel on this store");
	rc = q->ops->event_fd(q->st);
	if (rc < 0)
		return queen_err(q, rc, "storage: %s", q->ops->errmsg(q->st));
	return rc;
}

int
queen_events(struct queen *q, queen_name_cb cb, void *arg)
{
	int rc;

	if (!q->ops->events)
		return queen_err(q, -ENOTSUP, "no event channel on this store");
	rc = q->ops->events(q->st, cb, arg);
	/* other values are the callback's own */
	if (rc == -EIO)
		queen_err(q, rc, "storage: %s", q->ops->errmsg(q->st));
	return rc;
}
