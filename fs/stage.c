/*
 * stage.c - attempts staged on disk between the close(2) that confirmed
 * them and their publication.  Every FLUSH of an open file with bytes not
 * yet staged appends them, whole, as a record to a journal beside the
 * database, and at sync level full waits until an fdatasync covers the
 * record: close()'s 0 means the bytes survive kill -9, and a full disk
 * comes back from close.  The RELEASE publishes and appends a "done"
 * record (where none fits, a full disk, the record is made one in
 * place).  Closes that arrive together share one fdatasync: whoever finds
 * none under way runs it for everything appended so far, the rest wait.
 *
 * The journal is a series of files DB.spool/RUN-N.j (RUN: the daemon's
 * start time).  A file takes new attempts until it holds SEG_MAX bytes,
 * and goes once none of its records is an attempt still waiting; every
 * record of an attempt, and its "done", go to the attempt's first file,
 * so each file can be replayed alone.  A record is a head (magic, body
 * length, attempt id, kind, a checksum of the body) and a body: the
 * header fields a publish needs, then the bytes.  A record cut short by a crash fails its checksum and
 * ends the file's replay; nothing after it was confirmed.
 *
 * Publishes that failed (a full disk, a row held elsewhere) are kept in
 * memory, in the order they failed; later publishes into a partition
 * with a kept one are kept behind it untried (ops_push.c), and the
 * engine's tick tries them again in that order, up to the first that
 * fails again (then skipping only its partition's), each waiting only
 * briefly for a row.  At start, every journal a previous run left is
 * replayed before the mount serves anything: each attempt's latest
 * record with no "done" is published.  An attempt published just before
 * a crash, whose "done" never reached the disk, is published again: the
 * store's dedup window answers it as a duplicate.  Files in the older
 * one-file-per-attempt format are still replayed.  No SQL here:
 * publishing is push.c's.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/uio.h>
#include <unistd.h>

#include "fs.h"

#define STAGE_MAGIC "QFSSTAGE1"
#define REC_MAGIC 0x314a5351u /* "QSJ1" */
#define SEG_MAX (8u << 20)    /* bytes: a file takes no new records */
#define SEG_SOFT (1u << 20)   /* ... and goes, once idle, past this */
#define SEG_GROW (64u << 10)  /* bytes allocated ahead of the records */
#define BODY_MAX ((uint32_t)1 << 31)

enum { R_STAGE = 1, R_DONE = 2 };

struct rec {
	uint32_t magic;
	uint32_t len; /* of the body */
	uint64_t id;  /* the attempt's: this run's seq */
	uint32_t kind;
	uint32_t pad;
	uint64_t sum; /* FNV-1a of the body */
};

struct seg {
	int fd;
	unsigned no;
	off_t end;     /* appended */
	off_t synced;  /* covered by an fdatasync */
	off_t alloc;   /* allocated ahead (rec_put): the file's size */
	int err;       /* a write or sync failed: no new records */
	unsigned live; /* records that are an attempt's latest */
	struct seg *next;
};

/* p->stage: where the attempt's latest record is */
struct stage_ref {
	uint64_t id;
	struct seg *seg;
	off_t off; /* of the body */
	uint32_t len;
	uint32_t hlen;          /* of which the header */
	struct stage_ref *next; /* on the kept list */
	char *target;           /* kept: what it publishes where */
	struct pending *pend;   /* kept: its attempt (a reference) */
	/* fs_lock: stage_saves of it under way (a flush that finds one
	 * waits for its own), and stage_remove's wish that the last one
	 * let go of it */
	unsigned saving;
	bool drop;
};

static char spool[4096];
static bool durable;
static _Atomic uint64_t seq;
static _Atomic bool retry_due, replay_all = true;
static int last_rc;  /* the last retry's, logged once (replay) */
static bool serving; /* the start's replay is done */
/* one staging of an attempt at a time (closes of its dups race) */
static pthread_mutex_t stripes[64];

/* the journal: segs (newest first, the first takes new records), the
 * sync leader, publishes to try again */
