/* cmd_plot.c -- `trevo plot`: a run's fitness and complexity per generation,
 * drawn by gnuplot into one PNG with two panels.
 *
 * The data are read through store/ on a read-only connection (the run may
 * still be going: a WAL reader never blocks the writer), written with a
 * generated gnuplot script into a private temporary directory, and gnuplot is
 * started with posix_spawnp: no shell, and neither the database path nor the
 * run name ever reaches a command line (in the script they are quoted text
 * of a title). gnuplot writes into the temporary directory; the PNG is then
 * moved into place atomically by cli_write_file(). */
#include "gnuplot.h"
#include "store.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <math.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

static const char plot_usage[] =
    "usage: trevo plot DB [--name RUN] -o FILE.png [--front]\n"
    "Draws a run's best and mean fitness per generation and the complexity of each\n"
    "generation's champion (neurons, connections, feed-forward and recurrent ones; skip\n"
    "ones, over 2+ layers, only when no neuron was added or deleted) into one PNG with\n"
    "two panels, and marks the generation the run was solved. --front: instead, every individual's "
    "fitness against its connections and\n"
    "the run's accuracy-connections front (the view v_front: no smaller network is as\n"
    "fit). Reads DB read-only, so the run may still be going. Needs gnuplot (Debian:\n"
    "apt-get install gnuplot-nox).\n";

/* What the main plot's script needs to know of its data. */
struct plot_facts {
    uint32_t max_count; /* the largest count plotted */
    int64_t solved;     /* the first generation whose population held a solution, or -1 */
    int fixed_layers;   /* every individual has as many neurons: no neuron was added or
                           deleted, so the layers, and what skip means, never change */
};

/* Whether every individual of the run up to its last closed generation has
 * the same number of neurons (rows only). */
static int plot_fixed_layers(struct store *st, const struct store_run_info *info, int *fixed,
                             struct tv_error *err)
{
    *fixed = 1;
    int64_t n = -1;
    int rc = 0;
    for (int64_t gen = 0; gen <= info->last_generation && !rc && *fixed; gen++) {
        struct store_set set;
        rc = store_individuals_load(st, info->run_id, gen, 0, &set, err);
        for (size_t i = 0; !rc && i < set.n; i++) {
            if (n < 0)
                n = set.rows[i].n_neurons;
            *fixed &= set.rows[i].n_neurons == n;
        }
        if (!rc)
            store_set_release(&set);
    }
    return rc;
}

/* One line per closed generation: generation best mean, then the champion's
 * neurons, connections, feed-forward ones, recurrent ones and skip ones ("?"
 * when unknown). A connection is recurrent when its source is at least as
 * deep as its target, feed-forward otherwise: what a new neuron does not
 * change. Skip (over at least one layer) is relative to the layers, so a
 * first hidden neuron turns every input-output connection into one: it is
 * drawn only when the layers are fixed (facts->fixed_layers). */
static int plot_write_data(struct store *st, const struct store_run_info *info, const char *path,
                           struct plot_facts *facts, struct tv_error *err)
{
    *facts = (struct plot_facts){.solved = -1};
    int rc = plot_fixed_layers(st, info, &facts->fixed_layers, err);
    FILE *f;
    if (rc || (rc = cli_plot_create(path, &f, err)))
        return rc;
    fputs("# generation best mean champion_neurons champion_conns champion_feedforward "
          "champion_recurrent champion_skip\n",
          f);
    for (int64_t gen = 0; gen <= info->last_generation && !rc; gen++) {
        struct store_generation g;
        rc = store_generation_get(st, info->run_id, gen, &g, err);
        if (rc)
            break;
        if (g.solved && facts->solved < 0)
            facts->solved = gen;
        fprintf(f, "%" PRId64, gen);
        cli_plot_value(f, g.best);
        cli_plot_value(f, g.mean);
        struct store_individual ind;
        if (g.champion != STORE_ID_NONE) {
            rc = store_individual_row(st, info->run_id, g.champion, &ind, err);
            if (rc)
                break;
            uint32_t rec = ind.n_recurrent <= ind.n_conns ? ind.n_recurrent : ind.n_conns;
            fprintf(f, " %" PRIu32 " %" PRIu32 " %" PRIu32 " %" PRIu32 " %" PRIu32 "\n",
                    ind.n_neurons, ind.n_conns, ind.n_conns - rec, rec, ind.n_skip);
            uint32_t m = ind.n_neurons > ind.n_conns ? ind.n_neurons : ind.n_conns;
            facts->max_count = m > facts->max_count ? m : facts->max_count;
        } else {
            fputs(" ? ? ? ? ?\n", f);
        }
    }
    return cli_plot_close(f, path, rc, err);
}

