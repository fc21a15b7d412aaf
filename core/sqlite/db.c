/*
 * db.c - the SQLite implementation of the storage seam: the connection and
 * its pragmas, transactions, the table of every SQL statement, and the one
 * function that turns SQLite result codes into errno values.  Engine rules
 * live above the seam; nothing here decides what an ack means.
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <pthread.h>
#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "store.h"

#define QUEUE_COLS "id, name, created_at, uid, gid, mode, lease_time, " \
	"retry_limit, dlq, batch, wait, delay, window_buffer, dedup_window, " \
	"retention, completed_retention, max_message_bytes, " \
	"expiry_charges_retry, auto_ack, timer_delay, hash_retention"
#define PART_COLS "id, queue_id, name, uuid, head, tail, txns_start, " \
	"last_push_at, duplicates, created_at"
#define GROUP_COLS "id, queue_id, name, mode, since, created_at, batch, " \
	"wait, auto_ack, uid, gid, perm"
#define CUR_COLS "partition_id, group_id, committed, batch_end, lease_id, " \
	"lease_expires_at, retry_count, next_at"
#define LIVE_KV "(expires_at = 0 OR expires_at > ?3)"

static const char *const sql[ST__N] = {
	[ST_BEGIN] = "BEGIN IMMEDIATE",
	[ST_COMMIT] = "COMMIT",
	[ST_ROLLBACK] = "ROLLBACK",
	[ST_SAVEPOINT] = "SAVEPOINT op",
	[ST_RELEASE] = "RELEASE op",
	[ST_ROLLBACK_TO] = "ROLLBACK TO op",
	/* name */
	[ST_QUEUE_GET] = "SELECT " QUEUE_COLS " FROM queues WHERE name = ?1",
	/* id */
	[ST_QUEUE_BY_ID] = "SELECT " QUEUE_COLS " FROM queues WHERE id = ?1",
	/* name, created_at, uid, gid, mode, then the 15 config values */
	[ST_QUEUE_INSERT] = "INSERT INTO queues (" QUEUE_COLS ") VALUES "
	    "(NULL, ?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, "
	    "?14, ?15, ?16, ?17, ?18, ?19, ?20)",
	/* as insert, then id as ?21 */
	[ST_QUEUE_UPDATE] = "UPDATE queues SET name = ?1, created_at = ?2, "
	    "uid = ?3, gid = ?4, mode = ?5, lease_time = ?6, retry_limit = ?7, "
	    "dlq = ?8, batch = ?9, wait = ?10, delay = ?11, "
	    "window_buffer = ?12, dedup_window = ?13, retention = ?14, "
	    "completed_retention = ?15, max_message_bytes = ?16, "
	    "expiry_charges_retry = ?17, auto_ack = ?18, timer_delay = ?19, "
	    "hash_retention = ?20 WHERE id = ?21",
	/* id */
	[ST_QUEUE_DELETE] = "DELETE FROM queues WHERE id = ?1",
	[ST_QUEUE_LIST] = "SELECT " QUEUE_COLS " FROM queues ORDER BY name",
	/* queue id */
	[ST_QUEUE_MSGS] = "SELECT coalesce(sum(tail - head + 1), 0) "
	    "FROM partitions WHERE queue_id = ?1 AND tail >= head",
	[ST_QUEUE_GROUPS] = "SELECT count(*) FROM groups WHERE queue_id = ?1 "
	    "AND name <> '" QUEEN_QUEUE_MODE "'",
	[ST_QUEUE_TIMERS] = "SELECT count(*) FROM timers WHERE queue_id = ?1",
	/* queue id, name */
	[ST_PART_GET] = "SELECT " PART_COLS " FROM partitions "
	    "WHERE queue_id = ?1 AND name = ?2",
	/* id */
	[ST_PART_BY_ID] = "SELECT " PART_COLS " FROM partitions WHERE id = ?1",
	/* uuid */
	[ST_PART_BY_UUID] = "SELECT " PART_COLS " FROM partitions "
	    "WHERE uuid = ?1",
	/* queue_id, name, uuid, head, tail, txns_start, last_push_at,
	 * duplicates, created_at */
	[ST_PART_INSERT] = "INSERT INTO partitions (" PART_COLS ") VALUES "
	    "(NULL, ?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9)",
	/* head, tail, txns_start, last_push_at, duplicates, id */
	[ST_PART_UPDATE] = "UPDATE partitions SET head = ?1, tail = ?2, "
	    "txns_start = ?3, last_push_at = ?4, duplicates = ?5 WHERE id = ?6",
	/* queue id */
	/* queue id, after this name, page size */
	[ST_PART_LIST] = "SELECT " PART_COLS " FROM partitions "
	    "WHERE queue_id = ?1 AND name > ?2 ORDER BY name LIMIT ?3",
	/* queue id, name */
	[ST_GROUP_GET] = "SELECT " GROUP_COLS " FROM groups "
	    "WHERE queue_id = ?1 AND name = ?2",
	[ST_GROUP_BY_ID] = "SELECT " GROUP_COLS " FROM groups WHERE id = ?1",
	/* queue_id, name, mode, since, created_at, batch, wait, auto_ack,
	 * uid, gid, perm */
	[ST_GROUP_INSERT] = "INSERT INTO groups (" GROUP_COLS ") VALUES "
	    "(NULL, ?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11)",
	/* as insert, then id as ?12 */
	[ST_GROUP_UPDATE] = "UPDATE groups SET queue_id = ?1, name = ?2, "
	    "mode = ?3, since = ?4, created_at = ?5, batch = ?6, wait = ?7, "
	    "auto_ack = ?8, uid = ?9, gid = ?10, perm = ?11 WHERE id = ?12",
	[ST_GROUP_DELETE] = "DELETE FROM groups WHERE id = ?1",
	/* queue id */
	[ST_GROUP_LIST] = "SELECT " GROUP_COLS " FROM groups "
	    "WHERE queue_id = ?1 ORDER BY name",
	/* partition id, group id */
	[ST_CUR_GET] = "SELECT " CUR_COLS " FROM cursors "
	    "WHERE partition_id = ?1 AND group_id = ?2",
	/* the eight columns in order */
	[ST_CUR_PUT] = "INSERT OR REPLACE INTO cursors (" CUR_COLS ") "
	    "VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8)",
	/* lease id */
	[ST_CUR_BY_LEASE] = "SELECT " CUR_COLS " FROM cursors "
	    "WHERE lease_id = ?1",
	/* group id, upto, after_at, after_pid */
	[ST_CUR_READY] = "SELECT " CUR_COLS " FROM cursors "
	    "WHERE group_id = ?1 AND next_at >= 0 AND next_at <= ?2 "
	    "AND (next_at > ?3 OR (next_at = ?3 AND partition_id > ?4)) "
	    "ORDER BY next_at, partition_id LIMIT "
	    QUEEN_STR(CURSOR_READY_PAGE),
	/* group id */
	[ST_CUR_LIST_GROUP] = "SELECT " CUR_COLS " FROM cursors "
	    "WHERE group_id = ?1",
	/* partition id */
	[ST_CUR_LIST_PART] = "SELECT " CUR_COLS " FROM cursors "
	    "WHERE partition_id = ?1",
	/* partition id, at */
	[ST_CUR_WAKE] = "UPDATE cursors SET next_at = ?2 "
	    "WHERE partition_id = ?1 AND next_at < 0",
	[ST_CUR_DEL_GROUP] = "DELETE FROM cursors WHERE group_id = ?1",
	/* partition id */
	[ST_CUR_MIN] = "SELECT min(committed) FROM cursors "
	    "WHERE partition_id = ?1",
	/* key, created_at, txid, trace_id, payload */
	[ST_MSG_APPEND] = "INSERT INTO messages (id, created_at, txid, "
	    "trace_id, payload) VALUES (?1, ?2, ?3, ?4, ?5)",
	/* key, hash, created_at, h: the index entry comes later (fold) */
	[ST_TXN_APPEND] = "INSERT INTO txns (id, h, hash, created_at) "
	    "VALUES (?1, ?4, ?2, ?3)",
	/* from key, to key, limit */
	[ST_MSG_SCAN] = "SELECT id, created_at, txid, trace_id, payload "
	    "FROM messages WHERE id >= ?1 AND id <= ?2 ORDER BY id LIMIT ?3",
	[ST_MSG_SCAN_META] = "SELECT id, created_at, txid, trace_id, "
	    "length(payload) FROM messages WHERE id >= ?1 AND id <= ?2 "
	    "ORDER BY id LIMIT ?3",
	/* key */
	[ST_MSG_TIME] = "SELECT created_at FROM messages WHERE id = ?1",
	/* after key, last key */
	[ST_MSG_NEXT] = "SELECT id, created_at FROM messages "
	    "WHERE id > ?1 AND id <= ?2 ORDER BY id LIMIT 1",
	[ST_MSG_COUNT] = "SELECT count(*) FROM messages "
	    "WHERE id > ?1 AND id <= ?2",
	/* first key, upto key, limit */
	[ST_MSG_PURGE] = "DELETE FROM messages WHERE id IN (SELECT id FROM "
	    "messages WHERE id >= ?1 AND id <= ?2 ORDER BY id LIMIT ?3)",
	/* first key, last key */
	[ST_MSG_DELETE_PART] = "DELETE FROM messages "
	    "WHERE id >= ?1 AND id <= ?2",
	/* hash, lo key, hi key, h */
	[ST_TXN_FIND_LO] = "SELECT t.id, t.created_at FROM hashes x "
	    "JOIN txns t ON t.id = x.id WHERE x.h = ?4 AND x.id >= ?2 "
	    "AND x.id <= ?3 AND t.hash = ?1 ORDER BY x.id LIMIT 1",
	[ST_TXN_FIND_HI] = "SELECT t.id, t.created_at FROM hashes x "
	    "JOIN txns t ON t.id = x.id WHERE x.h = ?4 AND x.id >= ?2 "
	    "AND x.id <= ?3 AND t.hash = ?1 ORDER BY x.id DESC LIMIT 1",
	/* key, hash */
	[ST_TXN_CHECK] = "SELECT created_at FROM txns "
	    "WHERE id = ?1 AND hash = ?2",
	/* key, h */
	[ST_YOUNG_PUT] = "INSERT INTO young (id, h) VALUES (?1, ?2)",
	[ST_YOUNG_LIST] = "SELECT id, h FROM young",
	[ST_YOUNG_LAST] = "SELECT coalesce(max(seq), 0) FROM young",
	/* the last seq folded */
	[ST_YOUNG_DROP] = "DELETE FROM young WHERE seq <= ?1",
	/* key, h: only if the row is there and holds that h */
	[ST_HASH_FOLD] = "INSERT OR IGNORE INTO hashes (h, id) "
	    "SELECT h, id FROM txns WHERE id = ?1 AND h = ?2",
	/* key, h: known to be there */
	[ST_HASH_PUT] = "INSERT OR IGNORE INTO hashes (h, id) VALUES (?2, ?1)",
	/* the rows, counted up to a limit */
	[ST_HASH_COUNT] = "SELECT count(*) FROM (SELECT 1 FROM hashes "
	    "LIMIT ?1)",
	/* after (h, id), limit */
	[ST_HASH_SCAN] = "SELECT h, id FROM hashes WHERE (h, id) > (?1, ?2) "
	    "ORDER BY h, id LIMIT ?3",
	/* key */
	[ST_TXN_TIME] = "SELECT created_at FROM txns WHERE id = ?1",
	/* first key, upto key, limit */
	[ST_TXN_PURGE] = "DELETE FROM txns WHERE id IN (SELECT id FROM txns "
	    "WHERE id >= ?1 AND id <= ?2 ORDER BY id LIMIT ?3)",
	[ST_TXN_DELETE_PART] = "DELETE FROM txns WHERE id >= ?1 AND id <= ?2",
	/* queue, partition, group, offset, txid, payload, created_at,
	 * failed_at, retry_count, error */
	[ST_DLQ_INSERT] = "INSERT INTO dlq (queue_id, partition_id, group_name, "
	    "offset, txid, payload, created_at, failed_at, retry_count, error) "
	    "VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10)",
	/* queue id, group id */
	[ST_DLQ_LIST] = "SELECT d.id, p.name, d.group_name, d.txid, d.error, "
	    "d.offset, d.retry_count, d.created_at, d.failed_at, d.payload "
	    "FROM dlq d JOIN partitions p ON p.id = d.partition_id "
	    "WHERE d.queue_id = ?1 AND d.group_name = ?2 ORDER BY d.id",
	[ST_DLQ_LIST_META] = "SELECT d.id, p.name, d.group_name, d.txid, "
	    "d.error, d.offset, d.retry_count, d.created_at, d.failed_at, "
	    "length(d.payload) "
	    "FROM dlq d JOIN partitions p ON p.id = d.partition_id "
	    "WHERE d.queue_id = ?1 AND d.group_name = ?2 ORDER BY d.id",
	/* queue id, group, partition name, txid: one name, by dlq_txid */
	[ST_DLQ_GET] = "SELECT d.id, p.name, d.group_name, d.txid, d.error, "
	    "d.offset, d.retry_count, d.created_at, d.failed_at, d.payload "
	    "FROM dlq d JOIN partitions p ON p.id = d.partition_id "
	    "WHERE d.queue_id = ?1 AND d.group_name = ?2 AND d.txid = ?4 "
	    "AND p.name = ?3 ORDER BY d.id",
	[ST_DLQ_GET_META] = "SELECT d.id, p.name, d.group_name, d.txid, "
	    "d.error, d.offset, d.retry_count, d.created_at, d.failed_at, "
	    "length(d.payload) "
	    "FROM dlq d JOIN partitions p ON p.id = d.partition_id "
	    "WHERE d.queue_id = ?1 AND d.group_name = ?2 AND d.txid = ?4 "
	    "AND p.name = ?3 ORDER BY d.id",
	[ST_DLQ_COUNT] = "SELECT count(*) FROM dlq "
	    "WHERE queue_id = ?1 AND group_name = ?2",
	[ST_DLQ_DELETE] = "DELETE FROM dlq WHERE id = ?1",
	/* ns, key, now */
	[ST_KV_GET] = "SELECT value, version, expires_at, updated_at FROM kv "
	    "WHERE ns = ?1 AND key = ?2 AND " LIVE_KV,
	/* ns, key, value, expires_at, now */
	[ST_KV_PUT] = "INSERT INTO kv (ns, key, value, version, expires_at, "
	    "updated_at) VALUES (?1, ?2, ?3, 1, ?4, ?5) "
	    "ON CONFLICT (ns, key) DO UPDATE SET value = excluded.value, "
	    "version = CASE WHEN kv.expires_at > 0 AND kv.expires_at <= ?5 "
	    "THEN 1 ELSE kv.version + 1 END, "
	    "expires_at = excluded.expires_at, updated_at = excluded.updated_at",
	/* ns, key, now */
	[ST_KV_DELETE] = "DELETE FROM kv WHERE ns = ?1 AND key = ?2 AND "
	    LIVE_KV,
	/* ns, key, now, expires_at */
	[ST_KV_EXPIRY] = "UPDATE kv SET expires_at = ?4 "
	    "WHERE ns = ?1 AND key = ?2 AND " LIVE_KV,
	/* ns, (unused), now */
	[ST_KV_LIST] = "SELECT key, value, version, expires_at, updated_at "
	    "FROM kv WHERE ns = ?1 AND ?2 IS NULL AND " LIVE_KV
	    " ORDER BY key",
	/* now, limit */
	[ST_KV_PURGE] = "DELETE FROM kv WHERE rowid IN (SELECT rowid FROM kv "
	    "WHERE expires_at > 0 AND expires_at <= ?1 LIMIT ?2)",
	/* ns */
	[ST_NS_GET] = "SELECT uid, gid, mode FROM kv_ns WHERE name = ?1",
	/* ns, uid, gid, mode, now */
	[ST_NS_PUT] = "INSERT OR REPLACE INTO kv_ns (name, uid, gid, mode, "
	    "created_at) VALUES (?1, ?2, ?3, ?4, ?5)",
	[ST_NS_DELETE] = "DELETE FROM kv_ns WHERE name = ?1",
	/* now */
	[ST_NS_LIST] = "SELECT name FROM kv_ns UNION SELECT ns FROM kv "
	    "WHERE expires_at = 0 OR expires_at > ?1 ORDER BY 1",
	/* queue, key, partition, due_at, payload, now */
	[ST_TIMER_PUT] = "INSERT INTO timers (queue_id, key, partition, "
	    "due_at, payload, created_at) VALUES (?1, ?2, ?3, ?4, ?5, ?6) "
	    "ON CONFLICT (queue_id, key) DO UPDATE SET "
	    "partition = excluded.partition, due_at = excluded.due_at, "
	    "payload = excluded.payload",
	/* queue, key */
	[ST_TIMER_DELETE] = "DELETE FROM timers WHERE queue_id = ?1 "
	    "AND key = ?2",
	[ST_TIMER_GET] = "SELECT key, partition, due_at, created_at, payload "
	    "FROM timers WHERE queue_id = ?1 AND key = ?2",
	/* queue */
	[ST_TIMER_LIST] = "SELECT key, partition, due_at, created_at, payload "
	    "FROM timers WHERE queue_id = ?1 ORDER BY key",
	/* now */
	[ST_TIMER_DUE] = "SELECT key, partition, due_at, created_at, payload, "
	    "queue_id FROM timers WHERE due_at <= ?1 ORDER BY due_at LIMIT 1",
};


