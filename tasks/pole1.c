/* pole1.c -- single pole balancing as NEAT ran it (docs/protocols.md): a random
 * start drawn from the evaluation's rng, then the network pushes the cart
 * with +-10 N each 0.02 s step until the pole falls, the cart leaves the
 * track, or 100,000 steps pass. Fitness: the steps balanced; solved at
 * 100,000 ([task] max_steps).
 *
 * Inputs (NEAT's go_cart()): 1.0 (bias), (x + 2.4) / 4.8, (x_dot + 0.75) / 1.5,
 * (theta + 0.2094384) / 0.41, (theta_dot + 1) / 2. In docs/protocols.md, the
 * third offset, often written 0.2094, is NEAT's twelve_degrees constant, 0.2094384.
 *
 * Action: bang-bang, +10 N if the one output is > 0.5, else -10 N. NEAT's C++
 * code had two outputs and pushed right unless the first was greater than the
 * second; with one sigmoid output the same choice is a threshold at 0.5 (as
 * neat-python's single-pole example does it).
 *
 * Output activation of starting genomes: NEAT's steepened sigmoid
 * 1 / (1 + e^-4.9x), the one NEAT's code used (its fsigmoid, slope 4.924273).
 *
 * Steps are counted as actions after which the system is still within
 * bounds; NEAT's go_cart() also counts the action that failed (one more). */
#include "tasks.h"

#define N_IN 5

void task_pole1_start(struct tv_rng *rng, struct task_cart1 *s)
{
    s->x = tv_rng_below(rng, 4800) / 1000.0 - 2.4;
    s->x_dot = tv_rng_below(rng, 2000) / 1000.0 - 1;
    s->theta = tv_rng_below(rng, 400) / 1000.0 - 0.2;
    s->theta_dot = tv_rng_below(rng, 3000) / 1000.0 - 1.5;
}

int task_pole1_run(const struct nn_plan *plan, const struct task_cart1 *start, size_t max_steps,
                   size_t *steps, struct tv_error *err)
{
    struct nn_state *s;
    int rc = nn_state_new(plan, 1, &s, err);
    if (rc)
        return rc;
    struct task_cart1 c = *start;
    float in[N_IN], out;
    size_t t = 0;
    in[0] = 1.0f;
    while (t < max_steps) {
        in[1] = (float)((c.x + 2.4) / 4.8);
        in[2] = (float)((c.x_dot + 0.75) / 1.5);
        in[3] = (float)((c.theta + TASK_CART1_THETA_LIMIT) / 0.41);
        in[4] = (float)((c.theta_dot + 1.0) / 2.0);
        nn_step(s, in, &out);
        task_cart1_step(&c, out > 0.5f ? TASK_CART1_FORCE : -TASK_CART1_FORCE);
        if (task_cart1_failed(&c))
            break;
        t++;
    }
    nn_state_free(s);
    *steps = t;
    return 0;
}

const struct task_key task_pole_keys[1] = {
    {.name = "max_steps",
     .type = TASK_KEY_INT,
     .def = TASK_POLE_MAX_STEPS,
     .min = 1,
     .max = 1e9,
     .doc = "steps of an episode, and the fitness that solves the task"},
};

TASK_OPEN_SHAPE(pole1_open, N_IN, 1, GENOME_ACT_NEAT_SIGMOID, (double)t->params.v[0].i)

static int pole1_evaluate(const struct task_instance *t, const struct nn_plan *plan,
                          struct tv_rng *rng, struct task_result *out, struct tv_error *err)
{
    size_t max_steps = (size_t)t->params.v[0].i;
    struct task_cart1 start;
    task_pole1_start(rng, &start);
    size_t steps;
    int rc = task_pole1_run(plan, &start, max_steps, &steps, err);
    if (rc)
        return rc;
    task_result_steps(out, steps, max_steps);
    task_result_figure(out, "x0", start.x);
    task_result_figure(out, "x_dot0", start.x_dot);
    task_result_figure(out, "theta0", start.theta);
    task_result_figure(out, "theta_dot0", start.theta_dot);
    return 0;
}

const struct task_kind task_pole1 = {
    .abi_version = TASK_ABI_VERSION,
    .name = "pole1",
    .summary = "single pole, NEAT protocol: 5 inputs (bias 1, x, x', theta, theta'), 1 "
               "neat_sigmoid output (> 0.5: +10 N), random start, fitness = steps up to 100,000",
    .keys = task_pole_keys,
    .n_keys = 1,
    .open = pole1_open,
    .evaluate = pole1_evaluate,
};
