/* testing.c -- tasks for tests and benchmarks of the search machinery, not
 * for research:
 *   null: fitness = the network's output on input 1 (no other work), so the
 *         master's own cost per individual can be measured;
 *   spin: like null, after about 0.5 ms of arithmetic, a stand-in for a real
 *         evaluation when measuring parallel efficiency. */
#include "tasks.h"

static int null_open(struct task_instance *t, struct tv_error *err)
{
    (void)err;
    return task_open_shape(t, 1, 1, GENOME_ACT_SIGMOID, 1);
}

static int null_evaluate(const struct task_instance *t, const struct nn_plan *plan,
                         struct tv_rng *rng, struct task_result *out, struct tv_error *err)
{
    (void)t;
    (void)rng;
    struct nn_state *s;
    int rc = nn_state_new(plan, 1, &s, err);
    if (rc)
        return rc;
    const float in[1] = {1.0f};
    float y;
    nn_step(s, in, &y);
    nn_state_free(s);
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
