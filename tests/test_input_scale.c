/* test_input_scale.c -- the input scaling a genome carries (genome.h, "input
 * scaling"): its text and msgpack forms (format version 5, written only for
 * a genome that has one, refused by version where a reader does not know
 * it), the genome functions that carry it, and the engine that applies it
 * (nn.h, nn_plan_scales): batch 1, batched and feature-major steps give the
 * same bits, which are those of the unscaled network on rows scaled
 * beforehand; the trainer carries it to the genome it writes; the int8
 * network quantized from a scaled genome on raw rows is the one quantized
 * from the unscaled genome on scaled rows, carries the scaling through
 * NET.q (version 2) and gives, on raw rows, the bits the other gives on
 * scaled rows. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "nn.h"
#include "quant.h"
#include "train.h"
#include "testutil.h"

#define N_ROWS 5

/* A random genome (rate neurons) with a scaling of odd floats. */
static void scaled_genome(struct genome *g, uint64_t seed)
{
    struct tv_rng rng = tu_rng(seed, 1, 2);
    struct tv_error err = {0};
    tu_random_genome(g, &rng, 4);
    size_t n = genome_count_kind(g, GENOME_INPUT);
    float v[64];
    assert_true(n <= 32);
    for (size_t k = 0; k < n; k++) {
        v[k] = (float)(tv_rng_uniform(&rng) * 2000 - 1000) / 3.0f;
        v[n + k] = (float)tv_rng_uniform(&rng) / 7.0f + 1e-3f;
    }
    assert_ok(genome_set_scale(g, v, v + n, n, &err), &err);
}

/* ---- formats ------------------------------------------------------------ */

static void test_genome_scale_text_round_trip(void **state)
{
    (void)state;
    struct tv_error err = {0};
    for (uint64_t seed = 1; seed <= 20; seed++) {
        struct genome g, h;
        genome_init(&g);
        genome_init(&h);
        scaled_genome(&g, seed);
        assert_int_equal(genome_format_version(&g), 5);
        size_t len;
        char *text = tu_text_of(&g, &len);
        assert_non_null(strstr(text, "trevo-net 5\n"));
        assert_non_null(strstr(text, "\nscale "));
        assert_ok(genome_read_text(&h, text, len, "s.txt", NULL, &err), &err);
        assert_true(genome_equal(&g, &h));
        free(text);
        /* without it: the old version and no scale line */
        genome_set_scale(&g, NULL, NULL, 0, &err);
        assert_false(genome_equal(&g, &h));
        text = tu_text_of(&g, &len);
        assert_null(strstr(text, "trevo-net 5"));
        assert_null(strstr(text, "scale"));
        free(text);
        genome_release(&g);
        genome_release(&h);
    }
}

static void test_genome_scale_text_missing_input_is_identity(void **state)
{
    (void)state;
    struct tv_error err = {0};
    const char *text = "trevo-net 5\ninputs 2\noutputs 1\nneuron 0 in 0 identity 0\n"
                       "neuron 1 in 0 identity 0\nneuron 2 out 1 identity 0\n"
                       "conn 0 2 1\nconn 1 2 1\nscale 1 3 0.5\n";
    struct genome g;
    genome_init(&g);
    assert_ok(genome_read_text(&g, text, strlen(text), "s.txt", NULL, &err), &err);
    assert_int_equal(g.n_scale, 2);
    assert_true(genome_scale_shift(&g)[0] == 0.0f && genome_scale_mul(&g)[0] == 1.0f);
    assert_true(genome_scale_shift(&g)[1] == 3.0f && genome_scale_mul(&g)[1] == 0.5f);
    genome_release(&g);
}

static void test_genome_scale_text_bad_lines_fail(void **state)
{
    (void)state;
    struct tv_error err = {0};
    struct genome g;
    genome_init(&g);
#define NET                                                                                        \
    "inputs 2\noutputs 1\nneuron 0 in 0 identity 0\nneuron 1 in 0 identity 0\n"                    \
    "neuron 2 out 1 identity 0\nconn 0 2 1\n"
    static const struct {
        const char *text, *want;
    } bad[] = {
        {"trevo-net 4\n" NET "scale 0 1 2\n", "s.txt:8: 'scale' lines need 'trevo-net 5'"},
        {"trevo-net 5\n" NET "scale 2 1 2\n", "s.txt:8: scale: neuron 2 is not an input"},
        {"trevo-net 5\n" NET "scale 7 1 2\n", "s.txt:8: scale: neuron 7 is not an input"},
        {"trevo-net 5\n" NET "scale 0 1 2\nscale 0 1 2\n",
         "s.txt:9: scale of input 0 already given on line 8"},
        {"trevo-net 5\n" NET "scale 0 1\n", "s.txt:8: expected 'scale ID SHIFT MUL'"},
        {"trevo-net 5\n" NET "scale 0 1 inf\n", "s.txt:8: scale mul is not a finite number"},
        {"trevo-net 7\n" NET, "s.txt:1: format version '7', this program reads 1 to 6"},
    };
#undef NET
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        int rc = genome_read_text(&g, bad[i].text, strlen(bad[i].text), "s.txt", NULL, &err);
        assert_true(rc == TV_EINVAL || rc == TV_EFORMAT);
        assert_msg_has(&err, bad[i].want);
        assert_int_equal(g.n_scale, 0);
    }
    genome_release(&g);
}

