/* int8.c -- the int8 engine: an int8 plan (nn_qplan_compile) and the kernels
 * of its one op, NN_OP_INT8 (nn/ops.c).
 *
 * An int8 plan is one allocation: a struct nn_plan header (so that
 * nn_state_new, nn_step and the tasks run it as any plan), the flat form of
 * quant_impl.h, and its arrays: per non-input neuron 16 bytes (row start,
 * folded bias, multiplier, shift, pre-activation zero point, table), per edge
 * 3 bytes (a 16-bit value slot and an int8 weight) when 2 (n + 1) <= 65536,
 * 5 bytes otherwise, and 256 bytes per distinct table.
 *
 * A state of an int8 plan keeps u = q + 128 of every neuron in its scatter
 * buffer (s->acc, unused by int8 plans): this step's values [n + 1][stride]
 * then last step's [n + 1][stride]. A step quantizes the inputs (s->y, or the
 * caller's rows in place), computes every neuron in dense order, and writes
 * the dequantized outputs where nn_state_read finds them (s->y). With
 * recurrent edges, a step first copies this step's values to last step's (or,
 * after a reset, every layer's zero code).
 *
 * Paths: batch 1 is one portable loop on every target; batches run a
 * portable loop, or, on target avx512f of a CPU with AVX-512 VNNI and VBMI,
 * 64 samples at a time with vpdpbusd (4 edges x 64 samples per 4
 * instructions). The sums are exact integers (|acc| < 2^31 by the limits of
 * quant.h), so every path gives the same bits.
 */
#include <stdlib.h>
#include <string.h>

#include "quant_impl.h"

struct nn_qplan {
    struct nn_plan plan; /* first: the kernels get a struct nn_plan * */
    struct nn_qflat f;
    struct nn_op op;
};

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
    PLACE(f->row, n + 1);
    PLACE(f->fbias, n);
    PLACE(f->mult, n);
    PLACE(f->shift, n);
    PLACE(f->pzp, n);
    PLACE(f->tab, n);
    PLACE(f->w, f->n_edges);
    if (base)
        f->idx = base + off;
    off += up(f->n_edges * (size_t)f->idx_bits / 8);
    PLACE(f->tables, f->n_tables * 256 + 64);
    PLACE(f->lstart, f->n_layers + 1);
    PLACE(f->lzero, f->n_layers);
    PLACE(f->out_map, f->n_out);
    PLACE(qp->plan.layer_way, f->n_layers);
#undef PLACE
    return off;
}

int nn_qplan_compile(const struct nn_qnet *q, struct nn_plan **out, struct tv_error *err)
{
    *out = NULL;
    struct nn_qplan hd = {0};
    int rc = nn_qflat_sizes(q, &hd.f, err);
    if (rc)
        return rc;
    size_t bytes = layout(&hd, NULL);
    unsigned char *m = aligned_alloc(ALIGN, bytes);
    if (!m)
        return tv_error_set(err, TV_ENOMEM, "int8 plan: out of memory (%zu bytes)", bytes);
    memset(m, 0, bytes);
    struct nn_qplan *qp = (struct nn_qplan *)m;
    *qp = hd;
    layout(qp, m);
    nn_qflat_fill(q, &qp->f);
    struct nn_plan *p = &qp->plan;
    p->n = q->n;
    p->n_in = q->n_in;
    p->n_out = q->n_out;
    p->n_layers = q->n_layers;
    p->n_conns = q->n_edges;
    p->n_recurrent = q->n_recurrent;
    p->n_gather = q->n_edges;
    p->bytes = bytes;
    p->index_bits = p->row_bits = qp->f.idx_bits;
    p->out_map = qp->f.out_map;
    p->layer_start = qp->f.lstart;
    memset(p->layer_way, NN_WAY_GATHER, q->n_layers);
    p->out_contiguous = 1;
    for (size_t k = 1; k < q->n_out; k++)
        p->out_contiguous &= q->out_map[k] == q->out_map[0] + k;
    qp->op = (struct nn_op){NN_OP_INT8, 0, (uint32_t)q->n_layers, 0};
    p->ops = &qp->op;
    p->n_ops = 1;
    *out = p;
    return 0;
}

