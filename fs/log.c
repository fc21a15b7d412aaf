/*
 * log.c - where the daemon's log goes and how much of it: stderr, syslog
 * or a file (--log), and a level (--log-level).  Until log_start (after
 * the daemon forks) every line goes to stderr, so that a failed start is
 * seen on the terminal.  It owns no reasons: its callers write those.
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <syslog.h>
#include <time.h>
#include <unistd.h>

#include "fs.h"

enum sink { SINK_STDERR = 0, SINK_SYSLOG, SINK_FILE };

static struct {
	enum sink want;         /* after log_start */
	enum sink now;
	enum fs_level level;
	int fd;                 /* SINK_FILE */
	char path[PATH_MAX];
} lg = { .level = FSL_INFO, .fd = -1 };

static const char *const level_name[] = {
	[FSL_ERROR] = "error", [FSL_WARN] = "warn", [FSL_INFO] = "info",
	[FSL_DEBUG] = "debug",
};

int
log_set_level(const char *name)
{
	for (int i = FSL_ERROR; i <= FSL_DEBUG; i++)
		if (strcmp(name, level_name[i]) == 0) {
			lg.level = (enum fs_level)i;
			return 0;
		}
	return -EINVAL;
}

/* An absolute path: the daemon works from / once it runs. */
static int
set_file(const char *path)
{
	char cwd[PATH_MAX];

	if (!path[0])
		return -EINVAL;
	if (path[0] == '/')
		return snprintf(lg.path, sizeof(lg.path), "%s", path) <
		    (int)sizeof(lg.path) ? 0 : -ENAMETOOLONG;
	if (!getcwd(cwd, sizeof(cwd)))
		return -errno;
	return snprintf(lg.path, sizeof(lg.path), "%s/%s", cwd, path) <
	    (int)sizeof(lg.path) ? 0 : -ENAMETOOLONG;
}

static bool
have_syslog(void)
{
	const char *sock = getenv("QUEENFS_SYSLOG_SOCKET");  /* tests */
	struct stat st;

	return stat(sock && *sock ? sock : "/dev/log", &st) == 0 &&
	    S_ISSOCK(st.st_mode);
}

static int
open_file(void)
{
	lg.fd = open(lg.path, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0640);
	return lg.fd < 0 ? -errno : 0;
}

/*
 * Choose the sink before the fork: target is "stderr", "syslog", a file,
 * or NULL (the default: stderr in the foreground, else syslog).  Without
 * a syslog socket the log goes to fallback (a file beside the store), and
 * stderr says so, since nothing else would.  Returns 0 or a negative
 * errno with a message on stderr.
 */
int
log_choose(const char *target, bool foreground, const char *fallback)
{
	int rc;

	if (!target)
		target = foreground ? "stderr" : "syslog";
	if (strcmp(target, "stderr") == 0) {
		lg.want = SINK_STDERR;
		return 0;
	}
	if (strcmp(target, "syslog") == 0) {
		if (have_syslog()) {
			lg.want = SINK_SYSLOG;
			return 0;
		}
		if ((rc = set_file(fallback)) < 0 || (rc = open_file()) < 0) {
			fprintf(stderr, "queenfs: no syslog socket (/dev/log), "
			    "and %s cannot be opened (%s): the log goes to "
			    "stderr\n", fallback, strerror(-rc));
			lg.want = SINK_STDERR;
			return 0;
		}
		fprintf(stderr, "queenfs: no syslog socket (/dev/log): the log "
		    "goes to %s\n", lg.path);
		lg.want = SINK_FILE;
		return 0;
	}
	if ((rc = set_file(target)) < 0 || (rc = open_file()) < 0) {
		fprintf(stderr, "queenfs: --log %s: %s\n", target,
		    strerror(-rc));
		return rc;
	}
	lg.want = SINK_FILE;
	return 0;
}

/* After the fork: lines go where log_choose said. */
void
log_start(void)
{
	if (lg.want == SINK_SYSLOG)
		openlog("queenfs", LOG_PID, LOG_DAEMON);
	lg.now = lg.want;
}

static void
put(enum fs_level lv, const char *line)
{
	static const int prio[] = { [FSL_ERROR] = LOG_ERR,
		[FSL_WARN] = LOG_WARNING, [FSL_INFO] = LOG_NOTICE,
		[FSL_DEBUG] = LOG_DEBUG };
	char buf[2200], ts[32];
	struct timespec t;
	struct tm tm;
	int n;

	switch (lg.now) {
	case SINK_SYSLOG:
		syslog(prio[lv], "%s", line);
		return;
	case SINK_FILE:
		clock_gettime(CLOCK_REALTIME, &t);
		gmtime_r(&t.tv_sec, &tm);
		strftime(ts, sizeof(ts), "%Y-%m-%dT%H:%M:%S", &tm);
		n = snprintf(buf, sizeof(buf), "%s.%03ldZ queenfs[%ld] %s: %s\n",
		    ts, t.tv_nsec / 1000000, (long)getpid(), level_name[lv],
		    line);
		if (n > (int)sizeof(buf) - 1)
			n = (int)sizeof(buf) - 1;
		/* one write(2) per line: O_APPEND keeps lines whole */
		if (write(lg.fd, buf, (size_t)n) < 0)
			return;
		return;
	default:
		fprintf(stderr, "queenfs: %s\n", line);
	}
}

static void
vlog(enum fs_level lv, const char *fmt, va_list ap)
{
	char line[2048];

	if (lv > lg.level)
		return;
	vsnprintf(line, sizeof(line), fmt, ap);
	put(lv, line);
}

void
fs_logl(enum fs_level lv, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vlog(lv, fmt, ap);
	va_end(ap);
}

void
fs_log(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vlog(FSL_INFO, fmt, ap);
	va_end(ap);
}
