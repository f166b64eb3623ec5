/* test_quant.c -- nn/deploy/quant.h: calibration, scales, tables, the NET.q format,
 * the int8 engine's paths (batch 1, batched, portable, VNNI) against a plain
 * reference written here from the header's formulas, and the error paths. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "failalloc.h"
#include "nn.h"
#include "quant.h"
#include "testutil.h"
#include "nnutil.h"

/* 128-bit integers: exact products for the reference (a GCC extension) */
__extension__ typedef __int128 i128;

/* ---- helpers ----------------------------------------------------------------- */

/* Random inputs in [-2, 2], with exact zeros now and then. */
static void random_rows(struct tv_rng *rng, float *rows, size_t n)
{
    for (size_t i = 0; i < n; i++)
        rows[i] = tv_rng_chance(rng, 0.1) ? 0.0f : (float)(4.0 * tv_rng_uniform(rng) - 2.0);
}

/* Calibrates g on n_rows random rows (one sequence) and quantizes it. */
static struct nn_qnet *quantize(const struct genome *g, double pct, size_t n_rows,
                                struct tv_rng *rng)
{
    struct tv_error err = {0};
    struct nn_quant_opts o = {.percentile = pct};
    struct nn_calib *c;
    assert_ok(nn_calib_new(g, &o, &c, &err), &err);
    size_t n_in = nn_plan_n_inputs(nn_calib_plan(c));
    float *rows = malloc(n_rows * n_in * sizeof *rows);
    assert_non_null(rows);
    random_rows(rng, rows, n_rows * n_in);
    assert_ok(nn_calib_run(c, rows, n_rows, 7, &err), &err);
    struct nn_qnet *q;
    assert_ok(nn_quantize(c, &q, &err), &err);
    free(rows);
    nn_calib_free(c);
    return q;
}

/* The reference: one step of q for one sample, written from quant.h's
 * formulas with int8 values q (not the engine's u = q + 128 form), in
 * 64-bit sums. qv: [2][n] this step's and last step's values; t: the step
 * index since the reset. out: [n_out] int8. */
static void ref_step(const struct nn_qnet *q, int8_t *cur, int8_t *prev, size_t t, const float *in,
                     int8_t *out)
{
    for (size_t j = 0; j < q->n; j++) /* last step's values (value 0 after a reset) */
        prev[j] = t ? cur[j] : (int8_t)q->layers[q->layer_of[j]].zp;
    const struct nn_qlayer *L0 = &q->layers[0];
    for (size_t k = 0; k < q->n_in; k++) {
        float x = in[k] / L0->scale;
        x = x > 1000.0f ? 1000.0f : x < -1000.0f ? -1000.0f : x;
        long r = (long)x; /* half away from zero: x - r once (ties at +-0.5 occur) */
        float fr = x - (float)r;
        if (fr >= 0.5f)
            r++;
        else if (fr <= -0.5f)
            r--;
        r += L0->zp;
        cur[k] = (int8_t)(r < -128 ? -128 : r > 127 ? 127 : r);
    }
    for (size_t j = q->n_in; j < q->n; j++) {
        const struct nn_qneuron *u = &q->neuron[j];
        const struct nn_qlayer *L = &q->layers[q->layer_of[j]];
        int64_t acc = u->bias;
        for (uint32_t k = q->row[j]; k < q->row[j + 1]; k++) {
            uint32_t s = q->edges[k].src;
            int8_t v = k < q->rec[j] ? cur[s] : prev[s];
            acc += (int64_t)q->edges[k].w * (v - q->layers[q->layer_of[s]].zp);
        }
        assert_true(acc >= INT32_MIN && acc <= INT32_MAX);
        /* floor((acc * mult + 2^(shift-1)) / 2^shift) in exact rational arithmetic */
        i128 prod = (i128)acc * u->mult + (u->shift ? (i128)1 << (u->shift - 1) : 0);
        i128 den = (i128)1 << u->shift;
        i128 fl = prod / den - ((prod % den != 0) && (prod < 0));
        i128 p = fl + L->pzp;
        p = p < -128 ? -128 : p > 127 ? 127 : p;
        cur[j] = q->tables[(size_t)u->table * 256 + (size_t)(p + 128)];
    }
    for (size_t k = 0; k < q->n_out; k++)
        out[k] = cur[q->out_map[k]];
}

/* A random valid genome the engine runs (rate neurons), sometimes a NEAT
 * graph, sometimes a layered one with skip and recurrent edges. */
