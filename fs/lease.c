/*
 * lease.c - the lease ids this mount handed out or released, and what
 * acks here took from them: what lets a lookup under leased/ tell a dead
 * lease (ESTALE at rename) from an unknown one; and what a pop here
 * handed out, so that reading it back costs the store nothing.  Runs
 * under fs_lock; nothing here calls the engine.
 */
#include <errno.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "fs.h"

/*
 * Lease ids handed out here, and what acks here took from them: a dead
 * lease keeps resolving (so an ack through it fails with ESTALE in rename
 * rather than ENOENT at lookup), except the messages already acked through
 * it and a lease acked whole.  Unknown ids never resolve.  A ring: the
 * oldest are forgotten.  Found through a hash of the id (chains of ring
 * slots, slot + 1 so that 0 ends one): a pop, the lookups of a leased
 * file and its ack each ask, and ids of one second share their first
 * dozen characters, so a walk of the ring cost 5% of a cycle.
 */
#define LEASE_RING 4096
#define LEASE_BUCKETS 8192
#define LEASE_ACKED 8

/*
 * A pop's answer, kept for its lease: the lookups of leased/<id> and of
 * its files, and the reads of them, come straight after the pop.  What
 * they see changes only by the clock or by a call that ends or moves a
 * lease; core counts those made in this process, by any front end
 * (queen_lease_epoch), so an answer is served only while that count is
 * the one it was kept at and the lease has KEEP_MARGIN_MS left.  Another
 * mount acting on this mount's lease is not seen here until the lease
 * ends: an ack through this mount then fails as it always would.  At
 * most KEEP_BYTES of payloads are kept; the oldest go first.
 */
#define KEEP_BYTES (8u << 20)
#define KEEP_BATCH (1u << 20)
#define KEEP_MARGIN_MS 1000

static struct {
	char id[QUEEN_ID_LEN + 1];
	int64_t first;          /* its first offset as first seen; 0: unknown */
	bool whole;
	unsigned next;          /* the next slot + 1 in its chain; 0: none */
	char *acked[LEASE_ACKED];
	struct queen_batch *kept; /* the pop's answer, or NULL */
	size_t kept_bytes;
	uint64_t kept_epoch; /* queen_lease_epoch when it was kept */
} leases[LEASE_RING];
static unsigned lease_at;
static size_t kept_total; /* payload bytes in every kept batch */
static unsigned lease_chain[LEASE_BUCKETS];   /* slot + 1; 0: empty */

static unsigned
lease_hash(const char *id)
{
	uint64_t h = 1469598103934665603ull;

	for (const unsigned char *p = (const unsigned char *)id; *p; p++)
		h = (h ^ *p) * 1099511628211ull;
	return (unsigned)(h ^ h >> 32) % LEASE_BUCKETS;
}

static int
lease_slot(const char *id)
{
	for (unsigned i = lease_chain[lease_hash(id)]; i; i = leases[i - 1].next)
		if (strcmp(leases[i - 1].id, id) == 0)
			return (int)i - 1;
	return -1;
}

/* Take slot i out of its chain (it holds an id). */
static void
lease_unchain(unsigned i)
{
	unsigned *pp = &lease_chain[lease_hash(leases[i].id)];

	while (*pp && *pp != i + 1)
		pp = &leases[*pp - 1].next;
	if (*pp)
		*pp = leases[i].next;
	leases[i].next = 0;
}

static void
unkeep(unsigned i)
{
	if (!leases[i].kept)
		return;
	queen_batch_free(leases[i].kept);
	kept_total -= leases[i].kept_bytes;
	leases[i].kept = NULL;
	leases[i].kept_bytes = 0;
}

void
lease_seen(const char *id, int64_t first)
{
	unsigned i, *head;
	int at;

	pthread_mutex_lock(&fs_lock);
	if ((at = lease_slot(id)) >= 0) {
		if (first > 0 && (!leases[at].first || first < leases[at].first))
			leases[at].first = first;
	} else if (strlen(id) <= QUEEN_ID_LEN) {
		i = lease_at;
		for (int k = 0; k < LEASE_ACKED; k++) {
			free(leases[i].acked[k]);
			leases[i].acked[k] = NULL;
		}
		if (leases[i].id[0])
			lease_unchain(i);
		unkeep(i);
		strcpy(leases[i].id, id);
		leases[i].first = first > 0 ? first : 0;
		leases[i].whole = false;
		head = &lease_chain[lease_hash(id)];
		leases[i].next = *head;
		*head = i + 1;
		lease_at = (lease_at + 1) % LEASE_RING;
	}
	pthread_mutex_unlock(&fs_lock);
}

