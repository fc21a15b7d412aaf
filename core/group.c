/*
 * group.c - consumer groups and their cursors: creation with a
 * subscription mode, the starting position of a cursor, seek, listing.
 * Leasing and acking move cursors too; that is pop.c's and ack.c's.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core.h"

/* The last offset pushed before time t (0: none), by bisection: offsets
 * are dense in [head, tail] and their times never decrease. */
int64_t
offset_before(struct queen *q, const struct part_row *p, int64_t t)
{
	int64_t lo = p->head, hi = p->tail, ans = p->head - 1, at;

	while (lo <= hi) {
		int64_t mid = lo + (hi - lo) / 2;

		if (q->ops->msg_time(q->st, p->id, mid, &at) != 0) {
			/* purged under us: treat as old */
			lo = mid + 1;
			continue;
		}
		if (at < t) {
			ans = mid;
			lo = mid + 1;
		} else {
			hi = mid - 1;
		}
	}
	return ans < 0 ? 0 : ans;
}

/* next_at: the push time of the first retained message past the cursor. */
int
cursor_refresh(struct queen *q, struct cursor_row *c)
{
	int64_t off, at;
	int rc = q->ops->msg_next(q->st, c->partition_id, c->committed, &off,
	    &at);

	if (rc == -ENOENT) {
		c->next_at = -1;
		return 0;
	}
	if (rc != 0)
		return rc;
	c->next_at = at;
	return 0;
}

/*
 * Where a cursor starts.  at_tail: the group (or its subscription) is
 * being made now, so `new` means each partition's tail at this moment; a
 * partition that gets its first cursor later was made after the group
 * (all of it is new) unless it is older than the group.
 */
static int64_t
start_position(struct queen *q, const struct part_row *p,
    const struct group_row *g, bool at_tail)
{
	switch (g->mode) {
	case QUEEN_SUB_NEW:
		if (at_tail)
			return p->tail;
		return p->created_at >= g->created_at ? 0 :
		    offset_before(q, p, g->created_at);
	case QUEEN_SUB_SINCE:
		return offset_before(q, p, g->since);
	default:
		return 0;
	}
}

static int
cursor_create(struct queen *q, const struct part_row *p,
    const struct group_row *g, bool creating_group, struct cursor_row *out)
{
	int rc;

	memset(out, 0, sizeof(*out));
	out->partition_id = p->id;
	out->group_id = g->id;
	out->committed = start_position(q, p, g, creating_group);
	if ((rc = cursor_refresh(q, out)) != 0)
		return rc;
	return q->ops->cursor_put(q->st, out);
}

int
cursor_load(struct queen *q, const struct part_row *p,
    const struct group_row *g, struct cursor_row *out)
{
	int rc = q->ops->cursor_get(q->st, p->id, g->id, out);

	if (rc == -ENOENT)
		rc = cursor_create(q, p, g, false, out);
	return rc;
}

struct mkcur {
	struct queen *q;
	const struct group_row *g;
};

static int
mkcur_part(void *arg, const struct part_row *p)
{
	struct mkcur *m = arg;
	struct cursor_row c;

	/* new: the tail now, an offset, never a clock tie (a push in the
	 * millisecond of the group's creation or resubscription is old) */
	return cursor_create(m->q, p, m->g, true, &c);
}

/* The in-memory form of a group that does not exist yet. */
int
group_default(struct queen *q, const struct queue_row *qr, const char *name,
    struct group_row *out)
{
	if (!name)
		name = QUEEN_QUEUE_MODE;
	if (strcmp(name, QUEEN_QUEUE_MODE) != 0 && !queen_name_valid(name))
		return queen_err(q, -EINVAL, "invalid group name '%.64s'", name);
	memset(out, 0, sizeof(*out));
	out->queue_id = qr->id;
	snprintf(out->name, sizeof(out->name), "%s", name);
	out->mode = QUEEN_SUB_ALL;
	out->created_at = queen_now(q);
	out->batch = out->wait = out->auto_ack = -1;
	return 0;
}

