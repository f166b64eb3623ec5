/*
 * cnn.c -- the trainer of sparse convolutional networks (cnn.h): the
 * convolution layers' forward and backward passes around a head trained by
 * train.c, and the physical pruning and growth of coefficients.
 *
 * Every map is in conv.h's feature-major layout [ch][h][w][batch]; the head
 * takes sample-major rows, so the last map is transposed into them, and its
 * input gradient comes back feature-major (nn_trainer_input_grad).
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "cnn.h"
#include "train_impl.h"

struct cnn_layer {
    struct nn_conv_shape s;
    size_t oh, ow; /* conv output */
    size_t ph, pw; /* pooled output */
    int act;
    size_t pool, max_batch;
    size_t n_dense;             /* out_ch * in_ch * k_h * k_w: the most coefficients */
    struct nn_conv *conv;       /* the sparse layer (its weights are the parameters) */
    struct nn_conv_coef *coef;  /* [n_dense] keys of the current list (w stale) */
    float *dw, *m, *v;          /* [n_dense] per coefficient, list order */
    float *bias, *bg, *bm, *bv; /* [out_ch] */
    float *x;                   /* input map [in_ch][in_h][in_w][max_batch] (layer 0 only) */
    float *z;                   /* act(conv + bias) [out_ch][oh][ow][max_batch] */
    float *p;                   /* pooled [out_ch][ph][pw][max_batch] */
    uint32_t *arg;              /* [out_ch][ph][pw][max_batch] */
    float *gz, *gp;             /* dL/d of z and p */
};

struct cnn_src;
static void src_free(struct cnn_src *s);

struct nn_cnn {
    struct nn_train_opts o;
    struct cnn_src *src; /* the genome it was made from (nn_cnn_from_genome), or NULL */
    size_t n_layers, n_in, n_head_in, max_batch;
    size_t last_batch; /* of the last grad/step, 0 before */
    struct cnn_layer *l;
    struct nn_trainer *head;
    float *hx; /* [max_batch][n_head_in] the head's input rows */
};

size_t nn_cnn_layer_out_size(const struct nn_cnn_layer *l)
{
    if (!l->pool)
        return 0;
    return l->s.out_ch * (nn_conv_out_h(&l->s) / l->pool) * (nn_conv_out_w(&l->s) / l->pool);
}

static void layer_release(struct cnn_layer *l)
{
    nn_conv_free(l->conv);
    void *p[] = {l->coef, l->dw, l->m, l->v, l->bias, l->bg, l->bm,
                 l->bv,   l->x,  l->z, l->p, l->arg,  l->gz, l->gp};
    for (size_t i = 0; i < sizeof p / sizeof p[0]; i++)
        free(p[i]);
}

void nn_cnn_free(struct nn_cnn *c)
{
    if (!c)
        return;
    for (size_t i = 0; i < c->n_layers; i++)
        layer_release(&c->l[i]);
    free(c->l);
    nn_trainer_free(c->head);
    src_free(c->src);
    free(c->hx);
    free(c);
}

size_t nn_cnn_n_inputs(const struct nn_cnn *c)
{
    return c->n_in;
}

size_t nn_cnn_n_outputs(const struct nn_cnn *c)
{
    return nn_trainer_n_outputs(c->head);
}

size_t nn_cnn_n_layers(const struct nn_cnn *c)
{
    return c->n_layers;
}

struct nn_trainer *nn_cnn_head(struct nn_cnn *c)
{
    return c->head;
}

/* The shape of layer i and how it chains from the one before (prev NULL for
 * layer 0). */
