/*
 * tap_nopg.c - the fixture's PostgreSQL half in a build without libpq
 * (PG=no): there is no schema to drop, since no postgresql:// store
 * opens in such a build.
 */
#include "tap.h"

void
fix_pg_drop(struct fix *f)
{
	(void)f;
}
