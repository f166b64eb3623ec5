/* plan.c -- nn_plan_compile: the one door of every genome into a plan. A
 * genome with channels goes to the convolutional compile (conv/conv_plan.c),
 * a network of cuba neurons to the spiking one (spike/spike_genome.c), any
 * other to the plain compile (compile.c); nn_plan_free gives back what any of
 * them made. And the plan's accessors.
 */
#include <stdlib.h>
#include <string.h>

#include "compile.h"
#include "spike.h"

static int plan_set_scale(struct nn_plan *p, const struct genome *g, struct tv_error *err);

int nn_plan_compile(const struct genome *g, const struct nn_opts *opts, struct nn_plan **out,
                    struct tv_error *err)
{
    static const struct nn_opts defaults = {0};
    const struct nn_opts *o = opts ? opts : &defaults;
    *out = NULL;
    int rc = g->n_channels          ? nn_conv_plan_compile(g, o, out, err)
             : nn_genome_spiking(g) ? nn_spike_plan_compile(g, o, out, err)
                                    : nn_compile_run(g, o, NULL, NULL, out, err);
    if (!rc && g->n_scale && (rc = plan_set_scale(*out, g, err))) {
        nn_plan_free(*out);
        *out = NULL;
    }
    return rc;
}

/* p's copy of g's input scaling (nn_impl.h: in_shift, in_mul). */
static int plan_set_scale(struct nn_plan *p, const struct genome *g, struct tv_error *err)
{
    free(p->in_shift);
    p->in_shift = p->in_mul = NULL;
    if (!g->n_scale)
        return 0;
    if (g->n_scale != p->n_in)
        return tv_error_set(err, TV_EINVAL,
                            "nn_plan_compile: an input scaling of %zu inputs for a plan of %zu",
                            g->n_scale, p->n_in);
    p->in_shift = malloc(2 * p->n_in * sizeof *p->in_shift);
    if (!p->in_shift)
        return tv_error_set(err, TV_ENOMEM, "nn_plan_compile: out of memory");
    memcpy(p->in_shift, g->scale, 2 * p->n_in * sizeof *p->in_shift);
    p->in_mul = p->in_shift + p->n_in;
    return 0;
}

int nn_plan_scales(const struct nn_plan *p)
{
    return p->in_shift != NULL;
}

int nn_no_spiking(const struct genome *g, const char *fn, const char *what, struct tv_error *err)
{
    if (!nn_genome_spiking(g))
        return 0;
    size_t i = 0;
    while (g->neurons[i].kind == GENOME_INPUT || g->neurons[i].model != GENOME_MODEL_CUBA)
        i++;
    return tv_error_set(err, TV_EINVAL,
                        "%s: the network is spiking (neuron %u has model %s); %s runs rate "
                        "neurons only",
                        fn, g->neurons[i].id, genome_models[GENOME_MODEL_CUBA].name, what);
}

void nn_plan_free(struct nn_plan *p)
{
    if (p) {
        free(p->param);
        free(p->in_shift);
        nn_spike_free(p->spike);
        nn_conv_net_free(p->conv);
    }
    free(p);
}

int nn_plan_params(struct nn_plan *p, struct nn_params *out, struct tv_error *err)
{
    memset(out, 0, sizeof *out);
    if (!p->trainable)
        return tv_error_set(
            err, TV_ESTATE,
            "nn_plan_params: the plan was not compiled trainable (nn_opts.trainable)");
    out->w = p->param;
    out->conn_of = p->conn_of;
    out->n_w = p->n_param;
    out->bias = p->bias;
    out->neuron_of = p->neuron_of;
    out->n_bias = p->n;
    return 0;
}

int nn_plan_write_weights(const struct nn_plan *p, struct genome *g, struct tv_error *err)
{
    if (!p->trainable)
        return tv_error_set(err, TV_ESTATE,
                            "nn_plan_write_weights: the plan was not compiled trainable "
                            "(nn_opts.trainable)");
    if (g->n_conns != p->n_conns || g->n_neurons != p->n)
        return tv_error_set(err, TV_EINVAL,
                            "nn_plan_write_weights: the genome has %zu neurons and %zu "
                            "connections, the plan %zu and %zu (write into the genome compiled)",
                            g->n_neurons, g->n_conns, p->n, p->n_conns);
    for (size_t k = 0; k < p->n_param; k++)
        if (p->conn_of[k] != NN_NONE)
            g->conns[p->conn_of[k]].weight = p->param[k];
    for (size_t j = 0; j < p->n; j++)
        if (p->neuron_of[j] != NN_NONE)
            g->neurons[p->neuron_of[j]].bias = p->bias[j];
    return 0;
}

size_t nn_plan_n_inputs(const struct nn_plan *p)
{
    return p->n_in;
}

size_t nn_plan_n_outputs(const struct nn_plan *p)
{
    return p->n_out;
}

size_t nn_plan_n_neurons(const struct nn_plan *p)
{
    return p->n;
}

size_t nn_plan_n_layers(const struct nn_plan *p)
{
    return p->n_layers;
}

size_t nn_plan_n_conns(const struct nn_plan *p)
{
    return p->n_conns;
}

size_t nn_plan_n_recurrent(const struct nn_plan *p)
{
    return p->n_recurrent;
}

size_t nn_plan_bytes(const struct nn_plan *p)
{
    return p->bytes;
}

int nn_plan_index_bits(const struct nn_plan *p)
{
    return p->index_bits;
}

int nn_plan_layer_way(const struct nn_plan *p, size_t l)
{
    return l < p->n_layers ? p->layer_way[l] : -1;
}

size_t nn_plan_n_chunks(const struct nn_plan *p)
{
    return p->n_chunks;
}

size_t nn_plan_n_tiled(const struct nn_plan *p)
{
    return p->n_tiled;
}

size_t nn_plan_compile_work(const struct nn_plan *p)
{
    return p->compile_work;
}
