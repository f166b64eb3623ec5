/* test_sparsify.c -- the sparsity policies (nn/train/sparsify.h): the parser, each
 * rule checked exactly on small hand-made cases, the lock set, rigl's top-k
 * selection, and the sparsifier driving a real trainer (removal, regrowth,
 * dead neurons) with the genome written back checked. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "failalloc.h"
#include "sparsify.h"
#include "testutil.h"
#include "trainutil.h"

/* ---- parsing --------------------------------------------------------------- */

static void parse_ok(const char *spec, int kind, double a, double b)
{
    struct nn_sparsity p;
    struct tv_error err = {0};
    assert_ok(nn_sparsity_parse(spec, &p, &err), &err);
    assert_int_equal(p.kind, kind);
    assert_true(p.a == a);
    assert_true(p.b == b);
    /* format gives back a spec that parses to the same policy */
    char buf[96];
    assert_true(nn_sparsity_format(&p, buf, sizeof buf) < (int)sizeof buf);
    struct nn_sparsity q;
    assert_ok(nn_sparsity_parse(buf, &q, &err), &err);
    assert_int_equal(q.kind, p.kind);
    assert_true(q.a == p.a && q.b == p.b);
}

static void test_nn_sparsity_parse_every_kind(void **state)
{
    (void)state;
    parse_ok("l1:1e-4", NN_SPARSE_L1, 1e-4, 0);
    parse_ok("lp:0.01,2", NN_SPARSE_LP, 0.01, 2);
    parse_ok("threshold:0.001", NN_SPARSE_THRESHOLD, 0.001, 0);
    parse_ok("round:3", NN_SPARSE_ROUND, 3, 0);
    parse_ok("zero:0.25", NN_SPARSE_ZERO, 0.25, 0);
    parse_ok("zero_prop:1", NN_SPARSE_ZERO_PROP, 1, 0);
    parse_ok("neuron", NN_SPARSE_NEURON, 0, 0);
    parse_ok("neuron:50", NN_SPARSE_NEURON, 50, 0);
    parse_ok("set:0.3", NN_SPARSE_SET, 0.3, -1);
    parse_ok("set:0.3,0.05", NN_SPARSE_SET, 0.3, 0.05);
    parse_ok("set:0.3,0", NN_SPARSE_SET, 0.3, 0);
    parse_ok("rigl:0.1", NN_SPARSE_RIGL, 0.1, 0);
    parse_ok("lock:100", NN_SPARSE_LOCK, 100, 0);
}

static void parse_bad(const char *spec, const char *msg)
{
    struct nn_sparsity p;
    struct tv_error err = {0};
    assert_error(nn_sparsity_parse(spec, &p, &err), &err, TV_EINVAL, msg);
}

static void test_nn_sparsity_parse_bad_specs(void **state)
{
    (void)state;
    parse_bad("l1:x", "l1:x: 'x' is not a number");
    parse_bad("l1:", "l1:: '' is not a number");
    parse_bad("l1: 1", "l1: 1: ' 1' is not a number");
    parse_bad("l1:1e999", "l1:1e999: '1e999' is not a finite number");
    parse_bad("l1:nan", "l1:nan: 'nan' is not a finite number");
    parse_bad("l1", "l1: expected l1:D");
    parse_bad("l1:1,2", "l1:1,2: expected l1:D");
    parse_bad("l1:0", "l1:0: D must be > 0");
    parse_bad("lp:0.1", "lp:0.1: expected lp:D,P");
    parse_bad("lp:0.1,", "lp:0.1,: '' is not a number");
    parse_bad("lp:0.1,0", "lp:0.1,0: P must be > 0");
    parse_bad("lp:-1,2", "lp:-1,2: D must be > 0");
    parse_bad("threshold:-0.1", "threshold:-0.1: T must be > 0");
    parse_bad("round:1.5", "round:1.5: K must be a whole number in 0..9");
    parse_bad("round:10", "round:10: K must be a whole number in 0..9");
    parse_bad("zero:1.5", "zero:1.5: P must be in [0, 1]");
    parse_bad("zero_prop:-0.1", "zero_prop:-0.1: P must be in [0, 1]");
    parse_bad("neuron:0", "neuron:0: N must be a whole number >= 1");
    parse_bad("set:1", "set:1: F must be in (0, 1)");
    parse_bad("set:0.2,-1", "set:0.2,-1: S must be >= 0");
    parse_bad("set", "set: expected set:F or set:F,S");
    parse_bad("rigl:0", "rigl:0: F must be in (0, 1)");
    parse_bad("rigl:0.1,2", "rigl:0.1,2: expected rigl:F");
    parse_bad("lock:2.5", "lock:2.5: N must be a whole number >= 1");
    parse_bad("l2:1", "l2:1: unknown policy 'l2' (known: l1, lp,");
    parse_bad("", "empty sparsity policy");
}

/* ---- the rules --------------------------------------------------------------- */

static void test_nn_sparsify_l1_exact(void **state)
{
    (void)state;
    float w[7] = {0.75f, -0.5f, 0.25f, -0.125f, 0, 1e-3f, 3};
    uint8_t rm[7] = {0, 0, 0, 0, 0, 0, 1}; /* 6 was marked before: not counted */
    assert_int_equal(nn_sparsify_l1(w, 7, 0.25f, rm), 4);
    const float want[7] = {0.5f, -0.25f, 0, 0, 0, 0, 2.75f};
    const uint8_t want_rm[7] = {0, 0, 1, 1, 1, 1, 1};
    for (int k = 0; k < 7; k++) {
        assert_true(w[k] == want[k]);
        assert_int_equal(rm[k], want_rm[k]);
    }
}

static void test_nn_sparsify_lp_exact(void **state)
{
    (void)state;
    /* P = 2: w(1 - D) */
    float w[3] = {0.5f, -2, 0};
    uint8_t rm[3] = {0};
    assert_int_equal(nn_sparsify_lp(w, 3, 0.5, 2, rm), 1);
    assert_true(w[0] == 0.25f && w[1] == -1 && w[2] == 0);
    assert_true(rm[0] == 0 && rm[1] == 0 && rm[2] == 1);
    /* P = 3: w - D w|w|; 2 - 1*4 changes sign */
    float v[3] = {0.5f, 2, -0.25f};
    uint8_t rv[3] = {0};
    assert_int_equal(nn_sparsify_lp(v, 3, 1, 3, rv), 1);
    assert_true(v[0] == 0.25f && v[1] == 0 && v[2] == -0.1875f);
    assert_true(rv[0] == 0 && rv[1] == 1 && rv[2] == 0);
    /* P = 1 is l1 */
    float a[5] = {0.75f, -0.5f, 0.25f, -0.125f, 0.3f}, b[5];
    memcpy(b, a, sizeof a);
    uint8_t ra[5] = {0}, rb[5] = {0};
    assert_int_equal(nn_sparsify_lp(a, 5, 0.25, 1, ra), nn_sparsify_l1(b, 5, 0.25f, rb));
    assert_memory_equal(a, b, sizeof a);
    assert_memory_equal(ra, rb, sizeof ra);
}

