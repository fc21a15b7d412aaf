/*
 * fs.h - the FUSE layer's shared types and prototypes (Plan 9's dat.h and
 * fns.h in one).  FUSE_USE_VERSION is set here and only here.  The layer is
 * a translation: nodes name things, jobs carry requests to whichever thread
 * holds the struct queen (engine.c), and replies go back after the commit.
 */
#ifndef QUEENFS_FS_H
#define QUEENFS_FS_H

#define FUSE_USE_VERSION FUSE_MAKE_VERSION(3, 14)

#include <fuse_lowlevel.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include "../core/queen.h"
#include "../core/queen_api.h"
#include "../core/queen_tune.h"
#include "ctl.h"

#define QUEENFS_VERSION "queenfs 0.1.0"

/* How long a pushed name stays resolvable, and a dot-file stays staged. */
#define PUSHED_LINGER_MS 5000
/* Error notes (user.queen.error on a leased file) kept at most, the oldest
 * forgotten first, and the bytes one may hold: 8 MiB at the very most. */
#define NOTE_MAX 2048
#define NOTE_ERROR_MAX 4096
#define STAGING_STALE_MS (3600 * 1000)
/* The largest file the layer will hold before its push. */
#define PENDING_MAX (256u << 20)
/* An attempt's bytes stay in the heap up to PEND_MEM_ONE, while all of
 * them together stay under PEND_MEM_ALL; past either, an unlinked file of
 * the spool dir holds them (pending.c). */
#define PEND_MEM_ONE (64u << 10)
#define PEND_MEM_ALL (4u << 20)

/* Every kind of node; the namespace tables in node.c map names to these. */
enum kind {
	K_ROOT = 1,
	K_README,
	K_QUEUES,       /* queues/ */
	K_QUEUE,        /* queues/<q>/ */
	K_CONFIG,       /* queue's or group's config */
	K_STATS,
	K_NEXT,
	K_SEEK,
	K_LEASED,       /* leased/ */
	K_LEASE,        /* leased/<lease>/ */
	K_LEASE_MSG,    /* leased/<lease>/<txid> */
	K_SINK,         /* ack/ failed/ retry/ (node->status says which) */
	K_DLQ,          /* dlq/: a listing and a sink */
	K_DLQ_PART,     /* dlq/<p>/ */
	K_DLQ_MSG,      /* dlq/<p>/<txid> */
	K_PARTS,        /* partitions/ */
	K_PART,         /* partitions/<p>/ */
	K_MSG,          /* a message of the log, by transactionId */
	K_PENDING,      /* a file not yet pushed (or just pushed): see pending */
	K_GROUPS,
	K_GROUP,
	K_TIMERS,
	K_TIMER,
	K_KV,
	K_KV_NS,
	K_KV_KEY,
	K_SYS,
	K_SYS_STATS,
	K_SYS_QUEUES,
	K_SYS_METRICS,
	K_SYS_VERSION,
	K_SYS_HEALTH,
	K_API,          /* api/ */
	K_API_FILE,     /* api/<endpoint>: write a request, read the answer */
};

/* What a pending file becomes when it is flushed. */
enum pend_what {
	PW_PUSH = 0,    /* a message (queue dir or partition dir) */
	PW_KV,
	PW_TIMER,
};

/*
 * A file being written (or just pushed).  It lives in a table keyed by
 * (what, queue or namespace, partition, name), not on its node: the kernel
 * forgets nodes between a close and the rename that publishes a dot-file.
 * Guarded by fs_lock.
 */
