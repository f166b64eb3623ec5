/* test_mutate_scale.c -- genome/'s operators for large genomes: the
 * structural rates per connection and per neuron of genome_mutate() (many
 * genes added or removed in one call, bulk neuron insertion) and layered
 * starting genomes with a density per layer pair. The seeds are fixed, so
 * every count is deterministic; the bounds are still those of the
 * distribution (mean +- 5 standard deviations), so that they say what the
 * rate means and not only what one stream gives. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "failalloc.h"
#include "genome.h"
#include "testutil.h"

/* Rates that change nothing, as a config with every key at 0 would. */
static struct genome_mutation quiet(void)
{
    struct genome_mutation m = {0};
    m.hidden_act = GENOME_ACT_RELU;
    m.weight_init_sd = 1.0;
    return m;
}

/* Every structural rate per gene at `rate`, nothing else. */
static struct genome_mutation every_rate(double rate)
{
    struct genome_mutation m = quiet();
    m.add_local_per_conn = m.add_skip_per_conn = m.add_recurrent_per_conn = rate;
    m.del_conn_per_conn = rate;
    m.add_neuron_per_neuron = m.del_neuron_per_neuron = rate;
    return m;
}

/* A layered genome (g is initialised first): 200 inputs, hidden 100 and 50,
 * 10 outputs, local pairs at `density`, a few skips. About 26,000 * density
 * connections. */
static void build(struct genome *g, double density, uint64_t seed)
{
    static const uint32_t sizes[] = {200, 100, 50, 10};
    struct genome_layered_spec spec = {
        sizes, 4, density, 0.002, 0, GENOME_ACT_RELU, GENOME_ACT_IDENTITY, 1.0};
    struct tv_rng r;
    struct tv_error err = {0};
    tv_rng_init(&r, seed, 0, 0);
    genome_init(g);
    assert_ok(genome_build_layered(g, &spec, &r, &err), &err);
}

/* g as build() makes it, and copy a copy of it. */
static void build_pair(struct genome *g, struct genome *copy, double density, uint64_t seed)
{
    struct tv_error err = {0};
    genome_init(copy);
    build(g, density, seed);
    assert_ok(genome_copy(copy, g, &err), &err);
}

static void release_pair(struct genome *a, struct genome *b)
{
    genome_release(a);
    genome_release(b);
}

/* The test's two genomes (TU_PAIR_TEST): a as build() makes it, b a copy. */
static struct tu_pair *pair_of(void **state, double density, uint64_t seed)
{
    struct tu_pair *t = *state;
    build_pair(&t->a, &t->b, density, seed);
    return t;
}

/* |got - n p| <= 5 sd of Binomial(n, p). */
static void assert_binomial(size_t got, size_t n, double p)
{
    double mean = (double)n * p, sd = sqrt((double)n * p * (1 - p));
    if (fabs((double)got - mean) > 5 * sd + 1) {
        print_error("got %zu, expected %.1f +- %.1f (Binomial(%zu, %g))\n", got, mean, 5 * sd, n,
                    p);
        fail();
    }
}

/* 1 if every connection of sub is in g with the same weight. */
static int conns_subset(const struct genome *sub, const struct genome *g)
{
    for (size_t i = 0; i < sub->n_conns; i++) {
        ptrdiff_t j = genome_find_conn(g, sub->conns[i].from, sub->conns[i].to);
        if (j < 0 || g->conns[j].weight != sub->conns[i].weight)
            return 0;
    }
    return 1;
}

static void mutate_ok(struct genome *g, const struct genome_mutation *m, uint64_t seed)
{
    struct tv_error err = {0};
    struct tv_rng r = tu_rng(seed, 1, 2);
    assert_ok(genome_mutate(g, m, &r, &err), &err);
    assert_ok(genome_validate(g, NULL, &err), &err);
}

static void test_genome_mutate_scale_zero_rates_draw_nothing(void **state)
{
    struct tu_pair *t = pair_of(state, 0.1, 1);
    struct tv_error err = {0};
    struct genome_mutation m = quiet();
    struct tv_rng r = tu_rng(3, 0, 0);
    assert_ok(genome_mutate(&t->a, &m, &r, &err), &err);
    /* no draw at all: the old rates' children stay what they were */
    assert_int_equal(r.ctr, 0);
    assert_true(genome_equal(&t->a, &t->b));
}

