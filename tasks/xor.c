/* xor.c -- XOR as the NEAT paper ran it (docs/protocols.md): inputs bias 1.0, x1,
 * x2; one output, NEAT's steepened sigmoid; fitness (4 - sum |out - target|)^2,
 * at most 16; solved when every pattern is on the right side of 0.5. Each
 * pattern is one time step from a reset state. */
#include "tasks.h"

static const float patterns[4][3] = {{1, 0, 0}, {1, 0, 1}, {1, 1, 0}, {1, 1, 1}};
static const float targets[4] = {0, 1, 1, 0};
static const char *const figure_names[4] = {"out_00", "out_01", "out_10", "out_11"};

TASK_OPEN_SHAPE(xor_open, 3, 1, GENOME_ACT_NEAT_SIGMOID, 16)

static int xor_evaluate(const struct task_instance *t, const struct nn_plan *plan,
                        struct tv_rng *rng, struct task_result *out, struct tv_error *err)
{
    (void)t;
    (void)rng;
    float ys[4];
    int rc = task_run_patterns(plan, patterns[0], 4, ys, err);
    if (rc)
        return rc;
    double error = 0;
    int right = 0;
    for (int p = 0; p < 4; p++) {
        float y = ys[p];
        error += fabs((double)y - targets[p]);
        right += targets[p] > 0.5f ? y >= 0.5f : y < 0.5f;
        task_result_figure(out, figure_names[p], y);
    }
    task_result_xor(out, error, right);
    return 0;
}

const struct task_kind task_xor = {
    .abi_version = TASK_ABI_VERSION,
    .name = "xor",
    .summary = "XOR, NEAT protocol: 3 inputs (bias, x1, x2), 1 output, fitness (4 - error)^2",
    .open = xor_open,
    .evaluate = xor_evaluate,
};
