/*
 * generations.c -- closing a generation (statistics, species, checkpoint)
 * and reading its statistics back. See store.h.
 */
#include "store_impl.h"

#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- population ids ------------------------------------------------------ */

static int cmp_member(const void *a, const void *b)
{
    const struct member *x = a, *y = b;
    if (x->id != y->id)
        return x->id < y->id ? -1 : 1;
    return (x->pos > y->pos) - (x->pos < y->pos);
}

/* ids[0..n) with their positions, sorted by id (the master keeps its
 * population sorted: then there is nothing to sort). NULL if out of memory. */
struct member *store_members_sorted(const int64_t *ids, size_t n)
{
    struct member *m = malloc((n ? n : 1) * sizeof *m);
    if (!m)
        return NULL;
    int sorted = 1;
    for (size_t i = 0; i < n; i++) {
        m[i] = (struct member){ids[i], i};
        sorted &= i == 0 || ids[i - 1] <= ids[i];
    }
    if (!sorted)
        qsort(m, n, sizeof *m, cmp_member);
    return m;
}

/* The end of the run of nearby ids that starts at m[k]. */
size_t store_member_run_end(const struct member *m, size_t k, size_t n)
{
    size_t e = k + 1;
    while (e < n && m[e].id - m[e - 1].id <= RUN_GAP)
        e++;
    return e;
}

/* Sets *missing to the position of the first of ids[0..n) (in their order)
 * that is not an individual of run, n if every one is. One range scan per
 * run of nearby ids, not one lookup per id: a population is mostly one or
 * two generations, dense ranges. */
static int find_missing(struct store *s, int64_t run, const int64_t *ids, size_t n, size_t *missing,
                        const char *what, struct tv_error *err)
{
    *missing = n;
    struct member *m = store_members_sorted(ids, n);
    if (!m)
        return tv_error_set(err, TV_ENOMEM, "%s: %s: looking up the population: out of memory",
                            s->path, what);
    int rc = SQLITE_DONE;
    for (size_t k = 0; k < n;) {
        size_t e = store_member_run_end(m, k, n), j = k;
        sqlite3_stmt *q = store_stmt3(s, ST_IND_ID_RANGE, run, m[k].id, m[e - 1].id);
        while (j < e && (rc = sqlite3_step(q)) == SQLITE_ROW) {
            int64_t id = sqlite3_column_int64(q, 0);
            for (; j < e && m[j].id <= id; j++)
                if (m[j].id < id && m[j].pos < *missing)
                    *missing = m[j].pos;
        }
        store_done(q);
        if (rc != SQLITE_ROW && rc != SQLITE_DONE)
            break;
        rc = SQLITE_DONE;
        for (; j < e; j++)
            if (m[j].pos < *missing)
                *missing = m[j].pos;
        k = e;
    }
    free(m);
    if (rc != SQLITE_DONE)
        return store_db_error(s, rc, err, "%s: looking up the population", what);
    return 0;
}

/* ---- generations and checkpoints ----------------------------------------------- */

static void put_le64(uint8_t *p, int64_t v)
{
    uint64_t u = (uint64_t)v;
    for (int i = 0; i < 8; i++)
        p[i] = (uint8_t)(u >> (8 * i));
}

/* The rows of generation g, in the caller's transaction: its statistics,
 * the champion's solved mark, its species, its checkpoint (population ids
 * as ids[0..8 n_population), little-endian) and the run's updated_at. */
