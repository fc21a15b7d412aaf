/*
 * queen.h - the public API of the queenfs engine (libqueen).
 *
 * A cursor engine: queues of ordered partitions, one cursor per (partition,
 * consumer group), leases, a retry budget, a dead-letter queue, dedup, KV,
 * timers and transactions.  It knows nothing of FUSE or of the storage it
 * runs on; see docs/engine.md for the model.
 *
 * Conventions.  Action functions return 0 or a negative errno.  Lists are
 * walked with callbacks; a callback returning non-zero stops the walk and its
 * value is returned.  Every string a caller passes is copied if kept.  Every
 * output the engine allocates is one block freed by one call.  A handle is
 * used by one thread at a time.  Times are milliseconds since the epoch.
 */
#ifndef QUEEN_H
#define QUEEN_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#define QUEEN_NAME_MAX 255
#define QUEEN_ID_LEN 36 /* a UUID in text form */
#define QUEEN_TXID_MAX 1024 /* bytes in a transactionId */
#define QUEEN_QUEUE_MODE "__QUEUE_MODE__"
#define QUEEN_DEFAULT_PARTITION "default"
/* the most messages one pop leases or one read returns (the batch key's
 * upper bound) */
#define QUEEN_BATCH_MAX 100000

/*
 * Number limits every entry point checks (a number past them is refused
 * with -EINVAL, never wrapped or clamped): the latest time the store takes
 * (9999-12-31T23:59:59.999Z, the end of RFC 3339), the longest lease a
 * renew may ask for (100 years, the config's lease_time maximum) and the
 * longest wait a pop may ask for (a day, the config's wait maximum).
 */
#define QUEEN_TIME_MAX_MS 253402300799999LL
#define QUEEN_SECONDS_MAX (100LL * 365 * 86400)
#define QUEEN_WAIT_MAX 86400

struct queen;
struct queen_tune;

typedef int64_t (*queen_clock_fn)(void *arg);

enum queen_sync {
	QUEEN_SYNC_FULL = 0,
	QUEEN_SYNC_NORMAL = 1,
	QUEEN_SYNC_OFF = 2,
};

struct queen_options {
	const char *path;       /* database file; required */
	enum queen_sync sync;   /* default QUEEN_SYNC_FULL (0) */
	bool read_only;         /* open without write access */
	queen_clock_fn clock;   /* NULL: CLOCK_REALTIME */
	void *clock_arg;
	/* backend tuning and test hooks: queen_tune.h (NULL: none) */
	const struct queen_tune *tune;
	/*
	 * Where a failed queen_open writes its reason in words, as
	 * queen_errmsg would give it, since there is no handle to ask
	 * (NULL: nowhere).  Left alone on success.
	 */
	char *err;
	size_t errlen;
};

/*
 * queen_open - open (creating if needed) the store at opt->path, apply any
 * missing schema migrations, and return a handle in *out (NULL on failure).
 * Errors: -EINVAL bad options, -EIO not a database or corrupt, -EPROTO the
 * file's schema is newer than this build's (or, opened read-only, older),
 * -EROFS, -EACCES, -EBUSY, -ENOMEM; the reason in words in opt->err.
 */
int queen_open(const struct queen_options *opt, struct queen **out);
/* true when queen_open takes path for a PostgreSQL URI, not a file */
bool queen_path_is_pg(const char *path);

/* queen_close - finalise everything and close; accepts NULL. */
void queen_close(struct queen *q);

/*
 * queen_errmsg - the reason for the last failure on this handle, in words.
 * The pointer stays valid until the next call on the handle.
 */
const char *queen_errmsg(struct queen *q);

/* queen_now - the handle's clock, in milliseconds. */
int64_t queen_now(struct queen *q);

/*
 * queen_time_parse - an RFC 3339 time ("2026-05-01T10:00:00Z", optional
 * fraction, Z or +hh:mm / -hh:mm) in s[0..len) to ms since the epoch.
 * Returns 0 or -EINVAL.  queen_time_format - ms as
 * "YYYY-MM-DDThh:mm:ss.mmmZ" into buf.
 */
int queen_time_parse(const char *s, size_t len, int64_t *ms);
void queen_time_format(int64_t ms, char *buf, size_t len);

/* queen_name_valid - 1..255 bytes of [A-Za-z0-9._:@=+-], no leading '.'. */
bool queen_name_valid(const char *name);

/*
 * queen_fail_storage - once the store reports an I/O error every later write
 * is refused with -EIO; this says whether that happened (and why, in
 * queen_errmsg terms, copied into buf).
 */
bool queen_failed(struct queen *q, char *buf, size_t len);

/*
 * Group commit.  Between queen_batch_begin and queen_batch_commit, every
 * mutating call runs inside one storage transaction (each call in its own
 * savepoint, so one call's failure undoes only that call).  The commit makes
 * all of them durable at once; if it fails, none of them happened.
 */
