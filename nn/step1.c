/* step1.c -- the batch-1 kernels: the forward1 function of every op (ops.c).
 *
 * A state of batch 1 holds one value per neuron (y[j]). The sums have a fixed
 * order (kernel.h): the edges of a row go round-robin into 8 partial sums
 * (edge k of the row into lane k % 8), reduced as
 * ((0+4)+(2+6))+((1+5)+(3+7)).
 */
#include "kernel.h"

/* 8 lanes of a row sum; unaligned loads for the rows' weights. */
typedef float v8f __attribute__((vector_size(32)));
typedef float v8fu __attribute__((vector_size(32), aligned(4), may_alias));
typedef uint32_t v8u __attribute__((vector_size(32)));
typedef float v4f __attribute__((vector_size(16)));

/* tail_mask[t]: lanes below t all ones (t = 0..8). */
static const uint32_t tail_mask[9][8] __attribute__((aligned(32))) = {
    {0, 0, 0, 0, 0, 0, 0, 0},
    {~0u, 0, 0, 0, 0, 0, 0, 0},
    {~0u, ~0u, 0, 0, 0, 0, 0, 0},
    {~0u, ~0u, ~0u, 0, 0, 0, 0, 0},
    {~0u, ~0u, ~0u, ~0u, 0, 0, 0, 0},
    {~0u, ~0u, ~0u, ~0u, ~0u, 0, 0, 0},
    {~0u, ~0u, ~0u, ~0u, ~0u, ~0u, 0, 0},
    {~0u, ~0u, ~0u, ~0u, ~0u, ~0u, ~0u, 0},
    {~0u, ~0u, ~0u, ~0u, ~0u, ~0u, ~0u, ~0u},
};

/* The 8 indices of entries k .. k+7. */
NN_INLINE v8u idx8(const void *idx, int bits, uint32_t k)
{
    if (bits == 16) {
        const uint16_t *i = (const uint16_t *)idx + k;
        return (v8u){i[0], i[1], i[2], i[3], i[4], i[5], i[6], i[7]};
    }
    v8u v;
    memcpy(&v, (const uint32_t *)idx + k, sizeof v);
    return v;
}

/* y at 8 indices: 8 loads into one vector. */
NN_INLINE v8f gather8(const float *y, v8u i)
{
    return (v8f){y[i[0]], y[i[1]], y[i[2]], y[i[3]], y[i[4]], y[i[5]], y[i[6]], y[i[7]]};
}

/* y at the indices of entries k .. k+7, the indices read as scalars (16-bit
 * ones 64 bits at a time): no index vector to build and take apart. */
NN_INLINE v8f gather8s(const float *y, const void *idx, int bits, uint32_t k)
{
    if (bits == 16) {
        uint64_t lo, hi;
        memcpy(&lo, (const uint16_t *)idx + k, 8);
        memcpy(&hi, (const uint16_t *)idx + k + 4, 8);
        return (v8f){
            y[(uint16_t)lo], y[(uint16_t)(lo >> 16)], y[(uint16_t)(lo >> 32)], y[lo >> 48],
            y[(uint16_t)hi], y[(uint16_t)(hi >> 16)], y[(uint16_t)(hi >> 32)], y[hi >> 48]};
    }
    const uint32_t *i = (const uint32_t *)idx + k;
    return (v8f){y[i[0]], y[i[1]], y[i[2]], y[i[3]], y[i[4]], y[i[5]], y[i[6]], y[i[7]]};
}

/* Sum of w[k] * y[idx[k]] over k in [b, e): edge k of the row into lane
 * (k - b) % 8 of a vector of 8 sums (multiply, then add: the bits of eight
 * scalar sums), reduced as ((0+4)+(2+6))+((1+5)+(3+7)). A last group of
 * fewer than 8 edges reads 8 entries (NN_SLACK makes that safe at the end of
 * the arrays): the lanes past the row read the zero slot z with weight +0,
 * and adding +0 leaves a lane unchanged (a lane starts at +0 and so is never
 * -0), so a short group gives the bits a padded one would. */
NN_INLINE float dot1(const float *restrict w, const void *idx, int bits, uint32_t b, uint32_t e,
                     const float *restrict y, uint32_t z)
{
    if (b == e) /* what the sums below give for no edges: +0 */
        return 0.0f;
    v8f a = {0};
    uint32_t k = b;
    for (; k + 8 <= e; k += 8)
        a += *(const v8fu *)(w + k) * gather8s(y, idx, bits, k);
    if (k < e) {
        v8u m = *(const v8u *)tail_mask[e - k];
        v8u i = (idx8(idx, bits, k) & m) | (((v8u){0} + z) & ~m);
        v8f wk = (v8f)((v8u) * (const v8fu *)(w + k) & m);
        a += wk * gather8(y, i);
    }
    /* ((a0 + a4) + (a2 + a6)) + ((a1 + a5) + (a3 + a7)), as vector halves */
    v4f h = __builtin_shufflevector(a, a, 0, 1, 2, 3) + __builtin_shufflevector(a, a, 4, 5, 6, 7);
    v4f q = h + __builtin_shufflevector(h, h, 2, 3, 2, 3);
    return q[0] + q[1];
}

NN_INLINE float act1(int a, float v)
{
    if (a == GENOME_ACT_RELU)
        return v > 0.0f ? v : 0.0f;
    if (a == GENOME_ACT_IDENTITY)
        return v;
    return nn_acts[a].one(v);
}

/* Adds the non-zero neurons of layer l to its density count (when
 * measuring). */
