/* genome.c -- genes, canonical order, validation, sizes, starting genomes.
 * See genome.h for the invariants. */
#include "genome.h"
#include "conv_genes.h"
#include "delay.h"
#include "hyper.h"
#include "lookup.h"
#include "scale.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

static const char *const act_names[GENOME_ACT_COUNT] = {
    [GENOME_ACT_IDENTITY] = "identity",
    [GENOME_ACT_RELU] = "relu",
    [GENOME_ACT_TANH] = "tanh",
    [GENOME_ACT_SIGMOID] = "sigmoid",
    [GENOME_ACT_NEAT_SIGMOID] = "neat_sigmoid",
    [GENOME_ACT_GAUSS] = "gauss",
    [GENOME_ACT_SIN] = "sin",
    [GENOME_ACT_ABS] = "abs",
    [GENOME_ACT_STEP] = "step",
};

const char *genome_act_name(int act)
{
    return act >= 0 && act < GENOME_ACT_COUNT ? act_names[act] : "?";
}

int genome_act_parse(const char *name, size_t len)
{
    for (int i = 0; i < GENOME_ACT_COUNT; i++)
        if (strlen(act_names[i]) == len && !memcmp(act_names[i], name, len))
            return i;
    return -1;
}

/* Leaky integrate-and-fire in discrete time, kept so that genomes written
 * with it still read; nn/ does not run it (it runs "cuba", below):
 * v <- decay * v + bias + sum w * in; when v >= threshold the neuron emits 1
 * and v <- reset, then it integrates nothing for `refractory` steps; else it
 * emits 0. */
static const struct genome_param_info lif_params[] = {
    /* name, integer, mutate, default, min, max */
    {"threshold", 0, 1, 1.0f, 0.01f, 100.0f},
    {"decay", 0, 1, 0.9f, 0.0f, 1.0f},
    {"reset", 0, 0, 0.0f, -100.0f, 100.0f},
    {"refractory", 1, 0, 0.0f, 0.0f, 255.0f},
};

/* Leaky integrate-and-fire with current-based synapses (nn/ runs it, see
 * genome.h): time is counted in steps, so a time constant of 200 is 20 ms at
 * a step of 0.1 ms. The indices are enum genome_cuba_param. */
static const struct genome_param_info cuba_params[] = {
    /* name, integer, mutate, default, min, max */
    [GENOME_CUBA_TAU_M] = {"tau_m", 0, 0, 10.0f, 0.5f, 1e6f},
    [GENOME_CUBA_TAU_EXC] = {"tau_exc", 0, 0, 5.0f, 0.5f, 1e6f},
    [GENOME_CUBA_TAU_INH] = {"tau_inh", 0, 0, 10.0f, 0.5f, 1e6f},
    [GENOME_CUBA_THRESHOLD] = {"threshold", 0, 1, 1.0f, -1000.0f, 1000.0f},
    [GENOME_CUBA_RESET] = {"reset", 0, 0, 0.0f, -1000.0f, 1000.0f},
    [GENOME_CUBA_REST] = {"rest", 0, 0, 0.0f, -1000.0f, 1000.0f},
    [GENOME_CUBA_REFRACTORY] = {"refractory", 1, 0, 2.0f, 0.0f, 65535.0f},
};

#define N_OF(a) (sizeof(a) / sizeof *(a))
const struct genome_model_info genome_models[GENOME_MODEL_COUNT] = {
    [GENOME_MODEL_RATE] = {"rate", 0, NULL},
    [GENOME_MODEL_LIF] = {"lif", N_OF(lif_params), lif_params},
    [GENOME_MODEL_CUBA] = {"cuba", N_OF(cuba_params), cuba_params},
};
_Static_assert(N_OF(lif_params) <= GENOME_MAX_PARAMS, "GENOME_MAX_PARAMS holds every model");
_Static_assert(N_OF(cuba_params) == GENOME_CUBA_N_PARAMS, "one row per enum genome_cuba_param");
_Static_assert(N_OF(cuba_params) <= GENOME_MAX_PARAMS, "GENOME_MAX_PARAMS holds every model");

