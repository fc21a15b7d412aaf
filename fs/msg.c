/*
 * msg.c - the facts of one file that holds stored bytes (a message of the
 * log, a leased message, a dead letter, a KV value, a timer), gathered from
 * core inside jobs for lookups, reads at open and xattrs.  Which
 * call answers depends on where the node sits; nothing is computed here.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "fs.h"

void
msginfo_release(struct msginfo *mi)
{
	queen_batch_free(mi->b);
	free(mi->error);
	free(mi->payload);
	memset(mi, 0, sizeof(*mi));
}

static int
copy_payload(struct msginfo *mi, const void *p, size_t len)
{
	mi->len = len;
	if (!(mi->payload = malloc(len ? len : 1)))
		return -ENOMEM;
	if (len)
		memcpy(mi->payload, p, len);
	return 0;
}

/*
 * Fill *mi from message txid of b, its payload copied if asked for;
 * mi->m points into b.  -ENOENT if b does not hold txid.
 */
int
msginfo_from_batch(struct msginfo *mi, const struct queen_batch *b,
    const char *txid, bool want_payload)
{
	for (size_t i = 0; b && i < b->n; i++) {
		const struct queen_msg *m = &b->msgs[i];
		if (strcmp(m->txid, txid) != 0)
			continue;
		mi->m = m;
		mi->offset = m->offset;
		mi->created_at = m->created_at;
		mi->len = m->len;
		strcpy(mi->partition, b->partition);
		strcpy(mi->partition_uuid, b->partition_uuid);
		mi->expires_at = b->lease_expires_at;
		mi->retry_count = b->retry_count;
		return want_payload ? copy_payload(mi, m->payload, m->len) : 0;
	}
	return -ENOENT;
}

struct dlq_find {
	struct msginfo *mi;
	const char *part, *txid;
	bool want_payload;
	int rc;
};

static int
dlq_cb(void *arg, const struct queen_dlq_entry *e)
{
	struct dlq_find *df = arg;
	struct msginfo *mi = df->mi;

	if (strcmp(e->partition, df->part) != 0 ||
	    strcmp(e->txid, df->txid) != 0)
		return 0;
	strcpy(mi->partition, e->partition);
	strcpy(mi->group, e->group);
	mi->error = e->error ? strdup(e->error) : NULL;
	mi->offset = e->offset;
	mi->retry_count = e->retry_count;
	mi->created_at = e->created_at;
	mi->failed_at = e->failed_at;
	mi->len = e->len;
	df->rc = df->want_payload ? copy_payload(mi, e->payload, e->len) : 0;
	return 1;
}

int
msg_info(struct queen *q, struct node *n, bool want_payload,
    struct msginfo *mi)
{
	const char *part = n->part ? n->part : QUEEN_DEFAULT_PARTITION;
	struct queen_partition_info pi;
	struct queen_kv_value *kv = NULL;
	struct queen_timer_info *ti = NULL;
	struct dlq_find df;
	int rc;

	char tx[QUEEN_TXID_MAX + 1];
	const char *txid = tx;

	memset(mi, 0, sizeof(*mi));
	if (name_to_txid(n->name, tx, sizeof(tx)) < 0)
		txid = n->name;  /* kv keys and timers are plain names */
	df = (struct dlq_find){ mi, n->part, txid, want_payload, -ENOENT };
	switch (n->kind) {
	case K_LEASE_MSG:
		/* what a pop here handed out, while nothing here changed it */
		rc = lease_kept_msg(n->lease, txid, queen_now(q), want_payload,
		    mi);
		if (rc != -ENOENT)
			break;
		/* Ask for the payload: the batch's length then holds for
		 * sure.  One message, not the span (up to batch of them). */
		rc = queen_lease_read_msg(q, n->lease, txid, true, &mi->b);
		/* committed by an ack of a later one: while the lease lives
		 * it still resolves, so that an ack of it answers noop or
		 * EALREADY rather than ENOENT */
		if (rc == -ENOENT && lease_first(n->lease) > 0)
			rc = queen_lease_read_done(q, n->lease, txid,
			    lease_first(n->lease), true, &mi->b);
		if (rc < 0)
			return rc;
		rc = msginfo_from_batch(mi, mi->b, txid, want_payload);
		break;
	case K_MSG:
	case K_PENDING:
		if ((rc = queen_msg_find(q, n->queue, part, txid,
		    &mi->offset)) < 0)
			return rc;
		if ((rc = queen_msg_read(q, n->queue, part, mi->offset, 1, true,
		    &mi->b)) < 0)
			return rc;
		if ((rc = msginfo_from_batch(mi, mi->b, txid, want_payload)) ==
			0 &&
		    queen_partition_get(q, n->queue, part, &pi) == 0) {
			strcpy(mi->partition, pi.name);
			strcpy(mi->partition_uuid, pi.uuid);
		}
		break;
	case K_DLQ_MSG:
		rc = queen_dlq_get(q, n->queue, n->group, n->part, txid,
		    want_payload, dlq_cb, &df);
		rc = rc < 0 ? rc : df.rc;
		break;
	case K_KV_KEY:
		if ((rc = queen_kv_get(q, n->queue, n->name, &kv)) < 0)
			return rc;
		mi->created_at = kv->updated_at;
		mi->expires_at = kv->expires_at;
		rc = want_payload ? copy_payload(mi, kv->data, kv->len) : 0;
		mi->len = kv->len;
		free(kv);
		break;
	case K_TIMER:
		if ((rc = queen_timer_get(q, n->queue, n->name, true,
		    &ti)) < 0)
			return rc;
		mi->created_at = ti->due_at;  /* a timer's mtime is its due time */
		strcpy(mi->partition, ti->partition);
		rc = want_payload ? copy_payload(mi, ti->payload, ti->len) : 0;
		mi->len = ti->len;
		free(ti);
		break;
	default:
		return -ENOENT;
	}
	if (rc < 0)
		msginfo_release(mi);
	return rc;
}