static int check_layer(const struct nn_cnn_layer *d, const struct nn_cnn_layer *prev, size_t i,
                       struct tv_error *err)
{
    const struct nn_conv_shape *s = &d->s;
    if (d->act != GENOME_ACT_RELU && d->act != GENOME_ACT_IDENTITY)
        return tv_error_set(err, TV_EINVAL,
                            "nn_cnn_new: layer %zu: activation %d (relu or identity only)", i,
                            d->act);
    size_t oh = nn_conv_out_h(s), ow = nn_conv_out_w(s);
    if (!oh || !ow)
        return tv_error_set(err, TV_EINVAL,
                            "nn_cnn_new: layer %zu: a %zux%zu kernel (pad %zu, stride %zu) makes "
                            "no map of a %zux%zu input",
                            i, s->k_h, s->k_w, s->pad, s->stride, s->in_h, s->in_w);
    if (!d->pool || d->pool > oh || d->pool > ow)
        return tv_error_set(err, TV_EINVAL,
                            "nn_cnn_new: layer %zu: pool %zu does not fit its %zux%zu map", i,
                            d->pool, oh, ow);
    if (prev) {
        size_t ph = nn_conv_out_h(&prev->s) / prev->pool, pw = nn_conv_out_w(&prev->s) / prev->pool;
        if (s->in_ch != prev->s.out_ch || s->in_h != ph || s->in_w != pw)
            return tv_error_set(err, TV_EINVAL,
                                "nn_cnn_new: layer %zu reads %zux%zux%zu but layer %zu gives "
                                "%zux%zux%zu",
                                i, s->in_ch, s->in_h, s->in_w, i - 1, prev->s.out_ch, ph, pw);
    }
    if (!d->bias || (d->n_coefs && !d->coef))
        return tv_error_set(err, TV_EINVAL, "nn_cnn_new: layer %zu: no bias or coefficient array",
                            i);
    return 0;
}

static int layer_init(struct cnn_layer *l, const struct nn_cnn_layer *d, size_t i, size_t mb,
                      struct tv_error *err)
{
    l->s = d->s;
    l->act = d->act;
    l->pool = d->pool;
    l->max_batch = mb;
    l->oh = nn_conv_out_h(&d->s);
    l->ow = nn_conv_out_w(&d->s);
    l->ph = l->oh / d->pool;
    l->pw = l->ow / d->pool;
    l->n_dense = d->s.out_ch * d->s.in_ch * d->s.k_h * d->s.k_w;
    size_t oc = d->s.out_ch, nz = oc * l->oh * l->ow * mb, np = oc * l->ph * l->pw * mb;
    size_t nd = l->n_dense ? l->n_dense : 1;
    int ok = (l->coef = malloc(nd * sizeof *l->coef)) != NULL;
    ok &= (l->dw = calloc(nd, sizeof(float))) != NULL;
    ok &= (l->m = calloc(nd, sizeof(float))) != NULL;
    ok &= (l->v = calloc(nd, sizeof(float))) != NULL;
    ok &= (l->bias = malloc(oc * sizeof(float))) != NULL;
    ok &= (l->bg = calloc(oc, sizeof(float))) != NULL;
    ok &= (l->bm = calloc(oc, sizeof(float))) != NULL;
    ok &= (l->bv = calloc(oc, sizeof(float))) != NULL;
    if (i == 0)
        ok &= (l->x = nn_conv_alloc(d->s.in_ch * d->s.in_h * d->s.in_w * mb)) != NULL;
    ok &= (l->z = nn_conv_alloc(nz)) != NULL;
    ok &= (l->gz = nn_conv_alloc(nz)) != NULL;
    ok &= (l->p = nn_conv_alloc(np)) != NULL;
    ok &= (l->gp = nn_conv_alloc(np)) != NULL;
    ok &= (l->arg = malloc(np * sizeof(uint32_t))) != NULL;
    if (!ok)
        return tv_error_set(err, TV_ENOMEM, "nn_cnn_new: layer %zu: out of memory", i);
    memcpy(l->bias, d->bias, oc * sizeof(float));
    if (d->n_coefs > l->n_dense)
        return tv_error_set(err, TV_EINVAL,
                            "nn_cnn_new: layer %zu: %zu coefficients, more than its %zu positions",
                            i, d->n_coefs, l->n_dense);
    if (d->n_coefs)
        memcpy(l->coef, d->coef, d->n_coefs * sizeof *l->coef);
    int rc = nn_conv_new(&d->s, d->coef, d->n_coefs, mb, &l->conv, err);
    if (rc)
        return tv_error_prefix(err, "nn_cnn_new: layer %zu", i), rc;
    return 0;
}

static int check_head(const struct genome *h, size_t f, struct tv_error *err)
{
    size_t k = 0;
    for (size_t i = 0; i < h->n_neurons; i++) {
        if (h->neurons[i].kind != GENOME_INPUT)
            continue;
        if (h->neurons[i].id != k)
            return tv_error_set(err, TV_EINVAL,
                                "nn_cnn_new: head: input %zu has id %u (the inputs must be ids 0 "
                                ".. %zu, the pixels of the last layer)",
                                k, (unsigned)h->neurons[i].id, f - 1);
        k++;
    }
    if (k != f)
        return tv_error_set(err, TV_EINVAL,
                            "nn_cnn_new: head: %zu inputs, but the last layer gives %zu pixels", k,
                            f);
    return 0;
}

