/* cost.c -- the device figures of an int8 network (quant.h, struct nn_cost):
 * the list of arrays its exported C declares (nn_qflat_arrays, which
 * export.c prints from), their bytes, and the same figures of a float genome
 * before calibration. One list for both, so the figures are the file's bytes
 * by construction; tests/test_export.c holds them to `size -A` of the
 * compiled file. */
#include <stdlib.h>
#include <string.h>

#include "conv.h"
#include "quant_impl.h"

size_t nn_qelem_size(enum nn_qelem e)
{
    static const unsigned char size[] = {[NN_QE_U8] = 1,  [NN_QE_I8] = 1,  [NN_QE_U16] = 2,
                                         [NN_QE_U32] = 4, [NN_QE_I32] = 4, [NN_QE_F32] = 4};
    return size[e];
}

static void put(struct nn_qarrays *o, const char *name, enum nn_qelem e, const void *data,
                size_t count)
{
    o->a[o->n++] = (struct nn_qarray){name, e, data, count};
}

/* The channels' constants (quant_impl.h: chan .. cw). */
static void chan_arrays(const struct nn_qflat *f, struct nn_qarrays *o)
{
    size_t nc = f->n_chans;
    put(o, "chan", NN_QE_U32, f->chan, 4 * nc);
    put(o, "cseg", NN_QE_U32, f->cseg, nc + 1);
    put(o, "cbias", NN_QE_I32, f->cbias, nc);
    put(o, "cmult", NN_QE_I32, f->cmult, nc);
    put(o, "cshift", NN_QE_U8, f->cshift, nc);
    put(o, "cpzp", NN_QE_I8, f->cpzp, nc);
    put(o, "ctab", NN_QE_U16, f->ctab, nc);
    put(o, "sconv", NN_QE_U32, f->sconv, f->n_segs);
    put(o, "scoef", NN_QE_U32, f->scoef, f->n_segs + 1);
    put(o, "conv", NN_QE_U32, f->conv, 7 * f->n_convs);
    put(o, "csrc", NN_QE_U32, f->csrc, f->n_csrc);
    put(o, "czu", NN_QE_U8, f->czu, f->n_csrc);
    put(o, "cat", f->cat_bits == 16 ? NN_QE_U16 : NN_QE_U32, f->cat, f->n_coefs);
    put(o, "cw", NN_QE_I8, f->cw, f->n_coefs);
}

void nn_qflat_arrays(const struct nn_qflat *f, const float *in_scale, struct nn_qarrays *o)
{
    size_t nh = f->n - f->n_in - f->n_px;
    o->n = 0;
    put(o, "row", NN_QE_U32, f->row, nh + 1);
    put(o, "idx", f->idx_bits == 16 ? NN_QE_U16 : NN_QE_U32, f->idx, f->n_edges);
    put(o, "w", NN_QE_I8, f->w, f->n_edges);
    put(o, "fbias", NN_QE_I32, f->fbias, nh);
    put(o, "mult", NN_QE_I32, f->mult, nh);
    put(o, "shift", NN_QE_U8, f->shift, nh);
    put(o, "pzp", NN_QE_I8, f->pzp, nh);
    put(o, "tab", NN_QE_U16, f->tab, nh);
    put(o, "tables", NN_QE_U8, f->tables, f->n_tables * 256);
    if (f->recurrent) { /* only the step's start reads them */
        put(o, "lstart", NN_QE_U32, f->lstart, f->n_layers + 1);
        put(o, "lzero", NN_QE_U8, f->lzero, f->n_layers);
    }
    put(o, "out_map", NN_QE_U32, f->out_map, f->n_out);
    if (f->scaled) {
        put(o, "in_shift", NN_QE_F32, in_scale, f->n_in);
        put(o, "in_mul", NN_QE_F32, in_scale ? in_scale + f->n_in : NULL, f->n_in);
    }
    if (f->n_chans)
        chan_arrays(f, o);
    o->n_const = o->n;
    /* a recurrent edge reads last step's value of its source at n + 1 + src */
    put(o, "v", NN_QE_U8, NULL, (f->recurrent ? 2 : 1) * (f->n + 1));
    put(o, "started", NN_QE_U8, NULL, 1);
    if (f->n_chans) /* one channel's sums at a time */
        put(o, "acc", NN_QE_I32, NULL, f->max_px);
}

void nn_qflat_cost(const struct nn_qflat *f, struct nn_cost *c)
{
    struct nn_qarrays a;
    nn_qflat_arrays(f, NULL, &a);
    c->flash = c->ram = 0;
    for (size_t i = 0; i < a.n; i++) {
        uint64_t bytes = (uint64_t)(a.a[i].count ? a.a[i].count : 1) * nn_qelem_size(a.a[i].elem);
        if (i < a.n_const)
            c->flash += bytes;
        else
            c->ram += bytes;
    }
    /* one `acc +=` per edge, and per coefficient and pixel of its channel's
     * map (those that fall in the padding included) */
    c->macs = f->n_edges + f->chan_macs;
}

