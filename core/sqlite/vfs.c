/*
 * vfs.c - the SQLite VFS every store opens through: a thin wrapper around
 * SQLite's "unix-excl" VFS (the unix one, except that it locks the file
 * against other processes once and for all, and keeps the wal-index in
 * the heap, shared by this process's connections) that does two things.
 *
 * It gathers the write-ahead log's writes.  SQLite writes each frame of a
 * commit as two pwrite(2) calls (a 24-byte header, then the page), so a
 * push that dirties four pages costs eight system calls.  Writes that
 * continue the log are copied into a buffer instead and written as one
 * when the commit frame is complete (its header carries the database size
 * after the commit; the others carry 0), before anything reads, syncs,
 * truncates or measures the log, and when a write does not continue it.
 * So a commit is in the kernel, where kill -9 cannot take it, before
 * SQLite's commit returns, exactly as without the buffer, and a failed
 * write fails the commit that made it.
 *
 * As a test hook, "queen-fault" (the same wrapper) makes xSync or xWrite
 * fail with SQLITE_IOERR after N successful calls, as queen_tune.fault
 * asks ("fsync:N", "write:N"; "logsync:N" spends only on queen_sync's own
 * fsync of the log, not SQLite's); every file opened through it spends from
 * one process-wide budget.  db.c decides which of the two a store opens.
 */
#include <errno.h>
#include <limits.h>
#include <pthread.h>
#include <sqlite3.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "db.h"

#define PLAIN_VFS "queen"
#define FAULT_VFS "queen-fault"
/* under 128 KiB: the unix VFS masks a single write's size with 0x1ffff */
#define WALBUF_MAX (64 * 1024)
#define FRAME_HDR 24


/* FAULT_LOGSYNC: only queen_sync's own fsync of the log (db.c) fails */
enum fault_kind { FAULT_NONE, FAULT_SYNC, FAULT_WRITE, FAULT_LOGSYNC };

/*
 * One budget for the process: the hook arms it at each open, and every
 * file opened through the fault wrapper spends from it.  Once it is spent,
 * every later call of that kind fails too, as a disk that went bad would.
 */
static _Atomic int kind = FAULT_NONE;
static _Atomic long long left;

static sqlite3_vfs *real;
static sqlite3_vfs plain, faulty;
static pthread_once_t once = PTHREAD_ONCE_INIT;
static int reg_rc = SQLITE_OK;

struct ffile {
	sqlite3_file base;
	sqlite3_file *file;     /* the real one, allocated right after */
	bool fault;             /* opened through the fault wrapper */
	bool wal;               /* a write-ahead log: its writes gather */
	bool commit;            /* the frame being gathered ends a commit */
	char *buf;              /* WALBUF_MAX bytes, once the log is written */
	size_t len;             /* gathered bytes, for file offset off */
	sqlite3_int64 off;
};

#define REAL(f) (((struct ffile *)(f))->file)

/* true when this call of kind k must fail */
static bool
spend(int k)
{
	if (atomic_load(&kind) != k)
		return false;
	return atomic_fetch_sub(&left, 1) <= 0;
}

bool
fault_fsync_fails(void)
{
	return spend(FAULT_SYNC) || spend(FAULT_LOGSYNC);
}

/* Write out what is gathered; the next append goes right after it. */
static int
drain(struct ffile *p)
{
	int rc;

	if (p->len == 0)
		return SQLITE_OK;
	rc = p->file->pMethods->xWrite(p->file, p->buf, (int)p->len, p->off);
	p->off += (sqlite3_int64)p->len;
	p->len = 0;
	p->commit = false;
	return rc;
}

/*
 * A write to the log: gathered if it continues what is gathered (or what
 * was written last), else written through (the log's header at a restart,
 * a frame header rewritten with new checksums).  Either way a frame header
 * says whether its frame ends a commit, and the page that completes such
 * a frame sends everything gathered to the kernel.
 */
