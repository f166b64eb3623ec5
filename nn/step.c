/* step.c -- the fast forward pass: states and nn_step.
 *
 * One step walks the layers in depth order. A neuron j of layer l > 0 gets
 *   v = ((bias + gather_ff) + gather_rec) + acc[j],  y[j] = act(v)
 * where acc[j] holds what scatter layers before it pushed into j this step,
 * and what the tiles into its chunk added (tiled plans: just before the
 * chunk's first layer, tile after tile, each in its order).
 * After a layer is done, if it is a SCATTER layer, every source that is not
 * exactly zero pushes w * y into acc of its destinations (zero sources cost
 * nothing: the event-driven path).
 *
 * Every sum has a fixed order spelled out here, so the compiler may vectorize
 * but not reorder (no -ffast-math, no FMA contraction), and every
 * target_clones version gives the same bits:
 *   - batch 1: the edges of a row go round-robin into 8 partial sums (edge k
 *     of the row into lane k % 8), reduced as ((0+4)+(2+6))+((1+5)+(3+7));
 *   - batch B: lane b sums the row's edges in order, one vector per 16 lanes.
 * A batched step reads feature-major inputs in place when their rows have the
 * state's stride, and a network without recurrent edges keeps one buffer of
 * values instead of swapping two (step_begin).
 */
#include <stdlib.h>
#include <string.h>

#include "nn_impl.h"

#if defined(__x86_64__) && defined(__GNUC__)
/* Same binary on every x86-64; AVX2 / AVX-512 versions picked at load time. */
#define NN_CLONES __attribute__((target_clones("default", "avx2", "avx512f")))
#else
#define NN_CLONES
#endif
#define NN_INLINE static inline __attribute__((always_inline))

/* Prefetch distances in a tiled plan (one too large for the caches), in
 * entries of the rows' weights, the rows' 16-bit indices and the tiles; 0:
 * none. The hardware prefetchers stop at each 4 KB page; these gain a few
 * per cent at 10^7 connections. */
#ifndef NN_PF_W
#define NN_PF_W 512
#define NN_PF_I 1024
#define NN_PF_T 256
#endif
#ifndef NN_BLOCK
#define NN_BLOCK 64 /* lanes per block of a batched step: 16, 32, 48 or 64 */
#endif

typedef float v16f __attribute__((vector_size(64), may_alias));
typedef int32_t v16i __attribute__((vector_size(64), may_alias));
/* The same, for rows that may be only float-aligned (a caller's inputs). */
typedef float v16fu __attribute__((vector_size(64), aligned(4), may_alias));

#define IDX(base, bits, k)                                                                         \
    ((bits) == 16 ? (uint32_t)((const uint16_t *)(base))[k] : ((const uint32_t *)(base))[k])

/* ---- batch 1 ------------------------------------------------------------ */

/* 8 lanes of a batch-1 row sum; unaligned loads for the rows' weights. The
 * helpers that pass these by value are always inlined, so the warning that
 * their ABI differs without AVX does not apply. */
#pragma GCC diagnostic ignored "-Wpsabi"
typedef float v8f __attribute__((vector_size(32)));
typedef float v8fu __attribute__((vector_size(32), aligned(4), may_alias));
typedef uint32_t v8u __attribute__((vector_size(32)));
typedef float v4f __attribute__((vector_size(16)));

