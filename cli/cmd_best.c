/* cmd_best.c -- `trevo best`: writes one network of a run: its champion (or
 * best solver), a given individual, or the most accurate one within a
 * device budget (store_best_within), as a float network, an int8 NET.q or
 * the int8 C file ready to compile. */
#include "cli.h"
#include "quant.h"
#include "store.h"

#include <inttypes.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

static const char best_usage[] =
    "usage: trevo best DB [--name RUN] [-o NET] [--format text|msgpack|dot|c]\n"
    "                     [--by solver|fitness] [--id ID]\n"
    "                     [--max-flash BYTES] [--max-ram BYTES] [--max-macs N]\n"
    "                     [--int8 [--calibrate DATA|task:NAME] ...]\n"
    "Writes the champion of the run's last closed generation (text by default;\n"
    "dot: a Graphviz drawing, e.g. `trevo best DB --format dot | dot -Tsvg -o net.svg`).\n"
    "For a solved run that is its best solver, the fittest member that solves the\n"
    "task (stderr says so when it is not the fittest); --by fitness: the fittest.\n"
    "  --id ID   individual ID instead (its genome must be kept: [store] genomes)\n"
    "  --max-flash, --max-ram, --max-macs\n"
    "            instead, the most accurate network on the validation rows (valid_acc;\n"
    "            then less flash, then the lower id) whose int8 C file fits: flash\n"
    "            bytes of constant arrays, RAM bytes of state, multiply-accumulates per\n"
    "            inference, as net validate counts them (trevo front lists them)\n"
    "  --int8 [--calibrate DATA|task:NAME] [--labels FILE] [--header auto|yes|no]\n"
    "         [--samples N] [--percentile P] -o NET.q\n"
    "        quantizes that network as `trevo net quantize` does (DATA as net train\n"
    "        --data takes it; task:NAME with the run's [task] values; default: the\n"
    "        run's own task) and writes the int8 NET.q; with --format c [--prefix P],\n"
    "        the int8 C file (net export --format c) instead.\n";

/* The individual `trevo best` writes by default: the champion (the fittest)
 * or, for a solved run unless by_fitness, its best solver (said on stderr
 * when it is not the champion). */
static int best_pick(struct store *st, const struct store_run_info *info,
                     const struct store_generation *g, int by_fitness, int64_t *id, double *fitness,
                     struct tv_error *err)
{
    *id = g->champion;
    *fitness = g->best;
    if (by_fitness || !g->solved)
        return 0;
    int64_t solver;
    double f;
    int rc = cli_best_solver(st, info->run_id, &solver, &f, err);
    if (rc || solver == STORE_ID_NONE || solver == g->champion)
        return rc;
    fprintf(stderr,
            "trevo: run '%s' is solved: writing its best solver, individual %" PRId64
            " (fitness %.6g); the fittest, individual %" PRId64
            " (fitness %.6g), does not solve it (--by fitness writes it)\n",
            info->name, solver, f, g->champion, g->best);
    *id = solver;
    *fitness = f;
    return 0;
}

/* A budget option: a whole number of bytes or operations, -1 when absent. */
static int budget_value(const char *opt, const char *s, int64_t *out, struct tv_error *err)
{
    double v = -1;
    if (s && cli_parse_whole(opt, s, 0, 9007199254740992.0, &v, err))
        return err->code;
    *out = (int64_t)v;
    return 0;
}

/* The most accurate individual within budget b, said on stderr. */
static int pick_within(struct store *st, const struct store_run_info *info,
                       const struct store_budget *b, int64_t *id, double *fitness,
                       struct tv_error *err)
{
    struct store_device_point p;
    int rc = store_best_within(st, info->run_id, b, &p, err);
    if (rc == TV_ENOTFOUND)
        return tv_error_set(err, TV_ENOTFOUND,
                            "run '%s' has no network within the budget whose genome is kept "
                            "(trevo front lists the smallest ones)",
                            info->name);
    if (rc)
        return rc;
    fprintf(stderr,
            "trevo: run '%s': individual %" PRId64 " (generation %" PRId64
            "), valid_acc %.4f, flash %" PRId64 " bytes, RAM %" PRId64 " bytes, %" PRId64
            " MACs: the most accurate within the budget\n",
            info->name, p.id, p.generation, p.valid_acc, p.flash, p.ram, p.macs);
    *id = p.id;
    *fitness = p.fitness;
    return 0;
}

