/*
 * db_pg.c - the PostgreSQL storage seam (--db postgresql://...): session,
 * transactions, every statement (the row locks that keep one lease per
 * (partition, group) across processes and hosts are pg_rows.c's use of
 * them), LISTEN/NOTIFY wake-ups, and SQLSTATE -> errno.  Nothing here
 * decides what an ack means.
 */
#include <errno.h>
#include <libpq-fe.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "pg_store.h"


#define QUEUE_COLS "id, name, created_at, uid, gid, mode, lease_time, " \
	"retry_limit, dlq, batch, wait, delay, window_buffer, dedup_window, " \
	"retention, completed_retention, max_message_bytes, " \
	"expiry_charges_retry, auto_ack, timer_delay, hash_retention"
#define QUEUE_INS "name, created_at, uid, gid, mode, lease_time, " \
	"retry_limit, dlq, batch, wait, delay, window_buffer, dedup_window, " \
	"retention, completed_retention, max_message_bytes, " \
	"expiry_charges_retry, auto_ack, timer_delay, hash_retention"
#define PART_COLS "id, queue_id, name, uuid, head, tail, txns_start, " \
	"last_push_at, duplicates, created_at"
#define PART_P_COLS \
	"p.id, p.queue_id, p.name, p.uuid, p.head, p.tail, " \
	"p.txns_start, p.last_push_at, p.duplicates, p.created_at"
#define GROUP_COLS "id, queue_id, name, mode, since, created_at, batch, " \
	"wait, auto_ack, uid, gid, perm"
#define CUR_COLS "partition_id, group_id, committed, batch_end, lease_id, " \
	"lease_expires_at, retry_count, next_at"
/*
 * With each cursor its partition (columns from 8), and whether the
 * cursor is the version the statement's snapshot holds (18): a row
 * lock that found a newer one hands that back with the partition of
 * the snapshot, which may then be older than the cursor.
 */
/* clang-format off */
#define READY_LIMIT " LIMIT " QUEEN_STR(CURSOR_READY_PAGE)
#define READY_COLS \
	"SELECT c.partition_id, c.group_id, c.committed, " \
	"c.batch_end, c.lease_id, c.lease_expires_at, c.retry_count, " \
	"c.next_at, " PART_P_COLS ", c.xmin = (SELECT o.xmin FROM cursors o " \
	"WHERE o.partition_id = c.partition_id AND o.group_id = c.group_id)"
/*
 * Ready cursors in the order of cursors_ready: the 10 ms slot of next_at
 * (READY_SLOT, as the column is made: pg_schema.c's version 5), then the
 * partition; after the row whose next_at and partition are at and pid.
 * Each row's next_at is still checked against upto itself.
 */
#define READY_SLOT(at) "(CASE WHEN " at " < 0 THEN -1 ELSE " at " / 10 END)"
#define READY_WHERE READY_WHERE_OF("$1", "$2::bigint", "$3::bigint", "$4")
#define READY_WHERE_OF(gid, upto, at, pid) \
	"WHERE c.group_id = " gid " AND c.ready_slot >= 0 AND " \
	"c.ready_slot <= " READY_SLOT(upto) " AND c.next_at >= 0 AND " \
	"c.next_at <= " upto " AND (c.ready_slot, c.partition_id) > (" \
	READY_SLOT(at) ", " pid ")"
#define READY_ORDER " ORDER BY c.ready_slot, c.partition_id"
#define CUR_READY \
	READY_COLS " FROM cursors c JOIN partitions p " \
	"ON p.id = c.partition_id " READY_WHERE READY_ORDER READY_LIMIT
/*
 * The same inside a call that writes: the first row no other
 * transaction holds, without a lease live at $5, locked; so a pop locks
 * only the cursors it looks at, and a lease held elsewhere is not
 * waited for nor held up (its ack locks that cursor).  With it the
 * message after it, as msg_scan reads it (19; its payload NULL if over
 * AHEAD_MSG_MAX, its length at 26), which the pop reads next.
 */
#define CUR_READY_ONE \
	CUR_READY_ONE_OF("$1", "$2::bigint", "$3::bigint", "$4", "$5")
#define CUR_READY_ONE_OF(gid, upto, at, pid, now) \
	READY_COLS ", m.* FROM cursors c JOIN partitions p " \
	"ON p.id = c.partition_id " \
	"LEFT JOIN LATERAL (SELECT id, created_at, txid, trace_id, " \
	"CASE WHEN length(payload) <= " QUEEN_STR(AHEAD_MSG_MAX) \
	" THEN payload END, " SCAN_XIDS ", length(payload)::bigint " \
	"FROM messages WHERE id >= (p.id << 40) + c.committed + 1 AND " \
	"id <= (p.id << 40) + 1099511627775 ORDER BY id LIMIT 1) m ON true " \
	READY_WHERE_OF(gid, upto, at, pid) " AND (c.lease_id IS NULL OR " \
	"c.lease_id = '' OR c.lease_expires_at <= " now ") " \
	READY_ORDER " LIMIT 1 FOR UPDATE OF c SKIP LOCKED"
/* clang-format on */
/* the keys of partition p's first message and first hash row */
#define SHIFT_P "(p.id << " QUEEN_STR(OFFSET_BITS) ")"
#define HEAD_KEY SHIFT_P " + p.head"
#define TXNS_KEY SHIFT_P " + p.txns_start"
#define TAIL_KEY SHIFT_P " + p.tail"
#define SHIFT_P1 "((p.id + 1) << " QUEEN_STR(OFFSET_BITS) ")"
#define PART_MAINT \
	"SELECT " PART_P_COLS " FROM partitions p " \
	"JOIN queues q ON q.id = p.queue_id WHERE (p.tail >= p.head AND " \
	"q.retention > 0 AND EXISTS (SELECT 1 FROM messages m WHERE " \
	"m.id = " HEAD_KEY " AND m.created_at < $1 - q.retention * 1000)) " \
	"OR (p.tail >= p.head AND q.completed_retention > 0 AND EXISTS " \
	"(SELECT 1 FROM messages m WHERE m.id = " HEAD_KEY " AND " \
	"m.created_at < $1 - q.completed_retention * 1000) AND NOT EXISTS " \
	"(SELECT 1 FROM cursors c WHERE c.partition_id = p.id AND " \
	"c.committed < p.head)) OR (p.tail >= p.txns_start AND EXISTS " \
	"(SELECT 1 FROM txns t WHERE t.id = " TXNS_KEY " AND " \
	"t.created_at < $1 - q.hash_retention * 1000)) ORDER BY p.id LIMIT $2"
/* a live KV row: ns, key, now */
#define KV_GET \
	"SELECT value, version, expires_at, updated_at FROM kv " \
	"WHERE ns = $1 AND key = $2 AND (expires_at = 0 OR expires_at > $3)"
#define CUR_BY_LEASE \
	"SELECT c.partition_id, c.group_id, c.committed, " \
	"c.batch_end, c.lease_id, c.lease_expires_at, c.retry_count, " \
	"c.next_at FROM leases l JOIN cursors c ON c.partition_id = " \
	"l.partition_id AND c.group_id = l.group_id WHERE l.lease_id = $1 " \
	"AND c.lease_id = $1"
#define QUEUE_Q_COLS \
	"q.id, q.name, q.created_at, q.uid, q.gid, q.mode, " \
	"q.lease_time, q.retry_limit, q.dlq, q.batch, q.wait, q.delay, " \
	"q.window_buffer, q.dedup_window, q.retention, " \
	"q.completed_retention, q.max_message_bytes, " \
	"q.expiry_charges_retry, q.auto_ack, q.timer_delay, q.hash_retention"
#define GROUP_G_COLS \
	"g.id, g.queue_id, g.name, g.mode, g.since, g.created_at, g.batch, " \
	"g.wait, g.auto_ack, g.uid, g.gid, g.perm"
/*
 * A bytea[] parameter of hashes to probe one by one, as the planner
 * cannot size it: unnest() of the parameter itself is sized by its
 * value in a custom plan, which then always looks cheaper than the
 * generic one sized for 10, and the prepared statement is planned again
 * at every run (0.1-0.25 ms of the server's CPU each, more than the
 * statement's own run); from a subquery it is sized 10 in both, and the
 * generic plan, the same nested loop of index probes, is kept after five.
 * HASHES_OF(p): the distinct hashes of parameter p, as h.hash.
 */
/* clang-format off */
#define HASHES_OF(p) \
	"(SELECT DISTINCT hash FROM unnest((SELECT " p "::bytea[])) u(hash)) h"
#define PUSH_AHEAD_COLS(more) \
	"SELECT " QUEUE_Q_COLS ", " PART_P_COLS \
	", d.id, d.created_at, t.id" more \
	" FROM queues q JOIN partitions p ON p.queue_id = q.id " \
	"AND p.name = $2 LEFT JOIN LATERAL (SELECT id, created_at " \
	"FROM txns WHERE hash = $3 AND id >= " TXNS_KEY " AND id <= " TAIL_KEY \
	" ORDER BY id DESC LIMIT 1) d ON true LEFT JOIN LATERAL (SELECT id " \
	"FROM txns WHERE id >= " SHIFT_P " AND id < " SHIFT_P1 " ORDER BY id " \
	"DESC LIMIT 1) t ON true WHERE q.name = $1"
#define PUSH_AHEAD PUSH_AHEAD_COLS("")
/* and those of the hashes $4 the partition holds from txns_start up,
 * where the queue dedups (pg_push_ahead reads them only then) */
#define PUSH_AHEAD_MANY_COL \
	", (SELECT array_agg(h.hash) FROM " HASHES_OF("$4") \
	" CROSS JOIN LATERAL (SELECT 1 FROM txns WHERE hash = h.hash " \
	"AND id >= " SHIFT_P " + greatest(p.txns_start, 1) " \
	"AND id < " SHIFT_P1 " LIMIT 1) x WHERE q.dedup_window > 0)"
#define PUSH_AHEAD_MANY PUSH_AHEAD_COLS(PUSH_AHEAD_MANY_COL)
/* clang-format on */
/*
 * Ahead of a lookup of a message by name: the queue (columns from 0),
 * the partition (21), the newest row of the hash in [head, tail] (31,
 * 32) and that message as msg_scan reads it (33; its payload NULL if
 * over $4, its length at 40)
 */
