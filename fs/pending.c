/*
 * pending.c - files being written before their push (staging buffers,
 * pwrite semantics), and fs_now.  Error notes are note.c's, the lease
 * registry lease.c's.  Pending files outlive the kernel's nodes, so they
 * are keyed by names, not inodes.  Everything here runs under fs_lock;
 * nothing here calls the engine.
 *
 * An attempt's bytes are in the heap while it is at most PEND_MEM_ONE and
 * all attempts' buffers together stay under PEND_MEM_ALL; past either
 * bound they move to an unlinked file of the spool dir for good, and
 * writes, truncates and reads go to that file.  A snapshot of a spilled
 * attempt is a read-only mapping of the file; a write while one is mapped
 * moves the attempt to a copy first, so that a mapping never changes or
 * shrinks under its reader.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

#include "fs.h"

static struct pending *pends;
static size_t mem_total;  /* the heap buffers of all attempts */
/* attempts a newer open of their name replaced in the table, while
 * anything still holds them (an unlink must find them too) */
static struct pending *replaced;

int64_t
fs_now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static bool
same(const char *a, const char *b)
{
	return a == b || (a && b && strcmp(a, b) == 0);
}

static bool
is_staging(const struct pending *p)
{
	return p->name[0] == '.';
}

/* Whether an unreferenced entry is still worth keeping. */
static bool
alive(const struct pending *p, int64_t now)
{
	if (p->kept)
		return true;
	if (p->pushed)
		return p->what == PW_PUSH && now - p->mtime < PUSHED_LINGER_MS;
	return is_staging(p) && now - p->mtime < STAGING_STALE_MS;
}

/* The attempt's bytes go (its size stays).  fs_lock held, or p unshared. */
static void
drop_bytes(struct pending *p)
{
	if (p->cap)
		mem_total -= p->cap;
	free(p->buf);
	p->buf = NULL;
	p->cap = 0;
	if (p->spill)
		close(p->spill - 1);
	p->spill = 0;
	p->spill_maps = 0;
}

static void
shadow_del(struct pending *p)
{
	for (struct pending **pp = &replaced; p->shadowed && *pp;
	     pp = &(*pp)->snext) {
		if (*pp == p) {
			*pp = p->snext;
			break;
		}
	}
	p->shadowed = false;
}

static void
pend_free(struct pending *p)
{
	shadow_del(p);
	/* a record left staged here is an attempt nobody will publish */
	stage_forget(p->stage);
	free(p->queue);
	free(p->part);
	free(p->name);
	drop_bytes(p);
	free(p);
}

static void
unlink_pend(struct pending *p)
{
	for (struct pending **pp = &pends; *pp; pp = &(*pp)->next) {
		if (*pp == p) {
			*pp = p->next;
			p->next = NULL;
			return;
		}
	}
}

static bool
in_table(const struct pending *p)
{
	for (struct pending *x = pends; x; x = x->next)
		if (x == p)
			return true;
	return false;
}

/* the first attempt of the name in the table (but for kept ones) */
static struct pending *
find(enum pend_what w, const char *queue, const char *part, const char *name,
    int64_t now, bool unkept)
{
	struct pending *p;

	pthread_mutex_lock(&fs_lock);
	for (p = pends; p; p = p->next) {
		if (p->what == w && same(p->queue, queue) &&
		    same(p->part, part) && strcmp(p->name, name) == 0 &&
		    !(unkept && p->kept))
			break;
	}
	if (p && p->refs == 0 && !alive(p, now)) {
		unlink_pend(p);
		pend_free(p);
		p = NULL;
	} else if (p && p->pushed && !alive(p, now)) {
		p = NULL;
	}
	if (p)
		p->refs++;
	pthread_mutex_unlock(&fs_lock);
	return p;
}

struct pending *
pend_find(enum pend_what w, const char *queue, const char *part,
    const char *name, int64_t now)
{
	return find(w, queue, part, name, now, false);
}

/*
 * Published: the store answers for the name from now on, so the entry
 * leaves the table (open handles and nodes keep it alive until they go).
 */
