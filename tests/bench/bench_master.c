/* bench_master.c -- the master's cost per individual with 50,000-connection
 * genomes, for BENCHMARKS.md: what rank 0 does for each child, step by step,
 * in CPU time, with the functions the search calls (master/generation.c, commit.c,
 * evolve.c, state.c, farm.c's message codec):
 *   send      the parent genome copied into a task message (worker_tasks_encode)
 *   decode    the child's bytes decoded and validated (genome_decode with the
 *             run's limits, into a reused genome, as take_child does)
 *   keep      its statistics and a copy of its bytes in the next population
 *             (master_pop_add, master_pop_keep_encoding)
 *   store     its row and genome committed (store_add_individuals, batches of
 *             BATCH, WAL, synchronous NORMAL)
 *   speciate  master_speciate of the whole population (sketches, distances,
 *             new representatives), per child
 *   state     the checkpoint's master state (master_state_encode, with the
 *             species' representatives), per child
 * Each figure is the median of REPS passes over POP children (mutants of one
 * layered 784-64-10 genome, 50,816 connections). Prints a markdown section:
 * ns per connection, microseconds per child, and how many workers one master
 * keeps busy when a child takes 1 s to evaluate (1 s over the master's cost
 * per child). The database goes to a mkdtemp directory under $TMPDIR (about
 * 400 MB while it runs) and is removed. */
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "bench_time.h"
#include "master.h"
#include "state.h"
#include "store.h"
#include "worker.h"

#define POP 60
#define REPS 5
#define BATCH 20

/* CPU seconds of the whole process (the store's background WAL copy
 * included): the master's own work, which other processes on a loaded
 * machine do not inflate as they do wall time. */
static double now(void)
{
    return bench_seconds(CLOCK_PROCESS_CPUTIME_ID);
}

static void die(const char *what, const struct tv_error *err)
{
    fprintf(stderr, "bench_master: %s: %s\n", what, err ? err->msg : "");
    exit(1);
}

enum { S_SEND, S_DECODE, S_KEEP, S_STORE, S_SPECIATE, S_STATE, N_STEPS, S_KEEP_FRESH = N_STEPS };
static const char *const step_name[N_STEPS + 1] = {
    "send: the parent into a task message",
    "decode and validate the child",
    "keep: statistics and bytes in the population",
    "store: commit row and genome",
    "speciate (whole population, per child)",
    "checkpoint state (per child)",
    "keep, into a fresh buffer each generation (before issue 17)"};

static void rm_dir(const char *dir)
{
    DIR *d = opendir(dir);
    if (d) {
        struct dirent *e;
        char p[600];
        while ((e = readdir(d)) != NULL)
            if (strcmp(e->d_name, ".") && strcmp(e->d_name, "..")) {
                snprintf(p, sizeof p, "%s/%s", dir, e->d_name);
                unlink(p);
            }
        closedir(d);
    }
    rmdir(dir);
}

/* Seconds to add the children g[i] (encoded enc[i]) of pass r to pop, as
 * take_child does. */
static double keep_all(struct master_pop *pop, int r, struct genome **g, const struct tv_buf *enc)
{
    struct tv_error err = {0};
    double t0 = now();
    for (int i = 0; i < POP; i++)
        if (master_pop_add(pop, r * POP + i, (double)i, 0, g[i], &err) ||
            master_pop_keep_encoding(pop, enc[i].data, enc[i].len, &err))
            die("master_pop_add", &err);
    return now() - t0;
}

