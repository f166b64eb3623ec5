/* test_task.c -- the task plugin tests/test_plugin.c and tests/it_plugin.sh
 * build with cc, once per case, choosing with -D what is wrong with it:
 *   (nothing)              a good plugin: task "plugtest", keys inputs, scale, flip;
 *                          TREVO_TEST_INPUTS in the environment, if set, overrides
 *                          the inputs (ranks that disagree on the shape)
 *   -DNO_ENTRY             exports no entry symbol
 *   -DENTRY=trevo_task_vN  exports its entry under that name (another version's)
 *   -DABI_DELTA=1          its row says TASK_ABI_VERSION + 1
 *   -DTAIL                 its row sets evaluate_genome (fitness 99), which a row
 *                          of version 2 (-DENTRY=trevo_task_v2 -DABI_DELTA=-1) does
 *                          not have: the loader must not read it
 *   -DBAD_KEY              a key whose default is out of its range
 *   -DUNDEFINED            calls a function nobody defines (an unresolved symbol)
 * It calls nothing of trevo's, so that it loads into the test binaries too
 * (which, unlike trevo, do not export their functions). */
#include <stdio.h>
#include <stdlib.h>

#include "plugin.h"

#ifdef BAD_KEY
#define SCALE 50 /* out of its range */
#else
#define SCALE 1
#endif

static const struct task_key keys[] = {
    {.name = "inputs", .type = TASK_KEY_INT, .def = 2, .min = 1, .max = 8, .doc = "inputs"},
    {.name = "scale", .type = TASK_KEY_DOUBLE, .def = SCALE, .min = 0, .max = 10, .doc = "fit"},
    {.name = "flip", .type = TASK_KEY_BOOL, .def = 0, .min = 0, .max = 1, .doc = "negate it"},
};

#ifdef UNDEFINED
void trevo_no_such_function(void);
#endif

static int open_task(struct task_instance *t, struct tv_error *err)
{
    (void)err;
    const char *env = getenv("TREVO_TEST_INPUTS");
    t->n_inputs = env ? (size_t)atoi(env) : (size_t)t->params.v[0].i;
    t->n_outputs = 1;
    t->out_act = 0;
    t->max_fitness = t->params.v[1].d;
#ifdef UNDEFINED
    trevo_no_such_function();
#endif
    return 0;
}

static int evaluate_task(const struct task_instance *t, const struct nn_plan *plan,
                         struct tv_rng *rng, struct task_result *out, struct tv_error *err)
{
    (void)plan;
    (void)rng;
    (void)err;
    out->fitness = t->params.v[2].i ? -t->params.v[1].d : t->params.v[1].d;
    return 0;
}

#ifndef ABI_DELTA
#define ABI_DELTA 0
#endif

#ifdef TAIL
static int evaluate_tail(const struct task_instance *t, struct genome *g, int64_t generation,
                         struct tv_rng *rng, struct task_result *out, struct tv_error *err)
{
    (void)t;
    (void)g;
    (void)generation;
    (void)rng;
    (void)err;
    out->fitness = 99;
    return 0;
}
#endif

static const struct task_kind task = {
    .abi_version = TASK_ABI_VERSION + ABI_DELTA,
    .name = "plugtest",
    .summary = "a plugin of the tests",
    .keys = keys,
    .n_keys = sizeof keys / sizeof keys[0],
    .open = open_task,
    .evaluate = evaluate_task,
#ifdef TAIL
    .evaluate_genome = evaluate_tail,
#endif
};

#if defined(ENTRY)
const struct task_kind *ENTRY(void);
const struct task_kind *ENTRY(void)
{
    return &task;
}
#elif !defined(NO_ENTRY)
TASK_PLUGIN_EXPORT(task)
#else
/* something else exported, under another name */
const struct task_kind *plugtest_task(void);
const struct task_kind *plugtest_task(void)
{
    return &task;
}
#endif
