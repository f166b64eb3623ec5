/* conv_plan.c -- plans of convolutional genomes (genome.h, "channels and
 * filters").
 *
 * A genome with channels compiles as the genome "expanded": every pooled
 * pixel of a hidden channel becomes a plan neuron at the channel's depth
 * (identity, no bias, no rows of its own), so that the triplet head gathers
 * or scatters from pixels like from any neuron. The filters become layers of
 * nn/conv/conv.h: filters whose targets share a depth and whose geometry (source
 * map, kernel, stride, pad) is the same form one layer of in_ch sources and
 * out_ch targets. The op list (ops.c) ends a run of layers at every layer
 * that holds channels, and puts there one NN_OP_CONV: it runs the layers of
 * that depth into each channel's pre-activation map, adds the bias, applies
 * the activation and pools into the channel's pixels, overwriting the 0 the
 * rows wrote there. Layers after it read the pixels as usual.
 *
 * Each layer runs sparse (nn_conv_forward) or dense (im2col + GEMM,
 * nn_conv_dense_forward) as nn_conv_prefer_dense says from its density.
 * The layers keep scratch, so they belong to the state, not to the plan: a
 * plan stays immutable and shareable. Pixel maps of B samples are the
 * state's rows: pixel j's lanes at y[j * stride ..], consecutive pixels
 * consecutive rows, which is nn/conv/conv.h's [ch][h][w][batch] with batch =
 * stride (padding lanes are computed and never read out).
 */
#include <stdlib.h>
#include <string.h>

#include "compile.h"
#include "conv.h"

/* A hidden channel of the plan. */
struct conv_chan {
    uint32_t first;    /* id of pooled pixel (0, 0) */
    uint32_t j;        /* its dense index (after the order phase) */
    uint32_t layer;    /* the plan layer of its pixels */
    float depth;       /* of the genome */
    size_t h, w, pool; /* map before pooling */
    float bias;        /* one per channel */
    int act;           /* enum genome_act */
    size_t acc;        /* offset of its map in the state's acc, in pixels */
};

/* One layer of nn/conv/conv.h. */
struct conv_group {
    struct nn_conv_shape shape;
    float depth; /* of its targets */
    uint32_t layer;
    uint32_t *in_first;         /* [in_ch] id of each source's pixel (0, 0) */
    uint32_t *in_j;             /* [in_ch] its dense index */
    uint32_t *out;              /* [out_ch] its targets, indices in chans */
    struct nn_conv_coef *coefs; /* [n_coefs] sorted by (out, in, ky, kx) */
    size_t n_coefs;
    int dense;  /* 1: run im2col + GEMM */
    int direct; /* 1: the sources are consecutive rows of the state: no copy */
};

struct nn_conv_net {
    size_t n_chans, n_groups, n_layers;
    struct conv_chan *chans;     /* [n_chans] */
    struct conv_group *groups;   /* [n_groups] in order of layer */
    uint8_t *layer_has;          /* [n_layers] 1: an NN_OP_CONV runs after this layer's rows */
    size_t acc_px, max_x, max_y; /* pixels of the state's scratch */
};

struct nn_conv_state {
    struct nn_conv **sparse;      /* [n_groups] */
    struct nn_conv_dense **dense; /* [n_groups] */
    float *x, *y, *acc;           /* [max_x | max_y | acc_px][stride] */
};

void nn_conv_net_free(struct nn_conv_net *net)
{
    if (!net)
        return;
    for (size_t i = 0; i < net->n_groups; i++) {
        free(net->groups[i].in_first);
        free(net->groups[i].in_j);
        free(net->groups[i].out);
        free(net->groups[i].coefs);
    }
    free(net->groups);
    free(net->chans);
    free(net->layer_has);
    free(net);
}

int nn_conv_net_has_layer(const struct nn_conv_net *net, size_t l)
{
    return net && l < net->n_layers && net->layer_has[l];
}

/* ---- the expanded genome and the layers ---------------------------------- */

