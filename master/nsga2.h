/*
 * nsga2.h -- private to master/: selection = nsga2 (Deb, Pratap, Agarwal and
 * Meyarivan 2002, "A fast and elitist multiobjective genetic algorithm:
 * NSGA-II"): fast non-dominated sorting and crowding distance over the
 * members' objectives, and the plan it makes (evolve.c's master_plan calls
 * master_plan_nsga2).
 *
 * Every objective is maximised here: the caller negates sizes. NaN counts as
 * the worst value (-inf), so a member without a figure is dominated by any
 * with one. Ties are broken by id, so the order is total and a plan is a
 * pure function of the population, the config and the rng.
 */
#ifndef TREVO_MASTER_NSGA2_H
#define TREVO_MASTER_NSGA2_H

#include "pop.h"

/* values: n rows of m objectives (row i is values[i * m .. i * m + m)),
 * maximised, NaN the worst. Fills rank[i] (0: the non-dominated front, 1:
 * the front once that one is removed, ...) and crowd[i], the crowding
 * distance of row i within its front (+inf at a front's ends on any
 * objective; an objective whose values in the front are not all finite or
 * all equal adds nothing to the others). TV_ENOMEM. */
int master_nsga2_sort(const double *values, size_t n, size_t m, const int64_t *ids, uint32_t *rank,
                      double *crowd, struct tv_error *err);

/* 1 if row a comes before row b in NSGA-II's crowded order: lower rank,
 * then larger crowding distance, then lower id. */
int master_nsga2_before(const uint32_t *rank, const double *crowd, const int64_t *ids, size_t a,
                        size_t b);

/* A member's value of objective `obj` (enum master_obj), maximised: the
 * accuracies as they are, the sizes negated; NaN when unknown, and for a
 * failed member (fitness -inf) on every objective. */
double master_member_objective(const struct master_member *m, int obj);

/* Members that take part in selection at generation `generation` (the one
 * being planned): all of them, or with max_age > 0 those born max_age or
 * fewer generations before the last closed one (all of them if that would
 * leave none). Their indices, in id order, into idx[0..*n). */
void master_pop_eligible(const struct master_pop *p, const struct master_config *c,
                         int64_t generation, size_t *idx, size_t *n);

/* The plan of selection = nsga2: the eligible members sorted, the first
 * pop_size in crowded order survive (elites: kept, not evaluated again),
 * and pop_size children are bred from parents chosen by binary crowded
 * tournaments among the survivors. elites and children have room for
 * pop_size each; *n_elites and *n_children are set. */
int master_plan_nsga2(const struct master_pop *p, const struct master_config *c, int64_t generation,
                      struct tv_rng *rng, int64_t *elites, size_t *n_elites,
                      struct master_child *children, size_t *n_children, struct tv_error *err);

#endif