int genome_model_parse(const char *name, size_t len)
{
    for (int i = 0; i < GENOME_MODEL_COUNT; i++)
        if (strlen(genome_models[i].name) == len && !memcmp(genome_models[i].name, name, len))
            return i;
    return -1;
}

void genome_neuron_set_model(struct genome_neuron *n, int model)
{
    const struct genome_model_info *m = &genome_models[model];
    n->model = (uint8_t)model;
    memset(n->param, 0, sizeof n->param);
    for (size_t k = 0; k < m->n_params; k++)
        n->param[k] = m->params[k].def;
}

int genome_param_check(int model, size_t k, float v, struct tv_error *err)
{
    const struct genome_model_info *m = &genome_models[model];
    const struct genome_param_info *p = &m->params[k];
    if (!isfinite(v))
        return tv_error_set(err, TV_EINVAL, "%s %s is not finite", m->name, p->name);
    if (!(v >= p->min && v <= p->max))
        return tv_error_set(err, TV_EINVAL, "%s %s %g is outside [%g, %g]", m->name, p->name,
                            (double)v, (double)p->min, (double)p->max);
    if (p->integer && v != floorf(v))
        return tv_error_set(err, TV_EINVAL, "%s %s %g is not a whole number", m->name, p->name,
                            (double)v);
    return 0;
}

static int same_float(float a, float b)
{
    return memcmp(&a, &b, sizeof a) == 0;
}

int genome_format_version(const struct genome *g)
{
    if (g->has_hyper)
        return 6;
    if (g->n_scale)
        return 5;
    if (g->n_channels)
        return 4;
    /* version 1 holds rate neurons, which have no parameters */
    for (size_t i = 0; i < g->n_neurons; i++)
        if (g->neurons[i].model != GENOME_MODEL_RATE)
            return genome_has_delays(g) ? 3 : 2;
    return 1;
}

const char *genome_kind_name(int kind)
{
    switch (kind) {
    case GENOME_INPUT:
        return "in";
    case GENOME_OUTPUT:
        return "out";
    case GENOME_HIDDEN:
        return "hid";
    }
    return "?";
}

/* ---- life cycle -------------------------------------------------------- */

void genome_init(struct genome *g)
{
    memset(g, 0, sizeof *g);
}

void genome_release(struct genome *g)
{
    TV_FREE_ALL(g->neurons, g->conns, g->channels, g->filters, g->coefs);
    genome_delays_drop(g);
    genome_scale_drop(g);
    genome_init(g);
}

struct genome *genome_new(void)
{
    return calloc(1, sizeof(struct genome));
}

void genome_free(struct genome *g)
{
    if (g) {
        genome_release(g);
        free(g);
    }
}

void genome_reset(struct genome *g)
{
    g->n_neurons = 0;
    g->n_conns = 0;
    g->n_channels = g->n_filters = g->n_coefs = 0;
    genome_delays_drop(g);
    genome_scale_drop(g);
    genome_set_hyper(g, NULL);
}

int genome_reserve(struct genome *g, size_t n_neurons, size_t n_conns, struct tv_error *err)
{
    if (tv_grow((void **)&g->neurons, &g->cap_neurons, n_neurons, sizeof *g->neurons, NULL) ||
        tv_grow((void **)&g->conns, &g->cap_conns, n_conns, sizeof *g->conns, NULL) ||
        genome_delays_fit(g))
        return tv_error_set(err, TV_ENOMEM,
                            "genome: out of memory for %zu neurons, %zu connections", n_neurons,
                            n_conns);
    return 0;
}