static void test_genome_scale_msgpack_round_trip(void **state)
{
    (void)state;
    struct tv_error err = {0};
    for (uint64_t seed = 1; seed <= 20; seed++) {
        struct genome g, h;
        genome_init(&g);
        genome_init(&h);
        scaled_genome(&g, seed);
        struct tv_buf a = {0}, b = {0};
        assert_ok(genome_encode(&g, &a, &err), &err);
        /* an array of 7, as version 4, so that a reader of 1 to 4 refuses
         * it by its version: fixarray, fixstr tag, version 5 */
        assert_int_equal(a.data[0], 0x97);
        assert_int_equal(a.data[1], 0xa0 | 12);
        assert_int_equal(a.data[14], 5);
        assert_ok(genome_decode(&h, a.data, a.len, NULL, &err), &err);
        assert_true(genome_equal(&g, &h));
        assert_ok(genome_decode_general(&h, a.data, a.len, NULL, 1, &err), &err);
        assert_true(genome_equal(&g, &h));
        /* a genome without one keeps its old bytes */
        assert_ok(genome_copy(&h, &g, &err), &err);
        genome_set_scale(&h, NULL, NULL, 0, &err);
        struct genome plain;
        genome_init(&plain);
        assert_ok(genome_copy(&plain, &h, &err), &err);
        assert_true(genome_equal(&plain, &h));
        assert_ok(genome_encode(&h, &b, &err), &err);
        assert_true(b.data[0] == 0x94 || b.data[0] == 0x95);
        assert_true(b.data[14] < 5);
        /* the version byte of a newer program: refused by version */
        a.data[14] = 7;
        assert_error(genome_decode(&h, a.data, a.len, NULL, &err), &err, TV_EFORMAT,
                     "format version 7, this program reads versions 1 to 6");
        genome_release(&plain);
        free(a.data);
        free(b.data);
        genome_release(&g);
        genome_release(&h);
    }
}

static void test_genome_scale_msgpack_wrong_bin_fails(void **state)
{
    (void)state;
    struct tv_error err = {0};
    struct genome g, h;
    genome_init(&g);
    genome_init(&h);
    scaled_genome(&g, 3);
    struct tv_buf a = {0};
    assert_ok(genome_encode(&g, &a, &err), &err);
    /* the last bin is the scaling, 8 bytes per input: one input's worth less */
    size_t n = 8 * g.n_scale;
    assert_true(n < 256 && a.data[a.len - n - 2] == 0xc4 && a.data[a.len - n - 1] == n);
    a.data[a.len - n - 1] = (uint8_t)(n - 8);
    assert_error(genome_decode(&h, a.data, a.len - 8, NULL, &err), &err, TV_EFORMAT,
                 "the input scaling is not a bin of");
    free(a.data);
    genome_release(&g);
    genome_release(&h);
}

/* ---- the genome functions ----------------------------------------------- */

static void test_genome_scale_carried_and_validated(void **state)
{
    (void)state;
    struct tv_error err = {0};
    struct genome g, h, c;
    genome_init(&g);
    genome_init(&h);
    genome_init(&c);
    scaled_genome(&g, 7);
    assert_ok(genome_validate(&g, NULL, &err), &err);
    assert_ok(genome_copy(&h, &g, &err), &err);
    assert_true(genome_equal(&g, &h));
    h.scale[0] += 1.0f;
    assert_false(genome_equal(&g, &h));
    struct tv_rng rng = tu_rng(9, 1, 2);
    assert_ok(genome_crossover(&c, &g, &h, &rng, &err), &err);
    assert_int_equal(c.n_scale, g.n_scale);
    assert_memory_equal(c.scale, g.scale, 2 * g.n_scale * sizeof *g.scale);
    h.scale[h.n_scale] = NAN;
    assert_error(genome_validate(&h, NULL, &err), &err, TV_EINVAL,
                 "input scaling: the mul of input 0 is not finite");
    h.n_scale--; /* (the pairs are then read shifted; only the count matters here) */
    assert_error(genome_validate(&h, NULL, &err), &err, TV_EINVAL, "input scaling:");
    h.n_scale++;
    genome_reset(&h);
    assert_int_equal(h.n_scale, 0);
    assert_null(h.scale);
    genome_release(&g);
    genome_release(&h);
    genome_release(&c);
}