#define FIND_AHEAD \
	"SELECT " QUEUE_Q_COLS ", " PART_P_COLS ", d.id, d.created_at, m.* " \
	"FROM queues q JOIN partitions p ON p.queue_id = q.id " \
	"AND p.name = $2 LEFT JOIN LATERAL (SELECT id, created_at " \
	"FROM txns WHERE hash = $3 AND id >= " HEAD_KEY " AND id <= " TAIL_KEY \
	" ORDER BY id DESC LIMIT 1) d ON true LEFT JOIN LATERAL (SELECT id, " \
	"created_at, txid, trace_id, CASE WHEN length(payload) <= $4 THEN " \
	"payload END, " SCAN_XIDS ", length(payload)::bigint FROM messages " \
	"WHERE id = d.id) m ON true WHERE q.name = $1"
#define TIMER_COLS "key, part_name, due_at, created_at, payload"
#define LOCK " FOR UPDATE"
#define BEGIN_RC begin_rc

static const char begin_rc[] = "BEGIN ISOLATION LEVEL READ COMMITTED";

struct stmt_def {
	const char *name;
	const char *sql;
};

/* a message row's inserting xid (32 bits), and the oldest xid running
 * when the statement began (64 bits), evaluated once */
#define SCAN_XIDS \
	"xmin::text::bigint, " \
	"(SELECT pg_snapshot_xmin(pg_current_snapshot())::text::bigint)"

/* clang-format off */
/* a lease's cursor (through the leases table: cursors.lease_id has no
 * index since schema version 3), its partition, queue and group; the
 * cursor's row locked in LEASE_ROWS_LK */
#define LEASE_ROWS LEASE_ROWS_OF(CUR_BY_LEASE)
#define LEASE_ROWS_LK LEASE_ROWS_OF(CUR_BY_LEASE LOCK " OF c")
#define LEASE_ROWS_OF(cur) \
	"(" cur ") c, " \
	"LATERAL (SELECT " PART_COLS " FROM partitions " \
	"WHERE id = c.partition_id) p, " \
	"LATERAL (SELECT " QUEUE_COLS " FROM queues WHERE id = p.queue_id) q, " \
	"LATERAL (SELECT " GROUP_COLS " FROM groups WHERE id = c.group_id) g"
/* the key of p's offset that follows (see PB) */
#define PKEY "(p.id << 40) + "
#define MAX_OFFSET_SQL "1099511627775"
/* a lease's rows (0-50), the lowest hash row in its span that meets
 * cond (51, 52), the message after that row (53, 54), and the row's
 * message as msg_scan reads it (55), its payload NULL if longer than
 * parameter max, and its length (62); then the columns in more */
#define LEASE_AHEAD(more, rows, cond, max) \
	"SELECT *" more " FROM " rows " " \
	"LEFT JOIN LATERAL (SELECT id, created_at FROM txns " \
	"WHERE " cond "id >= " PKEY "greatest(c.committed + 1, " \
	"p.txns_start) AND id <= " PKEY "c.batch_end " \
	"ORDER BY id LIMIT 1) t ON true " \
	"LEFT JOIN LATERAL (SELECT id, created_at FROM messages " \
	"WHERE id > t.id AND id <= " PKEY MAX_OFFSET_SQL " " \
	"ORDER BY id LIMIT 1) n ON true " \
	"LEFT JOIN LATERAL (SELECT id, created_at, txid, trace_id, " \
	"CASE WHEN length(payload) <= " max " THEN payload END, " \
	SCAN_XIDS ", length(payload)::bigint FROM messages " \
	"WHERE id = t.id) m ON true"
/* clang-format on */
_Static_assert(OFFSET_BITS == 40 && MAX_OFFSET == INT64_C(1099511627775),
    "PKEY");

