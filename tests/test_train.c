/* test_train.c -- the sparse trainer (nn/train/train.h): its gradients against the
 * reference trainer on thousands of random networks (local, skip and
 * recurrent connections, single and batched, several time steps, truncated
 * windows, both losses, every way of the transposed product and every SIMD
 * target), the view's values and deltas and the input gradient of the last
 * step at 1 to 6 steps against the reference, the forward pass against the
 * engine, the reference against central finite differences in double, each
 * optimizer's update against its formula, determinism, the removal and
 * addition of connections and neurons (the trainer, its optimizer state and
 * the genome it writes agree), softmax cross-entropy and argmax (their
 * formula, ties, NaN, infinities, signed zeros), the failure paths (code and message) and an
 * allocation-failure sweep. */
#include <float.h>
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "failalloc.h"
#include "genome.h"
#include "nn.h"
#include "testutil.h"
#include "trainutil.h"

/* ---- helpers -------------------------------------------------------------- */

/* The smooth activations (finite differences need no kinks). */
static const int smooth_acts[] = {GENOME_ACT_IDENTITY,     GENOME_ACT_TANH,  GENOME_ACT_SIGMOID,
                                  GENOME_ACT_NEAT_SIGMOID, GENOME_ACT_GAUSS, GENOME_ACT_SIN};
/* Everything but step (whose gradient is 0 almost everywhere). */
static const int all_acts[] = {GENOME_ACT_IDENTITY,     GENOME_ACT_RELU,  GENOME_ACT_TANH,
                               GENOME_ACT_SIGMOID,      GENOME_ACT_GAUSS, GENOME_ACT_SIN,
                               GENOME_ACT_NEAT_SIGMOID, GENOME_ACT_ABS};
#define N_ALL_ACTS (sizeof all_acts / sizeof all_acts[0])

/* A small random graph: local, skip and recurrent connections (self loops
 * included), hidden activations from acts, then each neuron's activation
 * drawn again from acts, ids scrambled half the time. */
static void random_net(struct genome *g, struct tv_rng *rng, const int *acts, size_t n_acts)
{
    struct genome_graph_spec sp = {0};
    sp.n_in = 1 + tv_rng_below(rng, 4);
    sp.n_out = 1 + tv_rng_below(rng, 4);
    sp.n_neurons = sp.n_in + sp.n_out + tv_rng_below(rng, 12);
    sp.n_conns = 1 + tv_rng_below(rng, (uint32_t)(4 * sp.n_neurons));
    sp.n_levels = 1 + tv_rng_below(rng, 4);
    sp.rec_rate = tv_rng_uniform(rng) * 0.4;
    sp.weight_sd = 0.8;
    sp.hidden_act = acts[0];
    sp.out_act = acts[0];
    assert_int_equal(genome_build_graph(g, &sp, rng, &(struct tv_error){0}), 0);
    for (size_t i = 0; i < g->n_neurons; i++)
        if (g->neurons[i].kind != GENOME_INPUT)
            g->neurons[i].act = (uint8_t)acts[tv_rng_below(rng, (uint32_t)n_acts)];
    if (tv_rng_chance(rng, 0.5)) {
        uint32_t mul = (uint32_t)tv_rng_u64(rng) | 1u, add = (uint32_t)tv_rng_u64(rng);
        for (size_t i = 0; i < g->n_neurons; i++)
            g->neurons[i].id = g->neurons[i].id * mul + add;
        for (size_t k = 0; k < g->n_conns; k++) {
            g->conns[k].from = g->conns[k].from * mul + add;
            g->conns[k].to = g->conns[k].to * mul + add;
        }
        for (size_t i = 0; i < g->n_neurons; i++)
            assert_true(g->neurons[i].id != GENOME_ID_NONE);
        assert_int_equal(genome_canonicalize(g, &(struct tv_error){0}), 0);
    }
    assert_int_equal(genome_validate(g, NULL, &(struct tv_error){0}), 0);
}

/* A batch: inputs, labels (some steps without a target) and targets. */
struct data {
    size_t steps, batch, n_in, n_out;
    float *x, *targets;
    uint32_t *labels;
};

static void data_make(struct data *d, struct tv_rng *rng, size_t steps, size_t batch, size_t n_in,
                      size_t n_out)
{
    d->steps = steps;
    d->batch = batch;
    d->n_in = n_in;
    d->n_out = n_out;
    d->x = malloc(steps * batch * n_in * sizeof *d->x);
    d->targets = malloc(steps * batch * n_out * sizeof *d->targets);
    d->labels = malloc(steps * batch * sizeof *d->labels);
    assert_non_null(d->x);
    assert_non_null(d->targets);
    assert_non_null(d->labels);
    for (size_t q = 0; q < steps * batch * n_in; q++)
        d->x[q] = (float)(2 * tv_rng_uniform(rng) - 1);
    for (size_t q = 0; q < steps * batch * n_out; q++)
        d->targets[q] = (float)(2 * tv_rng_uniform(rng) - 1);
    for (size_t q = 0; q < steps * batch; q++)
        d->labels[q] = tv_rng_chance(rng, 0.2) ? UINT32_MAX : tv_rng_below(rng, (uint32_t)n_out);
}

/* Data of steps x batch samples for the inputs and outputs of g. */
static void data_for(struct data *d, struct tv_rng *rng, const struct genome *g, size_t steps,
                     size_t batch)
{
    data_make(d, rng, steps, batch, genome_count_kind(g, GENOME_INPUT),
              genome_count_kind(g, GENOME_OUTPUT));
}

static void data_free(struct data *d)
{
    TV_FREE_ALL(d->x, d->targets, d->labels);
}

/* |a - b| <= tol (|b| + scale) */
static int near(double a, double b, double tol, double scale)
{
    return fabs(a - b) <= tol * (fabs(b) + scale);
}

/* Compares the trainer's gradients (its last grad) with the reference's on
 * genome g; returns the connections compared. */
static size_t compare_with_reference(struct nn_trainer *t, const struct genome *g, int loss,
                                     const struct data *d, size_t bptt, double fast_loss,
                                     const char *what)
{
    double *grad = malloc((g->n_conns + 1) * sizeof *grad);
    double *bgrad = malloc(g->n_neurons * sizeof *bgrad);
    double ref_loss = 0;
    struct tv_error err = {0};
    assert_ok(nn_reference_grad(g, loss, d->x, d->labels, d->targets, d->steps, d->batch, bptt,
                                &ref_loss, grad, bgrad, &err),
              &err);
    /* the float path's error is absolute: a saturated tanh or sigmoid has a
     * derivative 1 - y^2 or y (1 - y) from a value y rounded to float */
    double scale = 1e-2;
    for (size_t k = 0; k < g->n_conns; k++)
        scale = fmax(scale, fabs(grad[k]));
    for (size_t i = 0; i < g->n_neurons; i++)
        scale = fmax(scale, fabs(bgrad[i]));
    if (!near(fast_loss, ref_loss, 1e-5, 1e-3))
        fail_msg("%s: loss %.9g, reference %.9g", what, fast_loss, ref_loss);
    struct nn_train_view v;
    nn_trainer_view(t, &v);
    tu_expect_view_of(&v, g);
    for (size_t k = 0; k < v.n_conns; k++) {
        ptrdiff_t c = genome_find_conn(g, v.from[k], v.to[k]);
        if (!near(v.grad[k], grad[c], 2e-4, scale))
            fail_msg("%s: connection %u -> %u: gradient %.9g, reference %.9g (scale %g)", what,
                     v.from[k], v.to[k], (double)v.grad[k], grad[c], scale);
    }
    for (size_t j = 0; j < v.n_neurons; j++) {
        ptrdiff_t i = genome_find_neuron(g, v.id[j]);
        assert_true(i >= 0);
        if (g->neurons[i].kind == GENOME_INPUT)
            continue;
        if (!near(v.bias_grad[j], bgrad[i], 2e-4, scale))
            fail_msg("%s: neuron %u: bias gradient %.9g, reference %.9g", what, v.id[j],
                     (double)v.bias_grad[j], bgrad[i]);
    }
    TV_FREE_ALL(grad, bgrad);
    return v.n_conns;
}

