/* conv_op.c -- a convolutional plan at run time (conv_net.h): the NN_OP_CONV
 * op, which runs the layers of filters of one depth, then bias, activation
 * and pooling into the channels' pixels; the states' layers and scratch; and
 * freeing the net. conv_plan.c builds the net while compiling. */
#include <stdlib.h>
#include <string.h>

#include "conv_net.h"

void nn_conv_net_free(struct nn_conv_net *net)
{
    if (!net)
        return;
    for (size_t i = 0; i < net->n_groups; i++) {
        struct conv_group *gr = &net->groups[i];
        TV_FREE_ALL(gr->in_first, gr->in_j, gr->out, gr->coefs);
    }
    TV_FREE_ALL(net->groups, net->chans, net->layer_has, net);
}

int nn_conv_net_has_layer(const struct nn_conv_net *net, size_t l)
{
    return net && l < net->n_layers && net->layer_has[l];
}

/* ---- states -------------------------------------------------------------- */

void nn_conv_state_free(const struct nn_plan *p, struct nn_conv_state *cs)
{
    if (!cs)
        return;
    for (size_t i = 0; p && i < p->conv->n_groups; i++) {
        nn_conv_free(cs->sparse ? cs->sparse[i] : NULL);
        nn_conv_dense_free(cs->dense ? cs->dense[i] : NULL);
    }
    TV_FREE_ALL(cs->sparse, cs->dense, cs->x, cs->y, cs->acc, cs->pre, cs);
}

/* The dense weights of a group: [out][in][kh][kw], zeros included. */
static float *dense_weights(const struct conv_group *gr)
{
    const struct nn_conv_shape *s = &gr->shape;
    size_t kk = s->k_h * s->k_w;
    float *w = calloc(s->out_ch * s->in_ch * kk, sizeof *w);
    for (size_t k = 0; w && k < gr->n_coefs; k++) {
        const struct nn_conv_coef *c = &gr->coefs[k];
        w[(c->out * s->in_ch + c->in) * kk + c->ky * s->k_w + c->kx] = c->w;
    }
    return w;
}

int nn_conv_state_new(const struct nn_plan *p, size_t stride, struct nn_conv_state **out,
                      struct tv_error *err)
{
    const struct nn_conv_net *net = p->conv;
    struct nn_conv_state *cs = calloc(1, sizeof *cs);
    *out = NULL;
    if (!cs)
        return tv_error_set(err, TV_ENOMEM, "nn_state_new: out of memory for the conv layers");
    size_t ng = net->n_groups ? net->n_groups : 1;
    cs->sparse = calloc(ng, sizeof *cs->sparse);
    cs->dense = calloc(ng, sizeof *cs->dense);
    cs->x = malloc((net->max_x ? net->max_x : 1) * stride * sizeof *cs->x);
    cs->y = malloc((net->max_y ? net->max_y : 1) * stride * sizeof *cs->y);
    cs->acc = malloc((net->acc_px ? net->acc_px : 1) * stride * sizeof *cs->acc);
    if (net->keep_pre)
        cs->pre = calloc((net->acc_px ? net->acc_px : 1) * stride, sizeof *cs->pre);
    int rc =
        !cs->sparse || !cs->dense || !cs->x || !cs->y || !cs->acc || (net->keep_pre && !cs->pre)
            ? tv_error_set(err, TV_ENOMEM, "nn_state_new: out of memory for the conv layers")
            : 0;
    for (size_t i = 0; i < net->n_groups && !rc; i++) {
        const struct conv_group *gr = &net->groups[i];
        if (gr->dense) {
            float *w = dense_weights(gr);
            rc = w ? nn_conv_dense_new(&gr->shape, w, stride, &cs->dense[i], err)
                   : tv_error_set(err, TV_ENOMEM, "nn_state_new: out of memory");
            free(w);
        } else {
            rc = nn_conv_new(&gr->shape, gr->coefs, gr->n_coefs, stride, &cs->sparse[i], err);
        }
    }
    if (rc) {
        nn_conv_state_free(p, cs);
        return rc;
    }
    *out = cs;
    return 0;
}

/* ---- the op ------------------------------------------------------------- */

