/* reference.c -- the semantics of docs/architecture.md as a plain loop over the triplets,
 * to check the fast path against. Slow on purpose: nothing is reordered,
 * nothing is skipped, sums are in double. */
#include <stdlib.h>
#include <string.h>

#include "nn_impl.h"

struct nn_reference {
    const struct genome *g; /* borrowed, or &gx */
    /* A genome with channels: src, borrowed, runs as gx, its expansion
     * (nn_conv_expand); px_chan[j] is the channel of src whose pixel neuron j
     * of gx is, else -1. */
    const struct genome *src;
    struct genome gx;
    int32_t *px_chan; /* [n] */
    size_t batch, n, n_in, n_out;
    uint32_t *order;     /* [n] neuron indices, inputs by id then by (depth, id) */
    uint32_t *from, *to; /* [n_conns] neuron index of each end */
    float *y, *y_prev;   /* [batch][n] by neuron index */
};

/* Sort key of a neuron: inputs first, then by (depth, id). */
struct ref_key {
    int not_input;
    float depth;
    uint32_t id, index;
};

static int by_depth(const void *pa, const void *pb)
{
    const struct ref_key *u = pa, *v = pb;
    if (u->not_input != v->not_input)
        return u->not_input - v->not_input;
    if (u->depth != v->depth)
        return u->depth < v->depth ? -1 : 1;
    return u->id < v->id ? -1 : u->id > v->id;
}

/* (nn_impl.h) */
int nn_reference_order(const struct genome *g, uint32_t *order, const char *fn,
                       struct tv_error *err)
{
    struct ref_key *keys = malloc((g->n_neurons + 1) * sizeof *keys);
    if (!keys)
        return tv_error_set(err, TV_ENOMEM, "%s: out of memory", fn);
    for (size_t i = 0; i < g->n_neurons; i++) {
        const struct genome_neuron *u = &g->neurons[i];
        keys[i] = (struct ref_key){u->kind != GENOME_INPUT, u->depth, u->id, (uint32_t)i};
    }
    qsort(keys, g->n_neurons, sizeof *keys, by_depth);
    for (size_t i = 0; i < g->n_neurons; i++)
        order[i] = keys[i].index;
    free(keys);
    return 0;
}

/* r runs g's expansion; px_chan marks the pixels. */
static int conv_reference(struct nn_reference *r, const struct genome *g, struct tv_error *err)
{
    r->src = g;
    int rc = nn_conv_expand(g, &r->gx, err);
    if (rc)
        return rc;
    r->g = &r->gx;
    r->px_chan = malloc((r->gx.n_neurons + 1) * sizeof *r->px_chan);
    if (!r->px_chan)
        return tv_error_set(err, TV_ENOMEM, "nn_reference_new: out of memory");
    for (size_t j = 0; j < r->gx.n_neurons; j++) {
        ptrdiff_t c = genome_find_neuron(g, r->gx.neurons[j].id) < 0
                          ? genome_pixel_channel(g, r->gx.neurons[j].id)
                          : -1;
        r->px_chan[j] = (int32_t)c;
    }
    return 0;
}

/* Pixel (py, px) of the pooled map of channel c in y (by neuron index of
 * gx), 0 outside the map. */
static double pixel(const struct nn_reference *r, const struct genome_channel *c, long py, long px,
                    const float *y)
{
    size_t ph, pw;
    genome_channel_pooled(c, &ph, &pw);
    if (py < 0 || px < 0 || (size_t)py >= ph || (size_t)px >= pw)
        return 0;
    return y[genome_find_neuron(r->g, c->first + (uint32_t)((size_t)py * pw + (size_t)px))];
}

/* Channel c of the source genome, straight from genome.h's definition: at
 * each pixel of its map, bias plus every coefficient of every filter into it
 * times the shifted pixel of the filter's source, the activation, then the
 * maximum over each pooling window, into its pixel neurons. */
static void conv_channel(const struct nn_reference *r, const struct genome_channel *c, float *y)
{
    const struct genome *g = r->src;
    size_t ph, pw, p = c->pool;
    genome_channel_pooled(c, &ph, &pw);
    for (size_t py = 0; py < ph; py++)
        for (size_t px = 0; px < pw; px++) {
            float best = 0;
            for (size_t q = 0; q < p * p; q++) {
                long yy = (long)(py * p + q / p), xx = (long)(px * p + q % p);
                double z = c->bias;
                for (size_t i = 0; i < g->n_filters; i++) {
                    const struct genome_filter *f = &g->filters[i];
                    if (f->to != c->id)
                        continue;
                    const struct genome_channel *s = &g->channels[genome_find_channel(g, f->from)];
                    for (size_t k = 0; k < f->n_coefs; k++) {
                        const struct genome_coef *w = &g->coefs[f->coef0 + k];
                        z += (double)w->w * pixel(r, s, yy * f->stride + w->ky - f->pad,
                                                  xx * f->stride + w->kx - f->pad, y);
                    }
                }
                float v = nn_act_apply(c->act, (float)z);
                best = q == 0 || v > best ? v : best;
            }
            y[genome_find_neuron(r->g, c->first + (uint32_t)(py * pw + px))] = best;
        }
}

