/* helpers.c -- what the code of a task kind calls (tasks.h, task.h): declare
 * an instance's shape, run a plan on a list of patterns, name a figure of a
 * result, score an episode by its steps or XOR's four patterns. The registry
 * (registry.c) lists the kinds and calls them; the kinds call only this file
 * of the folder's shared code, so that neither calls the other back. */
#include "tasks.h"

int task_open_shape(struct task_instance *t, size_t n_in, size_t n_out, int out_act,
                    double max_fitness)
{
    t->n_inputs = n_in;
    t->n_outputs = n_out;
    t->out_act = out_act;
    t->max_fitness = max_fitness;
    return 0;
}

int task_run_patterns(const struct nn_plan *plan, const float *in, size_t n_patterns, float *out,
                      struct tv_error *err)
{
    struct nn_state *s;
    int rc = nn_state_new(plan, 1, &s, err);
    if (rc)
        return rc;
    size_t n_in = nn_plan_n_inputs(plan), n_out = nn_plan_n_outputs(plan);
    for (size_t p = 0; p < n_patterns; p++) {
        nn_state_reset(s); /* a new state is already reset: the same */
        nn_step(s, in + p * n_in, out + p * n_out);
    }
    nn_state_free(s);
    return 0;
}

void task_result_figure(struct task_result *r, const char *name, double value)
{
    if (r->n_figures < TASK_MAX_FIGURES) {
        r->figure_names[r->n_figures] = name;
        r->figures[r->n_figures++] = value;
    }
}

void task_result_steps(struct task_result *r, size_t steps, size_t max_steps)
{
    r->fitness = (double)steps;
    r->solved = steps >= max_steps;
    task_result_figure(r, "steps", (double)steps);
}

void task_result_xor(struct task_result *r, double error, int right)
{
    r->fitness = (4.0 - error) * (4.0 - error);
    r->solved = right == 4;
}
