/*
 * individuals.c -- adding individuals in batches, and reading them back.
 * See store.h.
 */
#include "store_impl.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- individuals -------------------------------------------------------------- */

/* NaN (unknown) or a whole number an int64_t and a double both hold. */
static int count_ok(double x)
{
    return isnan(x) || (x >= 0 && x <= 9007199254740992.0 && x == floor(x));
}

static int check_row(const struct store *s, const struct held_run *h,
                     const struct store_individual *r, size_t i, struct tv_error *err)
{
    const char *bad = NULL;
    if (r->id < 0)
        bad = "id is negative";
    else if (r->generation < 0)
        bad = "generation is negative";
    else if (r->parent1 < STORE_ID_NONE || r->parent2 < STORE_ID_NONE)
        bad = "parent id is below STORE_ID_NONE";
    else if (r->species < STORE_ID_NONE)
        bad = "species is below STORE_ID_NONE";
    else if (r->op < 0)
        bad = "operator is negative";
    else if (r->rank < 0)
        bad = "rank is negative";
    else if (r->solved != 0 && r->solved != 1)
        bad = "solved is neither 0 nor 1";
    else if (!isfinite(r->eval_seconds) || r->eval_seconds < 0)
        bad = "eval_seconds is not a finite non-negative number";
    else if (!r->genome || r->genome_len == 0)
        bad = "no genome bytes";
    else if (!isnan(r->valid_acc) && !isfinite(r->valid_acc))
        bad = "valid_acc is infinite";
    else if (!count_ok(r->flash) || !count_ok(r->ram) || !count_ok(r->macs))
        bad = "flash, ram or macs is not NaN or a whole number from 0 to 2^53";
    if (bad)
        return tv_error_set(err, TV_EINVAL, "%s: run '%s': row %zu (individual %lld): %s", s->path,
                            h->name, i, (long long)r->id, bad);
    if (r->generation <= h->last_closed)
        return tv_error_set(err, TV_ESTATE,
                            "%s: run '%s': individual %lld: generation %lld is closed"
                            " (last closed: %lld)",
                            s->path, h->name, (long long)r->id, (long long)r->generation,
                            (long long)h->last_closed);
    return 0;
}

/* A whole number stored as an integer; NaN as NULL (check_row refused
 * anything else). */
static void bind_count(sqlite3_stmt *q, int i, double x)
{
    if (isnan(x))
        sqlite3_bind_null(q, i);
    else
        sqlite3_bind_int64(q, i, (int64_t)x);
}

/* Binds row r's columns: the individual's into q from parameter p0 + 1 on,
 * its genome's into g from g0 + 1 on. Fails only for a genome too large. */
static int bind_row(sqlite3_stmt *q, sqlite3_stmt *g, int p0, int g0, int64_t run,
                    const struct store_individual *r)
{
    sqlite3_bind_int64(q, p0 + 1, run);
    sqlite3_bind_int64(q, p0 + 2, r->id);
    sqlite3_bind_int64(q, p0 + 3, r->generation);
    sqlite3_bind_double(q, p0 + 4, r->fitness); /* NaN binds as NULL */
    store_bind_id(q, p0 + 5, r->parent1);
    store_bind_id(q, p0 + 6, r->parent2);
    sqlite3_bind_int(q, p0 + 7, r->op);
    store_bind_id(q, p0 + 8, r->species);
    sqlite3_bind_int64(q, p0 + 9, r->n_neurons);
    sqlite3_bind_int64(q, p0 + 10, r->n_conns);
    sqlite3_bind_int64(q, p0 + 11, r->n_skip);
    sqlite3_bind_int64(q, p0 + 12, r->n_recurrent);
    sqlite3_bind_double(q, p0 + 13, r->eval_seconds);
    sqlite3_bind_int(q, p0 + 14, r->rank);
    sqlite3_bind_int(q, p0 + 15, r->solved);
    sqlite3_bind_double(q, p0 + 16, r->valid_acc); /* NaN binds as NULL */
    bind_count(q, p0 + 17, r->flash);
    bind_count(q, p0 + 18, r->ram);
    bind_count(q, p0 + 19, r->macs);
    sqlite3_bind_int64(g, g0 + 1, run);
    sqlite3_bind_int64(g, g0 + 2, r->id);
    /* SQLITE_STATIC: no copy here; SQLite copies the bytes once, into the record */
    return sqlite3_bind_blob64(g, g0 + 3, r->genome, r->genome_len, SQLITE_STATIC);
}

