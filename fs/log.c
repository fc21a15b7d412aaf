/*
 * log.c - fs_log, the daemon's one way to say something: stderr in the
 * foreground, syslog once the daemon has gone to the background.
 */
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <syslog.h>

#include "fs.h"

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

void
fs_log_to_syslog(void)
{
	openlog("queenfs", LOG_PID, LOG_DAEMON);
	use_syslog = true;
}