static const struct stmt_def sql[ST__N] = {
	/* name */
	[ST_QUEUE_GET] = { "queue_get",
	    "SELECT " QUEUE_COLS " FROM queues WHERE name = $1" },
	/* id */
	[ST_QUEUE_BY_ID] = { "queue_by_id",
	    "SELECT " QUEUE_COLS " FROM queues WHERE id = $1" },
	/* name, created_at, uid, gid, mode, then the 15 config values; the
	 * loser of a race to create it gets no row and reads the winner's */
	[ST_QUEUE_INSERT] = { "queue_insert",
	    "INSERT INTO queues (" QUEUE_INS ") VALUES ($1, $2, $3, $4, $5, "
	    "$6, $7, $8, $9, $10, $11, $12, $13, $14, $15, $16, $17, $18, $19, "
	    "$20) ON CONFLICT (name) DO NOTHING RETURNING id" },
	/* as insert, then id as $21 */
	[ST_QUEUE_UPDATE] = { "queue_update",
	    "UPDATE queues SET name = $1, created_at = $2, uid = $3, gid = $4, "
	    "mode = $5, lease_time = $6, retry_limit = $7, dlq = $8, "
	    "batch = $9, wait = $10, delay = $11, window_buffer = $12, "
	    "dedup_window = $13, retention = $14, completed_retention = $15, "
	    "max_message_bytes = $16, expiry_charges_retry = $17, "
	    "auto_ack = $18, timer_delay = $19, hash_retention = $20 "
	    "WHERE id = $21" },
	/* id */
	[ST_QUEUE_DELETE] = { "queue_delete",
	    "DELETE FROM queues WHERE id = $1" },
	[ST_QUEUE_LIST] = { "queue_list",
	    "SELECT " QUEUE_COLS " FROM queues ORDER BY name" },
	/* queue id */
	[ST_QUEUE_MSGS] = { "queue_msgs",
	    "SELECT coalesce(sum(tail - head + 1), 0)::bigint "
	    "FROM partitions WHERE queue_id = $1 AND tail >= head" },
	[ST_QUEUE_GROUPS] = { "queue_groups",
	    "SELECT count(*) FROM groups WHERE queue_id = $1 "
	    "AND name <> '" QUEEN_QUEUE_MODE "'" },
	[ST_QUEUE_TIMERS] = { "queue_timers",
	    "SELECT count(*) FROM timers WHERE queue_id = $1" },
	/* queue id, name */
	[ST_PART_GET] = { "part_get",
	    "SELECT " PART_COLS " FROM partitions "
	    "WHERE queue_id = $1 AND name = $2" },
	[ST_PART_GET_LK] = { "part_get_lk",
	    "SELECT " PART_COLS " FROM partitions "
	    "WHERE queue_id = $1 AND name = $2" LOCK },
	/* id */
	[ST_PART_BY_ID] = { "part_by_id",
	    "SELECT " PART_COLS " FROM partitions WHERE id = $1" },
	/* uuid */
	[ST_PART_BY_UUID] = { "part_by_uuid",
	    "SELECT " PART_COLS " FROM partitions WHERE uuid = $1" },
	/* queue_id, name, uuid, head, tail, txns_start, last_push_at,
	 * duplicates, created_at */
	[ST_PART_INSERT] = { "part_insert",
	    "INSERT INTO partitions (queue_id, name, uuid, head, tail, "
	    "txns_start, last_push_at, duplicates, created_at) VALUES "
	    "($1, $2, $3, $4, $5, $6, $7, $8, $9) "
	    "ON CONFLICT (queue_id, name) DO NOTHING RETURNING id" },
	/* head, tail, txns_start, last_push_at, duplicates, id */
	[ST_PART_UPDATE] = { "part_update",
	    "UPDATE partitions SET head = $1, tail = $2, txns_start = $3, "
	    "last_push_at = $4, duplicates = $5 WHERE id = $6" },
	/* queue id, after this name, page size */
	[ST_PART_LIST] = { "part_list",
	    "SELECT " PART_COLS " FROM partitions "
	    "WHERE queue_id = $1 AND name > $2 ORDER BY name LIMIT $3" },
	[ST_PART_LIST_LK] = { "part_list_lk",
	    "SELECT " PART_COLS " FROM partitions "
	    "WHERE queue_id = $1 AND name > $2 ORDER BY name LIMIT $3" LOCK },
	/* now, limit: the tests of maint.c's maint_part, in one statement */
	[ST_PART_MAINT] = { "part_maint", PART_MAINT },
	/* queue id, name */
	[ST_GROUP_GET] = { "group_get",
	    "SELECT " GROUP_COLS " FROM groups "
	    "WHERE queue_id = $1 AND name = $2" },
	[ST_GROUP_BY_ID] = { "group_by_id",
	    "SELECT " GROUP_COLS " FROM groups WHERE id = $1" },
	/* queue_id, name, mode, since, created_at, batch, wait, auto_ack,
	 * uid, gid, perm */
	[ST_GROUP_INSERT] = { "group_insert",
	    "INSERT INTO groups (queue_id, name, mode, since, created_at, "
	    "batch, wait, auto_ack, uid, gid, perm) VALUES "
	    "($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11) "
	    "ON CONFLICT (queue_id, name) DO NOTHING RETURNING id" },
	/* as insert, then id as $12 */
	[ST_GROUP_UPDATE] = { "group_update",
	    "UPDATE groups SET queue_id = $1, name = $2, mode = $3, "
	    "since = $4, created_at = $5, batch = $6, wait = $7, "
	    "auto_ack = $8, uid = $9, gid = $10, perm = $11 WHERE id = $12" },
	[ST_GROUP_DELETE] = { "group_delete",
	    "DELETE FROM groups WHERE id = $1" },
	/* queue id */
	[ST_GROUP_LIST] = { "group_list",
	    "SELECT " GROUP_COLS " FROM groups "
	    "WHERE queue_id = $1 ORDER BY name" },
	/* partition id, group id */
	[ST_CUR_GET] = { "cur_get",
	    "SELECT " CUR_COLS " FROM cursors "
	    "WHERE partition_id = $1 AND group_id = $2" },
	[ST_CUR_GET_LK] = { "cur_get_lk",
	    "SELECT " CUR_COLS " FROM cursors "
	    "WHERE partition_id = $1 AND group_id = $2" LOCK },
	/* the eight columns in order */
	[ST_CUR_PUT] = { "cur_put",
	    "INSERT INTO cursors (" CUR_COLS ") "
	    "VALUES ($1, $2, $3, $4, $5, $6, $7, $8) "
	    "ON CONFLICT (partition_id, group_id) DO UPDATE SET "
	    "committed = excluded.committed, batch_end = excluded.batch_end, "
	    "lease_id = excluded.lease_id, "
	    "lease_expires_at = excluded.lease_expires_at, "
	    "retry_count = excluded.retry_count, next_at = excluded.next_at" },
	/* as put: creating a cursor another process may have created */
	[ST_CUR_PUT_NEW] = { "cur_put_new",
	    "INSERT INTO cursors (" CUR_COLS ") "
	    "VALUES ($1, $2, $3, $4, $5, $6, $7, $8) "
	    "ON CONFLICT (partition_id, group_id) DO NOTHING" },
	/* lease id: through the leases table (schema version 3) */
	[ST_CUR_BY_LEASE] = { "cur_by_lease", CUR_BY_LEASE },
	[ST_CUR_BY_LEASE_LK] = { "cur_by_lease_lk", CUR_BY_LEASE LOCK " OF c" },
	/* group id, upto, after_at, after_pid, and for the locked one
	 * now; rows another transaction holds are skipped, not waited for */
	[ST_CUR_READY] = { "cur_ready", CUR_READY },
	[ST_CUR_READY_LK] = { "cur_ready_lk", CUR_READY_ONE },
	/* group id */
	[ST_CUR_LIST_GROUP] = { "cur_list_group",
	    "SELECT " CUR_COLS " FROM cursors WHERE group_id = $1 "
	    "ORDER BY partition_id" },
	[ST_CUR_LIST_GROUP_LK] = { "cur_list_group_lk",
	    "SELECT " CUR_COLS " FROM cursors WHERE group_id = $1 "
	    "ORDER BY partition_id" LOCK },
	/* partition id */
	[ST_CUR_LIST_PART] = { "cur_list_part",
	    "SELECT " CUR_COLS " FROM cursors WHERE partition_id = $1 "
	    "ORDER BY group_id" },
	[ST_CUR_LIST_PART_LK] = { "cur_list_part_lk",
	    "SELECT " CUR_COLS " FROM cursors WHERE partition_id = $1 "
	    "ORDER BY group_id" LOCK },
	/* partition id, at */
	/* partition id, at, channel, payload, always: the caught-up
	 * cursors woken, and the partition announced if any was (or
	 * always); a row for each announcement (see drain) */
	[ST_CUR_WAKE] = { "cur_wake",
	    "WITH w AS (UPDATE cursors SET next_at = $2::bigint "
	    "WHERE partition_id = $1::bigint AND next_at < 0 RETURNING 1) "
	    "SELECT pg_notify($3::text, $4::text) "
	    "WHERE $5::boolean OR EXISTS (SELECT FROM w)" },
	[ST_CUR_DEL_GROUP] = { "cur_del_group",
	    "DELETE FROM cursors WHERE group_id = $1" },
	/* partition id */
	[ST_CUR_MIN] = { "cur_min",
	    "SELECT min(committed) FROM cursors WHERE partition_id = $1" },
	/* now: caught-up cursors with messages past them, woken */
	/* in cursor order, and none another session holds: a publish
	 * waking it (or an ack) takes care of it, or the next tick does;
	 * waiting for one while holding another made a ring with a batch
	 * of publishes waking the two */
	[ST_CUR_REPAIR] = { "cur_repair",
	    "UPDATE cursors c SET next_at = $1 FROM (SELECT "
	    "r.partition_id, r.group_id, p.queue_id FROM cursors r "
	    "JOIN partitions p ON p.id = r.partition_id "
	    "WHERE r.next_at < 0 AND p.tail >= p.head AND "
	    "r.committed < p.tail ORDER BY r.partition_id, r.group_id "
	    "FOR UPDATE OF r SKIP LOCKED) w "
	    "WHERE c.partition_id = w.partition_id AND "
	    "c.group_id = w.group_id RETURNING w.queue_id, c.partition_id" },
	/* lease id: the cursor, its partition, queue and group (columns
	 * from 0, 8, 18 and 39) */
	[ST_CUR_LEASE_ROWS] = { "cur_lease_rows", "SELECT * FROM " LEASE_ROWS },
	/* lease id, hash, largest payload read along: those rows, then
	 * the hash's lowest row in the lease's span (51, 52), the message
	 * after it (53, 54), and that message as msg_scan reads it (55),
	 * its payload NULL if over the largest, and its length (62) */
	[ST_LEASE_AHEAD] = { "lease_ahead",
	    LEASE_AHEAD("", LEASE_ROWS, "hash = $2 AND ", "$3") },
	/* the same, the cursor's row locked: an ack's */
	[ST_LEASE_AHEAD_LK] = { "lease_ahead_lk",
	    LEASE_AHEAD("", LEASE_ROWS_LK, "hash = $2 AND ", "$3") },
	/* lease id, largest payload read along: as lease_ahead for the
	 * span's first hash row, whose hash comes last (63) */
	[ST_LEASE_FIRST] = { "lease_first",
	    LEASE_AHEAD(", (SELECT hash FROM txns WHERE id = t.id)", LEASE_ROWS,
		"", "$2") },
	/* queue name, partition name, hash: the queue (columns from 0),
	 * the partition (21), the newest row of the hash in its dedup
	 * window (31, 32) and the newest hash row of the partition (33) */
	[ST_PUSH_AHEAD] = { "push_ahead", PUSH_AHEAD },
	/* queue name, partition name, hash, largest payload read along */
	[ST_FIND_AHEAD] = { "find_ahead", FIND_AHEAD },
	[ST_PUSH_AHEAD_LK] = { "push_ahead_lk", PUSH_AHEAD " FOR UPDATE OF p" },
	/* the same locked, and a bytea[] of hashes: those the partition
	 * holds from txns_start up (34, an array; NULL: none), as
	 * txn_prefetch finds them */
	[ST_PUSH_AHEAD_MANY] = { "push_ahead_many",
	    PUSH_AHEAD_MANY " FOR UPDATE OF p" },
	/* the same unlocked: a push that claims the row with its writes */
	[ST_PUSH_AHEAD_MANY_OPT] = { "push_ahead_many_opt", PUSH_AHEAD_MANY },
	/* id, head, tail, txns_start, last_push_at, duplicates: the row
	 * locked if it is still so, else 40001 (pg_part_claim) */
	[ST_PART_CLAIM] = { "part_claim",
	    "SELECT queen_part_claim($1, $2, $3, $4, $5, $6)" },
	/* queue name, group name: the queue (columns from 0), the group
	 * (21), if any */
	[ST_POP_AHEAD] = { "pop_ahead",
	    "SELECT " QUEUE_Q_COLS ", " GROUP_G_COLS " FROM queues q "
	    "LEFT JOIN groups g ON g.queue_id = q.id AND g.name = $2 "
	    "WHERE q.name = $1" },
	/* queue name, group name, now: inside a call that writes, the
	 * group's first ready cursor as cur_ready_lk gives it for the
	 * messages visible at now (columns from 0, all NULL if none), then
	 * the queue (27) and the group (48) */
	[ST_POP_READY] = { "pop_ready",
	    "SELECT r.*, " QUEUE_Q_COLS ", " GROUP_G_COLS " FROM queues q "
	    "LEFT JOIN groups g ON g.queue_id = q.id AND g.name = $2 "
	    "LEFT JOIN LATERAL (" CUR_READY_ONE_OF("g.id",
		"($3::bigint - q.delay * 1000)", "-1", "0",
		"$3::bigint") ") r ON true WHERE q.name = $1" },
	/* partition uuid, group name: the partition (columns from 0), its
	 * queue (10) and the group (31), if any */
	[ST_ACK_AHEAD] = { "ack_ahead",
	    "SELECT " PART_P_COLS ", " QUEUE_Q_COLS ", " GROUP_G_COLS
	    " FROM partitions p JOIN queues q ON q.id = p.queue_id "
	    "LEFT JOIN groups g ON g.queue_id = q.id AND g.name = $2 "
	    "WHERE p.uuid = $1" },
	/* key, created_at, txid, trace_id, payload */
	[ST_MSG_APPEND] = { "msg_append",
	    "INSERT INTO messages (id, created_at, txid, trace_id, payload) "
	    "VALUES ($1, $2, $3, $4, $5)" },
	/* arrays of keys, created_at, txid, trace_id, payload, hash */
	[ST_MSG_APPEND_MANY] = { "msg_append_many",
	    "WITH v AS (SELECT * FROM unnest($1::bigint[], $2::bigint[], "
	    "$3::bytea[], $4::bytea[], $5::bytea[], $6::bytea[]) "
	    "AS v(id, at, txid, trace, payload, hash)), "
	    "m AS (INSERT INTO messages (id, created_at, txid, trace_id, "
	    "payload) SELECT id, at, txid, trace, payload FROM v) "
	    "INSERT INTO txns (id, hash, created_at) "
	    "SELECT id, hash, at FROM v" },
	/* key, hash, created_at */
	[ST_TXN_APPEND] = { "txn_append",
	    "INSERT INTO txns (id, hash, created_at) VALUES ($1, $2, $3)" },
	/* from key, to key, limit */
	/* from key, to key, limit; the row's xid, and the oldest xid still
	 * running then (see pg_read_durable) */
	[ST_MSG_SCAN] = { "msg_scan",
	    "SELECT id, created_at, txid, trace_id, payload, " SCAN_XIDS
	    " FROM messages WHERE id >= $1 AND id <= $2 ORDER BY id LIMIT $3" },
	[ST_MSG_SCAN_META] = { "msg_scan_meta",
	    "SELECT id, created_at, txid, trace_id, "
	    "length(payload)::bigint, " SCAN_XIDS
	    " FROM messages WHERE id >= $1 AND id <= $2 "
	    "ORDER BY id LIMIT $3" },
	/* key */
	[ST_MSG_TIME] = { "msg_time",
	    "SELECT created_at FROM messages WHERE id = $1" },
	/* after key, last key */
	[ST_MSG_NEXT] = { "msg_next",
	    "SELECT id, created_at FROM messages "
	    "WHERE id > $1 AND id <= $2 ORDER BY id LIMIT 1" },
	[ST_MSG_COUNT] = { "msg_count",
	    "SELECT count(*) FROM messages WHERE id > $1 AND id <= $2" },
	/* first key, upto key, limit */
	[ST_MSG_PURGE] = { "msg_purge",
	    "DELETE FROM messages WHERE id IN (SELECT id FROM messages "
	    "WHERE id >= $1 AND id <= $2 ORDER BY id LIMIT $3)" },
	/* first key, last key */
	[ST_MSG_DELETE_PART] = { "msg_delete_part",
	    "DELETE FROM messages WHERE id >= $1 AND id <= $2" },
	/* hash, lo key, hi key, the partition's last key: the lowest row,
	 * and the message after it (an ack's next question) */
	[ST_TXN_FIND_LO] = { "txn_find_lo",
	    "SELECT d.id, d.created_at, n.id, n.created_at FROM (SELECT id, "
	    "created_at FROM txns WHERE hash = $1 AND id >= $2 AND id <= $3 "
	    "ORDER BY id LIMIT 1) d LEFT JOIN LATERAL (SELECT id, created_at "
	    "FROM messages WHERE id > d.id AND id <= $4 ORDER BY id LIMIT 1) n "
	    "ON true" },
	/* hash, lo key, hi key */
	[ST_TXN_FIND_HI] = { "txn_find_hi",
	    "SELECT id, created_at FROM txns WHERE hash = $1 "
	    "AND id >= $2 AND id <= $3 ORDER BY id DESC LIMIT 1" },
	/*
	 * lo key, hi key, hashes (bytea[]): each one's lowest row.  One
	 * probe of txns_hash a hash: written as `hash = ANY($3) AND id
	 * BETWEEN`, the generic plan of the prepared statement scanned the
	 * span's ids instead, 250 ms for 1000 hashes in a partition of
	 * 20,000 messages, growing with it.
	 */
	/* clang-format off */
	[ST_TXN_FIND_MANY] = { "txn_find_many",
	    "SELECT h.hash, t.id, t.created_at FROM " HASHES_OF("$3")
	    " CROSS JOIN LATERAL (SELECT id, created_at FROM txns "
	    "WHERE hash = h.hash AND id >= $1 AND id <= $2 "
	    "ORDER BY id LIMIT 1) t" },
	/* clang-format on */
	/* lo key, hi key, hashes (bytea[]): each one's highest row, probed
	 * as txn_find_many's lowest */
	/* clang-format off */
	[ST_TXN_NEWEST_MANY] = { "txn_newest_many",
	    "SELECT h.hash, t.id FROM " HASHES_OF("$3")
	    " CROSS JOIN LATERAL (SELECT id FROM txns "
	    "WHERE hash = h.hash AND id >= $1 AND id <= $2 "
	    "ORDER BY id DESC LIMIT 1) t" },
	/* clang-format on */
	/*
	 * lo key, hi key, hashes (bytea[]): those with a row, one probe of
	 * txns_hash each, as above.  Written as `WHERE EXISTS`, both the
	 * custom and the generic plan turned it into a hash join over
	 * every hash row of the span: 8 ms for 1000 hashes in a partition
	 * of 20,000 messages, 73 ms at 63,000, growing with it (a LIMIT
	 * keeps the probe a nested loop).
	 */
	/* clang-format off */
	[ST_TXN_PREFETCH] = { "txn_prefetch",
	    "SELECT h.hash FROM " HASHES_OF("$3")
	    " CROSS JOIN LATERAL (SELECT 1 FROM txns "
	    "WHERE hash = h.hash AND id >= $1 AND id <= $2 LIMIT 1) t" },
	/* clang-format on */
	/* key */
	[ST_TXN_TIME] = { "txn_time",
	    "SELECT created_at FROM txns WHERE id = $1" },
	/* first key, upto key, limit */
	[ST_TXN_PURGE] = { "txn_purge",
	    "DELETE FROM txns WHERE id IN (SELECT id FROM txns "
	    "WHERE id >= $1 AND id <= $2 ORDER BY id LIMIT $3)" },
	[ST_TXN_DELETE_PART] = { "txn_delete_part",
	    "DELETE FROM txns WHERE id >= $1 AND id <= $2" },
	/* queue, partition, group, offset, txid, payload, created_at,
	 * failed_at, retry_count, error */
	[ST_DLQ_INSERT] = { "dlq_insert",
	    "INSERT INTO dlq (queue_id, partition_id, group_name, msg_offset, "
	    "txid, payload, created_at, failed_at, retry_count, error) "
	    "VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10)" },
	/* queue id, group name */
	[ST_DLQ_LIST] = { "dlq_list",
	    "SELECT d.id, p.name, d.group_name, d.txid, d.error, "
	    "d.msg_offset, d.retry_count, d.created_at, d.failed_at, d.payload "
	    "FROM dlq d JOIN partitions p ON p.id = d.partition_id "
	    "WHERE d.queue_id = $1 AND d.group_name = $2 ORDER BY d.id" },
	[ST_DLQ_LIST_META] = { "dlq_list_meta",
	    "SELECT d.id, p.name, d.group_name, d.txid, d.error, "
	    "d.msg_offset, d.retry_count, d.created_at, d.failed_at, "
	    "length(d.payload)::bigint "
	    "FROM dlq d JOIN partitions p ON p.id = d.partition_id "
	    "WHERE d.queue_id = $1 AND d.group_name = $2 ORDER BY d.id" },
	/* queue id, group name, partition name, txid: one name, by dlq_txid */
	[ST_DLQ_GET] = { "dlq_get",
	    "SELECT d.id, p.name, d.group_name, d.txid, d.error, "
	    "d.msg_offset, d.retry_count, d.created_at, d.failed_at, d.payload "
	    "FROM dlq d JOIN partitions p ON p.id = d.partition_id "
	    "WHERE d.queue_id = $1 AND d.group_name = $2 AND p.name = $3 "
	    "AND d.txid = $4 ORDER BY d.id" },
	[ST_DLQ_GET_META] = { "dlq_get_meta",
	    "SELECT d.id, p.name, d.group_name, d.txid, d.error, "
	    "d.msg_offset, d.retry_count, d.created_at, d.failed_at, "
	    "length(d.payload)::bigint "
	    "FROM dlq d JOIN partitions p ON p.id = d.partition_id "
	    "WHERE d.queue_id = $1 AND d.group_name = $2 AND p.name = $3 "
	    "AND d.txid = $4 ORDER BY d.id" },
	[ST_DLQ_COUNT] = { "dlq_count",
	    "SELECT count(*) FROM dlq WHERE queue_id = $1 "
	    "AND group_name = $2" },
	[ST_DLQ_DELETE] = { "dlq_delete", "DELETE FROM dlq WHERE id = $1" },
	/* ns, key, now */
	[ST_KV_GET] = { "kv_get", KV_GET },
	[ST_KV_GET_LK] = { "kv_get_lk", KV_GET " FOR UPDATE" },
	/* ns, key: a key's lock, held to the commit, for a key that has
	 * no row to lock yet (pg_kv_get) */
	[ST_KV_LOCK] = { "kv_lock",
	    "SELECT pg_advisory_xact_lock(hashtextextended("
	    "current_schema() || '/' || $1 || '/' || $2, 0))" },
	/* ns, key, value, expires_at, now */
	[ST_KV_PUT] = { "kv_put",
	    "INSERT INTO kv (ns, key, value, version, expires_at, updated_at) "
	    "VALUES ($1, $2, $3, 1, $4, $5) "
	    "ON CONFLICT (ns, key) DO UPDATE SET value = excluded.value, "
	    "version = CASE WHEN kv.expires_at > 0 AND kv.expires_at <= $5 "
	    "THEN 1 ELSE kv.version + 1 END, "
	    "expires_at = excluded.expires_at, "
	    "updated_at = excluded.updated_at" },
	/* ns, key, now */
	[ST_KV_DELETE] = { "kv_delete",
	    "DELETE FROM kv WHERE ns = $1 AND key = $2 "
	    "AND (expires_at = 0 OR expires_at > $3)" },
	/* ns, key, now, expires_at */
	[ST_KV_EXPIRY] = { "kv_expiry",
	    "UPDATE kv SET expires_at = $4 WHERE ns = $1 AND key = $2 "
	    "AND (expires_at = 0 OR expires_at > $3)" },
	/* ns, now */
	[ST_KV_LIST] = { "kv_list",
	    "SELECT key, value, version, expires_at, updated_at FROM kv "
	    "WHERE ns = $1 AND (expires_at = 0 OR expires_at > $2) "
	    "ORDER BY key" },
	/* now, limit */
	[ST_KV_PURGE] = { "kv_purge",
	    "DELETE FROM kv WHERE (ns, key) IN (SELECT ns, key FROM kv "
	    "WHERE expires_at > 0 AND expires_at <= $1 LIMIT $2)" },
	/* ns */
	[ST_NS_GET] = { "ns_get",
	    "SELECT uid, gid, mode FROM kv_ns WHERE name = $1" },
	/* ns, uid, gid, mode, now */
	[ST_NS_PUT] = { "ns_put",
	    "INSERT INTO kv_ns (name, uid, gid, mode, created_at) "
	    "VALUES ($1, $2, $3, $4, $5) ON CONFLICT (name) DO UPDATE SET "
	    "uid = excluded.uid, gid = excluded.gid, mode = excluded.mode, "
	    "created_at = excluded.created_at" },
	[ST_NS_DELETE] = { "ns_delete", "DELETE FROM kv_ns WHERE name = $1" },
	/* now */
	[ST_NS_LIST] = { "ns_list",
	    "SELECT name FROM kv_ns UNION SELECT ns FROM kv "
	    "WHERE expires_at = 0 OR expires_at > $1 ORDER BY 1" },
	/* queue, key, partition, due_at, payload, now */
	[ST_TIMER_PUT] = { "timer_put",
	    "INSERT INTO timers (queue_id, key, part_name, due_at, payload, "
	    "created_at) VALUES ($1, $2, $3, $4, $5, $6) "
	    "ON CONFLICT (queue_id, key) DO UPDATE SET "
	    "part_name = excluded.part_name, due_at = excluded.due_at, "
	    "payload = excluded.payload" },
	/* queue, key */
	[ST_TIMER_DELETE] = { "timer_delete",
	    "DELETE FROM timers WHERE queue_id = $1 AND key = $2" },
	[ST_TIMER_GET] = { "timer_get",
	    "SELECT " TIMER_COLS " FROM timers WHERE queue_id = $1 "
	    "AND key = $2" },
	/* queue */
	[ST_TIMER_LIST] = { "timer_list",
	    "SELECT " TIMER_COLS " FROM timers WHERE queue_id = $1 "
	    "ORDER BY key" },
	/* now */
	[ST_TIMER_DUE] = { "timer_due",
	    "SELECT " TIMER_COLS ", queue_id FROM timers WHERE due_at <= $1 "
	    "ORDER BY due_at, seq LIMIT 1" },
	/* channel, payload (the partition id; 0: the queue) */
	[ST_NOTIFY] = { "notify", "SELECT pg_notify($1, $2)" },
};