/* Inserts rows[0..k): k is INSERT_ROWS (one multi-row statement per table)
 * or 1. Every parameter is bound again, so none needs clearing. */
static int insert_rows(struct store *s, int64_t run, const struct store_individual *rows, size_t k)
{
    sqlite3_stmt *q = s->st[k == 1 ? ST_IND_INSERT : ST_IND_INSERT_MANY];
    sqlite3_stmt *g = s->st[k == 1 ? ST_GENOME_INSERT : ST_GENOME_INSERT_MANY];
    for (size_t i = 0; i < k; i++) {
        int rc = bind_row(q, g, (int)i * N_IND_INSERT_COLS, (int)i * N_GENOME_INSERT_COLS, run,
                          &rows[i]);
        if (rc != SQLITE_OK)
            return rc;
    }
    int rc = store_exec_stmt(q);
    if (rc == SQLITE_OK)
        rc = store_exec_stmt(g);
    return rc;
}

struct id_row {
    int64_t id;
    size_t row;
};

static int cmp_id_row(const void *a, const void *b)
{
    const struct id_row *x = a, *y = b;
    if (x->id != y->id)
        return x->id < y->id ? -1 : 1;
    return (x->row > y->row) - (x->row < y->row);
}

/* After a batch failed on a key conflict and was rolled back: the first row
 * whose id is in the database or in an earlier row of the batch (the row a
 * row-by-row insertion would have stopped at); n if there is none. */
static size_t first_conflict(struct store *s, int64_t run, const struct store_individual *rows,
                             size_t n)
{
    size_t found = n;
    struct id_row *ids = malloc(n * sizeof *ids);
    if (ids) {
        for (size_t i = 0; i < n; i++)
            ids[i] = (struct id_row){rows[i].id, i};
        qsort(ids, n, sizeof *ids, cmp_id_row);
        /* an id repeated in the batch: the row of its second occurrence */
        for (size_t i = 1; i < n; i++)
            if (ids[i].id == ids[i - 1].id && (i < 2 || ids[i - 2].id != ids[i].id) &&
                ids[i].row < found)
                found = ids[i].row;
        free(ids);
    }
    /* an id in the database, before that */
    sqlite3_stmt *q = s->st[ST_IND_EXISTS];
    for (size_t i = 0; i < found; i++) {
        sqlite3_reset(q);
        sqlite3_bind_int64(q, 1, run);
        sqlite3_bind_int64(q, 2, rows[i].id);
        if (sqlite3_step(q) == SQLITE_ROW)
            found = i;
    }
    sqlite3_reset(q);
    return found;
}

int store_add_individuals(struct store *s, int64_t run, const struct store_individual *rows,
                          size_t n, struct tv_error *err)
{
    struct held_run *h = store_writer_of(s, run, err, "adding individuals");
    if (!h)
        return err ? err->code : TV_ESTATE;
    if (n == 0)
        return 0;
    if (!rows)
        return tv_error_set(err, TV_EINVAL, "%s: run '%s': %zu rows but no array", s->path, h->name,
                            n);
    for (size_t i = 0; i < n; i++) {
        int code = check_row(s, h, &rows[i], i, err);
        if (code)
            return code;
    }
    char what[200];
    snprintf(what, sizeof what, "run '%s': adding %zu individuals", h->name, n);
    int code = store_begin(s, err, what);
    if (code)
        return code;
    for (size_t i = 0; i < n;) {
        size_t k = n - i >= INSERT_ROWS ? INSERT_ROWS : 1;
        int rc = insert_rows(s, run, rows + i, k);
        if (rc == SQLITE_OK) {
            i += k;
            continue;
        }
        code = store_db_error(s, rc, err,
                              "run '%s': adding individuals %lld to %lld (rows %zu to %zu of %zu;"
                              " nothing of this batch was written)",
                              h->name, (long long)rows[i].id, (long long)rows[i + k - 1].id, i,
                              i + k - 1, n);
        store_rollback(s); /* after a conflict, OR ROLLBACK has done it already */
        if ((rc & 0xff) == SQLITE_CONSTRAINT) {
            size_t at = first_conflict(s, run, rows, n);
            if (at < n)
                code = tv_error_set(err, TV_EINVAL,
                                    "%s: run '%s': individual %lld exists already (row %zu of"
                                    " %zu); nothing of this batch was written",
                                    s->path, h->name, (long long)rows[at].id, at, n);
        }
        return code;
    }
    code = store_commit(s, err, what);
    if (code) {
        store_append_msg(err, "; nothing of this batch was written");
        return code;
    }
    store_wal_kick(s);
    return 0;
}

