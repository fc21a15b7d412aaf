/*
 * store.h - private to the SQLite backend's db*.c files: the store's
 * handle, the statement ids (their texts are db.c's table), and the
 * functions one of those files defines for another.  schema.c, vfs.c,
 * ckpt.c, young.c, hfilter.c and rcache.c need only db.h.
 */
#ifndef STORE_H
#define STORE_H

#include <sys/types.h>

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
	ST_DLQ_INSERT, ST_DLQ_LIST, ST_DLQ_LIST_META, ST_DLQ_GET, ST_DLQ_GET_META,
	ST_DLQ_COUNT, ST_DLQ_DELETE,
	ST_KV_GET, ST_KV_PUT, ST_KV_DELETE, ST_KV_EXPIRY, ST_KV_LIST, ST_KV_PURGE,
	ST_NS_GET, ST_NS_PUT, ST_NS_DELETE, ST_NS_LIST,
	ST_TIMER_PUT, ST_TIMER_DELETE, ST_TIMER_GET, ST_TIMER_LIST, ST_TIMER_DUE,
	ST__N
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
	bool full;              /* a write met a full disk: s_reclaim */
	uint64_t cuts, cuts_told; /* s_reclaim's cuts; the tick's */
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
#define STMT(s, id, st) do { \
	(st) = stmt((s), (id)); \
	if (!(st)) \
		return db_errno((s)->last_rc); \
} while (0)
#define BUSY_MS 5000            /* the store's connection's busy timeout */
#define CACHE_KIB 4096          /* the page cache, less the filter's size */
#define CACHE_KIB_S "4096"
#define FILTER_MAX 1677721      /* h a filter is sized for at most: 2 MiB */
#define FILTER_MIN 65536        /* ... and at least (80 KiB) */
#define FILTER_SLICE 1024       /* the fewest rows a build scans at once */
#define FILTER_DEBT 8           /* rows a build may scan per push */
#define FOLD_MAX 32768          /* young hashes that start a fold */
#define FOLD_MIN 512            /* the fewest folded in one transaction */

extern const char *const sync_sql[];

int fail(struct store *s, int rc);
sqlite3_stmt *stmt(struct store *s, enum stmt id);
int run(struct store *s, sqlite3_stmt *st);
int row(struct store *s, sqlite3_stmt *st);
void col_text(sqlite3_stmt *st, int i, char *buf, size_t len);
int one_int(struct store *s, sqlite3_stmt *st, int64_t *out);
int ckpt_check(struct store *s);
int s_queue_get(struct store *s, const char *name, struct queue_row *out);
int s_queue_by_id(struct store *s, int64_t id, struct queue_row *out);
int s_queue_insert(struct store *s, struct queue_row *r);
int s_queue_update(struct store *s, const struct queue_row *r);
int s_queue_delete(struct store *s, int64_t id);
int s_queue_list(struct store *s, queue_row_cb cb, void *arg);
int s_queue_usage(struct store *s, int64_t id, int64_t *msgs, int64_t *groups,
    int64_t *timers);
int s_part_get(struct store *s, int64_t qid, const char *name,
    struct part_row *out);
int s_part_by_id(struct store *s, int64_t id, struct part_row *out);
int s_part_by_uuid(struct store *s, const char *uuid, struct part_row *out);
int s_part_insert(struct store *s, struct part_row *p);
int s_part_update(struct store *s, const struct part_row *p);
int s_part_list(struct store *s, int64_t qid, const char *from, part_row_cb cb,
    void *arg);
int s_group_get(struct store *s, int64_t qid, const char *name,
    struct group_row *out);
int s_group_by_id(struct store *s, int64_t id, struct group_row *out);
int s_group_insert(struct store *s, struct group_row *g);
int s_group_update(struct store *s, const struct group_row *g);
int s_group_delete(struct store *s, int64_t id);
int s_group_list(struct store *s, int64_t qid, group_row_cb cb, void *arg);
int s_cursor_get(struct store *s, int64_t pid, int64_t gid,
    struct cursor_row *out);
int s_cursor_put(struct store *s, const struct cursor_row *c);
int s_cursor_by_lease(struct store *s, const char *lease, struct cursor_row *out);
int s_cursor_ready(struct store *s, int64_t gid, int64_t upto, int64_t after_at,
    int64_t after_pid, int64_t now, cursor_row_cb cb, void *arg);
