/* tasks.h -- private to experiments/: what the task files share, and the
 * task definitions the registry lists. */
#ifndef TREVO_EXPERIMENTS_TASKS_H
#define TREVO_EXPERIMENTS_TASKS_H

#include <math.h>

#include "cartpole.h"
#include "task.h"

extern const struct task_kind task_xor;
extern const struct task_kind task_null;
extern const struct task_kind task_spin;
extern const struct task_kind task_pole1;
extern const struct task_kind task_dpv;
extern const struct task_kind task_dpnv;
extern const struct task_kind task_classify;
extern const struct task_kind task_spike_xor;
extern const struct task_kind task_spike_pole1;

/* ---- spiking tasks (spike_xor.c, spike_pole1.c) --------------------------- */

#define TASK_SPIKE_MAX_OUT 8
/* A whole-number [task] key of a spiking task, in [1, max]. */
#define TASK_SPIKE_KEY(name_, def_, max_, doc_)                                                    \
    {                                                                                              \
        .name = name_, .type = TASK_KEY_INT, .def = def_, .min = 1, .max = max_, .doc = doc_       \
    }
/* A state (batch 1) of plan into *s if plan is a spiking network, else
 * TV_EINVAL naming the task and the config key that starts a search from
 * spiking neurons; TV_ENOMEM. */
int task_spike_state(const struct task_instance *t, const struct nn_plan *plan, struct nn_state **s,
                     struct tv_error *err);
/* Runs `window` steps of s (batch 1) with the inputs in[] held, counting the
 * spikes of each of the first n_out (<= TASK_SPIKE_MAX_OUT) outputs into
 * counts[n_out]. */
void task_spike_window(struct nn_state *s, const float *in, size_t window, size_t n_out,
                       uint32_t *counts);

/* What open() of a task of fixed shape does: declares n_in inputs, n_out
 * outputs, the outputs' activation and the best fitness. Returns 0. */
int task_open_shape(struct task_instance *t, size_t n_in, size_t n_out, int out_act,
                    double max_fitness);
/* Runs plan on n_patterns inputs, each one step from a reset state: in is
 * [n_patterns][the plan's inputs], out [n_patterns][its outputs]. 0 or
 * TV_ENOMEM. */
int task_run_patterns(const struct nn_plan *plan, const float *in, size_t n_patterns, float *out,
                      struct tv_error *err);
/* The score of an episode by its length (pole1, dpv, spike_pole1): fitness
 * the steps balanced, solved at max_steps, and the figure "steps". */
void task_result_steps(struct task_result *r, size_t steps, size_t max_steps);
/* XOR's score (xor, spike_xor): fitness (4 - error)^2, error the sum over
 * the four patterns of |y - target|; solved when all four (right) are. */
void task_result_xor(struct task_result *r, double error, int right);
/* Defines `static int name(struct task_instance *t, struct tv_error *err)`,
 * the open() of a task of fixed shape (max_fitness may read t->params). */
#define TASK_OPEN_SHAPE(name, n_in, n_out, out_act, max_fitness)                                   \
    static int name(struct task_instance *t, struct tv_error *err)                                 \
    {                                                                                              \
        (void)err;                                                                                 \
        return task_open_shape(t, n_in, n_out, out_act, max_fitness);                              \
    }

/* The [task] keys of pole1 and dpv: max_steps (index 0), the episode's
 * length and the fitness that solves, default TASK_POLE_MAX_STEPS. */
extern const struct task_key task_pole_keys[1];

/* ---- pole balancing (pole1.c, pole2.c), open to tests ------------------- */

/* Episode lengths of docs/protocols.md. */
#define TASK_POLE_MAX_STEPS 100000 /* pole1, dpv, and the dpnv champion's long run */
#define TASK_DPNV_STEPS 1000       /* a dpnv episode, and each generalization start */
#define TASK_DPNV_DAMPING_STEPS 100
#define TASK_DPNV_GENERALIZE_MIN 200 /* of 625 starts */

/* pole1's random start, drawn as NEAT's code draws it (on a 0.001 grid):
 * x in [-2.4, 2.4), x_dot in [-1, 1), theta in [-0.2, 0.2), theta_dot in
 * [-1.5, 1.5), in that order, one tv_rng_below() draw each. */
void task_pole1_start(struct tv_rng *rng, struct task_cart1 *s);
/* Runs plan on the single pole from *start for at most max_steps actions;
 * *steps = the actions after which the cart and pole were still within
 * bounds (the first failure ends the episode). 0 or TV_ENOMEM. */
int task_pole1_run(const struct nn_plan *plan, const struct task_cart1 *start, size_t max_steps,
                   size_t *steps, struct tv_error *err);

/* Runs plan on the double pole from start[6] for at most max_steps actions,
 * with velocities among the inputs (dpv) or not (dpnv); *steps as above. If
 * jiggle is not NULL it gets the sum over the last 100 balanced steps of
 * |x| + |x_dot| + |theta1| + |theta1_dot| (0 if fewer than 100). 0 or
 * TV_ENOMEM. */
int task_pole2_run(const struct nn_plan *plan, int velocities, const double start[TASK_CART2_DIM],
                   size_t max_steps, size_t *steps, double *jiggle, struct tv_error *err);
/* The dpnv damping fitness 0.1 t/1000 + 0.9 f2, f2 = 0 if t < 100, else
 * 0.75 / jiggle (the sum above). */
double task_dpnv_fitness(size_t steps, double jiggle);
/* The i-th (0..624) start of the dpnv generalization grid. */
void task_dpnv_grid_start(size_t i, double start[TASK_CART2_DIM]);

#endif