int genome_copy(struct genome *dst, const struct genome *src, struct tv_error *err)
{
    if (dst == src)
        return 0;
    genome_reset(dst);
    int rc = genome_reserve(dst, src->n_neurons, src->n_conns, err);
    if (rc)
        return rc;
    if (src->n_neurons)
        memcpy(dst->neurons, src->neurons, src->n_neurons * sizeof *src->neurons);
    if (src->n_conns)
        memcpy(dst->conns, src->conns, src->n_conns * sizeof *src->conns);
    dst->n_neurons = src->n_neurons;
    dst->n_conns = src->n_conns;
    genome_set_hyper(dst, src->has_hyper ? src->hyper : NULL);
    rc = genome_delays_copy(dst, src, err);
    if (!rc)
        rc = genome_scale_copy(dst, src, err);
    return rc ? rc : genome_copy_conv(dst, src, err);
}

int genome_equal(const struct genome *a, const struct genome *b)
{
    if (a->n_neurons != b->n_neurons || a->n_conns != b->n_conns)
        return 0;
    for (size_t i = 0; i < a->n_neurons; i++) {
        const struct genome_neuron *x = &a->neurons[i], *y = &b->neurons[i];
        if (x->id != y->id || x->kind != y->kind || x->act != y->act ||
            !same_float(x->bias, y->bias) || !same_float(x->depth, y->depth) ||
            x->model != y->model || memcmp(x->param, y->param, sizeof x->param))
            return 0;
    }
    for (size_t i = 0; i < a->n_conns; i++) {
        const struct genome_conn *x = &a->conns[i], *y = &b->conns[i];
        if (x->from != y->from || x->to != y->to || !same_float(x->weight, y->weight))
            return 0;
    }
    return genome_delays_equal(a, b) && genome_scale_equal(a, b) && genome_hyper_equal(a, b) &&
           genome_equal_conv(a, b);
}

/* ---- genes ------------------------------------------------------------- */

int genome_add_neuron(struct genome *g, uint32_t id, int kind, int act, float bias, float depth,
                      struct tv_error *err)
{
    if (id == GENOME_ID_NONE)
        return tv_error_set(err, TV_EINVAL, "neuron id %u is reserved", id);
    size_t i = genome_neuron_lower(g, id);
    if (i < g->n_neurons && g->neurons[i].id == id)
        return tv_error_set(err, TV_EINVAL, "neuron %u already exists", id);
    int rc = genome_reserve(g, g->n_neurons + 1, 0, err);
    if (rc)
        return rc;
    memmove(&g->neurons[i + 1], &g->neurons[i], (g->n_neurons - i) * sizeof *g->neurons);
    g->neurons[i] = (struct genome_neuron){
        .id = id, .kind = (uint8_t)kind, .act = (uint8_t)act, .bias = bias, .depth = depth};
    g->n_neurons++;
    return 0;
}

int genome_add_conn(struct genome *g, uint32_t from, uint32_t to, float weight,
                    struct tv_error *err)
{
    int no_from = genome_find_neuron(g, from) < 0 && genome_pixel_channel(g, from) < 0;
    if (no_from || genome_find_neuron(g, to) < 0)
        return tv_error_set(err, TV_EINVAL, "connection %u -> %u: neuron %u does not exist", from,
                            to, no_from ? from : to);
    size_t i = genome_conn_lower(g, from, to);
    if (i < g->n_conns && g->conns[i].from == from && g->conns[i].to == to)
        return tv_error_set(err, TV_EINVAL, "connection %u -> %u already exists", from, to);
    int rc = genome_reserve(g, 0, g->n_conns + 1, err);
    if (rc)
        return rc;
    memmove(&g->conns[i + 1], &g->conns[i], (g->n_conns - i) * sizeof *g->conns);
    g->conns[i] = (struct genome_conn){from, to, weight};
    g->n_conns++;
    genome_delays_inserted(g, i);
    return 0;
}

int genome_push_neuron(struct genome *g, const struct genome_neuron *n, struct tv_error *err)
{
    int rc = genome_reserve(g, g->n_neurons + 1, 0, err);
    if (!rc)
        g->neurons[g->n_neurons++] = *n;
    return rc;
}

int genome_push_conn(struct genome *g, const struct genome_conn *c, struct tv_error *err)
{
    int rc = genome_reserve(g, 0, g->n_conns + 1, err);
    if (!rc && g->delays)
        g->delays[g->n_conns] = 1;
    if (!rc)
        g->conns[g->n_conns++] = *c;
    return rc;
}

