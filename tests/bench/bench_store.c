/* bench_store.c -- store/ figures for BENCHMARKS.md: committing generations
 * of 1,000 and 100,000 individuals with 2 KB genomes, re-opening and loading
 * the latest generation of 100,000, the per-generation statistics query on
 * a 1,000,000-individual history, and the cost per individual of adding
 * small (200-byte) genomes in batches of 1,000. Prints a markdown section.
 *
 * Databases go in a mkdtemp directory under $TMPDIR (default /tmp) and are
 * removed at the end; about 3 GB of disk are needed while it runs.
 * BENCH_STORE_QUICK=1 makes the history 100 generations instead of 1,000
 * (for a smoke run; the table says so); BENCH_STORE_ONLY=big,small (any of
 * history, big, small) runs only those sections. */
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <sqlite3.h>

#include "genome.h"
#include "store.h"

#define N_POOL 64 /* distinct encoded genomes the rows cycle through */

static double clock_seconds(clockid_t clock)
{
    struct timespec ts;
    clock_gettime(clock, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static double now(void)
{
    return clock_seconds(CLOCK_MONOTONIC);
}

/* CPU time of every thread of the process (the store's background copy
 * included). */
static double cpu_now(void)
{
    return clock_seconds(CLOCK_PROCESS_CPUTIME_ID);
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

static double median(double *v, size_t n)
{
    qsort(v, n, sizeof *v, cmp_double);
    return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

static void die(const char *what, const struct tv_error *err)
{
    fprintf(stderr, "bench_store: %s: %s\n", what, err ? err->msg : "");
    exit(1);
}

struct pool {
    struct tv_buf bytes[N_POOL];
    struct genome_stats stats[N_POOL];
    double mean_bytes;
};
static struct pool big_pool, small_pool;

/* Genomes of n_in inputs fully connected to n_out outputs plus n_mut
 * mutations: 16 x 8 with 3 (128 connections of 12 bytes) is about 2 KB, the
 * XOR shape 2 x 1 with 2 about 200 bytes. */
static void make_pool(struct pool *pool, uint32_t n_in, uint32_t n_out, int n_mut)
{
    struct tv_error err = {0};
    struct genome *g = genome_new();
    /* weights perturbed or new; every structural addition fires */
    struct genome_mutation m = {.weight_perturb_rate = 0.5,
                                .weight_perturb_sd = 0.1,
                                .weight_init_sd = 1.0,
                                .hidden_act = GENOME_ACT_TANH};
    m.add_neuron_rate = m.add_skip_rate = m.add_recurrent_rate = 1.0;
    double total = 0;
    for (int i = 0; i < N_POOL; i++) {
        struct tv_rng rng;
        tv_rng_init(&rng, 11, (uint64_t)i, 0);
        if (genome_build_minimal(g, n_in, n_out, GENOME_ACT_SIGMOID, 1.0, &rng, &err))
            die("genome", &err);
        for (int k = 0; k < n_mut; k++)
            if (genome_mutate(g, &m, &rng, &err))
                die("mutate", &err);
        if (genome_encode(g, &pool->bytes[i], &err) || genome_stats(g, &pool->stats[i], &err))
            die("encode", &err);
        total += (double)pool->bytes[i].len;
    }
    pool->mean_bytes = total / N_POOL;
    genome_free(g);
}

static void fill_rows(const struct pool *pool, struct store_individual *rows, size_t n, int64_t id0,
                      int64_t gen)
{
    for (size_t i = 0; i < n; i++) {
        int64_t id = id0 + (int64_t)i;
        const struct genome_stats *st = &pool->stats[id % N_POOL];
        struct store_individual *r = &rows[i];
        memset(r, 0, sizeof *r);
        r->id = id;
        r->generation = gen;
        r->fitness = (double)(tv_mix64((uint64_t)id) >> 11) * 0x1.0p-53;
        r->parent1 = gen ? id0 - 1 - (id % 97) : STORE_ID_NONE;
        r->parent2 = gen && id % 2 ? id0 - 1 - (id % 89) : STORE_ID_NONE;
        r->op = gen ? STORE_OP_CROSSOVER_MUTATE : STORE_OP_INIT;
        r->species = id % 12;
        r->n_neurons = (uint32_t)st->n_neurons;
        r->n_conns = (uint32_t)st->n_conns;
        r->n_skip = (uint32_t)st->n_skip;
        r->n_recurrent = (uint32_t)st->n_recurrent;
        r->eval_seconds = 0.01;
        r->rank = (int32_t)(1 + id % 7);
        r->genome = pool->bytes[id % N_POOL].data;
        r->genome_len = pool->bytes[id % N_POOL].len;
    }
}

/* Commits one generation the way the master does: batches of `batch`
 * individuals, then the close (statistics, 12 species, checkpoint of the
 * whole generation as the population, 1 KB of master state). */
static double commit_generation(struct store *s, int64_t run, int64_t gen, size_t n, size_t batch,
                                struct store_individual *rows, int64_t *pop, double *t_close)
{
    struct tv_error err = {0};
    int64_t id0 = gen * (int64_t)n;
    static uint8_t state[1024];
    struct store_species sp[12];
    for (int k = 0; k < 12; k++)
        sp[k] = (struct store_species){k, (uint32_t)(n / 12), 1.0, 0.5, id0 + k, 0, 0};
    for (size_t i = 0; i < n; i++)
        pop[i] = id0 + (int64_t)i;
    double t0 = now();
    for (size_t b = 0; b < n; b += batch) {
        size_t m = n - b < batch ? n - b : batch;
        fill_rows(&big_pool, rows, m, id0 + (int64_t)b, gen);
        if (store_add_individuals(s, run, rows, m, &err))
            die("add", &err);
    }
    struct store_generation g = {.generation = gen,
                                 .best = 1.0,
                                 .mean = 0.5,
                                 .median = 0.5,
                                 .champion = id0,
                                 .n_evals = n,
                                 .wall_seconds = 1.0,
                                 .species = sp,
                                 .n_species = 12,
                                 .state = state,
                                 .state_len = sizeof state,
                                 .population = pop,
                                 .n_population = n};
    double t1 = now();
    if (store_generation_close(s, run, &g, &err))
        die("close", &err);
    double t2 = now();
    if (t_close)
        *t_close = t2 - t1;
    return t2 - t0;
}

static char dir[256];

static void path_in(char *out, size_t cap, const char *name)
{
    snprintf(out, cap, "%s/%s", dir, name);
}

static void remove_db(const char *path)
{
    static const char *const sfx[] = {"", "-wal", "-shm", "-lock"};
    char p[512];
    for (int i = 0; i < 4; i++) {
        snprintf(p, sizeof p, "%s%s", path, sfx[i]);
        unlink(p);
    }
}

/* Opens with trevo's default options (the WAL is truncated at a generation
 * close once it is over STORE_CHECKPOINT_WAL_BYTES), as the master does. */
static struct store *open_db(const char *path, unsigned flags)
{
    struct tv_error err = {0};
    struct store *s = NULL;
    struct store_options o = {.flags = flags};
    if (store_open(path, &o, &s, &err))
        die("open", &err);
    return s;
}

static long long file_bytes(const char *path)
{
    long long n = 0;
    FILE *f = fopen(path, "rb");
    if (f) {
        fseek(f, 0, SEEK_END);
        n = ftell(f);
        fclose(f);
    }
    return n;
}

/* Time of one query, all rows stepped through. */
static double time_query(sqlite3 *db, const char *sql, long *n_rows)
{
    sqlite3_stmt *q = NULL;
    double t0 = now();
    if (sqlite3_prepare_v2(db, sql, -1, &q, NULL) != SQLITE_OK) {
        fprintf(stderr, "bench_store: %s: %s\n", sql, sqlite3_errmsg(db));
        exit(1);
    }
    long n = 0;
    while (sqlite3_step(q) == SQLITE_ROW)
        n++;
    sqlite3_finalize(q);
    *n_rows = n;
    return now() - t0;
}

static const char *verdict(double v, double target)
{
    return v <= target ? "pass" : "**FAIL**";
}

/* Is section `name` selected by BENCH_STORE_ONLY (a comma-separated list of
 * history, big, small; unset: all)? */
static int selected(const char *name)
{
    const char *only = getenv("BENCH_STORE_ONLY");
    if (!only || !*only)
        return 1;
    size_t n = strlen(name);
    for (const char *p = only; (p = strstr(p, name)) != NULL; p += n)
        if ((p == only || p[-1] == ',') && (p[n] == '\0' || p[n] == ','))
            return 1;
    return 0;
}

/* 1 and 4: a history of 1,000 generations of 1,000; every generation's
 * commit is timed, then the statistics queries run on the result. */
static void bench_history(int quick, struct store_individual *rows, int64_t *pop, FILE *first,
                          FILE *last)
{
    struct tv_error err = {0};
    char hist[512];
    path_in(hist, sizeof hist, "history.db");
    const int64_t n_gens = quick ? 100 : 1000;
    double *t_gen1k = malloc((size_t)n_gens * sizeof *t_gen1k);
    if (!t_gen1k)
        die("out of memory", NULL);
    struct store *s = open_db(hist, STORE_CREATE);
    int64_t run;
    if (store_run_create(s, "bench", "bench", 1, "bench", &run, &err))
        die("run", &err);
    for (int64_t g = 0; g < n_gens; g++)
        t_gen1k[g] = commit_generation(s, run, g, 1000, 1000, rows, pop, NULL);
    if (store_close(s, &err))
        die("close", &err);

    sqlite3 *db = NULL;
    if (sqlite3_open_v2(hist, &db, SQLITE_OPEN_READONLY, NULL) != SQLITE_OK)
        die("sqlite3_open", NULL);
    enum { QREPS = 11 };
    double t_prog[QREPS], t_scan[QREPS], t_cplx[QREPS];
    long rows_prog = 0, rows_scan = 0, rows_cplx = 0;
    for (int r = 0; r < QREPS; r++) {
        t_prog[r] = time_query(db, "SELECT * FROM v_progress WHERE run = 'bench'", &rows_prog);
        t_scan[r] = time_query(db,
                               "SELECT generation, count(*), max(fitness), avg(fitness)"
                               " FROM individuals WHERE run_id = 1 GROUP BY generation",
                               &rows_scan);
        t_cplx[r] = time_query(db, "SELECT * FROM v_complexity WHERE run_id = 1", &rows_cplx);
    }
    sqlite3_close(db);
    long long hist_bytes = file_bytes(hist);
    remove_db(hist);

    double m1 = median(t_gen1k, (size_t)n_gens) * 1e3;
    double p_max1 = t_gen1k[n_gens - 1] * 1e3; /* sorted by median() */
    double m4 = median(t_prog, QREPS) * 1e3;
    double m4s = median(t_scan, QREPS) * 1e3;
    double m4c = median(t_cplx, QREPS) * 1e3;
    long long n_hist = (long long)n_gens * 1000;
    fprintf(first,
            "| commit a generation of 1,000 (one batch + close), over %lld generations "
            "(slowest %.1f ms) | %.1f ms | <= 25 ms | %s |\n",
            (long long)n_gens, p_max1, m1, verdict(m1, 25));
    fprintf(last,
            "| per-generation statistics, `SELECT * FROM v_progress` on a %lld-individual "
            "history (%ld rows, %lld MB file) | %.2f ms | <= 50 ms | %s |\n",
            n_hist, rows_prog, hist_bytes / 1000000, m4, verdict(m4, 50));
    fprintf(last,
            "| for comparison, the same figures aggregated from the individuals (count, max, avg "
            "of fitness per generation over the covering index: what `generations` saves a "
            "reader) | %.1f ms | | |\n",
            m4s);
    fprintf(last,
            "| `v_complexity` (sizes per generation, reads the individuals table; %ld rows) | %.0f "
            "ms | | |\n",
            rows_cplx, m4c);
    (void)rows_scan;
    free(t_gen1k);
}

/* 2 and 3: generations of 100,000, committed in batches of 1,000, then
 * re-opened and loaded. */
static void bench_big(struct store_individual *rows, int64_t *pop)
{
    struct tv_error err = {0};
    const size_t big = 100000;
    char path[512];
    path_in(path, sizeof path, "big.db");
    enum { BIG_GENS = 5, LOAD_REPS = 7 };
    double t_gen100k[BIG_GENS], t_close[BIG_GENS];
    struct store *s = open_db(path, STORE_CREATE);
    int64_t run;
    if (store_run_create(s, "bench", "bench", 1, "bench", &run, &err))
        die("run", &err);
    for (int g = 0; g < BIG_GENS; g++)
        t_gen100k[g] = commit_generation(s, run, g, big, 1000, rows, pop, &t_close[g]);
    if (store_close(s, &err))
        die("close", &err);

    long long big_bytes = file_bytes(path);
    double t_load[LOAD_REPS], t_load_nocheck[LOAD_REPS], t_decode[LOAD_REPS];
    struct genome *gn = genome_new();
    for (int r = 0; r < LOAD_REPS; r++) {
        for (int k = 0; k < 2; k++) {
            double t0 = now();
            struct store *rs = open_db(path, k ? STORE_NO_CHECK : 0);
            struct store_checkpoint c;
            if (store_run_resume(rs, "bench", &run, &err) ||
                store_checkpoint_load(rs, run, &c, &err))
                die("load", &err);
            double t1 = now();
            if (c.population.n != big)
                die("wrong population size", NULL);
            if (k == 0) {
                t_load[r] = t1 - t0;
                for (size_t i = 0; i < c.population.n; i++)
                    if (store_set_genome(&c.population, i, gn, &err))
                        die("decode", &err);
                t_decode[r] = now() - t1;
            } else {
                t_load_nocheck[r] = t1 - t0;
            }
            store_checkpoint_release(&c);
            if (store_close(rs, &err))
                die("close", &err);
        }
    }
    genome_free(gn);
    remove_db(path);

    double m2 = median(t_gen100k, BIG_GENS);
    double m2c = median(t_close, BIG_GENS) * 1e3;
    double m3 = median(t_load, LOAD_REPS) * 1e3;
    double m3n = median(t_load_nocheck, LOAD_REPS) * 1e3;
    double m3d = median(t_decode, LOAD_REPS) * 1e3;
    printf("| commit a generation of 100,000 (100 batches of 1,000 + close), %d generations "
           "| %.2f s | <= 1 s | %s |\n",
           BIG_GENS, m2, verdict(m2, 1.0));
    printf(
        "| of which the close (the checkpoint transaction, then the WAL, over 16 MiB, truncated: "
        "what the background copy has not copied yet is copied first) | %.0f ms | | |\n",
        m2c);
    printf("| re-open (open-time check: %s) + resume + load the checkpoint's 100,000 rows and "
           "genome bytes, from a file of %d x 100,000 individuals, %d times | %.0f ms | <= 200 ms "
           "| %s |\n",
           big_bytes > STORE_FULL_CHECK_BYTES ? "`quick_check` of every table but individuals and "
                                                "genomes, the file being over 64 MiB"
                                              : "`quick_check` of the whole file",
           BIG_GENS, LOAD_REPS, m3, verdict(m3, 200));
    printf("| the same with `STORE_NO_CHECK` (no `quick_check`) | %.0f ms | | |\n", m3n);
    printf("| then decoding and validating the 100,000 genomes (`store_set_genome`) | %.0f ms "
           "| | |\n",
           m3d);
}

/* 5: the master's cost of committing small genomes: batches of 1,000 with
 * genomes of about 200 bytes, one transaction each, generations of 10,000
 * closed in between (the closes are not timed). */
static void bench_small(struct store_individual *rows, int64_t *pop)
{
    struct tv_error err = {0};
    char path[512];
    path_in(path, sizeof path, "small.db");
    enum { GEN = 10000, BATCH = 1000, N_GENS = 30, N_BATCHES = N_GENS * GEN / BATCH };
    static double t_batch[N_BATCHES];
    struct store *s = open_db(path, STORE_CREATE);
    int64_t run;
    if (store_run_create(s, "bench", "bench", 1, "bench", &run, &err))
        die("run", &err);
    static uint8_t state[1024];
    size_t nb = 0;
    double cpu0 = cpu_now();
    for (int64_t g = 0; g < N_GENS; g++) {
        int64_t id0 = g * GEN;
        for (size_t b = 0; b < GEN; b += BATCH) {
            fill_rows(&small_pool, rows, BATCH, id0 + (int64_t)b, g);
            double t0 = now();
            if (store_add_individuals(s, run, rows, BATCH, &err))
                die("add", &err);
            t_batch[nb++] = now() - t0;
        }
        for (size_t i = 0; i < GEN; i++)
            pop[i] = id0 + (int64_t)i;
        struct store_generation gc = {.generation = g,
                                      .champion = id0,
                                      .n_evals = GEN,
                                      .state = state,
                                      .state_len = sizeof state,
                                      .population = pop,
                                      .n_population = GEN};
        if (store_generation_close(s, run, &gc, &err))
            die("close", &err);
    }
    if (store_close(s, &err))
        die("close", &err);
    double cpu = (cpu_now() - cpu0) * 1e6 / (double)(N_GENS * GEN);
    remove_db(path);
    double m5 = median(t_batch, nb) * 1e6 / BATCH;
    printf("| adding small genomes (%.0f bytes on average): `store_add_individuals()` of "
           "batches of %d, one transaction each, %zu batches in generations of %d (the "
           "CPU time of all threads, generation closes and background copy included: %.2f us "
           "per individual) | %.2f us per individual | | |\n",
           small_pool.mean_bytes, BATCH, nb, GEN, cpu, m5);
}

int main(void)
{
    const char *tmp = getenv("TMPDIR");
    snprintf(dir, sizeof dir, "%s/trevo-bench-store-XXXXXX", tmp && *tmp ? tmp : "/tmp");
    if (!mkdtemp(dir)) {
        perror("bench_store: mkdtemp");
        return 1;
    }
    int quick = getenv("BENCH_STORE_QUICK") && atoi(getenv("BENCH_STORE_QUICK")) > 0;
    make_pool(&big_pool, 16, 8, 3);
    make_pool(&small_pool, 2, 1, 2);
    const size_t big = 100000;
    struct store_individual *rows = malloc(big * sizeof *rows);
    int64_t *pop = malloc(big * sizeof *pop);
    if (!rows || !pop)
        die("out of memory", NULL);

    printf("WAL, `synchronous=NORMAL`, `page_size=16384`, trevo's default options (a background "
           "thread copies the WAL into the database every 4 MiB; the WAL is truncated at a "
           "generation close once it is over 16 MiB); genomes are real "
           "`genome_encode()` output of %.0f bytes on average (16 inputs x 8 outputs, mutated). "
           "A generation commit is the master's path: `store_add_individuals()` batches, then "
           "`store_generation_close()` (statistics, 12 species, checkpoint with the "
           "generation's ids and 1 KB of state).%s\n\n",
           big_pool.mean_bytes,
           quick ? " **Quick run (BENCH_STORE_QUICK): a 100,000-individual history.**" : "");
    printf("| measurement | median | target | |\n|---|---|---|---|\n");
    /* the rows in the order: history's commit row first, its
     * queries after the 100,000s */
    char *first_text = NULL, *last_text = NULL;
    size_t first_len = 0, last_len = 0;
    FILE *first = open_memstream(&first_text, &first_len);
    FILE *last = open_memstream(&last_text, &last_len);
    if (!first || !last)
        die("open_memstream", NULL);
    if (selected("history"))
        bench_history(quick, rows, pop, first, last);
    fclose(first);
    fputs(first_text, stdout);
    if (selected("big"))
        bench_big(rows, pop);
    fclose(last);
    fputs(last_text, stdout);
    if (selected("small"))
        bench_small(rows, pop);
    free(first_text);
    free(last_text);
    rmdir(dir);
    free(rows);
    free(pop);
    for (int i = 0; i < N_POOL; i++) {
        tv_buf_free(&big_pool.bytes[i]);
        tv_buf_free(&small_pool.bytes[i]);
    }
    return 0;
}
