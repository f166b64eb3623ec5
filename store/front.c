/*
 * front.c -- a run's networks on a device: the accuracy-flash front up to a
 * generation, and the most accurate network within a budget. See store.h.
 */
#include "schema.h"
#include "store_impl.h"

#include <stdlib.h>

/* A device figure: NULL reads -1. */
static int64_t column_figure(sqlite3_stmt *q, int i)
{
    return sqlite3_column_type(q, i) == SQLITE_NULL ? -1 : sqlite3_column_int64(q, i);
}

/* The columns both queries read: id .. has_genome (7 .. 10 in the front's). */
#define POINT_COLUMNS                                                                              \
    "f.id, f.generation, f.valid_acc, f.flash, f.ram, f.macs, f.n_conns, f.fitness,\n"             \
    "  EXISTS (SELECT 1 FROM genomes x WHERE x.run_id = f.run_id AND x.id = f.id),\n"              \
    "  (SELECT max(g.champion_test) FROM generations g\n"                                          \
    "   WHERE g.run_id = f.run_id AND g.champion = f.id)"

static struct store_device_point read_point(sqlite3_stmt *q)
{
    return (struct store_device_point){.id = sqlite3_column_int64(q, 0),
                                       .generation = sqlite3_column_int64(q, 1),
                                       .valid_acc = store_column_real(q, 2),
                                       .flash = column_figure(q, 3),
                                       .ram = column_figure(q, 4),
                                       .macs = column_figure(q, 5),
                                       .n_conns = sqlite3_column_int64(q, 6),
                                       .fitness = store_column_real(q, 7),
                                       .has_genome = sqlite3_column_int(q, 8),
                                       .champion_test = store_column_real(q, 9)};
}

int store_device_points_load(struct store *s, int64_t run, int64_t last_generation, int front,
                             struct store_device_point **out, size_t *n, struct tv_error *err)
{
    *out = NULL;
    *n = 0;
    static const char front_sql[] = "SELECT " POINT_COLUMNS " FROM (" STORE_FLASH_FRONT_SELECT(
        "i.run_id", " AND i.run_id = ?1 AND i.generation <= ?2") ") f ORDER BY f.flash, f.id";
    static const char all_sql[] =
        "SELECT " POINT_COLUMNS " FROM individuals f WHERE f.run_id = ?1 AND f.generation <= ?2\n"
        "  AND f.valid_acc IS NOT NULL AND f.flash IS NOT NULL ORDER BY f.generation, f.id";
    sqlite3_stmt *q = NULL;
    int rc = sqlite3_prepare_v2(s->db, front ? front_sql : all_sql, -1, &q, NULL);
    if (rc != SQLITE_OK)
        return store_db_error(s, rc, err, "reading the accuracy-flash front");
    sqlite3_bind_int64(q, 1, run);
    sqlite3_bind_int64(q, 2, last_generation);
    struct store_device_point *v = NULL;
    size_t cap = 0, k = 0;
    int code = 0;
    while ((rc = sqlite3_step(q)) == SQLITE_ROW) {
        if ((code = tv_grow((void **)&v, &cap, k + 1, sizeof *v, err)))
            break;
        v[k++] = read_point(q);
    }
    if (!code && rc != SQLITE_DONE)
        code = store_db_error(s, rc, err, "reading the accuracy-flash front");
    sqlite3_finalize(q);
    if (code) {
        free(v);
        return code;
    }
    *out = v;
    *n = k;
    return 0;
}

int store_best_within(struct store *s, int64_t run, const struct store_budget *b,
                      struct store_device_point *out, struct tv_error *err)
{
    static const char sql[] =
        "SELECT " POINT_COLUMNS " FROM individuals f\n"
        "WHERE f.run_id = ?1 AND f.valid_acc IS NOT NULL AND f.flash IS NOT NULL\n"
        "  AND (?2 < 0 OR f.flash <= ?2) AND (?3 < 0 OR f.ram <= ?3)\n"
        "  AND (?4 < 0 OR f.macs <= ?4)\n"
        "  AND EXISTS (SELECT 1 FROM genomes x WHERE x.run_id = f.run_id AND x.id = f.id)\n"
        "ORDER BY f.valid_acc DESC, f.flash, f.id LIMIT 1";
    sqlite3_stmt *q = NULL;
    int rc = sqlite3_prepare_v2(s->db, sql, -1, &q, NULL);
    if (rc != SQLITE_OK)
        return store_db_error(s, rc, err, "reading the best network within a budget");
    sqlite3_bind_int64(q, 1, run);
    sqlite3_bind_int64(q, 2, b->max_flash);
    sqlite3_bind_int64(q, 3, b->max_ram);
    sqlite3_bind_int64(q, 4, b->max_macs);
    rc = sqlite3_step(q);
    int code = 0;
    if (rc == SQLITE_ROW)
        *out = read_point(q);
    else if (rc == SQLITE_DONE)
        code = tv_error_set(err, TV_ENOTFOUND, "no network of the run within the budget");
    else
        code = store_db_error(s, rc, err, "reading the best network within a budget");
    sqlite3_finalize(q);
    return code;
}