static pthread_mutex_t jmu = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t jcv = PTHREAD_COND_INITIALIZER;
static struct seg *segs;
static unsigned seg_no;
static bool leading;
static struct stage_ref *kept, **kept_tail = &kept; /* oldest first */
static uint64_t syncs;            /* fdatasyncs of the journal */
static _Atomic uint64_t old_left; /* previous runs' still waiting */
static _Atomic unsigned nkept;    /* this run's kept publishes */

int
stage_open(const char *dir, bool full)
{
	if (snprintf(spool, sizeof(spool), "%s", dir) >= (int)sizeof(spool))
		return -ENAMETOOLONG;
	if (mkdir(spool, 0700) < 0 && errno != EEXIST)
		return -errno;
	durable = full;
	for (int i = 0; i < 64; i++)
		pthread_mutex_init(&stripes[i], NULL);
	return 0;
}

/* the spool's directory ("" before stage_open) */
const char *
stage_dir(void)
{
	return spool;
}

static int
sync_dir(void)
{
	int fd, rc = 0;

	if (!durable)
		return 0;
	if ((fd = open(spool, O_RDONLY | O_DIRECTORY | O_CLOEXEC)) < 0)
		return -errno;
	if (fsync(fd) < 0)
		rc = -errno;
	close(fd);
	return rc;
}

static uint64_t
fnv(uint64_t h, const void *data, size_t len)
{
	const unsigned char *p = data;

	while (len--) {
		h ^= *p++;
		h *= 0x100000001b3ull;
	}
	return h;
}
#define FNV_INIT 0xcbf29ce484222325ull

/* The header: the fields a publish needs, NUL-terminated, in one line. */
static int
header(const struct pending *p, char *out, size_t cap, size_t *len)
{
	int n = snprintf(out, cap, "%s%c%d%c%d%c%lld%c%lld%c%s%c%s%c%s%c",
	    STAGE_MAGIC, 0, (int)p->what, 0, p->excl ? 1 : 0, 0,
	    (long long)p->due_at, 0, (long long)p->ttl_ms, 0, p->queue, 0,
	    p->part ? p->part : "", 0, p->name, 0);

	if (n < 0 || (size_t)n >= cap)
		return -ENAMETOOLONG;
	*len = (size_t)n;
	return 0;
}

static void
seg_path(unsigned no, char *out, size_t len)
{
	snprintf(out, len, "%s/%lld-%u.j", spool, (long long)fs.started, no);
}

/* Under jmu, with no sync under way: a file nobody needs goes. */
static void
seg_free(struct seg *g)
{
	char path[4200];
	struct seg **pp;

	for (pp = &segs; *pp && *pp != g; pp = &(*pp)->next)
		;
	if (*pp)
		*pp = g->next;
	seg_path(g->no, path, sizeof(path));
	unlink(path);
	close(g->fd);
	free(g);
}

/* Under jmu: let go of files with nothing live (not while one syncs). */
static void
seg_tidy(void)
{
	struct seg *g, *nx;

	if (leading)
		return;
	for (g = segs; g; g = nx) {
		nx = g->next;
		if (g->live > 0)
			continue;
		if (g != segs || g->err || g->end > (off_t)SEG_SOFT)
			seg_free(g);
	}
}

/* Under jmu: the file that takes new records, made if need be. */
static int
seg_cur(struct seg **out)
{
	char path[4200];
	struct seg *g = segs;
	int rc;

	if (g && !g->err && g->end < (off_t)SEG_MAX) {
		*out = g;
		return 0;
	}
	if (!(g = calloc(1, sizeof(*g))))
		return -ENOMEM;
	g->no = ++seg_no;
	seg_path(g->no, path, sizeof(path));
	if ((g->fd = open(path, O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC, 0600)) <
	    0) {
		rc = -errno;
		free(g);
		return rc;
	}
	/* its name must be on disk before a record in it counts as kept */
	if ((rc = sync_dir()) < 0) {
		unlink(path);
		close(g->fd);
		free(g);
		return rc;
	}
	g->next = segs;
	segs = g;
	*out = g;
	return 0;
}

