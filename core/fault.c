/*
 * fault.c - a test hook: the "queen-fault" SQLite VFS, a wrapper around the
 * default VFS whose xSync (or xWrite) fails with SQLITE_IOERR after N
 * successful calls, as queen_options.fault asks ("fsync:N", "write:N").
 * It owns the wrapper and its one process-wide budget; db.c decides when a
 * connection opens through it.  Nothing here runs unless a fault is set.
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

#define FAULT_VFS "queen-fault"


enum fault_kind { FAULT_NONE, FAULT_SYNC, FAULT_WRITE };

/*
 * One budget for the process: the hook arms it at each open, and every
 * file opened through the wrapper spends from it.  Once it is spent, every
 * later call of that kind fails too, as a disk that went bad would.
 */
static _Atomic int kind = FAULT_NONE;
static _Atomic long long left;

static sqlite3_vfs *real;
static sqlite3_vfs wrap;
static pthread_once_t once = PTHREAD_ONCE_INIT;
static int reg_rc = SQLITE_OK;

struct ffile {
	sqlite3_file base;
	sqlite3_file *file;     /* the real one, allocated right after */
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
	return spend(FAULT_SYNC);
}

static int
f_close(sqlite3_file *f)
{
	return REAL(f)->pMethods->xClose(REAL(f));
}

static int
f_read(sqlite3_file *f, void *buf, int n, sqlite3_int64 off)
{
	return REAL(f)->pMethods->xRead(REAL(f), buf, n, off);
}

static int
f_write(sqlite3_file *f, const void *buf, int n, sqlite3_int64 off)
{
	if (spend(FAULT_WRITE))
		return SQLITE_IOERR_WRITE;
	return REAL(f)->pMethods->xWrite(REAL(f), buf, n, off);
}

static int
f_truncate(sqlite3_file *f, sqlite3_int64 size)
{
	return REAL(f)->pMethods->xTruncate(REAL(f), size);
}

static int
f_sync(sqlite3_file *f, int flags)
{
	if (spend(FAULT_SYNC))
		return SQLITE_IOERR_FSYNC;
	return REAL(f)->pMethods->xSync(REAL(f), flags);
}

static int
f_size(sqlite3_file *f, sqlite3_int64 *size)
{
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

static const sqlite3_io_methods fault_io = {
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

	(void)v;
	p->file = (sqlite3_file *)&p[1];
	p->file->pMethods = NULL;
	rc = real->xOpen(real, name, p->file, flags, out_flags);
	/* SQLite closes a file whose pMethods is set, even on failure */
	p->base.pMethods = p->file->pMethods ? &fault_io : NULL;
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
reg(void)
{
	real = sqlite3_vfs_find(NULL);
	if (!real) {
		reg_rc = SQLITE_ERROR;
		return;
	}
	wrap.iVersion = 2;
	wrap.szOsFile = (int)sizeof(struct ffile) + real->szOsFile;
	wrap.mxPathname = real->mxPathname;
	wrap.zName = FAULT_VFS;
	wrap.xOpen = v_open;
	wrap.xDelete = v_delete;
	wrap.xAccess = v_access;
	wrap.xFullPathname = v_full;
	wrap.xDlOpen = v_dlopen;
	wrap.xDlError = v_dlerror;
	wrap.xDlSym = v_dlsym;
	wrap.xDlClose = v_dlclose;
	wrap.xRandomness = v_random;
	wrap.xSleep = v_sleep;
	wrap.xCurrentTime = v_time;
	wrap.xGetLastError = v_lasterr;
	wrap.xCurrentTimeInt64 = v_time64;
	reg_rc = sqlite3_vfs_register(&wrap, 0);
}

/*
 * fault_vfs - parse spec ("fsync:N" or "write:N", N >= 0 calls that still
 * succeed), arm the process-wide budget with it, register the wrapper once,
 * and set *name to the VFS to open with.  -EINVAL (err says why), -EIO.
 */
int
fault_vfs(const char *spec, const char **name, char *err, size_t errlen)
{
	const char *colon = strchr(spec, ':');
	char *end = NULL;
	long long n;
	int k;

	*name = NULL;
	if (colon && colon - spec == 5 && !strncmp(spec, "fsync", 5))
		k = FAULT_SYNC;
	else if (colon && colon - spec == 5 && !strncmp(spec, "write", 5))
		k = FAULT_WRITE;
	else
		k = FAULT_NONE;
	errno = 0;
	n = k != FAULT_NONE && colon[1] >= '0' && colon[1] <= '9' ?
	    strtoll(colon + 1, &end, 10) : -1;
	if (k == FAULT_NONE || n < 0 || errno || *end) {
		snprintf(err, errlen, "fault %s: want fsync:N or write:N", spec);
		return -EINVAL;
	}
	pthread_once(&once, reg);
	if (reg_rc != SQLITE_OK) {
		snprintf(err, errlen, "fault: cannot register the %s VFS",
		    FAULT_VFS);
		return -EIO;
	}
	atomic_store(&kind, FAULT_NONE);
	atomic_store(&left, n);
	atomic_store(&kind, k);
	*name = FAULT_VFS;
	return 0;
}