void genome_remove_conn_at(struct genome *g, size_t i)
{
    memmove(&g->conns[i], &g->conns[i + 1], (g->n_conns - i - 1) * sizeof *g->conns);
    g->n_conns--;
    genome_delays_removed(g, i);
}

static int is_sorted_conns(const struct genome *g)
{
    for (size_t i = 1; i < g->n_conns; i++)
        if (genome_conn_cmp(&g->conns[i - 1], &g->conns[i]) >= 0)
            return 0;
    return 1;
}

int genome_canonicalize(struct genome *g, struct tv_error *err)
{
    if (g->n_neurons > 1)
        qsort(g->neurons, g->n_neurons, sizeof *g->neurons, genome_neuron_cmp);
    for (size_t i = 1; i < g->n_neurons; i++)
        if (g->neurons[i].id == g->neurons[i - 1].id)
            return tv_error_set(err, TV_EINVAL, "neuron %u is listed twice", g->neurons[i].id);
    /* Decoded and generated lists are usually sorted already: skip the sort. */
    if (!is_sorted_conns(g)) {
        int rc = genome_delays_sort(g, err);
        if (rc)
            return rc;
        for (size_t i = 1; i < g->n_conns; i++)
            if (g->conns[i].from == g->conns[i - 1].from && g->conns[i].to == g->conns[i - 1].to)
                return tv_error_set(err, TV_EINVAL, "connection %u -> %u is listed twice",
                                    g->conns[i].from, g->conns[i].to);
    }
    return 0;
}

/* ---- validation -------------------------------------------------------- */

static int validate_conn(const struct genome *g, const struct genome_idmap *map, size_t i,
                         struct tv_error *err);

/* The model is known, its parameters in range, the unused slots 0. */
static int validate_model(const struct genome_neuron *n, struct tv_error *err)
{
    if (n->model >= GENOME_MODEL_COUNT)
        return tv_error_set(err, TV_EINVAL, "neuron %u: unknown model %u", n->id, n->model);
    const struct genome_model_info *m = &genome_models[n->model];
    for (size_t k = 0; k < GENOME_MAX_PARAMS; k++) {
        if (k >= m->n_params) {
            if (!same_float(n->param[k], 0.0f))
                return tv_error_set(err, TV_EINVAL,
                                    "neuron %u: parameter slot %zu is unused by model %s but "
                                    "holds %g",
                                    n->id, k, m->name, (double)n->param[k]);
        } else if (genome_param_check(n->model, k, n->param[k], err)) {
            tv_error_prefix(err, "neuron %u", n->id);
            return TV_EINVAL;
        }
    }
    return 0;
}

