/* test_nn.c -- the compact sparse engine: the fast path against the reference
 * on thousands of random networks (local, skip and recurrent connections,
 * every way, single and batched, over several time steps), recurrent state,
 * linear-time compile of long looped graphs, activations, the row parser, and
 * every public function's failure path (code and message). */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "genome.h"
#include "nn.h"
#include "testutil.h"

/* ---- helpers -------------------------------------------------------------- */

/* |fast - ref| <= 1e-5 (1 + |ref|); equal infinities and NaNs count as equal. */
static int close_enough(float fast, float ref)
{
    if (isnan(ref) || isinf(ref))
        return isnan(ref) ? isnan(fast) : fast == ref;
    return fabs((double)fast - (double)ref) <= 1e-5 * (1.0 + fabs((double)ref));
}

/* Renames every neuron id through an odd multiplier (a bijection on 32 bits),
 * so ids are large and scattered, then re-canonicalizes. */
static void scramble_ids(struct genome *g, uint32_t mul, uint32_t add)
{
    struct tv_error err = {0};
    for (size_t i = 0; i < g->n_neurons; i++) {
        g->neurons[i].id = g->neurons[i].id * (mul | 1u) + add;
        if (g->neurons[i].id == GENOME_ID_NONE)
            g->neurons[i].id = 7;
    }
    for (size_t c = 0; c < g->n_conns; c++) {
        uint32_t f = g->conns[c].from * (mul | 1u) + add, t = g->conns[c].to * (mul | 1u) + add;
        g->conns[c].from = f == GENOME_ID_NONE ? 7 : f;
        g->conns[c].to = t == GENOME_ID_NONE ? 7 : t;
    }
    assert_int_equal(genome_canonicalize(g, &err), 0);
}

/* A random NEAT-style network of up to ~70 neurons. */
static void random_graph(struct genome *g, struct tv_rng *rng, int hidden_act)
{
    struct tv_error err = {0};
    struct genome_graph_spec sp = tu_random_graph_spec(rng, 5, 4, 60, 8, 0.4);
    sp.weight_sd = 1.0 / sqrt(1.0 + (double)sp.n_conns / (double)sp.n_neurons);
    sp.hidden_act = hidden_act;
    sp.out_act = (int)tv_rng_below(rng, GENOME_ACT_COUNT);
    assert_int_equal(genome_build_graph(g, &sp, rng, &err), 0);
    if (tv_rng_chance(rng, 0.5))
        scramble_ids(g, (uint32_t)tv_rng_u64(rng), (uint32_t)tv_rng_u64(rng));
    assert_int_equal(genome_validate(g, NULL, &err), 0);
}

/* Runs plan(g, opts) and the reference side by side for `steps` steps with
 * `batch` samples (inputs with exact zeros), a reset half way; asserts they
 * agree. Returns the number of values compared. */
static size_t compare_with_reference(const struct genome *g, const struct nn_opts *o, size_t batch,
                                     int steps, struct tv_rng *rng)
{
    struct tv_error err = {0};
    struct nn_plan *p = NULL;
    struct nn_state *s = NULL;
    struct nn_reference *r = NULL;
    assert_int_equal(nn_plan_compile(g, o, &p, &err), 0);
    assert_int_equal(nn_state_new(p, batch, &s, &err), 0);
    assert_int_equal(nn_reference_new(g, batch, &r, &err), 0);
    size_t n_in = nn_plan_n_inputs(p), n_out = nn_plan_n_outputs(p), compared = 0;
    float *in = malloc(batch * n_in * sizeof *in);
    float *fast = malloc(batch * n_out * sizeof *fast), *ref = malloc(batch * n_out * sizeof *ref);
    assert_non_null(in);
    assert_non_null(fast);
    assert_non_null(ref);
    for (int t = 0; t < steps; t++) {
        if (t == steps / 2) {
            nn_state_reset(s);
            nn_reference_reset(r);
        }
        for (size_t i = 0; i < batch * n_in; i++)
            in[i] = tv_rng_chance(rng, 0.4) ? 0.0f : (float)tv_rng_normal(rng);
        nn_step(s, in, fast);
        nn_reference_step(r, in, ref);
        for (size_t i = 0; i < batch * n_out; i++) {
            if (!close_enough(fast[i], ref[i]))
                fail_msg("step %d, value %zu (batch %zu, way %d): fast %.9g, reference %.9g", t, i,
                         batch, o ? o->way : 0, (double)fast[i], (double)ref[i]);
            compared++;
        }
    }
    TV_FREE_ALL(in, fast, ref);
    nn_reference_free(r);
    nn_state_free(s);
    nn_plan_free(p);
    return compared;
}

/* ---- fast path == reference ------------------------------------------------ */

static void test_nn_step_matches_reference_on_random_graphs(void **state)
{
    struct genome *g = *state;
    struct tv_rng rng = tu_rng(3, 1, 4);
    static const size_t batches[] = {1, 5, 16, 37, 70};
    size_t compared = 0, n_tiled_plans = 0;
    struct tv_error err = {0};
    for (int it = 0; it < 2000; it++) {
        int act = (int)tv_rng_below(&rng, GENOME_ACT_COUNT);
        if (it % 3 == 0)
            act = GENOME_ACT_RELU; /* zero skipping gets real zeros */
        random_graph(g, &rng, act);
        /* tile_neurons 1: the smallest chunks the plan allows (tiled form) */
        struct nn_opts o = {(int)(it % 3), it % 7 == 0 ? 32 : 0, NULL, 0, it % 2 ? 1 : 0, 0};
        compared += compare_with_reference(g, &o, 1, 6, &rng);
        if (it % 4 == 0 || (it % 4 == 1 && it % 3 == 0))
            compared += compare_with_reference(g, &o, batches[(it / 4) % 5], 6, &rng);
        struct nn_plan *p;
        assert_int_equal(nn_plan_compile(g, &o, &p, &err), 0);
        n_tiled_plans += nn_plan_n_chunks(p) > 0;
        nn_plan_free(p);
    }
    assert_true(compared > 50000);
    assert_true(n_tiled_plans > 300); /* the tiled form was exercised */
}

static void test_nn_step_matches_reference_on_layered_genomes(void **state)
{
    struct genome *g = *state;
    struct tv_rng rng = tu_rng(9, 2, 6);
    struct tv_error err = {0};
    for (int it = 0; it < 40; it++) {
        uint32_t sizes[5] = {1 + tv_rng_below(&rng, 40), 1 + tv_rng_below(&rng, 80),
                             1 + tv_rng_below(&rng, 80), 1 + tv_rng_below(&rng, 80),
                             1 + tv_rng_below(&rng, 10)};
        struct genome_layered_spec spec = {sizes,
                                           5,
                                           0.05 + 0.3 * tv_rng_uniform(&rng),
                                           0.3,
                                           0.2,
                                           it % 2 ? GENOME_ACT_RELU : GENOME_ACT_TANH,
                                           GENOME_ACT_SIGMOID,
                                           0.3};
        assert_int_equal(genome_build_layered(g, &spec, &rng, &err), 0);
        for (int way = 0; way < 3; way++) {
            struct nn_opts o = {way, 0, NULL, 0, it % 2 ? 1 : 0, 0};
            compare_with_reference(g, &o, 1, 5, &rng);
            compare_with_reference(g, &o, 1 + tv_rng_below(&rng, 90), 4, &rng);
        }
    }
}

