/*
 * pg_store.h - private to the PostgreSQL backend's db_pg.c and pg_*.c
 * files: the store's handle, the statement ids (their texts are
 * db_pg.c's table), statement parameters, and the functions one of
 * those files defines for another.
 */
#ifndef PG_STORE_H
#define PG_STORE_H

#include <stdatomic.h>

#include "pg.h"

#define PB(pid) ((int64_t)(pid) << OFFSET_BITS)
/*
 * Checklist for a new statement: add its enum, its name and text (with
 * the parameter order beside it), and run it with exec().  A statement
 * with a row-locking twin is followed directly by it (ST_X, ST_X_LK):
 * locked() picks the twin inside a read-write transaction.
 */
/* a line per noun, not one per statement */
/* clang-format off */
enum stmt {
	ST_QUEUE_GET, ST_QUEUE_BY_ID, ST_QUEUE_INSERT, ST_QUEUE_UPDATE,
	ST_QUEUE_DELETE, ST_QUEUE_LIST, ST_QUEUE_MSGS, ST_QUEUE_GROUPS,
	ST_QUEUE_TIMERS,
	ST_PART_GET, ST_PART_GET_LK, ST_PART_BY_ID, ST_PART_BY_UUID,
	ST_PART_INSERT, ST_PART_UPDATE, ST_PART_LIST, ST_PART_LIST_LK,
	ST_PART_MAINT,
	ST_GROUP_GET, ST_GROUP_BY_ID, ST_GROUP_INSERT, ST_GROUP_UPDATE,
	ST_GROUP_DELETE, ST_GROUP_LIST,
	ST_CUR_GET, ST_CUR_GET_LK, ST_CUR_PUT, ST_CUR_PUT_NEW,
	ST_CUR_BY_LEASE, ST_CUR_BY_LEASE_LK, ST_CUR_READY, ST_CUR_READY_LK,
	ST_CUR_LIST_GROUP, ST_CUR_LIST_GROUP_LK, ST_CUR_LIST_PART,
	ST_CUR_LIST_PART_LK, ST_CUR_WAKE, ST_CUR_DEL_GROUP, ST_CUR_MIN,
	ST_CUR_LEASE_ROWS, ST_LEASE_AHEAD, ST_LEASE_AHEAD_LK, ST_LEASE_FIRST,
	ST_CUR_REPAIR, ST_PUSH_AHEAD,
	ST_PUSH_AHEAD_LK, ST_PUSH_AHEAD_MANY, ST_PUSH_AHEAD_MANY_OPT, ST_PART_CLAIM,
	ST_POP_AHEAD, ST_POP_READY, ST_ACK_AHEAD, ST_FIND_AHEAD,
	ST_MSG_APPEND, ST_MSG_APPEND_MANY, ST_TXN_APPEND, ST_MSG_SCAN, ST_MSG_SCAN_META,
	ST_MSG_TIME, ST_MSG_NEXT, ST_MSG_COUNT, ST_MSG_PURGE,
	ST_MSG_DELETE_PART,
	ST_TXN_FIND_LO, ST_TXN_FIND_HI, ST_TXN_FIND_MANY, ST_TXN_NEWEST_MANY,
	ST_TXN_PREFETCH, ST_TXN_TIME,
	ST_TXN_PURGE, ST_TXN_DELETE_PART,
	ST_DLQ_INSERT, ST_DLQ_LIST, ST_DLQ_LIST_META, ST_DLQ_GET, ST_DLQ_GET_META,
	ST_DLQ_COUNT, ST_DLQ_DELETE,
	ST_KV_GET, ST_KV_GET_LK, ST_KV_LOCK, ST_KV_PUT, ST_KV_DELETE, ST_KV_EXPIRY, ST_KV_LIST,
	ST_KV_PURGE,
	ST_NS_GET, ST_NS_PUT, ST_NS_DELETE, ST_NS_LIST,
	ST_TIMER_PUT, ST_TIMER_DELETE, ST_TIMER_GET, ST_TIMER_LIST,
	ST_TIMER_DUE,
	ST_NOTIFY,
	ST__N
};
/* clang-format on */