int genome_validate(const struct genome *g, const struct genome_limits *limits,
                    struct tv_error *err)
{
    if (!limits)
        limits = &genome_default_limits;
    if (g->n_neurons > limits->max_neurons)
        return tv_error_set(err, TV_ELIMIT, "genome has %zu neurons, more than the limit of %zu",
                            g->n_neurons, limits->max_neurons);
    if (g->n_conns > limits->max_conns)
        return tv_error_set(err, TV_ELIMIT,
                            "genome has %zu connections, more than the limit of %zu", g->n_conns,
                            limits->max_conns);
    size_t n_in = 0, n_out = 0;
    for (size_t i = 0; i < g->n_neurons; i++) {
        const struct genome_neuron *n = &g->neurons[i];
        if (n->id == GENOME_ID_NONE)
            return tv_error_set(err, TV_EINVAL, "neuron %zu: id %u is reserved", i, n->id);
        if (i > 0 && n->id <= g->neurons[i - 1].id)
            return tv_error_set(err, TV_EINVAL,
                                n->id == g->neurons[i - 1].id
                                    ? "neuron %u: id listed twice"
                                    : "neuron %u: out of order (neurons must be sorted by id)",
                                n->id);
        if (n->kind > GENOME_HIDDEN)
            return tv_error_set(err, TV_EINVAL, "neuron %u: unknown kind %u", n->id, n->kind);
        if (n->act >= GENOME_ACT_COUNT)
            return tv_error_set(err, TV_EINVAL, "neuron %u: unknown activation %u", n->id, n->act);
        if (!isfinite(n->bias))
            return tv_error_set(err, TV_EINVAL, "neuron %u: bias is not finite", n->id);
        int rc = validate_model(n, err);
        if (rc)
            return rc;
        if (!(n->depth >= 0.0f && n->depth <= 1.0f))
            return tv_error_set(err, TV_EINVAL, "neuron %u: depth %g is outside [0, 1]", n->id,
                                (double)n->depth);
        if (n->kind == GENOME_INPUT && n->depth != 0.0f)
            return tv_error_set(err, TV_EINVAL, "neuron %u: an input must have depth 0, not %g",
                                n->id, (double)n->depth);
        if (n->kind == GENOME_OUTPUT && n->depth != 1.0f)
            return tv_error_set(err, TV_EINVAL, "neuron %u: an output must have depth 1, not %g",
                                n->id, (double)n->depth);
        n_in += n->kind == GENOME_INPUT;
        n_out += n->kind == GENOME_OUTPUT;
    }
    if (n_in == 0)
        return tv_error_set(err, TV_EINVAL, "genome has no input neuron");
    if (n_out == 0)
        return tv_error_set(err, TV_EINVAL, "genome has no output neuron");
    int rc = genome_scale_check(g, n_in, err);
    if (!rc)
        rc = genome_hyper_check(g, err);
    if (!rc)
        rc = genome_validate_conv(g, limits, err);
    if (rc)
        return rc;
    struct genome_idmap map;
    if (genome_idmap_build(&map, g))
        return tv_error_set(err, TV_ENOMEM, "validate: out of memory");
    for (size_t i = 0; i < g->n_conns && !rc; i++)
        rc = validate_conn(g, &map, i, err);
    genome_idmap_free(&map);
    return rc;
}

static int validate_conn(const struct genome *g, const struct genome_idmap *map, size_t i,
                         struct tv_error *err)
{
    const struct genome_conn *c = &g->conns[i];
    if (i > 0 && genome_conn_cmp(&g->conns[i - 1], c) >= 0)
        return tv_error_set(err, TV_EINVAL,
                            (g->conns[i - 1].from == c->from && g->conns[i - 1].to == c->to)
                                ? "connection %zu (%u -> %u): key listed twice"
                                : "connection %zu (%u -> %u): out of (from, to) order",
                            i, c->from, c->to);
    ptrdiff_t f = genome_idmap_find(map, c->from);
    ptrdiff_t t = genome_idmap_find(map, c->to);
    if (t < 0 || (f < 0 && genome_pixel_channel(g, c->from) < 0)) /* a pixel is a source */
        return tv_error_set(err, TV_EINVAL, "connection %zu (%u -> %u): neuron %u does not exist",
                            i, c->from, c->to,
                            f < 0 && genome_pixel_channel(g, c->from) < 0 ? c->from : c->to);
    if (g->neurons[t].kind == GENOME_INPUT)
        return tv_error_set(err, TV_EINVAL, "connection %zu (%u -> %u): ends in input neuron %u", i,
                            c->from, c->to, c->to);
    if (!isfinite(c->weight))
        return tv_error_set(err, TV_EINVAL, "connection %zu (%u -> %u): weight is not finite", i,
                            c->from, c->to);
    int from_kind = f < 0 ? GENOME_HIDDEN : g->neurons[f].kind; /* (a pixel: not an input) */
    return genome_delays_check(g, i, from_kind, g->neurons[t].model, err);
}

size_t genome_count_kind(const struct genome *g, int kind)
{
    size_t n = 0;
    for (size_t i = 0; i < g->n_neurons; i++)
        n += g->neurons[i].kind == kind;
    return n;
}