/* ---- each rate against what it must do --------------------------------
 * A case: one rate set on a genome of some density; its check gets the
 * genome before and after one call. */

/* del_conn_per_conn: the count follows the rate, and the rest is kept. */
static void check_del_conn(const struct genome *before, const struct genome *g, double rate,
                           int arg)
{
    (void)arg;
    assert_binomial(before->n_conns - g->n_conns, before->n_conns, rate);
    assert_true(g->n_conns < before->n_conns);
    assert_true(conns_subset(g, before));
    assert_int_equal(g->n_neurons, before->n_neurons);
}

/* add_*_per_conn of class cls: the count follows the rate, every old gene
 * is kept, every new one is of the class. */
static void check_add_class(const struct genome *before, const struct genome *g, double rate,
                            int cls)
{
    struct tv_error err = {0};
    size_t added = g->n_conns - before->n_conns;
    assert_binomial(added, before->n_conns, rate);
    assert_true(conns_subset(before, g));
    struct genome_stats s0, s1;
    assert_ok(genome_stats(before, &s0, &err), &err);
    assert_ok(genome_stats(g, &s1, &err), &err);
    size_t d[GENOME_CONN_CLASSES] = {s1.n_local - s0.n_local, s1.n_skip - s0.n_skip,
                                     s1.n_recurrent - s0.n_recurrent};
    for (int c = 0; c < GENOME_CONN_CLASSES; c++)
        assert_int_equal(d[c], c == cls ? added : 0);
}

/* add_neuron_per_neuron: about rate x neurons splits; each removed one
 * connection a -> b and made a -> h (1) and h -> b (the old weight), h the
 * split id of (a, b). */
static void check_add_neuron(const struct genome *before, const struct genome *g, double rate,
                             int arg)
{
    (void)arg;
    size_t made = g->n_neurons - before->n_neurons;
    assert_binomial(made, before->n_conns,
                    rate * (double)before->n_neurons / (double)before->n_conns);
    assert_true(made > 1);
    assert_int_equal(g->n_conns, before->n_conns + made);
    size_t lost = 0;
    for (size_t i = 0; i < before->n_conns; i++) {
        const struct genome_conn *c = &before->conns[i];
        if (genome_find_conn(g, c->from, c->to) >= 0)
            continue;
        lost++;
        uint32_t h = genome_split_id(c->from, c->to, 0);
        ptrdiff_t n = genome_find_neuron(g, h);
        assert_true(n >= 0);
        assert_int_equal(g->neurons[n].kind, GENOME_HIDDEN);
        assert_int_equal(g->neurons[n].act, GENOME_ACT_RELU);
        ptrdiff_t in = genome_find_conn(g, c->from, h), out = genome_find_conn(g, h, c->to);
        assert_true(in >= 0 && out >= 0);
        assert_true(g->conns[in].weight == 1.0f);
        assert_true(g->conns[out].weight == c->weight);
    }
    assert_int_equal(lost, made);
}

/* del_neuron_per_neuron: the count of hidden neurons follows the rate, and
 * exactly the connections of removed neurons went. */
static void check_del_neuron(const struct genome *before, const struct genome *g, double rate,
                             int arg)
{
    (void)arg;
    size_t hidden0 = genome_count_kind(before, GENOME_HIDDEN);
    size_t removed = hidden0 - genome_count_kind(g, GENOME_HIDDEN);
    assert_binomial(removed, hidden0, rate);
    assert_int_equal(g->n_neurons, before->n_neurons - removed);
    size_t kept = 0;
    for (size_t i = 0; i < before->n_conns; i++) {
        const struct genome_conn *c = &before->conns[i];
        int alive = genome_find_neuron(g, c->from) >= 0 && genome_find_neuron(g, c->to) >= 0;
        assert_int_equal(genome_find_conn(g, c->from, c->to) >= 0, alive);
        kept += (size_t)alive;
    }
    assert_int_equal(kept, g->n_conns);
}

struct rate_case {
    size_t rate_at; /* offsetof(struct genome_mutation, the rate) */
    double rate, density;
    void (*check)(const struct genome *before, const struct genome *g, double rate, int arg);
    int arg;
};

