/*
 * checkpoint.c -- loading a run's latest checkpoint: its population, read
 * by range scans into one buffer, and the pending individuals. See store.h.
 */
#include "store_impl.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

static int64_t get_le64(const uint8_t *p)
{
    uint64_t u = 0;
    for (int i = 0; i < 8; i++)
        u |= (uint64_t)p[i] << (8 * i);
    return (int64_t)u;
}
/* ---- loading a population -------------------------------------------------- */

/* Maps the first n bytes of fresh memory at p in one system call: faulting
 * in a 200 MB buffer a page at a time costs about as much as reading the
 * genomes into it (0.5 ms per MB here), in bulk about a quarter less. A
 * hint: without it (Linux < 5.14) the pages fault in as they are written. */
static void prefault(void *p, size_t n)
{
#ifdef MADV_POPULATE_WRITE
    const uintptr_t page = 4096;
    uintptr_t a = ((uintptr_t)p + page - 1) & ~(page - 1), b = ((uintptr_t)p + n) & ~(page - 1);
    if (b > a)
        madvise((void *)a, b - a, MADV_POPULATE_WRITE);
#else
    (void)p;
    (void)n;
#endif
}

/* prefault() on another thread, for buffers at least this large (a thread
 * costs more than faulting in a small one). */
#define PREFAULT_BYTES ((size_t)4 << 20)

struct prefaulter {
    pthread_t thread;
    void *p;
    size_t n;
    int started;
};

static void *prefault_main(void *arg)
{
    struct prefaulter *pf = arg;
    prefault(pf->p, pf->n);
    return NULL;
}

/* Starts prefault(p, n) on another thread (done here if none can start). */
static void prefault_start(struct prefaulter *pf, void *p, size_t n)
{
    pf->p = p;
    pf->n = n;
    pf->started = store_start_thread(&pf->thread, prefault_main, pf) == 0;
    if (!pf->started)
        prefault(p, n);
}

/* Waits for it to end: before the memory may move or be freed (writing to
 * it meanwhile is safe: populating never changes a page already there). */
static void prefault_join(struct prefaulter *pf)
{
    if (pf->started)
        pthread_join(pf->thread, NULL);
    pf->started = 0;
}

/* Loads the individuals ids[0..n) (any order, repeats allowed) with their
 * genomes into set->rows in that order. The ids are sorted and read in runs
 * of nearby ids by range scans of individuals and of genomes: a population
 * is mostly one or two generations, i.e. dense ranges, and a scan is several
 * times cheaper than a lookup per id. */
static int load_members(struct store *s, int64_t run, const int64_t *ids, size_t n, int64_t gen,
                        struct store_set *set, struct tv_error *err)
{
    const char *where = set->where;
    struct prefaulter pf = {0};
    struct member *m = store_members_sorted(ids, n);
    size_t *off = malloc(n * sizeof *off);
    set->rows = calloc(n, sizeof *set->rows);
    int code = 0, rc = SQLITE_DONE;
    if (!m || !off || !set->rows) {
        code = tv_error_set(err, TV_ENOMEM, "%s: out of memory loading the population", where);
        goto out;
    }
    /* Room for the genomes, guessed from the first one's size, mapped in by
     * another thread while this one reads the rows. */
    sqlite3_stmt *q = store_stmt2(s, ST_GENOME_GET, run, m[0].id);
    if (sqlite3_step(q) == SQLITE_ROW && sqlite3_column_bytes(q, 0) > 0) {
        size_t len = (size_t)sqlite3_column_bytes(q, 0);
        if (tv_buf_reserve(&set->bytes, len * n / 8 * 9 + 64) == 0 && len * n >= PREFAULT_BYTES)
            prefault_start(&pf, set->bytes.data, len * n);
    }
    store_done(q);
    for (size_t k = 0; k < n && !code;) {
        size_t e = store_member_run_end(m, k, n);
        /* the rows */
        q = store_stmt3(s, ST_IND_RANGE, run, m[k].id, m[e - 1].id);
        size_t j = k;
        rc = SQLITE_DONE;
        while (!code && j < e && (rc = sqlite3_step(q)) == SQLITE_ROW) {
            int64_t id = sqlite3_column_int64(q, 0);
            if (m[j].id < id)
                break; /* m[j] is missing */
            if (m[j].id > id)
                continue;
            struct store_individual *r = &set->rows[m[j].pos];
            code = store_read_row(q, 0, r, NULL, where, err);
            for (j++; !code && j < e && m[j].id == id; j++)
                set->rows[m[j].pos] = *r;
        }
        if (!code && rc != SQLITE_ROW && rc != SQLITE_DONE)
            code = tv_error_set(err, store_code_of(s->db, rc), "%s: loading individuals: %s", where,
                                sqlite3_errmsg(s->db));
        store_done(q);
        if (!code && j < e)
            code = tv_error_set(err, TV_ECORRUPT,
                                "%s: checkpoint of generation %lld names individual %lld,"
                                " which is missing",
                                where, (long long)gen, (long long)m[j].id);
        if (code)
            break;
        /* their genomes */
        q = store_stmt3(s, ST_GENOME_RANGE, run, m[k].id, m[e - 1].id);
        j = k;
        rc = SQLITE_DONE;
        while (!code && j < e && (rc = sqlite3_step(q)) == SQLITE_ROW) {
            int64_t id = sqlite3_column_int64(q, 0);
            if (m[j].id < id)
                break;
            if (m[j].id > id)
                continue;
            int blob = sqlite3_column_type(q, 1) == SQLITE_BLOB; /* before any conversion */
            int len = blob ? sqlite3_column_bytes(q, 1) : 0;
            if (len <= 0) {
                code = tv_error_set(err, TV_ECORRUPT, "%s: individual %lld: damaged genome row",
                                    where, (long long)id);
                break;
            }
            if (set->bytes.len + (size_t)len > set->bytes.cap)
                prefault_join(&pf); /* the buffer may move */
            if (set->bytes.cap == 0 && tv_buf_reserve(&set->bytes, (size_t)len * n / 8 * 9 + 64))
                code = TV_ENOMEM;
            size_t at = set->bytes.len;
            const void *b = code ? NULL : sqlite3_column_blob(q, 1); /* NULL: out of memory */
            if (!b || tv_buf_append(&set->bytes, b, (size_t)len)) {
                code = tv_error_set(err, TV_ENOMEM, "%s: out of memory loading genomes", where);
                break;
            }
            for (; j < e && m[j].id == id; j++) {
                off[m[j].pos] = at;
                set->rows[m[j].pos].genome_len = (size_t)len;
            }
        }
        if (!code && rc != SQLITE_ROW && rc != SQLITE_DONE)
            code = tv_error_set(err, store_code_of(s->db, rc), "%s: loading genomes: %s", where,
                                sqlite3_errmsg(s->db));
        store_done(q);
        if (!code && j < e)
            code = tv_error_set(err, TV_ECORRUPT, "%s: individual %lld: no genome row", where,
                                (long long)m[j].id);
        k = e;
    }
    if (!code) {
        for (size_t i = 0; i < n; i++)
            set->rows[i].genome = set->bytes.data + off[i];
        set->n = n;
    }
out:
    prefault_join(&pf);
    free(m);
    free(off);
    return code;
}

