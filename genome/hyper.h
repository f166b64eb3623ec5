/* hyper.h -- inside genome/ only: the hyper-parameter genes (genome.h,
 * "hyper-parameter genes") for validation, crossover and mutation. Each is a
 * no-op, without a draw, on a genome without them and a rate of 0. */
#ifndef TREVO_GENOME_HYPER_H
#define TREVO_GENOME_HYPER_H

#include "genome.h"

/* 1 when a and b have the same genes (bitwise), or both none. */
int genome_hyper_equal(const struct genome *a, const struct genome *b);
/* genome_validate()'s part: each gene finite, within [GENOME_HYPER_MIN,
 * GENOME_HYPER_MAX]. TV_EINVAL naming it: "hyper-parameter gene lr_scale 0 is
 * outside [0.001, 1000]". */
int genome_hyper_check(const struct genome *g, struct tv_error *err);
/* genome_mutate()'s part (cfg->hyper_rate, _sigma, _min, _max). */
void genome_hyper_mutate(struct genome *g, const struct genome_mutation *cfg, struct tv_rng *rng);
/* genome_crossover()'s part: fitter's genes, or, when both parents have
 * them, either's at random (one draw). */
void genome_hyper_cross(struct genome *child, const struct genome *fitter,
                        const struct genome *other, struct tv_rng *rng);

#endif