static void test_nn_sparsify_threshold_strict(void **state)
{
    (void)state;
    const float w[5] = {0.1f, -0.05f, 0.2f, -0.1f, -0.0999f};
    uint8_t rm[5] = {0};
    assert_int_equal(nn_sparsify_threshold(w, 5, 0.1f, rm), 2);
    assert_true(rm[0] == 0 && rm[1] == 1 && rm[2] == 0 && rm[3] == 0 && rm[4] == 1);
}

static void test_nn_sparsify_round_digits(void **state)
{
    (void)state;
    float w[6] = {0.25f, -0.125f, 0.04f, 0.123f, -0.05f, 7};
    uint8_t rm[6] = {0};
    assert_int_equal(nn_sparsify_round(w, 6, 1, rm), 1);
    /* halves away from zero: 2.5 -> 3, -1.25 -> -1; 0.04 -> 0 is removed */
    assert_true(w[0] == (float)0.3 && w[1] == (float)-0.1 && w[2] == 0);
    assert_true(w[3] == (float)0.1 && w[5] == 7);
    assert_true(rm[2] == 1 && rm[0] == 0 && rm[3] == 0 && rm[5] == 0);
    /* -0.05f is -0.0500000007...: -0.500000007 rounds to -1 */
    assert_true(w[4] == (float)-0.1 && rm[4] == 0);
    float v[3] = {0.123456f, -2.5f, 0.4f};
    uint8_t rv[3] = {0};
    assert_int_equal(nn_sparsify_round(v, 3, 0, rv), 2);
    assert_true(v[0] == 0 && v[1] == -3 && v[2] == 0);
    assert_true(rv[0] == 1 && rv[1] == 0 && rv[2] == 1);
    float u[1] = {0.123456f};
    uint8_t ru[1] = {0};
    assert_int_equal(nn_sparsify_round(u, 1, 4, ru), 0);
    assert_true(u[0] == (float)0.1235);
}

static void test_nn_sparsify_zero_seeded(void **state)
{
    (void)state;
    enum { N = 1000 };
    static uint8_t rm[N], again[N];
    struct tv_rng rng, copy;
    tv_rng_init(&rng, 42, 1, 7);
    copy = rng;
    size_t c = nn_sparsify_zero(N, 0.3, &rng, rm);
    /* one uniform draw per weight, removed iff u < P */
    size_t want = 0;
    for (size_t k = 0; k < N; k++) {
        int r = tv_rng_uniform(&copy) < 0.3;
        want += r;
        assert_int_equal(rm[k], r);
    }
    assert_int_equal(c, want);
    assert_true(rng.ctr == copy.ctr);
    assert_true(c > 250 && c < 350);
    tv_rng_init(&rng, 42, 1, 7);
    assert_int_equal(nn_sparsify_zero(N, 0.3, &rng, again), c);
    assert_memory_equal(rm, again, N);
    memset(rm, 0, N);
    assert_int_equal(nn_sparsify_zero(N, 0, &rng, rm), 0);
    assert_int_equal(nn_sparsify_zero(N, 1, &rng, rm), N);
}

static void test_nn_sparsify_zero_prop_probabilities(void **state)
{
    (void)state;
    /* M = 1, r = {1, 0.5, 0}, sum 1.5, n 3, P 0.2: p = {0.4, 0.2, 0} */
    const float w[3] = {0, -0.5f, 1};
    const double p[3] = {0.4, 0.2, 0};
    size_t hits[3] = {0};
    for (uint64_t seed = 0; seed < 2000; seed++) {
        struct tv_rng rng, copy;
        tv_rng_init(&rng, seed, 0, 0);
        copy = rng;
        uint8_t rm[3] = {0};
        size_t c = nn_sparsify_zero_prop(w, 3, 0.2, &rng, rm);
        size_t want = 0;
        for (int k = 0; k < 3; k++) {
            int r = tv_rng_uniform(&copy) < p[k];
            assert_int_equal(rm[k], r);
            want += r;
            hits[k] += rm[k];
        }
        assert_int_equal(c, want);
    }
    /* smaller |w| removed more often, the largest never; mean rate about P */
    assert_true(hits[0] > hits[1] && hits[1] > hits[2] && hits[2] == 0);
    assert_true(hits[0] + hits[1] > 1000 && hits[0] + hits[1] < 1400);
}

static void test_nn_sparsify_zero_prop_equal_weights(void **state)
{
    (void)state;
    const float w[4] = {0.5f, -0.5f, 0.5f, 0.5f};
    struct tv_rng rng, copy;
    tv_rng_init(&rng, 3, 0, 0);
    copy = rng;
    uint8_t rm[4] = {0};
    nn_sparsify_zero_prop(w, 4, 0.5, &rng, rm);
    for (int k = 0; k < 4; k++)
        assert_int_equal(rm[k], tv_rng_uniform(&copy) < 0.5);
    /* the cap at 1: P = 1 over {0, 1} gives p = {min(1, 2), 0} */
    const float v[2] = {0, 1};
    uint8_t rv[2] = {0};
    assert_int_equal(nn_sparsify_zero_prop(v, 2, 1, &rng, rv), 1);
    assert_true(rv[0] == 1 && rv[1] == 0);
}

/* ---- the lock set -------------------------------------------------------------- */

