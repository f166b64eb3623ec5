/* conv_ref.c -- the convolution's reference (plain nested loops, sums in
 * double) and the parts around a convolution: bias and activation, max
 * pooling and its backward pass (conv.h). */
#include "conv_impl.h"

#include <stdlib.h>
#include <string.h>

/* Calls fn(i_x, i_y, k) for every (input float, output float) pair that
 * coefficient k of c joins: i_x indexes x [in_ch][in_h][in_w][batch], i_y
 * indexes y [out_ch][out_h][out_w][batch]. */
#define CONV_REF_PAIRS(s, c, n, batch, body)                                                       \
    do {                                                                                           \
        size_t oh_ = nn_conv_out_h(s), ow_ = nn_conv_out_w(s);                                     \
        for (size_t k = 0; k < (n); k++)                                                           \
            for (size_t oy = 0; oy < oh_; oy++) {                                                  \
                size_t py = oy * (s)->stride + (c)[k].ky;                                          \
                if (py < (s)->pad || py - (s)->pad >= (s)->in_h)                                   \
                    continue;                                                                      \
                for (size_t ox = 0; ox < ow_; ox++) {                                              \
                    size_t px = ox * (s)->stride + (c)[k].kx;                                      \
                    if (px < (s)->pad || px - (s)->pad >= (s)->in_w)                               \
                        continue;                                                                  \
                    for (size_t bb = 0; bb < (batch); bb++) {                                      \
                        size_t ix = (((c)[k].in * (s)->in_h + py - (s)->pad) * (s)->in_w + px -    \
                                     (s)->pad) *                                                   \
                                        (batch) +                                                  \
                                    bb;                                                            \
                        size_t iy = (((c)[k].out * oh_ + oy) * ow_ + ox) * (batch) + bb;           \
                        body;                                                                      \
                    }                                                                              \
                }                                                                                  \
            }                                                                                      \
    } while (0)

static int ref_check(const struct nn_conv_shape *s, const struct nn_conv_coef *c, size_t n,
                     size_t batch, const char *fn, struct tv_error *err)
{
    int rc = nn_conv_check_shape(s, fn, err);
    if (!rc)
        rc = nn_conv_check_coefs(s, c, n, fn, err);
    if (!rc && !batch)
        rc = tv_error_set(err, TV_EINVAL, "%s: batch is 0", fn);
    return rc;
}

int nn_conv_ref_forward(const struct nn_conv_shape *s, const struct nn_conv_coef *c, size_t n,
                        const float *x, size_t batch, float *y, struct tv_error *err)
{
    static const char fn[] = "nn_conv_ref_forward";
    int rc = ref_check(s, c, n, batch, fn, err);
    if (rc)
        return rc;
    size_t ny = s->out_ch * nn_conv_out_h(s) * nn_conv_out_w(s) * batch;
    double *acc = calloc(ny, sizeof *acc);
    if (!acc)
        return tv_error_set(err, TV_ENOMEM, "%s: out of memory", fn);
    CONV_REF_PAIRS(s, c, n, batch, acc[iy] += (double)c[k].w * (double)x[ix]);
    for (size_t i = 0; i < ny; i++)
        y[i] = (float)acc[i];
    free(acc);
    return 0;
}

int nn_conv_ref_backward(const struct nn_conv_shape *s, const struct nn_conv_coef *c, size_t n,
                         const float *x, const float *dy, size_t batch, float *dx, float *dw,
                         struct tv_error *err)
{
    static const char fn[] = "nn_conv_ref_backward";
    int rc = ref_check(s, c, n, batch, fn, err);
    if (rc)
        return rc;
    size_t nx = s->in_ch * s->in_h * s->in_w * batch;
    double *ax = calloc(nx + n + 1, sizeof *ax), *aw = ax + nx;
    if (!ax)
        return tv_error_set(err, TV_ENOMEM, "%s: out of memory", fn);
    CONV_REF_PAIRS(s, c, n, batch, {
        ax[ix] += (double)c[k].w * (double)dy[iy];
        aw[k] += (double)x[ix] * (double)dy[iy];
    });
    for (size_t i = 0; dx && i < nx; i++)
        dx[i] = (float)ax[i];
    for (size_t k = 0; dw && k < n; k++)
        dw[k] = (float)aw[k];
    free(ax);
    return 0;
}