static int
pwrite_all(int fd, struct iovec *iov, int n, off_t off)
{
	while (n > 0) {
		ssize_t w = pwritev(fd, iov, n, off);
		if (w < 0 && errno == EINTR)
			continue;
		if (w < 0)
			return -errno;
		if (w == 0)
			return -EIO;
		off += w;
		while (n > 0 && (size_t)w >= iov->iov_len) {
			w -= (ssize_t)iov->iov_len;
			iov++;
			n--;
		}
		if (n > 0) {
			iov->iov_base = (char *)iov->iov_base + w;
			iov->iov_len -= (size_t)w;
		}
	}
	return 0;
}

/*
 * Under jmu: make g's file reach past a record of n bytes at its end,
 * SEG_GROW at a time, ahead of the records.  An fdatasync after a write
 * that grows a file writes its inode too, a second I/O on the disk's
 * queue (on ext4, 145 us against 105 us a sync here); within the
 * allocated size it writes only the data.  The allocated tail reads as
 * zeros, which no record starts with (journal_scan stops there).  A file
 * that cannot grow so (a full disk) is written as before, and its write
 * says why.
 */
static void
grow(struct seg *g, off_t n)
{
	off_t want = (g->end + n + SEG_GROW - 1) / SEG_GROW * SEG_GROW;

	if (want <= g->alloc || n > (off_t)SEG_GROW)
		return;
	if (posix_fallocate(g->fd, g->alloc, want - g->alloc) == 0)
		g->alloc = want;
}

/*
 * Under jmu: append one record to g.  A failed write leaves g's end where
 * it was, and what it wrote is cut off: the next record overwrites only
 * the start of it, and a payload's bytes past that next record would be
 * read as records at the next start (a payload can hold a whole record).
 */
static int
rec_put(struct seg *g, uint32_t kind, uint64_t id, const char *hd, size_t hlen,
    const char *buf, size_t len, off_t *body)
{
	struct rec r = { REC_MAGIC, (uint32_t)(hlen + len), id, kind, 0, 0 };
	struct iovec iov[3] = { { &r, sizeof(r) }, { (void *)hd, hlen },
		{ (void *)buf, len } };
	int rc;

	if (hlen + len >= BODY_MAX)
		return -EFBIG;
	r.sum = fnv(fnv(FNV_INIT, hd, hlen), buf, len);
	grow(g, (off_t)(sizeof(r) + hlen + len));
	if ((rc = pwrite_all(g->fd, iov, 3, g->end)) < 0) {
		if (ftruncate(g->fd, g->end) < 0)
			g->err = rc; /* what follows g's end is in doubt */
		g->alloc = g->end;
		return rc;
	}
	*body = g->end + (off_t)sizeof(r);
	g->end += (off_t)(sizeof(r) + hlen + len);
	return 0;
}

/* Under jmu: the record whose body is at off, made a done one in place. */
static int
rec_cancel(struct seg *g, off_t off)
{
	uint32_t kind = R_DONE;
	off_t at = off - (off_t)sizeof(struct rec) +
	    (off_t)offsetof(struct rec, kind);

	if (pwrite(g->fd, &kind, sizeof(kind), at) != (ssize_t)sizeof(kind))
		return -EIO;
	return 0;
}

/*
 * Under jmu: ref's record is no longer its attempt's latest.  Done: a
 * done record after it, or if none can be appended (a full disk), the
 * record itself made one in place, which takes no new space: an attempt
 * refused or unlinked must not be published at the next start.
 */
static void
ref_release(struct stage_ref *ref, bool done)
{
	struct seg *g = ref->seg;
	off_t body;

	if (!g)
		return;
	ref->seg = NULL;
	/* best effort (dedup covers a lost one); a file whose sync failed
	 * takes no new records, but its own may still be marked done */
	if (done &&
	    (g->err ||
		rec_put(g, R_DONE, ref->id, NULL, 0, NULL, 0, &body) < 0))
		rec_cancel(g, ref->off);
	g->live--;
}

