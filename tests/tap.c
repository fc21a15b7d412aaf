/*
 * tap.c - TAP output and the store fixture for the unit tests: a file in
 * a fresh temp dir, or under QUEEN_TEST_PG a fresh PostgreSQL schema.
 */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <unistd.h>

#include "tap.h"

static int ntests, nfailed, planned = -1;

void
plan(int n)
{
	planned = n;
	printf("1..%d\n", n);
}

void
plan_lazy(void)
{
	planned = -1;
}

int
done_testing(void)
{
	if (planned < 0)
		printf("1..%d\n", ntests);
	else if (planned != ntests)
		diag("planned %d tests but ran %d", planned, ntests);
	fflush(stdout);
	return nfailed || (planned >= 0 && planned != ntests);
}

static void
vreport(int pass, const char *file, int line, const char *fmt, va_list ap)
{
	ntests++;
	if (!pass)
		nfailed++;
	printf("%sok %d - ", pass ? "" : "not ", ntests);
	vprintf(fmt, ap);
	printf("\n");
	if (!pass)
		printf("#   failed at %s:%d\n", file, line);
	fflush(stdout);
}

int
ok_(int pass, const char *file, int line, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vreport(pass, file, line, fmt, ap);
	va_end(ap);
	return pass;
}

int
is_int_(int64_t got, int64_t want, const char *file, int line,
    const char *fmt, ...)
{
	va_list ap;
	int pass = got == want;

	va_start(ap, fmt);
	vreport(pass, file, line, fmt, ap);
	va_end(ap);
	if (!pass)
		printf("#   got %lld, want %lld\n", (long long)got,
		    (long long)want);
	return pass;
}

int
is_str_(const char *got, const char *want, const char *file, int line,
    const char *fmt, ...)
{
	va_list ap;
	int pass;

	pass = got && want ? strcmp(got, want) == 0 : got == want;
	va_start(ap, fmt);
	vreport(pass, file, line, fmt, ap);
	va_end(ap);
	if (!pass)
		printf("#   got '%s', want '%s'\n", got ? got : "(null)",
		    want ? want : "(null)");
	return pass;
}

void
diag(const char *fmt, ...)
{
	va_list ap;

	printf("# ");
	va_start(ap, fmt);
	vprintf(fmt, ap);
	va_end(ap);
	printf("\n");
	fflush(stdout);
}

void
skip(int n, const char *why)
{
	while (n-- > 0)
		printf("ok %d # SKIP %s\n", ++ntests, why);
}

static int64_t
fix_clock(void *arg)
{
	return ((struct fix *)arg)->now;
}

struct queen *
fix_reopen(struct fix *f)
{
	struct queen_options o = { 0 };
	struct queen_tune tune = { 0 };
	int rc;

	o.path = f->path;
	o.sync = QUEEN_SYNC_OFF;
	o.clock = fix_clock;
	o.clock_arg = f;
	/* fold young hashes all the time, so every case runs through it */
	tune.fold_at = 5;
	o.tune = &tune;
	rc = queen_open(&o, &f->q);
	if (rc != 0) {
		diag("queen_open(%s): %d", f->path, rc);
		exit(1);
	}
	return f->q;
}

bool
fix_is_pg(void)
{
	const char *uri = getenv("QUEEN_TEST_PG");

	return uri && uri[0];
}

/* A schema of its own for this case, named in the connection string. */
static void
pg_path(struct fix *f)
{
	const char *uri = getenv("QUEEN_TEST_PG");
	unsigned char b[8];
	size_t i;

	if (getrandom(b, sizeof(b), 0) != (ssize_t)sizeof(b)) {
		perror("getrandom");
		exit(1);
	}
	strcpy(f->schema, "q_");
	for (i = 0; i < sizeof(b); i++)
		sprintf(f->schema + 2 + 2 * i, "%02x", b[i]);
	if ((size_t)snprintf(f->path, sizeof(f->path),
	    "%s%coptions=-csearch_path%%3D%s", uri,
	    strchr(uri, '?') ? '&' : '?', f->schema) >= sizeof(f->path)) {
		diag("QUEEN_TEST_PG is too long");
		exit(1);
	}
}

struct queen *
fix_open(struct fix *f, const char *name)
{
	const char *tmp = getenv("TMPDIR");

	memset(f, 0, sizeof(*f));
	snprintf(f->dir, sizeof(f->dir), "%s/queen-%s-XXXXXX",
	    tmp ? tmp : "/tmp", name);
	if (!mkdtemp(f->dir)) {
		perror("mkdtemp");
		exit(1);
	}
	if (fix_is_pg())
		pg_path(f);
	else
		snprintf(f->path, sizeof(f->path), "%s/q.db", f->dir);
	f->now = 1700000000000LL;
	f->failed_before = nfailed;
	return fix_reopen(f);
}

void
fix_close(struct fix *f)
{
	char cmd[400];

	queen_close(f->q);
	f->q = NULL;
	if (nfailed != f->failed_before) {
		diag("left %s for inspection", f->schema[0] ? f->schema :
		    f->dir);
		return;
	}
	if (f->schema[0])
		fix_pg_drop(f);
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", f->dir);
	if (system(cmd) != 0)
		diag("could not remove %s", f->dir);
}