const char *const sync_sql[] = {
	[QUEEN_SYNC_FULL] = "PRAGMA synchronous = FULL",
	[QUEEN_SYNC_NORMAL] = "PRAGMA synchronous = NORMAL",
	[QUEEN_SYNC_OFF] = "PRAGMA synchronous = OFF",
};

int
db_errno(int rc)
{
	switch (rc & 0xff) {
	case SQLITE_OK:
	case SQLITE_DONE:
	case SQLITE_ROW:
		return 0;
	case SQLITE_BUSY:
	case SQLITE_LOCKED:
		return -EBUSY;
	case SQLITE_FULL:
		return -ENOSPC;
	case SQLITE_NOMEM:
		return -ENOMEM;
	case SQLITE_READONLY:
		return -EROFS;
	case SQLITE_PERM:
	case SQLITE_AUTH:
	case SQLITE_CANTOPEN:
		return -EACCES;
	case SQLITE_TOOBIG:
		return -EFBIG;
	case SQLITE_CONSTRAINT:
		if (rc == SQLITE_CONSTRAINT_UNIQUE ||
		    rc == SQLITE_CONSTRAINT_PRIMARYKEY)
			return -EEXIST;
		return -EINVAL;
	default:
		return -EIO;
	}
}

int
fail(struct store *s, int rc)
{
	s->last_rc = sqlite3_extended_errcode(s->db);
	if (s->last_rc == SQLITE_OK)
		s->last_rc = rc;
	snprintf(s->err, sizeof(s->err), "%s", sqlite3_errmsg(s->db));
	if ((s->last_rc & 0xff) == SQLITE_FULL)
		s->full = true;
	return db_errno(s->last_rc);
}

