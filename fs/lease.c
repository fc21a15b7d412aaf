/*
 * lease.c - the lease ids this mount handed out or released, and what
 * acks here took from them: what lets a lookup under leased/ tell a dead
 * lease (ESTALE at rename) from an unknown one.  Runs under fs_lock;
 * nothing here calls the engine.
 */
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

static struct {
	char id[QUEEN_ID_LEN + 1];
	int64_t first;          /* its first offset as first seen; 0: unknown */
	bool whole;
	unsigned next;          /* the next slot + 1 in its chain; 0: none */
	char *acked[LEASE_ACKED];
} leases[LEASE_RING];
static unsigned lease_at;
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
