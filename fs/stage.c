/*
 * stage.c - attempts staged on disk between the close(2) that confirmed
 * them and their publication: every FLUSH of an open file with bytes not
 * yet staged writes them to a spool file beside the database (synced at
 * sync level full), so close()'s 0 means the bytes survive kill -9 and a
 * full disk comes back from close; the RELEASE publishes and removes the
 * file.  Files left by a failed publish, or by a previous run, are
 * published by the engine's tick.  No SQL here: publishing is push.c's.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "fs.h"

#define STAGE_MAGIC "QFSSTAGE1"

static char spool[4096];
static bool durable;
static _Atomic uint64_t seq;
static _Atomic bool retry_due, replay_all = true;
static int last_rc; /* the last retry's, logged once (replay) */
/* one staging of an attempt at a time (closes of its dups race) */
static pthread_mutex_t stripes[64];

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

static int
write_all(int fd, const char *b, size_t len)
{
	while (len) {
		ssize_t n = write(fd, b, len);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			return -errno;
		b += n;
		len -= (size_t)n;
	}
	return 0;
}

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

int
stage_save(struct pending *p)
{
	char path[4200], tmp[4210], hd[1024];
	size_t len, hlen;
	pthread_mutex_t *stripe;
	char *buf;
	unsigned gen;
	int fd, rc;

	pthread_mutex_lock(&fs_lock);
	rc = header(p, hd, sizeof(hd), &hlen);
	if (rc == 0 && !p->stage) {
		snprintf(path, sizeof(path), "%s/%lld-%llu", spool,
		    (long long)fs.started, (unsigned long long)++seq);
		if (!(p->stage = strdup(path)))
			rc = -ENOMEM;
	} else if (rc == 0) {
		snprintf(path, sizeof(path), "%s", p->stage);
	}
	p->staged = rc == 0;
	pthread_mutex_unlock(&fs_lock);
	if (rc < 0)
		return rc;
	stripe = &stripes[((uintptr_t)p >> 4) % 64];
	pthread_mutex_lock(stripe);
	if (!(buf = pend_snapshot(p, &len, &gen))) {
		rc = -ENOMEM;
		pthread_mutex_unlock(stripe);
		goto out_unstaged;
	}
	snprintf(tmp, sizeof(tmp), "%s.tmp", path);
	if ((fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC,
	    0600)) < 0) {
		rc = -errno;
		goto out_free;
	}
	if ((rc = write_all(fd, hd, hlen)) == 0)
		rc = write_all(fd, buf, len);
	if (rc == 0 && durable && fdatasync(fd) < 0)
		rc = -errno;
	if (close(fd) < 0 && rc == 0)
		rc = -errno;
	if (rc == 0 && rename(tmp, path) < 0)
		rc = -errno;
	if (rc == 0)
		rc = sync_dir();
	if (rc < 0)
		unlink(tmp);
out_free:
	pthread_mutex_unlock(stripe);
	pend_unsnap(p, buf, len, gen);
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

/* Published or abandoned: the spool file goes. */
void
stage_remove(struct pending *p)
{
	char *s;

	pthread_mutex_lock(&fs_lock);
	s = p->stage;
	p->stage = NULL;
	pthread_mutex_unlock(&fs_lock);
	if (s)
		unlink(s);
	free(s);
}

/* A publish failed: the tick tries the file again. */
void
stage_keep(struct pending *p)
{
	char *s, r[4300];

	pthread_mutex_lock(&fs_lock);
	s = p->stage;
	p->stage = NULL;
	pthread_mutex_unlock(&fs_lock);
	if (!s)
		return;
	snprintf(r, sizeof(r), "%s.r", s);
	if (rename(s, r) < 0)
		fs_log("keeping %s for a retry: %s", s, strerror(errno));
	free(s);
	retry_due = true;
}

static bool
ends(const char *s, const char *suf)
{
	size_t a = strlen(s), b = strlen(suf);

	return a >= b && strcmp(s + a - b, suf) == 0;
}