NN_INLINE void count1(const struct nn_plan *p, struct nn_state *s, size_t l)
{
    uint64_t nz = 0;
    for (uint32_t j = p->layer_start[l]; j < p->layer_start[l + 1]; j++)
        nz += s->y[j] != 0.0f;
    s->nz[l] += nz;
}

/* The neurons of layers [op->l0, op->l1) (layer 0, the inputs, is only
 * counted): v = ((bias + gather) + recurrent) + acc, y = act(v). bits: the
 * width of the row indices. local (a constant): the rows of a tiled plan,
 * whose 16-bit indices count from the first neuron of chunk op->chunk, with
 * no recurrent row (those are in tiles) and prefetches, as such a plan does
 * not fit in the caches. */
NN_INLINE void rows1(const struct nn_plan *p, struct nn_state *s, const struct nn_op *op, int bits,
                     int local)
{
    float *restrict y = s->y, *restrict acc = s->acc;
    const float *restrict yp = s->y_prev;
    uint32_t z = (uint32_t)p->n; /* the zero slot */
    uint32_t base = local ? p->c_start[op->chunk] : 0;
    const float *yg = y + base; /* row indices count from there */
    uint32_t zg = z - base;
    const float *g_w = p->g_w, *r_w = p->r_w, *bias = p->bias;
    const void *g_idx = p->g_idx, *r_idx = p->r_idx;
    const uint32_t *g_row = p->g_row, *r_row = p->r_row;
    const uint8_t *act = p->act;
    int measure = nn_measuring(s);
    int has_acc = local || p->n_scatter > 0; /* else acc stays 0: skip it */
    for (size_t l = op->l0; l < op->l1; l++) {
        uint32_t j0 = p->layer_start[l], j1 = p->layer_start[l + 1];
        for (uint32_t j = l ? j0 : j1; j < j1; j++) {
#if NN_PF_W
            if (local) {
                __builtin_prefetch(g_w + g_row[j] + NN_PF_W);
                __builtin_prefetch((const uint16_t *)g_idx + g_row[j] + NN_PF_I);
            }
#endif
            float v = bias[j] + dot1(g_w, g_idx, bits, g_row[j], g_row[j + 1], yg, zg);
            if (!local && r_row[j + 1] > r_row[j])
                v += dot1(r_w, r_idx, bits, r_row[j], r_row[j + 1], yp, z);
            if (has_acc) {
                v += acc[j];
                acc[j] = 0.0f;
            }
            y[j] = act1(act[j], v);
        }
        if (measure && p->layer_way[l] != NN_WAY_SCATTER)
            count1(p, s, l);
    }
}

NN_INLINE void rows1_any(const struct nn_plan *p, struct nn_state *s, const struct nn_op *op)
{
    if (p->row_bits == 16)
        rows1(p, s, op, 16, 0);
    else
        rows1(p, s, op, 32, 0);
}

NN_INLINE void rows1_local(const struct nn_plan *p, struct nn_state *s, const struct nn_op *op)
{
    rows1(p, s, op, 16, 1);
}

/* Layer op->l0 pushes its sources that are not exactly zero into acc of
 * their destinations (zero sources cost nothing: the event-driven path). */
NN_INLINE void scatter1(const struct nn_plan *p, struct nn_state *s, const struct nn_op *op,
                        int bits)
{
    float *restrict acc = s->acc;
    const float *restrict y = s->y;
    size_t l = op->l0;
    uint64_t nz = 0;
    for (uint32_t j = p->layer_start[l]; j < p->layer_start[l + 1]; j++) {
        float v = y[j];
        if (v == 0.0f)
            continue;
        nz++;
        for (uint32_t k = p->s_row[j]; k < p->s_row[j + 1]; k++)
            acc[nn_idx(p->s_idx, bits, k)] += p->s_w[k] * v;
    }
    if (nn_measuring(s))
        s->nz[l] += nz;
}

NN_INLINE void scatter1_any(const struct nn_plan *p, struct nn_state *s, const struct nn_op *op)
{
    if (p->index_bits == 16)
        scatter1(p, s, op, 16);
    else
        scatter1(p, s, op, 32);
}

/* The tiles into chunk op->chunk (nn_impl.h): sources read in order, the
 * writes within one chunk's accumulators. */
NN_INLINE void tiles1(const struct nn_plan *p, struct nn_state *s, const struct nn_op *op)
{
    size_t nc = p->n_chunks, T = op->chunk;
    float *restrict acc = s->acc + p->c_start[T];
    const uint32_t *row = p->t_row + T * 2 * nc, *sd = p->t_sd;
    const float *w = p->t_w;
    for (size_t q = 0; q < 2 * nc; q++) {
        const float *restrict src = (q < nc ? s->y : s->y_prev) + p->c_start[q % nc];
        for (uint32_t k0 = row[q], e = row[q + 1]; k0 < e; k0 += 16) {
#if NN_PF_T
            __builtin_prefetch(sd + k0 + NN_PF_T);
            __builtin_prefetch(w + k0 + NN_PF_T);
#endif
            uint32_t k1 = e - k0 > 16 ? k0 + 16 : e;
            /* unrolled, the loop keeps more loads in flight: about 9 % off a
             * step of 10^7 connections */
#pragma GCC unroll 8
            for (uint32_t k = k0; k < k1; k++)
                acc[sd[k] & 0xffff] += w[k] * src[sd[k] >> 16];
        }
    }
}

NN_KERNEL(nn_rows1, rows1_any)
NN_KERNEL(nn_rows1_local, rows1_local)
NN_KERNEL(nn_scatter1, scatter1_any)
NN_KERNEL(nn_tiles1, tiles1)