int nn_conv_expand(const struct genome *g, struct genome *gx, struct tv_error *err)
{
    size_t n = g->n_neurons;
    for (size_t i = 0; i < g->n_channels; i++) {
        size_t ph, pw;
        if (g->channels[i].kind == GENOME_CHANNEL_HIDDEN)
            n += genome_channel_pooled(&g->channels[i], &ph, &pw);
    }
    genome_reset(gx);
    int rc = genome_reserve(gx, n, g->n_conns, err);
    if (rc)
        return rc;
    memcpy(gx->neurons, g->neurons, g->n_neurons * sizeof *g->neurons);
    gx->n_neurons = g->n_neurons;
    for (size_t i = 0; i < g->n_channels; i++) {
        const struct genome_channel *c = &g->channels[i];
        size_t ph, pw, n_px = genome_channel_pooled(c, &ph, &pw);
        for (size_t k = 0; c->kind == GENOME_CHANNEL_HIDDEN && k < n_px; k++)
            gx->neurons[gx->n_neurons++] = (struct genome_neuron){
                .id = c->first + (uint32_t)k, .kind = GENOME_HIDDEN, .depth = c->depth};
    }
    if (g->n_conns)
        memcpy(gx->conns, g->conns, g->n_conns * sizeof *g->conns);
    gx->n_conns = g->n_conns;
    return genome_canonicalize(gx, err);
}

static int same_geometry(const struct conv_group *a, const struct nn_conv_shape *s, float depth)
{
    return a->depth == depth && a->shape.in_h == s->in_h && a->shape.in_w == s->in_w &&
           a->shape.k_h == s->k_h && a->shape.k_w == s->k_w && a->shape.stride == s->stride &&
           a->shape.pad == s->pad;
}

/* Index of v in list[n], appending it if absent. */
static uint32_t index_of(uint32_t *list, size_t *n, uint32_t v)
{
    for (size_t i = 0; i < *n; i++)
        if (list[i] == v)
            return (uint32_t)i;
    list[*n] = v;
    return (uint32_t)(*n)++;
}

static int coef_order(const void *a, const void *b)
{
    const struct nn_conv_coef *x = a, *y = b;
    if (x->out != y->out)
        return x->out < y->out ? -1 : 1;
    if (x->in != y->in)
        return x->in < y->in ? -1 : 1;
    if (x->ky != y->ky)
        return x->ky < y->ky ? -1 : 1;
    return (x->kx > y->kx) - (x->kx < y->kx);
}

static int cmp_group(const void *a, const void *b)
{
    float x = ((const struct conv_group *)a)->depth, y = ((const struct conv_group *)b)->depth;
    return (x > y) - (x < y);
}

/* Puts filter f (of genome g) into its group (made if new). */
static int add_to_group(struct nn_conv_net *net, const struct genome *g,
                        const struct genome_filter *f)
{
    const struct genome_channel *src = &g->channels[genome_find_channel(g, f->from)];
    ptrdiff_t to = -1;
    for (size_t i = 0; i < net->n_chans; i++)
        if (net->chans[i].first == g->channels[genome_find_channel(g, f->to)].first)
            to = (ptrdiff_t)i;
    size_t ph, pw;
    genome_channel_pooled(src, &ph, &pw);
    struct nn_conv_shape s = {0, 0, ph, pw, f->kh, f->kw, f->stride, f->pad};
    struct conv_group *gr = NULL;
    for (size_t i = 0; i < net->n_groups && !gr; i++)
        if (same_geometry(&net->groups[i], &s, net->chans[to].depth))
            gr = &net->groups[i];
    if (!gr) {
        gr = &net->groups[net->n_groups++];
        memset(gr, 0, sizeof *gr);
        gr->shape = s;
        gr->depth = net->chans[to].depth;
        /* at most every channel on either side, every coefficient */
        gr->in_first = malloc(g->n_channels * sizeof *gr->in_first);
        gr->out = malloc(g->n_channels * sizeof *gr->out);
        gr->in_j = malloc(g->n_channels * sizeof *gr->in_j);
        gr->coefs = malloc(g->n_coefs * sizeof *gr->coefs);
        if (!gr->in_first || !gr->out || !gr->in_j || !gr->coefs)
            return TV_ENOMEM;
    }
    uint32_t in = index_of(gr->in_first, &gr->shape.in_ch, src->first);
    uint32_t out = index_of(gr->out, &gr->shape.out_ch, (uint32_t)to);
    for (size_t k = 0; k < f->n_coefs; k++) {
        const struct genome_coef *c = &g->coefs[f->coef0 + k];
        gr->coefs[gr->n_coefs++] = (struct nn_conv_coef){out, in, c->ky, c->kx, c->w};
    }
    return 0;
}