static void test_nn_sparsify_lock_refuses_then_allows(void **state)
{
    (void)state;
    struct nn_sparsify_lock l;
    struct tv_error err = {0};
    nn_sparsify_lock_init(&l, 5);
    assert_int_equal(nn_sparsify_lock_allows(&l, 1, 2, 0), 1);
    assert_ok(nn_sparsify_lock_add(&l, 1, 2, 10, &err), &err);
    for (uint64_t s = 10; s < 15; s++)
        assert_int_equal(nn_sparsify_lock_allows(&l, 1, 2, s), 0);
    assert_int_equal(nn_sparsify_lock_allows(&l, 1, 2, 15), 1);
    assert_int_equal(nn_sparsify_lock_allows(&l, 2, 1, 12), 1);
    assert_int_equal(nn_sparsify_lock_allows(&l, 1, 3, 12), 1);
    /* removed again later: locked again from then */
    assert_ok(nn_sparsify_lock_add(&l, 1, 2, 20, &err), &err);
    assert_int_equal(nn_sparsify_lock_allows(&l, 1, 2, 24), 0);
    assert_int_equal(nn_sparsify_lock_allows(&l, 1, 2, 25), 1);
    /* many keys: the set grows, every one locked */
    for (uint32_t i = 0; i < 1000; i++)
        assert_ok(nn_sparsify_lock_add(&l, i, UINT32_MAX - 1 - i, 30, &err), &err);
    for (uint32_t i = 0; i < 1000; i++) {
        assert_int_equal(nn_sparsify_lock_allows(&l, i, UINT32_MAX - 1 - i, 34), 0);
        assert_int_equal(nn_sparsify_lock_allows(&l, i, UINT32_MAX - 1 - i, 35), 1);
    }
    assert_true(l.n >= 1000);
    /* later adds drop the run-out entries when the set grows */
    for (uint32_t i = 0; i < 1000; i++)
        assert_ok(nn_sparsify_lock_add(&l, 5000 + i, 7, 100, &err), &err);
    assert_true(l.n < 2000);
    assert_int_equal(nn_sparsify_lock_allows(&l, 5999, 7, 104), 0);
    nn_sparsify_lock_release(&l);
    assert_int_equal(l.n, 0);
}

static void test_nn_sparsify_lock_plain_set(void **state)
{
    (void)state;
    struct nn_sparsify_lock l;
    struct tv_error err = {0};
    nn_sparsify_lock_init(&l, 0);
    for (uint32_t i = 0; i < 100; i++)
        assert_ok(nn_sparsify_lock_add(&l, i, i + 1, 0, &err), &err);
    assert_int_equal(l.n, 100);
    assert_int_equal(nn_sparsify_lock_allows(&l, 50, 51, UINT64_MAX), 0);
    assert_int_equal(nn_sparsify_lock_allows(&l, 51, 50, 0), 1);
    nn_sparsify_lock_release(&l);
}

/* ---- rigl's top-k ------------------------------------------------------------- */

static int all_but_2_to_4(void *ctx, uint32_t from, uint32_t to)
{
    (void)ctx;
    return !(from == 2 && to == 4);
}

static void test_nn_sparsify_rigl_top_order(void **state)
{
    (void)state;
    /* neurons (dense) 0..4 with ids 0, 1, 2, 4, 3; batch 2 */
    const uint32_t id[5] = {0, 1, 2, 4, 3};
    const float value[5 * 2] = {1, 2, -1, 0.5f, 3, 3, 0, 0, 0, 0};
    const float delta[5 * 2] = {0, 0, 0, 0, 0, 0, 1, -1, 0.5f, 0.5f};
    /* g(i, j) = sum_b v_i[b] d_j[b]:
     *   to id 4 (dense 3, d = 1,-1):  from 0: -1, from 1: -1.5, from 2: 0 (excluded)
     *   to id 3 (dense 4, d = .5,.5): from 0: 1.5, from 1: -0.25, from 2: 3 */
    const uint32_t from_idx[3] = {0, 1, 2}, to_idx[2] = {3, 4};
    struct genome_conn out[6];
    size_t n;
    struct tv_error err = {0};
    assert_ok(nn_sparsify_rigl_top(value, delta, 2, id, from_idx, 3, to_idx, 2, 4, all_but_2_to_4,
                                   NULL, out, &n, &err),
              &err);
    assert_int_equal(n, 4);
    const struct genome_conn want[4] = {{2, 3, 3}, {0, 3, 1.5f}, {1, 4, -1.5f}, {0, 4, -1}};
    for (size_t k = 0; k < 4; k++) {
        assert_int_equal(out[k].from, want[k].from);
        assert_int_equal(out[k].to, want[k].to);
        assert_true(out[k].weight == want[k].weight);
    }
    /* k above the candidates: all five, ties of |g| by (from, to) */
    assert_ok(nn_sparsify_rigl_top(value, delta, 2, id, from_idx, 3, to_idx, 2, 6, all_but_2_to_4,
                                   NULL, out, &n, &err),
              &err);
    assert_int_equal(n, 5);
    assert_int_equal(out[4].from, 1);
    assert_int_equal(out[4].to, 3);
    /* equal |g|: smaller (from, to) first */
    const float v1[3 * 1] = {1, -1, 1}, d1[3 * 1] = {0, 0, 2};
    const uint32_t id1[3] = {7, 5, 9}, f1[2] = {0, 1}, t1[1] = {2};
    assert_ok(
        nn_sparsify_rigl_top(v1, d1, 1, id1, f1, 2, t1, 1, 1, all_but_2_to_4, NULL, out, &n, &err),
        &err);
    assert_int_equal(n, 1);
    assert_int_equal(out[0].from, 5);
    assert_true(out[0].weight == -2);
}

/* ---- the sparsifier: policies it refuses ---------------------------------------- */

static void test_nn_sparsifier_new_bad_policies(void **state)
{
    (void)state;
    struct nn_sparsifier *s = (struct nn_sparsifier *)&s;
    struct tv_error err = {0};
    struct nn_sparsity p[3] = {
        {NN_SPARSE_LOCK, 5, 0}, {NN_SPARSE_L1, 0.1, 0}, {NN_SPARSE_LOCK, 9, 0}};
    assert_error(nn_sparsifier_new(p, 3, 1, &s, &err), &err, TV_EINVAL, "lock:9: lock given twice");
    assert_null(s);
    struct nn_sparsity q[2] = {{NN_SPARSE_NEURON, 0, 0}, {NN_SPARSE_NEURON, 5, 0}};
    assert_error(nn_sparsifier_new(q, 2, 1, &s, &err), &err, TV_EINVAL,
                 "neuron:5: neuron given twice");
    struct nn_sparsity r[1] = {{NN_SPARSE_L1, -1, 0}};
    assert_error(nn_sparsifier_new(r, 1, 1, &s, &err), &err, TV_EINVAL, "l1:-1: D must be > 0");
    struct nn_sparsity u[1] = {{NN_SPARSE_COUNT, 1, 0}};
    assert_error(nn_sparsifier_new(u, 1, 1, &s, &err), &err, TV_EINVAL, "policy 0: unknown kind");
    struct nn_sparsity z[1] = {{NN_SPARSE_ZERO, 2, 0}};
    assert_error(nn_sparsifier_new(z, 1, 1, &s, &err), &err, TV_EINVAL,
                 "zero:2: P must be in [0, 1]");
    assert_ok(nn_sparsifier_new(NULL, 0, 1, &s, &err), &err);
    assert_int_equal(nn_sparsifier_needs_values(s), 0);
    struct nn_sparsifier_stats st;
    nn_sparsifier_stats(s, &st);
    assert_true(st.removed == 0 && st.grown == 0 && st.neurons == 0);
    nn_sparsifier_free(s);
    nn_sparsifier_free(NULL);
}

