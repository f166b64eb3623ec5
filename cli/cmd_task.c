/* cmd_task.c -- `trevo task eval|list`: one network on one registered task,
 * as a worker of a search evaluates it (plus the task's champion test, if it
 * has one), and the list of tasks. */
#include "cli.h"

#include <errno.h>
#include <inttypes.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "master.h"
#include "store.h"
#include "nn.h"
#include "plugin.h"
#include "task.h"

static const char eval_usage[] =
    "usage: trevo task eval TASK NET [--seed N] [--set KEY=VALUE]... [--generation G]\n"
    "       trevo task eval [TASK] NET --config FILE [--seed N] [--set KEY=VALUE]...\n"
    "                       [--generation G]\n"
    "       trevo task eval [TASK] NET --db DB [--name RUN] [--seed N] [--set KEY=VALUE]...\n"
    "                       [--generation G]\n\n"
    "Evaluates the network NET (text or msgpack) once on TASK, as a worker of a\n"
    "search does, and prints\n"
    "  generation: G        (only for a task whose cases change by generation: classify)\n"
    "  fitness: F\n"
    "  solved: yes|no\n"
    "then the task's own figures, one `name: value` per line (pole tasks: steps,\n"
    "the steps balanced; classify: accuracy, xent). If the task has a champion test\n"
    "(dpnv: 100,000 steps from the standard start, then 625 starts of 1,000 steps;\n"
    "classify: the validation split, or the hold-out of [task] holdout) it runs too\n"
    "and its figures follow (steps_100k,\n"
    "generalization; a name the evaluation printed already gets champion_ before it:\n"
    "champion_accuracy), then champion_solved: yes|no. If the task has a final test\n"
    "(classify with a test file) its figures follow as final_NAME (final_accuracy):\n"
    "the champion test and final test of a run's closing line.\n\n"
    "  --seed N        seed of the evaluation (default 1), as a child's seed in a\n"
    "                  search: the random start of pole1; the others use none.\n"
    "  --set KEY=VALUE a value of the task's [task] section (KEY or task.KEY), checked\n"
    "                  as the config's line is; repeatable, after --config's values.\n"
    "  --config FILE   the task (FILE's [run] task) and its [task] values from a\n"
    "                  run's config file, so the network is evaluated as the run\n"
    "                  evaluated it; TASK may then be omitted, or must be the same\n"
    "                  text as FILE's task. FILE must be a valid config by itself.\n"
    "  --db DB         as --config, with the config stored with run RUN of database\n"
    "  --name RUN      DB (--name: which run, when DB holds several).\n"
    "  --generation G  the generation the child belongs to (default 0): classify\n"
    "                  draws its `samples` rows by generation.\n\n"
    "Without --config or --db the [task] values are the task's defaults and --set's.\n"
    "NET must have as many inputs and outputs as TASK (`trevo task list`).\n"
    "NET may be an int8 NET.q (`trevo net quantize`): its int8 engine runs it.\n"
    "TASK may be a plugin's file (./libNAME.so: docs/plugins.md).\n";

/* r's figures; prefix before every name, or (prefix NULL) "champion_" before
 * a name that seen (the evaluation's figures) has too. */
static void print_figures(const struct task_result *r, const char *prefix,
                          const struct task_result *seen)
{
    for (size_t i = 0; i < r->n_figures; i++) {
        const char *p = prefix ? prefix : "";
        for (size_t j = 0; !prefix && seen && j < seen->n_figures; j++)
            if (!strcmp(seen->figure_names[j], r->figure_names[i]))
                p = "champion_";
        printf("%s%s: %.9g\n", p, r->figure_names[i], r->figures[i]);
    }
}

/* The command line of `task eval`. */
struct eval_args {
    const char *task, *net, *seed, *generation, *config, *db, *name;
    const char **sets;
    size_t n_sets;
};

/* 0, or 2 (usage) for an unknown option, an option without its value, or a
 * wrong count of TASK and NET; *refused is then the first argument refused
 * (NULL when a name is missing). a->sets has room for argc entries. */
static int parse_eval_args(int argc, char **argv, struct eval_args *a, const char **refused)
{
    *refused = NULL;
    const char *pos[2] = {NULL, NULL};
    size_t n_pos = 0;
    for (int i = 1; i < argc; i++) {
        const char *o = argv[i];
        int has_value = i + 1 < argc;
        if (!strcmp(o, "--seed") && has_value)
            a->seed = argv[++i];
        else if (!strcmp(o, "--generation") && has_value)
            a->generation = argv[++i];
        else if (!strcmp(o, "--config") && has_value)
            a->config = argv[++i];
        else if (!strcmp(o, "--db") && has_value)
            a->db = argv[++i];
        else if (!strcmp(o, "--name") && has_value)
            a->name = argv[++i];
        else if (!strcmp(o, "--set") && has_value)
            a->sets[a->n_sets++] = argv[++i];
        else if ((o[0] == '-' && strcmp(o, "-")) || n_pos == 2) {
            *refused = o; /* an unknown option, an option without its value, a third name */
            return 2;
        } else
            pos[n_pos++] = o;
    }
    if (n_pos == 2 || (n_pos == 1 && (a->config || a->db))) {
        a->task = n_pos == 2 ? pos[0] : NULL;
        a->net = pos[n_pos - 1];
        return 0;
    }
    return 2;
}