static void random_net(struct genome *g, struct tv_rng *rng)
{
    struct tv_error err = {0};
    if (tv_rng_chance(rng, 0.5)) {
        tu_random_genome(g, rng, 6);
        return;
    }
    struct genome_graph_spec sp = tu_random_graph_spec(rng, 5, 4, 60, 8, 0.4);
    sp.weight_sd = 1.0;
    sp.hidden_act = (int)tv_rng_below(rng, GENOME_ACT_COUNT);
    sp.out_act = (int)tv_rng_below(rng, GENOME_ACT_COUNT);
    assert_ok(genome_build_graph(g, &sp, rng, &err), &err);
}

/* ---- calibration and scales -------------------------------------------------- */

/* in0, in1 -> out: out = act(in0 - in1 / 4 + 0.5). */
static void build_diff(struct genome *g, int act)
{
    struct tv_error err = {0};
    genome_reset(g);
    assert_ok(genome_add_neuron(g, 0, GENOME_INPUT, GENOME_ACT_IDENTITY, 0, 0, &err), &err);
    assert_ok(genome_add_neuron(g, 1, GENOME_INPUT, GENOME_ACT_IDENTITY, 0, 0, &err), &err);
    assert_ok(genome_add_neuron(g, 2, GENOME_OUTPUT, act, 0.5f, 1, &err), &err);
    assert_ok(genome_add_conn(g, 0, 2, 1.0f, &err), &err);
    assert_ok(genome_add_conn(g, 1, 2, -0.25f, &err), &err);
}

/* A new calibration (default options) of the build_diff network of act. */
static struct nn_calib *diff_calib(struct genome *g, int act)
{
    struct tv_error err = {0};
    build_diff(g, act);
    struct nn_calib *c;
    assert_ok(nn_calib_new(g, NULL, &c, &err), &err);
    return c;
}

static void test_nn_quantize_scales_cover_the_calibrated_ranges(void **state)
{
    struct genome *g = *state;
    struct tv_error err = {0};
    struct nn_calib *c = diff_calib(g, GENOME_ACT_IDENTITY);
    /* inputs in [-1, 3]: the input layer's range; out = x0 - x1/2 + 0.5 */
    const float rows[] = {-1, 3, 3, -1, 0.5f, 0.5f};
    assert_ok(nn_calib_run(c, rows, 3, 0, &err), &err);
    assert_int_equal(nn_calib_n_observed(c), 9);
    struct nn_qnet *q;
    assert_ok(nn_quantize(c, &q, &err), &err);
    assert_int_equal(q->n_layers, 2);
    assert_float_equal(q->layers[0].scale, 4.0 / 255, 1e-7);
    assert_int_equal(q->layers[0].zp, -128 + 64); /* -1 / (4/255) = -63.75 -> zp -64.25 */
    /* outputs -1.25 (x=-1,3) .. 3.75 (x=3,-1): the same range before and after
     * the activation */
    assert_float_equal(q->layers[1].scale, 5.0 / 255, 1e-6);
    assert_float_equal(q->layers[1].pscale, 5.0 / 255, 1e-6);
    /* one accumulator scale for the neuron: its largest |w| s_src is 127 */
    double A = q->neuron[2].acc_scale;
    assert_float_equal(A, 1.0 * (4.0 / 255) / 127, 1e-9);
    assert_int_equal(q->edges[q->row[2]].w, 127);
    assert_int_equal(q->edges[q->row[2] + 1].w, -32); /* -0.25 * 127 */
    assert_int_equal(q->neuron[2].bias, lround(0.5 / A));
    nn_qnet_free(q);
    nn_calib_free(c);
}

static void test_nn_quantize_percentile_ignores_outliers(void **state)
{
    struct genome *g = *state;
    struct tv_error err = {0};
    build_diff(g, GENOME_ACT_IDENTITY);
    float rows[2 * 1000];
    for (size_t i = 0; i < 1000; i++) {
        rows[2 * i] = (float)(i % 10) / 10.0f; /* [0, 0.9] */
        rows[2 * i + 1] = 0.0f;
    }
    rows[0] = 100.0f; /* one outlier */
    double scale[2];
    for (int k = 0; k < 2; k++) {
        struct nn_quant_opts o = {.percentile = k ? 99.0 : 100.0};
        struct nn_calib *c;
        struct nn_qnet *q;
        assert_ok(nn_calib_new(g, &o, &c, &err), &err);
        assert_ok(nn_calib_run(c, rows, 1000, 0, &err), &err);
        assert_ok(nn_quantize(c, &q, &err), &err);
        scale[k] = q->layers[0].scale;
        nn_qnet_free(q);
        nn_calib_free(c);
    }
    assert_float_equal(scale[0], 100.0 / 255, 1e-6);
    assert_float_equal(scale[1], 0.9 / 255, 1e-6);
}