int nn_plan_is_int8(const struct nn_plan *p)
{
    return p->n_ops == 1 && p->ops[0].kind == NN_OP_INT8;
}

/* ---- shared by every path -------------------------------------------------- */

/* This step's values and last step's (stride bytes a neuron). */
static uint8_t *values(const struct nn_state *s)
{
    return (uint8_t *)s->acc;
}

/* Quantizes x[0..n) into u (nn_q_input), and dequantizes u[0..n) into y. */
typedef void qrow_fn(const float *x, size_t n, uint8_t *u, float scale, int32_t zp);
typedef void drow_fn(const uint8_t *u, size_t n, float *y, float scale, int32_t zp);

static void qrow(const float *x, size_t n, uint8_t *u, float scale, int32_t zp)
{
    for (size_t i = 0; i < n; i++)
        u[i] = nn_q_input(x[i], scale, zp);
}

static void drow(const uint8_t *u, size_t n, float *y, float scale, int32_t zp)
{
    for (size_t i = 0; i < n; i++)
        y[i] = (float)((int32_t)u[i] - 128 - zp) * scale;
}

/* Before a step: last step's values from this one's (or the zero codes
 * after a reset), then the inputs quantized. */
static void begin(const struct nn_plan *p, const struct nn_qflat *f, struct nn_state *s, qrow_fn *q)
{
    size_t st = s->stride, n = f->n;
    uint8_t *cur = values(s), *prev = cur + (n + 1) * st;
    if (p->n_recurrent && s->steps == 0) {
        for (size_t l = 0; l < f->n_layers; l++)
            memset(prev + (size_t)f->lstart[l] * st, f->lzero[l],
                   (size_t)(f->lstart[l + 1] - f->lstart[l]) * st);
    } else if (p->n_recurrent) {
        memcpy(prev, cur, n * st);
    }
    if (s->batch == 1) {
        q(s->y, f->n_in, cur, f->in_scale, f->in_zp);
        return;
    }
    for (size_t k = 0; k < f->n_in; k++)
        q(s->in_rows + k * st, s->batch, cur + k * st, f->in_scale, f->in_zp);
}

/* After a step: the dequantized outputs into s->y. */
static void finish(const struct nn_qflat *f, struct nn_state *s, drow_fn *d)
{
    size_t st = s->stride;
    const uint8_t *cur = values(s);
    for (size_t k = 0; k < f->n_out; k++) {
        size_t j = f->out_map[k];
        d(cur + j * st, s->batch, s->y + j * st, f->out_scale, f->out_zp);
    }
}

static inline uint32_t slot(const struct nn_qflat *f, uint32_t k)
{
    return f->idx_bits == 16 ? ((const uint16_t *)f->idx)[k] : ((const uint32_t *)f->idx)[k];
}

/* The table entry of neuron j for the sum acc. */
static inline uint8_t neuron_out(const struct nn_qflat *f, uint32_t i, int32_t acc)
{
    uint32_t u = nn_q_requant(acc, f->mult[i], f->shift[i], f->pzp[i]);
    return f->tables[(size_t)f->tab[i] * 256 + u];
}

/* ---- batch 1 --------------------------------------------------------------- */

static void int8_one(const struct nn_plan *p, struct nn_state *s, const struct nn_op *op)
{
    (void)op;
    const struct nn_qflat *f = &((const struct nn_qplan *)p)->f;
    begin(p, f, s, qrow);
    uint8_t *v = values(s);
    const int8_t *w = f->w;
    for (uint32_t j = (uint32_t)f->n_in; j < f->n; j++) {
        uint32_t i = j - (uint32_t)f->n_in;
        int32_t a0 = f->fbias[i], a1 = 0, a2 = 0, a3 = 0;
        uint32_t k = f->row[i], e = f->row[i + 1];
        if (f->idx_bits == 16) {
            const uint16_t *ix = f->idx;
            for (; k + 4 <= e; k += 4) {
                a0 += w[k] * v[ix[k]];
                a1 += w[k + 1] * v[ix[k + 1]];
                a2 += w[k + 2] * v[ix[k + 2]];
                a3 += w[k + 3] * v[ix[k + 3]];
            }
        }
        for (; k < e; k++)
            a0 += w[k] * v[slot(f, k)];
        v[j] = neuron_out(f, i, (a0 + a1) + (a2 + a3));
    }
    finish(f, s, drow);
}

