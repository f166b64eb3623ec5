/* cnn_genome.c -- a CNN trainer from a genome with channels and filters,
 * and the trained network back into one (cnn.h: nn_cnn_from_genome,
 * nn_cnn_write_genome): the channels grouped into levels by genome.h's cut,
 * each level's filters a layer of the description, the rest the head.
 */
#include <stdlib.h>
#include <string.h>

#include "cnn_impl.h"

/* The source genome and how the trainer's parts map onto it (cnn_impl.h). */
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
    TV_FREE_ALL(s->chan, s->lvl, s->head_id, s);
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
    size_t i = tv_lower_u32(s->head_id, sizeof *s->head_id, 0, s->f, s->n_head, id);
    return i < s->n_head && s->head_id[i] == id ? (ptrdiff_t)i : -1;
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
    for (size_t i = 0; i < g->n_neurons && !rc; i++) /* the file's ids, not the head's */
        if ((rc = nn_model_check(&g->neurons[i], 0, "the trainer", err)))
            tv_error_prefix(err, "nn_cnn_from_genome");
    if (s) {
        genome_init(&s->g);
        rc = rc ? rc : genome_copy(&s->g, g, err);
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
    if (!rc) {
        (*out)->src = s;
        (*out)->src_free = src_free;
    } else {
        src_free(s);
    }
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
