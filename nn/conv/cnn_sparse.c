/* cnn_sparse.c -- the physical pruning and growth of a CNN trainer's
 * coefficients (cnn.h: nn_cnn_prune, nn_cnn_grow): a layer is rebuilt from a
 * dense mask of the positions it keeps and adds.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "cnn_impl.h"

/* The dense position of a key: sorting by it is sorting by (out, in, ky, kx). */
static uint32_t key_pos(const struct nn_conv_shape *s, const struct nn_conv_coef *k)
{
    return (uint32_t)((((size_t)k->out * s->in_ch + k->in) * s->k_h + k->ky) * s->k_w + k->kx);
}

static struct nn_conv_coef pos_key(const struct nn_conv_shape *s, uint32_t p)
{
    struct nn_conv_coef k = {0};
    k.kx = (uint8_t)(p % s->k_w);
    p /= (uint32_t)s->k_w;
    k.ky = (uint8_t)(p % s->k_h);
    p /= (uint32_t)s->k_h;
    k.in = (uint32_t)(p % s->in_ch);
    k.out = (uint32_t)(p / s->in_ch);
    return k;
}

/* Rebuilds layer l from a dense mask of kept/added positions: keep[p] = 1
 * keeps the existing coefficient at p (its weight and state), 2 adds one
 * with weight w_new[p] and state 0. */
static int rebuild(struct cnn_layer *l, const uint8_t *keep, const float *w_new, const char *who,
                   size_t i, struct tv_error *err)
{
    size_t nd = l->n_dense, n_old = nn_conv_n_coefs(l->conv), n = 0;
    struct nn_conv_coef *nc = malloc((nd ? nd : 1) * sizeof *nc);
    float *st = malloc(3 * (nd ? nd : 1) * sizeof *st);
    if (!nc || !st) {
        free(nc);
        free(st);
        return tv_error_set(err, TV_ENOMEM, "%s: layer %zu: out of memory", who, i);
    }
    const float *w = nn_conv_weights(l->conv);
    size_t k = 0;
    for (uint32_t p = 0; p < nd; p++) {
        while (k < n_old && key_pos(&l->s, &l->coef[k]) < p)
            k++;
        int here = k < n_old && key_pos(&l->s, &l->coef[k]) == p;
        if (!keep[p])
            continue;
        nc[n] = pos_key(&l->s, p);
        int old = keep[p] == 1 && here;
        nc[n].w = old ? w[k] : w_new[p];
        st[n] = old ? l->m[k] : 0;
        st[nd + n] = old ? l->v[k] : 0;
        n++;
    }
    struct nn_conv *conv = NULL;
    int rc = nn_conv_new(&l->s, nc, n, l->max_batch, &conv, err);
    if (rc) {
        free(nc);
        free(st);
        return tv_error_prefix(err, "%s: layer %zu", who, i), rc;
    }
    nn_conv_free(l->conv);
    l->conv = conv;
    memcpy(l->coef, nc, n * sizeof *nc);
    memcpy(l->m, st, n * sizeof *st);
    memcpy(l->v, st + nd, n * sizeof *st);
    memset(l->dw, 0, nd * sizeof *l->dw);
    free(nc);
    free(st);
    return 0;
}

/* keep [n_dense]: 1 at the layer's present positions, else 0 */
static uint8_t *present_mask(const struct cnn_layer *l)
{
    uint8_t *keep = calloc(l->n_dense ? l->n_dense : 1, 1);
    if (keep)
        for (size_t k = 0; k < nn_conv_n_coefs(l->conv); k++)
            keep[key_pos(&l->s, &l->coef[k])] = 1;
    return keep;
}

struct ranked {
    float mag;
    uint32_t pos;
};

/* by |value| increasing, then position */
static int cmp_small(const void *a, const void *b)
{
    const struct ranked *x = a, *y = b;
    if (x->mag != y->mag)
        return x->mag < y->mag ? -1 : 1;
    return (x->pos > y->pos) - (x->pos < y->pos);
}

/* by |value| decreasing, then position */
static int cmp_large(const void *a, const void *b)
{
    const struct ranked *x = a, *y = b;
    if (x->mag != y->mag)
        return x->mag > y->mag ? -1 : 1;
    return (x->pos > y->pos) - (x->pos < y->pos);
}