#define AT(field) offsetof(struct genome_mutation, field)
static const struct rate_case rate_cases[] = {
    {AT(del_conn_per_conn), 0.1, 0.5, check_del_conn, 0},
    {AT(del_conn_per_conn), 1.0, 0.2, check_del_conn, 0},
    {AT(add_local_per_conn), 0.05, 0.05, check_add_class, GENOME_CONN_LOCAL},
    {AT(add_skip_per_conn), 0.05, 0.05, check_add_class, GENOME_CONN_SKIP},
    {AT(add_recurrent_per_conn), 0.05, 0.05, check_add_class, GENOME_CONN_RECURRENT},
    {AT(add_neuron_per_neuron), 0.1, 0.2, check_add_neuron, 0}, /* ~36 of 360 neurons */
    {AT(del_neuron_per_neuron), 0.2, 0.2, check_del_neuron, 0},
};

static void test_genome_mutate_per_gene_rates_follow_their_counts(void **state)
{
    (void)state;
    for (size_t i = 0; i < sizeof rate_cases / sizeof rate_cases[0]; i++) {
        const struct rate_case *c = &rate_cases[i];
        struct genome g, before;
        build_pair(&g, &before, c->density, 100 + i);
        struct genome_mutation m = quiet();
        *(double *)((char *)&m + c->rate_at) = c->rate;
        mutate_ok(&g, &m, 200 + i);
        c->check(&before, &g, c->rate, c->arg);
        release_pair(&g, &before);
    }
}

static void test_genome_mutate_per_conn_stops_at_the_limits(void **state)
{
    (void)state;
    struct genome g;
    build(&g, 0.2, 12);
    size_t n0 = g.n_conns, h0 = g.n_neurons;
    struct genome_mutation m = quiet();
    m.add_local_per_conn = m.add_skip_per_conn = 0.5;
    m.limits.max_conns = n0 + 7;
    mutate_ok(&g, &m, 13);
    assert_int_equal(g.n_conns, n0 + 7);
    m.add_local_per_conn = m.add_skip_per_conn = 0;
    m.add_neuron_per_neuron = 1;
    m.limits.max_conns = 0; /* the default */
    m.limits.max_neurons = h0 + 3;
    mutate_ok(&g, &m, 14);
    assert_int_equal(g.n_neurons, h0 + 3);
    genome_release(&g);
}

/* Every operator at once, many calls: the genome stays valid, and the same
 * stream gives the same child. */
static void test_genome_mutate_per_conn_all_valid_and_deterministic(void **state)
{
    struct tu_pair *t = pair_of(state, 0.05, 15);
    struct tv_error err = {0};
    struct genome_mutation m = tu_aggressive_mutation();
    m.add_local_per_conn = m.add_skip_per_conn = m.add_recurrent_per_conn = 0.02;
    m.del_conn_per_conn = 0.03;
    m.add_neuron_per_neuron = m.del_neuron_per_neuron = 0.02;
    struct tv_rng ra, rb;
    tv_rng_init(&ra, 16, 0, 0);
    tv_rng_init(&rb, 16, 0, 0);
    for (int i = 0; i < 20; i++) {
        assert_ok(genome_mutate(&t->a, &m, &ra, &err), &err);
        assert_ok(genome_validate(&t->a, NULL, &err), &err);
        assert_ok(genome_mutate(&t->b, &m, &rb, &err), &err);
    }
    assert_true(genome_equal(&t->a, &t->b));
}

/* A call that makes hundreds of genes allocates a fixed number of blocks
 * (scratch arrays, the genome's growth), none per gene. */
static void test_genome_mutate_per_conn_allocates_per_call_not_per_gene(void **state)
{
    (void)state;
    struct genome g;
    build(&g, 0.5, 19);
    size_t n0 = g.n_conns;
    struct genome_mutation m = every_rate(0.05);
    struct tv_rng r;
    struct tv_error err = {0};
    tv_rng_init(&r, 20, 0, 0);
    failalloc_arm(0);
    int rc = genome_mutate(&g, &m, &r, &err);
    unsigned long allocations = failalloc_disarm();
    assert_ok(rc, &err);
    assert_true(n0 > 10000);
    assert_true(allocations >= 4 && allocations <= 20);
    genome_release(&g);
}

/* Each allocation of a call fails in turn: TV_ENOMEM with its message, and
 * the genome valid. */