sqlite3_stmt *
stmt(struct store *s, enum stmt id)
{
	sqlite3_stmt *st = s->st[id];

	if (st) {
		sqlite3_reset(st);
		sqlite3_clear_bindings(st);
		return st;
	}
	if (sqlite3_prepare_v3(s->db, sql[id], -1, SQLITE_PREPARE_PERSISTENT,
	    &st, NULL) != SQLITE_OK) {
		fail(s, SQLITE_ERROR);
		return NULL;
	}
	s->st[id] = st;
	return st;
}

/* Step a statement that returns no rows. */
int
run(struct store *s, sqlite3_stmt *st)
{
	int rc = sqlite3_step(st);

	if (rc != SQLITE_DONE && rc != SQLITE_ROW) {
		rc = fail(s, rc);
		sqlite3_reset(st);
		return rc;
	}
	sqlite3_reset(st);
	return 0;
}

/* Step for one row: 1 row, 0 none, <0 error. Caller resets. */
int
row(struct store *s, sqlite3_stmt *st)
{
	int rc = sqlite3_step(st);

	if (rc == SQLITE_ROW)
		return 1;
	if (rc == SQLITE_DONE)
		return 0;
	rc = fail(s, rc);
	sqlite3_reset(st);
	return rc;
}

void
col_text(sqlite3_stmt *st, int i, char *buf, size_t len)
{
	const unsigned char *t = sqlite3_column_text(st, i);

	snprintf(buf, len, "%s", t ? (const char *)t : "");
}