static struct nn_trainer *trainer(const struct genome *g, int loss, size_t bptt)
{
    struct nn_train_opts o;
    nn_train_opts_default(&o);
    o.loss = loss;
    o.bptt = bptt;
    return tu_trainer(g, &o);
}

static double grad_of(struct nn_trainer *t, const struct data *d)
{
    double loss = 0;
    struct tv_error err = {0};
    assert_ok(nn_trainer_grad(t, d->x, d->labels, d->targets, d->steps, d->batch, &loss, &err),
              &err);
    return loss;
}

/* ---- gradients ------------------------------------------------------------- */

static void test_nn_trainer_grad_matches_reference_on_random_networks(void **state)
{
    struct genome *g = *state;
    static const size_t batches[] = {1, 3, 16, 64, 70};
    struct tv_rng rng = tu_rng(16, 1, 1);
    size_t compared = 0, nets = 0;
    for (int it = 0; it < 3000; it++) {
        random_net(g, &rng, all_acts, N_ALL_ACTS);
        int loss = it % 2 ? NN_LOSS_MSE : NN_LOSS_XENT;
        size_t steps = 1 + tv_rng_below(&rng, 4);
        size_t batch = batches[tv_rng_below(&rng, 5)];
        size_t bptt = tv_rng_below(&rng, (uint32_t)steps + 1);
        struct data d;
        data_for(&d, &rng, g, steps, batch);
        struct nn_trainer *t = trainer(g, loss, bptt);
        char what[96];
        snprintf(what, sizeof what, "net %d (steps %zu, batch %zu, bptt %zu, loss %d)", it, steps,
                 batch, bptt, loss);
        compared += compare_with_reference(t, g, loss, &d, bptt, grad_of(t, &d), what);
        nets++;
        nn_trainer_free(t);
        data_free(&d);
    }
    print_message("[ train    ] %zu networks, %zu connection gradients compared\n", nets, compared);
    assert_true(compared > 30000);
}

/* The layered networks of genome_build_layered (the shape nets train). */
static void test_nn_trainer_grad_matches_reference_on_layered_networks(void **state)
{
    struct genome *g = *state;
    struct tv_rng rng = tu_rng(16, 2, 1);
    for (int it = 0; it < 200; it++) {
        uint32_t sizes[4] = {1 + tv_rng_below(&rng, 8), 1 + tv_rng_below(&rng, 8),
                             1 + tv_rng_below(&rng, 8), 1 + tv_rng_below(&rng, 5)};
        struct genome_layered_spec spec = {
            sizes,           2 + tv_rng_below(&rng, 3), 0.6, 0.2, it % 2 ? 0.1 : 0.0,
            GENOME_ACT_RELU, GENOME_ACT_IDENTITY,       0.7};
        sizes[spec.n_layers - 1] = sizes[3];
        assert_ok(genome_build_layered(g, &spec, &rng, &(struct tv_error){0}), NULL);
        for (size_t i = 0; i < g->n_neurons; i++)
            g->neurons[i].bias = (float)(0.3 * tv_rng_normal(&rng));
        size_t steps = it % 2 ? 3 : 1;
        struct data d;
        data_make(&d, &rng, steps, 1 + tv_rng_below(&rng, 130), sizes[0], sizes[3]);
        if (d.batch > 128)
            d.batch = 128;
        struct nn_trainer *t = trainer(g, NN_LOSS_XENT, 0);
        compare_with_reference(t, g, NN_LOSS_XENT, &d, 0, grad_of(t, &d), "layered");
        nn_trainer_free(t);
        data_free(&d);
    }
}

/* L(w) of the reference for genome g (as it is). */
static double ref_loss(const struct genome *g, int loss, const struct data *d, size_t bptt,
                       double *grad, double *bgrad)
{
    double l = 0;
    struct tv_error err = {0};
    assert_ok(nn_reference_grad(g, loss, d->x, d->labels, d->targets, d->steps, d->batch, bptt, &l,
                                grad, bgrad, &err),
              &err);
    return l;
}

/* Central differences of *p (a weight or bias of g) in double. */
static double central(struct genome *g, float *p, int loss, const struct data *d, double *gs,
                      double *bs)
{
    float p0 = *p;
    float hi = (float)(p0 + 1e-4), lo = (float)(p0 - 1e-4);
    *p = hi;
    double lh = ref_loss(g, loss, d, 0, gs, bs);
    *p = lo;
    double ll = ref_loss(g, loss, d, 0, gs, bs);
    *p = p0;
    return (lh - ll) / ((double)hi - (double)lo);
}

static void test_nn_reference_grad_matches_finite_differences(void **state)
{
    struct genome *g = *state;
    struct tv_rng rng = tu_rng(16, 3, 1);
    size_t checked = 0;
    for (int it = 0; it < 1000; it++) {
        random_net(g, &rng, smooth_acts, sizeof smooth_acts / sizeof smooth_acts[0]);
        int loss = it % 2 ? NN_LOSS_MSE : NN_LOSS_XENT;
        struct data d;
        data_make(&d, &rng, 1 + tv_rng_below(&rng, 3), 1 + tv_rng_below(&rng, 3),
                  genome_count_kind(g, GENOME_INPUT), genome_count_kind(g, GENOME_OUTPUT));
        double *grad = malloc((g->n_conns + 1) * sizeof *grad), *gs = malloc((g->n_conns + 1) * 8);
        double *bgrad = malloc(g->n_neurons * sizeof *bgrad), *bs = malloc(g->n_neurons * 8);
        ref_loss(g, loss, &d, 0, grad, bgrad);
        for (size_t k = 0; k < g->n_conns; k++) {
            double fd = central(g, &g->conns[k].weight, loss, &d, gs, bs);
            if (!near(grad[k], fd, 1e-4, 1e-5))
                fail_msg("net %d, connection %zu: gradient %.9g, central difference %.9g", it, k,
                         grad[k], fd);
            checked++;
        }
        for (size_t i = 0; i < g->n_neurons; i++) {
            if (g->neurons[i].kind == GENOME_INPUT)
                continue;
            double fd = central(g, &g->neurons[i].bias, loss, &d, gs, bs);
            if (!near(bgrad[i], fd, 1e-4, 1e-5))
                fail_msg("net %d, neuron %zu: bias gradient %.9g, central difference %.9g", it, i,
                         bgrad[i], fd);
        }
        TV_FREE_ALL(grad, gs, bgrad, bs);
        data_free(&d);
    }
    print_message("[ train    ] %zu weight gradients against central differences\n", checked);
    assert_true(checked > 5000);
}

/* A truncated window really cuts: a recurrent chain over 3 steps gets a
 * different gradient with bptt 1 than with the whole sequence, and the
 * reference agrees on both. */
static void test_nn_trainer_grad_truncates_at_bptt(void **state)
{
    struct genome *g = *state;
    struct tv_error err = {0};
    assert_ok(genome_add_neuron(g, 0, GENOME_INPUT, GENOME_ACT_IDENTITY, 0, 0, &err), &err);
    assert_ok(genome_add_neuron(g, 1, GENOME_OUTPUT, GENOME_ACT_TANH, 0.1f, 1, &err), &err);
    assert_ok(genome_add_conn(g, 0, 1, 0.5f, &err), &err);
    assert_ok(genome_add_conn(g, 1, 1, 0.7f, &err), &err);
    struct data d;
    struct tv_rng rng = tu_rng(16, 4, 1);
    data_make(&d, &rng, 3, 2, 1, 1);
    float g_full = 0, g_cut = 0;
    for (size_t bptt = 0; bptt <= 1; bptt++) {
        struct nn_trainer *t = trainer(g, NN_LOSS_MSE, bptt);
        compare_with_reference(t, g, NN_LOSS_MSE, &d, bptt, grad_of(t, &d), "chain");
        struct nn_train_view v;
        nn_trainer_view(t, &v);
        for (size_t k = 0; k < v.n_conns; k++)
            if (v.from[k] == 1)
                *(bptt ? &g_cut : &g_full) = v.grad[k];
        nn_trainer_free(t);
    }
    assert_true(g_full != g_cut);
    data_free(&d);
}