/* ---- errors ---- */

int
pg_errno(const char *state)
{
	/* no SQLSTATE: libpq itself failed, i.e. the connection */
	if (!state || !state[0])
		return -EIO;
	if (strcmp(state, "23505") == 0)
		return -EEXIST;
	if (strcmp(state, "40001") == 0 || strcmp(state, "40P01") == 0 ||
	    strcmp(state, "55P03") == 0)
		return -EBUSY;
	if (strcmp(state, "53100") == 0)
		return -ENOSPC;
	if (strcmp(state, "53200") == 0)
		return -ENOMEM;
	if (strcmp(state, "25006") == 0)
		return -EROFS;
	if (strcmp(state, "42501") == 0)
		return -EACCES;
	/* as SQLite's TOOBIG and other constraints */
	if (strcmp(state, "54000") == 0)
		return -EFBIG;
	if (strncmp(state, "23", 2) == 0)
		return -EINVAL;
	/* 08xxx (connection), XX001/XX002 (corruption), anything else */
	return -EIO;
}

static void
pg_err_clear(struct store *s)
{
	s->err[0] = '\0';
}

static bool
pg_corrupt(const char *state)
{
	return state && (strcmp(state, "XX001") == 0 ||
	    strcmp(state, "XX002") == 0);
}

/*
 * libpq's message on one line: a failed connection to several hosts is a
 * line per host (each with its reason), continuation lines start with a
 * tab; the daemon logs one line per failure, with every host's reason.
 */
