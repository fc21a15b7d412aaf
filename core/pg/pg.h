/*
 * pg.h - private to the PostgreSQL backend (db_pg.c, pg_schema.c): the one
 * place SQLSTATEs become errno values, and the schema entry.
 */
#ifndef PG_H
#define PG_H

#include <libpq-fe.h>
#include <stdbool.h>
#include <stddef.h>

#include "core.h"

int pg_errno(const char *sqlstate);
int pg_schema_migrate(PGconn *c, char *err, size_t errlen);

#endif
