/*
 * ctl.c - parsers for control-file text: config lines, seek positions,
 * RFC 3339 times.  Pure functions only (see ctl.h); whether a key or a
 * value means anything is for the engine to judge, not for this file.
 */
#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>

#include "ctl.h"
#include "../core/queen.h"

static bool
is_blank(char c)
{
	return c == ' ' || c == '\t' || c == '\r';
}

static bool
is_keychar(char c)
{
	return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '_';
}

/* Trim blanks at both ends of [*s, *e). */
static void
trim(const char **s, const char **e)
{
	while (*s < *e && is_blank(**s))
		(*s)++;
	while (*e > *s && is_blank((*e)[-1]))
		(*e)--;
}

int
ctl_config_parse(const char *text, size_t len, struct ctl_config *out,
    int *bad_line)
{
	const char *p = text, *end = text + len;
	char *w = out->buf;
	int line = 0;

	out->n = 0;
	if (bad_line)
		*bad_line = 0;
	if (len > CTL_TEXT_MAX)
		return -E2BIG;
	while (p < end) {
		const char *nl = memchr(p, '\n', (size_t)(end - p));
		const char *le = nl ? nl : end;
		const char *ks = p, *ke, *vs, *ve = le, *eq;

		line++;
		p = nl ? nl + 1 : end;
		trim(&ks, &ve);
		if (ks == ve || *ks == '#')
			continue;
		if (memchr(ks, '\0', (size_t)(ve - ks)))
			goto bad;
		eq = memchr(ks, '=', (size_t)(ve - ks));
		if (!eq)
			goto bad;
		ke = eq;
		vs = eq + 1;
		trim(&ks, &ke);
		trim(&vs, &ve);
		if (ks == ke || vs == ve)
			goto bad;
		for (const char *c = ks; c < ke; c++)
			if (!is_keychar(*c))
				goto bad;
		if (out->n == CTL_MAX_KEYS)
			return -E2BIG;
		/* Keys and values together never exceed len + one NUL each. */
		out->keys[out->n] = w;
		memcpy(w, ks, (size_t)(ke - ks));
		w += ke - ks;
		*w++ = '\0';
		out->values[out->n] = w;
		memcpy(w, vs, (size_t)(ve - vs));
		w += ve - vs;
		*w++ = '\0';
		out->n++;
	}
	return 0;
bad:
	if (bad_line)
		*bad_line = line;
	out->n = 0;
	return -EINVAL;
}

int
ctl_time_parse(const char *s, size_t len, int64_t *ms)
{
	return queen_time_parse(s, len, ms);
}

void
ctl_time_format(int64_t ms, char *buf, size_t len)
{
	queen_time_format(ms, buf, len);
}

/* One position token: offset, time, start or end. */
static int
parse_pos(const char *s, const char *e, struct ctl_seek *out)
{
	size_t n = (size_t)(e - s);
	int64_t v = 0;

	if (n == 5 && memcmp(s, "start", 5) == 0) {
		out->kind = CTL_POS_START;
		out->value = 0;
		return 0;
	}
	if (n == 3 && memcmp(s, "end", 3) == 0) {
		out->kind = CTL_POS_END;
		out->value = 0;
		return 0;
	}
	if (n > 0 && n <= 18) {
		const char *c = s;
		while (c < e && *c >= '0' && *c <= '9')
			v = v * 10 + (*c++ - '0');
		if (c == e) {
			out->kind = CTL_POS_OFFSET;
			out->value = v;
			return 0;
		}
		v = 0;
	}
	if (ctl_time_parse(s, n, &v) == 0) {
		out->kind = CTL_POS_TIME;
		out->value = v;
		return 0;
	}
	return -EINVAL;
}

int
ctl_seek_parse(const char *text, size_t len, struct ctl_seek *out)
{
	const char *s = text, *e = text + len, *sp;

	memset(out, 0, sizeof(*out));
	if (len > 0 && e[-1] == '\n')
		e--;
	trim(&s, &e);
	if (s == e || memchr(s, '\n', (size_t)(e - s)) ||
	    memchr(s, '\0', (size_t)(e - s)))
		return -EINVAL;
	/* A time may hold one space ("2024-01-01 10:00:00Z"): try it whole. */
	if (parse_pos(s, e, out) == 0)
		return 0;
	sp = s;
	while (sp < e && !is_blank(*sp))
		sp++;
	if (sp == e || (size_t)(sp - s) >= sizeof(out->partition))
		return -EINVAL;
	memcpy(out->partition, s, (size_t)(sp - s));
	out->partition[sp - s] = '\0';
	while (sp < e && is_blank(*sp))
		sp++;
	if (parse_pos(sp, e, out) < 0) {
		out->partition[0] = '\0';
		return -EINVAL;
	}
	return 0;
}
