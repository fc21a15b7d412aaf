/*
 * tap.h - a tiny TAP producer for the unit tests (plan, ok, is, diag).
 * Also the per-case fixture: a fresh temp dir with a fresh store and a
 * clock the test drives.  Failing cases leave their dir for inspection.
 * QUEEN_TEST_PG runs the same cases on PostgreSQL.
 */
#ifndef TAP_H
#define TAP_H

#include <stdbool.h>
#include <stdint.h>

#include "../core/queen.h"
#include "../core/queen_tune.h"

void plan(int n);
void plan_lazy(void);      /* print the plan at done_testing() */
int done_testing(void);    /* exit status: 0 when all passed */
int ok_(int pass, const char *file, int line, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
int is_int_(int64_t got, int64_t want, const char *file, int line,
    const char *fmt, ...) __attribute__((format(printf, 5, 6)));
int is_str_(const char *got, const char *want, const char *file, int line,
    const char *fmt, ...) __attribute__((format(printf, 5, 6)));
void diag(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
void skip(int n, const char *why);

#define ok(c, ...) ok_(!!(c), __FILE__, __LINE__, __VA_ARGS__)
#define is_int(g, w, ...) is_int_((g), (w), __FILE__, __LINE__, __VA_ARGS__)
#define is_str(g, w, ...) is_str_((g), (w), __FILE__, __LINE__, __VA_ARGS__)

/* The fixture. */
struct fix {
	char dir[256];
	char path[300];
	int64_t now;      /* the clock the store sees, ms */
	struct queen *q;
	int failed_before;
	char schema[40];  /* under QUEEN_TEST_PG: this case's schema */
};

/* Opens a fresh store in a fresh dir with the fixture clock at t0. */
struct queen *fix_open(struct fix *f, const char *name);
/* Reopens the same file (a restart). */
struct queen *fix_reopen(struct fix *f);
/* Closes; removes the dir unless a test failed since fix_open. */
void fix_close(struct fix *f);
/*
 * With QUEEN_TEST_PG set to a libpq URI the fixture's store is a fresh
 * PostgreSQL schema on that server instead of a file (dropped again by
 * fix_close); true then.
 */
bool fix_is_pg(void);
/* tap_pg.c (tap_nopg.c without libpq): drops the case's schema */
void fix_pg_drop(struct fix *f);

#endif