/* the row-locking twin of a statement that has one: the next enumerator */
#define LOCKED_TWIN(id) ((enum stmt)((id) + 1))
_Static_assert(ST_CUR_BY_LEASE_LK == LOCKED_TWIN(ST_CUR_BY_LEASE), "twin");
_Static_assert(ST_CUR_GET_LK == LOCKED_TWIN(ST_CUR_GET), "twin");
_Static_assert(ST_CUR_LIST_GROUP_LK == LOCKED_TWIN(ST_CUR_LIST_GROUP), "twin");
_Static_assert(ST_CUR_LIST_PART_LK == LOCKED_TWIN(ST_CUR_LIST_PART), "twin");
_Static_assert(ST_CUR_READY_LK == LOCKED_TWIN(ST_CUR_READY), "twin");
_Static_assert(ST_PART_GET_LK == LOCKED_TWIN(ST_PART_GET), "twin");
_Static_assert(ST_PART_LIST_LK == LOCKED_TWIN(ST_PART_LIST), "twin");
_Static_assert(ST_PUSH_AHEAD_LK == LOCKED_TWIN(ST_PUSH_AHEAD), "twin");
_Static_assert(ST_LEASE_AHEAD_LK == LOCKED_TWIN(ST_LEASE_AHEAD), "twin");
_Static_assert(ST_KV_GET_LK == LOCKED_TWIN(ST_KV_GET), "twin");
/*
 * Rows read ahead (s->ahead) answer the lookups that follow until a
 * statement that can change a row goes out; outside a transaction only
 * for this long after the read, so that a later call, which no
 * statement may separate from the read, still sees the store as it is.
 */
#define AHEAD_NS 1000000
/*
 * libpq's buffers grow to the largest message its connection carried
 * and never shrink: a connection that sent or read one larger than this
 * is replaced at its next idle moment.  Above the largest statement of
 * buffered appends (AB_BYTES and one AB_ONE_MAX row), so that batches
 * alone never cause it.
 */
#define PG_BUF_KEEP (8 << 20)
/* a message read larger than this is not kept for the next read */
#define AHEAD_MSG_MAX (1 << 20)
/* a lookup by name reads a message along only up to this size: a stat
 * of a large one reads no payload */
#define FIND_MSG_MAX (64 << 10)
/* the lookup of a lease's directory reads its first message along only
 * up to this size (for the lookup of its name that follows) */
#define FIRST_MSG_MAX (8 << 10)
/* txn_find_many's rows past this many are freed once the next read goes */
#define LW_KEEP 4096
struct lowest {
	struct hash128 h;
	int64_t off, at;
};
/* a statement sent whose answer is not read yet (pg_pipe.c) */
struct pend {
	enum stmt id;     /* ST__N: the text */
	bool prepare;     /* its Parse, not its run */
	const char *text; /* a literal */
};
/* the most hashes one prefetch asks about */
#define PG_PREFETCH_MAX 4096
/* past this many, a Sync goes out before the next statement */
#define PEND_MAX 1024
/* buffered appends go out at the next statement, or at this many */
#define AB_COLS 6
#define AB_ROWS 1000
#define AB_BYTES (4 << 20)
#define AB_KEEP (256 << 10) /* a buffer larger is freed once sent */
/* a payload (with its traceId) larger than this goes out on its own,
 * not buffered: the buffer and its array would be two more copies of
 * it, the buffer kept */
#define AB_ONE_MAX (64 << 10)
_Static_assert(AB_BYTES + 2 * AB_ONE_MAX < PG_BUF_KEEP, "batches fit");

/* partitions one transaction claims (part_claim) and remembers; past
 * these, a lost claim's others are not read locked after (their next
 * batches may lose again: time, not correctness) */
