/* mutate.c -- the mutation operators. Every operator keeps the genome valid;
 * every random choice comes from the rng passed in, so the same genome, rates
 * and stream give the same child, bit for bit. */
#include "genome.h"
#include "delay.h"

#include <float.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

/* How many random (source, target) pairs an add-connection operator tries
 * before giving up (the genome may be saturated). */
#define ADD_CONN_TRIES 32

/* Clamps to [-max, max] (max <= 0: no bound of its own) and always to the
 * finite float range, so that no draw can make a weight infinite. */
static float clamp(double v, double max)
{
    if (!(max > 0) || max > FLT_MAX)
        max = FLT_MAX;
    if (v > max)
        v = max;
    if (v < -max)
        v = -max;
    return (float)v;
}

/* The limit on neurons / connections: cfg's, or the default where it is 0. */
static size_t max_neurons_of(const struct genome_mutation *cfg)
{
    return cfg->limits.max_neurons ? cfg->limits.max_neurons : GENOME_DEFAULT_MAX_NEURONS;
}

static size_t max_conns_of(const struct genome_mutation *cfg)
{
    return cfg->limits.max_conns ? cfg->limits.max_conns : GENOME_DEFAULT_MAX_CONNS;
}

/* ---- per-gene operators ------------------------------------------------ */

static void mutate_weights(struct genome *g, const struct genome_mutation *cfg, struct tv_rng *rng)
{
    if (cfg->weight_replace_rate <= 0 && cfg->weight_perturb_rate <= 0)
        return;
    for (size_t i = 0; i < g->n_conns; i++) {
        struct genome_conn *c = &g->conns[i];
        double u = tv_rng_uniform(rng);
        if (u < cfg->weight_replace_rate)
            c->weight = clamp(cfg->weight_init_sd * tv_rng_normal(rng), cfg->weight_max);
        else if (u < cfg->weight_replace_rate + cfg->weight_perturb_rate)
            c->weight =
                clamp(c->weight + cfg->weight_perturb_sd * tv_rng_normal(rng), cfg->weight_max);
    }
}

/* A model parameter marked `mutate` in its table row, with the bias rates and
 * sds: a replacement draws around the default; the result is clamped like a
 * bias, then held in the parameter's range (and made whole if it must be). */
static float mutate_param(const struct genome_param_info *p, float v,
                          const struct genome_mutation *cfg, struct tv_rng *rng)
{
    double u = tv_rng_uniform(rng);
    if (u < cfg->bias_replace_rate)
        v = clamp(p->def + cfg->bias_init_sd * tv_rng_normal(rng), cfg->weight_max);
    else if (u < cfg->bias_replace_rate + cfg->bias_perturb_rate)
        v = clamp(v + cfg->bias_perturb_sd * tv_rng_normal(rng), cfg->weight_max);
    else
        return v;
    if (p->integer)
        v = roundf(v);
    return v < p->min ? p->min : v > p->max ? p->max : v;
}

/* Biases, then the model's mutable parameters (a rate neuron has none, so
 * its draws are the bias's alone). */
static void mutate_biases(struct genome *g, const struct genome_mutation *cfg, struct tv_rng *rng)
{
    if (cfg->bias_replace_rate <= 0 && cfg->bias_perturb_rate <= 0)
        return;
    for (size_t i = 0; i < g->n_neurons; i++) {
        struct genome_neuron *n = &g->neurons[i];
        if (n->kind == GENOME_INPUT)
            continue;
        double u = tv_rng_uniform(rng);
        if (u < cfg->bias_replace_rate)
            n->bias = clamp(cfg->bias_init_sd * tv_rng_normal(rng), cfg->weight_max);
        else if (u < cfg->bias_replace_rate + cfg->bias_perturb_rate)
            n->bias = clamp(n->bias + cfg->bias_perturb_sd * tv_rng_normal(rng), cfg->weight_max);
        const struct genome_model_info *m = &genome_models[n->model];
        for (size_t k = 0; k < m->n_params; k++)
            if (m->params[k].mutate)
                n->param[k] = mutate_param(&m->params[k], n->param[k], cfg, rng);
    }
}

static void mutate_activations(struct genome *g, const struct genome_mutation *cfg,
                               struct tv_rng *rng)
{
    uint32_t mask = cfg->act_choices & ((1u << GENOME_ACT_COUNT) - 1);
    int n_choices = __builtin_popcount(mask);
    if (cfg->act_change_rate <= 0 || n_choices == 0)
        return;
    for (size_t i = 0; i < g->n_neurons; i++) {
        struct genome_neuron *n = &g->neurons[i];
        if (n->kind != GENOME_HIDDEN || !tv_rng_chance(rng, cfg->act_change_rate))
            continue;
        uint32_t k = tv_rng_below(rng, (uint32_t)n_choices);
        for (int a = 0; a < GENOME_ACT_COUNT; a++)
            if ((mask >> a & 1) && k-- == 0) {
                n->act = (uint8_t)a;
                break;
            }
    }
}

