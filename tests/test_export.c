/* test_export.c -- nn/deploy/export.c: exported C files, compiled with cc and
 * run, give the engine's bits. A network per activation: every one the float
 * export writes, and every one through quantization (int8), on inputs that
 * include +-0, +-inf and NaN, against the engine at batch 1 and batched, on
 * every SIMD target this CPU runs; the activation functions of the float file
 * against nn_act_apply; the float file's sums against the engine's at batch 1
 * and batched, on sums that cancel and through a layer the engine scatters.
 * (The formulas have one home each, nn/act.def and nn/deploy/quant_arith.h,
 * which the engine compiles and the export writes out.) */
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

/* The inputs, as bits: the special values, then ordinary ones (some past any
 * calibrated range). */
static const uint32_t inputs[] = {
    0x00000000u, /* +0 */
    0x80000000u, /* -0 */
    0x7f800000u, /* +inf */
    0xff800000u, /* -inf */
    0x7fc00000u, /* NaN */
    0xffc00000u, /* -NaN */
    0x7fc12345u, /* a NaN with a payload */
    0xffa00001u, /* a negative signaling NaN */
    0x3f800000u, /* 1 */
    0xbf800000u, /* -1 */
    0x3f000000u, /* 0.5 */
    0xc0200000u, /* -2.5 */
    0x00000001u, /* the smallest subnormal */
    0x80000001u, /* its negative */
    0x7f7fffffu, /* FLT_MAX */
    0xff7fffffu, /* -FLT_MAX */
    0x40490fdbu, /* pi */
    0xc2c80000u, /* -100 */
};
#define N_INPUTS (sizeof inputs / sizeof inputs[0])

static float f32(uint32_t u)
{
    float f;
    memcpy(&f, &u, sizeof f);
    return f;
}

static uint32_t bits(float f)
{
    uint32_t u;
    memcpy(&u, &f, sizeof u);
    return u;
}

/* ---- the exported file, built and run ----------------------------------------- */

/* The driver includes the exported file (prefix trevo_net, one output), so
 * that it can call its static functions and read its static values. Each
 * line of its input is a row: 1 to reset first (else 0), then the bits of
 * the inputs in hex. For each row it prints the bits of the output of
 * trevo_net_predict, then the output's int8 value (an int8 file) or the bits
 * of ACT(first input) (a float file, ACT defined). */
static const char driver_c[] =
    "#include \"net.c\"\n"
    "#include <stdio.h>\n"
    "static float from_bits(unsigned long u)\n"
    "{\n"
    "    union { uint32_t u; float f; } b;\n"
    "    b.u = (uint32_t)u;\n"
    "    return b.f;\n"
    "}\n"
    "static unsigned long to_bits(float f)\n"
    "{\n"
    "    union { uint32_t u; float f; } b;\n"
    "    b.f = f;\n"
    "    return b.u;\n"
    "}\n"
    "int main(void)\n"
    "{\n"
    "    float in[TREVO_NET_N_INPUTS], out[1];\n"
    "    unsigned long u;\n"
    "    int reset, k;\n"
    "    while (scanf(\"%d\", &reset) == 1) {\n"
    "        for (k = 0; k < TREVO_NET_N_INPUTS; k++) {\n"
    "            if (scanf(\"%lx\", &u) != 1)\n"
    "                return 1;\n"
    "            in[k] = from_bits(u);\n"
    "        }\n"
    "        if (reset)\n"
    "            trevo_net_reset();\n"
    "        if (trevo_net_predict(in, out))\n"
    "            return 1;\n"
    "#ifdef ACT\n"
    "        printf(\"%08lx %08lx\\n\", to_bits(out[0]), to_bits(ACT(in[0])));\n"
    "#else\n"
    "        printf(\"%08lx %d\\n\", to_bits(out[0]), (int)trevo_net_v[trevo_net_out_map[0]] - "
    "128);\n"
    "#endif\n"
    "    }\n"
    "    return 0;\n"
    "}\n";

static void write_file(const char *name, const void *data, size_t n)
{
    char path[512];
    snprintf(path, sizeof path, "%s/%s", tu_tmpdir(), name);
    FILE *f = fopen(path, "wb");
    assert_non_null(f);
    assert_int_equal(fwrite(data, 1, n, f), n);
    assert_int_equal(fclose(f), 0);
}

/* Rows for the driver. */
struct rows {
    size_t n, n_in;
    const uint32_t *in; /* [n][n_in] bits */
    const int *reset;   /* [n] 1: reset before the row; NULL: never */
};

/* The exported file c (one output) run on rows r: out[i] the bits of the
 * output of row i, aux[i] its int8 value or the bits of act(first input)
 * (act_fn: the name of the file's function, NULL for an int8 file). The file
 * must compile as strict C99 without a warning, and link without libm. */