/* ---- the sparsifier on a real trainer ------------------------------------------- */

/* A layered network, hidden ReLU, identity outputs. */
static struct genome *make_net(const uint32_t *sizes, size_t n_layers, double density, double skip,
                               double rec, uint64_t seed)
{
    struct genome *g = genome_new();
    assert_non_null(g);
    struct genome_layered_spec sp = {
        sizes, n_layers, density, skip, rec, GENOME_ACT_RELU, GENOME_ACT_IDENTITY, 0.5};
    struct tv_rng rng = tu_rng(seed, 0, 0);
    struct tv_error err = {0};
    assert_ok(genome_build_layered(g, &sp, &rng, &err), &err);
    return g;
}

/* A batch of `batch` samples: inputs uniform in [0, 1), labels below n_out. */
struct batch {
    float x[16 * 8];
    uint32_t labels[16];
    size_t n;
};
static void make_batch(struct batch *b, size_t n, size_t n_in, size_t n_out, uint64_t seed)
{
    assert_true(n <= 16 && n * n_in <= 16 * 8);
    struct tv_rng rng = tu_rng(seed, 1, 0);
    b->n = n;
    for (size_t i = 0; i < n * n_in; i++)
        b->x[i] = (float)tv_rng_uniform(&rng);
    for (size_t i = 0; i < n; i++)
        b->labels[i] = tv_rng_below(&rng, (uint32_t)n_out);
}

static struct nn_trainer *make_trainer(const struct genome *g)
{
    struct nn_train_opts o = tu_train_opts(NN_OPT_SGD, 0.05f, 16);
    return tu_trainer(g, &o);
}

static void train_step(struct nn_trainer *t, const struct batch *b)
{
    double loss = 0;
    struct tv_error err = {0};
    assert_ok(nn_trainer_step(t, b->x, b->labels, NULL, 1, b->n, &loss, &err), &err);
    assert_true(isfinite(loss));
}

static struct nn_sparsifier *make_sparsifier(const char *const *specs, size_t n, uint64_t seed)
{
    struct nn_sparsity p[8];
    struct tv_error err = {0};
    assert_true(n <= 8);
    for (size_t i = 0; i < n; i++)
        assert_ok(nn_sparsity_parse(specs[i], &p[i], &err), &err);
    struct nn_sparsifier *s = NULL;
    assert_ok(nn_sparsifier_new(p, n, seed, &s, &err), &err);
    return s;
}

/* The trainer's network as a valid genome with as many connections as the
 * trainer, each with the view's weight. The caller frees it. */
static struct genome *written(struct nn_trainer *t)
{
    struct genome *g = genome_new();
    struct tv_error err = {0};
    assert_non_null(g);
    assert_ok(nn_trainer_write_genome(t, g, &err), &err);
    assert_ok(genome_validate(g, NULL, &err), &err);
    assert_int_equal(g->n_conns, nn_trainer_n_conns(t));
    struct nn_train_view v;
    nn_trainer_view(t, &v);
    tu_expect_view_of(&v, g);
    return g;
}

/* The layer of every neuron of g, by the rank of its depth: [n_neurons]. */
static uint32_t *layers_of(const struct genome *g)
{
    float *depths;
    size_t nl;
    struct tv_error err = {0};
    assert_ok(genome_layers(g, &depths, &nl, &err), &err);
    uint32_t *l = malloc(g->n_neurons * sizeof *l);
    assert_non_null(l);
    for (size_t i = 0; i < g->n_neurons; i++)
        l[i] = (uint32_t)genome_layer_of(depths, nl, g->neurons[i].depth);
    free(depths);
    return l;
}

static uint32_t layer_id(const struct genome *g, const uint32_t *layer, uint32_t id)
{
    ptrdiff_t i = genome_find_neuron(g, id);
    assert_true(i >= 0);
    return layer[i];
}

/* 1 if connection c of a is in b with the same weight. */
static int has_same(const struct genome *b, const struct genome_conn *c)
{
    ptrdiff_t i = genome_find_conn(b, c->from, c->to);
    return i >= 0 && b->conns[i].weight == c->weight;
}

/* A network after one training step, its genome then (before), and a
 * sparsifier running specs on it; after is filled by fx_run. */
struct fixture {
    struct genome *g, *before, *after;
    uint32_t *layer; /* of g's neurons */
    struct nn_trainer *t;
    struct nn_sparsifier *s;
    struct batch b;
};

static void fx_init(struct fixture *f, const uint32_t *sizes, size_t n_layers, double density,
                    double skip, double rec, uint64_t seed, const char *const *specs,
                    size_t n_specs)
{
    memset(f, 0, sizeof *f);
    f->g = make_net(sizes, n_layers, density, skip, rec, seed);
    f->layer = layers_of(f->g);
    f->t = make_trainer(f->g);
    make_batch(&f->b, 8, sizes[0], sizes[n_layers - 1], seed);
    train_step(f->t, &f->b); /* value and delta come from g's weights */
    f->before = written(f->t);
    f->s = make_sparsifier(specs, n_specs, seed);
}

/* One sparsifier step (epoch = 0) or epoch end; the genome written after. */
static void fx_run(struct fixture *f, int epoch)
{
    struct tv_error err = {0};
    assert_ok(epoch ? nn_sparsifier_epoch(f->s, f->t, &err) : nn_sparsifier_step(f->s, f->t, &err),
              &err);
    f->after = written(f->t);
}

static void fx_release(struct fixture *f)
{
    nn_sparsifier_free(f->s);
    nn_trainer_free(f->t);
    struct genome *genomes[] = {f->g, f->before, f->after};
    for (size_t i = 0; i < 3; i++)
        genome_free(genomes[i]);
    free(f->layer);
}

/* The tests take a struct fixture to fx_init, released after them. */
TU_FIXTURE(fx, struct fixture, fx_release)
#define FX_TEST(test) cmocka_unit_test_setup_teardown(test, fx_setup, fx_teardown)