/* ---- structural operators ---------------------------------------------- */

/* Splits a random connection a -> b into a -> h (weight 1) and h -> b (the
 * old weight), NEAT's add-node: the network's function barely changes. */
static int split_conn(struct genome *g, const struct genome_mutation *cfg, struct tv_rng *rng,
                      struct tv_error *err)
{
    if (g->n_conns == 0 || g->n_neurons + 1 > max_neurons_of(cfg) ||
        g->n_conns + 1 > max_conns_of(cfg))
        return 0;
    size_t ci = tv_rng_below(rng, (uint32_t)g->n_conns);
    struct genome_conn old = g->conns[ci];
    unsigned old_delay = genome_conn_delay(g, ci);
    float df = 0; /* the source may be a channel's pixel */
    (void)genome_source_depth(g, old.from, &df);
    float dt = g->neurons[genome_find_neuron(g, old.to)].depth;
    /* Feed-forward: halfway. Recurrent: below the target, so that a -> h
     * keeps the one-step delay and h -> b is feed-forward. */
    float depth = df < dt ? (float)(((double)df + dt) / 2) : (float)(dt / 2.0);
    /* The split must keep the delays: a feed-forward edge needs a depth
     * strictly between its ends, a recurrent one a depth strictly below its
     * target. Where floats leave no room, this mutation does nothing. */
    if (df < dt ? !(depth > df && depth < dt) : !(depth < dt))
        return 0;
    uint32_t id = 0;
    for (uint32_t attempt = 0;; attempt++) {
        id = genome_split_id(old.from, old.to, attempt);
        if (genome_find_neuron(g, id) < 0 && genome_pixel_channel(g, id) < 0)
            break;
    }
    genome_remove_conn_at(g, ci);
    int rc = genome_add_neuron(g, id, GENOME_HIDDEN, cfg->hidden_act, 0.0f, depth, err);
    int model = g->neurons[genome_find_neuron(g, old.to)].model;
    if (!rc && model != GENOME_MODEL_RATE) /* a spiking network stays one: the target's model */
        genome_neuron_set_model(&g->neurons[genome_find_neuron(g, id)], model);
    if (!rc)
        rc = genome_add_conn(g, old.from, id, 1.0f, err);
    if (!rc)
        rc = genome_add_conn(g, id, old.to, old.weight, err);
    if (!rc && old_delay != 1) /* the spike's path keeps its delay, plus one step */
        rc = genome_set_delay(g, (size_t)genome_find_conn(g, id, old.to), old_delay, err);
    return rc;
}

/* Removes a random hidden neuron and every connection touching it. */
static void delete_neuron(struct genome *g, struct tv_rng *rng)
{
    size_t n_hidden = genome_count_kind(g, GENOME_HIDDEN);
    if (n_hidden == 0)
        return;
    size_t k = tv_rng_below(rng, (uint32_t)n_hidden), idx = 0;
    for (idx = 0; idx < g->n_neurons; idx++)
        if (g->neurons[idx].kind == GENOME_HIDDEN && k-- == 0)
            break;
    uint32_t id = g->neurons[idx].id;
    memmove(&g->neurons[idx], &g->neurons[idx + 1], (g->n_neurons - idx - 1) * sizeof *g->neurons);
    g->n_neurons--;
    size_t w = 0;
    for (size_t r = 0; r < g->n_conns; r++)
        if (g->conns[r].from != id && g->conns[r].to != id) {
            if (g->delays)
                g->delays[w] = g->delays[r];
            g->conns[w++] = g->conns[r];
        }
    g->n_conns = w;
}

/* Neuron indices ordered by (depth, id), with each layer's start: the ranges
 * an add-connection operator draws targets from. */
struct depth_index {
    size_t *order; /* [n_neurons] neuron indices by depth */
    size_t *start; /* [n_layers + 1] first position of each layer in order */
    size_t *layer; /* [n_neurons] layer of neuron i */
    size_t n_layers;
};

struct depth_key {
    float depth;
    uint32_t id;
    size_t idx;
};

static int cmp_depth_key(const void *a, const void *b)
{
    const struct depth_key *x = a, *y = b;
    if (x->depth != y->depth)
        return (x->depth > y->depth) - (x->depth < y->depth);
    return (x->id > y->id) - (x->id < y->id);
}

static void depth_index_free(struct depth_index *d)
{
    free(d->order);
    free(d->start);
    free(d->layer);
    d->order = d->start = d->layer = NULL;
}

