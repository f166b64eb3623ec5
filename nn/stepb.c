/* stepb.c -- the batched kernels: the forwardb function of every op (ops.c).
 *
 * A state of batch B > 1 holds the values of neuron j in the row
 * y[j * stride .. j * stride + B) (nn_impl.h). Lane b sums a row's edges in
 * the order of step1.c's dot1, whatever B and whichever lane b is (dot8b
 * below), so that one row's outputs have the same bits in any batch; one
 * vector per 16 lanes. The lanes go in blocks of up to NN_BLOCK,
 * the block loop outside the neuron loop: the rows a block reads (n x NN_BLOCK
 * floats) stay in cache while the plan streams; 64 lanes (one pass over the
 * plan for a batch of 64) beat 32 on 4096 x 4096 layers and on 10 k-neuron
 * graphs. Sources that are inputs are read from s->in_rows: the state's own
 * rows, or a caller's feature-major buffer read in place.
 */
#include "kernel.h"

#ifndef NN_BLOCK
#define NN_BLOCK 64 /* lanes per block of a batched step: 16, 32, 48 or 64 */
#endif

/* Up to 4 vectors of 16 lanes: one block. Named fields, not an array, so
 * that the always-inlined functions below keep them in registers. */
struct lanes {
    v16f v0, v1, v2, v3;
};

/* How a block of neuron j is finished: its bias, whether a recurrent row and
 * accumulators are added, and whether the activation is relu (the others are
 * applied afterwards, row by row). */
struct finish {
    float bias;
    int has_rec, has_acc, relu;
};

/* One vector of a block: ((bias + g) + r) + acc, relu in place. */
NN_INLINE void finish1(const struct finish *f, v16f g, v16f r, v16f *y, v16f *acc)
{
    v16f v = f->bias + g;
    if (f->has_rec)
        v += r;
    if (f->has_acc) {
        v += *acc;
        *acc = (v16f){0};
    }
    if (f->relu) /* x > 0 ? x : 0, as in act_relu, lane by lane */
        v = (v16f)((v16i)v & (v > (v16f){0}));
    *y = v;
}

/* One of dot8b's eight partials: the edges k, k + 8, k + 16, ... below e, in
 * edge order from +0, sources below h read from yin, the others from yh. */
NN_INLINE struct lanes pass8(const float *w, const void *idx, int bits, uint32_t k, uint32_t h,
                             uint32_t e, const float *yin, const float *yh, size_t st, size_t c0,
                             int nv)
{
    struct lanes a = {{0}, {0}, {0}, {0}};
    for (; k < h; k += 8) {
        const v16fu *src = (const v16fu *)(yin + (size_t)nn_idx(idx, bits, k) * st + c0);
        float wk = w[k];
        a.v0 += wk * src[0];
        if (nv > 1)
            a.v1 += wk * src[1];
        if (nv > 2)
            a.v2 += wk * src[2];
        if (nv > 3)
            a.v3 += wk * src[3];
    }
    for (; k < e; k += 8) {
        const v16fu *src = (const v16fu *)(yh + (size_t)nn_idx(idx, bits, k) * st + c0);
        float wk = w[k];
        a.v0 += wk * src[0];
        if (nv > 1)
            a.v1 += wk * src[1];
        if (nv > 2)
            a.v2 += wk * src[2];
        if (nv > 3)
            a.v3 += wk * src[3];
    }
    return a;
}

NN_INLINE struct lanes ladd(struct lanes a, struct lanes b, int nv)
{
    a.v0 += b.v0;
    if (nv > 1)
        a.v1 += b.v1;
    if (nv > 2)
        a.v2 += b.v2;
    if (nv > 3)
        a.v3 += b.v3;
    return a;
}

/* Sum of w[k] * y[idx[k]] over the row [b, e) in dot1's order (step1.c):
 * edge k into partial (k - b) % 8, the partials reduced as
 * ((0 + 4) + (2 + 6)) + ((1 + 5) + (3 + 7)). Eight strided passes with nv
 * accumulators each, rather than eight sets of accumulators live at once
 * (8 nv vectors would spill on AVX2): the strided w and idx come from L1. */
NN_INLINE struct lanes dot8b(const float *w, const void *idx, int bits, uint32_t b, uint32_t h,
                             uint32_t e, const float *yin, const float *yh, size_t st, size_t c0,
                             int nv)
{
#define P8(i) pass8(w, idx, bits, b + (i), h, e, yin, yh, st, c0, nv)
    struct lanes A = P8(0);
    A = ladd(A, P8(4), nv);
    struct lanes B = P8(2);
    B = ladd(B, P8(6), nv);
    A = ladd(A, B, nv);
    B = P8(1);
    B = ladd(B, P8(5), nv);
    struct lanes C = P8(3);
    C = ladd(C, P8(7), nv);
    B = ladd(B, C, nv);
    return ladd(A, B, nv);
#undef P8
}

