/* conv.c -- the sparse convolution layer (conv.h).
 *
 * The input is first copied into a padded, phase-split form: for stride s,
 * s * s grids per input channel ("planes"), plane (ry, rx) of channel ci
 * holding the padded input's pixels (u s + ry, v s + rx), rows of wq
 * pixels, each pixel `batch` floats, zeros where the input has none. In it a
 * coefficient (ky, kx) of input channel ci reads plane (ky % s, kx % s) at a
 * fixed shift, (ky / s) rows and (kx / s) pixels, for every output pixel.
 * The output is computed in the same row width wq (out_w pixels and a few
 * that are thrown away), so that, for every coefficient, the whole output
 * map is one contiguous run of floats and its input one contiguous run at a
 * fixed offset: no border, stride or padding test in the inner loop.
 *
 * The kernel (gather_*) walks the output in blocks of CONV_J floats kept in
 * registers; for each block, every output channel sums w * (its input run)
 * over its coefficients, in list order, then stores once. The blocks of the
 * input that one output block reads (in_ch planes, a few rows each) stay in
 * cache while all the output channels use them. Each output float is the sum
 * of its coefficients' products in list order, whatever the target, the
 * batch or the block: results are deterministic.
 *
 * The backward pass uses the same kernel the other way round: dL/dx in the
 * padded phase form is, per plane, the sum over the coefficients reading
 * that plane of w * dL/dy shifted back (the list sorted by plane, perm);
 * dL/dw of a coefficient is one dot product of dL/dy with its input run.
 *
 * At stride 1 with a batch of a multiple of 16 (the batched training case),
 * the direct kernel (direct_*) skips the padded copy: it reads x (and dL/dy
 * for dL/dx) in place, a pixel being whole vectors of 16 lanes, and leaves
 * out the terms whose source is outside the map, tested per row and per
 * vector only in the blocks at the borders. Copying the input and writing
 * the output had made a batch of 64 memory-bound; now each output channel's
 * row is written in one run while the rows it reads stay in L2. The sums
 * are the padded form's less its terms w * 0, which add nothing to a sum
 * that starts at +0: the same bits, for finite weights.
 */
#include "conv_impl.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

struct nn_conv {
    struct nn_conv_shape s;
    size_t out_h, out_w;
    size_t hp, wq;   /* rows and pixels per row of a plane */
    size_t n_planes; /* stride^2 * in_ch */
    size_t n, max_batch;
    int target;
    struct nn_conv_coef *c; /* [n] as given */
    float *w;               /* [n] the weights, list order */
    uint32_t *plane;        /* [n] the plane each coefficient reads */
    uint32_t *pix;          /* [n] its shift in pixels of a plane, (ky/s) wq + kx/s */
    uint32_t *co_start;     /* [out_ch + 1] the list's first coefficient of each output */
    uint32_t *perm;         /* [n] the list sorted by (plane, list order) */
    uint32_t *pl_start;     /* [n_planes + 1] perm's first entry of each plane */
    size_t *off;            /* [n] scratch: offsets of the runs of one call */
    float *wt;              /* [n] scratch: the weights in perm order */
    ptrdiff_t *doff, *ddr;  /* [n] scratch of the direct kernel: offsets, row shifts */
    size_t *dlo, *dhi;      /* [n] its column ranges */
    float *xp;              /* the input planes (also scratch of dw) */
    float *dxp;             /* dL/dx planes */
    float *yp;              /* output / dL/dy maps of wq-pixel rows */
    double *acc;            /* [n] scratch of dw */
    size_t xp_batch;        /* xp's padding is 0 for this batch (0: unknown) */
    size_t yp_batch;        /* yp is 0 outside dL/dy for this batch (0: unknown) */
    size_t bytes;
};

/* ---- checks shared with the reference and the dense layer ------------------ */

int nn_conv_check_shape(const struct nn_conv_shape *s, const char *fn, struct tv_error *err)
{
    if (!s)
        return tv_error_set(err, TV_EINVAL, "%s: no shape (NULL)", fn);
    if (!s->in_ch || !s->out_ch || s->in_ch > 65536 || s->out_ch > 65536)
        return tv_error_set(err, TV_EINVAL,
                            "%s: %zu input and %zu output channels: expected 1..65536 each", fn,
                            s->in_ch, s->out_ch);
    if (!s->in_h || !s->in_w || s->in_h > 65536 || s->in_w > 65536 ||
        s->in_h * s->in_w > ((size_t)1 << 26))
        return tv_error_set(err, TV_EINVAL,
                            "%s: input map %zu x %zu: expected 1..65536 each, at most 2^26 pixels",
                            fn, s->in_h, s->in_w);
    if (!s->k_h || !s->k_w || s->k_h > NN_CONV_MAX_K || s->k_w > NN_CONV_MAX_K)
        return tv_error_set(err, TV_EINVAL, "%s: kernel %zu x %zu: expected 1..%d each", fn, s->k_h,
                            s->k_w, NN_CONV_MAX_K);
    if (!s->stride || s->stride > NN_CONV_MAX_K)
        return tv_error_set(err, TV_EINVAL, "%s: stride %zu: expected 1..%d", fn, s->stride,
                            NN_CONV_MAX_K);
    if (s->pad >= s->k_h || s->pad >= s->k_w)
        return tv_error_set(err, TV_EINVAL,
                            "%s: padding %zu: expected less than the kernel %zu x %zu", fn, s->pad,
                            s->k_h, s->k_w);
    if (!nn_conv_out_h(s) || !nn_conv_out_w(s))
        return tv_error_set(
            err, TV_EINVAL,
            "%s: a %zu x %zu kernel with padding %zu does not fit the %zu x %zu map", fn, s->k_h,
            s->k_w, s->pad, s->in_h, s->in_w);
    return 0;
}