int nn_cnn_new(const struct nn_cnn_desc *d, const struct nn_train_opts *o, struct nn_cnn **out,
               struct tv_error *err)
{
    *out = NULL;
    if (!d->n_layers || !d->layer || !d->head)
        return tv_error_set(err, TV_EINVAL, "nn_cnn_new: no layers or no head");
    for (size_t i = 0; i < d->n_layers; i++) {
        int rc = check_layer(&d->layer[i], i ? &d->layer[i - 1] : NULL, i, err);
        if (rc)
            return rc;
    }
    size_t f = nn_cnn_layer_out_size(&d->layer[d->n_layers - 1]);
    int rc = check_head(d->head, f, err);
    if (rc)
        return rc;
    struct nn_cnn *c = calloc(1, sizeof *c);
    if (!c || !(c->l = calloc(d->n_layers, sizeof *c->l))) {
        free(c);
        return tv_error_set(err, TV_ENOMEM, "nn_cnn_new: out of memory");
    }
    c->o = *o;
    c->n_layers = d->n_layers;
    c->max_batch = o->max_batch;
    c->n_head_in = f;
    const struct nn_conv_shape *s0 = &d->layer[0].s;
    c->n_in = s0->in_ch * s0->in_h * s0->in_w;
    for (size_t i = 0; i < d->n_layers && !rc; i++)
        rc = layer_init(&c->l[i], &d->layer[i], i, c->max_batch, err);
    if (!rc && (rc = nn_trainer_new(d->head, o, &c->head, err)))
        tv_error_prefix(err, "nn_cnn_new: head");
    if (!rc && !(c->hx = malloc(c->max_batch * f * sizeof(float))))
        rc = tv_error_set(err, TV_ENOMEM, "nn_cnn_new: out of memory");
    if (rc) {
        nn_cnn_free(c);
        return rc;
    }
    *out = c;
    return 0;
}

/* ---- forward and backward ---------------------------------------------------- */

/* dst [cols][rows] = src [rows][cols] transposed */
static void transpose(const float *src, size_t rows, size_t cols, float *dst)
{
    for (size_t r = 0; r < rows; r++)
        for (size_t k = 0; k < cols; k++)
            dst[k * rows + r] = src[r * cols + k];
}

static int check_call(const struct nn_cnn *c, const char *who, const float *x, size_t batch,
                      struct tv_error *err)
{
    if (!x)
        return tv_error_set(err, TV_EINVAL, "%s: no input array (x is NULL)", who);
    if (!batch || batch > c->max_batch)
        return tv_error_set(err, TV_EINVAL, "%s: batch %zu (1 .. max_batch %zu)", who, batch,
                            c->max_batch);
    return 0;
}

/* The layers' forward pass; leaves the head's rows in c->hx. */
static void forward(struct nn_cnn *c, const float *x, size_t batch)
{
    transpose(x, batch, c->n_in, c->l[0].x);
    const float *in = c->l[0].x;
    for (size_t i = 0; i < c->n_layers; i++) {
        struct cnn_layer *l = &c->l[i];
        nn_conv_forward(l->conv, in, batch, l->z);
        nn_conv_bias_act(l->z, l->s.out_ch, l->oh, l->ow, batch, l->bias, l->act);
        nn_conv_pool_max(l->z, l->s.out_ch, l->oh, l->ow, batch, l->pool, l->p, l->arg);
        in = l->p;
    }
    transpose(in, c->n_head_in, batch, c->hx);
}

/* The sum of v[0..n) in 8 interleaved partial sums added in a fixed order
 * (vectorizes; the same bits every time). */
static float sum8(const float *v, size_t n)
{
    float p[8] = {0};
    size_t k = 0;
    for (; k + 8 <= n; k += 8)
        for (size_t q = 0; q < 8; q++)
            p[q] += v[k + q];
    for (; k < n; k++)
        p[k % 8] += v[k];
    return ((p[0] + p[1]) + (p[2] + p[3])) + ((p[4] + p[5]) + (p[6] + p[7]));
}