struct pending {
	struct pending *next;
	enum pend_what what;
	char *queue;        /* queue, or KV namespace */
	char *part;         /* partition dir, or NULL for the queue dir */
	char *name;
	char *buf;          /* the bytes while small, or NULL */
	size_t len, cap;
	int spill;          /* or an unlinked file of fs.spool holds them (+1) */
	unsigned spill_gen; /* which file that is (one more for each new one) */
	unsigned spill_maps;/* snapshots mapping it: a write goes to a copy */
	unsigned refs;      /* nodes and open handles */
	bool dirty;         /* created, truncated or written since the push */
	bool written;       /* write(2) since the last push: flush pushes */
	bool excl;          /* created with O_EXCL */
	bool based;         /* a stored KV value or timer opened for write
			     * without O_TRUNC: the attempt starts empty, not
			     * with the stored bytes, so a write past its end
			     * (an append) is refused rather than leave a hole */
	bool pushed;
	bool kept;           /* its publish waits for the tick (stage.c),
	                      * whose record reads come from */
	int kept_fd;         /* the journal file that holds it, while kept */
	unsigned readers;    /* handles that read it (not write it) */
	bool lost;           /* its kept bytes could not be handed over */
	off_t kept_off;      /* where its bytes start in it */
	unsigned publishing; /* its pushes submitted and not yet answered */
	bool gated;          /* its publish ran into kept ones ahead: it is
	                      * kept once its batch settles (token holder) */
	int64_t mtime;      /* last write or push, ms */
	int64_t due_at;     /* timers: when to fire (0: the queue's delay) */
	int64_t ttl_ms;     /* kv: from user.queen.ttl before the put */
	fuse_ino_t dir;     /* the directory it was made in */
	struct stage_ref *stage; /* its latest staged record (stage.c) */
	bool staged;             /* that record holds the bytes as they are */
	bool dead;          /* unlinked, or a close() refused it: never pushed */
	struct pending *snext; /* on the list of replaced attempts */
	bool shadowed;         /* replaced in the table by a newer open */
	int refused;        /* the refusal close() reported (negative errno) */
};

struct node {
	fuse_ino_t ino;
	/* K_MSG, K_KV_KEY, K_TIMER become K_PENDING when opened for write
	 * (under fs_lock); read anywhere without it, hence atomic */
	_Atomic(enum kind) kind;
	const char *status;     /* K_SINK, K_DLQ: the ack status it means */
	uint64_t nlookup;
	unsigned nchild, nopen;
	bool hashed;            /* findable by (parent, name) */
	struct node *parent;
	struct node *ino_next, *name_next;
	char *name;
	/* context, inherited from the parent when the node is made */
	char *queue, *group, *part, *lease;
	struct queen_owner own; /* K_QUEUE, K_GROUP, K_KV_NS when has_own */
	bool has_own;
	int64_t size, mtime;    /* cached at lookup for message files */
	struct pending *pend;   /* K_PENDING */
};

/* One directory entry of a listing snapshot. */
struct dent {
	char *name;
	mode_t type;
};

/*
 * An open file or directory (fi->fh).  Requests in flight hold references:
 * a killed reader's release can arrive while its read is still answering.
 */
struct handle {
	unsigned refs;
	bool released;          /* next: its release job has run */
	struct node *node;
	struct pending *pend; /* write handles of pending files, and
	                         * the readers of one (reader) */
	bool reader;
	char *text;             /* generated text, payload, or popped lines */
	size_t len;
	bool loaded;            /* next: the pop happened */
	bool popping;           /* next: a pop is on its way (fs_lock) */
	bool polled;            /* next: poll was asked at least once (fs_lock) */
	bool nonblock;
	struct dent *dents;     /* directory snapshot */
	size_t ndents;
	size_t kept_at; /* partitions/<p>/: where the kept files
				 * start in dents, once taken (else 0) */
	bool writable;
	char *req;              /* api/: the request as written */
	size_t req_len, req_cap;
	int req_fd;             /* api/: past API_MEM_MAX, spooled here (+1) */
	bool req_big;           /* api/: past QUEEN_API_MAX_BODY; config,
				 * seek: past CTL_TEXT_MAX */
	bool ctl_dirty;         /* config, seek: written since the last FLUSH */
	bool ctl_bad;           /* config: a complete line was refused */
	int api_state, api_rc;
	size_t api_pos;         /* api/: the answer is read from its start */
	struct fuse_pollhandle *ph;  /* next: owned by the token holder */
	int64_t poll_due;
	struct handle *poll_next;
	bool polling;
};

/*
 * A request for the store (engine.c).  Handlers embed it first in a
 * larger struct made with calloc; the engine frees it after reply.
 */