enum queen_batch_flags {
	/*
	 * For a batch holding nothing that must survive a crash (leases,
	 * renewals, reads): its commit does not wait for the disk.  A crash
	 * may lose it, which only means a lease is granted again; any later
	 * durable commit makes it durable too.
	 */
	QUEEN_BATCH_LAZY = 1 << 0,
	/*
	 * A durable batch whose commit does not wait for the disk.  After
	 * queen_batch_commit, queen_sync_ticket names it, and it is durable
	 * once queen_sync of that ticket returns 0; meanwhile the next batch
	 * may run (group commit with early lock release).  Where commits are
	 * durable by themselves (PostgreSQL, sync levels below full) it is
	 * an ordinary batch and the ticket is 0.
	 */
	QUEEN_BATCH_DEFERRED = 1 << 1,
	/*
	 * Its statements wait only briefly (100 ms, or less if the
	 * session's lock timeout is shorter) for a row another
	 * session holds, then fail with -EBUSY: for a retry that can come
	 * again later, which must not hold up the caller's other work for
	 * a whole lock timeout.  On a server (PostgreSQL); SQLite has no
	 * row another session can hold, and ignores it.
	 */
	QUEEN_BATCH_BRIEF = 1 << 2,
	/*
	 * The caller runs the whole batch again if its commit fails with
	 * -EBUSY (the mount: at once, unflagged).  A store may then read a
	 * row it will change
	 * without locking it, and check at the commit that no one else
	 * changed it meanwhile (-EBUSY if someone did), so that the row is
	 * not held while the client and the server talk: on a server
	 * (PostgreSQL), a push's partition.  SQLite ignores it.
	 */
	QUEEN_BATCH_REDO = 1 << 3,
};
/*
 * queen_batch_begin - open a batch; flags 0 for one whose commit waits
 * for the disk.  -EBUSY a batch is open, -EIO the store failed, -EINVAL
 * unknown flags.
 */
int queen_batch_begin(struct queen *q, enum queen_batch_flags flags);
int queen_batch_commit(struct queen *q);
void queen_batch_rollback(struct queen *q);
/* the ticket of the last commit still to be synced; 0: nothing to wait for */
uint64_t queen_sync_ticket(struct queen *q);
/*
 * queen_sync - return once every commit up to ticket is on the disk.  The
 * one call that may run on a second thread while another uses q; one
 * thread at a time may call it.  A failure is a failed fsync: -EIO, and
 * from then on every write is refused and queen_failed says why; or
 * -ENOTCONN: the store's connection was lost (PostgreSQL), the commits up
 * to ticket are not known durable, and a later sync may succeed.
 */
int queen_sync(struct queen *q, uint64_t ticket);
/*
 * queen_pop_ticket - the ticket a caller must see synced before it hands
 * out what the pops since the last call took (0: nothing), and forget it.
 * A pop may take messages whose deferred push is not yet on the disk; a
 * crash would take them back, so nobody may see them before that sync.
 * Only pops that took an offset at or past the partition's first unsynced
 * push name a ticket.  A pop in the same batch as the push it took names
 * that batch's, valid once it commits.
 */
uint64_t queen_pop_ticket(struct queen *q);

/* ---- ownership, for the mount's permission checks ---- */

struct queen_owner {
	uid_t uid;
	gid_t gid;
	mode_t mode; /* permission bits only */
};

/* ---- configuration ---- */

enum queen_scope {
	QUEEN_SCOPE_QUEUE = 1,
	QUEEN_SCOPE_GROUP = 2,
};

/*
 * queen_groups_explicit - while on, a call that names a group that does not
 * exist (a pop, a config write, a seek, an ack by names) fails with -ENOENT
 * where it would make the group: for a caller whose groups are made only by
 * queen_group_create (the mount's mkdir), so that a group removed through
 * another handle is not made again by a stale name.  Off by default; the
 * mount turns it on for its handles.  Queen's API (queen_api, queen_http)
 * makes a group on its first use whatever this says, and leaves the
 * setting as it found it.  Returns the setting before.
 */
bool queen_groups_explicit(struct queen *q, bool on);

/*
 * queen_config_set - set key = value pairs on a queue (group NULL) or on a
 * group.  All pairs are validated first; any unknown key or bad value fails
 * the whole call with -EINVAL (queen_errmsg says which) and changes nothing.
 * A group that does not exist yet is created (not while queen_groups_explicit
 * is on: -ENOENT).  -ENOENT: no such queue.
 */
int queen_config_set(struct queen *q, const char *queue, const char *group,
    const char *const *keys, const char *const *values, size_t n);

/*
 * queen_config_check - the validation of queen_config_set alone, for a
 * queue's keys (group false) or a group's, touching no store: 0 when every
 * pair would be accepted, else -EINVAL with the reason in why (if not
 * NULL, NUL-terminated).  Safe from any thread.
 */
int queen_config_check(bool group, const char *const *keys,
    const char *const *values, size_t n, char *why, size_t whylen);

