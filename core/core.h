/*
 * core.h - what the engine's files share: the handle, the internal row
 * types, and the storage seam.  The seam (struct store_ops) is the only way
 * engine logic reaches storage; core/sqlite/ implements it on SQLite,
 * core/pg/ on PostgreSQL (core/nopg/ stands in without libpq).  No SQL
 * above the seam, and no backend header included here.
 */
#ifndef CORE_H
#define CORE_H

#include <errno.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "queen.h"
#include "queen_tune.h"

#define OFFSET_BITS 40
#define MAX_OFFSET ((INT64_C(1) << OFFSET_BITS) - 1)

#define QUEEN_STR_(x) #x
#define QUEEN_STR(x) QUEEN_STR_(x)     /* a number as SQL text */
/*
 * store_ops.cursor_ready hands out at most this many rows a call (the
 * statements' LIMIT); pop.c asks again while a call filled the page.
 */
#define CURSOR_READY_PAGE 64

/* A queue's configuration; each field in its natural unit (s, bytes, 0/1). */
#define QCONF_N 15
struct qconf {
	int64_t lease_time;
	int64_t retry_limit;
	int64_t dlq;
	int64_t batch;
	int64_t wait;
	int64_t delay;
	int64_t window_buffer;
	int64_t dedup_window;
	int64_t retention;
	int64_t completed_retention;
	int64_t max_message_bytes;
	int64_t expiry_charges_retry;
	int64_t auto_ack;
	int64_t timer_delay;
	int64_t hash_retention;
};

struct queue_row {
	int64_t id;
	char name[QUEEN_NAME_MAX + 1];
	int64_t created_at;
	struct queen_owner owner;
	struct qconf conf;
};

/* Group overrides: -1 means "as the queue". */
struct group_row {
	int64_t id;
	int64_t queue_id;
	char name[QUEEN_NAME_MAX + 1];
	int64_t mode;
	int64_t since;
	int64_t created_at;
	int64_t batch;
	int64_t wait;
	int64_t auto_ack;
	struct queen_owner owner;
	bool has_owner;
};

struct part_row {
	int64_t id;
	int64_t queue_id;
	char name[QUEEN_NAME_MAX + 1];
	char uuid[QUEEN_ID_LEN + 1];
	int64_t head;
	int64_t tail;
	int64_t txns_start;
	int64_t last_push_at;
	int64_t duplicates;
	int64_t created_at;
};

struct cursor_row {
	int64_t partition_id;
	int64_t group_id;
	int64_t committed;
	int64_t batch_end;        /* 0: no lease */
	char lease_id[QUEEN_ID_LEN + 1];  /* "": no lease */
	int64_t lease_expires_at;
	int64_t retry_count;
	int64_t next_at;          /* -1: nothing to deliver */
};

struct hash128 {
	unsigned char b[16];
};

struct dlq_row {
	int64_t queue_id;
	int64_t partition_id;
	const char *group;
	int64_t offset;
	const char *txid;
	const void *payload;
	size_t len;
	int64_t created_at;
	int64_t failed_at;
	int64_t retry_count;
	const char *error;
};

/* One message as the store hands it over (pointers valid until the next
 * call on the store). */
struct msg_row {
	int64_t offset;
	int64_t created_at;
	const char *txid;
	const char *trace_id;
	const void *payload;
	size_t len;
};

typedef int (*msg_row_cb)(void *arg, const struct msg_row *m);
typedef int (*part_row_cb)(void *arg, const struct part_row *p);
typedef int (*group_row_cb)(void *arg, const struct group_row *g);
typedef int (*cursor_row_cb)(void *arg, const struct cursor_row *c);
typedef int (*queue_row_cb)(void *arg, const struct queue_row *r);

struct store;

/*
 * The storage seam.  Every function returns 0 or a negative errno (-ENOENT
 * for a missing row), except where noted.  All run inside the transaction
 * the engine opened with begin.
 */
struct store_ops {
	void (*close)(struct store *st);
	const char *(*errmsg)(struct store *st);
	/* the last failure was an I/O error or corruption (not a refusal) */
	bool (*io_failed)(struct store *st);
	/* forget the last failure's message: errmsg is "" until the next */
	void (*err_clear)(struct store *st);

	int (*begin)(struct store *st);
	/* begin a batch: each call in it runs in a savepoint, and what runs
	 * outside them only reads, so it need not lock what it reads (NULL:
	 * begin) */
	int (*begin_batch)(struct store *st);
	int (*commit)(struct store *st);
	void (*rollback)(struct store *st);
	int (*savepoint)(struct store *st);
	int (*release)(struct store *st);
	void (*rollback_to)(struct store *st);