static int write_generation(struct store *s, int64_t run, const struct store_generation *g,
                            const uint8_t *ids, const char *what, struct tv_error *err)
{
    int rc;
    sqlite3_stmt *q = store_stmt(s, ST_GENERATION_INSERT);
    sqlite3_bind_int64(q, 1, run);
    sqlite3_bind_int64(q, 2, g->generation);
    sqlite3_bind_double(q, 3, g->best);
    sqlite3_bind_double(q, 4, g->mean);
    sqlite3_bind_double(q, 5, g->median);
    store_bind_id(q, 6, g->champion);
    sqlite3_bind_int64(q, 7, (int64_t)g->n_species);
    sqlite3_bind_int64(q, 8, (int64_t)g->n_evals);
    sqlite3_bind_double(q, 9, g->wall_seconds);
    sqlite3_bind_int(q, 10, g->solved || (g->champion_tested && g->champion_solved));
    if (g->champion_tested)
        sqlite3_bind_double(q, 11, g->champion_score);
    else
        sqlite3_bind_null(q, 11);
    sqlite3_bind_int64(q, 12, (int64_t)g->n_failed);
    if ((rc = store_exec_stmt(q)) != SQLITE_OK)
        return store_db_error(s, rc, err, "%s: statistics", what);
    if (g->champion_tested && g->champion_solved && g->champion != STORE_ID_NONE) {
        q = store_stmt2(s, ST_IND_MARK_SOLVED, run, g->champion);
        if ((rc = store_exec_stmt(q)) != SQLITE_OK)
            return store_db_error(s, rc, err, "%s: marking the champion solved", what);
    }
    for (size_t i = 0; i < g->n_species; i++) {
        const struct store_species *sp = &g->species[i];
        q = store_stmt3(s, ST_SPECIES_INSERT, run, g->generation, sp->id);
        sqlite3_bind_int64(q, 4, sp->size);
        sqlite3_bind_double(q, 5, sp->best_fitness);
        sqlite3_bind_double(q, 6, sp->mean_fitness);
        store_bind_id(q, 7, sp->representative);
        sqlite3_bind_int64(q, 8, sp->born);
        sqlite3_bind_int64(q, 9, sp->stagnant);
        if ((rc = store_exec_stmt(q)) != SQLITE_OK) {
            if (rc == SQLITE_CONSTRAINT_PRIMARYKEY)
                return tv_error_set(err, TV_EINVAL, "%s: %s: species %lld appears twice", s->path,
                                    what, (long long)sp->id);
            return store_db_error(s, rc, err, "%s: species %lld", what, (long long)sp->id);
        }
    }
    q = store_stmt(s, ST_CKPT_INSERT);
    sqlite3_bind_int64(q, 1, run);
    sqlite3_bind_int64(q, 2, g->generation);
    sqlite3_bind_blob64(q, 3, g->state_len ? g->state : "", g->state_len, SQLITE_STATIC);
    sqlite3_bind_blob64(q, 4, ids, g->n_population * 8, SQLITE_STATIC);
    sqlite3_bind_int64(q, 5, (int64_t)g->n_population);
    if ((rc = store_exec_stmt(q)) != SQLITE_OK)
        return store_db_error(s, rc, err, "%s: checkpoint", what);
    q = store_stmt(s, ST_RUN_TOUCH);
    sqlite3_bind_int64(q, 1, run);
    if ((rc = store_exec_stmt(q)) != SQLITE_OK)
        return store_db_error(s, rc, err, "%s: run row", what);
    return 0;
}

/* ---- genome retention ------------------------------------------------------ */

static int cmp_i64(const void *a, const void *b)
{
    int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
    return (x > y) - (x < y);
}

static int has_id(const int64_t *v, size_t n, int64_t id)
{
    return bsearch(&id, v, n, sizeof *v, cmp_i64) != NULL;
}

/* The ids whose genomes g->keep keeps, sorted, into *out (*n of them): the
 * population's and, for CHAMPIONS and ELITE, every closed generation's
 * champion (g's own included: its row is written already). */
