/*
 * main.c - the queenfs daemon: options (also the fstab form that mount.fuse3
 * uses: `queenfs SOURCE MOUNTPOINT -o db=PATH,...`), opening the store,
 * the FUSE session and its worker loop, and an orderly shutdown (engine
 * joined, waiters answered, store closed, mount gone).
 */
#include <errno.h>
#include <limits.h>
#include <malloc.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <syslog.h>
#include <unistd.h>

#include "fs.h"

struct fs_state fs;
static bool use_syslog;

void
fs_log(const char *fmt, ...)
{
	char line[2048];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(line, sizeof(line), fmt, ap);
	va_end(ap);
	if (use_syslog)
		syslog(LOG_NOTICE, "%s", line);
	else
		fprintf(stderr, "queenfs: %s\n", line);
}

struct opts {
	const char *db, *mountpoint, *sync;
	bool foreground, debug;
	char fuse_o[4096];
};

static void
usage(FILE *f)
{
	fputs("usage: queenfs [options] [SOURCE] MOUNTPOINT\n"
	    "  -f                 stay in the foreground\n"
	    "  -d                 debug (implies -f)\n"
	    "  --db PATH          the store (default: "
	    "$XDG_DATA_HOME/queenfs/queen.db)\n"
	    "  --sync full|normal|off\n"
	    "  -o OPT[,OPT...]    FUSE mount options (allow_other, "
	    "default_permissions, ...),\n"
	    "                     and db=PATH, sync=MODE as in /etc/fstab\n"
	    "  -V, --version      print the version\n", f);
}

/* Split one -o list: ours are kept, fstab-only ones dropped, the rest to FUSE. */
static int
add_o(struct opts *o, char *list)
{
	static const char *const drop[] = { "defaults", "auto", "noauto",
		"nofail", "user", "users", "nouser", "_netdev", NULL };
	char *save = NULL;

	for (char *t = strtok_r(list, ",", &save); t;
	    t = strtok_r(NULL, ",", &save)) {
		bool skip = strncmp(t, "x-", 2) == 0 || strncmp(t, "comment=", 8) == 0;
		for (int i = 0; drop[i]; i++)
			skip = skip || strcmp(t, drop[i]) == 0;
		if (strncmp(t, "db=", 3) == 0)
			o->db = t + 3;
		else if (strncmp(t, "sync=", 5) == 0)
			o->sync = t + 5;
		else if (!skip) {
			size_t at = strlen(o->fuse_o);
			if (at + strlen(t) + 2 >= sizeof(o->fuse_o))
				return -1;
			snprintf(o->fuse_o + at, sizeof(o->fuse_o) - at, "%s%s",
			    at ? "," : "", t);
		}
	}
	return 0;
}

static int
parse_args(int argc, char **argv, struct opts *o)
{
	const char *pos[2];
	int npos = 0;

	for (int i = 1; i < argc; i++) {
		char *a = argv[i];
		if (strcmp(a, "-f") == 0) {
			o->foreground = true;
		} else if (strcmp(a, "-d") == 0) {
			o->debug = o->foreground = true;
		} else if (strcmp(a, "-h") == 0 || strcmp(a, "--help") == 0) {
			usage(stdout);
			exit(0);
		} else if (strcmp(a, "-V") == 0 || strcmp(a, "--version") == 0) {
			puts(QUEENFS_VERSION);
			exit(0);
		} else if (strcmp(a, "--db") == 0 && i + 1 < argc) {
			o->db = argv[++i];
		} else if (strncmp(a, "--db=", 5) == 0) {
			o->db = a + 5;
		} else if (strcmp(a, "--sync") == 0 && i + 1 < argc) {
			o->sync = argv[++i];
		} else if (strncmp(a, "--sync=", 7) == 0) {
			o->sync = a + 7;
		} else if (strcmp(a, "-o") == 0 && i + 1 < argc) {
			if (add_o(o, argv[++i]) < 0)
				return -1;
		} else if (strncmp(a, "-o", 2) == 0 && a[2]) {
			if (add_o(o, a + 2) < 0)
				return -1;
		} else if (a[0] == '-' || npos == 2) {
			fprintf(stderr, "queenfs: unknown argument %s\n", a);
			return -1;
		} else {
			pos[npos++] = a;
		}
	}
	if (npos == 0) {
		fputs("queenfs: no mountpoint\n", stderr);
		return -1;
	}
	o->mountpoint = pos[npos - 1];
	return 0;
}

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
static int
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