	int (*queue_get)(struct store *st, const char *name,
	    struct queue_row *out);
	int (*queue_by_id)(struct store *st, int64_t id, struct queue_row *out);
	int (*queue_insert)(struct store *st, struct queue_row *r);
	int (*queue_update)(struct store *st, const struct queue_row *r);
	int (*queue_delete)(struct store *st, int64_t id);
	int (*queue_list)(struct store *st, queue_row_cb cb, void *arg);
	/* counts of retained messages, named groups and timers */
	int (*queue_usage)(struct store *st, int64_t id, int64_t *msgs,
	    int64_t *groups, int64_t *timers);

	int (*part_get)(struct store *st, int64_t queue_id, const char *name,
	    struct part_row *out);
	int (*part_by_id)(struct store *st, int64_t id, struct part_row *out);
	int (*part_by_uuid)(struct store *st, const char *uuid,
	    struct part_row *out);
	int (*part_insert)(struct store *st, struct part_row *p);
	int (*part_update)(struct store *st, const struct part_row *p);
	/* in name order, after `after` ("" for all); a nonzero rc from cb
	 * stops the list and is returned */
	int (*part_list)(struct store *st, int64_t queue_id, const char *after,
	    part_row_cb cb, void *arg);
	/* the partitions whose retention, completed retention or hash
	 * purge is due at now, at most limit, in id order, read without
	 * locking them (NULL: maintenance visits every partition) */
	int (*part_maint)(struct store *st, int64_t now, int limit,
	    part_row_cb cb, void *arg);
	/* wake (next_at = now) every caught-up cursor whose partition holds
	 * messages past it, and announce them: a push and an ack that
	 * commit at once on two daemons can each miss the other (NULL: a
	 * store with one writer); how many it woke in *woken */
	int (*cursor_repair)(struct store *st, int64_t now, int64_t *woken);

	int (*group_get)(struct store *st, int64_t queue_id, const char *name,
	    struct group_row *out);
	int (*group_by_id)(struct store *st, int64_t id, struct group_row *out);
	int (*group_insert)(struct store *st, struct group_row *g);
	int (*group_update)(struct store *st, const struct group_row *g);
	int (*group_delete)(struct store *st, int64_t id);
	int (*group_list)(struct store *st, int64_t queue_id, group_row_cb cb,
	    void *arg);

	int (*cursor_get)(struct store *st, int64_t part_id, int64_t group_id,
	    struct cursor_row *out);
	int (*cursor_put)(struct store *st, const struct cursor_row *c);
	int (*cursor_by_lease)(struct store *st, const char *lease_id,
	    struct cursor_row *out);
	/* rows of the group with next_at in [0, upto], ordered by
	 * (next_at, partition_id), or by (a coarser key of next_at that
	 * keeps its order, partition_id), after the row whose next_at and
	 * partition_id are after_at and after_pid (-1, 0: from the first);
	 * rows whose lease is live at now may be left out (no pop can take
	 * them) */
	int (*cursor_ready)(struct store *st, int64_t group_id, int64_t upto,
	    int64_t after_at, int64_t after_pid, int64_t now, cursor_row_cb cb,
	    void *arg);
	int (*cursor_list_group)(struct store *st, int64_t group_id,
	    cursor_row_cb cb, void *arg);
	int (*cursor_list_part)(struct store *st, int64_t part_id,
	    cursor_row_cb cb, void *arg);
	/* set next_at = at where it is -1 (caught-up cursors of a
	 * partition); returns how many it set (>= 0) */
	int (*cursor_wake)(struct store *st, int64_t part_id, int64_t at);
	int (*cursor_delete_group)(struct store *st, int64_t group_id);
	/* min committed over the partition's cursors; tail when none */
	int (*cursor_min_committed)(struct store *st, int64_t part_id,
	    int64_t *out);