struct job {
	struct job *next;
	/* by the token holder, inside a batch; sets rc */
	void (*run)(struct job *j, struct queen *q);
	/* or, for n of them in a row with the same run_many, all at once:
	 * j and the n - 1 after it */
	void (*run_many)(struct job *j, size_t n, struct queen *q);
	/* for a job that locks a row until the commit: the order of two
	 * such jobs' rows (engine.c runs them first, in that order) */
	int (*lock_cmp)(const struct job *a, const struct job *b);
	/* after the commit; answers req unless it is NULL */
	void (*reply)(struct job *j);
	/* a write that failed for good (it will not run again): called
	 * by the token holder at the end of its batch, before reply and
	 * before any later batch runs (NULL: nothing to do) */
	void (*failed)(struct job *j);
	fuse_req_t req;
	int rc;
	bool write;         /* mutating: a failed commit turns rc into -EIO */
	bool lazy;          /* a write that need not survive a crash (lease) */
	bool evloop;        /* submitted by an event loop (HTTP): see
			     * engine_submit */
	bool reader;        /* reads the store and the node tree only: may
			     * run on the readers' connection (engine.c) */
	bool hold;          /* a RELEASE's publish, whose caller does not
			     * wait: it may wait for company (engine.c) */
	bool pass;          /* a pop, which may run before the publishes
			     * held back (engine.c) */
	bool ahead;         /* it runs so now: a pop takes only a whole
			     * batch (queen_pop_req.whole) */
	bool empty;         /* set by run: a pop that took nothing */
	/* run may run it again once its work was rolled back: a deadlock
	 * or a serialization failure (EBUSY) puts it back at the head of
	 * the queue, ahead of what came after it (engine.c) */
	bool redo;
	unsigned char tries; /* times it was put back so, or left unrun */
	/* set by run: park as a waiter until deadline (ms) or a push */
	bool wait;
	int64_t deadline, due;
	char *wait_queue;   /* malloc'd by run when it parks */
	char *wait_group;   /* and its group (NULL: queue mode) */
	char *notify;       /* malloc'd by run: it pushed into this queue */
	uint64_t waiter_id;
	uint64_t ticket;    /* held until the log is synced up to this */
	uint64_t need;      /* what its pops took needs synced (core's) */
};

/* main.c */
struct fs_state {
	struct fuse_session *se;
	uid_t uid;
	gid_t gid;
	int64_t started;    /* ms */
	bool debug;
	/* where big api/ requests spill: unlinked files beside the store */
	char spool[4096];
};
extern struct fs_state fs;

