/* int8_conv.c -- the channels of a step of an int8 plan with channels
 * (int8_impl.h, "channels"): per block of up to 64 samples and per channel,
 * the integer sums of its filters, requantized and looked up in its table,
 * then max pooling into its pixels. Portable C, the same bits at every
 * batch and on every target (the sums are exact integers). Called by the
 * kernels of NN_OP_INT8 (int8_step.c, int8_avx512.c); calls none of them.
 */
#include "int8_impl.h"

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

void nn_qconv_run(const struct nn_qplan *qp, struct nn_state *s)
{
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
