/* testing.c -- tasks for tests and benchmarks of the search machinery, not
 * for research:
 *   null: fitness = the network's output on input 1 (no other work), so the
 *         master's own cost per individual can be measured;
 *   spin: like null, after about 0.5 ms of arithmetic, a stand-in for a real
 *         evaluation when measuring parallel efficiency. */
#include "tasks.h"

TASK_OPEN_SHAPE(null_open, 1, 1, GENOME_ACT_SIGMOID, 1)

static int null_evaluate(const struct task_instance *t, const struct nn_plan *plan,
                         struct tv_rng *rng, struct task_result *out, struct tv_error *err)
{
    (void)t;
    (void)rng;
    const float in[1] = {1.0f};
    float y;
    int rc = task_run_patterns(plan, in, 1, &y, err);
    if (rc)
        return rc;
    out->fitness = y;
    out->solved = 0;
    return 0;
}

static int spin_evaluate(const struct task_instance *t, const struct nn_plan *plan,
                         struct tv_rng *rng, struct task_result *out, struct tv_error *err)
{
    /* About 0.5 ms (measured: 1.6 ms for 400,000 steps on the 2-core EPYC of
     * BENCHMARKS.md, so 125,000 here): a dependent chain the compiler cannot
     * remove, since its result feeds the fitness (scaled to nothing). */
    volatile double acc = 1.0;
    for (int i = 0; i < 125000; i++)
        acc = acc * 1.0000001 + 1e-9;
    int rc = null_evaluate(t, plan, rng, out, err);
    out->fitness += (acc - acc);
    return rc;
}

const struct task_kind task_null = {
    .abi_version = TASK_ABI_VERSION,
    .name = "null",
    .summary = "test task: fitness is the output for input 1, no other work",
    .open = null_open,
    .evaluate = null_evaluate,
};

const struct task_kind task_spin = {
    .abi_version = TASK_ABI_VERSION,
    .name = "spin",
    .summary = "test task: like null after ~0.5 ms of arithmetic (parallel efficiency)",
    .open = null_open,
    .evaluate = spin_evaluate,
};
