/*
 * pg_none.c - the PostgreSQL backend of a build without libpq (make
 * PG=no): every postgresql:// store fails to open with -EOPNOTSUPP and a
 * message that says why.  It owns nothing else; core/pg/ is the real one.
 */
#include <errno.h>
#include <stdio.h>

#include "core.h"

int
pg_open(const struct queen_options *opt, struct store **out,
    const struct store_ops **ops, char *err, size_t errlen)
{
	*out = NULL;
	*ops = NULL;
	(void)opt;
	snprintf(err, errlen, "built without PostgreSQL support (rebuild "
	    "with libpq-dev installed, or with PG=yes)");
	return -EOPNOTSUPP;
}