/* Same bits: twice, every way of the transposed product, every target. */
static void test_nn_trainer_grad_is_deterministic_across_ways_and_targets(void **state)
{
    struct genome *g = *state;
    struct tv_rng rng = tu_rng(16, 5, 1);
    struct tv_error err = {0};
    for (int it = 0; it < 300; it++) {
        random_net(g, &rng, all_acts, N_ALL_ACTS);
        struct data d;
        size_t steps = 1 + tv_rng_below(&rng, 3);
        data_for(&d, &rng, g, steps, 1 + tv_rng_below(&rng, 100));
        struct nn_trainer *t = trainer(g, it % 2, it % 3 == 0 ? 1 : 0);
        double l0 = grad_of(t, &d);
        struct nn_train_view v;
        nn_trainer_view(t, &v);
        size_t m = v.n_conns, n = v.n_neurons;
        float *g0 = malloc((m + 1) * sizeof *g0), *b0 = malloc(n * sizeof *b0);
        memcpy(g0, v.grad, m * sizeof *g0);
        memcpy(b0, v.bias_grad, n * sizeof *b0);
        for (int way = 0; way < 3; way++)
            for (int target = 0; target < NN_TARGET_COUNT; target++) {
                if (nn_trainer_set_target(t, target, &err))
                    continue; /* this CPU cannot run it */
                assert_ok(nn_trainer_set_transpose(t, way, &err), &err);
                double l = grad_of(t, &d);
                nn_trainer_view(t, &v);
                assert_memory_equal(&l, &l0, sizeof l);
                assert_memory_equal(v.grad, g0, m * sizeof *g0);
                assert_memory_equal(v.bias_grad, b0, n * sizeof *b0);
            }
        TV_FREE_ALL(g0, b0);
        nn_trainer_free(t);
        data_free(&d);
    }
}

/* Forward only: the engine (nn_plan / nn_state, nn.h) on the same genome,
 * each way of reading the edges, plain and tiled, one state of the whole
 * batch and one of batch 1 per sample. A plan compiled as every command
 * compiles it (way auto, not tiled) gives the trainer's bits (NaN: any
 * NaN); the others sum in other fixed orders and agree with the trainer as
 * each agrees with the double reference (nn.h: a relative error of about
 * 1e-5, held to 1e-5 (|ref| + 1) by test_nn.c and the test above), so twice
 * that. */
static void engine_agrees(const char *what, int exact, int it, size_t s, size_t q, float tr,
                          float en)
{
    int ok;
    if (isnan(en) || isnan(tr))
        ok = isnan(en) && isnan(tr);
    else if (exact || isinf(en))
        ok = memcmp(&tr, &en, sizeof tr) == 0;
    else
        ok = near(tr, en, 2e-5, 1);
    if (!ok)
        fail_msg("net %d step %zu value %zu, %s: trainer %.9g, engine %.9g", it, s, q, what,
                 (double)tr, (double)en);
}

/* The cancelling network of testutil.h (identity, and relu whose layer the
 * engine scatters), its row of ones at the first, middle and last position
 * of batches 1, 3, 64 and 128 of random rows, 3 steps: the trainer's outputs
 * are the engine's sums (dot1's order: 1, 2, 1, then 1, 2, 2). */
static void test_nn_trainer_predict_cancelling_sums_at_every_batch(void **state)
{
    struct genome *g = *state;
    static const float want[3][3] = {{1, 2, 1}, {1, 2, 2}, {1, 2, 2}};
    static const size_t batches[4] = {1, 3, 64, 128};
    struct tv_rng rng = tu_rng(28, 5, 1);
    struct tv_error err = {0};
    enum { NI = 5, NO = 3, S = 3, BMAX = 128 };
    float *x = malloc(S * BMAX * NI * sizeof *x), *out = malloc(S * BMAX * NO * sizeof *out);
    assert_true(x && out);
    for (int v = 0; v < 2; v++) {
        tu_cancel_genome(g, v ? GENOME_ACT_RELU : GENOME_ACT_IDENTITY);
        struct nn_trainer *t = trainer(g, NN_LOSS_MSE, 0);
        for (size_t bi = 0; bi < 4; bi++) {
            size_t B = batches[bi], at[3] = {0, B / 2, B - 1};
            for (int qi = 0; qi < 3; qi++) {
                for (size_t i = 0; i < S * B * NI; i++)
                    x[i] = (float)tv_rng_normal(&rng) * 1e8f;
                for (size_t st = 0; st < S; st++)
                    for (size_t i = 0; i < NI; i++)
                        x[(st * B + at[qi]) * NI + i] = 1.0f;
                assert_ok(nn_trainer_predict(t, x, S, B, out, &err), &err);
                for (size_t st = 0; st < S; st++)
                    for (size_t k = 0; k < NO; k++)
                        if (out[(st * B + at[qi]) * NO + k] != want[st][k])
                            fail_msg("act %d batch %zu row %zu step %zu output %zu: %.9g, not %g",
                                     v, B, at[qi], st, k, (double)out[(st * B + at[qi]) * NO + k],
                                     (double)want[st][k]);
            }
        }
        nn_trainer_free(t);
    }
    TV_FREE_ALL(x, out);
}

static void test_nn_trainer_predict_matches_engine(void **state)
{
    struct genome *g = *state;
    struct tv_rng rng = tu_rng(16, 6, 1);
    struct tv_error err = {0};
    size_t compared = 0, same_bits = 0, exact_ones = 0;
    for (int it = 0; it < 300; it++) {
        random_net(g, &rng, all_acts, N_ALL_ACTS);
        size_t steps = 1 + tv_rng_below(&rng, 3), batch = 1 + tv_rng_below(&rng, 80);
        size_t ni = genome_count_kind(g, 0), no = genome_count_kind(g, 1);
        struct data d;
        data_make(&d, &rng, steps, batch, ni, no);
        struct nn_trainer *t = trainer(g, NN_LOSS_XENT, 0);
        float *out = malloc(steps * batch * no * sizeof *out), *eng = malloc(batch * no * 4);
        float *x1 = malloc(ni * sizeof *x1 + 1);
        assert_ok(nn_trainer_predict(t, d.x, steps, batch, out, &err), &err);
        /* tile_neurons 1: the smallest chunks the plan allows */
        struct nn_opts o = {it % 3, 0, NULL, 0, it % 2 ? 1 : 0, 0};
        int exact = o.way == NN_WAY_AUTO && !o.tile_neurons;
        struct nn_plan *p = NULL;
        struct nn_state *sb = NULL, *s1 = NULL;
        assert_ok(nn_plan_compile(g, &o, &p, &err), &err);
        assert_ok(nn_state_new(p, batch, &sb, &err), &err);
        assert_ok(nn_state_new(p, 1, &s1, &err), &err);
        for (size_t s = 0; s < steps; s++) {
            nn_step(sb, d.x + s * batch * ni, eng);
            for (size_t q = 0; q < batch * no; q++) {
                float tr = out[s * batch * no + q];
                engine_agrees("batch state", exact, it, s, q, tr, eng[q]);
                same_bits += memcmp(&tr, &eng[q], sizeof tr) == 0;
                exact_ones += (size_t)exact;
                compared++;
            }
        }
        for (size_t b = 0; b < batch; b++) {
            nn_state_reset(s1);
            for (size_t s = 0; s < steps; s++) {
                memcpy(x1, d.x + (s * batch + b) * ni, ni * sizeof *x1);
                nn_step(s1, x1, eng);
                for (size_t k = 0; k < no; k++)
                    engine_agrees("batch-1 state", exact, it, s, (b * no + k),
                                  out[(s * batch + b) * no + k], eng[k]);
            }
        }
        nn_state_free(sb);
        nn_state_free(s1);
        nn_plan_free(p);
        TV_FREE_ALL(out, eng, x1);
        nn_trainer_free(t);
        data_free(&d);
    }
    print_message("[ train    ] %zu outputs against the engine, %zu of them the same bits (%zu "
                  "from default plans, which must be)\n",
                  compared, same_bits, exact_ones);
    assert_true(compared > 20000 && exact_ones > 2000);
}

