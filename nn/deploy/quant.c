/* quant.c -- quantization of a calibrated float network into a struct
 * nn_qnet (quant.h), and its flat form (quant_impl.h). The calibration is
 * calib.c and observe.c. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "conv.h"
#include "kernel.h"
#include "calib.h"

static int cmp_float(const void *a, const void *b)
{
    float x = *(const float *)a, y = *(const float *)b;
    return (x > y) - (x < y);
}

/* The range of st (with 0 in it) as a scale and zero point. */
static void stat_range(struct calib_stat *st, double pct, float *scale, int32_t *zp)
{
    double lo = st->seen ? st->lo : 0.0, hi = st->seen ? st->hi : 0.0;
    if (st->samp && st->n_samp > 0) {
        qsort(st->samp, st->n_samp, sizeof *st->samp, cmp_float);
        double tail = (100.0 - pct) / 200.0 * (double)(st->n_samp - 1);
        lo = st->samp[(size_t)tail];
        hi = st->samp[st->n_samp - 1 - (size_t)tail];
    }
    lo = lo < 0.0 ? lo : 0.0;
    hi = hi > 0.0 ? hi : 0.0;
    double s = (hi - lo) / 255.0;
    if (!(s > 1e-30) || !isfinite(s))
        s = hi - lo > 0.0 ? 1e-30 : 1.0;
    *scale = (float)s;
    double z = -128.0 - lo / (double)*scale;
    z = z < -128.0 ? -128.0 : z > 127.0 ? 127.0 : z;
    *zp = (int32_t)lround(z);
}

/* clamp(round(y / scale) + zp) as int8, in double (the quantize side). */
static int8_t quant_d(double y, float scale, int32_t zp)
{
    double t = y / scale;
    if (isnan(t))
        t = 0.0;
    t = t > 1e6 ? 1e6 : t < -1e6 ? -1e6 : t;
    long q = lround(t) + zp;
    return (int8_t)(q < -128 ? -128 : q > 127 ? 127 : q);
}

/* mult / 2^shift ~ m (m > 0). */
static void fixed_point(double m, int32_t *mult, uint32_t *shift)
{
    int e;
    double f = frexp(m, &e); /* m = f 2^e, f in [0.5, 1) */
    long long mm = llround(f * 2147483648.0);
    if (mm == 2147483648LL) {
        mm = 1073741824LL;
        e++;
    }
    int sh = 31 - e;
    if (!(m > 0.0) || sh > 62) { /* below one step of the table: only the zero point */
        *mult = 0;
        *shift = 0;
    } else if (sh < 0) { /* saturates whatever the sum */
        *mult = INT32_MAX;
        *shift = 0;
    } else {
        *mult = (int32_t)mm;
        *shift = (uint32_t)sh;
    }
}

/* A table's hash, for storing identical tables once. */
static uint64_t table_hash(const int8_t *t)
{
    uint64_t h = 1469598103934665603ull;
    for (int i = 0; i < 256; i++)
        h = (h ^ (uint8_t)t[i]) * 1099511628211ull;
    return h;
}

struct table_set {
    int8_t *tables; /* [n][256] */
    size_t n, cap;
    uint32_t *slot; /* [mask + 1] index + 1 */
    uint64_t mask;
};

/* The index of table t in the set, added if new. */
static int table_put(struct table_set *ts, const int8_t *t, uint32_t *out, struct tv_error *err)
{
    uint64_t h = table_hash(t);
    for (uint64_t i = h & ts->mask;; i = (i + 1) & ts->mask) {
        uint32_t k = ts->slot[i];
        if (!k)
            break;
        if (!memcmp(ts->tables + (size_t)(k - 1) * 256, t, 256)) {
            *out = k - 1;
            return 0;
        }
    }
    if (ts->n + 1 > ts->cap) {
        int rc = tv_grow((void **)&ts->tables, &ts->cap, ts->n + 1, 256, err);
        if (rc)
            return rc;
    }
    memcpy(ts->tables + ts->n * 256, t, 256);
    uint64_t i = h & ts->mask;
    while (ts->slot[i])
        i = (i + 1) & ts->mask;
    ts->slot[i] = (uint32_t)++ts->n;
    *out = (uint32_t)(ts->n - 1);
    return 0;
}