int nn_conv_shape_check(const struct nn_conv_shape *s, struct tv_error *err)
{
    return nn_conv_check_shape(s, "nn_conv_shape_check", err);
}

int nn_conv_check_batch(size_t max_batch, const char *fn, struct tv_error *err)
{
    if (!max_batch || max_batch > 65536)
        return tv_error_set(err, TV_EINVAL, "%s: max_batch %zu: expected 1..65536", fn, max_batch);
    return 0;
}

int nn_conv_coef_cmp(const void *pa, const void *pb)
{
    const struct nn_conv_coef *a = pa, *b = pb;
    if (a->out != b->out)
        return a->out < b->out ? -1 : 1;
    if (a->in != b->in)
        return a->in < b->in ? -1 : 1;
    if (a->ky != b->ky)
        return a->ky < b->ky ? -1 : 1;
    return (a->kx > b->kx) - (a->kx < b->kx);
}

int nn_conv_check_coefs(const struct nn_conv_shape *s, const struct nn_conv_coef *c, size_t n,
                        const char *fn, struct tv_error *err)
{
    if (n && !c)
        return tv_error_set(err, TV_EINVAL, "%s: no coefficients (NULL) for n = %zu", fn, n);
    if (n > UINT32_MAX)
        return tv_error_set(err, TV_EINVAL, "%s: %zu coefficients: at most 2^32 - 1", fn, n);
    for (size_t i = 0; i < n; i++) {
        const struct nn_conv_coef *k = &c[i];
        if (k->out >= s->out_ch || k->in >= s->in_ch)
            return tv_error_set(err, TV_EINVAL,
                                "%s: coefficient %zu: channels %u -> %u out of range (%zu input, "
                                "%zu output channels)",
                                fn, i, k->in, k->out, s->in_ch, s->out_ch);
        if (k->ky >= s->k_h || k->kx >= s->k_w)
            return tv_error_set(err, TV_EINVAL,
                                "%s: coefficient %zu: offset (%u, %u) out of the %zu x %zu kernel",
                                fn, i, k->ky, k->kx, s->k_h, s->k_w);
        if (!isfinite(k->w))
            return tv_error_set(err, TV_EINVAL, "%s: coefficient %zu: weight %g is not finite", fn,
                                i, (double)k->w);
        int o = i ? nn_conv_coef_cmp(&c[i - 1], k) : -1;
        if (o >= 0)
            return tv_error_set(err, TV_EINVAL,
                                "%s: coefficient %zu (%u -> %u at %u, %u) %s coefficient %zu: the "
                                "list must be sorted by (out, in, ky, kx), keys unique",
                                fn, i, k->in, k->out, k->ky, k->kx,
                                o ? "comes after" : "is a duplicate of", i - 1);
    }
    return 0;
}

size_t nn_conv_out_h(const struct nn_conv_shape *s)
{
    if (!s->stride || s->in_h + 2 * s->pad < s->k_h)
        return 0;
    return (s->in_h + 2 * s->pad - s->k_h) / s->stride + 1;
}

size_t nn_conv_out_w(const struct nn_conv_shape *s)
{
    if (!s->stride || s->in_w + 2 * s->pad < s->k_w)
        return 0;
    return (s->in_w + 2 * s->pad - s->k_w) / s->stride + 1;
}

/* ---- the kernels --------------------------------------------------------------- */

/* For each row r < rows, each block of (at most) CONV_J floats j0 < len
 * and each group g < groups:
 *   dst[g gstride + r dstride + j0 ...] = sum over k in [start[g], start[g + 1])
 *                                          of w[k] src[off[k] + r sstride + j0 ...],
 * in order of k. A last block shorter than CONV_J is summed whole (the
 * source has room) and stored in part. */