/* One step of sample-major state a (of plan p) on `in`, and of feature-major
 * state f on the same inputs transposed into fm, both of a's batch: the same
 * bits. oa, of: [batch][n_outputs] scratch. */
static void step_both_layouts(const struct nn_plan *p, struct nn_state *a, struct nn_state *f,
                              const float *in, float *fm, float *oa, float *of)
{
    size_t batch = nn_state_batch(a), n_in = nn_plan_n_inputs(p), n_out = nn_plan_n_outputs(p);
    for (size_t k = 0; k < n_in; k++)
        for (size_t q = 0; q < batch; q++)
            fm[k * batch + q] = in[q * n_in + k];
    nn_step(a, in, oa);
    nn_step_feature_major(f, fm, of);
    for (size_t k = 0; k < n_out; k++)
        for (size_t q = 0; q < batch; q++)
            assert_memory_equal(&of[k * batch + q], &oa[q * n_out + k], sizeof(float));
}

/* A sample gives the same bits whatever the batch it is in (1 included) and
 * wherever it is in the batch, and whatever the index width. */
static void test_nn_step_bits_do_not_depend_on_batch_size_or_index_width(void **state)
{
    struct genome *g = *state;
    struct tv_rng rng = tu_rng(5, 5, 5);
    struct tv_error err = {0};
    for (int it = 0; it < 100; it++) {
        random_graph(g, &rng, it % 2 ? GENOME_ACT_RELU : GENOME_ACT_TANH);
        size_t tile = it % 2 ? 1 : 0; /* 1: tiled, the smallest chunks allowed */
        struct nn_opts o16 = {it % 3, 16, NULL, 0, tile, 0}, o32 = {it % 3, 32, NULL, 0, tile, 0};
        struct nn_plan *p16, *p32;
        struct nn_state *a, *b, *c, *d;
        assert_int_equal(nn_plan_compile(g, &o16, &p16, &err), 0);
        assert_int_equal(nn_plan_compile(g, &o32, &p32, &err), 0);
        assert_int_equal(nn_plan_index_bits(p16), 16);
        assert_int_equal(nn_plan_index_bits(p32), 32);
        assert_int_equal(nn_state_new(p16, 3, &a, &err), 0);
        assert_int_equal(nn_state_new(p16, 67, &b, &err), 0);
        assert_int_equal(nn_state_new(p32, 3, &c, &err), 0);
        assert_int_equal(nn_state_new(p16, 1, &d, &err), 0);
        size_t n_in = nn_plan_n_inputs(p16), n_out = nn_plan_n_outputs(p16);
        float in[67 * 8], oa[3 * 8], ob[67 * 8], oc[3 * 8], od[8], oe[8], oz[8];
        struct nn_state *e, *z;
        assert_int_equal(nn_state_new(p32, 1, &e, &err), 0);
        assert_int_equal(nn_state_new(p16, 1, &z, &err), 0); /* sample 66 alone */
        for (int t = 0; t < 4; t++) {
            for (size_t i = 0; i < 67 * n_in; i++)
                in[i] = (float)tv_rng_normal(&rng);
            nn_step(a, in, oa);
            nn_step(b, in, ob); /* samples 0..2 are the same as a's */
            nn_step(c, in, oc);
            nn_step(d, in, od);
            nn_step(e, in, oe);
            nn_step(z, in + 66 * n_in, oz);
            assert_memory_equal(oa, ob, 3 * n_out * sizeof(float));
            assert_memory_equal(oa, oc, 3 * n_out * sizeof(float));
            assert_memory_equal(od, oe, n_out * sizeof(float));
            assert_memory_equal(od, oa, n_out * sizeof(float));
            assert_memory_equal(oz, ob + 66 * n_out, n_out * sizeof(float));
        }
        /* feature-major buffers: the same bits as sample-major ones */
        struct nn_state *f;
        assert_int_equal(nn_state_new(p16, 3, &f, &err), 0);
        nn_state_reset(a);
        float in_fm[3 * 8], of[3 * 8];
        for (int t = 0; t < 3; t++) {
            for (size_t i = 0; i < 3 * n_in; i++)
                in[i] = (float)tv_rng_normal(&rng);
            step_both_layouts(p16, a, f, in, in_fm, oa, of);
        }
        nn_state_free(f);
        nn_state_free(a);
        nn_state_free(b);
        nn_state_free(c);
        nn_state_free(d);
        nn_state_free(e);
        nn_state_free(z);
        nn_plan_free(p16);
        nn_plan_free(p32);
    }
}

/* FNV-1a over the bits of n floats, folded into h. */
static uint64_t hash_floats(uint64_t h, const float *v, size_t n)
{
    const unsigned char *b = (const unsigned char *)v;
    for (size_t i = 0; i < n * sizeof *v; i++)
        h = (h ^ b[i]) * 0x100000001b3ull;
    return h;
}

/* The bits of every output of `steps` steps of plan(g, o) with `batch`
 * samples, sample-major and (batch > 1) feature-major, hashed into h. */
static uint64_t hash_steps(uint64_t h, const struct genome *g, const struct nn_opts *o,
                           size_t batch, int steps, int target, struct tv_rng *rng)
{
    struct tv_error err = {0};
    struct nn_plan *p;
    struct nn_state *a, *f;
    assert_int_equal(nn_plan_compile(g, o, &p, &err), 0);
    assert_int_equal(nn_state_new(p, batch, &a, &err), 0);
    assert_int_equal(nn_state_new(p, batch, &f, &err), 0);
    assert_int_equal(nn_state_set_target(a, target, &err), 0);
    assert_int_equal(nn_state_set_target(f, target, &err), 0);
    size_t n_in = nn_plan_n_inputs(p), n_out = nn_plan_n_outputs(p);
    float *in = aligned_alloc(64, (batch * n_in * sizeof(float) + 63) / 64 * 64);
    float *fm = aligned_alloc(64, (batch * n_in * sizeof(float) + 63) / 64 * 64);
    float *oa = malloc(batch * n_out * sizeof *oa), *of = malloc(batch * n_out * sizeof *of);
    assert_true(in && fm && oa && of);
    for (int t = 0; t < steps; t++) {
        for (size_t i = 0; i < batch * n_in; i++)
            in[i] = tv_rng_chance(rng, 0.3) ? 0.0f : (float)tv_rng_normal(rng);
        step_both_layouts(p, a, f, in, fm, oa, of);
        h = hash_floats(h, oa, batch * n_out);
    }
    TV_FREE_ALL(in, fm, oa, of);
    nn_state_free(a);
    nn_state_free(f);
    nn_plan_free(p);
    return h;
}

/* The network of tu_cancel_genome, its row of ones at position q of a batch
 * of random rows, over 3 steps: the row's outputs have the bits of batch 1
 * at every batch (1, 3, 64, 128), position, layout (sample- and
 * feature-major), target, way (gather; relu: scatter) and form (plain,
 * tiled). A plain plan's bits are dot1's sums (testutil.h); a tiled one adds
 * the edges that cross chunks in its tiles, another order, the same at every
 * batch. */