static int kept_ids(struct store *s, int64_t run, const struct store_generation *g, int64_t **out,
                    size_t *n, const char *what, struct tv_error *err)
{
    size_t cap = g->n_population + 64, k = 0;
    int64_t *v = malloc(cap * sizeof *v);
    if (!v)
        return tv_error_set(err, TV_ENOMEM, "%s: %s: out of memory", s->path, what);
    memcpy(v, g->population, g->n_population * sizeof *v);
    k = g->n_population;
    int rc = SQLITE_DONE;
    if (g->keep == STORE_GENOMES_CHAMPIONS || g->keep == STORE_GENOMES_ELITE) {
        sqlite3_stmt *q = store_stmt(s, ST_CHAMPIONS);
        sqlite3_bind_int64(q, 1, run);
        while ((rc = sqlite3_step(q)) == SQLITE_ROW) {
            if (k == cap && tv_grow((void **)&v, &cap, k + 1, sizeof *v, NULL)) {
                rc = SQLITE_NOMEM;
                break;
            }
            v[k++] = sqlite3_column_int64(q, 0);
        }
        store_done(q);
    }
    if (rc != SQLITE_DONE) {
        free(v);
        return store_db_error(s, rc, err, "%s: reading the champions", what);
    }
    qsort(v, k, sizeof *v, cmp_i64);
    *out = v;
    *n = k;
    return 0;
}

/* Deletes, in the caller's transaction, what g->keep does not keep: the
 * genomes of the run's individuals up to the population's highest id that
 * kept_ids() does not name, and the checkpoints before g's. ELITE looks only
 * at individuals evaluated in generation g - 1 or later: an older one whose
 * genome is still there was carried over as an elite (or kept as a
 * champion) at an earlier close, and stays. Linear in the genomes left from
 * earlier closes and the ones deleted; the rows of individuals stay. */
static int drop_genomes(struct store *s, int64_t run, const struct store_generation *g,
                        const char *what, struct tv_error *err)
{
    int64_t *keep = NULL, *drop = NULL;
    size_t n_keep = 0, n_drop = 0, cap_drop = 0;
    int code = kept_ids(s, run, g, &keep, &n_keep, what, err);
    if (code)
        return code;
    int64_t bound = keep[0];
    for (size_t i = 0; i < g->n_population; i++)
        bound = g->population[i] > bound ? g->population[i] : bound;
    sqlite3_stmt *q = g->keep == STORE_GENOMES_ELITE
                          ? store_stmt3(s, ST_GENOME_IDS_SINCE, run, bound, g->generation - 1)
                          : store_stmt2(s, ST_GENOME_IDS, run, bound);
    int rc;
    while ((rc = sqlite3_step(q)) == SQLITE_ROW) {
        int64_t id = sqlite3_column_int64(q, 0);
        if (has_id(keep, n_keep, id))
            continue;
        if (tv_grow((void **)&drop, &cap_drop, n_drop + 1, sizeof *drop, NULL)) {
            rc = SQLITE_NOMEM;
            break;
        }
        drop[n_drop++] = id;
    }
    store_done(q);
    if (rc != SQLITE_DONE)
        code = store_db_error(s, rc, err, "%s: listing the genomes to drop", what);
    for (size_t i = 0; i < n_drop && !code; i++)
        if ((rc = store_exec_stmt(store_stmt2(s, ST_GENOME_DELETE, run, drop[i]))) != SQLITE_OK)
            code = store_db_error(s, rc, err, "%s: dropping the genome of individual %lld", what,
                                  (long long)drop[i]);
    if (!code &&
        (rc = store_exec_stmt(store_stmt2(s, ST_CKPT_DROP_OLDER, run, g->generation))) != SQLITE_OK)
        code = store_db_error(s, rc, err, "%s: dropping older checkpoints", what);
    free(keep);
    free(drop);
    return code;
}