/* The channels and layers of g (valid), dense indices still unknown. */
static int net_build(const struct genome *g, struct nn_conv_net **out, struct tv_error *err)
{
    struct nn_conv_net *net = calloc(1, sizeof *net);
    if (!net)
        return tv_error_set(err, TV_ENOMEM, "conv plan: out of memory");
    net->chans = calloc(g->n_channels, sizeof *net->chans);
    net->groups = calloc(g->n_filters ? g->n_filters : 1, sizeof *net->groups);
    int rc = !net->chans || !net->groups ? TV_ENOMEM : 0;
    for (size_t i = 0; i < g->n_channels && !rc; i++) {
        const struct genome_channel *c = &g->channels[i];
        if (c->kind != GENOME_CHANNEL_HIDDEN)
            continue;
        net->chans[net->n_chans++] = (struct conv_chan){.first = c->first,
                                                        .depth = c->depth,
                                                        .h = c->h,
                                                        .w = c->w,
                                                        .pool = c->pool,
                                                        .bias = c->bias,
                                                        .act = c->act,
                                                        .acc = net->acc_px};
        net->acc_px += (size_t)c->h * c->w;
    }
    for (size_t i = 0; i < g->n_filters && !rc; i++)
        rc = add_to_group(net, g, &g->filters[i]);
    if (rc) {
        nn_conv_net_free(net);
        return tv_error_set(err, TV_ENOMEM, "conv plan: out of memory");
    }
    qsort(net->groups, net->n_groups, sizeof *net->groups, cmp_group);
    for (size_t i = 0; i < net->n_groups; i++) {
        struct conv_group *gr = &net->groups[i];
        qsort(gr->coefs, gr->n_coefs, sizeof *gr->coefs, coef_order);
        size_t in_px = gr->shape.in_h * gr->shape.in_w;
        size_t out_px = nn_conv_out_h(&gr->shape) * nn_conv_out_w(&gr->shape);
        if (in_px * gr->shape.in_ch > net->max_x)
            net->max_x = in_px * gr->shape.in_ch;
        if (out_px * gr->shape.out_ch > net->max_y)
            net->max_y = out_px * gr->shape.out_ch;
        gr->dense = nn_conv_prefer_dense(&gr->shape, gr->n_coefs);
    }
    *out = net;
    return 0;
}

/* After the order phase of compile c: dense indices and layers. */
int nn_conv_net_place(struct nn_conv_net *net, const struct nn_compile *c)
{
    net->n_layers = c->hd.n_layers;
    net->layer_has = calloc(net->n_layers ? net->n_layers : 1, 1);
    if (!net->layer_has)
        return tv_error_set(c->err, TV_ENOMEM, "conv plan: out of memory");
    for (size_t i = 0; i < net->n_chans; i++) {
        struct conv_chan *ch = &net->chans[i];
        ch->j = (uint32_t)nn_id_find(&c->ids, ch->first);
        ch->layer = c->layer_of[ch->j];
        net->layer_has[ch->layer] = 1;
    }
    for (size_t i = 0; i < net->n_groups; i++) {
        struct conv_group *gr = &net->groups[i];
        size_t in_px = gr->shape.in_h * gr->shape.in_w;
        gr->layer = net->chans[gr->out[0]].layer;
        gr->direct = 1;
        for (size_t k = 0; k < gr->shape.in_ch; k++) {
            gr->in_j[k] = (uint32_t)nn_id_find(&c->ids, gr->in_first[k]);
            if (k > 0 && gr->in_j[k] != gr->in_j[k - 1] + in_px)
                gr->direct = 0;
        }
    }
    return 0;
}

int nn_conv_plan_compile(const struct genome *g, const struct nn_opts *o, struct nn_plan **out,
                         struct tv_error *err)
{
    *out = NULL;
    if (o->trainable)
        return tv_error_set(err, TV_EINVAL,
                            "nn_opts.trainable: a genome with channels is trained by its own "
                            "trainer, not through a trainable plan");
    int rc = genome_validate_conv(g, NULL, err);
    if (rc)
        return rc;
    struct genome gx;
    genome_init(&gx);
    struct nn_conv_net *net = NULL;
    rc = nn_conv_expand(g, &gx, err);
    if (!rc)
        rc = net_build(g, &net, err);
    if (!rc) {
        struct nn_opts ox = *o;
        ox.tile_neurons = SIZE_MAX; /* the conv ops read rows by dense index */
        rc = nn_compile_run(&gx, &ox, net, out, err);
        if (rc)
            nn_conv_net_free(net);
    }
    genome_release(&gx);
    return rc;
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
    free(cs->sparse);
    free(cs->dense);
    free(cs->x);
    free(cs->y);
    free(cs->acc);
    free(cs);
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
    int rc = !cs->sparse || !cs->dense || !cs->x || !cs->y || !cs->acc
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
        nn_conv_bias_act(a, 1, ch->h, ch->w, st, &ch->bias, ch->act);
        nn_conv_pool_max(a, 1, ch->h, ch->w, st, ch->pool, s->y + (size_t)ch->j * st, NULL);
    }
}

nn_op_fn *const nn_conv_op[NN_TARGET_COUNT] = {conv_op, conv_op, conv_op};