/* The scale of neuron j's accumulator: its largest |w| s_src takes 127. */
static double acc_scale(const struct nn_qnet *q, const struct nn_plan *p, uint32_t j,
                        const double *w)
{
    double amax = 0.0;
    for (uint32_t k = q->row[j]; k < q->row[j + 1]; k++) {
        double a = fabs(w[k]) * q->layers[q->layer_of[q->edges[k].src]].scale;
        amax = a > amax ? a : amax;
    }
    double A = amax / 127.0;
    double P = q->layers[q->layer_of[j]].pscale;
    if (!(A > 0.0))
        A = P;
    double b = fabs((double)p->bias[j]);
    if (b / A > (double)(1 << 29)) /* the bias must leave room for the sum */
        A = b / (double)(1 << 29);
    return A;
}

/* The edges of q from the float plan (sources, rows), their float weights
 * into w[n_edges]. */
static int take_edges(struct nn_qnet *q, const struct nn_plan *p, double **w, struct tv_error *err)
{
    size_t m = 0;
    for (uint32_t j = (uint32_t)p->n_in; j < p->n; j++) {
        size_t fan = (p->g_end[j] - p->g_row[j]) + (p->r_end[j] - p->r_row[j]);
        if (fan > NN_QUANT_MAX_FANIN)
            return tv_error_set(err, TV_ELIMIT,
                                "quantize: neuron %u (dense) has %zu edges, more than %d", j, fan,
                                NN_QUANT_MAX_FANIN);
        m += fan;
    }
    q->edges = malloc((m ? m : 1) * sizeof *q->edges);
    *w = malloc((m ? m : 1) * sizeof **w);
    if (!q->edges || !*w)
        return tv_error_set(err, TV_ENOMEM, "quantize: out of memory");
    q->n_edges = m;
    size_t k = 0;
    for (uint32_t j = 0; j < p->n; j++) {
        q->row[j] = (uint32_t)k;
        if (j < p->n_in) {
            q->rec[j] = (uint32_t)k;
            continue;
        }
        for (uint32_t e = p->g_row[j]; e < p->g_end[j]; e++, k++) {
            q->edges[k].src = nn_idx(p->g_idx, p->row_bits, e);
            (*w)[k] = p->g_w[e];
        }
        q->rec[j] = (uint32_t)k;
        for (uint32_t e = p->r_row[j]; e < p->r_end[j]; e++, k++) {
            q->edges[k].src = nn_idx(p->r_idx, p->row_bits, e);
            (*w)[k] = p->r_w[e];
        }
        q->n_recurrent += k - q->rec[j];
    }
    q->row[p->n] = (uint32_t)k;
    return 0;
}

/* Neuron j's table: quantize_L(act(P (u - 128 - pz))). */
static void make_table(const struct nn_qlayer *L, int act, int8_t *t)
{
    for (int u = 0; u < 256; u++) {
        float x = (float)((double)L->pscale * (double)(u - 128 - L->pzp));
        t[u] = quant_d(nn_act_apply(act, x), L->scale, L->zp);
    }
}

static int cmp_chan(const void *a, const void *b)
{
    uint32_t x = ((const struct nn_qchan *)a)->j, y = ((const struct nn_qchan *)b)->j;
    return (x > y) - (x < y);
}

/* Each channel of q (chans sorted, amax[i] its largest |w| s_src, fan[i]
 * its coefficients) given its accumulator scale (into amax), bias,
 * multiplier and table (into ts). */
static int chan_scales(struct nn_qnet *q, const struct nn_plan *p, struct table_set *ts,
                       double *amax, const size_t *fan, struct tv_error *err)
{
    int rc = 0;
    size_t nc = q->n_chans;
    int8_t t[256];
    for (size_t i = 0; i < nc && !rc; i++) {
        struct nn_conv_chan_view cv;
        nn_conv_net_chan(p->conv, q->chans[i].table, &cv);
        struct nn_qchan *ch = &q->chans[i];
        const struct nn_qlayer *L = &q->layers[q->layer_of[ch->j]];
        if (fan[i] > NN_QUANT_MAX_FANIN) {
            rc = tv_error_set(err, TV_ELIMIT,
                              "quantize: channel at neuron %u (dense) has %zu coefficients, more "
                              "than %d",
                              ch->j, fan[i], NN_QUANT_MAX_FANIN);
            break;
        }
        double A = amax[i] / 127.0;
        if (!(A > 0.0))
            A = L->pscale;
        if (fabs((double)cv.bias) / A > (double)(1 << 29)) /* room for the sum */
            A = fabs((double)cv.bias) / (double)(1 << 29);
        amax[i] = A;
        ch->acc_scale = (float)A;
        ch->bias = (int32_t)lround((double)cv.bias / A);
        fixed_point(A / L->pscale, &ch->mult, &ch->shift);
        make_table(L, cv.act, t);
        rc = table_put(ts, t, &ch->table, err);
    }
    return rc;
}