void store_checkpoint_release(struct store_checkpoint *c)
{
    if (!c)
        return;
    free(c->state);
    store_set_release(&c->population);
    store_set_release(&c->pending);
    memset(c, 0, sizeof *c);
}

int store_checkpoint_load(struct store *s, int64_t run, struct store_checkpoint *out,
                          struct tv_error *err)
{
    memset(out, 0, sizeof *out);
    store_set_init(s, run, &out->population);
    store_set_init(s, run, &out->pending);
    const char *where = out->population.where;
    int code = 0;
    /* One read transaction, so the checkpoint, its population and the pending
     * rows are one snapshot even while a writer commits. */
    int rc = sqlite3_exec(s->db, "BEGIN", NULL, NULL, NULL);
    if (rc != SQLITE_OK)
        return store_db_error(s, rc, err, "loading the checkpoint: begin");
    sqlite3_stmt *q = store_stmt(s, ST_CKPT_LATEST);
    sqlite3_bind_int64(q, 1, run);
    rc = sqlite3_step(q);
    if (rc == SQLITE_DONE) {
        code =
            tv_error_set(err, TV_ENOTFOUND, "%s: no checkpoint (no generation closed yet)", where);
        goto fail;
    }
    if (rc != SQLITE_ROW) {
        code = tv_error_set(err, store_code_of(s->db, rc), "%s: reading the checkpoint: %s", where,
                            sqlite3_errmsg(s->db));
        goto fail;
    }
    out->generation = sqlite3_column_int64(q, 0);
    int64_t n_pop = sqlite3_column_int64(q, 3);
    if (sqlite3_column_type(q, 1) != SQLITE_BLOB || sqlite3_column_type(q, 2) != SQLITE_BLOB ||
        n_pop <= 0 || sqlite3_column_bytes(q, 2) != n_pop * 8) {
        code = tv_error_set(err, TV_ECORRUPT,
                            "%s: checkpoint of generation %lld is damaged (population of %lld"
                            " ids in %d bytes)",
                            where, (long long)out->generation, (long long)n_pop,
                            sqlite3_column_bytes(q, 2));
        goto fail;
    }
    size_t state_len = (size_t)sqlite3_column_bytes(q, 1);
    const void *state = sqlite3_column_blob(q, 1);
    const uint8_t *ids = sqlite3_column_blob(q, 2);
    out->state = malloc(state_len ? state_len : 1);
    int64_t *pop_ids = malloc((size_t)n_pop * sizeof *pop_ids);
    if (!out->state || !pop_ids || !ids || (state_len && !state)) { /* NULL blob: SQLite's */
        free(pop_ids);
        code = tv_error_set(err, TV_ENOMEM, "%s: out of memory loading the checkpoint", where);
        goto fail;
    }
    if (state_len)
        memcpy(out->state, state, state_len);
    out->state_len = state_len;
    for (int64_t i = 0; i < n_pop; i++)
        pop_ids[i] = get_le64(ids + 8 * i);
    store_done(q);
    code = load_members(s, run, pop_ids, (size_t)n_pop, out->generation, &out->population, err);
    free(pop_ids);
    if (code)
        goto fail;

    q = store_stmt2(s, ST_IND_PENDING, run, out->generation);
    size_t cap = 0;
    if ((code = store_set_load(s, q, 1, &out->pending, &cap, err)) != 0)
        goto fail;
    store_set_fix_pointers(&out->pending);
    store_set_sort(&out->pending);
    sqlite3_exec(s->db, "COMMIT", NULL, NULL, NULL);
    return 0;
fail:
    store_done(s->st[ST_CKPT_LATEST]);
    sqlite3_exec(s->db, "ROLLBACK", NULL, NULL, NULL);
    store_checkpoint_release(out);
    return code;
}
