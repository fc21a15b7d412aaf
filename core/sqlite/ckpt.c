/*
 * ckpt.c - the SQLite store's checkpointer: a thread with a connection of
 * its own that copies the write-ahead log into the database while the
 * store's connection goes on writing.
 *
 * A checkpoint in the writer's commit (SQLite's default, at 1000 pages)
 * holds every request behind it for an fsync of the log, the copy and an
 * fsync of the database: 5-8 ms on this kind of disk, the tail of every
 * latency the mount measures.  Here the writer's commit hook only wakes
 * the thread, once per CKPT_SOFT pages written; the thread's passive
 * checkpoint takes no writer lock, so commits go on meanwhile.
 *
 * The log can start again from its beginning only when a write finds all
 * of it copied, and a writer that never pauses keeps it a few frames
 * ahead of the thread.  So at CKPT_HARD pages the writer copies the rest
 * itself, as SQLite would have, and the next write restarts the log; by
 * then the thread has copied and synced almost all of it, so the writer's
 * share is small.  If the thread is in a round then (a slow disk), the
 * writer waits for it to end first: the log stays under CKPT_HARD pages
 * (16 MB) and one commit's.
 *
 * Both connections open through the same VFS ("unix-excl" underneath,
 * vfs.c): the wal-index lives in this process's heap, a lock taken by one
 * connection costs the other no system call, and no other process can
 * open the file.  A checkpoint that fails with an I/O error or corruption
 * is kept, and ckpt_failed() reports it: the store then stops writing.
 */
#include <errno.h>
#include <pthread.h>
#include <sqlite3.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "db.h"

#define CKPT_SOFT 1000  /* pages: wake the thread (SQLite's own mark) */
#define CKPT_HARD 4000  /* pages: the writer copies the rest itself */

struct ckpt {
	sqlite3 *db;            /* the thread's own connection */
	pthread_t th;
	pthread_mutex_t mu;
	pthread_cond_t cv;      /* want or stop */
	pthread_cond_t idle;    /* busy went false */
	bool want, stop;        /* under mu */
	bool busy;              /* a checkpoint runs (thread or writer) */
	int mark;               /* the writer's: CKPT_SOFT marks passed */
	_Atomic int failed;     /* SQLite code of a failed checkpoint */
	char why[200];          /* its message, written once before failed */
	_Atomic uint64_t rounds, hard;  /* that copied pages */
	_Atomic uint64_t truncs;        /* ckpt_truncate's that did */
};

/* Keep the first failure that means the disk or the file is bad. */
static void
note(struct ckpt *c, sqlite3 *db, int rc)
{
	int p = rc & 0xff, none = 0;

	if (p != SQLITE_IOERR && p != SQLITE_CORRUPT && p != SQLITE_NOTADB)
		return;         /* busy, full: the next round tries again */
	pthread_mutex_lock(&c->mu);
	if (atomic_load(&c->failed) == 0) {
		snprintf(c->why, sizeof(c->why), "checkpoint: %s (%d)",
		    sqlite3_errmsg(db), sqlite3_extended_errcode(db));
		atomic_compare_exchange_strong(&c->failed, &none, rc);
	}
	pthread_mutex_unlock(&c->mu);
}

void
ckpt_kick(struct ckpt *c)
{
	pthread_mutex_lock(&c->mu);
	c->want = true;
	pthread_cond_signal(&c->cv);
	pthread_mutex_unlock(&c->mu);
}

/* One checkpoint at a time, so that the writer's can wait for a round. */
static void
take(struct ckpt *c)
{
	pthread_mutex_lock(&c->mu);
	while (c->busy)
		pthread_cond_wait(&c->idle, &c->mu);
	c->busy = true;
	pthread_mutex_unlock(&c->mu);
}

static void
give(struct ckpt *c)
{
	pthread_mutex_lock(&c->mu);
	c->busy = false;
	pthread_cond_broadcast(&c->idle);
	pthread_mutex_unlock(&c->mu);
}

/* SQLite's commit hook on the store's connection, on the writer's thread. */
static int
on_commit(void *arg, sqlite3 *db, const char *name, int pages)
{
	struct ckpt *c = arg;
	int rc;

	if (pages < CKPT_SOFT) {
		c->mark = 0;
		return SQLITE_OK;
	}
	if (pages >= CKPT_HARD) {
		/* a round under way first: the log must stop growing here */
		take(c);
		rc = sqlite3_wal_checkpoint_v2(db, name,
		    SQLITE_CHECKPOINT_PASSIVE, NULL, NULL);
		give(c);
		if (rc == SQLITE_OK)
			atomic_fetch_add(&c->hard, 1);
		else
			note(c, db, rc);
		return SQLITE_OK;       /* the commit itself has happened */
	}
	if (pages / CKPT_SOFT > c->mark) {
		c->mark = pages / CKPT_SOFT;
		ckpt_kick(c);
	}
	return SQLITE_OK;
}

