/*
 * schema.c - the SQLite schema, as ordered migration steps keyed by
 * PRAGMA user_version.  No CREATE statement lives anywhere else.
 *
 * Checklist for a new version: append a step, never edit an old one; add
 * the statements that use it to db.c; note it in docs/engine.md.
 */
#include <sqlite3.h>
#include <stdbool.h>
#include <stdio.h>

#include "db.h"

/*
 * Messages are keyed by one integer: partition id << 40 | offset, so a
 * partition's log is one contiguous range of a single b-tree.  The txn-hash
 * rows (one per pushed message, the 16-byte xxh3-128 of its transactionId)
 * use the same key and are purged on their own clock.  They are found by
 * the hash's first 8 bytes as an integer (h), in an index of (h, id)
 * half the size of one on the whole blob; the blob is compared after.
 */
static const char *const steps[] = {
	/* version 1 */
	"CREATE TABLE queues ("
	" id INTEGER PRIMARY KEY, name TEXT NOT NULL UNIQUE,"
	" created_at INTEGER NOT NULL, uid INTEGER NOT NULL,"
	" gid INTEGER NOT NULL, mode INTEGER NOT NULL,"
	" lease_time INTEGER NOT NULL, retry_limit INTEGER NOT NULL,"
	" dlq INTEGER NOT NULL, batch INTEGER NOT NULL, wait INTEGER NOT NULL,"
	" delay INTEGER NOT NULL, window_buffer INTEGER NOT NULL,"
	" dedup_window INTEGER NOT NULL, retention INTEGER NOT NULL,"
	" completed_retention INTEGER NOT NULL,"
	" max_message_bytes INTEGER NOT NULL,"
	" expiry_charges_retry INTEGER NOT NULL, auto_ack INTEGER NOT NULL,"
	" timer_delay INTEGER NOT NULL, hash_retention INTEGER NOT NULL);"
	"CREATE TABLE partitions ("
	" id INTEGER PRIMARY KEY,"
	" queue_id INTEGER NOT NULL REFERENCES queues(id) ON DELETE CASCADE,"
	" name TEXT NOT NULL, uuid TEXT NOT NULL UNIQUE,"
	" head INTEGER NOT NULL, tail INTEGER NOT NULL,"
	" txns_start INTEGER NOT NULL, last_push_at INTEGER NOT NULL,"
	" duplicates INTEGER NOT NULL, created_at INTEGER NOT NULL,"
	" UNIQUE (queue_id, name));"
	"CREATE TABLE groups ("
	" id INTEGER PRIMARY KEY,"
	" queue_id INTEGER NOT NULL REFERENCES queues(id) ON DELETE CASCADE,"
	" name TEXT NOT NULL, mode INTEGER NOT NULL, since INTEGER NOT NULL,"
	" created_at INTEGER NOT NULL, batch INTEGER NOT NULL,"
	" wait INTEGER NOT NULL, auto_ack INTEGER NOT NULL,"
	" uid INTEGER, gid INTEGER, perm INTEGER,"
	" UNIQUE (queue_id, name));"
	"CREATE TABLE cursors ("
	" partition_id INTEGER NOT NULL"
	"  REFERENCES partitions(id) ON DELETE CASCADE,"
	" group_id INTEGER NOT NULL REFERENCES groups(id) ON DELETE CASCADE,"
	" committed INTEGER NOT NULL, batch_end INTEGER NOT NULL,"
	" lease_id TEXT, lease_expires_at INTEGER NOT NULL,"
	" retry_count INTEGER NOT NULL, next_at INTEGER NOT NULL,"
	" PRIMARY KEY (partition_id, group_id)) WITHOUT ROWID;"
	"CREATE INDEX cursors_ready ON cursors (group_id, next_at);"
	"CREATE INDEX cursors_lease ON cursors (lease_id)"
	" WHERE lease_id IS NOT NULL;"
	"CREATE TABLE messages ("
	" id INTEGER PRIMARY KEY, created_at INTEGER NOT NULL,"
	" txid TEXT NOT NULL, trace_id TEXT, payload BLOB NOT NULL);"
	"CREATE TABLE txns ("
	" id INTEGER PRIMARY KEY, h INTEGER NOT NULL, hash BLOB NOT NULL,"
	" created_at INTEGER NOT NULL);"
	"CREATE INDEX txns_h ON txns (h);"
	"CREATE TABLE dlq ("
	" id INTEGER PRIMARY KEY,"
	" queue_id INTEGER NOT NULL REFERENCES queues(id) ON DELETE CASCADE,"
	" partition_id INTEGER NOT NULL, group_name TEXT NOT NULL,"
	" offset INTEGER NOT NULL, txid TEXT NOT NULL, payload BLOB NOT NULL,"
	" created_at INTEGER NOT NULL, failed_at INTEGER NOT NULL,"
	" retry_count INTEGER NOT NULL, error TEXT);"
	"CREATE INDEX dlq_group ON dlq (queue_id, group_name);"
	"CREATE TABLE kv_ns ("
	" name TEXT PRIMARY KEY, uid INTEGER NOT NULL, gid INTEGER NOT NULL,"
	" mode INTEGER NOT NULL, created_at INTEGER NOT NULL) WITHOUT ROWID;"
	"CREATE TABLE kv ("
	" ns TEXT NOT NULL, key TEXT NOT NULL, value BLOB NOT NULL,"
	" version INTEGER NOT NULL, expires_at INTEGER NOT NULL,"
	" updated_at INTEGER NOT NULL, PRIMARY KEY (ns, key));"
	"CREATE INDEX kv_expiry ON kv (expires_at) WHERE expires_at > 0;"
	"CREATE TABLE timers ("
	" queue_id INTEGER NOT NULL REFERENCES queues(id) ON DELETE CASCADE,"
	" key TEXT NOT NULL, partition TEXT NOT NULL,"
	" due_at INTEGER NOT NULL, payload BLOB NOT NULL,"
	" created_at INTEGER NOT NULL, PRIMARY KEY (queue_id, key));"
	"CREATE INDEX timers_due ON timers (due_at);",
	/*
	 * version 2: no change of tables.  A pushed row now comes with h = 0,
	 * which keeps the rows not yet folded together in txns_h, in id
	 * order; db.c folds them into their places later, many at a time
	 * and in hash order.  A real h is never 0.  The version keeps older
	 * builds, which would not look for those rows, off the file.
	 */
	"-- h = 0: not folded yet",
	/*
	 * version 3: the index of hashes is a table of its own, keyed by
	 * (h, id), and a row's h is written with it.  A push appends (id, h)
	 * to young, a log in push order; a fold copies the rows' pairs into
	 * hashes in h order and then drops the log's folded stretch whole:
	 * it writes only hashes' pages and never rewrites a txns row.  The
	 * rows of version 2 still waiting (h = 0) go to young.  Whatever
	 * deletes a txns row takes its hashes row too.  queen_h64 is db.c's
	 * h of a hash, registered for this step.
	 */
	"CREATE TABLE young ("
	" seq INTEGER PRIMARY KEY, id INTEGER NOT NULL, h INTEGER NOT NULL);"
	"INSERT INTO young (id, h)"
	" SELECT id, queen_h64(hash) FROM txns WHERE h = 0 ORDER BY id;"
	"UPDATE txns SET h = queen_h64(hash) WHERE h = 0;"
	"CREATE TABLE hashes ("
	" h INTEGER NOT NULL, id INTEGER NOT NULL,"
	" PRIMARY KEY (h, id)) WITHOUT ROWID;"
	"INSERT INTO hashes SELECT h, id FROM txns"
	" WHERE id NOT IN (SELECT id FROM young) ORDER BY h, id;"
	"DROP INDEX txns_h;"
	"CREATE TRIGGER txns_gone AFTER DELETE ON txns BEGIN"
	" DELETE FROM hashes WHERE h = old.h AND id = old.id;"
	" END;",
	/*
	 * version 4: a dead letter is found by its name (a lookup in
	 * dlq/<p>/) without reading the rest of its group's DLQ.
	 */
	"CREATE INDEX dlq_txid ON dlq (queue_id, group_name, txid);",
};