/* The view's values and deltas: with one step, the gradient of an existing
 * feed-forward connection is sum over the batch of delta[to] * value[from]
 * (how a policy finds the gradient of an absent one); off, they are NULL. */
static void test_nn_trainer_view_values_give_the_gradients(void **state)
{
    struct genome *g = *state;
    struct tv_rng rng = tu_rng(16, 12, 1);
    for (int it = 0; it < 100; it++) {
        random_net(g, &rng, all_acts, N_ALL_ACTS);
        struct data d;
        data_for(&d, &rng, g, 1, 1 + tv_rng_below(&rng, 100));
        struct nn_trainer *t = trainer(g, it % 2, 0);
        grad_of(t, &d);
        struct nn_train_view v;
        nn_trainer_view(t, &v);
        assert_int_equal(v.batch, d.batch);
        size_t *row = malloc(v.n_neurons * sizeof *row);
        uint32_t *id = malloc(v.n_neurons * sizeof *id);
        memcpy(id, v.id, v.n_neurons * sizeof *id);
        for (size_t k = 0; k < v.n_conns; k++) {
            size_t i = 0, j = 0;
            while (id[i] != v.from[k])
                i++;
            while (id[j] != v.to[k])
                j++;
            if (v.layer[i] >= v.layer[j])
                continue; /* recurrent: reads the step before */
            double sum = 0, mag = 0;
            for (size_t b = 0; b < d.batch; b++) {
                double p = (double)v.delta[j * d.batch + b] * v.value[i * d.batch + b];
                sum += p;
                mag += fabs(p);
            }
            if (!near(v.grad[k], sum, 1e-5, mag + 1e-6))
                fail_msg("net %d: %u -> %u: gradient %g, from the view %g", it, v.from[k], v.to[k],
                         (double)v.grad[k], sum);
        }
        TV_FREE_ALL(row, id);
        nn_trainer_keep_values(t, 0);
        grad_of(t, &d);
        nn_trainer_view(t, &v);
        assert_null(v.value);
        assert_null(v.delta);
        assert_int_equal(v.batch, 0);
        nn_trainer_keep_values(t, 1);
        grad_of(t, &d);
        nn_trainer_view(t, &v);
        assert_non_null(v.value);
        nn_trainer_free(t);
        data_free(&d);
    }
}

/* The largest |v| of v[0, n), at least lo. */
static double max_abs(const double *v, size_t n, double lo)
{
    for (size_t k = 0; k < n; k++)
        lo = fmax(lo, fabs(v[k]));
    return lo;
}

/* The view's values and deltas and nn_trainer_input_grad after a grad call
 * on d (trainer t of genome g) against nn_reference_last_step: the last
 * step's, whatever the number of steps. */
static void compare_last_step(struct nn_trainer *t, const struct genome *g, int loss,
                              const struct data *d, size_t bptt, const char *what)
{
    size_t n = g->n_neurons, nb = d->batch, ni = d->n_in;
    double *value = malloc(n * nb * sizeof *value), *delta = malloc(n * nb * sizeof *delta);
    double *dx = malloc(ni * nb * sizeof *dx);
    float *dxf = malloc(ni * nb * sizeof *dxf);
    assert_true(value && delta && dx && dxf);
    struct tv_error err = {0};
    assert_ok(nn_reference_last_step(g, loss, d->x, d->labels, d->targets, d->steps, nb, bptt,
                                     value, delta, dx, &err),
              &err);
    assert_ok(nn_trainer_input_grad(t, dxf, &err), &err);
    struct nn_train_view v;
    nn_trainer_view(t, &v);
    assert_int_equal(v.batch, nb);
    double scale = max_abs(delta, n * nb, 1e-2), dx_scale = max_abs(dx, ni * nb, 1e-2);
    for (size_t j = 0; j < v.n_neurons; j++) {
        ptrdiff_t i = genome_find_neuron(g, v.id[j]);
        assert_true(i >= 0);
        size_t k = 0; /* i is the k-th input of g */
        for (ptrdiff_t q = 0; q < i; q++)
            k += g->neurons[q].kind == GENOME_INPUT;
        for (size_t b = 0; b < nb; b++) {
            double rv = value[(size_t)i * nb + b], rd = delta[(size_t)i * nb + b];
            float fv = v.value[j * nb + b], fd = v.delta[j * nb + b];
            if (!near(fv, rv, 2e-5, 1))
                fail_msg("%s: neuron %u, sample %zu: value %.9g, reference %.9g", what, v.id[j], b,
                         (double)fv, rv);
            if (!near(fd, rd, 2e-4, scale))
                fail_msg("%s: neuron %u, sample %zu: delta %.9g, reference %.9g (scale %g)", what,
                         v.id[j], b, (double)fd, rd, scale);
            if (fd != 0 && g->neurons[i].kind == GENOME_INPUT)
                fail_msg("%s: input %u has delta %g", what, v.id[j], (double)fd);
            if (j < ni && !near(dxf[j * nb + b], dx[k * nb + b], 2e-4, dx_scale))
                fail_msg("%s: input %u, sample %zu: input gradient %.9g, reference %.9g", what,
                         v.id[j], b, (double)dxf[j * nb + b], dx[k * nb + b]);
        }
    }
    TV_FREE_ALL(value, delta, dx, dxf);
}

/* 1 to 6 steps, truncated windows or not, both losses, some last steps
 * without a target: the view's values and deltas and the input gradient are
 * the last step's (the reference's), and every way of the transposed
 * product gives the same bits. */
static void test_nn_trainer_view_and_input_grad_are_the_last_steps(void **state)
{
    struct genome *g = *state;
    static const size_t batches[] = {1, 3, 16, 17, 70};
    struct tv_rng rng = tu_rng(16, 13, 1);
    struct tv_error err = {0};
    size_t untargeted = 0;
    for (int it = 0; it < 1200; it++) {
        random_net(g, &rng, all_acts, N_ALL_ACTS);
        int loss = it % 2 ? NN_LOSS_MSE : NN_LOSS_XENT;
        size_t steps = 1 + (size_t)it % 6, batch = batches[tv_rng_below(&rng, 5)];
        size_t bptt = tv_rng_below(&rng, (uint32_t)steps + 1);
        struct data d;
        data_for(&d, &rng, g, steps, batch);
        struct nn_trainer *t = trainer(g, loss, bptt);
        int none = loss == NN_LOSS_XENT && tv_rng_chance(&rng, 0.2);
        if (none) { /* the last step carries no target, after a call where it did */
            for (size_t b = 0; b < batch; b++)
                d.labels[(steps - 1) * batch + b] = 0;
            grad_of(t, &d);
            for (size_t b = 0; b < batch; b++)
                d.labels[(steps - 1) * batch + b] = UINT32_MAX;
        }
        char what[96];
        snprintf(what, sizeof what, "net %d (steps %zu, batch %zu, bptt %zu, loss %d)", it, steps,
                 batch, bptt, loss);
        grad_of(t, &d);
        compare_last_step(t, g, loss, &d, bptt, what);
        struct nn_train_view v;
        nn_trainer_view(t, &v);
        size_t n = v.n_neurons * batch;
        float *d0 = malloc(n * sizeof *d0), *x0 = malloc(d.n_in * batch * sizeof *x0);
        float *x1 = malloc(d.n_in * batch * sizeof *x1);
        memcpy(d0, v.delta, n * sizeof *d0);
        assert_ok(nn_trainer_input_grad(t, x0, &err), &err);
        for (size_t k = v.n_neurons * batch * (size_t)none; k-- > 0;)
            if (d0[k] != 0)
                fail_msg("%s: delta %zu is %g without a loss at the last step", what, k,
                         (double)d0[k]);
        untargeted += (size_t)none;
        for (int way = 0; way < 3; way++) {
            assert_ok(nn_trainer_set_transpose(t, way, &err), &err);
            grad_of(t, &d);
            nn_trainer_view(t, &v);
            assert_memory_equal(v.delta, d0, n * sizeof *d0);
            assert_ok(nn_trainer_input_grad(t, x1, &err), &err);
            assert_memory_equal(x1, x0, d.n_in * batch * sizeof *x0);
        }
        TV_FREE_ALL(d0, x0, x1);
        nn_trainer_free(t);
        data_free(&d);
    }
    assert_true(untargeted > 20);
}

