/* test_qconv.c -- nn/deploy/quant.h for networks with channels: calibration
 * of the channels' pre-activations, per-channel scales, version 3 of NET.q,
 * and the int8 engine's channels (every path, batch 1 and batches) against a
 * plain reference written here from quant.h's formulas; the error paths. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include <cmocka.h>

#include "failalloc.h"
#include "genome.h"
#include "nn.h"
#include "quant.h"
#include "testutil.h"
#include "nnutil.h"

__extension__ typedef __int128 i128;

/* ---- the reference ------------------------------------------------------------ */

/* clamp(floor((acc mult + 2^(shift-1)) / 2^shift) + pzp) in exact arithmetic. */
static int requant(int64_t acc, int32_t mult, uint32_t shift, int32_t pzp)
{
    assert_true(acc >= INT32_MIN && acc <= INT32_MAX);
    i128 prod = (i128)acc * mult + (shift ? (i128)1 << (shift - 1) : 0);
    i128 den = (i128)1 << shift;
    i128 p = prod / den - ((prod % den != 0) && (prod < 0)) + pzp;
    return (int)(p < -128 ? -128 : p > 127 ? 127 : p);
}

/* Channel c of q into cur (its sources' values there), from quant.h's
 * formulas: int8 values, 64-bit sums, every layer of filters scanned. */
static void ref_chan(const struct nn_qnet *q, size_t c, int8_t *cur)
{
    const struct nn_qchan *ch = &q->chans[c];
    const struct nn_qlayer *L = &q->layers[q->layer_of[ch->j]];
    int8_t map[64 * 64];
    assert_true(ch->h * ch->w <= 64 * 64);
    for (uint32_t y = 0; y < ch->h; y++)
        for (uint32_t x = 0; x < ch->w; x++) {
            int64_t acc = ch->bias;
            for (size_t v = 0; v < q->n_convs; v++) {
                const struct nn_qconv *cv = &q->convs[v];
                for (size_t k = 0; k < cv->n_coefs; k++) {
                    const struct nn_qcoef *cf = &q->coefs[cv->coef0 + k];
                    if (q->conv_dst[cv->dst0 + cf->out] != c)
                        continue;
                    long iy = (long)(y * cv->stride + cf->ky) - (long)cv->pad;
                    long ix = (long)(x * cv->stride + cf->kx) - (long)cv->pad;
                    if (iy < 0 || ix < 0 || iy >= (long)cv->in_h || ix >= (long)cv->in_w)
                        continue; /* 0 outside the map */
                    uint32_t src = q->conv_src[cv->src0 + cf->in];
                    uint32_t s = src + (uint32_t)(iy * (long)cv->in_w + ix);
                    acc += (int64_t)cf->w * (cur[s] - q->layers[q->layer_of[s]].zp);
                }
            }
            int p = requant(acc, ch->mult, ch->shift, L->pzp);
            map[y * ch->w + x] = q->tables[(size_t)ch->table * 256 + (size_t)(p + 128)];
        }
    uint32_t ph = ch->h / ch->pool, pw = ch->w / ch->pool;
    for (uint32_t y = 0; y < ph; y++)
        for (uint32_t x = 0; x < pw; x++) {
            int8_t m = -128;
            for (uint32_t dy = 0; dy < ch->pool; dy++)
                for (uint32_t dx = 0; dx < ch->pool; dx++) {
                    int8_t v = map[(y * ch->pool + dy) * ch->w + x * ch->pool + dx];
                    m = v > m ? v : m;
                }
            cur[ch->j + y * pw + x] = m;
        }
}

/* 1 if neuron j is a channel's pixel. */
static int pixel(const struct nn_qnet *q, size_t j)
{
    for (size_t c = 0; c < q->n_chans; c++)
        if (j >= q->chans[c].j && j < q->chans[c].j + (q->chans[c].h / q->chans[c].pool) *
                                                          (q->chans[c].w / q->chans[c].pool))
            return 1;
    return 0;
}

/* One step t (since a reset) of q for one sample: the channels in their
 * order, then the neurons; prev: last step's values (0 after a reset). */