/* Every table entry is quantize(act(P (p - pz))), for every activation. */
static void test_nn_quantize_tables_fold_every_activation(void **state)
{
    (void)state;
    struct tv_rng rng = tu_rng(5, 0, 0);
    for (int act = 0; act < GENOME_ACT_COUNT; act++) {
        struct genome g;
        genome_init(&g);
        build_diff(&g, act);
        struct nn_qnet *q = quantize(&g, 100, 64, &rng);
        assert_int_equal(q->n_tables, 1);
        const struct nn_qlayer *L = &q->layers[1];
        for (int p = -128; p < 128; p++) {
            double y = nn_act_apply(act, (float)((double)L->pscale * (p - L->pzp)));
            long want = lround(y / L->scale) + L->zp;
            want = want < -128 ? -128 : want > 127 ? 127 : want;
            assert_int_equal(q->tables[p + 128], want);
        }
        nn_qnet_free(q);
        genome_release(&g);
    }
}

/* Tables are per (pre-activation scale, layer, activation): neurons of one
 * layer with one activation share theirs, and no two stored tables are
 * equal. */
static void expect_all_paths(const struct nn_qnet *q, struct tv_rng *rng);

static void test_nn_quantize_stores_identical_tables_once(void **state)
{
    struct genome *g = *state;
    struct tv_error err = {0};
    assert_ok(genome_add_neuron(g, 0, GENOME_INPUT, GENOME_ACT_IDENTITY, 0, 0, &err), &err);
    for (uint32_t o = 1; o <= 4; o++)
        assert_ok(genome_add_neuron(g, o, GENOME_OUTPUT, o <= 3 ? GENOME_ACT_TANH : GENOME_ACT_STEP,
                                    0, 1, &err),
                  &err);
    for (uint32_t o = 1; o <= 4; o++)
        assert_ok(genome_add_conn(g, 0, o, (float)o, &err), &err);
    struct tv_rng rng = tu_rng(9, 0, 0);
    struct nn_qnet *q = quantize(g, 100, 32, &rng);
    assert_int_equal(q->n_tables, 2);
    assert_int_equal(q->neuron[1].table, q->neuron[2].table);
    assert_int_equal(q->neuron[1].table, q->neuron[3].table);
    assert_int_not_equal(q->neuron[1].table, q->neuron[4].table);
    assert_memory_not_equal(q->tables, q->tables + 256, 256);
    expect_all_paths(q, &rng); /* one chunk of two tables: the gather */
    nn_qnet_free(q);
}

/* ---- the engine ---------------------------------------------------------------- */

/* Runs q for `steps` steps of `batch` samples (reset half way) on plan p
 * (target t) and checks every int8 output against ref_step, and every float
 * output against the dequantized int8 value. */
static void expect_engine_matches_reference(const struct nn_qnet *q, const struct nn_plan *p,
                                            size_t batch, int target, struct tv_rng *rng)
{
    struct tv_error err = {0};
    struct nn_state *s;
    assert_ok(nn_state_new(p, batch, &s, &err), &err);
    assert_ok(nn_state_set_target(s, target, &err), &err);
    size_t n_in = q->n_in, n_out = q->n_out, steps = 6;
    float *in = malloc(batch * n_in * sizeof *in), *out = malloc(batch * n_out * sizeof *out);
    int8_t *o8 = malloc(batch * n_out), ro[64];
    int8_t *cur = calloc(batch * q->n, 1), *prev = calloc(q->n, 1);
    assert_true(in && out && o8 && cur && prev && n_out <= 64);
    for (size_t t = 0; t < steps; t++) {
        if (t == steps / 2)
            nn_state_reset(s);
        size_t tt = t < steps / 2 ? t : t - steps / 2;
        random_rows(rng, in, batch * n_in);
        nn_step(s, in, out);
        nn_qstate_read_int8(s, o8);
        for (size_t b = 0; b < batch; b++) {
            ref_step(q, cur + b * q->n, prev, tt, in + b * n_in, ro);
            for (size_t k = 0; k < n_out; k++) {
                assert_int_equal(o8[b * n_out + k], ro[k]);
                const struct nn_qlayer *L = &q->layers[q->layer_of[q->out_map[k]]];
                float want = (float)(ro[k] - L->zp) * L->scale;
                assert_memory_equal(&out[b * n_out + k], &want, sizeof want);
            }
        }
    }
    TV_FREE_ALL(in, out, o8, cur, prev);
    nn_state_free(s);
}