/* A new group, own its owner (NULL: the queue's), with its cursors. */
static int
group_make(struct queen *q, const struct queue_row *qr, const char *name,
    const struct queen_owner *own, struct group_row *out)
{
	struct mkcur m;
	int rc;

	if ((rc = group_default(q, qr, name, out)) != 0)
		return rc;
	if (own) {
		out->owner = *own;
		out->owner.mode &= 07777;
		out->has_owner = true;
	}
	if ((rc = q->ops->group_insert(q->st, out)) != 0)
		return rc;
	m.q = q;
	m.g = out;
	return q->ops->part_list(q->st, qr->id, "", mkcur_part, &m);
}

int
group_load(struct queen *q, const struct queue_row *qr, const char *name,
    bool create, struct group_row *out)
{
	int rc;

	if (!name)
		name = QUEEN_QUEUE_MODE;
	if (strcmp(name, QUEEN_QUEUE_MODE) != 0 && !queen_name_valid(name))
		return queen_err(q, -EINVAL, "invalid group name '%.64s'", name);
	rc = q->ops->group_get(q->st, qr->id, name, out);
	/* the queue's own group is made with the queue, whatever the
	 * caller's setting */
	if (create && q->groups_explicit && strcmp(name, QUEEN_QUEUE_MODE) != 0)
		create = false;
	if (rc != -ENOENT || !create) {
		if (rc == -ENOENT)
			queen_err(q, rc, "no group '%s' on queue '%s'", name,
			    qr->name);
		return rc;
	}
	return group_make(q, qr, name, NULL, out);
}

/* A changed subscription repositions every cursor of the group. */
int
group_resubscribe(struct queen *q, const struct queue_row *qr,
    const struct group_row *g)
{
	struct mkcur m = { q, g };

	return q->ops->part_list(q->st, qr->id, "", mkcur_part, &m);
}

int64_t
group_eff(const struct queue_row *qr, const struct group_row *g, int which)
{
	switch (which) {
	case 0: return g && g->batch >= 0 ? g->batch : qr->conf.batch;
	case 1: return g && g->wait >= 0 ? g->wait : qr->conf.wait;
	default: return g && g->auto_ack >= 0 ? g->auto_ack : qr->conf.auto_ack;
	}
}

static void
group_info(const struct queue_row *qr, const struct group_row *g,
    struct queen_group_info *out)
{
	memset(out, 0, sizeof(*out));
	out->id = g->id;
	memcpy(out->name, g->name, sizeof(out->name));
	out->mode = (enum queen_sub_mode)g->mode;
	out->since = g->since;
	out->created_at = g->created_at;
	out->owner = g->has_owner ? g->owner : qr->owner;
}

bool
queen_groups_explicit(struct queen *q, bool on)
{
	bool was = q->groups_explicit;

	q->groups_explicit = on;
	return was;
}

int
queen_group_ensure(struct queen *q, const char *queue, const char *group)
{
	struct queue_row qr;
	struct group_row g;
	bool was;
	int rc;

	if ((rc = tx_begin(q)) != 0)
		return rc;
	/* asked for by name: made whatever queen_groups_explicit says */
	was = queen_groups_explicit(q, false);
	if ((rc = queue_load(q, queue, &qr)) == 0)
		rc = group_load(q, &qr, group, true, &g);
	queen_groups_explicit(q, was);
	return tx_end(q, rc);
}

int
queen_group_create(struct queen *q, const char *queue, const char *group,
    const struct queen_owner *own)
{
	struct queue_row qr;
	struct group_row g;
	int rc;

	if (!group || !queen_name_valid(group))
		return queen_err(q, -EINVAL,
		    "invalid group name '%.64s': use 1-255 bytes of "
		    "A-Z a-z 0-9 . _ : @ = + -, not starting with '.'",
		    group ? group : "(null)");
	if (strcmp(group, QUEEN_QUEUE_MODE) == 0)
		return queen_err(q, -EINVAL,
		    "group name '%s' is reserved for the queue mode", group);
	if ((rc = tx_begin(q)) != 0)
		return rc;
	if ((rc = queue_load(q, queue, &qr)) != 0)
		goto out;
	rc = q->ops->group_get(q->st, qr.id, group, &g);
	if (rc == 0)
		rc = queen_err(q, -EEXIST, "group '%s' exists on queue '%s'",
		    group, queue);
	else if (rc == -ENOENT)
		rc = group_make(q, &qr, group, own, &g);
out:
	return tx_end(q, rc);
}