static void ref_step(const struct nn_qnet *q, int8_t *cur, int8_t *prev, int t, const float *in,
                     int8_t *out)
{
    for (size_t j = 0; j < q->n; j++)
        prev[j] = t ? cur[j] : (int8_t)q->layers[q->layer_of[j]].zp;
    const struct nn_qlayer *L0 = &q->layers[0];
    for (size_t k = 0; k < q->n_in; k++) {
        float x = in[k] / L0->scale;
        x = x > 1000.0f ? 1000.0f : x < -1000.0f ? -1000.0f : x;
        long r = (long)x;
        float fr = x - (float)r;
        r += fr >= 0.5f ? 1 : fr <= -0.5f ? -1 : 0;
        r += L0->zp;
        cur[k] = (int8_t)(r < -128 ? -128 : r > 127 ? 127 : r);
    }
    for (size_t c = 0; c < q->n_chans; c++)
        ref_chan(q, c, cur);
    for (size_t j = q->n_in; j < q->n; j++) {
        if (pixel(q, j))
            continue;
        const struct nn_qneuron *u = &q->neuron[j];
        int64_t acc = u->bias;
        for (uint32_t k = q->row[j]; k < q->row[j + 1]; k++) {
            uint32_t s = q->edges[k].src;
            int8_t v = k < q->rec[j] ? cur[s] : prev[s];
            acc += (int64_t)q->edges[k].w * (v - q->layers[q->layer_of[s]].zp);
        }
        int p = requant(acc, u->mult, u->shift, q->layers[q->layer_of[j]].pzp);
        cur[j] = q->tables[(size_t)u->table * 256 + (size_t)(p + 128)];
    }
    for (size_t k = 0; k < q->n_out; k++)
        out[k] = cur[q->out_map[k]];
}

/* Plan p of q at `batch` on target t, 3 steps: every int8 output the
 * reference's, every float output its dequantized value. */
