/*
 * note.c - error notes: the text a consumer attaches with setxattr
 * (user.queen.error) to a leased message before the rename that acks it,
 * keyed by (lease, transactionId) since they outlive the kernel's nodes.
 * Everything here runs under fs_lock; nothing here calls the engine.
 */
#include <stdlib.h>
#include <string.h>

#include "fs.h"

struct note {
	struct note *next;
	char *lease, *txid, *error;
	int64_t at;
};

static struct note *notes;
static unsigned nnotes;
static void note_free(struct note *n);
static struct note **
note_find(const char *lease, const char *txid)
{
	struct note **pp;

	for (pp = &notes; *pp; pp = &(*pp)->next)
		if (strcmp((*pp)->lease, lease) == 0 &&
		    strcmp((*pp)->txid, txid) == 0)
			break;
	return pp;
}

void
note_set(const char *lease, const char *txid, const char *error, int64_t now)
{
	struct note **pp, *n;
	char *e = strdup(error);

	if (!e)
		return;
	pthread_mutex_lock(&fs_lock);
	pp = note_find(lease, txid);
	if ((n = *pp) == NULL && nnotes >= NOTE_MAX) {
		/* the newest are first: forget the oldest, whatever it said */
		struct note **last = &notes;

		while ((*last)->next)
			last = &(*last)->next;
		note_free(*last);
		*last = NULL;
		nnotes--;
	}
	if (n == NULL && (n = calloc(1, sizeof(*n))) != NULL) {
		n->lease = strdup(lease);
		n->txid = strdup(txid);
		if (!n->lease || !n->txid) {
			/* note_find compares both: never list a NULL */
			note_free(n);
			n = NULL;
		} else {
			n->next = notes;
			notes = n;
			nnotes++;
		}
	}
	if (n) {
		free(n->error);
		n->error = e;
		n->at = now;
	} else {
		free(e);
	}
	pthread_mutex_unlock(&fs_lock);
}

static void
note_free(struct note *n)
{
	free(n->lease);
	free(n->txid);
	free(n->error);
	free(n);
}

char *
note_take(const char *lease, const char *txid)
{
	struct note **pp, *n;
	char *e = NULL;

	pthread_mutex_lock(&fs_lock);
	pp = note_find(lease, txid);
	if ((n = *pp) != NULL) {
		*pp = n->next;
		e = n->error;
		n->error = NULL;
		note_free(n);
		nnotes--;
	}
	pthread_mutex_unlock(&fs_lock);
	return e;
}

char *
note_get(const char *lease, const char *txid)
{
	struct note *n;
	char *e = NULL;

	pthread_mutex_lock(&fs_lock);
	if ((n = *note_find(lease, txid)) != NULL && n->error)
		e = strdup(n->error);
	pthread_mutex_unlock(&fs_lock);
	return e;
}

/* Notes outlive no lease: a day is longer than any sane lease_time. */
void
note_sweep(int64_t now)
{
	pthread_mutex_lock(&fs_lock);
	for (struct note **pp = &notes; *pp;) {
		struct note *n = *pp;
		if (now - n->at > 86400 * 1000) {
			*pp = n->next;
			note_free(n);
			nnotes--;
		} else {
			pp = &n->next;
		}
	}
	pthread_mutex_unlock(&fs_lock);
}

/*
 * A message set down without a lease (a lease-less rename of
 * partitions/<p>/<x> into failed/ or dlq/) keeps its note under its queue
 * and partition; no lease id has a '/'.
 */
void
note_msg_key(const char *queue, const char *part, char *out, size_t len)
{
	snprintf(out, len, "q/%s/%s", queue,
	    part ? part : QUEEN_DEFAULT_PARTITION);
}
