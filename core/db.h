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

#endif