int s_cursor_list_group(struct store *s, int64_t gid, cursor_row_cb cb,
    void *arg);
int s_cursor_list_part(struct store *s, int64_t pid, cursor_row_cb cb, void *arg);
int s_cursor_wake(struct store *s, int64_t pid, int64_t at);
int s_cursor_delete_group(struct store *s, int64_t gid);
int s_cursor_min_committed(struct store *s, int64_t pid, int64_t *out);
int filter_step(struct store *s, int64_t max);
void filter_check(struct store *s);
int filter_open(struct store *s);
void sql_h64(sqlite3_context *cx, int argc, sqlite3_value **argv);
int s_msg_append(struct store *s, int64_t pid, int64_t off, int64_t at,
    const char *txid, const char *trace, const void *payload, size_t len,
    const struct hash128 *h);
int fold(struct store *s);
int young_load(struct store *s);
int s_msg_scan(struct store *s, int64_t pid, int64_t from, size_t max,
    bool payload, msg_row_cb cb, void *arg);
int s_msg_time(struct store *s, int64_t pid, int64_t off, int64_t *at);
int s_msg_next(struct store *s, int64_t pid, int64_t after, int64_t *off,
    int64_t *at);
int s_msg_count(struct store *s, int64_t pid, int64_t above, int64_t *out);
int s_msg_purge(struct store *s, int64_t pid, int64_t upto, int64_t limit,
    int64_t *deleted);
int s_txn_find(struct store *s, int64_t pid, const struct hash128 *h, int64_t lo,
    int64_t hi, bool highest, int64_t *off, int64_t *at);
int s_txn_time(struct store *s, int64_t pid, int64_t off, int64_t *at);
int s_txn_purge(struct store *s, int64_t pid, int64_t upto, int64_t limit,
    int64_t *deleted);
int s_dlq_insert(struct store *s, const struct dlq_row *d);
int s_dlq_list(struct store *s, int64_t qid, const char *group,
    const char *part, const char *txid, bool payload,
    queen_dlq_cb cb, void *arg);
int s_dlq_count(struct store *s, int64_t qid, const char *group, int64_t *out);
int s_dlq_delete(struct store *s, int64_t id);
int s_kv_get(struct store *s, const char *ns, const char *key, int64_t now,
    struct queen_kv_value **out);
int s_kv_put(struct store *s, const char *ns, const char *key, const void *data,
    size_t len, int64_t expires_at, int64_t now);
int s_kv_delete(struct store *s, const char *ns, const char *key, int64_t now);
int s_kv_set_expiry(struct store *s, const char *ns, const char *key,
    int64_t expires_at, int64_t now);
int s_kv_list(struct store *s, const char *ns, int64_t now, queen_kv_cb cb,
    void *arg);
int s_kv_purge(struct store *s, int64_t now, int64_t limit, int64_t *deleted);
int s_ns_get(struct store *s, const char *ns, struct queen_owner *o);
int s_ns_put(struct store *s, const char *ns, const struct queen_owner *o,
    int64_t now);
int s_ns_delete(struct store *s, const char *ns);
int s_ns_list(struct store *s, int64_t now, queen_name_cb cb, void *arg);
int s_timer_put(struct store *s, int64_t qid, const char *key, const char *part,
    int64_t due_at, const void *payload, size_t len, int64_t now);
int s_timer_delete(struct store *s, int64_t qid, const char *key);
int s_timer_get(struct store *s, int64_t qid, const char *key, bool payload,
    struct queen_timer_info **out);
int s_timer_list(struct store *s, int64_t qid, queen_timer_cb cb, void *arg);
int s_timer_due(struct store *s, int64_t now, int64_t *qid,
    struct queen_timer_info **out);
int s_set_durable(struct store *s, bool durable);
int s_sync(struct store *s);
int s_checkpoint(struct store *s);
void s_reclaim(struct store *s);
void s_hashes(struct store *s, struct queen_hash_stats *out);
void s_checkpoints(struct store *s, uint64_t *beside, uint64_t *in_writer);

#endif