void
pend_published(struct pending *p)
{
	pthread_mutex_lock(&fs_lock);
	if (!is_staging(p) && in_table(p))
		unlink_pend(p);
	pthread_mutex_unlock(&fs_lock);
}

struct pending *
pend_new(enum pend_what w, const char *queue, const char *part,
    const char *name, int64_t now)
{
	struct pending *p = calloc(1, sizeof(*p)), *old;

	if (!p)
		return NULL;
	p->what = w;
	p->queue = strdup(queue);
	p->part = part ? strdup(part) : NULL;
	p->name = strdup(name);
	if (!p->queue || (part && !p->part) || !p->name) {
		pend_free(p);
		return NULL;
	}
	p->refs = 1;
	p->dirty = true;
	p->mtime = now;
	pthread_mutex_lock(&fs_lock);
	/*
	 * A new file of the same name replaces the old one in the table.
	 * One kept for the tick stays behind it, and answers for the name
	 * again if the new one goes unpublished (touch(1) of it).
	 */
	while ((old = find(w, queue, part, name, now, true)) != NULL) {
		unlink_pend(old);
		if (!old->shadowed) {
			old->shadowed = true;
			old->snext = replaced;
			replaced = old;
		}
		pend_put(old);
	}
	p->next = pends;
	pends = p;
	pthread_mutex_unlock(&fs_lock);
	return p;
}

void
pend_put(struct pending *p)
{
	if (!p)
		return;
	pthread_mutex_lock(&fs_lock);
	if (p->refs == 2 && p->pushed && !is_staging(p) && !in_table(p)) {
		/* published, and only its node is left: the store has the
		 * bytes now (reads go there), the size stays for stat */
		drop_bytes(p);
	}
	if (--p->refs == 0) {
		bool listed = in_table(p);
		if (!listed || !alive(p, fs_now())) {
			if (listed)
				unlink_pend(p);
			pend_free(p);
		}
	}
	pthread_mutex_unlock(&fs_lock);
}

/* A failure to hold the bytes on disk, as write(2) answers it. */
static int
spill_errno(struct pending *p, const char *what, int err)
{
	fs_log("%s %s%s%s/%s in %s: %s", what, p->queue,
	    p->part ? "/partitions/" : "", p->part ? p->part : "", p->name,
	    fs.spool, strerror(err));
	return err == EDQUOT || err == EIO || err == EFBIG ? -err : -ENOSPC;
}

static int
write_at(int fd, const char *buf, size_t size, off_t off)
{
	for (size_t at = 0; at < size;) {
		ssize_t w = pwrite(fd, buf + at, size - at, off + (off_t)at);

		if (w < 0 && errno == EINTR)
			continue;
		if (w < 0)
			return -errno;
		if (w == 0)
			return -ENOSPC;
		at += (size_t)w;
	}
	return 0;
}

static ssize_t
read_at(int fd, char *buf, size_t size, off_t off)
{
	size_t at = 0;

	while (at < size) {
		ssize_t r = pread(fd, buf + at, size - at, off + (off_t)at);

		if (r < 0 && errno == EINTR)
			continue;
		if (r < 0)
			return -errno;
		if (r == 0)
			break;
		at += (size_t)r;
	}
	return (ssize_t)at;
}

/* A copy of len bytes of the file from into the file to. */
static int
copy_fd(int from, int to, size_t len)
{
	char *b = malloc(PEND_MEM_ONE);
	int rc = 0;

	if (!b)
		return -ENOMEM;
	for (size_t at = 0; rc == 0 && at < len;) {
		size_t n = len - at < PEND_MEM_ONE ? len - at : PEND_MEM_ONE;
		ssize_t r = read_at(from, b, n, (off_t)at);

		if (r < 0)
			rc = (int)r;
		else if ((size_t)r < n)
			rc = -EIO;
		else
			rc = write_at(to, b, n, (off_t)at);
		at += n;
	}
	free(b);
	return rc;
}

