/*
 * timer.c - timers per (queue, key): an upsert of when and what to push,
 * cancel, and listing.  Firing is queen_maintain's (maint.c), where the
 * push and the timer's removal commit together, so each fires once.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "core.h"

int
timer_schedule_locked(struct queen *q, const char *queue, const char *key,
    const char *partition, int64_t due_at, const void *payload, size_t len)
{
	struct queue_row qr;
	int64_t now = queen_now(q);
	int rc;

	if (!queen_name_valid(key))
		return queen_err(q, -EINVAL, "invalid timer key '%.64s'",
		    key ? key : "");
	if (!partition)
		partition = QUEEN_DEFAULT_PARTITION;
	if (!queen_name_valid(partition))
		return queen_err(q, -EINVAL, "invalid partition '%.64s'",
		    partition);
	if (due_at < 0 || due_at > QUEEN_TIME_MAX_MS)
		return queen_err(q, -EINVAL, "timer '%.64s' due at %" PRId64
		    " ms: outside 0..%lld (9999-12-31)", key, due_at,
		    QUEEN_TIME_MAX_MS);
	if ((rc = queue_ensure(q, queue, &qr)) != 0)
		return rc;
	if ((int64_t)len > qr.conf.max_message_bytes)
		return queen_err(q, -EFBIG, "timer payload over "
		    "max_message_bytes");
	if (due_at == 0)
		due_at = clamp_add(now, qr.conf.timer_delay * 1000);
	if (due_at > QUEEN_TIME_MAX_MS)
		return queen_err(q, -EINVAL, "timer '%.64s' would fire after "
		    "9999-12-31", key);
	return q->ops->timer_put(q->st, qr.id, key, partition, due_at, payload,
	    len, now);
}

int
queen_timer_schedule(struct queen *q, const char *queue, const char *key,
    const char *partition, int64_t due_at, const void *payload, size_t len)
{
	int rc;

	if ((rc = tx_begin(q)) != 0)
		return rc;
	rc = timer_schedule_locked(q, queue, key, partition, due_at, payload,
	    len);
	return tx_end(q, rc);
}

int
timer_cancel_locked(struct queen *q, const char *queue, const char *key)
{
	struct queue_row qr;
	int rc;

	if ((rc = queue_load(q, queue, &qr)) != 0)
		return rc;
	rc = q->ops->timer_delete(q->st, qr.id, key ? key : "");
	if (rc == -ENOENT)
		queen_err(q, rc, "no timer '%.64s' in '%s'", key ? key : "",
		    queue);
	return rc;
}

int
queen_timer_cancel(struct queen *q, const char *queue, const char *key)
{
	int rc;

	if ((rc = tx_begin(q)) != 0)
		return rc;
	rc = timer_cancel_locked(q, queue, key);
	return tx_end(q, rc);
}

int
queen_timer_get(struct queen *q, const char *queue, const char *key,
    bool want_payload, struct queen_timer_info **out)
{
	struct queue_row qr;
	int rc;

	*out = NULL;
	if ((rc = queue_load(q, queue, &qr)) != 0)
		return rc;
	return q->ops->timer_get(q->st, qr.id, key ? key : "", want_payload,
	    out);
}

int
queen_timer_list(struct queen *q, const char *queue, queen_timer_cb cb,
    void *arg)
{
	struct queue_row qr;
	int rc;

	if ((rc = queue_load(q, queue, &qr)) != 0)
		return rc;
	return q->ops->timer_list(q->st, qr.id, cb, arg);
}