/*
 * Under jmu: wait until an fdatasync covers g up to end, running it
 * ourselves if nobody does; everything appended meanwhile rides along.
 */
static int
wait_synced(struct seg *g, off_t end)
{
	struct seg *s;

	while (durable && g->synced < end && !g->err) {
		if (leading) {
			pthread_cond_wait(&jcv, &jmu);
			continue;
		}
		leading = true;
		for (s = segs; s; s = s->next) {
			off_t upto = s->end;
			int rc = 0;

			if (s->synced >= upto || s->err)
				continue;
			pthread_mutex_unlock(&jmu);
			if (fdatasync(s->fd) < 0)
				rc = -errno;
			pthread_mutex_lock(&jmu);
			syncs++;
			if (rc < 0)
				s->err = rc; /* what it held is in doubt */
			else if (upto > s->synced)
				s->synced = upto;
		}
		leading = false;
		pthread_cond_broadcast(&jcv);
	}
	if (!durable || g->synced >= end)
		return 0;
	return g->err;
}

int
stage_save(struct pending *p)
{
	char hd[1024];
	size_t len, hlen;
	pthread_mutex_t *stripe;
	struct stage_ref *ref;
	struct seg *g = NULL;
	off_t body = 0;
	char *buf;
	unsigned gen;
	bool drop;
	int rc;

	pthread_mutex_lock(&fs_lock);
	if (p->dead) {
		/* unlinked or refused since the flush looked: nothing to keep */
		rc = p->refused;
		pthread_mutex_unlock(&fs_lock);
		return rc;
	}
	rc = header(p, hd, sizeof(hd), &hlen);
	if (rc == 0 && !p->stage) {
		if (!(p->stage = calloc(1, sizeof(*p->stage))))
			rc = -ENOMEM;
		else
			p->stage->id = ++seq;
	}
	p->staged = rc == 0;
	ref = p->stage;
	if (rc == 0)
		ref->saving++;
	pthread_mutex_unlock(&fs_lock);
	if (rc < 0)
		goto out_unstaged;
	stripe = &stripes[((uintptr_t)p >> 4) % 64];
	pthread_mutex_lock(stripe);
	if (!(buf = pend_snapshot(p, &len, &gen))) {
		rc = -ENOMEM;
		pthread_mutex_unlock(stripe);
		goto out_saved;
	}
	pthread_mutex_lock(&jmu);
	/* an attempt's records stay in one file, where the last one wins */
	if ((g = ref->seg))
		rc = g->err;
	else
		rc = seg_cur(&g);
	if (rc == 0 &&
	    (rc = rec_put(g, R_STAGE, ref->id, hd, hlen, buf, len, &body)) ==
		0) {
		ref_release(ref, false);
		ref->seg = g;
		ref->off = body;
		ref->len = (uint32_t)(hlen + len);
		ref->hlen = (uint32_t)hlen;
		g->live++;
		rc = wait_synced(g, g->end);
		if (rc < 0) {
			ref_release(ref, false);
			seg_tidy();
		}
	}
	pthread_mutex_unlock(&jmu);
	pthread_mutex_unlock(stripe);
	pend_unsnap(p, buf, len, gen);
out_saved:
	/* an unlink or a refusal meanwhile: its done goes after our record */
	pthread_mutex_lock(&fs_lock);
	drop = --ref->saving == 0 && ref->drop;
	pthread_mutex_unlock(&fs_lock);
	if (drop)
		stage_remove(p);
	if (rc == 0)
		return 0;
out_unstaged:
	pthread_mutex_lock(&fs_lock);
	p->staged = false;
	pthread_mutex_unlock(&fs_lock);
	fs_log("staging %s/%s: %s (%s)", p->queue, p->name, strerror(-rc),
	    errname(-rc));
	return rc;
}

/*
 * fs_lock held: whether a FLUSH must stage p's bytes before it answers.
 * Bytes another close is staging are not kept until its sync is done:
 * this close stages them too, and waits.
 */
