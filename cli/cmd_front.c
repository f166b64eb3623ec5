/* cmd_front.c -- `trevo front`: a run's accuracy-flash front (which network
 * is the most accurate for each size of device), as a table and as a plot
 * of every individual's validation accuracy against the flash of its int8 C
 * file, one colour per generation. Reads the database read-only
 * (store_device_points_load), so the run may still be going. */
#include "gnuplot.h"
#include "store.h"

#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

static const char front_usage[] =
    "usage: trevo front DB [--name RUN] [--generation G] [-o FILE.png] [--csv]\n"
    "Prints the run's accuracy-flash front: the networks born in generations 0..G\n"
    "(default: the last closed one) than which no network with less flash (bytes of\n"
    "constant arrays of its int8 C file, trevo net validate) is as accurate on the\n"
    "validation rows selection saw. Columns: id, generation, valid_acc, flash, ram,\n"
    "macs, connections, test (the run's final test where this is its champion),\n"
    "kept (yes: its genome is in the database, and `trevo best DB --id ID` writes\n"
    "it). A run records the figures when its task reports an accuracy (classify)\n"
    "and its networks have an int8 form.\n"
    "  -o FILE.png  also draws every individual's accuracy against flash, one colour\n"
    "               per generation, and the front as a line (needs gnuplot)\n"
    "  --csv        the table as CSV\n";

/* The run's final test score where the run has one, else NaN; its champion
 * is the last generation's. */
static double final_test(struct store *st, const struct store_run_info *info, int64_t *champion,
                         struct tv_error *err)
{
    *champion = STORE_ID_NONE;
    struct store_generation g;
    char *text = NULL;
    if (store_generation_get(st, info->run_id, -1, &g, err))
        return NAN;
    if (store_run_note_get(st, info->run_id, "final_test", &text, err))
        return NAN;
    *champion = g.champion;
    double v = strtod(text, NULL);
    free(text);
    return v;
}

static void print_table(const struct store_device_point *p, size_t n, int csv, int64_t champion,
                        double test)
{
    if (csv)
        printf("id,generation,valid_acc,flash,ram,macs,connections,test,kept\n");
    else
        printf("%8s %5s %9s %9s %8s %10s %11s %8s %4s\n", "id", "gen", "valid_acc", "flash", "ram",
               "macs", "connections", "test", "kept");
    for (size_t i = 0; i < n; i++) {
        char t[32] = "";
        if (p[i].id == champion && isfinite(test))
            snprintf(t, sizeof t, "%.4f", test);
        if (csv)
            printf("%" PRId64 ",%" PRId64 ",%.6f,%" PRId64 ",%" PRId64 ",%" PRId64 ",%" PRId64
                   ",%s,%s\n",
                   p[i].id, p[i].generation, p[i].valid_acc, p[i].flash, p[i].ram, p[i].macs,
                   p[i].n_conns, t, p[i].has_genome ? "yes" : "no");
        else
            printf("%8" PRId64 " %5" PRId64 " %9.4f %9" PRId64 " %8" PRId64 " %10" PRId64
                   " %11" PRId64 " %8s %4s\n",
                   p[i].id, p[i].generation, p[i].valid_acc, p[i].flash, p[i].ram, p[i].macs,
                   p[i].n_conns, t[0] ? t : "-", p[i].has_genome ? "yes" : "no");
    }
}

/* The data: every individual (generation flash valid_acc), then the front. */
static int write_data(const char *path, const struct store_device_point *all, size_t n_all,
                      const struct store_device_point *front, size_t n_front, struct tv_error *err)
{
    FILE *f;
    int rc = cli_plot_create(path, &f, err);
    if (rc)
        return rc;
    fputs("# every individual: generation flash valid_acc\n", f);
    for (size_t i = 0; i < n_all; i++) {
        fprintf(f, "%" PRId64 " %" PRId64, all[i].generation, all[i].flash);
        cli_plot_value(f, all[i].valid_acc);
        fputc('\n', f);
    }
    fputs("\n\n# the front: flash valid_acc id\n", f);
    for (size_t i = 0; i < n_front; i++) {
        fprintf(f, "%" PRId64, front[i].flash);
        cli_plot_value(f, front[i].valid_acc);
        fprintf(f, " %" PRId64 "\n", front[i].id);
    }
    return cli_plot_close(f, path, 0, err);
}