static int
exec_simple(struct store *s, enum stmt id)
{
	sqlite3_stmt *st = stmt(s, id);

	return st ? run(s, st) : db_errno(s->last_rc);
}


int
one_int(struct store *s, sqlite3_stmt *st, int64_t *out)
{
	int rc = row(s, st);

	if (rc < 0)
		return rc;
	if (rc == 0 || sqlite3_column_type(st, 0) == SQLITE_NULL) {
		sqlite3_reset(st);
		return -ENOENT;
	}
	*out = sqlite3_column_int64(st, 0);
	sqlite3_reset(st);
	return 0;
}

/* ---- connection ---- */

/*
 * One store per file in a process.  Another process is kept out by the
 * lock "unix-excl" holds, but a connection of this process would share
 * it, and the engine counts on being the file's only writer (its pop
 * tickets, its view of what is synced).
 */
static pthread_mutex_t open_mu = PTHREAD_MUTEX_INITIALIZER;
static struct store *open_stores;

static int
register_file(struct store *s, const char *path)
{
	struct store *o;
	struct stat sb;
	int rc = 0;

	if (stat(path, &sb) != 0)
		return -errno;
	pthread_mutex_lock(&open_mu);
	for (o = open_stores; o && rc == 0; o = o->next_open)
		if (o->dev == sb.st_dev && o->ino == sb.st_ino)
			rc = -EBUSY;
	if (rc == 0) {
		s->dev = sb.st_dev;
		s->ino = sb.st_ino;
		s->next_open = open_stores;
		open_stores = s;
		s->registered = true;
	}
	pthread_mutex_unlock(&open_mu);
	return rc;
}