/* ---- batches --------------------------------------------------------------- */

/* Samples [b0, b0 + nb) (nb <= 64) of neuron j, portably. */
static inline __attribute__((always_inline)) void
block_portable(const struct nn_qflat *f, uint8_t *v, size_t st, uint32_t j, size_t b0, size_t nb)
{
    int32_t a[64];
    uint32_t i = j - (uint32_t)f->n_in;
    for (size_t b = 0; b < nb; b++)
        a[b] = f->fbias[i];
    for (uint32_t k = f->row[i]; k < f->row[i + 1]; k++) {
        const uint8_t *x = v + (size_t)slot(f, k) * st + b0;
        int32_t wk = f->w[k];
        for (size_t b = 0; b < nb; b++)
            a[b] += wk * x[b];
    }
    uint8_t *o = v + (size_t)j * st + b0;
    for (size_t b = 0; b < nb; b++)
        o[b] = neuron_out(f, i, a[b]);
}

static void int8_batch(const struct nn_plan *p, struct nn_state *s, const struct nn_op *op)
{
    (void)op;
    const struct nn_qflat *f = &((const struct nn_qplan *)p)->f;
    begin(p, f, s, qrow);
    uint8_t *v = values(s);
    size_t st = s->stride;
    for (uint32_t j = (uint32_t)f->n_in; j < f->n; j++)
        for (size_t b0 = 0; b0 < st; b0 += 64) {
            if (st - b0 >= 64) /* a constant count: the loops vectorize */
                block_portable(f, v, st, j, b0, 64);
            else
                block_portable(f, v, st, j, b0, st - b0);
        }
    finish(f, s, drow);
}

#if defined(__x86_64__) && defined(__GNUC__)
#include <immintrin.h>

#define VNNI_TARGET __attribute__((target("avx512f,avx512bw,avx512vl,avx512vnni,avx512vbmi")))

/* The tail mask of lanes [i, n) of a group of 16. */
#define TAIL16(n, i) ((n) - (i) >= 16 ? (__mmask16)0xFFFF : (__mmask16)((1u << ((n) - (i))) - 1))

/* qrow, 16 values at a time: the same operations lane-wise (IEEE division,
 * truncation, exact differences), so the same bits. */
VNNI_TARGET static void qrow_avx512(const float *x, size_t n, uint8_t *u, float scale, int32_t zp)
{
    const __m512 sc = _mm512_set1_ps(scale), lo = _mm512_set1_ps(-1000.0f);
    const __m512 hi = _mm512_set1_ps(1000.0f), half = _mm512_set1_ps(0.5f);
    const __m512 mhalf = _mm512_set1_ps(-0.5f);
    const __m512i z = _mm512_set1_epi32(zp), one = _mm512_set1_epi32(1);
    for (size_t i = 0; i < n; i += 16) {
        __mmask16 m = TAIL16(n, i);
        __m512 t = _mm512_div_ps(_mm512_maskz_loadu_ps(m, x + i), sc);
        t = _mm512_maskz_mov_ps(_mm512_cmp_ps_mask(t, t, _CMP_ORD_Q), t); /* NaN: 0 */
        t = _mm512_min_ps(_mm512_max_ps(t, lo), hi);
        __m512 r = _mm512_roundscale_ps(t, _MM_FROUND_TO_ZERO | _MM_FROUND_NO_EXC);
        __m512 fr = _mm512_sub_ps(t, r);
        __m512i q = _mm512_cvttps_epi32(r);
        q = _mm512_mask_add_epi32(q, _mm512_cmp_ps_mask(fr, half, _CMP_GE_OQ), q, one);
        q = _mm512_mask_sub_epi32(q, _mm512_cmp_ps_mask(fr, mhalf, _CMP_LE_OQ), q, one);
        q = _mm512_add_epi32(q, z);
        q = _mm512_max_epi32(_mm512_min_epi32(q, _mm512_set1_epi32(127)), _mm512_set1_epi32(-128));
        _mm512_mask_cvtepi32_storeu_epi8(u + i, m, _mm512_add_epi32(q, _mm512_set1_epi32(128)));
    }
}