bool
stage_needed(const struct pending *p)
{
	/* an empty file needs no record, unless one of its bytes is there
	 * or a kept publish may be ahead of it (it waits behind, kept too) */
	return !p->dead && p->dirty && (p->len > 0 || p->stage || nkept > 0) &&
	    p->name[0] != '.' &&
	    (!p->staged || (p->stage && p->stage->saving > 0));
}

/* Published or abandoned: its record is done (once stage_save is). */
void
stage_remove(struct pending *p)
{
	struct stage_ref *ref;

	pthread_mutex_lock(&fs_lock);
	ref = p->stage;
	if (ref && ref->saving > 0) {
		ref->drop = true;
		ref = NULL;
	} else {
		p->stage = NULL;
	}
	pthread_mutex_unlock(&fs_lock);
	stage_forget(ref);
}

/* An attempt nobody will publish (or that was): pend_free's too. */
void
stage_forget(struct stage_ref *ref)
{
	if (!ref)
		return;
	pthread_mutex_lock(&jmu);
	ref_release(ref, true);
	seg_tidy();
	pthread_mutex_unlock(&jmu);
	free(ref->target);
	free(ref);
}

/* what a kept publish of p names: its kind and the partition it goes
 * to, "1:queue/partition" */
static char *
target_of(const struct pending *p)
{
	const char *pn = p->part ? p->part : QUEEN_DEFAULT_PARTITION;
	size_t n = strlen(p->queue) + strlen(pn) + 16;
	char *t = malloc(n);

	if (t)
		snprintf(t, n, "%d:%s/%s", (int)p->what, p->queue, pn);
	return t;
}

/* A publish failed: the tick tries the record again. */
void
stage_keep(struct pending *p)
{
	struct stage_ref *ref;
	off_t at = 0;
	size_t n = 0;
	int fd = -1;

	/*
	 * The record leaves p and p is marked kept in one hold of fs_lock
	 * (an unlink that looks in between would take a kept publish for
	 * one it may cancel); from here to the tick's publish its name
	 * reads the record.  jmu is not taken under fs_lock: it may be
	 * held across a write of the journal.
	 */
	pthread_mutex_lock(&fs_lock);
	if ((ref = p->stage) != NULL) {
		p->stage = NULL;
		pend_kept(p);
		ref->pend = p;
	}
	pthread_mutex_unlock(&fs_lock);
	if (!ref)
		return;
	if (!ref->target)
		ref->target = target_of(p);
	/* where its payload is, told before the tick can see the record
	 * (the ref is ours: its file cannot change meanwhile) */
	pthread_mutex_lock(&jmu);
	if (ref->seg) {
		fd = ref->seg->fd;
		at = ref->off + ref->hlen;
		n = ref->len - ref->hlen;
	}
	pthread_mutex_unlock(&jmu);
	if (fd >= 0)
		pend_kept_at(p, fd, at, n);
	else
		pend_unkept(p);
	pthread_mutex_lock(&jmu);
	if (ref->seg) {
		ref->next = NULL;
		*kept_tail = ref;
		kept_tail = &ref->next;
		nkept++;
		ref = NULL;
	}
	pthread_mutex_unlock(&jmu);
	if (ref)
		free(ref->target);
	free(ref);
	retry_due = true;
}

/*
 * Whether p's publish waits, kept, for the tick: it must not land ahead
 * of an earlier one kept for its partition.  One with no record (an
 * empty file closed while nothing was kept) could not be kept: it is
 * tried.  Without the memory to name a kept one, every partition is
 * taken to have one.
 */
bool
stage_kept_for(struct pending *p)
{
	struct stage_ref *ref;
	char *t;
	bool found = false, staged;

	/* most of the time nothing is kept: no name made, no fs_lock */
	pthread_mutex_lock(&jmu);
	staged = kept != NULL;
	pthread_mutex_unlock(&jmu);
	if (!staged)
		return false;
	pthread_mutex_lock(&fs_lock);
	staged = p->stage != NULL;
	pthread_mutex_unlock(&fs_lock);
	if (!staged)
		return false;
	t = target_of(p);
	pthread_mutex_lock(&jmu);
	for (ref = kept; ref && !found; ref = ref->next)
		found = !t || !ref->target || strcmp(ref->target, t) == 0;
	pthread_mutex_unlock(&jmu);
	free(t);
	return found;
}