int nn_reference_new(const struct genome *g, size_t batch, struct nn_reference **out,
                     struct tv_error *err)
{
    *out = NULL;
    if (batch == 0)
        return tv_error_set(err, TV_EINVAL, "nn_reference_new: batch must be at least 1");
    int rc = genome_validate(g, NULL, err);
    for (size_t i = 0; i < g->n_neurons && !rc; i++)
        rc = nn_model_check(&g->neurons[i], 0, "the engine", err);
    if (rc)
        return rc;
    struct nn_reference *r = calloc(1, sizeof *r);
    if (!r)
        return tv_error_set(err, TV_ENOMEM, "nn_reference_new: out of memory");
    r->g = g;
    if (g->n_channels && (rc = conv_reference(r, g, err))) {
        nn_reference_free(r);
        return rc;
    }
    g = r->g;
    r->batch = batch;
    r->n = g->n_neurons;
    r->order = malloc(r->n * sizeof *r->order);
    r->from = malloc((g->n_conns + 1) * sizeof *r->from);
    r->to = malloc((g->n_conns + 1) * sizeof *r->to);
    r->y = calloc(batch * r->n, sizeof *r->y);
    r->y_prev = calloc(batch * r->n, sizeof *r->y_prev);
    if (!r->order || !r->from || !r->to || !r->y || !r->y_prev) {
        nn_reference_free(r);
        return tv_error_set(err, TV_ENOMEM, "nn_reference_new: out of memory");
    }
    if ((rc = nn_reference_order(g, r->order, "nn_reference_new", err))) {
        nn_reference_free(r);
        return rc;
    }
    r->n_in = genome_count_kind(g, GENOME_INPUT);
    r->n_out = genome_count_kind(g, GENOME_OUTPUT);
    for (size_t c = 0; c < g->n_conns; c++) {
        r->from[c] = (uint32_t)genome_find_neuron(g, g->conns[c].from);
        r->to[c] = (uint32_t)genome_find_neuron(g, g->conns[c].to);
    }
    *out = r;
    return 0;
}

void nn_reference_free(struct nn_reference *r)
{
    if (!r)
        return;
    TV_FREE_ALL(r->order, r->from, r->to, r->y, r->y_prev, r->px_chan);
    genome_release(&r->gx);
    free(r);
}

void nn_reference_reset(struct nn_reference *r)
{
    memset(r->y, 0, r->batch * r->n * sizeof *r->y);
    memset(r->y_prev, 0, r->batch * r->n * sizeof *r->y_prev);
}

void nn_reference_step(struct nn_reference *r, const float *in, float *out)
{
    const struct genome *g = r->g;
    float *t = r->y;
    r->y = r->y_prev;
    r->y_prev = t;
    for (size_t b = 0; b < r->batch; b++) {
        float *y = r->y + b * r->n;
        const float *yp = r->y_prev + b * r->n;
        size_t k_in = 0;
        /* Inputs in id order are the first entries of the neuron array
         * that are inputs; the order array lists them first, by id. */
        for (size_t o = 0; o < r->n; o++) {
            uint32_t j = r->order[o];
            const struct genome_neuron *u = &g->neurons[j];
            if (u->kind == GENOME_INPUT) { /* scaled as nn_step does */
                const struct genome *sg = r->src ? r->src : g;
                float x = in[b * r->n_in + k_in];
                y[j] = sg->n_scale ? (x - sg->scale[k_in]) * sg->scale[sg->n_scale + k_in] : x;
                k_in++;
                continue;
            }
            if (r->px_chan && r->px_chan[j] >= 0) { /* a channel: all at its first pixel */
                if (u->id == r->src->channels[r->px_chan[j]].first)
                    conv_channel(r, &r->src->channels[r->px_chan[j]], y);
                continue;
            }
            double sum = u->bias;
            for (size_t c = 0; c < g->n_conns; c++) {
                if (r->to[c] != j)
                    continue;
                uint32_t i = r->from[c];
                int ff = g->neurons[i].depth < u->depth;
                sum += (double)g->conns[c].weight * (double)(ff ? y[i] : yp[i]);
            }
            y[j] = nn_act_apply(u->act, (float)sum);
        }
        if (out) {
            size_t k = 0;
            for (size_t j = 0; j < r->n; j++)
                if (g->neurons[j].kind == GENOME_OUTPUT)
                    out[b * r->n_out + k++] = y[j];
        }
    }
}