struct conv_gather {
    const float *src;
    const size_t *off;
    const float *w;
    const uint32_t *start;
    size_t groups, rows, len;
    size_t sstride; /* source floats per row */
    float *dst;
    size_t gstride, dstride; /* destination floats per group, per row */
    size_t cols;             /* columns per pass over the rows (a multiple of CONV_J) */
};

NN_INLINE void gather_body(const struct conv_gather *j)
{
    for (size_t c0 = 0; c0 < j->len; c0 += j->cols)
        for (size_t r = 0; r < j->rows; r++)
            for (size_t j0 = c0; j0 < j->len && j0 < c0 + j->cols; j0 += CONV_J) {
                const float *src = j->src + r * j->sstride + j0;
                float *dst = j->dst + r * j->dstride + j0;
                size_t m = j->len - j0 < CONV_J ? j->len - j0 : CONV_J;
                for (size_t g = 0; g < j->groups; g++) {
                    v16f a[4] = {{0}, {0}, {0}, {0}};
                    for (uint32_t k = j->start[g]; k < j->start[g + 1]; k++) {
                        const float *p = src + j->off[k];
                        float w = j->w[k];
                        a[0] += w * *(const v16fu *)p;
                        a[1] += w * *(const v16fu *)(p + 16);
                        a[2] += w * *(const v16fu *)(p + 32);
                        a[3] += w * *(const v16fu *)(p + 48);
                    }
                    float *q = dst + g * j->gstride;
                    if (m == CONV_J) {
                        *(v16fu *)q = a[0];
                        *(v16fu *)(q + 16) = a[1];
                        *(v16fu *)(q + 32) = a[2];
                        *(v16fu *)(q + 48) = a[3];
                    } else {
                        memcpy(q, a, m * sizeof *q);
                    }
                }
            }
}
CONV_TARGETS(conv_gather, gather_body, struct conv_gather)

/* The direct kernel, for stride 1 and batches of a multiple of 16: reads
 * its source in place, no padded copy. For each row r < rows, block j0 <
 * len (CONV_J floats; len a multiple of 16) and group g < groups:
 *   dst[g gstride + r dstride + j0 + i] = sum over k in [start[g], start[g + 1])
 *                                          of w[k] src[r sstride + off[k] + j0 + i],
 * in order of k, counting only the terms whose source is in the map: row
 * r + dr[k] in [0, src_h) and column j0 + i in [lo[k], hi[k]) (multiples of
 * 16, so that each vector of 16 lanes counts whole or not at all). A term
 * left out is one the padded form would add as w * 0: the same bits. */
struct conv_direct {
    const float *src;
    const ptrdiff_t *off; /* [n] the source channel and the shift, in floats */
    const ptrdiff_t *dr;  /* [n] the row shift */
    const size_t *lo, *hi;
    const float *w;
    const uint32_t *start;
    size_t groups, rows, len;
    size_t src_h, sstride, src_ch; /* source rows, floats per source row, channels */
    ptrdiff_t dr_min, dr_max;      /* over all k: rows r with both in range test none */
    size_t lo_max, hi_min;         /* over all k: blocks within need no column test */
    float *dst;
    size_t gstride, dstride, cols;
};

