/* spike_genome.c -- a genome of cuba neurons as a spiking network (nn.h):
 * its description, and the plan of one NN_OP_SPIKE op that nn_plan_compile
 * makes of it. */
#include <stdlib.h>
#include <string.h>

#include "spike_impl.h"

_Static_assert(GENOME_MAX_DELAY <= NN_SPIKE_MAX_DELAY, "a genome's delays fit the engine");

void nn_spike_desc_free(struct nn_spike_desc *d)
{
    free((void *)d->neurons);
    free((void *)d->conns);
    memset(d, 0, sizeof *d);
}

int nn_spike_desc_from_genome(const struct genome *g, struct nn_spike_desc *d, uint32_t **out_idx,
                              struct tv_error *err)
{
    memset(d, 0, sizeof *d);
    if (out_idx)
        *out_idx = NULL;
    int rc = nn_no_channels(g, "spiking network", err);
    if (!rc)
        rc = genome_validate(g, NULL, err);
    if (rc)
        return rc;
    size_t n = g->n_neurons, n_in = genome_count_kind(g, GENOME_INPUT);
    size_t n_out = genome_count_kind(g, GENOME_OUTPUT);
    for (size_t i = 0; i < n; i++)
        if (nn_model_check(&g->neurons[i], 1, "the engine", err))
            return TV_EINVAL;
    struct nn_spike_neuron *neurons = calloc(n + 1, sizeof *neurons);
    struct nn_spike_conn *conns = malloc((g->n_conns + 1) * sizeof *conns);
    uint32_t *idx = malloc((n + 1) * sizeof *idx);       /* genome position -> index */
    uint32_t *start = calloc(n + 2, sizeof *start);      /* by source index */
    uint32_t *outs = malloc((n_out + 1) * sizeof *outs); /* by ascending id */
    if (!neurons || !conns || !idx || !start || !outs) {
        rc = tv_error_set(err, TV_ENOMEM, "spiking network: out of memory");
        goto done;
    }
    /* inputs first, then the others, each by ascending id */
    uint32_t next_in = 0, next = (uint32_t)n_in, k_out = 0;
    for (size_t i = 0; i < n; i++) {
        const struct genome_neuron *u = &g->neurons[i];
        idx[i] = u->kind == GENOME_INPUT ? next_in++ : next++;
        if (u->kind == GENOME_OUTPUT)
            outs[k_out++] = idx[i];
        if (u->kind == GENOME_INPUT)
            continue;
        const float *p = u->param;
        neurons[idx[i]] = (struct nn_spike_neuron){p[GENOME_CUBA_TAU_M],
                                                   p[GENOME_CUBA_TAU_EXC],
                                                   p[GENOME_CUBA_TAU_INH],
                                                   p[GENOME_CUBA_THRESHOLD],
                                                   p[GENOME_CUBA_RESET],
                                                   p[GENOME_CUBA_REST],
                                                   u->bias,
                                                   (uint32_t)p[GENOME_CUBA_REFRACTORY]};
    }
    /* connections sorted by source index (a counting sort keeps the genome's
     * order within a source) */
    uint32_t *from = malloc((g->n_conns + 1) * sizeof *from);
    if (!from) {
        rc = tv_error_set(err, TV_ENOMEM, "spiking network: out of memory");
        goto done;
    }
    for (size_t k = 0; k < g->n_conns; k++) {
        from[k] = idx[genome_find_neuron(g, g->conns[k].from)];
        start[from[k] + 1]++;
    }
    for (size_t j = 1; j <= n; j++)
        start[j] += start[j - 1];
    for (size_t k = 0; k < g->n_conns; k++) {
        uint32_t to = idx[genome_find_neuron(g, g->conns[k].to)];
        conns[start[from[k]]++] =
            (struct nn_spike_conn){from[k], to, g->conns[k].weight, genome_conn_delay(g, k)};
    }
    free(from);
    d->n = n;
    d->n_in = n_in;
    d->neurons = neurons;
    d->n_conns = g->n_conns;
    d->conns = conns;
    neurons = NULL;
    conns = NULL;
    if (out_idx) {
        *out_idx = outs;
        outs = NULL;
    }
done:
    free(neurons);
    free(conns);
    free(idx);
    free(start);
    free(outs);
    return rc;
}

int nn_plan_spiking(const struct nn_plan *p)
{
    return p->spike != NULL;
}

int nn_genome_spiking(const struct genome *g)
{
    for (size_t i = 0; i < g->n_neurons; i++)
        if (g->neurons[i].kind != GENOME_INPUT && g->neurons[i].model == GENOME_MODEL_CUBA)
            return 1;
    return 0;
}

/* The op: the inputs are in y[0, n_in); every other neuron's y becomes 1 if
 * it spiked in this step, else 0. */
static void spike_op(const struct nn_plan *p, struct nn_state *s, const struct nn_op *op)
{
    (void)op;
    struct nn_spike *net = s->spike;
    nn_spike_step(net, s->y);
    for (size_t j = p->n_in; j < p->n; j++)
        s->y[j] = net->flag[j];
}
nn_op_fn *const nn_spike_op[NN_TARGET_COUNT] = {spike_op, spike_op, spike_op};

int nn_spike_plan_compile(const struct genome *g, const struct nn_opts *o, struct nn_plan **out,
                          struct tv_error *err)
{
    *out = NULL;
    if (o->trainable)
        return tv_error_set(err, TV_EINVAL, "nn_plan_compile: a spiking plan cannot be trainable");
    struct nn_spike_desc d;
    uint32_t *outs;
    int rc = nn_spike_desc_from_genome(g, &d, &outs, err);
    if (rc)
        return rc;
    struct nn_spike *net = NULL;
    rc = nn_spike_new(&d, &net, err);
    size_t n_out = genome_count_kind(g, GENOME_OUTPUT);
    size_t bytes =
        sizeof(struct nn_plan) + sizeof(struct nn_op) + (n_out + 2) * sizeof(uint32_t) + 1;
    struct nn_plan *p = rc ? NULL : calloc(1, bytes);
    if (!rc && !p)
        rc = tv_error_set(err, TV_ENOMEM, "out of memory for a plan of %zu bytes", bytes);
    if (!rc) {
        p->n = d.n;
        p->n_in = d.n_in;
        p->n_out = n_out;
        p->n_layers = 1;
        p->n_conns = g->n_conns;
        p->index_bits = p->row_bits = 32;
        p->n_ops = 1;
        p->ops = (struct nn_op *)(p + 1);
        p->ops[0] = (struct nn_op){NN_OP_SPIKE, 0, 1, 0};
        p->out_map = (uint32_t *)(p->ops + 1);
        p->layer_start = p->out_map + n_out; /* [2] */
        p->layer_way = (uint8_t *)(p->layer_start + 2);
        memcpy(p->out_map, outs, n_out * sizeof *outs);
        p->layer_start[1] = (uint32_t)d.n;
        p->layer_way[0] = NN_WAY_GATHER;
        p->out_contiguous = 1;
        for (size_t k = 1; k < n_out; k++)
            p->out_contiguous &= p->out_map[k] == p->out_map[0] + k;
        p->spike = net;
        p->bytes = bytes + net->bytes;
        *out = p;
    } else {
        nn_spike_free(net);
    }
    free(outs);
    nn_spike_desc_free(&d);
    return rc;
}