static void test_nn_sparsifier_step_threshold_removes_exactly(void **state)
{
    const uint32_t sizes[4] = {6, 8, 8, 3};
    struct fixture *f = *state;
    fx_init(f, sizes, 4, 0.6, 0.1, 0.1, 11, (const char *[]){"threshold:0.3"}, 1);
    fx_run(f, 0);
    size_t kept = 0;
    for (size_t i = 0; i < f->before->n_conns; i++) {
        const struct genome_conn *c = &f->before->conns[i];
        int keep = fabsf(c->weight) >= 0.3f;
        kept += keep;
        assert_int_equal(has_same(f->after, c), keep);
    }
    assert_true(kept > 0 && kept < f->before->n_conns);
    assert_int_equal(f->after->n_conns, kept);
    assert_int_equal(f->after->n_neurons, f->before->n_neurons);
    struct nn_sparsifier_stats st;
    nn_sparsifier_stats(f->s, &st);
    assert_int_equal(st.removed, f->before->n_conns - kept);
    /* training goes on */
    train_step(f->t, &f->b);
    struct tv_error err = {0};
    assert_ok(nn_sparsifier_step(f->s, f->t, &err), &err);
    genome_free(written(f->t));
}

static void test_nn_sparsifier_step_l1_then_threshold(void **state)
{
    const uint32_t sizes[3] = {5, 7, 3};
    struct fixture *f = *state;
    fx_init(f, sizes, 3, 0.7, 0, 0, 12, (const char *[]){"l1:0.125", "threshold:0.25"}, 2);
    fx_run(f, 0);
    size_t kept = 0;
    for (size_t i = 0; i < f->before->n_conns; i++) {
        struct genome_conn c = f->before->conns[i];
        float w = c.weight > 0 ? c.weight - 0.125f : c.weight + 0.125f;
        int keep = (w > 0) == (c.weight > 0) && w != 0 && fabsf(w) >= 0.25f;
        c.weight = w;
        kept += keep;
        assert_int_equal(has_same(f->after, &c), keep);
    }
    assert_true(kept > 0 && kept < f->before->n_conns);
    assert_int_equal(f->after->n_conns, kept);
}

/* Connections per layer pair (lf * 16 + lt) of g. */
static void pair_counts(const struct genome *g, const uint32_t *layer, size_t *count)
{
    memset(count, 0, 256 * sizeof *count);
    for (size_t i = 0; i < g->n_conns; i++)
        count[layer_id(g, layer, g->conns[i].from) * 16 + layer_id(g, layer, g->conns[i].to)]++;
}

/* The connections of `before` that policy set:f / rigl:f removes: per
 * eligible layer pair, the floor(f*m) smallest |w| (ties by (from, to)). */
static uint8_t *expected_removed(const struct genome *before, const uint32_t *layer, double f,
                                 int ff_only)
{
    size_t n = before->n_conns;
    uint8_t *rm = calloc(n ? n : 1, 1);
    assert_non_null(rm);
    size_t count[256];
    pair_counts(before, layer, count);
    for (size_t pair = 0; pair < 256; pair++) {
        if (!count[pair] || (ff_only && pair / 16 >= pair % 16))
            continue;
        size_t q = (size_t)(f * (double)count[pair]);
        for (size_t r = 0; r < q; r++) { /* the smallest not yet taken */
            size_t best = SIZE_MAX;
            for (size_t i = 0; i < n; i++) {
                const struct genome_conn *c = &before->conns[i];
                if (rm[i] ||
                    layer_id(before, layer, c->from) * 16 + layer_id(before, layer, c->to) != pair)
                    continue;
                if (best == SIZE_MAX || fabsf(c->weight) < fabsf(before->conns[best].weight))
                    best = i; /* canonical order: ties go to the smaller (from, to) */
            }
            rm[best] = 1;
        }
    }
    return rm;
}

static void test_nn_sparsifier_epoch_set_keeps_counts(void **state)
{
    const uint32_t sizes[4] = {6, 8, 8, 3};
    struct fixture *f = *state;
    fx_init(f, sizes, 4, 0.3, 0.05, 0.05, 13, (const char *[]){"set:0.3", "lock:1000"}, 2);
    fx_run(f, 1);
    /* same count in every layer pair (all have room) and in all */
    size_t cb[256], ca[256];
    pair_counts(f->before, f->layer, cb);
    pair_counts(f->after, f->layer, ca);
    assert_memory_equal(cb, ca, sizeof cb);
    assert_int_equal(f->after->n_conns, f->before->n_conns);
    /* exactly the smallest went; the locked ones did not come back */
    uint8_t *rm = expected_removed(f->before, f->layer, 0.3, 0);
    size_t n_rm = 0;
    for (size_t i = 0; i < f->before->n_conns; i++) {
        const struct genome_conn *c = &f->before->conns[i];
        n_rm += rm[i];
        assert_int_equal(has_same(f->after, c), !rm[i]);
        if (rm[i])
            assert_true(genome_find_conn(f->after, c->from, c->to) < 0);
    }
    assert_true(n_rm > 3);
    /* the grown ones are new, with weights of about the pair's size */
    size_t grown = 0;
    for (size_t i = 0; i < f->after->n_conns; i++)
        if (genome_find_conn(f->before, f->after->conns[i].from, f->after->conns[i].to) < 0) {
            grown++;
            assert_true(f->after->conns[i].weight != 0 && fabsf(f->after->conns[i].weight) < 5);
        }
    assert_int_equal(grown, n_rm);
    struct nn_sparsifier_stats st;
    nn_sparsifier_stats(f->s, &st);
    assert_int_equal(st.removed, n_rm);
    assert_int_equal(st.grown, n_rm);
    train_step(f->t, &f->b);
    free(rm);
}

/* The brute force for rigl: g plus every absent connection between adjacent
 * layers with weight 0, its gradients by the reference trainer in double. */
static double *brute_grad(const struct genome *g, const uint32_t *layer, const struct batch *b,
                          struct genome *aug)
{
    struct tv_error err = {0};
    assert_ok(genome_copy(aug, g, &err), &err);
    for (size_t i = 0; i < g->n_neurons; i++)
        for (size_t j = 0; j < g->n_neurons; j++)
            if (g->neurons[j].kind != GENOME_INPUT && layer[j] == layer[i] + 1 &&
                genome_find_conn(g, g->neurons[i].id, g->neurons[j].id) < 0)
                assert_ok(genome_add_conn(aug, g->neurons[i].id, g->neurons[j].id, 0, &err), &err);
    double *grad = malloc(aug->n_conns * sizeof *grad);
    double *bias_grad = malloc(aug->n_neurons * sizeof *bias_grad);
    double loss;
    assert_non_null(grad);
    assert_non_null(bias_grad);
    assert_ok(nn_reference_grad(aug, NN_LOSS_XENT, b->x, b->labels, NULL, 1, b->n, 0, &loss, grad,
                                bias_grad, &err),
              &err);
    free(bias_grad);
    return grad;
}