static void run_export(const struct tv_buf *c, const char *act_fn, const struct rows *r,
                       uint32_t *out, long *aux)
{
    write_file("net.c", c->data, c->len);
    write_file("driver.c", driver_c, sizeof driver_c - 1);
    char *text = malloc(r->n * (2 + 9 * r->n_in) + 1), *p = text;
    assert_non_null(text);
    for (size_t i = 0; i < r->n; i++) {
        p += sprintf(p, "%d", r->reset ? r->reset[i] : 0);
        for (size_t k = 0; k < r->n_in; k++)
            p += sprintf(p, " %08lx", (unsigned long)r->in[i * r->n_in + k]);
        *p++ = '\n';
    }
    write_file("in.txt", text, (size_t)(p - text));
    free(text);
    const char *cc = getenv("CC") ? getenv("CC") : "cc", *d = tu_tmpdir();
    char cmd[2048], def[128] = "";
    if (act_fn)
        snprintf(def, sizeof def, "-DACT=%s", act_fn);
    snprintf(cmd, sizeof cmd,
             "%s -std=c99 -pedantic -Wall -Wextra -Werror -O2 -ffp-contract=off %s '%s/driver.c' "
             "-o '%s/driver' && '%s/driver' <'%s/in.txt' >'%s/out.txt'",
             cc, def, d, d, d, d, d);
    tu_run(cmd, "build or run the export");
    char path[512];
    snprintf(path, sizeof path, "%s/out.txt", d);
    FILE *f = fopen(path, "r");
    assert_non_null(f);
    for (size_t i = 0; i < r->n; i++) {
        unsigned long o, x;
        if (act_fn) {
            assert_int_equal(fscanf(f, "%lx %lx", &o, &x), 2);
            aux[i] = (long)x;
        } else {
            assert_int_equal(fscanf(f, "%lx %ld", &o, &aux[i]), 2);
        }
        out[i] = (uint32_t)o;
    }
    fclose(f);
}

/* ---- the engine ----------------------------------------------------------------- */

/* Plan p (one input, one output) on `inputs`, on every target this CPU runs:
 * at batch 1 (an input per step) and batched (every input in one step), each
 * checked against want (the bits of the outputs) and want8 (the int8 outputs
 * of an int8 plan, else NULL). */
static void expect_engine(const struct nn_plan *p, const uint32_t *want, const long *want8)
{
    struct tv_error err = {0};
    float in[N_INPUTS], out[N_INPUTS];
    int8_t o8[N_INPUTS] = {0};
    for (size_t i = 0; i < N_INPUTS; i++)
        in[i] = f32(inputs[i]);
    for (int t = 0; t < NN_TARGET_COUNT; t++) {
        if (!tu_target_runs(p, t))
            continue;
        for (size_t batch = 1; batch <= N_INPUTS; batch += N_INPUTS - 1) {
            struct nn_state *s;
            assert_ok(nn_state_new(p, batch, &s, &err), &err);
            assert_ok(nn_state_set_target(s, t, &err), &err);
            for (size_t i = 0; i < N_INPUTS; i += batch) {
                nn_step(s, in + i, out + i);
                if (want8)
                    nn_qstate_read_int8(s, o8 + i);
            }
            for (size_t i = 0; i < N_INPUTS; i++) {
                if (bits(out[i]) != want[i] || (want8 && o8[i] != want8[i])) {
                    print_error("input %08lx, target %d, batch %zu: the engine gives %08lx (int8 "
                                "%d), the export %08lx (int8 %ld; 0 for a float network)\n",
                                (unsigned long)inputs[i], t, batch, (unsigned long)bits(out[i]),
                                o8[i], (unsigned long)want[i], want8 ? want8[i] : 0);
                    fail();
                }
            }
            nn_state_free(s);
        }
    }
}

/* in -> out: out = act(-0 + 1 * in), one connection, so that every sum is
 * exact and the input reaches the activation as it is (the engine's sums
 * start at +0, so a -0 arrives as +0). */
static void build_one(struct genome *g, int act)
{
    struct tv_error err = {0};
    genome_reset(g);
    assert_ok(genome_add_neuron(g, 0, GENOME_INPUT, GENOME_ACT_IDENTITY, 0, 0, &err), &err);
    assert_ok(genome_add_neuron(g, 1, GENOME_OUTPUT, act, -0.0f, 1, &err), &err);
    assert_ok(genome_add_conn(g, 0, 1, 1.0f, &err), &err);
}

/* ---- the tests ------------------------------------------------------------------ */

/* `inputs`, a row each. */
static const struct rows one_input = {N_INPUTS, 1, inputs, NULL};