/* The channels and layers of filters of a convolutional plan p into q
 * (arrays allocated here), their tables into ts; px[j] = 1 for a pixel. */
static int quantize_chans(struct nn_qnet *q, const struct nn_plan *p, struct table_set *ts,
                          uint8_t *px, struct tv_error *err)
{
    size_t nc = nn_conv_net_n_chans(p->conv), ng = nn_conv_net_n_groups(p->conv), m = 0;
    size_t n_src = 0, n_dst = 0;
    for (size_t i = 0; i < ng; i++) {
        struct nn_conv_group_view gv;
        nn_conv_net_group(p->conv, i, &gv);
        m += gv.n_coefs;
        n_src += gv.shape->in_ch;
        n_dst += gv.shape->out_ch;
    }
    q->chans = calloc(nc ? nc : 1, sizeof *q->chans);
    q->convs = calloc(ng ? ng : 1, sizeof *q->convs);
    q->conv_src = malloc((n_src ? n_src : 1) * sizeof *q->conv_src);
    q->conv_dst = malloc((n_dst ? n_dst : 1) * sizeof *q->conv_dst);
    q->coefs = malloc((m ? m : 1) * sizeof *q->coefs);
    uint32_t *rank = malloc((nc ? nc : 1) * sizeof *rank); /* net's channel -> q's */
    double *amax = calloc(nc ? nc : 1, sizeof *amax);
    size_t *fan = calloc(nc ? nc : 1, sizeof *fan);
    int rc = 0;
    if (!q->chans || !q->convs || !q->conv_src || !q->conv_dst || !q->coefs || !rank || !amax ||
        !fan) {
        rc = tv_error_set(err, TV_ENOMEM, "quantize: out of memory");
        goto done;
    }
    q->n_chans = nc, q->n_convs = ng, q->n_coefs = m, q->n_conv_src = n_src, q->n_conv_dst = n_dst;
    for (size_t i = 0; i < nc; i++) { /* sorted by j, the net's index kept in table for now */
        struct nn_conv_chan_view cv;
        nn_conv_net_chan(p->conv, i, &cv);
        q->chans[i] = (struct nn_qchan){.j = cv.j,
                                        .h = (uint32_t)cv.h,
                                        .w = (uint32_t)cv.w,
                                        .pool = (uint32_t)cv.pool,
                                        .table = (uint32_t)i};
        size_t ph = cv.h / cv.pool, pw = cv.w / cv.pool;
        memset(px + cv.j, 1, ph * pw);
    }
    qsort(q->chans, nc, sizeof *q->chans, cmp_chan);
    for (size_t i = 0; i < nc; i++)
        rank[q->chans[i].table] = (uint32_t)i;
    /* per channel: the largest |w| s_src of its coefficients, and their count */
    size_t k = 0, si = 0, di = 0;
    for (size_t i = 0; i < ng; i++) {
        struct nn_conv_group_view gv;
        nn_conv_net_group(p->conv, i, &gv);
        const struct nn_conv_shape *sh = gv.shape;
        q->convs[i] = (struct nn_qconv){(uint32_t)sh->in_ch,
                                        (uint32_t)sh->out_ch,
                                        (uint32_t)sh->in_h,
                                        (uint32_t)sh->in_w,
                                        (uint32_t)sh->k_h,
                                        (uint32_t)sh->k_w,
                                        (uint32_t)sh->stride,
                                        (uint32_t)sh->pad,
                                        (uint32_t)si,
                                        (uint32_t)di,
                                        k,
                                        gv.n_coefs};
        for (size_t a = 0; a < sh->in_ch; a++)
            q->conv_src[si++] = gv.in_j[a];
        for (size_t a = 0; a < sh->out_ch; a++)
            q->conv_dst[di++] = rank[gv.out[a]];
        for (size_t e = 0; e < gv.n_coefs; e++, k++) {
            const struct nn_conv_coef *cf = &gv.coefs[e];
            uint32_t t = rank[gv.out[cf->out]];
            double a = fabs((double)cf->w) * q->layers[q->layer_of[gv.in_j[cf->in]]].scale;
            amax[t] = a > amax[t] ? a : amax[t];
            fan[t]++;
            q->coefs[k] = (struct nn_qcoef){cf->out, cf->in, cf->ky, cf->kx, 0};
        }
    }
    rc = chan_scales(q, p, ts, amax, fan, err);
    k = 0;
    for (size_t i = 0; i < ng && !rc; i++) {
        struct nn_conv_group_view gv;
        nn_conv_net_group(p->conv, i, &gv);
        for (size_t e = 0; e < gv.n_coefs; e++, k++) {
            const struct nn_conv_coef *cf = &gv.coefs[e];
            double x = (double)cf->w * q->layers[q->layer_of[gv.in_j[cf->in]]].scale /
                       amax[rank[gv.out[cf->out]]];
            q->coefs[k].w = (int8_t)lround(x > 127.0 ? 127.0 : x < -127.0 ? -127.0 : x);
        }
    }
done:
    free(rank);
    free(amax);
    free(fan);
    return rc;
}