int genome_stats(const struct genome *g, struct genome_stats *out, struct tv_error *err)
{
    memset(out, 0, sizeof *out);
    float *layers;
    size_t n_layers;
    int rc = genome_layers(g, &layers, &n_layers, err);
    if (rc) {
        tv_error_prefix(err, "genome_stats");
        return rc;
    }
    out->n_layers = n_layers;
    out->n_neurons = g->n_neurons;
    for (size_t i = 0; i < g->n_neurons; i++) {
        int k = g->neurons[i].kind;
        out->n_inputs += k == GENOME_INPUT;
        out->n_outputs += k == GENOME_OUTPUT;
        out->n_hidden += k == GENOME_HIDDEN;
    }
    out->n_conns = g->n_conns;
    /* Connections are sorted by from: look the source up once per run. */
    ptrdiff_t f = -1;
    uint32_t f_id = GENOME_ID_NONE;
    for (size_t i = 0; i < g->n_conns; i++) {
        const struct genome_conn *c = &g->conns[i];
        if (f < 0 || c->from != f_id) {
            f = genome_find_neuron(g, c->from);
            f_id = c->from;
        }
        ptrdiff_t t = genome_find_neuron(g, c->to);
        if (f < 0 || t < 0)
            continue; /* not valid; counted in none */
        switch (genome_conn_class_of(layers, n_layers, g->neurons[f].depth, g->neurons[t].depth)) {
        case GENOME_CONN_LOCAL:
            out->n_local++;
            break;
        case GENOME_CONN_SKIP:
            out->n_skip++;
            break;
        default:
            out->n_recurrent++;
        }
    }
    free(layers);
    return 0;
}

uint32_t genome_split_id(uint32_t from, uint32_t to, uint32_t attempt)
{
    uint64_t h = tv_mix64(((uint64_t)from << 32 | to) ^ tv_mix64(0x7265766f00000000ULL + attempt));
    uint32_t id = (uint32_t)(h >> 32);
    /* Keep clear of small ids, which constructors give to inputs, outputs and
     * layered hidden neurons, and of the reserved id. */
    if (id < (1u << 20) || id == GENOME_ID_NONE)
        id = (uint32_t)h | (1u << 31);
    if (id == GENOME_ID_NONE)
        id--;
    return id;
}

/* ---- starting genomes -------------------------------------------------- */

static float draw_weight(struct tv_rng *rng, double sd)
{
    return sd > 0 ? (float)(sd * tv_rng_normal(rng)) : 0.0f;
}

int genome_build_minimal(struct genome *g, uint32_t n_in, uint32_t n_out, int out_act,
                         double weight_sd, struct tv_rng *rng, struct tv_error *err)
{
    genome_reset(g);
    if (n_in == 0 || n_out == 0)
        return tv_error_set(err, TV_EINVAL,
                            "minimal genome: need at least one input and one output (got %u, %u)",
                            n_in, n_out);
    if (out_act < 0 || out_act >= GENOME_ACT_COUNT)
        return tv_error_set(err, TV_EINVAL, "minimal genome: unknown output activation %d",
                            out_act);
    if ((uint64_t)n_in + n_out > GENOME_DEFAULT_MAX_NEURONS ||
        (uint64_t)n_in * n_out > GENOME_DEFAULT_MAX_CONNS)
        return tv_error_set(err, TV_ELIMIT, "minimal genome: %u x %u is too large", n_in, n_out);
    int rc = genome_reserve(g, (size_t)n_in + n_out, (size_t)n_in * n_out, err);
    if (rc)
        return rc;
    for (uint32_t i = 0; i < n_in; i++)
        g->neurons[g->n_neurons++] =
            (struct genome_neuron){.id = i, .kind = GENOME_INPUT, .act = GENOME_ACT_IDENTITY};
    for (uint32_t o = 0; o < n_out; o++)
        g->neurons[g->n_neurons++] = (struct genome_neuron){
            .id = n_in + o, .kind = GENOME_OUTPUT, .act = (uint8_t)out_act, .depth = 1.0f};
    for (uint32_t i = 0; i < n_in; i++)
        for (uint32_t o = 0; o < n_out; o++)
            g->conns[g->n_conns++] = (struct genome_conn){i, n_in + o, draw_weight(rng, weight_sd)};
    return 0;
}