NN_INLINE void direct_body(const struct conv_direct *j)
{
    for (size_t c0 = 0; c0 < j->len; c0 += j->cols)
        for (size_t r = 0; r < j->rows; r++) {
            ptrdiff_t base = (ptrdiff_t)(r * j->sstride), rr = (ptrdiff_t)r;
            int rows_ok = rr + j->dr_min >= 0 && rr + j->dr_max < (ptrdiff_t)j->src_h;
            for (size_t g = 0; g < j->groups; g++) {
                /* the source row that the next output row is the first to
                 * read, a share of its channels per group: at a batch of 64
                 * the maps do not stay in cache between calls, and the
                 * hardware's prefetch does not follow this many streams */
                ptrdiff_t nr = rr + 1 + j->dr_max;
                if (nr >= 0 && nr < (ptrdiff_t)j->src_h)
                    for (size_t c = g * j->src_ch / j->groups; c < (g + 1) * j->src_ch / j->groups;
                         c++)
                        for (size_t x0 = c0; x0 < c0 + j->cols && x0 < j->sstride; x0 += 16)
                            __builtin_prefetch(j->src + (c * j->src_h + (size_t)nr) * j->sstride +
                                               x0);
                size_t c1 = c0 + j->cols < j->len ? c0 + j->cols : j->len;
                float *dst = j->dst + g * j->gstride + r * j->dstride;
                for (size_t j0 = c0; j0 < c1;) {
                    /* two blocks at a time inside the borders: one pass over
                     * the group's coefficients for 128 floats */
                    if (rows_ok && j0 >= j->lo_max && j0 + 2 * CONV_J <= c1 &&
                        j0 + 2 * CONV_J <= j->hi_min) {
                        v16f a[8] = {{0}, {0}, {0}, {0}, {0}, {0}, {0}, {0}};
                        for (uint32_t k = j->start[g]; k < j->start[g + 1]; k++) {
                            const float *p = j->src + (base + j->off[k] + (ptrdiff_t)j0);
                            float w = j->w[k];
#pragma GCC unroll 8
                            for (size_t v = 0; v < 8; v++)
                                a[v] += w * *(const v16fu *)(p + 16 * v);
                        }
#pragma GCC unroll 8
                        for (size_t v = 0; v < 8; v++)
                            *(v16fu *)(dst + j0 + 16 * v) = a[v];
                        j0 += 2 * CONV_J;
                        continue;
                    }
                    size_t m = j->len - j0 < CONV_J ? j->len - j0 : CONV_J;
                    int inner = rows_ok && j0 >= j->lo_max && j0 + CONV_J <= j->hi_min;
                    v16f a[4] = {{0}, {0}, {0}, {0}};
                    if (inner) {
                        for (uint32_t k = j->start[g]; k < j->start[g + 1]; k++) {
                            const float *p = j->src + (base + j->off[k] + (ptrdiff_t)j0);
                            float w = j->w[k];
                            a[0] += w * *(const v16fu *)p;
                            a[1] += w * *(const v16fu *)(p + 16);
                            a[2] += w * *(const v16fu *)(p + 32);
                            a[3] += w * *(const v16fu *)(p + 48);
                        }
                    } else {
                        for (uint32_t k = j->start[g]; k < j->start[g + 1]; k++) {
                            ptrdiff_t sr = rr + j->dr[k];
                            if (sr < 0 || sr >= (ptrdiff_t)j->src_h)
                                continue;
                            float w = j->w[k];
                            if (m == CONV_J && j0 >= j->lo[k] && j0 + CONV_J <= j->hi[k]) {
                                const float *p = j->src + (base + j->off[k] + (ptrdiff_t)j0);
                                a[0] += w * *(const v16fu *)p;
                                a[1] += w * *(const v16fu *)(p + 16);
                                a[2] += w * *(const v16fu *)(p + 32);
                                a[3] += w * *(const v16fu *)(p + 48);
                                continue;
                            }
#pragma GCC unroll 4
                            for (size_t q = 0; q < 4; q++) {
                                size_t c = j0 + 16 * q;
                                if (16 * q < m && c >= j->lo[k] && c < j->hi[k])
                                    a[q] += w * *(const v16fu *)(j->src +
                                                                 (base + j->off[k] + (ptrdiff_t)c));
                            }
                        }
                    }
#pragma GCC unroll 4
                    for (size_t v = 0; v < 4; v++)
                        if (16 * v < m)
                            *(v16fu *)(dst + j0 + 16 * v) = a[v];
                    j0 += CONV_J;
                }
            }
        }
}

CONV_TARGETS(conv_direct, direct_body, struct conv_direct)

/* dw[k] = sum over i < n_flat of a[k][i] b[k][i], a[k] = dy + c[k].out
 * dy_stride, b[k] = x + off[k]: in blocks of CONV_DW_BLOCK floats (each
 * block's rows of dy and x stay in cache while every coefficient reads
 * them), each block's sum in 16 lanes, added in double in block order. */
#define CONV_DW_BLOCK 1024
struct conv_dots {
    const float *dy, *x;
    const struct nn_conv_coef *c;
    const size_t *off;
    size_t dy_stride, n, n_flat; /* n_flat a multiple of CONV_J */
    double *acc;                 /* [n] scratch */
    float *dw;
};

NN_INLINE void dots_body(const struct conv_dots *j)
{
    for (size_t k = 0; k < j->n; k++)
        j->acc[k] = 0;
    for (size_t b0 = 0; b0 < j->n_flat; b0 += CONV_DW_BLOCK) {
        size_t b1 = b0 + CONV_DW_BLOCK < j->n_flat ? b0 + CONV_DW_BLOCK : j->n_flat;
        for (size_t k = 0; k < j->n; k++) {
            const float *a = j->dy + j->c[k].out * j->dy_stride, *b = j->x + j->off[k];
            v16f s0 = {0}, s1 = {0}, s2 = {0}, s3 = {0};
            for (size_t i = b0; i < b1; i += CONV_J) {
                s0 += *(const v16fu *)(a + i) * *(const v16fu *)(b + i);
                s1 += *(const v16fu *)(a + i + 16) * *(const v16fu *)(b + i + 16);
                s2 += *(const v16fu *)(a + i + 32) * *(const v16fu *)(b + i + 32);
                s3 += *(const v16fu *)(a + i + 48) * *(const v16fu *)(b + i + 48);
            }
            s0 = (s0 + s1) + (s2 + s3);
            double t = 0;
            for (int v = 0; v < 16; v++)
                t += (double)s0[v];
            j->acc[k] += t;
        }
    }
    for (size_t k = 0; k < j->n; k++)
        j->dw[k] = (float)j->acc[k];
}
CONV_TARGETS(conv_dots, dots_body, struct conv_dots)