static int write_script(const struct cli_plot_tmp *t, const char *db,
                        const struct store_run_info *info, int64_t last, size_t n_front,
                        int64_t max_flash, struct tv_error *err)
{
    FILE *f;
    int rc = cli_plot_script_open(t, &f, err);
    if (rc)
        return rc;
    char title[1200];
    snprintf(title, sizeof title,
             "trevo: run '%s' in %s: validation accuracy against flash, generations 0..%" PRId64
             ", %zu on the front",
             info->name, db, last, n_front);
    fputs("set title ", f);
    cli_plot_quoted(f, title);
    fprintf(f,
            "\nset grid\n"
            "set key left top inside opaque box\n"
            "set xlabel 'flash of the int8 C file (bytes)'\n"
            "set ylabel 'validation accuracy'\n"
            "%s"
            "set palette defined (0 '#d0d8f0', 1 '#3060c0', 2 '#102050')\n"
            "set cbrange [0:%" PRId64 "]\n"
            "set cblabel 'generation'\n"
            "plot data index 0 using 2:3:1 with points pointtype 7 pointsize 0.4"
            " palette title 'individuals', \\\n"
            "     data index 1 using 1:2 with steps linewidth 2 linecolor rgb '#c00000'"
            " notitle, \\\n"
            "     data index 1 using 1:2 with points pointtype 7 pointsize 0.9"
            " linecolor rgb '#c00000' title 'front (the most accurate for its flash)'\n"
            "set output\n",
            max_flash > 100 * 1024 ? "set logscale x\n" : "", last > 0 ? last : 1);
    return cli_plot_close(f, t->script, 0, err);
}

/* -o: the plot of every individual and the front. */
static int plot(struct store *st, const struct store_run_info *info, const char *db, int64_t last,
                const struct store_device_point *front, size_t n_front, const char *out,
                struct tv_error *err)
{
    struct store_device_point *all = NULL;
    size_t n_all = 0;
    struct cli_plot_tmp t;
    memset(&t, 0, sizeof t);
    int rc = store_device_points_load(st, info->run_id, last, 0, &all, &n_all, err);
    int64_t max_flash = 0;
    for (size_t i = 0; i < n_all; i++)
        max_flash = all[i].flash > max_flash ? all[i].flash : max_flash;
    if (!rc)
        rc = cli_plot_tmp_make(&t, err);
    if (!rc)
        rc = write_data(t.data, all, n_all, front, n_front, err);
    free(all);
    if (!rc)
        rc = write_script(&t, db, info, last, n_front, max_flash, err);
    if (!rc)
        rc = cli_plot_finish(&t, out, err);
    cli_plot_tmp_remove(&t);
    return rc;
}

int cli_cmd_front(int argc, char **argv)
{
    const char *db = NULL, *name = NULL, *out = NULL, *gen = NULL;
    const struct cli_opt opts[] = {{"--name", &name}, {"-o", &out}, {"--generation", &gen}};
    int csv = cli_take_flag(&argc, argv, "--csv");
    int status = cli_parse_args(argc, argv, "front", opts, 3, &db, front_usage);
    if (status >= 0)
        return status;
    if (!db)
        return cli_usage_error(front_usage);
    struct tv_error err = {0};
    double g = -1;
    if (gen && cli_parse_whole("--generation", gen, 0, 9007199254740992.0, &g, &err))
        return cli_fail(&err);
    struct store *st;
    struct store_run_info info;
    if (cli_open_run(db, name, &st, &info, &err))
        return cli_fail(&err);
    int64_t last = gen ? (int64_t)g : info.last_generation;
    int rc = 0;
    if (info.last_generation < 0)
        rc = tv_error_set(&err, TV_ENOTFOUND, "%s: run '%s' has no closed generation yet", db,
                          info.name);
    else if (last > info.last_generation)
        rc = tv_error_set(&err, TV_EINVAL,
                          "--generation %" PRId64 ": run '%s' has closed generations 0..%" PRId64,
                          last, info.name, info.last_generation);
    struct store_device_point *front = NULL;
    size_t n = 0;
    if (!rc)
        rc = store_device_points_load(st, info.run_id, last, 1, &front, &n, &err);
    if (!rc && !n)
        rc = tv_error_set(&err, TV_ENOTFOUND,
                          "%s: run '%s' has no individual with a validation accuracy and a flash "
                          "figure (they need a task that reports an accuracy, classify, and "
                          "networks with an int8 form)",
                          db, info.name);
    int64_t champion = STORE_ID_NONE;
    struct tv_error none = {0};
    double test = rc ? NAN : final_test(st, &info, &champion, &none);
    if (!rc)
        print_table(front, n, csv, last == info.last_generation ? champion : STORE_ID_NONE, test);
    if (!rc && out)
        rc = plot(st, &info, db, last, front, n, out, &err);
    free(front);
    if (store_close(st, rc ? NULL : &err) && !rc)
        rc = err.code;
    store_run_info_release(&info);
    return rc ? cli_fail(&err) : 0;
}
