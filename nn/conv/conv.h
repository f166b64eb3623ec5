/*
 * conv.h -- nn/conv/: convolution. This header is the layer every part of
 * the folder builds on; the folder also holds the plans of genomes with
 * channels (conv_plan.c, conv_op.c: a convolutional genome run by nn_step)
 * and the trainer of convolutional networks (cnn.h).
 *
 * Sparse convolution: a layer of filters kept as triplets of
 * (input channel, output channel, filter) whose filters keep only their
 * non-zero coefficients (ky, kx, w). The engine applies each coefficient on
 * its own: the input map shifted by (ky, kx), times w, added into the
 * output map, so a zero coefficient (or an absent filter) costs nothing.
 *
 * Layout of every map buffer (the engine's feature-major order, nn.h: each
 * pixel is a neuron, the batch innermost): a buffer of C channels of H x W
 * pixels for B samples holds pixel (c, y, x) of sample b at
 *   ((c * H + y) * W + x) * B + b.
 * With B = 1 this is the usual CHW order of one image.
 *
 * Geometry: out_h = (in_h + 2 pad - k_h) / stride + 1 (the same for w),
 * which must be >= 1 and exact is not required (the last rows that do not
 * fit are dropped, as everywhere). Pixels outside the input read as 0.
 *
 * A layer computes y = conv(x) only: the bias, the activation and the
 * pooling are separate calls below, so that the plan (nn.h) and the trainer
 * compose them and a dense and a sparse layer are interchangeable.
 *
 * Three implementations of one layer, each for tests and the bench against
 * the others: the sparse engine (nn_conv_*), a plain nested loop
 * (nn_conv_ref_*), and a dense one (im2col and a GEMM of our own,
 * nn_conv_dense_*; the bench also runs OpenBLAS's sgemm on the same im2col).
 * Results agree to a relative error of about 1e-5 (the order of the sums
 * differs); each one is deterministic.
 *
 * This module includes only genome/ and nn/ headers, libc and libm.
 */
#ifndef TREVO_NN_CONV_H
#define TREVO_NN_CONV_H

#include <stddef.h>
#include <stdint.h>

#include "tv.h"

struct nn_conv_shape {
    size_t in_ch, out_ch;
    size_t in_h, in_w;
    size_t k_h, k_w; /* 1..NN_CONV_MAX_K */
    size_t stride;   /* >= 1 */
    size_t pad;      /* < k */
};
#define NN_CONV_MAX_K 16

/* out_h and out_w of s; 0 when s does not make a map (checked by nn_conv_new). */
size_t nn_conv_out_h(const struct nn_conv_shape *s);
size_t nn_conv_out_w(const struct nn_conv_shape *s);
/* 0 if s makes a map (the checks of nn_conv_new), else TV_EINVAL naming what
 * does not fit, after "nn_conv_shape_check: ". */
int nn_conv_shape_check(const struct nn_conv_shape *s, struct tv_error *err);

/* One non-zero coefficient of the filter from input channel `in` to output
 * channel `out`. A layer's list is sorted by (out, in, ky, kx), keys unique. */
struct nn_conv_coef {
    uint32_t out, in;
    uint8_t ky, kx;
    float w;
};

struct nn_conv;

/* A sparse layer of shape s with the n coefficients c (copied), for batches
 * of 1..max_batch samples. TV_EINVAL naming what does not fit (a shape that
 * makes no map, a channel or offset out of range, a list not sorted or with
 * a duplicate key, a weight not finite); TV_ENOMEM. *out NULL on error. */
int nn_conv_new(const struct nn_conv_shape *s, const struct nn_conv_coef *c, size_t n,
                size_t max_batch, struct nn_conv **out, struct tv_error *err);
void nn_conv_free(struct nn_conv *l); /* NULL is a no-op */
const struct nn_conv_shape *nn_conv_shape(const struct nn_conv *l);
size_t nn_conv_n_coefs(const struct nn_conv *l);
/* The coefficients' weights in the order of the list given to nn_conv_new
 * (borrowed; may be changed between calls: training writes them here). */
float *nn_conv_weights(struct nn_conv *l);
/* Bytes the layer holds (coefficients and scratch). */
size_t nn_conv_bytes(const struct nn_conv *l);
/* The SIMD target whose kernels the layer runs (enum nn_target of nn.h; the
 * best the CPU has by default). Every target gives the same bits; this picks
 * another for tests and benchmarks. TV_EINVAL if unknown or not on this CPU. */
int nn_conv_set_target(struct nn_conv *l, int target, struct tv_error *err);
int nn_conv_target(const struct nn_conv *l);