int
queen_group_get(struct queen *q, const char *queue, const char *group,
    struct queen_group_info *out)
{
	struct queue_row qr;
	struct group_row g;
	int rc;

	if ((rc = queue_load(q, queue, &qr)) != 0)
		return rc;
	if ((rc = group_load(q, &qr, group, false, &g)) != 0)
		return rc;
	group_info(&qr, &g, out);
	return 0;
}

struct live {
	int64_t now, n, until;
};

static int
live_one(void *arg, const struct cursor_row *c)
{
	struct live *l = arg;

	if (c->lease_id[0] && c->lease_expires_at > l->now) {
		l->n++;
		if (c->lease_expires_at > l->until)
			l->until = c->lease_expires_at;
	}
	return 0;
}

int
queen_group_delete(struct queen *q, const char *queue, const char *group)
{
	struct live l = { queen_now(q), 0, 0 };
	struct queue_row qr;
	struct group_row g;
	int rc;

	if (!group || strcmp(group, QUEEN_QUEUE_MODE) == 0)
		return queen_err(q, -EPERM, "the queue-mode group cannot be "
		    "deleted");
	if ((rc = tx_begin(q)) != 0)
		return rc;
	if ((rc = queue_load(q, queue, &qr)) != 0)
		goto out;
	if ((rc = group_load(q, &qr, group, false, &g)) != 0)
		goto out;
	if ((rc = q->ops->cursor_list_group(q->st, g.id, live_one, &l)) != 0)
		goto out;
	if (l.n > 0) {
		rc = queen_err(q, -ENOTEMPTY, "group '%s' holds %lld live "
		    "lease(s), the last until %lld ms from now: ack them or "
		    "let them expire first", group, (long long)l.n,
		    (long long)(l.until - l.now));
		goto out;
	}
	/* readers of the group waiting on other mounts wake and find it
	 * gone (ENOENT), as queen_queue_delete's do */
	if ((rc = announce(q, qr.id, 0)) == 0 &&
	    (rc = q->ops->cursor_delete_group(q->st, g.id)) == 0)
		rc = q->ops->group_delete(q->st, g.id);
out:
	return tx_end(q, rc);
}

int
queen_group_set_owner(struct queen *q, const char *queue, const char *group,
    const struct queen_owner *own)
{
	struct queue_row qr;
	struct group_row g;
	int rc;

	if ((rc = tx_begin(q)) != 0)
		return rc;
	if ((rc = queue_load(q, queue, &qr)) != 0)
		goto out;
	if ((rc = group_load(q, &qr, group, false, &g)) != 0)
		goto out;
	g.owner = *own;
	g.owner.mode &= 07777;
	g.has_owner = true;
	rc = q->ops->group_update(q->st, &g);
out:
	return tx_end(q, rc);
}

struct glist {
	const struct queue_row *qr;
	queen_group_cb cb;
	void *arg;
};

static int
glist_one(void *arg, const struct group_row *g)
{
	struct glist *l = arg;
	struct queen_group_info gi;

	if (strcmp(g->name, QUEEN_QUEUE_MODE) == 0)
		return 0;
	group_info(l->qr, g, &gi);
	return l->cb(l->arg, &gi);
}

int
queen_group_list(struct queen *q, const char *queue, queen_group_cb cb,
    void *arg)
{
	struct queue_row qr;
	struct glist l = { &qr, cb, arg };
	int rc;

	if ((rc = queue_load(q, queue, &qr)) != 0)
		return rc;
	return q->ops->group_list(q->st, qr.id, glist_one, &l);
}

/* ---- seek ---- */

struct seek {
	struct queen *q;
	const struct group_row *g;
	enum queen_pos_kind kind;
	int64_t value;
};