static void
set_err(struct store *s, const char *msg)
{
	size_t o = 0;

	for (; *msg && o + 3 < sizeof(s->err); msg++) {
		if (*msg != '\n') {
			s->err[o++] = *msg == '\t' ? ' ' : *msg;
			continue;
		}
		while (msg[1] == '\t' || msg[1] == ' ')
			msg++;
		if (msg[1] && o > 0) {
			s->err[o++] = ';';
			s->err[o++] = ' ';
		}
	}
	while (o > 0 && s->err[o - 1] == ' ')
		o--;
	s->err[o] = '\0';
}

/* Note a failed result (r may be NULL); returns the errno. */
static int
fail(struct store *s, const PGresult *r)
{
	const char *state = r ? PQresultErrorField(r, PG_DIAG_SQLSTATE) : NULL;
	const char *msg = r ? PQresultErrorMessage(r) : "";

	if (!msg[0])
		msg = PQerrorMessage(s->c);
	set_err(s, msg);
	s->corrupt = pg_corrupt(state);
	if (PQstatus(s->c) != CONNECTION_OK ||
	    (state && strncmp(state, "08", 2) == 0))
		pg_broken(s);
	return pg_errno(state);
}

/*
 * The calls' connection is lost: the listening one is given up with it,
 * since its server may be one gone without a word (a failover's old
 * primary), where an UNLISTEN would wait for TCP to give up.  Both are
 * made again when next used.
 */
void
pg_broken(struct store *s)
{
	s->broken = true;
	s->lc_broken = true;
}

int
pg_fail(struct store *s, const PGresult *r)
{
	return fail(s, r);
}

/* ---- the connection ---- */

static void
no_notices(void *arg, const char *msg)
{
	(void)arg;
	(void)msg;
}

/*
 * libpq waits without limit for a host that never answers (a dead machine
 * whose packets vanish: often the old primary after a failover), and only
 * then tries the next host of the list.  Unless the URI or the
 * environment sets connect_timeout, give each host 5 s, so that a
 * reconnect (PQreset keeps these options) reaches the new primary.
 * Notices (the server's warnings to a session) are dropped.
 */
static PGconn *
connect_at(const char *uri, const PGconn *same)
{
	const char *kw[6], *val[6];
	PGconn *c;
	int n = 0;

	if (!getenv("PGCONNECT_TIMEOUT")) {
		kw[n] = "connect_timeout";
		val[n++] = "5";
	}
	/* the URI's own fields override the entries before it, and the
	 * entries after it override the URI's (an empty one is ignored:
	 * the URI's stays) */
	kw[n] = "dbname";
	val[n++] = uri;
	if (same) {
		kw[n] = "host";
		val[n++] = PQhost(same);
		kw[n] = "hostaddr";
		val[n++] = PQhostaddr(same);
		kw[n] = "port";
		val[n++] = PQport(same);
	}
	kw[n] = val[n] = NULL;
	c = PQconnectdbParams(kw, val, 1);
	if (c)
		PQsetNoticeProcessor(c, no_notices, NULL);
	return c;
}

static PGconn *
connect_db(const char *uri)
{
	return connect_at(uri, NULL);
}

static int
simple(struct store *s, const char *text)
{
	int rc;

	PQclear(pipe_wait(s, ST__N, text, NULL, &rc));
	return rc;
}

/*
 * How long a statement waits for a row another session holds: what the
 * connection's options (or PGOPTIONS), the role, the database or the
 * server's configuration set (0 too: no limit), else 5 s.  It bounds how
 * long one held row stalls the daemon's writes.
 */
#define LOCK_TIMEOUT \
	"SELECT set_config('lock_timeout', '5s', false) FROM pg_settings " \
	"WHERE name = 'lock_timeout' AND source = 'default'"
/* a brief transaction's: 100 ms, or the session's own if shorter */
#define LOCK_BRIEF \
	"SELECT set_config('lock_timeout', '100ms', true) FROM pg_settings " \
	"WHERE name = 'lock_timeout' AND " \
	"(setting::bigint = 0 OR setting::bigint > 100)"

/* Session settings, in one place; again after every reconnect. */
static int
session(struct store *s)
{
	static const char *const commit[] = {
		[QUEEN_SYNC_FULL] = "SET synchronous_commit = on",
		[QUEEN_SYNC_NORMAL] = "SET synchronous_commit = on",
		[QUEEN_SYNC_OFF] = "SET synchronous_commit = off",
	};
	int rc;

	if ((rc = pipe_start(s)) != 0 || (rc = simple(s, LOCK_TIMEOUT)) != 0 ||
	    (rc = simple(s, "SET client_min_messages = warning")) != 0 ||
	    (rc = simple(s, commit[s->sync])) != 0)
		return rc;
	if (s->ro &&
	    (rc = simple(s, "SET default_transaction_read_only = on")) != 0)
		return rc;
	return 0;
}

/* What a new server session of s->c has lost of the last one. */
static void
forget_session(struct store *s)
{
	int i;

	/* perhaps another server now (a failover): no flush vouches yet */
	atomic_store(&s->flushed_xmin, 0);
	for (i = 0; i < ST__N; i++)
		s->prepared[i] = false;
	s->bloated = false;
}

/* c in place of the calls' connection; pinned: made for its server */
static void
use_conn(struct store *s, PGconn *c, bool pinned)
{
	PQfinish(s->c);
	s->c = c;
	s->pinned = pinned;
}

/*
 * After a lost connection: connect again, with a fresh session.  A
 * connection pg_recycle made names its one server, and PQreset would go
 * back only there: it is made again from the URI, whose hosts lead to a
 * failover's new primary.
 */
static int
reconnect(struct store *s)
{
	PGconn *c;

	if (s->pinned && (c = connect_db(s->conninfo)) != NULL) {
		use_conn(s, c, false);
	} else {
		PQreset(s->c);
	}
	forget_session(s);
	if (PQstatus(s->c) != CONNECTION_OK)
		return fail(s, NULL);
	s->broken = false;
	/* the listening session is made again too (see pg_broken), also
	 * when libpq alone knew this one was lost */
	s->lc_broken = true;
	return session(s);
}

/*
 * A connection that carried a message over PG_BUF_KEEP holds buffers as
 * large until it is closed (PQreset keeps them): once nothing is open on
 * it, it is replaced by a new one, so that the daemon gives that memory
 * back.  If no new connection can be had, the old one goes on and the
 * next idle moment a second later tries again.
 */
void
pg_recycle(struct store *s)
{
	int64_t now;
	PGconn *c;

	if (!s->bloated || s->in_tx || s->npend > 0 || s->broken)
		return;
	now = pg_mono_ns();
	if (now < s->recycle_ns)
		return;
	/* the server this one is on: not the hosts before it in the URI,
	 * which may be a failover's old primary that never answers */
	c = connect_at(s->conninfo, s->c);
	if (!c || PQstatus(c) != CONNECTION_OK) {
		PQfinish(c);
		s->recycle_ns = now + 1000000000;
		return;
	}
	use_conn(s, c, true);
	forget_session(s);
	/* a failure here marks the connection broken: the next call
	 * connects again */
	(void)session(s);
}

static void
pg_close(struct store *s)
{
	if (!s)
		return;
	PQfinish(s->c);
	if (s->syncc)
		PQfinish(s->syncc);
	if (s->lc)
		PQfinish(s->lc);
	free(s->conninfo);
	free(s->pf.set);
	pg_keep_msg(s, NULL, false, 0, 0, 0, 0, false);
	pg_ready_drop(s);
	free(s->ahead.lw.v);
	for (int k = 0; k < AB_COLS; k++)
		free(s->ab.b[k]);
	free(s->seen);
	free(s->chans);
	free(s);
}

