/*
 * task.h -- the tasks (fitness functions) networks are evaluated on, and the
 * table that registers them by name.
 *
 * A task declares its inputs and outputs, the activation of the outputs of
 * its starting genomes, and an evaluate function that runs a compiled plan and
 * fills a task_result (fitness, whether the network solves the task, and a few
 * named figures of its own). Evaluation may use randomness only through the
 * rng passed in, which the worker seeds from the child's seed, so a fitness is
 * a pure function of (genome, seed).
 *
 * Adding a task touches one place: a file defining its `struct task` and one
 * line in the table in registry.c.
 *
 * Tasks know nn/ and genome/ only: never MPI, SQLite or the store.
 */
#ifndef TREVO_TASK_H
#define TREVO_TASK_H

#include <stddef.h>

#include "nn.h"

#define TASK_MAX_FIGURES 8

struct task_result {
    double fitness;
    int solved; /* 1 if the network meets the task's success test */
    /* The task's own figures ("steps", "out_01", ...), for `trevo task eval`. */
    size_t n_figures;
    const char *figure_names[TASK_MAX_FIGURES]; /* static strings */
    double figures[TASK_MAX_FIGURES];
};

struct task {
    const char *name;
    const char *summary;
    size_t n_inputs, n_outputs;
    int out_act;        /* enum genome_act for outputs of starting genomes */
    double max_fitness; /* the best fitness possible, for reports */
    /* Runs plan on the task. 0, or a TV_E* code with err set. */
    int (*evaluate)(const struct task *t, const struct nn_plan *plan, struct tv_rng *rng,
                    struct task_result *out, struct tv_error *err);
    /* Optional (NULL: none). The champion's test, run by the master on the
     * best individual of every generation once all of it is evaluated (DPNV:
     * the 100,000-step run, then the 625-start generalization test). It uses
     * no randomness, so it gives the same verdict on resume. out->solved says
     * whether the run is solved; out->fitness carries the test's score (DPNV:
     * starts generalized, 0 if the long run failed), which the store keeps
     * with the generation. Champion tests are not counted as evaluations. */
    int (*champion_test)(const struct task *t, const struct nn_plan *plan, struct task_result *out,
                         struct tv_error *err);
};

/* The task registered under name, or NULL. */
const struct task *task_find(const char *name);
/* Every registered task, for listings: task_all(&n). */
const struct task *const *task_all(size_t *n);

/* Adds a named figure to a result (ignored past TASK_MAX_FIGURES). */
void task_result_figure(struct task_result *r, const char *name, double value);

#endif