int store_generation_close(struct store *s, int64_t run, const struct store_generation *g,
                           struct tv_error *err)
{
    struct held_run *h = store_writer_of(s, run, err, "closing a generation");
    if (!h)
        return err ? err->code : TV_ESTATE;
    if (g->generation != h->last_closed + 1)
        return tv_error_set(
            err, TV_ESTATE, "%s: run '%s': cannot close generation %lld: the next to close is %lld",
            s->path, h->name, (long long)g->generation, (long long)(h->last_closed + 1));
    if (g->n_population == 0 || !g->population)
        return tv_error_set(err, TV_EINVAL,
                            "%s: run '%s': generation %lld: the checkpoint has no population",
                            s->path, h->name, (long long)g->generation);
    if ((g->n_species && !g->species) || (g->state_len && !g->state))
        return tv_error_set(err, TV_EINVAL, "%s: run '%s': generation %lld: missing %s array",
                            s->path, h->name, (long long)g->generation,
                            g->state_len && !g->state ? "state" : "species");
    if (g->keep < STORE_GENOMES_ALL || g->keep > STORE_GENOMES_ELITE)
        return tv_error_set(err, TV_EINVAL,
                            "%s: run '%s': generation %lld: unknown genome retention %d", s->path,
                            h->name, (long long)g->generation, g->keep);
    if (g->n_population > SIZE_MAX / 8 || g->n_population > INT_MAX / 8)
        return tv_error_set(err, TV_ELIMIT, "%s: run '%s': population of %zu is too large", s->path,
                            h->name, g->n_population);
    uint8_t *ids = malloc(g->n_population * 8);
    if (!ids)
        return tv_error_set(err, TV_ENOMEM, "%s: out of memory", s->path);
    for (size_t i = 0; i < g->n_population; i++)
        put_le64(ids + 8 * i, g->population[i]);

    char what[200];
    snprintf(what, sizeof what, "run '%s': closing generation %lld", h->name,
             (long long)g->generation);
    int code = store_begin(s, err, what);
    if (code)
        goto out;
    size_t missing;
    if ((code = find_missing(s, run, g->population, g->n_population, &missing, what, err)) != 0)
        goto fail;
    if (missing < g->n_population) {
        code = tv_error_set(err, TV_EINVAL,
                            "%s: %s: population member %zu (individual %lld) was never added",
                            s->path, what, missing, (long long)g->population[missing]);
        goto fail;
    }
    if ((code = write_generation(s, run, g, ids, what, err)) != 0)
        goto fail;
    if (g->keep != STORE_GENOMES_ALL && (code = drop_genomes(s, run, g, what, err)) != 0)
        goto fail;
    if ((code = store_commit(s, err, what)) != 0) {
        store_append_msg(err, "; the generation stays open");
        goto out;
    }
    h->last_closed = g->generation;
    if (s->checkpoint_wal_bytes < 0 ||
        store_side_file_size(s->path, "-wal") > s->checkpoint_wal_bytes) {
        store_wal_truncate(s);
        s->counters.wal_truncations++;
    } else {
        store_wal_kick(s);
    }
    goto out;
fail:
    store_rollback(s);
out:
    free(ids);
    return code;
}

int store_generation_get(struct store *s, int64_t run, int64_t generation,
                         struct store_generation *out, struct tv_error *err)
{
    memset(out, 0, sizeof *out);
    char label[128];
    sqlite3_stmt *q = store_stmt2(s, ST_GENERATION_GET, run, generation);
    int rc = sqlite3_step(q);
    int code = 0;
    if (rc == SQLITE_ROW) {
        out->generation = sqlite3_column_int64(q, 0);
        out->best = store_column_real(q, 1);
        out->mean = store_column_real(q, 2);
        out->median = store_column_real(q, 3);
        out->champion = store_column_id(q, 4);
        out->n_evals = (uint64_t)sqlite3_column_int64(q, 5);
        out->wall_seconds = store_column_real(q, 6);
        out->n_species = (size_t)sqlite3_column_int64(q, 7);
        out->solved = sqlite3_column_int(q, 8);
        out->champion_tested = sqlite3_column_type(q, 9) != SQLITE_NULL;
        out->champion_score = store_column_real(q, 9);
    } else if (rc == SQLITE_DONE) {
        if (generation < 0)
            code = tv_error_set(err, TV_ENOTFOUND, "%s: %s: no generation closed yet", s->path,
                                store_run_label(s, run, label, sizeof label));
        else
            code =
                tv_error_set(err, TV_ENOTFOUND, "%s: %s: generation %lld is not closed", s->path,
                             store_run_label(s, run, label, sizeof label), (long long)generation);
    } else {
        code = store_db_error(s, rc, err, "reading generation %lld", (long long)generation);
    }
    store_done(q);
    return code;
}
