/* test_genome_hyper.c -- the hyper-parameter genes a genome may carry
 * (genome.h, "hyper-parameter genes"): their text and msgpack forms (format
 * version 6, written only for a genome that has them, refused by version
 * where a reader does not know it), the genome functions that carry them,
 * their checks with the messages, crossover (a parent's, no draw unless both
 * have them) and mutation (log-normal within bounds, last, no draw at rate
 * 0). What the trainer makes of them is in test_classify.c. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <math.h>

#include "genome.h"
#include "testutil.h"

/* A random genome (rate neurons) with genes of odd floats. */
static void hyper_genome(struct genome *g, uint64_t seed)
{
    struct tv_rng rng = tu_rng(seed, 3, 4);
    tu_random_genome(g, &rng, 4);
    float v[GENOME_N_HYPER];
    for (size_t k = 0; k < GENOME_N_HYPER; k++)
        v[k] = (float)exp(tv_rng_normal(&rng)) / 3.0f;
    genome_set_hyper(g, v);
}

/* ---- formats ------------------------------------------------------------ */

static void test_genome_hyper_text_round_trip(void **state)
{
    (void)state;
    struct tv_error err = {0};
    for (uint64_t seed = 1; seed <= 20; seed++) {
        struct genome g, h;
        genome_init(&g);
        genome_init(&h);
        hyper_genome(&g, seed);
        if (seed % 2) { /* with an input scaling too: version 6 holds both */
            size_t n = genome_count_kind(&g, GENOME_INPUT);
            float v[64] = {0};
            for (size_t k = 0; k < n; k++)
                v[n + k] = 0.5f + (float)k;
            assert_ok(genome_set_scale(&g, v, v + n, n, &err), &err);
        }
        assert_int_equal(genome_format_version(&g), 6);
        size_t len;
        char *text = tu_text_of(&g, &len);
        assert_non_null(strstr(text, "trevo-net 6\n"));
        assert_non_null(strstr(text, "\nhyper lr_scale="));
        assert_ok(genome_read_text(&h, text, len, "h.txt", NULL, &err), &err);
        assert_true(genome_equal(&g, &h));
        free(text);
        /* without them: the old version and no hyper line */
        genome_set_hyper(&g, NULL);
        assert_false(genome_equal(&g, &h));
        assert_true(genome_format_version(&g) < 6);
        text = tu_text_of(&g, &len);
        assert_null(strstr(text, "trevo-net 6"));
        assert_null(strstr(text, "hyper"));
        free(text);
        genome_release(&g);
        genome_release(&h);
    }
}

static void test_genome_hyper_text_left_out_is_one(void **state)
{
    (void)state;
    struct tv_error err = {0};
    const char *text = "trevo-net 6\ninputs 1\noutputs 1\nneuron 0 in 0 identity 0\n"
                       "neuron 1 out 1 identity 0\nconn 0 1 1\nhyper regrow_scale=0.5\n";
    struct genome g;
    genome_init(&g);
    assert_ok(genome_read_text(&g, text, strlen(text), "h.txt", NULL, &err), &err);
    assert_true(g.has_hyper);
    assert_true(g.hyper[GENOME_HYPER_LR] == 1.0f && g.hyper[GENOME_HYPER_STEPS] == 1.0f &&
                g.hyper[GENOME_HYPER_REGROW] == 0.5f);
    genome_release(&g);
}

static void test_genome_hyper_text_bad_lines_fail(void **state)
{
    (void)state;
    struct tv_error err = {0};
    struct genome g;
    genome_init(&g);
#define NET "inputs 1\noutputs 1\nneuron 0 in 0 identity 0\nneuron 1 out 1 identity 0\nconn 0 1 1\n"
    static const struct {
        const char *text, *want;
    } bad[] = {
        {"trevo-net 5\n" NET "hyper lr_scale=2\n", "h.txt:7: 'hyper' lines need 'trevo-net 6'"},
        {"trevo-net 6\n" NET "hyper lr_scale=2\nhyper\n",
         "h.txt:8: 'hyper' already given on line 7"},
        {"trevo-net 6\n" NET "hyper lr=2\n",
         "h.txt:7: expected lr_scale=, steps_scale= or regrow_scale=: 'lr=2'"},
        {"trevo-net 6\n" NET "hyper lr_scale=2 lr_scale=3\n",
         "h.txt:7: hyper-parameter gene given twice: 'lr_scale=3'"},
        {"trevo-net 6\n" NET "hyper steps_scale=0\n",
         "h.txt:7: steps_scale 0 is outside [0.001, 1000]"},
        {"trevo-net 6\n" NET "hyper regrow_scale=inf\n",
         "h.txt:7: regrow_scale is not a finite number"},
        {"trevo-net 6\n" NET "hyper lr_scale=1 steps_scale=1 regrow_scale=1 x=1\n",
         "h.txt:7: expected 'hyper lr_scale=X steps_scale=Y regrow_scale=Z'"},
        {"trevo-net 7\n" NET, "h.txt:1: format version '7', this program reads 1 to 6"},
    };
#undef NET
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        int rc = genome_read_text(&g, bad[i].text, strlen(bad[i].text), "h.txt", NULL, &err);
        assert_true(rc == TV_EINVAL || rc == TV_EFORMAT);
        assert_msg_has(&err, bad[i].want);
        assert_false(g.has_hyper);
    }
    genome_release(&g);
}

