/*
 * pop.h -- private to master/: what evolve.c (speciation, planning) and
 * state.c (the checkpoint codec) share about a population beyond master.h.
 */
#ifndef TREVO_MASTER_POP_H
#define TREVO_MASTER_POP_H

#include "master.h"

/* 1 if member a ranks before member b: higher fitness, then lower id. */
int master_member_ranks_before(const struct master_member *a, const struct master_member *b);

/* Sorts idx[0..n) of p's members by rank: a total order (fitness is never
 * NaN in a population, ids are distinct), so any sort gives the same list. */
void master_pop_sort_by_rank(const struct master_pop *p, size_t *idx, size_t n);

/* A child of members a and b (indices): crossover with probability
 * crossover_rate when two is set and a != b (parent1 the one that ranks
 * first), else a mutant of a; draws from rng in that order. */
struct master_child master_child_of(const struct master_pop *p, const struct master_config *c,
                                    struct tv_rng *rng, size_t a, size_t b, int two);

/* Appends member (an index into the population) to s's members. TV_ENOMEM. */
int master_species_add_member(struct master_species *s, size_t member, struct tv_error *err);

#endif