int nn_qnet_cost(const struct nn_qnet *q, struct nn_cost *c, struct tv_error *err)
{
    struct nn_qflat f;
    int rc = nn_qflat_sizes(q, &f, err);
    if (!rc) {
        nn_qflat_chan_sizes(q, &f);
        nn_qflat_cost(&f, c);
    }
    return rc;
}

/* The number of distinct (layer, activation) pairs of p's non-input neurons
 * but the pooled pixels (px[j] = 1; NULL: none) and of its channels:
 * quantization makes one table per pair (quant.c make_table), and stores
 * identical tables once. */
static size_t count_tables(const struct nn_plan *p, const uint8_t *px)
{
    size_t n = 0, nc = nn_conv_net_n_chans(p->conv);
    unsigned char seen[GENOME_ACT_COUNT];
    for (size_t l = 1; l < p->n_layers; l++) {
        memset(seen, 0, sizeof seen);
        for (uint32_t j = p->layer_start[l]; j < p->layer_start[l + 1]; j++) {
            if (px && px[j])
                continue;
            n += !seen[p->act[j]];
            seen[p->act[j]] = 1;
        }
        for (size_t i = 0; i < nc; i++) {
            struct nn_conv_chan_view cv;
            nn_conv_net_chan(p->conv, i, &cv);
            if (cv.layer == l) {
                n += !seen[cv.act];
                seen[cv.act] = 1;
            }
        }
    }
    return n;
}

/* The channels' sizes of the flat form of convolutional plan p into f (as
 * nn_qflat_chan_sizes counts a quantized network's), its pooled pixels into
 * px (px[j] = 1). */
static void genome_chans(const struct nn_plan *p, struct nn_qflat *f, uint8_t *px)
{
    size_t nc = nn_conv_net_n_chans(p->conv), ng = nn_conv_net_n_groups(p->conv);
    f->n_chans = nc;
    f->n_convs = ng;
    f->cat_bits = 16;
    for (size_t i = 0; i < nc; i++) {
        struct nn_conv_chan_view cv;
        nn_conv_net_chan(p->conv, i, &cv);
        size_t np = (cv.h / cv.pool) * (cv.w / cv.pool);
        memset(px + cv.j, 1, np);
        f->n_px += np;
        f->max_px = cv.h * cv.w > f->max_px ? cv.h * cv.w : f->max_px;
    }
    for (size_t v = 0; v < ng; v++) {
        struct nn_conv_group_view gv;
        nn_conv_net_group(p->conv, v, &gv);
        const struct nn_conv_shape *sh = gv.shape;
        f->n_segs += sh->out_ch;
        f->n_csrc += sh->in_ch;
        f->n_coefs += gv.n_coefs;
        if ((uint64_t)sh->in_ch * sh->k_h * sh->k_w > 65536)
            f->cat_bits = 32;
        for (size_t e = 0; e < gv.n_coefs; e++) {
            struct nn_conv_chan_view t;
            nn_conv_net_chan(p->conv, gv.out[gv.coefs[e].out], &t);
            f->chan_macs += (uint64_t)t.h * t.w;
        }
    }
}

int nn_genome_cost(const struct genome *g, struct nn_cost *c, struct tv_error *err)
{
    struct nn_opts opts = {.way = NN_WAY_GATHER, .tile_neurons = SIZE_MAX}; /* as nn_calib_new */
    struct nn_plan *p = NULL;
    uint8_t *px = NULL;
    int rc = nn_no_spiking(g, "device figures", "int8", err);
    if (!rc)
        rc = nn_plan_compile(g, &opts, &p, err);
    if (!rc && p->conv && !(px = calloc(p->n, 1)))
        rc = tv_error_set(err, TV_ENOMEM, "device figures: out of memory");
    if (rc) {
        nn_plan_free(p);
        return rc;
    }
    struct nn_qflat f = {.n = p->n, .n_in = p->n_in, .n_out = p->n_out, .n_layers = p->n_layers};
    f.idx_bits = nn_qflat_idx_bits(p->n);
    f.scaled = p->in_shift != NULL;
    if (p->conv)
        genome_chans(p, &f, px);
    for (uint32_t j = (uint32_t)p->n_in; j < p->n; j++) {
        f.n_edges += (p->g_end[j] - p->g_row[j]) + (p->r_end[j] - p->r_row[j]);
        f.recurrent |= p->r_end[j] > p->r_row[j];
    }
    f.n_tables = count_tables(p, px);
    free(px);
    nn_plan_free(p);
    nn_qflat_cost(&f, c);
    return 0;
}