static int
gather(struct ffile *p, const void *data, int n, sqlite3_int64 at)
{
	const unsigned char *h = data;
	bool hdr = n == FRAME_HDR;
	/* a page belongs to the frame whose header came last: the flag
	 * must outlive a drain for room between the two */
	bool commit = hdr ? (h[4] | h[5] | h[6] | h[7]) != 0 : p->commit;
	int rc;

	if (at != p->off + (sqlite3_int64)p->len ||
	    p->len + (size_t)n > WALBUF_MAX) {
		if ((rc = drain(p)) != SQLITE_OK)
			return rc;
	}
	if (!p->buf)
		p->buf = malloc(WALBUF_MAX);
	if (at != p->off + (sqlite3_int64)p->len || !p->buf ||
	    (size_t)n > WALBUF_MAX) {
		rc = p->file->pMethods->xWrite(p->file, data, n, at);
		p->off = at + n;
		p->commit = hdr && commit;
		return rc;
	}
	memcpy(p->buf + p->len, data, (size_t)n);
	p->len += (size_t)n;
	p->commit = commit;
	if (hdr)
		return SQLITE_OK;
	return commit ? drain(p) : SQLITE_OK;
}

static int
f_close(sqlite3_file *f)
{
	struct ffile *p = (struct ffile *)f;
	int rc = drain(p), crc;

	free(p->buf);
	p->buf = NULL;
	crc = REAL(f)->pMethods->xClose(REAL(f));
	return rc != SQLITE_OK ? rc : crc;
}

static int
f_read(sqlite3_file *f, void *buf, int n, sqlite3_int64 off)
{
	int rc = drain((struct ffile *)f);

	if (rc != SQLITE_OK)
		return rc;
	return REAL(f)->pMethods->xRead(REAL(f), buf, n, off);
}

static int
f_write(sqlite3_file *f, const void *buf, int n, sqlite3_int64 off)
{
	struct ffile *p = (struct ffile *)f;

	if (p->fault && spend(FAULT_WRITE))
		return SQLITE_IOERR_WRITE;
	if (p->wal)
		return gather(p, buf, n, off);
	return REAL(f)->pMethods->xWrite(REAL(f), buf, n, off);
}

static int
f_truncate(sqlite3_file *f, sqlite3_int64 size)
{
	struct ffile *p = (struct ffile *)f;
	int rc = drain(p);

	if (rc != SQLITE_OK)
		return rc;
	p->off = -1;    /* no write continues a cut */
	return REAL(f)->pMethods->xTruncate(REAL(f), size);
}

static int
f_sync(sqlite3_file *f, int flags)
{
	struct ffile *p = (struct ffile *)f;
	int rc = drain(p);

	if (rc != SQLITE_OK)
		return rc;
	if (p->fault && spend(FAULT_SYNC))
		return SQLITE_IOERR_FSYNC;
	return REAL(f)->pMethods->xSync(REAL(f), flags);
}

static int
f_size(sqlite3_file *f, sqlite3_int64 *size)
{
	int rc = drain((struct ffile *)f);

	if (rc != SQLITE_OK)
		return rc;
	return REAL(f)->pMethods->xFileSize(REAL(f), size);
}

static int
f_lock(sqlite3_file *f, int l)
{
	return REAL(f)->pMethods->xLock(REAL(f), l);
}

static int
f_unlock(sqlite3_file *f, int l)
{
	return REAL(f)->pMethods->xUnlock(REAL(f), l);
}

static int
f_check(sqlite3_file *f, int *out)
{
	return REAL(f)->pMethods->xCheckReservedLock(REAL(f), out);
}

static int
f_control(sqlite3_file *f, int op, void *arg)
{
	/* some ask about the file (its size, a pointer to it): be current */
	int rc = drain((struct ffile *)f);

	if (rc != SQLITE_OK)
		return rc;
	return REAL(f)->pMethods->xFileControl(REAL(f), op, arg);
}

static int
f_sector(sqlite3_file *f)
{
	return REAL(f)->pMethods->xSectorSize(REAL(f));
}

static int
f_dev(sqlite3_file *f)
{
	return REAL(f)->pMethods->xDeviceCharacteristics(REAL(f));
}

static int
f_shm_map(sqlite3_file *f, int pg, int sz, int ext, void volatile **pp)
{
	const sqlite3_io_methods *m = REAL(f)->pMethods;

	if (m->iVersion < 2 || !m->xShmMap)
		return SQLITE_IOERR_SHMMAP;
	return m->xShmMap(REAL(f), pg, sz, ext, pp);
}