static bool
ends(const char *s, const char *suf)
{
	size_t a = strlen(s), b = strlen(suf);

	return a >= b && strcmp(s + a - b, suf) == 0;
}

static int
pread_all(int fd, char *b, size_t len, off_t off)
{
	while (len) {
		ssize_t n = pread(fd, b, len, off);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			return n < 0 ? -errno : -EIO;
		b += n;
		len -= (size_t)n;
		off += n;
	}
	return 0;
}

/* A body read into memory, NUL-terminated for parse(). */
static char *
body_read(int fd, off_t off, uint32_t len)
{
	char *b = malloc((size_t)len + 1);

	if (b && pread_all(fd, b, len, off) < 0) {
		free(b);
		return NULL;
	}
	if (b)
		b[len] = '\0';
	return b;
}

/* Split the header; fills f[0..7]; the payload follows. */
static const char *
parse(char *b, size_t len, char *f[8])
{
	char *p = b, *end = b + len;

	for (int i = 0; i < 8; i++)
		f[i] = end; /* the buffer ends with a NUL */
	for (int i = 0; i < 8; i++) {
		char *z = memchr(p, '\0', (size_t)(end - p));
		if (!z)
			return NULL;
		f[i] = p;
		p = z + 1;
	}
	return strcmp(f[0], STAGE_MAGIC) == 0 ? p : NULL;
}

/* Errors a later try cannot cure: the record is dropped, and logged. */
static bool
permanent(int rc)
{
	return rc == -ENOENT || rc == -EINVAL || rc == -EFBIG ||
	    rc == -EEXIST || rc == -EPERM;
}

/*
 * Publish one staged body (what names it in the log).  0: published, a
 * duplicate, or dropped for good (logged); <0: try again later.
 */
static int
publish(struct queen *q, char *b, size_t len, const char *what, bool loud)
{
	struct pending p;
	char *f[8], *notify = NULL;
	const char *pay;
	bool dup = false;
	int rc;

	if (!(pay = parse(b, len, f))) {
		fs_log("staged %s: not a staged file; left alone", what);
		return 1;
	}
	memset(&p, 0, sizeof(p));
	p.what = (enum pend_what)atoi(f[1]);
	p.excl = atoi(f[2]) != 0;
	p.due_at = atoll(f[3]);
	p.ttl_ms = atoll(f[4]);
	p.queue = f[5];
	p.part = f[6][0] ? f[6] : NULL;
	p.name = f[7];
	/* once the mount serves, a row held elsewhere is waited for only
	 * briefly: the tick tries again, and the mount's requests wait
	 * behind this meanwhile */
	if ((rc = queen_batch_begin(q, serving ? QUEEN_BATCH_BRIEF : 0)) == 0) {
		/* its close() confirmed it */
		rc = push_pending(q, &p, p.name, pay, len - (size_t)(pay - b),
		    p.excl, true, &notify, &dup);
		if (rc == 0)
			rc = queen_batch_commit(q);
		else
			queen_batch_rollback(q);
	}
	free(notify);
	if (rc == 0 && p.what == PW_PUSH)
		engine_count_push(dup);
	if (rc == 0 || permanent(rc)) {
		last_rc = 0; /* the next failure is news */
		fs_log("staged %s/%s %s", p.queue, p.name,
		    rc == 0 ? (dup ? "was a duplicate" : "published") :
			      "dropped: it cannot be published");
		return 0;
	}
	if (loud || rc != last_rc)
		fs_log("staged %s/%s: not published yet: %s (%s); retried at "
		       "the next tick",
		    p.queue, p.name, queen_errmsg(q), errname(rc));
	last_rc = rc;
	return rc;
}

/* the partitions whose kept publishes failed again at this tick */
#define FAILED_MAX 4

