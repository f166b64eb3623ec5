/* cmd_task.c -- `trevo task eval|list`: one network on one registered task,
 * as a worker of a search evaluates it (plus the task's champion test, if it
 * has one), and the list of tasks. */
#include "cli.h"

#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "nn.h"
#include "task.h"

static void eval_usage(FILE *f)
{
    fprintf(f, "usage: trevo task eval TASK NET [--seed N]\n\n"
               "Evaluates the network NET (text or msgpack) once on TASK, as a worker of a\n"
               "search does, and prints\n"
               "  fitness: F\n"
               "  solved: yes|no\n"
               "then the task's own figures, one `name: value` per line (pole tasks: steps,\n"
               "the steps balanced). If the task has a champion test (dpnv: 100,000 steps\n"
               "from the standard start, then 625 starts of 1,000 steps), it runs too and\n"
               "its figures follow (steps_100k, generalization), then champion_solved: yes|no.\n\n"
               "  --seed N   seed of the evaluation's random stream (default 1): the random\n"
               "             start of pole1; the other tasks use no randomness.\n\n"
               "NET must have as many inputs and outputs as TASK (`trevo task list`).\n");
}

/* "1 input", "5 inputs". */
static const char *plural(size_t n)
{
    return n == 1 ? "" : "s";
}

static int parse_seed(const char *v, uint64_t *out, struct tv_error *err)
{
    char *end;
    errno = 0;
    unsigned long long s = strtoull(v, &end, 10);
    if (v[0] < '0' || v[0] > '9' || *end || errno)
        return tv_error_set(err, TV_EINVAL, "--seed: expected a non-negative integer, got '%s'", v);
    *out = (uint64_t)s;
    return 0;
}

static void print_figures(const struct task_result *r)
{
    for (size_t i = 0; i < r->n_figures; i++)
        printf("%s: %.9g\n", r->figure_names[i], r->figures[i]);
}

int master_cmd_task_eval(int argc, char **argv)
{
    if (master_wants_help(argc, argv)) {
        eval_usage(stdout);
        return 0;
    }
    const char *task_name = NULL, *net = NULL, *seed_arg = NULL;
    int bad = 0;
    for (int i = 1; i < argc && !bad; i++) {
        if (!strcmp(argv[i], "--seed") && i + 1 < argc)
            seed_arg = argv[++i];
        else if (argv[i][0] == '-' && strcmp(argv[i], "-"))
            bad = 1; /* an unknown option, or --seed without its value */
        else if (!task_name)
            task_name = argv[i];
        else if (!net)
            net = argv[i];
        else
            bad = 1;
    }
    if (bad || !task_name || !net) {
        eval_usage(stderr);
        return 2;
    }
    struct tv_error err = {0};
    uint64_t seed = 1;
    if (seed_arg && parse_seed(seed_arg, &seed, &err))
        return master_fail(&err);
    const struct task *t = task_find(task_name);
    if (!t) {
        tv_error_set(&err, TV_ENOTFOUND, "unknown task '%s' (`trevo task list` names them)",
                     task_name);
        return master_fail(&err);
    }
    struct genome g;
    genome_init(&g);
    struct nn_plan *plan = NULL;
    int rc = master_load_net(net, &g, &err);
    if (!rc) {
        size_t n_in = genome_count_kind(&g, GENOME_INPUT);
        size_t n_out = genome_count_kind(&g, GENOME_OUTPUT);
        if (n_in != t->n_inputs || n_out != t->n_outputs)
            rc = tv_error_set(&err, TV_EINVAL,
                              "%s: the network has %zu input%s and %zu output%s; task %s takes "
                              "%zu input%s and %zu output%s",
                              net, n_in, plural(n_in), n_out, plural(n_out), t->name, t->n_inputs,
                              plural(t->n_inputs), t->n_outputs, plural(t->n_outputs));
    }
    if (!rc)
        rc = nn_plan_compile(&g, NULL, &plan, &err);
    struct task_result res;
    memset(&res, 0, sizeof res);
    if (!rc) {
        struct tv_rng rng;
        tv_rng_init(&rng, seed, 0, 0);
        rc = t->evaluate(t, plan, &rng, &res, &err);
        if (rc)
            tv_error_prefix(&err, "task %s", t->name);
    }
    if (!rc) {
        printf("fitness: %.9g\nsolved: %s\n", res.fitness, res.solved ? "yes" : "no");
        print_figures(&res);
        fflush(stdout);
    }
    if (!rc && t->champion_test) {
        struct task_result champ;
        memset(&champ, 0, sizeof champ);
        rc = t->champion_test(t, plan, &champ, &err);
        if (rc)
            tv_error_prefix(&err, "task %s: champion test", t->name);
        else {
            print_figures(&champ);
            printf("champion_solved: %s\n", champ.solved ? "yes" : "no");
        }
    }
    nn_plan_free(plan);
    genome_release(&g);
    return rc ? master_fail(&err) : 0;
}

int master_cmd_task_list(int argc, char **argv)
{
    if (master_wants_help(argc, argv)) {
        printf("usage: trevo task list\n\n"
               "The registered tasks: name, inputs -> outputs, and what each is.\n");
        return 0;
    }
    if (argc != 1) {
        fprintf(stderr, "usage: trevo task list\n");
        return 2;
    }
    size_t n;
    const struct task *const *all = task_all(&n);
    for (size_t i = 0; i < n; i++)
        printf("%-8s %2zu -> %zu  %s%s\n", all[i]->name, all[i]->n_inputs, all[i]->n_outputs,
               all[i]->summary, all[i]->champion_test ? " (has a champion test)" : "");
    return 0;
}
