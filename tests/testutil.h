/* testutil.h -- helpers shared by the cmocka tests: error assertions that
 * check the code *and* the message; streams (tu_rng) and the reference
 * shuffle (tu_fisher_yates); genomes of the shapes the tests need (random
 * valid genomes with skip, recurrent and split-made hidden neurons, random
 * graph shapes, small fixed ones, minimal ones, layered ones); fixtures that
 * release what a test holds even when an assertion fails (one, two or three
 * genomes; TU_FIXTURE for a file's own struct); substrings a text must hold;
 * a temporary directory; a shell command that must succeed. Include after
 * <cmocka.h>. Everything here is static inline so that a test file that uses
 * only part of it builds with -Werror. */
#ifndef TREVO_TESTUTIL_H
#define TREVO_TESTUTIL_H

#include <float.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "genome.h"

/* rc must be `code`, err->code too, and err->msg must contain `sub`. */
#define assert_error(rc, err, code, sub)                                                           \
    tu_assert_error_((rc), (err), (code), (sub), __FILE__, __LINE__)

/* err->msg must contain `sub`. */
#define assert_msg_has(err, sub)                                                                   \
    tu_assert_error_((err)->code, (err), (err)->code, (sub), __FILE__, __LINE__)

/* rc must be 0; on failure the message is printed. */
#define assert_ok(rc, err) tu_assert_ok_((rc), (err), __FILE__, __LINE__)

static inline void tu_assert_error_(int rc, const struct tv_error *err, int code, const char *sub,
                                    const char *file, int line)
{
    if (rc != code || err->code != code || !strstr(err->msg, sub)) {
        print_error("%s:%d: got rc %d (%s), err->code %d, message \"%s\";\n"
                    "    wanted rc %d (%s) and a message containing \"%s\"\n",
                    file, line, rc, tv_code_name(rc), err->code, err->msg, code, tv_code_name(code),
                    sub);
        _fail(file, line);
    }
}

static inline void tu_assert_ok_(int rc, const struct tv_error *err, const char *file, int line)
{
    if (rc != 0) {
        print_error("%s:%d: got rc %d (%s): \"%s\"\n", file, line, rc, tv_code_name(rc),
                    err ? err->msg : "");
        _fail(file, line);
    }
}

/* The random stream (seed, a, b) of tv_rng_init, as a value:
 * `struct tv_rng rng = tu_rng(seed, a, b);`. */
static inline struct tv_rng tu_rng(uint64_t seed, uint64_t a, uint64_t b)
{
    struct tv_rng rng;
    tv_rng_init(&rng, seed, a, b);
    return rng;
}

/* Aggressive mutation rates: every structural operator fires often. */
static inline struct genome_mutation tu_aggressive_mutation(void)
{
    struct genome_mutation m = {0};
    m.weight_perturb_rate = 0.8;
    m.weight_perturb_sd = 0.5;
    m.weight_replace_rate = 0.1;
    m.weight_init_sd = 1.0;
    m.bias_perturb_rate = 0.5;
    m.bias_perturb_sd = 0.3;
    m.bias_replace_rate = 0.1;
    m.bias_init_sd = 1.0;
    m.add_local_rate = 0.6;
    m.add_skip_rate = 0.4;
    m.add_recurrent_rate = 0.3;
    m.del_conn_rate = 0.2;
    m.add_neuron_rate = 0.5;
    m.del_neuron_rate = 0.1;
    m.act_change_rate = 0.2;
    m.act_choices = (1u << GENOME_ACT_COUNT) - 1;
    m.hidden_act = GENOME_ACT_TANH;
    return m;
}

/* A random layered genome (2..5 layers, skip and recurrent connections),
 * then 0..n_mut-1 aggressive mutations (splits make hashed hidden ids). Every
 * intermediate genome is checked with genome_validate. */
