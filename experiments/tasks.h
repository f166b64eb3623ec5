/* tasks.h -- private to experiments/: what the task files share, and the
 * task definitions the registry lists. */
#ifndef TREVO_EXPERIMENTS_TASKS_H
#define TREVO_EXPERIMENTS_TASKS_H

#include <math.h>

#include "task.h"

extern const struct task task_xor;
extern const struct task task_null;
extern const struct task task_spin;

#endif