/* A new unlinked file of the spool dir: its descriptor, or -errno. */
static int
open_spool(void)
{
	char path[sizeof(fs.spool) + 32];
	int fd;

	snprintf(path, sizeof(path), "%s/.queenfs-pend-XXXXXX", fs.spool);
	if ((fd = mkstemp(path)) < 0)
		return -errno;
	unlink(path);
	fcntl(fd, F_SETFD, FD_CLOEXEC);
	return fd;
}

/*
 * Move the attempt's bytes so far to a new unlinked file of the spool
 * dir: out of the heap, or away from a file a snapshot maps.  fs_lock held.
 */
static int
spill(struct pending *p)
{
	int fd, rc;

	if ((fd = open_spool()) < 0)
		return spill_errno(p, "cannot spill", -fd);
	if (p->spill)
		rc = copy_fd(p->spill - 1, fd, p->len);
	else
		rc = write_at(fd, p->buf, p->len, 0);
	if (rc < 0) {
		close(fd);
		return spill_errno(p, "spilling", -rc);
	}
	drop_bytes(p);
	p->spill = fd + 1;
	p->spill_gen++;
	return 0;
}

/* Room for need bytes, in the heap or the spill file.  fs_lock held. */
static int
room(struct pending *p, size_t need)
{
	size_t cap = p->cap ? p->cap : 4096;
	char *b;

	if (need > PENDING_MAX)
		return -EFBIG;
	if (p->spill)
		return p->spill_maps ? spill(p) : 0;
	if (need <= p->cap)
		return 0;
	while (cap < need)
		cap *= 2;
	if (cap > PEND_MEM_ONE || mem_total - p->cap + cap > PEND_MEM_ALL)
		return spill(p);
	if (!(b = realloc(p->buf, cap)))
		return -ENOMEM;
	mem_total += cap - p->cap;
	p->buf = b;
	p->cap = cap;
	return 0;
}

/*
 * Its publish failed and its record waits for the tick (stage.c): it
 * stays in the table, and the record holds a reference, which
 * pend_kept_done (or pend_unkept) gives back.  fs_lock held or not (it
 * is recursive).
 */
void
pend_kept(struct pending *p)
{
	pthread_mutex_lock(&fs_lock);
	p->kept = true;
	p->gated = false;
	p->refs++;
	pthread_mutex_unlock(&fs_lock);
}

/*
 * Where the kept record's payload is, len bytes at off of the journal
 * file fd: its bytes go, and reads come from there until the tick
 * publishes it, so that neither memory nor descriptors grow with the
 * publishes a store refuses.
 */
void
pend_kept_at(struct pending *p, int fd, off_t off, size_t len)
{
	pthread_mutex_lock(&fs_lock);
	drop_bytes(p);
	p->kept_fd = fd;
	p->kept_off = off;
	p->len = len;
	pthread_mutex_unlock(&fs_lock);
}

/* Not kept after all (its record was lost): as it was. */
void
pend_unkept(struct pending *p)
{
	pthread_mutex_lock(&fs_lock);
	p->kept = false;
	pthread_mutex_unlock(&fs_lock);
	pend_put(p);
}

/* A copy of len bytes at off of fd: into *heap if heap, else into a new
 * spill file (its descriptor).  Negative errno on failure. */
static int
copy_out(int fd, off_t off, size_t len, bool heap, char **out)
{
	char *b = malloc(heap ? (len ? len : 1) : PEND_MEM_ONE);
	int to = -1, rc = b ? 0 : -ENOMEM;
	size_t n;

	if (rc == 0 && !heap && (to = open_spool()) < 0)
		rc = to;
	for (size_t at = 0; rc == 0 && at < len; at += n) {
		ssize_t r;

		n = heap || len - at < PEND_MEM_ONE ? len - at : PEND_MEM_ONE;
		if ((r = read_at(fd, b + (heap ? at : 0), n, off + (off_t)at)) <
		    (ssize_t)n)
			rc = r < 0 ? (int)r : -EIO;
		else if (!heap)
			rc = write_at(to, b, n, (off_t)at);
	}
	if (rc == 0 && heap) {
		*out = b;
		return 0;
	}
	free(b);
	if (rc < 0 && to >= 0)
		close(to);
	return rc < 0 ? rc : to;
}