static void test_nn_step_cancelling_sums_are_the_same_at_every_batch(void **state)
{
    (void)state;
    static const float want[3][3] = {{1, 2, 1}, {1, 2, 2}, {1, 2, 2}};
    static const size_t batches[4] = {1, 3, 64, 128};
    struct tv_rng rng = tu_rng(28, 5, 0);
    struct tv_error err = {0};
    struct genome g;
    genome_init(&g);
    enum { NI = 5, NO = 3, BMAX = 128 };
    float *in = malloc(BMAX * NI * sizeof *in), *fm = aligned_alloc(64, BMAX * NI * sizeof *fm);
    float *oa = malloc(BMAX * NO * sizeof *oa), *of = malloc(BMAX * NO * sizeof *of);
    assert_true(in && fm && oa && of);
    for (int v = 0; v < 4; v++) {
        tu_cancel_genome(&g, v % 2 ? GENOME_ACT_RELU : GENOME_ACT_IDENTITY);
        struct nn_opts o = {NN_WAY_AUTO, 0, NULL, 0, v / 2 ? 1 : 0, 0};
        struct nn_plan *p;
        assert_ok(nn_plan_compile(&g, &o, &p, &err), &err);
        assert_int_equal(nn_plan_n_inputs(p), NI);
        float ref[3][NO]; /* the row alone */
        struct nn_state *one;
        assert_ok(nn_state_new(p, 1, &one, &err), &err);
        for (int t = 0; t < 3; t++) {
            float ones[NI] = {1, 1, 1, 1, 1};
            nn_step(one, ones, ref[t]);
            if (v < 2)
                assert_memory_equal(ref[t], want[t], sizeof ref[t]);
        }
        nn_state_free(one);
        for (int target = 0; target < NN_TARGET_COUNT; target++)
            for (size_t bi = 0; bi < 4; bi++) {
                size_t B = batches[bi];
                size_t at[3] = {0, B / 2, B - 1};
                for (int qi = 0; qi < 3; qi++) {
                    size_t q = at[qi];
                    struct nn_state *a, *f;
                    assert_ok(nn_state_new(p, B, &a, &err), &err);
                    assert_ok(nn_state_new(p, B, &f, &err), &err);
                    if (nn_state_set_target(a, target, &err)) { /* not on this CPU */
                        nn_state_free(a);
                        nn_state_free(f);
                        continue;
                    }
                    assert_ok(nn_state_set_target(f, target, &err), &err);
                    for (int t = 0; t < 3; t++) {
                        for (size_t i = 0; i < B * NI; i++)
                            in[i] = (float)tv_rng_normal(&rng) * 1e8f;
                        for (size_t i = 0; i < NI; i++)
                            in[q * NI + i] = 1.0f;
                        step_both_layouts(p, a, f, in, fm, oa, of);
                        for (size_t k = 0; k < NO; k++)
                            if (memcmp(&oa[q * NO + k], &ref[t][k], sizeof(float)))
                                fail_msg("variant %d target %d batch %zu row %zu step %d output "
                                         "%zu: %.9g, alone %.9g",
                                         v, target, B, q, t, k, (double)oa[q * NO + k],
                                         (double)ref[t][k]);
                    }
                    nn_state_free(a);
                    nn_state_free(f);
                }
            }
        nn_plan_free(p);
    }
    TV_FREE_ALL(in, fm, oa, of);
    genome_release(&g);
}

/* The engine's output bits are pinned: these hashes were taken when the
 * batched kernels took batch 1's order of every sum (before that, from the
 * engine before its op table, 68587eb), over random graphs in every way,
 * index width, form (plain and tiled) and batch shape (1; 5, 33 and 80
 * samples: one to four vectors a block; 32, read in place). A change that
 * reorders any sum fails here even where the reference still agrees (the
 * activations call libm: another libm may give other bits). Every SIMD
 * target (enum nn_target) must give them; one this CPU cannot run is
 * skipped, saying so. */
static void expect_pinned_bits(int target)
{
    static const uint64_t want[4] = {0x6c2ac0ef1b0eca4cull, 0xd631f0f19137d712ull,
                                     0x346ef48d2e35139full, 0xc7fd86e5b7c80227ull};
    static const size_t batches[5] = {1, 5, 32, 33, 80};
    struct tv_rng rng = tu_rng(14, 14, 14);
    struct tv_error err = {0};
    struct genome g;
    genome_init(&g);
    random_graph(&g, &rng, GENOME_ACT_TANH);
    struct nn_plan *p;
    struct nn_state *s;
    assert_int_equal(nn_plan_compile(&g, NULL, &p, &err), 0);
    assert_int_equal(nn_state_new(p, 1, &s, &err), 0);
    int rc = nn_state_set_target(s, target, &err);
    nn_state_free(s);
    nn_plan_free(p);
    if (rc) {
        genome_release(&g);
        print_message("skipped: %s\n", err.msg);
        skip();
    }
    tv_rng_init(&rng, 14, 14, 14);
    uint64_t got[4];
    for (int q = 0; q < 4; q++) {
        uint64_t h = 0xcbf29ce484222325ull;
        for (int it = 0; it < 12; it++) {
            random_graph(&g, &rng, q % 2 ? GENOME_ACT_RELU : GENOME_ACT_TANH);
            struct nn_opts o = {it % 3, q < 2 ? 16 : 32, NULL, 0, it % 2 ? 1 : 0, 0};
            h = hash_steps(h, &g, &o, batches[it % 5], 5, target, &rng);
        }
        got[q] = h;
    }
    genome_release(&g);
    assert_memory_equal(got, want, sizeof want);
}

static void test_nn_step_gives_the_pinned_bits_default(void **state)
{
    (void)state;
    expect_pinned_bits(NN_TARGET_DEFAULT);
}

static void test_nn_step_gives_the_pinned_bits_avx2(void **state)
{
    (void)state;
    expect_pinned_bits(NN_TARGET_AVX2);
}

static void test_nn_step_gives_the_pinned_bits_avx512f(void **state)
{
    (void)state;
    expect_pinned_bits(NN_TARGET_AVX512F);
}

/* Feature-major buffers whose rows have the state's stride (a batch that is a
 * multiple of 16) and alignment are read in place: the same bits as
 * sample-major steps, and as buffers that are only float-aligned, whatever the
 * way, and with recurrent edges that leave an input (a hidden neuron moved to
 * depth 0). */
static void test_nn_step_feature_major_in_place_matches_sample_major(void **state)
{
    struct genome *g = *state;
    struct tv_rng rng = tu_rng(6, 6, 6);
    struct tv_error err = {0};
    enum { B = 32 };
    float *in = malloc(B * 8 * sizeof *in);
    float *in_fm = aligned_alloc(64, (B * 8 + 16) * sizeof *in_fm); /* read in place */
    float *oa = malloc(B * 8 * sizeof *oa), *of = malloc(B * 8 * sizeof *of);
    assert_non_null(in);
    assert_non_null(in_fm);
    assert_non_null(oa);
    assert_non_null(of);
    for (int it = 0; it < 150; it++) {
        random_graph(g, &rng, it % 2 ? GENOME_ACT_RELU : GENOME_ACT_TANH);
        if (it % 3 == 0) /* a hidden neuron at depth 0: edges from inputs into it recur */
            for (size_t i = 0; i < g->n_neurons; i++)
                if (g->neurons[i].kind == GENOME_HIDDEN) {
                    g->neurons[i].depth = 0.0f;
                    break;
                }
        struct nn_opts o = {it % 3, 0, NULL, 0, (it / 2) % 2 ? 1 : 0, 0};
        struct nn_plan *p;
        assert_int_equal(nn_plan_compile(g, &o, &p, &err), 0);
        size_t n_in = nn_plan_n_inputs(p);
        size_t batch = it % 2 ? 16 : B;
        float *fm = in_fm + (it % 4 == 1); /* not 64-byte aligned: copied */
        struct nn_state *a, *f;
        assert_int_equal(nn_state_new(p, batch, &a, &err), 0);
        assert_int_equal(nn_state_new(p, batch, &f, &err), 0);
        for (int t = 0; t < 4; t++) {
            for (size_t i = 0; i < batch * n_in; i++)
                in[i] = tv_rng_chance(&rng, 0.3) ? 0.0f : (float)tv_rng_normal(&rng);
            step_both_layouts(p, a, f, in, fm, oa, of);
        }
        nn_state_free(a);
        nn_state_free(f);
        nn_plan_free(p);
    }
    TV_FREE_ALL(in, in_fm, oa, of);
}