/* d[0..n) = s[0..n), not overlapping: the runs copied here are often short
 * (a row of one sample), where a call to memcpy costs more than the copy; the
 * last vector of a run overlaps the one before it instead of a scalar tail. */
typedef float v8fu __attribute__((vector_size(32), aligned(4), may_alias));
typedef float v4fu __attribute__((vector_size(16), aligned(4), may_alias));
static void copy_run(float *d, const float *s, size_t n)
{
    if (n >= 16) {
        for (size_t i = 0; i + 16 < n; i += 16)
            *(v16fu *)(d + i) = *(const v16fu *)(s + i);
        *(v16fu *)(d + n - 16) = *(const v16fu *)(s + n - 16);
    } else if (n >= 8) {
        *(v8fu *)d = *(const v8fu *)s;
        *(v8fu *)(d + n - 8) = *(const v8fu *)(s + n - 8);
    } else if (n >= 4) {
        *(v4fu *)d = *(const v4fu *)s;
        *(v4fu *)(d + n - 4) = *(const v4fu *)(s + n - 4);
    } else {
        for (size_t i = 0; i < n; i++)
            d[i] = s[i];
    }
}

/* ---- the layer ------------------------------------------------------------------- */

static size_t round_j(size_t n)
{
    return (n + CONV_J - 1) / CONV_J * CONV_J;
}

/* Floats per input plane, per output map and the front margin of an output
 * map (the largest shift) for a batch of b. */
static size_t plane_floats(const struct nn_conv *l, size_t b)
{
    /* a row more than the grid: a coefficient's run starts up to (k_w - 1) / s
     * pixels into the row after its first, and a block may overrun by CONV_J */
    return (l->hp + 1) * l->wq * b + CONV_J;
}

static size_t front_floats(const struct nn_conv *l, size_t b)
{
    return ((l->s.k_h - 1) / l->s.stride * l->wq + (l->s.k_w - 1) / l->s.stride) * b;
}

static size_t map_floats(const struct nn_conv *l, size_t b)
{
    return front_floats(l, b) + plane_floats(l, b);
}

float *nn_conv_alloc(size_t n)
{
    if (n > (SIZE_MAX - 63) / sizeof(float))
        return NULL;
    size_t bytes = (n * sizeof(float) + 63) & ~(size_t)63;
    return aligned_alloc(64, bytes ? bytes : 64);
}

int nn_conv_new(const struct nn_conv_shape *s, const struct nn_conv_coef *c, size_t n,
                size_t max_batch, struct nn_conv **out, struct tv_error *err)
{
    static const char fn[] = "nn_conv_new";
    *out = NULL;
    int rc = nn_conv_check_shape(s, fn, err);
    if (!rc)
        rc = nn_conv_check_coefs(s, c, n, fn, err);
    if (!rc)
        rc = nn_conv_check_batch(max_batch, fn, err);
    if (rc)
        return rc;
    struct nn_conv *l = calloc(1, sizeof *l);
    if (!l)
        return tv_error_set(err, TV_ENOMEM, "%s: out of memory", fn);
    l->s = *s;
    l->out_h = nn_conv_out_h(s);
    l->out_w = nn_conv_out_w(s);
    l->hp = l->out_h + (s->k_h - 1) / s->stride;
    l->wq = l->out_w + (s->k_w - 1) / s->stride;
    l->n_planes = s->stride * s->stride * s->in_ch;
    l->n = n;
    l->max_batch = max_batch;
    l->target = nn_target_best();
    size_t nn1 = n ? n : 1, xf = l->n_planes * plane_floats(l, max_batch),
           yf = s->out_ch * map_floats(l, max_batch);
    l->c = malloc(nn1 * sizeof *l->c);
    l->w = malloc(nn1 * sizeof *l->w);
    l->plane = malloc(nn1 * sizeof *l->plane);
    l->pix = malloc(nn1 * sizeof *l->pix);
    l->perm = malloc(nn1 * sizeof *l->perm);
    l->off = malloc(nn1 * sizeof *l->off);
    l->wt = malloc(nn1 * sizeof *l->wt);
    l->doff = malloc(nn1 * sizeof *l->doff);
    l->ddr = malloc(nn1 * sizeof *l->ddr);
    l->dlo = malloc(nn1 * sizeof *l->dlo);
    l->dhi = malloc(nn1 * sizeof *l->dhi);
    l->co_start = calloc(s->out_ch + 1, sizeof *l->co_start);
    l->pl_start = calloc(l->n_planes + 1, sizeof *l->pl_start);
    l->xp = malloc(xf * sizeof *l->xp);
    l->dxp = malloc(xf * sizeof *l->dxp);
    l->yp = malloc(yf * sizeof *l->yp);
    l->acc = malloc(nn1 * sizeof *l->acc);
    if (!l->c || !l->w || !l->plane || !l->pix || !l->perm || !l->off || !l->wt || !l->doff ||
        !l->ddr || !l->dlo || !l->dhi || !l->co_start || !l->pl_start || !l->xp || !l->dxp ||
        !l->yp || !l->acc) {
        nn_conv_free(l);
        return tv_error_set(err, TV_ENOMEM, "%s: out of memory for a layer of %zu coefficients", fn,
                            n);
    }
    l->bytes = sizeof *l +
               nn1 * (sizeof *l->c + 2 * sizeof(float) + 3 * sizeof(uint32_t) + 3 * sizeof(size_t) +
                      2 * sizeof(ptrdiff_t) + sizeof(double)) +
               (s->out_ch + l->n_planes + 2) * sizeof(uint32_t) + (2 * xf + yf) * sizeof(float);
    if (n)
        memcpy(l->c, c, n * sizeof *c);
    size_t st = s->stride;
    for (size_t k = 0; k < n; k++) {
        l->w[k] = c[k].w;
        l->plane[k] = (uint32_t)(((c[k].ky % st) * st + c[k].kx % st) * s->in_ch + c[k].in);
        l->pix[k] = (uint32_t)(c[k].ky / st * l->wq + c[k].kx / st);
        l->co_start[c[k].out + 1]++;
        l->pl_start[l->plane[k] + 1]++;
    }
    for (size_t o = 0; o < s->out_ch; o++)
        l->co_start[o + 1] += l->co_start[o];
    for (size_t p = 0; p < l->n_planes; p++)
        l->pl_start[p + 1] += l->pl_start[p];
    /* a counting sort by plane, stable (list order within a plane): pl_start[p]
     * serves as plane p's cursor, then is moved back */
    for (size_t k = 0; k < n; k++)
        l->perm[l->pl_start[l->plane[k]]++] = (uint32_t)k;
    for (size_t p = l->n_planes; p > 0; p--)
        l->pl_start[p] = l->pl_start[p - 1];
    l->pl_start[0] = 0;
    *out = l;
    return 0;
}