static void test_nn_net_export_c_every_activation_gives_the_engine_bits(void **state)
{
    struct genome *g = *state;
    struct tv_error err = {0};
    int written = 0;
    for (int a = 0; a < GENOME_ACT_COUNT; a++) {
        build_one(g, a);
        struct tv_buf c = {0};
        int rc = nn_net_export_c(g, "trevo_net", &c, &err);
        if (rc) { /* the others need libm */
            assert_error(rc, &err, TV_EINVAL, "which needs libm");
            tv_buf_free(&c);
            continue;
        }
        written++;
        char fn[64];
        snprintf(fn, sizeof fn, "trevo_net_act_%s", genome_act_name(a));
        uint32_t out[N_INPUTS];
        long act[N_INPUTS];
        run_export(&c, fn, &one_input, out, act);
        for (size_t i = 0; i < N_INPUTS; i++) { /* the formula itself, -0 too */
            uint32_t want = bits(nn_act_apply(a, f32(inputs[i])));
            if ((uint32_t)act[i] != want) {
                print_error("%s(%08lx): the export gives %08lx, nn_act_apply %08lx\n", fn,
                            (unsigned long)inputs[i], (unsigned long)act[i], (unsigned long)want);
                fail();
            }
        }
        if (a == GENOME_ACT_IDENTITY) { /* what reaches the activation */
            assert_int_equal(out[0], 0x00000000u);
            assert_int_equal(out[1], 0x00000000u); /* the sum turned -0 into +0 */
            for (size_t i = 2; i < 8; i++)
                assert_int_equal(out[i], inputs[i] | (i == 7 ? 0x00400000u : 0)); /* quieted */
        }
        for (int way = NN_WAY_AUTO; way <= NN_WAY_SCATTER; way++) {
            struct nn_opts o = {.way = way};
            struct nn_plan *p;
            assert_ok(nn_plan_compile(g, &o, &p, &err), &err);
            expect_engine(p, out, NULL);
            nn_plan_free(p);
        }
        tv_buf_free(&c);
    }
    assert_int_equal(written, 4); /* identity, relu, abs, step */
}

static void test_nn_qnet_export_c_every_activation_gives_the_engine_bits(void **state)
{
    struct genome *g = *state;
    struct tv_error err = {0};
    const float cal[] = {-3, -1.5f, -0.25f, 0, 0.5f, 1, 2, 3};
    for (int a = 0; a < GENOME_ACT_COUNT; a++) {
        build_one(g, a);
        struct nn_calib *cb;
        assert_ok(nn_calib_new(g, NULL, &cb, &err), &err);
        assert_ok(nn_calib_run(cb, cal, sizeof cal / sizeof cal[0], 0, &err), &err);
        struct nn_qnet *q;
        assert_ok(nn_quantize(cb, &q, &err), &err);
        struct tv_buf c = {0};
        assert_ok(nn_qnet_export_c(q, "trevo_net", &c, &err), &err);
        uint32_t out[N_INPUTS];
        long o8[N_INPUTS];
        run_export(&c, NULL, &one_input, out, o8);
        /* what reaches the input's quantization: -0 and NaN are 0 there,
         * +-inf the ends of the range, as +-FLT_MAX */
        for (size_t i = 1; i < 8; i++)
            if (i != 2 && i != 3)
                assert_int_equal(o8[i], o8[0]);
        assert_int_equal(o8[2], o8[14]);
        assert_int_equal(o8[3], o8[15]);
        struct nn_plan *p;
        assert_ok(nn_qplan_compile(q, &p, &err), &err);
        expect_engine(p, out, o8);
        nn_plan_free(p);
        tv_buf_free(&c);
        nn_qnet_free(q);
        nn_calib_free(cb);
    }
}

/* The float file of g (n_in inputs, one output) against the engine compiled
 * as every command compiles it: LANES sequences of STEPS steps, sequence b
 * the rows b * STEPS .. of the file's run (a reset first), lane b of a
 * batched state and a state of batch 1 of its own; inputs uniform in
 * [-2, 2), or all ones (where tu_cancel_genome's sums cancel). The same bits
 * everywhere, on every target. */
