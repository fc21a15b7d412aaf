/*
 * jsonw.c - a JSON text writer for the answers that carry many items
 * (api/pop's messages, api/push's results), appended straight into one
 * growing buffer: building a jansson object per item and then dumping
 * them all cost most of such a call.  Strings are escaped as RFC 8259
 * asks; a byte that does not belong to well-formed UTF-8 is written as
 * U+FFFD, since JSON text is Unicode.  An allocation failure is sticky:
 * jw_finish then answers NULL.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core.h"

static bool
room(struct jw *w, size_t n)
{
	size_t cap;
	char *p;

	if (w->oom)
		return false;
	if (w->len + n + 1 <= w->cap)
		return true;
	cap = w->cap ? w->cap : 4096;
	while (cap < w->len + n + 1)
		cap *= 2;
	if (!(p = realloc(w->p, cap))) {
		w->oom = true;
		return false;
	}
	w->p = p;
	w->cap = cap;
	return true;
}

void
jw_raw(struct jw *w, const char *s, size_t n)
{
	if (!room(w, n))
		return;
	memcpy(w->p + w->len, s, n);
	w->len += n;
}

void
jw_lit(struct jw *w, const char *s)
{
	jw_raw(w, s, strlen(s));
}

void
jw_int(struct jw *w, int64_t v)
{
	char buf[24];
	int n = snprintf(buf, sizeof(buf), "%lld", (long long)v);

	jw_raw(w, buf, (size_t)n);
}

/* The length of the well-formed UTF-8 sequence at s (n bytes left), or 0. */
static size_t
utf8_len(const unsigned char *s, size_t n)
{
	unsigned char c = s[0];
	size_t len, i;
	unsigned char lo = 0x80, hi = 0xbf;

	if (c >= 0xc2 && c <= 0xdf)
		len = 2;
	else if (c >= 0xe0 && c <= 0xef)
		len = 3;
	else if (c >= 0xf0 && c <= 0xf4)
		len = 4;
	else
		return 0;
	if (n < len)
		return 0;
	/* no overlong forms, no surrogates, nothing past U+10FFFF */
	if (c == 0xe0)
		lo = 0xa0;
	else if (c == 0xed)
		hi = 0x9f;
	else if (c == 0xf0)
		lo = 0x90;
	else if (c == 0xf4)
		hi = 0x8f;
	if (s[1] < lo || s[1] > hi)
		return 0;
	for (i = 2; i < len; i++)
		if (s[i] < 0x80 || s[i] > 0xbf)
			return 0;
	return len;
}

void
jw_str(struct jw *w, const char *str)
{
	const unsigned char *s = (const unsigned char *)str;
	size_t n, i, run, u;

	if (!str) {
		jw_lit(w, "null");
		return;
	}
	n = strlen(str);
	jw_raw(w, "\"", 1);
	for (i = 0; i < n; i = run) {
		/* the longest stretch that needs no escape, copied at once */
		for (run = i; run < n && s[run] >= 0x20 && s[run] < 0x80 &&
		    s[run] != '"' && s[run] != '\\'; run++)
			;
		jw_raw(w, str + i, run - i);
		if (run == n)
			break;
		if (s[run] >= 0x80) {
			if ((u = utf8_len(s + run, n - run)) > 0)
				jw_raw(w, str + run, u);
			else
				jw_lit(w, "\\ufffd");
			run += u ? u : 1;
		} else if (s[run] == '"' || s[run] == '\\') {
			char e[2] = { '\\', (char)s[run] };

			jw_raw(w, e, 2);
			run++;
		} else {
			char e[8];

			snprintf(e, sizeof(e), "\\u%04x", s[run]);
			jw_raw(w, e, 6);
			run++;
		}
	}
	jw_raw(w, "\"", 1);
}

char *
jw_finish(struct jw *w)
{
	if (!room(w, 0)) {
		free(w->p);
		w->p = NULL;
		return NULL;
	}
	w->p[w->len] = '\0';
	return w->p;
}
