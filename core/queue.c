/*
 * queue.c - queues and partitions: create, delete, look up, list, config
 * and ownership.  A queue is born with its queue-mode group; a partition is
 * born on its first push, with a cursor for every group of its queue.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core.h"

static const struct queen_owner default_owner = { 0, 0, 0755 };

int
bad_name(struct queen *q, const char *what, const char *name)
{
	return queen_err(q, -EINVAL, "invalid %s name '%.64s': use 1-255 "
	    "bytes of A-Z a-z 0-9 . _ : @ = + -, not starting with '.'",
	    what, name ? name : "(null)");
}

int
queue_load(struct queen *q, const char *name, struct queue_row *out)
{
	int rc;

	if (!queen_name_valid(name))
		return bad_name(q, "queue", name);
	rc = q->ops->queue_get(q->st, name, out);
	if (rc == -ENOENT)
		return queen_err(q, rc, "no queue '%s'", name);
	return rc;
}

static int
queue_insert(struct queen *q, const char *name, const struct queen_owner *own,
    struct queue_row *out)
{
	struct group_row g;
	int rc;

	memset(out, 0, sizeof(*out));
	snprintf(out->name, sizeof(out->name), "%s", name);
	out->created_at = queen_now(q);
	out->owner = own ? *own : default_owner;
	out->owner.mode &= 07777;
	qconf_defaults(&out->conf);
	if ((rc = q->ops->queue_insert(q->st, out)) != 0)
		return rc;
	return group_load(q, out, NULL, true, &g);
}

int
queue_ensure(struct queen *q, const char *name, struct queue_row *out)
{
	int rc = queue_load(q, name, out);

	if (rc == -ENOENT)
		rc = queue_insert(q, name, NULL, out);
	return rc;
}

int
queen_queue_create(struct queen *q, const char *name,
    const struct queen_owner *own)
{
	struct queue_row r;
	int rc;

	if (!queen_name_valid(name))
		return bad_name(q, "queue", name);
	if ((rc = tx_begin(q)) != 0)
		return rc;
	rc = q->ops->queue_get(q->st, name, &r);
	if (rc == 0)
		rc = queen_err(q, -EEXIST, "queue '%s' exists", name);
	else if (rc == -ENOENT)
		rc = queue_insert(q, name, own, &r);
	return tx_end(q, rc);
}

int
queen_queue_delete(struct queen *q, const char *name)
{
	struct queue_row r;
	int64_t msgs, groups, timers;
	int rc;

	if ((rc = tx_begin(q)) != 0)
		return rc;
	if ((rc = queue_load(q, name, &r)) != 0)
		goto out;
	rc = q->ops->queue_usage(q->st, r.id, &msgs, &groups, &timers);
	if (rc != 0)
		goto out;
	if (msgs || groups || timers) {
		rc = queen_err(q, -ENOTEMPTY, "queue '%s' holds %lld messages, "
		    "%lld groups and %lld timers", name, (long long)msgs,
		    (long long)groups, (long long)timers);
		goto out;
	}
	/* its waiting readers elsewhere are answered (ENOENT) */
	if ((rc = announce(q, r.id, 0)) == 0)
		rc = q->ops->queue_delete(q->st, r.id);
out:
	return tx_end(q, rc);
}

int
queen_queue_purge(struct queen *q, const char *name, bool *existed)
{
	struct queue_row r;
	int rc;

	*existed = false;
	if (!queen_name_valid(name))
		return queen_err(q, -EINVAL, "bad queue name");
	if ((rc = tx_begin(q)) != 0)
		return rc;
	rc = queue_load(q, name, &r);
	if (rc == -ENOENT) {
		rc = 0;
		goto out;
	}
	if (rc != 0)
		goto out;
	/* the store drops the partitions' log and hash rows first, and
	 * everything else goes with the queue row (cascades) */
	if ((rc = q->ops->queue_delete(q->st, r.id)) == 0)
		*existed = true;
out:
	return tx_end(q, rc);
}

static void
queue_info(const struct queue_row *r, struct queen_queue_info *out)
{
	memset(out, 0, sizeof(*out));
	out->id = r->id;
	memcpy(out->name, r->name, sizeof(out->name));
	out->created_at = r->created_at;
	out->owner = r->owner;
}

int
queen_queue_get(struct queen *q, const char *name,
    struct queen_queue_info *out)
{
	struct queue_row r;
	int rc = queue_load(q, name, &r);

	if (rc == 0)
		queue_info(&r, out);
	return rc;
}

int
queen_queue_set_owner(struct queen *q, const char *name,
    const struct queen_owner *own)
{
	struct queue_row r;
	int rc;

	if ((rc = tx_begin(q)) != 0)
		return rc;
	if ((rc = queue_load(q, name, &r)) == 0) {
		r.owner = *own;
		r.owner.mode &= 07777;
		rc = q->ops->queue_update(q->st, &r);
	}
	return tx_end(q, rc);
}

