/* int8_plan.c -- the int8 plan's compile (nn_qplan_compile): the row form
 * of a quantized network reordered by fan-in and cut into chunks of 16
 * neurons whose edges are grouped by window (the layout in int8_impl.h).
 * Apart from the kernels that run the plan: they only read the layout, and
 * nothing here is called by them.
 */
#include <stdlib.h>
#include <string.h>

#include "int8_impl.h"

#define ALIGN 64
static size_t up(size_t x)
{
    return (x + ALIGN - 1) & ~(size_t)(ALIGN - 1);
}

/* Lays out the arrays after the header; base NULL only measures. */
static size_t layout(struct nn_qplan *qp, unsigned char *base)
{
    struct nn_qflat *f = &qp->f;
    size_t n = f->n - f->n_in, off = up(sizeof *qp); /* per non-input neuron */
#define PLACE(ptr, count)                                                                          \
    do {                                                                                           \
        if (base)                                                                                  \
            ptr = (void *)(base + off);                                                            \
        off += up((count) * sizeof *(ptr));                                                        \
    } while (0)
    PLACE(qp->cent, qp->n_chunks + 1);
    PLACE(qp->cedge, qp->n_chunks + 1);
    PLACE(f->fbias, n);
    PLACE(f->mult, n);
    PLACE(f->shift, n);
    PLACE(f->pzp, n);
    PLACE(f->tab, n);
    PLACE(f->w, qp->n_edges + 64); /* the vector path reads 64 bytes at any edge */
    PLACE(qp->off, qp->n_edges + 64);
    PLACE(qp->ent, qp->n_ents * ENT + 8);
    PLACE(f->tables, f->n_tables * 256 + 64);
    PLACE(f->lstart, f->n_layers + 1);
    PLACE(f->lzero, f->n_layers);
    PLACE(f->out_map, f->n_out);
    PLACE(qp->plan.layer_way, f->n_layers);
    PLACE(qp->lend, f->n_layers);
    PLACE(qp->chans, qp->n_chans);
    PLACE(qp->segs, qp->n_segs);
    PLACE(qp->ccoefs, qp->n_ccoefs);
    PLACE(qp->cconvs, qp->n_cconvs);
    PLACE(qp->csrc, qp->n_csrc);
#undef PLACE
    return off;
}

/* Lays out the arrays of the row form t in base (NULL only measures); the
 * widest elements first, so that each array is aligned. */
static size_t row_layout(struct nn_qflat *t, unsigned char *base)
{
    size_t n = t->n - t->n_in, off = 0;
#define TAKE(ptr, count)                                                                           \
    do {                                                                                           \
        if (base)                                                                                  \
            ptr = (void *)(base + off);                                                            \
        off += (count) * sizeof *(ptr);                                                            \
    } while (0)
    TAKE(t->row, n + 1);
    TAKE(t->fbias, n);
    TAKE(t->mult, n);
    TAKE(t->lstart, t->n_layers + 1);
    TAKE(t->out_map, t->n_out);
    if (base)
        t->idx = base + off;
    off += t->n_edges * (size_t)t->idx_bits / 8;
    TAKE(t->tab, n);
    TAKE(t->w, t->n_edges);
    TAKE(t->shift, n);
    TAKE(t->pzp, n);
    TAKE(t->lzero, t->n_layers);
    TAKE(t->tables, t->n_tables * 256 + 64);
#undef TAKE
    return off;
}

/* The row form of q (quant_impl.h) into t, in memory *mem of its own (free
 * it). */
static int row_form(const struct nn_qnet *q, struct nn_qflat *t, unsigned char **mem,
                    struct tv_error *err)
{
    int rc = nn_qflat_sizes(q, t, err);
    if (rc)
        return rc;
    size_t bytes = row_layout(t, NULL);
    unsigned char *m = malloc(bytes ? bytes : 1);
    if (!m)
        return tv_error_set(err, TV_ENOMEM, "int8 plan: out of memory (%zu bytes)", bytes);
    row_layout(t, m);
    nn_qflat_fill(q, t);
    *mem = m;
    return 0;
}

