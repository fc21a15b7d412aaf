/*
 * dlq.c - managing dead letters: requeue one (pushed again at its
 * partition's tail under the same transactionId, past dedup) and purge
 * one.  Writing them (ack.c) and reading them (maint.c) live elsewhere.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "core.h"

struct dlq_pick {
	int64_t ids[64];
	size_t n;
	bool more;
	bool want_payload;
	void *payload;          /* the first row's, malloc'd */
	size_t len;
	int rc;
};

static int
pick_cb(void *arg, const struct queen_dlq_entry *e)
{
	struct dlq_pick *pk = arg;

	if (pk->n == sizeof(pk->ids) / sizeof(pk->ids[0])) {
		pk->more = true;
		return 1;
	}
	if (pk->n == 0 && pk->want_payload) {
		pk->payload = malloc(e->len ? e->len : 1);
		if (!pk->payload) {
			pk->rc = -ENOMEM;
			return 1;
		}
		if (e->len)
			memcpy(pk->payload, e->payload, e->len);
		pk->len = e->len;
	}
	pk->ids[pk->n++] = e->id;
	return 0;
}

/* The rows of one dead letter's name, and (want_payload) its body. */
static int
pick(struct queen *q, const char *queue, const char *group,
    const char *partition, const char *txid, bool want_payload,
    struct dlq_pick *pk, struct queue_row *qr)
{
	int rc;

	memset(pk, 0, sizeof(*pk));
	pk->want_payload = want_payload;
	if (!partition || !txid || !txid[0])
		return queen_err(q, -EINVAL, "a partition and a transactionId "
		    "are required");
	if ((rc = queue_load(q, queue, qr)) != 0)
		return rc;
	if (group && strcmp(group, QUEEN_QUEUE_MODE) && !queen_name_valid(group))
		return queen_err(q, -EINVAL, "invalid group name");
	rc = q->ops->dlq_list(q->st, qr->id, group ? group : QUEEN_QUEUE_MODE,
	    partition, txid, want_payload, pick_cb, pk);
	if (rc < 0)
		return rc;
	if (pk->rc < 0)
		return queen_err(q, pk->rc, "out of memory");
	if (pk->n == 0)
		return queen_err(q, -ENOENT, "no dead letter '%.64s' in %s/%s "
		    "for %s", txid, queue, partition,
		    group ? group : "queue mode");
	return 0;
}

static int
drop_rows(struct queen *q, const struct dlq_pick *pk)
{
	int rc = 0;

	for (size_t i = 0; rc == 0 && i < pk->n; i++)
		rc = q->ops->dlq_delete(q->st, pk->ids[i]);
	return rc;
}

int
queen_dlq_requeue(struct queen *q, const char *queue, const char *group,
    const char *partition, const char *txid, int64_t *offset)
{
	struct queen_push_item it;
	struct queen_push_result r;
	struct queue_row qr;
	struct dlq_pick pk;
	int rc;

	if ((rc = tx_begin(q)) != 0)
		return rc;
	if ((rc = pick(q, queue, group, partition, txid, true, &pk, &qr)) != 0)
		goto out_free;
	memset(&it, 0, sizeof(it));
	it.queue = queue;
	it.partition = partition;
	it.txid = txid;
	it.payload = pk.payload;
	it.len = pk.len;
	if ((rc = push_again(q, &it, &r)) != 0 || (rc = drop_rows(q, &pk)) != 0)
		goto out_free;
	if (pk.more)
		rc = queen_err(q, -EAGAIN, "over 64 dead letters by one name");
	else if (offset)
		*offset = r.offset;
out_free:
	free(pk.payload);
	return tx_end(q, rc);
}

int
queen_dlq_purge(struct queen *q, const char *queue, const char *group,
    const char *partition, const char *txid)
{
	struct queue_row qr;
	struct dlq_pick pk;
	int rc;

	if ((rc = tx_begin(q)) != 0)
		return rc;
	if ((rc = pick(q, queue, group, partition, txid, false, &pk, &qr)) == 0)
		rc = drop_rows(q, &pk);
	free(pk.payload);
	return tx_end(q, rc);
}
