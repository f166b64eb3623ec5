/* gather_floor.h -- what this machine allows on the 16384 x 16384, 1 % row.
 *
 * Outside the engine: a few ways of computing y = W x for one random sparse
 * layer, each written as plainly as it can be, to measure how fast a gather
 * kernel can go on this CPU, whatever the engine does. If the best of them
 * is still short of a target, the target is out of reach here for any kernel
 * of this kind, and that is worth knowing before tuning the engine further.
 *
 *   - sell:    slices of 16 rows (rows sorted by length), entry k of the 16
 *              rows side by side, so that one hardware gather (AVX-512) reads
 *              16 inputs and there is no horizontal sum;
 *   - blocked: the same, with the columns cut into blocks of 4096 (16 KB of
 *              x, which stays in L1), each block with its own row order (no
 *              padding), slice sums added into y; one version with hardware
 *              gathers, one with 16 scalar loads per vector;
 *   - stream:  the plan's 6 bytes per connection read without any gather
 *              (how fast the plan alone streams from where it sits);
 *   - gathers: the gathers alone, from a 16 KB x (L1) with indices that stay
 *              in L1 (how fast this CPU gathers at best), by hardware gathers
 *              and by scalar loads.
 * Each kernel's y is checked against a plain double-precision loop, so that a
 * broken kernel cannot report a floor. Included by bench_nn.c only.
 */
#ifndef TREVO_GATHER_FLOOR_H
#define TREVO_GATHER_FLOOR_H

#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#if defined(__x86_64__) && defined(__GNUC__)
#include <immintrin.h>
#define GF_X86 1
#define GF_AVX512 __attribute__((target("avx512f")))
#else
#define GF_X86 0
#define GF_AVX512
#endif

#define GF_BLOCK 4096 /* columns per block: 16 KB of x */
#define GF_LANES 16

typedef float gf_v16 __attribute__((vector_size(64)));

/* A CSR layer (rows sorted by column) and its slice forms. */
struct gf_layer {
    uint32_t n;
    size_t nnz;
    uint32_t *row; /* [n + 1] */
    uint16_t *col; /* [nnz] */
    float *w;      /* [nnz] */
    float *x, *y;  /* [n] */
    double *ref;   /* [n] the plain loop's y */
    /* sell: n / 16 slices over rows in order `order` */
    uint32_t *s_off, *s_len, *order;
    uint16_t *s_col;
    float *s_w;
    size_t s_n;
    /* blocked: n / 16 slices per block, block b's rows in b_order[b * n ..] */
    uint32_t *b_off, *b_len, *b_order;
    uint16_t *b_col;
    float *b_w;
    size_t b_n;
};

static uint64_t gf_state = 0x9e3779b97f4a7c15u;
static uint64_t gf_next(void)
{
    gf_state ^= gf_state << 13;
    gf_state ^= gf_state >> 7;
    gf_state ^= gf_state << 17;
    return gf_state;
}
static double gf_unit(void) /* (0, 1] */
{
    return ((double)(gf_next() >> 11) + 1.0) / 9007199254740992.0;
}