/* ---- optimizers ------------------------------------------------------------ */

/* in -> out (identity), one connection w, MSE, target 0: dL/dw = 2 (w x) x. */
static void tiny(struct genome *g, float w)
{
    struct tv_error err = {0};
    genome_init(g);
    assert_ok(genome_add_neuron(g, 0, GENOME_INPUT, GENOME_ACT_IDENTITY, 0, 0, &err), &err);
    assert_ok(genome_add_neuron(g, 1, GENOME_OUTPUT, GENOME_ACT_IDENTITY, 0.25f, 1, &err), &err);
    assert_ok(genome_add_conn(g, 0, 1, w, &err), &err);
}

static void test_nn_trainer_step_applies_each_optimizer_formula(void **state)
{
    (void)state;
    struct genome g;
    tiny(&g, 0.5f);
    float x[1] = {1.5f}, target[1] = {0.0f};
    struct tv_error err = {0};
    for (int opt = NN_OPT_SGD; opt <= NN_OPT_ADAM; opt++) {
        struct nn_train_opts o;
        nn_train_opts_default(&o);
        o.loss = NN_LOSS_MSE;
        o.optimizer = opt;
        o.lr = 0.1f;
        struct nn_trainer *t = NULL;
        assert_ok(nn_trainer_new(&g, &o, &t, &err), &err);
        float w = 0.5f, b = 0.25f, mw = 0, vw = 0, mb = 0, vb = 0;
        for (uint64_t step = 1; step <= 3; step++) {
            struct nn_train_view v;
            assert_ok(nn_trainer_grad(t, x, NULL, target, 1, 1, NULL, &err), &err);
            nn_trainer_view(t, &v);
            float gw = v.grad[0], gb = v.bias_grad[1];
            /* the gradient itself: L = (w x + b)^2 */
            assert_true(fabsf(gw - 2 * (w * x[0] + b) * x[0]) <= 1e-6f);
            assert_ok(nn_trainer_step(t, x, NULL, target, 1, 1, NULL, &err), &err);
            if (opt == NN_OPT_SGD) {
                w -= o.lr * gw;
                b -= o.lr * gb;
            } else if (opt == NN_OPT_MOMENTUM) {
                mw = o.momentum * mw + gw;
                w -= o.lr * mw;
                mb = o.momentum * mb + gb;
                b -= o.lr * mb;
            } else {
                float c1 = (float)(1 - pow(0.9f, (double)step));
                float c2 = (float)(1 - pow(0.999f, (double)step));
                mw = o.beta1 * mw + (1 - o.beta1) * gw;
                vw = o.beta2 * vw + (1 - o.beta2) * (gw * gw);
                w -= o.lr * (mw / c1) / (sqrtf(vw / c2) + o.eps);
                mb = o.beta1 * mb + (1 - o.beta1) * gb;
                vb = o.beta2 * vb + (1 - o.beta2) * (gb * gb);
                b -= o.lr * (mb / c1) / (sqrtf(vb / c2) + o.eps);
            }
            nn_trainer_view(t, &v);
            assert_memory_equal(&v.w[0], &w, sizeof w);
            assert_memory_equal(&v.bias[1], &b, sizeof b);
            assert_int_equal(nn_trainer_steps(t), step);
        }
        nn_trainer_free(t);
    }
    genome_release(&g);
}

/* SGD on the softmax cross-entropy lowers the loss of a fixed batch. */
static void test_nn_trainer_step_lowers_the_loss(void **state)
{
    struct genome *g = *state;
    struct tv_rng rng = tu_rng(16, 7, 1);
    uint32_t sizes[] = {6, 12, 3};
    struct genome_layered_spec spec = {sizes, 3, 0.5, 0, 0, GENOME_ACT_RELU, GENOME_ACT_IDENTITY,
                                       0.5};
    assert_ok(genome_build_layered(g, &spec, &rng, &(struct tv_error){0}), NULL);
    struct data d;
    data_make(&d, &rng, 1, 32, 6, 3);
    for (size_t b = 0; b < 32; b++)
        d.labels[b] = (uint32_t)b % 3;
    struct nn_train_opts o;
    nn_train_opts_default(&o);
    o.optimizer = NN_OPT_ADAM;
    o.lr = 0.01f;
    struct nn_trainer *t = tu_trainer(g, &o);
    struct tv_error err = {0};
    double first = 0, last = 0;
    for (int i = 0; i < 100; i++)
        assert_ok(nn_trainer_step(t, d.x, d.labels, NULL, 1, 32, i ? &last : &first, &err), &err);
    assert_true(last < 0.8 * first);
    nn_trainer_free(t);
    data_free(&d);
}

/* ---- softmax cross-entropy and argmax (loss.c) ---------------------------------- */

/* Ties: the first; -0 and +0 are equal; a stride walks the row. */
static void test_nn_argmax_ties_take_the_first(void **state)
{
    (void)state;
    const float v[] = {1.0f, 3.0f, 2.0f, 3.0f};
    assert_int_equal(nn_argmax(v, 4, 1), 1);
    const float z[] = {-0.0f, 0.0f, -1.0f};
    assert_int_equal(nn_argmax(z, 3, 1), 0);
    const float p[] = {0.0f, -0.0f};
    assert_int_equal(nn_argmax(p, 2, 1), 0);
    const float s[] = {1.0f, 9.0f, 5.0f, 9.0f, 5.0f, 9.0f}; /* stride 2: 1, 5, 5 */
    assert_int_equal(nn_argmax(s, 3, 2), 1);
    const float one[] = {-7.0f};
    assert_int_equal(nn_argmax(one, 1, 1), 0);
}

/* NaN never wins, wherever it is; a row of NaN (or none) has no class. */
static void test_nn_argmax_skips_nan(void **state)
{
    (void)state;
    const float a[] = {NAN, 1.0f, 2.0f};
    assert_int_equal(nn_argmax(a, 3, 1), 2);
    const float b[] = {1.0f, NAN, 0.5f};
    assert_int_equal(nn_argmax(b, 3, 1), 0);
    const float c[] = {-1.0f, -2.0f, NAN};
    assert_int_equal(nn_argmax(c, 3, 1), 0);
    const float d[] = {NAN, -INFINITY, NAN};
    assert_int_equal(nn_argmax(d, 3, 1), 1);
    const float e[] = {NAN, NAN};
    assert_int_equal(nn_argmax(e, 2, 1), 2);
    assert_int_equal(nn_argmax(e, 0, 1), 0);
}

/* +inf beats everything, -inf nothing; equal infinities tie to the first. */
static void test_nn_argmax_infinities_are_ordinary(void **state)
{
    (void)state;
    const float a[] = {FLT_MAX, INFINITY, 3.0f, INFINITY};
    assert_int_equal(nn_argmax(a, 4, 1), 1);
    const float b[] = {-INFINITY, -FLT_MAX, -INFINITY};
    assert_int_equal(nn_argmax(b, 3, 1), 1);
    const float c[] = {-INFINITY, -INFINITY};
    assert_int_equal(nn_argmax(c, 2, 1), 0);
}

