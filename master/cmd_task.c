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
#include "plugin.h"
#include "task.h"

static void eval_usage(FILE *f)
{
    fprintf(f, "usage: trevo task eval TASK NET [--seed N]\n\n"
               "Evaluates the network NET (text or msgpack) once on TASK, as a worker of a\n"
               "search does with the task's default [task] values, and prints\n"
               "  fitness: F\n"
               "  solved: yes|no\n"
               "then the task's own figures, one `name: value` per line (pole tasks: steps,\n"
               "the steps balanced). If the task has a champion test (dpnv: 100,000 steps\n"
               "from the standard start, then 625 starts of 1,000 steps), it runs too and\n"
               "its figures follow (steps_100k, generalization), then champion_solved: yes|no.\n\n"
               "  --seed N   seed of the evaluation (default 1), as a child's seed in a search:\n"
               "             the random start of pole1; the other tasks use no randomness.\n\n"
               "NET must have as many inputs and outputs as TASK (`trevo task list`).\n"
               "TASK may be a plugin's file (./libNAME.so: docs/plugins.md).\n");
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
    const struct task_kind *k = NULL;
    if (task_is_plugin(task_name) && task_plugin_load(task_name, &k, &err)) /* a file */
        return master_fail(&err);
    if (!k)
        k = task_find(task_name);
    if (!k) {
        tv_error_set(&err, TV_ENOTFOUND, "unknown task '%s' (`trevo task list` names them)",
                     task_name);
        return master_fail(&err);
    }
    struct task_params params;
    task_params_defaults(k, &params);
    struct task_instance *t = NULL;
    struct genome g;
    genome_init(&g);
    struct task_result res, champ;
    int rc = task_open(k, &params, &t, &err);
    if (!rc && master_net_is_int8(net)) { /* an int8 NET.q (cmd_quant.c) */
        rc = master_task_eval_int8(t, net, seed, &err);
        task_close(t);
        return rc ? master_fail(&err) : 0;
    }
    if (!rc)
        rc = master_load_net(net, &g, &err);
    /* the evaluation of a search's workers: task_evaluate() */
    if (!rc && (rc = task_evaluate(t, &g, seed, &res, &err)))
        tv_error_prefix(&err, "%s", net);
    if (!rc) {
        printf("fitness: %.9g\nsolved: %s\n", res.fitness, res.solved ? "yes" : "no");
        print_figures(&res);
        fflush(stdout);
    }
    if (!rc && k->champion_test) {
        rc = task_champion_test(t, &g, &champ, &err);
        if (rc)
            tv_error_prefix(&err, "task %s: champion test", k->name);
        else {
            print_figures(&champ);
            printf("champion_solved: %s\n", champ.solved ? "yes" : "no");
        }
    }
    genome_release(&g);
    task_close(t);
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
    const struct task_kind *const *all = task_all(&n);
    for (size_t i = 0; i < n; i++) {
        /* the counts of an instance with the default [task] values */
        struct task_params p;
        task_params_defaults(all[i], &p);
        struct task_instance *t;
        struct tv_error err = {0};
        if (task_open(all[i], &p, &t, &err)) { /* a task of data: its shape is the data's */
            printf("%-8s  ? -> ?  %s\n", all[i]->name, all[i]->summary);
            continue;
        }
        printf("%-8s %2zu -> %zu  %s%s\n", all[i]->name, t->n_inputs, t->n_outputs, all[i]->summary,
               all[i]->champion_test ? " (has a champion test)" : "");
        task_close(t);
    }
    return 0;
}
