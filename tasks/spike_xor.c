/* spike_xor.c -- XOR for spiking networks (cuba neurons; start the search
 * from them with `[genome] init_model = cuba`).
 *
 * Encoding: the inputs are currents. Each pattern runs from a reset network
 * for `window` steps with the three inputs (bias 1, x1, x2, as in xor) held
 * as input currents the whole time; the answer is the output neuron's spike
 * count over the window: y = min(count, spikes) / spikes. Fitness as xor's,
 * (4 - sum |y - target|)^2, at most 16. Solved when the output stays silent
 * on both patterns of target 0 and spikes at least once on both of target 1.
 *
 * The spike-count window is shared with spike_pole1 (task_spike_window). */
#include <string.h>

#include "spike.h"
#include "tasks.h"

static const float patterns[4][3] = {{1, 0, 0}, {1, 0, 1}, {1, 1, 0}, {1, 1, 1}};
static const int targets[4] = {0, 1, 1, 0};
static const char *const figure_names[4] = {"spikes_00", "spikes_01", "spikes_10", "spikes_11"};

int task_spike_state(const struct task_instance *t, const struct nn_plan *plan, struct nn_state **s,
                     struct tv_error *err)
{
    *s = NULL;
    if (!nn_plan_spiking(plan))
        return tv_error_set(err, TV_EINVAL,
                            "%s: the network has no spiking neuron (start the search from cuba "
                            "neurons: [genome] init_model = cuba)",
                            t->kind ? t->kind->name : "spiking task");
    return nn_state_new(plan, 1, s, err);
}

void task_spike_window(struct nn_state *s, const float *in, size_t window, size_t n_out,
                       uint32_t *counts)
{
    float out[TASK_SPIKE_MAX_OUT];
    memset(counts, 0, n_out * sizeof *counts);
    for (size_t k = 0; k < window; k++) {
        nn_step(s, in, out);
        for (size_t o = 0; o < n_out; o++)
            counts[o] += out[o] > 0.5f;
    }
}

static const struct task_key keys[2] = {
    TASK_SPIKE_KEY("window", 20, 100000, "steps each pattern runs, inputs held as currents"),
    TASK_SPIKE_KEY("spikes", 3, 100000, "output spikes that count as a full 1"),
};

TASK_OPEN_SHAPE(spike_xor_open, 3, 1, GENOME_ACT_IDENTITY, 16)

static int spike_xor_evaluate(const struct task_instance *t, const struct nn_plan *plan,
                              struct tv_rng *rng, struct task_result *out, struct tv_error *err)
{
    (void)rng;
    struct nn_state *s = NULL;
    int rc = task_spike_state(t, plan, &s, err);
    if (rc)
        return rc;
    size_t window = (size_t)t->params.v[0].i;
    double full = (double)t->params.v[1].i, error = 0;
    int right = 0;
    for (int p = 0; p < 4; p++) {
        uint32_t count;
        nn_state_reset(s);
        task_spike_window(s, patterns[p], window, 1, &count);
        double y = count >= full ? 1.0 : count / full;
        error += fabs(y - targets[p]);
        right += targets[p] ? count > 0 : count == 0;
        task_result_figure(out, figure_names[p], count);
    }
    nn_state_free(s);
    task_result_xor(out, error, right);
    return 0;
}

const struct task_kind task_spike_xor = {
    .abi_version = TASK_ABI_VERSION,
    .name = "spike_xor",
    .summary = "XOR for spiking networks: 3 input currents (bias, x1, x2) held for `window` "
               "steps, the answer the output's spike count; fitness (4 - error)^2",
    .keys = keys,
    .n_keys = 2,
    .open = spike_xor_open,
    .evaluate = spike_xor_evaluate,
};
