/*
 * config.c - the configuration keys of queues and groups: their names,
 * units, ranges and defaults; parsing values (all-or-nothing per call) and
 * formatting the whole config as "key = value" lines.  Storing the result is
 * the caller's business.
 */
#include <ctype.h>
#include <errno.h>
#include <limits.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "core.h"

enum kind { K_SECONDS, K_COUNT, K_BOOL, K_BYTES, K_SUB };

struct key {
	const char *name;
	enum kind kind;
	int64_t min, max, def;
	int qfield;   /* index into struct qconf, or -1 */
	int gfield;   /* 0 batch, 1 wait, 2 auto_ack, 3 subscription; -1 */
};

#define DAY (86400)
#define YEARS (100LL * 365 * DAY)

/* The queue keys follow struct qconf's order. */
static const struct key keys[] = {
	{ "lease_time", K_SECONDS, 1, YEARS, 300, 0, -1 },
	{ "retry_limit", K_COUNT, 0, 1000000, 3, 1, -1 },
	{ "dlq", K_BOOL, 0, 1, 1, 2, -1 },
	{ "batch", K_COUNT, 1, QUEEN_BATCH_MAX, 1, 3, 0 },
	{ "wait", K_SECONDS, 0, DAY, 30, 4, 1 },
	{ "delay", K_SECONDS, 0, YEARS, 0, 5, -1 },
	{ "window_buffer", K_SECONDS, 0, YEARS, 0, 6, -1 },
	{ "dedup_window", K_SECONDS, 0, YEARS, 3600, 7, -1 },
	{ "retention", K_SECONDS, 0, YEARS, 0, 8, -1 },
	{ "completed_retention", K_SECONDS, 0, YEARS, 0, 9, -1 },
	{ "max_message_bytes", K_BYTES, 1, 1LL << 30, 16LL << 20, 10, -1 },
	{ "expiry_charges_retry", K_BOOL, 0, 1, 0, 11, -1 },
	{ "auto_ack", K_BOOL, 0, 1, 0, 12, 2 },
	{ "timer_delay", K_SECONDS, 0, YEARS, 0, 13, -1 },
	{ "hash_retention", K_SECONDS, 1, YEARS, 7 * DAY, 14, -1 },
	{ "subscription", K_SUB, 0, 0, 0, -1, 3 },
};

#define NKEYS (sizeof(keys) / sizeof(keys[0]))

const size_t qconf_offsets[QCONF_N] = {
	offsetof(struct qconf, lease_time),
	offsetof(struct qconf, retry_limit),
	offsetof(struct qconf, dlq),
	offsetof(struct qconf, batch),
	offsetof(struct qconf, wait),
	offsetof(struct qconf, delay),
	offsetof(struct qconf, window_buffer),
	offsetof(struct qconf, dedup_window),
	offsetof(struct qconf, retention),
	offsetof(struct qconf, completed_retention),
	offsetof(struct qconf, max_message_bytes),
	offsetof(struct qconf, expiry_charges_retry),
	offsetof(struct qconf, auto_ack),
	offsetof(struct qconf, timer_delay),
	offsetof(struct qconf, hash_retention),
};

void
qconf_defaults(struct qconf *c)
{
	size_t i;

	for (i = 0; i < NKEYS; i++) {
		if (keys[i].qfield >= 0)
			*QCONF_FIELD(c, keys[i].qfield) = keys[i].def;
	}
}

static const struct key *
find_key(const char *name)
{
	size_t i;

	for (i = 0; i < NKEYS; i++) {
		if (strcmp(keys[i].name, name) == 0)
			return &keys[i];
	}
	return NULL;
}

/* digits with an optional unit suffix; no sign, no spaces inside */
static int
parse_scaled(const char *s, enum kind kind, int64_t *out)
{
	char *end;
	unsigned long long v;
	int64_t mul = 1;

	if (!isdigit((unsigned char)s[0]))
		return -EINVAL;
	errno = 0;
	v = strtoull(s, &end, 10);
	if (errno || v > (unsigned long long)INT64_MAX)
		return -EINVAL;
	if (kind == K_SECONDS) {
		if (strcmp(end, "") == 0 || strcmp(end, "s") == 0)
			mul = 1;
		else if (strcmp(end, "m") == 0)
			mul = 60;
		else if (strcmp(end, "h") == 0)
			mul = 3600;
		else if (strcmp(end, "d") == 0)
			mul = DAY;
		else
			return -EINVAL;
	} else if (kind == K_BYTES) {
		if (strcmp(end, "") == 0)
			mul = 1;
		else if (strcmp(end, "K") == 0 || strcmp(end, "k") == 0)
			mul = 1024;
		else if (strcmp(end, "M") == 0)
			mul = 1024 * 1024;
		else if (strcmp(end, "G") == 0)
			mul = 1024 * 1024 * 1024;
		else
			return -EINVAL;
	} else if (*end) {
		return -EINVAL;
	}
	if (v > (unsigned long long)(INT64_MAX / mul))
		return -EINVAL;
	*out = (int64_t)v * mul;
	return 0;
}

int
parse_time(const char *s, int64_t *ms)
{
	return queen_time_parse(s, strlen(s), ms);
}

static int
bad(char *err, size_t errlen, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(err, errlen, fmt, ap);
	va_end(ap);
	return -EINVAL;
}