static uint32_t row_slot(const struct nn_qflat *t, uint32_t k)
{
    return t->idx_bits == 16 ? ((const uint16_t *)t->idx)[k] : ((const uint32_t *)t->idx)[k];
}

static int cmp_u64(const void *a, const void *b)
{
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
    return x < y ? -1 : x > y;
}

/* The plan's order of each layer: by falling fan-in, ties in the row form's
 * order, a channel's pixels (px[j] = 1; px may be NULL) last. old[j'] is the
 * row form's neuron at j', nw[j] the inverse (both of n entries; inputs
 * stay). key: scratch of n entries. */
static void order_by_fan_in(const struct nn_qflat *t, const uint8_t *px, uint32_t *old,
                            uint32_t *nw, uint64_t *key)
{
    for (uint32_t j = 0; j < t->n_in; j++)
        old[j] = j;
    for (size_t l = 1; l < t->n_layers; l++) {
        uint32_t a = t->lstart[l], b = t->lstart[l + 1];
        for (uint32_t j = a; j < b; j++) {
            uint32_t d = t->row[j - t->n_in + 1] - t->row[j - t->n_in];
            key[j] = (uint64_t)(px && px[j] ? UINT32_MAX : UINT32_MAX - 1 - d) << 32 | j;
        }
        qsort(key + a, b - a, sizeof *key, cmp_u64);
        for (uint32_t j = a; j < b; j++)
            old[j] = (uint32_t)key[j];
    }
    for (uint32_t j = 0; j < t->n; j++)
        nw[old[j]] = j;
}

/* The keys of the edges of the chunk of `lanes` neurons from plan neuron j0:
 * window << 40 | lane << 32 | offset << 8 | weight byte, each slot
 * renumbered to the plan's order (a recurrent slot is n + 1 + its source).
 * Returns how many. */
static size_t chunk_keys(const struct nn_qflat *t, const uint32_t *old, const uint32_t *nw,
                         uint32_t j0, uint32_t lanes, uint64_t *key)
{
    size_t k = 0;
    for (uint32_t ln = 0; ln < lanes; ln++) {
        uint32_t i = old[j0 + ln] - (uint32_t)t->n_in;
        for (uint32_t e = t->row[i]; e < t->row[i + 1]; e++) {
            uint32_t s0 = row_slot(t, e);
            uint32_t sl = s0 < t->n    ? nw[s0]
                          : s0 == t->n ? s0
                                       : (uint32_t)t->n + 1 + nw[s0 - t->n - 1];
            key[k++] = (uint64_t)(sl / WIN) << 40 | (uint64_t)ln << 32 | (uint64_t)(sl % WIN) << 8 |
                       (uint8_t)t->w[e];
        }
    }
    qsort(key, k, sizeof *key, cmp_u64);
    return k;
}

/* The entries and edges of a chunk from its sorted keys: per window, while
 * a lane has edges left, an entry of up to ENT_MAX of each lane's, then its
 * edges in its two steps (lanes in order, up to 4 each a step). A window
 * more than 255 past the last one is reached by entries of step 255 and no
 * edges. With ent NULL only counts: returns the entries, adds the edges to
 * *edges. */
