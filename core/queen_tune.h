/*
 * queen_tune.h - what a test or a benchmark may ask of the engine beyond
 * queen.h: storage tuning, the fault hook, and the telemetry of the SQLite
 * store's memory and checkpoints.  A producer or consumer needs none of
 * it; the mount uses it for its stats files and the QUEENFS_FAULT hook.
 */
#ifndef QUEEN_TUNE_H
#define QUEEN_TUNE_H

#include "queen.h"

/* queen_options.tune: every field 0/NULL for the default */
struct queen_tune {
	/*
	 * A test hook: NULL for no fault, or "fsync:N" / "write:N" to make
	 * every sync (or write) of the SQLite store after the first N fail
	 * with an I/O error, as a failing disk would; "logsync:N" counts
	 * and fails only queen_sync's own syncs of the log.  The budget is
	 * one per process, armed by each open that sets it.  -EINVAL if
	 * malformed.
	 */
	const char *fault;
	/*
	 * SQLite: how many pushed hashes wait in memory before they are
	 * folded into the on-disk hash index (0: 32768).  Tests set it low
	 * to make folds happen often.
	 */
	size_t fold_at;
	/*
	 * SQLite: the most hashes the filter in front of the hash index is
	 * sized for, at 10 bits each (0: 1,677,721, 2 MiB); with more there
	 * is no filter.  Tests set it low.
	 */
	size_t filter_max;
};

/*
 * queen_checkpoint_counts - checkpoints that copied pages so far: *beside
 * on the store's own thread, *in_writer by the writer itself, when the log
 * reached 4000 pages with a few frames still to copy.  Both 0 where there
 * is no log.
 */
void queen_checkpoint_counts(struct queen *q, uint64_t *beside,
    uint64_t *in_writer);
/*
 * queen_hash_stats - what the SQLite store keeps in memory beside SQLite's
 * page cache: its hashes, their filter and its copies of queue, group and
 * partition rows (docs/engine.md); all 0 on PostgreSQL.
 */
struct queen_hash_stats {
	uint64_t held;          /* hashes of recent pushes waiting for their
				 * fold into the on-disk index (16 bytes each) */
	uint64_t folded;        /* hash rows folded since open */
	uint64_t folded_fast;   /* of those, without reading their row:
				 * nothing rolled back or deleted since */
	uint64_t filter_bytes;  /* the filter in front of the index, or the
				 * one being built; 0: none */
	uint64_t filter_skips;  /* lookups it answered "not there" */
	uint64_t filter_builds; /* filters built since open */
	bool filter_building;   /* one is being built: none answers yet */
	uint64_t cache_kib;     /* the page cache the filter leaves */
	uint64_t row_hits;      /* queue, group and partition rows read from
				 * the store's copies since open */
	uint64_t row_misses;    /* ... and read from SQLite */
};
void queen_hash_stats(struct queen *q, struct queen_hash_stats *out);
/*
 * queen_round_trips - how many times the store has waited for its server
 * since open (PostgreSQL: one a statement or pipeline sent and answered);
 * 0 on SQLite, which has no server.
 */
uint64_t queen_round_trips(struct queen *q);
/*
 * queen_claims - how many pushes of a QUEEN_BATCH_REDO batch read their
 * partition without a lock and claimed it with their writes since open
 * (*claims), and how many of those batches then failed at a claim
 * (*lost): another session had changed the row, or held it past the lock
 * timeout; 0 on SQLite.
 */
void queen_claims(struct queen *q, uint64_t *claims, uint64_t *lost);
/*
 * queen_forget_reads - drop what the store read ahead for the calls to
 * come (PostgreSQL: rows it answers from for up to a millisecond), so
 * that the next call sees what another handle of this process has
 * committed since.  Nothing on SQLite.
 */
void queen_forget_reads(struct queen *q);
/*
 * queen_lease_epoch - a count, for the whole process, of the calls made
 * through any handle that may end a lease or move what it holds (an
 * ack of any kind, a renewal, a seek), each counted as it starts, and
 * of the batches rolled back (their pops' leases never were); a queue
 * or group is removed only once it holds no live lease.  What a caller
 * read of the count before a pop, and kept of its lease while the count
 * stayed the same, still holds, but for the clock.
 */
uint64_t queen_lease_epoch(void);

#endif