/* Reads the individual columns (and, with_genome, the genome bytes appended
 * to bytes) of the current row. The row's genome pointer is fixed later. */
static int64_t value_id(sqlite3_value *v)
{
    return sqlite3_value_type(v) == SQLITE_NULL ? STORE_ID_NONE : sqlite3_value_int64(v);
}

static double value_real(sqlite3_value *v)
{
    return sqlite3_value_type(v) == SQLITE_NULL ? NAN : sqlite3_value_double(v);
}

int store_read_row(sqlite3_stmt *q, int with_genome, struct store_individual *r,
                   struct tv_buf *bytes, const char *where, struct tv_error *err)
{
    memset(r, 0, sizeof *r);
    /* Each sqlite3_column_*() call costs more than reading the value: take
     * every column's value once (safe here: a connection is only ever used
     * by one thread at a time), then read those. */
    sqlite3_value *v[N_IND_COLS];
    for (int c = 0; c < N_IND_COLS; c++)
        v[c] = sqlite3_column_value(q, c);
    r->id = sqlite3_value_int64(v[0]);
    static const int must_int[] = {0, 1, 5, 7, 8, 9, 10, 12, 13};
    static const char *const names[] = {
        "id",        "generation", "fitness", "parent1",     "parent2",      "op",   "species",
        "n_neurons", "n_conns",    "n_skip",  "n_recurrent", "eval_seconds", "rank", "solved"};
    for (size_t k = 0; k < sizeof must_int / sizeof must_int[0]; k++) {
        int c = must_int[k];
        if (sqlite3_value_type(v[c]) != SQLITE_INTEGER)
            return tv_error_set(err, TV_ECORRUPT,
                                "%s: individual %lld: damaged row: %s is not"
                                " an integer",
                                where, (long long)r->id, names[c]);
    }
    for (int c = 7; c <= 10; c++) {
        int64_t x = sqlite3_value_int64(v[c]);
        if (x < 0 || x > UINT32_MAX)
            return tv_error_set(err, TV_ECORRUPT, "%s: individual %lld: damaged row: %s = %lld",
                                where, (long long)r->id, names[c], (long long)x);
    }
    r->generation = sqlite3_value_int64(v[1]);
    r->fitness = value_real(v[2]);
    r->parent1 = value_id(v[3]);
    r->parent2 = value_id(v[4]);
    r->op = sqlite3_value_int(v[5]);
    r->species = value_id(v[6]);
    r->n_neurons = (uint32_t)sqlite3_value_int64(v[7]);
    r->n_conns = (uint32_t)sqlite3_value_int64(v[8]);
    r->n_skip = (uint32_t)sqlite3_value_int64(v[9]);
    r->n_recurrent = (uint32_t)sqlite3_value_int64(v[10]);
    r->eval_seconds = value_real(v[11]);
    r->rank = sqlite3_value_int(v[12]);
    r->solved = sqlite3_value_int(v[13]) != 0;
    r->valid_acc = value_real(v[14]);
    r->flash = value_real(v[15]);
    r->ram = value_real(v[16]);
    r->macs = value_real(v[17]);
    if (!with_genome)
        return 0;
    if (sqlite3_column_type(q, N_IND_COLS) != SQLITE_BLOB)
        return tv_error_set(err, TV_ECORRUPT, "%s: individual %lld: %s", where, (long long)r->id,
                            sqlite3_column_type(q, N_IND_COLS) == SQLITE_NULL
                                ? "no genome row"
                                : "damaged row: genome is not a BLOB");
    const void *b = sqlite3_column_blob(q, N_IND_COLS);
    int len = sqlite3_column_bytes(q, N_IND_COLS);
    if (len <= 0)
        return tv_error_set(err, TV_ECORRUPT, "%s: individual %lld: empty genome", where,
                            (long long)r->id);
    r->genome_len = (size_t)len;
    if (!b || tv_buf_append(bytes, b, (size_t)len)) /* no bytes: SQLite ran out of memory */
        return tv_error_set(err, TV_ENOMEM, "%s: individual %lld: out of memory", where,
                            (long long)r->id);
    return 0;
}

