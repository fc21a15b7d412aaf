/*
 * qstats.c - one queue at a glance: its figures over the queue-mode group
 * and every named group (sys/queues, sys/metrics).  The per-group figures
 * come from queen_stats_get (maint.c); this file only gathers them.
 */
#include <errno.h>
#include <string.h>

#include "core.h"

struct gather {
	struct queen *q;
	const char *queue;
	struct queen_queue_summary *out;
	int rc;
};

static void
take_oldest(struct queen_queue_summary *o, const struct queen_stats *st)
{
	if (st->oldest_age > o->oldest_age)
		o->oldest_age = st->oldest_age;
}

static int
gather_group(void *arg, const struct queen_group_info *gi)
{
	struct gather *g = arg;
	struct queen_stats st;
	int rc;

	if (strcmp(gi->name, QUEEN_QUEUE_MODE) == 0)
		return 0;
	if ((rc = queen_stats_get(g->q, g->queue, gi->name, &st)) != 0) {
		g->rc = rc;
		return 1;
	}
	if (st.depth > g->out->lag)
		g->out->lag = st.depth;
	g->out->leases += st.leases;
	g->out->dlq += st.dlq;
	take_oldest(g->out, &st);
	return 0;
}

int
queen_queue_summary(struct queen *q, const char *queue,
    struct queen_queue_summary *out)
{
	struct gather g;
	struct queen_stats st;
	int rc;

	memset(out, 0, sizeof(*out));
	g.q = q;
	g.queue = queue;
	g.out = out;
	g.rc = 0;
	if ((rc = queen_stats_get(q, queue, NULL, &st)) != 0)
		return rc;
	out->messages = st.messages;
	out->depth = st.depth;
	out->groups = st.groups;
	out->leases = st.leases;
	out->dlq = st.dlq;
	take_oldest(out, &st);
	if ((rc = queen_group_list(q, queue, gather_group, &g)) < 0)
		return rc;
	return g.rc;
}