/* the attempt of the name kept for the tick, in the table or replaced;
 * fs_lock held */
static struct pending *
kept_named(enum pend_what w, const char *queue, const char *part,
    const char *name)
{
	struct pending *x;

	for (x = pends; x; x = x->next)
		if (x->kept && x->what == w && same(x->queue, queue) &&
		    same(x->part, part) && strcmp(x->name, name) == 0)
			return x;
	for (x = replaced; x; x = x->snext)
		if (x->kept && x->what == w && same(x->queue, queue) &&
		    same(x->part, part) && strcmp(x->name, name) == 0)
			return x;
	return NULL;
}

/* The attempt of p's name kept for the tick (p itself, or an older
 * one), with a reference, or NULL. */
struct pending *
pend_kept_of(struct pending *p)
{
	struct pending *x;

	pthread_mutex_lock(&fs_lock);
	if ((x = kept_named(p->what, p->queue, p->part, p->name)) != NULL)
		x->refs++;
	pthread_mutex_unlock(&fs_lock);
	return x;
}

/* Whether an attempt of p's name (p or an older one) is kept. */
bool
pend_kept_named(struct pending *p)
{
	struct pending *x = pend_kept_of(p);

	pend_put(x);
	return x != NULL;
}

/* Whether an attempt of name in queue's part is kept for the tick; a
 * push's default partition goes by either of its names. */
bool
pend_kept_as(enum pend_what w, const char *queue, const char *part,
    const char *name)
{
	bool found;

	pthread_mutex_lock(&fs_lock);
	found = kept_named(w, queue, part, name) != NULL;
	if (!found && w == PW_PUSH &&
	    (!part || strcmp(part, QUEEN_DEFAULT_PARTITION) == 0))
		found = kept_named(w, queue,
			    part ? NULL : QUEEN_DEFAULT_PARTITION,
			    name) != NULL;
	pthread_mutex_unlock(&fs_lock);
	return found;
}

/*
 * The tick published p's kept record (or dropped it for good): the store
 * answers for the name from now on, as after any publish.  Called while
 * the record's journal file is still open: a reader that has the file
 * open is handed the bytes (copied outside fs_lock; nothing writes a
 * kept attempt) and reads on to the end.  Gives back the keep's
 * reference.
 */
void
pend_kept_done(struct pending *p)
{
	char *b = NULL;
	int fd = -1, rc = 0;

	if (!p)
		return;
	pthread_mutex_lock(&fs_lock);
	/* at most once: a reader that opens during the copy reads the
	 * journal until the copy is in place, under this same lock */
	while (p->kept && p->readers > 0 && !b && fd < 0 && rc == 0) {
		bool heap = p->len <= PEND_MEM_ONE &&
		    mem_total + p->len <= PEND_MEM_ALL;

		pthread_mutex_unlock(&fs_lock);
		if (heap)
			rc = copy_out(p->kept_fd, p->kept_off, p->len, true,
			    &b);
		else
			rc = fd = copy_out(p->kept_fd, p->kept_off, p->len,
			    false, NULL);
		pthread_mutex_lock(&fs_lock);
	}
	if (rc < 0) {
		fs_log("keeping the bytes of %s/%s for its readers: %s (their "
		       "reads fail with EIO)",
		    p->queue, p->name, strerror(-rc));
		p->lost = true;
	} else if (b) {
		p->buf = b;
		p->cap = p->len ? p->len : 1;
		mem_total += p->cap;
	} else if (fd >= 0) {
		p->spill = fd + 1;
		p->spill_gen++;
	}
	p->kept = false;
	p->pushed = true;
	p->mtime = fs_now();
	if (in_table(p))
		unlink_pend(p);
	pthread_mutex_unlock(&fs_lock);
	pend_put(p);
}