void nn_conv_free(struct nn_conv *l)
{
    if (!l)
        return;
    TV_FREE_ALL(l->c, l->w, l->plane, l->pix, l->perm, l->off, l->wt, l->doff, l->ddr, l->dlo,
                l->dhi, l->co_start, l->pl_start, l->xp, l->dxp, l->yp, l->acc, l);
}

const struct nn_conv_shape *nn_conv_shape(const struct nn_conv *l)
{
    return &l->s;
}

size_t nn_conv_n_coefs(const struct nn_conv *l)
{
    return l->n;
}

float *nn_conv_weights(struct nn_conv *l)
{
    return l->w;
}

size_t nn_conv_bytes(const struct nn_conv *l)
{
    return l->bytes;
}

int nn_conv_set_target(struct nn_conv *l, int target, struct tv_error *err)
{
    int rc = nn_target_check(target, "nn_conv_set_target", err);
    if (!rc)
        l->target = target;
    return rc;
}

int nn_conv_target(const struct nn_conv *l)
{
    return l->target;
}

/* The first pixel v of a plane row (offset r, stride st) whose input pixel
 * v st + r - pad lies in [0, n), and the end of them, clipped to [0, lim). */
static void valid_run(size_t r, size_t st, size_t pad, size_t n, size_t lim, size_t *v0, size_t *v1)
{
    size_t a = pad > r ? (pad - r + st - 1) / st : 0;          /* v st + r >= pad */
    size_t b = (n + pad > r) ? (n + pad - r - 1) / st + 1 : 0; /* v st + r < n + pad */
    *v0 = a < lim ? a : lim;
    *v1 = b < lim ? b : lim;
    if (*v1 < *v0)
        *v1 = *v0;
}

/* x [in_ch][in_h][in_w][b] into the planes xp (zeros where no input). */
static void pack_input(struct nn_conv *l, const float *x, size_t b)
{
    const struct nn_conv_shape *s = &l->s;
    size_t st = s->stride, ps = plane_floats(l, b);
    if (l->xp_batch != b) /* the padding, written once per batch size */
        memset(l->xp, 0, l->n_planes * ps * sizeof *l->xp);
    l->xp_batch = b;
    for (size_t ry = 0; ry < st; ry++)
        for (size_t rx = 0; rx < st; rx++) {
            size_t u0, u1, v0, v1;
            valid_run(ry, st, s->pad, s->in_h, l->hp, &u0, &u1);
            valid_run(rx, st, s->pad, s->in_w, l->wq, &v0, &v1);
            for (size_t ci = 0; ci < s->in_ch; ci++) {
                float *pl = l->xp + ((ry * st + rx) * s->in_ch + ci) * ps;
                for (size_t u = u0; u < u1; u++) {
                    const float *row = x + (ci * s->in_h + u * st + ry - s->pad) * s->in_w * b;
                    float *d = pl + u * l->wq * b;
                    if (st == 1) {
                        copy_run(d + v0 * b, row + (v0 + rx - s->pad) * b, (v1 - v0) * b);
                        continue;
                    }
                    for (size_t v = v0; v < v1; v++)
                        copy_run(d + v * b, row + (v * st + rx - s->pad) * b, b);
                }
            }
        }
}

