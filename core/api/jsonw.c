/*
 * jsonw.c - a JSON text writer for the answers that carry many items
 * (api/pop's messages, api/push's results), appended straight into one
 * growing buffer: building a jansson object per item and then dumping
 * them all cost most of such a call.  Strings are escaped as RFC 8259
 * asks; a byte that does not belong to well-formed UTF-8 is written as
 * U+FFFD, since JSON text is Unicode.  An allocation failure is sticky:
 * jw_finish then answers NULL.
 */
#include <errno.h>
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

/* Digits by hand: snprintf was a tenth of a 1000-message api/pop. */
void
jw_int(struct jw *w, int64_t v)
{
	char buf[24], *p = buf + sizeof(buf);
	uint64_t u = v < 0 ? -(uint64_t)v : (uint64_t)v;

	do
		*--p = (char)('0' + u % 10);
	while ((u /= 10) != 0);
	if (v < 0)
		*--p = '-';
	jw_raw(w, p, (size_t)(buf + sizeof(buf) - p));
}

/*
 * How many bytes from p stand in a JSON string as they are: not a quote
 * or a backslash, not under 0x20, not over 0x7f.  Eight at a time while a word
 * holds none of those (a test that may say "one is here" when none is,
 * never the reverse), then byte by byte: most payloads and ids are such
 * bytes, and the byte loop was a tenth of an api/pop.
 */