static inline void tu_random_genome(struct genome *g, struct tv_rng *rng, uint32_t n_mut)
{
    struct tv_error err = {0};
    uint32_t sizes[5];
    size_t L = 2 + tv_rng_below(rng, 4);
    for (size_t l = 0; l < L; l++)
        sizes[l] = 1 + tv_rng_below(rng, l == 0 ? 6 : l == L - 1 ? 4 : 8);
    struct genome_layered_spec spec = {
        .sizes = sizes,
        .n_layers = L,
        .density = 0.2 + 0.8 * tv_rng_uniform(rng),
        .skip_rate = 0.5 * tv_rng_uniform(rng),
        .recurrent_rate = 0.3 * tv_rng_uniform(rng),
        .hidden_act = (int)tv_rng_below(rng, GENOME_ACT_COUNT),
        .out_act = (int)tv_rng_below(rng, GENOME_ACT_COUNT),
        .weight_sd = 1.0,
    };
    assert_ok(genome_build_layered(g, &spec, rng, &err), &err);
    assert_ok(genome_validate(g, NULL, &err), &err);
    struct genome_mutation m = tu_aggressive_mutation();
    m.hidden_act = (int)tv_rng_below(rng, GENOME_ACT_COUNT);
    m.weight_max = tv_rng_chance(rng, 0.5) ? 0.0 : 4.0;
    uint32_t n = n_mut ? tv_rng_below(rng, n_mut) : 0;
    for (uint32_t i = 0; i < n; i++) {
        assert_ok(genome_mutate(g, &m, rng, &err), &err);
        assert_ok(genome_validate(g, NULL, &err), &err);
    }
}

/* The shape of a random NEAT-style graph (genome_build_graph): 1 to max_in
 * inputs, 1 to max_out outputs, fewer than max_hidden more neurons, fewer
 * than 6 connections a neuron, 1 to max_levels levels, a recurrent rate
 * below max_rec; drawn in that order. The caller sets weight_sd and the
 * activations. */
static inline struct genome_graph_spec tu_random_graph_spec(struct tv_rng *rng, uint32_t max_in,
                                                            uint32_t max_out, uint32_t max_hidden,
                                                            uint32_t max_levels, double max_rec)
{
    struct genome_graph_spec sp = {0};
    sp.n_in = 1 + tv_rng_below(rng, max_in);
    sp.n_out = 1 + tv_rng_below(rng, max_out);
    sp.n_neurons = sp.n_in + sp.n_out + tv_rng_below(rng, max_hidden);
    sp.n_conns = tv_rng_below(rng, (uint32_t)(6 * sp.n_neurons));
    sp.n_levels = 1 + tv_rng_below(rng, max_levels);
    sp.rec_rate = tv_rng_uniform(rng) * max_rec;
    return sp;
}

/* The Fisher-Yates shuffle of a[0..n) written out, the reference of the
 * shuffles under test: i from n - 1 down to 1, a[i] swapped with
 * a[tv_rng_below(rng, i + 1)]. */
static inline void tu_fisher_yates(struct tv_rng *rng, uint32_t *a, size_t n)
{
    for (size_t i = n - 1; n > 1 && i > 0; i--) {
        size_t j = tv_rng_below(rng, (uint32_t)(i + 1));
        uint32_t t = a[i];
        a[i] = a[j];
        a[j] = t;
    }
}

/* Replaces some weights and biases by awkward but finite floats: -0, the
 * smallest denormal, the largest float, values that need 9 digits. */
static inline void tu_spice_floats(struct genome *g, struct tv_rng *rng)
{
    static const float odd[] = {-0.0f,    0.0f,        1.4e-45f, -1.4e-45f, FLT_MIN,
                                FLT_MAX,  -FLT_MAX,    1e-30f,   3.40e38f,  0.1f,
                                1.0f / 3, 16777217.0f, -2.5e-7f};
    size_t n_odd = sizeof odd / sizeof odd[0];
    for (size_t i = 0; i < g->n_conns; i++)
        if (tv_rng_chance(rng, 0.2))
            g->conns[i].weight = odd[tv_rng_below(rng, (uint32_t)n_odd)];
    for (size_t i = 0; i < g->n_neurons; i++)
        if (g->neurons[i].kind != GENOME_INPUT && tv_rng_chance(rng, 0.2))
            g->neurons[i].bias = odd[tv_rng_below(rng, (uint32_t)n_odd)];
}