/* Plan p of q against the reference at batches 1 and 65, every target this
 * CPU runs. */
static void expect_plan_paths(const struct nn_qnet *q, const struct nn_plan *p, struct tv_rng *rng)
{
    for (int t = 0; t < NN_TARGET_COUNT; t++)
        if (tu_target_runs(p, t))
            for (size_t b = 1; b <= 65; b += 64)
                expect_engine_matches_reference(q, p, b, t, rng);
}

static void test_nn_qplan_every_path_gives_the_reference_bits(void **state)
{
    (void)state;
    struct tv_error err = {0};
    struct tv_rng rng = tu_rng(77, 0, 0);
    static const size_t batches[] = {1, 3, 64, 100};
    int vnni_seen = 0;
    for (int trial = 0; trial < 30; trial++) {
        struct genome g;
        genome_init(&g);
        random_net(&g, &rng);
        struct nn_qnet *q = quantize(&g, trial % 3 ? 100 : 99.9, 50, &rng);
        struct nn_plan *p;
        assert_ok(nn_qplan_compile(q, &p, &err), &err);
        assert_true(nn_plan_is_int8(p));
        assert_int_equal(nn_plan_n_conns(p), q->n_edges);
        for (size_t i = 0; i < sizeof batches / sizeof batches[0]; i++)
            for (int t = 0; t < NN_TARGET_COUNT; t++) {
                if (!tu_target_runs(p, t))
                    continue; /* this CPU cannot run it */
                vnni_seen |= batches[i] >= 64 && nn_int8_uses_vnni(t);
                expect_engine_matches_reference(q, p, batches[i], t, &rng);
            }
        nn_plan_free(p);
        nn_qnet_free(q);
        genome_release(&g);
    }
    if (!vnni_seen)
        print_message("note: no AVX-512 VNNI on this CPU: only the portable paths ran\n");
}

/* Wide layers (several chunks of 16 neurons, the last one partial, fan-ins
 * from 0 up) through every path, and nn_qplan_compile with each of its
 * allocations failing: TV_ENOMEM saying so, nothing leaked. */
static void test_nn_qplan_wide_layers_and_out_of_memory(void **state)
{
    struct genome *g = *state;
    struct tv_error err = {0};
    struct tv_rng rng = tu_rng(5, 0, 0);
    /* 90 neurons (7 in, 3 out), 700 connections, 2 levels, recurrent rate 0.2, sd 1 */
    struct genome_graph_spec sp = {90, 7, 3, 700, 2, 0.2, 1.0, GENOME_ACT_TANH, GENOME_ACT_SIGMOID};
    assert_ok(genome_build_graph(g, &sp, &rng, &err), &err);
    struct nn_qnet *q = quantize(g, 100, 40, &rng);
    size_t widest = 0;
    for (size_t l = 1; l < q->n_layers; l++) {
        size_t w = q->layers[l].end - q->layers[l].start;
        widest = w > widest ? w : widest;
    }
    assert_true(widest > 32);
    for (unsigned long k = 1;; k++) {
        struct nn_plan *p = (struct nn_plan *)1;
        failalloc_track(1);
        size_t live = failalloc_live();
        failalloc_arm(k);
        int rc = nn_qplan_compile(q, &p, &err);
        failalloc_disarm();
        int fired = failalloc_fired();
        if (fired) {
            assert_error(rc, &err, TV_ENOMEM, "out of memory");
            assert_null(p);
        } else {
            assert_ok(rc, &err);
            expect_plan_paths(q, p, &rng);
            nn_plan_free(p);
        }
        assert_int_equal(failalloc_live(), live);
        failalloc_track(0);
        if (!fired) {
            assert_true(k > 4); /* the row form, two orders, a key, the plan */
            break;
        }
    }
    nn_qnet_free(q);
}

/* Every path against the reference at batches 1 and 65 (all targets this
 * CPU runs). */
static void expect_all_paths(const struct nn_qnet *q, struct tv_rng *rng)
{
    struct tv_error err = {0};
    struct nn_plan *p;
    assert_ok(nn_qplan_compile(q, &p, &err), &err);
    assert_int_equal(nn_plan_n_conns(p), q->n_edges);
    expect_plan_paths(q, p, rng);
    nn_plan_free(p);
}

/* Plan p at batch bn on target t: nn_step against nn_step_feature_major on
 * the same rows transposed, bit for bit, and nn_state_read after it; outputs
 * 0 before a step and after a reset. */