static size_t chunk_emit(const uint64_t *key, size_t n, uint8_t *ent, uint8_t *off, int8_t *w,
                         size_t *edges)
{
    size_t ne = 0, p = 0;
    uint32_t win = 0;
    for (size_t k = 0; k < n;) {
        uint32_t wd = (uint32_t)(key[k] >> 40);
        size_t lo[CHUNK] = {0}, hi[CHUNK] = {0}, end = k;
        for (; end < n && (uint32_t)(key[end] >> 40) == wd; end++) {
            uint32_t ln = (uint32_t)(key[end] >> 32) & 0xff;
            if (hi[ln] == 0)
                lo[ln] = end;
            hi[ln] = end + 1;
        }
        for (;;) {
            uint64_t x = 0;
            for (uint32_t ln = 0; ln < CHUNK; ln++) {
                size_t c = hi[ln] - lo[ln] < ENT_MAX ? hi[ln] - lo[ln] : ENT_MAX;
                x |= (uint64_t)c << (8 + 3 * ln);
            }
            if (x == 0)
                break;
            for (; wd - win > 255; win += 255, ne++)
                if (ent) {
                    uint64_t hop = 255;
                    memcpy(ent + ne * ENT, &hop, ENT);
                }
            x |= wd - win;
            win = wd;
            if (ent)
                memcpy(ent + ne * ENT, &x, ENT);
            ne++;
            for (uint32_t h = 0; h < 2; h++)
                for (uint32_t ln = 0; ln < CHUNK; ln++)
                    for (uint32_t r = 0; r < step_count(ent_count(x, ln), h); r++, p++)
                        if (ent) {
                            uint64_t kk = key[lo[ln] + 4 * h + r];
                            off[p] = (uint8_t)(kk >> 8);
                            w[p] = (int8_t)(uint8_t)kk;
                        }
            for (uint32_t ln = 0; ln < CHUNK; ln++)
                lo[ln] += ent_count(x, ln);
        }
        k = end;
    }
    *edges += p;
    return ne;
}

/* Pass 0 counts the entries and edges of every chunk into qp; pass 1 lays
 * them out (qp's arrays placed). */
static void chunks(const struct nn_qflat *t, const uint32_t *lend, const uint32_t *old,
                   const uint32_t *nw, uint64_t *key, struct nn_qplan *qp, int pass)
{
    size_t c = 0, ne = 0, edges = 0;
    for (size_t l = 1; l < t->n_layers; l++)
        for (uint32_t j0 = t->lstart[l]; j0 < lend[l]; j0 += CHUNK, c++) {
            size_t n = chunk_keys(t, old, nw, j0, chunk_lanes(j0, lend[l]), key);
            if (pass) {
                qp->cent[c] = (uint32_t)ne;
                qp->cedge[c] = (uint32_t)edges;
                ne += chunk_emit(key, n, qp->ent + ne * ENT, qp->off + edges, qp->f.w + edges,
                                 &edges);
            } else {
                ne += chunk_emit(key, n, NULL, NULL, NULL, &edges);
            }
        }
    if (pass) {
        qp->cent[c] = (uint32_t)ne;
        qp->cedge[c] = (uint32_t)edges;
    } else {
        qp->n_chunks = c;
        qp->n_ents = ne;
        qp->n_edges = edges;
    }
}

/* The pixels of q's channels (px[j] = 1), and where each layer's other
 * neurons end in the plan's order (lend: before its pixels). */
static void mark_pixels(const struct nn_qnet *q, const struct nn_qflat *t, uint8_t *px,
                        uint32_t *lend)
{
    memset(px, 0, t->n);
    for (size_t l = 0; l < t->n_layers; l++)
        lend[l] = t->lstart[l + 1];
    for (size_t i = 0; i < q->n_chans; i++) {
        const struct nn_qchan *c = &q->chans[i];
        size_t np = (size_t)(c->h / c->pool) * (c->w / c->pool);
        memset(px + c->j, 1, np);
        lend[q->layer_of[c->j]] -= (uint32_t)np;
    }
}

/* The layer of q's layer of filters v (its targets'). */
static uint32_t conv_layer(const struct nn_qnet *q, size_t v)
{
    return q->layer_of[q->chans[q->conv_dst[q->convs[v].dst0]].j];
}

/* Int16 entries of the padded copy of one source map of v. */
static size_t padded(const struct nn_qconv *v)
{
    return (size_t)(v->in_h + 2 * v->pad) * (v->in_w + 2 * v->pad);
}

/* The sizes of the channels' part of hd: counts, the largest map, the
 * padded copies of the largest layer's sources, the largest grid. */