/* The task and its [task] values of the command line: --config FILE's, or
 * the config stored with --db's run, then --set's. *t opened. */
static int open_eval_task(const struct eval_args *a, struct master_config *c,
                          struct task_instance **t, struct tv_error *err)
{
    if (a->config && a->db)
        return tv_error_set(err, TV_EINVAL, "--config and --db: give one of them");
    if (a->name && !a->db)
        return tv_error_set(err, TV_EINVAL, "--name names a run of --db DB: give --db");
    if (!a->db)
        return cli_task_open_args(a->task, a->config, NULL, a->sets, a->n_sets, c, t, err);
    struct store *st = NULL;
    struct store_run_info info;
    int rc = cli_open_run(a->db, a->name, &st, &info, err);
    if (rc)
        return rc;
    char what[512];
    snprintf(what, sizeof what, "%s (run %s)", a->db, info.name);
    rc = cli_task_open_args(a->task, what, info.config, a->sets, a->n_sets, c, t, err);
    store_run_info_release(&info);
    store_close(st, NULL);
    return rc;
}

int cli_task_open_args(const char *task, const char *config, const char *config_text,
                       const char *const *sets, size_t n_sets, struct master_config *c,
                       struct task_instance **t, struct tv_error *err)
{
    *t = NULL;
    const struct task_kind *k = NULL;
    int rc = 0;
    if (config) {
        struct tv_buf text = {0};
        if (!config_text) {
            rc = cli_read_file(config, 1 << 20, &text, err);
            if (!rc && memchr(text.data, 0, text.len))
                rc =
                    tv_error_set(err, TV_EFORMAT, "%s: a NUL byte: not a text config file", config);
            config_text = (const char *)text.data;
        }
        master_config_defaults(c);
        /* without --set, the instance the parse opens is the one evaluated */
        if (!rc)
            rc = n_sets ? master_config_parse(c, config_text, config, err)
                        : master_config_parse_task(c, config_text, config, t, err);
        tv_buf_free(&text);
        if (rc)
            return rc;
        if (task && strcmp(task, c->task)) {
            task_close(*t);
            *t = NULL;
            return tv_error_set(err, TV_EINVAL,
                                "task %s: %s's [run] task is %s (omit TASK, or name the same)",
                                task, config, c->task);
        }
        k = c->task_kind;
    } else {
        if (task_is_plugin(task) && (rc = task_plugin_load(task, &k, err))) /* a file */
            return rc;
        if (!k)
            k = task_find(task);
        if (!k)
            return tv_error_set(err, TV_ENOTFOUND,
                                "unknown task '%s' (`trevo task list` names them)", task);
        task_params_defaults(k, &c->task_params);
    }
    if (*t)
        return 0;
    for (size_t i = 0; i < n_sets; i++)
        if ((rc = master_config_task_set(k, &c->task_params, sets[i], err)))
            return rc;
    return task_open(k, &c->task_params, t, err);
}

/* The champion test (final 0) or final test (final 1) of g, or of plan
 * when g is NULL (an int8 NET.q): *out zeroed if the kind has none. */
static int run_test(const struct task_instance *t, const struct genome *g,
                    const struct nn_plan *plan, int final, struct task_result *out,
                    struct tv_error *err)
{
    if (g)
        return final ? task_final_test(t, g, out, err) : task_champion_test(t, g, out, err);
    memset(out, 0, sizeof *out);
    int (*test)(const struct task_instance *, const struct nn_plan *, struct task_result *,
                struct tv_error *) = final ? t->kind->final_test : t->kind->champion_test;
    return test ? test(t, plan, out, err) : 0;
}

/* Prints what the task's champion test and final test say of g (or plan)
 * after the evaluation's figures, res. */
static int eval_tests(const struct task_instance *t, const struct genome *g,
                      const struct nn_plan *plan, const struct task_result *res,
                      struct tv_error *err)
{
    struct task_result out;
    const struct task_kind *k = t->kind;
    if (k->champion_test) {
        if (run_test(t, g, plan, 0, &out, err))
            return tv_error_prefix(err, "task %s: champion test", k->name);
        print_figures(&out, NULL, res);
        printf("champion_solved: %s\n", out.solved ? "yes" : "no");
    }
    if (k->final_test) {
        if (run_test(t, g, plan, 1, &out, err))
            return tv_error_prefix(err, "task %s: final test", k->name);
        print_figures(&out, "final_", NULL);
    }
    return 0;
}