#define CLAIM_MAX 16
/* partitions whose claim failed, read locked for BUSY_NS after */
#define BUSY_MAX 32
#define BUSY_NS (1000 * 1000000LL)

struct chan {
	int64_t queue_id;
	char name[QUEEN_NAME_MAX + 1];
	char id[64]; /* within NAMEDATALEN */
};
struct store {
	PGconn *c;
	bool prepared[ST__N];
	enum queen_sync sync;
	bool ro;
	bool in_tx;
	bool batch;             /* in_tx holds a batch: see locked() */
	int sp;                 /* savepoints open */
	bool nolock;            /* lock_defer: reads take no row lock */
	bool broken;            /* the connection failed: reset before use */
	/* it carried a message over PG_BUF_KEEP: replaced when idle (see
	 * pg_recycle); not before this CLOCK_MONOTONIC time after a try
	 * that failed */
	bool bloated;
	int64_t recycle_ns;
	bool pinned; /* c was made for the server of the one it replaced */
	/* announcements: queue q of this schema is channel
	 * queen_<nsp>_<q>, LISTENed on lc while in chans (see pg_watch) */
	int64_t nsp;
	PGconn *lc;
	bool lc_broken; /* make a new session before the next use */
	bool lc_fresh;  /* one was made again: say so at the next events */
	struct chan *chans;
	size_t nchans, capchans;
	bool corrupt;           /* the last failure was corruption */
	/* a group another process created while we tried to (see
	 * cursor_put), and the partitions whose cursor of it we have seen */
	int64_t adopted;
	int64_t *seen;
	size_t nseen, capseen;
	_Atomic uint64_t round_trips; /* waits for the server since open */
	uint64_t announced;           /* NOTIFYs that cur_wake sent */
	/* the newest xid of a message read in this transaction (0: none),
	 * and the xid below which a flush vouched for every commit: see
	 * pg_read_durable */
	int64_t read_xid;
	_Atomic int64_t flushed_xmin;
	/* sent, not answered: writes whose answer the engine needs not
	 * wait for; a failure among them poisons the transaction (it can
	 * only roll back) */
	struct pend pend[PEND_MAX];
	int npend;
	bool poisoned;
	int poison_rc; /* its errno: EBUSY (a deadlock) may be retried */
	/* txn_prefetch's answer for one partition until the call ends:
	 * the hashes found, and those appended since (pid 0: none) */
	struct {
		int64_t pid, lo;
		struct hash128 *set; /* open addressing; all-zero: empty */
		size_t cap, n;
		/* read along with the partition (pg_prefetch_ahead): the
		 * digest of the hashes asked, for the txn_prefetch of them
		 * that follows (0: none) */
		uint64_t asked;
	} pf;
	/* rows read along with a lease or ahead of a push (pg_rows.c),
	 * which the lookups that follow may take from here until the next
	 * statement that can change a row is sent */
	struct {
		bool valid;
		int64_t read_ns; /* CLOCK_MONOTONIC, outside a transaction */
		bool hq, hp, hg, hc; /* which of the rows it holds */
		bool plock;          /* p was read FOR UPDATE */
		bool clock;          /* c was */
		struct part_row p;
		struct queue_row q;
		struct group_row g;
		struct cursor_row c;
		/* the newest hash row h in p's dedup window [lo, hi]: off 0
		 * if none (valid only if the window was read whole) */
		bool hdup;
		struct hash128 h;
		int64_t lo, hi, off, at;
		/* the last txn_find asked and its answer */
		struct {
			bool on, highest, has_at;
			struct hash128 h;
			int64_t pid, lo, hi, off, at;
			int rc;
		} tf;
		/* the message after the one the last lowest txn_find
		 * found (off 0: none) */
		struct {
			bool on;
			int64_t pid, after, off, at;
		} mn;
		/* the lowest rows of many hashes in pid's [lo, hi], by
		 * hash (txn_find_many): those not here are not there */
		struct {
			bool on;
			int64_t pid, lo, hi;
			struct lowest *v;
			size_t n, cap;
		} lw;
		/* a pop's first ready cursor, read with its queue and
		 * group (pop_ahead): cursor_ready(gid, upto, -1, 0, now)'s
		 * first row, or none (r NULL) */
		struct {
			bool on;
			int64_t gid, upto, now;
			PGresult *r;
		} rd;
		/* the last msg_scan of one message (its result kept) */
		struct {
			bool on, payload;
			int64_t pid, from;
			PGresult *r;
			int row, k; /* its row, its columns from k */
			bool lent;  /* r is its reader's to free */
		} ms;
	} ahead;
	/* appends of this transaction not sent yet, as the elements of
	 * the binary arrays of ST_MSG_APPEND_MANY (pg_log.c): key, time,
	 * txid, trace, payload, hash */
	struct {
		unsigned char *b[AB_COLS];
		size_t len[AB_COLS], cap[AB_COLS];
		bool nulls[AB_COLS];
		int n;
	} ab;
	bool brief; /* the next transaction's lock waits are short */
	/* QUEEN_BATCH_REDO: the next transaction's, then this one's (see
	 * pg_part_claim) */
	bool redo_next, redo;
	/* the partition a push read without a lock in this transaction, as
	 * read, until part_claim sends its check (id 0: none) */
	struct part_row opt;
	uint64_t opt_key; /* its digest (see claimed) */
	/* the partitions claimed in this transaction, by a digest of
	 * their queue and name, and those whose claim failed lately: read
	 * locked until .until (CLOCK_MONOTONIC ns) */
	uint64_t claimed[CLAIM_MAX];
	int nclaimed;
	struct {
		uint64_t key;
		int64_t until;
	} busy[BUSY_MAX];
	uint64_t claims, claims_lost;
	bool durable; /* false: the next transactions commit
				 * without waiting for the WAL flush */
	/* the syncer thread's: a connection of its own (see pg_sync) */
	char *conninfo;
	PGconn *syncc;
	bool sync_set; /* syncc's session is synchronous_commit on */
	_Atomic uint64_t sync_trips;
	char err[512]; /* one line: see set_err */
};
#define MAXP 24

