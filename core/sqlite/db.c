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

#include "db.h"


#define PB(pid) ((int64_t)(pid) << OFFSET_BITS)

/*
 * Checklist for a new statement: add its enum, its text (with the bind
 * order beside it), and use db_stmt() to get it; queen_close finalises it.
 */
enum stmt {
	ST_BEGIN, ST_COMMIT, ST_ROLLBACK, ST_SAVEPOINT, ST_RELEASE, ST_ROLLBACK_TO,
	ST_QUEUE_GET, ST_QUEUE_BY_ID, ST_QUEUE_INSERT, ST_QUEUE_UPDATE,
	ST_QUEUE_DELETE, ST_QUEUE_LIST, ST_QUEUE_MSGS, ST_QUEUE_GROUPS,
	ST_QUEUE_TIMERS,
	ST_PART_GET, ST_PART_BY_ID, ST_PART_BY_UUID, ST_PART_INSERT,
	ST_PART_UPDATE, ST_PART_LIST,
	ST_GROUP_GET, ST_GROUP_BY_ID, ST_GROUP_INSERT, ST_GROUP_UPDATE,
	ST_GROUP_DELETE, ST_GROUP_LIST,
	ST_CUR_GET, ST_CUR_PUT, ST_CUR_BY_LEASE, ST_CUR_READY, ST_CUR_LIST_GROUP,
	ST_CUR_LIST_PART, ST_CUR_WAKE, ST_CUR_DEL_GROUP, ST_CUR_MIN,
	ST_MSG_APPEND, ST_TXN_APPEND, ST_MSG_SCAN, ST_MSG_SCAN_META, ST_MSG_TIME,
	ST_MSG_NEXT, ST_MSG_COUNT, ST_MSG_PURGE, ST_MSG_DELETE_PART,
	ST_TXN_FIND_LO, ST_TXN_FIND_HI, ST_TXN_TIME, ST_TXN_PURGE,
	ST_TXN_CHECK, ST_YOUNG_PUT, ST_YOUNG_LIST, ST_YOUNG_LAST, ST_YOUNG_DROP,
	ST_HASH_FOLD, ST_HASH_PUT, ST_HASH_COUNT, ST_HASH_SCAN,
	ST_TXN_DELETE_PART,
	ST_DLQ_INSERT, ST_DLQ_LIST, ST_DLQ_LIST_META, ST_DLQ_COUNT,
	ST_KV_GET, ST_KV_PUT, ST_KV_DELETE, ST_KV_EXPIRY, ST_KV_LIST, ST_KV_PURGE,
	ST_NS_GET, ST_NS_PUT, ST_NS_DELETE, ST_NS_LIST,
	ST_TIMER_PUT, ST_TIMER_DELETE, ST_TIMER_GET, ST_TIMER_LIST, ST_TIMER_DUE,
	ST__N
};

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
	    "ORDER BY next_at, partition_id LIMIT 64",
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
	[ST_DLQ_COUNT] = "SELECT count(*) FROM dlq "
	    "WHERE queue_id = ?1 AND group_name = ?2",
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

struct store {
	sqlite3 *db;
	sqlite3_stmt *st[ST__N];
	int last_rc;
	enum queen_sync sync;   /* as opened */
	bool lazy;              /* synchronous is NORMAL for now */
	/* s_sync's own, on the thread that syncs */
	char *wal_path;
	int walfd;
	unsigned syncs;
	bool fault;             /* opened through the fault hook's VFS */
	struct ckpt *ck;        /* the checkpointer (read-write stores) */
	struct rcache *rc;      /* copies of queue, group, partition rows */
	/*
	 * Young hashes (pushed, not yet in hashes): new ones go to act and
	 * the young log; once act holds fold_max, it becomes frz, which
	 * each transaction's start folds into hashes a slice of slots at a
	 * time, paid for by debt (two per push).  frz's slots below fold_at
	 * are folded and committed, below fold_pend folded in the open
	 * transaction.
	 */
	struct ytab act, frz;
	size_t fold_at, fold_pend, fold_max;
	int64_t frz_seq;        /* young's last seq when frz froze */
	/*
	 * dirt counts what can leave a pair in memory without its row:
	 * rollbacks and deletes of hash rows.  While dirt is what it was
	 * when act began (act_dirt) and when frz froze (frz_dirt), every
	 * pair of frz has its row, and the fold need not read it.
	 */
	uint64_t dirt, act_dirt, frz_dirt;
	bool frz_clean;
	uint64_t folded_fast;
	/*
	 * The hash filter: every h in hashes, act and frz is in flt (w NULL:
	 * none, while one is built or past fmax).  A new one, fnew, is built
	 * from act, frz and a scan of hashes in (h, id) order, from fcur on,
	 * a slice per transaction paid for by fdebt, while pushes go into
	 * it too.  live estimates the h in hashes and young.
	 */
	struct hfilt flt, fnew;
	bool fbuild;
	int64_t fcur_h, fcur_id, fdebt, fscanned, live;
	uint64_t fmax;          /* the most h a filter is sized for */
	int cache_kib;          /* the page cache, as last set */
	uint64_t fskips, fbuilds;
	int64_t debt;
	uint64_t folded, fold_pend_rows;        /* rows: committed, open */
	uint64_t fold_pend_fast;
	bool registered;        /* in open_stores, as its file's store */
	dev_t dev;
	ino_t ino;
	struct store *next_open;
	char err[256];
};

static const char *const sync_sql[] = {
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

static int
fail(struct store *s, int rc)
{
	s->last_rc = sqlite3_extended_errcode(s->db);
	if (s->last_rc == SQLITE_OK)
		s->last_rc = rc;
	snprintf(s->err, sizeof(s->err), "%s", sqlite3_errmsg(s->db));
	return db_errno(s->last_rc);
}

static sqlite3_stmt *
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
static int
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
static int
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

static void
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

#define STMT(s, id, st) do { \
	(st) = stmt((s), (id)); \
	if (!(st)) \
		return db_errno((s)->last_rc); \
} while (0)

static int
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

static bool
s_io_failed(struct store *s)
{
	int p = s->last_rc & 0xff;

	return p == SQLITE_IOERR || p == SQLITE_CORRUPT || p == SQLITE_NOTADB;
}

/* A checkpoint that failed on the disk stops every later transaction. */
static int
ckpt_check(struct store *s)
{
	int rc = ckpt_failed(s->ck, s->err, sizeof(s->err));

	if (rc == 0)
		return 0;
	s->last_rc = rc;
	return db_errno(rc);
}

#define CACHE_KIB 4096          /* the page cache, less the filter's size */
#define CACHE_KIB_S "4096"
#define FILTER_MAX 1677721      /* h a filter is sized for at most: 2 MiB */
#define FILTER_MIN 65536        /* ... and at least (80 KiB) */
#define FILTER_SLICE 1024       /* the fewest rows a build scans at once */
#define FILTER_DEBT 8           /* rows a build may scan per push */

static int fold(struct store *s);
static int filter_step(struct store *s, int64_t max);
static void filter_check(struct store *s);
static void s_rollback(struct store *s);