static void expect_batch_io(const struct nn_plan *p, size_t bn, int t, struct tv_rng *rng)
{
    struct tv_error err = {0};
    size_t n_in = nn_plan_n_inputs(p), n_out = nn_plan_n_outputs(p);
    struct nn_state *a, *b;
    assert_ok(nn_state_new(p, bn, &a, &err), &err);
    assert_ok(nn_state_new(p, bn, &b, &err), &err);
    assert_ok(nn_state_set_target(a, t, &err), &err);
    assert_ok(nn_state_set_target(b, t, &err), &err);
    float *in = malloc(bn * n_in * sizeof *in), *fm = malloc(bn * n_in * sizeof *fm);
    float *oa = malloc(bn * n_out * sizeof *oa), *ob = malloc(bn * n_out * sizeof *ob);
    float *rd = malloc(bn * n_out * sizeof *rd);
    assert_true(in && fm && oa && ob && rd);
    nn_state_read(a, rd);
    for (size_t k = 0; k < bn * n_out; k++)
        assert_true(rd[k] == 0.0f);
    for (int step = 0; step < 3; step++) {
        random_rows(rng, in, bn * n_in);
        for (size_t r = 0; r < bn; r++)
            for (size_t k = 0; k < n_in; k++)
                fm[k * bn + r] = in[r * n_in + k];
        nn_step(a, in, oa);
        nn_step_feature_major(b, fm, ob);
        nn_state_read(b, rd);
        for (size_t r = 0; r < bn; r++)
            for (size_t k = 0; k < n_out; k++) {
                assert_memory_equal(&oa[r * n_out + k], &ob[k * bn + r], sizeof(float));
                assert_memory_equal(&oa[r * n_out + k], &rd[r * n_out + k], sizeof(float));
            }
    }
    /* new or reset: outputs 0, as at batch 1 */
    nn_state_reset(a);
    nn_state_read(a, rd);
    for (size_t k = 0; k < bn * n_out; k++)
        assert_true(rd[k] == 0.0f);
    TV_FREE_ALL(in, fm, oa, ob, rd);
    nn_state_free(a);
    nn_state_free(b);
}

/* g made the layered genome of sp (weights drawn from rng), calibrated on 20
 * rows and quantized. */
static struct nn_qnet *layered_qnet(struct genome *g, const struct genome_layered_spec *sp,
                                    struct tv_rng *rng)
{
    struct tv_error err = {0};
    assert_ok(genome_build_layered(g, sp, rng, &err), &err);
    return quantize(g, 100, 20, rng);
}

/* A batch's inputs and outputs (the plan quantizes the caller's rows
 * itself, in tiles of 16 x 16 and their edges), expect_batch_io at batches
 * 2, 16, 33 and 65, every target this CPU runs. */
static void test_nn_qplan_batch_io_in_tiles(void **state)
{
    struct genome *g = *state;
    struct tv_error err = {0};
    struct tv_rng rng = tu_rng(12, 0, 0);
    static const uint32_t sizes[] = {40, 20, 37};
    struct genome_layered_spec sp = {
        sizes, 3, 0.3, 0.05, 0.05, GENOME_ACT_TANH, GENOME_ACT_IDENTITY, 0.3};
    struct nn_qnet *q = layered_qnet(g, &sp, &rng);
    expect_all_paths(q, &rng);
    struct nn_plan *p;
    assert_ok(nn_qplan_compile(q, &p, &err), &err);
    assert_int_equal(nn_plan_n_inputs(p), 40);
    assert_int_equal(nn_plan_n_outputs(p), 37);
    static const size_t batches[] = {2, 16, 33, 65};
    for (size_t i = 0; i < sizeof batches / sizeof batches[0]; i++)
        for (int t = 0; t < NN_TARGET_COUNT; t++)
            if (tu_target_runs(p, t))
                expect_batch_io(p, batches[i], t, &rng);
    nn_plan_free(p);
    nn_qnet_free(q);
}

/* The windows of the plan (nn/deploy/int8_plan.c): sources over several windows of 256
 * values; lanes with more than 7 edges in one window (several entries),
 * with 5 to 7 (two steps) and with fewer; and a chunk whose two windows are
 * more than 255 apart (inputs at slots 0 and 1, a recurrent source at slot
 * near 2 (n + 1), past 66,000: an entry that only steps). */