static void backward(struct nn_cnn *c, size_t batch)
{
    for (size_t i = c->n_layers; i-- > 0;) {
        struct cnn_layer *l = &c->l[i];
        size_t oc = l->s.out_ch, plane = l->oh * l->ow * batch;
        nn_conv_pool_max_backward(l->gp, l->arg, oc * l->ph * l->pw * batch, l->gz, oc * plane);
        for (size_t ch = 0; ch < oc; ch++) {
            float *g = l->gz + ch * plane;
            const float *z = l->z + ch * plane;
            if (l->act == GENOME_ACT_RELU)
                nn_conv_relu_grad(g, z, plane);
            l->bg[ch] = sum8(g, plane);
        }
        const float *in = i ? c->l[i - 1].p : c->l[0].x;
        nn_conv_backward(l->conv, in, l->gz, batch, i ? c->l[i - 1].gp : NULL, l->dw);
    }
}

int nn_cnn_grad(struct nn_cnn *c, const float *x, const uint32_t *labels, const float *targets,
                size_t batch, double *loss, struct tv_error *err)
{
    int rc = check_call(c, "nn_cnn_grad", x, batch, err);
    if (rc)
        return rc;
    forward(c, x, batch);
    nn_trainer_keep_values(c->head, 1);
    if ((rc = nn_trainer_grad(c->head, c->hx, labels, targets, 1, batch, loss, err)) ||
        (rc = nn_trainer_input_grad(c->head, c->l[c->n_layers - 1].gp, err)))
        return tv_error_prefix(err, "nn_cnn_grad"), rc;
    backward(c, batch);
    c->last_batch = batch;
    return 0;
}

int nn_cnn_step(struct nn_cnn *c, const float *x, const uint32_t *labels, const float *targets,
                size_t batch, double *loss, struct tv_error *err)
{
    int rc = nn_cnn_grad(c, x, labels, targets, batch, loss, err);
    if (rc)
        return rc;
    struct nn_trainer *t = c->head;
    nn_trainer_update(t);
    /* the head's step count and bias corrections, as nn_trainer_update took them */
    float c1 = (float)(1.0 - pow((double)t->o.beta1, (double)t->n_steps));
    float c2 = (float)(1.0 - pow((double)t->o.beta2, (double)t->n_steps));
    for (size_t i = 0; i < c->n_layers; i++) {
        struct cnn_layer *l = &c->l[i];
        nn_tr_update[t->target](&t->o, c1, c2, nn_conv_weights(l->conv), l->dw, l->m, l->v,
                                nn_conv_n_coefs(l->conv));
        nn_tr_update[t->target](&t->o, c1, c2, l->bias, l->bg, l->bm, l->bv, l->s.out_ch);
    }
    return 0;
}

int nn_cnn_predict(struct nn_cnn *c, const float *x, size_t batch, float *out, struct tv_error *err)
{
    int rc = check_call(c, "nn_cnn_predict", x, batch, err);
    if (rc)
        return rc;
    if (!out)
        return tv_error_set(err, TV_EINVAL, "nn_cnn_predict: no output array (out is NULL)");
    forward(c, x, batch);
    if ((rc = nn_trainer_predict(c->head, c->hx, 1, batch, out, err)))
        return tv_error_prefix(err, "nn_cnn_predict"), rc;
    return 0;
}

int nn_cnn_layer(struct nn_cnn *c, size_t i, struct nn_cnn_layer_view *v, struct tv_error *err)
{
    if (i >= c->n_layers)
        return tv_error_set(err, TV_EINVAL, "nn_cnn_layer: layer %zu of %zu", i, c->n_layers);
    struct cnn_layer *l = &c->l[i];
    v->s = l->s;
    v->n_coefs = nn_conv_n_coefs(l->conv);
    v->coef = l->coef;
    v->w = nn_conv_weights(l->conv);
    v->grad = l->dw;
    v->bias = l->bias;
    v->bias_grad = l->bg;
    v->act = l->act;
    v->pool = l->pool;
    return 0;
}

int nn_cnn_write_head(const struct nn_cnn *c, struct genome *g, struct tv_error *err)
{
    return nn_trainer_write_genome(c->head, g, err);
}

/* ---- pruning and growth --------------------------------------------------------- */

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

/* ---- genomes with channels and filters ------------------------------------------ */

/* The source genome and how the trainer's parts map onto it (declared above). */
struct cnn_src {
    struct genome g;   /* a copy of the genome the trainer was made from */
    uint32_t *chan;    /* [n_channels] channel indices in g, level by level, by id */
    uint32_t *lvl;     /* [n_levels + 1] level l is chan[lvl[l] .. lvl[l + 1]) */
    size_t n_levels;   /* 1 + the layers */
    uint32_t *head_id; /* [n_head] the genome id of head id k */
    size_t n_head, f;  /* head ids; its inputs 0 .. f-1 are the last level's pixels */
};