/*
 * A log that reached its size keeps it: SQLite writes it again from its
 * beginning, but never makes it smaller.  When a write met a full disk,
 * that space may be all the disk has left, and the database itself
 * cannot grow into what the user freed if the log takes it first; so
 * the tick asks for the log's space back (s_checkpoint).  A truncating
 * checkpoint copies every frame, then cuts the file to nothing.  It
 * needs the database to grow by what is new in the log, so on a disk
 * still full it fails with SQLITE_FULL and the next tick tries again.
 */
int
ckpt_truncate(struct ckpt *c, sqlite3 *db)
{
	int rc;

	take(c);
	rc = sqlite3_wal_checkpoint_v2(db, "main", SQLITE_CHECKPOINT_TRUNCATE,
	    NULL, NULL);
	give(c);
	if (rc == SQLITE_OK)
		atomic_fetch_add(&c->truncs, 1);
	else
		note(c, db, rc);
	return rc;
}

static void *
loop(void *arg)
{
	struct ckpt *c = arg;
	int rc, frames, copied, last = -1;

	pthread_mutex_lock(&c->mu);
	for (;;) {
		while (!c->want && !c->stop)
			pthread_cond_wait(&c->cv, &c->mu);
		if (c->stop)
			break;
		c->want = false;
		while (c->busy)
			pthread_cond_wait(&c->idle, &c->mu);
		c->busy = true;
		pthread_mutex_unlock(&c->mu);
		rc = sqlite3_wal_checkpoint_v2(c->db, "main",
		    SQLITE_CHECKPOINT_PASSIVE, &frames, &copied);
		give(c);
		if (rc != SQLITE_OK)
			note(c, c->db, rc);
		/* counted when it copied something (a quiet tick's does not) */
		if (rc == SQLITE_OK && copied > 0 && copied != last)
			atomic_fetch_add(&c->rounds, 1);
		last = copied;
		pthread_mutex_lock(&c->mu);
	}
	pthread_mutex_unlock(&c->mu);
	return NULL;
}

int
ckpt_start(sqlite3 *db, const char *path, const char *vfs,
    const char *sync_sql, struct ckpt **out, char *err, size_t errlen)
{
	struct ckpt *c = calloc(1, sizeof(*c));
	char *msg = NULL;
	int rc;

	*out = NULL;
	if (!c)
		return -ENOMEM;
	pthread_mutex_init(&c->mu, NULL);
	pthread_cond_init(&c->cv, NULL);
	pthread_cond_init(&c->idle, NULL);
	rc = sqlite3_open_v2(path, &c->db, SQLITE_OPEN_READWRITE |
	    SQLITE_OPEN_NOMUTEX, vfs);
	if (c->db)
		sqlite3_extended_result_codes(c->db, 1);
	/* a read opens the log, which a checkpoint needs; the cache only
	 * serves that read: a checkpoint copies frame by frame */
	if (rc == SQLITE_OK)
		rc = sqlite3_exec(c->db, "PRAGMA cache_size = 8; "
		    "SELECT count(*) FROM sqlite_schema", NULL, NULL, &msg);
	if (rc == SQLITE_OK)
		rc = sqlite3_exec(c->db, sync_sql, NULL, NULL, &msg);
	if (rc == SQLITE_OK && (rc = pthread_create(&c->th, NULL, loop,
	    c)) != 0) {
		snprintf(err, errlen, "checkpointer: no thread (%s)",
		    strerror(rc));
		rc = -rc;
	} else if (rc != SQLITE_OK) {
		snprintf(err, errlen, "checkpointer: %s", msg ? msg :
		    c->db ? sqlite3_errmsg(c->db) : "out of memory");
		rc = db_errno(c->db ? sqlite3_extended_errcode(c->db) : rc);
		if (rc == 0)
			rc = -EIO;
	}
	sqlite3_free(msg);
	if (rc != 0) {
		sqlite3_close(c->db);
		pthread_cond_destroy(&c->idle);
		pthread_cond_destroy(&c->cv);
		pthread_mutex_destroy(&c->mu);
		free(c);
		return rc;
	}
	sqlite3_wal_hook(db, on_commit, c);
	*out = c;
	return 0;
}

/* Stop the thread (a round under way finishes first) and close. */
void
ckpt_stop(struct ckpt *c, sqlite3 *db)
{
	if (!c)
		return;
	sqlite3_wal_hook(db, NULL, NULL);
	pthread_mutex_lock(&c->mu);
	c->stop = true;
	pthread_cond_signal(&c->cv);
	pthread_mutex_unlock(&c->mu);
	pthread_join(c->th, NULL);
	sqlite3_close(c->db);
	pthread_cond_destroy(&c->idle);
	pthread_cond_destroy(&c->cv);
	pthread_mutex_destroy(&c->mu);
	free(c);
}

int
ckpt_failed(struct ckpt *c, char *why, size_t len)
{
	int rc = c ? atomic_load(&c->failed) : 0;

	if (rc) {
		pthread_mutex_lock(&c->mu);
		snprintf(why, len, "%s", c->why);
		pthread_mutex_unlock(&c->mu);
	}
	return rc;
}

void
ckpt_counts(struct ckpt *c, uint64_t *rounds, uint64_t *hard)
{
	*rounds = c ? atomic_load(&c->rounds) : 0;
	*hard = c ? atomic_load(&c->hard) : 0;
}