/* The evaluation's lines. */
static void print_eval(const struct task_instance *t, uint64_t generation,
                       const struct task_result *res)
{
    if (t->kind->evaluate_generation)
        printf("generation: %" PRIu64 "\n", generation);
    printf("fitness: %.9g\nsolved: %s\n", res->fitness, res->solved ? "yes" : "no");
    print_figures(res, "", NULL);
    fflush(stdout);
}

/* `task eval` of an int8 NET.q (nn/deploy/quant.h): what task_evaluate_generation
 * and the tests do, on its int8 plan. */
static int eval_int8(const struct task_instance *t, const char *path, uint64_t seed,
                     uint64_t generation, struct tv_error *err)
{
    struct nn_plan *plan;
    int rc = cli_load_plan(path, &plan, err);
    if (rc)
        return rc;
    const struct task_kind *k = t->kind;
    struct task_result res = {0};
    if (nn_plan_n_inputs(plan) != t->n_inputs || nn_plan_n_outputs(plan) != t->n_outputs) {
        rc = tv_error_set(err, TV_EINVAL,
                          "%s: the network has %zu inputs and %zu outputs; task %s takes %zu "
                          "inputs and %zu outputs",
                          path, nn_plan_n_inputs(plan), nn_plan_n_outputs(plan), k->name,
                          t->n_inputs, t->n_outputs);
    } else {
        struct tv_rng rng;
        tv_rng_init(&rng, seed, TASK_STREAM_EVAL, 0);
        rc = k->evaluate_generation
                 ? k->evaluate_generation(t, plan, (int64_t)generation, &rng, &res, err)
                 : k->evaluate(t, plan, &rng, &res, err);
        if (rc)
            tv_error_prefix(err, "%s", path);
    }
    if (!rc) {
        print_eval(t, generation, &res);
        rc = eval_tests(t, NULL, plan, &res, err);
    }
    nn_plan_free(plan);
    return rc;
}

int cli_cmd_task_eval(int argc, char **argv)
{
    if (cli_help(argc, argv, eval_usage))
        return 0;
    struct eval_args a = {0};
    a.sets = calloc((size_t)argc, sizeof *a.sets);
    if (!a.sets) {
        fprintf(stderr, "trevo: out of memory\n");
        return 1;
    }
    const char *refused;
    if (parse_eval_args(argc, argv, &a, &refused)) {
        free(a.sets);
        return refused ? cli_refuse_arg("task eval", refused, eval_usage)
                       : cli_usage_error(eval_usage);
    }
    struct tv_error err = {0};
    uint64_t seed = 1, generation = 0;
    int rc = a.seed ? cli_parse_u64("--seed", a.seed, UINT64_MAX, &seed, &err) : 0;
    if (!rc && a.generation)
        rc = cli_parse_u64("--generation", a.generation, INT64_MAX, &generation, &err);
    struct master_config *c = calloc(1, sizeof *c);
    struct task_instance *t = NULL;
    if (!rc && !c)
        rc = tv_error_set(&err, TV_ENOMEM, "out of memory");
    if (!rc)
        rc = open_eval_task(&a, c, &t, &err);
    free(c);
    free(a.sets);
    if (rc)
        return cli_fail(&err);
    if (cli_net_is_int8(a.net)) { /* an int8 NET.q (cmd_quant.c) */
        rc = t->kind->evaluate || t->kind->evaluate_generation
                 ? eval_int8(t, a.net, seed, generation, &err)
                 : tv_error_set(&err, TV_EINVAL,
                                "%s: task %s takes no int8 network (it evaluates "
                                "by generation)",
                                a.net, t->kind->name);
        task_close(t);
        return rc ? cli_fail(&err) : 0;
    }
    struct genome g;
    genome_init(&g);
    struct task_result res;
    rc = cli_load_net(a.net, &g, &err);
    /* the evaluation of a search's workers */
    if (!rc && (rc = task_evaluate_generation(t, &g, seed, (int64_t)generation, &res, &err)))
        tv_error_prefix(&err, "%s", a.net);
    if (!rc) {
        print_eval(t, generation, &res);
        rc = eval_tests(t, &g, NULL, &res, &err);
    }
    genome_release(&g);
    task_close(t);
    return rc ? cli_fail(&err) : 0;
}

int cli_cmd_task_list(int argc, char **argv)
{
    static const char usage[] =
        "usage: trevo task list\n\n"
        "The registered tasks: name, inputs -> outputs, and what each is.\n";
    if (cli_help(argc, argv, usage))
        return 0;
    if (argc != 1)
        return cli_refuse_arg("task list", argv[1], usage);
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