/* Columns of a pass over the rows: few enough that the input rows a pass
 * reads (k_h / s + 1 rows of each of `planes` planes) stay in L2 (within
 * CONV_L2_FLOATS) while the next output row reuses them. */
#define CONV_L2_FLOATS 131072
static size_t pass_cols(const struct nn_conv *l, size_t planes, size_t b)
{
    size_t rows = (l->s.k_h - 1) / l->s.stride + 1, halo = (l->s.k_w - 1) / l->s.stride * b;
    size_t per = CONV_L2_FLOATS / (planes * rows);
    return per > halo + CONV_J ? (per - halo) / CONV_J * CONV_J : CONV_J;
}

/* Output rows written in place when the rows are long enough that the
 * short last block of each costs little; else the whole map as one run of
 * wq-pixel rows into yp, then copied. */
static int by_rows(size_t row_floats)
{
    return row_floats % CONV_J == 0 || row_floats >= 8 * CONV_J;
}

/* Whether the direct kernel takes a batch of b (conv_direct). */
static int direct_ok(const struct nn_conv *l, size_t b)
{
    return l->s.stride == 1 && b % 16 == 0;
}

/* j for the direct kernel over a batch of b: forward (the list in order,
 * from x into y) or not (dL/dx: the list sorted by input channel, from dL/dy
 * into dx). */
static void direct_setup(struct nn_conv *l, size_t b, int forward, const float *src, float *dst,
                         struct conv_direct *j)
{
    const struct nn_conv_shape *s = &l->s;
    size_t src_ch = forward ? s->in_ch : s->out_ch, src_h = forward ? s->in_h : l->out_h;
    size_t src_w = forward ? s->in_w : l->out_w, dst_h = forward ? l->out_h : s->in_h;
    size_t dst_w = forward ? l->out_w : s->in_w, dst_ch = forward ? s->out_ch : s->in_ch;
    ptrdiff_t pad = (ptrdiff_t)s->pad, sw = (ptrdiff_t)src_w, bb = (ptrdiff_t)b;
    *j = (struct conv_direct){.src = src,
                              .off = l->doff,
                              .dr = l->ddr,
                              .lo = l->dlo,
                              .hi = l->dhi,
                              .w = forward ? l->w : l->wt,
                              .start = forward ? l->co_start : l->pl_start,
                              .groups = dst_ch,
                              .rows = dst_h,
                              .len = dst_w * b,
                              .src_h = src_h,
                              .sstride = src_w * b,
                              .src_ch = src_ch,
                              .hi_min = dst_w * b, /* dr_min, dr_max, lo_max: the loop's */
                              .dst = dst,
                              .gstride = dst_h * dst_w * b,
                              .dstride = dst_w * b,
                              .cols = pass_cols(l, src_ch, b)};
    for (size_t i = 0; i < l->n; i++) {
        const struct nn_conv_coef *c = &l->c[forward ? i : l->perm[i]];
        ptrdiff_t ky = c->ky, kx = c->kx, dr = forward ? ky - pad : pad - ky;
        ptrdiff_t dc = forward ? kx - pad : pad - kx; /* source pixel = destination + dc */
        ptrdiff_t lo = dc < 0 ? -dc : 0,
                  hi = sw - dc < (ptrdiff_t)dst_w ? sw - dc : (ptrdiff_t)dst_w;
        if (hi < lo)
            hi = lo;
        l->doff[i] =
            (ptrdiff_t)((forward ? c->in : c->out) * src_h) * sw * bb + dr * sw * bb + dc * bb;
        l->ddr[i] = dr;
        l->dlo[i] = (size_t)(lo * bb);
        l->dhi[i] = (size_t)(hi * bb);
        if (!forward)
            l->wt[i] = l->w[l->perm[i]];
        if (!i || dr < j->dr_min)
            j->dr_min = dr;
        if (!i || dr > j->dr_max)
            j->dr_max = dr;
        if (l->dlo[i] > j->lo_max)
            j->lo_max = l->dlo[i];
        if (l->dhi[i] < j->hi_min)
            j->hi_min = l->dhi[i];
    }
}