/* ---- recurrent state --------------------------------------------------------- */

/* in -> h (identity, self loop 1) -> out; out -> h recurrent with weight 0.5:
 * h_t = x_t + h_{t-1} + 0.5 out_{t-1}, out_t = 2 h_t. */
static void build_accumulator(struct genome *g)
{
    struct tv_error err = {0};
    genome_reset(g);
    assert_int_equal(genome_add_neuron(g, 10, GENOME_INPUT, GENOME_ACT_IDENTITY, 0, 0, &err), 0);
    assert_int_equal(genome_add_neuron(g, 20, GENOME_OUTPUT, GENOME_ACT_IDENTITY, 0, 1, &err), 0);
    assert_int_equal(genome_add_neuron(g, 30, GENOME_HIDDEN, GENOME_ACT_IDENTITY, 0, 0.5f, &err),
                     0);
    assert_int_equal(genome_add_conn(g, 10, 30, 1.0f, &err), 0);
    assert_int_equal(genome_add_conn(g, 30, 30, 1.0f, &err), 0);
    assert_int_equal(genome_add_conn(g, 30, 20, 2.0f, &err), 0);
    assert_int_equal(genome_add_conn(g, 20, 30, 0.5f, &err), 0);
}

static void test_nn_step_carries_recurrent_state_over_time_steps(void **state)
{
    struct genome *g = *state;
    struct tv_error err = {0};
    build_accumulator(g);
    struct nn_plan *p;
    struct nn_state *s;
    assert_int_equal(nn_plan_compile(g, NULL, &p, &err), 0);
    assert_int_equal(nn_plan_n_recurrent(p), 2);
    assert_int_equal(nn_state_new(p, 1, &s, &err), 0);
    /* h: 1, 2+1+1=4, 3+4+4=11; out = 2h */
    float x[3] = {1, 2, 3}, want[3] = {2, 8, 22}, out;
    for (int t = 0; t < 3; t++) {
        nn_step(s, &x[t], &out);
        assert_true(out == want[t]);
    }
    nn_state_read(s, &out);
    assert_true(out == 22.0f);
    nn_state_reset(s);
    nn_state_read(s, &out);
    assert_true(out == 0.0f);
    nn_step(s, &x[0], &out); /* a new sequence starts from 0 */
    assert_true(out == 2.0f);
    nn_state_free(s);
    /* the same in a batch of 2 with different sequences */
    assert_int_equal(nn_state_new(p, 2, &s, &err), 0);
    float xb[2] = {1, 10}, ob[2];
    nn_step(s, xb, ob);
    assert_true(ob[0] == 2.0f && ob[1] == 20.0f);
    nn_step(s, xb, ob); /* h = 1+1+1 = 3, 10+10+10 = 30 */
    assert_true(ob[0] == 6.0f && ob[1] == 60.0f);
    nn_state_free(s);
    nn_plan_free(p);
}

/* ---- compile: long looped graphs in linear time ---------------------------- */

/* A chain of n hidden neurons, each feeding the next two (so the number of
 * paths grows like Fibonacci(n)) and each looped back to its predecessor:
 * every path is long and looped. */
static void build_long_loop(struct genome *g, uint32_t n)
{
    struct tv_error err = {0};
    genome_reset(g);
    assert_int_equal(genome_reserve(g, n + 2, 3 * (size_t)n + 4, &err), 0);
    struct genome_neuron in = {0, GENOME_INPUT, GENOME_ACT_IDENTITY, 0, 0, 0, {0}};
    struct genome_neuron out = {1, GENOME_OUTPUT, GENOME_ACT_TANH, 0, 1, 0, {0}};
    assert_int_equal(genome_push_neuron(g, &in, &err), 0);
    assert_int_equal(genome_push_neuron(g, &out, &err), 0);
    for (uint32_t i = 0; i < n; i++) {
        struct genome_neuron h = {
            2 + i, GENOME_HIDDEN, GENOME_ACT_TANH, 0.01f, (float)(i + 1) / (float)(n + 1), 0, {0}};
        assert_int_equal(genome_push_neuron(g, &h, &err), 0);
    }
    struct genome_conn c0 = {0, 2, 0.5f}, c1 = {n + 1, 1, 0.5f};
    assert_int_equal(genome_push_conn(g, &c0, &err), 0);
    assert_int_equal(genome_push_conn(g, &c1, &err), 0);
    for (uint32_t i = 0; i < n; i++) {
        uint32_t id = 2 + i;
        if (i + 1 < n) {
            struct genome_conn a = {id, id + 1, 0.7f};
            assert_int_equal(genome_push_conn(g, &a, &err), 0);
        }
        if (i + 2 < n) {
            struct genome_conn b = {id, id + 2, 0.3f};
            assert_int_equal(genome_push_conn(g, &b, &err), 0);
        }
        if (i > 0) {
            struct genome_conn r = {id, id - 1, -0.2f};
            assert_int_equal(genome_push_conn(g, &r, &err), 0);
        }
    }
    assert_int_equal(genome_canonicalize(g, &err), 0);
    assert_int_equal(genome_validate(g, NULL, &err), 0);
}

/* The compile's work (nn_plan_compile_work: every loop iteration it runs)
 * of graph g with options o, per neuron and connection. */
static double compile_work_per_item(const struct genome *g, const struct nn_opts *o)
{
    struct tv_error err = {0};
    struct nn_plan *p;
    assert_int_equal(nn_plan_compile(g, o, &p, &err), 0);
    double w = (double)nn_plan_compile_work(p) / (double)(g->n_neurons + g->n_conns);
    nn_plan_free(p);
    return w;
}

/* Compiling is O(neurons + connections), whatever the shape: on long looped
 * graphs (paths beyond counting, a layer per neuron) of 10^3 to 5 * 10^5
 * neurons, plain and tiled, the work per neuron and connection is bounded by
 * a constant, and a graph 8 times as large costs 8 times as much work,
 * within 5 % (a log factor would add 30 % a step); on random graphs of
 * every form it stays under the same bound. */
