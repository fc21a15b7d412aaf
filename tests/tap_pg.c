/*
 * tap_pg.c - the fixture's PostgreSQL half: drop the schema a case ran
 * in.  Linked only into a build with libpq (PG=yes); tap_nopg.c stands
 * in otherwise.
 */
#include <libpq-fe.h>
#include <stdio.h>
#include <stdlib.h>

#include "tap.h"

static void
no_notices(void *arg, const char *msg)
{
	(void)arg;
	(void)msg;
}

void
fix_pg_drop(struct fix *f)
{
	PGconn *c = PQconnectdb(getenv("QUEEN_TEST_PG"));
	PGresult *r;
	char sql[80];

	PQsetNoticeProcessor(c, no_notices, NULL);
	snprintf(sql, sizeof(sql), "DROP SCHEMA IF EXISTS %s CASCADE",
	    f->schema);
	r = PQstatus(c) == CONNECTION_OK ? PQexec(c, sql) : NULL;
	if (PQresultStatus(r) != PGRES_COMMAND_OK)
		diag("could not drop schema %s: %s", f->schema,
		    PQerrorMessage(c));
	PQclear(r);
	PQfinish(c);
}