void nn_conv_forward(struct nn_conv *l, const float *x, size_t batch, float *y)
{
    const struct nn_conv_shape *s = &l->s;
    size_t b = batch, ps = plane_floats(l, b), ms = map_floats(l, b), f = front_floats(l, b);
    size_t run = l->out_w * b, oh = l->out_h;
    if (direct_ok(l, b)) {
        struct conv_direct j;
        direct_setup(l, b, 1, x, y, &j);
        conv_direct[l->target](&j);
        return;
    }
    pack_input(l, x, b);
    for (size_t k = 0; k < l->n; k++)
        l->off[k] = l->plane[k] * ps + l->pix[k] * b;
    if (by_rows(run)) {
        struct conv_gather j = {l->xp,     l->off,   l->w, l->co_start,
                                s->out_ch, oh,       run,  l->wq * b,
                                y,         oh * run, run,  pass_cols(l, l->n_planes, b)};
        conv_gather[l->target](&j);
        return;
    }
    struct conv_gather j = {l->xp, l->off,    l->w, l->co_start, s->out_ch,     1, oh * l->wq * b,
                            0,     l->yp + f, ms,   0,           oh * l->wq * b};
    conv_gather[l->target](&j);
    l->yp_batch = 0; /* the columns past out_w now hold what was computed there */
    for (size_t co = 0; co < s->out_ch; co++)
        for (size_t oy = 0; oy < oh; oy++)
            copy_run(y + (co * oh + oy) * run, l->yp + co * ms + f + oy * l->wq * b, run);
}

void nn_conv_backward(struct nn_conv *l, const float *x, const float *dy, size_t batch, float *dx,
                      float *dw)
{
    const struct nn_conv_shape *s = &l->s;
    size_t b = batch, ps = plane_floats(l, b), ms = map_floats(l, b), f = front_floats(l, b);
    size_t run = l->out_w * b;
    int direct = dx && direct_ok(l, b);
    /* dy into rows of wq pixels, zeros around */
    if (l->yp_batch != b && (dw || !direct))
        memset(l->yp, 0, s->out_ch * ms * sizeof *l->yp);
    if (dw || !direct) {
        l->yp_batch = b;
        for (size_t co = 0; co < s->out_ch; co++)
            for (size_t oy = 0; oy < l->out_h; oy++)
                copy_run(l->yp + co * ms + f + oy * l->wq * b, dy + (co * l->out_h + oy) * run,
                         run);
    }
    if (dw) {
        pack_input(l, x, b);
        for (size_t k = 0; k < l->n; k++)
            l->off[k] = l->plane[k] * ps + l->pix[k] * b;
        struct conv_dots j = {
            l->yp + f, l->xp, l->c, l->off, ms, l->n, round_j(l->out_h * l->wq * b), l->acc, dw};
        conv_dots[l->target](&j);
    }
    if (!dx)
        return;
    if (direct) {
        struct conv_direct j;
        direct_setup(l, b, 0, dy, dx, &j);
        conv_direct[l->target](&j);
        return;
    }
    size_t st = s->stride, xrun = s->in_w * b;
    /* stride 1 and long rows: dx's rows in place, at (pad, pad) of the planes */
    size_t base = st == 1 && by_rows(xrun) ? (s->pad * l->wq + s->pad) * b : 0;
    for (size_t i = 0; i < l->n; i++) {
        uint32_t k = l->perm[i];
        l->off[i] = l->c[k].out * ms + f - l->pix[k] * b + base;
        l->wt[i] = l->w[k];
    }
    if (st == 1 && by_rows(xrun)) {
        struct conv_gather j = {l->yp,       l->off,         l->wt, l->pl_start,
                                l->n_planes, s->in_h,        xrun,  l->wq * b,
                                dx,          s->in_h * xrun, xrun,  pass_cols(l, s->out_ch, b)};
        conv_gather[l->target](&j);
        return;
    }
    struct conv_gather j = {
        l->yp, l->off, l->wt, l->pl_start, l->n_planes,      1, l->hp * l->wq * b,
        0,     l->dxp, ps,    0,           l->hp * l->wq * b};
    conv_gather[l->target](&j);
    /* the planes back into dx, 0 where no output used the input */
    for (size_t ci = 0; ci < s->in_ch; ci++)
        for (size_t iy = 0; iy < s->in_h; iy++) {
            size_t u = (iy + s->pad) / st, ry = (iy + s->pad) % st;
            float *d = dx + (ci * s->in_h + iy) * s->in_w * b;
            for (size_t ix = 0; ix < s->in_w; ix++) {
                size_t v = (ix + s->pad) / st, rx = (ix + s->pad) % st;
                if (u >= l->hp || v >= l->wq) {
                    memset(d + ix * b, 0, b * sizeof *d);
                    continue;
                }
                const float *src =
                    l->dxp + ((ry * st + rx) * s->in_ch + ci) * ps + (u * l->wq + v) * b;
                copy_run(d + ix * b, src, b);
            }
        }
}
