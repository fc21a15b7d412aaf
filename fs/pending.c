/*
 * pending.c - files being written before their push (staging buffers,
 * pwrite semantics), and fs_now.  Error notes are note.c's, the lease
 * registry lease.c's.  Pending files outlive the kernel's nodes, so they
 * are keyed by names, not inodes.  Everything here runs under fs_lock;
 * nothing here calls the engine.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "fs.h"

static struct pending *pends;

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
	if (p->pushed)
		return p->what == PW_PUSH && now - p->mtime < PUSHED_LINGER_MS;
	return is_staging(p) && now - p->mtime < STAGING_STALE_MS;
}

static void
pend_free(struct pending *p)
{
	/* a spool file left here is an attempt nobody will publish */
	if (p->stage)
		unlink(p->stage);
	free(p->stage);
	free(p->queue);
	free(p->part);
	free(p->name);
	free(p->buf);
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

struct pending *
pend_find(enum pend_what w, const char *queue, const char *part,
    const char *name, int64_t now)
{
	struct pending *p;

	pthread_mutex_lock(&fs_lock);
	for (p = pends; p; p = p->next) {
		if (p->what == w && same(p->queue, queue) &&
		    same(p->part, part) && strcmp(p->name, name) == 0)
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
	/* A new file of the same name replaces the old one in the table. */
	while ((old = pend_find(w, queue, part, name, now)) != NULL) {
		unlink_pend(old);
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
		free(p->buf);
		p->buf = NULL;
		p->cap = 0;
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

static int
grow(struct pending *p, size_t need)
{
	size_t cap = p->cap ? p->cap : 4096;
	char *b;

	if (need > PENDING_MAX)
		return -EFBIG;
	if (need <= p->cap)
		return 0;
	while (cap < need)
		cap *= 2;
	if (!(b = realloc(p->buf, cap)))
		return -ENOMEM;
	p->buf = b;
	p->cap = cap;
	return 0;
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
	if ((rc = grow(p, end)) == 0) {
		if ((size_t)off > p->len)
			memset(p->buf + p->len, 0, (size_t)off - p->len);
		memcpy(p->buf + off, buf, size);
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
	if ((rc = grow(p, (size_t)size)) == 0) {
		if ((size_t)size > p->len)
			memset(p->buf + p->len, 0, (size_t)size - p->len);
		p->len = (size_t)size;
		p->dirty = true;
		p->staged = p->pushed = false;
		p->mtime = now;
	}
	pthread_mutex_unlock(&fs_lock);
	return rc;
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

void
pend_drop(struct pending *p)
{
	pthread_mutex_lock(&fs_lock);
	unlink_pend(p);
	pthread_mutex_unlock(&fs_lock);
}

char *
pend_snapshot(struct pending *p, size_t *len)
{
	char *b;

	pthread_mutex_lock(&fs_lock);
	*len = p->len;
	b = malloc(p->len ? p->len : 1);
	if (b && p->len)
		memcpy(b, p->buf, p->len);
	pthread_mutex_unlock(&fs_lock);
	return b;
}

size_t
pend_list(enum pend_what w, const char *queue, const char *part, int64_t now,
    struct dent **out)
{
	size_t n = 0, cap = 0;
	struct dent *d = NULL, *nd;

	pthread_mutex_lock(&fs_lock);
	for (struct pending *p = pends; p; p = p->next) {
		if (p->what != w || !same(p->queue, queue) ||
		    !same(p->part, part) || (p->refs == 0 && !alive(p, now)) ||
		    (p->pushed && !alive(p, now)))
			continue;
		if (n == cap) {
			cap = cap ? cap * 2 : 8;
			if (!(nd = realloc(d, cap * sizeof(*d))))
				break;
			d = nd;
		}
		d[n].name = strdup(p->name);
		d[n].type = S_IFREG;
		if (d[n].name)
			n++;
	}
	pthread_mutex_unlock(&fs_lock);
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
