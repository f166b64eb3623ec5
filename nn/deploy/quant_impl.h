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
    /* The channels, in the export's form only (qflat_chan.c; all 0 in the
     * engine's, which keeps its own, int8_impl.h). The per-neuron arrays
     * above then leave out the n_px pooled pixels (they have no entry), and
     * the channels, in their order (by j), have: */
    size_t n_px, n_chans, n_segs, n_convs, n_csrc, n_coefs;
    size_t max_px;      /* the largest map before pooling (the int32 sums of one channel) */
    uint64_t chan_macs; /* sum over coefficients of the pixels of their channel's map */
    int cat_bits;       /* 16 if every (in, ky, kx) code fits uint16_t, else 32 */
    uint32_t *chan;     /* [4 n_chans] j, h, w, pool */
    uint32_t *cseg;     /* [n_chans + 1] its segments [cseg[c], cseg[c + 1]) */
    int32_t *cbias;     /* [n_chans] (bias, mult, shift and table as quant.h's nn_qchan) */
    int32_t *cmult;     /* [n_chans] */
    uint8_t *cshift;    /* [n_chans] */
    int8_t *cpzp;       /* [n_chans] its layer's pre-activation zero point */
    uint16_t *ctab;     /* [n_chans] */
    uint32_t *sconv;    /* [n_segs] a segment: the coefficients of one layer of filters into */
    uint32_t *scoef;    /* [n_segs + 1] one channel, [scoef[g], scoef[g + 1]) */
    uint32_t *conv;     /* [7 n_convs] in_h, in_w, k_h, k_w, stride, pad, first source */
    uint32_t *csrc;     /* [n_csrc] a source map's pixel (0, 0) */
    uint8_t *czu;       /* [n_csrc] its zero code z + 128 (a pixel outside the map) */
    void *cat;          /* [n_coefs] uint16_t or uint32_t: (in k_h + ky) k_w + kx */
    int8_t *cw;         /* [n_coefs] */
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
#define NN_QARRAYS_MAX 32
struct nn_qarrays {
    struct nn_qarray a[NN_QARRAYS_MAX];
    size_t n_const; /* a[0 .. n_const): static const (flash), in the file's order */
    size_t n;       /* a[n_const .. n): static, zero at start (RAM) */
};
/* The arrays of f's file: the constants (row, idx, w, fbias, mult, shift,
 * pzp, tab, tables, lstart and lzero when recurrent, out_map, in_shift and
 * in_mul when scaled, then the channels' when f has channels: chan .. cw),
 * then the state: the values v (this step's, and last step's when
 * recurrent: n + 1 each), `started` (one byte) and, with channels, acc (the
 * int32 sums of one channel's map, max_px). in_scale:
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

/* The export's form of the channels (qflat_chan.c). Counts q's channels into f
 * (n_px .. cat_bits) after nn_qflat_sizes. */
void nn_qflat_chan_sizes(const struct nn_qnet *q, struct nn_qflat *f);
/* The per-neuron arrays of f (after nn_qflat_fill) without the pixels, and
 * the channels' arrays (pointed by the caller) from q. */
void nn_qflat_chan_fill(const struct nn_qnet *q, struct nn_qflat *f);
/* Bytes of the channels' arrays of f (nn_qflat_chan_sizes given). */
size_t nn_qflat_chan_bytes(const struct nn_qflat *f);
/* Points f's channel arrays into mem (nn_qflat_chan_bytes, aligned to 4). */
void nn_qflat_chan_place(struct nn_qflat *f, unsigned char *mem);

#endif