/* drow, 16 values at a time (exact conversions, one IEEE multiply). */
VNNI_TARGET static void drow_avx512(const uint8_t *u, size_t n, float *y, float scale, int32_t zp)
{
    const __m512 sc = _mm512_set1_ps(scale);
    const __m512i off = _mm512_set1_epi32(128 + zp);
    for (size_t i = 0; i < n; i += 16) {
        __mmask16 m = TAIL16(n, i);
        __m512i v = _mm512_cvtepu8_epi32(_mm_maskz_loadu_epi8(m, u + i));
        __m512 d = _mm512_cvtepi32_ps(_mm512_sub_epi32(v, off));
        _mm512_mask_storeu_ps(y + i, m, _mm512_mul_ps(d, sc));
    }
}

/* Batch 1 with 16-bit slots: 16 edges at a time, the values gathered as
 * dwords at byte offsets (the state's buffer has room past its last value)
 * and their low byte kept. */
VNNI_TARGET static void int8_one_avx512(const struct nn_plan *p, struct nn_state *s,
                                        const struct nn_op *op)
{
    (void)op;
    const struct nn_qflat *f = &((const struct nn_qplan *)p)->f;
    begin(p, f, s, qrow_avx512);
    uint8_t *v = values(s);
    const uint16_t *ix = f->idx;
    const __m512i low = _mm512_set1_epi32(0xff);
    for (uint32_t j = (uint32_t)f->n_in; j < f->n; j++) {
        __m512i acc = _mm512_setzero_si512();
        uint32_t i = j - (uint32_t)f->n_in, e = f->row[i + 1];
        for (uint32_t k = f->row[i]; k < e; k += 16) {
            __mmask16 m = TAIL16(e, k);
            __m512i sl = _mm512_cvtepu16_epi32(_mm256_maskz_loadu_epi16(m, ix + k));
            __m512i g = _mm512_mask_i32gather_epi32(_mm512_setzero_si512(), m, sl, v, 1);
            __m512i w = _mm512_cvtepi8_epi32(_mm_maskz_loadu_epi8(m, f->w + k));
            acc = _mm512_add_epi32(acc, _mm512_mullo_epi32(_mm512_and_si512(g, low), w));
        }
        v[j] = neuron_out(f, i, f->fbias[i] + _mm512_reduce_add_epi32(acc));
    }
    finish(f, s, drow);
}

/* 16 sums to 16 table indices u (nn_q_requant, lane-wise). */
VNNI_TARGET static inline __m512i requant16(__m512i acc, __m512i mult, __m512i half, __m128i sh,
                                            __m512i pzp)
{
    const __m512i lo = _mm512_set1_epi64(-256), hi = _mm512_set1_epi64(256);
    __m512i ev = _mm512_mul_epi32(acc, mult);
    __m512i od = _mm512_mul_epi32(_mm512_srli_epi64(acc, 32), mult);
    ev = _mm512_max_epi64(_mm512_min_epi64(_mm512_sra_epi64(_mm512_add_epi64(ev, half), sh), hi),
                          lo);
    od = _mm512_max_epi64(_mm512_min_epi64(_mm512_sra_epi64(_mm512_add_epi64(od, half), sh), hi),
                          lo);
    __m512i r = _mm512_mask_blend_epi32(0xAAAA, ev, _mm512_slli_epi64(od, 32));
    r = _mm512_add_epi32(r, pzp);
    r = _mm512_max_epi32(_mm512_min_epi32(r, _mm512_set1_epi32(127)), _mm512_set1_epi32(-128));
    return _mm512_add_epi32(r, _mm512_set1_epi32(128));
}

