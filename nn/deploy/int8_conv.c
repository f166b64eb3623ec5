/* int8_conv.c -- the channels of a step of an int8 plan with channels
 * (int8_impl.h, "channels"): per block of up to 64 samples and per channel,
 * the integer sums of its filters, requantized and looked up in its table,
 * then max pooling into its pixels. Portable C, the same bits at every
 * batch and on every target (the sums are exact integers). Called by the
 * kernels of NN_OP_INT8 (int8_step.c, int8_avx512.c); calls none of them.
 */
#include <string.h>

#include "int8_impl.h"

#pragma GCC diagnostic ignored "-Wpsabi"

/* The kernel columns [*lo, *hi) of output positions whose source position
 * o * stride + k - pad lies in [0, in). */
static inline void valid(uint32_t in, uint32_t out, uint32_t k, uint32_t stride, uint32_t pad,
                         uint32_t *lo, uint32_t *hi)
{
    uint32_t a = pad > k ? (pad - k + stride - 1) / stride : 0;
    uint32_t b = (in - 1 + pad - k) / stride + 1; /* in + pad > k: the reader's check */
    *lo = a;
    *hi = b < out ? b : out;
}

/* The sums of one segment's coefficients into acc [h][w][nb] (samples b0 ..
 * b0 + nb of the values v of stride st). */
static inline __attribute__((always_inline)) void seg_sums(const struct qc_seg *sg,
                                                           const struct qc_coef *cf, uint32_t oh,
                                                           uint32_t ow, const uint8_t *v, size_t st,
                                                           size_t b0, size_t nb, int32_t *acc)
{
    for (uint32_t k = sg->c0; k < sg->c1; k++) {
        const struct qc_coef *c = &cf[k];
        int32_t w = c->w, zu = c->zu;
        uint32_t y0, y1, x0, x1;
        valid(sg->in_h, oh, c->ky, sg->stride, sg->pad, &y0, &y1);
        valid(sg->in_w, ow, c->kx, sg->stride, sg->pad, &x0, &x1);
        const uint8_t *in = v + (size_t)c->src * st + b0;
        for (uint32_t oy = y0; oy < y1; oy++) {
            size_t iy = (size_t)oy * sg->stride + c->ky - sg->pad;
            const uint8_t *row = in + iy * sg->in_w * st;
            int32_t *a = acc + (size_t)oy * ow * nb;
            if (st == 1 && sg->stride == 1) { /* batch 1: along the row */
                const uint8_t *x = row + x0 + c->kx - sg->pad;
                for (uint32_t ox = x0; ox < x1; ox++)
                    a[ox] += w * ((int32_t)x[ox - x0] - zu);
                continue;
            }
            for (uint32_t ox = x0; ox < x1; ox++) {
                const uint8_t *x = row + ((size_t)ox * sg->stride + c->kx - sg->pad) * st;
                for (size_t b = 0; b < nb; b++)
                    a[ox * nb + b] += w * ((int32_t)x[b] - zu);
            }
        }
    }
}

/* Channel ch's sums acc [h][w][nb] requantized and looked up into m, then
 * pooled into its pixels (samples [b0, b0 + nb) of the values v). */
static inline __attribute__((always_inline)) void finish_chan(const struct nn_qplan *qp,
                                                              const struct qc_chan *ch, uint8_t *v,
                                                              size_t st, size_t b0, size_t nb,
                                                              const int32_t *acc, uint8_t *m)
{
    size_t n = (size_t)ch->h * ch->w * nb;
    const uint8_t *t = qp->f.tables + (size_t)ch->tab * 256;
    for (size_t k = 0; k < n; k++)
        m[k] = t[nn_q_requant(acc[k], ch->mult, ch->shift, ch->pzp)];
    size_t p = ch->pool, ph = ch->h / p, pw = ch->w / p;
    for (size_t py = 0; py < ph; py++)
        for (size_t px = 0; px < pw; px++) {
            uint8_t *o = v + ((size_t)ch->j + py * pw + px) * st + b0;
            for (size_t b = 0; b < nb; b++) {
                uint8_t mx = 0;
                for (size_t dy = 0; dy < p; dy++)
                    for (size_t dx = 0; dx < p; dx++) {
                        uint8_t x = m[((py * p + dy) * ch->w + px * p + dx) * nb + b];
                        mx = x > mx ? x : mx;
                    }
                o[b] = mx;
            }
        }
}

/* Channel ch for samples [b0, b0 + nb): its pixels' values in v. */
static inline __attribute__((always_inline)) void chan_block(const struct nn_qplan *qp,
                                                             const struct qc_chan *ch, uint8_t *v,
                                                             size_t st, size_t b0, size_t nb,
                                                             int32_t *acc, uint8_t *m)
{
    size_t n = (size_t)ch->h * ch->w * nb;
    for (size_t k = 0; k < n; k++)
        acc[k] = ch->bias;
    for (uint32_t g = ch->seg0; g < ch->seg1; g++)
        seg_sums(&qp->segs[g], qp->ccoefs, ch->h, ch->w, v, st, b0, nb, acc);
    finish_chan(qp, ch, v, st, b0, nb, acc, m);
}

/* ---- batch 1 -------------------------------------------------------------- */

typedef int16_t v8s __attribute__((vector_size(16), aligned(2), may_alias));
typedef int32_t v8i __attribute__((vector_size(32), aligned(4), may_alias));

/* The padded copies of the sources of layers of filters [cv0, cv1) into P
 * (int16 u - zu; zeros around). */