static char *
slurp(const char *path, size_t *len)
{
	struct stat st;
	char *b = NULL;
	ssize_t n;
	size_t got = 0;
	int fd = open(path, O_RDONLY | O_CLOEXEC);

	if (fd < 0)
		return NULL;
	if (fstat(fd, &st) == 0 && (b = malloc((size_t)st.st_size + 1))) {
		while (got < (size_t)st.st_size &&
		    (n = read(fd, b + got, (size_t)st.st_size - got)) > 0)
			got += (size_t)n;
		b[got] = '\0';
	}
	close(fd);
	*len = got;
	return b;
}

/* Split the header; fills f[0..7]; the payload follows. */
static const char *
parse(char *b, size_t len, char *f[8])
{
	char *p = b, *end = b + len;

	for (int i = 0; i < 8; i++)
		f[i] = end;   /* slurp ends the buffer with a NUL */
	for (int i = 0; i < 8; i++) {
		char *z = memchr(p, '\0', (size_t)(end - p));
		if (!z)
			return NULL;
		f[i] = p;
		p = z + 1;
	}
	return strcmp(f[0], STAGE_MAGIC) == 0 ? p : NULL;
}

/* Errors a later try cannot cure: the file is dropped, and logged. */
static bool
permanent(int rc)
{
	return rc == -ENOENT || rc == -EINVAL || rc == -EFBIG ||
	    rc == -EEXIST || rc == -EPERM;
}

/*
 * On the token holder, outside any batch: publish what earlier releases
 * could not, and (the first time) what a previous run left staged.
 */
void
stage_replay(struct queen *q)
{
	bool all = replay_all;
	DIR *d;
	struct dirent *e;
	char path[4400], mine[32];

	snprintf(mine, sizeof(mine), "%lld-", (long long)fs.started);
	if (!all && !retry_due)
		return;
	if (!spool[0] || !(d = opendir(spool)))
		return;
	replay_all = false;
	retry_due = false;
	while ((e = readdir(d)) != NULL) {
		struct pending p;
		char *b, *f[8], *notify = NULL;
		const char *pay;
		size_t len;
		bool dup = false;
		int rc;

		if (e->d_name[0] == '.')
			continue;
		snprintf(path, sizeof(path), "%s/%s", spool, e->d_name);
		if (ends(e->d_name, ".tmp")) {
			if (all)
				unlink(path);
			continue;
		}
		/* this run's live attempts are published by their release */
		if (!ends(e->d_name, ".r") && (!all ||
		    strncmp(e->d_name, mine, strlen(mine)) == 0))
			continue;
		if (!(b = slurp(path, &len))) {
			fs_log("staged %s: cannot read it (%s); retried at the "
			       "next tick",
			    path, strerror(errno));
			retry_due = true;
			continue;
		}
		if (!(pay = parse(b, len, f))) {
			fs_log("staged %s: not a staged file; left alone",
			    path);
			free(b);
			continue;
		}
		memset(&p, 0, sizeof(p));
		p.what = (enum pend_what)atoi(f[1]);
		p.excl = atoi(f[2]) != 0;
		p.due_at = atoll(f[3]);
		p.ttl_ms = atoll(f[4]);
		p.queue = f[5];
		p.part = f[6][0] ? f[6] : NULL;
		p.name = f[7];
		if ((rc = queen_batch_begin(q, 0)) == 0) {
			rc = push_pending(q, &p, p.name, pay,
			    len - (size_t)(pay - b), p.excl, &notify, &dup);
			if (rc == 0)
				rc = queen_batch_commit(q);
			else
				queen_batch_rollback(q);
		}
		if (rc == 0 || permanent(rc)) {
			fs_log("staged %s/%s %s", p.queue, p.name, rc == 0 ?
			    (dup ? "was a duplicate" : "published") :
			    "dropped: it cannot be published");
			unlink(path);
		} else {
			if (all || !ends(e->d_name, ".r") || rc != last_rc)
				fs_log("staged %s/%s: not published yet: %s "
				       "(%s); retried at the next tick",
				    p.queue, p.name, queen_errmsg(q),
				    errname(rc));
			last_rc = rc;
			retry_due = true;
			if (all && !ends(e->d_name, ".r")) {
				char r[4410];
				snprintf(r, sizeof(r), "%s.r", path);
				rename(path, r);
			}
		}
		free(notify);
		free(b);
	}
	closedir(d);
}