static void test_genome_hyper_msgpack_round_trip(void **state)
{
    (void)state;
    struct tv_error err = {0};
    for (uint64_t seed = 1; seed <= 20; seed++) {
        struct genome g, h, plain;
        genome_init(&g);
        genome_init(&h);
        genome_init(&plain);
        hyper_genome(&g, seed);
        if (seed % 2) {
            size_t n = genome_count_kind(&g, GENOME_INPUT);
            float v[64] = {0};
            for (size_t k = 0; k < n; k++)
                v[n + k] = 2.0f;
            assert_ok(genome_set_scale(&g, v, v + n, n, &err), &err);
        }
        struct tv_buf a = {0}, b = {0}, c = {0};
        assert_ok(genome_encode(&g, &a, &err), &err);
        /* an array of 7, as versions 4 and 5, so that a reader of 1 to 5
         * refuses it by its version: fixarray, fixstr tag, version 6 */
        assert_int_equal(a.data[0], 0x97);
        assert_int_equal(a.data[14], 6);
        assert_ok(genome_decode(&h, a.data, a.len, NULL, &err), &err);
        assert_true(genome_equal(&g, &h));
        assert_ok(genome_decode_general(&h, a.data, a.len, NULL, 1, &err), &err);
        assert_true(genome_equal(&g, &h));
        assert_ok(genome_load(&h, a.data, a.len, "h.net", NULL, &err), &err);
        assert_true(genome_equal(&g, &h));
        /* a genome without them keeps the bytes it had before they existed */
        assert_ok(genome_copy(&h, &g, &err), &err);
        genome_set_hyper(&h, NULL);
        assert_ok(genome_copy(&plain, &h, &err), &err);
        assert_ok(genome_encode(&h, &b, &err), &err);
        assert_true(b.data[14] < 6);
        assert_ok(genome_decode(&plain, b.data, b.len, NULL, &err), &err);
        assert_false(plain.has_hyper);
        assert_ok(genome_encode(&plain, &c, &err), &err);
        assert_int_equal(b.len, c.len);
        assert_memory_equal(b.data, c.data, b.len);
        /* the version byte of a newer program: refused by version */
        a.data[14] = 7;
        assert_error(genome_decode(&h, a.data, a.len, NULL, &err), &err, TV_EFORMAT,
                     "format version 7, this program reads versions 1 to 6");
        free(a.data);
        free(b.data);
        free(c.data);
        genome_release(&plain);
        genome_release(&g);
        genome_release(&h);
    }
}

