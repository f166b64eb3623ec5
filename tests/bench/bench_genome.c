/* bench_genome.c -- genome/ figures for BENCHMARKS.md: codec and crossover on
 * 1,000,000-connection genomes, and bytes per connection; then crossover and
 * the per-connection mutation rates at 50,000 and 500,000 connections, per
 * connection, against adding the same connections one call at a time.
 * Prints markdown. */
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include "genome.h"

#define REPS 11

static double now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

static double median(double *v, int n)
{
    qsort(v, (size_t)n, sizeof *v, cmp_double);
    return v[n / 2];
}

static void die(const struct tv_error *err)
{
    fprintf(stderr, "bench_genome: %s\n", err->msg);
    exit(1);
}

/* Two hidden layers of 1000 between 1000 inputs and 1000 outputs at density
 * 1/3: about 1,000,000 connections. */
static void build(struct genome *g, uint64_t seed)
{
    static const uint32_t sizes[] = {1000, 1000, 1000, 1000};
    struct genome_layered_spec spec = {sizes, 4, 1.0 / 3, 0, 0, GENOME_ACT_RELU, GENOME_ACT_SIGMOID,
                                       1.0};
    struct tv_rng rng;
    struct tv_error err = {0};
    tv_rng_init(&rng, seed, 0, 0);
    if (genome_build_layered(g, &spec, &rng, &err))
        die(&err);
}

/* ---- operators at scale ------------------------------------------------ */

/* 1000 inputs, two hidden layers of 1000, 100 outputs (2.1 M pairs between
 * adjacent layers) at the density that gives about n_conns connections. */
static void build_sized(struct genome *g, size_t n_conns, uint64_t seed)
{
    static const uint32_t sizes[] = {1000, 1000, 1000, 100};
    struct genome_layered_spec spec = {
        sizes, 4, (double)n_conns / 2.1e6, 0, 0, GENOME_ACT_RELU, GENOME_ACT_IDENTITY, 1.0};
    struct tv_rng rng;
    struct tv_error err = {0};
    tv_rng_init(&rng, seed, 0, 0);
    if (genome_build_layered(g, &spec, &rng, &err))
        die(&err);
}

/* The structural rates per connection and per neuron, 1 % each. */
static struct genome_mutation scale_rates(int with_weights)
{
    struct genome_mutation m = {0};
    m.weight_init_sd = 1.0;
    m.hidden_act = GENOME_ACT_RELU;
    m.add_local_per_conn = m.add_skip_per_conn = m.del_conn_per_conn = 0.01;
    m.add_neuron_per_neuron = m.del_neuron_per_neuron = 0.01;
    if (with_weights) { /* the config's defaults */
        m.weight_perturb_rate = 0.8;
        m.weight_perturb_sd = 0.5;
        m.weight_replace_rate = 0.1;
        m.bias_perturb_rate = 0.7;
        m.bias_perturb_sd = 0.5;
        m.bias_replace_rate = 0.1;
        m.bias_init_sd = 1.0;
    }
    return m;
}

/* Median seconds of REPS calls of genome_mutate(m) on fresh copies of a
 * (the copy not timed); *changed: connections added plus removed, last rep. */
static double time_mutate(const struct genome *a, const struct genome_mutation *m, int calls,
                          struct genome *c, size_t *changed)
{
    struct tv_error err = {0};
    double t[REPS];
    for (int r = 0; r < REPS; r++) {
        if (genome_copy(c, a, &err))
            die(&err);
        struct tv_rng rng;
        tv_rng_init(&rng, 11, (uint64_t)r, 0);
        double t0 = now();
        for (int k = 0; k < calls; k++)
            if (genome_mutate(c, m, &rng, &err))
                die(&err);
        t[r] = now() - t0;
        if (genome_validate(c, NULL, &err))
            die(&err);
    }
    size_t kept = 0;
    for (size_t i = 0; i < c->n_conns; i++)
        kept += genome_find_conn(a, c->conns[i].from, c->conns[i].to) >= 0;
    *changed = (a->n_conns - kept) + (c->n_conns - kept);
    return median(t, REPS);
}

