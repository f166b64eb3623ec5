/* bench_transpose.c -- the transposed product of the sparse trainer
 * (nn/train/train.h) three ways, for BENCHMARKS.md: the backward pass reads W
 * transposed (the dL/dy of a source from the deltas of its destinations)
 *   map:     through the index map (4 bytes per connection, no copy of W);
 *   scatter: as a scatter over the by-destination rows (the default);
 *   build:   from a by-source copy of W built at every backward pass.
 * Every way gives the same bits (tests/test_train.c checks it), so only
 * time and bytes differ. On 784-1000-1000-10 (relu hidden, identity
 * outputs) at 2 % and 10 % density, batch 128, one core: the rounds
 * alternate the ways (so a load on the machine hits them alike) and the
 * table gives medians and minima of a gradient call (forward, loss,
 * backward), of the forward alone (predict) and their difference (the
 * backward pass), and of a whole training step (gradient and Adam update)
 * with the default way (scatter). Run: build/bench/bench_transpose (make bench).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "bench_time.h"
#include "genome.h"
#include "train.h"

#define ROUNDS 200
#define BATCH 128

static double now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static int by_value(const void *a, const void *b)
{
    const double *x = a, *y = b;
    return *x < *y ? -1 : *x > *y;
}

/* Sorts v[0..n) (n >= 1) and gives its median and minimum in ms. */
static void med_min(double *v, size_t n, double *med, double *min)
{
    qsort(v, n, sizeof *v, by_value);
    *med = 1e3 * (n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2);
    *min = 1e3 * v[0];
}

static void fail(const char *what, const struct tv_error *err)
{
    fprintf(stderr, "bench_transpose: %s: %s\n", what, err->msg);
    exit(1);
}

static const char *const way_names[3] = {"index map", "scatter (kept)", "build Wᵀ"};

static void one(double density, float *x, uint32_t *labels)
{
    static const uint32_t sizes[] = {784, 1000, 1000, 10};
    struct genome_layered_spec spec = {
        sizes, 4, density, 0, 0, GENOME_ACT_RELU, GENOME_ACT_IDENTITY, 0.05};
    struct tv_rng rng;
    tv_rng_init(&rng, 16, 4, 1);
    struct genome g;
    genome_init(&g);
    struct tv_error err = {0};
    if (genome_build_layered(&g, &spec, &rng, &err))
        fail("genome_build_layered", &err);
    struct nn_train_opts o;
    nn_train_opts_default(&o);
    o.optimizer = NN_OPT_ADAM;
    o.lr = 1e-4f;
    struct nn_trainer *t = NULL;
    if (nn_trainer_new(&g, &o, &t, &err))
        fail("nn_trainer_new", &err);
    nn_trainer_keep_values(t, 0);
    size_t m = nn_trainer_n_conns(t), n = g.n_neurons;
    float *out = malloc(BATCH * 10 * sizeof *out);
    static double tg[3][ROUNDS], tf[ROUNDS], tb[3][ROUNDS], ts[ROUNDS];
    for (int r = -5; r < ROUNDS; r++) { /* 5 rounds of warm-up */
        double t0 = now();
        if (nn_trainer_predict(t, x, 1, BATCH, out, &err))
            fail("nn_trainer_predict", &err);
        double f = now() - t0;
        for (int w = 0; w < 3; w++) {
            if (nn_trainer_set_transpose(t, w, &err))
                fail("nn_trainer_set_transpose", &err);
            t0 = now();
            if (nn_trainer_grad(t, x, labels, NULL, 1, BATCH, NULL, &err))
                fail("nn_trainer_grad", &err);
            if (r >= 0)
                tg[w][r] = now() - t0;
        }
        nn_trainer_set_transpose(t, NN_TRANSPOSE_SCATTER, &err);
        t0 = now();
        if (nn_trainer_step(t, x, labels, NULL, 1, BATCH, NULL, &err))
            fail("nn_trainer_step", &err);
        if (r >= 0) {
            ts[r] = now() - t0;
            tf[r] = f;
        }
    }
    for (int w = 0; w < 3; w++)
        for (int r = 0; r < ROUNDS; r++)
            tb[w][r] = tg[w][r] - tf[r];
    double f_med, f_min;
    med_min(tf, ROUNDS, &f_med, &f_min);
    printf("\n**784-1000-1000-10 at %g %% density: %zu connections, %zu neurons, batch %d.** "
           "Forward alone (`nn_trainer_predict`): median %.3f ms, minimum %.3f ms.\n\n",
           density * 100, m, n, BATCH, f_med, f_min);
    printf("| way | gradient call, median | minimum | backward pass (gradient - forward), median "
           "| ns per connection per sample (backward) | extra bytes |\n");
    printf("|---|---|---|---|---|---|\n");
    for (int w = 0; w < 3; w++) {
        double g_med, g_min, b_med, b_min;
        med_min(tg[w], ROUNDS, &g_med, &g_min);
        med_min(tb[w], ROUNDS, &b_med, &b_min);
        char bytes[96];
        if (w == NN_TRANSPOSE_MAP)
            snprintf(bytes, sizeof bytes, "%zu (4 per connection + 8 per neuron)",
                     4 * m + 8 * (n + 1));
        else if (w == NN_TRANSPOSE_SCATTER)
            snprintf(bytes, sizeof bytes, "%zu (dL/dy rows of two steps, per block)",
                     (size_t)2 * n * 64 * 4);
        else
            snprintf(bytes, sizeof bytes, "%zu (8 per connection + 8 per neuron), made every call",
                     8 * m + 8 * (n + 1));
        printf("| %s | %.3f ms | %.3f ms | %.3f ms | %.3f | %s |\n", way_names[w], g_med, g_min,
               b_med, b_med * 1e6 / ((double)m * BATCH), bytes);
    }
    double s_med, s_min;
    med_min(ts, ROUNDS, &s_med, &s_min);
    printf(
        "\nA whole training step (gradient and Adam update, the scatter): median %.3f ms, minimum "
        "%.3f ms, that is %.2f s (median) or %.2f s (minimum) per Fashion-MNIST epoch of "
        "60,000 samples.\n",
        s_med, s_min, s_med * 60 / BATCH, s_min * 60 / BATCH);
    free(out);
    nn_trainer_free(t);
    genome_release(&g);
}

int main(void)
{
    float *x = malloc((size_t)BATCH * 784 * sizeof *x);
    uint32_t *labels = malloc(BATCH * sizeof *labels);
    if (!x || !labels)
        return 1;
    struct tv_rng rng;
    tv_rng_init(&rng, 16, 5, 1);
    for (size_t i = 0; i < (size_t)BATCH * 784; i++)
        x[i] = (float)tv_rng_uniform(&rng);
    for (size_t b = 0; b < BATCH; b++)
        labels[b] = (uint32_t)(b % 10);
    printf("### Sparse training: the transposed product three ways\n\n");
    printf("`build/bench/bench_transpose` (`make bench`): one core, float32, %d rounds that "
           "alternate the ways; the trainer of `nn/train/train.h` with the view's copy off "
           "(`nn_trainer_keep_values(t, 0)`). Every way gives the same bits. Load average when "
           "measured: ",
           ROUNDS);
    double load[3];
    bench_loadavg(load);
    printf("%.2f (1 minute).\n", load[0]);
    one(0.02, x, labels);
    one(0.10, x, labels);
    free(x);
    free(labels);
    return 0;
}