int cli_cmd_best(int argc, char **argv)
{
    const char *db = NULL, *name = NULL, *out = "-", *format = "text", *by = NULL, *idv = NULL,
               *mf = NULL, *mr = NULL, *mm = NULL, *prefix = NULL;
    struct cli_quant_args qa = {0}; /* --int8 (cmd_quant.c) */
    const struct cli_opt opts[] = {{"--name", &name},
                                   {"-o", &out},
                                   {"--format", &format},
                                   {"--by", &by},
                                   {"--id", &idv},
                                   {"--max-flash", &mf},
                                   {"--max-ram", &mr},
                                   {"--max-macs", &mm},
                                   {"--prefix", &prefix},
                                   {"--calibrate", &qa.calibrate},
                                   {"--labels", &qa.labels},
                                   {"--header", &qa.header},
                                   {"--samples", &qa.samples},
                                   {"--percentile", &qa.percentile}};
    int int8 = cli_take_flag(&argc, argv, "--int8");
    int status =
        cli_parse_args(argc, argv, "best", opts, sizeof opts / sizeof opts[0], &db, best_usage);
    if (status >= 0)
        return status;
    int c_file = !strcmp(format, "c"), budget = mf || mr || mm;
    if (!db || (!cli_net_format_known(format) && !c_file) ||
        (by && strcmp(by, "solver") && strcmp(by, "fitness")))
        return cli_usage_error(best_usage);
    const char *clash = (by || budget) && idv ? "--id picks the network: not with --by or a budget"
                        : by && budget        ? "--by picks the champion: not with a budget"
                        : qa.calibrate && !int8 ? "--calibrate goes with --int8"
                        : c_file && !int8
                            ? "--format c writes the int8 C file: give --int8 (or net export "
                              "--format c on the network written)"
                        : prefix && !c_file ? "--prefix goes with --format c"
                                            : NULL;
    if (clash) {
        fprintf(stderr, "trevo: best: %s\n", clash);
        return 2;
    }
    struct tv_error err = {0};
    struct store_budget b;
    double idd = -1;
    if (budget_value("--max-flash", mf, &b.max_flash, &err) ||
        budget_value("--max-ram", mr, &b.max_ram, &err) ||
        budget_value("--max-macs", mm, &b.max_macs, &err) ||
        (idv && cli_parse_whole("--id", idv, 0, 9007199254740992.0, &idd, &err)))
        return cli_fail(&err);
    struct store *st;
    struct store_run_info info;
    if (cli_open_run(db, name, &st, &info, &err))
        return cli_fail(&err);
    struct store_generation g;
    int rc = store_generation_get(st, info.run_id, -1, &g, &err);
    int64_t id = (int64_t)idd;
    double fitness = NAN;
    if (!rc && budget)
        rc = pick_within(st, &info, &b, &id, &fitness, &err);
    else if (!rc && !idv)
        rc = best_pick(st, &info, &g, by && !strcmp(by, "fitness"), &id, &fitness, &err);
    struct genome *net = genome_new();
    if (!rc)
        rc = net ? store_genome_read(st, info.run_id, id, net, &err)
                 : tv_error_set(&err, TV_ENOMEM, "out of memory");
    if (rc == TV_ENOTFOUND && idv)
        rc = tv_error_set(&err, TV_ENOTFOUND,
                          "run '%s' keeps no genome of individual %" PRId64
                          " ([store] genomes = elite keeps champions, elites and the last "
                          "population; trevo front says which are kept)",
                          info.name, id);
    /* the search's figures were counted before calibration (flash at most
     * theirs): the exact ones of the file must fit too */
    struct nn_cost limit = {b.max_flash < 0 ? UINT64_MAX : (uint64_t)b.max_flash,
                            b.max_ram < 0 ? UINT64_MAX : (uint64_t)b.max_ram,
                            b.max_macs < 0 ? UINT64_MAX : (uint64_t)b.max_macs};
    if (!rc) {
        char title[512];
        snprintf(title, sizeof title, "run '%s', generation %" PRId64 ": %s %" PRId64, info.name,
                 g.generation,
                 idv                ? "individual"
                 : budget           ? "the most accurate within the budget,"
                 : id == g.champion ? "champion"
                                    : "best solver",
                 id);
        if (!isnan(fitness)) /* the one figure every run has */
            snprintf(title + strlen(title), sizeof title - strlen(title), ", fitness %.6g",
                     fitness);
        qa.out = out;
        qa.config = "the run's config"; /* task:NAME: the run's [task] values */
        qa.config_text = info.config;
        qa.calibrate = qa.calibrate ? qa.calibrate : "task:"; /* the run's own task */
        qa.c_prefix = c_file ? (prefix ? prefix : "trevo_net") : NULL;
        qa.limit = budget ? &limit : NULL;
        rc = int8 ? cli_quantize_net(net, &qa, &err) : cli_write_net(net, format, title, out, &err);
    }
    genome_free(net);
    store_run_info_release(&info);
    if (store_close(st, rc ? NULL : &err) && !rc)
        rc = err.code;
    return rc ? cli_fail(&err) : 0;
}