int main(void)
{
    struct tv_error err = {0};
    struct master_config cfg;
    master_config_defaults(&cfg);
    cfg.worker.mutation.limits = cfg.worker.limits;
    /* the children: mutants of one layered genome */
    static const uint32_t sizes[] = {784, 64, 10};
    struct genome_layered_spec spec = {sizes, 3, 1.0, 0, 0, GENOME_ACT_RELU, GENOME_ACT_IDENTITY,
                                       0.3};
    struct tv_rng rng;
    tv_rng_init(&rng, 1, 0, 0);
    struct genome *base = genome_new(), *g = genome_new();
    if (!base || !g || genome_build_layered(base, &spec, &rng, &err))
        die("building the genome", &err);
    struct tv_buf enc[POP];
    size_t n_conns = 0;
    for (int i = 0; i < POP; i++) {
        memset(&enc[i], 0, sizeof enc[i]);
        tv_rng_init(&rng, 2, (uint64_t)i, 0);
        if (genome_copy(g, base, &err) || genome_mutate(g, &cfg.worker.mutation, &rng, &err) ||
            genome_encode(g, &enc[i], &err))
            die("making the children", &err);
        n_conns += g->n_conns;
    }
    double conns = (double)n_conns / POP, bytes = (double)enc[0].len;

    char dir[300];
    const char *tmp = getenv("TMPDIR");
    snprintf(dir, sizeof dir, "%s/trevo-bench-master-XXXXXX", tmp && *tmp ? tmp : "/tmp");
    if (!mkdtemp(dir))
        die("mkdtemp", NULL);
    char path[400];
    snprintf(path, sizeof path, "%s/bench.db", dir);
    struct store *st;
    struct store_options so = {.flags = STORE_CREATE};
    int64_t run;
    if (store_open(path, &so, &st, &err) ||
        store_run_create(st, "bench", "", 1, "bench", &run, &err))
        die("store", &err);

    double t[N_STEPS + 1][REPS];
    struct tv_buf msg = {0}, state = {0}, spare_encoded = {0};
    struct genome *spare[POP];
    for (int i = 0; i < POP; i++)
        spare[i] = genome_new();
    for (int r = 0; r < REPS; r++) {
        /* send: one mutation task per child, its parent's bytes in the message */
        double t0 = now();
        for (int i = 0; i < POP; i++) {
            struct worker_task task = {
                i, r, (uint32_t)i, WORKER_OP_MUTATE, 7, i, -1, enc[i].data, enc[i].len, NULL, 0};
            msg.len = 0;
            if (worker_tasks_encode(&task, 1, &msg, &err))
                die("worker_tasks_encode", &err);
        }
        t[S_SEND][r] = now() - t0;
        /* decode into the genomes of the population before (warm, as in a run) */
        struct master_pop pop;
        master_pop_init(&pop, cfg.compat_threshold);
        t0 = now();
        for (int i = 0; i < POP; i++)
            if (genome_decode(spare[i], enc[i].data, enc[i].len, &cfg.worker.limits, &err))
                die("genome_decode", &err);
        t[S_DECODE][r] = now() - t0;
        /* keep: as before issue 17 (a fresh buffer: page faults, copies as
         * it grows), then as the search does now (the replaced population's
         * buffer, its pages mapped) */
        struct master_pop fresh;
        master_pop_init(&fresh, cfg.compat_threshold);
        t[S_KEEP_FRESH][r] = keep_all(&fresh, r, spare, enc);
        for (size_t i = 0; i < fresh.n; i++)
            fresh.m[i].genome = NULL;
        master_pop_release(&fresh);
        pop.encoded = spare_encoded;
        pop.encoded.len = 0;
        t[S_KEEP][r] = keep_all(&pop, r, spare, enc);
        /* store: batches of rows */
        struct store_individual rows[BATCH];
        t0 = now();
        for (int i = 0; i < POP; i += BATCH) {
            for (int k = 0; k < BATCH; k++)
                rows[k] = (struct store_individual){.id = r * POP + i + k,
                                                    .generation = r,
                                                    .fitness = 1,
                                                    .parent1 = STORE_ID_NONE,
                                                    .parent2 = STORE_ID_NONE,
                                                    .species = STORE_ID_NONE,
                                                    .n_conns = (uint32_t)conns,
                                                    .genome = enc[i + k].data,
                                                    .genome_len = enc[i + k].len};
            if (store_add_individuals(st, run, rows, BATCH, &err))
                die("store_add_individuals", &err);
        }
        t[S_STORE][r] = now() - t0;
        t0 = now();
        if (master_speciate(&pop, &cfg, r, &err))
            die("master_speciate", &err);
        t[S_SPECIATE][r] = now() - t0;
        t0 = now();
        state.len = 0;
        if (master_state_encode(&pop, (r + 1) * POP, &state, &err))
            die("master_state_encode", &err);
        t[S_STATE][r] = now() - t0;
        for (size_t i = 0; i < pop.n; i++)
            pop.m[i].genome = NULL; /* the spares stay ours */
        spare_encoded = pop.encoded;
        memset(&pop.encoded, 0, sizeof pop.encoded);
        master_pop_release(&pop);
    }
    if (store_close(st, &err))
        die("store_close", &err);
    rm_dir(dir);

    printf("### The master's cost per child, 50,000-connection genomes\n\n");
    printf("Each of %d children is a mutant of one layered 784-64-10 genome (%.0f connections, "
           "%.0f bytes encoded, %.1f bytes per connection); medians of %d passes. "
           "`make build/bench/bench_master && build/bench/bench_master`.\n\n",
           POP, conns, bytes, bytes / conns, REPS);
    printf("| step | per child | ns per connection |\n|---|---:|---:|\n");
    double total = 0;
    for (int s = 0; s < N_STEPS; s++) {
        double per_child = median(t[s], REPS) / POP;
        total += per_child;
        printf("| %s | %.0f us | %.2f |\n", step_name[s], per_child * 1e6, per_child * 1e9 / conns);
    }
    printf("| **the master's whole cost** | **%.0f us** | **%.2f** |\n", total * 1e6,
           total * 1e9 / conns);
    double fresh = median(t[S_KEEP_FRESH], REPS) / POP;
    printf("| %s | %.0f us | %.2f |\n\n", step_name[S_KEEP_FRESH], fresh * 1e6,
           fresh * 1e9 / conns);
    printf("One master keeps **%.0f workers** busy when a child takes 1 s to evaluate "
           "(1 s / %.2f ms), %.0f when it takes 0.1 s.\n",
           1.0 / total, total * 1e3, 0.1 / total);
    for (int i = 0; i < POP; i++) {
        tv_buf_free(&enc[i]);
        genome_free(spare[i]);
    }
    tv_buf_free(&msg);
    tv_buf_free(&state);
    tv_buf_free(&spare_encoded);
    genome_free(base);
    genome_free(g);
    return 0;
}