static void test_nn_sparsifier_epoch_rigl_largest_gradient(void **state)
{
    const uint32_t sizes[4] = {5, 7, 6, 3};
    struct fixture *f = *state;
    fx_init(f, sizes, 4, 0.4, 0, 0, 14, (const char *[]){"rigl:0.25"}, 1);
    fx_run(f, 1);
    assert_int_equal(f->after->n_conns, f->before->n_conns);
    uint8_t *rm = expected_removed(f->before, f->layer, 0.25, 1);
    struct genome aug;
    genome_init(&aug);
    double *grad = brute_grad(f->g, f->layer, &f->b, &aug);
    /* per layer pair: the grown ones are the candidates (absent after the
     * removal) of the largest |g| */
    for (uint32_t l = 0; l + 1 < 4; l++) {
        size_t q = 0, grown = 0;
        double min_grown = INFINITY, max_other = 0;
        for (size_t i = 0; i < f->before->n_conns; i++)
            q += rm[i] && layer_id(f->before, f->layer, f->before->conns[i].from) == l;
        for (size_t a = 0; a < aug.n_conns; a++) {
            const struct genome_conn *c = &aug.conns[a];
            if (layer_id(&aug, f->layer, c->from) != l || layer_id(&aug, f->layer, c->to) != l + 1)
                continue;
            ptrdiff_t ib = genome_find_conn(f->before, c->from, c->to);
            if (ib >= 0 && !rm[ib])
                continue; /* survives: not a candidate */
            ptrdiff_t ia = genome_find_conn(f->after, c->from, c->to);
            if (ia >= 0) {
                grown++;
                assert_true(f->after->conns[ia].weight == 0);
                min_grown = fmin(min_grown, fabs(grad[a]));
            } else {
                max_other = fmax(max_other, fabs(grad[a]));
            }
        }
        assert_true(q > 0);
        assert_int_equal(grown, q);
        assert_true(min_grown >= max_other * (1 - 1e-5));
    }
    for (size_t i = 0; i < f->before->n_conns; i++)
        if (!rm[i])
            assert_true(has_same(f->after, &f->before->conns[i]));
    free(grad);
    genome_release(&aug);
    free(rm);
}

/* A sequence batch: `steps` steps of n samples, inputs uniform in [0, 1),
 * every step labelled. */
struct seq {
    float x[6 * 8 * 8];
    uint32_t labels[6 * 8];
    size_t steps, n;
};
static void make_seq(struct seq *q, size_t steps, size_t n, size_t n_in, size_t n_out,
                     uint64_t seed)
{
    assert_true(steps * n <= 6 * 8 && steps * n * n_in <= 6 * 8 * 8);
    struct tv_rng rng = tu_rng(seed, 2, 0);
    q->steps = steps;
    q->n = n;
    for (size_t i = 0; i < steps * n * n_in; i++)
        q->x[i] = (float)tv_rng_uniform(&rng);
    for (size_t i = 0; i < steps * n; i++)
        q->labels[i] = tv_rng_below(&rng, (uint32_t)n_out);
}

/* rigl after a step on a 4-step sequence through a recurrent network grows,
 * per layer pair, the absent connections of the largest |g|, g = sum over
 * the batch of value_i * delta_j at the LAST step, both from the reference
 * (nn_reference_last_step on g's weights before the step). */
static void test_nn_sparsifier_epoch_rigl_on_a_sequence_reads_the_last_step(void **state)
{
    const uint32_t sizes[4] = {5, 7, 6, 3};
    struct fixture *f = *state;
    struct tv_error err = {0};
    memset(f, 0, sizeof *f);
    f->g = make_net(sizes, 4, 0.4, 0, 0.3, 17);
    f->layer = layers_of(f->g);
    f->t = make_trainer(f->g);
    struct seq q;
    make_seq(&q, 4, 8, sizes[0], sizes[3], 17);
    double loss = 0;
    assert_ok(nn_trainer_step(f->t, q.x, q.labels, NULL, q.steps, q.n, &loss, &err), &err);
    f->before = written(f->t);
    f->s = make_sparsifier((const char *[]){"rigl:0.25"}, 1, 17);
    fx_run(f, 1);
    size_t n = f->g->n_neurons, nb = q.n, n_rec = 0;
    for (size_t i = 0; i < f->g->n_conns; i++)
        n_rec += layer_id(f->g, f->layer, f->g->conns[i].from) >=
                 layer_id(f->g, f->layer, f->g->conns[i].to);
    assert_true(n_rec > 0);
    double *value = malloc(n * nb * sizeof *value), *delta = malloc(n * nb * sizeof *delta);
    assert_true(value && delta);
    assert_ok(nn_reference_last_step(f->g, NN_LOSS_XENT, q.x, q.labels, NULL, q.steps, nb, 0, value,
                                     delta, NULL, &err),
              &err);
    uint8_t *rm = expected_removed(f->before, f->layer, 0.25, 1);
    for (uint32_t l = 0; l + 1 < 4; l++) {
        size_t want = 0, grown = 0;
        double min_grown = INFINITY, max_other = 0;
        for (size_t i = 0; i < f->before->n_conns; i++)
            want += rm[i] && layer_id(f->before, f->layer, f->before->conns[i].from) == l &&
                    layer_id(f->before, f->layer, f->before->conns[i].to) == l + 1;
        for (size_t i = 0; i < n; i++)
            for (size_t j = 0; j < n; j++) {
                if (f->layer[i] != l || f->layer[j] != l + 1 ||
                    f->g->neurons[j].kind == GENOME_INPUT)
                    continue;
                uint32_t from = f->g->neurons[i].id, to = f->g->neurons[j].id;
                ptrdiff_t ib = genome_find_conn(f->before, from, to);
                if (ib >= 0 && !rm[ib])
                    continue; /* survives: not a candidate */
                double g = 0;
                for (size_t b = 0; b < nb; b++)
                    g += value[i * nb + b] * delta[j * nb + b];
                ptrdiff_t ia = genome_find_conn(f->after, from, to);
                if (ia >= 0) {
                    grown++;
                    assert_true(f->after->conns[ia].weight == 0);
                    min_grown = fmin(min_grown, fabs(g));
                } else {
                    max_other = fmax(max_other, fabs(g));
                }
            }
        assert_true(want > 0);
        assert_int_equal(grown, want);
        if (min_grown < max_other * (1 - 1e-5))
            fail_msg("layers %u -> %u: grew |g| %g while %g was left", l, l + 1, min_grown,
                     max_other);
        assert_true(min_grown > 0);
    }
    TV_FREE_ALL(value, delta, rm);
}

