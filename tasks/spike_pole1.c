/* spike_pole1.c -- the single pole (pole1's physics, start and protocol) for
 * spiking networks (cuba neurons; `[genome] init_model = cuba`).
 *
 * Encoding: each action of the cart (0.02 s) is `window` steps of the
 * network, which runs on without reset from one action to the next. The
 * five inputs of pole1 (bias 1 and the four state variables scaled to about
 * [0, 1]) are held as input currents over the window; the cart is pushed
 * with +10 N if the output neuron spiked at least `spikes` times in the
 * window, else -10 N. Fitness: the actions balanced; solved at max_steps. */
#include "tasks.h"

#define N_IN 5

static const struct task_key keys[3] = {
    TASK_SPIKE_KEY("max_steps", TASK_POLE_MAX_STEPS, 1e9,
                   "actions of an episode, and the fitness that solves the task"),
    TASK_SPIKE_KEY("window", 5, 10000, "network steps per action, inputs held as currents"),
    TASK_SPIKE_KEY("spikes", 1, 10000,
                   "output spikes in a window that push right (fewer push left)"),
};

TASK_OPEN_SHAPE(spike_pole1_open, N_IN, 1, GENOME_ACT_IDENTITY, (double)t->params.v[0].i)

static int spike_pole1_evaluate(const struct task_instance *t, const struct nn_plan *plan,
                                struct tv_rng *rng, struct task_result *out, struct tv_error *err)
{
    size_t max_steps = (size_t)t->params.v[0].i, window = (size_t)t->params.v[1].i;
    uint32_t push = (uint32_t)t->params.v[2].i;
    struct task_cart1 c;
    task_pole1_start(rng, &c);
    struct nn_state *s = NULL;
    int rc = task_spike_state(t, plan, &s, err);
    if (rc)
        return rc;
    task_result_figure(out, "x0", c.x);
    task_result_figure(out, "theta0", c.theta);
    float in[N_IN];
    in[0] = 1.0f;
    size_t steps = 0;
    uint64_t spikes = 0;
    while (steps < max_steps) {
        in[1] = (float)((c.x + 2.4) / 4.8);
        in[2] = (float)((c.x_dot + 0.75) / 1.5);
        in[3] = (float)((c.theta + TASK_CART1_THETA_LIMIT) / 0.41);
        in[4] = (float)((c.theta_dot + 1.0) / 2.0);
        uint32_t count;
        task_spike_window(s, in, window, 1, &count);
        spikes += count;
        task_cart1_step(&c, count >= push ? TASK_CART1_FORCE : -TASK_CART1_FORCE);
        if (task_cart1_failed(&c))
            break;
        steps++;
    }
    nn_state_free(s);
    task_result_steps(out, steps, max_steps);
    task_result_figure(out, "output_spikes", (double)spikes);
    return 0;
}

const struct task_kind task_spike_pole1 = {
    .abi_version = TASK_ABI_VERSION,
    .name = "spike_pole1",
    .summary = "single pole for spiking networks: pole1's 5 inputs as currents over `window` "
               "steps an action, +10 N if the output spiked `spikes` times; fitness = actions",
    .keys = keys,
    .n_keys = 3,
    .open = spike_pole1_open,
    .evaluate = spike_pole1_evaluate,
};
