/* conv_dense.c -- the dense convolution layer (conv.h): im2col, then a
 * blocked GEMM of our own, built once per SIMD target (same bits on each). */
#include "conv_impl.h"

#include <stdlib.h>
#include <string.h>

struct nn_conv_dense {
    struct nn_conv_shape s;
    size_t out_h, out_w, kk, max_batch; /* kk: in_ch k_h k_w */
    int target;
    float *w;   /* [out_ch][kk] */
    float *col; /* [kk][out_h out_w max_batch] */
};

void nn_conv_im2col(const struct nn_conv_shape *s, const float *x, size_t batch, float *col)
{
    size_t oh = nn_conv_out_h(s), ow = nn_conv_out_w(s), ncol = oh * ow * batch;
    for (size_t ci = 0; ci < s->in_ch; ci++)
        for (size_t ky = 0; ky < s->k_h; ky++)
            for (size_t kx = 0; kx < s->k_w; kx++) {
                float *row = col + ((ci * s->k_h + ky) * s->k_w + kx) * ncol;
                for (size_t oy = 0; oy < oh; oy++) {
                    float *d = row + oy * ow * batch;
                    size_t py = oy * s->stride + ky;
                    if (py < s->pad || py - s->pad >= s->in_h) {
                        memset(d, 0, ow * batch * sizeof *d);
                        continue;
                    }
                    const float *src = x + (ci * s->in_h + py - s->pad) * s->in_w * batch;
                    for (size_t ox = 0; ox < ow; ox++) {
                        size_t px = ox * s->stride + kx;
                        if (px < s->pad || px - s->pad >= s->in_w)
                            memset(d + ox * batch, 0, batch * sizeof *d);
                        else
                            memcpy(d + ox * batch, src + (px - s->pad) * batch, batch * sizeof *d);
                    }
                }
            }
}

/* c [m][n] = a [m][k] b [k][n], row-major: blocks of 2 rows by CONV_J
 * columns in registers, the sum over k in order; the last columns (fewer
 * than CONV_J) one at a time, in the same order. */
struct conv_gemm {
    const float *a, *b;
    float *c;
    size_t m, n, k;
};

NN_INLINE void gemm_body(const struct conv_gemm *j)
{
    size_t n = j->n, k = j->k, nb = n / CONV_J * CONV_J;
    for (size_t j0 = 0; j0 < nb; j0 += CONV_J)
        for (size_t i = 0; i < j->m; i += 2) {
            const float *a0 = j->a + i * k, *a1 = i + 1 < j->m ? a0 + k : a0;
            v16f p0 = {0}, p1 = {0}, p2 = {0}, p3 = {0}, q0 = {0}, q1 = {0}, q2 = {0}, q3 = {0};
            for (size_t t = 0; t < k; t++) {
                const float *r = j->b + t * n + j0;
                v16f b0 = *(const v16fu *)r, b1 = *(const v16fu *)(r + 16),
                     b2 = *(const v16fu *)(r + 32), b3 = *(const v16fu *)(r + 48);
                p0 += a0[t] * b0;
                p1 += a0[t] * b1;
                p2 += a0[t] * b2;
                p3 += a0[t] * b3;
                q0 += a1[t] * b0;
                q1 += a1[t] * b1;
                q2 += a1[t] * b2;
                q3 += a1[t] * b3;
            }
            float *c0 = j->c + i * n + j0;
            *(v16fu *)c0 = p0;
            *(v16fu *)(c0 + 16) = p1;
            *(v16fu *)(c0 + 32) = p2;
            *(v16fu *)(c0 + 48) = p3;
            if (i + 1 < j->m) {
                *(v16fu *)(c0 + n) = q0;
                *(v16fu *)(c0 + n + 16) = q1;
                *(v16fu *)(c0 + n + 32) = q2;
                *(v16fu *)(c0 + n + 48) = q3;
            }
        }
    for (size_t i = 0; i < j->m; i++)
        for (size_t c = nb; c < n; c++) {
            float s = 0;
            for (size_t t = 0; t < k; t++)
                s += j->a[i * k + t] * j->b[t * n + c];
            j->c[i * n + c] = s;
        }
}
CONV_TARGETS(conv_gemm, gemm_body, struct conv_gemm)

int nn_conv_dense_new(const struct nn_conv_shape *s, const float *w, size_t max_batch,
                      struct nn_conv_dense **out, struct tv_error *err)
{
    static const char fn[] = "nn_conv_dense_new";
    *out = NULL;
    int rc = nn_conv_check_shape(s, fn, err);
    if (!rc && !w)
        rc = tv_error_set(err, TV_EINVAL, "%s: no weights (NULL)", fn);
    if (!rc)
        rc = nn_conv_check_batch(max_batch, fn, err);
    if (rc)
        return rc;
    struct nn_conv_dense *d = calloc(1, sizeof *d);
    if (!d)
        return tv_error_set(err, TV_ENOMEM, "%s: out of memory", fn);
    d->s = *s;
    d->out_h = nn_conv_out_h(s);
    d->out_w = nn_conv_out_w(s);
    d->kk = s->in_ch * s->k_h * s->k_w;
    d->max_batch = max_batch;
    d->target = nn_target_best();
    d->w = nn_conv_alloc(s->out_ch * d->kk);
    d->col = nn_conv_alloc(d->kk * d->out_h * d->out_w * max_batch);
    if (!d->w || !d->col) {
        nn_conv_dense_free(d);
        return tv_error_set(err, TV_ENOMEM, "%s: out of memory", fn);
    }
    memcpy(d->w, w, s->out_ch * d->kk * sizeof *d->w);
    *out = d;
    return 0;
}

void nn_conv_dense_free(struct nn_conv_dense *d)
{
    if (!d)
        return;
    TV_FREE_ALL(d->w, d->col, d);
}

void nn_conv_dense_forward(struct nn_conv_dense *d, const float *x, size_t batch, float *y)
{
    nn_conv_im2col(&d->s, x, batch, d->col);
    struct conv_gemm j = {d->w, d->col, y, d->s.out_ch, d->out_h * d->out_w * batch, d->kk};
    conv_gemm[d->target](&j);
}

int nn_conv_prefer_dense(const struct nn_conv_shape *s, size_t n)
{
    double all = (double)s->in_ch * (double)s->out_ch * (double)s->k_h * (double)s->k_w;
    return all > 0 && (double)n > NN_CONV_DENSE_ABOVE * all;
}
