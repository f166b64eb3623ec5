/* bench_sparsify.c -- what the sparsity policies (nn/train/sparsify.h) cost on
 * 784-1000-1000-10 at 2 % density, against one training step (batch 128,
 * SGD) of the same network. Prints markdown for BENCHMARKS.md. */
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include "bench_time.h"
#include "sparsify.h"

#define REPS 5
#define BATCH 128

/* CPU seconds of this thread: the machine is shared, and the CPU time of a
 * single-threaded call moves less with the load than the wall time does. */
static double now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static void check(int rc, const struct tv_error *err)
{
    if (rc) {
        fprintf(stderr, "bench_sparsify: %s\n", err->msg);
        exit(1);
    }
}

/* The network, a trainer on it and one batch of random pixels and labels. */
struct setup {
    struct genome *g;
    float *x;
    uint32_t labels[BATCH];
};

static struct nn_trainer *trainer(const struct setup *su)
{
    struct nn_train_opts o;
    nn_train_opts_default(&o);
    o.max_batch = BATCH;
    struct nn_trainer *t;
    struct tv_error err = {0};
    check(nn_trainer_new(su->g, &o, &t, &err), &err);
    return t;
}

/* Seconds of one training step (the best of REPS). */
static double time_step(struct nn_trainer *t, const struct setup *su)
{
    double best = 1e30, loss;
    struct tv_error err = {0};
    for (int r = 0; r < REPS; r++) {
        double t0 = now();
        check(nn_trainer_step(t, su->x, su->labels, NULL, 1, BATCH, &loss, &err), &err);
        double dt = now() - t0;
        best = dt < best ? dt : best;
    }
    return best;
}

/* 1 if p runs at an epoch's end, 0 after each step. */
static int at_epoch(const struct nn_sparsity *p)
{
    return p->kind == NN_SPARSE_SET || p->kind == NN_SPARSE_RIGL ||
           (p->kind == NN_SPARSE_NEURON && p->a == 0);
}

/* Seconds of one call of the policy (the best of REPS calls, each after a
 * training step of the same trainer, so caches are as in a training run). */
static double time_policy(const char *spec, const struct setup *su, size_t *conns_after)
{
    struct nn_sparsity p;
    struct tv_error err = {0};
    check(nn_sparsity_parse(spec, &p, &err), &err);
    struct nn_trainer *t = trainer(su);
    struct nn_sparsifier *s;
    check(nn_sparsifier_new(&p, 1, 1, &s, &err), &err);
    double best = 1e30, loss;
    for (int r = 0; r < REPS; r++) {
        check(nn_trainer_step(t, su->x, su->labels, NULL, 1, BATCH, &loss, &err), &err);
        double t0 = now();
        check(at_epoch(&p) ? nn_sparsifier_epoch(s, t, &err) : nn_sparsifier_step(s, t, &err),
              &err);
        double dt = now() - t0;
        best = dt < best ? dt : best;
    }
    *conns_after = nn_trainer_n_conns(t);
    nn_sparsifier_free(s);
    nn_trainer_free(t);
    return best;
}

int main(void)
{
    static const uint32_t sizes[] = {784, 1000, 1000, 10};
    struct genome_layered_spec spec = {sizes, 4, 0.02, 0, 0, GENOME_ACT_RELU, GENOME_ACT_IDENTITY,
                                       0.05};
    struct setup su = {genome_new(), malloc(BATCH * 784 * sizeof(float)), {0}};
    struct tv_rng rng;
    struct tv_error err = {0};
    if (!su.g || !su.x) {
        fprintf(stderr, "bench_sparsify: out of memory\n");
        return 1;
    }
    tv_rng_init(&rng, 1, 0, 0);
    check(genome_build_layered(su.g, &spec, &rng, &err), &err);
    for (size_t i = 0; i < BATCH * 784; i++)
        su.x[i] = (float)tv_rng_uniform(&rng);
    for (size_t i = 0; i < BATCH; i++)
        su.labels[i] = tv_rng_below(&rng, 10);
    struct nn_trainer *t = trainer(&su);
    double step = time_step(t, &su);
    nn_trainer_free(t);
    double load[3];
    bench_loadavg(load);

    printf("### Sparsity policies\n\n");
    printf("One call of each policy on 784-1000-1000-10 at 2 %% density (%zu connections) "
           "after a training step, CPU time of one thread, the best of %d calls, against that "
           "training step "
           "(batch %d, SGD: %.2f ms). Load average when measured: %.2f. "
           "`make build/bench/bench_sparsify && build/bench/bench_sparsify`.\n\n",
           su.g->n_conns, REPS, BATCH, step * 1e3, load[0]);
    printf("| policy | when | ms per call | × one training step | connections after the calls |\n");
    printf("|---|---|---:|---:|---:|\n");
    static const char *const specs[] = {
        "l1:1e-6",        "lp:1e-6,2", "threshold:1e-4", "round:4",      "zero:1e-4",
        "zero_prop:1e-4", "neuron:1",  "set:0.3",        "set:0.3,0.05", "rigl:0.3"};
    for (size_t i = 0; i < sizeof specs / sizeof *specs; i++) {
        size_t after = 0;
        double dt = time_policy(specs[i], &su, &after);
        struct nn_sparsity p;
        check(nn_sparsity_parse(specs[i], &p, &err), &err);
        printf("| `%s` | %s | %.3f | %.2f | %zu |\n", specs[i], at_epoch(&p) ? "epoch" : "step",
               dt * 1e3, dt / step, after);
    }
    genome_free(su.g);
    free(su.x);
    return 0;
}