int
pend_write(struct pending *p, const char *buf, size_t size, off_t off,
    int64_t now)
{
	size_t end;
	int rc;

	if (off < 0 || (uint64_t)off > PENDING_MAX)
		return -EFBIG;
	end = (size_t)off + size;
	pthread_mutex_lock(&fs_lock);
	if ((rc = room(p, end)) == 0 && p->spill) {
		/* a gap before off is a hole: it reads as zeros */
		if ((rc = write_at(p->spill - 1, buf, size, off)) < 0)
			rc = spill_errno(p, "writing the spill file of", -rc);
	} else if (rc == 0) {
		if ((size_t)off > p->len)
			memset(p->buf + p->len, 0, (size_t)off - p->len);
		memcpy(p->buf + off, buf, size);
	}
	if (rc == 0) {
		if (end > p->len)
			p->len = end;
		p->dirty = p->written = true;
		p->staged = p->pushed = false;
		p->mtime = now;
	}
	pthread_mutex_unlock(&fs_lock);
	return rc;
}

int
pend_truncate(struct pending *p, off_t size, int64_t now)
{
	int rc;

	if (size < 0 || (uint64_t)size > PENDING_MAX)
		return -EFBIG;
	pthread_mutex_lock(&fs_lock);
	if (p->kept) {
		/* its close() returned: the bytes are what will be published */
		pthread_mutex_unlock(&fs_lock);
		fs_log("truncate %s/%s: its publish is kept for the tick; it "
		       "cannot change (EPERM)",
		    p->queue, p->name);
		return -EPERM;
	}
	if (p->based && (size_t)size > p->len) {
		/* the stored bytes are not in the attempt: zeros would be */
		pthread_mutex_unlock(&fs_lock);
		fs_log("truncate %s/%s to %lld bytes: an open without O_TRUNC "
		       "starts an empty %s, so this would publish zeros "
		       "(EINVAL)",
		    p->queue, p->name, (long long)size,
		    p->what == PW_KV ? "value" : "timer");
		return -EINVAL;
	}
	if (size == 0 && p->spill)
		drop_bytes(p);  /* back to the heap, no copy to make */
	if ((rc = room(p, (size_t)size)) == 0 && p->spill) {
		if (ftruncate(p->spill - 1, size) < 0)
			rc = spill_errno(p, "truncating the spill file of",
			    errno);
	} else if (rc == 0 && (size_t)size > p->len) {
		memset(p->buf + p->len, 0, (size_t)size - p->len);
	}
	if (rc == 0) {
		p->len = (size_t)size;
		p->dirty = true;
		p->staged = p->pushed = false;
		p->mtime = now;
	}
	pthread_mutex_unlock(&fs_lock);
	return rc;
}

/* Whether the attempt still has its bytes.  fs_lock held. */
bool
pend_held(const struct pending *p)
{
	return p->buf || p->spill || p->kept;
}

/* Up to size bytes at off of the attempt: how many, or a negative errno. */
ssize_t
pend_read(struct pending *p, char *buf, size_t size, off_t off)
{
	ssize_t n = 0;

	if (off < 0)
		return -EINVAL;
	pthread_mutex_lock(&fs_lock);
	if ((size_t)off < p->len) {
		if (size > p->len - (size_t)off)
			size = p->len - (size_t)off;
		if (p->spill) {
			n = read_at(p->spill - 1, buf, size, off);
			if (n < 0)
				fs_log("reading the spill file of %s/%s: %s",
				    p->queue, p->name, strerror((int)-n));
		} else if (p->buf) {
			memcpy(buf, p->buf + off, size);
			n = (ssize_t)size;
		} else if (p->kept) {
			n = read_at(p->kept_fd, buf, size, p->kept_off + off);
			if (n < 0)
				fs_log("reading the kept record of %s/%s: %s",
				    p->queue, p->name, strerror((int)-n));
		} else if (p->lost) {
			n = -EIO;
		}
	}
	pthread_mutex_unlock(&fs_lock);
	return n;
}

void
pend_rename(struct pending *p, const char *name)
{
	char *s = strdup(name);

	if (!s)
		return;
	pthread_mutex_lock(&fs_lock);
	free(p->name);
	p->name = s;
	pthread_mutex_unlock(&fs_lock);
}

