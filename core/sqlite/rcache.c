/*
 * rcache.c - the SQLite store's copies of queue, group and partition rows.
 * Nearly every call reads its queue and partition, a lease's lookup also
 * its group, and each read was a statement of its own: a tenth of the
 * daemon's CPU.  The store is its file's only writer (unix-excl), so a
 * copy stays true as long as db.c keeps it in step: it fills a copy after
 * a read, rewrites a partition's counters when it updates them, drops a
 * copy at any other write of its row, and forgets everything at a
 * rollback or a queue's delete (which cascades).  A miss is never wrong,
 * only slower; this file knows nothing of SQL.
 */
#include <errno.h>
#include <string.h>
#include <sys/mman.h>

#include "db.h"

#define QSLOTS 64               /* queues, by id */
#define GSLOTS 256              /* groups, by id */
#define PSLOTS 16384            /* partitions, by id (ids come in order) */
#define PNAME 64                /* longer partition names are not kept */

struct qent {
	uint32_t gen;
	struct queue_row r;
};

struct gent {
	uint32_t gen;
	struct group_row r;
};

/* a partition row, with its name inline if it is short */
struct pent {
	uint32_t gen;
	int64_t id, queue_id, head, tail, txns_start, last_push_at;
	int64_t duplicates, created_at;
	char uuid[QUEEN_ID_LEN + 1];
	char name[PNAME];
};

/* Names and uuids lead to ids; the id's slot then says if it still holds. */
struct rcache {
	uint32_t gen;           /* entries of another gen are empty */
	uint64_t hits;          /* rows answered from here */
	uint64_t misses;        /* rows db.c read from SQLite and handed over */
	struct qent q[QSLOTS];
	int64_t qname[2 * QSLOTS];
	struct gent g[GSLOTS];
	int64_t gname[2 * GSLOTS];
	struct pent p[PSLOTS];
	int64_t pname[2 * PSLOTS], puuid[2 * PSLOTS];
};

static size_t
hash(int64_t qid, const char *s, size_t n)
{
	uint64_t h = 1469598103934665603ull ^ (uint64_t)qid;

	for (const unsigned char *c = (const unsigned char *)s; *c; c++)
		h = (h ^ *c) * 1099511628211ull;
	return (size_t)(h ^ h >> 29) % n;
}

/*
 * A mapping of its own, whose pages the kernel backs only once written,
 * so that a mount with a few partitions pays for the few slots it uses.
 * (calloc may hand out heap memory it clears first: the 3.5 MB were all
 * resident on every mount.)
 */
int
rcache_new(struct rcache **out)
{
	void *p = mmap(NULL, sizeof(**out), PROT_READ | PROT_WRITE,
	    MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);

	*out = NULL;
	if (p == MAP_FAILED)
		return -ENOMEM;
	*out = p;
	(*out)->gen = 1;
	return 0;
}

void
rcache_free(struct rcache *c)
{
	if (c)
		munmap(c, sizeof(*c));
}

void
rcache_clear(struct rcache *c)
{
	if (++c->gen == 0) {    /* after 2^32 clears: really empty them */
		memset(c->q, 0, sizeof(c->q));
		memset(c->g, 0, sizeof(c->g));
		memset(c->p, 0, sizeof(c->p));
		c->gen = 1;
	}
}

void
rcache_counts(const struct rcache *c, uint64_t *hits, uint64_t *misses)
{
	*hits = c->hits;
	*misses = c->misses;
}

/* hits are counted here; misses where db.c hands over a row it read */
static bool
hit(struct rcache *c, bool found)
{
	if (found)
		c->hits++;
	return found;
}

/* ---- queues ---- */

static struct qent *
qslot(struct rcache *c, int64_t id)
{
	struct qent *e = &c->q[(uint64_t)id % QSLOTS];

	return e->gen == c->gen && e->r.id == id ? e : NULL;
}

bool
rcache_queue_by_id(struct rcache *c, int64_t id, struct queue_row *out)
{
	struct qent *e = qslot(c, id);

	if (e)
		*out = e->r;
	return hit(c, e != NULL);
}

bool
rcache_queue_by_name(struct rcache *c, const char *name,
    struct queue_row *out)
{
	struct qent *e = qslot(c, c->qname[hash(0, name, 2 * QSLOTS)]);

	if (e && strcmp(e->r.name, name) != 0)
		e = NULL;
	if (e)
		*out = e->r;
	return hit(c, e != NULL);
}

void
rcache_queue_put(struct rcache *c, const struct queue_row *r)
{
	struct qent *e = &c->q[(uint64_t)r->id % QSLOTS];

	c->misses++;
	e->gen = c->gen;
	e->r = *r;
	c->qname[hash(0, r->name, 2 * QSLOTS)] = r->id;
}

