/*
 * db_sync.c - the SQLite backend's durability: lazy commits, the fsync
 * of the log, checkpoints, and the counters the engine reports of them.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "store.h"

/*
 * A lazy commit runs at synchronous NORMAL: in WAL mode that writes the
 * frames without an fsync, while a checkpoint still syncs the log before
 * it copies and the database after (OFF would skip those, and a power
 * loss after a checkpoint could then tear the database).  The frames
 * reach the disk with the next synced commit or s_sync; until then a
 * crash may lose them, and only them.
 */
int
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
int
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

/*
 * After a write met a full disk (fail() sets s->full), copy the whole log
 * and cut it to nothing before anything else is written (s_begin) and at
 * every tick, until that works: the log never shrinks by itself, and a
 * write that grew it into the space the user freed would leave the
 * database none to take the log's pages.  No busy wait: the only other
 * connection is the checkpointer's, and take() keeps it out.
 */
void
s_reclaim(struct store *s)
{
	int rc;

	if (!s->full || !s->ck)
		return;
	sqlite3_busy_timeout(s->db, 0);
	rc = ckpt_truncate(s->ck, s->db);
	sqlite3_busy_timeout(s->db, BUSY_MS);
	if (rc == SQLITE_OK) {
		s->full = false;
		s->cuts++;
	}
}

/* The tick's: the checkpointer's thread takes it (ckpt.c).  1: the log
 * was cut since the last tick, to give a full disk its space back. */
int
s_checkpoint(struct store *s)
{
	int rc;

	if (!s->ck)
		return 0;
	if ((rc = ckpt_check(s)) != 0)
		return rc;
	s_reclaim(s);
	if ((rc = ckpt_check(s)) != 0)
		return rc;
	if (s->cuts != s->cuts_told) {
		s->cuts_told = s->cuts;
		return 1;
	}
	ckpt_kick(s->ck);
	return 0;
}

void
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

void
s_checkpoints(struct store *s, uint64_t *beside, uint64_t *in_writer)
{
	ckpt_counts(s->ck, beside, in_writer);
}