/*
 * queen_config_format - the whole config as "key = value\n" lines into buf
 * (NUL-terminated).  Returns the length it needs (excluding the NUL), which
 * may exceed len, or a negative errno.
 */
ssize_t queen_config_format(struct queen *q, const char *queue,
    const char *group, char *buf, size_t len);

/*
 * queen_config_get - one key's effective value as an integer (booleans are
 * 0/1; for a group, keys it does not set come from the queue).  -ENOENT no
 * such queue, -EINVAL unknown key.
 */
int queen_config_get(struct queen *q, const char *queue, const char *group,
    const char *key, int64_t *value);

/* ---- queues ---- */

struct queen_queue_info {
	int64_t id;
	char name[QUEEN_NAME_MAX + 1];
	int64_t created_at;
	struct queen_owner owner;
};

/* -EEXIST, -EINVAL (bad name). own may be NULL (root, 0755). */
int queen_queue_create(struct queen *q, const char *name,
    const struct queen_owner *own);

/* -ENOENT; -ENOTEMPTY while it holds messages, groups or timers. */
int queen_queue_delete(struct queen *q, const char *name);

/*
 * queen_queue_purge - delete the queue with all it owns: partitions,
 * messages, their dedup hashes, groups with their cursors, leases and
 * recorded starts, DLQ entries, timers.  Returns 0 (*existed says
 * whether there was such a queue), -EINVAL bad name, or a storage errno.
 */
int queen_queue_purge(struct queen *q, const char *name, bool *existed);

/* -ENOENT */
int queen_queue_get(struct queen *q, const char *name,
    struct queen_queue_info *out);

int queen_queue_set_owner(struct queen *q, const char *name,
    const struct queen_owner *own);

typedef int (*queen_queue_cb)(void *arg, const struct queen_queue_info *qi);
int queen_queue_list(struct queen *q, queen_queue_cb cb, void *arg);

/* ---- partitions ---- */

struct queen_partition_info {
	int64_t id;
	char name[QUEEN_NAME_MAX + 1];
	char uuid[QUEEN_ID_LEN + 1];  /* the stable partitionId */
	int64_t head;        /* lowest retained offset (tail+1 when empty) */
	int64_t tail;        /* highest offset ever pushed (0: none) */
	int64_t txns_start;  /* hash-purge watermark */
	int64_t last_push_at;
	int64_t duplicates;
};

/* -ENOENT (queue or partition). */
int queen_partition_get(struct queen *q, const char *queue,
    const char *partition, struct queen_partition_info *out);

typedef int (*queen_partition_cb)(void *arg,
    const struct queen_partition_info *pi);
int queen_partition_list(struct queen *q, const char *queue,
    queen_partition_cb cb, void *arg);

/* ---- messages ---- */

struct queen_msg {
	int64_t offset;
	int64_t created_at;
	const char *txid;
	const char *trace_id;   /* may be NULL */
	const void *payload;
	size_t len;
};

/*
 * A set of messages returned by one call, in one allocation.  For a pop it
 * also carries the lease.  Free with queen_batch_free.
 */
struct queen_batch {
	char queue[QUEEN_NAME_MAX + 1];
	char partition[QUEEN_NAME_MAX + 1];
	char partition_uuid[QUEEN_ID_LEN + 1];
	char group[QUEEN_NAME_MAX + 1];
	char lease_id[QUEEN_ID_LEN + 1]; /* "" when auto-acked */
	int64_t lease_expires_at;        /* 0 when auto-acked */
	int64_t retry_count;             /* budget used on this cursor */
	size_t n;
	struct queen_msg msgs[];
};

void queen_batch_free(struct queen_batch *b);

/*
 * queen_msg_find - the newest message called txid in the partition (any
 * retained offset).  Fills *offset.  -ENOENT.
 */
int queen_msg_find(struct queen *q, const char *queue, const char *partition,
    const char *txid, int64_t *offset);

/*
 * queen_msg_superseded - for each message of b, as queen_msg_read read it,
 * whether a later offset of its partition holds the same transactionId
 * (a dead letter requeued, a push again with dedup_window = 0): out[i]
 * true.  The hash rows answer, so a later copy whose row retention has
 * purged is not seen.
 */
int queen_msg_superseded(struct queen *q, const struct queen_batch *b,
    bool *out);

/*
 * queen_msg_read - the messages from offset `from` on (up to max of them,
 * skipping purged offsets), with payloads unless want_payload is false.
 * *out is NULL and 0 returned when there are none.
 */
int queen_msg_read(struct queen *q, const char *queue, const char *partition,
    int64_t from, size_t max, bool want_payload, struct queen_batch **out);

/* ---- push ---- */

struct queen_push_item {
	const char *queue;
	const char *partition;  /* NULL: "default" */
	const char *txid;       /* NULL: a generated UUIDv7 */
	const char *trace_id;   /* may be NULL */
	const void *payload;
	size_t len;
	/* its size was checked against max_message_bytes when the caller
	 * confirmed it (the mount's close()): not refused for a limit
	 * lowered since */
	bool size_checked;
};

