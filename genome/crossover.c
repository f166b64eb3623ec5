/* crossover.c -- NEAT crossover and compatibility distance, both one merge
 * pass over two connection lists in canonical (from, to) order. */
#include "genome.h"
#include "delay.h"
#include "hyper.h"

#include <math.h>
#include <string.h>

int genome_crossover(struct genome *child, const struct genome *fitter, const struct genome *other,
                     struct tv_rng *rng, struct tv_error *err)
{
    if (child == fitter || child == other)
        return tv_error_set(err, TV_EINVAL, "crossover: the child must not be a parent");
    genome_reset(child);
    int rc = genome_reserve(child, fitter->n_neurons, fitter->n_conns, err);
    if (!rc) /* the input scaling: fitter's, as its inputs are */
        rc = genome_set_scale(child, genome_scale_shift(fitter), genome_scale_mul(fitter),
                              fitter->n_scale, err);
    if (rc)
        return rc;
    /* The hyper-parameter genes first: no draw unless both parents have them. */
    genome_hyper_cross(child, fitter, other, rng);
    /* Neurons: fitter's set; a neuron in both takes bias and activation from
     * either parent, and each parameter of its model from either if both
     * have that model (a rate neuron has none: no draw). Depth, kind and
     * model stay fitter's, so structure is fitter's. */
    size_t j = 0;
    for (size_t i = 0; i < fitter->n_neurons; i++) {
        struct genome_neuron n = fitter->neurons[i];
        while (j < other->n_neurons && other->neurons[j].id < n.id)
            j++;
        if (j < other->n_neurons && other->neurons[j].id == n.id && n.kind != GENOME_INPUT &&
            other->neurons[j].kind == n.kind) {
            if (tv_rng_u64(rng) & 1)
                n.bias = other->neurons[j].bias;
            if (tv_rng_u64(rng) & 1)
                n.act = other->neurons[j].act;
            size_t n_params = genome_models[n.model].n_params;
            for (size_t k = 0; k < n_params && other->neurons[j].model == n.model; k++)
                if (tv_rng_u64(rng) & 1)
                    n.param[k] = other->neurons[j].param[k];
        }
        child->neurons[child->n_neurons++] = n;
    }
    /* Connections: fitter's keys; a matching key takes either weight (and
     * the delay that goes with it). One 64-bit draw decides 64 matching genes. */
    if ((fitter->delays || other->delays) && (rc = genome_delays_make(child, err)))
        return rc;
    uint64_t bits = 0;
    int n_bits = 0;
    j = 0;
    for (size_t i = 0; i < fitter->n_conns; i++) {
        struct genome_conn c = fitter->conns[i];
        while (j < other->n_conns && genome_conn_cmp(&other->conns[j], &c) < 0)
            j++;
        if (j < other->n_conns && genome_conn_cmp(&other->conns[j], &c) == 0) {
            if (n_bits == 0) {
                bits = tv_rng_u64(rng);
                n_bits = 64;
            }
            if (bits & 1)
                c.weight = other->conns[j].weight;
            if (child->delays)
                child->delays[i] =
                    (uint16_t)genome_conn_delay(bits & 1 ? other : fitter, bits & 1 ? j : i);
            bits >>= 1;
            n_bits--;
        } else if (child->delays) {
            child->delays[i] = (uint16_t)genome_conn_delay(fitter, i);
        }
        child->conns[child->n_conns++] = c;
    }
    return genome_crossover_conv(child, fitter, other, rng, err);
}

double genome_distance(const struct genome *a, const struct genome *b,
                       const struct genome_distance_cfg *cfg)
{
    size_t i = 0, j = 0, matching = 0, disjoint = 0, excess = 0;
    double wsum = 0;
    const struct genome_conn *last_a = a->n_conns ? &a->conns[a->n_conns - 1] : NULL;
    const struct genome_conn *last_b = b->n_conns ? &b->conns[b->n_conns - 1] : NULL;
    while (i < a->n_conns || j < b->n_conns) {
        int c = i == a->n_conns   ? 1
                : j == b->n_conns ? -1
                                  : genome_conn_cmp(&a->conns[i], &b->conns[j]);
        if (c == 0) {
            wsum += fabs((double)a->conns[i].weight - (double)b->conns[j].weight);
            matching++;
            i++;
            j++;
        } else if (c < 0) {
            /* a's gene beyond b's last key is excess, else disjoint. */
            if (!last_b || genome_conn_cmp(&a->conns[i], last_b) > 0)
                excess++;
            else
                disjoint++;
            i++;
        } else {
            if (!last_a || genome_conn_cmp(&b->conns[j], last_a) > 0)
                excess++;
            else
                disjoint++;
            j++;
        }
    }
    size_t n = a->n_conns > b->n_conns ? a->n_conns : b->n_conns;
    double norm = n < cfg->small_genome || n == 0 ? 1.0 : (double)n;
    double w = matching ? wsum / (double)matching : 0.0;
    return cfg->c_excess * (double)excess / norm + cfg->c_disjoint * (double)disjoint / norm +
           cfg->c_weight * w;
}

void genome_sketch(const struct genome *g, struct genome_sketch *s)
{
    memset(s, 0, sizeof *s);
    s->n_conns = g->n_conns;
    for (size_t i = 0; i < g->n_conns; i++) {
        uint64_t key = (uint64_t)g->conns[i].from << 32 | g->conns[i].to;
        unsigned bit = (unsigned)((key * UINT64_C(0x9E3779B97F4A7C15)) >> 56);
        s->bits[bit >> 6] |= UINT64_C(1) << (bit & 63);
    }
}

/* The bound, inlined into both entry points below (and so compiled for each
 * of genome_sketch_first_below's clones: one popcnt instruction per word
 * where the CPU has it). */
static inline double bound_of(const struct genome_sketch *a, const struct genome_sketch *b,
                              const struct genome_distance_cfg *cfg)
{
    size_t differ = 0;
    for (int w = 0; w < 4; w++)
        differ += (size_t)__builtin_popcountll(a->bits[w] ^ b->bits[w]);
    size_t sizes = a->n_conns > b->n_conns ? a->n_conns - b->n_conns : b->n_conns - a->n_conns;
    if (sizes > differ)
        differ = sizes;
    size_t n = a->n_conns > b->n_conns ? a->n_conns : b->n_conns;
    double norm = n < cfg->small_genome || n == 0 ? 1.0 : (double)n;
    double c = cfg->c_excess < cfg->c_disjoint ? cfg->c_excess : cfg->c_disjoint;
    return c * (double)differ / norm;
}

static int bound_valid(const struct genome_distance_cfg *cfg)
{
    return cfg->c_excess >= 0 && cfg->c_disjoint >= 0 && cfg->c_weight >= 0;
}

__attribute__((target_clones("popcnt", "default"))) double
genome_distance_bound(const struct genome_sketch *a, const struct genome_sketch *b,
                      const struct genome_distance_cfg *cfg)
{
    return bound_valid(cfg) ? bound_of(a, b, cfg) : 0;
}

__attribute__((target_clones("popcnt", "default"))) size_t
genome_sketch_first_below(const struct genome_sketch *mine, const struct genome_sketch *reps,
                          size_t from, size_t n, const struct genome_distance_cfg *cfg,
                          double threshold)
{
    if (!bound_valid(cfg))
        return from < n ? from : n;
    for (size_t k = from; k < n; k++)
        if (bound_of(mine, &reps[k], cfg) * GENOME_BOUND_MARGIN < threshold)
            return k;
    return n;
}