static void test_genome_hyper_msgpack_bad_genes_fail(void **state)
{
    (void)state;
    struct tv_error err = {0};
    struct genome g, h;
    genome_init(&g);
    genome_init(&h);
    hyper_genome(&g, 5);
    struct tv_buf a = {0};
    assert_ok(genome_encode(&g, &a, &err), &err);
    /* the message ends [nil, [f32, f32, f32]]: 0x92 0xc0 0x93 then 3 x 5 bytes */
    size_t at = a.len - 15 - 3;
    assert_int_equal(a.data[at], 0x92);
    assert_int_equal(a.data[at + 1], 0xc0);
    assert_int_equal(a.data[at + 2], 0x93);
    a.data[at + 2] = 0x92; /* two genes, and a float too many */
    assert_error(genome_decode(&h, a.data, a.len - 5, NULL, &err), &err, TV_EFORMAT,
                 "the hyper-parameter genes are not an array of 3");
    a.data[at + 2] = 0x93;
    struct tv_buf b = {0}; /* nil in place of lr_scale's 5 bytes */
    assert_int_equal(tv_buf_append(&b, a.data, at + 3), 0);
    assert_int_equal(tv_buf_append(&b, "\xc0", 1), 0);
    assert_int_equal(tv_buf_append(&b, a.data + at + 8, a.len - at - 8), 0);
    assert_error(genome_decode(&h, b.data, b.len, NULL, &err), &err, TV_EFORMAT,
                 "genome: hyper-parameter gene lr_scale is not a number");
    a.data[at] = 0xc0; /* nil in place of the [scaling, genes] pair */
    assert_error(genome_decode(&h, a.data, at + 1, NULL, &err), &err, TV_EFORMAT,
                 "version 6's last element is not [scaling, genes]");
    free(a.data);
    free(b.data);
    /* a gene out of its range: the decoder's validation names it */
    g.hyper[GENOME_HYPER_STEPS] = 2000.0f;
    a = (struct tv_buf){0};
    assert_ok(genome_encode(&g, &a, &err), &err);
    assert_error(genome_decode(&h, a.data, a.len, NULL, &err), &err, TV_EINVAL,
                 "hyper-parameter gene steps_scale 2000 is outside [0.001, 1000]");
    free(a.data);
    genome_release(&g);
    genome_release(&h);
}

/* ---- the genome functions ----------------------------------------------- */

static void test_genome_hyper_carried_and_validated(void **state)
{
    (void)state;
    struct tv_error err = {0};
    struct genome g, h;
    genome_init(&g);
    genome_init(&h);
    hyper_genome(&g, 7);
    assert_ok(genome_validate(&g, NULL, &err), &err);
    assert_ok(genome_copy(&h, &g, &err), &err);
    assert_true(h.has_hyper && genome_equal(&g, &h));
    h.hyper[GENOME_HYPER_REGROW] *= 2.0f;
    assert_false(genome_equal(&g, &h));
    genome_reset(&h);
    assert_false(h.has_hyper);
    static const float bad[] = {0.0f, -1.0f, 1e-4f, 1001.0f, NAN, INFINITY};
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
        g.hyper[GENOME_HYPER_LR] = bad[i];
        assert_error(genome_validate(&g, NULL, &err), &err, TV_EINVAL,
                     "hyper-parameter gene lr_scale");
        assert_msg_has(&err, "is outside [0.001, 1000]");
    }
    g.hyper[GENOME_HYPER_LR] = GENOME_HYPER_MIN;
    g.hyper[GENOME_HYPER_STEPS] = GENOME_HYPER_MAX;
    assert_ok(genome_validate(&g, NULL, &err), &err);
    genome_release(&g);
    genome_release(&h);
}

static void test_genome_hyper_crossover_takes_a_parents(void **state)
{
    (void)state;
    struct tv_error err = {0};
    struct genome a, b, child, plain_child;
    genome_init(&a);
    genome_init(&b);
    genome_init(&child);
    genome_init(&plain_child);
    hyper_genome(&a, 9);
    assert_ok(genome_copy(&b, &a, &err), &err);
    for (size_t k = 0; k < GENOME_N_HYPER; k++)
        b.hyper[k] = a.hyper[k] * 2.0f;
    /* fitter's alone: no draw, so the rest is the plain parents' child */
    genome_set_hyper(&b, NULL);
    struct tv_rng r1 = tu_rng(1, 2, 3), r2 = tu_rng(1, 2, 3);
    assert_ok(genome_crossover(&child, &a, &b, &r1, &err), &err);
    assert_true(child.has_hyper && !memcmp(child.hyper, a.hyper, sizeof a.hyper));
    struct genome a_plain;
    genome_init(&a_plain);
    assert_ok(genome_copy(&a_plain, &a, &err), &err);
    genome_set_hyper(&a_plain, NULL);
    assert_ok(genome_crossover(&plain_child, &a_plain, &b, &r2, &err), &err);
    assert_false(plain_child.has_hyper);
    genome_set_hyper(&plain_child, child.hyper);
    assert_true(genome_equal(&child, &plain_child));
    assert_true(tv_rng_u64(&r1) == tv_rng_u64(&r2));
    /* other's alone: none (disjoint genes come from fitter) */
    assert_ok(genome_crossover(&child, &b, &a, &r1, &err), &err);
    assert_false(child.has_hyper);
    /* both: the whole set of one of them, each for some seeds */
    for (size_t k = 0; k < GENOME_N_HYPER; k++)
        b.hyper[k] = a.hyper[k] * 2.0f;
    b.has_hyper = 1;
    int seen[2] = {0, 0};
    for (uint64_t seed = 0; seed < 32; seed++) {
        struct tv_rng r = tu_rng(seed, 5, 6);
        assert_ok(genome_crossover(&child, &a, &b, &r, &err), &err);
        int from_a = !memcmp(child.hyper, a.hyper, sizeof a.hyper);
        int from_b = !memcmp(child.hyper, b.hyper, sizeof b.hyper);
        assert_true(child.has_hyper && from_a != from_b);
        seen[from_b] = 1;
    }
    assert_true(seen[0] && seen[1]);
    genome_release(&a);
    genome_release(&a_plain);
    genome_release(&b);
    genome_release(&child);
    genome_release(&plain_child);
}

