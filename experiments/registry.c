/* registry.c -- the table of tasks. Adding a task: one line here. */
#include <string.h>

#include "tasks.h"

static const struct task *const tasks[] = {
    &task_xor, &task_null, &task_spin, &task_pole1, &task_dpv, &task_dpnv,
};

const struct task *task_find(const char *name)
{
    for (size_t i = 0; i < sizeof tasks / sizeof tasks[0]; i++)
        if (!strcmp(tasks[i]->name, name))
            return tasks[i];
    return NULL;
}

const struct task *const *task_all(size_t *n)
{
    *n = sizeof tasks / sizeof tasks[0];
    return tasks;
}

void task_result_figure(struct task_result *r, const char *name, double value)
{
    if (r->n_figures < TASK_MAX_FIGURES) {
        r->figure_names[r->n_figures] = name;
        r->figures[r->n_figures++] = value;
    }
}