/* ---- the engine --------------------------------------------------------- */

/* Outputs [N_ROWS][n_out] of plan on rows [N_ROWS][n_in]: one state of batch
 * `batch` (1: a row at a time from a reset), feature-major when fm. */
static void run(const struct nn_plan *p, const float *rows, size_t batch, int fm, float *out)
{
    struct tv_error err = {0};
    size_t n_in = nn_plan_n_inputs(p), n_out = nn_plan_n_outputs(p);
    struct nn_state *s;
    assert_ok(nn_state_new(p, batch, &s, &err), &err);
    if (batch == 1) {
        for (size_t r = 0; r < N_ROWS; r++) {
            nn_state_reset(s);
            nn_step(s, rows + r * n_in, out + r * n_out);
        }
    } else if (!fm) {
        nn_step(s, rows, out);
    } else {
        float in[N_ROWS * 32], y[N_ROWS * 32];
        for (size_t r = 0; r < N_ROWS; r++)
            for (size_t k = 0; k < n_in; k++)
                in[k * N_ROWS + r] = rows[r * n_in + k];
        nn_step_feature_major(s, in, y);
        for (size_t r = 0; r < N_ROWS; r++)
            for (size_t k = 0; k < n_out; k++)
                out[r * n_out + k] = y[k * N_ROWS + r];
    }
    nn_state_free(s);
}

static void test_nn_step_applies_scale_at_every_batch(void **state)
{
    (void)state;
    struct tv_error err = {0};
    for (uint64_t seed = 1; seed <= 30; seed++) {
        struct genome g, plain;
        genome_init(&g);
        genome_init(&plain);
        scaled_genome(&g, seed);
        assert_ok(genome_copy(&plain, &g, &err), &err);
        genome_set_scale(&plain, NULL, NULL, 0, &err);
        struct nn_plan *p, *q;
        assert_ok(nn_plan_compile(&g, NULL, &p, &err), &err);
        assert_ok(nn_plan_compile(&plain, NULL, &q, &err), &err);
        assert_int_equal(nn_plan_scales(p), 1);
        assert_int_equal(nn_plan_scales(q), 0);
        size_t n_in = nn_plan_n_inputs(p), n_out = nn_plan_n_outputs(p);
        float raw[N_ROWS * 32], pre[N_ROWS * 32];
        struct tv_rng rng = tu_rng(seed, 3, 4);
        for (size_t i = 0; i < N_ROWS * n_in; i++) {
            raw[i] = (float)(tv_rng_uniform(&rng) * 3000 - 1500);
            size_t k = i % n_in;
            pre[i] = (raw[i] - g.scale[k]) * g.scale[g.n_scale + k];
        }
        float want[N_ROWS * 32], got[N_ROWS * 32];
        run(q, pre, 1, 0, want); /* the unscaled network on rows scaled beforehand */
        run(p, raw, 1, 0, got);
        assert_memory_equal(got, want, N_ROWS * n_out * sizeof *got);
        run(p, raw, N_ROWS, 0, got);
        assert_memory_equal(got, want, N_ROWS * n_out * sizeof *got);
        run(p, raw, N_ROWS, 1, got);
        assert_memory_equal(got, want, N_ROWS * n_out * sizeof *got);
        /* the reference scales too (its sums in double: close, not equal) */
        struct nn_reference *ref;
        assert_ok(nn_reference_new(&g, 1, &ref, &err), &err);
        for (size_t r = 0; r < N_ROWS; r++) {
            float y[32];
            nn_reference_reset(ref);
            nn_reference_step(ref, raw + r * n_in, y);
            for (size_t k = 0; k < n_out; k++)
                assert_true(fabsf(y[k] - want[r * n_out + k]) <=
                            1e-3f * (1.0f + fabsf(want[r * n_out + k])));
        }
        nn_reference_free(ref);
        nn_plan_free(p);
        nn_plan_free(q);
        genome_release(&g);
        genome_release(&plain);
    }
}

static void test_nn_trainer_carries_scale(void **state)
{
    (void)state;
    struct tv_error err = {0};
    struct genome g, out;
    genome_init(&g);
    genome_init(&out);
    tu_small_genome(&g);
    size_t n = genome_count_kind(&g, GENOME_INPUT);
    float v[16] = {0};
    for (size_t k = 0; k < n; k++)
        v[k] = (float)k + 0.5f, v[n + k] = 2.0f;
    assert_ok(genome_set_scale(&g, v, v + n, n, &err), &err);
    struct nn_train_opts o;
    nn_train_opts_default(&o);
    struct nn_trainer *t;
    assert_ok(nn_trainer_new(&g, &o, &t, &err), &err);
    assert_ok(nn_trainer_write_genome(t, &out, &err), &err);
    assert_true(genome_equal(&g, &out));
    nn_trainer_free(t);
    genome_release(&g);
    genome_release(&out);
}