static void expect_file_as_engine(const struct genome *g, size_t n_in, uint64_t seed)
{
    struct tv_error err = {0};
    struct tv_buf c = {0};
    assert_ok(nn_net_export_c(g, "trevo_net", &c, &err), &err);
    /* one entry per connection, not the plan's padded rows */
    char decl[96];
    snprintf(decl, sizeof decl, "static const float trevo_net_w[%zu] =", g->n_conns);
    size_t dn = strlen(decl), at = 0;
    while (at + dn <= c.len && memcmp((const char *)c.data + at, decl, dn))
        at++;
    if (at + dn > c.len)
        fail_msg("the export has no '%s'", decl);
    enum { STEPS = 8, LANES = 17, MAX_IN = 5 };
    assert_true(n_in <= MAX_IN);
    struct tv_rng rng;
    tv_rng_init(&rng, seed, 0, 0);
    uint32_t in[LANES * STEPS * MAX_IN], out[LANES * STEPS];
    int reset[LANES * STEPS];
    long aux[LANES * STEPS];
    for (size_t i = 0; i < LANES * STEPS; i++) {
        reset[i] = i % STEPS == 0;
        int ones = tv_rng_chance(&rng, 0.5);
        for (size_t k = 0; k < n_in; k++)
            in[i * n_in + k] = bits(ones ? 1.0f : (float)(4.0 * tv_rng_uniform(&rng) - 2.0));
    }
    const struct rows r = {LANES * STEPS, n_in, in, reset};
    run_export(&c, NULL, &r, out, aux);
    struct nn_plan *p;
    assert_ok(nn_plan_compile(g, NULL, &p, &err), &err);
    for (int t = 0; t < NN_TARGET_COUNT; t++) {
        if (!tu_target_runs(p, t))
            continue;
        for (size_t batch = 1; batch <= LANES; batch += LANES - 1) {
            struct nn_state *s;
            assert_ok(nn_state_new(p, batch, &s, &err), &err);
            assert_ok(nn_state_set_target(s, t, &err), &err);
            for (size_t b0 = 0; b0 < LANES; b0 += batch) {
                nn_state_reset(s);
                for (size_t step = 0; step < STEPS; step++) {
                    float x[LANES * MAX_IN], y[LANES];
                    for (size_t b = 0; b < batch; b++)
                        for (size_t k = 0; k < n_in; k++)
                            x[b * n_in + k] = f32(in[((b0 + b) * STEPS + step) * n_in + k]);
                    nn_step(s, x, y);
                    for (size_t b = 0; b < batch; b++)
                        if (bits(y[b]) != out[(b0 + b) * STEPS + step]) {
                            print_error("target %d, batch %zu, sequence %zu, step %zu: the engine "
                                        "gives %08lx, the export %08lx\n",
                                        t, batch, b0 + b, step, (unsigned long)bits(y[b]),
                                        (unsigned long)out[(b0 + b) * STEPS + step]);
                            fail();
                        }
                }
            }
            nn_state_free(s);
        }
    }
    nn_plan_free(p);
    tv_buf_free(&c);
}

/* 3 inputs -> 2 hidden (relu, abs) -> 1 output (identity): rows of 2 to 5
 * feed-forward edges and recurrent ones (a self loop, the output back into a
 * hidden neuron). */
static void test_nn_net_export_c_sums_as_the_engine(void **state)
{
    struct genome *g = *state;
    struct tv_error err = {0};
    for (uint32_t i = 0; i < 3; i++)
        assert_ok(genome_add_neuron(g, i, GENOME_INPUT, GENOME_ACT_IDENTITY, 0, 0, &err), &err);
    assert_ok(genome_add_neuron(g, 3, GENOME_OUTPUT, GENOME_ACT_IDENTITY, 0.1f, 1, &err), &err);
    assert_ok(genome_add_neuron(g, 4, GENOME_HIDDEN, GENOME_ACT_RELU, -0.3f, 0.5f, &err), &err);
    assert_ok(genome_add_neuron(g, 5, GENOME_HIDDEN, GENOME_ACT_ABS, 0.7f, 0.5f, &err), &err);
    const float w[][3] = {{0, 3, 0.3f},  {0, 4, 1.7f},  {0, 5, -0.9f}, {1, 3, 0.55f},
                          {1, 4, -1.1f}, {1, 5, 0.35f}, {2, 3, -0.7f}, {2, 4, 0.45f},
                          {4, 3, 1.3f},  {5, 3, -0.6f}, {4, 4, 0.8f},  {3, 5, -0.45f}};
    for (size_t e = 0; e < sizeof w / sizeof w[0]; e++)
        assert_ok(genome_add_conn(g, (uint32_t)w[e][0], (uint32_t)w[e][1], w[e][2], &err), &err);
    expect_file_as_engine(g, 3, 27);
}

/* Sums that cancel, so that their order decides the value: output 5 sums
 * inputs 0, 2, 4 (1e8, -1e8, 1) and hidden 11 (identity, depth 0.25: 1e8,
 * 0.5, 1, 0.5, -1e8 from inputs 0..4) gathered, and hidden 10 (relu, depth
 * 0.5: 1e8, 1, -1e8 from inputs 0..2), whose layer the engine scatters;
 * 11 has a recurrent self loop. */
