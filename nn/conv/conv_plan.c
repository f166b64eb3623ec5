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

#include "conv_impl.h"
#include "conv_net.h"

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
        qsort(gr->coefs, gr->n_coefs, sizeof *gr->coefs, nn_conv_coef_cmp);
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
        rc = nn_compile_run(&gx, &ox, net, nn_conv_net_place, out, err);
        if (rc)
            nn_conv_net_free(net);
    }
    genome_release(&gx);
    return rc;
}