static int quantize_into(const struct nn_calib *cc, struct nn_qnet *q, struct tv_error *err)
{
    struct nn_calib *c = (struct nn_calib *)(uintptr_t)cc;
    const struct nn_plan *p = c->fp;
    for (size_t l = 0; l < p->n_layers; l++) {
        struct nn_qlayer *L = &q->layers[l];
        L->start = p->layer_start[l];
        L->end = p->layer_start[l + 1];
        stat_range(&c->post[l], c->percentile, &L->scale, &L->zp);
        if (l > 0)
            stat_range(&c->pre[l], c->percentile, &L->pscale, &L->pzp);
    }
    genome_layers_index(p->layer_start, p->n_layers, q->layer_of); /* the compile's layers */
    memcpy(q->out_map, p->out_map, p->n_out * sizeof *q->out_map);
    double *w = NULL;
    struct table_set ts = {0};
    int rc = take_edges(q, p, &w, err);
    size_t slots = 64;
    while (slots < 2 * p->n)
        slots *= 2;
    ts.mask = slots - 1;
    ts.slot = rc ? NULL : calloc(slots, sizeof *ts.slot);
    uint8_t *px = rc ? NULL : calloc(p->n, 1); /* 1: a channel's pixel */
    if (!rc && (!ts.slot || !px))
        rc = tv_error_set(err, TV_ENOMEM, "quantize: out of memory");
    if (!rc && p->conv)
        rc = quantize_chans(q, p, &ts, px, err);
    int8_t t[256];
    for (uint32_t j = (uint32_t)p->n_in; !rc && j < p->n; j++) {
        if (px[j])
            continue; /* no edges, no neuron: its channel's filters compute it */
        const struct nn_qlayer *L = &q->layers[q->layer_of[j]];
        struct nn_qneuron *u = &q->neuron[j];
        double A = acc_scale(q, p, j, w);
        u->acc_scale = (float)A;
        for (uint32_t k = q->row[j]; k < q->row[j + 1]; k++) {
            double x = w[k] * q->layers[q->layer_of[q->edges[k].src]].scale / A;
            long r = lround(x > 127.0 ? 127.0 : x < -127.0 ? -127.0 : x);
            q->edges[k].w = (int8_t)r;
        }
        u->bias = (int32_t)lround((double)p->bias[j] / A);
        fixed_point(A / L->pscale, &u->mult, &u->shift);
        make_table(L, p->act[j], t);
        rc = table_put(&ts, t, &u->table, err);
    }
    if (!rc && ts.n > NN_QFLAT_MAX_TABLES)
        rc = tv_error_set(err, TV_ELIMIT, "quantize: %zu distinct tables, more than %d", ts.n,
                          NN_QFLAT_MAX_TABLES);
    q->tables = ts.tables;
    q->n_tables = ts.n;
    free(ts.slot);
    free(px);
    free(w);
    return rc;
}