static bool
failed_before(char *const *failed, size_t n, const char *target)
{
	size_t i;

	if (!target)
		return n > 0;
	for (i = 0; i < n; i++)
		if (!failed[i] || strcmp(failed[i], target) == 0)
			return true;
	return false;
}

/*
 * This run's publishes that failed: try each again, in their order.
 * One that fails again keeps its place, and so do those behind it into
 * its partition, untried: a store that refuses one now is not asked for
 * each in turn while the mount waits.  Other partitions' go on, until
 * FAILED_MAX partitions failed.
 */
static void
replay_kept(struct queen *q)
{
	struct stage_ref *list, *ref, *nx, *again = NULL, **at = &again;
	char *failed[FAILED_MAX];
	size_t nfailed = 0;

	pthread_mutex_lock(&jmu);
	list = kept;
	kept = NULL;
	kept_tail = &kept;
	pthread_mutex_unlock(&jmu);
	for (ref = list; ref; ref = nx) {
		char *b;
		int rc = -ENOMEM;

		nx = ref->next;
		if (nfailed == FAILED_MAX ||
		    failed_before(failed, nfailed, ref->target)) {
			rc = -EAGAIN;
		} else {
			if ((b = body_read(ref->seg->fd, ref->off, ref->len)))
				rc = publish(q, b, ref->len, "record", false);
			free(b);
			if (rc < 0) {
				failed[nfailed++] = ref->target;
			} else {
				pend_kept_done(ref->pend);
				nkept--;
			}
		}
		if (rc < 0) {
			ref->next = NULL;
			*at = ref;
			at = &ref->next;
			retry_due = true;
			continue;
		}
		stage_forget(ref);
	}
	/* in the order they were kept, ahead of those kept meanwhile */
	pthread_mutex_lock(&jmu);
	if (again) {
		*at = kept;
		if (!kept)
			kept_tail = at;
		kept = again;
	}
	pthread_mutex_unlock(&jmu);
}

struct jrec {
	uint64_t id;
	off_t off; /* of the body */
	uint32_t len, kind;
	size_t order;
};

static int
jrec_cmp(const void *a, const void *b)
{
	const struct jrec *x = a, *y = b;

	if (x->id != y->id)
		return x->id < y->id ? -1 : 1;
	return x->order < y->order ? -1 : x->order > y->order;
}

/* The records of a journal file up to the first one cut short. */
static struct jrec *
journal_scan(int fd, size_t *n, off_t *end)
{
	struct jrec *v = NULL, *nv;
	size_t cap = 0;
	struct stat st;
	struct rec r;
	off_t off = 0;
	char chunk[65536];

	*n = 0;
	if (fstat(fd, &st) < 0)
		return NULL;
	while (off + (off_t)sizeof(r) <= st.st_size &&
	    pread_all(fd, (char *)&r, sizeof(r), off) == 0 &&
	    r.magic == REC_MAGIC && (r.kind == R_STAGE || r.kind == R_DONE) &&
	    off + (off_t)sizeof(r) + r.len <= st.st_size) {
		uint64_t h = FNV_INIT;
		off_t at = off + (off_t)sizeof(r), stop = at + r.len;

		while (at < stop) {
			size_t k = (size_t)(stop - at) < sizeof(chunk) ?
			    (size_t)(stop - at) :
			    sizeof(chunk);
			if (pread_all(fd, chunk, k, at) < 0)
				break;
			h = fnv(h, chunk, k);
			at += (off_t)k;
		}
		if (at < stop || h != r.sum)
			break;
		if (*n == cap) {
			cap = cap ? cap * 2 : 64;
			if (!(nv = realloc(v, cap * sizeof(*v))))
				break;
			v = nv;
		}
		v[*n] = (struct jrec){ r.id, off + (off_t)sizeof(r), r.len,
			r.kind, *n };
		(*n)++;
		off = stop;
	}
	*end = off;
	return v;
}

