/*
 * event.c - wake-ups across mounts: announcing that a queue may have
 * become leasable (push.c, ack.c and the others call announce), watching
 * queues, the descriptor to poll and the drain of what arrived, for stores
 * shared by several processes.  When to announce is the callers' rule
 * (queen.h); how is the store's.
 */
#include <errno.h>

#include "core.h"

int
announce(struct queen *q, int64_t queue_id, int64_t part_id)
{
	if (!q->ops->notify)
		return 0;
	q->ev.sent++;
	return q->ops->notify(q->st, queue_id, part_id);
}

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
queen_event_watch(struct queen *q, const char *queue, bool on)
{
	struct queue_row qr = { .id = 0 };
	int rc;

	if (!q->ops->watch)
		return queen_err(q, -ENOTSUP, "no event channel on this store");
	/* a queue deleted since is stopped by its name */
	if (on && (rc = queue_load(q, queue, &qr)) != 0)
		return rc;
	rc = q->ops->watch(q->st, qr.id, queue, on);
	if (rc < 0)
		return queen_err(q, rc, "storage: %s", q->ops->errmsg(q->st));
	if (rc > 0 && on) {
		q->ev.watching += rc == 1;
		q->ev.watches++;
	} else if (rc > 0 && q->ev.watching > 0) {
		q->ev.watching--;
	}
	return on && rc > 0 ? 1 : 0;
}

struct counted {
	struct queen *q;
	queen_event_cb cb;
	void *arg;
};

static int
counted_cb(void *arg, const char *queue, int64_t part_id)
{
	struct counted *c = arg;

	c->q->ev.received++;
	return c->cb(c->arg, queue, part_id);
}

int
queen_events(struct queen *q, queen_event_cb cb, void *arg)
{
	struct counted c = { q, cb, arg };
	int rc;

	if (!q->ops->events)
		return queen_err(q, -ENOTSUP, "no event channel on this store");
	rc = q->ops->events(q->st, counted_cb, &c);
	/* other values are the callback's own */
	if (rc == -EIO)
		queen_err(q, rc, "storage: %s", q->ops->errmsg(q->st));
	return rc;
}

void
queen_event_counts(struct queen *q, struct queen_event_counts *out)
{
	*out = q->ev;
	if (q->ops->announced)
		out->sent += q->ops->announced(q->st);
}
