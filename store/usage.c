/*
 * usage.c -- questions about a run's history as a whole: how large the
 * database is, and the accuracy-connections front. See store.h.
 */
#include "schema.h"
#include "store_impl.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

/* The integer of a one-row, one-column query with run bound to ?1 (if it
 * has one); 0 for no row or NULL. */
static int one_count(struct store *s, const char *sql, int64_t run, int64_t *out,
                     struct tv_error *err)
{
    sqlite3_stmt *q = NULL;
    int rc = sqlite3_prepare_v2(s->db, sql, -1, &q, NULL);
    if (rc == SQLITE_OK && sqlite3_bind_parameter_count(q) > 0)
        sqlite3_bind_int64(q, 1, run);
    if (rc == SQLITE_OK)
        rc = sqlite3_step(q);
    *out = rc == SQLITE_ROW ? sqlite3_column_int64(q, 0) : 0;
    if (rc == SQLITE_ROW || rc == SQLITE_DONE)
        rc = SQLITE_OK;
    int code = rc == SQLITE_OK ? 0 : store_db_error(s, rc, err, "measuring the database (%s)", sql);
    sqlite3_finalize(q);
    return code;
}

int store_usage_get(struct store *s, int64_t run, struct store_usage *out, struct tv_error *err)
{
    memset(out, 0, sizeof *out);
    int all = run < 0;
    int64_t pages, free_pages, page_size;
    int code = one_count(s, "PRAGMA page_count", run, &pages, err);
    if (!code)
        code = one_count(s, "PRAGMA freelist_count", run, &free_pages, err);
    if (!code)
        code = one_count(s, "PRAGMA page_size", run, &page_size, err);
    if (!code)
        code =
            one_count(s,
                      all ? "SELECT count(*) FROM individuals"
                          : "SELECT count(*) FROM individuals" BY_GENERATION " WHERE run_id = ?1",
                      run, &out->individuals, err);
    if (!code)
        code = one_count(s,
                         all ? "SELECT count(*) FROM genomes"
                             : "SELECT count(*) FROM genomes WHERE run_id = ?1",
                         run, &out->genomes, err);
    if (!code)
        code = one_count(s,
                         all ? "SELECT count(*) FROM generations"
                             : "SELECT count(*) FROM generations WHERE run_id = ?1",
                         run, &out->generations, err);
    out->bytes = pages * page_size;
    out->free_bytes = free_pages * page_size;
    return code;
}

int store_front_load(struct store *s, int64_t run, struct store_front_point **out, size_t *n,
                     struct tv_error *err)
{
    *out = NULL;
    *n = 0;
    sqlite3_stmt *q = NULL;
    int rc = sqlite3_prepare_v2(s->db,
                                "SELECT id, generation, fitness, n_conns, n_neurons, n_skip,"
                                " n_recurrent, champion_test FROM (" STORE_FRONT_SELECT
                                ") WHERE run_id = ?1 ORDER BY n_conns, id",
                                -1, &q, NULL);
    if (rc != SQLITE_OK)
        return store_db_error(s, rc, err, "reading the accuracy-connections front");
    sqlite3_bind_int64(q, 1, run);
    struct store_front_point *v = NULL;
    size_t cap = 0, k = 0;
    int code = 0;
    while (!code && (rc = sqlite3_step(q)) == SQLITE_ROW) {
        if (tv_grow((void **)&v, &cap, k + 1, sizeof *v, err)) {
            code = TV_ENOMEM;
            break;
        }
        v[k++] = (struct store_front_point){sqlite3_column_int64(q, 0),
                                            sqlite3_column_int64(q, 1),
                                            store_column_real(q, 2),
                                            (uint32_t)sqlite3_column_int64(q, 3),
                                            (uint32_t)sqlite3_column_int64(q, 4),
                                            (uint32_t)sqlite3_column_int64(q, 5),
                                            (uint32_t)sqlite3_column_int64(q, 6),
                                            store_column_real(q, 7)};
    }
    if (!code && rc != SQLITE_DONE)
        code = store_db_error(s, rc, err, "reading the accuracy-connections front");
    sqlite3_finalize(q);
    if (code) {
        free(v);
        return code;
    }
    *out = v;
    *n = k;
    return 0;
}
