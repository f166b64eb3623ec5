/* qflat_chan.c -- the channels of a quantized network in the flat form the C
 * export prints and the device figures count (quant_impl.h, struct nn_qflat:
 * chan .. cw). The engine keeps its own form (int8_impl.h); this one is made
 * for a small file: per channel its geometry, bias, requantization and table,
 * per segment (the coefficients of one layer of filters into one channel) its
 * layer of filters, per coefficient its int8 weight and one code of its
 * source and kernel offset. The pooled pixels lose their (empty) entries in
 * the per-neuron arrays. */
#include <string.h>

#include "quant_impl.h"

/* Pooled pixels of channel c. */
static size_t chan_px(const struct nn_qchan *c)
{
    return (size_t)(c->h / c->pool) * (c->w / c->pool);
}

void nn_qflat_chan_sizes(const struct nn_qnet *q, struct nn_qflat *f)
{
    f->n_chans = q->n_chans;
    f->n_segs = q->n_conv_dst;
    f->n_convs = q->n_convs;
    f->n_csrc = q->n_conv_src;
    f->n_coefs = q->n_coefs;
    f->n_px = f->max_px = 0;
    f->chan_macs = 0;
    f->cat_bits = 16;
    for (size_t c = 0; c < q->n_chans; c++) {
        size_t px = (size_t)q->chans[c].h * q->chans[c].w;
        f->n_px += chan_px(&q->chans[c]);
        f->max_px = px > f->max_px ? px : f->max_px;
    }
    for (size_t v = 0; v < q->n_convs; v++) {
        const struct nn_qconv *cv = &q->convs[v];
        if ((uint64_t)cv->in_ch * cv->k_h * cv->k_w > 65536)
            f->cat_bits = 32;
        for (size_t k = 0; k < cv->n_coefs; k++) {
            const struct nn_qchan *t =
                &q->chans[q->conv_dst[cv->dst0 + q->coefs[cv->coef0 + k].out]];
            f->chan_macs += (uint64_t)t->h * t->w;
        }
    }
}

size_t nn_qflat_chan_bytes(const struct nn_qflat *f)
{
    size_t nc = f->n_chans, ns = f->n_segs;
    return 4 * (4 * nc + nc + 1 + 2 * nc + ns + ns + 1 + 7 * f->n_convs + f->n_csrc) +
           f->n_coefs * (size_t)(f->cat_bits / 8) + 2 * nc + 2 * nc + f->n_csrc + f->n_coefs;
}

void nn_qflat_chan_place(struct nn_qflat *f, unsigned char *x)
{
    size_t nc = f->n_chans, ns = f->n_segs;
#define TAKE(ptr, count)                                                                           \
    do {                                                                                           \
        ptr = (void *)x;                                                                           \
        x += (count) * sizeof *(ptr);                                                              \
    } while (0)
    TAKE(f->chan, 4 * nc);
    TAKE(f->cseg, nc + 1);
    TAKE(f->cbias, nc);
    TAKE(f->cmult, nc);
    TAKE(f->sconv, ns);
    TAKE(f->scoef, ns + 1);
    TAKE(f->conv, 7 * f->n_convs);
    TAKE(f->csrc, f->n_csrc);
    f->cat = x;
    x += f->n_coefs * (size_t)(f->cat_bits / 8);
    TAKE(f->ctab, nc);
    TAKE(f->cshift, nc);
    TAKE(f->cpzp, nc);
    TAKE(f->czu, f->n_csrc);
    TAKE(f->cw, f->n_coefs);
#undef TAKE
}

/* The per-neuron arrays without the pooled pixels (q's channels are sorted
 * by j, each one's pixels a block). */
static void drop_pixels(const struct nn_qnet *q, struct nn_qflat *f)
{
    size_t o = 0, c = 0;
    for (size_t j = q->n_in; j < q->n; j++) {
        if (c < q->n_chans && j == q->chans[c].j) {
            j += chan_px(&q->chans[c]) - 1;
            c++;
            continue;
        }
        size_t i = j - q->n_in;
        f->row[o] = f->row[i];
        f->fbias[o] = f->fbias[i];
        f->mult[o] = f->mult[i];
        f->shift[o] = f->shift[i];
        f->pzp[o] = f->pzp[i];
        f->tab[o] = f->tab[i];
        o++;
    }
    f->row[o] = (uint32_t)q->n_edges;
}

/* The segments of channel c (by layer of filters) and their coefficients,
 * from segment *g and coefficient *k on. */
static void chan_segs(const struct nn_qnet *q, struct nn_qflat *f, uint32_t c, uint32_t *g,
                      uint32_t *k)
{
    for (size_t v = 0; v < q->n_convs; v++) {
        const struct nn_qconv *cv = &q->convs[v];
        for (uint32_t t = 0; t < cv->out_ch; t++) {
            if (q->conv_dst[cv->dst0 + t] != c)
                continue;
            f->sconv[*g] = (uint32_t)v;
            f->scoef[*g] = *k;
            for (size_t e = 0; e < cv->n_coefs; e++) {
                const struct nn_qcoef *cf = &q->coefs[cv->coef0 + e];
                if (cf->out != t)
                    continue;
                uint32_t code = (cf->in * cv->k_h + cf->ky) * cv->k_w + cf->kx;
                if (f->cat_bits == 16)
                    ((uint16_t *)f->cat)[*k] = (uint16_t)code;
                else
                    ((uint32_t *)f->cat)[*k] = code;
                f->cw[(*k)++] = cf->w;
            }
            (*g)++;
        }
    }
}

void nn_qflat_chan_fill(const struct nn_qnet *q, struct nn_qflat *f)
{
    drop_pixels(q, f);
    uint32_t g = 0, k = 0;
    for (uint32_t c = 0; c < q->n_chans; c++) {
        const struct nn_qchan *ch = &q->chans[c];
        f->chan[4 * c] = ch->j;
        f->chan[4 * c + 1] = ch->h;
        f->chan[4 * c + 2] = ch->w;
        f->chan[4 * c + 3] = ch->pool;
        f->cbias[c] = ch->bias;
        f->cmult[c] = ch->mult;
        f->cshift[c] = (uint8_t)ch->shift;
        f->cpzp[c] = (int8_t)q->layers[q->layer_of[ch->j]].pzp;
        f->ctab[c] = (uint16_t)ch->table;
        f->cseg[c] = g;
        chan_segs(q, f, c, &g, &k);
    }
    f->cseg[q->n_chans] = g;
    f->scoef[g] = k;
    for (size_t v = 0; v < q->n_convs; v++) {
        const struct nn_qconv *cv = &q->convs[v];
        uint32_t *o = f->conv + 7 * v;
        o[0] = cv->in_h, o[1] = cv->in_w, o[2] = cv->k_h, o[3] = cv->k_w;
        o[4] = cv->stride, o[5] = cv->pad, o[6] = cv->src0;
    }
    for (size_t i = 0; i < q->n_conv_src; i++) {
        f->csrc[i] = q->conv_src[i];
        f->czu[i] = (uint8_t)(q->layers[q->layer_of[q->conv_src[i]]].zp + 128);
    }
}