static void test_nn_qplan_windows_entries_and_hops(void **state)
{
    struct genome *g = *state;
    struct tv_error err = {0};
    struct tv_rng rng = tu_rng(11, 0, 0);
    static const uint32_t sizes[] = {600, 40, 5};
    struct genome_layered_spec sp = {sizes,           3,   0.5, 0.01, 0.02, GENOME_ACT_RELU,
                                     GENOME_ACT_TANH, 0.05};
    struct nn_qnet *q = layered_qnet(g, &sp, &rng);
    expect_all_paths(q, &rng);
    nn_qnet_free(q);

    uint32_t n_in = 33000, a = n_in, b = n_in + 1;
    genome_reset(g);
    for (uint32_t i = 0; i < n_in; i++)
        assert_ok(genome_add_neuron(g, i, GENOME_INPUT, GENOME_ACT_IDENTITY, 0, 0, &err), &err);
    assert_ok(genome_add_neuron(g, a, GENOME_OUTPUT, GENOME_ACT_TANH, 0.1f, 1, &err), &err);
    assert_ok(genome_add_neuron(g, b, GENOME_OUTPUT, GENOME_ACT_TANH, -0.1f, 1, &err), &err);
    assert_ok(genome_add_conn(g, 0, a, 0.7f, &err), &err);
    assert_ok(genome_add_conn(g, b, a, -0.6f, &err), &err); /* recurrent: last step's b */
    assert_ok(genome_add_conn(g, 0, b, 0.5f, &err), &err);
    assert_ok(genome_add_conn(g, 1, b, -0.8f, &err), &err);
    q = quantize(g, 100, 4, &rng);
    assert_int_equal(q->n_recurrent, 1);
    expect_all_paths(q, &rng);
    nn_qnet_free(q);
}

/* The int8 network stays close to the float one it was calibrated on. */
static void test_nn_qplan_is_close_to_the_float_network(void **state)
{
    struct genome *g = *state;
    struct tv_error err = {0};
    tu_small_genome(g); /* tanh, relu, sigmoid; skip and recurrent edges */
    struct tv_rng rng = tu_rng(3, 0, 0);
    struct nn_qnet *q = quantize(g, 100, 400, &rng);
    struct nn_plan *fp, *qp;
    assert_ok(nn_plan_compile(g, NULL, &fp, &err), &err);
    assert_ok(nn_qplan_compile(q, &qp, &err), &err);
    struct nn_state *fs, *qs;
    assert_ok(nn_state_new(fp, 1, &fs, &err), &err);
    assert_ok(nn_state_new(qp, 1, &qs, &err), &err);
    double worst = 0;
    for (int t = 0; t < 200; t++) {
        float in[2], fo, qo;
        random_rows(&rng, in, 2);
        nn_step(fs, in, &fo);
        nn_step(qs, in, &qo);
        worst = fabs(fo - qo) > worst ? fabs(fo - qo) : worst;
    }
    assert_true(worst < 0.03); /* a sigmoid output: 255 steps of ~0.004 */
    assert_true(worst > 0.0);  /* it is quantized */
    nn_state_free(fs);
    nn_state_free(qs);
    nn_plan_free(fp);
    nn_plan_free(qp);
    nn_qnet_free(q);
}

/* ---- the NET.q format -------------------------------------------------------- */

static void test_nn_qnet_write_read_round_trip(void **state)
{
    (void)state;
    struct tv_error err = {0};
    struct tv_rng rng = tu_rng(11, 0, 0);
    for (int trial = 0; trial < 10; trial++) {
        struct genome g;
        genome_init(&g);
        random_net(&g, &rng);
        struct nn_qnet *q = quantize(&g, 100, 20, &rng), *r;
        struct tv_buf a = {0}, b = {0};
        assert_ok(nn_qnet_write(q, &a, &err), &err);
        assert_true(nn_qnet_sniff(a.data, a.len));
        assert_ok(nn_qnet_read((const char *)a.data, a.len, "x.q", &r, &err), &err);
        assert_ok(nn_qnet_write(r, &b, &err), &err);
        assert_int_equal(a.len, b.len);
        assert_memory_equal(a.data, b.data, a.len);
        assert_int_equal(r->n_recurrent, q->n_recurrent);
        assert_memory_equal(r->layer_of, q->layer_of, q->n * sizeof *q->layer_of);
        tv_buf_free(&a);
        tv_buf_free(&b);
        nn_qnet_free(q);
        nn_qnet_free(r);
        genome_release(&g);
    }
}

/* The text of a small quantized network with a recurrent edge. */
static struct tv_buf small_text(void)
{
    struct tv_error err = {0};
    struct genome g;
    genome_init(&g);
    tu_small_genome(&g);
    struct tv_rng rng = tu_rng(1, 0, 0);
    struct nn_qnet *q = quantize(&g, 100, 20, &rng);
    struct tv_buf b = {0};
    assert_ok(nn_qnet_write(q, &b, &err), &err);
    assert_ok(tv_buf_append(&b, "", 1), &err); /* NUL-terminated, not counted */
    b.len--;
    nn_qnet_free(q);
    genome_release(&g);
    return b;
}