static void test_genome_mutate_per_conn_out_of_memory(void **state)
{
    (void)state;
    struct genome g0;
    build(&g0, 0.05, 17);
    struct genome_mutation m = every_rate(0.05);
    unsigned long k, failures = 0;
    for (k = 1;; k++) {
        struct genome g;
        genome_init(&g);
        struct tv_error err = {0};
        assert_ok(genome_copy(&g, &g0, &err), &err);
        struct tv_rng r = tu_rng(18, 0, 0);
        failalloc_arm(k);
        int rc = genome_mutate(&g, &m, &r, &err);
        failalloc_disarm();
        int fired = failalloc_fired();
        if (fired) {
            assert_error(rc, &err, TV_ENOMEM, "out of memory");
            failures++;
        } else {
            assert_ok(rc, &err);
        }
        struct tv_error verr = {0};
        assert_ok(genome_validate(&g, NULL, &verr), &verr);
        genome_release(&g);
        if (!fired)
            break;
    }
    assert_true(failures >= 6);
    genome_release(&g0);
}

/* ---- layered genomes with a density per pair --------------------------- */

/* Connections from layer a to layer b of a genome genome_build_layered made
 * with sizes[n]: ids are inputs, outputs, then hidden layers in order. */
static size_t count_pair(const struct genome *g, const uint32_t *sizes, size_t n, size_t a,
                         size_t b)
{
    uint32_t first[8];
    uint32_t next = sizes[0] + sizes[n - 1];
    first[0] = 0;
    first[n - 1] = sizes[0];
    for (size_t l = 1; l + 1 < n; l++) {
        first[l] = next;
        next += sizes[l];
    }
    size_t c = 0;
    for (size_t i = 0; i < g->n_conns; i++)
        c += g->conns[i].from - first[a] < sizes[a] && g->conns[i].to - first[b] < sizes[b];
    return c;
}

/* g initialised and built from spec and pairs on stream (seed, 0, 0). */
static int build_with(struct genome *g, const struct genome_layered_spec *spec,
                      const struct genome_layer_pairs *pairs, uint64_t seed, struct tv_error *err)
{
    struct tv_rng r = tu_rng(seed, 0, 0);
    genome_init(g);
    return genome_build_layered_pairs(g, spec, pairs, &r, err);
}

/* build_with, accepted, and the genome valid. */
static void build_with_ok(struct genome *g, const struct genome_layered_spec *spec,
                          const struct genome_layer_pairs *pairs, uint64_t seed)
{
    struct tv_error err = {0};
    assert_ok(build_with(g, spec, pairs, seed, &err), &err);
    assert_ok(genome_validate(g, NULL, &err), &err);
}

static void test_genome_build_layered_pairs_exact_densities(void **state)
{
    (void)state;
    static const uint32_t sizes[] = {5, 4, 3, 2};
    const double adjacent[] = {1.0, 0.0, 1.0}, skip[] = {0.0, 1.0, 1.0}; /* 0-2, 0-3, 1-3 */
    struct genome_layered_spec spec = {sizes, 4, 0.5, 0.5, 0, GENOME_ACT_RELU, GENOME_ACT_IDENTITY,
                                       1.0};
    struct genome_layer_pairs pairs = {adjacent, skip};
    struct genome g;
    build_with_ok(&g, &spec, &pairs, 1);
    assert_int_equal(count_pair(&g, sizes, 4, 0, 1), 20);
    assert_int_equal(count_pair(&g, sizes, 4, 1, 2), 0);
    assert_int_equal(count_pair(&g, sizes, 4, 2, 3), 6);
    assert_int_equal(count_pair(&g, sizes, 4, 0, 2), 0);
    assert_int_equal(count_pair(&g, sizes, 4, 0, 3), 10);
    assert_int_equal(count_pair(&g, sizes, 4, 1, 3), 8);
    assert_int_equal(g.n_conns, 44);
    genome_release(&g);
}

/* 784-H-10 as the docs put it: densities 0.05 and 0.2 for the two local
 * pairs, one skip pair at 0.01; the counts follow each pair's density. */