static int set_push(struct store_set *set, size_t *cap, struct store_individual **slot,
                    struct tv_error *err)
{
    if (set->n == *cap) {
        size_t ncap = *cap ? *cap * 2 : 64;
        struct store_individual *p = realloc(set->rows, ncap * sizeof *p);
        if (!p)
            return tv_error_set(err, TV_ENOMEM, "%s: out of memory loading individuals",
                                set->where);
        set->rows = p;
        *cap = ncap;
    }
    *slot = &set->rows[set->n];
    return 0;
}

/* Genome pointers into set->bytes, once it has stopped moving. */
void store_set_fix_pointers(struct store_set *set)
{
    size_t off = 0;
    for (size_t i = 0; i < set->n; i++) {
        if (set->rows[i].genome_len) {
            set->rows[i].genome = set->bytes.data + off;
            off += set->rows[i].genome_len;
        }
    }
}

static int cmp_row_id(const void *a, const void *b)
{
    const struct store_individual *x = a, *y = b;
    return (x->id > y->id) - (x->id < y->id);
}

/* "<path>: run 'name'", the start of messages about run. */
static void where_of(struct store *s, int64_t run, char *buf, size_t cap)
{
    char label[128];
    snprintf(buf, cap, "%s: %s", s->path, store_run_label(s, run, label, sizeof label));
}

/* Sorts the rows by id (their genome pointers go with them). */
void store_set_sort(struct store_set *set)
{
    for (size_t i = 1; i < set->n; i++)
        if (set->rows[i].id < set->rows[i - 1].id) {
            qsort(set->rows, set->n, sizeof *set->rows, cmp_row_id);
            return;
        }
}

void store_set_init(struct store *s, int64_t run, struct store_set *set)
{
    memset(set, 0, sizeof *set);
    where_of(s, run, set->where, sizeof set->where);
}

/* Appends every row q yields to set. */
int store_set_load(struct store *s, sqlite3_stmt *q, int with_genomes, struct store_set *set,
                   size_t *cap, struct tv_error *err)
{
    int rc, code = 0;
    while ((rc = sqlite3_step(q)) == SQLITE_ROW) {
        struct store_individual *r = NULL;
        if ((code = set_push(set, cap, &r, err)) != 0 ||
            (code = store_read_row(q, with_genomes, r, &set->bytes, set->where, err)) != 0)
            break;
        set->n++;
    }
    if (!code && rc != SQLITE_DONE)
        code = tv_error_set(err, store_code_of(s->db, rc), "%s: loading individuals: %s",
                            set->where, sqlite3_errmsg(s->db));
    store_done(q);
    return code;
}

void store_set_release(struct store_set *set)
{
    if (!set)
        return;
    free(set->rows);
    tv_buf_free(&set->bytes);
    memset(set, 0, sizeof *set);
}

/* Decodes individual id's stored genome bytes into g. Bytes that do not
 * decode are the file's damage (TV_ECORRUPT), but a failure to allocate
 * stays TV_ENOMEM, whatever the bytes. */
static int decode_stored(struct genome *g, const void *b, size_t len, const char *where, int64_t id,
                         struct tv_error *err)
{
    int code = genome_decode(g, b, len, NULL, err);
    if (!code)
        return 0;
    if (code != TV_ENOMEM)
        code = TV_ECORRUPT;
    if (err)
        err->code = code;
    tv_error_prefix(err, "%s: individual %lld: %s", where, (long long)id,
                    code == TV_ENOMEM ? "decoding its genome" : "damaged genome");
    return code;
}

int store_set_genome(const struct store_set *set, size_t i, struct genome *g, struct tv_error *err)
{
    if (i >= set->n)
        return tv_error_set(err, TV_EINVAL, "%s: individual index %zu out of range (%zu loaded)",
                            set->where, i, set->n);
    const struct store_individual *r = &set->rows[i];
    if (!r->genome)
        return tv_error_set(err, TV_EINVAL, "%s: individual %lld: loaded without its genome",
                            set->where, (long long)r->id);
    return decode_stored(g, r->genome, r->genome_len, set->where, r->id, err);
}