int
pend_refused(struct pending *p)
{
	int rc;

	pthread_mutex_lock(&fs_lock);
	rc = p->refused;
	pthread_mutex_unlock(&fs_lock);
	return rc;
}

/*
 * unlink(2) of a name: every attempt of it that newer opens replaced and
 * that is not published yet is thrown away, as the newest one is.  How
 * many were.
 */
int
pend_kill_replaced(enum pend_what w, const char *queue, const char *part,
    const char *name)
{
	int n = 0;

	pthread_mutex_lock(&fs_lock);
	for (struct pending *p = replaced; p; p = p->snext) {
		if (p->what != w || !same(p->queue, queue) ||
		    !same(p->part, part) || strcmp(p->name, name) != 0 ||
		    p->pushed || p->dead || p->kept || p->publishing)
			continue;
		p->dead = true;
		stage_remove(p);
		n++;
	}
	pthread_mutex_unlock(&fs_lock);
	return n;
}

void
pend_drop(struct pending *p)
{
	pthread_mutex_lock(&fs_lock);
	unlink_pend(p);
	pthread_mutex_unlock(&fs_lock);
}

/*
 * The attempt's bytes as they are now: a heap copy while they are small
 * (*gen 0), a read-only mapping of the spill file past that (*gen its
 * generation).  Give them back with pend_unsnap.
 */
char *
pend_snapshot(struct pending *p, size_t *len, unsigned *gen)
{
	char *b;

	pthread_mutex_lock(&fs_lock);
	*len = p->len;
	*gen = 0;
	if (p->spill && p->len) {
		b = mmap(NULL, p->len, PROT_READ, MAP_PRIVATE, p->spill - 1, 0);
		if (b == MAP_FAILED) {
			fs_log("mapping the spill file of %s/%s: %s", p->queue,
			    p->name, strerror(errno));
			b = NULL;
		} else {
			*gen = p->spill_gen;
			p->spill_maps++;
		}
	} else {
		b = malloc(p->len ? p->len : 1);
		if (b && p->len && p->buf)
			memcpy(b, p->buf, p->len);
		else if (b && p->len && p->kept &&
		    read_at(p->kept_fd, b, p->len, p->kept_off) !=
			(ssize_t)p->len) {
			free(b);
			b = NULL;
		}
	}
	pthread_mutex_unlock(&fs_lock);
	return b;
}

void
pend_unsnap(struct pending *p, char *b, size_t len, unsigned gen)
{
	if (!gen) {
		free(b);
		return;
	}
	munmap(b, len);
	pthread_mutex_lock(&fs_lock);
	if (p->spill && p->spill_gen == gen && p->spill_maps)
		p->spill_maps--;
	pthread_mutex_unlock(&fs_lock);
}

/* a kept attempt behind a newer one of its name (listed instead) */
static bool
shadowed_by_newer(const struct pending *p)
{
	for (struct pending *x = pends; x && x != p; x = x->next)
		if (x->what == p->what && same(x->queue, p->queue) &&
		    same(x->part, p->part) && strcmp(x->name, p->name) == 0)
			return true;
	return false;
}

/*
 * The names of the attempts of a directory, for its listing, each once.
 * changing: only those that will change what the store holds (written
 * and not yet published, being published, kept, or a staging
 * dot-file), for a directory the store lists too; otherwise also those
 * that wrote nothing (touch) and those published a moment ago.
 */
/* Whether p is one of a directory's attempts to list (see pend_list). */
static bool
listable(const struct pending *p, enum pend_what w, const char *queue,
    const char *part, int64_t now, bool changing)
{
	if (p->what != w || !same(p->queue, queue) || !same(p->part, part) ||
	    (p->refs == 0 && !alive(p, now)) || (p->pushed && !alive(p, now)))
		return false;
	return !changing ||
	    (!p->pushed && !p->dead &&
		(p->dirty || p->kept || p->publishing > 0 || is_staging(p)));
}