static void
unregister(struct store *s)
{
	struct store **pp;

	if (!s->registered)
		return;
	pthread_mutex_lock(&open_mu);
	for (pp = &open_stores; *pp; pp = &(*pp)->next_open)
		if (*pp == s) {
			*pp = s->next_open;
			break;
		}
	pthread_mutex_unlock(&open_mu);
}

static void
s_close(struct store *s)
{
	int i;

	if (!s)
		return;
	ckpt_stop(s->ck, s->db);
	for (i = 0; i < ST__N; i++)
		sqlite3_finalize(s->st[i]);
	sqlite3_close(s->db);
	unregister(s);
	ytab_free(&s->act);
	ytab_free(&s->frz);
	hfilt_free(&s->flt);
	hfilt_free(&s->fnew);
	rcache_free(s->rc);
	if (s->walfd >= 0)
		close(s->walfd);
	free(s->wal_path);
	free(s);
}

static const char *
s_errmsg(struct store *s)
{
	return s->err;
}

static void
s_err_clear(struct store *s)
{
	s->err[0] = '\0';
}

static bool
s_io_failed(struct store *s)
{
	int p = s->last_rc & 0xff;

	return p == SQLITE_IOERR || p == SQLITE_CORRUPT || p == SQLITE_NOTADB;
}