static void conv_sizes(const struct nn_qnet *q, struct nn_qplan *hd)
{
    hd->n_chans = q->n_chans;
    hd->n_segs = q->n_conv_dst;
    hd->n_ccoefs = q->n_coefs;
    hd->n_cconvs = q->n_convs;
    hd->n_csrc = q->n_conv_src;
    for (size_t i = 0; i < q->n_chans; i++)
        if ((size_t)q->chans[i].h * q->chans[i].w > hd->max_px)
            hd->max_px = (size_t)q->chans[i].h * q->chans[i].w;
    size_t stage = 0, grid = 0;
    for (size_t v = 0; v < q->n_convs; v++) {
        const struct nn_qconv *cv = &q->convs[v];
        if (v > 0 && conv_layer(q, v) != conv_layer(q, v - 1))
            stage = 0;
        stage += cv->in_ch * padded(cv);
        hd->pad_n = stage > hd->pad_n ? stage : hd->pad_n;
        size_t g = (size_t)(cv->in_h + 2 * cv->pad - cv->k_h + 1) * (cv->in_w + 2 * cv->pad);
        grid = cv->stride == 1 && g > grid ? g : grid;
    }
    hd->grid_at = grid; /* for now the grid's entries: plan_header places it */
}

/* The channels' part of qp (placed) from q: channels in q's order, a
 * segment per (layer of filters, target), each channel's together, and the
 * coefficients by segment. tmp: n_chans + 2 n_segs + 1 scratch entries. */
static void conv_fill(const struct nn_qnet *q, struct nn_qplan *qp, const uint32_t *nw,
                      uint32_t *tmp)
{
    uint32_t *fill = tmp, *seg_of = tmp + q->n_chans, *cfill = seg_of + qp->n_segs;
    memset(fill, 0, q->n_chans * sizeof *fill);
    for (size_t d = 0; d < q->n_conv_dst; d++)
        fill[q->conv_dst[d]]++;
    uint32_t at = 0;
    for (size_t i = 0; i < q->n_chans; i++) {
        const struct nn_qchan *c = &q->chans[i];
        const struct nn_qlayer *L = &q->layers[q->layer_of[c->j]];
        qp->chans[i] = (struct qc_chan){.j = nw[c->j],
                                        .h = c->h,
                                        .w = c->w,
                                        .pool = c->pool,
                                        .seg0 = at,
                                        .seg1 = at + fill[i],
                                        .bias = c->bias,
                                        .mult = c->mult,
                                        .shift = c->shift,
                                        .tab = c->table,
                                        .pzp = L->pzp};
        fill[i] = at;
        at += qp->chans[i].seg1 - qp->chans[i].seg0;
    }
    uint32_t pat = 0;
    for (size_t v = 0; v < q->n_convs; v++) {
        const struct nn_qconv *cv = &q->convs[v];
        if (v > 0 && conv_layer(q, v) != conv_layer(q, v - 1))
            pat = 0; /* a new layer: its own padded copies */
        qp->cconvs[v] = (struct qc_conv){cv->in_ch, cv->in_h, cv->in_w, cv->pad, cv->src0, pat};
        pat += (uint32_t)(cv->in_ch * padded(cv));
        for (uint32_t k = 0; k < cv->in_ch; k++) {
            uint32_t src = q->conv_src[cv->src0 + k];
            qp->csrc[cv->src0 + k] =
                (struct qc_src){nw[src], (uint32_t)(q->layers[q->layer_of[src]].zp + 128)};
        }
        for (uint32_t k = 0; k < cv->out_ch; k++) {
            uint32_t g = fill[q->conv_dst[cv->dst0 + k]]++;
            seg_of[cv->dst0 + k] = g;
            qp->segs[g] =
                (struct qc_seg){cv->in_h, cv->in_w, cv->k_h, cv->k_w, cv->stride, cv->pad, 0, 0};
        }
    }
    memset(cfill, 0, (qp->n_segs + 1) * sizeof *cfill);
    for (size_t v = 0; v < q->n_convs; v++)
        for (size_t e = 0; e < q->convs[v].n_coefs; e++)
            cfill[seg_of[q->convs[v].dst0 + q->coefs[q->convs[v].coef0 + e].out] + 1]++;
    for (size_t g = 0; g < qp->n_segs; g++) {
        cfill[g + 1] += cfill[g];
        qp->segs[g].c0 = qp->segs[g].c1 = cfill[g];
    }
    for (size_t v = 0; v < q->n_convs; v++)
        for (size_t e = 0; e < q->convs[v].n_coefs; e++) {
            const struct nn_qconv *cv = &q->convs[v];
            const struct nn_qcoef *c = &q->coefs[cv->coef0 + e];
            uint32_t src = q->conv_src[cv->src0 + c->in];
            struct qc_seg *sg = &qp->segs[seg_of[cv->dst0 + c->out]];
            uint32_t pa = qp->cconvs[v].at + c->in * (uint32_t)padded(cv);
            qp->ccoefs[sg->c1++] = (struct qc_coef){
                nw[src], pa, (uint8_t)(q->layers[q->layer_of[src]].zp + 128), c->ky, c->kx, c->w};
        }
    /* the first channel of each layer pads the sources of the layers of
     * filters into that layer */
    for (size_t v = 0, i = 0; v < q->n_convs;) {
        size_t e = v + 1;
        while (e < q->n_convs && conv_layer(q, e) == conv_layer(q, v))
            e++;
        while (i < q->n_chans && q->layer_of[q->chans[i].j] < conv_layer(q, v))
            i++;
        if (i < q->n_chans) { /* (the targets of v are channels of that layer) */
            qp->chans[i].cv0 = (uint32_t)v;
            qp->chans[i].cv1 = (uint32_t)e;
        }
        v = e;
    }
}

