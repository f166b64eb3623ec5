/* int8_avx512.c -- the AVX-512 kernels of NN_OP_INT8 (target avx512f): the
 * window path at batch 1 (vpexpandb, vpermi2b, vpdpbusd; VBMI2), the VNNI
 * path for batches, and the quantization and dequantization of 16 x 16
 * tiles. Apart from the portable kernels (int8_step.c), which these call
 * for the shared pieces and fall back to on a CPU without the extensions;
 * off x86-64 only nn_int8_has_vnni (0) is left.
 */
#include <string.h>

#include "int8_impl.h"

#if defined(__x86_64__) && defined(__GNUC__)
#include <immintrin.h>

#define VNNI_TARGET __attribute__((target("avx512f,avx512bw,avx512vl,avx512vnni,avx512vbmi")))
/* the batch-1 window path (vpexpandb) only: has_vbmi2 guards it */
#define VBMI2_TARGET                                                                               \
    __attribute__((target("avx512f,avx512bw,avx512vl,avx512vnni,avx512vbmi,avx512vbmi2")))

/* The tail mask of lanes [i, n) of a group of 16. */
#define TAIL16(n, i) ((n) - (i) >= 16 ? (__mmask16)0xFFFF : (__mmask16)((1u << ((n) - (i))) - 1))

/* nn_q_input of 16 values (m: which), lane-wise: the same operations (IEEE
 * division, truncation, exact differences), so the same bits. */
VNNI_TARGET static inline __m128i q16(const float *x, __mmask16 m, float scale, int32_t zp)
{
    const __m512 lo = _mm512_set1_ps(-1000.0f), hi = _mm512_set1_ps(1000.0f);
    const __m512i one = _mm512_set1_epi32(1);
    __m512 t = _mm512_div_ps(_mm512_maskz_loadu_ps(m, x), _mm512_set1_ps(scale));
    t = _mm512_maskz_mov_ps(_mm512_cmp_ps_mask(t, t, _CMP_ORD_Q), t); /* NaN: 0 */
    t = _mm512_min_ps(_mm512_max_ps(t, lo), hi);
    __m512 r = _mm512_roundscale_ps(t, _MM_FROUND_TO_ZERO | _MM_FROUND_NO_EXC);
    __m512 fr = _mm512_sub_ps(t, r);
    __m512i q = _mm512_cvttps_epi32(r);
    q = _mm512_mask_add_epi32(q, _mm512_cmp_ps_mask(fr, _mm512_set1_ps(0.5f), _CMP_GE_OQ), q, one);
    q = _mm512_mask_sub_epi32(q, _mm512_cmp_ps_mask(fr, _mm512_set1_ps(-0.5f), _CMP_LE_OQ), q, one);
    q = _mm512_add_epi32(q, _mm512_set1_epi32(zp));
    q = _mm512_max_epi32(_mm512_min_epi32(q, _mm512_set1_epi32(127)), _mm512_set1_epi32(-128));
    return _mm512_cvtepi32_epi8(_mm512_add_epi32(q, _mm512_set1_epi32(128)));
}

VNNI_TARGET static void qrow_avx512(const float *x, size_t n, uint8_t *u, float scale, int32_t zp)
{
    for (size_t i = 0; i < n; i += 16) {
        __mmask16 m = TAIL16(n, i);
        _mm_mask_storeu_epi8(u + i, m, q16(x + i, m, scale, zp));
    }
}

/* Rows r[0..16) of 16 bytes to columns, in place. */
VNNI_TARGET static inline __attribute__((always_inline)) void transpose16(__m128i r[16])
{
    __m128i t[16];
    for (int i = 0; i < 8; i++) {
        t[i] = _mm_unpacklo_epi8(r[2 * i], r[2 * i + 1]);
        t[i + 8] = _mm_unpackhi_epi8(r[2 * i], r[2 * i + 1]);
    }
    for (int i = 0; i < 4; i++) {
        r[i] = _mm_unpacklo_epi16(t[2 * i], t[2 * i + 1]);
        r[i + 4] = _mm_unpackhi_epi16(t[2 * i], t[2 * i + 1]);
        r[i + 8] = _mm_unpacklo_epi16(t[2 * i + 8], t[2 * i + 9]);
        r[i + 12] = _mm_unpackhi_epi16(t[2 * i + 8], t[2 * i + 9]);
    }
    for (int i = 0; i < 8; i++) {
        t[i] = _mm_unpacklo_epi32(r[2 * i], r[2 * i + 1]);
        t[i + 8] = _mm_unpackhi_epi32(r[2 * i], r[2 * i + 1]);
    }
    for (int i = 0; i < 4; i++) {
        r[4 * i] = _mm_unpacklo_epi64(t[2 * i], t[2 * i + 1]);
        r[4 * i + 1] = _mm_unpackhi_epi64(t[2 * i], t[2 * i + 1]);
        r[4 * i + 2] = _mm_unpacklo_epi64(t[2 * i + 8], t[2 * i + 9]);
        r[4 * i + 3] = _mm_unpackhi_epi64(t[2 * i + 8], t[2 * i + 9]);
    }
}