/* Samples [b0, b0 + 64) of neuron j: 4 edges at a time into 4 sums of 16
 * samples. Sum m, lane 4i + r holds sample 16i + 4m + r (the order the byte
 * and word interleaves leave); the bytes are put back in order at the end. */
VNNI_TARGET static void block_vnni(const struct nn_qflat *f, uint8_t *v, size_t st, uint32_t j,
                                   size_t b0)
{
    uint32_t i = j - (uint32_t)f->n_in;
    __m512i a0 = _mm512_set1_epi32(f->fbias[i]), a1 = a0, a2 = a0, a3 = a0;
    uint32_t k = f->row[i], e = f->row[i + 1];
    const uint8_t *vb = v + b0;
    while (k < e) {
        uint32_t t = e - k < 4 ? e - k : 4;
        const uint8_t *p0 = vb + (size_t)slot(f, k) * st;
        const uint8_t *p1 = t > 1 ? vb + (size_t)slot(f, k + 1) * st : p0;
        const uint8_t *p2 = t > 2 ? vb + (size_t)slot(f, k + 2) * st : p0;
        const uint8_t *p3 = t > 3 ? vb + (size_t)slot(f, k + 3) * st : p0;
        uint32_t w4 = 0;
        if (t == 4)
            memcpy(&w4, f->w + k, 4);
        else
            memcpy(&w4, f->w + k, t);
        if (k + 8 <= e) /* the next group's rows */
            for (uint32_t q = 4; q < 8; q++)
                _mm_prefetch((const char *)(vb + (size_t)slot(f, k + q) * st), _MM_HINT_T0);
        __m512i wv = _mm512_set1_epi32((int32_t)w4);
        __m512i x0 = _mm512_loadu_si512(p0), x1 = _mm512_loadu_si512(p1);
        __m512i x2 = _mm512_loadu_si512(p2), x3 = _mm512_loadu_si512(p3);
        __m512i l01 = _mm512_unpacklo_epi8(x0, x1), h01 = _mm512_unpackhi_epi8(x0, x1);
        __m512i l23 = _mm512_unpacklo_epi8(x2, x3), h23 = _mm512_unpackhi_epi8(x2, x3);
        a0 = _mm512_dpbusd_epi32(a0, _mm512_unpacklo_epi16(l01, l23), wv);
        a1 = _mm512_dpbusd_epi32(a1, _mm512_unpackhi_epi16(l01, l23), wv);
        a2 = _mm512_dpbusd_epi32(a2, _mm512_unpacklo_epi16(h01, h23), wv);
        a3 = _mm512_dpbusd_epi32(a3, _mm512_unpackhi_epi16(h01, h23), wv);
        k += t;
    }
    unsigned sh = f->shift[i];
    __m512i mult = _mm512_set1_epi64(f->mult[i]);
    __m512i half = _mm512_set1_epi64(sh ? (int64_t)1 << (sh - 1) : 0);
    __m128i shv = _mm_cvtsi32_si128((int)sh);
    __m512i pzp = _mm512_set1_epi32(f->pzp[i]);
    __m512i z = _mm512_castsi128_si512(_mm512_cvtepi32_epi8(requant16(a0, mult, half, shv, pzp)));
    z = _mm512_inserti32x4(z, _mm512_cvtepi32_epi8(requant16(a1, mult, half, shv, pzp)), 1);
    z = _mm512_inserti32x4(z, _mm512_cvtepi32_epi8(requant16(a2, mult, half, shv, pzp)), 2);
    z = _mm512_inserti32x4(z, _mm512_cvtepi32_epi8(requant16(a3, mult, half, shv, pzp)), 3);
    /* sample 16i + 4m + r is byte 16m + 4i + r of z */
    static const uint8_t order[64] __attribute__((aligned(64))) = {
        0,  1,  2,  3,  16, 17, 18, 19, 32, 33, 34, 35, 48, 49, 50, 51, 4,  5,  6,  7,  20, 21,
        22, 23, 36, 37, 38, 39, 52, 53, 54, 55, 8,  9,  10, 11, 24, 25, 26, 27, 40, 41, 42, 43,
        56, 57, 58, 59, 12, 13, 14, 15, 28, 29, 30, 31, 44, 45, 46, 47, 60, 61, 62, 63};
    z = _mm512_permutexvar_epi8(_mm512_load_si512(order), z);
    const uint8_t *tb = f->tables + (size_t)f->tab[i] * 256;
    __m512i t0 = _mm512_loadu_si512(tb), t1 = _mm512_loadu_si512(tb + 64);
    __m512i t2 = _mm512_loadu_si512(tb + 128), t3 = _mm512_loadu_si512(tb + 192);
    __m512i lo = _mm512_permutex2var_epi8(t0, z, t1), hi = _mm512_permutex2var_epi8(t2, z, t3);
    _mm512_storeu_si512(v + (size_t)j * st + b0,
                        _mm512_mask_blend_epi8(_mm512_movepi8_mask(z), lo, hi));
}