/* The text with the first occurrence of `from` replaced by `to`, read:
 * must fail with TV_EFORMAT and a message containing want. */
static void expect_read_error(const char *text, const char *from, const char *to, const char *want)
{
    const char *at = strstr(text, from);
    assert_non_null(at);
    size_t n = strlen(text), nf = strlen(from), nt = strlen(to);
    char *bad = malloc(n - nf + nt + 1);
    assert_non_null(bad);
    memcpy(bad, text, (size_t)(at - text));
    memcpy(bad + (at - text), to, nt);
    strcpy(bad + (at - text) + nt, at + nf);
    struct tv_error err = {0};
    struct nn_qnet *q = (struct nn_qnet *)1;
    int rc = nn_qnet_read(bad, strlen(bad), "bad.q", &q, &err);
    assert_null(q);
    assert_error(rc, &err, TV_EFORMAT, want);
    assert_non_null(strstr(err.msg, "bad.q:"));
    free(bad);
}

static void test_nn_qnet_read_rejects_bad_files(void **state)
{
    (void)state;
    struct tv_buf b = small_text();
    const char *t = (const char *)b.data;
    expect_read_error(t, "trevo-qnet 1", "trevo-qnet 4",
                      "bad.q:1: version 4 is not one this trevo reads (1 to 3)");
    /* version 3 has a convs line after the size line */
    expect_read_error(t, "trevo-qnet 1", "trevo-qnet 3", "bad.q:3: expected 'convs'");
    /* version 2 has a scale line per input after the size line */
    expect_read_error(t, "trevo-qnet 1", "trevo-qnet 2", "bad.q:3: expected 'scale'");
    expect_read_error(t, "trevo-qnet 1", "trevo-net 1", "expected 'trevo-qnet'");
    expect_read_error(t, "size 5 2 1", "size 5 9 1", "inconsistent sizes");
    expect_read_error(t, "layer 0 2", "layer 0 3", "layer 0 must be the 2 inputs alone");
    expect_read_error(t, "table ", "table zz", "a table is 512 hex digits");
    expect_read_error(t, "\ne 0 ", "\ne 4 ", "source: 4 is not in [0, 1]");
    expect_read_error(t, "\nend", "\nend\nmore", "text after 'end'");
    expect_read_error(t, "\nend", "\n", "expected 'end'");
    expect_read_error(t, "neuron 2 ", "neuron 3 ", "neurons come in order");
    expect_read_error(t, "\nout 4", "\nout 2", "output (a neuron of the last layer): 2 is not");
    tv_buf_free(&b);
}

/* Cuts the text at every line end: every prefix is refused, never a crash. */
static void test_nn_qnet_read_rejects_every_truncation(void **state)
{
    (void)state;
    struct tv_buf b = small_text();
    tu_qnet_refuses_every_truncation(&b);
    tv_buf_free(&b);
}

/* ---- error paths -------------------------------------------------------------- */

static void test_nn_calib_new_rejects_bad_percentile(void **state)
{
    struct genome *g = *state;
    struct tv_error err = {0};
    build_diff(g, GENOME_ACT_TANH);
    struct nn_calib *c = (struct nn_calib *)1;
    struct nn_quant_opts o = {.percentile = 101};
    assert_error(nn_calib_new(g, &o, &c, &err), &err, TV_EINVAL, "percentile 101");
    assert_null(c);
}

static void test_nn_quantize_without_a_step_is_an_error(void **state)
{
    struct genome *g = *state;
    struct tv_error err = {0};
    struct nn_calib *c = diff_calib(g, GENOME_ACT_TANH);
    struct nn_qnet *q = (struct nn_qnet *)1;
    assert_error(nn_quantize(c, &q, &err), &err, TV_ESTATE, "observed no step");
    assert_null(q);
    nn_calib_free(c);
}

static void test_nn_qnet_export_c_rejects_bad_prefix(void **state)
{
    (void)state;
    struct tv_buf b = small_text();
    struct nn_qnet *q;
    struct tv_error err = {0};
    assert_ok(nn_qnet_read((const char *)b.data, b.len, "x.q", &q, &err), &err);
    struct tv_buf out = {0};
    assert_error(nn_qnet_export_c(q, "9lives", &out, &err), &err, TV_EINVAL,
                 "prefix '9lives' is not a C identifier");
    assert_ok(nn_qnet_export_c(q, "my_net", &out, &err), &err);
    assert_non_null(strstr((const char *)out.data, "#define MY_NET_N_INPUTS 2"));
    nn_qnet_free(q);
    tv_buf_free(&out);
    tv_buf_free(&b);
}

