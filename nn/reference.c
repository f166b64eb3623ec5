/* reference.c -- the semantics of docs/architecture.md as a plain loop over the triplets,
 * to check the fast path against. Slow on purpose: nothing is reordered,
 * nothing is skipped, sums are in double. */
#include <stdlib.h>
#include <string.h>

#include "nn_impl.h"

struct nn_reference {
    const struct genome *g; /* borrowed */
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

int nn_reference_new(const struct genome *g, size_t batch, struct nn_reference **out,
                     struct tv_error *err)
{
    *out = NULL;
    if (batch == 0)
        return tv_error_set(err, TV_EINVAL, "nn_reference_new: batch must be at least 1");
    int rc = genome_validate(g, NULL, err);
    for (size_t i = 0; i < g->n_neurons && !rc; i++)
        rc = nn_model_check(&g->neurons[i], 0, err);
    if (rc)
        return rc;
    struct nn_reference *r = calloc(1, sizeof *r);
    if (!r)
        return tv_error_set(err, TV_ENOMEM, "nn_reference_new: out of memory");
    r->g = g;
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
    struct ref_key *keys = malloc((r->n + 1) * sizeof *keys);
    if (!keys) {
        nn_reference_free(r);
        return tv_error_set(err, TV_ENOMEM, "nn_reference_new: out of memory");
    }
    for (size_t i = 0; i < r->n; i++) {
        const struct genome_neuron *u = &g->neurons[i];
        keys[i] = (struct ref_key){u->kind != GENOME_INPUT, u->depth, u->id, (uint32_t)i};
        r->n_in += u->kind == GENOME_INPUT;
        r->n_out += u->kind == GENOME_OUTPUT;
    }
    qsort(keys, r->n, sizeof *keys, by_depth);
    for (size_t i = 0; i < r->n; i++)
        r->order[i] = keys[i].index;
    free(keys);
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
    free(r->order);
    free(r->from);
    free(r->to);
    free(r->y);
    free(r->y_prev);
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
            if (u->kind == GENOME_INPUT) {
                y[j] = in[b * r->n_in + k_in++];
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