struct qlist {
	queen_queue_cb cb;
	void *arg;
};

static int
qlist_one(void *arg, const struct queue_row *r)
{
	struct qlist *l = arg;
	struct queen_queue_info qi;

	queue_info(r, &qi);
	return l->cb(l->arg, &qi);
}

int
queen_queue_list(struct queen *q, queen_queue_cb cb, void *arg)
{
	struct qlist l = { cb, arg };

	return q->ops->queue_list(q->st, qlist_one, &l);
}

/* ---- config ---- */

int
queen_config_set(struct queen *q, const char *queue, const char *group,
    const char *const *keys, const char *const *values, size_t n)
{
	struct queue_row qr;
	struct group_row g, before;
	int rc;

	if ((rc = tx_begin(q)) != 0)
		return rc;
	if ((rc = queue_load(q, queue, &qr)) != 0)
		goto out;
	if (!group) {
		rc = config_apply(q, &qr, NULL, keys, values, n);
		if (rc == 0)
			rc = q->ops->queue_update(q->st, &qr);
		goto out;
	}
	if ((rc = group_load(q, &qr, group, true, &g)) != 0)
		goto out;
	before = g;
	if ((rc = config_apply(q, &qr, &g, keys, values, n)) != 0)
		goto out;
	if ((rc = q->ops->group_update(q->st, &g)) != 0)
		goto out;
	if (g.mode != before.mode || g.since != before.since)
		rc = group_resubscribe(q, &qr, &g);
out:
	return tx_end(q, rc);
}

ssize_t
queen_config_format(struct queen *q, const char *queue, const char *group,
    char *buf, size_t len)
{
	struct queue_row qr;
	struct group_row g;
	int rc;

	if ((rc = queue_load(q, queue, &qr)) != 0)
		return rc;
	if (group) {
		if ((rc = group_load(q, &qr, group, false, &g)) == -ENOENT)
			rc = group_default(q, &qr, group, &g);
		if (rc != 0)
			return rc;
	}
	return config_format(&qr, group ? &g : NULL, buf, len);
}

int
queen_config_get(struct queen *q, const char *queue, const char *group,
    const char *key, int64_t *value)
{
	struct queue_row qr;
	struct group_row g;
	int rc;

	if ((rc = queue_load(q, queue, &qr)) != 0)
		return rc;
	if (group) {
		if ((rc = group_load(q, &qr, group, false, &g)) == -ENOENT)
			rc = group_default(q, &qr, group, &g);
		if (rc != 0)
			return rc;
	}
	rc = config_lookup(&qr, group ? &g : NULL, key, value);
	if (rc != 0)
		return queen_err(q, rc, "unknown config key '%s'", key);
	return 0;
}

/* ---- partitions ---- */

struct mkcur {
	struct queen *q;
	const struct part_row *p;
	const struct group_row *g;
};

static int
mkcur_group(void *arg, const struct group_row *g)
{
	struct mkcur *m = arg;
	struct cursor_row c;

	return cursor_load(m->q, m->p, g, &c);
}

int
part_load(struct queen *q, const struct queue_row *qr, const char *name,
    bool create, struct part_row *out)
{
	struct mkcur m;
	int rc;

	if (!name)
		name = QUEEN_DEFAULT_PARTITION;
	if (!queen_name_valid(name))
		return bad_name(q, "partition", name);
	rc = q->ops->part_get(q->st, qr->id, name, out);
	if (rc != -ENOENT || !create) {
		if (rc == -ENOENT)
			queen_err(q, rc, "no partition '%s' in queue '%s'", name,
			    qr->name);
		return rc;
	}
	memset(out, 0, sizeof(*out));
	out->queue_id = qr->id;
	snprintf(out->name, sizeof(out->name), "%s", name);
	uuid_v7(q, out->uuid);
	out->head = 1;
	out->tail = 0;
	out->txns_start = 1;
	out->created_at = queen_now(q);
	if ((rc = q->ops->part_insert(q->st, out)) != 0)
		return rc;
	m.q = q;
	m.p = out;
	m.g = NULL;
	return q->ops->group_list(q->st, qr->id, mkcur_group, &m);
}

static void
part_info(const struct part_row *p, struct queen_partition_info *out)
{
	memset(out, 0, sizeof(*out));
	out->id = p->id;
	memcpy(out->name, p->name, sizeof(out->name));
	memcpy(out->uuid, p->uuid, sizeof(out->uuid));
	out->head = p->head;
	out->tail = p->tail;
	out->txns_start = p->txns_start;
	out->last_push_at = p->last_push_at;
	out->duplicates = p->duplicates;
}