static void test_nn_plan_compile_long_looped_graph_in_linear_time(void **state)
{
    struct genome *g = *state;
    struct tv_rng rng = tu_rng(1, 1, 1);
    build_long_loop(g, 60); /* small: check the values too */
    struct nn_opts o = {NN_WAY_AUTO, 0, NULL, 0, 0, 0};
    compare_with_reference(g, &o, 1, 8, &rng);
    compare_with_reference(g, &o, 7, 8, &rng);
    for (size_t tile = 1; tile <= 2; tile++) {
        o.tile_neurons = tile == 1 ? 1 : SIZE_MAX; /* the smallest chunks, or none */
        double prev = 0;
        for (uint32_t size = 1000; size <= 512000; size *= 8) {
            build_long_loop(g, size);
            double w = compile_work_per_item(g, &o);
            if (w > 12.0 || (prev > 0 && (w > 1.05 * prev || w < prev / 1.05)))
                fail_msg("compile work per item: %.3f for %u neurons, %.3f for the size before "
                         "(tile_neurons %zu)",
                         w, size, prev, o.tile_neurons);
            prev = w;
        }
    }
    struct genome_graph_spec sp = {
        3000, 20, 10, 30000, 30, 0.2, 0.3, GENOME_ACT_RELU, GENOME_ACT_IDENTITY};
    for (size_t tile = 0; tile <= 500; tile += 500) {
        assert_int_equal(genome_build_graph(g, &sp, &rng, &(struct tv_error){0}), 0);
        struct nn_opts ot = {NN_WAY_AUTO, 0, NULL, 0, tile, 0};
        double w = compile_work_per_item(g, &ot);
        if (w < 1.0 || w > 12.0)
            fail_msg("compile work per item: %.3f (tile_neurons %zu)", w, tile);
    }
}

/* ---- trainable plans --------------------------------------------------------- */

/* Steps plans a and b side by side on the same inputs (batch samples, 4
 * steps): the same bits. */
static void expect_same_steps(const struct nn_plan *a, const struct nn_plan *b, size_t batch,
                              struct tv_rng *rng)
{
    struct tv_error err = {0};
    struct nn_state *sa, *sb;
    assert_int_equal(nn_state_new(a, batch, &sa, &err), 0);
    assert_int_equal(nn_state_new(b, batch, &sb, &err), 0);
    size_t n_in = nn_plan_n_inputs(a), n_out = nn_plan_n_outputs(a);
    float *in = malloc(batch * n_in * sizeof *in), *oa = malloc(batch * n_out * sizeof *oa),
          *ob = malloc(batch * n_out * sizeof *ob);
    assert_true(in && oa && ob);
    for (int t = 0; t < 4; t++) {
        for (size_t i = 0; i < batch * n_in; i++)
            in[i] = (float)tv_rng_normal(rng);
        nn_step(sa, in, oa);
        nn_step(sb, in, ob);
        assert_memory_equal(oa, ob, batch * n_out * sizeof *oa);
    }
    TV_FREE_ALL(in, oa, ob);
    nn_state_free(sa);
    nn_state_free(sb);
}

/* Changing the weights and biases of a trainable plan gives the steps of a
 * plan of the genome with the same changes (the same bits: the same sums in
 * the same order), in every way, width and form; writing them back gives
 * that genome; an unchanged plan writes back its genome unchanged. */
static void test_nn_plan_params_train_like_the_changed_genome(void **state)
{
    TU_TRIO_GENOMES(g, changed, back);
    struct tv_rng rng = tu_rng(9, 9, 9);
    struct tv_error err = {0};
    for (int it = 0; it < 60; it++) {
        random_graph(g, &rng, it % 2 ? GENOME_ACT_RELU : GENOME_ACT_TANH);
        struct nn_opts o = {it % 3, it % 5 == 0 ? 32 : 0, NULL, 0, (it / 2) % 2 ? 1 : 0, 1};
        struct nn_plan *p, *q;
        struct nn_params w;
        assert_int_equal(nn_plan_compile(g, &o, &p, &err), 0);
        assert_int_equal(nn_plan_params(p, &w, &err), 0);
        assert_int_equal(w.n_bias, g->n_neurons);
        /* unchanged: writing back changes nothing */
        assert_int_equal(genome_copy(back, g, &err), 0);
        assert_int_equal(nn_plan_write_weights(p, back, &err), 0);
        assert_true(genome_equal(back, g));
        /* every connection has exactly one entry */
        size_t seen = 0;
        for (size_t k = 0; k < w.n_w; k++)
            if (w.conn_of[k] != NN_NONE) {
                assert_true(w.conn_of[k] < g->n_conns);
                assert_true(w.w[k] == g->conns[w.conn_of[k]].weight);
                seen++;
            }
        assert_int_equal(seen, g->n_conns);
        /* change them, in the plan and in a copy of the genome */
        assert_int_equal(genome_copy(changed, g, &err), 0);
        for (size_t k = 0; k < w.n_w; k++)
            if (w.conn_of[k] != NN_NONE) {
                w.w[k] = (float)tv_rng_normal(&rng);
                changed->conns[w.conn_of[k]].weight = w.w[k];
            }
        for (size_t j = 0; j < w.n_bias; j++) {
            /* inputs come first, and have no bias */
            assert_int_equal(w.neuron_of[j] == NN_NONE, j < nn_plan_n_inputs(p));
            if (w.neuron_of[j] != NN_NONE) {
                w.bias[j] = (float)tv_rng_normal(&rng);
                changed->neurons[w.neuron_of[j]].bias = w.bias[j];
            }
        }
        o.trainable = 0;
        assert_int_equal(nn_plan_compile(changed, &o, &q, &err), 0);
        expect_same_steps(p, q, 1, &rng);
        expect_same_steps(p, q, 19, &rng);
        /* written back: the changed genome */
        assert_int_equal(nn_plan_write_weights(p, back, &err), 0);
        assert_true(genome_equal(back, changed));
        nn_plan_free(p);
        nn_plan_free(q);
    }
}

/* A plain plan has no parameters to give; a genome of another size is
 * refused, unchanged. */
static void test_nn_plan_write_weights_rejects_plain_plan_and_other_genome(void **state)
{
    TU_TRIO_GENOMES(g, other, copy);
    struct tv_error err = {0};
    struct tv_rng rng = tu_rng(10, 10, 10);
    random_graph(g, &rng, GENOME_ACT_TANH);
    struct nn_plan *p;
    struct nn_params w;
    assert_int_equal(nn_plan_compile(g, NULL, &p, &err), 0);
    assert_int_equal(nn_plan_params(p, &w, &err), TV_ESTATE);
    assert_string_equal(err.msg,
                        "nn_plan_params: the plan was not compiled trainable (nn_opts.trainable)");
    assert_null(w.w);
    assert_int_equal(nn_plan_write_weights(p, g, &err), TV_ESTATE);
    assert_string_equal(err.msg, "nn_plan_write_weights: the plan was not compiled trainable "
                                 "(nn_opts.trainable)");
    nn_plan_free(p);
    struct nn_opts o = {.trainable = 1};
    assert_int_equal(nn_plan_compile(g, &o, &p, &err), 0);
    uint32_t sizes[3] = {3, 4, 2};
    struct genome_layered_spec spec = {
        sizes, 3, 1.0, 0.0, 0.0, GENOME_ACT_TANH, GENOME_ACT_IDENTITY, 0.5};
    assert_int_equal(genome_build_layered(other, &spec, &rng, &err), 0);
    assert_int_equal(genome_copy(copy, other, &err), 0);
    char want[256];
    snprintf(want, sizeof want,
             "nn_plan_write_weights: the genome has 9 neurons and %zu connections, the plan %zu "
             "and %zu (write into the genome compiled)",
             other->n_conns, g->n_neurons, g->n_conns);
    assert_int_equal(nn_plan_write_weights(p, other, &err), TV_EINVAL);
    assert_string_equal(err.msg, want);
    assert_true(genome_equal(other, copy));
    nn_plan_free(p);
}

/* ---- compile: plans ---------------------------------------------------------- */