int nn_cnn_prune(struct nn_cnn *c, size_t i, size_t k, struct tv_error *err)
{
    if (i >= c->n_layers)
        return tv_error_set(err, TV_EINVAL, "nn_cnn_prune: layer %zu of %zu", i, c->n_layers);
    struct cnn_layer *l = &c->l[i];
    size_t n = nn_conv_n_coefs(l->conv);
    if (k > n)
        k = n;
    if (!k)
        return 0;
    uint8_t *keep = present_mask(l);
    struct ranked *r = malloc(n * sizeof *r);
    if (!keep || !r) {
        free(keep);
        free(r);
        return tv_error_set(err, TV_ENOMEM, "nn_cnn_prune: layer %zu: out of memory", i);
    }
    const float *w = nn_conv_weights(l->conv);
    for (size_t j = 0; j < n; j++)
        r[j] = (struct ranked){fabsf(w[j]), key_pos(&l->s, &l->coef[j])};
    qsort(r, n, sizeof *r, cmp_small);
    for (size_t j = 0; j < k; j++)
        keep[r[j].pos] = 0;
    int rc = rebuild(l, keep, NULL, "nn_cnn_prune", i, err);
    free(keep);
    free(r);
    return rc;
}

/* The layer's dL/dw at every position, from the last batch: [n_dense]. */
static int dense_grad(struct nn_cnn *c, size_t i, float *g, struct tv_error *err)
{
    struct cnn_layer *l = &c->l[i];
    struct nn_conv_coef *all = malloc(l->n_dense * sizeof *all);
    if (!all)
        return tv_error_set(err, TV_ENOMEM, "nn_cnn_grow: layer %zu: out of memory", i);
    for (uint32_t p = 0; p < l->n_dense; p++)
        all[p] = pos_key(&l->s, p);
    struct nn_conv *full = NULL;
    int rc = nn_conv_new(&l->s, all, l->n_dense, c->last_batch, &full, err);
    free(all);
    if (rc)
        return tv_error_prefix(err, "nn_cnn_grow: layer %zu", i), rc;
    const float *in = i ? c->l[i - 1].p : c->l[0].x;
    nn_conv_backward(full, in, l->gz, c->last_batch, NULL, g);
    nn_conv_free(full);
    return 0;
}

int nn_cnn_grow(struct nn_cnn *c, size_t i, size_t k, int mode, float sigma, struct tv_rng *rng,
                size_t *n_grown, struct tv_error *err)
{
    if (n_grown)
        *n_grown = 0;
    if (i >= c->n_layers)
        return tv_error_set(err, TV_EINVAL, "nn_cnn_grow: layer %zu of %zu", i, c->n_layers);
    if (mode != NN_CNN_GROW_RIGL && mode != NN_CNN_GROW_SET)
        return tv_error_set(err, TV_EINVAL, "nn_cnn_grow: unknown mode %d", mode);
    if (mode == NN_CNN_GROW_RIGL && !c->last_batch)
        return tv_error_set(err, TV_ESTATE,
                            "nn_cnn_grow: rigl needs the gradient of a batch (no grad/step yet)");
    struct cnn_layer *l = &c->l[i];
    size_t nd = l->n_dense, absent = nd - nn_conv_n_coefs(l->conv);
    if (k > absent)
        k = absent;
    if (!k)
        return 0;
    uint8_t *keep = present_mask(l);
    float *wn = calloc(nd, sizeof *wn);
    struct ranked *r = malloc(absent * sizeof *r);
    int rc = 0;
    if (!keep || !wn || !r)
        rc = tv_error_set(err, TV_ENOMEM, "nn_cnn_grow: layer %zu: out of memory", i);
    if (!rc && mode == NN_CNN_GROW_RIGL && !(rc = dense_grad(c, i, wn, err))) {
        size_t a = 0;
        for (uint32_t p = 0; p < nd; p++)
            if (!keep[p])
                r[a++] = (struct ranked){fabsf(wn[p]), p};
        qsort(r, a, sizeof *r, cmp_large);
        for (size_t j = 0; j < k; j++) {
            keep[r[j].pos] = 2;
            wn[r[j].pos] = 0;
        }
    } else if (!rc && mode == NN_CNN_GROW_SET) {
        /* a partial Fisher-Yates shuffle of the absent positions */
        size_t a = 0;
        for (uint32_t p = 0; p < nd; p++)
            if (!keep[p])
                r[a++].pos = p;
        for (size_t j = 0; j < k; j++) {
            size_t q = j + tv_rng_below(rng, (uint32_t)(a - j));
            uint32_t p = r[q].pos;
            r[q].pos = r[j].pos;
            keep[p] = 2;
            wn[p] = (float)(sigma * tv_rng_normal(rng));
        }
    }
    if (!rc)
        rc = rebuild(l, keep, wn, "nn_cnn_grow", i, err);
    if (!rc && n_grown)
        *n_grown = k;
    free(keep);
    free(wn);
    free(r);
    return rc;
}
