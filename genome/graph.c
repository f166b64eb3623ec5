/* graph.c -- genome_build_graph: NEAT-style random graphs for tests and
 * benchmarks. Of the recurrent connections half stay within the source's
 * own level (self loops included), half go to any shallower neuron; of the
 * feed-forward ones half are local (to the next level), half skip. Generated
 * source by source with sorted targets, so the genome comes out in canonical
 * order without a sort: O(connections). */
#include "genome.h"

#include <math.h>
#include <stdlib.h>

static int cmp_u32(const void *a, const void *b)
{
    uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;
    return x < y ? -1 : x > y;
}

/* How many of `per` (a mean) this source gets: floor, plus one by chance. */
static size_t draw_count(double per, struct tv_rng *rng)
{
    double f = floor(per);
    return (size_t)f + (size_t)tv_rng_chance(rng, per - f);
}

/* The spec's counts and rate: 0, or TV_EINVAL naming what is wrong. */
static int check_spec(const struct genome_graph_spec *sp, struct tv_error *err)
{
    size_t n = sp->n_neurons, n_in = sp->n_in, n_out = sp->n_out;
    if (n_in == 0 || n_out == 0 || n_in + n_out > n || n >= GENOME_ID_NONE)
        return tv_error_set(
            err, TV_EINVAL,
            "genome_build_graph: %zu neurons cannot hold %zu inputs and %zu outputs", n, n_in,
            n_out);
    if (!(sp->rec_rate >= 0.0 && sp->rec_rate <= 1.0))
        return tv_error_set(err, TV_EINVAL, "genome_build_graph: rec_rate %g outside [0, 1]",
                            sp->rec_rate);
    return 0;
}

/* The graph's positions: inputs [0, n_in), hidden by level, outputs
 * [n - n_out, n); the id is the position. level_start[L] is the first
 * hidden of level L, level_start[levels] the first output. */
struct shape {
    size_t n, n_in, n_out, n_hid, levels;
    size_t *level_start; /* [levels + 2] */
};

/* Pushes the n neurons of shape s (biases drawn, inputs first). */
static int push_neurons(struct genome *g, const struct genome_graph_spec *sp, const struct shape *s,
                        struct tv_rng *rng, struct tv_error *err)
{
    size_t n = s->n, n_in = s->n_in, n_out = s->n_out, n_hid = s->n_hid, levels = s->levels;
    int rc = 0;
    for (size_t p = 0; p < n && !rc; p++) {
        struct genome_neuron u = {
            .id = (uint32_t)p, .kind = GENOME_HIDDEN, .act = (uint8_t)sp->hidden_act};
        if (p < n_in) {
            u.kind = GENOME_INPUT;
            u.act = GENOME_ACT_IDENTITY;
        } else if (p >= n - n_out) {
            u.kind = GENOME_OUTPUT;
            u.act = (uint8_t)sp->out_act;
            u.depth = 1.0f;
        } else {
            size_t L = (p - n_in) * levels / n_hid;
            u.depth = (float)(L + 1) / (float)(levels + 1);
        }
        if (u.kind != GENOME_INPUT)
            u.bias = (float)(tv_rng_normal(rng) * sp->weight_sd);
        rc = genome_push_neuron(g, &u, err);
    }
    return rc;
}

/* Where the connections of source p may go: feed-forward into [ff_lo, n),
 * locally into [ff_lo, local_hi) (the next level), recurrent into
 * [rec_lo, rec_hi) (its own level) or [n_in, rec_hi) (anything shallower). */
struct targets {
    size_t ff_lo, local_hi, rec_lo, rec_hi;
};

static struct targets targets_of(const struct shape *s, size_t p)
{
    size_t n = s->n, n_in = s->n_in, n_out = s->n_out, levels = s->levels;
    const size_t *level_start = s->level_start;
    /* feed-forward targets: anything deeper; half of them local (the
     * next level), half anywhere deeper (skip) */
    size_t ff_lo, local_hi, rec_lo, rec_hi;
    if (p < n_in) {
        ff_lo = n_in;
        local_hi = levels ? level_start[1] : n;
        rec_lo = rec_hi = n_in; /* nothing is at depth 0 but inputs */
    } else if (p >= n - n_out) {
        ff_lo = local_hi = n;
        rec_lo = n - n_out;
        rec_hi = n;
    } else {
        size_t L = (p - n_in) * levels / s->n_hid;
        ff_lo = level_start[L + 1];
        local_hi = L + 2 <= levels ? level_start[L + 2] : n;
        rec_lo = level_start[L];
        rec_hi = ff_lo; /* hidden of this level or shallower */
    }
    return (struct targets){ff_lo, local_hi, rec_lo, rec_hi};
}