/* Parameters: integers as text, strings as text, bytes as binary. */
struct args {
	int n;
	const char *v[MAXP];
	int len[MAXP];
	int fmt[MAXP];
	char num[MAXP][24];
};

/* db_pg.c */
int pg_fail(struct store *s, const PGresult *r);
void pg_broken(struct store *s);
void pg_recycle(struct store *s);
const char *pg_stmt_name(enum stmt id);
const char *pg_stmt_sql(enum stmt id);
bool pg_stmt_reads(enum stmt id);
/* pg_pipe.c: send and wait for this and all sent before it (a text when
 * id is ST__N); send only, inside a transaction */
int pipe_start(struct store *s);
PGresult *pipe_wait(struct store *s, enum stmt id, const char *text,
    const struct args *a, int *rc);
int pipe_defer(struct store *s, enum stmt id, const char *text,
    const struct args *a);
/* pg_rows.c: CLOCK_MONOTONIC in ns */
int64_t pg_mono_ns(void);

void a_int(struct args *a, int64_t v);
void a_text(struct args *a, const char *t);
void a_bytes(struct args *a, const void *data, size_t len);
void a_str(struct args *a, const char *t);
void a_null(struct args *a);
PGresult *exec(struct store *s, enum stmt id, const struct args *a, int *rc);
int pg_run(struct store *s, enum stmt id, const struct args *a, int64_t *changed);
int changed_or_enoent(struct store *s, enum stmt id, const struct args *a);
enum stmt locked(const struct store *s, enum stmt id);
int64_t col_int(const PGresult *r, int row, int col);
const char *col_str(const PGresult *r, int row, int col);
void pg_col_text(const PGresult *r, int row, int col, char *buf, size_t len);
int pg_one_int(struct store *s, enum stmt id, const struct args *a, int64_t *out);
int pg_queue_get(struct store *s, const char *name, struct queue_row *out);
int pg_queue_by_id(struct store *s, int64_t id, struct queue_row *out);
int pg_queue_insert(struct store *s, struct queue_row *q);
int pg_queue_update(struct store *s, const struct queue_row *q);
int pg_queue_delete(struct store *s, int64_t id);
int pg_queue_list(struct store *s, queue_row_cb cb, void *arg);
int pg_queue_usage(struct store *s, int64_t id, int64_t *msgs, int64_t *groups,
    int64_t *timers);