int nn_quantize(const struct nn_calib *c, struct nn_qnet **out, struct tv_error *err)
{
    *out = NULL;
    if (!c->observed)
        return tv_error_set(err, TV_ESTATE, "quantize: the calibration observed no step");
    const struct nn_plan *p = c->fp;
    struct nn_qnet *q = calloc(1, sizeof *q);
    if (q) {
        q->n = p->n;
        q->n_in = p->n_in;
        q->n_out = p->n_out;
        q->n_layers = p->n_layers;
        q->out_map = malloc(p->n_out * sizeof *q->out_map);
        q->layers = calloc(p->n_layers, sizeof *q->layers);
        q->layer_of = malloc(p->n * sizeof *q->layer_of);
        q->neuron = calloc(p->n, sizeof *q->neuron);
        q->row = malloc((p->n + 1) * sizeof *q->row);
        q->rec = malloc(p->n * sizeof *q->rec);
    }
    if (!q || !q->out_map || !q->layers || !q->layer_of || !q->neuron || !q->row || !q->rec) {
        nn_qnet_free(q);
        return tv_error_set(err, TV_ENOMEM, "quantize: out of memory");
    }
    int rc = quantize_into(c, q, err);
    if (!rc && p->in_shift && !(q->in_scale = malloc(2 * p->n_in * sizeof *q->in_scale)))
        rc = tv_error_set(err, TV_ENOMEM, "quantize: out of memory");
    if (!rc && p->in_shift) /* shift then mul, as the plan's (in_mul = in_shift + n_in) */
        memcpy(q->in_scale, p->in_shift, 2 * p->n_in * sizeof *q->in_scale);
    if (rc) {
        nn_qnet_free(q);
        return rc;
    }
    *out = q;
    return 0;
}

void nn_qnet_free(struct nn_qnet *q)
{
    if (!q)
        return;
    TV_FREE_ALL(q->out_map, q->layers, q->layer_of, q->neuron, q->row, q->rec, q->edges, q->tables,
                q->in_scale, q->chans, q->convs, q->conv_src, q->conv_dst, q->coefs, q);
}

/* ---- the flat form --------------------------------------------------------- */

int nn_qflat_sizes(const struct nn_qnet *q, struct nn_qflat *f, struct tv_error *err)
{
    memset(f, 0, sizeof *f);
    if (q->n_tables > NN_QFLAT_MAX_TABLES)
        return tv_error_set(err, TV_ELIMIT, "int8 plan: %zu tables, more than %d", q->n_tables,
                            NN_QFLAT_MAX_TABLES);
    f->n = q->n;
    f->n_in = q->n_in;
    f->n_out = q->n_out;
    f->n_edges = q->n_edges;
    f->n_tables = q->n_tables;
    f->n_layers = q->n_layers;
    f->idx_bits = nn_qflat_idx_bits(q->n);
    f->recurrent = q->n_recurrent > 0;
    f->scaled = q->in_scale != NULL;
    return 0;
}

void nn_qflat_fill(const struct nn_qnet *q, struct nn_qflat *f)
{
    for (size_t l = 0; l < q->n_layers; l++) {
        f->lstart[l] = q->layers[l].start;
        f->lzero[l] = (uint8_t)(q->layers[l].zp + 128);
    }
    f->lstart[q->n_layers] = (uint32_t)q->n;
    for (size_t j = q->n_in; j < q->n; j++) {
        size_t i = j - q->n_in;
        f->row[i] = q->row[j];
        const struct nn_qneuron *u = &q->neuron[j];
        int64_t b = u->bias;
        for (uint32_t k = q->row[j]; k < q->row[j + 1]; k++) {
            uint32_t src = q->edges[k].src;
            uint32_t slot = k < q->rec[j] ? src : (uint32_t)(q->n + 1) + src;
            b -= (int64_t)q->edges[k].w * (q->layers[q->layer_of[src]].zp + 128);
            if (f->idx_bits == 16)
                ((uint16_t *)f->idx)[k] = (uint16_t)slot;
            else
                ((uint32_t *)f->idx)[k] = slot;
            f->w[k] = q->edges[k].w;
        }
        f->fbias[i] = (int32_t)b;
        f->mult[i] = u->mult;
        f->shift[i] = (uint8_t)u->shift;
        f->pzp[i] = (int8_t)q->layers[q->layer_of[j]].pzp;
        f->tab[i] = (uint16_t)u->table;
    }
    f->row[q->n - q->n_in] = q->row[q->n];
    /* u -> u: the input's u is p + 128, the output q + 128 */
    for (size_t t = 0; t < q->n_tables; t++)
        for (int u = 0; u < 256; u++)
            f->tables[t * 256 + (size_t)u] = (uint8_t)(q->tables[t * 256 + (size_t)u] + 128);
    memset(f->tables + q->n_tables * 256, 0, 64);
    f->in_scale = q->layers[0].scale;
    f->in_zp = q->layers[0].zp;
    memcpy(f->out_map, q->out_map, q->n_out * sizeof *f->out_map);
    f->out_scale = q->layers[q->n_layers - 1].scale;
    f->out_zp = q->layers[q->n_layers - 1].zp;
}