static double gf_now(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

static void *gf_alloc(size_t bytes)
{
    void *p = aligned_alloc(64, (bytes + 127) & ~(size_t)63);
    if (!p) {
        fprintf(stderr, "bench_nn: out of memory (%zu bytes)\n", bytes);
        exit(1);
    }
    return p;
}

/* Rows of `len` (entries) in descending order of len, by counting. */
static void gf_sort_by_len(const uint32_t *len, uint32_t n, uint32_t *order)
{
    uint32_t max = 0;
    for (uint32_t r = 0; r < n; r++)
        max = len[r] > max ? len[r] : max;
    uint32_t *start = calloc((size_t)max + 2, sizeof *start);
    if (!start) {
        fprintf(stderr, "bench_nn: out of memory\n");
        exit(1);
    }
    for (uint32_t r = 0; r < n; r++)
        start[max - len[r] + 1]++;
    for (uint32_t i = 1; i <= max + 1; i++)
        start[i] += start[i - 1];
    for (uint32_t r = 0; r < n; r++)
        order[start[max - len[r]]++] = r;
    free(start);
}

/* Slices of 16 rows of `order`: row order[16 s + l]'s entries [first, first
 * + len) of (col, w), at offset[s] + 16 k + l; padding reads column 0 with
 * weight 0. Returns the entries written. */
static size_t gf_slices(const struct gf_layer *L, const uint32_t *order, const uint32_t *first,
                        const uint32_t *len, uint16_t col_base, uint32_t *offset, uint32_t *slen,
                        uint16_t *col, float *w, size_t at, size_t cap)
{
    for (uint32_t s = 0; s < L->n / GF_LANES; s++) {
        uint32_t m = 0;
        for (int l = 0; l < GF_LANES; l++)
            m = len[order[s * GF_LANES + l]] > m ? len[order[s * GF_LANES + l]] : m;
        if (at + (size_t)m * GF_LANES > cap) {
            fprintf(stderr, "bench_nn: slices need more than %zu entries\n", cap);
            exit(1);
        }
        offset[s] = (uint32_t)at;
        slen[s] = m;
        for (uint32_t k = 0; k < m; k++)
            for (int l = 0; l < GF_LANES; l++, at++) {
                uint32_t r = order[s * GF_LANES + l];
                int real = k < len[r];
                col[at] = real ? (uint16_t)(L->col[first[r] + k] - col_base) : 0;
                w[at] = real ? L->w[first[r] + k] : 0.0f;
            }
    }
    return at;
}

/* A random n x n layer of the given density (n a multiple of GF_BLOCK), its
 * reference product and its slice forms. */
static void gf_build(struct gf_layer *L, uint32_t n, double density)
{
    memset(L, 0, sizeof *L);
    L->n = n;
    size_t cap = (size_t)((double)n * n * density * 1.1) + 1024;
    L->row = gf_alloc((n + 1) * sizeof *L->row);
    L->col = gf_alloc(cap * sizeof *L->col);
    L->w = gf_alloc(cap * sizeof *L->w);
    L->x = gf_alloc(n * sizeof *L->x);
    L->y = gf_alloc(n * sizeof *L->y);
    L->ref = gf_alloc(n * sizeof *L->ref);
    double lq = log1p(-density);
    for (uint32_t r = 0; r < n; r++) { /* geometric gaps between columns */
        L->row[r] = (uint32_t)L->nnz;
        for (double c = -1.0;;) {
            c += 1.0 + floor(log(gf_unit()) / lq);
            if (c >= n || L->nnz == cap)
                break;
            L->col[L->nnz] = (uint16_t)c;
            L->w[L->nnz++] = (float)(2.0 * gf_unit() - 1.0);
        }
    }
    L->row[n] = (uint32_t)L->nnz;
    for (uint32_t i = 0; i < n; i++)
        L->x[i] = (float)(2.0 * gf_unit() - 1.0);
    for (uint32_t r = 0; r < n; r++) {
        double s = 0;
        for (uint32_t k = L->row[r]; k < L->row[r + 1]; k++)
            s += (double)L->w[k] * L->x[L->col[k]];
        L->ref[r] = s;
    }

    uint32_t *len = gf_alloc(n * sizeof *len), *first = gf_alloc(n * sizeof *first);
    size_t pad_cap = L->nnz + (size_t)n * 8 + 1024; /* slack: a slice pads to its longest row */
    L->order = gf_alloc(n * sizeof *L->order);
    L->s_off = gf_alloc(n / GF_LANES * sizeof *L->s_off);
    L->s_len = gf_alloc(n / GF_LANES * sizeof *L->s_len);
    L->s_col = gf_alloc(pad_cap * sizeof *L->s_col);
    L->s_w = gf_alloc(pad_cap * sizeof *L->s_w);
    for (uint32_t r = 0; r < n; r++) {
        first[r] = L->row[r];
        len[r] = L->row[r + 1] - L->row[r];
    }
    gf_sort_by_len(len, n, L->order);
    L->s_n =
        gf_slices(L, L->order, first, len, 0, L->s_off, L->s_len, L->s_col, L->s_w, 0, pad_cap);

    uint32_t nb = n / GF_BLOCK, ns = n / GF_LANES;
    L->b_order = gf_alloc((size_t)nb * n * sizeof *L->b_order);
    L->b_off = gf_alloc((size_t)nb * ns * sizeof *L->b_off);
    L->b_len = gf_alloc((size_t)nb * ns * sizeof *L->b_len);
    L->b_col = gf_alloc(pad_cap * sizeof *L->b_col);
    L->b_w = gf_alloc(pad_cap * sizeof *L->b_w);
    uint32_t *pos = gf_alloc(n * sizeof *pos);
    memcpy(pos, L->row, n * sizeof *pos);
    for (uint32_t b = 0; b < nb; b++) {
        for (uint32_t r = 0; r < n; r++) { /* row r's entries in block b */
            first[r] = pos[r];
            while (pos[r] < L->row[r + 1] && L->col[pos[r]] < (b + 1) * GF_BLOCK)
                pos[r]++;
            len[r] = pos[r] - first[r];
        }
        gf_sort_by_len(len, n, L->b_order + (size_t)b * n);
        L->b_n = gf_slices(L, L->b_order + (size_t)b * n, first, len, (uint16_t)(b * GF_BLOCK),
                           L->b_off + (size_t)b * ns, L->b_len + (size_t)b * ns, L->b_col, L->b_w,
                           L->b_n, pad_cap);
    }
    free(len);
    free(first);
    free(pos);
}

static void gf_free(struct gf_layer *L)
{
    void *p[] = {L->row,   L->col,   L->w,   L->x,     L->y,     L->ref,     L->s_off, L->s_len,
                 L->order, L->s_col, L->s_w, L->b_off, L->b_len, L->b_order, L->b_col, L->b_w};
    for (size_t i = 0; i < sizeof p / sizeof p[0]; i++)
        free(p[i]);
}

#if GF_X86
/* The 16 sums of the slice of m entries at offset o of (col, w): x read by
 * hardware gathers (hw) or by 16 scalar loads per vector. */
GF_AVX512 static inline __attribute__((always_inline)) gf_v16
gf_slice(const uint16_t *col, const float *w, uint32_t o, uint32_t m, const float *x, int hw)
{
    gf_v16 a = {0};
    for (uint32_t k = 0; k < m; k++, o += GF_LANES) {
        gf_v16 g = {0}, wk;
        if (hw) {
            __m512i i = _mm512_cvtepu16_epi32(_mm256_load_si256((const __m256i *)(col + o)));
            g = (gf_v16)_mm512_i32gather_ps(i, x, 4);
        } else {
            const uint16_t *c = col + o;
            for (int l = 0; l < GF_LANES; l++)
                g[l] = x[c[l]];
        }
        memcpy(&wk, w + o, sizeof wk);
        a += wk * g;
    }
    return a;
}

GF_AVX512 static void gf_sell_hw(struct gf_layer *L)
{
    for (uint32_t s = 0; s < L->n / GF_LANES; s++) {
        gf_v16 a = gf_slice(L->s_col, L->s_w, L->s_off[s], L->s_len[s], L->x, 1);
        for (int l = 0; l < GF_LANES; l++)
            L->y[L->order[s * GF_LANES + l]] = a[l];
    }
}

GF_AVX512 static inline __attribute__((always_inline)) void gf_blocked(struct gf_layer *L, int hw)
{
    uint32_t ns = L->n / GF_LANES;
    memset(L->y, 0, L->n * sizeof *L->y);
    for (uint32_t b = 0; b < L->n / GF_BLOCK; b++) {
        const float *xb = L->x + (size_t)b * GF_BLOCK;
        const uint32_t *order = L->b_order + (size_t)b * L->n;
        for (uint32_t s = 0; s < ns; s++) {
            size_t q = (size_t)b * ns + s;
            gf_v16 a = gf_slice(L->b_col, L->b_w, L->b_off[q], L->b_len[q], xb, hw);
            for (int l = 0; l < GF_LANES; l++)
                L->y[order[s * GF_LANES + l]] += a[l];
        }
    }
}

GF_AVX512 static void gf_blocked_hw(struct gf_layer *L)
{
    gf_blocked(L, 1);
}

GF_AVX512 static void gf_blocked_scalar(struct gf_layer *L)
{
    gf_blocked(L, 0);
}

/* The plan's bytes alone: every weight and index read, nothing gathered. */
GF_AVX512 static void gf_stream(struct gf_layer *L)
{
    __m512 a = _mm512_setzero_ps(), c = a;
    size_t k = 0;
    for (; k + GF_LANES <= L->nnz; k += GF_LANES) {
        __m512i i = _mm512_cvtepu16_epi32(_mm256_loadu_si256((const __m256i *)(L->col + k)));
        a = _mm512_add_ps(a, _mm512_loadu_ps(L->w + k));
        c = _mm512_add_ps(c, _mm512_cvtepi32_ps(i));
    }
    float v[GF_LANES], u[GF_LANES];
    _mm512_storeu_ps(v, a);
    _mm512_storeu_ps(u, c);
    L->y[0] = v[0] + u[0]; /* keeps the loop */
}

/* As many gathers as the layer has connections (rounded up to a multiple of
 * 8192: at most 0.3 % more here), all from 16 KB of x with 16 KB of indices:
 * everything in L1. */
GF_AVX512 static void gf_gathers_l1(struct gf_layer *L)
{
    __m512 a = _mm512_setzero_ps(), c = a;
    const uint16_t *col = L->b_col; /* block 0's entries: columns below 4096 */
    for (size_t k0 = 0; k0 < L->nnz; k0 += 8192)
        for (size_t k = 0; k < 8192; k += 2 * GF_LANES) {
            __m512i i = _mm512_cvtepu16_epi32(_mm256_load_si256((const __m256i *)(col + k)));
            __m512i j =
                _mm512_cvtepu16_epi32(_mm256_load_si256((const __m256i *)(col + k + GF_LANES)));
            a = _mm512_add_ps(a, _mm512_i32gather_ps(i, L->x, 4));
            c = _mm512_add_ps(c, _mm512_i32gather_ps(j, L->x, 4));
        }
    float v[GF_LANES];
    _mm512_storeu_ps(v, _mm512_add_ps(a, c));
    L->y[0] = v[0];
}
/* The same gathers by 16 scalar loads per vector. */
GF_AVX512 static void gf_gathers_l1_scalar(struct gf_layer *L)
{
    gf_v16 a = {0};
    const uint16_t *col = L->b_col;
    for (size_t k0 = 0; k0 < L->nnz; k0 += 8192)
        for (size_t k = 0; k < 8192; k += GF_LANES) {
            gf_v16 g = {0};
            for (int l = 0; l < GF_LANES; l++)
                g[l] = L->x[col[k + l]];
            a += g;
        }
    L->y[0] = a[0];
}
#endif

/* Median time of f over 15 rounds of about 0.02 s each, in ms. */
static double gf_time(void (*f)(struct gf_layer *), struct gf_layer *L)
{
    double t[15];
    f(L);
    for (int r = 0; r < 15; r++) {
        int reps = 0;
        double t0 = gf_now(), t1;
        do {
            f(L);
            reps++;
            t1 = gf_now();
        } while (t1 - t0 < 0.02);
        t[r] = (t1 - t0) / reps;
    }
    for (int i = 1; i < 15; i++)
        for (int j = i; j > 0 && t[j - 1] > t[j]; j--) {
            double x = t[j];
            t[j] = t[j - 1];
            t[j - 1] = x;
        }
    return t[7] * 1e3;
}

/* 1 when f's y matches the plain loop (relative error <= 1e-4). */
static int gf_check(void (*f)(struct gf_layer *), struct gf_layer *L)
{
    f(L);
    for (uint32_t r = 0; r < L->n; r++)
        if (fabs(L->y[r] - L->ref[r]) > 1e-4 * (1.0 + fabs(L->ref[r])))
            return 0;
    return 1;
}

/* The table: each kernel's time on the 16384 x 16384, 1 % layer against the
 * dense time of the engine's row (dense_ms, same make bench run); target: the
 * row's ratio target. */
static void gather_floor_table(double dense_ms, double target)
{
    printf("\n### What this machine allows on the 16384², 1 %% row (kernels outside the "
           "engine)\n\n");
#if GF_X86
    if (!__builtin_cpu_supports("avx512f")) {
        printf("Not measured: these kernels need AVX-512.\n");
        return;
    }
    struct gf_layer L;
    gf_build(&L, 16384, 0.01);
    double conns = (double)L.nnz;
    printf("Plain kernels for y = W x on a random 16384 x 16384 layer of density 1 %% "
           "(%zu connections; tests/bench/gather_floor.h), one core, median of 15 rounds. "
           "The ratio is against the sgemv median of the row above (%.3f ms); %.0f x "
           "needs %.3f ns per connection. Each kernel's result is checked against a "
           "plain loop in double.\n\n",
           L.nnz, dense_ms, target, dense_ms * 1e6 / target / conns);
    char sell_b[32], blk_b[32];
    snprintf(sell_b, sizeof sell_b, "%.2f", 6.0 * (double)L.s_n / conns);
    snprintf(blk_b, sizeof blk_b, "%.2f", 6.0 * (double)L.b_n / conns);
    printf("| kernel | plan bytes read per connection | time | ns per connection | vs sgemv "
           "|\n");
    printf("|---|---|---|---|---|\n");
    struct {
        const char *name;
        void (*f)(struct gf_layer *);
        const char *bytes;
        int checked;
    } k[] = {
        {"slices of 16 rows, hardware gather (x: 64 KB, in L2)", gf_sell_hw, sell_b, 1},
        {"column blocks of 4096, hardware gather (x: 16 KB per block, in L1)", gf_blocked_hw, blk_b,
         1},
        {"column blocks of 4096, 16 scalar loads per vector", gf_blocked_scalar, blk_b, 1},
        {"the plan streamed alone, no gather (a floor, not a kernel)", gf_stream, "6.00", 0},
        {"the gathers alone (hardware), x and indices in L1 (a floor)", gf_gathers_l1,
         "none (16 KB reused)", 0},
        {"the gathers alone (scalar loads), x and indices in L1 (a floor)", gf_gathers_l1_scalar,
         "none (16 KB reused)", 0},
    };
    for (size_t i = 0; i < sizeof k / sizeof k[0]; i++) {
        if (k[i].checked && !gf_check(k[i].f, &L)) {
            printf("| %s | | wrong result: not timed | | |\n", k[i].name);
            continue;
        }
        double ms = gf_time(k[i].f, &L);
        printf("| %s | %s | %.4f ms | %.3f | %.1f x |\n", k[i].name, k[i].bytes, ms,
               ms * 1e6 / conns, dense_ms / ms);
    }
    gf_free(&L);
#else
    (void)dense_ms;
    (void)target;
    printf("Not measured: these kernels are written for x86-64.\n");
#endif
}

/* ---- long-range edges: the tiled plan's scatter-add, alone ------------- */

#define GF_TILE_ENTRIES 4561109 /* the 10^7 graph's tiled edges (make bench, 2026-11-21) */
#define GF_TILE 163000          /* entries per tile: about 8 chunks of 65,536 */

struct gf_tiles {
    uint32_t *sd; /* source << 16 | destination, sorted by source within each tile */
    float *w, *src, *acc;
    uint32_t mask; /* destinations wrap here: 0xffff (256 KB) or 0xfff (16 KB) */
};
static struct gf_tiles gf_t;

static int gf_cmp_u32(const void *a, const void *b)
{
    uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;
    return x < y ? -1 : x > y;
}

/* The loop of the engine's tiles1() (nn/step1.c), on gf_t. */
static void gf_tile_loop(struct gf_layer *unused)
{
    (void)unused;
    float *restrict acc = gf_t.acc;
    const float *restrict src = gf_t.src, *w = gf_t.w;
    const uint32_t *sd = gf_t.sd, m = gf_t.mask;
    for (uint32_t k0 = 0; k0 < GF_TILE_ENTRIES; k0 += 16) {
        __builtin_prefetch(sd + k0 + 256);
        __builtin_prefetch(w + k0 + 256);
        uint32_t k1 = GF_TILE_ENTRIES - k0 > 16 ? k0 + 16 : GF_TILE_ENTRIES;
#pragma GCC unroll 8
        for (uint32_t k = k0; k < k1; k++)
            acc[sd[k] & m] += w[k] * src[sd[k] >> 16];
    }
}

/* What a long-range edge costs in the tiled form, against the 10^7 row. */
static void tile_floor_table(void)
{
    printf("\n### What this machine allows on the time-vs-connections row (long-range edges)"
           "\n\n");
    gf_t.sd = gf_alloc(GF_TILE_ENTRIES * sizeof *gf_t.sd + 1024);
    gf_t.w = gf_alloc(GF_TILE_ENTRIES * sizeof *gf_t.w + 1024);
    gf_t.src = gf_alloc(65536 * sizeof *gf_t.src);
    gf_t.acc = gf_alloc(65536 * sizeof *gf_t.acc);
    for (uint32_t k = 0; k < GF_TILE_ENTRIES; k++) {
        gf_t.sd[k] = (uint32_t)(gf_next() & 0xffffffffu);
        gf_t.w[k] = (float)(gf_unit() * 1e-3);
    }
    for (uint32_t t = 0; t < GF_TILE_ENTRIES; t += GF_TILE) {
        uint32_t n = GF_TILE_ENTRIES - t < GF_TILE ? GF_TILE_ENTRIES - t : GF_TILE;
        qsort(gf_t.sd + t, n, sizeof *gf_t.sd, gf_cmp_u32);
    }
    for (uint32_t i = 0; i < 65536; i++) {
        gf_t.src[i] = (float)gf_unit();
        gf_t.acc[i] = 0.0f;
    }
    printf("The 10^7 graph sends %d of its connections, those whose ends are in different "
           "chunks of 65,536 neurons, through tiles: entries (16-bit source, 16-bit "
           "destination, weight) sorted by source, each adding w x value into an "
           "accumulator. Here is that loop alone (the engine's, tests/bench/gather_floor.h), "
           "on random entries in tiles of %d, one core, median of 15 rounds:\n\n",
           GF_TILE_ENTRIES, GF_TILE);
    printf("| loop | ns per entry | per connection of the 10^7 graph |\n|---|---|---|\n");
    uint32_t masks[] = {0xffff, 0xfff};
    const char *what[] = {"accumulators of a 65,536-neuron chunk (256 KB, L2), as in the engine",
                          "the same with accumulators of 4,096 neurons (16 KB, L1)"};
    for (int i = 0; i < 2; i++) {
        gf_t.mask = masks[i];
        double ms = gf_time(gf_tile_loop, NULL);
        double ns = ms * 1e6 / GF_TILE_ENTRIES;
        printf("| %s | %.3f | %.3f ns |\n", what[i], ns, ns * GF_TILE_ENTRIES / 9999861.0);
    }
    free(gf_t.sd);
    free(gf_t.w);
    free(gf_t.src);
    free(gf_t.acc);
}

#endif
