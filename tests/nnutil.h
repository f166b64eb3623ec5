/* nnutil.h -- what the tests of the engine's plans share (test_export,
 * test_quant, test_qconv): whether this CPU runs a target; small networks
 * with channels, random ones grown from them, and their int8 forms. Include
 * after testutil.h. */
#ifndef TREVO_NNUTIL_H
#define TREVO_NNUTIL_H

#include <stdio.h>
#include <stdlib.h>

#include "genome.h"
#include "nn.h"
#include "quant.h"

/* Whether this CPU runs target t for plan p. */
static inline int tu_target_runs(const struct nn_plan *p, int t)
{
    struct tv_error err = {0};
    struct nn_state *s;
    assert_ok(nn_state_new(p, 1, &s, &err), &err);
    int ok = nn_state_set_target(s, t, &(struct tv_error){0}) == 0;
    nn_state_free(s);
    return ok;
}

/* A 6x6 image (inputs 0..35), two outputs; channel 2 a 6x6 tanh map (3x3,
 * pad 1) at depth 0.25, channel 1 a 4x4 relu map pooled 2x2 (pixels
 * 100..103) at depth 0.5 fed from the image and from channel 2; a head of
 * plain connections from pixels and an input. (test_genome_conv.c's.) */
#define TU_CONV_TEXT                                                                               \
    "neuron 36 out 1 identity 0\n"                                                                 \
    "neuron 37 out 1 sigmoid 0.5\n"                                                                \
    "conn 100 36 0.5\n"                                                                            \
    "conn 101 36 -0.25\n"                                                                          \
    "conn 103 37 1.5\n"                                                                            \
    "conn 5 36 0.125\n"                                                                            \
    "conn 200 37 -1\n"                                                                             \
    "channel 0 in 6 6 1 0 identity 0 0\n"                                                          \
    "channel 1 hid 4 4 2 0.5 relu 0.1 100\n"                                                       \
    "channel 2 hid 6 6 1 0.25 tanh -0.2 200\n"                                                     \
    "filter 0 1 3 3 1 0 2,2,0.25 0,0,0.5 1,1,-1\n"                                                 \
    "filter 0 2 3 3 1 1 1,1,1 0,2,0.3\n"                                                           \
    "filter 2 1 3 3 1 0 1,0,0.7\n"

/* More of TU_CONV_TEXT: channel 3, a 3x3 map made with stride 2 (pad 1) from
 * the image at channel 2's depth (two layers of filters into one layer),
 * read by the head. */
#define TU_STRIDE_TEXT                                                                             \
    "channel 3 hid 3 3 1 0.25 relu 0.05 300\n"                                                     \
    "filter 0 3 3 3 2 1 0,0,0.5 1,1,-0.75 2,2,1\n"                                                 \
    "conn 300 36 0.5\n"                                                                            \
    "conn 308 37 -0.5\n"

/* The network of TU_CONV_TEXT and `more` (genome text lines) into g. */
static inline void tu_conv_genome_of(struct genome *g, const char *more)
{
    char text[4096];
    size_t off = (size_t)snprintf(text, sizeof text, "trevo-net 4\ninputs 36\noutputs 2\n");
    for (int i = 0; i < 36; i++)
        off += (size_t)snprintf(text + off, sizeof text - off, "neuron %d in 0 identity 0\n", i);
    snprintf(text + off, sizeof text - off, "%s%s", TU_CONV_TEXT, more);
    struct tv_error err = {0};
    genome_reset(g);
    assert_ok(genome_read_text(g, text, strlen(text), "c.txt", NULL, &err), &err);
}

/* The network of TU_CONV_TEXT into g. */
static inline void tu_conv_genome(struct genome *g)
{
    tu_conv_genome_of(g, "");
}

/* tu_conv_genome grown by the convolutional and ordinary mutations (seed). */
static inline void tu_random_conv_genome(struct genome *g, uint64_t seed)
{
    tu_conv_genome(g);
    struct genome_mutation m = tu_aggressive_mutation();
    m.conv.add_filter_rate = 0.5;
    m.conv.del_filter_rate = 0.1;
    m.conv.add_coef_rate = 1.0;
    m.conv.del_coef_rate = 0.3;
    m.conv.add_channel_rate = 0.2;
    m.conv.del_channel_rate = 0.05;
    struct tv_error err = {0};
    struct tv_rng rng = tu_rng(seed, 3, 4);
    for (uint64_t k = 0; k < 5 + seed * 3; k++)
        assert_ok(genome_mutate(g, &m, &rng, &err), &err);
}

/* n inputs, uniform in [-2, 2), a tenth of them 0. */
static inline void tu_random_rows(struct tv_rng *rng, float *rows, size_t n)
{
    for (size_t i = 0; i < n; i++)
        rows[i] = tv_rng_chance(rng, 0.1) ? 0.0f : (float)(4.0 * tv_rng_uniform(rng) - 2.0);
}

/* g quantized after a calibration on n_rows random rows (a step each). */
static inline struct nn_qnet *tu_quantize_rows(const struct genome *g, size_t n_rows,
                                               struct tv_rng *rng)
{
    struct tv_error err = {0};
    struct nn_calib *c;
    assert_ok(nn_calib_new(g, NULL, &c, &err), &err);
    size_t n_in = nn_plan_n_inputs(nn_calib_plan(c));
    float *rows = malloc(n_rows * n_in * sizeof *rows);
    assert_non_null(rows);
    tu_random_rows(rng, rows, n_rows * n_in);
    assert_ok(nn_calib_run(c, rows, n_rows, 1, &err), &err);
    struct nn_qnet *q;
    assert_ok(nn_quantize(c, &q, &err), &err);
    free(rows);
    nn_calib_free(c);
    return q;
}

/* Every prefix of the NET.q text b cut at a line end is refused as a
 * format error naming the file ("cut.q:"), never a crash. */
static inline void tu_qnet_refuses_every_truncation(const struct tv_buf *b)
{
    for (size_t i = 0; i + 1 < b->len; i++) {
        if (b->data[i] != '\n')
            continue;
        struct tv_error err = {0};
        struct nn_qnet *q;
        int rc = nn_qnet_read((const char *)b->data, i + 1, "cut.q", &q, &err);
        assert_error(rc, &err, TV_EFORMAT, "cut.q:");
    }
}

#endif