/* A checkpoint that failed on the disk stops every later transaction. */
int
ckpt_check(struct store *s)
{
	int rc = ckpt_failed(s->ck, s->err, sizeof(s->err));

	if (rc == 0)
		return 0;
	s->last_rc = rc;
	return db_errno(rc);
}


static void s_rollback(struct store *s);

static int
s_begin(struct store *s)
{
	int rc;

	s_reclaim(s);
	if ((rc = ckpt_check(s)) == 0)
		rc = exec_simple(s, ST_BEGIN);
	if (rc == 0 && (rc = fold(s)) != 0)
		s_rollback(s);
	if (rc == 0 && s->fbuild && s->fdebt >= FILTER_SLICE &&
	    (rc = filter_step(s, s->fdebt)) != 0)
		s_rollback(s);
	return rc;
}

static int
s_commit(struct store *s)
{
	int rc = exec_simple(s, ST_COMMIT);

	if (rc != 0)
		return rc;
	s->fold_at = s->fold_pend;
	s->folded += s->fold_pend_rows;
	s->folded_fast += s->fold_pend_fast;
	s->fold_pend_rows = s->fold_pend_fast = 0;
	if (s->frz.e && s->fold_at == s->frz.cap) {
		ytab_free(&s->frz);
		s->fold_at = s->fold_pend = 0;
	}
	filter_check(s);
	return 0;
}
static int s_savepoint(struct store *s) { return exec_simple(s, ST_SAVEPOINT); }
static int s_release(struct store *s) { return exec_simple(s, ST_RELEASE); }