static const char *
pg_errmsg(struct store *s)
{
	return s->err;
}

static bool
pg_io_failed(struct store *s)
{
	return s->corrupt;
}

/* ---- running statements ---- */


void
a_int(struct args *a, int64_t v)
{
	snprintf(a->num[a->n], sizeof(a->num[a->n]), "%lld", (long long)v);
	a->v[a->n] = a->num[a->n];
	a->len[a->n] = 0;
	a->fmt[a->n++] = 0;
}

void
a_text(struct args *a, const char *t)
{
	a->v[a->n] = t;
	a->len[a->n] = 0;
	a->fmt[a->n++] = 0;
}

/* Bytes; NULL data with len 0 is the empty value, a_null is NULL. */
void
a_bytes(struct args *a, const void *data, size_t len)
{
	a->v[a->n] = len ? data : "";
	a->len[a->n] = (int)len;
	a->fmt[a->n++] = 1;
}

void
a_str(struct args *a, const char *t)
{
	if (t)
		a_bytes(a, t, strlen(t));
	else
		a_text(a, NULL);
}

void
a_null(struct args *a)
{
	a_text(a, NULL);
}

const char *
pg_stmt_name(enum stmt id)
{
	return sql[id].name;
}

const char *
pg_stmt_sql(enum stmt id)
{
	return sql[id].sql;
}

/* A statement that only reads (row locks aside): see s->ahead. */
bool
pg_stmt_reads(enum stmt id)
{
	static _Atomic signed char known[ST__N]; /* 0 unknown, 1, -1 */
	int k = known[id];

	if (k == 0) {
		k = -1;
		if (strncmp(sql[id].sql, "SELECT ", 7) == 0 &&
		    !strstr(sql[id].sql, "pg_notify"))
			k = 1;
		known[id] = (signed char)k;
	}
	return k > 0;
}

/*
 * Run a statement (prepared on first use) with the writes sent before it;
 * NULL and *rc on failure.
 */
PGresult *
exec(struct store *s, enum stmt id, const struct args *a, int *rc)
{
	const char *again[8];
	PGresult *r;
	int i, n = 0;
	/* a read outside a transaction, nothing sent before it */
	bool alone = !s->in_tx && s->npend == 0;

	if (!s->in_tx && s->broken && (*rc = reconnect(s)) != 0)
		return NULL;
	/* the first wait of a transaction: what it sent only opened it */
	if (s->in_tx && s->npend > 0 && s->pend[0].text == BEGIN_RC) {
		for (i = 0; i < s->npend && n >= 0; i++) {
			if (s->pend[i].prepare)
				continue;
			if (!s->pend[i].text || n == 8)
				n = -1;
			else
				again[n++] = s->pend[i].text;
		}
	}
	r = pipe_wait(s, id, NULL, a, rc);
	if (r || !s->broken || (n <= 0 && !alone))
		return r;
	/* a connection lost while idle (a server restart, a terminated
	 * backend, a failover while nothing was asked of this one, such
	 * as the readers' connection): nothing is lost by connecting
	 * again once */
	if ((*rc = reconnect(s)) != 0)
		return NULL;
	for (i = 0; i < n; i++)
		if ((*rc = pipe_defer(s, ST__N, again[i], NULL)) != 0)
			return NULL;
	return pipe_wait(s, id, NULL, a, rc);
}

/*
 * The writes a transaction sends without waiting for their answer: the
 * engine needs nothing back from them, they lock only rows the call has
 * locked already or a row of their own, and none fails on a client's
 * input (the engine checked it), so a failure is the store's and fails
 * the whole transaction at its next wait (pg_pipe.c).
 */
static bool
only_sent(enum stmt id)
{
	switch (id) {
	case ST_MSG_APPEND:
	case ST_MSG_APPEND_MANY:
	case ST_TXN_APPEND:
	case ST_PART_UPDATE:
	case ST_PART_CLAIM:
	case ST_CUR_PUT:
	case ST_CUR_PUT_NEW:
	case ST_CUR_WAKE:
	case ST_NOTIFY:
		return true;
	default:
		return false;
	}
}

/* A statement that returns no rows we need; *changed if not NULL. */
int
pg_run(struct store *s, enum stmt id, const struct args *a, int64_t *changed)
{
	int rc;
	PGresult *r;

	if (!changed && s->in_tx && only_sent(id))
		return pipe_defer(s, id, NULL, a);
	r = exec(s, id, a, &rc);

	if (changed)
		*changed = r ? strtoll(PQcmdTuples(r), NULL, 10) : 0;
	PQclear(r);
	return rc;
}

int
changed_or_enoent(struct store *s, enum stmt id, const struct args *a)
{
	int64_t n;
	int rc = pg_run(s, id, a, &n);

	return rc == 0 && n == 0 ? -ENOENT : rc;
}

/*
 * The row-locking twin inside a call that writes: a transaction of its
 * own, or a savepoint of a batch.  A batch's reads between its calls only
 * read; had they locked, a read holding a cursor row until the batch's
 * commit could deadlock with another daemon's call that locks that row
 * and then one this batch locks next, and PostgreSQL's cure (aborting a
 * statement outside any savepoint) failed the whole batch.
 */
enum stmt
locked(const struct store *s, enum stmt id)
{
	return s->in_tx && !s->ro && !s->nolock && (!s->batch || s->sp > 0) ?
	    LOCKED_TWIN(id) :
	    id;
}

/* The engine looks rows up to lock them later, in an order of its own. */
void
pg_lock_defer(struct store *s, bool on)
{
	s->nolock = on;
}

/* Binary integers of any width; NULL is 0. */
int64_t
col_int(const PGresult *r, int row, int col)
{
	const unsigned char *p;
	int len, i;
	uint64_t v = 0;

	if (PQgetisnull(r, row, col))
		return 0;
	p = (const unsigned char *)PQgetvalue(r, row, col);
	len = PQgetlength(r, row, col);
	for (i = 0; i < len && i < 8; i++)
		v = v << 8 | p[i];
	if (len > 0 && len < 8 && (p[0] & 0x80))
		v |= ~UINT64_C(0) << (8 * len);
	return (int64_t)v;
}

/* Text or bytes, NUL-terminated by libpq; NULL stays NULL. */
const char *
col_str(const PGresult *r, int row, int col)
{
	return PQgetisnull(r, row, col) ? NULL : PQgetvalue(r, row, col);
}

void
pg_col_text(const PGresult *r, int row, int col, char *buf, size_t len)
{
	const char *t = col_str(r, row, col);

	snprintf(buf, len, "%s", t ? t : "");
}

int
pg_one_int(struct store *s, enum stmt id, const struct args *a, int64_t *out)
{
	int rc;
	PGresult *r = exec(s, id, a, &rc);

	if (!r)
		return rc;
	if (PQntuples(r) == 0 || PQgetisnull(r, 0, 0)) {
		PQclear(r);
		return -ENOENT;
	}
	*out = col_int(r, 0, 0);
	PQclear(r);
	return 0;
}

/* ---- transactions ---- */

static void
tx_reset(struct store *s, bool in_tx)
{
	s->in_tx = in_tx;
	s->redo = false;
	s->opt.id = 0;
	s->nclaimed = 0;
	s->nolock = false;
	s->poisoned = false;
	pg_prefetch_end(s);
	pg_append_drop(s);
	pg_ready_drop(s);
	s->batch = false;
	s->sp = 0;
	s->adopted = 0;
	s->nseen = 0;
	s->read_xid = 0;
}

static int
pg_begin(struct store *s)
{
	int rc;

	tx_reset(s, false);
	/* BEGIN goes out with the first statement that waits, which
	 * connects again if the connection was lost meanwhile (exec) */
	if ((s->broken || PQstatus(s->c) != CONNECTION_OK) &&
	    (rc = reconnect(s)) != 0)
		return rc;
	tx_reset(s, true);
	s->redo = s->redo_next;
	s->redo_next = false;
	rc = pipe_defer(s, ST__N, BEGIN_RC, NULL);
	if (rc == 0 && !s->durable && s->sync != QUEEN_SYNC_OFF)
		rc = pipe_defer(s, ST__N, "SET LOCAL synchronous_commit = off",
		    NULL);
	if (rc == 0 && s->brief)
		rc = pipe_defer(s, ST__N, LOCK_BRIEF, NULL);
	s->brief = false;
	if (rc != 0)
		tx_reset(s, false);
	return rc;
}

static int
pg_begin_batch(struct store *s)
{
	int rc = pg_begin(s);

	s->batch = rc == 0;
	return rc;
}

static int
pg_commit(struct store *s)
{
	PGresult *r;
	int rc;

	/* a write sent earlier failed: its call was told it succeeded.
	 * A deadlock's victim says so: the whole batch may run again. */
	if (s->poisoned) {
		rc = s->poison_rc == -EBUSY ? -EBUSY : -EIO;
		tx_reset(s, false);
		return rc;
	}
	r = pipe_wait(s, ST__N, "COMMIT", NULL, &rc);
	if (!r) {
		/* rc set; the caller rolls back */
	} else if (strcmp(PQcmdStatus(r), "ROLLBACK") == 0) {
		/* a failed statement had aborted it: nothing was kept */
		snprintf(s->err, sizeof(s->err), "the transaction was aborted "
		    "by an earlier error");
		s->corrupt = false;
		rc = -EIO;
	}
	PQclear(r);
	tx_reset(s, false);
	pg_recycle(s);
	return rc;
}

/*
 * Twice at most: a ROLLBACK sent behind a write that failed is skipped by
 * the server with the rest of its pipeline, and the transaction is still
 * open (aborted) after it.
 */
static void
pg_rollback(struct store *s)
{
	int i, rc;

	for (i = 0; i < 2 && !s->broken && PQstatus(s->c) == CONNECTION_OK &&
	     (s->npend > 0 || PQtransactionStatus(s->c) != PQTRANS_IDLE);
	     i++)
		PQclear(pipe_wait(s, ST__N, "ROLLBACK", NULL, &rc));
	tx_reset(s, false);
	pg_recycle(s);
}