enum queen_push_status {
	QUEEN_PUSH_QUEUED = 0,
	QUEEN_PUSH_DUPLICATE = 1,
};

struct queen_push_result {
	enum queen_push_status status;
	int64_t offset;          /* the message's, or the original's if dup */
	/* the transactionId made for an item without one ("" otherwise);
	 * queen_push_txid gives either */
	char gen_txid[QUEEN_ID_LEN + 1];
	char partition_uuid[QUEEN_ID_LEN + 1];
};

/* the transactionId of an item as pushed: its own, or the one made */
static inline const char *
queen_push_txid(const struct queen_push_item *it,
    const struct queen_push_result *r)
{
	return it->txid ? it->txid : r->gen_txid;
}

/*
 * queen_push - append n items (queues and partitions are created on first
 * use) as one unit, writing the txn-hash rows, and fill res[i] for each.
 * A transactionId inside its partition's dedup window is a duplicate: not
 * stored again, counted, and reported as such.  If create_excl is set, any
 * duplicate fails the whole call with -EEXIST.
 * Errors (nothing written): -EINVAL bad name or empty txid, -EFBIG payload
 * over max_message_bytes, -ENOSPC, -EIO, -EROFS.
 */
int queen_push(struct queen *q, const struct queen_push_item *items,
    size_t n, bool create_excl, struct queen_push_result *res);

/*
 * queen_push_is_dup - whether pushing txid to (queue, partition) now would
 * be a duplicate (0: it would, -ENOENT: it would not).
 */
int queen_push_is_dup(struct queen *q, const char *queue,
    const char *partition, const char *txid);

/* ---- pop ---- */

struct queen_pop_req {
	const char *queue;
	const char *partition;  /* NULL: any, fairly */
	const char *group;      /* NULL: queue mode */
	int64_t batch;          /* 0: the group's or queue's config */
	int auto_ack;           /* -1: config, 0 no, 1 yes */
	/* take the span only if it fills the batch (and no expired lease
	 * is in the way), else -EAGAIN: for a caller that knows of pushes
	 * not yet in the store, which could have lengthened the span */
	bool whole;
};

/*
 * queen_pop - lease the next available span of one partition for the group.
 * Never blocks: -EAGAIN when nothing is available now.  -ENOENT no queue.
 * On success *out holds the messages and the lease (free it).
 */
int queen_pop(struct queen *q, const struct queen_pop_req *req,
    struct queen_batch **out);

/*
 * queen_next_due - earliest time at which a pop of (queue, group) could
 * succeed without any new push (a delay or window ending, a lease expiring),
 * or INT64_MAX when only a push can help.
 */
int64_t queen_next_due(struct queen *q, const char *queue, const char *group);

/* ---- leases ---- */

struct queen_lease_info {
	char lease_id[QUEEN_ID_LEN + 1];
	char queue[QUEEN_NAME_MAX + 1];
	char partition[QUEEN_NAME_MAX + 1];
	char partition_uuid[QUEEN_ID_LEN + 1];
	char group[QUEEN_NAME_MAX + 1];
	int64_t first;      /* committed + 1 when leased */
	int64_t last;       /* batch_end */
	int64_t committed;  /* current cursor */
	int64_t expires_at;
	int64_t retry_count;
};

/*
 * A live lease by id.  -ESTALE when the id is not a live lease: expired,
 * released, or never issued (a released lease leaves no trace to tell
 * these apart).  A store may read the lease's first message along,
 * for a lookup of it that follows.
 */
int queen_lease_get(struct queen *q, const char *lease_id,
    struct queen_lease_info *out);
/* The same, ahead of an ack of the message of transactionId txid (NULL:
 * none) under it: a store may read that message's row along. */
int queen_lease_get_for(struct queen *q, const char *lease_id, const char *txid,
    struct queen_lease_info *out);

/* The live leases of (queue, group). */
typedef int (*queen_lease_cb)(void *arg, const struct queen_lease_info *li);
int queen_lease_list(struct queen *q, const char *queue, const char *group,
    queen_lease_cb cb, void *arg);

/* The unacked messages still under the lease.  -ESTALE. */
int queen_lease_read(struct queen *q, const char *lease_id, bool want_payload,
    struct queen_batch **out);

/*
 * queen_lease_read_msg - the one unacked message called txid under the
 * lease (the lowest, if the span holds it twice), as a batch of one with
 * the lease's facts, found through its hash row rather than by reading
 * the span.  -ESTALE (as queen_lease_read), -ENOENT not in the span,
 * -EINVAL empty txid.  Free *out with queen_batch_free.
 */
int queen_lease_read_msg(struct queen *q, const char *lease_id,
    const char *txid, bool want_payload, struct queen_batch **out);

/*
 * queen_lease_read_done - the same for a message of a live lease that the
 * cursor already passed (an ack of a later one committed it): txid at an
 * offset in [from, committed], from being the lease's first offset as the
 * caller knows it.  -ESTALE (as queen_lease_read), -ENOENT not there,
 * -EINVAL empty txid or from < 1.  Free *out with queen_batch_free.
 */
