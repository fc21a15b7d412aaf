/*
 * db.h - private to the SQLite backend (db.c, schema.c): the one place
 * SQLite result codes become errno values, and the migration entry.
 */
#ifndef DB_H
#define DB_H

#include <sqlite3.h>
#include <stdbool.h>
#include <stddef.h>

#include "core.h"

int db_errno(int rc);
int schema_migrate(sqlite3 *db, char *err, size_t errlen);
/* vfs.c: the VFS to open with; spec, if not NULL, arms the test hook's
 * fault ("fsync:N", "write:N") */
int queen_vfs(const char *spec, const char **name, char *err, size_t errlen);
/* true when the hook says this fsync of the log (s_sync's own) must fail */
bool fault_fsync_fails(void);

#endif
