/*
 * text_queues.c - sys/queues: one line per queue its reader may see, in
 * columns aligned for a terminal.  The figures are core's
 * (queen_queue_summary); this file only lays them out.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fs.h"

#define NCOL 7

struct qline {
	char cell[NCOL][QUEEN_NAME_MAX + 1];
};

struct qlines {
	struct queen *q;
	struct cred *c;
	struct qline *l;
	size_t n, cap;
	int rc;
};

static const char *const head[NCOL] = {
	"QUEUE", "DEPTH", "OLDEST", "GROUPS", "LAG", "LEASES", "DLQ",
};

/* An age as a terminal shows it: 0s, 59s, 12m, 5h, 3d. */
static void
age(char *buf, size_t len, int64_t ms)
{
	int64_t s = ms / 1000;

	if (ms <= 0)
		snprintf(buf, len, "-");
	else if (s < 60)
		snprintf(buf, len, "%llds", (long long)s);
	else if (s < 3600)
		snprintf(buf, len, "%lldm", (long long)(s / 60));
	else if (s < 86400)
		snprintf(buf, len, "%lldh", (long long)(s / 3600));
	else
		snprintf(buf, len, "%lldd", (long long)(s / 86400));
}

static int
line_cb(void *arg, const struct queen_queue_info *qi)
{
	struct qlines *ls = arg;
	struct queen_queue_summary s;
	struct qline *l;
	int64_t v[NCOL] = { 0 };

	if (!cred_may(ls->c, qi->owner.uid, qi->owner.gid, qi->owner.mode,
	    4 | 1))
		return 0;
	if (queen_queue_summary(ls->q, qi->name, &s) < 0)
		return 0;  /* gone meanwhile */
	if (ls->n == ls->cap) {
		ls->cap = ls->cap ? ls->cap * 2 : 16;
		if (!(l = realloc(ls->l, ls->cap * sizeof(*l)))) {
			ls->rc = -ENOMEM;
			return 1;
		}
		ls->l = l;
	}
	l = &ls->l[ls->n++];
	v[1] = s.depth;
	v[3] = s.groups;
	v[4] = s.lag;
	v[5] = s.leases;
	v[6] = s.dlq;
	snprintf(l->cell[0], sizeof(l->cell[0]), "%s", qi->name);
	age(l->cell[2], sizeof(l->cell[2]), s.oldest_age);
	for (int i = 1; i < NCOL; i++)
		if (i != 2)
			snprintf(l->cell[i], sizeof(l->cell[i]), "%lld",
			    (long long)v[i]);
	return 0;
}

int
text_sys_queues(struct queen *q, struct cred *who, char **out, size_t *len)
{
	struct qlines ls = { .q = q, .c = who };
	size_t w[NCOL];
	FILE *f;
	int rc;

	rc = queen_queue_list(q, line_cb, &ls);
	if (rc >= 0 && ls.rc < 0)
		rc = ls.rc;
	for (int i = 0; i < NCOL; i++) {
		w[i] = strlen(head[i]);
		for (size_t j = 0; j < ls.n; j++)
			if (strlen(ls.l[j].cell[i]) > w[i])
				w[i] = strlen(ls.l[j].cell[i]);
	}
	if (!(f = open_memstream(out, len))) {
		free(ls.l);
		return -ENOMEM;
	}
	/* the name left-aligned, the figures right-aligned */
	for (size_t j = 0; j <= ls.n; j++) {
		for (int i = 0; i < NCOL; i++) {
			const char *c = j == 0 ? head[i] : ls.l[j - 1].cell[i];

			if (i == 0)
				fprintf(f, "%-*s", (int)w[i], c);
			else
				fprintf(f, "  %*s", (int)w[i], c);
		}
		fputc('\n', f);
	}
	free(ls.l);
	if (fclose(f) != 0 && rc >= 0)
		rc = -ENOMEM;
	if (rc < 0) {
		free(*out);
		*out = NULL;
		*len = 0;
		return rc;
	}
	return 0;
}