/* The plan's header (after the layout of its arrays, bytes in all). */
static int plan_header(const struct nn_qnet *q, struct nn_qplan *qp, size_t bytes,
                       struct tv_error *err)
{
    struct nn_plan *p = &qp->plan;
    const struct nn_qflat *f = &qp->f;
    p->n = q->n;
    p->n_in = q->n_in;
    p->n_out = q->n_out;
    p->n_layers = q->n_layers;
    p->n_conns = q->n_edges;
    p->n_recurrent = q->n_recurrent;
    p->n_gather = q->n_edges;
    p->bytes = bytes;
    /* the edge lists (see lists_of), and at least WIN bytes that a window
     * past the values (batch 1) may read; then a channel's maps of 64
     * samples (int32 sums, uint8 values) */
    size_t cap = list_cap(qp);
    p->state_extra = (q->n - q->n_in + 1 + cap) * sizeof(uint32_t) + cap;
    p->state_extra = p->state_extra < WIN ? WIN : p->state_extra;
    qp->scratch_at = up(p->state_extra);
    if (q->n_chans) {
        size_t grid = qp->grid_at; /* entries (conv_sizes) */
        qp->pad_at = up(qp->scratch_at + qp->max_px * 64 * (sizeof(int32_t) + 1));
        qp->grid_at = up(qp->pad_at + qp->pad_n * sizeof(int16_t));
        p->state_extra = qp->grid_at + grid * sizeof(int32_t);
    }
    p->index_bits = p->row_bits = 8; /* offsets in windows of WIN values */
    p->out_map = qp->f.out_map;
    p->layer_start = qp->f.lstart;
    memset(p->layer_way, NN_WAY_GATHER, q->n_layers);
    p->own_io = 1;
    if (q->in_scale) { /* the float inputs' scaling (quant.h): nn_step applies it */
        p->in_shift = malloc(2 * q->n_in * sizeof *p->in_shift);
        if (!p->in_shift)
            return tv_error_set(err, TV_ENOMEM, "int8 plan: out of memory");
        memcpy(p->in_shift, q->in_scale, 2 * q->n_in * sizeof *p->in_shift);
        p->in_mul = p->in_shift + q->n_in;
    }
    p->out_contiguous = 1;
    for (size_t k = 1; k < q->n_out; k++)
        p->out_contiguous &= f->out_map[k] == f->out_map[0] + k;
    qp->op = (struct nn_op){NN_OP_INT8, 0, (uint32_t)q->n_layers, 0};
    p->ops = &qp->op;
    p->n_ops = 1;
    return 0;
}