void
rcache_queue_drop(struct rcache *c, int64_t id)
{
	struct qent *e = qslot(c, id);

	if (e)
		e->gen = 0;
}

/* ---- groups ---- */

static struct gent *
gslot(struct rcache *c, int64_t id)
{
	struct gent *e = &c->g[(uint64_t)id % GSLOTS];

	return e->gen == c->gen && e->r.id == id ? e : NULL;
}

bool
rcache_group_by_id(struct rcache *c, int64_t id, struct group_row *out)
{
	struct gent *e = gslot(c, id);

	if (e)
		*out = e->r;
	return hit(c, e != NULL);
}

bool
rcache_group_by_name(struct rcache *c, int64_t qid, const char *name,
    struct group_row *out)
{
	struct gent *e = gslot(c, c->gname[hash(qid, name, 2 * GSLOTS)]);

	if (e && (e->r.queue_id != qid || strcmp(e->r.name, name) != 0))
		e = NULL;
	if (e)
		*out = e->r;
	return hit(c, e != NULL);
}

void
rcache_group_put(struct rcache *c, const struct group_row *r)
{
	struct gent *e = &c->g[(uint64_t)r->id % GSLOTS];

	c->misses++;
	e->gen = c->gen;
	e->r = *r;
	c->gname[hash(r->queue_id, r->name, 2 * GSLOTS)] = r->id;
}

void
rcache_group_drop(struct rcache *c, int64_t id)
{
	struct gent *e = gslot(c, id);

	if (e)
		e->gen = 0;
}

/* ---- partitions ---- */

static struct pent *
pslot(struct rcache *c, int64_t id)
{
	struct pent *e = &c->p[(uint64_t)id % PSLOTS];

	return e->gen == c->gen && e->id == id ? e : NULL;
}

static bool
pcopy(struct rcache *c, const struct pent *e, struct part_row *out)
{
	if (e) {
		out->id = e->id;
		out->queue_id = e->queue_id;
		memcpy(out->name, e->name, sizeof(e->name));
		memcpy(out->uuid, e->uuid, sizeof(out->uuid));
		out->head = e->head;
		out->tail = e->tail;
		out->txns_start = e->txns_start;
		out->last_push_at = e->last_push_at;
		out->duplicates = e->duplicates;
		out->created_at = e->created_at;
	}
	return hit(c, e != NULL);
}

bool
rcache_part_by_id(struct rcache *c, int64_t id, struct part_row *out)
{
	return pcopy(c, pslot(c, id), out);
}

bool
rcache_part_by_name(struct rcache *c, int64_t qid, const char *name,
    struct part_row *out)
{
	struct pent *e = pslot(c, c->pname[hash(qid, name, 2 * PSLOTS)]);

	if (e && (e->queue_id != qid || strcmp(e->name, name) != 0))
		e = NULL;
	return pcopy(c, e, out);
}

bool
rcache_part_by_uuid(struct rcache *c, const char *uuid, struct part_row *out)
{
	struct pent *e = pslot(c, c->puuid[hash(0, uuid, 2 * PSLOTS)]);

	if (e && strcmp(e->uuid, uuid) != 0)
		e = NULL;
	return pcopy(c, e, out);
}

void
rcache_part_put(struct rcache *c, const struct part_row *r)
{
	struct pent *e = &c->p[(uint64_t)r->id % PSLOTS];
	size_t len = strlen(r->name);

	c->misses++;
	if (len >= PNAME)
		return;
	e->gen = c->gen;
	e->id = r->id;
	e->queue_id = r->queue_id;
	memcpy(e->name, r->name, len + 1);
	memcpy(e->uuid, r->uuid, sizeof(e->uuid));
	e->head = r->head;
	e->tail = r->tail;
	e->txns_start = r->txns_start;
	e->last_push_at = r->last_push_at;
	e->duplicates = r->duplicates;
	e->created_at = r->created_at;
	c->pname[hash(r->queue_id, r->name, 2 * PSLOTS)] = r->id;
	c->puuid[hash(0, r->uuid, 2 * PSLOTS)] = r->id;
}

/* The columns a partition's update writes, and no others. */
void
rcache_part_counters(struct rcache *c, const struct part_row *r)
{
	struct pent *e = pslot(c, r->id);

	if (!e)
		return;
	e->head = r->head;
	e->tail = r->tail;
	e->txns_start = r->txns_start;
	e->last_push_at = r->last_push_at;
	e->duplicates = r->duplicates;
}