/* hyper_rate 1: a genome without genes gets them, each moved log-normally
 * (the mean and sd of log(gene) near 0 and sigma over many children) within
 * [hyper_min, hyper_max]; the other genes are those of the same mutation at
 * rate 0, which makes no draw of its own (the genes come last). */
static void test_genome_hyper_mutate_log_normal_within_bounds(void **state)
{
    (void)state;
    struct tv_error err = {0};
    struct genome g0, g, plain;
    genome_init(&g0);
    genome_init(&g);
    genome_init(&plain);
    hyper_genome(&g0, 11);
    genome_set_hyper(&g0, NULL);
    struct genome_mutation m = tu_aggressive_mutation();
    double sum = 0, sum2 = 0;
    size_t n = 0;
    for (uint64_t seed = 0; seed < 400; seed++) {
        m.hyper_rate = 0;
        struct tv_rng r0 = tu_rng(seed, 7, 8), r1 = tu_rng(seed, 7, 8);
        assert_ok(genome_copy(&plain, &g0, &err), &err);
        assert_ok(genome_mutate(&plain, &m, &r0, &err), &err);
        assert_false(plain.has_hyper);
        m.hyper_rate = 1;
        m.hyper_sigma = 0.3;
        m.hyper_min = 0.5;
        m.hyper_max = 1.5;
        assert_ok(genome_copy(&g, &g0, &err), &err);
        assert_ok(genome_mutate(&g, &m, &r1, &err), &err);
        assert_true(g.has_hyper);
        assert_ok(genome_validate(&g, NULL, &err), &err);
        for (size_t k = 0; k < GENOME_N_HYPER; k++) {
            assert_true(g.hyper[k] >= 0.5f && g.hyper[k] <= 1.5f);
            if (g.hyper[k] > 0.5f && g.hyper[k] < 1.5f) { /* not clamped */
                double l = log(g.hyper[k]);
                sum += l;
                sum2 += l * l;
                n++;
            }
        }
        genome_set_hyper(&g, NULL);
        assert_true(genome_equal(&g, &plain));
    }
    double mean = sum / (double)n, sd = sqrt(sum2 / (double)n - mean * mean);
    assert_true(n > 1000);
    assert_true(fabs(mean) < 0.05);
    assert_true(sd > 0.2 && sd < 0.3); /* sigma 0.3, the tails beyond the bounds cut */
    /* sigma 0, rate 1: the genes stay at 1 */
    m.hyper_sigma = 0;
    struct tv_rng r = tu_rng(1, 1, 1);
    assert_ok(genome_copy(&g, &g0, &err), &err);
    assert_ok(genome_mutate(&g, &m, &r, &err), &err);
    for (size_t k = 0; k < GENOME_N_HYPER; k++)
        assert_true(g.hyper[k] == 1.0f);
    genome_release(&g0);
    genome_release(&g);
    genome_release(&plain);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_genome_hyper_text_round_trip),
        cmocka_unit_test(test_genome_hyper_text_left_out_is_one),
        cmocka_unit_test(test_genome_hyper_text_bad_lines_fail),
        cmocka_unit_test(test_genome_hyper_msgpack_round_trip),
        cmocka_unit_test(test_genome_hyper_msgpack_bad_genes_fail),
        cmocka_unit_test(test_genome_hyper_carried_and_validated),
        cmocka_unit_test(test_genome_hyper_crossover_takes_a_parents),
        cmocka_unit_test(test_genome_hyper_mutate_log_normal_within_bounds),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