static int
pg_savepoint(struct store *s)
{
	int rc = pipe_defer(s, ST__N, "SAVEPOINT op", NULL);

	pg_prefetch_end(s);
	s->sp += rc == 0;
	return rc;
}

static int
pg_release(struct store *s)
{
	if (s->sp > 0)
		s->sp--;
	pg_prefetch_end(s);
	return pipe_defer(s, ST__N, "RELEASE op", NULL);
}

/* A write of the call that failed (and any after it) fails the rest. */
static void
pg_rollback_to(struct store *s)
{
	if (s->sp > 0)
		s->sp--;
	pg_prefetch_end(s);
	if (pipe_defer(s, ST__N, "ROLLBACK TO op", NULL) == 0)
		pipe_defer(s, ST__N, "RELEASE op", NULL);
}


/* ---- wake-ups across mounts ---- */

/*
 * One channel per queue, named by the schema's oid and the queue's id, so
 * that two schemas of one database never share one (NOTIFY is per
 * database already).  A daemon LISTENs only to the queues its readers
 * wait on; the engine says which (watch).
 *
 * It LISTENs on a connection of its own (lc), opened when the engine
 * first asks for the descriptor.  PostgreSQL hands a session its
 * announcements only between transactions, and the calls' connection
 * spends most of a busy mount's time in one; on lc they arrive at once,
 * poll() sees every one (nothing else reads that socket), and the
 * calls' answers never wake the engine.
 */
static void
chan_name(const struct store *s, int64_t qid, char *buf, size_t len)
{
	snprintf(buf, len, "queen_%lld_%lld", (long long)s->nsp,
	    (long long)qid);
}

/*
 * lc failed: its message, and if the session is lost, a new one at the
 * next event_fd.  A refusal on a live session (LISTEN on a standby) only
 * fails the call: a new session would be refused the same.
 */
static int
lc_fail(struct store *s, PGresult *r)
{
	const char *state = r ? PQresultErrorField(r, PG_DIAG_SQLSTATE) : NULL;
	const char *msg = r ? PQresultErrorMessage(r) : "";

	set_err(s, msg[0] ? msg : PQerrorMessage(s->lc));
	if (PQstatus(s->lc) != CONNECTION_OK || !state ||
	    strncmp(state, "08", 2) == 0)
		s->lc_broken = true;
	PQclear(r);
	return -EIO;
}

static int
listen_cmd(struct store *s, const char *verb, const char *chan)
{
	PGresult *r;
	char cmd[96];

	snprintf(cmd, sizeof(cmd), "%s \"%s\"", verb, chan);
	r = PQexec(s->lc, cmd);
	if (PQresultStatus(r) != PGRES_COMMAND_OK)
		return lc_fail(s, r);
	PQclear(r);
	return 0;
}

/*
 * lc, connected and listening to every channel in chans: a new session
 * after a lost one listens to what the old one did.
 */
static int
lc_ready(struct store *s)
{
	size_t i;
	int rc;

	if (s->lc && !s->lc_broken && PQstatus(s->lc) == CONNECTION_OK)
		return 0;
	if (!s->lc) {
		if (!(s->lc = connect_db(s->conninfo))) {
			snprintf(s->err, sizeof(s->err), "out of memory");
			return -ENOMEM;
		}
	} else {
		PQreset(s->lc);
		/* what was announced in between is lost: see pg_events */
		s->lc_fresh = true;
	}
	if (PQstatus(s->lc) != CONNECTION_OK)
		return lc_fail(s, NULL);
	s->lc_broken = false;
	for (i = 0; i < s->nchans; i++)
		if ((rc = listen_cmd(s, "LISTEN", s->chans[i].id)) != 0)
			return rc;
	return 0;
}

/* The oid of the schema that holds the queues table (0: none yet). */
static int
schema_oid(struct store *s)
{
	PGresult *r = PQexec(s->c,
	    "SELECT relnamespace::bigint FROM pg_class "
	    "WHERE oid = to_regclass('queues')");
	int rc = 0;

	if (PQresultStatus(r) != PGRES_TUPLES_OK)
		rc = fail(s, r);
	else if (PQntuples(r) == 1)
		s->nsp = strtoll(PQgetvalue(r, 0, 0), NULL, 10);
	PQclear(r);
	return rc;
}

/* Sent with the transaction: delivered at its commit, to the watchers. */
int
pg_notify(struct store *s, int64_t qid, int64_t pid)
{
	struct args a = { 0 };
	char chan[64];

	chan_name(s, qid, chan, sizeof(chan));
	a_text(&a, chan);
	a_int(&a, pid);
	return pg_run(s, ST_NOTIFY, &a, NULL);
}

/*
 * After a push: the caught-up cursors of the partition woken, and the
 * partition announced if one was (a reader waits for that) or always,
 * decided by the server in one statement sent with the rest.
 */
int
pg_wake_announce(struct store *s, int64_t qid, int64_t pid, int64_t at,
    bool always)
{
	struct args a = { 0 };
	char chan[64];

	chan_name(s, qid, chan, sizeof(chan));
	a_int(&a, pid);
	a_int(&a, at);
	a_text(&a, chan);
	a_int(&a, pid);
	a_text(&a, always ? "t" : "f");
	return pg_run(s, ST_CUR_WAKE, &a, NULL);
}

uint64_t
pg_announced(struct store *s)
{
	return s->announced;
}

static struct chan *
chan_find(struct store *s, const char *name, const char *id)
{
	size_t i;

	for (i = 0; i < s->nchans; i++)
		if ((name && strcmp(s->chans[i].name, name) == 0) ||
		    (id && strcmp(s->chans[i].id, id) == 0))
			return &s->chans[i];
	return NULL;
}

/* Stop listening to c and drop it from the table: 1, or the errno. */
static int
chan_drop(struct store *s, struct chan *c)
{
	char id[64];
	int rc;

	snprintf(id, sizeof(id), "%s", c->id);
	*c = s->chans[--s->nchans];
	/* a lost session took its LISTENs with it; none yet, none made */
	if (!s->lc || s->lc_broken || PQstatus(s->lc) != CONNECTION_OK)
		return 1;
	rc = listen_cmd(s, "UNLISTEN", id);
	return rc < 0 && !s->lc_broken ? rc : 1;
}

static int
pg_watch(struct store *s, int64_t qid, const char *queue, bool on)
{
	struct chan *c = chan_find(s, queue, NULL);
	bool replaced;
	int rc;

	if (!on)
		return c ? chan_drop(s, c) : 0;
	if (c && c->queue_id == qid)
		return 0;
	/* a queue made again under its name is another channel */
	if (c && (rc = chan_drop(s, c)) < 0)
		return rc;
	replaced = c != NULL;
	if ((rc = lc_ready(s)) != 0)
		return rc;
	if (s->nchans == s->capchans) {
		size_t cap = s->capchans ? s->capchans * 2 : 8;
		struct chan *v = realloc(s->chans, cap * sizeof(*v));

		if (!v)
			return -ENOMEM;
		s->chans = v;
		s->capchans = cap;
	}
	c = &s->chans[s->nchans];
	c->queue_id = qid;
	snprintf(c->name, sizeof(c->name), "%s", queue);
	chan_name(s, qid, c->id, sizeof(c->id));
	if ((rc = listen_cmd(s, "LISTEN", c->id)) != 0)
		return rc;
	s->nchans++;
	return replaced ? 2 : 1;
}

static int
pg_event_fd(struct store *s)
{
	int rc, fd;

	if ((rc = lc_ready(s)) != 0)
		return rc;
	fd = PQsocket(s->lc);
	if (fd < 0) {
		snprintf(s->err, sizeof(s->err), "no connection");
		s->lc_broken = true;
		return -EIO;
	}
	return fd;
}

/*
 * Our own commits' announcements are skipped: the engine saw them.  They
 * come from the calls' connection, whichever session it is now (one
 * before a reconnect is not skipped: one wake-up too many).
 */
static int
pg_events(struct store *s, queen_event_cb cb, void *arg)
{
	PGnotify *n;
	struct chan *c;
	int rc = 0, self = PQbackendPID(s->c);

	if (!s->lc || s->lc_broken)
		return 0;
	/* a new listening session: every queue watched may have changed
	 * unheard, as after a seek (the whole queue, partition 0) */
	for (size_t i = 0; s->lc_fresh && rc == 0 && i < s->nchans; i++)
		rc = cb(arg, s->chans[i].name, 0);
	if (rc != 0)
		return rc;
	s->lc_fresh = false;
	if (!PQconsumeInput(s->lc) || PQstatus(s->lc) != CONNECTION_OK)
		return lc_fail(s, NULL);
	while (rc == 0 && (n = PQnotifies(s->lc)) != NULL) {
		if (n->be_pid != self && (c = chan_find(s, NULL, n->relname)))
			rc = cb(arg, c->name, strtoll(n->extra, NULL, 10));
		PQfreemem(n);
	}
	return rc;
}

/* what another handle committed must not be answered from older rows */
static void
pg_forget_reads(struct store *s)
{
	s->ahead.valid = false;
	pg_ready_drop(s);
}

static uint64_t
pg_round_trips(struct store *s)
{
	return atomic_load(&s->round_trips) + atomic_load(&s->sync_trips);
}

static void
pg_set_brief(struct store *s, bool brief)
{
	s->brief = brief;
}

static void
pg_claims(struct store *s, uint64_t *claims, uint64_t *lost)
{
	*claims = s->claims;
	*lost = s->claims_lost;
}

static void
pg_set_redo(struct store *s, bool redo)
{
	s->redo_next = redo;
}

/*
 * Inside a transaction begun not durable: make its commit durable after
 * all (pg_read_durable said no).  At sync off nothing is.
 */
static int
pg_set_durable(struct store *s, bool durable)
{
	int rc = 0;

	if (s->in_tx && durable && !s->durable && s->sync != QUEEN_SYNC_OFF)
		rc = pipe_defer(s, ST__N, "SET LOCAL synchronous_commit = on",
		    NULL);
	s->durable = durable;
	return rc;
}