static int
parse_value(char *err, size_t errlen, const struct key *k, const char *v,
    int64_t *out, int64_t *since)
{
	int rc;

	if (k->kind == K_BOOL) {
		if (!strcmp(v, "on") || !strcmp(v, "true") || !strcmp(v, "1") ||
		    !strcmp(v, "yes"))
			*out = 1;
		else if (!strcmp(v, "off") || !strcmp(v, "false") ||
		    !strcmp(v, "0") || !strcmp(v, "no"))
			*out = 0;
		else
			return bad(err, errlen, "%s: '%s' is not on or off",
			    k->name, v);
		return 0;
	}
	if (k->kind == K_SUB) {
		if (!strcmp(v, "all"))
			*out = QUEEN_SUB_ALL;
		else if (!strcmp(v, "new"))
			*out = QUEEN_SUB_NEW;
		else if (!strncmp(v, "since ", 6) &&
		    parse_time(v + 6, since) == 0)
			*out = QUEEN_SUB_SINCE;
		else
			return bad(err, errlen, "subscription: '%s' is not all, "
			    "new or since <RFC 3339 time>", v);
		return 0;
	}
	rc = parse_scaled(v, k->kind, out);
	if (rc != 0 || *out < k->min || *out > k->max)
		return bad(err, errlen, "%s: '%s' is not a %s from %lld to "
		    "%lld", k->name, v, k->kind == K_SECONDS ?
		    "number of seconds" : k->kind == K_BYTES ?
		    "number of bytes" : "whole number", (long long)k->min,
		    (long long)k->max);
	return 0;
}

/*
 * Validate every pair and apply them to *qc (queue scope, g NULL) or *g
 * (group scope); the reason of the first refusal goes to err.
 */
static int
config_validate(char *err, size_t errlen, struct qconf *qc,
    struct group_row *g, const char *const *k, const char *const *v,
    size_t n)
{
	size_t i;
	int rc;

	for (i = 0; i < n; i++) {
		const struct key *key = find_key(k[i]);
		int64_t val = 0, since = 0;

		if (!key || (g ? key->gfield < 0 : key->qfield < 0))
			return bad(err, errlen, "unknown %s config key '%s'",
			    g ? "group" : "queue", k[i]);
		if ((rc = parse_value(err, errlen, key, v[i], &val,
		    &since)) != 0)
			return rc;
		if (!g) {
			*QCONF_FIELD(qc, key->qfield) = val;
			continue;
		}
		switch (key->gfield) {
		case 0: g->batch = val; break;
		case 1: g->wait = val; break;
		case 2: g->auto_ack = val; break;
		default: g->mode = val; g->since = since; break;
		}
	}
	return 0;
}

/*
 * Validate every pair, then apply them all to *qr (queue scope, gr NULL) or
 * *gr (group scope).  Nothing is touched unless all are good.
 */
int
config_apply(struct queen *q, struct queue_row *qr, struct group_row *gr,
    const char *const *k, const char *const *v, size_t n)
{
	struct qconf qc = qr->conf;
	struct group_row g;
	int rc;

	if (gr)
		g = *gr;
	if ((rc = config_validate(q->err, sizeof(q->err), &qc, gr ? &g : NULL,
	    k, v, n)) != 0)
		return rc;
	if (gr)
		*gr = g;
	else
		qr->conf = qc;
	return 0;
}

int
queen_config_check(bool group, const char *const *k, const char *const *v,
    size_t n, char *why, size_t whylen)
{
	struct qconf qc;
	struct group_row g;
	char scratch[1];

	memset(&qc, 0, sizeof(qc));
	memset(&g, 0, sizeof(g));
	if (!why || !whylen) {
		why = scratch;
		whylen = sizeof(scratch);
	}
	why[0] = '\0';
	return config_validate(why, whylen, &qc, group ? &g : NULL, k, v, n);
}

static int64_t
eff(const struct queue_row *qr, const struct group_row *gr,
    const struct key *k)
{
	if (gr) {
		switch (k->gfield) {
		case 0: if (gr->batch >= 0) return gr->batch; break;
		case 1: if (gr->wait >= 0) return gr->wait; break;
		case 2: if (gr->auto_ack >= 0) return gr->auto_ack; break;
		case 3: return gr->mode;
		}
	}
	return k->qfield >= 0 ? *QCONF_FIELD((struct qconf *)&qr->conf,
	    k->qfield) : 0;
}

int
config_lookup(const struct queue_row *qr, const struct group_row *gr,
    const char *name, int64_t *value)
{
	const struct key *k = find_key(name);

	if (!k || (!gr && k->qfield < 0))
		return -EINVAL;
	*value = eff(qr, gr, k);
	return 0;
}

ssize_t
config_format(const struct queue_row *qr, const struct group_row *gr,
    char *buf, size_t len)
{
	size_t i, used = 0;
	char tbuf[64];
	int n;

	if (len)
		buf[0] = '\0';
	for (i = 0; i < NKEYS; i++) {
		const struct key *k = &keys[i];
		int64_t v;
		const char *s = NULL;

		if (gr ? k->gfield < 0 : k->qfield < 0)
			continue;
		v = eff(qr, gr, k);
		if (k->kind == K_BOOL) {
			s = v ? "on" : "off";
		} else if (k->kind == K_SUB) {
			if (v == QUEEN_SUB_SINCE) {
				char t[40];

				/* to the millisecond it was set to: what
				 * reads back writes back unchanged */
				queen_time_format(gr->since, t, sizeof(t));
				snprintf(tbuf, sizeof(tbuf), "since %s", t);
				s = tbuf;
			} else {
				s = v == QUEEN_SUB_NEW ? "new" : "all";
			}
		}
		if (s)
			n = snprintf(used < len ? buf + used : NULL,
			    used < len ? len - used : 0, "%s = %s\n", k->name, s);
		else
			n = snprintf(used < len ? buf + used : NULL,
			    used < len ? len - used : 0, "%s = %lld\n", k->name,
			    (long long)v);
		if (n < 0)
			return -EIO;
		used += (size_t)n;
	}
	return (ssize_t)used;
}
