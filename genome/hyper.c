/* hyper.c -- the hyper-parameter genes (genome.h, "hyper-parameter genes"). */
#include "hyper.h"

#include <math.h>
#include <string.h>

const char *const genome_hyper_names[GENOME_N_HYPER] = {"lr_scale", "steps_scale", "regrow_scale"};

void genome_set_hyper(struct genome *g, const float *v)
{
    g->has_hyper = v != NULL;
    for (size_t k = 0; k < GENOME_N_HYPER; k++)
        g->hyper[k] = v ? v[k] : 0.0f;
}

int genome_hyper_equal(const struct genome *a, const struct genome *b)
{
    return a->has_hyper == b->has_hyper &&
           (!a->has_hyper || !memcmp(a->hyper, b->hyper, sizeof a->hyper));
}

int genome_hyper_check(const struct genome *g, struct tv_error *err)
{
    for (size_t k = 0; k < GENOME_N_HYPER && g->has_hyper; k++)
        if (!(g->hyper[k] >= GENOME_HYPER_MIN && g->hyper[k] <= GENOME_HYPER_MAX))
            return tv_error_set(err, TV_EINVAL, "hyper-parameter gene %s %g is outside [%g, %g]",
                                genome_hyper_names[k], (double)g->hyper[k],
                                (double)GENOME_HYPER_MIN, (double)GENOME_HYPER_MAX);
    return 0;
}

void genome_hyper_mutate(struct genome *g, const struct genome_mutation *cfg, struct tv_rng *rng)
{
    if (!(cfg->hyper_rate > 0))
        return;
    double lo = cfg->hyper_min > 0 ? cfg->hyper_min : GENOME_HYPER_MIN;
    double hi = cfg->hyper_max > 0 ? cfg->hyper_max : GENOME_HYPER_MAX;
    lo = lo < GENOME_HYPER_MIN ? GENOME_HYPER_MIN : lo;
    hi = hi > GENOME_HYPER_MAX ? GENOME_HYPER_MAX : hi < lo ? lo : hi;
    if (!g->has_hyper)
        genome_set_hyper(g, (const float[GENOME_N_HYPER]){1.0f, 1.0f, 1.0f});
    for (size_t k = 0; k < GENOME_N_HYPER; k++) {
        if (!tv_rng_chance(rng, cfg->hyper_rate))
            continue;
        double v = g->hyper[k] * exp(cfg->hyper_sigma * tv_rng_normal(rng));
        /* (rounding to float is monotonic: the result stays within the
         * genes' range, whose ends are floats) */
        g->hyper[k] = (float)(v < lo ? lo : v > hi ? hi : v);
    }
}

void genome_hyper_cross(struct genome *child, const struct genome *fitter,
                        const struct genome *other, struct tv_rng *rng)
{
    const struct genome *from = fitter;
    if (fitter->has_hyper && other->has_hyper && (tv_rng_u64(rng) & 1))
        from = other;
    genome_set_hyper(child, from->has_hyper ? from->hyper : NULL);
}