static void test_nn_plan_compile_reports_sizes_within_memory_bound(void **state)
{
    struct genome *g = *state;
    struct tv_rng rng = tu_rng(2, 2, 2);
    struct tv_error err = {0};
    uint32_t sizes[3] = {300, 500, 40};
    struct genome_layered_spec spec = {
        sizes, 3, 0.2, 0.1, 0.05, GENOME_ACT_RELU, GENOME_ACT_IDENTITY, 0.1};
    assert_int_equal(genome_build_layered(g, &spec, &rng, &err), 0);
    struct genome_stats st;
    assert_int_equal(genome_stats(g, &st, &err), 0);
    struct nn_plan *p;
    assert_int_equal(nn_plan_compile(g, NULL, &p, &err), 0);
    assert_int_equal(nn_plan_n_inputs(p), 300);
    assert_int_equal(nn_plan_n_outputs(p), 40);
    assert_int_equal(nn_plan_n_neurons(p), 840);
    assert_int_equal(nn_plan_n_conns(p), g->n_conns);
    assert_int_equal(nn_plan_n_recurrent(p), st.n_recurrent);
    assert_int_equal(nn_plan_n_layers(p), 3);
    assert_int_equal(nn_plan_index_bits(p), 16);
    assert_int_equal(nn_plan_layer_way(p, 0), NN_WAY_GATHER);  /* inputs: not measured */
    assert_int_equal(nn_plan_layer_way(p, 1), NN_WAY_SCATTER); /* relu: makes zeros */
    assert_int_equal(nn_plan_layer_way(p, 3), -1);
    /* 6 bytes per connection with 16-bit indices, rows per neuron */
    size_t bound = 6 * g->n_conns + 2 * 7 * 6 * g->n_neurons + 40 * g->n_neurons + 2048;
    assert_true(nn_plan_bytes(p) <= bound);
    nn_plan_free(p);
    nn_plan_free(NULL); /* a no-op */
}

/* The tiled form: chosen by size (or forced), it keeps the recurrent count,
 * the memory bound and the results of the plain form (single and batched). */
static void test_nn_plan_compile_tiles_large_networks(void **state)
{
    struct genome *g = *state;
    struct tv_rng rng = tu_rng(8, 8, 8);
    struct tv_error err = {0};
    struct genome_graph_spec sp = {
        3000, 20, 10, 30000, 30, 0.2, 0.3, GENOME_ACT_TANH, GENOME_ACT_IDENTITY};
    assert_int_equal(genome_build_graph(g, &sp, &rng, &err), 0);
    struct nn_opts plain = {NN_WAY_AUTO, 0, NULL, 0, 0, 0},
                   tiled = {NN_WAY_AUTO, 0, NULL, 0, 500, 0};
    struct nn_plan *p0, *p1;
    assert_int_equal(nn_plan_compile(g, &plain, &p0, &err), 0);
    assert_int_equal(nn_plan_compile(g, &tiled, &p1, &err), 0);
    assert_int_equal(nn_plan_n_chunks(p0), 0); /* small: not tiled by default */
    assert_int_equal(nn_plan_n_tiled(p0), 0);
    assert_true(nn_plan_n_chunks(p1) >= 6);
    assert_true(nn_plan_n_tiled(p1) > g->n_conns / 4 && nn_plan_n_tiled(p1) <= g->n_conns);
    assert_int_equal(nn_plan_n_recurrent(p1), nn_plan_n_recurrent(p0));
    assert_int_equal(nn_plan_n_conns(p1), g->n_conns);
    assert_true(nn_plan_bytes(p1) <= 8 * g->n_conns + 64 * g->n_neurons + 4096);
    for (size_t batch = 1; batch <= 21; batch += 20) {
        struct nn_state *a, *b;
        assert_int_equal(nn_state_new(p0, batch, &a, &err), 0);
        assert_int_equal(nn_state_new(p1, batch, &b, &err), 0);
        float in[21 * 20], oa[21 * 10], ob[21 * 10];
        for (int t = 0; t < 5; t++) {
            for (size_t i = 0; i < batch * 20; i++)
                in[i] = (float)tv_rng_normal(&rng);
            nn_step(a, in, oa);
            nn_step(b, in, ob);
            for (size_t i = 0; i < batch * 10; i++)
                if (!close_enough(ob[i], oa[i]))
                    fail_msg("batch %zu, step %d, value %zu: tiled %.9g, plain %.9g", batch, t, i,
                             (double)ob[i], (double)oa[i]);
        }
        nn_state_free(a);
        nn_state_free(b);
    }
    nn_plan_free(p0);
    nn_plan_free(p1);
    tiled.tile_neurons = SIZE_MAX; /* never */
    assert_int_equal(nn_plan_compile(g, &tiled, &p1, &err), 0);
    assert_int_equal(nn_plan_n_chunks(p1), 0);
    nn_plan_free(p1);
    /* more than NN_TILE_MIN_NEURONS neurons: tiled by default */
    sp = (struct genome_graph_spec){
        NN_TILE_MIN_NEURONS + 5000, 20, 10, 300000, 100, 0.1, 0.3, GENOME_ACT_TANH,
        GENOME_ACT_IDENTITY};
    assert_int_equal(genome_build_graph(g, &sp, &rng, &err), 0);
    assert_int_equal(nn_plan_compile(g, NULL, &p1, &err), 0);
    assert_true(nn_plan_n_chunks(p1) >= 2);
    assert_true(nn_plan_n_tiled(p1) > 0);
    nn_plan_free(p1);
    /* a layer of more than 65536 neurons: 16-bit local indices cannot reach it */
    uint32_t sizes[3] = {4, 70000, 4};
    struct genome_layered_spec ls = {
        sizes, 3, 0.001, 0.0, 0.0, GENOME_ACT_RELU, GENOME_ACT_IDENTITY, 0.1};
    assert_int_equal(genome_build_layered(g, &ls, &rng, &err), 0);
    tiled.tile_neurons = 1000;
    assert_int_equal(nn_plan_compile(g, &tiled, &p1, &err), 0);
    assert_int_equal(nn_plan_n_chunks(p1), 0);
    nn_plan_free(p1);
}

static void test_nn_plan_compile_uses_measured_density(void **state)
{
    struct genome *g = *state;
    struct tv_error err = {0};
    struct tv_rng rng = tu_rng(4, 4, 4);
    uint32_t sizes[3] = {100, 100, 10};
    struct genome_layered_spec spec = {
        sizes, 3, 0.3, 0.0, 0.0, GENOME_ACT_TANH, GENOME_ACT_IDENTITY, 0.2};
    assert_int_equal(genome_build_layered(g, &spec, &rng, &err), 0);
    struct nn_plan *p;
    struct nn_state *s;
    assert_int_equal(nn_plan_compile(g, NULL, &p, &err), 0);
    assert_int_equal(nn_plan_layer_way(p, 0), NN_WAY_GATHER);
    assert_int_equal(nn_plan_layer_way(p, 1), NN_WAY_GATHER); /* tanh */
    assert_int_equal(nn_state_new(p, 1, &s, &err), 0);
    float in[100] = {0};
    for (int i = 0; i < 100; i += 5)
        in[i] = 1.0f; /* 20 % non-zero */
    nn_step(s, in, NULL);
    nn_step(s, in, NULL);
    float dens[3];
    assert_int_equal(nn_state_density(s, dens, &err), 0);
    assert_true(fabsf(dens[0] - 0.2f) < 1e-6f);
    assert_true(dens[1] > 0.9f); /* tanh is almost never exactly 0 */
    struct nn_opts o = {NN_WAY_AUTO, 0, dens, 3, 0, 0};
    struct nn_plan *q;
    assert_int_equal(nn_plan_compile(g, &o, &q, &err), 0);
    assert_int_equal(nn_plan_layer_way(q, 0), NN_WAY_SCATTER);
    assert_int_equal(nn_plan_layer_way(q, 1), NN_WAY_GATHER);
    compare_with_reference(g, &o, 1, 4, &rng);
    nn_plan_free(q);
    nn_state_free(s);
    nn_plan_free(p);
}