static void test_genome_build_layered_pairs_sparse_counts(void **state)
{
    (void)state;
    static const uint32_t sizes[] = {784, 300, 10};
    const double adjacent[] = {0.05, 0.2}, skip[] = {0.01};
    struct genome_layered_spec spec = {sizes, 3, 1.0, 0, 0, GENOME_ACT_RELU, GENOME_ACT_IDENTITY,
                                       1.0};
    struct genome_layer_pairs pairs = {adjacent, skip};
    struct genome g;
    struct tv_error err = {0};
    build_with_ok(&g, &spec, &pairs, 2);
    assert_binomial(count_pair(&g, sizes, 3, 0, 1), 784 * 300, 0.05);
    assert_binomial(count_pair(&g, sizes, 3, 1, 2), 300 * 10, 0.2);
    assert_binomial(count_pair(&g, sizes, 3, 0, 2), 784 * 10, 0.01);
    /* only the skip table: the adjacent pairs keep the spec's density */
    pairs.adjacent = NULL;
    spec.density = 0;
    genome_release(&g);
    assert_ok(build_with(&g, &spec, &pairs, 3, &err), &err);
    assert_int_equal(count_pair(&g, sizes, 3, 0, 1) + count_pair(&g, sizes, 3, 1, 2), 0);
    assert_binomial(g.n_conns, 784 * 10, 0.01);
    genome_release(&g);
}

static void test_genome_build_layered_pairs_null_is_build_layered(void **state)
{
    struct tu_pair *t = *state;
    static const uint32_t sizes[] = {30, 20, 10, 5};
    struct genome_layered_spec spec = {
        sizes, 4, 0.3, 0.1, 0.05, GENOME_ACT_TANH, GENOME_ACT_SIGMOID, 1.0};
    struct tv_rng ra, rb;
    struct tv_error err = {0};
    tv_rng_init(&ra, 9, 0, 0);
    tv_rng_init(&rb, 9, 0, 0);
    assert_ok(genome_build_layered(&t->a, &spec, &ra, &err), &err);
    struct genome_layer_pairs none = {NULL, NULL};
    assert_ok(genome_build_layered_pairs(&t->b, &spec, &none, &rb, &err), &err);
    assert_true(genome_equal(&t->a, &t->b));
    assert_int_equal(ra.ctr, rb.ctr);
}

static void test_genome_build_layered_pairs_bad_density(void **state)
{
    (void)state;
    static const uint32_t sizes[] = {5, 4, 3, 2};
    const double adjacent[] = {1.0, 0.5, 0.5}, skip[] = {0.0, 2.0, 0.1};
    struct genome_layered_spec spec = {sizes, 4, 0.5, 0.5, 0, GENOME_ACT_RELU, GENOME_ACT_IDENTITY,
                                       1.0};
    struct genome_layer_pairs pairs = {adjacent, skip};
    struct genome g;
    struct tv_error err = {0};
    int rc = build_with(&g, &spec, &pairs, 1, &err);
    assert_error(rc, &err, TV_EINVAL,
                 "layered genome: skip density 1 (pair 0 -> 3) must be in [0, 1], got 2");
    const double nan_adjacent[] = {1.0, NAN, 0.5};
    pairs = (struct genome_layer_pairs){nan_adjacent, NULL};
    genome_release(&g);
    rc = build_with(&g, &spec, &pairs, 1, &err);
    assert_error(rc, &err, TV_EINVAL,
                 "adjacent density 1 (pair 1 -> 2) must be in [0, 1], got nan");
    genome_release(&g);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        TU_PAIR_TEST(test_genome_mutate_scale_zero_rates_draw_nothing),
        cmocka_unit_test(test_genome_mutate_per_gene_rates_follow_their_counts),
        cmocka_unit_test(test_genome_mutate_per_conn_stops_at_the_limits),
        TU_PAIR_TEST(test_genome_mutate_per_conn_all_valid_and_deterministic),
        cmocka_unit_test(test_genome_mutate_per_conn_allocates_per_call_not_per_gene),
        cmocka_unit_test(test_genome_mutate_per_conn_out_of_memory),
        cmocka_unit_test(test_genome_build_layered_pairs_exact_densities),
        cmocka_unit_test(test_genome_build_layered_pairs_sparse_counts),
        TU_PAIR_TEST(test_genome_build_layered_pairs_null_is_build_layered),
        cmocka_unit_test(test_genome_build_layered_pairs_bad_density),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