int pg_part_get(struct store *s, int64_t qid, const char *name,
    struct part_row *out);
int pg_part_by_id(struct store *s, int64_t id, struct part_row *out);
int pg_part_by_uuid(struct store *s, const char *uuid, struct part_row *out);
int pg_part_insert(struct store *s, struct part_row *p);
int pg_part_update(struct store *s, const struct part_row *p);
int pg_part_list(struct store *s, int64_t qid, const char *from, part_row_cb cb,
    void *arg);
int pg_cursor_repair(struct store *s, int64_t now, int64_t *woken);
int pg_push_ahead(struct store *s, const char *queue, const char *part,
    const struct hash128 *h, size_t n);
int pg_part_claim(struct store *s, const struct part_row *p);
void pg_claim_lost(struct store *s);
int pg_pop_ahead(struct store *s, const char *queue, const char *group,
    int64_t now, bool ready);
void pg_ready_drop(struct store *s);
int pg_ack_ahead(struct store *s, const char *uuid, const char *group);
void ahead_mark(struct store *s);
void ahead_keep(struct store *s);
bool ahead_ok(struct store *s);
int pg_notify(struct store *s, int64_t qid, int64_t pid);
int pg_part_maint(struct store *s, int64_t now, int limit, part_row_cb cb,
    void *arg);
int pg_group_get(struct store *s, int64_t qid, const char *name,
    struct group_row *out);
int pg_group_by_id(struct store *s, int64_t id, struct group_row *out);
int pg_group_insert(struct store *s, struct group_row *g);
int pg_group_update(struct store *s, const struct group_row *g);
int pg_group_delete(struct store *s, int64_t id);
int pg_group_list(struct store *s, int64_t qid, group_row_cb cb, void *arg);
int pg_cursor_get(struct store *s, int64_t pid, int64_t gid,
    struct cursor_row *out);
int pg_cursor_put(struct store *s, const struct cursor_row *c);
int pg_cursor_by_lease(struct store *s, const char *lease, struct cursor_row *out);
int pg_cursor_ready(struct store *s, int64_t gid, int64_t upto,
    int64_t after_at, int64_t after_pid, int64_t now, cursor_row_cb cb,
    void *arg);
int pg_cursor_list_group(struct store *s, int64_t gid, cursor_row_cb cb,
    void *arg);
int pg_cursor_list_part(struct store *s, int64_t pid, cursor_row_cb cb, void *arg);
int pg_wake_announce(struct store *s, int64_t qid, int64_t pid, int64_t at,
    bool always);
uint64_t pg_announced(struct store *s);
int pg_lease_ahead(struct store *s, const char *lease, const struct hash128 *h);
void pg_lock_defer(struct store *s, bool on);
int pg_find_ahead(struct store *s, const char *queue, const char *part,
    const struct hash128 *h);
int pg_scan_rows(struct store *s, PGresult *r, int row, int k, int64_t pid,
    bool has, bool want, msg_row_cb cb, void *arg);
void pg_keep_msg(struct store *s, PGresult *r, bool lent, int row, int k,
    int64_t pid, int64_t from, bool payload);
void pg_keep_find(struct store *s, int64_t pid, const struct hash128 *h,
    int64_t lo, int64_t hi, bool highest, int rc, int64_t off, bool has_at,
    int64_t at);