static void test_nn_net_export_c_sums_in_the_engine_order(void **state)
{
    struct genome *g = *state;
    struct tv_error err = {0};
    for (uint32_t i = 0; i < 5; i++)
        assert_ok(genome_add_neuron(g, i, GENOME_INPUT, GENOME_ACT_IDENTITY, 0, 0, &err), &err);
    assert_ok(genome_add_neuron(g, 5, GENOME_OUTPUT, GENOME_ACT_IDENTITY, 0, 1, &err), &err);
    assert_ok(genome_add_neuron(g, 10, GENOME_HIDDEN, GENOME_ACT_RELU, 0, 0.5f, &err), &err);
    assert_ok(genome_add_neuron(g, 11, GENOME_HIDDEN, GENOME_ACT_IDENTITY, 0, 0.25f, &err), &err);
    const float w[][3] = {{0, 5, 1e8f},   {2, 5, -1e8f},  {4, 5, 1},  {11, 5, 1},
                          {10, 5, 1},     {0, 10, 1e8f},  {1, 10, 1}, {2, 10, -1e8f},
                          {0, 11, 1e8f},  {1, 11, 0.5f},  {2, 11, 1}, {3, 11, 0.5f},
                          {4, 11, -1e8f}, {11, 11, 0.25f}};
    for (size_t e = 0; e < sizeof w / sizeof w[0]; e++)
        assert_ok(genome_add_conn(g, (uint32_t)w[e][0], (uint32_t)w[e][1], w[e][2], &err), &err);
    expect_file_as_engine(g, 5, 28);
}

/* ---- networks with channels ------------------------------------------------------ */

/* A driver for a file of any number of outputs: each line of its input is a
 * row (1 to reset first, else 0, then the bits of the inputs in hex); for
 * each row it prints, per output, the bits of trevo_net_predict's output and
 * its int8 value. */
static const char driver_all_c[] =
    "#include \"net.c\"\n"
    "#include <stdio.h>\n"
    "int main(void)\n"
    "{\n"
    "    union { uint32_t u; float f; } b;\n"
    "    float in[TREVO_NET_N_INPUTS], out[TREVO_NET_N_OUTPUTS];\n"
    "    unsigned long u;\n"
    "    int reset, k;\n"
    "    while (scanf(\"%d\", &reset) == 1) {\n"
    "        for (k = 0; k < TREVO_NET_N_INPUTS; k++) {\n"
    "            if (scanf(\"%lx\", &u) != 1)\n"
    "                return 1;\n"
    "            b.u = (uint32_t)u;\n"
    "            in[k] = b.f;\n"
    "        }\n"
    "        if (reset)\n"
    "            trevo_net_reset();\n"
    "        if (trevo_net_predict(in, out))\n"
    "            return 1;\n"
    "        for (k = 0; k < TREVO_NET_N_OUTPUTS; k++) {\n"
    "            b.f = out[k];\n"
    "            printf(\"%08lx %d\\n\", (unsigned long)b.u,\n"
    "                   (int)trevo_net_v[trevo_net_out_map[k]] - 128);\n"
    "        }\n"
    "    }\n"
    "    return 0;\n"
    "}\n";

/* The int8 file of q against its engine: LANES sequences of STEPS steps of
 * random rows (with +-inf and NaN among them), the file's rows in sequence
 * order (a reset first), the engine at batch 1 and at batch LANES, on every
 * target this CPU runs: every output the same bits, every int8 value the
 * same. */
