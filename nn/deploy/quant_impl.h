/*
 * quant_impl.h -- private to nn/deploy/ (quant.c, qnet.c, int8_*.c, export.c): the
 * integer arithmetic every int8 path shares (quant_arith.h, which the C
 * export also writes out), and the flat form of a quantized network that the
 * C export prints and the engine keeps (without its rows: int8_plan.c stores the
 * edges in chunks of 16 neurons).
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
#include "quant_arith.h" /* the integer arithmetic: nn_q_input, nn_q_requant, ... */

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