/* The written formula, term by term (train.h), in double. */
static double xent_formula(const float *z, size_t n, size_t label)
{
    double mx = -INFINITY, sum = 0.0;
    for (size_t k = 0; k < n; k++)
        if (!isnan(z[k]) && (double)z[k] > mx)
            mx = z[k];
    for (size_t k = 0; k < n; k++)
        sum += exp((double)z[k] - mx);
    return (mx + log(sum)) - (double)z[label];
}

/* Finite rows: the formula's exact bits, and its gradient times scale at a
 * stride; a row of one value costs 0. */
static void test_nn_softmax_xent_is_the_written_formula(void **state)
{
    (void)state;
    struct tv_rng rng;
    tv_rng_init(&rng, 51, 0, 0);
    float z[12], g[3 * 12];
    for (int trial = 0; trial < 2000; trial++) {
        size_t n = 1 + tv_rng_below(&rng, 12), label = tv_rng_below(&rng, (uint32_t)n);
        double scale = 1.0 / (1 + tv_rng_below(&rng, 200));
        for (size_t k = 0; k < n; k++)
            z[k] = (float)(tv_rng_normal(&rng) * (trial % 3 ? 3.0 : 40.0));
        double want = xent_formula(z, n, label);
        double got = nn_softmax_xent(z, n, 1, label, NULL, 0, 0.0);
        assert_memory_equal(&got, &want, sizeof got);
        got = nn_softmax_xent(z, n, 1, label, g, 3, scale);
        assert_memory_equal(&got, &want, sizeof got);
        double mx = -INFINITY, sum = 0.0;
        for (size_t k = 0; k < n; k++)
            mx = (double)z[k] > mx ? (double)z[k] : mx;
        for (size_t k = 0; k < n; k++)
            sum += exp((double)z[k] - mx);
        for (size_t k = 0; k < n; k++) {
            float gk = (float)((exp((double)z[k] - mx) / sum - (k == label ? 1.0 : 0.0)) * scale);
            assert_memory_equal(&g[3 * k], &gk, sizeof gk);
        }
    }
    const float one = 5.0f;
    assert_true(nn_softmax_xent(&one, 1, 1, 0, NULL, 0, 0.0) == 0.0);
    const float two[] = {0.0f, 0.0f};
    assert_true(fabs(nn_softmax_xent(two, 2, 1, 1, NULL, 0, 0.0) - log(2.0)) < 1e-15);
}

/* NaN or +inf anywhere, or -inf everywhere: a NaN loss and NaN gradient;
 * -inf among finite values is probability 0 (+inf at the label); -0 is 0. */
static void test_nn_softmax_xent_non_finite_values(void **state)
{
    (void)state;
    float g[3];
    const float nan_row[] = {1.0f, NAN, 2.0f};
    assert_true(isnan(nn_softmax_xent(nan_row, 3, 1, 0, g, 1, 1.0)));
    assert_true(isnan(g[0]) && isnan(g[1]) && isnan(g[2]));
    assert_true(isnan(nn_softmax_xent(nan_row, 3, 1, 1, NULL, 0, 0.0)));
    const float pinf[] = {INFINITY, 1.0f, 2.0f};
    assert_true(isnan(nn_softmax_xent(pinf, 3, 1, 0, NULL, 0, 0.0)));
    assert_true(isnan(nn_softmax_xent(pinf, 3, 1, 2, g, 1, 1.0)));
    assert_true(isnan(g[2]));
    const float ninf[] = {-INFINITY, -INFINITY};
    assert_true(isnan(nn_softmax_xent(ninf, 2, 1, 0, NULL, 0, 0.0)));
    const float some[] = {-INFINITY, 1.0f, 2.0f}, finite[] = {1.0f, 2.0f};
    double a = nn_softmax_xent(some, 3, 1, 2, g, 1, 1.0);
    double b = nn_softmax_xent(finite, 2, 1, 1, NULL, 0, 0.0);
    assert_memory_equal(&a, &b, sizeof a);
    assert_true(g[0] == 0.0f && isfinite(g[1]) && isfinite(g[2]));
    double at = nn_softmax_xent(some, 3, 1, 0, g, 1, 1.0);
    assert_true(isinf(at) && at > 0);
    assert_true(g[0] == -1.0f);
    const float mz[] = {-0.0f, 1.0f}, pz[] = {0.0f, 1.0f};
    double m = nn_softmax_xent(mz, 2, 1, 0, NULL, 0, 0.0);
    double p = nn_softmax_xent(pz, 2, 1, 0, NULL, 0, 0.0);
    assert_memory_equal(&m, &p, sizeof m);
}

/* ---- removal and addition ---------------------------------------------------- */

/* The trainer, the genome it writes and the reference agree. */
static void check_consistent(struct nn_trainer *t, struct tv_rng *rng, const char *what)
{
    struct genome w;
    genome_init(&w);
    struct tv_error err = {0};
    assert_ok(nn_trainer_write_genome(t, &w, &err), &err);
    assert_ok(genome_validate(&w, NULL, &err), &err);
    assert_int_equal(w.n_conns, nn_trainer_n_conns(t));
    struct data d;
    data_make(&d, rng, 2, 5, nn_trainer_n_inputs(t), nn_trainer_n_outputs(t));
    compare_with_reference(t, &w, NN_LOSS_XENT, &d, 0, grad_of(t, &d), what);
    /* a new trainer of the written genome computes the same */
    struct nn_trainer *t2 = trainer(&w, NN_LOSS_XENT, 0);
    double l1 = grad_of(t, &d), l2 = grad_of(t2, &d);
    assert_true(near(l1, l2, 1e-6, 1e-6));
    nn_trainer_free(t2);
    data_free(&d);
    genome_release(&w);
}

/* key (from, to) -> the optimizer's first moment, via the gradients: after
 * a momentum step the state m equals the gradient; removal and addition
 * must carry it. Read back through a second step with lr 0: w unchanged,
 * and m' = momentum m + g. */
static void test_nn_trainer_remove_and_add_keep_everything_consistent(void **state)
{
    struct genome *g = *state;
    struct tv_rng rng = tu_rng(16, 8, 1);
    struct tv_error err = {0};
    for (int it = 0; it < 200; it++) {
        random_net(g, &rng, all_acts, N_ALL_ACTS);
        struct nn_trainer *t = trainer(g, NN_LOSS_XENT, 0);
        struct data d;
        data_for(&d, &rng, g, 2, 4);
        assert_ok(nn_trainer_step(t, d.x, d.labels, NULL, 2, 4, NULL, &err), &err);
        /* remove a random third */
        struct nn_train_view v;
        nn_trainer_view(t, &v);
        size_t m = v.n_conns, kept = 0;
        uint8_t *rm = calloc(m + 1, 1);
        struct genome_conn *gone = malloc((m + 1) * sizeof *gone);
        size_t n_gone = 0;
        for (size_t k = 0; k < m; k++) {
            rm[k] = tv_rng_chance(&rng, 0.33);
            if (rm[k])
                gone[n_gone++] = (struct genome_conn){v.from[k], v.to[k], v.w[k]};
            else
                kept++;
        }
        /* the kept connections' weights and gradients by key, before */
        struct genome before;
        genome_init(&before);
        assert_ok(nn_trainer_write_genome(t, &before, &err), &err);
        float *gk = malloc((m + 1) * sizeof *gk);
        for (size_t k = 0; k < m; k++)
            gk[genome_find_conn(&before, v.from[k], v.to[k])] = v.grad[k];
        assert_ok(nn_trainer_remove(t, rm, &err), &err);
        assert_int_equal(nn_trainer_n_conns(t), kept);
        nn_trainer_view(t, &v);
        for (size_t k = 0; k < v.n_conns; k++) {
            ptrdiff_t c = genome_find_conn(&before, v.from[k], v.to[k]);
            assert_true(c >= 0);
            assert_true(v.w[k] == before.conns[c].weight);
            assert_true(v.grad[k] == gk[c]);
        }
        check_consistent(t, &rng, "after removal");
        /* add them back (new weights), then one of them again: refused */
        for (size_t q = 0; q < n_gone; q++)
            gone[q].weight = 0.25f;
        assert_ok(nn_trainer_add(t, gone, n_gone, &err), &err);
        assert_int_equal(nn_trainer_n_conns(t), m);
        check_consistent(t, &rng, "after addition");
        if (n_gone) {
            assert_error(nn_trainer_add(t, gone, 1, &err), &err, TV_EINVAL, "exists already");
            assert_int_equal(nn_trainer_n_conns(t), m);
        }
        genome_release(&before);
        TV_FREE_ALL(gk, rm, gone);
        data_free(&d);
        nn_trainer_free(t);
    }
}