/* A new genome of n_in inputs (ids 0..) each joined to n_out outputs of
 * activation act (genome_build_minimal), every weight w. The caller frees
 * it. */
static inline struct genome *tu_minimal_genome(uint32_t n_in, uint32_t n_out, int act, float w)
{
    struct tv_error err = {0};
    struct genome *g = genome_new();
    assert_non_null(g);
    assert_ok(genome_build_minimal(g, n_in, n_out, act, 0.0, NULL, &err), &err);
    for (size_t i = 0; i < g->n_conns; i++)
        g->conns[i].weight = w;
    return g;
}

/* A small fixed genome: inputs 0, 1 (depth 0), output 2 (depth 1), hidden 10
 * (0.5) and 11 (0.75); connections 0->10, 1->10, 10->11, 11->2, 0->2 (skip),
 * 0->11 (skip), 2->10 (recurrent), 10->10 (recurrent self loop). */
static inline void tu_small_genome(struct genome *g)
{
    struct tv_error err = {0};
    genome_reset(g);
    assert_ok(genome_add_neuron(g, 2, GENOME_OUTPUT, GENOME_ACT_SIGMOID, 0.5f, 1.0f, &err), &err);
    assert_ok(genome_add_neuron(g, 0, GENOME_INPUT, GENOME_ACT_IDENTITY, 0.0f, 0.0f, &err), &err);
    assert_ok(genome_add_neuron(g, 11, GENOME_HIDDEN, GENOME_ACT_RELU, -0.25f, 0.75f, &err), &err);
    assert_ok(genome_add_neuron(g, 1, GENOME_INPUT, GENOME_ACT_IDENTITY, 0.0f, 0.0f, &err), &err);
    assert_ok(genome_add_neuron(g, 10, GENOME_HIDDEN, GENOME_ACT_TANH, 0.125f, 0.5f, &err), &err);
    assert_ok(genome_add_conn(g, 10, 11, 0.5f, &err), &err);
    assert_ok(genome_add_conn(g, 0, 10, 1.5f, &err), &err);
    assert_ok(genome_add_conn(g, 11, 2, -1.0f, &err), &err);
    assert_ok(genome_add_conn(g, 1, 10, -0.75f, &err), &err);
    assert_ok(genome_add_conn(g, 0, 2, 2.0f, &err), &err);
    assert_ok(genome_add_conn(g, 0, 11, 0.25f, &err), &err);
    assert_ok(genome_add_conn(g, 2, 10, 0.3f, &err), &err);
    assert_ok(genome_add_conn(g, 10, 10, -0.1f, &err), &err);
}

/* A network whose sums cancel, so that the order of a sum decides its
 * value. Inputs 0..4; hidden 10 (act, depth 0.5) sums 1e8, 1, -1e8 from
 * inputs 0, 1, 2; output 5 = 10. Output 6 sums 1e8, 0.5, 1, 0.5, -1e8 from
 * inputs 0..4. Hidden 12 (identity, bias 1, depth 0.75) sums recurrent edges
 * 1e8 from itself, 1 from output 5 and -1e8 from output 7; output 7 = 12.
 * On inputs of ones, dot1's order (step1.c: 8 partials, then a tree) gives
 * outputs 1, 2, 1 at the first step and 1, 2, 2 after it; a sum in edge
 * order gives 0, 0, 1 and then 0, 0, 1. With act relu, layer 0.5 is one
 * the engine scatters by default. */