/* qcols with tiles of 16 x 16 quantized a row at a time and transposed in
 * registers; the edges of the tiling value by value. */
VNNI_TARGET static void qcols_avx512(const float *in, size_t n_in, size_t batch, size_t st,
                                     uint8_t *u, float scale, int32_t zp)
{
    size_t bf = batch / 16 * 16, kf = n_in / 16 * 16;
    for (size_t b0 = 0; b0 < bf; b0 += 16)
        for (size_t k0 = 0; k0 < kf; k0 += 16) {
            __m128i r[16];
            for (size_t b = 0; b < 16; b++)
                r[b] = q16(in + (b0 + b) * n_in + k0, 0xFFFF, scale, zp);
            transpose16(r);
            for (size_t k = 0; k < 16; k++)
                _mm_storeu_si128((__m128i *)(void *)(u + (k0 + k) * st + b0), r[k]);
        }
    for (size_t b = 0; b < batch; b++)
        for (size_t k = b < bf ? kf : 0; k < n_in; k++)
            u[k * st + b] = nn_q_input(in[b * n_in + k], scale, zp);
}

/* The outputs out[batch][n_out] from the columns u[out_map[k] * st + b]:
 * tiles of 16 x 16 transposed in registers and dequantized as drow does
 * (the same bits), the edges of the tiling value by value. */