/*
 * A journal a previous run left: publish each attempt's latest record
 * that has no "done", noting each published one as done in the file.
 * The file goes once nothing in it waits.  false: something is left to
 * try at the next tick.
 */
static bool
replay_journal(struct queen *q, const char *path, uint64_t *waiting)
{
	struct seg g = { .fd = -1 };
	struct jrec *v;
	size_t n, left = 0;
	off_t body;

	if ((g.fd = open(path, O_RDWR | O_CLOEXEC)) < 0) {
		fs_log("staged %s: cannot open it (%s); retried at the next "
		       "tick",
		    path, strerror(errno));
		return false;
	}
	v = journal_scan(g.fd, &n, &g.end);
	if (n > 1)
		qsort(v, n, sizeof(*v), jrec_cmp);
	for (size_t i = 0; i < n; i++) {
		char *b;
		int rc = -ENOMEM;

		/* an attempt's last record decides: staged, or done */
		if (i + 1 < n && v[i + 1].id == v[i].id)
			continue;
		if (v[i].kind != R_STAGE)
			continue;
		if ((b = body_read(g.fd, v[i].off, v[i].len)))
			rc = publish(q, b, v[i].len, path, true);
		free(b);
		if (rc < 0)
			left++;
		else if (rc == 0)
			rec_put(&g, R_DONE, v[i].id, NULL, 0, NULL, 0, &body);
	}
	free(v);
	close(g.fd);
	if (left == 0)
		unlink(path);
	*waiting += left;
	return left == 0;
}

/* A file of the older format: one attempt, header and bytes. */
static bool
replay_file(struct queen *q, const char *path, uint64_t *waiting)
{
	struct stat st;
	char *b = NULL;
	int rc = -EIO, fd = open(path, O_RDONLY | O_CLOEXEC);

	if (fd >= 0 && fstat(fd, &st) == 0 && st.st_size < BODY_MAX &&
	    (b = body_read(fd, 0, (uint32_t)st.st_size)))
		rc = publish(q, b, (size_t)st.st_size, path, true);
	if (fd < 0 || !b)
		fs_log("staged %s: cannot read it (%s); retried at the next "
		       "tick",
		    path, strerror(errno));
	if (fd >= 0)
		close(fd);
	free(b);
	if (rc == 0) /* not one of ours (1): left alone */
		unlink(path);
	*waiting += rc < 0;
	return rc >= 0;
}

/*
 * On the token holder, outside any batch: publish what earlier releases
 * could not, and (the first time, until it all went) what previous runs
 * left staged.
 */
void
stage_replay(struct queen *q)
{
	bool all = replay_all, done = true;
	DIR *d;
	struct dirent *e;
	char path[4400], mine[32];
	uint64_t waiting = 0;
	static bool once;

	/* the first call is the start's, before the mount serves */
	serving = once;
	once = true;
	if (retry_due) {
		retry_due = false;
		replay_kept(q);
	}
	if (!all || !spool[0] || !(d = opendir(spool)))
		return;
	snprintf(mine, sizeof(mine), "%lld-", (long long)fs.started);
	while ((e = readdir(d)) != NULL) {
		if (e->d_name[0] == '.')
			continue;
		/* this run's journal is replayed from memory */
		if (strncmp(e->d_name, mine, strlen(mine)) == 0)
			continue;
		snprintf(path, sizeof(path), "%s/%s", spool, e->d_name);
		if (ends(e->d_name, ".tmp"))
			unlink(path);
		else if (ends(e->d_name, ".j"))
			done = replay_journal(q, path, &waiting) && done;
		else
			done = replay_file(q, path, &waiting) && done;
	}
	closedir(d);
	old_left = waiting;
	replay_all = !done;
}

/* Confirmed attempts not yet published; fdatasyncs of the journal. */
void
stage_counts(uint64_t *staged, uint64_t *nsyncs)
{
	struct seg *g;

	pthread_mutex_lock(&jmu);
	*staged = old_left;
	for (g = segs; g; g = g->next)
		*staged += g->live;
	*nsyncs = syncs;
	pthread_mutex_unlock(&jmu);
}