static void src_free(struct cnn_src *s)
{
    if (!s)
        return;
    genome_release(&s->g);
    free(s->chan);
    free(s->lvl);
    free(s->head_id);
    free(s);
}

/* Groups the channels into levels: the input channels (level 0), then the
 * hidden channels of depth in (0, 1] stably by depth, cut by genome.h's rule
 * (a level per run of equal depth). */
static int src_levels(struct cnn_src *s, struct tv_error *err)
{
    const struct genome *g = &s->g;
    float *dep = malloc((g->n_channels + 1) * sizeof *dep);
    if (!dep)
        return tv_error_set(err, TV_ENOMEM, "nn_cnn_from_genome: out of memory");
    size_t n = 0;
    for (size_t i = 0; i < g->n_channels; i++)
        if (g->channels[i].kind == GENOME_CHANNEL_INPUT) {
            dep[n] = 0;
            s->chan[n++] = (uint32_t)i;
        }
    size_t n_in = n;
    for (size_t i = 0; i < g->n_channels; i++) {
        float d = g->channels[i].depth;
        if (g->channels[i].kind != GENOME_CHANNEL_HIDDEN || !(d > 0 && d <= 1))
            continue;
        size_t k = n++; /* insertion after the equal ones: stable */
        for (; k > n_in && dep[k - 1] > d; k--) {
            dep[k] = dep[k - 1];
            s->chan[k] = s->chan[k - 1];
        }
        dep[k] = d;
        s->chan[k] = (uint32_t)i;
    }
    size_t n_hidden = genome_layers_cut(dep + n_in, n - n_in, 0, NULL, NULL);
    int rc = 0;
    if (n_hidden > NN_CNN_MAX_LAYERS)
        rc = tv_error_set(err, TV_ELIMIT, "nn_cnn_from_genome: more than %d channel depths",
                          NN_CNN_MAX_LAYERS);
    else if (!n_in || !n_hidden)
        rc = tv_error_set(err, TV_EINVAL, "nn_cnn_from_genome: %s",
                          !n_in ? "no input channel" : "no hidden channel");
    else
        s->n_levels = genome_layers_cut(dep, n, n_in, s->lvl, NULL);
    free(dep);
    return rc;
}

/* The level and rank in it of channel index ci, from the tables. */
static int chan_place(const struct cnn_src *s, uint32_t ci, size_t *level, size_t *rank)
{
    for (size_t l = 0; l < s->n_levels; l++)
        for (size_t k = s->lvl[l]; k < s->lvl[l + 1]; k++)
            if (s->chan[k] == ci) {
                *level = l;
                *rank = k - s->lvl[l];
                return 0;
            }
    return -1;
}

/* Every channel of level l alike (size, pooling, activation); the inputs the
 * genome's input neurons in order. */
static int check_level(const struct cnn_src *s, size_t l, struct tv_error *err)
{
    const struct genome *g = &s->g;
    const struct genome_channel *c0 = &g->channels[s->chan[s->lvl[l]]];
    for (size_t k = s->lvl[l]; k < s->lvl[l + 1]; k++) {
        const struct genome_channel *c = &g->channels[s->chan[k]];
        if (c->h != c0->h || c->w != c0->w || c->pool != c0->pool || c->act != c0->act)
            return tv_error_set(err, TV_EINVAL,
                                "nn_cnn_from_genome: channels %u and %u are at one depth but "
                                "differ in size, pooling or activation",
                                (unsigned)c0->id, (unsigned)c->id);
        if (l && c->act != GENOME_ACT_RELU && c->act != GENOME_ACT_IDENTITY)
            return tv_error_set(err, TV_EINVAL,
                                "nn_cnn_from_genome: channel %u: activation %d (relu or identity "
                                "only)",
                                (unsigned)c->id, c->act);
    }
    if (l)
        return 0;
    /* the k-th input neuron is pixel k of the inputs channel by channel */
    size_t hw = (size_t)c0->h * c0->w, k = 0, ch = 0;
    for (size_t i = 0; i < g->n_neurons; i++) {
        if (g->neurons[i].kind != GENOME_INPUT)
            continue;
        size_t c = k / hw;
        if (c >= s->lvl[1] || g->neurons[i].id != g->channels[s->chan[c]].first + k % hw)
            return tv_error_set(err, TV_EINVAL,
                                "nn_cnn_from_genome: input %u is not pixel %zu of input channel "
                                "%zu (the inputs must be the input channels' pixels, channel by "
                                "channel)",
                                (unsigned)g->neurons[i].id, k % hw, c);
        k++;
        ch = c + 1;
    }
    if (ch != s->lvl[1] || k != ch * hw)
        return tv_error_set(err, TV_EINVAL,
                            "nn_cnn_from_genome: %zu inputs for %zu input channels of %zu pixels",
                            k, (size_t)s->lvl[1], hw);
    return 0;
}