static void expect_qfile_as_engine(const struct nn_qnet *q, struct tv_rng *rng)
{
    struct tv_error err = {0};
    struct tv_buf c = {0};
    assert_ok(nn_qnet_export_c(q, "trevo_net", &c, &err), &err);
    enum { STEPS = 3, LANES = 5, ROWS = STEPS * LANES };
    size_t n_in = q->n_in, n_out = q->n_out;
    float *in = malloc(ROWS * n_in * sizeof *in), *y = malloc(ROWS * n_out * sizeof *y);
    uint32_t *want = malloc(ROWS * n_out * sizeof *want);
    long *want8 = malloc(ROWS * n_out * sizeof *want8);
    int8_t *y8 = malloc(ROWS * n_out);
    char *text = malloc(ROWS * (3 + 9 * n_in) + 1), *t = text;
    assert_true(in && y && want && want8 && y8 && text);
    tu_random_rows(rng, in, ROWS * n_in);
    for (size_t k = 0; k < 8; k++) /* some of the special values */
        in[tv_rng_below(rng, (uint32_t)(ROWS * n_in))] = f32(inputs[2 + k]);
    for (size_t i = 0; i < ROWS; i++) {
        t += sprintf(t, "%d", i % STEPS == 0);
        for (size_t k = 0; k < n_in; k++)
            t += sprintf(t, " %08lx", (unsigned long)bits(in[i * n_in + k]));
        *t++ = '\n';
    }
    write_file("in.txt", text, (size_t)(t - text));
    write_file("net.c", c.data, c.len);
    write_file("driver.c", driver_all_c, sizeof driver_all_c - 1);
    const char *cc = getenv("CC") ? getenv("CC") : "cc", *d = tu_tmpdir();
    char cmd[2048];
    snprintf(cmd, sizeof cmd,
             "%s -std=c99 -pedantic -Wall -Wextra -Werror -O2 '%s/driver.c' -o '%s/driver' && "
             "'%s/driver' <'%s/in.txt' >'%s/out.txt'",
             cc, d, d, d, d, d);
    tu_run(cmd, "build or run the export");
    char path[512];
    snprintf(path, sizeof path, "%s/out.txt", d);
    FILE *f = fopen(path, "r");
    assert_non_null(f);
    for (size_t i = 0; i < ROWS * n_out; i++) {
        unsigned long o;
        assert_int_equal(fscanf(f, "%lx %ld", &o, &want8[i]), 2);
        want[i] = (uint32_t)o;
    }
    fclose(f);
    struct nn_plan *p;
    assert_ok(nn_qplan_compile(q, &p, &err), &err);
    for (int tg = 0; tg < NN_TARGET_COUNT; tg++) {
        if (!tu_target_runs(p, tg))
            continue;
        for (size_t batch = 1; batch <= LANES; batch += LANES - 1) {
            struct nn_state *s;
            assert_ok(nn_state_new(p, batch, &s, &err), &err);
            assert_ok(nn_state_set_target(s, tg, &err), &err);
            for (size_t b0 = 0; b0 < LANES; b0 += batch) {
                nn_state_reset(s);
                for (size_t step = 0; step < STEPS; step++) {
                    float x[LANES * 64];
                    assert_true(n_in <= 64);
                    for (size_t b = 0; b < batch; b++)
                        memcpy(x + b * n_in, in + ((b0 + b) * STEPS + step) * n_in,
                               n_in * sizeof *x);
                    nn_step(s, x, y);
                    nn_qstate_read_int8(s, y8);
                    for (size_t b = 0; b < batch * n_out; b++) {
                        size_t at = ((b0 + b / n_out) * STEPS + step) * n_out + b % n_out;
                        if (bits(y[b]) != want[at] || y8[b] != want8[at]) {
                            print_error("target %d, batch %zu, sequence %zu, step %zu, output "
                                        "%zu: the engine gives %08lx (int8 %d), the export "
                                        "%08lx (int8 %ld)\n",
                                        tg, batch, b0 + b / n_out, step, b % n_out,
                                        (unsigned long)bits(y[b]), y8[b], (unsigned long)want[at],
                                        want8[at]);
                            fail();
                        }
                    }
                }
            }
            nn_state_free(s);
        }
    }
    nn_plan_free(p);
    TV_FREE_ALL(in, y, want, want8, y8, text);
    tv_buf_free(&c);
}

/* Networks with channels (test_qconv.c's: pooling, padding, stride 2, two
 * layers of filters into one layer, a channel fed by a channel, then random
 * ones grown by the mutations, recurrent edges among them, some with an
 * input scaling) export as C that gives the engine's bits. */
static void test_nn_qnet_export_c_channels_gives_the_engine_bits(void **state)
{
    struct genome *g = *state;
    size_t with = 0;
    for (uint64_t seed = 0; seed < 10; seed++) {
        struct tv_rng rng = tu_rng(seed, 43, 0);
        if (seed == 0)
            tu_conv_genome_of(g, TU_STRIDE_TEXT);
        else
            tu_random_conv_genome(g, seed);
        if (seed % 4 == 3) { /* an input scaling, which predict applies */
            float shift[36], mul[36];
            for (size_t k = 0; k < 36; k++) {
                shift[k] = 0.25f * (float)(k % 5) - 0.5f;
                mul[k] = 0.5f + 0.125f * (float)(k % 7);
            }
            struct tv_error err = {0};
            assert_ok(genome_set_scale(g, shift, mul, 36, &err), &err);
        }
        struct nn_qnet *q = tu_quantize_rows(g, 30, &rng);
        with += q->n_chans > 0; /* the mutations may delete every channel */
        expect_qfile_as_engine(q, &rng);
        nn_qnet_free(q);
    }
    assert_true(with >= 6);
}

/* Sums of the sections `size -A` gives for the object file of c compiled
 * alone with -fdata-sections (each array in a section of its own, named
 * after it) and without optimisation (which may fold a small array into the
 * code): the arrays' read-only data, and all writable data. */