/* Appends a random subset of the n_a x n_b pairs (a0.., b0..), each kept with
 * probability p, walking geometric gaps so the cost is O(kept), not O(pairs). */
static int sample_pairs(struct genome *g, uint32_t a0, uint32_t n_a, uint32_t b0, uint32_t n_b,
                        double p, double sd, struct tv_rng *rng, struct tv_error *err)
{
    if (p <= 0 || n_a == 0 || n_b == 0)
        return 0;
    uint64_t total = (uint64_t)n_a * n_b;
    double log_q = p < 1 ? log1p(-p) : 0;
    uint64_t k = 0;
    for (;;) {
        if (p < 1) {
            double u = 1.0 - tv_rng_uniform(rng); /* (0, 1] */
            double gap = floor(log(u) / log_q);
            if (gap >= (double)(total - k))
                break;
            k += (uint64_t)gap;
        }
        if (k >= total)
            break;
        uint32_t ia = (uint32_t)(k / n_b), ib = (uint32_t)(k % n_b);
        struct genome_conn c = {a0 + ia, b0 + ib, draw_weight(rng, sd)};
        if (g->n_conns + 1 > GENOME_DEFAULT_MAX_CONNS)
            return tv_error_set(err, TV_ELIMIT, "layered genome: more than %zu connections",
                                GENOME_DEFAULT_MAX_CONNS);
        int rc = genome_push_conn(g, &c, err);
        if (rc)
            return rc;
        k++;
    }
    return 0;
}

/* The probability of a connection from layer a to layer b: the pair's own
 * density where pairs has a table for its kind, else the spec's rate. *skip
 * counts the skip pairs met so far (their order in pairs->skip). */
static double pair_rate(const struct genome_layered_spec *spec,
                        const struct genome_layer_pairs *pairs, size_t a, size_t b, size_t *skip)
{
    if (b <= a)
        return spec->recurrent_rate;
    if (b == a + 1)
        return pairs && pairs->adjacent ? pairs->adjacent[a] : spec->density;
    size_t k = (*skip)++;
    return pairs && pairs->skip ? pairs->skip[k] : spec->skip_rate;
}

/* Every entry of the per-pair tables in [0, 1]. */
static int check_pairs(const struct genome_layered_spec *spec,
                       const struct genome_layer_pairs *pairs, struct tv_error *err)
{
    size_t skip = 0;
    for (size_t a = 0; pairs && a < spec->n_layers; a++)
        for (size_t b = a + 1; b < spec->n_layers; b++) {
            size_t k = skip;
            double p = pair_rate(spec, pairs, a, b, &skip);
            if (!(p >= 0 && p <= 1))
                return tv_error_set(err, TV_EINVAL,
                                    "layered genome: %s density %zu (pair %zu -> %zu) must be in "
                                    "[0, 1], got %g",
                                    b == a + 1 ? "adjacent" : "skip", b == a + 1 ? a : k, a, b, p);
        }
    return 0;
}

int genome_build_layered(struct genome *g, const struct genome_layered_spec *spec,
                         struct tv_rng *rng, struct tv_error *err)
{
    return genome_build_layered_pairs(g, spec, NULL, rng, err);
}

