/*
 * db.h - private to the SQLite backend (db.c, schema.c): the one place
 * SQLite result codes become errno values, and the migration entry.
 */
#ifndef DB_H
#define DB_H

#include <sqlite3.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "core.h"

int db_errno(int rc);
int schema_migrate(sqlite3 *db, bool read_only, char *err, size_t errlen);
/* vfs.c: the VFS to open with; spec, if not NULL, arms the test hook's
 * fault ("fsync:N", "write:N") */
int queen_vfs(const char *spec, const char **name, char *err, size_t errlen);
/* true when the hook says this fsync of the log (s_sync's own) must fail */
bool fault_fsync_fails(void);

/* ckpt.c: the checkpointer thread beside a store's connection db */
struct ckpt;
int ckpt_start(sqlite3 *db, const char *path, const char *vfs,
    const char *sync_sql, struct ckpt **out, char *err, size_t errlen);
void ckpt_stop(struct ckpt *c, sqlite3 *db);
/* ask for a round now; returns at once */
void ckpt_kick(struct ckpt *c);
/* the writer's, outside a transaction: copy the whole log and cut it to
 * nothing, giving its space back (SQLite's code) */
int ckpt_truncate(struct ckpt *c, sqlite3 *db);
/* the SQLite code of a checkpoint that failed for good (0: none), and why */
int ckpt_failed(struct ckpt *c, char *why, size_t len);
/* rounds run by the thread; checkpoints the writer ran itself */
void ckpt_counts(struct ckpt *c, uint64_t *rounds, uint64_t *hard);

/*
 * young.c: (h, id) pairs of txns rows not yet in the hashes table, in a
 * table whose slots run in nearly ascending h.  id is never 0.
 */
struct ytab {
	struct yent {
		int64_t h, id;
	} *e;
	size_t cap, n;
	unsigned bits;
};
int ytab_put(struct ytab *t, int64_t h, int64_t id);
/* cb for each pair with this h and lo <= id <= hi; stops at nonzero */
int ytab_find(const struct ytab *t, int64_t h, int64_t lo, int64_t hi,
    int (*cb)(void *arg, int64_t id), void *arg);
void ytab_free(struct ytab *t);

/* hfilter.c: a Bloom filter of h values, sized for cap of them (w NULL:
 * none) */
struct hfilt {
	uint64_t *w;
	uint64_t nblk;          /* 512-bit blocks */
	uint64_t n;             /* h added */
};
int hfilt_init(struct hfilt *f, uint64_t cap);
void hfilt_add(struct hfilt *f, int64_t h);
/* false: h was never added */
bool hfilt_has(const struct hfilt *f, int64_t h);
uint64_t hfilt_cap(const struct hfilt *f);
size_t hfilt_bytes(const struct hfilt *f);
void hfilt_free(struct hfilt *f);

/*
 * rcache.c: copies of queue, group and partition rows, for a store that
 * is its file's only writer.  Lookups answer false on a miss; db.c fills
 * a copy after each read from SQLite (counted as a miss), rewrites a partition's
 * counters when it writes them, drops a copy at any other update or
 * delete of its row, and clears them all at a rollback or a queue's
 * delete (which cascades).  An insert needs nothing: an id comes back only
 * after its row was deleted or rolled back.
 */
struct rcache;
int rcache_new(struct rcache **out);
void rcache_free(struct rcache *c);
void rcache_clear(struct rcache *c);
void rcache_counts(const struct rcache *c, uint64_t *hits, uint64_t *misses);
bool rcache_queue_by_id(struct rcache *c, int64_t id, struct queue_row *out);
bool rcache_queue_by_name(struct rcache *c, const char *name,
    struct queue_row *out);
void rcache_queue_put(struct rcache *c, const struct queue_row *r);
void rcache_queue_drop(struct rcache *c, int64_t id);
bool rcache_group_by_id(struct rcache *c, int64_t id, struct group_row *out);
bool rcache_group_by_name(struct rcache *c, int64_t qid, const char *name,
    struct group_row *out);
void rcache_group_put(struct rcache *c, const struct group_row *r);
void rcache_group_drop(struct rcache *c, int64_t id);
bool rcache_part_by_id(struct rcache *c, int64_t id, struct part_row *out);
bool rcache_part_by_name(struct rcache *c, int64_t qid, const char *name,
    struct part_row *out);
bool rcache_part_by_uuid(struct rcache *c, const char *uuid,
    struct part_row *out);
void rcache_part_put(struct rcache *c, const struct part_row *r);
/* head, tail, txns_start, last_push_at and duplicates, if r is held */
void rcache_part_counters(struct rcache *c, const struct part_row *r);

#endif
