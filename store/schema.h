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

/* The accuracy-connections front (since version 4): per run, each
 * individual that no other beats on both counts, i.e. whose fitness is
 * higher than that of every individual with fewer connections (equal sizes:
 * the fitter first, then the lower id). Ordered by size, the window's
 * running maximum is the best fitness of the smaller ones; the champion
 * test (a classify run's validation accuracy) is looked up only for the
 * rows of the front. "The smallest network with fitness >= X" is the
 * front's first row with fitness >= X (docs/sql.md). The body of the view
 * v_front, and of store_front_load's query (which also reads a version 3
 * file opened read-only, which has no view yet). */
#define STORE_FRONT_SELECT                                                                         \
    "SELECT f.run, f.run_id, f.id, f.generation, f.fitness, f.n_conns, f.n_neurons, f.n_skip,\n"   \
    "  f.n_recurrent,\n"                                                                           \
    "  (SELECT max(g.champion_test) FROM generations g\n"                                          \
    "   WHERE g.run_id = f.run_id AND g.champion = f.id) AS champion_test\n"                       \
    "FROM (SELECT r.name AS run, i.run_id, i.id, i.generation, i.fitness, i.n_conns,\n"            \
    "        i.n_neurons, i.n_skip, i.n_recurrent,\n"                                              \
    "        max(i.fitness) OVER (PARTITION BY i.run_id ORDER BY i.n_conns, i.fitness DESC, "      \
    "i.id\n"                                                                                       \
    "          ROWS BETWEEN UNBOUNDED PRECEDING AND 1 PRECEDING) AS smaller_best\n"                \
    "      FROM individuals i JOIN runs r ON r.run_id = i.run_id\n"                                \
    "      WHERE i.fitness IS NOT NULL) f\n"                                                       \
    "WHERE f.smaller_best IS NULL OR f.fitness > f.smaller_best"

/* The accuracy-flash front (since version 6): each individual whose
 * valid_acc is higher than that of every one with less flash (equal flash:
 * the more accurate first, then the lower id, so of equal pairs only the
 * first is on the front), among those of one partition, PART: "i.run_id,
 * i.generation" for each generation's (the view v_front_gen), "i.run_id"
 * for a whole run's; WHERE, more conditions on individuals i (" AND ...").
 * Individuals without both figures (a failed child, a task without an
 * accuracy) are left out. */
#define STORE_FLASH_FRONT_SELECT(PART, WHERE)                                                      \
    "SELECT f.run, f.run_id, f.generation, f.id, f.valid_acc, f.flash, f.ram, f.macs,\n"           \
    "  f.n_conns, f.fitness\n"                                                                     \
    "FROM (SELECT r.name AS run, i.run_id, i.generation, i.id, i.valid_acc, i.flash, i.ram,\n"     \
    "        i.macs, i.n_conns, i.fitness,\n"                                                      \
    "        max(i.valid_acc) OVER (PARTITION BY " PART "\n"                                       \
    "          ORDER BY i.flash, i.valid_acc DESC, i.id\n"                                         \
    "          ROWS BETWEEN UNBOUNDED PRECEDING AND 1 PRECEDING) AS smaller_best\n"                \
    "      FROM individuals i JOIN runs r ON r.run_id = i.run_id\n"                                \
    "      WHERE i.valid_acc IS NOT NULL AND i.flash IS NOT NULL" WHERE ") f\n"                    \
    "WHERE f.smaller_best IS NULL OR f.valid_acc > f.smaller_best"

#endif
