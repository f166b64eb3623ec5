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
    int recurrent; /* 1 if an edge reads last step's values */
    int scaled;    /* 1 if the network has an input scaling */
};

/* The arrays of the exported C file (export.c), named once here so that the
 * device figures (nn_qnet_cost) count exactly the bytes the file declares. */
enum nn_qelem { NN_QE_U8, NN_QE_I8, NN_QE_U16, NN_QE_U32, NN_QE_I32, NN_QE_F32 };
struct nn_qarray {
    const char *name;   /* PREFIX_name in the file */
    enum nn_qelem elem; /* its element type */
    const void *data;   /* [count] (NULL when only sizes are known) */
    size_t count;       /* elements; the file declares max(count, 1): C has no empty arrays */
};
#define NN_QARRAYS_MAX 16
struct nn_qarrays {
    struct nn_qarray a[NN_QARRAYS_MAX];
    size_t n_const; /* a[0 .. n_const): static const (flash), in the file's order */
    size_t n;       /* a[n_const .. n): static, zero at start (RAM) */
};
/* The arrays of f's file: the constants (row, idx, w, fbias, mult, shift,
 * pzp, tab, tables, lstart and lzero when recurrent, out_map, in_shift and
 * in_mul when scaled), then the state: the values v (this step's, and last
 * step's when recurrent: n + 1 each) and `started` (one byte). in_scale:
 * shift [n_in] then mul [n_in] when f->scaled (nn_qnet's in_scale), else
 * NULL; the other data are f's arrays (NULL where f only has sizes). */
void nn_qflat_arrays(const struct nn_qflat *f, const float *in_scale, struct nn_qarrays *out);
/* Bytes of one element of kind e. */
size_t nn_qelem_size(enum nn_qelem e);
/* The device figures of the file f describes (quant.h, struct nn_cost). */
void nn_qflat_cost(const struct nn_qflat *f, struct nn_cost *c);

/* The width of a flat form's idx for n neurons: 16 if both steps' values
 * (2 (n + 1)) fit uint16_t, else 32. */
static inline int nn_qflat_idx_bits(size_t n)
{
    return 2 * (n + 1) <= 65536 ? 16 : 32;
}

/* The largest number of tables a flat form indexes (uint16_t). */
#define NN_QFLAT_MAX_TABLES 65536

/* Counts into f (n .. idx_bits, recurrent, scaled) from q; 0, or TV_ELIMIT for too many
 * tables. */
int nn_qflat_sizes(const struct nn_qnet *q, struct nn_qflat *f, struct tv_error *err);
/* Fills f's arrays (pointed by the caller) from q. */
void nn_qflat_fill(const struct nn_qnet *q, struct nn_qflat *f);

#endif