static void test_nn_net_export_c_refuses_activations_needing_libm(void **state)
{
    struct genome *g = *state;
    struct tv_error err = {0};
    build_diff(g, GENOME_ACT_TANH);
    struct tv_buf out = {0};
    assert_error(nn_net_export_c(g, "n", &out, &err), &err, TV_EINVAL,
                 "activation tanh, which needs libm");
    build_diff(g, GENOME_ACT_RELU);
    assert_ok(nn_net_export_c(g, "n", &out, &err), &err);
    assert_non_null(strstr((const char *)out.data, "int n_predict(const float *in, float *out)"));
    tv_buf_free(&out);
}

/* A spiking network (cuba neurons), which nn_plan_compile runs: the int8
 * calibration and the float C export refuse it by its model, nothing made or
 * written, where they read rows a spiking plan has not (and crashed). */
static void test_nn_calib_new_and_net_export_c_refuse_a_spiking_network(void **state)
{
    struct genome *g = *state;
    struct tv_error err = {0};
    build_diff(g, GENOME_ACT_IDENTITY);
    assert_ok(genome_add_neuron(g, 3, GENOME_HIDDEN, GENOME_ACT_IDENTITY, 0.1f, 0.5f, &err), &err);
    assert_ok(genome_add_conn(g, 0, 3, 2.0f, &err), &err);
    assert_ok(genome_add_conn(g, 3, 2, 1.5f, &err), &err);
    genome_neuron_set_model(&g->neurons[3], GENOME_MODEL_CUBA); /* neuron 3, the hidden */
    struct nn_plan *p;
    assert_error(nn_plan_compile(g, NULL, &p, &err), &err, TV_EINVAL,
                 "neuron 2: model rate is not run by the engine");
    genome_neuron_set_model(&g->neurons[2], GENOME_MODEL_CUBA);
    assert_ok(nn_plan_compile(g, NULL, &p, &err), &err);
    struct nn_state *s;
    assert_ok(nn_state_new(p, 1, &s, &err), &err);
    float in[2] = {1.0f, 0.0f}, out[1];
    nn_step(s, in, out);
    nn_state_free(s);
    nn_plan_free(p);

    struct nn_calib *c = (struct nn_calib *)1;
    assert_error(nn_calib_new(g, NULL, &c, &err), &err, TV_EINVAL,
                 "calibration: the network is spiking (neuron 2 has model cuba); int8 runs rate "
                 "neurons only");
    assert_null(c);
    struct tv_buf b = {0};
    assert_error(nn_net_export_c(g, "n", &b, &err), &err, TV_EINVAL,
                 "export: the network is spiking (neuron 2 has model cuba); the C export runs "
                 "rate neurons only");
    assert_int_equal(b.len, 0);
    tv_buf_free(&b);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        TU_GENOME_TEST(test_nn_quantize_scales_cover_the_calibrated_ranges),
        TU_GENOME_TEST(test_nn_quantize_percentile_ignores_outliers),
        cmocka_unit_test(test_nn_quantize_tables_fold_every_activation),
        TU_GENOME_TEST(test_nn_quantize_stores_identical_tables_once),
        cmocka_unit_test(test_nn_qplan_every_path_gives_the_reference_bits),
        TU_GENOME_TEST(test_nn_qplan_wide_layers_and_out_of_memory),
        TU_GENOME_TEST(test_nn_qplan_windows_entries_and_hops),
        TU_GENOME_TEST(test_nn_qplan_batch_io_in_tiles),
        TU_GENOME_TEST(test_nn_qplan_is_close_to_the_float_network),
        cmocka_unit_test(test_nn_qnet_write_read_round_trip),
        cmocka_unit_test(test_nn_qnet_read_rejects_bad_files),
        cmocka_unit_test(test_nn_qnet_read_rejects_every_truncation),
        TU_GENOME_TEST(test_nn_calib_new_rejects_bad_percentile),
        TU_GENOME_TEST(test_nn_quantize_without_a_step_is_an_error),
        cmocka_unit_test(test_nn_qnet_export_c_rejects_bad_prefix),
        TU_GENOME_TEST(test_nn_net_export_c_refuses_activations_needing_libm),
        TU_GENOME_TEST(test_nn_calib_new_and_net_export_c_refuse_a_spiking_network),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