/*
 * Keep b, the answer of a pop here (lease_seen first), or free it: it
 * answers while queen_lease_epoch is epoch, read before the pop.  Room
 * is made by dropping the oldest kept batches.
 */
void
lease_keep(struct queen_batch *b, uint64_t epoch)
{
	size_t bytes = 0;
	int at;

	if (!b)
		return;
	for (size_t k = 0; k < b->n; k++)
		bytes += b->msgs[k].len;
	pthread_mutex_lock(&fs_lock);
	if (b->lease_id[0] && bytes <= KEEP_BATCH &&
	    (at = lease_slot(b->lease_id)) >= 0 && !leases[at].kept) {
		for (unsigned k = 0;
		     kept_total + bytes > KEEP_BYTES && k < LEASE_RING; k++)
			unkeep((lease_at + k) % LEASE_RING);
		leases[at].kept = b;
		leases[at].kept_bytes = bytes;
		leases[at].kept_epoch = epoch;
		kept_total += bytes;
		b = NULL;
	}
	pthread_mutex_unlock(&fs_lock);
	queen_batch_free(b);
}

/* The kept batch of lease id, while it may answer (fs_lock held). */
static const struct queen_batch *
kept_live(const char *id, int64_t now)
{
	int i = lease_slot(id);
	const struct queen_batch *b = i >= 0 ? leases[i].kept : NULL;

	if (b &&
	    (b->lease_expires_at - KEEP_MARGIN_MS <= now ||
		leases[i].kept_epoch != queen_lease_epoch())) {
		unkeep((unsigned)i);
		b = NULL;
	}
	return b;
}

/* Whether lease id of (queue, group) is one this mount holds, per its pop. */
bool
lease_kept(const char *id, const char *queue, const char *group, int64_t now)
{
	const struct queen_batch *b;
	bool yes;

	pthread_mutex_lock(&fs_lock);
	b = kept_live(id, now);
	yes = b && strcmp(b->queue, queue) == 0 &&
	    strcmp(b->group, group ? group : QUEEN_QUEUE_MODE) == 0;
	pthread_mutex_unlock(&fs_lock);
	return yes;
}

/*
 * Fill *mi for message txid of lease id from its pop's answer, as
 * msg_info would from the store: 0, -ENOENT if it is not kept (ask the
 * store), -ENOMEM.
 */
int
lease_kept_msg(const char *id, const char *txid, int64_t now, bool want_payload,
    struct msginfo *mi)
{
	const struct queen_batch *b;
	int rc = -ENOENT;

	pthread_mutex_lock(&fs_lock);
	if ((b = kept_live(id, now)) != NULL) {
		memset(mi, 0, sizeof(*mi));
		rc = msginfo_from_batch(mi, b, txid, want_payload);
		mi->m = NULL; /* b may go once fs_lock is let go */
	}
	pthread_mutex_unlock(&fs_lock);
	return rc;
}

void
lease_acked(const char *id, const char *txid)
{
	int i;

	pthread_mutex_lock(&fs_lock);
	if ((i = lease_slot(id)) >= 0 && !txid) {
		leases[i].whole = true;
	} else if (i >= 0) {
		int k = 0;
		while (k < LEASE_ACKED - 1 && leases[i].acked[k])
			k++;
		free(leases[i].acked[k]);
		leases[i].acked[k] = strdup(txid);
	}
	pthread_mutex_unlock(&fs_lock);
}

/* The first offset of lease id as this mount saw it handed out (0: not). */
int64_t
lease_first(const char *id)
{
	int64_t first = 0;
	int i;

	pthread_mutex_lock(&fs_lock);
	if ((i = lease_slot(id)) >= 0)
		first = leases[i].first;
	pthread_mutex_unlock(&fs_lock);
	return first;
}

bool
lease_known(const char *id, const char *txid)
{
	int i;
	bool known;

	pthread_mutex_lock(&fs_lock);
	known = (i = lease_slot(id)) >= 0 && !leases[i].whole;
	for (int k = 0; known && txid && k < LEASE_ACKED; k++)
		if (leases[i].acked[k] && strcmp(leases[i].acked[k], txid) == 0)
			known = false;
	pthread_mutex_unlock(&fs_lock);
	return known;
}
