/*
 * ctl.h - pure parsers for the text written to control files (config, seek)
 * and RFC 3339 time conversion.  No FUSE, no engine calls, no allocation,
 * no global state: every function reads its input and fills a caller struct,
 * so they can be unit-tested and fuzzed on their own.
 */
#ifndef QUEENFS_CTL_H
#define QUEENFS_CTL_H

#include <stddef.h>
#include <stdint.h>

#define CTL_MAX_KEYS 32
#define CTL_TEXT_MAX 4096

/* A parsed config write: n key/value pairs pointing into buf. */
struct ctl_config {
	size_t n;
	const char *keys[CTL_MAX_KEYS];
	const char *values[CTL_MAX_KEYS];
	char buf[CTL_TEXT_MAX + 1];
};

/*
 * ctl_config_parse - parse `key = value` lines.  Blank lines and lines whose
 * first non-blank byte is '#' are skipped; keys are [a-z0-9_]+; values are
 * trimmed and may hold inner spaces ("since 2024-01-01T00:00:00Z").  The
 * last line needs no newline.  Returns 0, or -EINVAL on a malformed line
 * (*bad_line, if not NULL, gets its 1-based number), -E2BIG past
 * CTL_MAX_KEYS keys or CTL_TEXT_MAX bytes.
 */
int ctl_config_parse(const char *text, size_t len, struct ctl_config *out,
    int *bad_line);

/* Seek positions; the values equal enum queen_pos_kind. */
enum ctl_pos {
	CTL_POS_OFFSET = 0,
	CTL_POS_TIME = 1,
	CTL_POS_START = 2,
	CTL_POS_END = 3,
};

struct ctl_seek {
	char partition[256];  /* "" : every partition */
	enum ctl_pos kind;
	int64_t value;        /* offset, or ms since the epoch */
};

/*
 * ctl_seek_parse - one line: "<offset>", "<RFC 3339 time>", "start", "end",
 * or "<partition> <one of those>".  Surrounding blanks and one trailing
 * newline are allowed.  Returns 0 or -EINVAL.
 */
int ctl_seek_parse(const char *text, size_t len, struct ctl_seek *out);

/*
 * ctl_time_parse - RFC 3339 ("2024-05-01T10:00:00Z", optional fraction,
 * 'Z' or +hh:mm / -hh:mm, 'T', 't' or ' ' between date and time) to ms since
 * the epoch.  The whole of s[0..len) must be the time.  Returns 0 or -EINVAL.
 */
int ctl_time_parse(const char *s, size_t len, int64_t *ms);

/* ctl_time_format - ms since the epoch as "YYYY-MM-DDThh:mm:ss.mmmZ". */
void ctl_time_format(int64_t ms, char *buf, size_t len);

#endif
