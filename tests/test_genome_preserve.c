/* test_genome_preserve.c -- function-preserving growth (genome.h,
 * genome_mutate with cfg->preserve, as LEMONADE's network morphisms): a
 * child grown from a parent by the growth operators alone computes what the
 * parent computes on random inputs, over several time steps (recurrent
 * connections included), run by the engine (nn_plan_compile, nn_step).
 *   - New connections start at 0 and a split passes its source's values
 *     through, so the function is the parent's; the bits are not always:
 *     the engine's gather sums a neuron's inputs in interleaved partial
 *     sums, and a new term (even a 0, or a split's, which moves a term into
 *     the new neuron) regroups the ones after it. Equal to a relative (and,
 *     for sums that cancel, absolute) 1e-5.
 *   - New filters and coefficients start at 0 (a convolution adds its
 *     coefficients' terms one after the other, and x + 0 is x) and a new
 *     channel feeds nothing: there the outputs are the parent's exactly
 *     (compared with ==: only the sign of a zero could differ).
 *   - Spiking neurons made by a split do not pass values through: not
 *     function-preserving, not tested.
 * The same growth without preserve changes the outputs (the control). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <math.h>

#include "nn.h"
#include "testutil.h"

#define N_ROWS 6
#define N_STEPS 3

/* Runs g on N_ROWS random rows for N_STEPS steps (a batch of N_ROWS, the
 * rows drawn from seed at each step) into out[N_STEPS][N_ROWS][n_out]. */
static float *outputs(const struct genome *g, uint64_t seed, size_t *n_out)
{
    struct tv_error err = {0};
    struct nn_plan *p;
    struct nn_state *s;
    assert_ok(nn_plan_compile(g, NULL, &p, &err), &err);
    assert_ok(nn_state_new(p, N_ROWS, &s, &err), &err);
    size_t n_in = genome_count_kind(g, GENOME_INPUT);
    *n_out = genome_count_kind(g, GENOME_OUTPUT);
    float *in = malloc(N_ROWS * n_in * sizeof *in);
    float *out = malloc(N_STEPS * N_ROWS * *n_out * sizeof *out);
    assert_true(in && out);
    struct tv_rng rng = tu_rng(seed, 40, 41);
    for (size_t t = 0; t < N_STEPS; t++) {
        for (size_t i = 0; i < N_ROWS * n_in; i++)
            in[i] = (float)(4 * tv_rng_uniform(&rng) - 2);
        nn_step(s, in, out + t * N_ROWS * *n_out);
    }
    free(in);
    nn_state_free(s);
    nn_plan_free(p);
    return out;
}

/* 0: every output of a equals b's (==); with tol > 0, within tol relative.
 * Otherwise 1. */
static int differ(const float *a, const float *b, size_t n, double tol)
{
    for (size_t i = 0; i < n; i++) {
        if (tol > 0 ? fabs((double)a[i] - b[i]) > tol * (1 + fabs((double)a[i])) : a[i] != b[i]) {
            return 1;
        }
    }
    return 0;
}

/* A rate network's growth operators only, each firing often. */
static struct genome_mutation growth(int preserve, int splits, int conns)
{
    struct genome_mutation m = {0};
    m.weight_init_sd = 1;
    m.hidden_act = GENOME_ACT_RELU;
    m.preserve = preserve;
    if (conns) {
        m.add_local_rate = 1;
        m.add_skip_rate = 1;
        m.add_recurrent_rate = 1;
        m.add_local_per_conn = 0.2;
        m.add_skip_per_conn = 0.1;
        m.add_recurrent_per_conn = 0.05;
    }
    if (splits) {
        m.add_neuron_rate = 1;
        m.add_neuron_per_neuron = 0.3;
    }
    return m;
}

/* Over random genomes (activations of every kind, recurrent connections),
 * each grown 3 times: the parent's outputs within tol; returns how many
 * children of the control (no preserve) differ by more than 1e-3. */
static size_t check_growth(int splits, int conns, double tol)
{
    struct tv_error err = {0};
    size_t changed = 0, grew = 0;
    for (uint64_t seed = 1; seed <= 30; seed++) {
        struct genome parent, child, control;
        genome_init(&parent);
        genome_init(&child);
        genome_init(&control);
        struct tv_rng rng = tu_rng(seed, 50, 51);
        tu_random_genome(&parent, &rng, 4);
        assert_ok(genome_copy(&child, &parent, &err), &err);
        assert_ok(genome_copy(&control, &parent, &err), &err);
        struct genome_mutation keep = growth(1, splits, conns), plain = growth(0, splits, conns);
        struct tv_rng r1 = tu_rng(seed, 52, 53), r2 = tu_rng(seed, 52, 53);
        for (int k = 0; k < 3; k++) {
            assert_ok(genome_mutate(&child, &keep, &r1, &err), &err);
            assert_ok(genome_mutate(&control, &plain, &r2, &err), &err);
        }
        assert_ok(genome_validate(&child, NULL, &err), &err);
        grew += child.n_conns > parent.n_conns;
        size_t n_out;
        float *a = outputs(&parent, seed, &n_out), *b = outputs(&child, seed, &n_out);
        float *c = outputs(&control, seed, &n_out);
        if (differ(a, b, N_STEPS * N_ROWS * n_out, tol))
            fail_msg("seed %llu: the grown network computes another function",
                     (unsigned long long)seed);
        changed += (size_t)differ(a, c, N_STEPS * N_ROWS * n_out, 1e-3);
        free(a);
        free(b);
        free(c);
        genome_release(&parent);
        genome_release(&child);
        genome_release(&control);
    }
    assert_true(grew >= 25);
    return changed;
}