static int
f_shm_lock(sqlite3_file *f, int off, int n, int flags)
{
	const sqlite3_io_methods *m = REAL(f)->pMethods;

	if (m->iVersion < 2 || !m->xShmLock)
		return SQLITE_IOERR_SHMLOCK;
	return m->xShmLock(REAL(f), off, n, flags);
}

static void
f_shm_barrier(sqlite3_file *f)
{
	const sqlite3_io_methods *m = REAL(f)->pMethods;

	if (m->iVersion >= 2 && m->xShmBarrier)
		m->xShmBarrier(REAL(f));
}

static int
f_shm_unmap(sqlite3_file *f, int del)
{
	const sqlite3_io_methods *m = REAL(f)->pMethods;

	if (m->iVersion < 2 || !m->xShmUnmap)
		return SQLITE_OK;
	return m->xShmUnmap(REAL(f), del);
}

static int
f_fetch(sqlite3_file *f, sqlite3_int64 off, int n, void **pp)
{
	const sqlite3_io_methods *m = REAL(f)->pMethods;

	*pp = NULL;
	if (m->iVersion < 3 || !m->xFetch)
		return SQLITE_OK;
	return m->xFetch(REAL(f), off, n, pp);
}

static int
f_unfetch(sqlite3_file *f, sqlite3_int64 off, void *p)
{
	const sqlite3_io_methods *m = REAL(f)->pMethods;

	if (m->iVersion < 3 || !m->xUnfetch)
		return SQLITE_OK;
	return m->xUnfetch(REAL(f), off, p);
}

static const sqlite3_io_methods queen_io = {
	.iVersion = 3,
	.xClose = f_close,
	.xRead = f_read,
	.xWrite = f_write,
	.xTruncate = f_truncate,
	.xSync = f_sync,
	.xFileSize = f_size,
	.xLock = f_lock,
	.xUnlock = f_unlock,
	.xCheckReservedLock = f_check,
	.xFileControl = f_control,
	.xSectorSize = f_sector,
	.xDeviceCharacteristics = f_dev,
	.xShmMap = f_shm_map,
	.xShmLock = f_shm_lock,
	.xShmBarrier = f_shm_barrier,
	.xShmUnmap = f_shm_unmap,
	.xFetch = f_fetch,
	.xUnfetch = f_unfetch,
};

static int
v_open(sqlite3_vfs *v, sqlite3_filename name, sqlite3_file *f, int flags,
    int *out_flags)
{
	struct ffile *p = (struct ffile *)f;
	int rc;

	memset(p, 0, sizeof(*p));
	p->file = (sqlite3_file *)&p[1];
	p->file->pMethods = NULL;
	p->fault = v == &faulty;
	p->wal = (flags & SQLITE_OPEN_WAL) != 0;
	rc = real->xOpen(real, name, p->file, flags, out_flags);
	/* SQLite closes a file whose pMethods is set, even on failure */
	p->base.pMethods = p->file->pMethods ? &queen_io : NULL;
	return rc;
}

static int
v_delete(sqlite3_vfs *v, const char *name, int dirsync)
{
	return real->xDelete(real, name, dirsync);
}

static int
v_access(sqlite3_vfs *v, const char *name, int flags, int *out)
{
	return real->xAccess(real, name, flags, out);
}

static int
v_full(sqlite3_vfs *v, const char *name, int n, char *out)
{
	return real->xFullPathname(real, name, n, out);
}

static void *
v_dlopen(sqlite3_vfs *v, const char *name)
{
	return real->xDlOpen(real, name);
}

static void
v_dlerror(sqlite3_vfs *v, int n, char *msg)
{
	real->xDlError(real, n, msg);
}

static void (*v_dlsym(sqlite3_vfs *v, void *h, const char *sym))(void)
{
	return real->xDlSym(real, h, sym);
}

static void
v_dlclose(sqlite3_vfs *v, void *h)
{
	real->xDlClose(real, h);
}

static int
v_random(sqlite3_vfs *v, int n, char *out)
{
	return real->xRandomness(real, n, out);
}

static int
v_sleep(sqlite3_vfs *v, int us)
{
	return real->xSleep(real, us);
}

static int
v_time(sqlite3_vfs *v, double *out)
{
	return real->xCurrentTime(real, out);
}