int genome_build_layered_pairs(struct genome *g, const struct genome_layered_spec *spec,
                               const struct genome_layer_pairs *pairs, struct tv_rng *rng,
                               struct tv_error *err)
{
    genome_reset(g);
    size_t L = spec->n_layers;
    int rc = 0;
    if (L < 2)
        return tv_error_set(err, TV_EINVAL, "layered genome: need at least 2 layers, got %zu", L);
    uint64_t total = 0;
    for (size_t l = 0; l < L; l++) {
        if (spec->sizes[l] == 0)
            return tv_error_set(err, TV_EINVAL, "layered genome: layer %zu is empty", l);
        total += spec->sizes[l];
    }
    if (total > GENOME_DEFAULT_MAX_NEURONS)
        return tv_error_set(err, TV_ELIMIT, "layered genome: %llu neurons is over the limit",
                            (unsigned long long)total);
    const double rates[3] = {spec->density, spec->skip_rate, spec->recurrent_rate};
    for (int i = 0; i < 3; i++)
        if (!(rates[i] >= 0 && rates[i] <= 1))
            return tv_error_set(err, TV_EINVAL, "layered genome: %s must be in [0, 1], got %g",
                                i == 0   ? "density"
                                : i == 1 ? "skip_rate"
                                         : "recurrent_rate",
                                rates[i]);
    rc = check_pairs(spec, pairs, err);
    if (rc)
        return rc;
    if (spec->hidden_act < 0 || spec->hidden_act >= GENOME_ACT_COUNT || spec->out_act < 0 ||
        spec->out_act >= GENOME_ACT_COUNT)
        return tv_error_set(err, TV_EINVAL, "layered genome: unknown activation");
    rc = genome_reserve(g, (size_t)total, 0, err);
    if (rc)
        return rc;
    /* Ids: inputs, outputs, then hidden layers; first[l] is layer l's first id. */
    uint32_t *first = malloc(L * sizeof *first);
    if (!first)
        return tv_error_set(err, TV_ENOMEM, "layered genome: out of memory");
    uint32_t next = spec->sizes[0] + spec->sizes[L - 1];
    first[0] = 0;
    first[L - 1] = spec->sizes[0];
    for (size_t l = 1; l + 1 < L; l++) {
        first[l] = next;
        next += spec->sizes[l];
    }
    for (size_t l = 0; l < L; l++) {
        int kind = l == 0 ? GENOME_INPUT : l == L - 1 ? GENOME_OUTPUT : GENOME_HIDDEN;
        int act = l == 0 ? GENOME_ACT_IDENTITY : l == L - 1 ? spec->out_act : spec->hidden_act;
        float depth = l == L - 1 ? 1.0f : (float)((double)l / (double)(L - 1));
        for (uint32_t i = 0; i < spec->sizes[l]; i++)
            g->neurons[g->n_neurons++] = (struct genome_neuron){
                .id = first[l] + i, .kind = (uint8_t)kind, .act = (uint8_t)act, .depth = depth};
    }
    qsort(g->neurons, g->n_neurons, sizeof *g->neurons, genome_neuron_cmp);
    size_t skip_pair = 0; /* index of (a, b) among the skip pairs */
    for (size_t a = 0; a < L && !rc; a++) {
        for (size_t b = 1; b < L && !rc; b++) {
            double p = pair_rate(spec, pairs, a, b, &skip_pair);
            rc = sample_pairs(g, first[a], spec->sizes[a], first[b], spec->sizes[b], p,
                              spec->weight_sd, rng, err);
        }
    }
    free(first);
    if (!rc)
        rc = genome_canonicalize(g, err);
    return rc;
}

int genome_scale_fan_in(struct genome *g, struct tv_error *err)
{
    uint32_t max_id = 0;
    for (size_t i = 0; i < g->n_neurons; i++)
        max_id = g->neurons[i].id > max_id ? g->neurons[i].id : max_id;
    uint32_t *fan = calloc((size_t)max_id + 1, sizeof *fan);
    uint8_t *act = calloc((size_t)max_id + 1, 1);
    if (!fan || !act) {
        free(fan);
        free(act);
        return tv_error_set(err, TV_ENOMEM, "scale to fan-in: out of memory");
    }
    for (size_t i = 0; i < g->n_neurons; i++)
        act[g->neurons[i].id] = g->neurons[i].act;
    for (size_t k = 0; k < g->n_conns; k++)
        fan[g->conns[k].to]++;
    for (size_t k = 0; k < g->n_conns; k++) {
        uint32_t to = g->conns[k].to;
        double gain = act[to] == GENOME_ACT_RELU ? 2.0 : 1.0;
        g->conns[k].weight = (float)(g->conns[k].weight * sqrt(gain / fan[to]));
    }
    free(fan);
    free(act);
    return 0;
}