/* The --front data: every individual "conns fitness" (generation by
 * generation, rows only), a blank line pair, then the front's points
 * "conns fitness id". *n_front: its size; *max_conns: the largest size. */
static int plot_write_front(struct store *st, const struct store_run_info *info, const char *path,
                            size_t *n_front, uint32_t *max_conns, struct tv_error *err)
{
    *n_front = 0;
    *max_conns = 0;
    FILE *f;
    int rc = cli_plot_create(path, &f, err);
    if (rc)
        return rc;
    fputs("# every individual: conns fitness\n", f);
    for (int64_t gen = 0; gen <= info->last_generation && !rc; gen++) {
        struct store_set set;
        rc = store_individuals_load(st, info->run_id, gen, 0, &set, err);
        for (size_t i = 0; !rc && i < set.n; i++) {
            const struct store_individual *r = &set.rows[i];
            if (!isfinite(r->fitness))
                continue;
            fprintf(f, "%" PRIu32, r->n_conns);
            cli_plot_value(f, r->fitness);
            fputc('\n', f);
            *max_conns = r->n_conns > *max_conns ? r->n_conns : *max_conns;
        }
        store_set_release(&set);
    }
    struct store_front_point *front = NULL;
    if (!rc)
        rc = store_front_load(st, info->run_id, &front, n_front, err);
    if (!rc) {
        fputs("\n\n# the front: conns fitness id\n", f);
        for (size_t i = 0; i < *n_front; i++) {
            fprintf(f, "%" PRIu32, front[i].n_conns);
            cli_plot_value(f, front[i].fitness);
            fprintf(f, " %" PRId64 "\n", front[i].id);
        }
    }
    free(front);
    return cli_plot_close(f, path, rc, err);
}

/* --front: one panel, fitness against connections (a log scale when the
 * sizes span more than a factor 100). */
static int plot_write_front_script(const struct cli_plot_tmp *t, const char *db,
                                   const struct store_run_info *info, size_t n_front,
                                   uint32_t max_conns, struct tv_error *err)
{
    FILE *f;
    int rc = cli_plot_script_open(t, &f, err);
    if (rc)
        return rc;
    char title[1200];
    snprintf(title, sizeof title,
             "trevo: run '%s' in %s: fitness against connections, %zu on the front", info->name, db,
             n_front);
    fputs("set title ", f);
    cli_plot_quoted(f, title);
    fprintf(f,
            "\nset grid\n"
            "set key outside right top vertical\n"
            "set xlabel 'connections'\n"
            "set ylabel 'fitness'\n"
            "%s"
            "plot data index 0 using 1:2 with points pointtype 7 pointsize 0.3"
            " linecolor rgb '#b0b0b0' title 'individuals', \\\n"
            "     data index 1 using 1:2 with steps linewidth 2 linecolor rgb '#c00000'"
            " notitle, \\\n"
            "     data index 1 using 1:2 with points pointtype 7 pointsize 0.8"
            " linecolor rgb '#c00000' title 'front (smallest as fit)'\n"
            "set output\n",
            max_conns > 1000 ? "set logscale x\n" : "");
    return cli_plot_close(f, t->script, 0, err);
}

/* The main plot's complexity panel: the counts that keep their meaning as
 * neurons come and go, skip only with fixed layers. */
static void plot_script_counts(FILE *f, const struct plot_facts *facts, const char *with)
{
    fprintf(f,
            "set title 'complexity of each generation''s champion'\n"
            "set ylabel 'count'\n"
            "set yrange [0:*]\n"
            "%s"
            "plot data using 1:4 with %s linewidth 2 title 'neurons', \\\n"
            "     data using 1:5 with %s linewidth 2 title 'connections', \\\n"
            "     data using 1:6 with %s linewidth 1 title 'feed-forward', \\\n"
            "     data using 1:7 with %s linewidth 1 title 'recurrent'",
            facts->max_count <= 10 ? "set ytics 1\n" : "", /* counts: no half ticks */
            with, with, with, with);
    if (facts->fixed_layers)
        fprintf(f, ", \\\n     data using 1:8 with %s linewidth 1 title 'skip (2+ layers)'", with);
    fputc('\n', f);
}