static inline void tu_cancel_genome(struct genome *g, int act)
{
    struct tv_error err = {0};
    genome_reset(g);
    for (uint32_t i = 0; i < 5; i++)
        assert_ok(genome_add_neuron(g, i, GENOME_INPUT, GENOME_ACT_IDENTITY, 0, 0, &err), &err);
    for (uint32_t o = 5; o < 8; o++)
        assert_ok(genome_add_neuron(g, o, GENOME_OUTPUT, GENOME_ACT_IDENTITY, 0, 1, &err), &err);
    assert_ok(genome_add_neuron(g, 10, GENOME_HIDDEN, act, 0, 0.5f, &err), &err);
    assert_ok(genome_add_neuron(g, 12, GENOME_HIDDEN, GENOME_ACT_IDENTITY, 1, 0.75f, &err), &err);
    static const struct {
        uint32_t from, to;
        float w;
    } e[] = {{0, 10, 1e8f}, {1, 10, 1},     {2, 10, -1e8f}, {10, 5, 1},    {0, 6, 1e8f},
             {1, 6, 0.5f},  {2, 6, 1},      {3, 6, 0.5f},   {4, 6, -1e8f}, {12, 12, 1e8f},
             {5, 12, 1},    {7, 12, -1e8f}, {12, 7, 1}};
    for (size_t k = 0; k < sizeof e / sizeof e[0]; k++)
        assert_ok(genome_add_conn(g, e[k].from, e[k].to, e[k].w, &err), &err);
    assert_ok(genome_canonicalize(g, &err), &err);
}

/* A fixture of a test file's own struct: TU_FIXTURE(name, type, release)
 * defines name_setup, which hands the test a zeroed `type` (`type *f =
 * *state;`), and name_teardown, which calls release(f) and frees it after
 * the test, even when an assertion fails; release must accept a zeroed
 * struct. In the test table: cmocka_unit_test_setup_teardown(test,
 * name_setup, name_teardown). */
#define TU_FIXTURE(name, type, release)                                                            \
    static inline int name##_setup(void **state)                                                   \
    {                                                                                              \
        *state = calloc(1, sizeof(type));                                                          \
        return *state ? 0 : -1;                                                                    \
    }                                                                                              \
    static inline int name##_teardown(void **state)                                                \
    {                                                                                              \
        release(*state);                                                                           \
        free(*state);                                                                              \
        return 0;                                                                                  \
    }

/* A fixture for tests of one genome: empty at the start, released after the
 * test, even when an assertion fails (TU_GENOME_TEST(test) in the test
 * table); the test takes it with `struct genome *g = *state;`. */
static inline int tu_genome_setup(void **state)
{
    *state = genome_new();
    return *state ? 0 : -1;
}
static inline int tu_genome_teardown(void **state)
{
    genome_free(*state);
    return 0;
}
#define TU_GENOME_TEST(test)                                                                       \
    cmocka_unit_test_setup_teardown(test, tu_genome_setup, tu_genome_teardown)

/* A fixture for tests of two genomes: both empty at the start, released
 * after the test (TU_PAIR_TEST(test) in the test table); the test takes it
 * with `struct tu_pair *t = *state;`. */
struct tu_pair {
    struct genome a, b;
    struct tv_error err;
};
static inline void tu_pair_release(struct tu_pair *t)
{
    genome_release(&t->a);
    genome_release(&t->b);
}
TU_FIXTURE(tu_pair, struct tu_pair, tu_pair_release)
#define TU_PAIR_TEST(test) cmocka_unit_test_setup_teardown(test, tu_pair_setup, tu_pair_teardown)
/* In such a test, `TU_PAIR_GENOMES(x, y);` names the two genomes (struct
 * genome *x, *y: a and b). */
#define TU_PAIR_GENOMES(x, y)                                                                      \
    struct genome *x = &((struct tu_pair *)*state)->a, *y = &((struct tu_pair *)*state)->b

/* The same for three genomes (TU_TRIO_TEST(test); `struct tu_trio *trio =
 * *state;`). */