/* Neuron j, lanes [c0, c0 + 16 nv): sums, and relu / identity in place.
 * bits: the width of the row indices; local: they count from neuron cbase
 * (only the first chunk, whose cbase is 0, has inputs) and there is no
 * recurrent row. */
NN_INLINE void blockb(const struct nn_plan *p, struct nn_state *s, uint32_t j, size_t c0, int nv,
                      int bits, int local, size_t cbase)
{
    size_t st = s->stride;
    struct lanes zero = {{0}, {0}, {0}, {0}};
    struct lanes g = dot8b(p->g_w, p->g_idx, bits, p->g_row[j], p->g_hid[j], p->g_end[j],
                           s->in_rows, s->y + cbase * st, st, c0, nv);
    struct finish f = {p->bias[j], !local && p->r_end[j] > p->r_row[j], local || p->n_scatter > 0,
                       p->act[j] == GENOME_ACT_RELU};
    struct lanes r = zero;
    if (f.has_rec)
        r = dot8b(p->r_w, p->r_idx, bits, p->r_row[j], p->r_row[j], p->r_end[j], s->y_prev,
                  s->y_prev, st, c0, nv);
    v16f *yj = (v16f *)(s->y + (size_t)j * st + c0);
    v16f *aj = (v16f *)(s->acc + (size_t)j * st + c0);
    finish1(&f, g.v0, r.v0, yj, aj);
    if (nv > 1)
        finish1(&f, g.v1, r.v1, yj + 1, aj + 1);
    if (nv > 2)
        finish1(&f, g.v2, r.v2, yj + 2, aj + 2);
    if (nv > 3)
        finish1(&f, g.v3, r.v3, yj + 3, aj + 3);
}

/* Vectors in the block of lanes [c0, ...) of a row of st lanes. */
NN_INLINE int block_vectors(size_t st, size_t c0)
{
    return st - c0 >= NN_BLOCK ? NN_BLOCK / NN_LANES : (int)((st - c0) / NN_LANES);
}

/* 1 if row j of rows is not zero in every sample. */
NN_INLINE int nonzero_b(const struct nn_state *s, const float *rows, uint32_t j)
{
    const float *yj = rows + (size_t)j * s->stride;
    size_t b = 0;
    while (b < s->batch && yj[b] == 0.0f)
        b++;
    return b < s->batch;
}

/* Adds the neurons of layer l that are non-zero in some sample to its
 * density count. */
NN_INLINE void countb(const struct nn_plan *p, struct nn_state *s, size_t l)
{
    const float *rows = l == 0 ? s->in_rows : s->y;
    uint64_t nz = 0;
    for (uint32_t j = p->layer_start[l]; j < p->layer_start[l + 1]; j++)
        nz += (uint64_t)nonzero_b(s, rows, j);
    s->nz[l] += nz;
}

/* The neurons of layers [op->l0, op->l1), as rows1 (step1.c) does them for
 * one sample. */
NN_INLINE void rowsb(const struct nn_plan *p, struct nn_state *s, const struct nn_op *op, int bits,
                     int local)
{
    size_t st = s->stride, cbase = local ? p->c_start[op->chunk] : 0;
    int measure = nn_measuring(s);
    for (size_t l = op->l0; l < op->l1; l++) {
        uint32_t j0 = p->layer_start[l], j1 = p->layer_start[l + 1];
        for (size_t c0 = 0; c0 < st && l > 0; c0 += NN_BLOCK) {
            int nv = block_vectors(st, c0);
            for (uint32_t j = j0; j < j1; j++) {
                /* nv a constant in each call, so that the vectors stay in
                 * registers */
                if (nv == 4)
                    blockb(p, s, j, c0, 4, bits, local, cbase);
                else if (nv == 3)
                    blockb(p, s, j, c0, 3, bits, local, cbase);
                else if (nv == 2)
                    blockb(p, s, j, c0, 2, bits, local, cbase);
                else
                    blockb(p, s, j, c0, 1, bits, local, cbase);
            }
        }
        for (uint32_t j = l ? j0 : j1; j < j1; j++) {
            int a = p->act[j];
            if (a != GENOME_ACT_RELU && a != GENOME_ACT_IDENTITY)
                nn_acts[a].row(s->y + (size_t)j * st, st);
        }
        if (measure && p->layer_way[l] != NN_WAY_SCATTER)
            countb(p, s, l);
    }
}