static int plot_write_script(const struct cli_plot_tmp *t, const char *db,
                             const struct store_run_info *info, const struct plot_facts *facts,
                             struct tv_error *err)
{
    FILE *f;
    int rc = cli_plot_script_open(t, &f, err);
    if (rc)
        return rc;
    char title[1200], solved[80] = "";
    int64_t n_gens = info->last_generation + 1;
    if (facts->solved >= 0)
        snprintf(solved, sizeof solved, ", solved at generation %" PRId64, facts->solved);
    snprintf(title, sizeof title, "trevo: run '%s' in %s, %" PRId64 " generation%s%s", info->name,
             db, n_gens, n_gens == 1 ? "" : "s", solved);
    fputs("set multiplot layout 2,1 title ", f);
    cli_plot_quoted(f, title);
    /* Few points: mark each one (a single generation is otherwise invisible). */
    const char *with = n_gens <= 60 ? "linespoints pointtype 7 pointsize 0.6" : "lines";
    fprintf(f,
            "\nset grid\n"
            "set xlabel 'generation'\n"
            "set key outside right top vertical\n"
            "set lmargin at screen 0.08\n"
            "set rmargin at screen 0.84\n"
            "set xrange [0:*]\n"
            "set autoscale xfix\n"
            "set offsets graph 0, graph 0, graph 0.05, graph 0.05\n"
            "%s",
            n_gens <= 20 ? "set xtics 1\n" : "");
    /* the generation the run was solved: a vertical line in both panels,
     * labelled on the side with more room */
    int left = 2 * facts->solved > info->last_generation;
    if (facts->solved >= 0)
        fprintf(f,
                "set arrow 1 from %" PRId64 ", graph 0 to %" PRId64 ", graph 1 nohead"
                " linecolor rgb '#2e8b57' dashtype 2 linewidth 2\n"
                "set label 1 'solved (generation %" PRId64 ")' at %" PRId64 ", graph 0.95"
                " %s offset %s0.5, 0 textcolor rgb '#2e8b57'\n",
                facts->solved, facts->solved, facts->solved, facts->solved, left ? "right" : "left",
                left ? "-" : "");
    fprintf(f,
            "set title 'best and mean fitness of each generation'\n"
            "set ylabel 'fitness'\n"
            "plot data using 1:2 with %s linewidth 2 title 'best', \\\n"
            "     data using 1:3 with %s linewidth 1 title 'mean'\n",
            with, with);
    plot_script_counts(f, facts, with);
    fputs("unset multiplot\nset output\n", f);
    return cli_plot_close(f, t->script, 0, err);
}

/* The tail of gnuplot's output, on one line, into msg. */
int cli_cmd_plot(int argc, char **argv)
{
    const char *db = NULL, *name = NULL, *out = NULL;
    const struct cli_opt opts[] = {{"--name", &name}, {"-o", &out}};
    int front = cli_take_flag(&argc, argv, "--front");
    int status = cli_parse_args(argc, argv, "plot", opts, 2, &db, plot_usage);
    if (status >= 0)
        return status;
    if (!db || !out)
        return cli_usage_error(plot_usage);
    struct tv_error err = {0};
    struct store *st;
    struct store_run_info info;
    if (cli_open_run(db, name, &st, &info, &err))
        return cli_fail(&err);
    struct cli_plot_tmp t;
    memset(&t, 0, sizeof t);
    int rc = 0;
    if (info.last_generation < 0)
        rc = tv_error_set(&err, TV_ENOTFOUND, "%s: run '%s' has no closed generation yet", db,
                          info.name);
    if (!rc)
        rc = cli_plot_tmp_make(&t, &err);
    struct plot_facts facts = {.solved = -1};
    size_t n_front = 0;
    if (!rc)
        rc = front ? plot_write_front(st, &info, t.data, &n_front, &facts.max_count, &err)
                   : plot_write_data(st, &info, t.data, &facts, &err);
    if (store_close(st, rc ? NULL : &err) && !rc) /* gnuplot may take a while: hold no snapshot */
        rc = err.code;
    if (!rc)
        rc = front ? plot_write_front_script(&t, db, &info, n_front, facts.max_count, &err)
                   : plot_write_script(&t, db, &info, &facts, &err);
    if (!rc)
        rc = cli_plot_finish(&t, out, &err);
    cli_plot_tmp_remove(&t);
    store_run_info_release(&info);
    return rc ? cli_fail(&err) : 0;
}