/* The int8 network of g calibrated on rows [N_ROWS][n_in]. */
static struct nn_qnet *quantized(const struct genome *g, const float *rows)
{
    struct tv_error err = {0};
    struct nn_calib *c;
    struct nn_qnet *q;
    assert_ok(nn_calib_new(g, NULL, &c, &err), &err);
    assert_ok(nn_calib_run(c, rows, N_ROWS, 1, &err), &err);
    assert_ok(nn_quantize(c, &q, &err), &err);
    nn_calib_free(c);
    return q;
}

static void test_int8_takes_raw_rows(void **state)
{
    (void)state;
    struct tv_error err = {0};
    for (uint64_t seed = 1; seed <= 20; seed++) {
        struct genome g, plain;
        genome_init(&g);
        genome_init(&plain);
        scaled_genome(&g, seed);
        assert_ok(genome_copy(&plain, &g, &err), &err);
        genome_set_scale(&plain, NULL, NULL, 0, &err);
        size_t n_in = g.n_scale;
        float raw[N_ROWS * 32], pre[N_ROWS * 32];
        struct tv_rng rng = tu_rng(seed, 5, 6);
        for (size_t i = 0; i < N_ROWS * n_in; i++) {
            raw[i] = (float)(tv_rng_uniform(&rng) * 3000 - 1500);
            size_t k = i % n_in;
            pre[i] = (raw[i] - g.scale[k]) * g.scale[g.n_scale + k];
        }
        struct nn_qnet *q = quantized(&g, raw), *u = quantized(&plain, pre);
        assert_non_null(q->in_scale);
        assert_null(u->in_scale);
        assert_memory_equal(q->in_scale, g.scale, 2 * n_in * sizeof *g.scale);
        /* NET.q: version 2 with the scale lines, version 1 without, and the
         * same network once read back */
        struct tv_buf a = {0}, b = {0}, c = {0};
        assert_ok(nn_qnet_write(q, &a, &err), &err);
        assert_ok(nn_qnet_write(u, &b, &err), &err);
        assert_true(a.len > 13 && !memcmp(a.data, "trevo-qnet 2\n", 13));
        assert_true(b.len > 13 && !memcmp(b.data, "trevo-qnet 1\n", 13));
        struct nn_qnet *r;
        assert_ok(nn_qnet_read((const char *)a.data, a.len, "a.q", &r, &err), &err);
        assert_ok(nn_qnet_write(r, &c, &err), &err);
        assert_int_equal(c.len, a.len);
        assert_memory_equal(c.data, a.data, a.len);
        a.data[11] = '4';
        nn_qnet_free(r);
        assert_error(nn_qnet_read((const char *)a.data, a.len, "a.q", &r, &err), &err, TV_EFORMAT,
                     "version 4 is not one this trevo reads (1 to 3)");
        /* the same int8 network but for the scaling */
        struct nn_plan *pq, *pu;
        assert_ok(nn_qplan_compile(q, &pq, &err), &err);
        assert_ok(nn_qplan_compile(u, &pu, &err), &err);
        assert_int_equal(nn_plan_scales(pq), 1);
        size_t n_out = nn_plan_n_outputs(pq);
        float want[N_ROWS * 32], got[N_ROWS * 32];
        run(pu, pre, 1, 0, want);
        run(pq, raw, 1, 0, got);
        assert_memory_equal(got, want, N_ROWS * n_out * sizeof *got);
        run(pq, raw, N_ROWS, 0, got);
        assert_memory_equal(got, want, N_ROWS * n_out * sizeof *got);
        nn_plan_free(pq);
        nn_plan_free(pu);
        free(a.data);
        free(b.data);
        free(c.data);
        nn_qnet_free(q);
        nn_qnet_free(u);
        genome_release(&g);
        genome_release(&plain);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_genome_scale_text_round_trip),
        cmocka_unit_test(test_genome_scale_text_missing_input_is_identity),
        cmocka_unit_test(test_genome_scale_text_bad_lines_fail),
        cmocka_unit_test(test_genome_scale_msgpack_round_trip),
        cmocka_unit_test(test_genome_scale_msgpack_wrong_bin_fails),
        cmocka_unit_test(test_genome_scale_carried_and_validated),
        cmocka_unit_test(test_nn_step_applies_scale_at_every_batch),
        cmocka_unit_test(test_nn_trainer_carries_scale),
        cmocka_unit_test(test_int8_takes_raw_rows),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
