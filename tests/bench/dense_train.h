/* dense_train.h -- the dense C baseline of a training step, on OpenBLAS.
 *
 * A dense multilayer perceptron (ReLU hidden layers, identity outputs,
 * softmax cross-entropy, the loss of nn/train/train.h) trained one batch at a time
 * the plain way: every product is one cblas_sgemm (cli_blas, one thread),
 *   forward   Z_l = A_{l-1} W_l^T + b_l,  A_l = relu(Z_l)
 *   output    G_L = (softmax(Z_L) - onehot(label)) / batch
 *   backward  dW_l = G_l^T A_{l-1},  db_l = sum over the batch of G_l,
 *             G_{l-1} = (G_l W_l) * (Z_{l-1} > 0)   (not for the inputs)
 *   update    SGD w <- w - lr g, or Adam (the formulas of nn/train/train.h),
 * with W_l stored [out][in] row-major and samples row-major. This is the
 * step PyTorch runs for the same network, without Python around it: what
 * dense training costs in C on this machine. Included by bench_train.c.
 */
#ifndef TREVO_DENSE_TRAIN_H
#define TREVO_DENSE_TRAIN_H

#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "blas.h"

#define DT_MAX_LAYERS 8

struct dense_train {
    size_t n_layers; /* sizes[0..n_layers): inputs, hidden..., outputs */
    size_t sizes[DT_MAX_LAYERS];
    size_t batch;
    int adam; /* 0: SGD */
    float lr;
    uint64_t t;              /* Adam steps taken */
    float *w[DT_MAX_LAYERS]; /* [l] for l >= 1: [sizes[l]][sizes[l-1]] */
    float *b[DT_MAX_LAYERS]; /* [sizes[l]] */
    float *gw[DT_MAX_LAYERS], *gb[DT_MAX_LAYERS];
    float *mw[DT_MAX_LAYERS], *vw[DT_MAX_LAYERS], *mb[DT_MAX_LAYERS], *vb[DT_MAX_LAYERS];
    float *a[DT_MAX_LAYERS]; /* [batch][sizes[l]]: A_l (a[0] is the input) */
    float *g[DT_MAX_LAYERS]; /* [batch][sizes[l]]: G_l */
    double loss;             /* the last step's mean loss */
};

static void dt_free(struct dense_train *d)
{
    for (size_t l = 0; l < DT_MAX_LAYERS; l++) {
        free(d->w[l]), free(d->b[l]), free(d->gw[l]), free(d->gb[l]), free(d->mw[l]);
        free(d->vw[l]), free(d->mb[l]), free(d->vb[l]), free(d->a[l]), free(d->g[l]);
    }
    memset(d, 0, sizeof *d);
}

/* Weights N(0, 2 / fan-in) from a small generator (their values do not
 * change the time of a dense step), biases 0. 0, or -1 out of memory. */
static int dt_init(struct dense_train *d, const size_t *sizes, size_t n_layers, size_t batch,
                   int adam, float lr, uint64_t seed)
{
    memset(d, 0, sizeof *d);
    if (n_layers < 2 || n_layers > DT_MAX_LAYERS)
        return -1;
    d->n_layers = n_layers;
    d->batch = batch;
    d->adam = adam;
    d->lr = lr;
    memcpy(d->sizes, sizes, n_layers * sizeof *sizes);
    struct tv_rng rng;
    tv_rng_init(&rng, seed, 0x64656e7365ULL, 0);
    int bad = 0;
    for (size_t l = 0; l < n_layers; l++) {
        bad |= !(d->a[l] = calloc(batch * sizes[l], sizeof(float)));
        bad |= !(d->g[l] = calloc(batch * sizes[l], sizeof(float)));
        if (l == 0)
            continue;
        size_t nw = sizes[l] * sizes[l - 1];
        bad |= !(d->w[l] = malloc(nw * sizeof(float)));
        bad |= !(d->gw[l] = calloc(nw, sizeof(float)));
        bad |= !(d->mw[l] = calloc(nw, sizeof(float)));
        bad |= !(d->vw[l] = calloc(nw, sizeof(float)));
        bad |= !(d->b[l] = calloc(sizes[l], sizeof(float)));
        bad |= !(d->gb[l] = calloc(sizes[l], sizeof(float)));
        bad |= !(d->mb[l] = calloc(sizes[l], sizeof(float)));
        bad |= !(d->vb[l] = calloc(sizes[l], sizeof(float)));
        if (bad)
            break;
        double sd = sqrt(2.0 / (double)sizes[l - 1]);
        for (size_t k = 0; k < nw; k++)
            d->w[l][k] = (float)(sd * tv_rng_normal(&rng));
    }
    if (bad)
        dt_free(d);
    return bad ? -1 : 0;
}