int
queen_partition_get(struct queen *q, const char *queue, const char *partition,
    struct queen_partition_info *out)
{
	struct queue_row qr;
	struct part_row p;
	int rc;

	if ((rc = queue_load(q, queue, &qr)) != 0)
		return rc;
	if ((rc = part_load(q, &qr, partition, false, &p)) != 0)
		return rc;
	part_info(&p, out);
	return 0;
}

struct plist {
	queen_partition_cb cb;
	void *arg;
};

static int
plist_one(void *arg, const struct part_row *p)
{
	struct plist *l = arg;
	struct queen_partition_info pi;

	part_info(p, &pi);
	return l->cb(l->arg, &pi);
}

int
queen_partition_list(struct queen *q, const char *queue,
    queen_partition_cb cb, void *arg)
{
	struct queue_row qr;
	struct plist l = { cb, arg };
	int rc;

	if ((rc = queue_load(q, queue, &qr)) != 0)
		return rc;
	return q->ops->part_list(q->st, qr.id, "", plist_one, &l);
}

/* ---- reading the log ---- */

struct collect {
	struct queen_batch *b;
	size_t cap;      /* bytes allocated */
	size_t used;     /* bytes used past the msgs array */
	size_t max;
	bool payload;
	int err;
};

/*
 * A batch is one block: header, msgs[max], then the strings and payloads.
 * Pointers into the block are fixed up when it grows.
 */
static int
collect_msg(void *arg, const struct msg_row *m)
{
	struct collect *c = arg;
	size_t tl = strlen(m->txid) + 1;
	size_t rl = m->trace_id ? strlen(m->trace_id) + 1 : 0;
	size_t pl = c->payload ? m->len + 1 : 0;
	size_t need = tl + rl + pl;
	size_t base = sizeof(struct queen_batch) +
	    c->max * sizeof(struct queen_msg);
	struct queen_msg *qm;
	char *p;

	if (base + c->used + need > c->cap) {
		size_t ncap = (base + c->used + need) * 2;
		struct queen_batch *nb = realloc(c->b, ncap);
		size_t i;

		if (!nb) {
			c->err = -ENOMEM;
			return -ENOMEM;
		}
		if (nb != c->b) {
			ptrdiff_t d = (char *)nb - (char *)c->b;

			for (i = 0; i < nb->n; i++) {
				struct queen_msg *x = &nb->msgs[i];

				x->txid += d;
				if (x->trace_id)
					x->trace_id += d;
				if (x->payload)
					x->payload = (const char *)x->payload +
					    d;
			}
		}
		c->b = nb;
		c->cap = ncap;
	}
	p = (char *)c->b + base + c->used;
	qm = &c->b->msgs[c->b->n++];
	memset(qm, 0, sizeof(*qm));
	qm->offset = m->offset;
	qm->created_at = m->created_at;
	qm->len = m->len;
	memcpy(p, m->txid, tl);
	qm->txid = p;
	p += tl;
	if (rl) {
		memcpy(p, m->trace_id, rl);
		qm->trace_id = p;
		p += rl;
	}
	if (pl) {
		if (m->len)
			memcpy(p, m->payload, m->len);
		p[m->len] = '\0';
		qm->payload = p;
	}
	c->used += need;
	return c->b->n >= c->max ? 1 : 0;
}

int
batch_read(struct queen *q, const struct part_row *p, int64_t from,
    size_t max, bool payload, int64_t upto_time, struct queen_batch **out)
{
	struct collect c;
	int rc;

	*out = NULL;
	if (max == 0)
		return 0;
	memset(&c, 0, sizeof(c));
	c.max = max;
	c.payload = payload;
	c.cap = sizeof(struct queen_batch) + max * sizeof(struct queen_msg);
	c.b = calloc(1, c.cap);
	if (!c.b)
		return -ENOMEM;
	rc = q->ops->msg_scan(q->st, p->id, from, max, payload, collect_msg,
	    &c);
	if (rc < 0 || c.err) {
		free(c.b);
		return c.err ? c.err : rc;
	}
	/* messages not yet visible (delay) end the span */
	while (c.b->n > 0 && upto_time != INT64_MAX &&
	    c.b->msgs[c.b->n - 1].created_at > upto_time)
		c.b->n--;
	snprintf(c.b->partition, sizeof(c.b->partition), "%s", p->name);
	snprintf(c.b->partition_uuid, sizeof(c.b->partition_uuid), "%s",
	    p->uuid);
	*out = c.b;
	return 0;
}

void
queen_batch_free(struct queen_batch *b)
{
	free(b);
}