/* The optimizer state moves with its connection: with momentum, a step of
 * lr 0 after the removal leaves the weights, and a later step of lr 1 moves
 * each by momentum * m + g, m being the state before the removal. */
static void test_nn_trainer_remove_carries_optimizer_state(void **state)
{
    struct genome *g = *state;
    struct tv_rng rng = tu_rng(16, 9, 1);
    uint32_t sizes[] = {4, 6, 3};
    struct genome_layered_spec spec = {sizes, 3, 0.7, 0, 0, GENOME_ACT_TANH, GENOME_ACT_IDENTITY,
                                       0.5};
    assert_ok(genome_build_layered(g, &spec, &rng, &(struct tv_error){0}), NULL);
    struct data d;
    data_make(&d, &rng, 1, 8, 4, 3);
    struct nn_train_opts o;
    nn_train_opts_default(&o);
    o.optimizer = NN_OPT_MOMENTUM;
    o.momentum = 0.5f;
    o.lr = 1.0f;
    struct nn_trainer *t = tu_trainer(g, &o), *u = tu_trainer(g, &o);
    struct tv_error err = {0};
    /* one step on both: m = g; then remove every other connection of t */
    assert_ok(nn_trainer_step(t, d.x, d.labels, NULL, 1, 8, NULL, &err), &err);
    assert_ok(nn_trainer_step(u, d.x, d.labels, NULL, 1, 8, NULL, &err), &err);
    struct nn_train_view v, vu;
    nn_trainer_view(t, &v);
    uint8_t *rm = calloc(v.n_conns, 1);
    for (size_t k = 0; k < v.n_conns; k += 2)
        rm[k] = 1;
    nn_trainer_view(u, &vu);
    size_t mu = vu.n_conns;
    float *m_u = malloc(mu * sizeof *m_u), *w_u = malloc(mu * sizeof *w_u);
    for (size_t k = 0; k < mu; k++) {
        m_u[k] = vu.grad[k]; /* the state after one momentum step from 0 */
        w_u[k] = vu.w[k];
    }
    assert_ok(nn_trainer_remove(t, rm, &err), &err);
    assert_ok(nn_trainer_step(t, d.x, d.labels, NULL, 1, 8, NULL, &err), &err);
    nn_trainer_view(t, &v);
    nn_trainer_view(u, &vu);
    for (size_t k = 0; k < v.n_conns; k++) {
        size_t q = 0;
        while (vu.from[q] != v.from[k] || vu.to[q] != v.to[k])
            q++;
        float want = w_u[q] - o.lr * (o.momentum * m_u[q] + v.grad[k]);
        assert_memory_equal(&v.w[k], &want, sizeof want);
    }
    TV_FREE_ALL(rm, m_u, w_u);
    nn_trainer_free(t);
    nn_trainer_free(u);
    data_free(&d);
}

/* A relu neuron with a very negative bias is dead: found, removed with its
 * connections, and everything stays consistent. */
static void test_nn_trainer_remove_neurons_drops_dead_neurons(void **state)
{
    struct genome *g = *state;
    struct tv_rng rng = tu_rng(16, 10, 1);
    struct tv_error err = {0};
    for (int it = 0; it < 100; it++) {
        uint32_t sizes[] = {3, 5, 4, 2};
        struct genome_layered_spec spec = {
            sizes, 4, 0.8, 0.3, 0.2, GENOME_ACT_RELU, GENOME_ACT_IDENTITY, 0.5};
        genome_reset(g);
        assert_ok(genome_build_layered(g, &spec, &rng, &(struct tv_error){0}), NULL);
        size_t n_dead_want = 0;
        for (size_t i = 0; i < g->n_neurons; i++)
            if (g->neurons[i].kind == GENOME_HIDDEN && tv_rng_chance(&rng, 0.3)) {
                g->neurons[i].bias = -1000.0f;
                n_dead_want++;
            }
        struct nn_trainer *t = trainer(g, NN_LOSS_XENT, 0);
        struct data d;
        data_make(&d, &rng, 2, 6, 3, 2);
        grad_of(t, &d);
        size_t n = g->n_neurons;
        uint8_t *dead = calloc(n, 1);
        nn_trainer_zero_neurons(t, dead);
        size_t n_dead = 0;
        struct nn_train_view v;
        nn_trainer_view(t, &v);
        for (size_t j = 0; j < n; j++) {
            ptrdiff_t i = genome_find_neuron(g, v.id[j]);
            if (dead[j]) {
                n_dead++;
                assert_int_equal(v.kind[j], GENOME_HIDDEN);
            }
            if (g->neurons[i].bias == -1000.0f)
                assert_true(dead[j]);
        }
        assert_true(n_dead >= n_dead_want);
        assert_ok(nn_trainer_remove_neurons(t, dead, &err), &err);
        nn_trainer_view(t, &v);
        assert_int_equal(v.n_neurons, n - n_dead);
        /* the count restarts: with no step since, every hidden neuron is dead */
        uint8_t *again = calloc(n, 1);
        nn_trainer_zero_neurons(t, again);
        for (size_t j = 0; j < v.n_neurons; j++)
            assert_int_equal(again[j], v.kind[j] == GENOME_HIDDEN);
        free(again);
        check_consistent(t, &rng, "after neuron removal");
        free(dead);
        nn_trainer_free(t);
        data_free(&d);
    }
}

/* ---- failure paths ------------------------------------------------------------- */