static void object_sections(const struct tv_buf *c, uint64_t *rodata, uint64_t *ram)
{
    write_file("net.c", c->data, c->len);
    const char *cc = getenv("CC") ? getenv("CC") : "cc", *d = tu_tmpdir();
    char cmd[2048];
    snprintf(cmd, sizeof cmd,
             "%s -std=c99 -pedantic -Wall -Werror -O0 -fdata-sections -c '%s/net.c' -o '%s/net.o' "
             "&& size -A '%s/net.o' >'%s/size.txt'",
             cc, d, d, d, d);
    tu_run(cmd, "compile the export and measure its sections");
    char path[512], name[256];
    snprintf(path, sizeof path, "%s/size.txt", d);
    FILE *f = fopen(path, "r");
    assert_non_null(f);
    unsigned long long bytes, addr;
    *rodata = *ram = 0;
    char line[512];
    while (fgets(line, sizeof line, f))
        if (sscanf(line, "%255s %llu %llu", name, &bytes, &addr) == 3) {
            if (!strncmp(name, ".rodata.trevo_net_", 18))
                *rodata += bytes;
            else if (!strncmp(name, ".bss", 4) || !strncmp(name, ".data", 5))
                *ram += bytes;
        }
    fclose(f);
}

/* The device figures of random networks (feed-forward and recurrent, with
 * and without an input scaling): flash is the object file's read-only data,
 * ram its writable data, to the byte; macs the edges; the genome's figures
 * before calibration are the same but for tables quantization found
 * identical (whole tables of 256 bytes less). */
static void test_nn_qnet_cost_is_what_the_compiled_file_holds(void **state)
{
    struct genome *g = *state;
    struct tv_error err = {0};
    int seen_rec = 0, seen_ff = 0;
    for (uint64_t seed = 0; seed <= 12; seed++) {
        struct tv_rng rng = tu_rng(seed, 41, 0);
        genome_release(g);
        genome_init(g);
        const uint32_t sizes[] = {4, 9, 3};
        if (seed < 2) /* feed-forward */
            tu_layered_full(g, sizes, 3, seed, 1.0);
        else
            tu_random_genome(g, &rng, 20);
        size_t n_in = genome_count_kind(g, GENOME_INPUT);
        if (seed % 3 == 0) {
            float shift[16], mul[16];
            for (size_t k = 0; k < n_in; k++) {
                shift[k] = (float)k - 0.5f;
                mul[k] = 0.25f + (float)k;
            }
            assert_ok(genome_set_scale(g, shift, mul, n_in, &err), &err);
        }
        float rows[64 * 16];
        for (size_t i = 0; i < 64 * n_in; i++)
            rows[i] = (float)(4.0 * tv_rng_uniform(&rng) - 2.0);
        struct nn_calib *cb;
        if (nn_calib_new(g, NULL, &cb, &err)) { /* a spiking neuron: no int8 */
            assert_non_null(strstr(err.msg, "spiking"));
            continue;
        }
        assert_ok(nn_calib_run(cb, rows, 64, 8, &err), &err);
        struct nn_qnet *q;
        assert_ok(nn_quantize(cb, &q, &err), &err);
        struct nn_cost qc, gc;
        assert_ok(nn_qnet_cost(q, &qc, &err), &err);
        assert_ok(nn_genome_cost(g, &gc, &err), &err);
        struct tv_buf c = {0};
        assert_ok(nn_qnet_export_c(q, "trevo_net", &c, &err), &err);
        uint64_t rodata, ram;
        object_sections(&c, &rodata, &ram);
        assert_int_equal(qc.flash, rodata);
        assert_int_equal(qc.ram, ram);
        assert_int_equal(qc.macs, q->n_edges);
        assert_int_equal(gc.ram, qc.ram);
        assert_int_equal(gc.macs, qc.macs);
        assert_true(gc.flash >= qc.flash && (gc.flash - qc.flash) % 256 == 0);
        /* the state is one step's values unless an edge is recurrent */
        assert_int_equal(qc.ram, (q->n_recurrent ? 2 : 1) * (q->n + 1) + 1);
        seen_rec |= q->n_recurrent > 0;
        seen_ff |= q->n_recurrent == 0;
        tv_buf_free(&c);
        nn_qnet_free(q);
        nn_calib_free(cb);
    }
    assert_true(seen_rec && seen_ff);
}

/* nn_genome_cost(g) under every failing allocation: TV_ENOMEM naming it,
 * nothing leaked, until the figures come out as without failures (after at
 * least one allocation). */
static void genome_cost_out_of_memory(const struct genome *g)
{
    struct tv_error err = {0};
    struct nn_cost c, want;
    assert_ok(nn_genome_cost(g, &want, &err), &err);
    for (unsigned long k = 1;; k++) {
        failalloc_track(1);
        size_t live = failalloc_live();
        failalloc_arm(k);
        int rc = nn_genome_cost(g, &c, &err);
        failalloc_disarm();
        int fired = failalloc_fired();
        assert_int_equal(failalloc_live(), live);
        failalloc_track(0);
        if (!fired) {
            assert_ok(rc, &err);
            assert_memory_equal(&c, &want, sizeof c);
            assert_true(k > 1);
            break;
        }
        assert_error(rc, &err, TV_ENOMEM, "out of memory");
    }
}