int queen_lease_read_done(struct queen *q, const char *lease_id,
    const char *txid, int64_t from, bool want_payload,
    struct queen_batch **out);

/*
 * queen_lease_renew - extend a live lease to now + seconds (0: the queue's
 * lease_time).  -ESTALE if it is no longer live; -EINVAL for seconds < 0
 * or > QUEEN_SECONDS_MAX (the lease is left as it was).
 */
int queen_lease_renew(struct queen *q, const char *lease_id, int64_t seconds,
    int64_t *expires_at);

/* ---- ack ---- */

struct queen_ack_item {
	const char *txid;
	const char *partition_uuid;  /* the partitionId; or: */
	const char *queue;           /*   queue + partition names */
	const char *partition;
	const char *group;           /* NULL: queue mode */
	const char *status;          /* design.md#statuses; NULL ok */
	const char *lease_id;        /* NULL: no lease check; with no
					partition: the lease's own (and
					group must be the lease's) */
	const char *error;           /* kept in the DLQ */
};

#define QUEEN_ERR_LEN 160

struct queen_ack_result {
	bool success;
	bool lease_released;
	bool dlq;
	bool noop;
	int err;  /* 0, -ESTALE, -EALREADY, -ENOENT, -EINVAL, -EIO */
	char error[QUEEN_ERR_LEN];  /* "" on success */
};

/* docs/design.md#reported's words, so callers can match them. */
#define QUEEN_E_LEASE "invalid or expired lease"
#define QUEEN_E_ALREADY "already committed: the cursor moved past this " \
	"message before this ack"
#define QUEEN_E_UNRESOLVABLE "unresolvable: transaction not in the ack " \
	"window (hash purged or never pushed); if leased, the message " \
	"redelivers"
#define QUEEN_E_FLUSH "ack flush failed; lease will expire and redeliver"

/*
 * queen_ack - acknowledge n items (docs/design.md#offset-commit).  Items are grouped by
 * (partition, group, lease); each group is judged and written once.  Fills
 * res[i].  Returns 0 when the call ran (look at res), or a negative errno
 * when storage failed (then nothing moved and every item says so).
 */
int queen_ack(struct queen *q, const struct queen_ack_item *items, size_t n,
    struct queen_ack_result *res);

/* ---- consumer groups ---- */

enum queen_sub_mode {
	QUEEN_SUB_ALL = 0,
	QUEEN_SUB_NEW = 1,
	QUEEN_SUB_SINCE = 2,
};

struct queen_group_info {
	int64_t id;
	char name[QUEEN_NAME_MAX + 1];
	enum queen_sub_mode mode;
	int64_t since;  /* for QUEEN_SUB_SINCE */
	int64_t created_at;
	struct queen_owner owner;
};

/* Create if missing (with default config), whatever queen_groups_explicit
 * says; -ENOENT no queue, -EINVAL. */
int queen_group_ensure(struct queen *q, const char *queue, const char *group);
/*
 * queen_group_create - make a group (subscription all, the queue's config)
 * with its cursors at their start, owned by own (NULL: it takes the
 * queue's owner).  -EEXIST if the group exists, -ENOENT no such queue,
 * -EINVAL a bad group name (the queue-mode name included); nothing
 * changes on failure.
 */
int queen_group_create(struct queen *q, const char *queue, const char *group,
    const struct queen_owner *own);
int queen_group_get(struct queen *q, const char *queue, const char *group,
    struct queen_group_info *out);
/*
 * Drops the group and its cursors (its DLQ entries stay).  -ENOTEMPTY
 * while a lease of the group is live (nothing changes), -ENOENT no such
 * queue or group, -EPERM for the queue-mode group.
 */
int queen_group_delete(struct queen *q, const char *queue, const char *group);
/* The group's own owner and mode; -ENOENT no such queue or group. */
int queen_group_set_owner(struct queen *q, const char *queue,
    const char *group, const struct queen_owner *own);
typedef int (*queen_group_cb)(void *arg, const struct queen_group_info *gi);
int queen_group_list(struct queen *q, const char *queue, queen_group_cb cb,
    void *arg);

enum queen_pos_kind {
	QUEEN_POS_OFFSET = 0,  /* value: the next offset to deliver */
	QUEEN_POS_TIME = 1,    /* value: ms; first message pushed at/after */
	QUEEN_POS_START = 2,
	QUEEN_POS_END = 3,
};

/*
 * queen_seek - move the group's cursor on one partition (or all when
 * partition is NULL) and release the group's leases there.
 * -EINVAL negative offset, -ENOENT no such queue/partition.
 */
int queen_seek(struct queen *q, const char *queue, const char *group,
    const char *partition, enum queen_pos_kind kind, int64_t value);

struct queen_cursor_info {
	char partition[QUEEN_NAME_MAX + 1];
	int64_t committed;
	int64_t tail;
	int64_t lag;            /* messages retained past the cursor */
	bool leased;
	int64_t lease_expires_at;
	int64_t retry_count;
};