	int (*msg_append)(struct store *st, int64_t part_id, int64_t offset,
	    int64_t created_at, const char *txid, const char *trace_id,
	    const void *payload, size_t len, const struct hash128 *h);
	/* messages with offset >= from, ascending, at most max */
	int (*msg_scan)(struct store *st, int64_t part_id, int64_t from,
	    size_t max, bool payload, msg_row_cb cb, void *arg);
	/* created_at of a message; -ENOENT if purged */
	int (*msg_time)(struct store *st, int64_t part_id, int64_t offset,
	    int64_t *created_at);
	/* first retained offset > after, with its time; -ENOENT none */
	int (*msg_next)(struct store *st, int64_t part_id, int64_t after,
	    int64_t *offset, int64_t *created_at);
	int (*msg_count)(struct store *st, int64_t part_id, int64_t above,
	    int64_t *out);
	/* delete retained offsets <= upto, at most limit of them */
	int (*msg_purge)(struct store *st, int64_t part_id, int64_t upto,
	    int64_t limit, int64_t *deleted);

	/* lowest offset in [lo, hi] whose txid hashes to h, or highest if
	 * highest is set; -ENOENT */
	int (*txn_find)(struct store *st, int64_t part_id,
	    const struct hash128 *h, int64_t lo, int64_t hi, bool highest,
	    int64_t *offset, int64_t *created_at);
	int (*txn_time)(struct store *st, int64_t part_id, int64_t offset,
	    int64_t *created_at);
	/* optional: the n hashes that txn_find is about to be asked for,
	 * in part_id from lo up, by this call; the store may read them in
	 * one go and answer those it did not find without asking again,
	 * until the call ends (its savepoint or transaction) */
	int (*txn_prefetch)(struct store *st, int64_t part_id,
	    const struct hash128 *h, size_t n, int64_t lo);
	/* optional: the lowest rows of the n hashes in part_id's [lo, hi]
	 * are about to be asked of txn_find, one by one (an ack of many);
	 * the store may read them at once and answer those asks from it */
	int (*txn_find_many)(struct store *st, int64_t part_id,
	    const struct hash128 *h, size_t n, int64_t lo, int64_t hi);
	/* optional: for each of the n hashes its highest row in part_id's
	 * [lo, hi], into off[i] (0: none), in one go (NULL: core asks
	 * txn_find for each) */
	int (*txn_newest_many)(struct store *st, int64_t part_id,
	    const struct hash128 *h, size_t n, int64_t lo, int64_t hi,
	    int64_t *off);
	/* optional: a push to queue's partition part (dedup hash h[0], or
	 * h NULL) is about to read the queue's row, the partition's (locked
	 * in a transaction) and h[0] in its dedup window, then (n > 1) to
	 * ask txn_prefetch about h[0..n-1]; the store may read them in one
	 * go and answer those reads from it.  A hint: 0 also when
	 * something is missing (the reads then say so) */
	int (*push_ahead)(struct store *st, const char *queue, const char *part,
	    const struct hash128 *h, size_t n);
	/* optional, the same for a call about to read a queue's row and
	 * then its group's (a pop); ready: and then, if the group exists,
	 * cursor_ready(its id, now - the queue's delay, -1, 0, now) */
	int (*pop_ahead)(struct store *st, const char *queue, const char *g,
	    int64_t now, bool ready);
	/* optional, the same for an ack about to read the partition of a
	 * uuid, its queue's row and its group's */
	int (*ack_ahead)(struct store *st, const char *part_uuid,
	    const char *group);
	/* optional, the same for a read of the message whose txid hashes
	 * to h under a lease: the lease's cursor and its rows, h's lowest
	 * row in [committed + 1, batch_end] (from txns_start), and that
	 * message; h NULL: the same for the first row of that span (a
	 * lookup of the lease, ahead of one of its first message) */
	int (*lease_ahead)(struct store *st, const char *lease_id,
	    const struct hash128 *h);
	/* optional: on, the reads of a call that writes take no row lock
	 * (a store that locks rows as it reads them) until it is called
	 * off or the call ends: the engine looks several rows up to lock
	 * them after, in an order of its own, so that two calls never
	 * wait for each other in a ring */
	void (*lock_defer)(struct store *st, bool on);
	/* optional, the same for a lookup of a message by name: the
	 * queue's row, the partition's, h's newest row in [head, tail] and
	 * that message */
	int (*find_ahead)(struct store *st, const char *queue, const char *part,
	    const struct hash128 *h);
	/* delete hash rows with offset <= upto, at most limit of them */
	int (*txn_purge)(struct store *st, int64_t part_id, int64_t upto,
	    int64_t limit, int64_t *deleted);