/* y = conv(x) for `batch` (1..max_batch) samples: x [in_ch][in_h][in_w][batch],
 * y [out_ch][out_h][out_w][batch] (overwritten). Any float alignment works;
 * buffers from nn_conv_alloc run fastest (at a batch of 64, a vector store
 * into a buffer only 16-byte aligned splits two cache lines, and the layer
 * is bound by its stores). */
void nn_conv_forward(struct nn_conv *l, const float *x, size_t batch, float *y);
/* The backward pass of the forward above, given x and dL/dy:
 * dx (may be NULL) = dL/dx, overwritten; dw (may be NULL) = dL/dw of each
 * coefficient, in list order, overwritten. Gradients exist only at the
 * coefficients the layer has. */
void nn_conv_backward(struct nn_conv *l, const float *x, const float *dy, size_t batch, float *dx,
                      float *dw);

/* n floats (at least 1), 64-byte aligned, uninitialised; release with
 * free(). NULL when out of memory. */
float *nn_conv_alloc(size_t n);

/* The plain nested loops (sums in double), same arguments and layouts. */
int nn_conv_ref_forward(const struct nn_conv_shape *s, const struct nn_conv_coef *c, size_t n,
                        const float *x, size_t batch, float *y, struct tv_error *err);
int nn_conv_ref_backward(const struct nn_conv_shape *s, const struct nn_conv_coef *c, size_t n,
                         const float *x, const float *dy, size_t batch, float *dx, float *dw,
                         struct tv_error *err);

/* The dense layer: every filter whole, w [out_ch][in_ch][k_h][k_w] (zeros
 * included), x and y as above: im2col into scratch, then a blocked GEMM of
 * our own. nn_conv_im2col exposes the first half for a GEMM from elsewhere
 * (the bench's OpenBLAS): col [in_ch * k_h * k_w][out_h * out_w * batch]. */
struct nn_conv_dense;
int nn_conv_dense_new(const struct nn_conv_shape *s, const float *w, size_t max_batch,
                      struct nn_conv_dense **out, struct tv_error *err);
void nn_conv_dense_free(struct nn_conv_dense *d);
void nn_conv_dense_forward(struct nn_conv_dense *d, const float *x, size_t batch, float *y);
void nn_conv_im2col(const struct nn_conv_shape *s, const float *x, size_t batch, float *col);

/* Sparse or dense: above a share NN_CONV_DENSE_ABOVE of non-zero
 * coefficients (n / (in_ch out_ch k_h k_w)) the dense layer (im2col and our
 * GEMM) is faster than the sparse one. Measured on a 2-core AMD EPYC with
 * AVX-512 (BENCHMARKS.md, "conv": 32 -> 64 channels, 3x3, 28x28 and 14x14):
 * at batch 64 our dense layer catches up from about 0.8 on 14x14 maps, and
 * not on 28x28 (the sparse layer 1.2x at density 1.0); at batch 1 the
 * sparse layer is faster at every density (2.1x to 2.4x at 1.0: no im2col).
 * Against im2col and OpenBLAS sgemm, which the plan does not use, dense
 * wins at batch 64 from a density of about 0.65. A plan picks per layer
 * with nn_conv_prefer_dense. */
#define NN_CONV_DENSE_ABOVE 0.85
/* 1 if a layer of shape s with n coefficients runs faster dense. */
int nn_conv_prefer_dense(const struct nn_conv_shape *s, size_t n);

/* ---- the parts around a convolution (same layouts) ----------------------- */

/* y[c][...] = act(y[c][...] + bias[c]) in place, activation ids of genome.h. */
void nn_conv_bias_act(float *y, size_t ch, size_t h, size_t w, size_t batch, const float *bias,
                      int act);
/* Max pooling over p x p windows, stride p (p >= 1; 1 copies): y [ch][h/p][w/p][batch].
 * arg (may be NULL) receives, per output, the index in x of the maximum (the first
 * one in row order on ties), for the backward pass. */
void nn_conv_pool_max(const float *x, size_t ch, size_t h, size_t w, size_t batch, size_t p,
                      float *y, uint32_t *arg);
/* g[k] = z[k] > 0 ? g[k] : 0 for k < n: relu's gradient at the sums z. */
void nn_conv_relu_grad(float *g, const float *z, size_t n);
/* dx (zeroed first, [ch][h][w][batch]) receives dy through arg. */
void nn_conv_pool_max_backward(const float *dy, const uint32_t *arg, size_t n_out, float *dx,
                               size_t n_in);

#endif