typedef int (*queen_cursor_cb)(void *arg, const struct queen_cursor_info *ci);
int queen_cursor_list(struct queen *q, const char *queue, const char *group,
    queen_cursor_cb cb, void *arg);

/* ---- dead letters ---- */

struct queen_dlq_entry {
	int64_t id;
	char partition[QUEEN_NAME_MAX + 1];
	char group[QUEEN_NAME_MAX + 1];
	const char *txid;
	const char *error;
	int64_t offset;
	int64_t retry_count;
	int64_t created_at;     /* the message's push time */
	int64_t failed_at;
	const void *payload;
	size_t len;
};

typedef int (*queen_dlq_cb)(void *arg, const struct queen_dlq_entry *e);

/* Dead letters of (queue, group); group NULL = queue mode. */
int queen_dlq_list(struct queen *q, const char *queue, const char *group,
    bool want_payload, queen_dlq_cb cb, void *arg);

/*
 * The dead letters of (queue, group) in partition whose transactionId is
 * txid (both required; usually one), through cb as queen_dlq_list does,
 * read by an index: the cost of one name, not of the DLQ.  0 when none.
 */
int queen_dlq_get(struct queen *q, const char *queue, const char *group,
    const char *partition, const char *txid, bool want_payload,
    queen_dlq_cb cb, void *arg);

/*
 * queen_dlq_requeue - push the dead letter of (queue, group) named txid in
 * partition again, as one unit with its removal from the DLQ: a new
 * message at the partition's tail (*offset, when not NULL) under the same
 * transactionId, never judged a duplicate, with the same body.  Every
 * group whose cursor is before that offset reads it (ordering within the
 * partition is by offset, so it comes after what was pushed before it).
 * -ENOENT no such queue or dead letter, -EINVAL bad names, -EOVERFLOW
 * partition full, storage errnos; nothing changes on an error.
 */
int queen_dlq_requeue(struct queen *q, const char *queue, const char *group,
    const char *partition, const char *txid, int64_t *offset);

/*
 * queen_dlq_purge - delete the dead letter(s) of (queue, group) named txid
 * in partition.  -ENOENT none, -EINVAL bad names, storage errnos.
 */
int queen_dlq_purge(struct queen *q, const char *queue, const char *group,
    const char *partition, const char *txid);

/* Dead-letter rows read through queen_dlq_list and queen_dlq_get. */
uint64_t queen_dlq_rows_read(struct queen *q);

/* ---- stats ---- */

struct queen_stats {
	int64_t partitions;
	int64_t messages;      /* retained */
	int64_t pushed;        /* highest offsets summed */
	int64_t depth;         /* retained past the group's cursors */
	int64_t leases;        /* live */
	int64_t leased_msgs;
	int64_t dlq;
	int64_t duplicates;
	int64_t groups;
	int64_t oldest_waiting; /* created_at of the oldest undelivered; 0 */
	int64_t oldest_age;     /* ms since oldest_waiting (0: none waits) */
};

/* For one group (NULL: queue mode) of the queue. */
int queen_stats_get(struct queen *q, const char *queue, const char *group,
    struct queen_stats *out);

/* One queue over all its groups (sys/queues). */
struct queen_queue_summary {
	int64_t messages;       /* retained */
	int64_t depth;          /* past the queue-mode cursors */
	int64_t oldest_age;     /* ms: the oldest message some group (queue
				 * mode included) still waits for; 0: none */
	int64_t groups;         /* named groups */
	int64_t lag;            /* the most any named group has to read */
	int64_t leases;         /* live, queue mode and groups */
	int64_t dlq;            /* dead letters, queue mode and groups */
};

/*
 * queen_queue_summary - fill *out for queue.  -ENOENT no such queue,
 * storage errnos.
 */
int queen_queue_summary(struct queen *q, const char *queue,
    struct queen_queue_summary *out);

/* ---- maintenance ---- */

/*
 * queen_maintain - run due housekeeping: retention, completed retention,
 * txn-hash purge, expired KV keys, due timers (each fires exactly once).
 * Does a bounded amount of work; *more is set when more is due.  It visits
 * at most 1000 partitions a call, each call going on where the last one
 * stopped (that alone does not set *more), so a caller that runs it once a
 * second comes round every partition every (partitions / 1000) seconds.
 * Returns the number of rows it changed, or a negative errno.
 */
ssize_t queen_maintain(struct queen *q, bool *more);
/*
 * queen_checkpoint - ask for what the write-ahead log holds to be copied
 * into the database soon, outside any batch.  SQLite stores copy it on a
 * thread of their own beside the writer, also unasked after every 1000
 * pages of log; this call is for a caller with a quiet moment, such as
 * the mount's one-second tick, and returns at once.  0; -EBUSY inside a
 * batch; -EIO once a checkpoint has failed on the disk (queen_failed then
 * says so).  A no-op where there is no such log (PostgreSQL).
 * After a write met a full disk (ENOSPC), the call copies the whole log
 * itself and cuts the file to nothing, since the log never shrinks and
 * its space may be all the disk has: 1 when it did, 0 while the disk is
 * still too full for the copy (the next call tries again).
 */