/* The channels of layer op->l0: their layers of filters into the
 * pre-activation maps, then bias, activation and pooling into the pixels. */
static void conv_op(const struct nn_plan *p, struct nn_state *s, const struct nn_op *op)
{
    const struct nn_conv_net *net = p->conv;
    struct nn_conv_state *cs = s->conv;
    size_t st = s->stride, l = op->l0;
    for (size_t i = 0; i < net->n_chans; i++)
        if (net->chans[i].layer == l)
            memset(cs->acc + net->chans[i].acc * st, 0,
                   net->chans[i].h * net->chans[i].w * st * sizeof *cs->acc);
    for (size_t i = 0; i < net->n_groups; i++) {
        const struct conv_group *gr = &net->groups[i];
        if (gr->layer != l)
            continue;
        size_t in_n = gr->shape.in_h * gr->shape.in_w * st;
        /* inputs of a batch may be read in place from the caller's rows */
        const float *rows = s->batch > 1 && gr->in_j[0] < p->n_in ? s->in_rows : s->y;
        const float *x = rows + (size_t)gr->in_j[0] * st;
        if (!gr->direct) {
            for (size_t k = 0; k < gr->shape.in_ch; k++) {
                rows = s->batch > 1 && gr->in_j[k] < p->n_in ? s->in_rows : s->y;
                memcpy(cs->x + k * in_n, rows + (size_t)gr->in_j[k] * st, in_n * sizeof *cs->x);
            }
            x = cs->x;
        }
        if (gr->dense)
            nn_conv_dense_forward(cs->dense[i], x, st, cs->y);
        else
            nn_conv_forward(cs->sparse[i], x, st, cs->y);
        size_t out_n = nn_conv_out_h(&gr->shape) * nn_conv_out_w(&gr->shape) * st;
        for (size_t o = 0; o < gr->shape.out_ch; o++) {
            float *a = cs->acc + net->chans[gr->out[o]].acc * st;
            const float *y = cs->y + o * out_n;
            for (size_t k = 0; k < out_n; k++)
                a[k] += y[k];
        }
    }
    for (size_t i = 0; i < net->n_chans; i++) {
        const struct conv_chan *ch = &net->chans[i];
        if (ch->layer != l)
            continue;
        float *a = cs->acc + ch->acc * st;
        if (cs->pre) /* the pre-activations, as nn_conv_bias_act adds the bias */
            for (size_t k = 0, m = ch->h * ch->w * st; k < m; k++)
                cs->pre[ch->acc * st + k] = a[k] + ch->bias;
        nn_conv_bias_act(a, 1, ch->h, ch->w, st, &ch->bias, ch->act);
        nn_conv_pool_max(a, 1, ch->h, ch->w, st, ch->pool, s->y + (size_t)ch->j * st, NULL);
    }
}

nn_op_fn *const nn_conv_op[NN_TARGET_COUNT] = {conv_op, conv_op, conv_op};

/* ---- what quantization reads (nn_impl.h) ---------------------------------- */

size_t nn_conv_net_n_chans(const struct nn_conv_net *net)
{
    return net ? net->n_chans : 0;
}

size_t nn_conv_net_n_groups(const struct nn_conv_net *net)
{
    return net ? net->n_groups : 0;
}

void nn_conv_net_chan(const struct nn_conv_net *net, size_t i, struct nn_conv_chan_view *v)
{
    const struct conv_chan *ch = &net->chans[i];
    *v = (struct nn_conv_chan_view){ch->j, ch->layer, ch->h, ch->w, ch->pool, ch->bias, ch->act};
}

void nn_conv_net_group(const struct nn_conv_net *net, size_t i, struct nn_conv_group_view *v)
{
    const struct conv_group *gr = &net->groups[i];
    *v = (struct nn_conv_group_view){&gr->shape, gr->layer, gr->in_j,
                                     gr->out,    gr->coefs, gr->n_coefs};
}

void nn_conv_net_keep_pre(struct nn_conv_net *net)
{
    net->keep_pre = 1;
}

const float *nn_conv_pre(const struct nn_state *s, size_t i)
{
    const struct nn_conv_state *cs = s->conv;
    return cs && cs->pre ? cs->pre + s->plan->conv->chans[i].acc * s->stride : NULL;
}
