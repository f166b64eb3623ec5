/* registry.c -- the table of task kinds (adding a task: one line here), and
 * what every task shares: opening and closing instances, and the one
 * evaluation path of a genome. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tasks.h"

static const struct task_kind *const kinds[] = {
    &task_xor,  &task_null,     &task_spin,      &task_pole1,       &task_dpv,
    &task_dpnv, &task_classify, &task_spike_xor, &task_spike_pole1,
};

const struct task_kind *task_find(const char *name)
{
    for (size_t i = 0; i < sizeof kinds / sizeof kinds[0]; i++)
        if (!strcmp(kinds[i]->name, name))
            return kinds[i];
    return NULL;
}

const struct task_kind *const *task_all(size_t *n)
{
    *n = sizeof kinds / sizeof kinds[0];
    return kinds;
}

int task_key_find(const struct task_kind *k, const char *name)
{
    for (size_t i = 0; i < k->n_keys; i++)
        if (!strcmp(k->keys[i].name, name))
            return (int)i;
    return -1;
}

void task_params_defaults(const struct task_kind *k, struct task_params *p)
{
    memset(p, 0, sizeof *p);
    for (size_t i = 0; i < k->n_keys && i < TASK_MAX_KEYS; i++) {
        if (k->keys[i].type == TASK_KEY_DOUBLE)
            p->v[i].d = k->keys[i].def;
        else if (k->keys[i].type == TASK_KEY_STRING)
            snprintf(p->v[i].s, sizeof p->v[i].s, "%s",
                     k->keys[i].def_text ? k->keys[i].def_text : "");
        else
            p->v[i].i = (int64_t)k->keys[i].def;
    }
}

int task_open(const struct task_kind *k, const struct task_params *p, struct task_instance **out,
              struct tv_error *err)
{
    *out = NULL;
    if (k->abi_version != TASK_ABI_VERSION)
        return tv_error_set(err, TV_EINVAL, "task %s: built for task ABI version %u, not %u",
                            k->name, (unsigned)k->abi_version, (unsigned)TASK_ABI_VERSION);
    if (k->n_keys > TASK_MAX_KEYS)
        return tv_error_set(err, TV_EINVAL, "task %s: %zu [task] keys, more than %d", k->name,
                            k->n_keys, TASK_MAX_KEYS);
    struct task_instance *t = calloc(1, sizeof *t);
    if (!t)
        return tv_error_set(err, TV_ENOMEM, "task %s: out of memory", k->name);
    t->kind = k;
    t->params = *p;
    int rc = k->open(t, err);
    if (rc) {
        free(t);
        return tv_error_prefix(err, "task %s", k->name);
    }
    *out = t;
    return 0;
}

void task_close(struct task_instance *t)
{
    if (!t)
        return;
    if (t->kind->close)
        t->kind->close(t);
    free(t);
}

/* "1 input", "5 inputs". */
static const char *plural(size_t n)
{
    return n == 1 ? "" : "s";
}

int task_check_shape(const struct task_instance *t, const struct genome *g, struct tv_error *err)
{
    size_t n_in = genome_count_kind(g, GENOME_INPUT);
    size_t n_out = genome_count_kind(g, GENOME_OUTPUT);
    if (n_in == t->n_inputs && n_out == t->n_outputs)
        return 0;
    return tv_error_set(err, TV_EINVAL,
                        "the network has %zu input%s and %zu output%s; task %s takes %zu input%s "
                        "and %zu output%s",
                        n_in, plural(n_in), n_out, plural(n_out), t->kind->name, t->n_inputs,
                        plural(t->n_inputs), t->n_outputs, plural(t->n_outputs));
}

/* Checks g's shape and compiles it: *plan, or NULL and the code. */
static int compile_checked(const struct task_instance *t, const struct genome *g,
                           struct nn_plan **plan, struct tv_error *err)
{
    *plan = NULL;
    int rc = task_check_shape(t, g, err);
    return rc ? rc : nn_plan_compile(g, NULL, plan, err);
}

int task_evaluate(const struct task_instance *t, const struct genome *g, uint64_t seed,
                  struct task_result *out, struct tv_error *err)
{
    return task_evaluate_generation(t, g, seed, 0, out, err);
}

int task_evaluate_generation(const struct task_instance *t, const struct genome *g, uint64_t seed,
                             int64_t generation, struct task_result *out, struct tv_error *err)
{
    memset(out, 0, sizeof *out);
    if (t->kind->evaluate_genome) { /* on a copy: g stays as it is */
        struct genome copy;
        genome_init(&copy);
        int rc = genome_copy(&copy, g, err);
        if (!rc)
            rc = task_evaluate_genome(t, &copy, seed, generation, NULL, out, err);
        genome_release(&copy);
        return rc;
    }
    struct nn_plan *plan;
    int rc = compile_checked(t, g, &plan, err);
    if (rc)
        return rc;
    struct tv_rng rng;
    tv_rng_init(&rng, seed, TASK_STREAM_EVAL, 0);
    rc = t->kind->evaluate_generation
             ? t->kind->evaluate_generation(t, plan, generation, &rng, out, err)
             : t->kind->evaluate(t, plan, &rng, out, err);
    nn_plan_free(plan);
    return rc;
}

int task_evaluate_genome(const struct task_instance *t, struct genome *g, uint64_t seed,
                         int64_t generation, const struct genome_limits *limits,
                         struct task_result *out, struct tv_error *err)
{
    if (!t->kind->evaluate_genome)
        return task_evaluate_generation(t, g, seed, generation, out, err);
    memset(out, 0, sizeof *out);
    int rc = task_check_shape(t, g, err);
    if (rc)
        return rc;
    struct tv_rng rng;
    tv_rng_init(&rng, seed, TASK_STREAM_EVAL, 0);
    rc = t->kind->evaluate_genome(t, g, generation, &rng, out, err);
    if (rc)
        return rc;
    rc = task_check_shape(t, g, err);
    if (!rc)
        rc = genome_validate(g, limits, err);
    return rc ? tv_error_prefix(err, "task %s left an invalid genome", t->kind->name) : 0;
}

/* A test hook of the kind (champion_test, final_test) on g: 0 with *out
 * zeroed when the kind has none. */
static int run_test(const struct task_instance *t, const struct genome *g,
                    int (*test)(const struct task_instance *, const struct nn_plan *,
                                struct task_result *, struct tv_error *),
                    struct task_result *out, struct tv_error *err)
{
    memset(out, 0, sizeof *out);
    if (!test)
        return 0;
    struct nn_plan *plan;
    int rc = compile_checked(t, g, &plan, err);
    if (rc)
        return rc;
    rc = test(t, plan, out, err);
    nn_plan_free(plan);
    return rc;
}

int task_champion_test(const struct task_instance *t, const struct genome *g,
                       struct task_result *out, struct tv_error *err)
{
    return run_test(t, g, t->kind->champion_test, out, err);
}

int task_final_test(const struct task_instance *t, const struct genome *g, struct task_result *out,
                    struct tv_error *err)
{
    return run_test(t, g, t->kind->final_test, out, err);
}