/* Compile must refuse, with a message naming the culprit. */
static void expect_compile_error(const struct genome *g, const struct nn_opts *o, int code,
                                 const char *needle)
{
    struct tv_error err = {0};
    struct nn_plan *p = (struct nn_plan *)&err; /* must become NULL */
    assert_int_equal(nn_plan_compile(g, o, &p, &err), code);
    assert_null(p);
    assert_int_equal(err.code, code);
    if (!strstr(err.msg, needle))
        fail_msg("message '%s' lacks '%s'", err.msg, needle);
}

static void build_tiny(struct genome *g)
{
    struct tv_error err = {0};
    genome_reset(g);
    assert_int_equal(genome_add_neuron(g, 1, GENOME_INPUT, GENOME_ACT_IDENTITY, 0, 0, &err), 0);
    assert_int_equal(genome_add_neuron(g, 2, GENOME_OUTPUT, GENOME_ACT_TANH, 0, 1, &err), 0);
    assert_int_equal(genome_add_neuron(g, 3, GENOME_HIDDEN, GENOME_ACT_RELU, 0, 0.5f, &err), 0);
    assert_int_equal(genome_add_conn(g, 1, 3, 1.0f, &err), 0);
    assert_int_equal(genome_add_conn(g, 3, 2, 1.0f, &err), 0);
}

/* build_tiny(g), then `edit`: the compile must be refused with TV_EINVAL and
 * a message holding sub. */
#define REFUSED_AFTER(edit, sub)                                                                   \
    do {                                                                                           \
        build_tiny(g);                                                                             \
        edit;                                                                                      \
        expect_compile_error(g, NULL, TV_EINVAL, sub);                                             \
    } while (0)

static void test_nn_plan_compile_rejects_bad_genomes(void **state)
{
    struct genome *g = *state;

    build_tiny(g);
    struct genome_conn tmp = g->conns[0];
    g->conns[0] = g->conns[1];
    g->conns[1] = tmp;
    expect_compile_error(g, NULL, TV_EINVAL, "not in canonical order");
    REFUSED_AFTER(g->conns[1] = g->conns[0], "duplicated");
    REFUSED_AFTER(g->conns[1].to = 99, "no neuron 99");
    REFUSED_AFTER(g->conns[0].from = 0, "no neuron 0"); /* sorts first, but no such neuron */
    REFUSED_AFTER(g->conns[1].to = 1, "ends in input neuron 1"); /* 3 -> 1: into the input */
    REFUSED_AFTER(g->neurons[1].kind = GENOME_HIDDEN, "at least one input and one output");
    REFUSED_AFTER(g->neurons[2].depth = 1.5f, "neuron 3: depth 1.5 outside [0, 1]");
    REFUSED_AFTER(g->neurons[2].depth = NAN, "outside [0, 1]");
    REFUSED_AFTER(g->neurons[2].act = GENOME_ACT_COUNT, "neuron 3: unknown activation");
    REFUSED_AFTER(g->neurons[0].depth = 0.5f, "an input must be at depth 0");
    REFUSED_AFTER(g->neurons[2].id = 2, "ids not unique and ascending"); /* duplicate id */
    REFUSED_AFTER(g->neurons[2].kind = 7, "unknown kind 7");
}

static void test_nn_plan_compile_rejects_bad_options(void **state)
{
    struct genome *g = *state;
    build_tiny(g);
    struct nn_opts o = {7, 0, NULL, 0, 0, 0};
    expect_compile_error(g, &o, TV_EINVAL, "nn_opts.way: unknown way 7");
    o = (struct nn_opts){NN_WAY_AUTO, 8, NULL, 0, 0, 0};
    expect_compile_error(g, &o, TV_EINVAL, "nn_opts.index_bits: expected 0, 16 or 32, got 8");
    float dens[2] = {0.5f, 0.5f};
    o = (struct nn_opts){NN_WAY_AUTO, 0, dens, 2, 0, 0};
    expect_compile_error(g, &o, TV_EINVAL, "nn_opts.density has 2 layers, the network has 3");

    /* 16-bit indices cannot address 65536 neurons (the zero slot is n) */
    struct tv_error err = {0};
    genome_reset(g);
    assert_int_equal(genome_reserve(g, 65536, 1, &err), 0);
    for (uint32_t i = 0; i < 65536; i++) {
        struct genome_neuron u = {
            i, i == 0 ? GENOME_INPUT : GENOME_OUTPUT, 0, 0, i == 0 ? 0.0f : 1.0f, 0, {0}};
        assert_int_equal(genome_push_neuron(g, &u, &err), 0);
    }
    o = (struct nn_opts){NN_WAY_AUTO, 16, NULL, 0, 0, 0};
    expect_compile_error(g, &o, TV_EINVAL, "16-bit indices cannot address 65536 neurons");
    struct nn_plan *p;
    assert_int_equal(nn_plan_compile(g, NULL, &p, &err), 0);
    assert_int_equal(nn_plan_index_bits(p), 32);
    nn_plan_free(p);
}

/* ---- states ----------------------------------------------------------------- */

/* The states' fixture: the tiny network compiled (p) and a state of batch 1
 * on it (s), freed after the test. */
struct tiny {
    struct genome g;
    struct nn_plan *p;
    struct nn_state *s;
};

static void tiny_release(struct tiny *t)
{
    nn_state_free(t->s);
    nn_plan_free(t->p);
    genome_release(&t->g);
}
TU_FIXTURE(tiny_mem, struct tiny, tiny_release)

static int tiny_setup(void **state)
{
    struct tv_error err = {0};
    if (tiny_mem_setup(state))
        return -1;
    struct tiny *t = *state;
    build_tiny(&t->g);
    return nn_plan_compile(&t->g, NULL, &t->p, &err) || nn_state_new(t->p, 1, &t->s, &err) ? -1 : 0;
}

static void test_nn_state_new_rejects_bad_batch(void **state)
{
    struct tiny *t = *state;
    struct tv_error err = {0};
    struct nn_state *s = (struct nn_state *)&err;
    assert_int_equal(nn_state_new(t->p, 0, &s, &err), TV_EINVAL);
    assert_null(s);
    assert_string_equal(err.msg, "nn_state_new: batch must be at least 1");
    assert_int_equal(nn_state_new(t->p, (size_t)1 << 30, &s, &err), TV_EINVAL);
    assert_non_null(strstr(err.msg, "batch 1073741824 is larger than"));
    assert_int_equal(nn_state_new(t->p, 9, &s, &err), 0);
    assert_int_equal(nn_state_batch(s), 9);
    nn_state_free(s);
    nn_state_free(NULL);
}

static void test_nn_state_set_target_rejects_unknown_target(void **state)
{
    struct tiny *t = *state;
    struct tv_error err = {0};
    struct nn_state *s = t->s;
    int best = nn_state_target(s);
    assert_int_equal(nn_state_set_target(s, NN_TARGET_COUNT, &err), TV_EINVAL);
    assert_string_equal(err.msg, "nn_state_set_target: unknown target 3");
    assert_int_equal(nn_state_set_target(s, -1, &err), TV_EINVAL);
    assert_string_equal(err.msg, "nn_state_set_target: unknown target -1");
    assert_int_equal(nn_state_target(s), best); /* unchanged */
    assert_int_equal(nn_state_set_target(s, NN_TARGET_DEFAULT, &err), 0);
    assert_int_equal(nn_state_target(s), NN_TARGET_DEFAULT);
}

