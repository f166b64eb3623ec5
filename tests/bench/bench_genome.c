/* bench_genome.c -- genome/ figures for BENCHMARKS.md: codec and crossover on
 * 1,000,000-connection genomes, and bytes per connection. Prints markdown. */
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
    tv_buf_free(&buf);
    genome_free(a);
    genome_free(b);
    genome_free(c);
    return 0;
}