NN_INLINE void rowsb_any(const struct nn_plan *p, struct nn_state *s, const struct nn_op *op)
{
    if (p->row_bits == 16)
        rowsb(p, s, op, 16, 0);
    else
        rowsb(p, s, op, 32, 0);
}

NN_INLINE void rowsb_local(const struct nn_plan *p, struct nn_state *s, const struct nn_op *op)
{
    rowsb(p, s, op, 16, 1);
}

/* Source j pushes lanes [c0, c0 + 16 nv) of its row into its destinations. */
NN_INLINE void push_b(const struct nn_plan *p, struct nn_state *s, const float *rows, uint32_t j,
                      size_t c0, int nv, int bits)
{
    size_t st = s->stride;
    const v16fu *yj = (const v16fu *)(rows + (size_t)j * st + c0);
    v16f y0 = yj[0], y1 = y0, y2 = y0, y3 = y0;
    if (nv > 1)
        y1 = yj[1];
    if (nv > 2)
        y2 = yj[2];
    if (nv > 3)
        y3 = yj[3];
    for (uint32_t k = p->s_row[j]; k < p->s_row[j + 1]; k++) {
        v16f *dst = (v16f *)(s->acc + (size_t)nn_idx(p->s_idx, bits, k) * st + c0);
        float wk = p->s_w[k];
        dst[0] += wk * y0;
        if (nv > 1)
            dst[1] += wk * y1;
        if (nv > 2)
            dst[2] += wk * y2;
        if (nv > 3)
            dst[3] += wk * y3;
    }
}

/* Layer op->l0 pushes every source that is non-zero in some sample. */
NN_INLINE void scatterb(const struct nn_plan *p, struct nn_state *s, const struct nn_op *op,
                        int bits)
{
    size_t st = s->stride, l = op->l0;
    const float *rows = l == 0 ? s->in_rows : s->y;
    uint64_t nz = 0;
    for (uint32_t j = p->layer_start[l]; j < p->layer_start[l + 1]; j++) {
        if (!nonzero_b(s, rows, j))
            continue;
        nz++;
        if (p->s_row[j + 1] == p->s_row[j])
            continue;
        for (size_t c0 = 0; c0 < st; c0 += NN_BLOCK) {
            int nv = block_vectors(st, c0);
            if (nv == 4)
                push_b(p, s, rows, j, c0, 4, bits);
            else if (nv == 3)
                push_b(p, s, rows, j, c0, 3, bits);
            else if (nv == 2)
                push_b(p, s, rows, j, c0, 2, bits);
            else
                push_b(p, s, rows, j, c0, 1, bits);
        }
    }
    if (nn_measuring(s))
        s->nz[l] += nz;
}

NN_INLINE void scatterb_any(const struct nn_plan *p, struct nn_state *s, const struct nn_op *op)
{
    if (p->index_bits == 16)
        scatterb(p, s, op, 16);
    else
        scatterb(p, s, op, 32);
}

/* The tiles into chunk op->chunk, every lane; sources that are inputs are
 * read from in_rows (this step's values only: last step's inputs are in
 * y_prev, as a plan with a recurrent edge leaving an input copies them
 * there). */
NN_INLINE void tilesb(const struct nn_plan *p, struct nn_state *s, const struct nn_op *op)
{
    size_t nc = p->n_chunks, st = s->stride, T = op->chunk;
    uint32_t n_in = (uint32_t)p->n_in;
    float *acc = s->acc + (size_t)p->c_start[T] * st;
    const uint32_t *row = p->t_row + T * 2 * nc;
    for (size_t q = 0; q < 2 * nc; q++) {
        uint32_t c0 = p->c_start[q % nc];
        for (uint32_t k = row[q]; k < row[q + 1]; k++) {
            uint32_t sd = p->t_sd[k], j = c0 + (sd >> 16);
            const float *rows = q >= nc ? s->y_prev : j < n_in ? s->in_rows : s->y;
            const v16fu *src = (const v16fu *)(rows + (size_t)j * st);
            v16f *dst = (v16f *)(acc + (size_t)(sd & 0xffff) * st);
            float wk = p->t_w[k];
            for (size_t v = 0; v < st / NN_LANES; v++)
                dst[v] += wk * src[v];
        }
    }
}

NN_KERNEL(nn_rowsb, rowsb_any)
NN_KERNEL(nn_rowsb_local, rowsb_local)
NN_KERNEL(nn_scatterb, scatterb_any)
NN_KERNEL(nn_tilesb, tilesb)