int nn_qplan_compile(const struct nn_qnet *q, struct nn_plan **out, struct tv_error *err)
{
    *out = NULL;
    struct nn_qflat t;
    unsigned char *tm = NULL;
    int rc = row_form(q, &t, &tm, err);
    if (rc)
        return rc;
    /* keys: a chunk's edges (at most CHUNK x the largest fan-in), and n + 1
     * for the fan-in order */
    size_t most = 0;
    for (size_t i = 0; i + t.n_in < t.n; i++)
        most = t.row[i + 1] - t.row[i] > most ? t.row[i + 1] - t.row[i] : most;
    most = most * CHUNK > t.n + 1 ? most * CHUNK : t.n + 1;
    uint32_t *old = malloc((t.n + 1) * sizeof *old), *nw = malloc((t.n + 1) * sizeof *nw);
    uint64_t *key = malloc(most * sizeof *key);
    /* lend [n_layers], then conv_fill's scratch, then px [n] */
    size_t n_aux = t.n_layers + q->n_chans + 2 * q->n_conv_dst + 1;
    uint32_t *aux = malloc(n_aux * sizeof *aux + t.n);
    unsigned char *m = NULL;
    struct nn_qplan hd = {0};
    size_t bytes = 0;
    if (!old || !nw || !key || !aux) {
        rc = tv_error_set(err, TV_ENOMEM, "int8 plan: out of memory");
        goto fail;
    }
    uint8_t *px = (uint8_t *)(aux + n_aux);
    mark_pixels(q, &t, px, aux);
    order_by_fan_in(&t, q->n_chans ? px : NULL, old, nw, key);
    hd.f = t;
    conv_sizes(q, &hd);
    chunks(&t, aux, old, nw, key, &hd, 0);
    if (hd.n_edges > UINT32_MAX || hd.n_ents > UINT32_MAX) { /* chunk offsets are 32-bit */
        rc = tv_error_set(err, TV_ELIMIT, "int8 plan: %zu edges in %zu entries, more than %u",
                          hd.n_edges, hd.n_ents, (unsigned)UINT32_MAX);
        goto fail;
    }
    bytes = layout(&hd, NULL);
    m = aligned_alloc(ALIGN, bytes);
    if (!m) {
        rc = tv_error_set(err, TV_ENOMEM, "int8 plan: out of memory (%zu bytes)", bytes);
        goto fail;
    }
    memset(m, 0, bytes);
    struct nn_qplan *qp = (struct nn_qplan *)m;
    *qp = hd;
    layout(qp, m);
    struct nn_qflat *f = &qp->f;
    f->row = NULL;
    f->idx = NULL;
    memcpy(qp->lend, aux, t.n_layers * sizeof *qp->lend);
    chunks(&t, aux, old, nw, key, qp, 1);
    if (q->n_chans)
        conv_fill(q, qp, nw, aux + t.n_layers);
    for (uint32_t j = (uint32_t)t.n_in; j < t.n; j++) {
        uint32_t i = j - (uint32_t)t.n_in, io = old[j] - (uint32_t)t.n_in;
        f->fbias[i] = t.fbias[io];
        f->mult[i] = t.mult[io];
        f->shift[i] = t.shift[io];
        f->pzp[i] = t.pzp[io];
        f->tab[i] = t.tab[io];
    }
    memcpy(f->tables, t.tables, t.n_tables * 256 + 64);
    memcpy(f->lstart, t.lstart, (t.n_layers + 1) * sizeof *f->lstart);
    memcpy(f->lzero, t.lzero, t.n_layers);
    for (size_t k = 0; k < t.n_out; k++)
        f->out_map[k] = nw[t.out_map[k]];
    rc = plan_header(q, qp, bytes, err);
    if (rc)
        goto fail;
    free(tm);
    free(old);
    free(nw);
    free(key);
    free(aux);
    *out = &qp->plan;
    return 0;
fail:
    free(m);
    free(tm);
    free(old);
    free(nw);
    free(key);
    free(aux);
    return rc;
}