static void test_genome_mutate_preserve_new_connections(void **state)
{
    (void)state;
    assert_true(check_growth(0, 1, 1e-5) > 10);
}

static void test_genome_mutate_preserve_splits_to_rounding(void **state)
{
    (void)state;
    assert_true(check_growth(1, 0, 1e-5) > 10);
    assert_true(check_growth(1, 1, 1e-5) > 10);
}

/* The split's activation: relu where the source is never negative (a relu
 * neuron), identity after anything else (an input, tanh). */
static void test_genome_mutate_preserve_split_activation(void **state)
{
    (void)state;
    struct tv_error err = {0};
    const char *text = "trevo-net 1\ninputs 1\noutputs 1\nneuron 0 in 0 identity 0\n"
                       "neuron 1 out 1 identity 0\nneuron 5 hid 0.5 relu 0\n"
                       "neuron 6 hid 0.5 tanh 0\nconn 0 5 1\nconn 0 6 1\nconn 5 1 1\n"
                       "conn 6 1 1\n";
    struct genome g;
    genome_init(&g);
    assert_ok(genome_read_text(&g, text, strlen(text), "p.txt", NULL, &err), &err);
    struct genome_mutation m = growth(1, 0, 0);
    m.add_neuron_per_neuron = 1; /* every connection split once */
    struct tv_rng rng = tu_rng(1, 2, 3);
    assert_ok(genome_mutate(&g, &m, &rng, &err), &err);
    size_t n_relu = 0, n_identity = 0;
    for (size_t i = 0; i < g.n_neurons; i++) {
        const struct genome_neuron *n = &g.neurons[i];
        if (n->kind != GENOME_HIDDEN || n->id == 5 || n->id == 6)
            continue;
        /* its one input: a relu neuron's split stays relu */
        for (size_t c = 0; c < g.n_conns; c++)
            if (g.conns[c].to == n->id) {
                int want = g.conns[c].from == 5 ? GENOME_ACT_RELU : GENOME_ACT_IDENTITY;
                assert_int_equal(n->act, want);
                n_relu += want == GENOME_ACT_RELU;
                n_identity += want == GENOME_ACT_IDENTITY;
            }
    }
    assert_int_equal(n_relu, 1);
    assert_int_equal(n_identity, 3);
    genome_release(&g);
}

/* A convolutional genome (channels, filters, a head of connections from
 * pixels): new filters and coefficients at 0 and new channels (which feed
 * nothing) leave the outputs exactly as they were. */
static void test_genome_mutate_preserve_conv_exactly(void **state)
{
    (void)state;
    struct tv_error err = {0};
    char text[4096] = "trevo-net 4\ninputs 36\noutputs 2\n";
    for (int i = 0; i < 36; i++)
        snprintf(text + strlen(text), sizeof text - strlen(text), "neuron %d in 0 identity 0\n", i);
    strcat(text, "neuron 36 out 1 identity 0\nneuron 37 out 1 sigmoid 0.5\n"
                 "conn 100 36 0.5\nconn 101 36 -0.25\nconn 103 37 1.5\nconn 5 36 0.125\n"
                 "conn 200 37 -1\n"
                 "channel 0 in 6 6 1 0 identity 0 0\n"
                 "channel 1 hid 4 4 2 0.5 relu 0.1 100\n"
                 "channel 2 hid 6 6 1 0.25 tanh -0.2 200\n"
                 "filter 0 1 3 3 1 0 2,2,0.25 0,0,0.5 1,1,-1\n"
                 "filter 0 2 3 3 1 1 1,1,1 0,2,0.3\n");
    size_t changed = 0, grew = 0;
    for (uint64_t seed = 0; seed < 20; seed++) {
        struct genome parent, child, control;
        genome_init(&parent);
        genome_init(&child);
        genome_init(&control);
        assert_ok(genome_read_text(&parent, text, strlen(text), "c.txt", NULL, &err), &err);
        assert_ok(genome_copy(&child, &parent, &err), &err);
        assert_ok(genome_copy(&control, &parent, &err), &err);
        struct genome_mutation m = {0};
        m.weight_init_sd = 1;
        m.hidden_act = GENOME_ACT_RELU;
        m.conv.add_filter_rate = 1;
        m.conv.add_coef_rate = 1;
        m.conv.add_channel_rate = 0.5;
        struct genome_mutation keep = m;
        keep.preserve = 1;
        struct tv_rng r1 = tu_rng(seed, 60, 61), r2 = tu_rng(seed, 60, 61);
        for (int k = 0; k < 4; k++) {
            assert_ok(genome_mutate(&child, &keep, &r1, &err), &err);
            assert_ok(genome_mutate(&control, &m, &r2, &err), &err);
        }
        assert_ok(genome_validate(&child, NULL, &err), &err);
        grew += child.n_coefs > parent.n_coefs || child.n_channels > parent.n_channels;
        size_t n_out;
        float *a = outputs(&parent, seed, &n_out), *b = outputs(&child, seed, &n_out);
        float *c = outputs(&control, seed, &n_out);
        if (differ(a, b, N_STEPS * N_ROWS * n_out, 0))
            fail_msg("seed %llu: the grown CNN computes another function",
                     (unsigned long long)seed);
        changed += (size_t)differ(a, c, N_STEPS * N_ROWS * n_out, 1e-3);
        free(a);
        free(b);
        free(c);
        genome_release(&parent);
        genome_release(&child);
        genome_release(&control);
    }
    assert_true(grew >= 15);
    assert_true(changed >= 5);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_genome_mutate_preserve_new_connections),
        cmocka_unit_test(test_genome_mutate_preserve_splits_to_rounding),
        cmocka_unit_test(test_genome_mutate_preserve_split_activation),
        cmocka_unit_test(test_genome_mutate_preserve_conv_exactly),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