/* (out, in, ky, kx) packed so that its order is the layer's (channels are
 * fewer than 2^16, GENOME_MAX_CHANNELS) */
static uint64_t coef_key(const struct nn_conv_coef *c)
{
    return (uint64_t)c->out << 48 | (uint64_t)c->in << 16 | (uint64_t)c->ky << 8 | c->kx;
}

static int cmp_coef(const void *a, const void *b)
{
    uint64_t x = coef_key(a), y = coef_key(b);
    return (x > y) - (x < y);
}

/* Layer l (level l-1 -> level l) of the description, its coefficients into
 * coef (room for all of g's). */
static int make_layer(const struct cnn_src *s, size_t l, struct nn_cnn_layer *d,
                      struct nn_conv_coef *coef, float *bias, struct tv_error *err)
{
    const struct genome *g = &s->g;
    const struct genome_channel *in = &g->channels[s->chan[s->lvl[l - 1]]];
    const struct genome_channel *out = &g->channels[s->chan[s->lvl[l]]];
    size_t ph, pw;
    genome_channel_pooled(in, &ph, &pw);
    memset(d, 0, sizeof *d);
    d->s.in_ch = s->lvl[l] - s->lvl[l - 1];
    d->s.out_ch = s->lvl[l + 1] - s->lvl[l];
    d->s.in_h = ph;
    d->s.in_w = pw;
    d->act = out->act;
    d->pool = out->pool ? out->pool : 1;
    size_t n = 0;
    int have = 0;
    for (size_t fi = 0; fi < g->n_filters; fi++) {
        const struct genome_filter *f = &g->filters[fi];
        ptrdiff_t ti = genome_find_channel(g, f->to), fr = genome_find_channel(g, f->from);
        size_t tl, tr, fl, frk;
        if (ti < 0 || fr < 0 || chan_place(s, (uint32_t)ti, &tl, &tr) ||
            chan_place(s, (uint32_t)fr, &fl, &frk))
            return tv_error_set(err, TV_EINVAL, "nn_cnn_from_genome: filter (%u, %u): no channel",
                                (unsigned)f->from, (unsigned)f->to);
        if (tl != l)
            continue;
        if (fl != l - 1)
            return tv_error_set(err, TV_EINVAL,
                                "nn_cnn_from_genome: filter (%u, %u) skips a level (channel depth)",
                                (unsigned)f->from, (unsigned)f->to);
        if (!have) {
            d->s.k_h = f->kh;
            d->s.k_w = f->kw;
            d->s.stride = f->stride;
            d->s.pad = f->pad;
            have = 1;
        } else if (f->kh != d->s.k_h || f->kw != d->s.k_w || f->stride != d->s.stride ||
                   f->pad != d->s.pad)
            return tv_error_set(err, TV_EINVAL,
                                "nn_cnn_from_genome: filter (%u, %u): its kernel, stride or "
                                "padding differ from the other filters into its level",
                                (unsigned)f->from, (unsigned)f->to);
        for (uint32_t k = 0; k < f->n_coefs; k++) {
            const struct genome_coef *gc = &g->coefs[f->coef0 + k];
            coef[n++] = (struct nn_conv_coef){(uint32_t)tr, (uint32_t)frk, gc->ky, gc->kx, gc->w};
        }
    }
    if (!have)
        return tv_error_set(err, TV_EINVAL, "nn_cnn_from_genome: no filter into channel %u's level",
                            (unsigned)out->id);
    qsort(coef, n, sizeof *coef, cmp_coef);
    for (size_t k = s->lvl[l]; k < s->lvl[l + 1]; k++)
        bias[k - s->lvl[l]] = g->channels[s->chan[k]].bias;
    d->coef = coef;
    d->n_coefs = n;
    d->bias = bias;
    return 0;
}