/* The targets of source p into to[0..cap), sorted and distinct: about
 * ff_per feed-forward and rec_per recurrent ones. Returns how many. */
static size_t draw_targets(const struct shape *s, size_t p, double ff_per, double rec_per,
                           uint32_t *to, size_t cap, struct tv_rng *rng)
{
    size_t n = s->n, n_in = s->n_in;
    struct targets t = targets_of(s, p);
    /* draw, drop repeats, draw again for what was lost (a few rounds:
     * a small target range may not hold that many) */
    size_t want_ff = t.ff_lo < n ? draw_count(ff_per, rng) : 0;
    size_t want_rec = p >= n_in && t.rec_hi > n_in ? draw_count(rec_per, rng) : 0;
    if (want_ff + want_rec > cap)
        want_ff = cap - want_rec;
    size_t k = 0;
    for (int round = 0; round < 8 && k < want_ff + want_rec; round++) {
        size_t miss = want_ff + want_rec - k;
        for (size_t c = 0; c < miss; c++) {
            if (tv_rng_below(rng, (uint32_t)(want_ff + want_rec)) < want_ff) {
                size_t hi = tv_rng_chance(rng, 0.5) ? t.local_hi : n;
                to[k++] = (uint32_t)(t.ff_lo + tv_rng_below(rng, (uint32_t)(hi - t.ff_lo)));
            } else { /* half in its own level (or the outputs), half anywhere */
                size_t lo = tv_rng_chance(rng, 0.5) ? t.rec_lo : n_in;
                to[k++] = (uint32_t)(lo + tv_rng_below(rng, (uint32_t)(t.rec_hi - lo)));
            }
        }
        qsort(to, k, sizeof *to, cmp_u32);
        size_t u = 0;
        for (size_t i = 0; i < k; i++)
            if (u == 0 || to[i] != to[u - 1])
                to[u++] = to[i];
        k = u;
    }
    return k;
}

int genome_build_graph(struct genome *g, const struct genome_graph_spec *sp, struct tv_rng *rng,
                       struct tv_error *err)
{
    int rc = check_spec(sp, err);
    if (rc)
        return rc;
    size_t n = sp->n_neurons, n_in = sp->n_in, n_out = sp->n_out;
    size_t n_hid = n - n_in - n_out;
    size_t levels = n_hid == 0 ? 0 : (sp->n_levels == 0 ? 1 : sp->n_levels);
    if (levels > n_hid)
        levels = n_hid;
    genome_reset(g);
    rc = genome_reserve(g, n, sp->n_conns + sp->n_conns / 16 + 16, err);
    if (rc)
        return rc;
    size_t *level_start = malloc((levels + 2) * sizeof *level_start);
    if (!level_start)
        return tv_error_set(err, TV_ENOMEM, "genome_build_graph: out of memory");
    for (size_t L = 0; L <= levels; L++)
        level_start[L] = n_in + (levels ? L * n_hid / levels : 0);
    struct shape s = {n, n_in, n_out, n_hid, levels, level_start};
    rc = push_neurons(g, sp, &s, rng, err);
    size_t n_rec = (size_t)llround((double)sp->n_conns * sp->rec_rate);
    double ff_per = (double)(sp->n_conns - n_rec) / (double)(n - n_out);
    double rec_per = (double)n_rec / (double)(n - n_in);
    size_t cap = (size_t)ff_per + (size_t)rec_per + 4;
    uint32_t *to = malloc(cap * sizeof *to);
    if (!to && !rc)
        rc = tv_error_set(err, TV_ENOMEM, "genome_build_graph: out of memory");
    for (size_t p = 0; p < n && !rc; p++) {
        size_t k = draw_targets(&s, p, ff_per, rec_per, to, cap, rng);
        for (size_t i = 0; i < k && !rc; i++) {
            struct genome_conn c = {(uint32_t)p, to[i],
                                    (float)(tv_rng_normal(rng) * sp->weight_sd)};
            rc = genome_push_conn(g, &c, err);
        }
    }
    free(to);
    free(level_start);
    return rc;
}