static void
init(void *userdata, struct fuse_conn_info *conn)
{
	if (conn->capable & FUSE_CAP_ATOMIC_O_TRUNC)
		conn->want |= FUSE_CAP_ATOMIC_O_TRUNC;
	conn->want &= ~(unsigned)FUSE_CAP_WRITEBACK_CACHE;
	/*
	 * Each FUSE worker keeps a buffer for the largest request it has
	 * read: at 1 MiB writes, a dozen workers that each took an api/push
	 * body kept some 3 MB resident.  128 KiB costs an api/push of 1000
	 * items two more WRITE requests, within noise in its rate.
	 */
	conn->max_write = 128 * 1024;
	/*
	 * RELEASE is a background request: past max_background (12 by
	 * default) the kernel holds it back, and the publish it carries
	 * would come after a reader the closer's parent starts next.
	 */
	conn->max_background = 1024;
	conn->congestion_threshold = 768;
}

static const struct fuse_lowlevel_ops ops = {
	.init = init,
	.lookup = op_lookup,
	.forget = op_forget,
	.forget_multi = op_forget_multi,
	.getattr = op_getattr,
	.setattr = op_setattr,
	.mknod = op_mknod,
	.mkdir = op_mkdir,
	.unlink = op_unlink,
	.rmdir = op_rmdir,
	.rename = op_rename,
	.open = op_open,
	.read = op_read,
	.write = op_write,
	.flush = op_flush,
	.release = op_release,
	.fsync = op_fsync,
	.opendir = op_opendir,
	.readdir = op_readdir,
	.releasedir = op_releasedir,
	.statfs = op_statfs,
	.setxattr = op_setxattr,
	.getxattr = op_getxattr,
	.listxattr = op_listxattr,
	.removexattr = op_removexattr,
	.create = op_create,
	.poll = op_poll,
};

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

static int
open_store(const char *path, enum queen_sync sync, struct queen **q)
{
	char why[512] = "", shown[PATH_MAX];
	struct queen_options qo = { .path = path, .sync = sync,
	    .err = why, .errlen = sizeof(why) };
	const char *fault = getenv("QUEENFS_FAULT");
	const char *hint;
	int rc;

	/*
	 * A test hook, not a feature: QUEENFS_FAULT=fsync:N (write:N, logsync:N)
	 * makes the store's syncs (writes) fail after N, so the mount tests
	 * can watch the daemon stop writes with EIO (tests/fs-0031-faults.sh).
	 */
	if (fault && *fault)
		qo.fault = fault;
	rc = queen_open(&qo, q);
	if (rc == 0)
		return 0;
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
	fs_log("cannot open %s: %s (%s)", shown_path(path, shown,
	    sizeof(shown)), hint, why[0] ? why : strerror(-rc));
	return rc;
}

/*
 * Staged attempts (stage.c) live beside the database, or for a shared
 * store in the user's data directory, one spool per mountpoint.
 */
static int
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

