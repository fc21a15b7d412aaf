/*
 * queen.c - the handle: open and close, the clock, error text, names, ids,
 * and the transaction discipline every mutating call follows (one storage
 * transaction per call, or one savepoint inside a group-commit batch).
 */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <time.h>

#include "core.h"

static int64_t
realtime_ms(void *arg)
{
	struct timespec ts;

	(void)arg;
	clock_gettime(CLOCK_REALTIME, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* rc, with why in opt->err for a caller that has no handle to ask */
static int
open_failed(const struct queen_options *opt, int rc, const char *why)
{
	if (opt->err && opt->errlen)
		snprintf(opt->err, opt->errlen, "%s", why);
	return rc;
}

bool
queen_path_is_pg(const char *path)
{
	return path && (!strncmp(path, "postgresql://", 13) ||
	    !strncmp(path, "postgres://", 11));
}

int
queen_open(const struct queen_options *opt, struct queen **out)
{
	struct queen *q;
	int rc;

	*out = NULL;
	if (!opt)
		return -EINVAL;
	if (!opt->path || !opt->path[0])
		return open_failed(opt, -EINVAL, "no path to open");
	q = calloc(1, sizeof(*q));
	if (!q)
		return open_failed(opt, -ENOMEM, strerror(ENOMEM));
	q->clock = opt->clock ? opt->clock : realtime_ms;
	q->clock_arg = opt->clock_arg;
	if (queen_path_is_pg(opt->path))
		rc = pg_open(opt, &q->st, &q->ops, q->err, sizeof(q->err));
	else
		rc = db_open(opt, &q->st, &q->ops, q->err, sizeof(q->err));
	if (rc != 0) {
		rc = open_failed(opt, rc, q->err[0] ? q->err : strerror(-rc));
		free(q);
		return rc;
	}
	q->can_defer = q->ops->sync && opt->sync == QUEEN_SYNC_FULL;
	*out = q;
	return 0;
}

void
queen_close(struct queen *q)
{
	if (!q)
		return;
	if (q->batch_depth > 0)
		q->ops->rollback(q->st);
	q->ops->close(q->st);
	free(q);
}

const char *
queen_errmsg(struct queen *q)
{
	return q->err;
}

int64_t
queen_now(struct queen *q)
{
	return q->clock(q->clock_arg);
}

/* A sync that failed on the other thread stops writes here too. */
static bool
failed_now(struct queen *q)
{
	int e;

	if (!q->failed && (e = atomic_load(&q->sync_err)) != 0) {
		q->failed = true;
		snprintf(q->failmsg, sizeof(q->failmsg),
		    "storage I/O error, writes stopped: "
		    "fsync of the log failed: %s", strerror(-e));
	}
	return q->failed;
}

bool
queen_failed(struct queen *q, char *buf, size_t len)
{
	if (failed_now(q) && buf && len)
		snprintf(buf, len, "%s", q->failmsg);
	return q->failed;
}

bool
queen_name_valid(const char *name)
{
	size_t i;

	if (!name || !name[0] || name[0] == '.')
		return false;
	for (i = 0; name[i]; i++) {
		unsigned char c = (unsigned char)name[i];

		if (i >= QUEEN_NAME_MAX)
			return false;
		if ((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
		    (c >= '0' && c <= '9') || strchr("._:@=+-", c))
			continue;
		return false;
	}
	return true;
}

int
queen_err(struct queen *q, int rc, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(q->err, sizeof(q->err), fmt, ap);
	va_end(ap);
	q->err_set = true;
	return rc;
}

int64_t
clamp_add(int64_t a, int64_t b)
{
	if (b > 0 && a > INT64_MAX - b)
		return INT64_MAX;
	if (b < 0 && a < INT64_MIN - b)
		return INT64_MIN;
	return a + b;
}

/* A UUIDv7: 48 bits of milliseconds, then random bits. */
void
uuid_v7(struct queen *q, char out[QUEEN_ID_LEN + 1])
{
	/*
	 * Ids of one process sort in the order they were made: rand_a
	 * holds a counter within the millisecond (RFC 9562, method 1),
	 * and a millisecond past 4096 ids borrows from the next one.
	 */
	static _Atomic uint64_t last;
	unsigned char b[16];
	uint64_t ms = (uint64_t)queen_now(q), v, seen;
	int i;

	seen = atomic_load(&last);
	do {
		v = ms << 12 > seen ? ms << 12 : seen + 1;
	} while (!atomic_compare_exchange_weak(&last, &seen, v));
	ms = v >> 12;

	if (getrandom(b, sizeof(b), 0) != (ssize_t)sizeof(b)) {
		/* getrandom on Linux does not fail for 16 bytes once seeded */
		for (i = 0; i < 16; i++)
			b[i] = (unsigned char)rand();
	}
	for (i = 0; i < 6; i++)
		b[i] = (unsigned char)(ms >> (40 - 8 * i));
	b[6] = (unsigned char)(0x70 | ((v >> 8) & 0x0f));
	b[7] = (unsigned char)(v & 0xff);
	b[8] = (unsigned char)(0x80 | (b[8] & 0x3f));
	snprintf(out, QUEEN_ID_LEN + 1,
	    "%02x%02x%02x%02x-%02x%02x-%02x%02x-%02x%02x-"
	    "%02x%02x%02x%02x%02x%02x", b[0], b[1], b[2], b[3], b[4], b[5],
	    b[6], b[7], b[8], b[9], b[10], b[11], b[12], b[13], b[14], b[15]);
}

/* A storage error: note it, and stop all writes if it was an I/O error. */
static int
storage_error(struct queen *q, int rc)
{
	if (q->ops->io_failed(q->st) && !q->failed) {
		q->failed = true;
		snprintf(q->failmsg, sizeof(q->failmsg),
		    "storage I/O error, writes stopped: %s",
		    q->ops->errmsg(q->st));
	}
	if (rc == -ENOSPC)
		return queen_err(q, rc, "database or disk is full");
	return queen_err(q, rc, "storage: %s", q->ops->errmsg(q->st));
}

int
tx_begin(struct queen *q)
{
	int rc;

	/* what fails in this call is named by it (tx_end) */
	q->err_set = false;
	q->ops->err_clear(q->st);
	if (failed_now(q))
		return queen_err(q, -EIO, "%s", q->failmsg);
	if (q->batch_depth == 0 && q->ops->set_durable &&
	    (rc = q->ops->set_durable(q->st, true)) != 0)
		return storage_error(q, rc);
	rc = q->batch_depth > 0 ? q->ops->savepoint(q->st) :
	    q->ops->begin(q->st);
	if (rc != 0)
		return storage_error(q, rc);
	return 0;
}

/*
 * Finish what tx_begin started: keep it when rc is 0, else undo it.  A
 * failing commit undoes everything and its error is returned.  Storage
 * errors set the message; logical refusals keep the one already set.  A
 * refusal the store made that nothing named since tx_begin (a constraint
 * another session's commit broke: a foreign key to a queue it deleted)
 * is named by the store's message, not left with an earlier call's.
 */
int
tx_end(struct queen *q, int rc)
{
	int crc;
	bool unnamed = rc < 0 && !q->err_set && q->ops->errmsg(q->st)[0];

	if (q->batch_depth > 0) {
		if (rc == 0) {
			crc = q->ops->release(q->st);
			if (crc != 0) {
				q->ops->rollback_to(q->st);
				return storage_error(q, crc);
			}
			return 0;
		}
		q->ops->rollback_to(q->st);
	} else {
		if (rc == 0) {
			crc = q->ops->commit(q->st);
			if (crc == 0)
				return 0;
			q->ops->rollback(q->st);
			return storage_error(q, crc);
		}
		q->ops->rollback(q->st);
	}
	switch (rc) {
	case -EIO: case -ENOSPC: case -EBUSY: case -ENOMEM: case -EROFS:
	case -EACCES:
		return storage_error(q, rc);
	}
	if (unnamed)
		return storage_error(q, rc);
	return rc;
}

static int
batch_begin(struct queen *q, bool durable, bool deferred)
{
	int rc;

	if (q->batch_depth > 0)
		return queen_err(q, -EBUSY, "a batch is already open");
	if (failed_now(q))
		return queen_err(q, -EIO, "%s", q->failmsg);
	/* deferred: committed like a lazy batch, made durable by a sync */
	deferred = deferred && q->can_defer;
	/* a lease of what another handle pushed may need that push's
	 * sync: the store says at the commit (read_durable) */
	q->lazy = !durable && !deferred && q->ops->shared &&
	    q->ops->read_durable && q->ops->set_durable;
	durable = durable || (q->ops->shared && !q->lazy);
	if (q->ops->set_durable &&
	    (rc = q->ops->set_durable(q->st, durable && !deferred)) != 0)
		return storage_error(q, rc);
	rc = q->ops->begin_batch ? q->ops->begin_batch(q->st) :
	    q->ops->begin(q->st);
	if (rc != 0)
		return storage_error(q, rc);
	q->batch_depth = 1;
	q->deferred = deferred;
	return 0;
}

int
queen_batch_begin(struct queen *q, enum queen_batch_flags flags)
{
	int rc;

	if (flags &
	    ~(QUEEN_BATCH_LAZY | QUEEN_BATCH_DEFERRED | QUEEN_BATCH_BRIEF |
		QUEEN_BATCH_REDO))
		return queen_err(q, -EINVAL, "unknown batch flags %#x",
		    (unsigned)flags);
	if (q->ops->set_brief)
		q->ops->set_brief(q->st, (flags & QUEEN_BATCH_BRIEF) != 0);
	if (q->ops->set_redo)
		q->ops->set_redo(q->st, (flags & QUEEN_BATCH_REDO) != 0);
	rc = batch_begin(q, !(flags & QUEEN_BATCH_LAZY),
	    (flags & QUEEN_BATCH_DEFERRED) != 0);
	if (rc != 0 && q->ops->set_brief)
		q->ops->set_brief(q->st, false);
	if (rc != 0 && q->ops->set_redo)
		q->ops->set_redo(q->st, false);
	return rc;
}

static void fresh_commit(struct queen *q, uint64_t ticket);

int
queen_batch_commit(struct queen *q)
{
	int rc;

	if (q->batch_depth == 0)
		return queen_err(q, -EINVAL, "no batch is open");
	q->batch_depth = 0;
	q->ticket = 0;
	rc = 0;
	if (q->lazy && !q->ops->read_durable(q->st))
		rc = q->ops->set_durable(q->st, true);
	q->lazy = false;
	if (rc == 0)
		rc = q->ops->commit(q->st);
	if (rc != 0) {
		/* a pop of this batch's own push named the ticket it would
		 * have had (queen_pop_ticket): burn it, so that no later
		 * commit is taken for synced by a sync up to that number */
		if (q->deferred)
			atomic_fetch_add(&q->seq, 1);
		q->npend = 0;
		q->ops->rollback(q->st);
		lease_moves(); /* its pops' leases are gone */
		return storage_error(q, rc);
	}
	/* counted after the commit: a sync that reads seq covers it */
	if (q->deferred) {
		q->ticket = atomic_fetch_add(&q->seq, 1) + 1;
		fresh_commit(q, q->ticket);
	}
	q->npend = 0;
	return 0;
}

int
queen_checkpoint(struct queen *q)
{
	int rc;

	if (q->batch_depth > 0)
		return queen_err(q, -EBUSY, "a batch is open");
	if (failed_now(q) || !q->ops->checkpoint)
		return 0;
	if ((rc = q->ops->checkpoint(q->st)) < 0)
		return storage_error(q, rc);
	return rc;
}

void
queen_checkpoint_counts(struct queen *q, uint64_t *beside,
    uint64_t *in_writer)
{
	*beside = *in_writer = 0;
	if (q->ops->checkpoints)
		q->ops->checkpoints(q->st, beside, in_writer);
}

void
queen_hash_stats(struct queen *q, struct queen_hash_stats *out)
{
	memset(out, 0, sizeof(*out));
	if (q->ops->hashes)
		q->ops->hashes(q->st, out);
}

void
queen_claims(struct queen *q, uint64_t *claims, uint64_t *lost)
{
	*claims = *lost = 0;
	if (q->ops->claims)
		q->ops->claims(q->st, claims, lost);
}

uint64_t
queen_round_trips(struct queen *q)
{
	return q->ops->round_trips ? q->ops->round_trips(q->st) : 0;
}

static _Atomic uint64_t lease_epoch;

void
lease_moves(void)
{
	atomic_fetch_add(&lease_epoch, 1);
}

uint64_t
queen_lease_epoch(void)
{
	return atomic_load(&lease_epoch);
}

void
queen_forget_reads(struct queen *q)
{
	if (q->ops->forget_reads)
		q->ops->forget_reads(q->st);
}

uint64_t
queen_sync_ticket(struct queen *q)
{
	return q->ticket;
}

int
queen_sync(struct queen *q, uint64_t ticket)
{
	uint64_t upto;
	int rc;

	if (ticket == 0 || atomic_load(&q->synced) >= ticket)
		return 0;
	if ((rc = atomic_load(&q->sync_err)) != 0)
		return rc;
	upto = atomic_load(&q->seq);
	if ((rc = q->ops->sync(q->st)) != 0) {
		/* a lost connection (PostgreSQL's failover) fails the writes
		 * this sync was to cover; the next one, on a new connection,
		 * covers what follows */
		if (rc == -ENOTCONN)
			return rc;
		/* a failed fsync may have dropped pages: nothing is sure */
		rc = rc == -ENOSPC ? rc : -EIO;
		atomic_store(&q->sync_err, rc);
		return rc;
	}
	atomic_store(&q->synced, upto);
	return 0;
}

void
queen_batch_rollback(struct queen *q)
{
	if (q->batch_depth == 0)
		return;
	q->batch_depth = 0;
	q->lazy = false;
	q->npend = 0;
	q->ops->rollback(q->st);
	lease_moves(); /* its pops' leases are gone */
}

/*
 * The pop rule's bookkeeping.  A push inside a deferred batch is noted in
 * pend; the commit numbers the batch and moves its notes into the slots
 * with that ticket.  A slot whose ticket is synced is free again.
 */
static void
fresh_slot(struct queen *q, struct fresh *f, int64_t pid, int64_t from,
    uint64_t ticket)
{
	if (f->ticket <= atomic_load(&q->synced)) {
		f->pid = pid;
		f->from = from;
	} else if (f->pid != pid) {
		f->pid = 0;
	} else if (from < f->from) {
		f->from = from;
	}
	f->ticket = ticket;
}

/* the commit of a deferred batch numbered ticket: its pushes move in */
static void
fresh_commit(struct queen *q, uint64_t ticket)
{
	int i;

	if (q->npend > FRESH_PEND) {
		/* too many partitions to name: any offset of any of them */
		for (i = 0; i < FRESH_SLOTS; i++)
			fresh_slot(q, &q->fresh[i], 0, 0, ticket);
	} else {
		for (i = 0; i < q->npend; i++)
			fresh_slot(q, &q->fresh[(uint64_t)q->pend[i].pid %
			    FRESH_SLOTS], q->pend[i].pid, q->pend[i].from,
			    ticket);
	}
	q->npend = 0;
}

void
fresh_mark(struct queen *q, int64_t pid, int64_t off)
{
	int i;

	if (q->batch_depth == 0 || !q->deferred)
		return;   /* committed durable, or no promise at this level */
	for (i = 0; i < q->npend && i < FRESH_PEND; i++) {
		if (q->pend[i].pid == pid) {
			if (off < q->pend[i].from)
				q->pend[i].from = off;
			return;
		}
	}
	if (q->npend < FRESH_PEND) {
		q->pend[q->npend].pid = pid;
		q->pend[q->npend].from = off;
	}
	q->npend++;
}

/* a pop took offsets up to last of partition pid */
void
fresh_need(struct queen *q, int64_t pid, int64_t last)
{
	const struct fresh *f = &q->fresh[(uint64_t)pid % FRESH_SLOTS];
	uint64_t t = 0;
	int i;

	/* on a shared store another handle's push may be as young as this
	 * batch: the batch's own sync covers it, unless the store can tell
	 * that every message read so far is on the disk already */
	if (q->ops->shared && q->batch_depth > 0 && q->deferred &&
	    !(q->ops->read_durable && q->ops->read_durable(q->st)))
		t = atomic_load(&q->seq) + 1;
	if (f->ticket > atomic_load(&q->synced) &&
	    (f->pid == 0 || (f->pid == pid && last >= f->from)))
		t = f->ticket;
	/* pushed in this very batch: its commit's ticket */
	for (i = 0; i < q->npend; i++) {
		if (i >= FRESH_PEND || (q->pend[i].pid == pid &&
		    last >= q->pend[i].from)) {
			t = atomic_load(&q->seq) + 1;
			break;
		}
	}
	if (t > q->pop_need)
		q->pop_need = t;
}

uint64_t
queen_pop_ticket(struct queen *q)
{
	uint64_t t = q->pop_need;

	q->pop_need = 0;
	return t;
}