static void
s_rollback(struct store *s)
{
	if (!sqlite3_get_autocommit(s->db))
		exec_simple(s, ST_ROLLBACK);
	rcache_clear(s->rc);
	s->fold_pend = s->fold_at;
	s->fold_pend_rows = s->fold_pend_fast = 0;
	s->dirt++;
}

static void
s_rollback_to(struct store *s)
{
	s->dirt++;
	rcache_clear(s->rc);
	exec_simple(s, ST_ROLLBACK_TO);
	exec_simple(s, ST_RELEASE);
}

static const struct store_ops sqlite_ops = {
	.close = s_close,
	.errmsg = s_errmsg,
	.err_clear = s_err_clear,
	.io_failed = s_io_failed,
	.begin = s_begin,
	.commit = s_commit,
	.rollback = s_rollback,
	.savepoint = s_savepoint,
	.release = s_release,
	.rollback_to = s_rollback_to,
	.queue_get = s_queue_get,
	.queue_by_id = s_queue_by_id,
	.queue_insert = s_queue_insert,
	.queue_update = s_queue_update,
	.queue_delete = s_queue_delete,
	.queue_list = s_queue_list,
	.queue_usage = s_queue_usage,
	.part_get = s_part_get,
	.part_by_id = s_part_by_id,
	.part_by_uuid = s_part_by_uuid,
	.part_insert = s_part_insert,
	.part_update = s_part_update,
	.part_list = s_part_list,
	.group_get = s_group_get,
	.group_by_id = s_group_by_id,
	.group_insert = s_group_insert,
	.group_update = s_group_update,
	.group_delete = s_group_delete,
	.group_list = s_group_list,
	.cursor_get = s_cursor_get,
	.cursor_put = s_cursor_put,
	.cursor_by_lease = s_cursor_by_lease,
	.cursor_ready = s_cursor_ready,
	.cursor_list_group = s_cursor_list_group,
	.cursor_list_part = s_cursor_list_part,
	.cursor_wake = s_cursor_wake,
	.cursor_delete_group = s_cursor_delete_group,
	.cursor_min_committed = s_cursor_min_committed,
	.msg_append = s_msg_append,
	.msg_scan = s_msg_scan,
	.msg_time = s_msg_time,
	.msg_next = s_msg_next,
	.msg_count = s_msg_count,
	.msg_purge = s_msg_purge,
	.txn_find = s_txn_find,
	.txn_time = s_txn_time,
	.txn_purge = s_txn_purge,
	.dlq_insert = s_dlq_insert,
	.dlq_list = s_dlq_list,
	.dlq_delete = s_dlq_delete,
	.dlq_count = s_dlq_count,
	.kv_get = s_kv_get,
	.kv_put = s_kv_put,
	.kv_delete = s_kv_delete,
	.kv_set_expiry = s_kv_set_expiry,
	.kv_list = s_kv_list,
	.kv_purge = s_kv_purge,
	.ns_get = s_ns_get,
	.ns_put = s_ns_put,
	.ns_delete = s_ns_delete,
	.ns_list = s_ns_list,
	.timer_put = s_timer_put,
	.timer_delete = s_timer_delete,
	.timer_get = s_timer_get,
	.timer_list = s_timer_list,
	.timer_due = s_timer_due,
	.set_durable = s_set_durable,
	.sync = s_sync,
	.checkpoint = s_checkpoint,
	.checkpoints = s_checkpoints,
	.hashes = s_hashes,
};

static bool
read_only(struct store *s, const struct queen_options *opt)
{
	return opt->read_only || sqlite3_db_readonly(s->db, "main") == 1;
}