int
main(int argc, char **argv)
{
	struct opts o;
	char db[PATH_MAX], fsname[PATH_MAX + 16];
	enum queen_sync sync = QUEEN_SYNC_FULL;
	struct fuse_args args = FUSE_ARGS_INIT(0, NULL);
	struct fuse_loop_config *lc;
	struct fuse_session *se;
	struct queen *q = NULL;
	int rc, ret = 1;

	/*
	 * FUSE workers run batches (engine.c), and glibc would give each
	 * thread that allocates its own arena, each keeping what it freed:
	 * one arena holds the daemon's resident size down (by 4 MiB over
	 * two, measured) at no measurable cost, since only one thread works
	 * the store at a time.  Fixed
	 * thresholds stop glibc from raising its mmap threshold after each
	 * big api/ body it frees (and then keeping such bodies resident in
	 * the heap).  4 MiB still serves from the heap what a 1000-item
	 * api/push allocates (its body, and 1.1 MiB of push results), which
	 * mapped and faulted in afresh cost 19-23 us of daemon CPU per
	 * message against 12-17 us from the heap.
	 */
	mallopt(M_ARENA_MAX, 1);
	mallopt(M_MMAP_THRESHOLD, 4 * 1024 * 1024);
	mallopt(M_TRIM_THRESHOLD, 4 * 1024 * 1024);
	memset(&o, 0, sizeof(o));
	if (parse_args(argc, argv, &o) < 0) {
		usage(stderr);
		return 2;
	}
	if (o.sync && strcmp(o.sync, "full") != 0) {
		if (strcmp(o.sync, "normal") == 0)
			sync = QUEEN_SYNC_NORMAL;
		else if (strcmp(o.sync, "off") == 0)
			sync = QUEEN_SYNC_OFF;
		else {
			fprintf(stderr, "queenfs: --sync: full, normal or off\n");
			return 2;
		}
	}
	if ((rc = db_path(o.db, db, sizeof(db))) < 0) {
		fprintf(stderr, "queenfs: database path: %s\n", strerror(-rc));
		return 1;
	}
	/* Open once here to report errors on the terminal; reopen after fork. */
	if (open_store(db, sync, &q) < 0)
		return 1;
	queen_close(q);
	q = NULL;

	node_init();
	fs.uid = getuid();
	fs.gid = getgid();
	fs.started = fs_now();
	fs.debug = o.debug;
	/* /proc/mounts is world-readable: never show a URI (credentials) */
	if (snprintf(fsname, sizeof(fsname), "fsname=%s,subtype=queenfs",
	    queen_path_is_pg(db) ? "postgresql" : db) >= (int)sizeof(fsname))
		goto out_args;
	if (fuse_opt_add_arg(&args, argv[0]) < 0 ||
	    fuse_opt_add_arg(&args, "-o") < 0 ||
	    fuse_opt_add_arg(&args, fsname) < 0 ||
	    (o.fuse_o[0] && (fuse_opt_add_arg(&args, "-o") < 0 ||
	    fuse_opt_add_arg(&args, o.fuse_o) < 0)) ||
	    (o.debug && fuse_opt_add_arg(&args, "-d") < 0))
		goto out_args;
	if (!(se = fuse_session_new(&args, &ops, sizeof(ops), NULL)))
		goto out_args;
	fs.se = se;
	if (fuse_set_signal_handlers(se) != 0)
		goto out_session;
	if (fuse_session_mount(se, o.mountpoint) != 0)
		goto out_signals;
	if (fuse_daemonize(o.foreground) != 0)
		goto out_unmount;
	if (!o.foreground) {
		openlog("queenfs", LOG_PID, LOG_DAEMON);
		use_syslog = true;
	}
	if (open_store(db, sync, &q) < 0)
		goto out_unmount;
	if ((rc = spool_open(db, o.mountpoint, sync)) < 0) {
		fs_log("spool: %s", strerror(-rc));
		queen_close(q);
		goto out_unmount;
	}
	/* what the last run confirmed and did not publish, before serving */
	stage_replay(q);
	if ((rc = engine_start(q)) < 0) {
		fs_log("engine: %s", strerror(-rc));
		queen_close(q);
		goto out_unmount;
	}
	if (!(lc = fuse_loop_cfg_create())) {
		engine_stop();
		goto out_unmount;
	}
	fuse_loop_cfg_set_clone_fd(lc, 0);
	fuse_loop_cfg_set_max_threads(lc, 64);
	fuse_loop_cfg_set_idle_threads(lc, 10);
	if (inval_start() < 0)
		fs_log("no forgetting thread: the kernel keeps old names");
	ret = fuse_session_loop_mt(se, lc) < 0 ? 1 : 0;
	inval_stop();
	fuse_loop_cfg_destroy(lc);
	engine_stop();
out_unmount:
	fuse_session_unmount(se);
out_signals:
	fuse_remove_signal_handlers(se);
out_session:
	fuse_session_destroy(se);
out_args:
	fuse_opt_free_args(&args);
	return ret;
}