/* The device figures of networks with channels (test_qconv.c's, then random
 * ones): flash the compiled file's read-only data and ram its writable data
 * to the byte (the values, the flag, the int32 sums of the largest map);
 * macs the edges and, per coefficient, the pixels of its channel's map; the
 * genome's figures before calibration the same but for tables found
 * identical. The genome's figures fail cleanly when an allocation fails. */
static void test_nn_qnet_cost_channels_is_what_the_compiled_file_holds(void **state)
{
    struct genome *g = *state;
    struct tv_error err = {0};
    size_t with = 0;
    for (uint64_t seed = 0; seed < 10; seed++) {
        struct tv_rng rng = tu_rng(seed, 47, 0);
        if (seed == 0)
            tu_conv_genome_of(g, TU_STRIDE_TEXT);
        else
            tu_random_conv_genome(g, seed);
        struct nn_qnet *q = tu_quantize_rows(g, 20, &rng);
        with += q->n_chans > 0;
        struct nn_cost qc, gc;
        assert_ok(nn_qnet_cost(q, &qc, &err), &err);
        assert_ok(nn_genome_cost(g, &gc, &err), &err);
        struct tv_buf c = {0};
        assert_ok(nn_qnet_export_c(q, "trevo_net", &c, &err), &err);
        uint64_t rodata, ram, macs = q->n_edges, most = 0;
        object_sections(&c, &rodata, &ram);
        for (size_t v = 0; v < q->n_convs; v++)
            for (size_t k = 0; k < q->convs[v].n_coefs; k++) {
                const struct nn_qconv *cv = &q->convs[v];
                const struct nn_qchan *t =
                    &q->chans[q->conv_dst[cv->dst0 + q->coefs[cv->coef0 + k].out]];
                macs += (uint64_t)t->h * t->w;
            }
        for (size_t i = 0; i < q->n_chans; i++)
            most = (uint64_t)q->chans[i].h * q->chans[i].w > most
                       ? (uint64_t)q->chans[i].h * q->chans[i].w
                       : most;
        assert_int_equal(qc.flash, rodata);
        assert_int_equal(qc.ram, ram);
        assert_int_equal(qc.ram, (q->n_recurrent ? 2 : 1) * (q->n + 1) + 1 + 4 * most);
        assert_int_equal(qc.macs, macs);
        assert_int_equal(gc.ram, qc.ram);
        assert_int_equal(gc.macs, qc.macs);
        assert_true(gc.flash >= qc.flash && (gc.flash - qc.flash) % 256 == 0);
        tv_buf_free(&c);
        nn_qnet_free(q);
    }
    assert_true(with >= 6);
    tu_conv_genome(g);
    genome_cost_out_of_memory(g);
}

/* The genome's figures refuse what has no int8 form (a spiking neuron) and
 * fail cleanly, leaking nothing, when any allocation fails. */
static void test_nn_genome_cost_refusals_and_out_of_memory(void **state)
{
    struct genome *g = *state;
    struct tv_error err = {0};
    const uint32_t sizes[] = {3, 5, 2};
    tu_layered_full(g, sizes, 3, 7, 1.0);
    genome_cost_out_of_memory(g);
    struct nn_cost c;
    genome_neuron_set_model(&g->neurons[g->n_neurons - 1], GENOME_MODEL_CUBA);
    for (size_t i = 0; i < g->n_neurons; i++) /* cuba everywhere the engine asks it */
        if (g->neurons[i].kind != GENOME_INPUT)
            genome_neuron_set_model(&g->neurons[i], GENOME_MODEL_CUBA);
    assert_error(nn_genome_cost(g, &c, &err), &err, TV_EINVAL,
                 "device figures: the network is "
                 "spiking");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        TU_GENOME_TEST(test_nn_net_export_c_every_activation_gives_the_engine_bits),
        TU_GENOME_TEST(test_nn_qnet_export_c_every_activation_gives_the_engine_bits),
        TU_GENOME_TEST(test_nn_net_export_c_sums_as_the_engine),
        TU_GENOME_TEST(test_nn_net_export_c_sums_in_the_engine_order),
        TU_GENOME_TEST(test_nn_qnet_export_c_channels_gives_the_engine_bits),
        TU_GENOME_TEST(test_nn_qnet_cost_is_what_the_compiled_file_holds),
        TU_GENOME_TEST(test_nn_qnet_cost_channels_is_what_the_compiled_file_holds),
        TU_GENOME_TEST(test_nn_genome_cost_refusals_and_out_of_memory),
    };
    return cmocka_run_group_tests(tests, tu_tmpdir_setup, tu_tmpdir_teardown);
}