static inline __attribute__((always_inline)) void
pad_sources(const struct nn_qplan *qp, uint32_t cv0, uint32_t cv1, const uint8_t *v, int16_t *P)
{
    for (uint32_t c = cv0; c < cv1; c++) {
        const struct qc_conv *cv = &qp->cconvs[c];
        size_t pw = cv->in_w + 2 * cv->pad, ph = cv->in_h + 2 * cv->pad;
        for (uint32_t k = 0; k < cv->in_ch; k++) {
            const struct qc_src *sr = &qp->csrc[cv->src0 + k];
            int16_t *o = P + cv->at + k * ph * pw;
            memset(o, 0, ph * pw * sizeof *o);
            for (size_t y = 0; y < cv->in_h; y++) {
                const uint8_t *x = v + sr->j + y * cv->in_w;
                int16_t *r = o + (y + cv->pad) * pw + cv->pad;
                for (size_t i = 0; i < cv->in_w; i++)
                    r[i] = (int16_t)((int32_t)x[i] - (int32_t)sr->zu);
            }
        }
    }
}

/* A segment of stride 1 into acc [h][w] at batch 1: each coefficient one
 * run over the grid G [oh][padded width] from its padded source. */
static inline __attribute__((always_inline)) void seg_grid(const struct qc_seg *sg,
                                                           const struct qc_coef *cf, uint32_t oh,
                                                           uint32_t ow, const int16_t *P,
                                                           int32_t *G, int32_t *acc)
{
    size_t pw = sg->in_w + 2 * sg->pad, n = (size_t)(oh - 1) * pw + ow;
    memset(G, 0, n * sizeof *G);
    for (uint32_t k = sg->c0; k < sg->c1; k++) {
        const struct qc_coef *c = &cf[k];
        const int16_t *x = P + c->pat + c->ky * pw + c->kx;
        int32_t w = c->w;
        v8i wv = {w, w, w, w, w, w, w, w};
        size_t i = 0;
        for (; i + 8 <= n; i += 8) {
            v8i xi = __builtin_convertvector(*(const v8s *)(x + i), v8i);
            *(v8i *)(G + i) += xi * wv;
        }
        for (; i < n; i++)
            G[i] += w * x[i];
    }
    for (size_t y = 0; y < oh; y++)
        for (size_t x = 0; x < ow; x++)
            acc[y * ow + x] += G[y * pw + x];
}

/* The channels at batch 1, on target TARGET's code. */
#define QCONV_ONE(attr, name)                                                                      \
    attr static void name(const struct nn_qplan *qp, struct nn_state *s)                           \
    {                                                                                              \
        int32_t *acc = (int32_t *)(void *)(s->extra + qp->scratch_at);                             \
        uint8_t *m = (uint8_t *)(acc + qp->max_px);                                                \
        int16_t *P = (int16_t *)(void *)(s->extra + qp->pad_at);                                   \
        int32_t *G = (int32_t *)(void *)(s->extra + qp->grid_at);                                  \
        uint8_t *v = values(s);                                                                    \
        for (size_t i = 0; i < qp->n_chans; i++) {                                                 \
            const struct qc_chan *ch = &qp->chans[i];                                              \
            pad_sources(qp, ch->cv0, ch->cv1, v, P);                                               \
            size_t n = (size_t)ch->h * ch->w;                                                      \
            for (size_t k = 0; k < n; k++)                                                         \
                acc[k] = ch->bias;                                                                 \
            for (uint32_t g = ch->seg0; g < ch->seg1; g++) {                                       \
                const struct qc_seg *sg = &qp->segs[g];                                            \
                if (sg->stride == 1)                                                               \
                    seg_grid(sg, qp->ccoefs, ch->h, ch->w, P, G, acc);                             \
                else                                                                               \
                    seg_sums(sg, qp->ccoefs, ch->h, ch->w, v, 1, 0, 1, acc);                       \
            }                                                                                      \
            finish_chan(qp, ch, v, 1, 0, 1, acc, m);                                               \
        }                                                                                          \
    }
#if defined(__x86_64__) && defined(__GNUC__)
QCONV_ONE(, one_default)
QCONV_ONE(__attribute__((target("avx2"))), one_avx2)
QCONV_ONE(__attribute__((target("avx512f"))), one_avx512f)
static void (*const qconv_one[NN_TARGET_COUNT])(const struct nn_qplan *, struct nn_state *) = {
    one_default, one_avx2, one_avx512f};
#else
QCONV_ONE(, one_default)
static void (*const qconv_one[NN_TARGET_COUNT])(const struct nn_qplan *, struct nn_state *) = {
    one_default, one_default, one_default};
#endif

/* ---- the entry -------------------------------------------------------------- */

void nn_qconv_run(const struct nn_qplan *qp, struct nn_state *s)
{
    if (s->stride == 1) {
        qconv_one[s->target](qp, s);
        return;
    }
    uint8_t *scratch = s->extra + qp->scratch_at;
    int32_t *acc = (int32_t *)(void *)scratch;
    uint8_t *m = scratch + qp->max_px * 64 * sizeof *acc;
    uint8_t *v = values(s);
    size_t st = s->stride;
    for (size_t b0 = 0; b0 < st; b0 += 64) {
        size_t nb = st - b0 < 64 ? st - b0 : 64;
        for (size_t i = 0; i < qp->n_chans; i++) {
            if (nb == 1)
                chan_block(qp, &qp->chans[i], v, st, b0, 1, acc, m);
            else if (nb == 64)
                chan_block(qp, &qp->chans[i], v, st, b0, 64, acc, m);
            else
                chan_block(qp, &qp->chans[i], v, st, b0, nb, acc, m);
        }
    }
}