static size_t
plain_run(const unsigned char *p, size_t n)
{
	const uint64_t ones = 0x0101010101010101ull;
	const uint64_t high = 0x8080808080808080ull;
	size_t i = 0;

	for (; i + 8 <= n; i += 8) {
		uint64_t x, q, b;

		memcpy(&x, p + i, 8);
		q = x ^ (ones * '"');
		b = x ^ (ones * '\\');
		if ((((q - ones) & ~q) | ((b - ones) & ~b) |
		    ((x - ones * 0x20) & ~x) | x) & high)
			break;
	}
	while (i < n && p[i] >= 0x20 && p[i] < 0x80 && p[i] != '"' &&
	    p[i] != '\\')
		i++;
	return i;
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
		run = i + plain_run(s + i, n - i);
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

/* ---- checking that bytes are one JSON text, without building it ---- */

#define JV_DEPTH 512

struct jv {
	const unsigned char *p, *end;
	int depth;
};

static void
jv_ws(struct jv *v)
{
	while (v->p < v->end && (*v->p == ' ' || *v->p == '\t' ||
	    *v->p == '\n' || *v->p == '\r'))
		v->p++;
}

static bool
jv_lit(struct jv *v, const char *word)
{
	size_t n = strlen(word);

	if ((size_t)(v->end - v->p) < n || memcmp(v->p, word, n) != 0)
		return false;
	v->p += n;
	return true;
}

static int
hexval(unsigned char c)
{
	if (c >= '0' && c <= '9')
		return c - '0';
	if (c >= 'a' && c <= 'f')
		return c - 'a' + 10;
	if (c >= 'A' && c <= 'F')
		return c - 'A' + 10;
	return -1;
}

/* \uXXXX at p (after the backslash-u); its value, or -1 */
static long
jv_hex4(struct jv *v)
{
	long u = 0;

	if (v->end - v->p < 4)
		return -1;
	for (int i = 0; i < 4; i++) {
		int h = hexval(v->p[i]);

		if (h < 0)
			return -1;
		u = u * 16 + h;
	}
	v->p += 4;
	return u;
}

/* As jansson takes them: valid UTF-8, paired surrogates, no U+0000. */
static bool
jv_string(struct jv *v)
{
	size_t u;
	long c, lo;

	v->p++;     /* the opening quote */
	while (v->p < v->end) {
		unsigned char ch;

		v->p += plain_run(v->p, (size_t)(v->end - v->p));
		if (v->p >= v->end)
			break;
		ch = *v->p;

		if (ch == '"') {
			v->p++;
			return true;
		}
		if (ch < 0x20)
			return false;
		if (ch >= 0x80) {
			if (!(u = utf8_len(v->p, (size_t)(v->end - v->p))))
				return false;
			v->p += u;
			continue;
		}
		v->p++;
		if (ch != '\\')
			continue;
		if (v->p >= v->end)
			return false;
		ch = *v->p++;
		if (strchr("\"\\/bfnrt", ch) && ch)
			continue;
		if (ch != 'u' || (c = jv_hex4(v)) <= 0)
			return false;
		if (c >= 0xdc00 && c <= 0xdfff)
			return false;
		if (c >= 0xd800 && c <= 0xdbff) {
			if (!jv_lit(v, "\\u") || (lo = jv_hex4(v)) < 0xdc00 ||
			    lo > 0xdfff)
				return false;
		}
	}
	return false;
}

/* As jansson takes them: integers that fit 64 bits, finite reals. */
static bool
jv_number(struct jv *v)
{
	const unsigned char *s = v->p;
	bool real = false;
	char buf[400];
	size_t n;

	if (v->p < v->end && *v->p == '-')
		v->p++;
	if (v->p >= v->end || *v->p < '0' || *v->p > '9')
		return false;
	if (*v->p == '0')
		v->p++;
	else
		while (v->p < v->end && *v->p >= '0' && *v->p <= '9')
			v->p++;
	if (v->p < v->end && *v->p == '.') {
		real = true;
		if (++v->p >= v->end || *v->p < '0' || *v->p > '9')
			return false;
		while (v->p < v->end && *v->p >= '0' && *v->p <= '9')
			v->p++;
	}
	if (v->p < v->end && (*v->p == 'e' || *v->p == 'E')) {
		real = true;
		v->p++;
		if (v->p < v->end && (*v->p == '+' || *v->p == '-'))
			v->p++;
		if (v->p >= v->end || *v->p < '0' || *v->p > '9')
			return false;
		while (v->p < v->end && *v->p >= '0' && *v->p <= '9')
			v->p++;
	}
	n = (size_t)(v->p - s);
	if (n >= sizeof(buf))
		return false;
	memcpy(buf, s, n);
	buf[n] = '\0';
	errno = 0;
	if (real) {
		double d = strtod(buf, NULL);

		return !(errno == ERANGE && d != 0);
	}
	(void)strtoll(buf, NULL, 10);
	return errno != ERANGE;
}

static bool
jv_value(struct jv *v)
{
	bool first;

	jv_ws(v);
	if (v->p >= v->end)
		return false;
	switch (*v->p) {
	case '"':
		return jv_string(v);
	case 't':
		return jv_lit(v, "true");
	case 'f':
		return jv_lit(v, "false");
	case 'n':
		return jv_lit(v, "null");
	case '{':
	case '[': {
		unsigned char close = *v->p == '{' ? '}' : ']';
		bool obj = close == '}';

		if (++v->depth > JV_DEPTH)
			return false;
		v->p++;
		jv_ws(v);
		for (first = true; ; first = false) {
			if (v->p < v->end && *v->p == close && first) {
				v->p++;
				break;
			}
			if (obj) {
				jv_ws(v);
				if (v->p >= v->end || *v->p != '"' ||
				    !jv_string(v))
					return false;
				jv_ws(v);
				if (v->p >= v->end || *v->p++ != ':')
					return false;
			}
			if (!jv_value(v))
				return false;
			jv_ws(v);
			if (v->p < v->end && *v->p == ',') {
				v->p++;
				continue;
			}
			if (v->p < v->end && *v->p == close) {
				v->p++;
				break;
			}
			return false;
		}
		v->depth--;
		return true;
	}
	default:
		return jv_number(v);
	}
}

bool
json_text(const void *p, size_t n, size_t *from, size_t *len)
{
	struct jv v = { .p = p, .end = (const unsigned char *)p + n };
	const unsigned char *start;

	jv_ws(&v);
	start = v.p;
	if (!jv_value(&v))
		return false;
	*from = (size_t)(start - (const unsigned char *)p);
	*len = (size_t)(v.p - start);
	jv_ws(&v);
	return v.p == v.end;
}
