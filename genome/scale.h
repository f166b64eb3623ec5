/* scale.h -- genome/'s own helpers for the input scaling (genome.h, "input
 * scaling"), used by the life cycle, validation, crossover and the formats.
 * Each is a no-op, or next to one, on a genome without a scaling. */
#ifndef TREVO_GENOME_SCALE_H
#define TREVO_GENOME_SCALE_H

#include "genome.h"

/* Drops g's scaling (frees it). */
void genome_scale_drop(struct genome *g);
/* dst's scaling becomes src's. 0 or TV_ENOMEM. */
int genome_scale_copy(struct genome *dst, const struct genome *src, struct tv_error *err);
/* 1 when a and b have the same scaling (bitwise), or both none. */
int genome_scale_equal(const struct genome *a, const struct genome *b);
/* genome_validate()'s part: n_scale is 0 or n_in, every value finite. */
int genome_scale_check(const struct genome *g, size_t n_in, struct tv_error *err);

#endif