VNNI_TARGET static void int8_batch_vnni(const struct nn_plan *p, struct nn_state *s,
                                        const struct nn_op *op)
{
    (void)op;
    const struct nn_qflat *f = &((const struct nn_qplan *)p)->f;
    begin(p, f, s, qrow_avx512);
    uint8_t *v = values(s);
    size_t st = s->stride, full = st / 64 * 64;
    for (uint32_t j = (uint32_t)f->n_in; j < f->n; j++) {
        for (size_t b0 = 0; b0 < full; b0 += 64)
            block_vnni(f, v, st, j, b0);
        if (full < st)
            block_portable(f, v, st, j, full, st - full);
    }
    finish(f, s, drow_avx512);
}

static int has_vnni(void)
{
    return __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
           __builtin_cpu_supports("avx512vl") && __builtin_cpu_supports("avx512vnni") &&
           __builtin_cpu_supports("avx512vbmi");
}

static void int8_one_avx512_entry(const struct nn_plan *p, struct nn_state *s,
                                  const struct nn_op *op)
{
    const struct nn_qflat *f = &((const struct nn_qplan *)p)->f;
    if (has_vnni() && f->idx_bits == 16)
        int8_one_avx512(p, s, op);
    else
        int8_one(p, s, op);
}

/* The avx512f entry: VNNI where the CPU has it (checked on every step: one
 * cached load), else the portable loop. */
static void int8_batch_avx512(const struct nn_plan *p, struct nn_state *s, const struct nn_op *op)
{
    if (has_vnni())
        int8_batch_vnni(p, s, op);
    else
        int8_batch(p, s, op);
}
#else
static int has_vnni(void)
{
    return 0;
}
#define int8_batch_avx512 int8_batch
#define int8_one_avx512_entry int8_one
#endif

int nn_int8_uses_vnni(int target)
{
    return target == NN_TARGET_AVX512F && has_vnni();
}

nn_op_fn *const nn_int8_1[NN_TARGET_COUNT] = {int8_one, int8_one, int8_one_avx512_entry};
nn_op_fn *const nn_int8_b[NN_TARGET_COUNT] = {int8_batch, int8_batch, int8_batch_avx512};

void nn_qstate_read_int8(const struct nn_state *s, int8_t *out)
{
    const struct nn_plan *p = s->plan;
    const uint8_t *cur = values(s);
    for (size_t b = 0; b < s->batch; b++)
        for (size_t k = 0; k < p->n_out; k++)
            out[b * p->n_out + k] =
                (int8_t)((int32_t)cur[(size_t)p->out_map[k] * s->stride + b] - 128);
}