	int (*dlq_insert)(struct store *st, const struct dlq_row *d);
	/* all of the group's, or (txid not NULL) the one name in part */
	int (*dlq_list)(struct store *st, int64_t queue_id, const char *group,
	    const char *part, const char *txid, bool payload, queen_dlq_cb cb,
	    void *arg);
	int (*dlq_delete)(struct store *st, int64_t id);
	int (*dlq_count)(struct store *st, int64_t queue_id, const char *group,
	    int64_t *out);

	int (*kv_get)(struct store *st, const char *ns, const char *key,
	    int64_t now, struct queen_kv_value **out);
	int (*kv_put)(struct store *st, const char *ns, const char *key,
	    const void *data, size_t len, int64_t expires_at, int64_t now);
	int (*kv_delete)(struct store *st, const char *ns, const char *key,
	    int64_t now);
	int (*kv_set_expiry)(struct store *st, const char *ns, const char *key,
	    int64_t expires_at, int64_t now);
	int (*kv_list)(struct store *st, const char *ns, int64_t now,
	    queen_kv_cb cb, void *arg);
	int (*kv_purge)(struct store *st, int64_t now, int64_t limit,
	    int64_t *deleted);
	int (*ns_get)(struct store *st, const char *ns, struct queen_owner *o);
	int (*ns_put)(struct store *st, const char *ns,
	    const struct queen_owner *o, int64_t now);
	int (*ns_delete)(struct store *st, const char *ns);
	int (*ns_list)(struct store *st, int64_t now, queen_name_cb cb,
	    void *arg);

	int (*timer_put)(struct store *st, int64_t queue_id, const char *key,
	    const char *partition, int64_t due_at, const void *payload,
	    size_t len, int64_t now);
	int (*timer_delete)(struct store *st, int64_t queue_id,
	    const char *key);
	int (*timer_get)(struct store *st, int64_t queue_id, const char *key,
	    bool payload, struct queen_timer_info **out);
	int (*timer_list)(struct store *st, int64_t queue_id, queen_timer_cb cb,
	    void *arg);
	/* the earliest due timer anywhere with its queue; -ENOENT none due */
	int (*timer_due)(struct store *st, int64_t now, int64_t *queue_id,
	    struct queen_timer_info **out);

	/* Wake-ups across handles; NULL where the store has none (SQLite).
	 * notify: announce that partition part_id (0: any) of queue
	 * queue_id may now be leased, delivered at commit to the handles
	 * watching that queue; watch: start (on; queue_id set) or stop
	 * (by name; queue_id may be 0) receiving the queue's
	 * announcements, 1 when this call changed that (2: it went on
	 * from a queue of that name deleted since), else 0; event_fd: the
	 * descriptor to poll for announcements; events: call cb with the
	 * queue of each one received. */
	int (*notify)(struct store *st, int64_t queue_id, int64_t part_id);
	/* optional, in place of cursor_wake and notify after a push: wake
	 * the caught-up cursors of part_id and announce it if some was (or
	 * always), in one write sent with the rest of the transaction; the
	 * store counts the announcements it made (announced) */
	int (*wake_announce)(struct store *st, int64_t queue_id,
	    int64_t part_id, int64_t at, bool always);
	uint64_t (*announced)(struct store *st);
	int (*watch)(struct store *st, int64_t queue_id, const char *queue,
	    bool on);
	int (*event_fd)(struct store *st);
	int (*events)(struct store *st, queen_event_cb cb, void *arg);
	/* durable false: the next transactions need not reach the disk
	 * before commit returns (outside a transaction, or see read_durable;
	 * NULL: ignored) */
	int (*set_durable)(struct store *st, bool durable);
	/* brief: the next transaction waits only briefly for a row another
	 * session holds (NULL: ignored) */
	void (*set_brief)(struct store *st, bool brief);
	/* redo: the caller runs the next transaction again if its commit
	 * fails with -EBUSY (QUEEN_BATCH_REDO; NULL: ignored) */
	void (*set_redo)(struct store *st, bool redo);
	/* optional: a push is about to change p as it was read.  A store
	 * that read it without a lock (set_redo) makes sure, with the
	 * writes, that it is still so, and fails the transaction with
	 * -EBUSY at its commit if it is not; else a no-op */
	int (*part_claim)(struct store *st, const struct part_row *p);
	/* make every commit so far durable; unlike the rest, may run on a
	 * second thread while the store is in use (NULL: commits at the
	 * durable level are durable by themselves).  -ENOTCONN: the
	 * connection is lost; those commits are not known durable, later
	 * syncs may succeed (any other failure stops writes for good) */
	int (*sync)(struct store *st);
	/* copy the log into the database, now or soon (NULL: nothing to
	 * do); 1: it copied all of it and cut the file, to give a full disk
	 * the log's space back.  checkpoints: how many ran beside the
	 * writer and in it */
	int (*checkpoint)(struct store *st);
	/* optional: the hashes in memory (SQLite); out is zeroed */
	void (*hashes)(struct store *st, struct queen_hash_stats *out);
	void (*checkpoints)(struct store *st, uint64_t *beside,
	    uint64_t *in_writer);
	/* optional: how many times the store waited for its server */
	uint64_t (*round_trips)(struct store *st);
	/* optional: part_claim's checks sent, and those that failed */
	void (*claims)(struct store *st, uint64_t *claims, uint64_t *lost);
	/* optional: drop the rows read ahead (queen_forget_reads) */
	void (*forget_reads)(struct store *st);
	/* other handles read what this one commits before a sync makes it
	 * durable (PostgreSQL): so a batch that is answered without a sync
	 * commits durably, and a lease taken in a deferred batch waits for
	 * that batch's sync, whoever pushed what it read */
	bool shared;
	/* optional, a shared store's: whether every message the open
	 * transaction read is known durable (a sync since covered it).  A
	 * lazy batch (leases only) on such a store commits without waiting
	 * for the disk when it is; else set_durable(true), called inside
	 * the transaction, makes its commit durable */
	bool (*read_durable)(struct store *st);
};