/* log.c: fs_log is info; fs_logl where the level matters */
enum fs_level { FSL_ERROR = 0, FSL_WARN, FSL_INFO, FSL_DEBUG };
void fs_log(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
void fs_logl(enum fs_level lv, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
int log_set_level(const char *name);
int log_choose(const char *target, bool foreground, const char *fallback);
void log_start(void);

/* args.c: the command line */
/* http.c: Queen's HTTP API (docs/http.md) */
#define HTTP_MAX_LISTEN 8
#define HTTP_MAX_CONNS 4096     /* open connections, per listener */
#define HTTP_IDLE_S 60          /* idle or stalled connection closed */
#define HTTP_CONN_MEM (64 * 1024)  /* request line and headers */
struct http_opts {
	const char *listen[HTTP_MAX_LISTEN];
	int n;
	const char *token_file;
	bool insecure;
};

struct opts {
	const char *db, *mountpoint, *sync, *log, *log_level;
	bool foreground, debug;
	int added_dp;   /* allow_other came without default_permissions */
	char fuse_o[4096];
	struct http_opts http;
};
void usage(FILE *f);
int parse_args(int argc, char **argv, struct opts *o);
/* store.c: the store's absolute path (creating its dir), and opening it */
int db_path(const char *given, char *out, size_t len);
int open_store(const char *path, enum queen_sync sync, struct queen **q);
/* the spool of staged attempts (stage.c) for this store and mountpoint */
int spool_open(const char *db, const char *mnt, enum queen_sync sync);

/* engine.c */
int engine_start(struct queen *q, struct queen *rq);
void engine_stop(void);
void engine_submit(struct job *j);
/* whether j, failing with -EBUSY in its run now, will be run again */
bool engine_will_redo(const struct job *j);
void engine_poll_watch(struct handle *h, const char *queue,
    struct fuse_pollhandle *ph, int64_t due);
void engine_poll_drop(struct handle *h);
struct engine_counters {
	uint64_t pushes, duplicates, acks, pops, commits, commit_jobs;
	uint64_t commit_max, commit_failures, waiters;
	uint64_t retries; /* waiters tried again (woken or due) */
	uint64_t holds;   /* runs of publishes held back for company */
	uint64_t redos;   /* jobs run again after a deadlock (EBUSY) */
};
void engine_counters(struct engine_counters *out);
uint64_t engine_reader_round_trips(void);
void engine_count_push(bool dup);
void engine_count_ack(void);
void engine_count_pop(void);
void engine_interrupt(uint64_t waiter_id);

/* http.c */
int http_check(const struct http_opts *o);
int http_start(const struct http_opts *o);
void http_quiesce(void);
void http_stop(void);

/* order.c: requests run after the RELEASEs read before them */
int order_start(struct fuse_session *se);
void order_release_done(void);
void order_test_delay(void);

/* node.c */
extern pthread_mutex_t fs_lock;
void node_init(void);
struct node *node_get(fuse_ino_t ino);
struct node *node_child(struct node *parent, const char *name, enum kind k);
void node_forget(struct node *n, uint64_t nlookup);
void node_open(struct node *n);
void node_close(struct node *n);
void node_unhash(struct node *parent, const char *name);
void node_move(struct node *parent, const char *name, const char *newname);
size_t node_path(struct node *n, char *buf, size_t len);
enum kind node_static(enum kind dir, const char *name, const char **status);
const char *node_static_at(enum kind dir, size_t i, enum kind *k);
bool node_is_dir(enum kind k);
bool node_is_reserved(const char *name);
bool node_dynamic(enum kind k);
void node_attr(struct node *n, struct stat *st);
struct node *node_owner_of(struct node *n);
void node_inval_heirs(struct node *o);
bool node_staging_name(const char *name);

/* cred.c: the caller's credentials, checked as the kernel would */
#define CRED_GROUPS 64
struct cred {
	uid_t uid;
	gid_t gid;
	fuse_req_t req; /* the groups are asked of it when needed */
	int ngroups;    /* -1: not asked yet (cred.c) */
	gid_t groups[CRED_GROUPS];
};
void cred_of(fuse_req_t req, struct cred *c);
bool cred_may(struct cred *c, uid_t uid, gid_t gid, mode_t mode, int want);
bool cred_may_node(struct cred *c, struct node *n, int want);

/* inval.c */
extern size_t fs_nodes;
int inval_start(void);
void inval_stop(void);
void inval_later(fuse_ino_t dir, const char *name);

/* pending.c */
void pend_published(struct pending *p);
void pend_kept(struct pending *p);
void pend_kept_at(struct pending *p, int fd, off_t off, size_t len);
void pend_unkept(struct pending *p);
void pend_kept_done(struct pending *p);
bool pend_kept_named(struct pending *p);
struct pending *pend_kept_of(struct pending *p);
bool pend_kept_as(enum pend_what w, const char *queue, const char *part,
    const char *name);
struct pending *pend_find(enum pend_what w, const char *queue,
    const char *part, const char *name, int64_t now);
struct pending *pend_new(enum pend_what w, const char *queue,
    const char *part, const char *name, int64_t now);
void pend_put(struct pending *p);
int pend_write(struct pending *p, const char *buf, size_t size, off_t off,
    int64_t now);
int pend_truncate(struct pending *p, off_t size, int64_t now);
void pend_rename(struct pending *p, const char *name);
void pend_drop(struct pending *p);
int pend_kill_replaced(enum pend_what w, const char *queue, const char *part,
    const char *name);
int pend_refused(struct pending *p);
size_t pend_list_kept(const char *queue, const char *part, struct dent **out);
size_t pend_list(enum pend_what w, const char *queue, const char *part,
    int64_t now, bool changing, struct dent **out);
void pend_sweep(int64_t now);
char *pend_snapshot(struct pending *p, size_t *len, unsigned *gen);
void pend_unsnap(struct pending *p, char *b, size_t len, unsigned gen);
bool pend_held(const struct pending *p);
ssize_t pend_read(struct pending *p, char *buf, size_t size, off_t off);
int64_t fs_now(void);

/* stage.c */
int stage_open(const char *dir, bool full);
const char *stage_dir(void);
int stage_save(struct pending *p);
bool stage_needed(const struct pending *p);
void stage_remove(struct pending *p);
void stage_keep(struct pending *p);
bool stage_kept_for(struct pending *p);
void stage_forget(struct stage_ref *ref);
void stage_counts(uint64_t *staged, uint64_t *syncs);
void stage_replay(struct queen *q);

/* text.c: generated file contents, rendered inside a job */
int text_readme(char **out, size_t *len);
size_t text_readme_len(void);
int text_config(struct queen *q, struct node *n, char **out, size_t *len);
int text_stats(struct queen *q, struct node *n, char **out, size_t *len);
int text_sys_stats(struct queen *q, struct cred *c, char **out, size_t *len);
int text_metrics(struct queen *q, struct cred *c, char **out, size_t *len);
int text_health(struct queen *q, char **out, size_t *len);
/* text_queues.c */
int text_sys_queues(struct queen *q, struct cred *c, char **out, size_t *len);

/* ops_*.c: the handlers */
void op_lookup(fuse_req_t req, fuse_ino_t parent, const char *name);
void op_forget(fuse_req_t req, fuse_ino_t ino, uint64_t nlookup);
void op_forget_multi(fuse_req_t req, size_t count,
    struct fuse_forget_data *forgets);
void op_getattr(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi);
void op_setattr(fuse_req_t req, fuse_ino_t ino, struct stat *attr, int to_set,
    struct fuse_file_info *fi);
void op_mkdir(fuse_req_t req, fuse_ino_t parent, const char *name,
    mode_t mode);
void op_rmdir(fuse_req_t req, fuse_ino_t parent, const char *name);
void op_symlink(fuse_req_t req, const char *link, fuse_ino_t parent,
    const char *name);
void op_link(fuse_req_t req, fuse_ino_t ino, fuse_ino_t newparent,
    const char *newname);
void op_opendir(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi);
void op_readdir(fuse_req_t req, fuse_ino_t ino, size_t size, off_t off,
    struct fuse_file_info *fi);
void op_releasedir(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi);
void op_statfs(fuse_req_t req, fuse_ino_t ino);
void op_open(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi);
void op_create(fuse_req_t req, fuse_ino_t parent, const char *name,
    mode_t mode, struct fuse_file_info *fi);
void op_mknod(fuse_req_t req, fuse_ino_t parent, const char *name,
    mode_t mode, dev_t rdev);
void op_read(fuse_req_t req, fuse_ino_t ino, size_t size, off_t off,
    struct fuse_file_info *fi);
void op_write(fuse_req_t req, fuse_ino_t ino, const char *buf, size_t size,
    off_t off, struct fuse_file_info *fi);
void op_flush(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi);
void op_release(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi);
void op_fsync(fuse_req_t req, fuse_ino_t ino, int datasync,
    struct fuse_file_info *fi);
void op_poll(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi,
    struct fuse_pollhandle *ph);
void op_rename(fuse_req_t req, fuse_ino_t parent, const char *name,
    fuse_ino_t newparent, const char *newname, unsigned int flags);
void op_unlink(fuse_req_t req, fuse_ino_t parent, const char *name);
void op_setxattr(fuse_req_t req, fuse_ino_t ino, const char *name,
    const char *value, size_t size, int flags);
void op_getxattr(fuse_req_t req, fuse_ino_t ino, const char *name,
    size_t size);
void op_listxattr(fuse_req_t req, fuse_ino_t ino, size_t size);
void op_removexattr(fuse_req_t req, fuse_ino_t ino, const char *name);

/* ops_dlq.c: requeue (rename) and purge (unlink) of dead letters */
int dlq_rename(fuse_req_t req, struct node *p, const char *name,
    struct node *np, const char *newname, const char *what);
int dlq_unlink(fuse_req_t req, struct node *p, const char *name);

/* name.c: transactionIds as file names (reversible; see name.c) */
#define NAME_MAX_BYTES 255
int txid_to_name(const char *txid, char *out, size_t len);
int name_to_txid(const char *name, char *out, size_t len);
bool name_is_msg(const char *name);
struct nameset {
	const char **slot;
	size_t mask;
};
int nameset_init(struct nameset *s, size_t n);
bool nameset_add(struct nameset *s, const char *name);
void nameset_free(struct nameset *s);

/* ops_api.c: a request held in memory up to API_MEM_MAX, on disk past it */
#define API_MEM_MAX (256u << 10)
void api_release(struct handle *h);
void api_read(fuse_req_t req, struct handle *h, size_t size, off_t off);
int api_write(struct handle *h, const char *buf, size_t size, off_t off);
void api_flush(fuse_req_t req, struct handle *h);
int ctl_write(struct handle *h, const char *buf, size_t size);
void ctl_flush(fuse_req_t req, struct handle *h);

/* shared by the ops files */
void next_read(fuse_req_t req, struct handle *h, size_t size, off_t off);
void push_rename(fuse_req_t req, struct node *dir, struct pending *pe,
    const char *oldname, const char *newname);
/* LOOKUP requests answered since start (sys/stats) */
extern _Atomic uint64_t fs_lookups;
void reply_entry(fuse_req_t req, struct node *n);
void reply_attr(fuse_req_t req, struct node *n);
/* the part of text at off, at most size bytes; nothing past its end */
void reply_slice(fuse_req_t req, const char *text, size_t len, size_t size,
    off_t off);
void *job_new(size_t size, void (*run)(struct job *, struct queen *),
    void (*reply)(struct job *), fuse_req_t req);
void reply_rc(struct job *j);
const char *errname(int err);
struct handle *handle_new(struct node *n);
struct handle *handle_get(struct fuse_file_info *fi);
void handle_put(struct handle *h);
/* note.c */
void note_set(const char *lease, const char *txid, const char *error,
    int64_t now);
char *note_take(const char *lease, const char *txid);
char *note_get(const char *lease, const char *txid);
/* the key of the notes of a stored message (no lease): "q/QUEUE/PART" */
void note_msg_key(const char *queue, const char *part, char *out, size_t len);
void note_sweep(int64_t now);
/* lease.c */
void lease_seen(const char *id, int64_t first);
int64_t lease_first(const char *id);
void lease_acked(const char *id, const char *txid);
bool lease_known(const char *id, const char *txid);
void lease_keep(struct queen_batch *b, uint64_t epoch);
bool lease_kept(const char *id, const char *queue, const char *group,
    int64_t now);
struct msginfo;
int lease_kept_msg(const char *id, const char *txid, int64_t now,
    bool want_payload, struct msginfo *mi);
int push_write_check(struct pending *pe, size_t end);
void push_refuse(struct pending *pe, int rc);
int push_pending(struct queen *q, struct pending *p, const char *txid,
    const char *buf, size_t len, bool excl, bool confirmed, char **notify,
    bool *dup);
struct msginfo;
int msg_info(struct queen *q, struct node *n, bool want_payload,
    struct msginfo *mi);

/* A message's facts, for attributes, payload reads and xattrs. */
struct msginfo {
	struct queen_batch *b;      /* owns the strings below; may be NULL */
	const struct queen_msg *m;
	char partition[QUEEN_NAME_MAX + 1];
	char partition_uuid[QUEEN_ID_LEN + 1];
	int64_t expires_at, retry_count, failed_at;
	char group[QUEEN_NAME_MAX + 1];
	char *error;                /* malloc'd or NULL */
	int64_t offset, created_at;
	size_t len;
	char *payload;              /* malloc'd when asked for */
};
void msginfo_release(struct msginfo *mi);
int msginfo_from_batch(struct msginfo *mi, const struct queen_batch *b,
    const char *txid, bool want_payload);

#endif