int queen_checkpoint(struct queen *q);

/* ---- KV ---- */

struct queen_kv_value {
	int64_t version;
	int64_t expires_at;   /* 0: never */
	int64_t updated_at;
	size_t len;
	const void *data;
};

/* Fills *out with a copy (free with free()).  -ENOENT missing/expired. */
int queen_kv_get(struct queen *q, const char *ns, const char *key,
    struct queen_kv_value **out);

/*
 * queen_kv_put - store value; ttl_ms 0 keeps the namespace default (none);
 * if_absent: -EEXIST when a live value is there; -EINVAL for a ttl_ms < 0
 * or over QUEEN_SECONDS_MAX seconds.
 */
int queen_kv_put(struct queen *q, const char *ns, const char *key,
    const void *data, size_t len, int64_t ttl_ms, bool if_absent);

int queen_kv_delete(struct queen *q, const char *ns, const char *key);

/* Set only the expiry (ttl_ms 0 = never).  -ENOENT; -EINVAL as kv_put. */
int queen_kv_set_ttl(struct queen *q, const char *ns, const char *key,
    int64_t ttl_ms);

typedef int (*queen_kv_cb)(void *arg, const char *key,
    const struct queen_kv_value *v);
int queen_kv_list(struct queen *q, const char *ns, queen_kv_cb cb, void *arg);

/* Namespaces that hold live keys or exist by mkdir. */
typedef int (*queen_name_cb)(void *arg, const char *name);
int queen_kv_ns_list(struct queen *q, queen_name_cb cb, void *arg);
int queen_kv_ns_create(struct queen *q, const char *ns,
    const struct queen_owner *own);
int queen_kv_ns_delete(struct queen *q, const char *ns);
int queen_kv_ns_get(struct queen *q, const char *ns, struct queen_owner *own);
int queen_kv_ns_set_owner(struct queen *q, const char *ns,
    const struct queen_owner *own);

/* ---- wake-ups across mounts ---- */

/*
 * Another handle on the same store (another process or host) announces a
 * queue when something in it may have become leasable for a reader that
 * found nothing: a push into a partition some group had read to its end
 * (or that held nothing), an ack or failure that released a lease with
 * messages behind it, a seek, a timer's push, the queue's deletion.  A
 * push into a partition that already had messages waiting is not
 * announced, nor a lease that just runs out (its expiry is in the store:
 * a reader retries when queen_next_due says).  Only the handles watching
 * a queue receive its announcements.
 */

/*
 * queen_event_fd - a descriptor that becomes readable when an
 * announcement for a watched queue arrives.  Before polling it after
 * this call or a queen_event_watch, call queen_events: either may have
 * read announcements off it, or listened again on a new connection (no
 * other call does).  It is not the descriptor the store's other calls
 * use, and it may change after a lost connection is re-established, so
 * ask again after a storage error.  Returns the descriptor, or -ENOTSUP
 * when the store has no such channel (SQLite: one file, one writer),
 * -EIO.
 */
int queen_event_fd(struct queen *q);

/*
 * queen_event_watch - start (on) or stop receiving the announcements of
 * queue.  Watches do not nest: one call with on = false stops it.  Call it
 * outside a batch.  Returns 1 when this call started watching: what was
 * announced before it was not received, so a reader should try once more;
 * 0 when nothing changed or watching stopped; -ENOENT (no such queue, for
 * on), -ENOTSUP as above, -EIO.
 */
int queen_event_watch(struct queen *q, const char *queue, bool on);

/*
 * queen_events - drain the announcements received so far, calling cb with
 * the queue name of each and the id of the partition that may now be
 * leased (user.queen.partition_id's number; 0: any of the queue, as after
 * a seek or its deletion).  A queue may come more than once.  When the
 * store had to listen again on a new connection, every watched queue
 * comes once with 0 first: what was announced in between is lost.  Never
 * blocks.  Returns 0, the callback's non-zero value, -ENOTSUP as above,
 * or -EIO.
 */
typedef int (
    *queen_event_cb)(void *arg, const char *queue, int64_t partition_id);
int queen_events(struct queen *q, queen_event_cb cb, void *arg);

/* What this handle announced and received; zeros on SQLite. */
struct queen_event_counts {
	uint64_t sent;     /* announcements made (rolled back ones too) */
	uint64_t received; /* announcements handed to queen_events' cb */
	uint64_t watching; /* queues watched now */
	uint64_t watches;  /* times watching a queue started */
};
void queen_event_counts(struct queen *q, struct queen_event_counts *out);

/* ---- timers ---- */

struct queen_timer_info {
	char key[QUEEN_NAME_MAX + 1];
	char partition[QUEEN_NAME_MAX + 1];
	int64_t due_at;
	int64_t created_at;
	size_t len;
	const void *payload;
};