static void test_nn_trainer_rejects_bad_calls(void **state)
{
    (void)state;
    struct genome g;
    tiny(&g, 0.5f);
    struct tv_error err = {0};
    struct nn_train_opts o;
    nn_train_opts_default(&o);
    o.max_batch = 4;
    struct nn_trainer *t = NULL;
    assert_ok(nn_trainer_new(&g, &o, &t, &err), &err);
    float x[8] = {0};
    uint32_t labels[8] = {0};
    assert_error(nn_trainer_grad(t, x, labels, NULL, 1, 0, NULL, &err), &err, TV_EINVAL,
                 "nn_trainer_grad: batch 0 outside [1, 4]");
    assert_error(nn_trainer_step(t, x, labels, NULL, 1, 5, NULL, &err), &err, TV_EINVAL,
                 "nn_trainer_step: batch 5 outside [1, 4]");
    labels[1] = 1; /* one output: labels must be 0 */
    assert_error(nn_trainer_grad(t, x, labels, NULL, 1, 2, NULL, &err), &err, TV_EINVAL,
                 "label 1 of sample 1 at step 0 is outside [0, 1)");
    assert_error(nn_trainer_grad(t, x, NULL, NULL, 1, 2, NULL, &err), &err, TV_EINVAL,
                 "needs labels");
    assert_error(nn_trainer_grad(t, NULL, labels, NULL, 1, 2, NULL, &err), &err, TV_EINVAL,
                 "no inputs");
    assert_error(nn_trainer_grad(t, x, labels, NULL, 0, 2, NULL, &err), &err, TV_EINVAL,
                 "at least one step");
    assert_error(nn_trainer_predict(t, x, 1, 1, NULL, &err), &err, TV_EINVAL, "no output array");
    assert_error(nn_trainer_set_transpose(t, 7, &err), &err, TV_EINVAL, "unknown way 7");
    assert_error(nn_trainer_set_target(t, 9, &err), &err, TV_EINVAL, "target 9");
    assert_int_equal(nn_trainer_steps(t), 0);
    nn_trainer_free(t);

    o.loss = NN_LOSS_MSE;
    assert_ok(nn_trainer_new(&g, &o, &t, &err), &err);
    assert_error(nn_trainer_grad(t, x, labels, NULL, 1, 2, NULL, &err), &err, TV_EINVAL,
                 "needs targets");
    /* additions: a missing end, an input end, a duplicate, a bad weight */
    struct genome_conn c[2] = {{0, 9, 1.0f}, {0, 1, 1.0f}};
    assert_error(nn_trainer_add(t, c, 1, &err), &err, TV_EINVAL,
                 "connection 0 (0 -> 9): no neuron 9");
    c[0] = (struct genome_conn){1, 0, 1.0f};
    assert_error(nn_trainer_add(t, c, 1, &err), &err, TV_EINVAL, "ends in an input");
    assert_error(nn_trainer_add(t, c + 1, 1, &err), &err, TV_EINVAL,
                 "connection 0 (0 -> 1): exists already");
    struct genome_conn twice[2] = {{1, 1, 1.0f}, {1, 1, 2.0f}};
    assert_error(nn_trainer_add(t, twice, 2, &err), &err, TV_EINVAL,
                 "connection 1 (1 -> 1): exists already");
    twice[0].weight = NAN;
    assert_error(nn_trainer_add(t, twice, 1, &err), &err, TV_EINVAL, "weight is not finite");
    assert_int_equal(nn_trainer_n_conns(t), 1);
    assert_error(nn_trainer_remove(t, NULL, &err), &err, TV_EINVAL, "remove is NULL");
    nn_trainer_free(t);

    o.optimizer = 5;
    assert_error(nn_trainer_new(&g, &o, &t, &err), &err, TV_EINVAL, "unknown optimizer 5");
    assert_null(t);
    nn_train_opts_default(&o);
    o.max_batch = 0;
    assert_error(nn_trainer_new(&g, &o, &t, &err), &err, TV_EINVAL, "max_batch 0");
    nn_train_opts_default(&o);
    /* a neuron the trainer does not run */
    genome_neuron_set_model(&g.neurons[1], GENOME_MODEL_LIF);
    assert_error(nn_trainer_new(&g, &o, &t, &err), &err, TV_EINVAL,
                 "neuron 1: model lif is not run by the trainer (rate neurons only)");
    assert_null(t);
    double gr[1], bg[2];
    float xr[1] = {0};
    uint32_t lr[1] = {0};
    assert_error(nn_reference_grad(&g, NN_LOSS_XENT, xr, lr, NULL, 1, 1, 0, NULL, gr, bg, &err),
                 &err, TV_EINVAL, "model lif");
    /* a spiking neuron, which the engine runs and the trainer does not */
    genome_neuron_set_model(&g.neurons[1], GENOME_MODEL_CUBA);
    assert_error(nn_trainer_new(&g, &o, &t, &err), &err, TV_EINVAL,
                 "neuron 1: model cuba is not run by the trainer (rate neurons only)");
    assert_null(t);
    genome_neuron_set_model(&g.neurons[1], GENOME_MODEL_RATE);
    g.conns[0].weight = INFINITY;
    assert_error(nn_trainer_new(&g, &o, &t, &err), &err, TV_EINVAL, "not finite");
    genome_release(&g);
}

/* Every allocation of new, grad (longer sequences), add and write_genome
 * may fail: TV_ENOMEM saying so, nothing leaked, the trainer still usable. */
static void test_nn_trainer_survives_allocation_failures(void **state)
{
    TU_PAIR_GENOMES(g, w);
    struct tv_rng rng = tu_rng(16, 11, 1);
    random_net(g, &rng, all_acts, N_ALL_ACTS);
    struct data d;
    data_for(&d, &rng, g, 3, 4);
    struct nn_train_opts o;
    nn_train_opts_default(&o);
    failalloc_track(1);
    for (int phase = 0; phase < 5; phase++) {
        unsigned long k, points = 0;
        for (k = 1;; k++) {
            struct tv_error err = {0};
            struct nn_trainer *t = NULL;
            int rc = 0;
            if (phase > 0)
                assert_ok(nn_trainer_new(g, &o, &t, &err), &err);
            if (phase == 4)
                assert_ok(nn_trainer_set_transpose(t, NN_TRANSPOSE_BUILD, &err), &err);
            size_t base = failalloc_live();
            struct genome_conn c = {0, 0, 0.5f}; /* the first absent connection */
            for (size_t a = 0; a < g->n_neurons && !c.to; a++)
                for (size_t b = 0; b < g->n_neurons && !c.to; b++)
                    if (g->neurons[b].kind != GENOME_INPUT &&
                        genome_find_conn(g, g->neurons[a].id, g->neurons[b].id) < 0)
                        c = (struct genome_conn){g->neurons[a].id, g->neurons[b].id, 0.5f};
            failalloc_arm(k);
            if (phase == 0)
                rc = nn_trainer_new(g, &o, &t, &err);
            else if (phase == 1)
                rc = nn_trainer_grad(t, d.x, d.labels, NULL, 3, 4, NULL, &err);
            else if (phase == 2)
                rc = nn_trainer_add(t, &c, 1, &err);
            else if (phase == 3)
                rc = nn_trainer_write_genome(t, w, &err);
            else
                rc = nn_trainer_grad(t, d.x, d.labels, NULL, 1, 4, NULL, &err);
            failalloc_disarm();
            int fired = failalloc_fired();
            if (!fired) {
                assert_ok(rc, &err);
                nn_trainer_free(t);
                break;
            }
            points++;
            assert_error(rc, &err, TV_ENOMEM, "memory");
            if (phase == 0)
                assert_null(t);
            else
                assert_int_equal(failalloc_live(), base);
            if (t) /* still usable */
                assert_ok(nn_trainer_grad(t, d.x, d.labels, NULL, 3, 4, NULL, &err), &err);
            nn_trainer_free(t);
        }
        print_message("[ alloc    ] trainer phase %d: %lu allocation points\n", phase, points);
        assert_true(points > 0);
    }
    failalloc_track(0);
    data_free(&d);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        TU_GENOME_TEST(test_nn_trainer_grad_matches_reference_on_random_networks),
        TU_GENOME_TEST(test_nn_trainer_grad_matches_reference_on_layered_networks),
        TU_GENOME_TEST(test_nn_reference_grad_matches_finite_differences),
        TU_GENOME_TEST(test_nn_trainer_grad_truncates_at_bptt),
        TU_GENOME_TEST(test_nn_trainer_grad_is_deterministic_across_ways_and_targets),
        TU_GENOME_TEST(test_nn_trainer_predict_cancelling_sums_at_every_batch),
        TU_GENOME_TEST(test_nn_trainer_predict_matches_engine),
        TU_GENOME_TEST(test_nn_trainer_view_values_give_the_gradients),
        TU_GENOME_TEST(test_nn_trainer_view_and_input_grad_are_the_last_steps),
        cmocka_unit_test(test_nn_trainer_step_applies_each_optimizer_formula),
        TU_GENOME_TEST(test_nn_trainer_step_lowers_the_loss),
        cmocka_unit_test(test_nn_argmax_ties_take_the_first),
        cmocka_unit_test(test_nn_argmax_skips_nan),
        cmocka_unit_test(test_nn_argmax_infinities_are_ordinary),
        cmocka_unit_test(test_nn_softmax_xent_is_the_written_formula),
        cmocka_unit_test(test_nn_softmax_xent_non_finite_values),
        TU_GENOME_TEST(test_nn_trainer_remove_and_add_keep_everything_consistent),
        TU_GENOME_TEST(test_nn_trainer_remove_carries_optimizer_state),
        TU_GENOME_TEST(test_nn_trainer_remove_neurons_drops_dead_neurons),
        cmocka_unit_test(test_nn_trainer_rejects_bad_calls),
        TU_PAIR_TEST(test_nn_trainer_survives_allocation_failures),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
