/*
 * schema.h -- private to store/: the SQL text of the current schema.
 */
#ifndef TREVO_STORE_SCHEMA_H
#define TREVO_STORE_SCHEMA_H

/* The statements, NULL-terminated, that create every table, index and view
 * of schema version STORE_SCHEMA_VERSION; run inside the creating
 * transaction, after which the caller sets trevo_meta, application_id and
 * user_version. */
extern const char *const store_schema_sql[];

/* store_migration_sql[v]: the statements, NULL-terminated, that turn a
 * database of schema version v into version v + 1 (1 <= v <
 * STORE_SCHEMA_VERSION); run in one transaction, after which the caller sets
 * trevo_meta and user_version. */
extern const char *const *const store_migration_sql[];

#endif