static void expect_reference(const struct nn_qnet *q, const struct nn_plan *p, size_t batch,
                             int target, struct tv_rng *rng)
{
    struct tv_error err = {0};
    struct nn_state *s;
    assert_ok(nn_state_new(p, batch, &s, &err), &err);
    assert_ok(nn_state_set_target(s, target, &err), &err);
    size_t n_in = q->n_in, n_out = q->n_out;
    float *in = malloc(batch * n_in * sizeof *in), *out = malloc(batch * n_out * sizeof *out);
    int8_t *o8 = malloc(batch * n_out), ro[16];
    int8_t *cur = calloc(batch * q->n, 1), *prev = calloc(q->n, 1);
    assert_true(in && out && o8 && cur && prev && n_out <= 16);
    for (int t = 0; t < 3; t++) {
        tu_random_rows(rng, in, batch * n_in);
        nn_step(s, in, out);
        nn_qstate_read_int8(s, o8);
        for (size_t b = 0; b < batch; b++) {
            ref_step(q, cur + b * q->n, prev, t, in + b * n_in, ro);
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

static void expect_all_paths(const struct nn_qnet *q, struct tv_rng *rng)
{
    struct tv_error err = {0};
    struct nn_plan *p;
    assert_ok(nn_qplan_compile(q, &p, &err), &err);
    assert_true(nn_plan_is_int8(p));
    static const size_t batches[] = {1, 3, 64, 100};
    for (size_t i = 0; i < sizeof batches / sizeof batches[0]; i++)
        for (int t = 0; t < NN_TARGET_COUNT; t++)
            if (tu_target_runs(p, t))
                expect_reference(q, p, batches[i], t, rng);
    nn_plan_free(p);
}

/* ---- calibration and quantization --------------------------------------------- */

/* The channels' pre-activations are observed (before pooling, bias added):
 * channel 2 is tanh, fed by a weight of 1 from inputs in [-2, 2] with a bias
 * of -0.2, so its layer's pre-activation range reaches below -1.5 and above
 * 1.5; the channels' pixels are no neurons; coefficients take their
 * channel's whole int8 range (per-channel scales). */
static void test_nn_quantize_channels_observes_pre_activations(void **state)
{
    struct genome *g = *state;
    tu_conv_genome(g);
    struct tv_rng rng = tu_rng(4, 0, 0);
    struct nn_qnet *q = tu_quantize_rows(g, 50, &rng);
    assert_int_equal(q->n_chans, 2);
    assert_int_equal(q->n_convs, 2); /* (6x6 pad 1 -> depth 0.25), (6x6 pad 0 -> depth 0.5) */
    assert_int_equal(q->n_coefs, 6);
    const struct nn_qchan *c2 = &q->chans[0]; /* the shallower: channel 2, 36 pixels */
    assert_int_equal(c2->h * c2->w, 36);
    const struct nn_qlayer *L = &q->layers[q->layer_of[c2->j]];
    float lo = L->pscale * (float)(-128 - L->pzp), hi = L->pscale * (float)(127 - L->pzp);
    assert_true(lo < -1.5f);
    assert_true(hi > 1.5f);
    for (size_t c = 0; c < q->n_chans; c++) {
        int most = 0;
        for (size_t k = 0; k < q->n_coefs; k++) {
            const struct nn_qconv *cv =
                q->convs[0].coef0 <= k && k < q->convs[0].coef0 + q->convs[0].n_coefs
                    ? &q->convs[0]
                    : &q->convs[1];
            if (q->conv_dst[cv->dst0 + q->coefs[k].out] == c)
                most = abs(q->coefs[k].w) > most ? abs(q->coefs[k].w) : most;
        }
        assert_int_equal(most, 127);
        assert_int_equal(q->neuron[q->chans[c].j].mult, 0); /* a pixel: no neuron */
    }
    nn_qnet_free(q);
}

/* The int8 network stays close to the float one on the rows it was
 * calibrated on (so that no value is out of its range). */
static void test_nn_quantize_channels_close_to_float(void **state)
{
    struct genome *g = *state;
    tu_conv_genome(g);
    struct tv_rng rng = tu_rng(5, 0, 0), again = rng;
    struct nn_qnet *q = tu_quantize_rows(g, 100, &rng);
    rng = again; /* the same rows */
    struct tv_error err = {0};
    struct nn_plan *fp, *qp;
    assert_ok(nn_plan_compile(g, NULL, &fp, &err), &err);
    assert_ok(nn_qplan_compile(q, &qp, &err), &err);
    struct nn_state *fs, *qs;
    assert_ok(nn_state_new(fp, 1, &fs, &err), &err);
    assert_ok(nn_state_new(qp, 1, &qs, &err), &err);
    double worst = 0;
    for (int t = 0; t < 100; t++) {
        float in[36], fo[2], qo[2];
        tu_random_rows(&rng, in, 36);
        nn_step(fs, in, fo);
        nn_step(qs, in, qo);
        for (int k = 0; k < 2; k++)
            worst = fabs(fo[k] - qo[k]) > worst ? fabs(fo[k] - qo[k]) : worst;
    }
    assert_true(worst < 0.1);
    assert_true(worst > 0.0);
    nn_state_free(fs);
    nn_state_free(qs);
    nn_plan_free(fp);
    nn_plan_free(qp);
    nn_qnet_free(q);
}

/* ---- the engine ----------------------------------------------------------------- */

/* Random genomes grown from conv_genome, and one with a stride of 2: every
 * path (batch 1 and batches, every target this CPU runs) gives the
 * reference's bits. */
static void test_nn_qplan_channels_every_path_gives_the_reference_bits(void **state)
{
    struct genome *g = *state;
    tu_conv_genome_of(g, TU_STRIDE_TEXT);
    struct tv_rng r0 = tu_rng(99, 8, 0);
    struct nn_qnet *q0 = tu_quantize_rows(g, 30, &r0);
    assert_int_equal(q0->n_chans, 3);
    assert_int_equal(q0->convs[1].stride, 2);
    expect_all_paths(q0, &r0);
    nn_qnet_free(q0);
    for (uint64_t seed = 0; seed < 10; seed++) {
        tu_random_conv_genome(g, seed);
        struct tv_rng rng = tu_rng(seed, 8, 0);
        struct nn_qnet *q = tu_quantize_rows(g, 30, &rng);
        expect_all_paths(q, &rng);
        nn_qnet_free(q);
    }
}

/* nn_qplan_compile with each of its allocations failing: TV_ENOMEM, nothing
 * leaked; and nn_quantize the same. */
static void test_nn_qplan_channels_out_of_memory(void **state)
{
    struct genome *g = *state;
    tu_conv_genome(g);
    struct tv_rng rng = tu_rng(6, 0, 0);
    struct nn_qnet *q = tu_quantize_rows(g, 20, &rng);
    struct tv_error err = {0};
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
            nn_plan_free(p);
        }
        assert_int_equal(failalloc_live(), live);
        failalloc_track(0);
        if (!fired)
            break;
    }
    struct nn_calib *c;
    float rows[2 * 36];
    tu_random_rows(&rng, rows, 2 * 36);
    assert_ok(nn_calib_new(g, NULL, &c, &err), &err);
    assert_ok(nn_calib_run(c, rows, 2, 1, &err), &err);
    for (unsigned long k = 1;; k++) {
        struct nn_qnet *r = (struct nn_qnet *)1;
        failalloc_track(1);
        size_t live = failalloc_live();
        failalloc_arm(k);
        int rc = nn_quantize(c, &r, &err);
        failalloc_disarm();
        int fired = failalloc_fired();
        if (fired) {
            assert_error(rc, &err, TV_ENOMEM, "out of memory");
            assert_null(r);
        } else {
            assert_ok(rc, &err);
            nn_qnet_free(r);
        }
        assert_int_equal(failalloc_live(), live);
        failalloc_track(0);
        if (!fired) {
            assert_true(k > 10);
            break;
        }
    }
    nn_calib_free(c);
    nn_qnet_free(q);
}

/* ---- NET.q version 3 ------------------------------------------------------------ */

static void test_nn_qnet_channels_write_read_round_trip(void **state)
{
    struct genome *g = *state;
    struct tv_error err = {0};
    for (uint64_t seed = 0; seed < 6; seed++) {
        tu_random_conv_genome(g, seed);
        struct tv_rng rng = tu_rng(seed, 9, 0);
        struct nn_qnet *q = tu_quantize_rows(g, 10, &rng), *r;
        struct tv_buf a = {0}, b = {0};
        assert_ok(nn_qnet_write(q, &a, &err), &err);
        assert_true(a.len > 13 && !memcmp(a.data, "trevo-qnet 3\n", 13));
        assert_ok(nn_qnet_read((const char *)a.data, a.len, "x.q", &r, &err), &err);
        assert_ok(nn_qnet_write(r, &b, &err), &err);
        assert_int_equal(a.len, b.len);
        assert_memory_equal(a.data, b.data, a.len);
        assert_int_equal(r->n_chans, q->n_chans);
        expect_all_paths(r, &rng); /* what was read runs as what was written */
        tv_buf_free(&a);
        tv_buf_free(&b);
        nn_qnet_free(q);
        nn_qnet_free(r);
    }
}

/* The text of the quantized conv_genome, NUL-terminated. */
static struct tv_buf conv_text(void)
{
    struct tv_error err = {0};
    struct genome g;
    genome_init(&g);
    tu_conv_genome(&g);
    struct tv_rng rng = tu_rng(1, 0, 0);
    struct nn_qnet *q = tu_quantize_rows(&g, 20, &rng);
    struct tv_buf b = {0};
    assert_ok(nn_qnet_write(q, &b, &err), &err);
    assert_ok(tv_buf_append(&b, "", 1), &err);
    b.len--;
    nn_qnet_free(q);
    genome_release(&g);
    return b;
}

/* The text with the line starting with `prefix` (the first) replaced by
 * `line`, read: TV_EFORMAT naming the file, the line `later` lines after
 * it and want. */
static void expect_error_after(const char *text, const char *prefix, const char *line, size_t later,
                               const char *want)
{
    const char *at = strstr(text, prefix);
    assert_non_null(at);
    const char *end = strchr(at, '\n');
    size_t n = strlen(text), nt = strlen(line);
    char *bad = malloc(n + nt + 1);
    assert_non_null(bad);
    memcpy(bad, text, (size_t)(at - text));
    memcpy(bad + (at - text), line, nt);
    strcpy(bad + (at - text) + nt, end);
    size_t ln = 1 + later;
    for (const char *c = text; c < at; c++)
        ln += *c == '\n';
    char where[32];
    snprintf(where, sizeof where, "bad.q:%zu: ", ln);
    struct tv_error err = {0};
    struct nn_qnet *q = (struct nn_qnet *)1;
    int rc = nn_qnet_read(bad, strlen(bad), "bad.q", &q, &err);
    assert_null(q);
    assert_error(rc, &err, TV_EFORMAT, want);
    if (!strstr(err.msg, where))
        fail_msg("'%s' does not name %s", err.msg, where);
    free(bad);
}

static void expect_line_error(const char *text, const char *prefix, const char *line,
                              const char *want)
{
    expect_error_after(text, prefix, line, 0, want);
}

static void test_nn_qnet_read_rejects_bad_channels(void **state)
{
    (void)state;
    struct tv_buf b = conv_text();
    const char *t = (const char *)b.data;
    /* as written: channel 2's 6x6 pixels at 36, channel 1's 2x2 at 72; the
     * first conv makes the 6x6 map from the image (pad 1), the second the
     * 4x4 one from the image and channel 2's pixels */
    assert_non_null(strstr(t, "\nconvs 2 2 6 0\n"));
    assert_non_null(strstr(t, "\nchan 36 6 6 1 "));
    assert_non_null(strstr(t, "\nchan 72 4 4 2 "));
    assert_non_null(strstr(t, "\nconv 1 1 6 6 3 3 1 1 2\nsrc 0\ndst 0\n"));
    assert_non_null(strstr(t, "\nconv 2 1 6 6 3 3 1 0 4\nsrc 0\nsrc 36\ndst 1\n"));
    expect_line_error(t, "convs ", "convs 0 2 6 0", "channels: 0 is not in [1, ");
    expect_line_error(t, "convs ", "convs 2 2 6 2", "scaled: 2 is not in [0, 1]");
    expect_line_error(t, "chan 36", "chan 30 6 6 1 0 0 0 0 0", "channel pixel: 30 is not in [36,");
    expect_line_error(t, "chan 36", "chan 36 6 6 17 0 0 0 0 0", "channel pooling: 17 is not in");
    expect_line_error(t, "chan 36", "chan 36 6 6 7 0 0 0 0 0", "channel pooling 7 is larger than");
    expect_line_error(t, "chan 36", "chan 36 7 6 1 0 0 0 0 0", "not in one layer");
    expect_line_error(t, "chan 36", "chan 36 6 6 1 9 0 0 0 0", "table: 9 is not in [0,");
    expect_line_error(t, "chan 36", "chan 36 6 6 1 0 0 0 63 0", "shift: 63 is not in [0, 62]");
    expect_line_error(t, "chan 36", "chan 36 6 6 1 0 0 0 0 -1", "accumulator scale: must be >= 0");
    expect_line_error(t, "chan 72", "chan 40 4 4 2 0 0 0 0 0", "channel pixel: 40 is not in [72,");
    expect_line_error(t, "conv 1", "conv 1 1 6 6 3 3 1 3 2", "padding: 3 is not in [0, 2]");
    expect_line_error(t, "conv 1", "conv 1 1 6 6 3 17 1 1 2", "kernel width: 17 is not in [1, 16]");
    expect_line_error(t, "conv 1", "conv 1 1 6 6 3 3 1 1 9", "coefficients: 9 is not in [0, 6]");
    expect_error_after(t, "conv 1", "conv 1 1 6 6 3 3 2 1 2", 2,
                       "target channel 0: its map is 6 x 6, the filters make 3 x 3");
    expect_line_error(t, "conv 1", "conv 1 1 1 1 3 3 1 0 2",
                      "the kernel is larger than the padded source map");
    expect_line_error(t, "src 0", "src 1", "source map 1: neither 36 inputs nor a channel's");
    expect_error_after(t, "conv 2 1", "conv 2 1 2 2 1 1 1 0 4", 2,
                       "source map 36: neither 4 inputs nor a channel's 2 x 2 pooled pixels");
    expect_line_error(t, "dst 0", "dst 2", "target channel: 2 is not in [0, 1]");
    expect_line_error(t, "dst 0", "dst 1", "its map is 4 x 4, the filters make 6 x 6");
    expect_error_after(t, "\nc ", "\nc 1 0 0 0 5", 1, "coefficient target: 1 is not in [0, 0]");
    expect_error_after(t, "\nc ", "\nc 0 0 3 0 5", 1, "coefficient row: 3 is not in [0, 2]");
    expect_error_after(t, "\nc ", "\nc 0 0 0 0 -129", 1, "coefficient: -129 is not in [-128, 127]");
    /* a pixel has no neuron line: the first neuron line is 76's */
    expect_line_error(t, "neuron 76", "neuron 72 0 0 0 0 0 0 0", "neurons come in order");
    tv_buf_free(&b);
}

/* A layer of filters whose targets are shallower than the last one's: the
 * engine runs them in order, so the file must give them in order. */
static void test_nn_qnet_read_rejects_filters_out_of_order(void **state)
{
    (void)state;
    struct tv_buf b = conv_text();
    const char *t = (const char *)b.data;
    const char *c1 = strstr(t, "conv 1 1 6 6"), *n1 = strstr(t, "neuron 76");
    assert_true(c1 && n1);
    static const char deep[] = "conv 1 1 6 6 3 3 1 0 1\nsrc 0\ndst 1\nc 0 0 0 0 5\n";
    static const char shallow[] = "conv 1 1 6 6 3 3 1 1 5\nsrc 0\ndst 0\nc 0 0 0 0 5\n"
                                  "c 0 0 0 1 5\nc 0 0 0 2 5\nc 0 0 1 0 5\nc 0 0 1 1 5\n";
    size_t n = (size_t)(c1 - t);
    char *bad = malloc(b.len + sizeof deep + sizeof shallow);
    assert_non_null(bad);
    memcpy(bad, t, n);
    strcpy(bad + n, deep);
    strcat(bad, shallow);
    strcat(bad, n1);
    struct tv_error err = {0};
    struct nn_qnet *q = (struct nn_qnet *)1;
    assert_error(nn_qnet_read(bad, strlen(bad), "bad.q", &q, &err), &err, TV_EFORMAT,
                 "target channel 0: its layer 1 is not deeper than its sources' or is shallower "
                 "than the last filters'");
    assert_null(q);
    /* in order, the same lines read */
    char *good = malloc(b.len + sizeof deep + sizeof shallow);
    assert_non_null(good);
    memcpy(good, t, n);
    strcpy(good + n, shallow);
    strcat(good, deep);
    strcat(good, n1);
    assert_ok(nn_qnet_read(good, strlen(good), "good.q", &q, &err), &err);
    nn_qnet_free(q);
    free(bad);
    free(good);
    tv_buf_free(&b);
}

/* Every prefix of a version 3 file cut at a line end is refused. */
static void test_nn_qnet_read_channels_every_truncation(void **state)
{
    (void)state;
    struct tv_buf b = conv_text();
    tu_qnet_refuses_every_truncation(&b);
    tv_buf_free(&b);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        TU_GENOME_TEST(test_nn_quantize_channels_observes_pre_activations),
        TU_GENOME_TEST(test_nn_quantize_channels_close_to_float),
        TU_GENOME_TEST(test_nn_qplan_channels_every_path_gives_the_reference_bits),
        TU_GENOME_TEST(test_nn_qplan_channels_out_of_memory),
        TU_GENOME_TEST(test_nn_qnet_channels_write_read_round_trip),
        cmocka_unit_test(test_nn_qnet_read_rejects_bad_channels),
        cmocka_unit_test(test_nn_qnet_read_rejects_filters_out_of_order),
        cmocka_unit_test(test_nn_qnet_read_channels_every_truncation),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