int store_individuals_load(struct store *s, int64_t run, int64_t generation, int with_genomes,
                           struct store_set *out, struct tv_error *err)
{
    store_set_init(s, run, out);
    sqlite3_stmt *q =
        store_stmt2(s, with_genomes ? ST_IND_OF_GEN_GENOMES : ST_IND_OF_GEN, run, generation);
    size_t cap = 0;
    int code = store_set_load(s, q, with_genomes, out, &cap, err);
    if (code) {
        store_set_release(out);
        return code;
    }
    store_set_fix_pointers(out);
    return 0;
}

/* One row of q (ST_IND_GET with its genome, ST_IND_ROW without) into out. */
static int get_one(struct store *s, int64_t run, int64_t id, int with_genome,
                   struct store_individual *out, struct tv_error *err)
{
    memset(out, 0, sizeof *out);
    char where[300];
    where_of(s, run, where, sizeof where);
    sqlite3_stmt *q = store_stmt2(s, with_genome ? ST_IND_GET : ST_IND_ROW, run, id);
    int rc = sqlite3_step(q);
    int code = 0;
    s->scratch.len = 0;
    if (rc == SQLITE_ROW) {
        code = store_read_row(q, with_genome, out, &s->scratch, where, err);
        if (!code && with_genome)
            out->genome = s->scratch.data;
    } else if (rc == SQLITE_DONE) {
        code = tv_error_set(err, TV_ENOTFOUND, "%s: no individual %lld", where, (long long)id);
    } else {
        code = tv_error_set(err, store_code_of(s->db, rc), "%s: reading individual %lld: %s", where,
                            (long long)id, sqlite3_errmsg(s->db));
    }
    store_done(q);
    return code;
}

int store_individual_get(struct store *s, int64_t run, int64_t id, struct store_individual *out,
                         struct tv_error *err)
{
    return get_one(s, run, id, 1, out, err);
}

int store_individual_row(struct store *s, int64_t run, int64_t id, struct store_individual *out,
                         struct tv_error *err)
{
    return get_one(s, run, id, 0, out, err);
}

int store_genome_read(struct store *s, int64_t run, int64_t id, struct genome *g,
                      struct tv_error *err)
{
    char where[300];
    where_of(s, run, where, sizeof where);
    sqlite3_stmt *q = store_stmt2(s, ST_GENOME_GET, run, id);
    int rc = sqlite3_step(q);
    int code;
    if (rc == SQLITE_ROW) {
        int blob = sqlite3_column_type(q, 0) == SQLITE_BLOB; /* before any conversion */
        const void *b = blob ? sqlite3_column_blob(q, 0) : NULL;
        size_t len = blob ? (size_t)sqlite3_column_bytes(q, 0) : 0;
        if (!blob)
            code = tv_error_set(err, TV_ECORRUPT,
                                "%s: individual %lld: damaged genome row (not a BLOB)", where,
                                (long long)id);
        else if (!b && len > 0) /* SQLite ran out of memory */
            code = tv_error_set(err, TV_ENOMEM, "%s: individual %lld: out of memory", where,
                                (long long)id);
        else
            code = decode_stored(g, b, len, where, id, err);
    } else if (rc == SQLITE_DONE) {
        code = tv_error_set(err, TV_ENOTFOUND, "%s: no genome for individual %lld", where,
                            (long long)id);
    } else {
        code = tv_error_set(err, store_code_of(s->db, rc), "%s: reading genome %lld: %s", where,
                            (long long)id, sqlite3_errmsg(s->db));
    }
    store_done(q);
    if (rc == SQLITE_DONE) { /* an individual without its genome: dropped on purpose */
        q = store_stmt2(s, ST_IND_EXISTS, run, id);
        if (sqlite3_step(q) == SQLITE_ROW)
            tv_error_set(err, TV_ENOTFOUND,
                         "%s: individual %lld: its genome was not kept (the run's [store] genomes"
                         " = population or champions keeps only the genomes of the last"
                         " population and, with champions, of each generation's champion)",
                         where, (long long)id);
        store_done(q);
    }
    return code;
}
