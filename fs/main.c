/*
 * main.c - the queenfs daemon's set-up and loop: options (args.c), the
 * store opened (store.c), the FUSE session and its worker loop, the HTTP
 * front end beside it or alone (http.c), and an orderly shutdown (engine
 * joined, waiters answered, store closed, mount gone).
 */
#include <errno.h>
#include <limits.h>
#include <malloc.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

#include "fs.h"

/* Every open file past 64 KiB holds a spill file (pending.c): as many
 * descriptors as the hard limit allows. */
static void
raise_nofile(void)
{
	struct rlimit rl;

	if (getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur < rl.rlim_max) {
		rl.rlim_cur = rl.rlim_max;
		(void)setrlimit(RLIMIT_NOFILE, &rl);
	}
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
	.symlink = op_symlink,
	.link = op_link,
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
 * No mountpoint: the store served over HTTP alone, until SIGINT or
 * SIGTERM (a container without /dev/fuse).  Stays in the foreground
 * unless -f is missing, like the mount.
 */
static int
serve_http_only(struct opts *o, const char *db, enum queen_sync sync)
{
	struct queen *q = NULL;
	sigset_t set;
	int sig, rc;

	sigemptyset(&set);
	sigaddset(&set, SIGINT);
	sigaddset(&set, SIGTERM);
	sigaddset(&set, SIGHUP);
	if (!o->foreground) {
		if (daemon(0, 0) < 0)
			return 1;
		log_start();
	}
	signal(SIGPIPE, SIG_IGN);
	pthread_sigmask(SIG_BLOCK, &set, NULL);
	if (open_store(db, sync, &q) < 0)
		return 1;
	if ((rc = engine_start(q, NULL)) < 0) {
		fs_logl(FSL_ERROR, "engine: %s", strerror(-rc));
		queen_close(q);
		return 1;
	}
	if (http_start(&o->http) < 0) {
		engine_stop();
		http_stop();
		return 1;
	}
	sigwait(&set, &sig);
	http_quiesce();
	engine_stop();
	http_stop();
	return 0;
}

int
main(int argc, char **argv)
{
	struct opts o;
	char db[PATH_MAX], fsname[PATH_MAX + 16];
	static char tokens[PATH_MAX], mnt_real[PATH_MAX];
	enum queen_sync sync = QUEEN_SYNC_FULL;
	struct fuse_args args = FUSE_ARGS_INIT(0, NULL);
	struct fuse_loop_config *lc;
	struct fuse_session *se;
	struct queen *q = NULL, *rq = NULL;
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
	raise_nofile();
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
	if (o.http.n && http_check(&o.http) < 0)
		return 2;
	/* read after the daemon has gone to / */
	if (o.http.token_file && realpath(o.http.token_file, tokens))
		o.http.token_file = tokens;
	if (o.log_level && log_set_level(o.log_level) < 0) {
		fprintf(stderr, "queenfs: --log-level: error, warn, info or "
		    "debug\n");
		return 2;
	}
	if ((rc = db_path(o.db, db, sizeof(db))) < 0) {
		fprintf(stderr, "queenfs: database path: %s\n", strerror(-rc));
		return 1;
	}
	if (queen_path_is_pg(db)) {
		const char *t = getenv("TMPDIR");
		snprintf(fs.spool, sizeof(fs.spool), "%s", t && *t ? t : "/tmp");
	} else {
		char *slash;
		snprintf(fs.spool, sizeof(fs.spool), "%s", db);
		if ((slash = strrchr(fs.spool, '/')) != NULL)
			*(slash == fs.spool ? slash + 1 : slash) = '\0';
	}
	{
		char fallback[PATH_MAX + 16];
		size_t sl = strlen(fs.spool);

		snprintf(fallback, sizeof(fallback), "%s%squeenfs.log",
		    fs.spool, sl && fs.spool[sl - 1] == '/' ? "" : "/");
		if (log_choose(o.log, o.foreground, fallback) < 0)
			return 2;
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
	if (!o.mountpoint)
		return serve_http_only(&o, db, sync);
	/*
	 * The spool of a shared store is named after the mountpoint: the
	 * same directory however it is spelt (relative, a trailing slash, a
	 * symlink), resolved before the mount covers it.  A stale mount
	 * (ENOTCONN) keeps the name as given.
	 */
	if (realpath(o.mountpoint, mnt_real))
		o.mountpoint = mnt_real;
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
	if (order_start(se) != 0) {
		fs_log("cannot read /dev/fuse through order.c");
		goto out_unmount;
	}
	if (fuse_daemonize(o.foreground) != 0)
		goto out_unmount;
	log_start();
	if (o.added_dp)
		fs_log("allow_other without default_permissions: added "
		    "default_permissions, so that the kernel enforces the "
		    "modes the mount shows");
	if (open_store(db, sync, &q) < 0)
		goto out_unmount;
	if ((rc = spool_open(db, o.mountpoint, sync)) < 0) {
		fs_log("spool: %s", strerror(-rc));
		queen_close(q);
		goto out_unmount;
	}
	/* what the last run confirmed and did not publish, before serving */
	stage_replay(q);
	/* a server's store: lookups and reads on a connection of their own */
	if (queen_path_is_pg(db) && open_store(db, sync, &rq) < 0)
		fs_log("no connection for reads: they share the writes' one");
	if ((rc = engine_start(q, rq)) < 0) {
		fs_logl(FSL_ERROR, "engine: %s", strerror(-rc));
		queen_close(q);
		queen_close(rq);
		goto out_unmount;
	}
	if (o.http.n && http_start(&o.http) < 0) {
		engine_stop();
		http_stop();
		goto out_unmount;
	}
	if (!(lc = fuse_loop_cfg_create())) {
		http_quiesce();
		engine_stop();
		http_stop();
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
	http_quiesce();
	engine_stop();
	http_stop();
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