/* Pragmas, in one place. */
static int
configure(struct store *s, const struct queen_options *opt)
{
	char *msg = NULL;
	int rc;

	sqlite3_busy_timeout(s->db, BUSY_MS);
	sqlite3_extended_result_codes(s->db, 1);
	/* A read-only connection keeps the file locked and the wal-index in
	 * its heap: it may not be able to create a -shm file, and has no
	 * checkpointer beside it.  A writer shares both with its
	 * checkpointer (ckpt.c). */
	rc = sqlite3_exec(s->db, "PRAGMA foreign_keys = ON; "
	    "PRAGMA cache_size = -" CACHE_KIB_S "; PRAGMA temp_store = MEMORY",
	    NULL, NULL, &msg);
	s->cache_kib = CACHE_KIB;
	if (rc == SQLITE_OK && read_only(s, opt))
		rc = sqlite3_exec(s->db, "PRAGMA locking_mode = EXCLUSIVE",
		    NULL, NULL, &msg);
	if (rc == SQLITE_OK && !opt->read_only)
		rc = sqlite3_exec(s->db, "PRAGMA journal_mode = WAL", NULL, NULL,
		    &msg);
	if (rc == SQLITE_OK)
		rc = sqlite3_exec(s->db, sync_sql[opt->sync], NULL, NULL,
		    &msg);
	if (rc != SQLITE_OK) {
		snprintf(s->err, sizeof(s->err), "%s",
		    msg ? msg : sqlite3_errmsg(s->db));
		sqlite3_free(msg);
		return db_errno(sqlite3_extended_errcode(s->db));
	}
	return 0;
}

int
db_open(const struct queen_options *opt, struct store **out,
    const struct store_ops **ops, char *err, size_t errlen)
{
	static const struct queen_tune none;
	const struct queen_tune *tu = opt->tune ? opt->tune : &none;
	struct store *s;
	const char *vfs = NULL;
	int flags, rc;

	*out = NULL;
	if ((unsigned)opt->sync > QUEEN_SYNC_OFF)
		return -EINVAL;
	if ((rc = queen_vfs(tu->fault, &vfs, err, errlen)) != 0)
		return rc;
	s = calloc(1, sizeof(*s));
	if (!s)
		return -ENOMEM;
	s->walfd = -1;
	s->fault = tu->fault != NULL;
	s->fold_max = tu->fold_at ? tu->fold_at : FOLD_MAX;
	s->fmax = tu->filter_max ? tu->filter_max : FILTER_MAX;
	s->dirt = 1;    /* act starts with what young held: read each row */
	if (rcache_new(&s->rc) != 0) {
		free(s);
		return -ENOMEM;
	}
	flags = opt->read_only ? SQLITE_OPEN_READONLY :
	    SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE;
	flags |= SQLITE_OPEN_NOMUTEX;
	rc = sqlite3_open_v2(opt->path, &s->db, flags, vfs);
	if (rc != SQLITE_OK) {
		snprintf(err, errlen, "%s: %s", opt->path,
		    s->db ? sqlite3_errmsg(s->db) : "out of memory");
		rc = db_errno(s->db ? sqlite3_extended_errcode(s->db) : rc);
		goto out_close;
	}
	if ((rc = register_file(s, opt->path)) != 0) {
		snprintf(err, errlen, "%s: %s", opt->path, rc == -EBUSY ?
		    "already open in this process" : strerror(-rc));
		goto out_close;
	}
	s->sync = opt->sync;
	if ((rc = configure(s, opt)) != 0) {
		snprintf(err, errlen, "%s: %s", opt->path, s->err);
		goto out_close;
	}
	if ((rc = sqlite3_create_function(s->db, "queen_h64", 1, SQLITE_UTF8 |
	    SQLITE_DETERMINISTIC, NULL, sql_h64, NULL, NULL)) != SQLITE_OK) {
		snprintf(err, errlen, "%s: %s", opt->path,
		    sqlite3_errmsg(s->db));
		rc = db_errno(rc);
		goto out_close;
	}
	if ((rc = schema_migrate(s->db, opt->read_only, err, errlen)) != 0)
		goto out_close;
	if ((rc = young_load(s)) != 0 || (rc = filter_open(s)) != 0) {
		snprintf(err, errlen, "%s: reading the hashes: %s", opt->path,
		    rc == -ENOMEM ? strerror(ENOMEM) : s->err);
		goto out_close;
	}
	s->wal_path = strdup(sqlite3_filename_wal(sqlite3_db_filename(s->db,
	    "main")));
	if (!s->wal_path) {
		rc = -ENOMEM;
		goto out_close;
	}
	if (!read_only(s, opt) && (rc = ckpt_start(s->db, opt->path, vfs,
	    sync_sql[opt->sync], &s->ck, err, errlen)) != 0)
		goto out_close;
	*out = s;
	*ops = &sqlite_ops;
	return 0;

out_close:
	s_close(s);
	return rc;
}
