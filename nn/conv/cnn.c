/*
 * cnn.c -- the trainer of sparse convolutional networks (cnn.h): the
 * convolution layers' forward and backward passes around a head trained by
 * train.c, and the optimizer step. The physical pruning and growth of
 * coefficients are in cnn_sparse.c, the way from and back to a genome with
 * channels in cnn_genome.c; both call this file, never the other way.
 *
 * Every map is in conv.h's feature-major layout [ch][h][w][batch]; the head
 * takes sample-major rows, so the last map is transposed into them, and its
 * input gradient comes back feature-major (nn_trainer_input_grad).
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "cnn_impl.h"

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
    if (c->src_free)
        c->src_free(c->src);
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