static void test_nn_sparsifier_epoch_rigl_needs_a_gradient(void **state)
{
    (void)state;
    const uint32_t sizes[3] = {4, 5, 2};
    struct genome *g = make_net(sizes, 3, 0.5, 0, 0, 15);
    struct nn_trainer *t = make_trainer(g);
    const char *spec[] = {"rigl:0.2"};
    struct nn_sparsifier *s = make_sparsifier(spec, 1, 9);
    struct tv_error err = {0};
    assert_int_equal(nn_sparsifier_needs_values(s), 1);
    assert_error(nn_sparsifier_epoch(s, t, &err), &err, TV_ESTATE,
                 "sparsifier: rigl:0.2: no gradient yet");
    assert_int_equal(nn_trainer_n_conns(t), g->n_conns);
    /* a step with the values off: still none */
    struct batch b;
    make_batch(&b, 8, 4, 2, 1);
    nn_trainer_keep_values(t, 0);
    train_step(t, &b);
    assert_error(nn_sparsifier_epoch(s, t, &err), &err, TV_ESTATE, "nn_trainer_keep_values is off");
    nn_trainer_keep_values(t, 1);
    train_step(t, &b);
    assert_ok(nn_sparsifier_epoch(s, t, &err), &err);
    assert_int_equal(nn_trainer_n_conns(t), g->n_conns);
    nn_sparsifier_free(s);
    nn_trainer_free(t);
    genome_free(g);
}

/* 4 inputs, 6 hidden, 3 outputs, dense; hidden ids 7, 8 have bias -100
 * (dead ReLUs), the others +50 (alive for every input in [0, 1)). */
static struct genome *net_with_dead(void)
{
    const uint32_t sizes[3] = {4, 6, 3};
    struct genome *g = make_net(sizes, 3, 1, 0, 0, 16);
    for (size_t i = 0; i < g->n_neurons; i++)
        if (g->neurons[i].kind == GENOME_HIDDEN)
            g->neurons[i].bias = g->neurons[i].id == 7 || g->neurons[i].id == 8 ? -100 : 50;
    return g;
}

static void check_dead_removed(const struct genome *g, struct nn_trainer *t)
{
    struct genome *after = written(t);
    assert_int_equal(after->n_neurons, g->n_neurons - 2);
    assert_true(genome_find_neuron(after, 7) < 0 && genome_find_neuron(after, 8) < 0);
    size_t want = 0;
    for (size_t i = 0; i < g->n_conns; i++) {
        const struct genome_conn *c = &g->conns[i];
        int gone = c->from == 7 || c->from == 8 || c->to == 7 || c->to == 8;
        want += !gone;
        assert_int_equal(genome_find_conn(after, c->from, c->to) >= 0, !gone);
    }
    assert_int_equal(after->n_conns, want);
    genome_free(after);
}

static void test_nn_sparsifier_neuron_removes_dead(void **state)
{
    (void)state;
    struct genome *g = net_with_dead();
    struct nn_trainer *t = make_trainer(g);
    struct batch b;
    make_batch(&b, 8, 4, 3, 5);
    const char *spec[] = {"neuron:2"};
    struct nn_sparsifier *s = make_sparsifier(spec, 1, 9);
    struct tv_error err = {0};
    train_step(t, &b);
    assert_ok(nn_sparsifier_step(s, t, &err), &err); /* step 1: not checked */
    assert_int_equal(nn_trainer_n_conns(t), g->n_conns);
    train_step(t, &b);
    assert_ok(nn_sparsifier_step(s, t, &err), &err);
    check_dead_removed(g, t);
    struct nn_sparsifier_stats st;
    nn_sparsifier_stats(s, &st);
    assert_int_equal(st.neurons, 2);
    train_step(t, &b);
    nn_sparsifier_free(s);
    nn_trainer_free(t);
    /* once an epoch; an epoch without a step removes nothing */
    t = make_trainer(g);
    const char *spec2[] = {"neuron"};
    s = make_sparsifier(spec2, 1, 9);
    assert_ok(nn_sparsifier_epoch(s, t, &err), &err);
    assert_int_equal(nn_trainer_n_conns(t), g->n_conns);
    train_step(t, &b);
    assert_ok(nn_sparsifier_step(s, t, &err), &err);
    assert_int_equal(nn_trainer_n_conns(t), g->n_conns);
    assert_ok(nn_sparsifier_epoch(s, t, &err), &err);
    check_dead_removed(g, t);
    assert_ok(nn_sparsifier_epoch(s, t, &err), &err); /* no step since: nothing */
    check_dead_removed(g, t);
    nn_sparsifier_free(s);
    nn_trainer_free(t);
    genome_free(g);
}

/* A few steps and epochs of random removal and regrowth: the genome. */
static struct genome *noisy_run(uint64_t seed)
{
    const uint32_t sizes[4] = {6, 8, 8, 3};
    struct genome *g = make_net(sizes, 4, 0.4, 0.05, 0.05, 17);
    struct nn_trainer *t = make_trainer(g);
    const char *spec[] = {"zero:0.05", "zero_prop:0.05", "set:0.2", "rigl:0.1", "lock:3"};
    struct nn_sparsifier *s = make_sparsifier(spec, 5, seed);
    struct tv_error err = {0};
    for (int e = 0; e < 3; e++) {
        for (int k = 0; k < 4; k++) {
            struct batch b;
            make_batch(&b, 8, 6, 3, (uint64_t)(e * 4 + k));
            train_step(t, &b);
            assert_ok(nn_sparsifier_step(s, t, &err), &err);
        }
        assert_ok(nn_sparsifier_epoch(s, t, &err), &err);
    }
    struct genome *out = written(t);
    nn_sparsifier_free(s);
    nn_trainer_free(t);
    genome_free(g);
    return out;
}

static void test_nn_sparsifier_deterministic(void **state)
{
    (void)state;
    struct genome *a = noisy_run(1), *b = noisy_run(1), *c = noisy_run(2);
    assert_true(genome_equal(a, b));
    assert_false(genome_equal(a, c));
    genome_free(a);
    genome_free(b);
    genome_free(c);
}

/* ---- allocation failure ---------------------------------------------------------- */

/* An entry point under allocation failure: setup (not failed), the call,
 * undo (releases what setup and the call made). */
struct sweep_case {
    void (*setup)(void *ctx);
    int (*call)(void *ctx, struct tv_error *err);
    void (*undo)(void *ctx);
};

/* Fails allocation k = 1, 2, ... of the call until it succeeds; each failure
 * must be TV_ENOMEM with "out of memory" and leak nothing. Returns the number
 * of allocation points. */