int
queen_msg_read(struct queen *q, const char *queue, const char *partition,
    int64_t from, size_t max, bool want_payload, struct queen_batch **out)
{
	struct queue_row qr;
	struct part_row p;
	int rc;

	*out = NULL;
	if ((rc = queue_load(q, queue, &qr)) != 0)
		return rc;
	if ((rc = part_load(q, &qr, partition, false, &p)) != 0)
		return rc;
	if (max > QUEEN_BATCH_MAX)
		max = QUEEN_BATCH_MAX;
	rc = batch_read(q, &p, from, max, want_payload, INT64_MAX, out);
	if (rc == 0 && *out && (*out)->n == 0) {
		free(*out);
		*out = NULL;
	} else if (rc == 0 && *out) {
		snprintf((*out)->queue, sizeof((*out)->queue), "%s", qr.name);
	}
	return rc;
}

int
queen_msg_superseded(struct queen *q, const struct queen_batch *b, bool *out)
{
	struct queue_row qr;
	struct part_row p;
	struct hash128 *h = NULL;
	int64_t *newest = NULL;
	size_t i;
	int rc;

	if (!b || b->n == 0)
		return 0;
	memset(out, 0, b->n * sizeof(*out));
	if ((rc = queue_load(q, b->queue, &qr)) != 0)
		return rc;
	if ((rc = part_load(q, &qr, b->partition, false, &p)) != 0)
		return rc;
	h = malloc(b->n * sizeof(*h));
	newest = calloc(b->n, sizeof(*newest));
	if (!h || !newest) {
		rc = -ENOMEM;
		goto out;
	}
	for (i = 0; i < b->n; i++)
		hash_txid(b->msgs[i].txid, &h[i]);
	if (q->ops->txn_newest_many) {
		rc = q->ops->txn_newest_many(q->st, p.id, h, b->n,
		    b->msgs[0].offset + 1, p.tail, newest);
	} else {
		for (i = 0; i < b->n && rc == 0; i++) {
			rc = q->ops->txn_find(q->st, p.id, &h[i],
			    b->msgs[i].offset + 1, p.tail, true, &newest[i],
			    NULL);
			if (rc == -ENOENT) {
				newest[i] = 0;
				rc = 0;
			}
		}
	}
	if (rc != 0) {
		rc = queen_err(q, rc, "storage: %s", q->ops->errmsg(q->st));
		goto out;
	}
	for (i = 0; i < b->n; i++)
		out[i] = newest[i] > b->msgs[i].offset;
out:
	free(h);
	free(newest);
	return rc;
}

struct findtx {
	const char *txid;
	int64_t last;
	bool newest;
	int64_t found;   /* 0: none */
};

static int
findtx_one(void *arg, const struct msg_row *m)
{
	struct findtx *f = arg;

	if (m->offset > f->last)
		return 1;
	if (strcmp(m->txid, f->txid) != 0)
		return 0;
	f->found = m->offset;
	return f->newest ? 0 : 1;
}

int
txid_scan(struct queen *q, int64_t pid, int64_t from, int64_t last,
    const char *txid, bool newest, int64_t *offset)
{
	struct findtx f = { txid, last, newest, 0 };
	int rc;

	if (last < from)
		return -ENOENT;
	rc = q->ops->msg_scan(q->st, pid, from, (size_t)(last - from + 1),
	    false, findtx_one, &f);
	if (rc < 0)
		return rc;
	if (!f.found)
		return -ENOENT;
	*offset = f.found;
	return 0;
}

int
queen_msg_find(struct queen *q, const char *queue, const char *partition,
    const char *txid, int64_t *offset)
{
	struct queue_row qr;
	struct part_row p;
	struct hash128 h;
	int rc;

	if (txid && txid[0]) {
		hash_txid(txid, &h);
		if (q->ops->find_ahead && queen_name_valid(queue) &&
		    partition && queen_name_valid(partition) &&
		    (rc = q->ops->find_ahead(q->st, queue, partition, &h)) != 0)
			return queen_err(q, rc, "storage: %s",
			    q->ops->errmsg(q->st));
	}
	if ((rc = queue_load(q, queue, &qr)) != 0)
		return rc;
	if ((rc = part_load(q, &qr, partition, false, &p)) != 0)
		return rc;
	if (!txid || !txid[0])
		return -EINVAL;
	rc = q->ops->txn_find(q->st, p.id, &h, p.head, p.tail, true, offset,
	    NULL);
	if (rc == -ENOENT && p.head < p.txns_start)
		/* older than its hash row: look at the ids themselves */
		rc = txid_scan(q, p.id, p.head, p.txns_start - 1, txid, true,
		    offset);
	if (rc == -ENOENT)
		return queen_err(q, rc, "no message '%.64s' in %s/%s", txid,
		    qr.name, p.name);
	return rc;
}