static void test_nn_state_density_before_any_step_is_an_error(void **state)
{
    struct tiny *t = *state;
    struct tv_error err = {0};
    struct nn_state *s = t->s;
    float dens[3], x = 1.0f;
    assert_int_equal(nn_state_density(s, dens, &err), TV_ESTATE);
    assert_string_equal(err.msg, "nn_state_density: no step was run since the reset");
    nn_step(s, &x, NULL);
    assert_int_equal(nn_state_density(s, dens, &err), 0);
    assert_true(dens[0] == 1.0f);
    nn_state_reset(s);
    assert_int_equal(nn_state_density(s, dens, &err), TV_ESTATE);
}

/* ---- the reference ------------------------------------------------------------- */

/* A neuron model the engine does not run (a spiking neuron) is refused by
 * name, by the plan and by the reference alike, never run as a rate neuron. */
static void test_nn_plan_compile_rejects_unrun_models(void **state)
{
    struct genome *g = *state;
    tu_lif_genome(g);
    const char *msg = "neuron 10: model lif is not run by the engine (rate neurons only)";
    expect_compile_error(g, NULL, TV_EINVAL, msg);
    struct tv_error err = {0};
    struct nn_reference *r = NULL;
    assert_int_equal(nn_reference_new(g, 1, &r, &err), TV_EINVAL);
    assert_null(r);
    assert_string_equal(err.msg, msg);
}

static void test_nn_reference_new_rejects_invalid_genome(void **state)
{
    struct genome *g = *state;
    struct tv_error err = {0};
    build_tiny(g);
    g->conns[0].weight = INFINITY;
    struct nn_reference *r = (struct nn_reference *)&err;
    int rc = nn_reference_new(g, 1, &r, &err);
    assert_int_equal(rc, TV_EINVAL);
    assert_null(r);
    assert_non_null(strstr(err.msg, "weight"));
    g->conns[0].weight = 1.0f;
    assert_int_equal(nn_reference_new(g, 0, &r, &err), TV_EINVAL);
    assert_string_equal(err.msg, "nn_reference_new: batch must be at least 1");
    assert_int_equal(nn_reference_new(g, 2, &r, &err), 0);
    float x[2] = {1, -1}, y[2];
    nn_reference_step(r, x, y); /* relu(1) -> tanh(1); relu(-1) = 0 -> tanh(0) */
    assert_true(y[0] == tanhf(1.0f) && y[1] == 0.0f);
    nn_reference_free(r);
    nn_reference_free(NULL);
}

/* ---- activations ------------------------------------------------------------------ */

static void test_nn_act_apply_is_exact_libm(void **state)
{
    (void)state;
    static const float xs[] = {-30.0f, -2.5f, -1e-3f, 0.0f, 1e-3f, 0.7f, 3.0f, 88.0f};
    for (size_t i = 0; i < sizeof xs / sizeof xs[0]; i++) {
        float x = xs[i];
        assert_true(nn_act_apply(GENOME_ACT_IDENTITY, x) == x);
        assert_true(nn_act_apply(GENOME_ACT_RELU, x) == (x > 0 ? x : 0.0f));
        assert_true(nn_act_apply(GENOME_ACT_TANH, x) == tanhf(x));
        assert_true(nn_act_apply(GENOME_ACT_SIGMOID, x) == 1.0f / (1.0f + expf(-x)));
        assert_true(nn_act_apply(GENOME_ACT_NEAT_SIGMOID, x) == 1.0f / (1.0f + expf(-4.9f * x)));
        assert_true(nn_act_apply(GENOME_ACT_GAUSS, x) == expf(-(x * x)));
        assert_true(nn_act_apply(GENOME_ACT_SIN, x) == sinf(x));
        assert_true(nn_act_apply(GENOME_ACT_ABS, x) == fabsf(x));
        assert_true(nn_act_apply(GENOME_ACT_STEP, x) == (x > 0 ? 1.0f : 0.0f));
    }
    assert_true(nn_act_apply(GENOME_ACT_SIGMOID, 0.0f) == 0.5f);
    assert_true(nn_act_apply(GENOME_ACT_SIGMOID, -1000.0f) == 0.0f); /* no NaN */
    assert_true(nn_act_apply(GENOME_ACT_RELU, NAN) == 0.0f);
    /* unknown ids: the identity, never a read outside the table */
    assert_true(nn_act_apply(GENOME_ACT_COUNT, 2.5f) == 2.5f);
    assert_true(nn_act_apply(-1, 2.5f) == 2.5f);
    assert_true(nn_act_makes_zeros(GENOME_ACT_RELU));
    assert_true(nn_act_makes_zeros(GENOME_ACT_STEP));
    assert_false(nn_act_makes_zeros(GENOME_ACT_TANH));
    assert_false(nn_act_makes_zeros(GENOME_ACT_COUNT));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        TU_GENOME_TEST(test_nn_step_matches_reference_on_random_graphs),
        TU_GENOME_TEST(test_nn_step_matches_reference_on_layered_genomes),
        TU_GENOME_TEST(test_nn_step_bits_do_not_depend_on_batch_size_or_index_width),
        cmocka_unit_test(test_nn_step_cancelling_sums_are_the_same_at_every_batch),
        cmocka_unit_test(test_nn_step_gives_the_pinned_bits_default),
        cmocka_unit_test(test_nn_step_gives_the_pinned_bits_avx2),
        cmocka_unit_test(test_nn_step_gives_the_pinned_bits_avx512f),
        cmocka_unit_test_setup_teardown(test_nn_state_set_target_rejects_unknown_target, tiny_setup,
                                        tiny_mem_teardown),
        TU_GENOME_TEST(test_nn_step_feature_major_in_place_matches_sample_major),
        TU_GENOME_TEST(test_nn_step_carries_recurrent_state_over_time_steps),
        TU_GENOME_TEST(test_nn_plan_compile_long_looped_graph_in_linear_time),
        TU_TRIO_TEST(test_nn_plan_params_train_like_the_changed_genome),
        TU_TRIO_TEST(test_nn_plan_write_weights_rejects_plain_plan_and_other_genome),
        TU_GENOME_TEST(test_nn_plan_compile_reports_sizes_within_memory_bound),
        TU_GENOME_TEST(test_nn_plan_compile_tiles_large_networks),
        TU_GENOME_TEST(test_nn_plan_compile_uses_measured_density),
        TU_GENOME_TEST(test_nn_plan_compile_rejects_bad_genomes),
        TU_GENOME_TEST(test_nn_plan_compile_rejects_bad_options),
        cmocka_unit_test_setup_teardown(test_nn_state_new_rejects_bad_batch, tiny_setup,
                                        tiny_mem_teardown),
        cmocka_unit_test_setup_teardown(test_nn_state_density_before_any_step_is_an_error,
                                        tiny_setup, tiny_mem_teardown),
        TU_GENOME_TEST(test_nn_plan_compile_rejects_unrun_models),
        TU_GENOME_TEST(test_nn_reference_new_rejects_invalid_genome),
        cmocka_unit_test(test_nn_act_apply_is_exact_libm),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