static int
v_lasterr(sqlite3_vfs *v, int n, char *out)
{
	return real->xGetLastError ? real->xGetLastError(real, n, out) : 0;
}

static int
v_time64(sqlite3_vfs *v, sqlite3_int64 *out)
{
	double d;
	int rc;

	if (real->iVersion >= 2 && real->xCurrentTimeInt64)
		return real->xCurrentTimeInt64(real, out);
	rc = real->xCurrentTime(real, &d);
	*out = (sqlite3_int64)(d * 86400000.0);
	return rc;
}

static void
fill(sqlite3_vfs *w, const char *name)
{
	w->iVersion = 2;
	w->szOsFile = (int)sizeof(struct ffile) + real->szOsFile;
	w->mxPathname = real->mxPathname;
	w->zName = name;
	w->xOpen = v_open;
	w->xDelete = v_delete;
	w->xAccess = v_access;
	w->xFullPathname = v_full;
	w->xDlOpen = v_dlopen;
	w->xDlError = v_dlerror;
	w->xDlSym = v_dlsym;
	w->xDlClose = v_dlclose;
	w->xRandomness = v_random;
	w->xSleep = v_sleep;
	w->xCurrentTime = v_time;
	w->xGetLastError = v_lasterr;
	w->xCurrentTimeInt64 = v_time64;
}

static void
reg(void)
{
	/*
	 * SQLite counts every allocation under a global mutex unless told
	 * not to; nothing here reads those counts.  Only possible before
	 * SQLite's first use in the process (else SQLITE_MISUSE, and the
	 * counting stays: harmless).
	 */
	(void)sqlite3_config(SQLITE_CONFIG_MEMSTATUS, 0);
	/* the unix VFS that locks the file against other processes once,
	 * and keeps the wal-index in this process's heap (see ckpt.c) */
	real = sqlite3_vfs_find("unix-excl");
	if (!real) {
		reg_rc = SQLITE_NOTFOUND;
		return;
	}
	fill(&plain, PLAIN_VFS);
	fill(&faulty, FAULT_VFS);
	reg_rc = sqlite3_vfs_register(&plain, 0);
	if (reg_rc == SQLITE_OK)
		reg_rc = sqlite3_vfs_register(&faulty, 0);
}

/*
 * queen_vfs - register the wrappers once and set *name to the VFS to open
 * with.  With a fault spec ("fsync:N", "logsync:N" or "write:N", N >= 0 calls that
 * still succeed) it is the fault wrapper, and the process-wide budget is
 * armed with it.  -EINVAL (err says why), -EIO.
 */
int
queen_vfs(const char *spec, const char **name, char *err, size_t errlen)
{
	const char *colon = spec ? strchr(spec, ':') : NULL;
	char *end = NULL;
	long long n;
	int k;

	*name = NULL;
	if (spec) {
		if (colon && colon - spec == 5 && !strncmp(spec, "fsync", 5))
			k = FAULT_SYNC;
		else if (colon && colon - spec == 5 &&
		    !strncmp(spec, "write", 5))
			k = FAULT_WRITE;
		else if (colon && colon - spec == 7 &&
		    !strncmp(spec, "logsync", 7))
			k = FAULT_LOGSYNC;
		else
			k = FAULT_NONE;
		errno = 0;
		n = k != FAULT_NONE && colon[1] >= '0' && colon[1] <= '9' ?
		    strtoll(colon + 1, &end, 10) : -1;
		if (k == FAULT_NONE || n < 0 || errno || *end) {
			snprintf(err, errlen, "fault %s: want fsync:N, "
			    "logsync:N or write:N", spec);
			return -EINVAL;
		}
	}
	pthread_once(&once, reg);
	if (reg_rc != SQLITE_OK) {
		snprintf(err, errlen, reg_rc == SQLITE_NOTFOUND ?
		    "this SQLite has no unix-excl VFS" :
		    "cannot register the %s VFS", PLAIN_VFS);
		return -EIO;
	}
	if (!spec) {
		*name = PLAIN_VFS;
		return 0;
	}
	atomic_store(&kind, FAULT_NONE);
	atomic_store(&left, n);
	atomic_store(&kind, k);
	*name = FAULT_VFS;
	return 0;
}