/* The head id of genome neuron id (not an input), or -1: head_id[f ..] is
 * sorted, as g's neurons are. */
static ptrdiff_t head_find(const struct cnn_src *s, uint32_t id)
{
    size_t lo = s->f, hi = s->n_head;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (s->head_id[mid] < id)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo < s->n_head && s->head_id[lo] == id ? (ptrdiff_t)lo : -1;
}

/* The head genome: inputs 0 .. f-1 the last level's pixels, then g's other
 * neurons (ids f + their rank); g's connections mapped. */
static int make_head(struct cnn_src *s, struct genome *h, struct tv_error *err)
{
    const struct genome *g = &s->g;
    size_t last = s->n_levels - 1, ph, pw;
    genome_channel_pooled(&g->channels[s->chan[s->lvl[last]]], &ph, &pw);
    s->f = (s->lvl[last + 1] - s->lvl[last]) * ph * pw;
    size_t n_in = 0;
    for (size_t i = 0; i < g->n_neurons; i++)
        n_in += g->neurons[i].kind == GENOME_INPUT;
    s->n_head = s->f + g->n_neurons - n_in;
    if (!(s->head_id = malloc(s->n_head * sizeof *s->head_id)))
        return tv_error_set(err, TV_ENOMEM, "nn_cnn_from_genome: out of memory");
    int rc = 0;
    for (size_t k = 0; k < s->f && !rc; k++) {
        size_t c = k / (ph * pw);
        s->head_id[k] = g->channels[s->chan[s->lvl[last] + c]].first + (uint32_t)(k % (ph * pw));
        rc = genome_add_neuron(h, (uint32_t)k, GENOME_INPUT, GENOME_ACT_IDENTITY, 0, 0, err);
    }
    size_t r = s->f;
    for (size_t i = 0; i < g->n_neurons && !rc; i++) {
        if (g->neurons[i].kind == GENOME_INPUT)
            continue;
        struct genome_neuron nn = g->neurons[i];
        s->head_id[r] = nn.id;
        nn.id = (uint32_t)r++;
        rc = genome_push_neuron(h, &nn, err);
    }
    for (size_t k = 0; k < g->n_conns && !rc; k++) {
        const struct genome_conn *c = &g->conns[k];
        struct genome_conn hc = *c;
        ptrdiff_t ni, ti, ci = genome_pixel_channel(g, c->from);
        size_t cl, cr;
        if (ci >= 0 && !chan_place(s, (uint32_t)ci, &cl, &cr) && cl == last) {
            const struct genome_channel *ch = &g->channels[ci];
            hc.from = (uint32_t)(cr * ph * pw + (c->from - ch->first));
        } else {
            if ((ni = head_find(s, c->from)) < 0)
                return tv_error_set(err, TV_EINVAL,
                                    "nn_cnn_from_genome: connection %u -> %u: the head starts at "
                                    "the deepest channels' pixels or at hidden neurons",
                                    (unsigned)c->from, (unsigned)c->to);
            hc.from = (uint32_t)ni;
        }
        ti = head_find(s, c->to); /* a neuron: genome_validate says so */
        hc.to = (uint32_t)ti;
        rc = genome_push_conn(h, &hc, err);
    }
    return rc ? rc : genome_canonicalize(h, err);
}

int nn_cnn_from_genome(const struct genome *g, const struct nn_train_opts *o, struct nn_cnn **out,
                       struct tv_error *err)
{
    *out = NULL;
    struct cnn_src *s = calloc(1, sizeof *s);
    struct nn_cnn_layer layer[NN_CNN_MAX_LAYERS];
    struct nn_conv_coef *coef = NULL;
    float *bias = NULL;
    struct genome head;
    genome_init(&head);
    int rc = s ? 0 : tv_error_set(err, TV_ENOMEM, "nn_cnn_from_genome: out of memory");
    if (!rc) {
        genome_init(&s->g);
        rc = genome_copy(&s->g, g, err);
    }
    size_t nc = g->n_channels;
    if (!rc && !((s->chan = malloc((nc + 1) * sizeof *s->chan)) &&
                 (s->lvl = malloc((NN_CNN_MAX_LAYERS + 2) * sizeof *s->lvl)) &&
                 (coef = malloc((g->n_coefs + 1) * sizeof *coef)) &&
                 (bias = malloc((nc + 1) * sizeof *bias))))
        rc = tv_error_set(err, TV_ENOMEM, "nn_cnn_from_genome: out of memory");
    if (!rc)
        rc = src_levels(s, err);
    for (size_t l = 0; l < (rc ? 0 : s->n_levels); l++)
        rc = rc ? rc : check_level(s, l, err);
    size_t n_coef = 0;
    for (size_t l = 1; l < (rc ? 0 : s->n_levels); l++) {
        if ((rc = make_layer(s, l, &layer[l - 1], coef + n_coef, bias + s->lvl[l], err)))
            break;
        n_coef += layer[l - 1].n_coefs;
    }
    if (!rc)
        rc = make_head(s, &head, err);
    if (!rc) {
        struct nn_cnn_desc d = {s->n_levels - 1, layer, &head};
        rc = nn_cnn_new(&d, o, out, err);
    }
    if (!rc)
        (*out)->src = s;
    else
        src_free(s);
    free(coef);
    free(bias);
    genome_release(&head);
    return rc;
}

