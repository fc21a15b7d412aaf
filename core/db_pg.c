/*
 * db_pg.c - the PostgreSQL implementation of the storage seam (not yet
 * written: refuses to open).
 */
#include <errno.h>
#include <stdio.h>

#include "core.h"

int
pg_open(const struct queen_options *opt, struct store **out,
    const struct store_ops **ops, char *err, size_t errlen)
{
	(void)ops;
	*out = NULL;
	snprintf(err, errlen, "%s: PostgreSQL support is not built in",
	    opt->path);
	return -ENOTSUP;
}
