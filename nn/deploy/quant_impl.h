/*
 * quant_impl.h -- private to nn/ (quant.c, qnet.c, int8.c, export.c): the
 * integer arithmetic every int8 path shares, and the flat form of a
 * quantized network that the C export prints and the engine keeps (without
 * its rows: int8.c stores the edges in chunks of 16 neurons).
 *
 * The flat form codes each value as u = q + 128 (uint8), so that a sum is
 *     acc_j = fbias_j + sum_edges w * u_src        (fbias folds -w (z_src + 128))
 * which is what AVX-512 VNNI (unsigned x signed bytes) computes, and the
 * tables map u (pre-activation) to u. The sources of a neuron's row are
 * indices into the values [this step (n + 1 rows) | last step (n + 1 rows)]:
 * a recurrent edge reads n + 1 + src.
 */
#ifndef TREVO_NN_QUANT_IMPL_H
#define TREVO_NN_QUANT_IMPL_H

#include <stddef.h>
#include <stdint.h>

#include "nn_impl.h"
#include "quant.h"

/* Rounds half away from zero, for |x| < 2^23 (callers clamp first). */
static inline int32_t nn_q_round(float x)
{
    int32_t t = (int32_t)x; /* toward zero */
    float f = x - (float)t; /* exact */
    if (f >= 0.5f)
        t++;
    else if (f <= -0.5f)
        t--;
    return t;
}

/* u = clamp(round(x / scale) + zp, -128, 127) + 128; NaN gives zp. */
static inline uint8_t nn_q_input(float x, float scale, int32_t zp)
{
    float t = x / scale;
    if (!(t == t))
        t = 0.0f;
    if (t > 1000.0f)
        t = 1000.0f;
    if (t < -1000.0f)
        t = -1000.0f;
    int32_t q = nn_q_round(t) + zp;
    q = q < -128 ? -128 : q > 127 ? 127 : q;
    return (uint8_t)(q + 128);
}

/* floor(x / 2^sh), without relying on the sign of >> on negative numbers. */
static inline int64_t nn_q_floor_shift(int64_t x, unsigned sh)
{
    return x >= 0 ? x >> sh : ~((~x) >> sh);
}

/* The requantized pre-activation as a table index u in [0, 255]:
 * clamp(floor((acc * mult + 2^(sh-1)) / 2^sh) + pzp, -128, 127) + 128. */
static inline uint32_t nn_q_requant(int32_t acc, int32_t mult, unsigned sh, int32_t pzp)
{
    int64_t t = (int64_t)acc * mult + (sh ? (int64_t)1 << (sh - 1) : 0);
    int64_t r = nn_q_floor_shift(t, sh) + pzp;
    r = r < -128 ? -128 : r > 127 ? 127 : r;
    return (uint32_t)(r + 128);
}

/* The flat form (see the top of this file). The caller points the arrays at
 * memory of the sizes nn_qflat_sizes gives, and nn_qflat_fill fills them. */
struct nn_qflat {
    size_t n, n_in, n_out, n_edges, n_tables, n_layers;
    int idx_bits; /* 16 if 2 (n + 1) <= 65536, else 32 */
    /* per non-input neuron j, at i = j - n_in (row, fbias, mult, shift, pzp, tab): */
    uint32_t *row;     /* [n - n_in + 1] edges of j: [row[i], row[i + 1]) */
    void *idx;         /* [n_edges] uint16_t or uint32_t: value slot read */
    int8_t *w;         /* [n_edges] */
    int32_t *fbias;    /* [n - n_in] */
    int32_t *mult;     /* [n - n_in] */
    uint8_t *shift;    /* [n - n_in] */
    int8_t *pzp;       /* [n - n_in] the neuron's layer's pre-activation zero point */
    uint16_t *tab;     /* [n - n_in] its table */
    uint8_t *tables;   /* [n_tables * 256 + 64] (u -> u; 64 bytes of slack) */
    uint32_t *lstart;  /* [n_layers + 1] */
    uint8_t *lzero;    /* [n_layers] z_L + 128: a value 0 (last step after a reset) */
    float in_scale;    /* s_0 */
    int32_t in_zp;     /* z_0 */
    uint32_t *out_map; /* [n_out] */
    float out_scale;   /* the last layer's: outputs have depth 1 */
    int32_t out_zp;
};

/* The largest number of tables a flat form indexes (uint16_t). */
#define NN_QFLAT_MAX_TABLES 65536

/* Counts into f (n .. idx_bits) from q; 0, or TV_ELIMIT for too many
 * tables. */
int nn_qflat_sizes(const struct nn_qnet *q, struct nn_qflat *f, struct tv_error *err);
/* Fills f's arrays (pointed by the caller) from q. */
void nn_qflat_fill(const struct nn_qnet *q, struct nn_qflat *f);

#endif