int nn_cnn_write_genome(const struct nn_cnn *c, struct genome *g, struct tv_error *err)
{
    const struct cnn_src *s = c->src;
    if (!s)
        return tv_error_set(err, TV_ESTATE,
                            "nn_cnn_write_genome: the trainer was not made from "
                            "a genome (nn_cnn_from_genome)");
    struct genome t, h;
    genome_init(&t);
    genome_init(&h);
    int rc = genome_copy(&t, &s->g, err);
    if (!rc)
        rc = nn_trainer_write_genome(c->head, &h, err);
    /* channel biases and filters */
    while (!rc && t.n_filters)
        genome_remove_filter_at(&t, t.n_filters - 1);
    for (size_t l = 0; l + 1 < s->n_levels && !rc; l++) {
        const struct cnn_layer *cl = &c->l[l];
        const float *w = nn_conv_weights(cl->conv);
        size_t n = nn_conv_n_coefs(cl->conv);
        struct genome_coef *gc = malloc((n + 1) * sizeof *gc);
        if (!gc)
            rc = tv_error_set(err, TV_ENOMEM, "nn_cnn_write_genome: out of memory");
        for (size_t k = s->lvl[l + 1]; k < s->lvl[l + 2] && !rc; k++)
            t.channels[s->chan[k]].bias = cl->bias[k - s->lvl[l + 1]];
        for (size_t a = 0; a < n && !rc;) {
            size_t b = a;
            while (b < n && cl->coef[b].out == cl->coef[a].out &&
                   cl->coef[b].in == cl->coef[a].in) {
                gc[b - a] = (struct genome_coef){cl->coef[b].ky, cl->coef[b].kx, w[b]};
                b++;
            }
            struct genome_filter f = {0};
            f.from = s->g.channels[s->chan[s->lvl[l] + cl->coef[a].in]].id;
            f.to = s->g.channels[s->chan[s->lvl[l + 1] + cl->coef[a].out]].id;
            f.kh = (uint8_t)cl->s.k_h;
            f.kw = (uint8_t)cl->s.k_w;
            f.stride = (uint8_t)cl->s.stride;
            f.pad = (uint8_t)cl->s.pad;
            rc = genome_add_filter(&t, &f, gc, b - a, err);
            a = b;
        }
        free(gc);
    }
    /* the head: its neurons (inputs stay) and connections, ids mapped back */
    if (!rc) {
        size_t k = 0;
        for (size_t i = 0; i < t.n_neurons; i++)
            if (t.neurons[i].kind == GENOME_INPUT)
                t.neurons[k++] = t.neurons[i];
        t.n_neurons = k;
        t.n_conns = 0;
    }
    for (size_t i = 0; i < h.n_neurons && !rc; i++) {
        struct genome_neuron nn = h.neurons[i];
        if (nn.kind == GENOME_INPUT)
            continue;
        nn.id = s->head_id[nn.id];
        rc = genome_push_neuron(&t, &nn, err);
    }
    for (size_t i = 0; i < h.n_conns && !rc; i++) {
        struct genome_conn gc = {s->head_id[h.conns[i].from], s->head_id[h.conns[i].to],
                                 h.conns[i].weight};
        rc = genome_push_conn(&t, &gc, err);
    }
    if (!rc)
        rc = genome_canonicalize(&t, err);
    if (!rc)
        rc = genome_copy(g, &t, err);
    genome_release(&t);
    genome_release(&h);
    return rc;
}