/* ---- around a convolution ----------------------------------------------------- */

void nn_conv_bias_act(float *y, size_t ch, size_t h, size_t w, size_t batch, const float *bias,
                      int act)
{
    size_t m = h * w * batch;
    int a = act >= 0 && act < GENOME_ACT_COUNT ? act : GENOME_ACT_IDENTITY;
    for (size_t c = 0; c < ch; c++) {
        float *row = y + c * m;
        if (bias)
            for (size_t i = 0; i < m; i++)
                row[i] += bias[c];
        if (a != GENOME_ACT_IDENTITY)
            nn_acts[a].row(row, m);
    }
}

typedef float pool_v16 __attribute__((vector_size(64), aligned(4), may_alias));
typedef int32_t pool_i16 __attribute__((vector_size(64), aligned(4), may_alias));
typedef uint32_t pool_u16 __attribute__((vector_size(64), aligned(4), may_alias));

/* For b < n: where x[b] > y[b], y[b] = x[b] and arg[b] = i + b (arg may be
 * NULL); the first maximum kept, NaN never taken. In vectors of 16 with
 * masks, not a branch per value (one on random data is mispredicted half
 * the time). */
static void pool_max_run(float *y, uint32_t *arg, const float *x, uint32_t i, size_t n)
{
    const pool_u16 iota = {0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15};
    size_t b = 0;
    for (; b + 16 <= n; b += 16) {
        pool_v16 xv = *(const pool_v16 *)(x + b), yv = *(pool_v16 *)(y + b);
        pool_i16 m = xv > yv;
        *(pool_i16 *)(y + b) = ((pool_i16)xv & m) | ((pool_i16)yv & ~m);
        if (arg) {
            pool_u16 at = iota + (i + (uint32_t)b), old = *(pool_u16 *)(arg + b);
            *(pool_u16 *)(arg + b) = (at & (pool_u16)m) | (old & ~(pool_u16)m);
        }
    }
    for (; b < n; b++)
        if (x[b] > y[b]) {
            y[b] = x[b];
            if (arg)
                arg[b] = i + (uint32_t)b;
        }
}

void nn_conv_pool_max(const float *x, size_t ch, size_t h, size_t w, size_t batch, size_t p,
                      float *y, uint32_t *arg)
{
    size_t oh = h / p, ow = w / p;
    for (size_t c = 0; c < ch; c++)
        for (size_t oy = 0; oy < oh; oy++)
            for (size_t ox = 0; ox < ow; ox++) {
                /* the window's pixels in row order, each a run of batch floats */
                size_t o = ((c * oh + oy) * ow + ox) * batch;
                size_t first = ((c * h + oy * p) * w + ox * p) * batch;
                float *yo = y + o;
                memcpy(yo, x + first, batch * sizeof *yo);
                if (arg)
                    for (size_t b = 0; b < batch; b++)
                        arg[o + b] = (uint32_t)(first + b);
                for (size_t dy = 0; dy < p; dy++)
                    for (size_t dx = dy ? 0 : 1; dx < p; dx++) {
                        size_t i = ((c * h + oy * p + dy) * w + ox * p + dx) * batch;
                        pool_max_run(yo, arg ? arg + o : NULL, x + i, (uint32_t)i, batch);
                    }
            }
}

void nn_conv_pool_max_backward(const float *dy, const uint32_t *arg, size_t n_out, float *dx,
                               size_t n_in)
{
    memset(dx, 0, n_in * sizeof *dx);
    for (size_t i = 0; i < n_out; i++)
        dx[arg[i]] += dy[i];
}