static void dt_update(struct dense_train *d, float *w, const float *g, float *m, float *v, size_t n)
{
    if (!d->adam) {
        for (size_t k = 0; k < n; k++)
            w[k] -= d->lr * g[k];
        return;
    }
    const float b1 = 0.9f, b2 = 0.999f, eps = 1e-8f;
    float c1 = (float)(1.0 - pow(b1, (double)d->t)), c2 = (float)(1.0 - pow(b2, (double)d->t));
    for (size_t k = 0; k < n; k++) {
        m[k] = b1 * m[k] + (1 - b1) * g[k];
        v[k] = b2 * v[k] + (1 - b2) * g[k] * g[k];
        w[k] -= d->lr * (m[k] / c1) / (sqrtf(v[k] / c2) + eps);
    }
}

/* Forward and backward on x [batch][sizes[0]] and labels [batch]: the
 * gradients in gw, gb and the mean loss in d->loss; no update. */
static void dt_grad(struct dense_train *d, const float *x, const uint32_t *labels)
{
    const int B = (int)d->batch;
    const size_t L = d->n_layers - 1;
    memcpy(d->a[0], x, d->batch * d->sizes[0] * sizeof(float));
    for (size_t l = 1; l <= L; l++) {
        const int n = (int)d->sizes[l], k = (int)d->sizes[l - 1];
        float *z = d->a[l];
        for (int s = 0; s < B; s++)
            memcpy(z + (size_t)s * n, d->b[l], (size_t)n * sizeof(float));
        cli_blas.sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, B, n, k, 1.0f, d->a[l - 1], k,
                       d->w[l], k, 1.0f, z, n);
        if (l < L)
            for (size_t i = 0; i < (size_t)B * n; i++)
                z[i] = z[i] > 0 ? z[i] : 0.0f;
    }
    /* softmax cross-entropy, G_L = (p - onehot) / batch */
    const size_t n_out = d->sizes[L];
    double loss = 0;
    for (int s = 0; s < B; s++) {
        const float *z = d->a[L] + (size_t)s * n_out;
        float *g = d->g[L] + (size_t)s * n_out;
        float mx = z[0];
        for (size_t o = 1; o < n_out; o++)
            mx = z[o] > mx ? z[o] : mx;
        double sum = 0;
        for (size_t o = 0; o < n_out; o++)
            sum += exp((double)(z[o] - mx));
        for (size_t o = 0; o < n_out; o++)
            g[o] = (float)(exp((double)(z[o] - mx)) / sum / B);
        g[labels[s]] -= 1.0f / (float)B;
        loss += log(sum) - (double)(z[labels[s]] - mx);
    }
    d->loss = loss / B;
    for (size_t l = L; l >= 1; l--) {
        const int n = (int)d->sizes[l], k = (int)d->sizes[l - 1];
        cli_blas.sgemm(CblasRowMajor, CblasTrans, CblasNoTrans, n, k, B, 1.0f, d->g[l], n,
                       d->a[l - 1], k, 0.0f, d->gw[l], k);
        memset(d->gb[l], 0, (size_t)n * sizeof(float));
        for (int s = 0; s < B; s++)
            for (int j = 0; j < n; j++)
                d->gb[l][j] += d->g[l][(size_t)s * n + j];
        if (l == 1)
            break;
        cli_blas.sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, B, k, n, 1.0f, d->g[l], n,
                       d->w[l], k, 0.0f, d->g[l - 1], k);
        for (size_t i = 0; i < (size_t)B * k; i++)
            d->g[l - 1][i] = d->a[l - 1][i] > 0 ? d->g[l - 1][i] : 0.0f;
    }
}

/* One training step: dt_grad, then the update of every weight and bias. */
static void dt_step(struct dense_train *d, const float *x, const uint32_t *labels)
{
    dt_grad(d, x, labels);
    d->t++;
    for (size_t l = 1; l < d->n_layers; l++) {
        dt_update(d, d->w[l], d->gw[l], d->mw[l], d->vw[l], d->sizes[l] * d->sizes[l - 1]);
        dt_update(d, d->b[l], d->gb[l], d->mb[l], d->vb[l], d->sizes[l]);
    }
}

#endif
