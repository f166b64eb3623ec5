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

/* The row kernels around a convolution, once per SIMD target (conv_impl.h):
 * selections and one add per value, so the same bits on every target. They
 * run in vectors of 16 with masks, not a branch per value: a branch on the
 * sign or the order of values of random sign is mispredicted half the time
 * (relu, its gradient and max pooling were 60 % of a CNN's training step). */
struct conv_rows {
    float *y;
    const float *x;
    uint32_t *arg;
    uint32_t i;
    size_t n;
    float bias;
};

/* y[b] = relu(y[b] + bias) for b < n; a lane is all ones where the sum is
 * > 0, and the sum's bits and-ed with it are the sum or +0, as act_relu. */
NN_INLINE void bias_relu_body(const struct conv_rows *j)
{
    float *y = j->y;
    size_t b = 0;
    for (; b + 16 <= j->n; b += 16) {
        v16f s = *(v16fu *)(y + b) + j->bias;
        *(v16fu *)(y + b) = (v16f)((v16i)s & (s > (v16f){0}));
    }
    for (; b < j->n; b++) {
        float s = y[b] + j->bias;
        y[b] = s > 0.0f ? s : 0.0f;
    }
}
CONV_TARGETS(conv_bias_relu, bias_relu_body, struct conv_rows)

/* y[b] = x[b] > 0 ? y[b] : 0 for b < n (relu's gradient, x the sums). */
NN_INLINE void relu_grad_body(const struct conv_rows *j)
{
    float *g = j->y;
    size_t b = 0;
    for (; b + 16 <= j->n; b += 16) {
        v16f z = *(const v16fu *)(j->x + b);
        *(v16fu *)(g + b) = (v16f)(*(v16iu *)(g + b) & (z > (v16f){0}));
    }
    for (; b < j->n; b++)
        g[b] = j->x[b] > 0.0f ? g[b] : 0.0f;
}
CONV_TARGETS(conv_relu_grad, relu_grad_body, struct conv_rows)

/* For b < n: where x[b] > y[b], y[b] = x[b] and arg[b] = i + b (arg may be
 * NULL); the first maximum kept, NaN never taken. */
NN_INLINE void pool_run_body(const struct conv_rows *j)
{
    const v16i iota = {0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15};
    float *y = j->y;
    const float *x = j->x;
    size_t b = 0;
    for (; b + 16 <= j->n; b += 16) {
        v16f xv = *(const v16fu *)(x + b), yv = *(v16fu *)(y + b);
        v16i m = xv > yv;
        *(v16iu *)(y + b) = ((v16i)xv & m) | ((v16i)yv & ~m);
        if (j->arg) {
            /* the index's bits, as uint32_t: i + b < 2^32 */
            v16i at = iota + (int32_t)(uint32_t)(j->i + b), old = *(v16iu *)(j->arg + b);
            *(v16iu *)(j->arg + b) = (at & m) | (old & ~m);
        }
    }
    for (; b < j->n; b++)
        if (x[b] > y[b]) {
            y[b] = x[b];
            if (j->arg)
                j->arg[b] = j->i + (uint32_t)b;
        }
}
CONV_TARGETS(conv_pool_run, pool_run_body, struct conv_rows)

void nn_conv_relu_grad(float *g, const float *z, size_t n)
{
    struct conv_rows j = {g, z, NULL, 0, n, 0};
    conv_relu_grad[nn_target_best()](&j);
}

void nn_conv_bias_act(float *y, size_t ch, size_t h, size_t w, size_t batch, const float *bias,
                      int act)
{
    size_t m = h * w * batch;
    int a = act >= 0 && act < GENOME_ACT_COUNT ? act : GENOME_ACT_IDENTITY;
    if (a == GENOME_ACT_RELU) {
        void (*run)(const struct conv_rows *) = conv_bias_relu[nn_target_best()];
        for (size_t c = 0; c < ch; c++) {
            struct conv_rows j = {y + c * m, NULL, NULL, 0, m, bias ? bias[c] : 0.0f};
            run(&j);
        }
        return;
    }
    for (size_t c = 0; c < ch; c++) {
        float *row = y + c * m;
        if (bias)
            for (size_t i = 0; i < m; i++)
                row[i] += bias[c];
        if (a != GENOME_ACT_IDENTITY)
            nn_acts[a].row(row, m);
    }
}

void nn_conv_pool_max(const float *x, size_t ch, size_t h, size_t w, size_t batch, size_t p,
                      float *y, uint32_t *arg)
{
    size_t oh = h / p, ow = w / p;
    void (*pool_run)(const struct conv_rows *) = conv_pool_run[nn_target_best()];
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
                        struct conv_rows j = {yo,          x + i, arg ? arg + o : NULL,
                                              (uint32_t)i, batch, 0};
                        pool_run(&j);
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