int pg_cursor_delete_group(struct store *s, int64_t gid);
int pg_cursor_min_committed(struct store *s, int64_t pid, int64_t *out);
int pg_msg_append(struct store *s, int64_t pid, int64_t off, int64_t at,
    const char *txid, const char *trace, const void *payload, size_t len,
    const struct hash128 *h);
int pg_msg_scan(struct store *s, int64_t pid, int64_t from, size_t max,
    bool payload, msg_row_cb cb, void *arg);
int pg_msg_time(struct store *s, int64_t pid, int64_t off, int64_t *at);
int pg_msg_next(struct store *s, int64_t pid, int64_t after, int64_t *off,
    int64_t *at);
int pg_msg_count(struct store *s, int64_t pid, int64_t above, int64_t *out);
int pg_msg_purge(struct store *s, int64_t pid, int64_t upto, int64_t limit,
    int64_t *deleted);
int pg_txn_find(struct store *s, int64_t pid, const struct hash128 *h,
    int64_t lo, int64_t hi, bool highest, int64_t *off, int64_t *at);
int pg_txn_prefetch(struct store *s, int64_t pid, const struct hash128 *h,
    size_t n, int64_t lo);
int pg_txn_find_many(struct store *s, int64_t pid, const struct hash128 *h,
    size_t n, int64_t lo, int64_t hi);
int pg_txn_newest_many(struct store *s, int64_t pid, const struct hash128 *h,
    size_t n, int64_t lo, int64_t hi, int64_t *off);
void pg_prefetch_end(struct store *s);
unsigned char *pg_hash_array(const struct hash128 *h, size_t n, size_t *len);
int pg_prefetch_ahead(struct store *s, int64_t pid, int64_t lo,
    const struct hash128 *h, size_t n, const unsigned char *found, size_t len);
int pg_append_flush(struct store *s);
void pg_append_drop(struct store *s);
int pg_txn_time(struct store *s, int64_t pid, int64_t off, int64_t *at);
int pg_txn_purge(struct store *s, int64_t pid, int64_t upto, int64_t limit,
    int64_t *deleted);
int pg_dlq_insert(struct store *s, const struct dlq_row *d);
int pg_dlq_list(struct store *s, int64_t qid, const char *group,
    const char *part, const char *txid, bool payload,
    queen_dlq_cb cb, void *arg);
int pg_dlq_count(struct store *s, int64_t qid, const char *group, int64_t *out);
int pg_dlq_delete(struct store *s, int64_t id);
int pg_kv_get(struct store *s, const char *ns, const char *key, int64_t now,
    struct queen_kv_value **out);
int pg_kv_put(struct store *s, const char *ns, const char *key, const void *data,
    size_t len, int64_t expires_at, int64_t now);
int pg_kv_delete(struct store *s, const char *ns, const char *key, int64_t now);
int pg_kv_set_expiry(struct store *s, const char *ns, const char *key,
    int64_t expires_at, int64_t now);
int pg_kv_list(struct store *s, const char *ns, int64_t now, queen_kv_cb cb,
    void *arg);
int pg_kv_purge(struct store *s, int64_t now, int64_t limit, int64_t *deleted);
int pg_ns_get(struct store *s, const char *ns, struct queen_owner *o);
int pg_ns_put(struct store *s, const char *ns, const struct queen_owner *o,
    int64_t now);
int pg_ns_delete(struct store *s, const char *ns);
int pg_ns_list(struct store *s, int64_t now, queen_name_cb cb, void *arg);
int pg_timer_put(struct store *s, int64_t qid, const char *key, const char *part,
    int64_t due_at, const void *payload, size_t len, int64_t now);
int pg_timer_delete(struct store *s, int64_t qid, const char *key);
int pg_timer_get(struct store *s, int64_t qid, const char *key, bool payload,
    struct queen_timer_info **out);
int pg_timer_list(struct store *s, int64_t qid, queen_timer_cb cb, void *arg);
int pg_timer_due(struct store *s, int64_t now, int64_t *qid,
    struct queen_timer_info **out);

#endif