#define FRESH_SLOTS 1024
#define FRESH_PEND 64

/* a call that may end or move a lease starts (queen_lease_epoch) */
void lease_moves(void);

struct queen {
	const struct store_ops *ops;
	struct store *st;
	queen_clock_fn clock;
	void *clock_arg;
	int batch_depth;          /* >0: inside queen_batch_begin */
	bool deferred;            /* the open batch commits without a sync */
	bool lazy;                /* it need not be durable (read_durable) */
	bool can_defer;           /* sync level full and a store sync op */
	uint64_t ticket;          /* the last deferred commit's, or 0 */
	/* shared with the thread in queen_sync */
	_Atomic uint64_t seq;     /* deferred commits made */
	_Atomic uint64_t synced;  /* deferred commits known durable */
	_Atomic int sync_err;     /* a failed sync's errno, negative */
	/*
	 * Pushes not known synced, for the pop rule (fresh_mark and
	 * fresh_need in queen.c).  A slot per partition id modulo
	 * FRESH_SLOTS says: offsets from `from` on were pushed by commits up
	 * to `ticket`; pid 0 means two partitions met in it, any offset.
	 * The open batch's pushes wait in pend until its commit numbers them.
	 */
	struct fresh { int64_t pid, from; uint64_t ticket; } fresh[FRESH_SLOTS];
	struct { int64_t pid, from; } pend[FRESH_PEND];
	int npend;                /* past FRESH_PEND: every partition */
	uint64_t pop_need;        /* see queen_pop_ticket */
	bool failed;              /* a storage I/O error stops all writes */
	bool err_set;             /* queen_err ran since the last tx_begin */
	bool groups_explicit;     /* queen_groups_explicit */
	uint64_t fast_pushes;     /* api/push bodies read without jansson */
	uint64_t dlq_rows;        /* dead-letter rows the store handed up */
	struct queen_event_counts ev;     /* announcements (event.c) */
	bool http_maint, http_pop_maint;  /* /api/v1/system/maintenance */
	/* queen_maintain's walk resumes after this queue's partition ("":
	 * from the start) */
	char maint_queue[QUEEN_NAME_MAX + 1], maint_after[QUEEN_NAME_MAX + 1];
	char failmsg[256];
	char err[512];
};