VNNI_TARGET void nn_int8_dcols_avx512(const uint8_t *u, const uint32_t *out_map, size_t n_out,
                                      size_t batch, size_t st, float *out, float scale, int32_t zp)
{
    size_t bf = batch / 16 * 16, kf = n_out / 16 * 16;
    const __m512 sc = _mm512_set1_ps(scale);
    const __m512i off = _mm512_set1_epi32(128 + zp);
    for (size_t b0 = 0; b0 < bf; b0 += 16)
        for (size_t k0 = 0; k0 < kf; k0 += 16) {
            __m128i r[16];
            for (size_t k = 0; k < 16; k++)
                r[k] =
                    _mm_loadu_si128((const __m128i *)(const void *)(u + out_map[k0 + k] * st + b0));
            transpose16(r);
            for (size_t b = 0; b < 16; b++) {
                __m512 d = _mm512_cvtepi32_ps(_mm512_sub_epi32(_mm512_cvtepu8_epi32(r[b]), off));
                _mm512_storeu_ps(out + (b0 + b) * n_out + k0, _mm512_mul_ps(d, sc));
            }
        }
    for (size_t b = 0; b < batch; b++)
        for (size_t k = b < bf ? kf : 0; k < n_out; k++)
            out[b * n_out + k] =
                (float)((int32_t)u[(size_t)out_map[k] * st + b] - 128 - zp) * scale;
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

/* The requantization of 16 lanes, each with its own multiplier, shift (as
 * 32-bit lanes) and zero point, split for 64-bit lanes: even lanes (the low
 * dword of each qword) and odd ones. */
struct rq16 {
    __m512i mult, she, sho, hale, halo, pzp;
};

VNNI_TARGET static inline struct rq16 rq16_make(__m512i mult, __m512i sh, __m512i pzp)
{
    const __m512i one = _mm512_set1_epi64(1), low32 = _mm512_set1_epi64(0xffffffff);
    struct rq16 q = {mult, _mm512_and_si512(sh, low32), _mm512_srli_epi64(sh, 32), one, one, pzp};
    /* 2^(sh - 1), 0 for sh = 0 (a count past 63 shifts everything out) */
    q.hale = _mm512_sllv_epi64(one, _mm512_sub_epi64(q.she, one));
    q.halo = _mm512_sllv_epi64(one, _mm512_sub_epi64(q.sho, one));
    return q;
}

/* 16 sums to 16 table indices u (nn_q_requant, lane-wise). */
VNNI_TARGET static inline __m512i rq16_apply(const struct rq16 *q, __m512i acc)
{
    const __m512i lo = _mm512_set1_epi64(-256), hi = _mm512_set1_epi64(256);
    __m512i ev = _mm512_mul_epi32(acc, q->mult);
    __m512i od = _mm512_mul_epi32(_mm512_srli_epi64(acc, 32), _mm512_srli_epi64(q->mult, 32));
    ev = _mm512_add_epi64(ev, q->hale);
    od = _mm512_add_epi64(od, q->halo);
    ev = _mm512_max_epi64(_mm512_min_epi64(_mm512_srav_epi64(ev, q->she), hi), lo);
    od = _mm512_max_epi64(_mm512_min_epi64(_mm512_srav_epi64(od, q->sho), hi), lo);
    __m512i r = _mm512_mask_blend_epi32(0xAAAA, ev, _mm512_slli_epi64(od, 32));
    r = _mm512_add_epi32(r, q->pzp);
    r = _mm512_max_epi32(_mm512_min_epi32(r, _mm512_set1_epi32(127)), _mm512_set1_epi32(-128));
    return _mm512_add_epi32(r, _mm512_set1_epi32(128));
}

/* One step of an entry: the edges of mask m (a lane's in its dword, from
 * its low byte) expanded from e on, their values looked up in the window
 * t (offset bit 7 picks the half) and multiplied into acc. */
VBMI2_TARGET static inline __m512i window_step(__m512i acc, __mmask64 m, const uint8_t *off,
                                               const int8_t *w, __m512i t0, __m512i t1, __m512i t2,
                                               __m512i t3)
{
    __m512i io = _mm512_loadu_si512(off), wo = _mm512_loadu_si512(w);
    __asm__("" : "+v"(io), "+v"(wo)); /* the register form of vpexpandb */
    __m512i iv = _mm512_maskz_expand_epi8(m, io);
    __m512i wv = _mm512_maskz_expand_epi8(m, wo);
    __m512i lo = _mm512_permutex2var_epi8(t0, iv, t1);
    __m512i hi = _mm512_permutex2var_epi8(t2, iv, t3);
    return _mm512_dpbusd_epi32(acc, _mm512_mask_blend_epi8(_mm512_movepi8_mask(iv), lo, hi), wv);
}

/* Batch 1: a chunk at a time; per entry its window's 256 values in four
 * registers, and per step the edges (up to 4 of each of the 16 neurons, a
 * neuron's in its dword) expanded from the stream into place, looked up
 * with vpermi2b and multiplied with vpdpbusd; then the 16 sums requantized
 * and looked up in their tables together. The step masks come from the
 * entry's counts: lane l's byte r is an edge of step h if r + 4 h < count. */
VBMI2_TARGET static void int8_one_avx512(const struct nn_plan *p, struct nn_state *s,
                                         const struct nn_op *op)
{
    (void)op;
    const struct nn_qplan *qp = (const struct nn_qplan *)p;
    const struct nn_qflat *f = &qp->f;
    nn_int8_begin(p, f, s, qrow_avx512, qcols_avx512);
    if (qp->n_chans)
        nn_qconv_run(qp, s);
    uint8_t *v = values(s);
    size_t c = 0;
    /* byte B of the counts vector: bits 3 (B / 4) of the counts (its lane's) */
    uint8_t cs[64], rp[64];
    for (int b = 0; b < 64; b++) {
        cs[b] = (uint8_t)(3 * (b / 4));
        rp[b] = (uint8_t)(b % 4);
    }
    const __m512i ctrl = _mm512_loadu_si512(cs), r0 = _mm512_loadu_si512(rp);
    const __m512i r4 = _mm512_add_epi8(r0, _mm512_set1_epi8(4)), seven = _mm512_set1_epi8(7);
    for (size_t l = 1; l < f->n_layers; l++)
        for (uint32_t j0 = f->lstart[l]; j0 < qp->lend[l]; j0 += CHUNK, c++) {
            uint32_t lanes = chunk_lanes(j0, qp->lend[l]), i0 = j0 - (uint32_t)f->n_in;
            __mmask16 m = (__mmask16)((1u << lanes) - 1);
            /* two sums, entries alternating: vpdpbusd's latency is not a chain */
            __m512i acc = _mm512_maskz_loadu_epi32(m, f->fbias + i0), acc2 = _mm512_setzero_si512();
            uint32_t e = qp->cedge[c];
            size_t win = 0;
            for (uint32_t k = qp->cent[c]; k < qp->cent[c + 1]; k++) {
                uint64_t x = entry(qp->ent, k);
                win += x & 0xff;
                /* a window past the values reads the state's next bytes (at least
                 * WIN: state_extra), never an edge's */
                const uint8_t *vb = v + win * WIN;
                __m512i t0 = _mm512_loadu_si512(vb), t1 = _mm512_loadu_si512(vb + 64);
                __m512i t2 = _mm512_loadu_si512(vb + 128), t3 = _mm512_loadu_si512(vb + 192);
                __m512i cb = _mm512_and_si512(
                    _mm512_multishift_epi64_epi8(ctrl, _mm512_set1_epi64((long long)(x >> 8))),
                    seven);
                __mmask64 m0 = _mm512_cmplt_epu8_mask(r0, cb), m1 = _mm512_cmplt_epu8_mask(r4, cb);
                __m512i a = window_step(acc2, m0, qp->off + e, f->w + e, t0, t1, t2, t3);
                e += (uint32_t)__builtin_popcountll(m0);
                if (m1) {
                    a = window_step(a, m1, qp->off + e, f->w + e, t0, t1, t2, t3);
                    e += (uint32_t)__builtin_popcountll(m1);
                }
                acc2 = acc;
                acc = a;
            }
            acc = _mm512_add_epi32(acc, acc2);
            __m512i mult = _mm512_maskz_loadu_epi32(m, f->mult + i0);
            __m512i sh = _mm512_cvtepu8_epi32(_mm_maskz_loadu_epi8(m, f->shift + i0));
            __m512i pzp = _mm512_cvtepi8_epi32(_mm_maskz_loadu_epi8(m, f->pzp + i0));
            struct rq16 rq = rq16_make(mult, sh, pzp);
            __m512i u = rq16_apply(&rq, acc);
            __m512i tab = _mm512_cvtepu16_epi32(_mm256_maskz_loadu_epi16(m, f->tab + i0));
            if (_mm512_mask_cmpeq_epi32_mask(m, tab, _mm512_set1_epi32(f->tab[i0])) == m) {
                /* one table (the common case): looked up in registers */
                const uint8_t *tb = f->tables + (size_t)f->tab[i0] * 256;
                __m512i z = _mm512_castsi128_si512(_mm512_cvtepi32_epi8(u));
                __m512i lo = _mm512_permutex2var_epi8(_mm512_loadu_si512(tb), z,
                                                      _mm512_loadu_si512(tb + 64));
                __m512i hi = _mm512_permutex2var_epi8(_mm512_loadu_si512(tb + 128), z,
                                                      _mm512_loadu_si512(tb + 192));
                __m512i o = _mm512_mask_blend_epi8(_mm512_movepi8_mask(z), lo, hi);
                _mm_mask_storeu_epi8(v + j0, m, _mm512_castsi512_si128(o));
            } else {
                __m512i at = _mm512_add_epi32(_mm512_slli_epi32(tab, 8), u);
                __m512i out =
                    _mm512_mask_i32gather_epi32(_mm512_setzero_si512(), m, at, f->tables, 1);
                _mm512_mask_cvtepi32_storeu_epi8(v + j0, m, out);
            }
        }
    finish(f, s, drow);
}

/* Samples [b0, b0 + 64) of neuron j: 4 edges at a time into 4 sums of 16
 * samples. Sum m, lane 4i + r holds sample 16i + 4m + r (the order the byte
 * and word interleaves leave); the bytes are put back in order at the end.
 * Its edges: slot[0..len), w[0..len), len a multiple of 4 (lists_of pads). */
VNNI_TARGET static void block_vnni(const struct nn_qflat *f, uint8_t *v, size_t st, uint32_t j,
                                   const uint32_t *slot, const int8_t *w, uint32_t len, size_t b0)
{
    uint32_t i = j - (uint32_t)f->n_in;
    __m512i a0 = _mm512_set1_epi32(f->fbias[i]), a1 = a0, a2 = a0, a3 = a0;
    const uint8_t *vb = v + b0;
    for (uint32_t k = 0; k < len; k += 4) {
        const uint8_t *p0 = vb + (size_t)slot[k] * st, *p1 = vb + (size_t)slot[k + 1] * st;
        const uint8_t *p2 = vb + (size_t)slot[k + 2] * st, *p3 = vb + (size_t)slot[k + 3] * st;
        uint32_t w4;
        memcpy(&w4, w + k, sizeof w4);
        __m512i wv = _mm512_set1_epi32((int32_t)w4);
        __m512i x0 = _mm512_loadu_si512(p0), x1 = _mm512_loadu_si512(p1);
        __m512i x2 = _mm512_loadu_si512(p2), x3 = _mm512_loadu_si512(p3);
        __m512i l01 = _mm512_unpacklo_epi8(x0, x1), h01 = _mm512_unpackhi_epi8(x0, x1);
        __m512i l23 = _mm512_unpacklo_epi8(x2, x3), h23 = _mm512_unpackhi_epi8(x2, x3);
        a0 = _mm512_dpbusd_epi32(a0, _mm512_unpacklo_epi16(l01, l23), wv);
        a1 = _mm512_dpbusd_epi32(a1, _mm512_unpackhi_epi16(l01, l23), wv);
        a2 = _mm512_dpbusd_epi32(a2, _mm512_unpacklo_epi16(h01, h23), wv);
        a3 = _mm512_dpbusd_epi32(a3, _mm512_unpackhi_epi16(h01, h23), wv);
    }
    struct rq16 rq = rq16_make(_mm512_set1_epi32(f->mult[i]), _mm512_set1_epi32(f->shift[i]),
                               _mm512_set1_epi32(f->pzp[i]));
    __m512i z = _mm512_castsi128_si512(_mm512_cvtepi32_epi8(rq16_apply(&rq, a0)));
    z = _mm512_inserti32x4(z, _mm512_cvtepi32_epi8(rq16_apply(&rq, a1)), 1);
    z = _mm512_inserti32x4(z, _mm512_cvtepi32_epi8(rq16_apply(&rq, a2)), 2);
    z = _mm512_inserti32x4(z, _mm512_cvtepi32_epi8(rq16_apply(&rq, a3)), 3);
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
    const struct nn_qplan *qp = (const struct nn_qplan *)p;
    const struct nn_qflat *f = &qp->f;
    struct nn_int8_lists g = nn_int8_lists(qp, s);
    nn_int8_begin(p, f, s, qrow_avx512, qcols_avx512);
    if (qp->n_chans)
        nn_qconv_run(qp, s);
    uint8_t *v = values(s);
    size_t st = s->stride, full = st / 64 * 64;
    for (size_t l = 1; l < f->n_layers; l++)
        for (uint32_t j = f->lstart[l]; j < qp->lend[l]; j++) {
            uint32_t i = j - (uint32_t)f->n_in, k = g.start[i], len = g.start[i + 1] - k;
            for (size_t b0 = 0; b0 < full; b0 += 64)
                block_vnni(f, v, st, j, g.slot + k, g.w + k, len, b0);
            if (full < st)
                block_portable(f, v, st, j, g.slot + k, g.w + k, len, full, st - full);
        }
    finish(f, s, drow_avx512);
}

int nn_int8_has_vnni(void)
{
    return __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
           __builtin_cpu_supports("avx512vl") && __builtin_cpu_supports("avx512vnni") &&
           __builtin_cpu_supports("avx512vbmi");
}

void nn_int8_one_avx512f(const struct nn_plan *p, struct nn_state *s, const struct nn_op *op)
{
    if (nn_int8_has_vnni() && __builtin_cpu_supports("avx512vbmi2"))
        int8_one_avx512(p, s, op);
    else
        nn_int8_one(p, s, op);
}

/* The avx512f entry: VNNI where the CPU has it (checked on every step: one
 * cached load), else the portable loop. */
void nn_int8_batch_avx512f(const struct nn_plan *p, struct nn_state *s, const struct nn_op *op)
{
    if (nn_int8_has_vnni())
        int8_batch_vnni(p, s, op);
    else
        nn_int8_batch(p, s, op);
}
#else
int nn_int8_has_vnni(void)
{
    return 0;
}
#endif