/* Appends name to d (n of cap); false when out of memory. */
static bool
dent_add(struct dent **d, size_t *n, size_t *cap, const char *name)
{
	struct dent *nd;

	if (*n == *cap) {
		*cap = *cap ? *cap * 2 : 8;
		if (!(nd = realloc(*d, *cap * sizeof(*nd))))
			return false;
		*d = nd;
	}
	(*d)[*n].type = S_IFREG;
	if (((*d)[*n].name = strdup(name)) != NULL)
		(*n)++;
	return true;
}

size_t
pend_list(enum pend_what w, const char *queue, const char *part, int64_t now,
    bool changing, struct dent **out)
{
	size_t n = 0, cap = 0, m = 0;
	struct dent *d = NULL;
	struct nameset seen;
	struct pending *p;
	bool indexed;

	pthread_mutex_lock(&fs_lock);
	/* each name once, the newest of those listed (a kept attempt
	 * behind a newer open is not, the newer is); one pass, not one
	 * per kept attempt */
	for (p = pends; p; p = p->next)
		m++;
	for (p = replaced; p; p = p->snext)
		m++;
	indexed = nameset_init(&seen, m) == 0;
	for (p = pends; p; p = p->next) {
		if (!listable(p, w, queue, part, now, changing))
			continue;
		if (indexed ? !nameset_add(&seen, p->name) :
			      (p->kept && shadowed_by_newer(p)))
			continue;
		if (!dent_add(&d, &n, &cap, p->name))
			break;
	}
	/* then those a newer open moved out of the table while they were
	 * being published, and that were kept since, if nothing newer of
	 * their name is listed */
	for (p = indexed ? replaced : NULL; p; p = p->snext) {
		if (!p->kept || !listable(p, w, queue, part, now, changing) ||
		    !nameset_add(&seen, p->name))
			continue;
		if (!dent_add(&d, &n, &cap, p->name))
			break;
	}
	pthread_mutex_unlock(&fs_lock);
	if (indexed)
		nameset_free(&seen);
	*out = d;
	return n;
}

/*
 * The names of the publishes into queue's part kept for the tick that
 * were written there (in the table or behind a newer open), each once,
 * and of those that ran into kept ones in the batch under way (kept
 * when it settles).  The tick publishes them on the token holder, so on
 * it each is either kept or in the partition's log, never both nor
 * neither.
 */
size_t
pend_list_kept(const char *queue, const char *part, struct dent **out)
{
	size_t n = 0, cap = 0, m = 0;
	struct dent *d = NULL;
	struct nameset seen;
	struct pending *lists[2], *p;

	pthread_mutex_lock(&fs_lock);
	lists[0] = pends;
	lists[1] = replaced;
#define KEPT(p) ((p)->kept || ((p)->gated && (p)->publishing > 0 && !(p)->dead))
	for (int l = 0; l < 2; l++)
		for (p = lists[l]; p; p = l ? p->snext : p->next)
			m += KEPT(p);
	if (m == 0 || nameset_init(&seen, m) < 0) {
		pthread_mutex_unlock(&fs_lock);
		*out = NULL;
		return 0;
	}
	for (int l = 0; l < 2; l++)
		for (p = lists[l]; p; p = l ? p->snext : p->next) {
			if (!KEPT(p) || p->what != PW_PUSH ||
			    !same(p->queue, queue) || !same(p->part, part) ||
			    !nameset_add(&seen, p->name))
				continue;
			if (!dent_add(&d, &n, &cap, p->name))
				goto out;
		}
out:
#undef KEPT
	pthread_mutex_unlock(&fs_lock);
	nameset_free(&seen);
	*out = d;
	return n;
}

void
pend_sweep(int64_t now)
{
	pthread_mutex_lock(&fs_lock);
	for (struct pending **pp = &pends; *pp;) {
		struct pending *p = *pp;
		if (p->refs == 0 && !alive(p, now)) {
			*pp = p->next;
			pend_free(p);
		} else {
			pp = &p->next;
		}
	}
	pthread_mutex_unlock(&fs_lock);
}