/* nn_tail_mask[t]: lanes below t all ones (t = 0..8). */
static const uint32_t nn_tail_mask[9][8] __attribute__((aligned(32))) = {
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
        v8u m = *(const v8u *)nn_tail_mask[e - k];
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

/* The tiles into chunk T (nn_impl.h), batch 1: sources read in order, the
 * writes within one chunk's accumulators. */
NN_INLINE void tiles1(const struct nn_plan *p, struct nn_state *s, size_t T)
{
    size_t nc = p->n_chunks;
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

/* bits: the width of the scatter indices (and of the others in a plain
 * plan); tiled (a constant): a tiled plan, whose rows hold 16-bit indices
 * counted from the first neuron of their chunk and no recurrent edge. */
NN_INLINE void run1(const struct nn_plan *p, struct nn_state *s, int bits, int tiled)
{
    float *restrict y = s->y, *restrict acc = s->acc;
    const float *restrict yp = s->y_prev;
    uint32_t z = (uint32_t)p->n; /* the zero slot */
    const float *g_w = p->g_w, *r_w = p->r_w, *s_w = p->s_w, *bias = p->bias;
    const void *g_idx = p->g_idx, *r_idx = p->r_idx, *s_idx = p->s_idx;
    const uint32_t *g_row = p->g_row, *r_row = p->r_row, *s_row = p->s_row;
    const uint8_t *act = p->act;
    int measure = s->steps < NN_DENSITY_STEPS;
    int has_acc = tiled || p->n_scatter > 0; /* else acc stays 0: skip it */
    int gbits = tiled ? 16 : bits;
    const float *yg = y; /* row indices count from there (tiled: the chunk's start) */
    uint32_t zg = z;
    size_t chunk = 0, next = tiled ? 0 : SIZE_MAX; /* the layer of the next chunk */
    for (size_t l = 0; l < p->n_layers; l++) {
        uint32_t j0 = p->layer_start[l], j1 = p->layer_start[l + 1];
        if (tiled && l == next) {
            yg = y + p->c_start[chunk];
            zg = z - p->c_start[chunk];
            tiles1(p, s, chunk++);
            next = chunk < p->n_chunks ? p->c_layer[chunk] : SIZE_MAX;
        }
        for (uint32_t j = l ? j0 : j1; j < j1; j++) {
#if NN_PF_W
            if (tiled) { /* a plan that does not fit in cache */
                __builtin_prefetch(g_w + g_row[j] + NN_PF_W);
                __builtin_prefetch((const uint16_t *)g_idx + g_row[j] + NN_PF_I);
            }
#endif
            float v = bias[j] + dot1(g_w, g_idx, gbits, g_row[j], g_row[j + 1], yg, zg);
            if (!tiled && r_row[j + 1] > r_row[j])
                v += dot1(r_w, r_idx, bits, r_row[j], r_row[j + 1], yp, z);
            if (has_acc) {
                v += acc[j];
                acc[j] = 0.0f;
            }
            y[j] = act1(act[j], v);
        }
        uint64_t nz = 0;
        if (p->layer_way[l] == NN_WAY_SCATTER) {
            for (uint32_t j = j0; j < j1; j++) {
                float v = y[j];
                if (v == 0.0f)
                    continue;
                nz++;
                for (uint32_t k = s_row[j]; k < s_row[j + 1]; k++)
                    acc[IDX(s_idx, bits, k)] += s_w[k] * v;
            }
        } else if (measure) {
            for (uint32_t j = j0; j < j1; j++)
                nz += y[j] != 0.0f;
        }
        if (measure)
            s->nz[l] += nz;
    }
}

NN_CLONES static void run1_16(const struct nn_plan *p, struct nn_state *s)
{
    run1(p, s, 16, 0);
}

NN_CLONES static void run1_32(const struct nn_plan *p, struct nn_state *s)
{
    run1(p, s, 32, 0);
}

NN_CLONES static void run1_16t(const struct nn_plan *p, struct nn_state *s)
{
    run1(p, s, 16, 1);
}

NN_CLONES static void run1_32t(const struct nn_plan *p, struct nn_state *s)
{
    run1(p, s, 32, 1);
}

/* ---- batch B: rows of `stride` lanes, up to 4 vectors (64 lanes) a block - */

/* A0..A3 += w[k] * y[idx[k]][c0 + 16q ..] for k in [B, E), in edge order;
 * nv (1..4) is a constant after inlining. A macro on named sums, so that they
 * stay in registers (through a function's array they went to the stack). */
#define DOTB(W, I, B, E, Y, A0, A1, A2, A3)                                                        \
    for (uint32_t k = (B); k < (E); k++) {                                                         \
        const v16fu *src = (const v16fu *)((Y) + (size_t)IDX(I, bits, k) * st + c0);               \
        float wk = (W)[k];                                                                         \
        A0 += wk * src[0];                                                                         \
        if (nv > 1)                                                                                \
            A1 += wk * src[1];                                                                     \
        if (nv > 2)                                                                                \
            A2 += wk * src[2];                                                                     \
        if (nv > 3)                                                                                \
            A3 += wk * src[3];                                                                     \
    }

/* Vector q of a block: ((bias + gather) + rec) + acc, relu / identity. */
#define FINISH(q, G, R)                                                                            \
    do {                                                                                           \
        v16f v = bias + (G);                                                                       \
        if (has_rec)                                                                               \
            v += (R);                                                                              \
        if (tiled || p->n_scatter) { /* else acc stays 0 */                                        \
            v += aj[q];                                                                            \
            aj[q] = (v16f){0};                                                                     \
        }                                                                                          \
        if (relu) /* x > 0 ? x : 0, as in act_relu, lane by lane */                                \
            v = (v16f)((v16i)v & (v > (v16f){0}));                                                 \
        yj[q] = v;                                                                                 \
    } while (0)

/* Neuron j, lanes [c0, c0 + 16 nv): sums, and relu / identity in place.
 * Sources that are inputs are read from yin (rows of the same stride). bits:
 * the width of the row indices; tiled: they count from neuron cbase (only
 * the first chunk, whose cbase is 0, has inputs) and there is no recurrent
 * row. */
NN_INLINE void blockb(const struct nn_plan *p, struct nn_state *s, const float *yin, uint32_t j,
                      size_t c0, int nv, int bits, int tiled, size_t cbase)
{
    size_t st = s->stride;
    v16f g0 = {0}, g1 = {0}, g2 = {0}, g3 = {0}, r0 = {0}, r1 = {0}, r2 = {0}, r3 = {0};
    DOTB(p->g_w, p->g_idx, p->g_row[j], p->g_hid[j], yin, g0, g1, g2, g3)
    DOTB(p->g_w, p->g_idx, p->g_hid[j], p->g_end[j], s->y + cbase * st, g0, g1, g2, g3)
    int has_rec = !tiled && p->r_end[j] > p->r_row[j];
    if (has_rec)
        DOTB(p->r_w, p->r_idx, p->r_row[j], p->r_end[j], s->y_prev, r0, r1, r2, r3)
    v16f *yj = (v16f *)(s->y + (size_t)j * st + c0);
    v16f *aj = (v16f *)(s->acc + (size_t)j * st + c0);
    float bias = p->bias[j];
    int relu = p->act[j] == GENOME_ACT_RELU;
    FINISH(0, g0, r0);
    if (nv > 1)
        FINISH(1, g1, r1);
    if (nv > 2)
        FINISH(2, g2, r2);
    if (nv > 3)
        FINISH(3, g3, r3);
}
#undef DOTB
#undef FINISH

/* Source j pushes lanes [c0, c0 + 16 nv) into its destinations. */
NN_INLINE void scatterb(const struct nn_plan *p, struct nn_state *s, const float *rows, uint32_t j,
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
        v16f *dst = (v16f *)(s->acc + (size_t)IDX(p->s_idx, bits, k) * st + c0);
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

/* The tiles into chunk T, every lane; sources that are inputs are read from
 * yin (this step's values only: last step's inputs are in y_prev, as a plan
 * with a recurrent edge leaving an input copies them there). */
NN_INLINE void tilesb(const struct nn_plan *p, struct nn_state *s, const float *yin, size_t T)
{
    size_t nc = p->n_chunks, st = s->stride;
    uint32_t n_in = (uint32_t)p->n_in;
    float *acc = s->acc + (size_t)p->c_start[T] * st;
    const uint32_t *row = p->t_row + T * 2 * nc;
    for (size_t q = 0; q < 2 * nc; q++) {
        uint32_t c0 = p->c_start[q % nc];
        for (uint32_t k = row[q]; k < row[q + 1]; k++) {
            uint32_t sd = p->t_sd[k], j = c0 + (sd >> 16);
            const float *rows = q >= nc ? s->y_prev : j < n_in ? yin : s->y;
            const v16fu *src = (const v16fu *)(rows + (size_t)j * st);
            v16f *dst = (v16f *)(acc + (size_t)(sd & 0xffff) * st);
            float wk = p->t_w[k];
            for (size_t v = 0; v < st / NN_LANES; v++)
                dst[v] += wk * src[v];
        }
    }
}

/* Calls f(..., nv) with nv a constant, so that the vectors stay in registers. */
#define BY_NV(nv, call)                                                                            \
    switch (nv) {                                                                                  \
    case 4:                                                                                        \
        call(4);                                                                                   \
        break;                                                                                     \
    case 3:                                                                                        \
        call(3);                                                                                   \
        break;                                                                                     \
    case 2:                                                                                        \
        call(2);                                                                                   \
        break;                                                                                     \
    default:                                                                                       \
        call(1);                                                                                   \
        break;                                                                                     \
    }

/* yin: the rows of the inputs, [n_in][stride] (s->y, or the caller's
 * feature-major buffer read in place). */
NN_INLINE void runb(const struct nn_plan *p, struct nn_state *s, const float *yin, int bits,
                    int tiled)
{
    size_t st = s->stride, cbase = 0;
    int measure = s->steps < NN_DENSITY_STEPS, gbits = tiled ? 16 : bits;
    size_t chunk = 0, next = tiled ? 0 : SIZE_MAX; /* the layer of the next chunk */
    for (size_t l = 0; l < p->n_layers; l++) {
        uint32_t j0 = p->layer_start[l], j1 = p->layer_start[l + 1];
        if (tiled && l == next) {
            cbase = p->c_start[chunk];
            tilesb(p, s, yin, chunk++);
            next = chunk < p->n_chunks ? p->c_layer[chunk] : SIZE_MAX;
        }
        /* lanes in blocks of NN_BLOCK, the block loop outside: the rows a
         * block reads (n x NN_BLOCK floats) stay in cache while the plan
         * streams; 64 lanes (one pass over the plan for a batch of 64) beat
         * 32 on 4096 x 4096 layers and on 10 k-neuron graphs */
        for (size_t c0 = 0; c0 < st && l > 0; c0 += NN_BLOCK) {
            int nv = st - c0 >= NN_BLOCK ? NN_BLOCK / NN_LANES : (int)((st - c0) / NN_LANES);
            for (uint32_t j = j0; j < j1; j++) {
#define CALL_BLOCK(k) blockb(p, s, yin, j, c0, k, gbits, tiled, cbase)
                BY_NV(nv, CALL_BLOCK)
#undef CALL_BLOCK
            }
        }
        for (uint32_t j = l ? j0 : j1; j < j1; j++) {
            int a = p->act[j];
            if (a != GENOME_ACT_RELU && a != GENOME_ACT_IDENTITY)
                nn_acts[a].row(s->y + (size_t)j * st, st);
        }
        uint64_t nz = 0;
        int scatter = p->layer_way[l] == NN_WAY_SCATTER;
        if (!scatter && !measure)
            continue;
        const float *rows = l == 0 ? yin : s->y;
        for (uint32_t j = j0; j < j1; j++) {
            const float *yj = rows + (size_t)j * st;
            size_t b = 0;
            while (b < s->batch && yj[b] == 0.0f)
                b++;
            if (b == s->batch)
                continue;
            nz++;
            if (!scatter || p->s_row[j + 1] == p->s_row[j])
                continue;
            for (size_t c0 = 0; c0 < st; c0 += NN_BLOCK) {
                int nv = st - c0 >= NN_BLOCK ? NN_BLOCK / NN_LANES : (int)((st - c0) / NN_LANES);
#define CALL_SCATTER(k) scatterb(p, s, rows, j, c0, k, bits)
                BY_NV(nv, CALL_SCATTER)
#undef CALL_SCATTER
            }
        }
        if (measure)
            s->nz[l] += nz;
    }
}

NN_CLONES static void runb_16(const struct nn_plan *p, struct nn_state *s, const float *yin)
{
    runb(p, s, yin, 16, 0);
}

NN_CLONES static void runb_32(const struct nn_plan *p, struct nn_state *s, const float *yin)
{
    runb(p, s, yin, 32, 0);
}

NN_CLONES static void runb_16t(const struct nn_plan *p, struct nn_state *s, const float *yin)
{
    runb(p, s, yin, 16, 1);
}

NN_CLONES static void runb_32t(const struct nn_plan *p, struct nn_state *s, const float *yin)
{
    runb(p, s, yin, 32, 1);
}

/* The step of batch 1 and of batches for plan p's index width and form. */
static void run1_any(const struct nn_plan *p, struct nn_state *s)
{
    if (p->n_chunks)
        (p->index_bits == 16 ? run1_16t : run1_32t)(p, s);
    else
        (p->index_bits == 16 ? run1_16 : run1_32)(p, s);
}

static void runb_any(const struct nn_plan *p, struct nn_state *s, const float *yin)
{
    if (p->n_chunks)
        (p->index_bits == 16 ? runb_16t : runb_32t)(p, s, yin);
    else
        (p->index_bits == 16 ? runb_16 : runb_32)(p, s, yin);
}

/* ---- states --------------------------------------------------------------- */

int nn_state_new(const struct nn_plan *p, size_t batch, struct nn_state **out, struct tv_error *err)
{
    *out = NULL;
    if (batch == 0)
        return tv_error_set(err, TV_EINVAL, "nn_state_new: batch must be at least 1");
    if (batch > ((size_t)1 << 24))
        return tv_error_set(err, TV_EINVAL, "nn_state_new: batch %zu is larger than %zu", batch,
                            (size_t)1 << 24);
    size_t stride = batch == 1 ? 1 : (batch + NN_LANES - 1) / NN_LANES * NN_LANES;
    size_t head = (sizeof(struct nn_state) + 63) & ~(size_t)63;
    if (p->n > SIZE_MAX / 16 / stride)
        return tv_error_set(err, TV_EINVAL, "nn_state_new: %zu neurons x batch %zu is too large",
                            p->n, batch);
    /* n + 1 rows: row n is the zero slot that slack entries read */
    size_t vals = (((p->n + 1) * stride * sizeof(float)) + 63) & ~(size_t)63;
    size_t bytes = head + 3 * vals + p->n_layers * sizeof(uint64_t);
    bytes = (bytes + 63) & ~(size_t)63;
    unsigned char *m = aligned_alloc(64, bytes);
    if (!m)
        return tv_error_set(err, TV_ENOMEM, "nn_state_new: out of memory (%zu bytes)", bytes);
    struct nn_state *s = (struct nn_state *)m;
    s->plan = p;
    s->batch = batch;
    s->stride = stride;
    s->y = (float *)(m + head);
    s->y_prev = (float *)(m + head + vals);
    s->acc = (float *)(m + head + 2 * vals);
    s->nz = (uint64_t *)(m + head + 3 * vals);
    memset(m + head, 0, bytes - head);
    s->steps = 0;
    *out = s;
    return 0;
}

void nn_state_free(struct nn_state *s)
{
    free(s);
}

size_t nn_state_batch(const struct nn_state *s)
{
    return s->batch;
}

void nn_state_reset(struct nn_state *s)
{
    size_t nv = (s->plan->n + 1) * s->stride;
    memset(s->y, 0, nv * sizeof *s->y);
    memset(s->y_prev, 0, nv * sizeof *s->y_prev);
    memset(s->acc, 0, nv * sizeof *s->acc);
    memset(s->nz, 0, s->plan->n_layers * sizeof *s->nz);
    s->steps = 0;
}

/* This step's values go where the last step's were, which become y_prev; a
 * network without recurrent edges never reads y_prev, so it keeps writing
 * the same buffer (half the memory a step touches). */
static void step_begin(struct nn_state *s)
{
    if (s->plan->n_recurrent) { /* in rows or in tiles */
        float *t = s->y;
        s->y = s->y_prev;
        s->y_prev = t;
    }
}

void nn_step(struct nn_state *s, const float *in, float *out)
{
    const struct nn_plan *p = s->plan;
    step_begin(s);
    if (s->batch == 1) {
        memcpy(s->y, in, p->n_in * sizeof *in);
        run1_any(p, s);
    } else {
        /* [batch][n_in] -> [n_in][stride] in tiles of 8 samples x 16 inputs:
         * rows of `in` a multiple of 4 KB apart share one L1 set, so no more
         * than 8 of them at a time */
        size_t st = s->stride, b_n = s->batch, n_in = p->n_in;
        for (size_t b0 = 0; b0 < b_n; b0 += 8) {
            size_t b1 = b0 + 8 < b_n ? b0 + 8 : b_n;
            for (size_t k0 = 0; k0 < n_in; k0 += 16) {
                size_t k1 = k0 + 16 < n_in ? k0 + 16 : n_in;
                for (size_t b = b0; b < b1; b++)
                    for (size_t k = k0; k < k1; k++)
                        s->y[k * st + b] = in[b * n_in + k];
            }
        }
        runb_any(p, s, s->y);
    }
    s->steps++;
    if (out)
        nn_state_read(s, out);
}

void nn_step_feature_major(struct nn_state *s, const float *in, float *out)
{
    const struct nn_plan *p = s->plan;
    if (s->batch == 1) {
        nn_step(s, in, out);
        return;
    }
    step_begin(s);
    size_t st = s->stride, b_n = s->batch;
    /* Rows of `in` that have the state's stride and alignment are read in
     * place, unless the next step needs them as last step's inputs (a row
     * read at an unaligned address costs two lines). */
    const float *yin = in;
    if (b_n != st || p->rec_reads_input || ((uintptr_t)in & 63)) {
        for (size_t k = 0; k < p->n_in; k++)
            memcpy(s->y + k * st, in + k * b_n, b_n * sizeof *in);
        yin = s->y;
    }
    runb_any(p, s, yin);
    s->steps++;
    if (out && b_n == st && p->out_contiguous) /* one block, not n_out small copies */
        memcpy(out, s->y + (size_t)p->out_map[0] * st, p->n_out * st * sizeof *out);
    else if (out)
        for (size_t k = 0; k < p->n_out; k++)
            memcpy(out + k * b_n, s->y + (size_t)p->out_map[k] * st, b_n * sizeof *out);
}

void nn_state_read(const struct nn_state *s, float *out)
{
    const struct nn_plan *p = s->plan;
    if (s->batch == 1 && p->out_contiguous) {
        memcpy(out, s->y + p->out_map[0], p->n_out * sizeof *out);
        return;
    }
    if (s->batch == 1) {
        for (size_t k = 0; k < p->n_out; k++)
            out[k] = s->y[p->out_map[k]];
        return;
    }
    size_t n_out = p->n_out, st = s->stride;
    for (size_t b0 = 0; b0 < s->batch; b0 += 8) { /* tiles, as for the inputs */
        size_t b1 = b0 + 8 < s->batch ? b0 + 8 : s->batch;
        for (size_t k0 = 0; k0 < n_out; k0 += 16) {
            size_t k1 = k0 + 16 < n_out ? k0 + 16 : n_out;
            for (size_t b = b0; b < b1; b++)
                for (size_t k = k0; k < k1; k++)
                    out[b * n_out + k] = s->y[(size_t)p->out_map[k] * st + b];
        }
    }
}

int nn_state_density(const struct nn_state *s, float *density, struct tv_error *err)
{
    const struct nn_plan *p = s->plan;
    if (s->steps == 0)
        return tv_error_set(err, TV_ESTATE, "nn_state_density: no step was run since the reset");
    double steps = (double)(s->steps < NN_DENSITY_STEPS ? s->steps : NN_DENSITY_STEPS);
    for (size_t l = 0; l < p->n_layers; l++) {
        double size = (double)(p->layer_start[l + 1] - p->layer_start[l]);
        density[l] = (float)((double)s->nz[l] / (steps * size));
    }
    return 0;
}