static void scale_rows(size_t target)
{
    struct tv_error err = {0};
    struct genome *a = genome_new(), *b = genome_new(), *c = genome_new();
    build_sized(a, target, 3);
    /* the other parent: a after one mutation, so that most keys match */
    struct genome_mutation m = scale_rates(1);
    struct tv_rng rng;
    tv_rng_init(&rng, 5, 0, 0);
    if (genome_copy(b, a, &err) || genome_mutate(b, &m, &rng, &err))
        die(&err);
    double t[REPS];
    for (int r = 0; r < REPS; r++) {
        tv_rng_init(&rng, 7, (uint64_t)r, 0);
        double t0 = now();
        if (genome_crossover(c, a, b, &rng, &err))
            die(&err);
        t[r] = now() - t0;
    }
    double n = (double)a->n_conns, cross = median(t, REPS);
    printf("| crossover, %zu x %zu connections | %.3f ms | %.1f ns |\n", a->n_conns, b->n_conns,
           cross * 1e3, cross * 1e9 / n);
    size_t changed;
    m = scale_rates(0);
    double only = time_mutate(a, &m, 1, c, &changed);
    printf("| mutate, structural rates per gene at 1 %% (%zu connections added or removed) | %.3f "
           "ms | %.1f ns |\n",
           changed, only * 1e3, only * 1e9 / n);
    m = scale_rates(1);
    double all = time_mutate(a, &m, 1, c, &changed);
    printf("| mutate, the same and the default weight and bias rates | %.3f ms | %.1f ns |\n",
           all * 1e3, all * 1e9 / n);
    if (target <= 50000) {
        /* the old operator, one connection per call, as many calls as the
         * per-connection rate adds in one */
        struct genome_mutation one = {0};
        one.weight_init_sd = 1.0;
        one.add_local_rate = 1.0;
        int calls = (int)(0.01 * n);
        double slow = time_mutate(a, &one, calls, c, &changed);
        printf("| %d calls of add_local_rate = 1 (%zu connections added) | %.3f ms | %.1f ns |\n",
               calls, changed, slow * 1e3, slow * 1e9 / n);
    }
    genome_free(a);
    genome_free(b);
    genome_free(c);
}

int main(void)
{
    struct tv_error err = {0};
    struct genome *a = genome_new(), *b = genome_new(), *c = genome_new();
    build(a, 1);
    build(b, 2);
    struct tv_buf buf = {0};
    double t_codec[REPS], t_enc[REPS], t_dec[REPS], t_cross[REPS];
    for (int r = 0; r < REPS; r++) {
        buf.len = 0;
        double t0 = now();
        if (genome_encode(a, &buf, &err))
            die(&err);
        double t1 = now();
        if (genome_decode(c, buf.data, buf.len, NULL, &err)) /* decode validates */
            die(&err);
        double t2 = now();
        t_enc[r] = t1 - t0;
        t_dec[r] = t2 - t1;
        t_codec[r] = t2 - t0;
    }
    if (!genome_equal(a, c)) {
        fprintf(stderr, "bench_genome: round trip changed the genome\n");
        return 1;
    }
    size_t matching = 0;
    for (int r = 0; r < REPS; r++) {
        struct tv_rng rng;
        tv_rng_init(&rng, 7, (uint64_t)r, 0);
        double t0 = now();
        if (genome_crossover(c, a, b, &rng, &err))
            die(&err);
        t_cross[r] = now() - t0;
    }
    for (size_t i = 0, j = 0; i < a->n_conns; i++) {
        while (j < b->n_conns &&
               (b->conns[j].from < a->conns[i].from ||
                (b->conns[j].from == a->conns[i].from && b->conns[j].to < a->conns[i].to)))
            j++;
        matching += j < b->n_conns && b->conns[j].from == a->conns[i].from &&
                    b->conns[j].to == a->conns[i].to;
    }
    double codec = median(t_codec, REPS) * 1e3, cross = median(t_cross, REPS) * 1e3;
    double bpc = (double)buf.len / (double)a->n_conns;
    printf("Genomes of %zu and %zu connections (%zu neurons, 4 layers at density 1/3; %zu keys "
           "match). Median of %d runs, one core.\n\n",
           a->n_conns, b->n_conns, a->n_neurons, matching, REPS);
    printf("| measure | median | target | verdict |\n|---|---|---|---|\n");
    printf("| encode + decode + validate, 1 M connections | %.2f ms (encode %.2f, decode + "
           "validate %.2f) | <= 20 ms | %s |\n",
           codec, median(t_enc, REPS) * 1e3, median(t_dec, REPS) * 1e3,
           codec <= 20 ? "met" : "MISSED");
    printf("| crossover of two 1 M-connection parents | %.2f ms | <= 50 ms | %s |\n", cross,
           cross <= 50 ? "met" : "MISSED");
    printf("| encoded size | %.3f bytes/connection (%zu bytes) | <= 12.5 | %s |\n", bpc, buf.len,
           bpc <= 12.5 ? "met" : "MISSED");
    printf("\nOperators at scale: layered genomes of 1000 inputs, 1000 + 1000 hidden and 100 "
           "outputs at the density that gives the size; the other parent of a crossover is the "
           "first after one mutation. Median of %d runs, one core; per connection of the "
           "parent.\n\n",
           REPS);
    printf("| operation | median | per connection |\n|---|---|---|\n");
    scale_rows(50000);
    scale_rows(500000);
    tv_buf_free(&buf);
    genome_free(a);
    genome_free(b);
    genome_free(c);
    return 0;
}