/*
 * A lease may commit without waiting for the disk if every message it
 * hands out is on the disk already, whoever pushed it: its row's xid is
 * older than the oldest xid still running when the last flush (pg_sync)
 * began its statement.  Such a transaction had ended before that flush's
 * commit record was written, and a flush covers every record before its
 * own; the messages read carry their xid (SCAN_XIDS).  Until a flush
 * has vouched for anything, nothing is known durable.
 */
static void
flushed_upto(struct store *s, int64_t xmin)
{
	int64_t was = atomic_load(&s->flushed_xmin);

	while (xmin > was &&
	    !atomic_compare_exchange_weak(&s->flushed_xmin, &was, xmin))
		;
}

static bool
pg_read_durable(struct store *s)
{
	return s->read_xid == 0 || s->read_xid < atomic_load(&s->flushed_xmin);
}

/*
 * Make every commit so far durable, on the syncer thread's own connection
 * while the engine's runs the next batch: a transaction that writes WAL
 * and commits with synchronous_commit on waits for the WAL flush (and the
 * synchronous standbys) up to its commit record, which lies after every
 * commit made before it began.
 */
#define SYNC_SQL \
	"INSERT INTO queen_flush VALUES (pg_backend_pid(), 1) " \
	"ON CONFLICT (pid) DO UPDATE SET flushes = queen_flush.flushes + 1 " \
	"RETURNING pg_snapshot_xmin(pg_current_snapshot())::text::bigint"
/*
 * The row it writes is the session's own (schema version 6): a row that
 * every daemon's flush updated, queen_meta's, made each flush wait for the
 * other daemons' to commit, their WAL flushes one after another instead of
 * one for all.  Written by an upsert, so that a row deleted meanwhile (by
 * hand, or as a dead session's) is made again rather than updated as no
 * row, which would write no WAL and flush nothing.  The rows of sessions
 * gone are dropped as a session starts.
 */
#define SYNC_SETUP \
	"SET synchronous_commit = on; " LOCK_TIMEOUT "; " \
	"DELETE FROM queen_flush WHERE pid <> pg_backend_pid() " \
	"AND pid NOT IN (SELECT pid FROM pg_stat_activity " \
	"WHERE pid IS NOT NULL)"

static int
pg_sync(struct store *s)
{
	PGresult *r;
	int rc = 0;

	if (!s->syncc) {
		if (!(s->syncc = connect_db(s->conninfo)))
			return -ENOMEM;
		s->sync_set = false;
	} else if (PQstatus(s->syncc) != CONNECTION_OK) {
		/*
		 * A session made again may be on another server (the new
		 * primary of a failover), whose flush says nothing of the
		 * commits made on the old one at synchronous_commit off: it
		 * vouches for none of them, only for what comes after.
		 */
		PQreset(s->syncc);
		s->sync_set = false;
		atomic_store(&s->flushed_xmin, 0);
		return -ENOTCONN;
	}
	/* no connection (a failover): the commits it was to cover are not
	 * known durable, but the next flush, on a new one, covers the rest */
	if (PQstatus(s->syncc) != CONNECTION_OK)
		return -ENOTCONN;
	/*
	 * The commit must write WAL of its own: one that only took an xid
	 * (txid_current()) writes nothing before its commit record, and
	 * PostgreSQL commits it without a flush or a wait for the standby.
	 * A row's update does both: the session's row of queen_flush.
	 */
	/* committed (and flushed) before the answer, which names the
	 * oldest xid running when it began: it covers the commits of that
	 * one's elders.  The session's setting, and the statement prepared
	 * (not planned again each time), go first in a new session. */
	if (!s->sync_set) {
		bool ok;

		r = PQexec(s->syncc, SYNC_SETUP);
		ok = PQresultStatus(r) == PGRES_COMMAND_OK;
		PQclear(r);
		if (ok) {
			r = PQprepare(s->syncc, "queen_sync", SYNC_SQL, 0,
			    NULL);
			ok = PQresultStatus(r) == PGRES_COMMAND_OK;
			PQclear(r);
		}
		atomic_fetch_add(&s->sync_trips, 2);
		if (!ok)
			return -ENOTCONN;
		s->sync_set = true;
	}
	r = PQexecPrepared(s->syncc, "queen_sync", 0, NULL, NULL, NULL, 0);
	atomic_fetch_add(&s->sync_trips, 1);
	/* the server keeps its own WAL safe (a failed flush there is a
	 * PANIC and a restart): a failure here is never lost pages of ours */
	if (PQresultStatus(r) != PGRES_TUPLES_OK || PQntuples(r) != 1) {
		rc = -ENOTCONN;
	} else {
		/* answered in text, not in the binary of col_int */
		flushed_upto(s, strtoll(PQgetvalue(r, 0, 0), NULL, 10));
	}
	PQclear(r);
	return rc;
}

static const struct store_ops pg_ops = {
	.close = pg_close,
	.errmsg = pg_errmsg,
	.err_clear = pg_err_clear,
	.io_failed = pg_io_failed,
	.begin = pg_begin,
	.commit = pg_commit,
	.rollback = pg_rollback,
	.begin_batch = pg_begin_batch,
	.savepoint = pg_savepoint,
	.release = pg_release,
	.rollback_to = pg_rollback_to,
	.queue_get = pg_queue_get,
	.queue_by_id = pg_queue_by_id,
	.queue_insert = pg_queue_insert,
	.queue_update = pg_queue_update,
	.queue_delete = pg_queue_delete,
	.queue_list = pg_queue_list,
	.queue_usage = pg_queue_usage,
	.part_get = pg_part_get,
	.part_by_id = pg_part_by_id,
	.part_by_uuid = pg_part_by_uuid,
	.part_insert = pg_part_insert,
	.part_update = pg_part_update,
	.part_list = pg_part_list,
	.part_maint = pg_part_maint,
	.cursor_repair = pg_cursor_repair,
	.group_get = pg_group_get,
	.group_by_id = pg_group_by_id,
	.group_insert = pg_group_insert,
	.group_update = pg_group_update,
	.group_delete = pg_group_delete,
	.group_list = pg_group_list,
	.cursor_get = pg_cursor_get,
	.cursor_put = pg_cursor_put,
	.cursor_by_lease = pg_cursor_by_lease,
	.cursor_ready = pg_cursor_ready,
	.cursor_list_group = pg_cursor_list_group,
	.cursor_list_part = pg_cursor_list_part,
	.wake_announce = pg_wake_announce,
	.announced = pg_announced,
	.cursor_delete_group = pg_cursor_delete_group,
	.cursor_min_committed = pg_cursor_min_committed,
	.msg_append = pg_msg_append,
	.msg_scan = pg_msg_scan,
	.msg_time = pg_msg_time,
	.msg_next = pg_msg_next,
	.msg_count = pg_msg_count,
	.msg_purge = pg_msg_purge,
	.txn_find = pg_txn_find,
	.txn_prefetch = pg_txn_prefetch,
	.txn_find_many = pg_txn_find_many,
	.txn_newest_many = pg_txn_newest_many,
	.push_ahead = pg_push_ahead,
	.pop_ahead = pg_pop_ahead,
	.ack_ahead = pg_ack_ahead,
	.lease_ahead = pg_lease_ahead,
	.lock_defer = pg_lock_defer,
	.find_ahead = pg_find_ahead,
	.txn_time = pg_txn_time,
	.txn_purge = pg_txn_purge,
	.dlq_insert = pg_dlq_insert,
	.dlq_list = pg_dlq_list,
	.dlq_delete = pg_dlq_delete,
	.dlq_count = pg_dlq_count,
	.kv_get = pg_kv_get,
	.kv_put = pg_kv_put,
	.kv_delete = pg_kv_delete,
	.kv_set_expiry = pg_kv_set_expiry,
	.kv_list = pg_kv_list,
	.kv_purge = pg_kv_purge,
	.ns_get = pg_ns_get,
	.ns_put = pg_ns_put,
	.ns_delete = pg_ns_delete,
	.ns_list = pg_ns_list,
	.timer_put = pg_timer_put,
	.timer_delete = pg_timer_delete,
	.timer_get = pg_timer_get,
	.timer_list = pg_timer_list,
	.timer_due = pg_timer_due,
	.notify = pg_notify,
	.watch = pg_watch,
	.event_fd = pg_event_fd,
	.events = pg_events,
	.round_trips = pg_round_trips,
	.forget_reads = pg_forget_reads,
	.set_durable = pg_set_durable,
	.set_brief = pg_set_brief,
	.set_redo = pg_set_redo,
	.claims = pg_claims,
	.part_claim = pg_part_claim,
	.read_durable = pg_read_durable,
	.sync = pg_sync,
	.shared = true,
};


int
pg_open(const struct queen_options *opt, struct store **out,
    const struct store_ops **ops, char *err, size_t errlen)
{
	struct store *s;
	int rc;

	*out = NULL;
	if ((unsigned)opt->sync > QUEEN_SYNC_OFF)
		return -EINVAL;
	s = calloc(1, sizeof(*s));
	if (!s)
		return -ENOMEM;
	s->ro = opt->read_only;
	s->sync = opt->sync;
	s->durable = true;
	s->conninfo = strdup(opt->path);
	s->c = connect_db(opt->path);
	if (!s->c || !s->conninfo) {
		rc = -ENOMEM;
		goto out_close;
	}
	if (PQstatus(s->c) != CONNECTION_OK) {
		rc = fail(s, NULL);
		if (strstr(s->err, "password") || strstr(s->err, "permission"))
			rc = -EACCES;
		snprintf(err, errlen, "%s", s->err);
		goto out_close;
	}
	/* before the pipeline: the migration and the schema's oid are
	 * plain statements */
	if (!s->ro && (rc = pg_schema_migrate(s->c, err, errlen)) != 0)
		goto out_close;
	if ((rc = schema_oid(s)) != 0 || (rc = session(s)) != 0) {
		snprintf(err, errlen, "%s", s->err);
		goto out_close;
	}
	*out = s;
	*ops = &pg_ops;
	return 0;

out_close:
	pg_close(s);
	return rc;
}