static int
s_begin(struct store *s)
{
	int rc = ckpt_check(s);

	if (rc == 0)
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

/* ---- queues ---- */

static void
read_queue(sqlite3_stmt *st, struct queue_row *r)
{
	int i;

	r->id = sqlite3_column_int64(st, 0);
	col_text(st, 1, r->name, sizeof(r->name));
	r->created_at = sqlite3_column_int64(st, 2);
	r->owner.uid = (uid_t)sqlite3_column_int64(st, 3);
	r->owner.gid = (gid_t)sqlite3_column_int64(st, 4);
	r->owner.mode = (mode_t)sqlite3_column_int64(st, 5);
	for (i = 0; i < QCONF_N; i++)
		*QCONF_FIELD(&r->conf, i) = sqlite3_column_int64(st, 6 + i);
}

static int
get_queue(struct store *s, sqlite3_stmt *st, struct queue_row *out)
{
	int rc = row(s, st);

	if (rc <= 0)
		return rc < 0 ? rc : -ENOENT;
	read_queue(st, out);
	sqlite3_reset(st);
	rcache_queue_put(s->rc, out);
	return 0;
}

static int
s_queue_get(struct store *s, const char *name, struct queue_row *out)
{
	sqlite3_stmt *st;

	if (rcache_queue_by_name(s->rc, name, out))
		return 0;
	STMT(s, ST_QUEUE_GET, st);
	sqlite3_bind_text(st, 1, name, -1, SQLITE_STATIC);
	return get_queue(s, st, out);
}

static int
s_queue_by_id(struct store *s, int64_t id, struct queue_row *out)
{
	sqlite3_stmt *st;

	if (rcache_queue_by_id(s->rc, id, out))
		return 0;
	STMT(s, ST_QUEUE_BY_ID, st);
	sqlite3_bind_int64(st, 1, id);
	return get_queue(s, st, out);
}

static void
bind_queue(sqlite3_stmt *st, const struct queue_row *r)
{
	int i;

	sqlite3_bind_text(st, 1, r->name, -1, SQLITE_STATIC);
	sqlite3_bind_int64(st, 2, r->created_at);
	sqlite3_bind_int64(st, 3, r->owner.uid);
	sqlite3_bind_int64(st, 4, r->owner.gid);
	sqlite3_bind_int64(st, 5, r->owner.mode);
	for (i = 0; i < QCONF_N; i++)
		sqlite3_bind_int64(st, 6 + i,
		    *QCONF_FIELD((struct qconf *)&r->conf, i));
}

static int
s_queue_insert(struct store *s, struct queue_row *r)
{
	sqlite3_stmt *st;
	int rc;

	STMT(s, ST_QUEUE_INSERT, st);
	bind_queue(st, r);
	rc = run(s, st);
	if (rc == 0)
		r->id = sqlite3_last_insert_rowid(s->db);
	return rc;
}

static int
s_queue_update(struct store *s, const struct queue_row *r)
{
	sqlite3_stmt *st;

	rcache_queue_drop(s->rc, r->id);
	STMT(s, ST_QUEUE_UPDATE, st);
	bind_queue(st, r);
	sqlite3_bind_int64(st, 21, r->id);
	return run(s, st);
}

static int
delete_part_rows(struct store *s, int64_t pid)
{
	sqlite3_stmt *st;
	int rc;

	STMT(s, ST_MSG_DELETE_PART, st);
	sqlite3_bind_int64(st, 1, PB(pid));
	sqlite3_bind_int64(st, 2, PB(pid) + MAX_OFFSET);
	if ((rc = run(s, st)) != 0)
		return rc;
	STMT(s, ST_TXN_DELETE_PART, st);
	sqlite3_bind_int64(st, 1, PB(pid));
	sqlite3_bind_int64(st, 2, PB(pid) + MAX_OFFSET);
	if ((rc = run(s, st)) == 0 && sqlite3_changes(s->db) > 0) {
		s->live -= sqlite3_changes(s->db);
		s->dirt++;
	}
	return rc;
}

static int
drop_part(void *arg, const struct part_row *p)
{
	return delete_part_rows(arg, p->id);
}

static int s_part_list(struct store *s, int64_t qid, const char *from,
    part_row_cb cb, void *arg);

static int
s_queue_delete(struct store *s, int64_t id)
{
	sqlite3_stmt *st;
	int rc;

	/* partitions go with the queue (cascade); their log rows first */
	if ((rc = s_part_list(s, id, "", drop_part, s)) != 0)
		return rc;
	rcache_clear(s->rc);
	STMT(s, ST_QUEUE_DELETE, st);
	sqlite3_bind_int64(st, 1, id);
	return run(s, st);
}

static int
s_queue_list(struct store *s, queue_row_cb cb, void *arg)
{
	sqlite3_stmt *st;
	struct queue_row r;
	int rc;

	STMT(s, ST_QUEUE_LIST, st);
	while ((rc = row(s, st)) == 1) {
		read_queue(st, &r);
		if ((rc = cb(arg, &r)) != 0)
			break;
	}
	sqlite3_reset(st);
	return rc;
}

static int
s_queue_usage(struct store *s, int64_t id, int64_t *msgs, int64_t *groups,
    int64_t *timers)
{
	sqlite3_stmt *st;
	int rc;

	STMT(s, ST_QUEUE_MSGS, st);
	sqlite3_bind_int64(st, 1, id);
	if ((rc = one_int(s, st, msgs)) != 0)
		return rc;
	STMT(s, ST_QUEUE_GROUPS, st);
	sqlite3_bind_int64(st, 1, id);
	if ((rc = one_int(s, st, groups)) != 0)
		return rc;
	STMT(s, ST_QUEUE_TIMERS, st);
	sqlite3_bind_int64(st, 1, id);
	return one_int(s, st, timers);
}

/* ---- partitions ---- */

static void
read_part(sqlite3_stmt *st, struct part_row *p)
{
	p->id = sqlite3_column_int64(st, 0);
	p->queue_id = sqlite3_column_int64(st, 1);
	col_text(st, 2, p->name, sizeof(p->name));
	col_text(st, 3, p->uuid, sizeof(p->uuid));
	p->head = sqlite3_column_int64(st, 4);
	p->tail = sqlite3_column_int64(st, 5);
	p->txns_start = sqlite3_column_int64(st, 6);
	p->last_push_at = sqlite3_column_int64(st, 7);
	p->duplicates = sqlite3_column_int64(st, 8);
	p->created_at = sqlite3_column_int64(st, 9);
}

static int
get_part(struct store *s, sqlite3_stmt *st, struct part_row *out)
{
	int rc = row(s, st);

	if (rc <= 0)
		return rc < 0 ? rc : -ENOENT;
	read_part(st, out);
	sqlite3_reset(st);
	rcache_part_put(s->rc, out);
	return 0;
}

static int
s_part_get(struct store *s, int64_t qid, const char *name,
    struct part_row *out)
{
	sqlite3_stmt *st;

	if (rcache_part_by_name(s->rc, qid, name, out))
		return 0;
	STMT(s, ST_PART_GET, st);
	sqlite3_bind_int64(st, 1, qid);
	sqlite3_bind_text(st, 2, name, -1, SQLITE_STATIC);
	return get_part(s, st, out);
}

static int
s_part_by_id(struct store *s, int64_t id, struct part_row *out)
{
	sqlite3_stmt *st;

	if (rcache_part_by_id(s->rc, id, out))
		return 0;
	STMT(s, ST_PART_BY_ID, st);
	sqlite3_bind_int64(st, 1, id);
	return get_part(s, st, out);
}

static int
s_part_by_uuid(struct store *s, const char *uuid, struct part_row *out)
{
	sqlite3_stmt *st;

	if (rcache_part_by_uuid(s->rc, uuid, out))
		return 0;
	STMT(s, ST_PART_BY_UUID, st);
	sqlite3_bind_text(st, 1, uuid, -1, SQLITE_STATIC);
	return get_part(s, st, out);
}

static int
s_part_insert(struct store *s, struct part_row *p)
{
	sqlite3_stmt *st;
	int rc;

	STMT(s, ST_PART_INSERT, st);
	sqlite3_bind_int64(st, 1, p->queue_id);
	sqlite3_bind_text(st, 2, p->name, -1, SQLITE_STATIC);
	sqlite3_bind_text(st, 3, p->uuid, -1, SQLITE_STATIC);
	sqlite3_bind_int64(st, 4, p->head);
	sqlite3_bind_int64(st, 5, p->tail);
	sqlite3_bind_int64(st, 6, p->txns_start);
	sqlite3_bind_int64(st, 7, p->last_push_at);
	sqlite3_bind_int64(st, 8, p->duplicates);
	sqlite3_bind_int64(st, 9, p->created_at);
	rc = run(s, st);
	if (rc == 0)
		p->id = sqlite3_last_insert_rowid(s->db);
	return rc;
}

static int
s_part_update(struct store *s, const struct part_row *p)
{
	sqlite3_stmt *st;
	int rc;

	STMT(s, ST_PART_UPDATE, st);
	sqlite3_bind_int64(st, 1, p->head);
	sqlite3_bind_int64(st, 2, p->tail);
	sqlite3_bind_int64(st, 3, p->txns_start);
	sqlite3_bind_int64(st, 4, p->last_push_at);
	sqlite3_bind_int64(st, 5, p->duplicates);
	sqlite3_bind_int64(st, 6, p->id);
	if ((rc = run(s, st)) == 0)
		rcache_part_counters(s->rc, p);
	return rc;
}

/*
 * The callback may use the store, so rows are read a page at a time, by
 * name after the last one seen (the (queue_id, name) index): a queue of
 * 10,000 partitions used to cost the tick's maintenance a 6 MB array.
 */
#define PART_PAGE 128

static int
s_part_list(struct store *s, int64_t qid, const char *from, part_row_cb cb,
    void *arg)
{
	struct part_row *v;
	char after[QUEEN_NAME_MAX + 1];
	sqlite3_stmt *st;
	size_t n, i;
	int rc = 0;

	if (!(v = malloc(PART_PAGE * sizeof(*v))))
		return -ENOMEM;
	snprintf(after, sizeof(after), "%s", from);
	do {
		n = 0;
		if (!(st = stmt(s, ST_PART_LIST))) {
			rc = db_errno(s->last_rc);
			break;
		}
		sqlite3_bind_int64(st, 1, qid);
		sqlite3_bind_text(st, 2, after, -1, SQLITE_STATIC);
		sqlite3_bind_int(st, 3, PART_PAGE);
		while (n < PART_PAGE && (rc = row(s, st)) == 1)
			read_part(st, &v[n++]);
		sqlite3_reset(st);
		if (rc < 0)
			break;
		rc = 0;
		for (i = 0; rc == 0 && i < n; i++)
			rc = cb(arg, &v[i]);
		if (n > 0)
			memcpy(after, v[n - 1].name, sizeof(after));
	} while (rc == 0 && n == PART_PAGE);
	free(v);
	return rc;
}

/* ---- groups ---- */

static void
read_group(sqlite3_stmt *st, struct group_row *g)
{
	g->id = sqlite3_column_int64(st, 0);
	g->queue_id = sqlite3_column_int64(st, 1);
	col_text(st, 2, g->name, sizeof(g->name));
	g->mode = sqlite3_column_int64(st, 3);
	g->since = sqlite3_column_int64(st, 4);
	g->created_at = sqlite3_column_int64(st, 5);
	g->batch = sqlite3_column_int64(st, 6);
	g->wait = sqlite3_column_int64(st, 7);
	g->auto_ack = sqlite3_column_int64(st, 8);
	g->has_owner = sqlite3_column_type(st, 9) != SQLITE_NULL;
	g->owner.uid = (uid_t)sqlite3_column_int64(st, 9);
	g->owner.gid = (gid_t)sqlite3_column_int64(st, 10);
	g->owner.mode = (mode_t)sqlite3_column_int64(st, 11);
}

static int
get_group(struct store *s, sqlite3_stmt *st, struct group_row *out)
{
	int rc = row(s, st);

	if (rc <= 0)
		return rc < 0 ? rc : -ENOENT;
	read_group(st, out);
	sqlite3_reset(st);
	rcache_group_put(s->rc, out);
	return 0;
}

static int
s_group_get(struct store *s, int64_t qid, const char *name,
    struct group_row *out)
{
	sqlite3_stmt *st;

	if (rcache_group_by_name(s->rc, qid, name, out))
		return 0;
	STMT(s, ST_GROUP_GET, st);
	sqlite3_bind_int64(st, 1, qid);
	sqlite3_bind_text(st, 2, name, -1, SQLITE_STATIC);
	return get_group(s, st, out);
}

static int
s_group_by_id(struct store *s, int64_t id, struct group_row *out)
{
	sqlite3_stmt *st;

	if (rcache_group_by_id(s->rc, id, out))
		return 0;
	STMT(s, ST_GROUP_BY_ID, st);
	sqlite3_bind_int64(st, 1, id);
	return get_group(s, st, out);
}

static void
bind_group(sqlite3_stmt *st, const struct group_row *g)
{
	sqlite3_bind_int64(st, 1, g->queue_id);
	sqlite3_bind_text(st, 2, g->name, -1, SQLITE_STATIC);
	sqlite3_bind_int64(st, 3, g->mode);
	sqlite3_bind_int64(st, 4, g->since);
	sqlite3_bind_int64(st, 5, g->created_at);
	sqlite3_bind_int64(st, 6, g->batch);
	sqlite3_bind_int64(st, 7, g->wait);
	sqlite3_bind_int64(st, 8, g->auto_ack);
	if (g->has_owner) {
		sqlite3_bind_int64(st, 9, g->owner.uid);
		sqlite3_bind_int64(st, 10, g->owner.gid);
		sqlite3_bind_int64(st, 11, g->owner.mode);
	}
}

static int
s_group_insert(struct store *s, struct group_row *g)
{
	sqlite3_stmt *st;
	int rc;

	STMT(s, ST_GROUP_INSERT, st);
	bind_group(st, g);
	rc = run(s, st);
	if (rc == 0)
		g->id = sqlite3_last_insert_rowid(s->db);
	return rc;
}

static int
s_group_update(struct store *s, const struct group_row *g)
{
	sqlite3_stmt *st;

	rcache_group_drop(s->rc, g->id);
	STMT(s, ST_GROUP_UPDATE, st);
	bind_group(st, g);
	sqlite3_bind_int64(st, 12, g->id);
	return run(s, st);
}

static int
s_group_delete(struct store *s, int64_t id)
{
	sqlite3_stmt *st;

	rcache_group_drop(s->rc, id);
	STMT(s, ST_GROUP_DELETE, st);
	sqlite3_bind_int64(st, 1, id);
	return run(s, st);
}

static int
s_group_list(struct store *s, int64_t qid, group_row_cb cb, void *arg)
{
	sqlite3_stmt *st;
	struct group_row *v = NULL, g;
	size_t n = 0, cap = 0, i;
	int rc;

	STMT(s, ST_GROUP_LIST, st);
	sqlite3_bind_int64(st, 1, qid);
	while ((rc = row(s, st)) == 1) {
		if (n == cap) {
			struct group_row *nv;

			cap = cap ? cap * 2 : 8;
			nv = realloc(v, cap * sizeof(*v));
			if (!nv) {
				rc = -ENOMEM;
				break;
			}
			v = nv;
		}
		read_group(st, &g);
		v[n++] = g;
	}
	sqlite3_reset(st);
	for (i = 0; rc == 0 && i < n; i++)
		rc = cb(arg, &v[i]);
	free(v);
	return rc;
}

/* ---- cursors ---- */

static void
read_cursor(sqlite3_stmt *st, struct cursor_row *c)
{
	c->partition_id = sqlite3_column_int64(st, 0);
	c->group_id = sqlite3_column_int64(st, 1);
	c->committed = sqlite3_column_int64(st, 2);
	c->batch_end = sqlite3_column_int64(st, 3);
	col_text(st, 4, c->lease_id, sizeof(c->lease_id));
	c->lease_expires_at = sqlite3_column_int64(st, 5);
	c->retry_count = sqlite3_column_int64(st, 6);
	c->next_at = sqlite3_column_int64(st, 7);
}

static int
get_cursor(struct store *s, sqlite3_stmt *st, struct cursor_row *out)
{
	int rc = row(s, st);

	if (rc <= 0)
		return rc < 0 ? rc : -ENOENT;
	read_cursor(st, out);
	sqlite3_reset(st);
	return 0;
}

static int
s_cursor_get(struct store *s, int64_t pid, int64_t gid,
    struct cursor_row *out)
{
	sqlite3_stmt *st;

	STMT(s, ST_CUR_GET, st);
	sqlite3_bind_int64(st, 1, pid);
	sqlite3_bind_int64(st, 2, gid);
	return get_cursor(s, st, out);
}

static int
s_cursor_put(struct store *s, const struct cursor_row *c)
{
	sqlite3_stmt *st;

	STMT(s, ST_CUR_PUT, st);
	sqlite3_bind_int64(st, 1, c->partition_id);
	sqlite3_bind_int64(st, 2, c->group_id);
	sqlite3_bind_int64(st, 3, c->committed);
	sqlite3_bind_int64(st, 4, c->batch_end);
	if (c->lease_id[0])
		sqlite3_bind_text(st, 5, c->lease_id, -1, SQLITE_STATIC);
	sqlite3_bind_int64(st, 6, c->lease_expires_at);
	sqlite3_bind_int64(st, 7, c->retry_count);
	sqlite3_bind_int64(st, 8, c->next_at);
	return run(s, st);
}

static int
s_cursor_by_lease(struct store *s, const char *lease, struct cursor_row *out)
{
	sqlite3_stmt *st;

	STMT(s, ST_CUR_BY_LEASE, st);
	sqlite3_bind_text(st, 1, lease, -1, SQLITE_STATIC);
	return get_cursor(s, st, out);
}

/* Collect the rows first: callbacks may step other statements. */
static int
cursor_walk(struct store *s, sqlite3_stmt *st, cursor_row_cb cb, void *arg)
{
	struct cursor_row *v = NULL, c;
	size_t n = 0, cap = 0, i;
	int rc;

	while ((rc = row(s, st)) == 1) {
		if (n == cap) {
			struct cursor_row *nv;

			cap = cap ? cap * 2 : 16;
			nv = realloc(v, cap * sizeof(*v));
			if (!nv) {
				rc = -ENOMEM;
				break;
			}
			v = nv;
		}
		read_cursor(st, &c);
		v[n++] = c;
	}
	sqlite3_reset(st);
	for (i = 0; rc == 0 && i < n; i++)
		rc = cb(arg, &v[i]);
	free(v);
	return rc;
}

static int
s_cursor_ready(struct store *s, int64_t gid, int64_t upto, int64_t after_at,
    int64_t after_pid, cursor_row_cb cb, void *arg)
{
	sqlite3_stmt *st;

	STMT(s, ST_CUR_READY, st);
	sqlite3_bind_int64(st, 1, gid);
	sqlite3_bind_int64(st, 2, upto);
	sqlite3_bind_int64(st, 3, after_at);
	sqlite3_bind_int64(st, 4, after_pid);
	return cursor_walk(s, st, cb, arg);
}

static int
s_cursor_list_group(struct store *s, int64_t gid, cursor_row_cb cb,
    void *arg)
{
	sqlite3_stmt *st;

	STMT(s, ST_CUR_LIST_GROUP, st);
	sqlite3_bind_int64(st, 1, gid);
	return cursor_walk(s, st, cb, arg);
}

static int
s_cursor_list_part(struct store *s, int64_t pid, cursor_row_cb cb, void *arg)
{
	sqlite3_stmt *st;

	STMT(s, ST_CUR_LIST_PART, st);
	sqlite3_bind_int64(st, 1, pid);
	return cursor_walk(s, st, cb, arg);
}

static int
s_cursor_wake(struct store *s, int64_t pid, int64_t at)
{
	sqlite3_stmt *st;

	STMT(s, ST_CUR_WAKE, st);
	sqlite3_bind_int64(st, 1, pid);
	sqlite3_bind_int64(st, 2, at);
	return run(s, st);
}

static int
s_cursor_delete_group(struct store *s, int64_t gid)
{
	sqlite3_stmt *st;

	STMT(s, ST_CUR_DEL_GROUP, st);
	sqlite3_bind_int64(st, 1, gid);
	return run(s, st);
}

static int
s_cursor_min_committed(struct store *s, int64_t pid, int64_t *out)
{
	sqlite3_stmt *st;

	STMT(s, ST_CUR_MIN, st);
	sqlite3_bind_int64(st, 1, pid);
	return one_int(s, st, out);
}

/* ---- messages and hash rows ---- */

/* The index key: the digest's first 8 bytes as a signed integer. */
static int64_t
h64(const struct hash128 *h)
{
	uint64_t v = 0;
	int i;

	for (i = 0; i < 8; i++)
		v = v << 8 | h->b[i];
	return v ? (int64_t)v : 1;     /* never 0: schema 2's "not folded" */
}

/* ---- the hash filter: see struct store, hfilter.c, docs/engine.md ---- */

/*
 * The page cache gives up what the filter takes, down to half: the
 * filter stands in for the cache's pages of hashes, which were there for
 * the lookups it now answers, and the daemon's memory stays as it was.
 */
static void
cache_fit(struct store *s)
{
	size_t f = hfilt_bytes(&s->flt) + hfilt_bytes(&s->fnew);
	int kib = CACHE_KIB - (int)(f / 1024);
	char q[64];

	if (kib < CACHE_KIB / 2)
		kib = CACHE_KIB / 2;
	if (kib == s->cache_kib)
		return;
	snprintf(q, sizeof(q), "PRAGMA cache_size = -%d", kib);
	if (sqlite3_exec(s->db, q, NULL, NULL, NULL) == SQLITE_OK)
		s->cache_kib = kib;
}

static void
filter_add(struct store *s, int64_t h)
{
	if (s->flt.w)
		hfilt_add(&s->flt, h);
	if (s->fbuild) {
		hfilt_add(&s->fnew, h);
		s->fdebt += FILTER_DEBT;
	}
	s->live++;
}

/*
 * Start a new filter, sized for twice as many h as there are now: the
 * pairs in memory go in at once, hashes a slice at a time.  The old one
 * goes first, so there is never more than one: until the new one is
 * built every lookup asks the index.  With more h than three quarters
 * of the largest filter there is none until purges bring them under
 * half: nearer its size, it would fill again before the next was built.
 */
static int
filter_start(struct store *s)
{
	uint64_t live = s->live < 0 ? 0 : (uint64_t)s->live;
	uint64_t cap = 2 * live;
	const struct ytab *t[2] = { &s->act, &s->frz };
	size_t i;
	int k, rc;

	hfilt_free(&s->flt);
	if (live >= s->fmax / 4 * 3) {
		cache_fit(s);
		return 0;
	}
	if (cap < FILTER_MIN)
		cap = FILTER_MIN;
	if (cap > s->fmax)
		cap = s->fmax;
	if ((rc = hfilt_init(&s->fnew, cap)) != 0)
		return rc;
	for (k = 0; k < 2; k++)
		for (i = 0; i < t[k]->cap; i++)
			if (t[k]->e[i].id)
				hfilt_add(&s->fnew, t[k]->e[i].h);
	cache_fit(s);
	s->fbuild = true;
	s->fcur_h = s->fcur_id = INT64_MIN;
	s->fdebt = s->fscanned = 0;
	return 0;
}

/* scan up to max rows of hashes into fnew; at the end it replaces flt */
static int
filter_step(struct store *s, int64_t max)
{
	sqlite3_stmt *st;
	int64_t n = 0;
	int rc;

	STMT(s, ST_HASH_SCAN, st);
	sqlite3_bind_int64(st, 1, s->fcur_h);
	sqlite3_bind_int64(st, 2, s->fcur_id);
	sqlite3_bind_int64(st, 3, max);
	while ((rc = row(s, st)) == 1) {
		s->fcur_h = sqlite3_column_int64(st, 0);
		s->fcur_id = sqlite3_column_int64(st, 1);
		hfilt_add(&s->fnew, s->fcur_h);
		n++;
	}
	s->fscanned += n;
	if (rc < 0)
		return rc;
	s->fdebt = 0;
	if (n < max) {
		/* counted again: the rows seen, and the pairs in memory (those
		 * of frz already folded twice) */
		s->live = s->fscanned + (int64_t)(s->act.n + s->frz.n);
		s->flt = s->fnew;
		memset(&s->fnew, 0, sizeof(s->fnew));
		s->fbuild = false;
		s->fbuilds++;
		if (s->live >= (int64_t)(s->fmax / 4 * 3))
			hfilt_free(&s->flt);    /* too many after all */
		cache_fit(s);
	}
	return 0;
}

/* after a commit: a filter too full of h, or none while there could be */
static void
filter_check(struct store *s)
{
	if (s->fbuild)
		return;
	if (s->flt.w ? s->flt.n > hfilt_cap(&s->flt) :
	    s->live < (int64_t)(s->fmax / 2))
		filter_start(s);        /* -ENOMEM: the next commit tries again */
}

/* at open: how many h there are (counted no further than a filter
 * would take), and the whole filter */
static int
filter_open(struct store *s)
{
	sqlite3_stmt *st;
	int rc;

	STMT(s, ST_HASH_COUNT, st);
	sqlite3_bind_int64(st, 1, (int64_t)(s->fmax / 4 * 3));
	if ((rc = one_int(s, st, &s->live)) != 0)
		return rc;
	s->live += (int64_t)s->act.n;
	if ((rc = filter_start(s)) != 0 || !s->fbuild)
		return rc;
	return filter_step(s, INT64_MAX);
}

/* queen_h64(hash) in SQL, for the schema's step to version 3 */
static void
sql_h64(sqlite3_context *cx, int argc, sqlite3_value **argv)
{
	struct hash128 h;

	(void)argc;
	if (sqlite3_value_bytes(argv[0]) != 16) {
		sqlite3_result_error(cx, "queen_h64: not a 16-byte hash", -1);
		return;
	}
	memcpy(h.b, sqlite3_value_blob(argv[0]), 16);
	sqlite3_result_int64(cx, h64(&h));
}

static int
s_msg_append(struct store *s, int64_t pid, int64_t off, int64_t at,
    const char *txid, const char *trace, const void *payload, size_t len,
    const struct hash128 *h)
{
	int64_t key = PB(pid) + off, hv = h64(h);
	sqlite3_stmt *st;
	int rc;

	STMT(s, ST_MSG_APPEND, st);
	sqlite3_bind_int64(st, 1, key);
	sqlite3_bind_int64(st, 2, at);
	sqlite3_bind_text(st, 3, txid, -1, SQLITE_STATIC);
	if (trace)
		sqlite3_bind_text(st, 4, trace, -1, SQLITE_STATIC);
	sqlite3_bind_blob64(st, 5, len ? payload : "", len, SQLITE_STATIC);
	if ((rc = run(s, st)) != 0)
		return rc;
	STMT(s, ST_TXN_APPEND, st);
	sqlite3_bind_int64(st, 1, key);
	sqlite3_bind_blob(st, 2, h->b, 16, SQLITE_STATIC);
	sqlite3_bind_int64(st, 3, at);
	sqlite3_bind_int64(st, 4, hv);
	if ((rc = run(s, st)) != 0)
		return rc;
	STMT(s, ST_YOUNG_PUT, st);
	sqlite3_bind_int64(st, 1, key);
	sqlite3_bind_int64(st, 2, hv);
	if ((rc = run(s, st)) != 0)
		return rc;
	s->debt += 2;
	filter_add(s, hv);
	return ytab_put(&s->act, hv, key);
}

/* ---- young hashes: see struct store, young.c, docs/engine.md ---- */

#define FOLD_MAX 32768          /* young hashes that start a fold */
#define FOLD_MIN 512            /* the fewest folded in one transaction */

static size_t
fold_min(const struct store *s)
{
	size_t m = s->fold_max / 64;

	return m < 1 ? 1 : m > FOLD_MIN ? FOLD_MIN : m;
}

/*
 * In the transaction just begun: when act is full and no fold is under
 * way, act becomes frz; then fold as many of frz's hashes as the debt
 * allows (none below fold_min, all when act has grown twice as big),
 * walking its slots in order, so in nearly ascending h: each slice
 * writes a run of neighbouring pages of hashes, and no txns row.  A pair
 * goes in only if its txns row holds it: one whose push was rolled back
 * or purged, or whose id now holds another push, changes nothing.  The
 * slice that ends frz drops young's rows up to frz_seq, all of frz's.
 */
static int
fold(struct store *s)
{
	sqlite3_stmt *st;
	size_t i, n = 0;
	int64_t want;
	bool fast;
	int rc;

	if (!s->frz.e) {
		if (s->act.n < s->fold_max)
			return 0;
		STMT(s, ST_YOUNG_LAST, st);
		if ((rc = one_int(s, st, &s->frz_seq)) != 0)
			return rc;
		s->frz = s->act;
		memset(&s->act, 0, sizeof(s->act));
		s->frz_clean = s->act_dirt == s->dirt;
		s->act_dirt = s->frz_dirt = s->dirt;
		s->fold_at = s->fold_pend = 0;
		/* paid by the pushes from now on: what act's own pushes ran up
		 * would fold all of frz at once, the stall slices avoid */
		s->debt = 0;
	}
	want = s->act.n >= 2 * s->fold_max ? INT64_MAX : s->debt;
	if (want < (int64_t)fold_min(s))
		return 0;
	for (i = s->fold_pend; i < s->frz.cap && (int64_t)n < want; i++) {
		const struct yent *e = &s->frz.e[i];

		if (!e->id)
			continue;
		n++;
		fast = s->frz_clean && s->frz_dirt == s->dirt;
		STMT(s, fast ? ST_HASH_PUT : ST_HASH_FOLD, st);
		sqlite3_bind_int64(st, 1, e->id);
		sqlite3_bind_int64(st, 2, e->h);
		if ((rc = run(s, st)) != 0)
			return rc;
		s->fold_pend_rows += (uint64_t)sqlite3_changes(s->db);
		s->fold_pend_fast += fast;
	}
	while (i < s->frz.cap && !s->frz.e[i].id)
		i++;            /* so the commit after the last pair drops frz */
	s->fold_pend = i;
	if (i == s->frz.cap) {
		/* all of frz is in hashes: its stretch of the log goes */
		STMT(s, ST_YOUNG_DROP, st);
		sqlite3_bind_int64(st, 1, s->frz_seq);
		if ((rc = run(s, st)) != 0)
			return rc;
	}
	s->debt = (int64_t)n >= s->debt ? 0 : s->debt - (int64_t)n;
	return 0;
}

/* at open: the rows pushed and not folded, back into act */
static int
young_load(struct store *s)
{
	sqlite3_stmt *st;
	int rc;

	STMT(s, ST_YOUNG_LIST, st);
	while ((rc = row(s, st)) == 1) {
		if ((rc = ytab_put(&s->act, sqlite3_column_int64(st, 1),
		    sqlite3_column_int64(st, 0))) != 0) {
			sqlite3_reset(st);
			return rc;
		}
	}
	return rc;
}

static int
s_msg_scan(struct store *s, int64_t pid, int64_t from, size_t max,
    bool payload, msg_row_cb cb, void *arg)
{
	sqlite3_stmt *st;
	struct msg_row m;
	int rc;

	STMT(s, payload ? ST_MSG_SCAN : ST_MSG_SCAN_META, st);
	sqlite3_bind_int64(st, 1, PB(pid) + (from < 0 ? 0 : from));
	sqlite3_bind_int64(st, 2, PB(pid) + MAX_OFFSET);
	sqlite3_bind_int64(st, 3, max > INT32_MAX ? INT32_MAX : (int64_t)max);
	while ((rc = row(s, st)) == 1) {
		m.offset = sqlite3_column_int64(st, 0) - PB(pid);
		m.created_at = sqlite3_column_int64(st, 1);
		m.txid = (const char *)sqlite3_column_text(st, 2);
		m.trace_id = (const char *)sqlite3_column_text(st, 3);
		if (payload) {
			m.payload = sqlite3_column_blob(st, 4);
			m.len = (size_t)sqlite3_column_bytes(st, 4);
		} else {
			m.payload = NULL;
			m.len = (size_t)sqlite3_column_int64(st, 4);
		}
		if ((rc = cb(arg, &m)) != 0)
			break;
	}
	sqlite3_reset(st);
	return rc;
}

static int
s_msg_time(struct store *s, int64_t pid, int64_t off, int64_t *at)
{
	sqlite3_stmt *st;

	STMT(s, ST_MSG_TIME, st);
	sqlite3_bind_int64(st, 1, PB(pid) + off);
	return one_int(s, st, at);
}

static int
s_msg_next(struct store *s, int64_t pid, int64_t after, int64_t *off,
    int64_t *at)
{
	sqlite3_stmt *st;
	int rc;

	STMT(s, ST_MSG_NEXT, st);
	sqlite3_bind_int64(st, 1, PB(pid) + (after < 0 ? 0 : after));
	sqlite3_bind_int64(st, 2, PB(pid) + MAX_OFFSET);
	rc = row(s, st);
	if (rc <= 0)
		return rc < 0 ? rc : -ENOENT;
	*off = sqlite3_column_int64(st, 0) - PB(pid);
	*at = sqlite3_column_int64(st, 1);
	sqlite3_reset(st);
	return 0;
}

static int
s_msg_count(struct store *s, int64_t pid, int64_t above, int64_t *out)
{
	sqlite3_stmt *st;

	STMT(s, ST_MSG_COUNT, st);
	sqlite3_bind_int64(st, 1, PB(pid) + (above < 0 ? 0 : above));
	sqlite3_bind_int64(st, 2, PB(pid) + MAX_OFFSET);
	return one_int(s, st, out);
}

static int
purge_range(struct store *s, enum stmt id, int64_t pid, int64_t upto,
    int64_t limit, int64_t *deleted)
{
	sqlite3_stmt *st;
	int rc;

	*deleted = 0;   /* also when the statement cannot be prepared */
	STMT(s, id, st);
	sqlite3_bind_int64(st, 1, PB(pid));
	sqlite3_bind_int64(st, 2, PB(pid) + upto);
	sqlite3_bind_int64(st, 3, limit);
	rc = run(s, st);
	*deleted = rc == 0 ? sqlite3_changes(s->db) : 0;
	return rc;
}

static int
s_msg_purge(struct store *s, int64_t pid, int64_t upto, int64_t limit,
    int64_t *deleted)
{
	return purge_range(s, ST_MSG_PURGE, pid, upto, limit, deleted);
}

struct yfind {
	struct store *s;
	const struct hash128 *h;
	bool highest;
	int64_t id, at;         /* the best so far; id 0: none */
};

/* a young pair: keep it if its row holds the hash and it is better */
static int
yfind_one(void *arg, int64_t id)
{
	struct yfind *f = arg;
	sqlite3_stmt *st;
	int rc;

	if (f->id && (f->highest ? id <= f->id : id >= f->id))
		return 0;
	STMT(f->s, ST_TXN_CHECK, st);
	sqlite3_bind_int64(st, 1, id);
	sqlite3_bind_blob(st, 2, f->h->b, 16, SQLITE_STATIC);
	if ((rc = row(f->s, st)) < 0)
		return rc;
	if (rc == 1) {
		f->id = id;
		f->at = sqlite3_column_int64(st, 0);
		sqlite3_reset(st);
	}
	return 0;
}

static int
s_txn_find(struct store *s, int64_t pid, const struct hash128 *h, int64_t lo,
    int64_t hi, bool highest, int64_t *off, int64_t *at)
{
	struct yfind f = { s, h, highest, 0, 0 };
	int64_t hv = h64(h);
	sqlite3_stmt *st;
	int rc;

	if (lo < 1)
		lo = 1;
	if (hi > MAX_OFFSET)
		hi = MAX_OFFSET;
	if (lo > hi)
		return -ENOENT;
	if (s->flt.w && !hfilt_has(&s->flt, hv)) {
		s->fskips++;
		return -ENOENT;
	}
	STMT(s, highest ? ST_TXN_FIND_HI : ST_TXN_FIND_LO, st);
	sqlite3_bind_blob(st, 1, h->b, 16, SQLITE_STATIC);
	sqlite3_bind_int64(st, 2, PB(pid) + lo);
	sqlite3_bind_int64(st, 3, PB(pid) + hi);
	sqlite3_bind_int64(st, 4, hv);
	rc = row(s, st);
	if (rc < 0)
		return rc;
	if (rc == 1) {
		f.id = sqlite3_column_int64(st, 0);
		f.at = sqlite3_column_int64(st, 1);
		sqlite3_reset(st);
	}
	/* and the hashes not folded yet (frz's may be folded already) */
	if ((rc = ytab_find(&s->act, hv, PB(pid) + lo, PB(pid) + hi,
	    yfind_one, &f)) != 0 || (rc = ytab_find(&s->frz, hv,
	    PB(pid) + lo, PB(pid) + hi, yfind_one, &f)) != 0)
		return rc;
	if (!f.id)
		return -ENOENT;
	*off = f.id - PB(pid);
	if (at)
		*at = f.at;
	return 0;
}

static int
s_txn_time(struct store *s, int64_t pid, int64_t off, int64_t *at)
{
	sqlite3_stmt *st;

	STMT(s, ST_TXN_TIME, st);
	sqlite3_bind_int64(st, 1, PB(pid) + off);
	return one_int(s, st, at);
}

static int
s_txn_purge(struct store *s, int64_t pid, int64_t upto, int64_t limit,
    int64_t *deleted)
{
	int rc = purge_range(s, ST_TXN_PURGE, pid, upto, limit, deleted);

	s->live -= *deleted;
	s->dirt += *deleted > 0;
	return rc;
}

/* ---- dead letters ---- */

static int
s_dlq_insert(struct store *s, const struct dlq_row *d)
{
	sqlite3_stmt *st;

	STMT(s, ST_DLQ_INSERT, st);
	sqlite3_bind_int64(st, 1, d->queue_id);
	sqlite3_bind_int64(st, 2, d->partition_id);
	sqlite3_bind_text(st, 3, d->group, -1, SQLITE_TRANSIENT);
	sqlite3_bind_int64(st, 4, d->offset);
	sqlite3_bind_text(st, 5, d->txid, -1, SQLITE_TRANSIENT);
	sqlite3_bind_blob64(st, 6, d->len ? d->payload : "", d->len,
	    SQLITE_TRANSIENT);
	sqlite3_bind_int64(st, 7, d->created_at);
	sqlite3_bind_int64(st, 8, d->failed_at);
	sqlite3_bind_int64(st, 9, d->retry_count);
	if (d->error)
		sqlite3_bind_text(st, 10, d->error, -1, SQLITE_TRANSIENT);
	return run(s, st);
}

static int
s_dlq_list(struct store *s, int64_t qid, const char *group, bool payload,
    queen_dlq_cb cb, void *arg)
{
	sqlite3_stmt *st;
	struct queen_dlq_entry e;
	int rc;

	STMT(s, payload ? ST_DLQ_LIST : ST_DLQ_LIST_META, st);
	sqlite3_bind_int64(st, 1, qid);
	sqlite3_bind_text(st, 2, group, -1, SQLITE_STATIC);
	while ((rc = row(s, st)) == 1) {
		memset(&e, 0, sizeof(e));
		e.id = sqlite3_column_int64(st, 0);
		col_text(st, 1, e.partition, sizeof(e.partition));
		col_text(st, 2, e.group, sizeof(e.group));
		e.txid = (const char *)sqlite3_column_text(st, 3);
		e.error = (const char *)sqlite3_column_text(st, 4);
		e.offset = sqlite3_column_int64(st, 5);
		e.retry_count = sqlite3_column_int64(st, 6);
		e.created_at = sqlite3_column_int64(st, 7);
		e.failed_at = sqlite3_column_int64(st, 8);
		if (payload) {
			e.payload = sqlite3_column_blob(st, 9);
			e.len = (size_t)sqlite3_column_bytes(st, 9);
		} else {
			e.len = (size_t)sqlite3_column_int64(st, 9);
		}
		if ((rc = cb(arg, &e)) != 0)
			break;
	}
	sqlite3_reset(st);
	return rc;
}

static int
s_dlq_count(struct store *s, int64_t qid, const char *group, int64_t *out)
{
	sqlite3_stmt *st;

	STMT(s, ST_DLQ_COUNT, st);
	sqlite3_bind_int64(st, 1, qid);
	sqlite3_bind_text(st, 2, group, -1, SQLITE_STATIC);
	return one_int(s, st, out);
}

/* ---- KV ---- */

static struct queen_kv_value *
kv_copy(sqlite3_stmt *st, int vcol)
{
	struct queen_kv_value *v;
	size_t len = (size_t)sqlite3_column_bytes(st, vcol);
	const void *data = sqlite3_column_blob(st, vcol);

	v = malloc(sizeof(*v) + len + 1);
	if (!v)
		return NULL;
	v->version = sqlite3_column_int64(st, vcol + 1);
	v->expires_at = sqlite3_column_int64(st, vcol + 2);
	v->updated_at = sqlite3_column_int64(st, vcol + 3);
	v->len = len;
	v->data = v + 1;
	if (len)
		memcpy(v + 1, data, len);
	((char *)(v + 1))[len] = '\0';
	return v;
}

static int
s_kv_get(struct store *s, const char *ns, const char *key, int64_t now,
    struct queen_kv_value **out)
{
	sqlite3_stmt *st;
	int rc;

	*out = NULL;
	STMT(s, ST_KV_GET, st);
	sqlite3_bind_text(st, 1, ns, -1, SQLITE_STATIC);
	sqlite3_bind_text(st, 2, key, -1, SQLITE_STATIC);
	sqlite3_bind_int64(st, 3, now);
	rc = row(s, st);
	if (rc <= 0)
		return rc < 0 ? rc : -ENOENT;
	*out = kv_copy(st, 0);
	sqlite3_reset(st);
	return *out ? 0 : -ENOMEM;
}

static int
s_kv_put(struct store *s, const char *ns, const char *key, const void *data,
    size_t len, int64_t expires_at, int64_t now)
{
	sqlite3_stmt *st;

	STMT(s, ST_KV_PUT, st);
	sqlite3_bind_text(st, 1, ns, -1, SQLITE_STATIC);
	sqlite3_bind_text(st, 2, key, -1, SQLITE_STATIC);
	sqlite3_bind_blob64(st, 3, len ? data : "", len, SQLITE_STATIC);
	sqlite3_bind_int64(st, 4, expires_at);
	sqlite3_bind_int64(st, 5, now);
	return run(s, st);
}

static int
changed_or_enoent(struct store *s, sqlite3_stmt *st)
{
	int rc = run(s, st);

	if (rc == 0 && sqlite3_changes(s->db) == 0)
		return -ENOENT;
	return rc;
}

static int
s_kv_delete(struct store *s, const char *ns, const char *key, int64_t now)
{
	sqlite3_stmt *st;

	STMT(s, ST_KV_DELETE, st);
	sqlite3_bind_text(st, 1, ns, -1, SQLITE_STATIC);
	sqlite3_bind_text(st, 2, key, -1, SQLITE_STATIC);
	sqlite3_bind_int64(st, 3, now);
	return changed_or_enoent(s, st);
}

static int
s_kv_set_expiry(struct store *s, const char *ns, const char *key,
    int64_t expires_at, int64_t now)
{
	sqlite3_stmt *st;

	STMT(s, ST_KV_EXPIRY, st);
	sqlite3_bind_text(st, 1, ns, -1, SQLITE_STATIC);
	sqlite3_bind_text(st, 2, key, -1, SQLITE_STATIC);
	sqlite3_bind_int64(st, 3, now);
	sqlite3_bind_int64(st, 4, expires_at);
	return changed_or_enoent(s, st);
}

static int
s_kv_list(struct store *s, const char *ns, int64_t now, queen_kv_cb cb,
    void *arg)
{
	sqlite3_stmt *st;
	struct queen_kv_value v;
	int rc;

	STMT(s, ST_KV_LIST, st);
	sqlite3_bind_text(st, 1, ns, -1, SQLITE_STATIC);
	sqlite3_bind_int64(st, 3, now);
	while ((rc = row(s, st)) == 1) {
		v.data = sqlite3_column_blob(st, 1);
		v.len = (size_t)sqlite3_column_bytes(st, 1);
		v.version = sqlite3_column_int64(st, 2);
		v.expires_at = sqlite3_column_int64(st, 3);
		v.updated_at = sqlite3_column_int64(st, 4);
		if ((rc = cb(arg, (const char *)sqlite3_column_text(st, 0),
		    &v)) != 0)
			break;
	}
	sqlite3_reset(st);
	return rc;
}

static int
s_kv_purge(struct store *s, int64_t now, int64_t limit, int64_t *deleted)
{
	sqlite3_stmt *st;
	int rc;

	STMT(s, ST_KV_PURGE, st);
	sqlite3_bind_int64(st, 1, now);
	sqlite3_bind_int64(st, 2, limit);
	rc = run(s, st);
	*deleted = rc == 0 ? sqlite3_changes(s->db) : 0;
	return rc;
}

static int
s_ns_get(struct store *s, const char *ns, struct queen_owner *o)
{
	sqlite3_stmt *st;
	int rc;

	STMT(s, ST_NS_GET, st);
	sqlite3_bind_text(st, 1, ns, -1, SQLITE_STATIC);
	rc = row(s, st);
	if (rc <= 0)
		return rc < 0 ? rc : -ENOENT;
	o->uid = (uid_t)sqlite3_column_int64(st, 0);
	o->gid = (gid_t)sqlite3_column_int64(st, 1);
	o->mode = (mode_t)sqlite3_column_int64(st, 2);
	sqlite3_reset(st);
	return 0;
}

static int
s_ns_put(struct store *s, const char *ns, const struct queen_owner *o,
    int64_t now)
{
	sqlite3_stmt *st;

	STMT(s, ST_NS_PUT, st);
	sqlite3_bind_text(st, 1, ns, -1, SQLITE_STATIC);
	sqlite3_bind_int64(st, 2, o->uid);
	sqlite3_bind_int64(st, 3, o->gid);
	sqlite3_bind_int64(st, 4, o->mode);
	sqlite3_bind_int64(st, 5, now);
	return run(s, st);
}

static int
s_ns_delete(struct store *s, const char *ns)
{
	sqlite3_stmt *st;

	STMT(s, ST_NS_DELETE, st);
	sqlite3_bind_text(st, 1, ns, -1, SQLITE_STATIC);
	return changed_or_enoent(s, st);
}

static int
s_ns_list(struct store *s, int64_t now, queen_name_cb cb, void *arg)
{
	sqlite3_stmt *st;
	int rc;

	STMT(s, ST_NS_LIST, st);
	sqlite3_bind_int64(st, 1, now);
	while ((rc = row(s, st)) == 1) {
		if ((rc = cb(arg, (const char *)sqlite3_column_text(st, 0))))
			break;
	}
	sqlite3_reset(st);
	return rc;
}

/* ---- timers ---- */

static struct queen_timer_info *
timer_copy(sqlite3_stmt *st, bool payload)
{
	struct queen_timer_info *t;
	size_t len = (size_t)sqlite3_column_bytes(st, 4);

	t = calloc(1, sizeof(*t) + (payload ? len : 0) + 1);
	if (!t)
		return NULL;
	col_text(st, 0, t->key, sizeof(t->key));
	col_text(st, 1, t->partition, sizeof(t->partition));
	t->due_at = sqlite3_column_int64(st, 2);
	t->created_at = sqlite3_column_int64(st, 3);
	t->len = len;
	t->payload = t + 1;
	if (payload && len)
		memcpy(t + 1, sqlite3_column_blob(st, 4), len);
	return t;
}

static int
s_timer_put(struct store *s, int64_t qid, const char *key, const char *part,
    int64_t due_at, const void *payload, size_t len, int64_t now)
{
	sqlite3_stmt *st;

	STMT(s, ST_TIMER_PUT, st);
	sqlite3_bind_int64(st, 1, qid);
	sqlite3_bind_text(st, 2, key, -1, SQLITE_STATIC);
	sqlite3_bind_text(st, 3, part, -1, SQLITE_STATIC);
	sqlite3_bind_int64(st, 4, due_at);
	sqlite3_bind_blob64(st, 5, len ? payload : "", len, SQLITE_STATIC);
	sqlite3_bind_int64(st, 6, now);
	return run(s, st);
}

static int
s_timer_delete(struct store *s, int64_t qid, const char *key)
{
	sqlite3_stmt *st;

	STMT(s, ST_TIMER_DELETE, st);
	sqlite3_bind_int64(st, 1, qid);
	sqlite3_bind_text(st, 2, key, -1, SQLITE_STATIC);
	return changed_or_enoent(s, st);
}

static int
s_timer_get(struct store *s, int64_t qid, const char *key, bool payload,
    struct queen_timer_info **out)
{
	sqlite3_stmt *st;
	int rc;

	*out = NULL;
	STMT(s, ST_TIMER_GET, st);
	sqlite3_bind_int64(st, 1, qid);
	sqlite3_bind_text(st, 2, key, -1, SQLITE_STATIC);
	rc = row(s, st);
	if (rc <= 0)
		return rc < 0 ? rc : -ENOENT;
	*out = timer_copy(st, payload);
	sqlite3_reset(st);
	return *out ? 0 : -ENOMEM;
}

static int
s_timer_list(struct store *s, int64_t qid, queen_timer_cb cb, void *arg)
{
	sqlite3_stmt *st;
	struct queen_timer_info t;
	int rc;

	STMT(s, ST_TIMER_LIST, st);
	sqlite3_bind_int64(st, 1, qid);
	while ((rc = row(s, st)) == 1) {
		memset(&t, 0, sizeof(t));
		col_text(st, 0, t.key, sizeof(t.key));
		col_text(st, 1, t.partition, sizeof(t.partition));
		t.due_at = sqlite3_column_int64(st, 2);
		t.created_at = sqlite3_column_int64(st, 3);
		t.payload = sqlite3_column_blob(st, 4);
		t.len = (size_t)sqlite3_column_bytes(st, 4);
		if ((rc = cb(arg, &t)) != 0)
			break;
	}
	sqlite3_reset(st);
	return rc;
}

static int
s_timer_due(struct store *s, int64_t now, int64_t *qid,
    struct queen_timer_info **out)
{
	sqlite3_stmt *st;
	int rc;

	*out = NULL;
	STMT(s, ST_TIMER_DUE, st);
	sqlite3_bind_int64(st, 1, now);
	rc = row(s, st);
	if (rc <= 0)
		return rc < 0 ? rc : -ENOENT;
	*qid = sqlite3_column_int64(st, 5);
	*out = timer_copy(st, true);
	sqlite3_reset(st);
	return *out ? 0 : -ENOMEM;
}

/*
 * A lazy commit runs at synchronous NORMAL: in WAL mode that writes the
 * frames without an fsync, while a checkpoint still syncs the log before
 * it copies and the database after (OFF would skip those, and a power
 * loss after a checkpoint could then tear the database).  The frames
 * reach the disk with the next synced commit or s_sync; until then a
 * crash may lose them, and only them.
 */
static int
s_set_durable(struct store *s, bool durable)
{
	bool lazy = !durable && s->sync == QUEEN_SYNC_FULL;

	if (lazy == s->lazy)
		return 0;
	if (sqlite3_exec(s->db, lazy ? sync_sql[QUEEN_SYNC_NORMAL] :
	    sync_sql[s->sync], NULL, NULL, NULL) != SQLITE_OK)
		return fail(s, SQLITE_ERROR);
	s->lazy = lazy;
	return 0;
}

/*
 * Make every commit so far durable: an fdatasync of the write-ahead log
 * through a descriptor of our own, so that it may run on another thread
 * while the connection goes on writing (an fsync covers the file, not the
 * descriptor).  SQLite keeps the log while the database is open (the
 * last connection to close deletes it); a log that has gone anyway
 * (nlink 0) is opened again.
 * The first time, the directory is synced too, as SQLite would for a new
 * log.  The fault hook counts this as one fsync.
 */
static int
s_sync(struct store *s)
{
	struct stat sb;
	int dfd;

	/* looked at now and then: an fstat before every fdatasync measured
	 * 70 us slower per sync on this machine's ext4 */
	if (s->walfd >= 0 && (s->syncs++ & 255) == 0 &&
	    fstat(s->walfd, &sb) == 0 && sb.st_nlink == 0) {
		close(s->walfd);
		s->walfd = -1;
	}
	if (s->walfd < 0) {
		char *dir, *slash;

		s->walfd = open(s->wal_path, O_RDWR | O_CLOEXEC);
		if (s->walfd < 0)
			return -errno;
		if (!(dir = strdup(s->wal_path)))
			return -ENOMEM;
		slash = strrchr(dir, '/');
		if (slash)
			slash[slash == dir] = '\0';
		dfd = open(slash ? dir : ".", O_RDONLY | O_DIRECTORY |
		    O_CLOEXEC);
		free(dir);
		if (dfd >= 0) {
			(void)fsync(dfd);
			close(dfd);
		}
	}
	/* an injected failure takes a disk's time, as a real one would:
	 * what runs meanwhile must not take the sync for granted */
	if (s->fault && fault_fsync_fails()) {
		usleep(20000);
		return -EIO;
	}
	if (fdatasync(s->walfd) != 0)
		return -errno;
	return 0;
}

/* The tick's: the checkpointer's thread takes it (ckpt.c). */
static int
s_checkpoint(struct store *s)
{
	int rc;

	if (!s->ck)
		return 0;
	if ((rc = ckpt_check(s)) != 0)
		return rc;
	ckpt_kick(s->ck);
	return 0;
}

static void
s_hashes(struct store *s, struct queen_hash_stats *out)
{
	out->held = s->act.n + s->frz.n;
	out->folded = s->folded;
	out->folded_fast = s->folded_fast;
	out->filter_bytes = hfilt_bytes(&s->flt) + hfilt_bytes(&s->fnew);
	out->filter_skips = s->fskips;
	out->filter_builds = s->fbuilds;
	out->filter_building = s->fbuild;
	out->cache_kib = (uint64_t)s->cache_kib;
	rcache_counts(s->rc, &out->row_hits, &out->row_misses);
}

static void
s_checkpoints(struct store *s, uint64_t *beside, uint64_t *in_writer)
{
	ckpt_counts(s->ck, beside, in_writer);
}

static const struct store_ops sqlite_ops = {
	.close = s_close,
	.errmsg = s_errmsg,
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

	sqlite3_busy_timeout(s->db, 5000);
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
	struct store *s;
	const char *vfs = NULL;
	int flags, rc;

	*out = NULL;
	if ((unsigned)opt->sync > QUEEN_SYNC_OFF)
		return -EINVAL;
	if ((rc = queen_vfs(opt->fault, &vfs, err, errlen)) != 0)
		return rc;
	s = calloc(1, sizeof(*s));
	if (!s)
		return -ENOMEM;
	s->walfd = -1;
	s->fault = opt->fault != NULL;
	s->fold_max = opt->fold_at ? opt->fold_at : FOLD_MAX;
	s->fmax = opt->filter_max ? opt->filter_max : FILTER_MAX;
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