static unsigned long sweep(const struct sweep_case *c, void *ctx)
{
    unsigned long k;
    for (k = 1;; k++) {
        struct tv_error err = {0};
        failalloc_track(1);
        size_t live = failalloc_live();
        if (c->setup)
            c->setup(ctx);
        failalloc_arm(k);
        int rc = c->call(ctx, &err);
        failalloc_disarm();
        int fired = failalloc_fired();
        if (fired)
            assert_error(rc, &err, TV_ENOMEM, "out of memory");
        else
            assert_ok(rc, &err);
        c->undo(ctx);
        assert_int_equal(failalloc_live(), live);
        failalloc_track(0);
        if (!fired)
            break;
    }
    return k - 1;
}

struct new_ctx {
    struct nn_sparsifier *s;
};
static int call_new(void *ctx, struct tv_error *err)
{
    struct new_ctx *c = ctx;
    const struct nn_sparsity p[2] = {{NN_SPARSE_L1, 0.1, 0}, {NN_SPARSE_LOCK, 3, 0}};
    return nn_sparsifier_new(p, 2, 7, &c->s, err);
}
static void undo_new(void *ctx)
{
    struct new_ctx *c = ctx;
    nn_sparsifier_free(c->s);
    c->s = NULL;
}

static int call_lock(void *ctx, struct tv_error *err)
{
    struct nn_sparsify_lock *l = ctx;
    for (uint32_t i = 0; i < 100; i++) {
        int rc = nn_sparsify_lock_add(l, i, 2 * i, 1, err);
        if (rc)
            return rc;
    }
    return 0;
}
static void undo_lock(void *ctx)
{
    nn_sparsify_lock_release(ctx);
}

static int none_excluded(void *ctx, uint32_t from, uint32_t to)
{
    (void)ctx;
    (void)from;
    (void)to;
    return 1;
}
static int call_rigl_top(void *ctx, struct tv_error *err)
{
    (void)ctx;
    const uint32_t id[3] = {0, 1, 2}, f[2] = {0, 1}, t[1] = {2};
    const float v[3] = {1, 2, 0}, d[3] = {0, 0, 1};
    struct genome_conn out[2];
    size_t n;
    return nn_sparsify_rigl_top(v, d, 1, id, f, 2, t, 1, 2, none_excluded, NULL, out, &n, err);
}
static void undo_nothing(void *ctx)
{
    (void)ctx;
}

/* A trainer after one step and a sparsifier running `specs` on it. */
struct run_ctx {
    const char *const *specs;
    size_t n_specs;
    struct genome *g;
    struct nn_trainer *t;
    struct nn_sparsifier *s;
};
static void setup_run(void *ctx)
{
    struct run_ctx *c = ctx;
    struct batch b;
    make_batch(&b, 8, 4, 3, 6);
    c->t = make_trainer(c->g);
    train_step(c->t, &b);
    c->s = make_sparsifier(c->specs, c->n_specs, 3);
}
static int call_step(void *ctx, struct tv_error *err)
{
    struct run_ctx *c = ctx;
    return nn_sparsifier_step(c->s, c->t, err);
}
static int call_epoch(void *ctx, struct tv_error *err)
{
    struct run_ctx *c = ctx;
    return nn_sparsifier_epoch(c->s, c->t, err);
}
static void undo_run(void *ctx)
{
    struct run_ctx *c = ctx;
    nn_sparsifier_free(c->s);
    nn_trainer_free(c->t);
    c->s = NULL;
    c->t = NULL;
}

static void test_nn_sparsify_alloc_failures(void **state)
{
    (void)state;
    struct new_ctx nc = {NULL};
    const struct sweep_case new_case = {NULL, call_new, undo_new};
    assert_true(sweep(&new_case, &nc) >= 2);
    struct nn_sparsify_lock l;
    nn_sparsify_lock_init(&l, 4);
    const struct sweep_case lock_case = {NULL, call_lock, undo_lock};
    assert_true(sweep(&lock_case, &l) >= 2);
    const struct sweep_case top_case = {NULL, call_rigl_top, undo_nothing};
    assert_true(sweep(&top_case, NULL) >= 1);
    /* on a trainer: the sparsifier's own allocations and the trainer's */
    struct genome *g = net_with_dead();
    const char *step_specs[] = {"zero:0.3", "lock:5", "neuron:1"};
    struct run_ctx rc = {step_specs, 3, g, NULL, NULL};
    const struct sweep_case step_case = {setup_run, call_step, undo_run};
    assert_true(sweep(&step_case, &rc) >= 3);
    const char *epoch_specs[] = {"neuron", "set:0.3", "rigl:0.2", "lock:5"};
    struct run_ctx ec = {epoch_specs, 4, g, NULL, NULL};
    const struct sweep_case epoch_case = {setup_run, call_epoch, undo_run};
    assert_true(sweep(&epoch_case, &ec) >= 10);
    genome_free(g);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_nn_sparsity_parse_every_kind),
        cmocka_unit_test(test_nn_sparsity_parse_bad_specs),
        cmocka_unit_test(test_nn_sparsify_l1_exact),
        cmocka_unit_test(test_nn_sparsify_lp_exact),
        cmocka_unit_test(test_nn_sparsify_threshold_strict),
        cmocka_unit_test(test_nn_sparsify_round_digits),
        cmocka_unit_test(test_nn_sparsify_zero_seeded),
        cmocka_unit_test(test_nn_sparsify_zero_prop_probabilities),
        cmocka_unit_test(test_nn_sparsify_zero_prop_equal_weights),
        cmocka_unit_test(test_nn_sparsify_lock_refuses_then_allows),
        cmocka_unit_test(test_nn_sparsify_lock_plain_set),
        cmocka_unit_test(test_nn_sparsify_rigl_top_order),
        cmocka_unit_test(test_nn_sparsifier_new_bad_policies),
        FX_TEST(test_nn_sparsifier_step_threshold_removes_exactly),
        FX_TEST(test_nn_sparsifier_step_l1_then_threshold),
        FX_TEST(test_nn_sparsifier_epoch_set_keeps_counts),
        FX_TEST(test_nn_sparsifier_epoch_rigl_largest_gradient),
        FX_TEST(test_nn_sparsifier_epoch_rigl_on_a_sequence_reads_the_last_step),
        cmocka_unit_test(test_nn_sparsifier_epoch_rigl_needs_a_gradient),
        cmocka_unit_test(test_nn_sparsifier_neuron_removes_dead),
        cmocka_unit_test(test_nn_sparsifier_deterministic),
        cmocka_unit_test(test_nn_sparsify_alloc_failures),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