/* queen.c */
int queen_err(struct queen *q, int rc, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
void fresh_mark(struct queen *q, int64_t pid, int64_t off);
void fresh_need(struct queen *q, int64_t pid, int64_t last);
int tx_begin(struct queen *q);
int tx_end(struct queen *q, int rc);
void uuid_v7(struct queen *q, char out[QUEEN_ID_LEN + 1]);
int64_t clamp_add(int64_t a, int64_t b);

/* event.c: announce that part_id (0: any) of queue_id may now be leased */
int announce(struct queen *q, int64_t queue_id, int64_t part_id);

/* core/sqlite/db.c */
int db_open(const struct queen_options *opt, struct store **out,
    const struct store_ops **ops, char *err, size_t errlen);

/* core/pg/db_pg.c: the PostgreSQL backend, for --db postgresql://...
 * (core/nopg/pg_none.c in a build without libpq: -EOPNOTSUPP) */
int pg_open(const struct queen_options *opt, struct store **out,
    const struct store_ops **ops, char *err, size_t errlen);

/* core/api/jsonw.c: JSON text straight into a growing buffer (zeroed to start) */
struct jw {
	char *p;
	size_t len, cap;
	bool oom;
};
void jw_raw(struct jw *w, const char *s, size_t n);
void jw_lit(struct jw *w, const char *s);
void jw_int(struct jw *w, int64_t v);
void jw_str(struct jw *w, const char *s);  /* quoted; NULL writes null */
char *jw_finish(struct jw *w);             /* NULL if out of memory */
/*
 * Whether the n bytes at p are one JSON text that jansson would take too
 * (UTF-8, no U+0000, integers within 64 bits, finite reals, at most 512
 * deep); if so, the value without the white space around it is at
 * p + *from for *len bytes.  Allocates nothing.
 */
bool json_text(const void *p, size_t n, size_t *from, size_t *len);

/* hash.c */
void hash_txid(const char *txid, struct hash128 *out);

/* config.c */
extern const size_t qconf_offsets[QCONF_N];
#define QCONF_FIELD(c, i) ((int64_t *)((char *)(c) + qconf_offsets[i]))
void qconf_defaults(struct qconf *c);
int config_apply(struct queen *q, struct queue_row *qr, struct group_row *gr,
    const char *const *keys, const char *const *values, size_t n);
ssize_t config_format(const struct queue_row *qr, const struct group_row *gr,
    char *buf, size_t len);
int config_lookup(const struct queue_row *qr, const struct group_row *gr,
    const char *key, int64_t *value);
int parse_time(const char *s, int64_t *ms);

/* queue.c */
int queue_load(struct queen *q, const char *name, struct queue_row *out);
/* -EINVAL, and why: a queue's, partition's (what) name that is not one */
int bad_name(struct queen *q, const char *what, const char *name);
int queue_ensure(struct queen *q, const char *name, struct queue_row *out);
int part_load(struct queen *q, const struct queue_row *qr, const char *name,
    bool create, struct part_row *out);
int group_load(struct queen *q, const struct queue_row *qr, const char *name,
    bool create, struct group_row *out);
int cursor_load(struct queen *q, const struct part_row *p,
    const struct group_row *g, struct cursor_row *out);
int cursor_refresh(struct queen *q, struct cursor_row *c);
int64_t offset_before(struct queen *q, const struct part_row *p, int64_t t);
int64_t group_eff(const struct queue_row *qr, const struct group_row *g,
    int which);

int group_default(struct queen *q, const struct queue_row *qr,
    const char *name, struct group_row *out);
int group_resubscribe(struct queen *q, const struct queue_row *qr,
    const struct group_row *g);
int batch_read(struct queen *q, const struct part_row *p, int64_t from,
    size_t max, bool payload, int64_t upto_time, struct queen_batch **out);
/* the newest (or lowest) offset in [from, last] whose id is txid, read off
 * the messages themselves (for offsets older than their hash rows);
 * -ENOENT */
int txid_scan(struct queen *q, int64_t pid, int64_t from, int64_t last,
    const char *txid, bool newest, int64_t *offset);

/* timer.c: the bodies, for callers already inside a transaction */
int timer_schedule_locked(struct queen *q, const char *queue,
    const char *key, const char *partition, int64_t due_at,
    const void *payload, size_t len);
int timer_cancel_locked(struct queen *q, const char *queue, const char *key);

/* push.c */
int push_items(struct queen *q, const struct queen_push_item *items,
    size_t n, bool create_excl, struct queen_push_result *res,
    int *dup_index);
int push_again(struct queen *q, const struct queen_push_item *it,
    struct queen_push_result *res);

/* pop.c */
int lease_target(struct queen *q, const char *lease_id, const char *txid,
    struct queue_row *qr, struct part_row *p, struct group_row *g);

/* ack.c */
int dead_letter(struct queen *q, const struct queue_row *qr,
    const struct part_row *p, const struct group_row *g, int64_t offset,
    int64_t retry_count, const char *error);
int ack_items(struct queen *q, const struct queen_ack_item *items, size_t n,
    struct queen_ack_result *res, bool fence, const char *const *leases,
    size_t nleases, size_t *bad);

#endif
