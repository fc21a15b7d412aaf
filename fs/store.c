/*
 * store.c - where the daemon's store is (--db, or under $XDG_DATA_HOME),
 * and opening it with the reason for a failure in words, a URL's password
 * hidden.
 */
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "fs.h"

static int
mkdirs(char *dir)
{
	for (char *p = dir + 1; *p; p++) {
		if (*p != '/')
			continue;
		*p = '\0';
		if (mkdir(dir, 0700) < 0 && errno != EEXIST)
			return -errno;
		*p = '/';
	}
	if (mkdir(dir, 0700) < 0 && errno != EEXIST)
		return -errno;
	return 0;
}

/* The store's absolute path (the daemon chdirs to /); creates its dir. */
int
db_path(const char *given, char *out, size_t len)
{
	const char *xdg = getenv("XDG_DATA_HOME"), *home = getenv("HOME");
	char dir[PATH_MAX], real[PATH_MAX], *slash;
	int rc;

	/* a PostgreSQL URI goes to the engine as it is */
	if (queen_path_is_pg(given))
		return snprintf(out, len, "%s", given) < (int)len ? 0 :
		    -ENAMETOOLONG;
	if (given)
		snprintf(dir, sizeof(dir), "%s", given);
	else if (xdg && *xdg)
		snprintf(dir, sizeof(dir), "%s/queenfs/queen.db", xdg);
	else if (home && *home)
		snprintf(dir, sizeof(dir), "%s/.local/share/queenfs/queen.db",
		    home);
	else
		return -ENOENT;
	if (!(slash = strrchr(dir, '/'))) {
		if (!getcwd(real, sizeof(real)))
			return -errno;
		return snprintf(out, len, "%s/%s", real, dir) < (int)len ? 0 :
		    -ENAMETOOLONG;
	}
	*slash = '\0';
	if (*dir && (rc = mkdirs(dir)) < 0)
		return rc;
	if (!realpath(*dir ? dir : "/", real))
		return -errno;
	return snprintf(out, len, "%s/%s", strcmp(real, "/") ? real : "",
	    slash + 1) < (int)len ? 0 : -ENAMETOOLONG;
}

/*
 * path as the log may show it: a PostgreSQL URL's password, if it has
 * one, becomes "***" (user:secret@host -> user:***@host).
 */
static const char *
shown_path(const char *path, char *buf, size_t cap)
{
	const char *u = strstr(path, "://"), *at, *colon, *slash;

	if (!queen_path_is_pg(path))
		return path;
	u += 3;
	at = strchr(u, '@');
	colon = strchr(u, ':');
	slash = strchr(u, '/');
	if (!at || !colon || colon > at || (slash && slash < at))
		return path;
	snprintf(buf, cap, "%.*s***%s", (int)(colon + 1 - path), path, at);
	return buf;
}

int
open_store(const char *path, enum queen_sync sync, struct queen **q)
{
	char why[512] = "", shown[PATH_MAX];
	struct queen_options qo = { .path = path, .sync = sync,
	    .err = why, .errlen = sizeof(why) };
	const char *fault = getenv("QUEENFS_FAULT");
	struct queen_tune tune = { 0 };
	const char *hint;
	int rc;

	/*
	 * A test hook, not a feature: QUEENFS_FAULT=fsync:N (write:N, logsync:N)
	 * makes the store's syncs (writes) fail after N, so the mount tests
	 * can watch the daemon stop writes with EIO (tests/fs-0031-faults.sh).
	 */
	if (fault && *fault) {
		tune.fault = fault;
		qo.tune = &tune;
	}
	rc = queen_open(&qo, q);
	if (rc == 0) {
		/*
		 * The mount's groups are made by mkdir alone: a pop, an ack,
		 * a config or seek write naming a group another mount has
		 * removed fails with ENOENT rather than make it again.  Queen's
		 * API (api/ files, HTTP) makes groups on first use whatever
		 * this says.
		 */
		queen_groups_explicit(*q, true);
		return 0;
	}
	/* one line: libpq's messages carry a newline and a tab */
	{
		char *r = why, *w = why;

		for (; *r; r++) {
			char c = *r == '\n' || *r == '\t' ? ' ' : *r;

			if (c != ' ' || (w > why && w[-1] != ' '))
				*w++ = c;
		}
		while (w > why && w[-1] == ' ')
			w--;
		*w = '\0';
	}
	if (rc == -EIO && queen_path_is_pg(path))
		hint = "the PostgreSQL database cannot be reached or used";
	else if (rc == -EIO)
		hint = "not a queenfs database, or corrupt";
	else if (rc == -EPROTO)
		hint = "written by a newer queenfs";
	else if (rc == -EBUSY)
		hint = "another process holds it (a queenfs mounted on it?)";
	else
		hint = strerror(-rc);
	fs_logl(FSL_ERROR, "cannot open %s: %s (%s)", shown_path(path, shown,
	    sizeof(shown)), hint, why[0] ? why : strerror(-rc));
	return rc;
}

/*
 * Staged attempts (stage.c) live beside the database, or for a shared
 * store in the user's data directory, one spool per mountpoint.
 */
int
spool_open(const char *db, const char *mnt, enum queen_sync sync)
{
	char dir[PATH_MAX + 64], base[PATH_MAX];
	const char *xdg = getenv("XDG_DATA_HOME"), *home = getenv("HOME");
	uint64_t h = 1469598103934665603ull;
	int rc;

	if (!queen_path_is_pg(db)) {
		if (snprintf(dir, sizeof(dir), "%s.spool", db) >=
		    (int)sizeof(dir))
			return -ENAMETOOLONG;
		return stage_open(dir, sync == QUEEN_SYNC_FULL);
	}
	for (const unsigned char *c = (const unsigned char *)mnt; *c; c++)
		h = (h ^ *c) * 1099511628211ull;
	if (xdg && *xdg)
		snprintf(base, sizeof(base), "%s/queenfs", xdg);
	else
		snprintf(base, sizeof(base), "%s/.local/share/queenfs",
		    home ? home : "/tmp");
	if ((rc = mkdirs(base)) < 0)
		return rc;
	snprintf(dir, sizeof(dir), "%s/spool-%016llx", base,
	    (unsigned long long)h);
	return stage_open(dir, sync == QUEEN_SYNC_FULL);
}