static int
seek_part(void *arg, const struct part_row *p)
{
	struct seek *s = arg;
	struct cursor_row c;
	int64_t pos;
	int rc;

	if ((rc = cursor_load(s->q, p, s->g, &c)) != 0)
		return rc;
	switch (s->kind) {
	case QUEEN_POS_OFFSET:
		pos = s->value - 1;
		break;
	case QUEEN_POS_TIME:
		pos = offset_before(s->q, p, s->value);
		break;
	case QUEEN_POS_START:
		pos = 0;
		break;
	default:
		pos = p->tail;
		break;
	}
	if (pos > p->tail)
		pos = p->tail;
	if (pos < 0)
		pos = 0;
	c.committed = pos;
	c.batch_end = 0;
	c.lease_id[0] = '\0';
	c.lease_expires_at = 0;
	c.retry_count = 0;
	if ((rc = cursor_refresh(s->q, &c)) != 0)
		return rc;
	return s->q->ops->cursor_put(s->q->st, &c);
}

int
queen_seek(struct queen *q, const char *queue, const char *group,
    const char *partition, enum queen_pos_kind kind, int64_t value)
{
	struct queue_row qr;
	struct group_row g;
	struct part_row p;
	struct seek s;
	int rc;

	if (kind == QUEEN_POS_OFFSET && value < 1)
		return queen_err(q, -EINVAL, "seek: offsets start at 1, not "
		    "%lld", (long long)value);
	if (kind < QUEEN_POS_OFFSET || kind > QUEEN_POS_END)
		return queen_err(q, -EINVAL, "seek: unknown position kind");
	lease_moves();
	if ((rc = tx_begin(q)) != 0)
		return rc;
	if ((rc = queue_load(q, queue, &qr)) != 0)
		goto out;
	if ((rc = group_load(q, &qr, group, true, &g)) != 0)
		goto out;
	s.q = q;
	s.g = &g;
	s.kind = kind;
	s.value = value;
	if (partition) {
		if ((rc = part_load(q, &qr, partition, false, &p)) == 0)
			rc = seek_part(&s, &p);
	} else {
		rc = q->ops->part_list(q->st, qr.id, "", seek_part, &s);
	}
	/* leases went and cursors moved back, perhaps */
	if (rc == 0)
		rc = announce(q, qr.id, partition ? p.id : 0);
out:
	return tx_end(q, rc);
}

/* ---- cursor listing ---- */

struct clist {
	struct queen *q;
	int64_t now;
	queen_cursor_cb cb;
	void *arg;
};

static int
clist_one(void *arg, const struct cursor_row *c)
{
	struct clist *l = arg;
	struct queen_cursor_info ci;
	struct part_row p;
	int64_t lag = 0;
	int rc;

	if ((rc = l->q->ops->part_by_id(l->q->st, c->partition_id, &p)) != 0)
		return rc;
	memset(&ci, 0, sizeof(ci));
	memcpy(ci.partition, p.name, sizeof(ci.partition));
	ci.committed = c->committed;
	ci.tail = p.tail;
	if (p.tail > c->committed) {
		int64_t from = c->committed + 1 > p.head ? c->committed + 1 :
		    p.head;

		lag = p.tail >= from ? p.tail - from + 1 : 0;
	}
	ci.lag = lag;
	ci.leased = c->lease_id[0] && c->lease_expires_at > l->now;
	ci.lease_expires_at = ci.leased ? c->lease_expires_at : 0;
	ci.retry_count = c->retry_count;
	return l->cb(l->arg, &ci);
}

int
queen_cursor_list(struct queen *q, const char *queue, const char *group,
    queen_cursor_cb cb, void *arg)
{
	struct queue_row qr;
	struct group_row g;
	struct clist l = { q, queen_now(q), cb, arg };
	int rc;

	if ((rc = queue_load(q, queue, &qr)) != 0)
		return rc;
	if ((rc = group_load(q, &qr, group, false, &g)) != 0)
		return rc;
	return q->ops->cursor_list_group(q->st, g.id, clist_one, &l);
}