static int depth_index_build(struct depth_index *d, const struct genome *g, struct tv_error *err)
{
    size_t n = g->n_neurons;
    d->order = malloc(n * sizeof *d->order);
    d->start = malloc((n + 1) * sizeof *d->start);
    d->layer = malloc(n * sizeof *d->layer);
    if (!d->order || !d->start || !d->layer) {
        depth_index_free(d);
        return tv_error_set(err, TV_ENOMEM, "mutation: out of memory");
    }
    struct depth_key *keys = malloc(n * sizeof *keys);
    if (!keys) {
        depth_index_free(d);
        return tv_error_set(err, TV_ENOMEM, "mutation: out of memory");
    }
    for (size_t i = 0; i < n; i++)
        keys[i] = (struct depth_key){g->neurons[i].depth, g->neurons[i].id, i};
    qsort(keys, n, sizeof *keys, cmp_depth_key);
    for (size_t i = 0; i < n; i++)
        d->order[i] = keys[i].idx;
    free(keys);
    d->n_layers = 0;
    for (size_t p = 0; p < n; p++) {
        float depth = g->neurons[d->order[p]].depth;
        if (p == 0 || depth != g->neurons[d->order[p - 1]].depth)
            d->start[d->n_layers++] = p;
        d->layer[d->order[p]] = d->n_layers - 1;
    }
    d->start[d->n_layers] = n;
    return 0;
}

/* Adds one connection of class cls (enum genome_conn_class) between random neurons that are not
 * yet connected; does nothing if ADD_CONN_TRIES draws find no such pair. */
static int add_conn(struct genome *g, const struct genome_mutation *cfg, int cls,
                    const struct depth_index *d, struct tv_rng *rng, struct tv_error *err)
{
    if (g->n_conns + 1 > max_conns_of(cfg))
        return 0;
    for (int t = 0; t < ADD_CONN_TRIES; t++) {
        size_t src = tv_rng_below(rng, (uint32_t)g->n_neurons);
        size_t l = d->layer[src];
        size_t lo, hi; /* target layers, then positions in d->order */
        genome_conn_class_targets(cls, l, d->n_layers, &lo, &hi);
        if (lo >= hi)
            continue;
        lo = d->start[lo];
        hi = d->start[hi];
        size_t dst = d->order[lo + tv_rng_below(rng, (uint32_t)(hi - lo))];
        if (g->neurons[dst].kind == GENOME_INPUT)
            continue;
        uint32_t from = g->neurons[src].id, to = g->neurons[dst].id;
        if (genome_find_conn(g, from, to) >= 0)
            continue;
        float w = clamp(cfg->weight_init_sd * tv_rng_normal(rng), cfg->weight_max);
        return genome_add_conn(g, from, to, w, err);
    }
    return 0;
}

static int add_conns(struct genome *g, const struct genome_mutation *cfg, struct tv_rng *rng,
                     struct tv_error *err)
{
    /* indexed by enum genome_conn_class */
    int fire[GENOME_CONN_CLASSES] = {tv_rng_chance(rng, cfg->add_local_rate),
                                     tv_rng_chance(rng, cfg->add_skip_rate),
                                     tv_rng_chance(rng, cfg->add_recurrent_rate)};
    if (!fire[0] && !fire[1] && !fire[2])
        return 0;
    struct depth_index d = {0};
    int rc = depth_index_build(&d, g, err);
    for (int k = 0; k < GENOME_CONN_CLASSES && !rc; k++)
        if (fire[k])
            rc = add_conn(g, cfg, k, &d, rng, err);
    depth_index_free(&d);
    return rc;
}

int genome_mutate(struct genome *g, const struct genome_mutation *cfg, struct tv_rng *rng,
                  struct tv_error *err)
{
    int rc = 0;
    if (tv_rng_chance(rng, cfg->add_neuron_rate))
        rc = split_conn(g, cfg, rng, err);
    if (!rc && tv_rng_chance(rng, cfg->del_neuron_rate))
        delete_neuron(g, rng);
    if (!rc)
        rc = add_conns(g, cfg, rng, err);
    if (!rc && g->n_conns > 0 && tv_rng_chance(rng, cfg->del_conn_rate))
        genome_remove_conn_at(g, tv_rng_below(rng, (uint32_t)g->n_conns));
    if (!rc) {
        mutate_weights(g, cfg, rng);
        mutate_biases(g, cfg, rng);
        mutate_activations(g, cfg, rng);
        rc = genome_delays_mutate(g, cfg, rng, err);
    }
    if (!rc)
        rc = genome_mutate_conv(g, cfg, rng, err);
    return rc;
}