struct tu_trio {
    struct genome a, b, c;
};
static inline void tu_trio_release(struct tu_trio *t)
{
    genome_release(&t->a);
    genome_release(&t->b);
    genome_release(&t->c);
}
TU_FIXTURE(tu_trio, struct tu_trio, tu_trio_release)
#define TU_TRIO_TEST(test) cmocka_unit_test_setup_teardown(test, tu_trio_setup, tu_trio_teardown)
/* `TU_TRIO_GENOMES(x, y, z);` names its genomes a, b and c. */
#define TU_TRIO_GENOMES(x, y, z)                                                                   \
    struct genome *x = &((struct tu_trio *)*state)->a, *y = &((struct tu_trio *)*state)->b,        \
                  *z = &((struct tu_trio *)*state)->c

/* A layered genome of sizes[0..n) (inputs, relu hidden layers, identity
 * outputs), every adjacent pair full, weights N(0, sd^2) drawn from
 * tv_rng_init(seed, 0, 0). */
static inline void tu_layered_full(struct genome *g, const uint32_t *sizes, size_t n, uint64_t seed,
                                   double sd)
{
    struct tv_rng rng;
    tv_rng_init(&rng, seed, 0, 0);
    struct genome_layered_spec spec = {.sizes = sizes,
                                       .n_layers = n,
                                       .density = 1,
                                       .hidden_act = GENOME_ACT_RELU,
                                       .out_act = GENOME_ACT_IDENTITY,
                                       .weight_sd = sd};
    struct tv_error err = {0};
    genome_init(g);
    tu_assert_ok_(genome_build_layered(g, &spec, &rng, &err), &err, __FILE__, __LINE__);
}

/* tu_small_genome with hidden neuron 10 (index 3) a leaky integrate-and-fire
 * neuron: threshold 0.5, decay 0.75, reset -0.25, refractory 2 (a format
 * version 2 genome). */
static inline void tu_lif_genome(struct genome *g)
{
    tu_small_genome(g);
    struct genome_neuron *n = &g->neurons[genome_find_neuron(g, 10)];
    genome_neuron_set_model(n, GENOME_MODEL_LIF);
    n->param[0] = 0.5f;
    n->param[1] = 0.75f;
    n->param[2] = -0.25f;
    n->param[3] = 2.0f;
}

/* The text form of g, malloc'd and NUL-terminated; its length in *len. */
static inline char *tu_text_of(const struct genome *g, size_t *len)
{
    struct tv_error err = {0};
    char *buf = NULL;
    size_t n = 0;
    FILE *f = open_memstream(&buf, &n);
    assert_non_null(f);
    assert_ok(genome_write_text(g, f, &err), &err);
    assert_int_equal(fclose(f), 0);
    *len = n;
    return buf;
}

/* Each of the n strings of want is in text; else the test fails, naming the
 * first that is not. */
static inline void tu_assert_has_all(const char *text, const char *const *want, size_t n)
{
    for (size_t i = 0; i < n; i++)
        if (!strstr(text, want[i])) {
            print_error("\"%s\" is not in:\n%s\n", want[i], text);
            fail();
        }
}

/* Runs the shell command cmd; unless it exits 0, the test fails with "could
 * not <what>: <cmd>". */
static inline void tu_run(const char *cmd, const char *what)
{
    if (system(cmd) != 0) {
        print_error("could not %s: %s\n", what, cmd);
        fail();
    }
}

/* A temporary directory for a test file's own files: tu_tmpdir() names it
 * once tu_tmpdir_setup (a cmocka group's setup) has made it;
 * tu_tmpdir_teardown deletes it and everything in it. */
static inline char *tu_tmpdir(void)
{
    static char dir[] = "/tmp/trevo_test_XXXXXX";
    return dir;
}

static inline int tu_tmpdir_setup(void **state)
{
    (void)state;
    return mkdtemp(tu_tmpdir()) ? 0 : -1;
}

static inline int tu_tmpdir_teardown(void **state)
{
    (void)state;
    char cmd[64];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", tu_tmpdir());
    return system(cmd);
}

#endif