/*
 * queen_timer_schedule - upsert the timer (queue, key): fire at due_at
 * (ms since the epoch; 0: now + the queue's timer_delay) by pushing payload
 * into partition (NULL: "default").  A due_at in the past fires at the next
 * maintenance pass.  -EINVAL for due_at < 0 or > QUEEN_TIME_MAX_MS (nothing
 * is changed), -EFBIG for a payload over max_message_bytes.
 */
int queen_timer_schedule(struct queen *q, const char *queue, const char *key,
    const char *partition, int64_t due_at, const void *payload, size_t len);
int queen_timer_cancel(struct queen *q, const char *queue, const char *key);
int queen_timer_get(struct queen *q, const char *queue, const char *key,
    bool want_payload, struct queen_timer_info **out);
typedef int (*queen_timer_cb)(void *arg, const struct queen_timer_info *ti);
int queen_timer_list(struct queen *q, const char *queue, queen_timer_cb cb,
    void *arg);

/* ---- transactions (docs/design.md#transactions) ---- */

enum queen_kv_op_type {
	QUEEN_KV_PUT = 0,
	QUEEN_KV_PUT_IF_ABSENT,
	QUEEN_KV_DELETE,
	QUEEN_KV_INCR,
	QUEEN_KV_GET,
	QUEEN_KV_GET_MANY,
};

struct queen_kv_op {
	enum queen_kv_op_type type;
	const char *ns;
	const char *key;
	const char *const *keys;  /* GET_MANY */
	size_t nkeys;
	const void *value;        /* PUT, PUT_IF_ABSENT */
	size_t len;
	int64_t ttl_ms;           /* 0: none */
	int64_t by;               /* INCR */
	int64_t expect_version;   /* -1: none; 0: must be absent */
	bool required;            /* a failed precondition rolls back */
};

enum queen_timer_op_type {
	QUEEN_TIMER_SCHEDULE = 0,
	QUEEN_TIMER_CANCEL,
};

struct queen_timer_op {
	enum queen_timer_op_type type;
	const char *queue;
	const char *key;
	const char *partition;    /* NULL: default */
	int64_t due_at;           /* 0: now + delay_ms, or timer_delay */
	int64_t delay_ms;
	const void *payload;
	size_t len;
};

struct queen_txn {
	const struct queen_ack_item *acks;
	size_t nacks;
	const struct queen_push_item *pushes;
	size_t npushes;
	const struct queen_kv_op *kv;
	size_t nkv;
	const struct queen_timer_op *timers;
	size_t ntimers;
	const char *const *required_leases;
	size_t nleases;
};

enum queen_txn_reason {
	QUEEN_TXN_OK = 0,
	QUEEN_TXN_REJECTED_ACK,
	QUEEN_TXN_DUPLICATE,
	QUEEN_TXN_KV_PRECONDITION,
	QUEEN_TXN_RESERVED,
	QUEEN_TXN_BAD_REQUEST,
	QUEEN_TXN_TOO_LARGE,
};

#define QUEEN_TXN_MAX_KV_OPS 64
#define QUEEN_TXN_MAX_KV_KEYS 256

/* One KV operation's answer; value points into the result block. */
struct queen_kv_result {
	bool found;
	/* a precondition without `required` failed ("version", "exists"):
	 * the operation did nothing; NULL when it applied */
	const char *skipped;
	int64_t version;
	int64_t number;           /* INCR: the new value */
	const void *value;        /* GET */
	size_t len;
	size_t first;             /* GET_MANY: index into kv_many[] */
	size_t count;
};

struct queen_txn_result {
	enum queen_txn_reason reason;
	char error[QUEEN_ERR_LEN];
	char kv_reason[32];       /* "exists", "missing", "version" */
	int failed_index;         /* the refused part's index, or -1 */
	struct queen_ack_result *acks;      /* nacks */
	struct queen_push_result *pushes;   /* npushes */
	struct queen_kv_result *kv;         /* nkv */
	struct queen_kv_result *kv_many;    /* GET_MANY entries */
	size_t nkv_many;
	/* ntimers: a cancel found no such timer (it committed as a noop,
	 * as `rm` of the file would answer ENOENT) */
	bool *timer_missing;
};

/*
 * queen_txn - apply acks, pushes, KV and timer operations as one unit or
 * not at all.  Checks run in the contract's order (acks with the lease fence,
 * pushes and their dedup, KV preconditions, timers); the first refusal
 * sets r->reason and nothing is written.  Returns 0 when a verdict was
 * reached (committed or refused: look at r->reason), or a negative errno
 * when storage failed (nothing written).  *out is one block: free it with
 * queen_txn_result_free, also on failure.
 */
int queen_txn(struct queen *q, const struct queen_txn *t,
    struct queen_txn_result **out);
void queen_txn_result_free(struct queen_txn_result *r);
const char *queen_txn_reason_name(enum queen_txn_reason r);

#endif