#define NSTEPS ((int)(sizeof(steps) / sizeof(steps[0])))

/* Bring the file to this build's version; a read-only open only checks. */
int
schema_migrate(sqlite3 *db, bool read_only, char *err, size_t errlen)
{
	sqlite3_stmt *st;
	char *msg = NULL;
	int version, rc, i;

	rc = sqlite3_prepare_v2(db, "PRAGMA user_version", -1, &st, NULL);
	if (rc != SQLITE_OK)
		goto fail;
	rc = sqlite3_step(st);
	version = rc == SQLITE_ROW ? sqlite3_column_int(st, 0) : -1;
	rc = sqlite3_finalize(st);
	if (version < 0 || rc != SQLITE_OK)
		goto fail;
	if (version > NSTEPS) {
		snprintf(err, errlen, "database schema version %d is newer than "
		    "this queenfs understands (%d)", version, NSTEPS);
		return -EPROTO;
	}
	if (version == NSTEPS)
		return 0;
	if (read_only) {
		snprintf(err, errlen, "database schema version %d is older "
		    "than this queenfs's (%d): open it once read-write to "
		    "upgrade it", version, NSTEPS);
		return -EPROTO;
	}
	rc = sqlite3_exec(db, "BEGIN IMMEDIATE", NULL, NULL, NULL);
	if (rc != SQLITE_OK)
		goto fail;
	for (i = version; i < NSTEPS; i++) {
		rc = sqlite3_exec(db, steps[i], NULL, NULL, &msg);
		if (rc != SQLITE_OK)
			goto out_rollback;
	}
	{
		char sql[64];

		snprintf(sql, sizeof(sql), "PRAGMA user_version = %d", NSTEPS);
		rc = sqlite3_exec(db, sql, NULL, NULL, &msg);
		if (rc != SQLITE_OK)
			goto out_rollback;
	}
	rc = sqlite3_exec(db, "COMMIT", NULL, NULL, &msg);
	if (rc != SQLITE_OK)
		goto out_rollback;
	return 0;

out_rollback:
	snprintf(err, errlen, "schema migration: %s",
	    msg ? msg : sqlite3_errmsg(db));
	sqlite3_free(msg);
	rc = db_errno(rc);
	sqlite3_exec(db, "ROLLBACK", NULL, NULL, NULL);
	return rc;
fail:
	snprintf(err, errlen, "reading schema version: %s",
	    sqlite3_errmsg(db));
	return db_errno(rc);
}
