/* cmd_quant.c -- int8 networks on the command line: `trevo net quantize`,
 * and what `net eval`, `net export --format c` and `task eval` need to take
 * a NET.q file (nn/deploy/quant.h). */
#include "cli.h"

#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "data.h"
#include "master.h"
#include "quant.h"
#include "task.h"

/* ---- trevo net quantize ------------------------------------------------------ */

static const char quantize_usage[] =
    "usage: trevo net quantize NET --calibrate DATA|task:NAME [--labels FILE]\n"
    "                          [--header auto|yes|no] [--samples N] [--percentile P]\n"
    "                          [--config FILE] [--set KEY=VALUE]... -o NET.q\n\n"
    "Quantizes the float network NET (text or msgpack) to int8 and writes NET.q\n"
    "(nn/deploy/quant.h describes the format). The activation ranges come from running\n"
    "NET on calibration inputs:\n"
    "  DATA        a data set as net train --data takes it: a labelled CSV file\n"
    "              (--header as for net train), IDX images with --labels, or\n"
    "              fashion-mnist:train|test; each row one time step from a reset\n"
    "              state, its label unused; --samples N: the first N rows (default:\n"
    "              all). Or a file of unlabelled rows, told apart by its first line\n"
    "              of exactly the network's inputs: comma-separated numbers, one time\n"
    "              step per line, an empty line starting a new sequence\n"
    "  task:NAME   the inputs the task NAME gives the network: N evaluations with\n"
    "              the seeds 1..N and generations 0..N-1 (--samples, default 16), as\n"
    "              `trevo task eval --seed S --generation G` runs them, with the task's default "
    "[task] values, or FILE's\n"
    "              (--config FILE: a run's config) and --set's (as in task eval)\n"
    "  --percentile P   the central P per cent of the values set each range\n"
    "                   (default 100: min-max)\n";

/* 1 if the text buf is a file of unlabelled rows: its first line that is
 * not blank is n_in numbers (a labelled row has n_in + 1; a header or an IDX
 * or gzipped file is no such line). */
static int unlabelled_rows(const struct tv_buf *buf, size_t n_in)
{
    const char *t = (const char *)buf->data, *end = t + buf->len;
    while (t < end) {
        const char *e = memchr(t, '\n', (size_t)(end - t));
        size_t len = e ? (size_t)(e - t) : (size_t)(end - t);
        if (strspn(t, " \t\r") < len) {
            float *in = malloc(n_in * sizeof *in);
            struct tv_error ignored = {0};
            int rows = in && !cli_row_parse(t, len, in, n_in, &ignored);
            free(in);
            return rows;
        }
        t += len + 1;
    }
    return 0;
}

/* DATA as --data takes it: the first max_rows rows, each from a reset state. */
static int calibrate_set(struct nn_calib *c, const char *spec, const char *labels, int header,
                         size_t max_rows, struct tv_error *err)
{
    enum { CHUNK = 256 };
    size_t n_in = nn_plan_n_inputs(nn_calib_plan(c));
    struct data_set d = {0};
    int rc = cli_load_data(spec, labels, header, n_in, SIZE_MAX, &d, err);
    float *x = rc ? NULL : malloc(CHUNK * n_in * sizeof *x);
    if (!rc && !x)
        rc = tv_error_set(err, TV_ENOMEM, "out of memory");
    size_t n = d.n_rows < max_rows ? d.n_rows : max_rows;
    for (size_t r0 = 0; r0 < n && !rc; r0 += CHUNK) {
        size_t k = n - r0 < CHUNK ? n - r0 : CHUNK;
        for (size_t i = 0; i < k; i++)
            data_row(&d, r0 + i, x + i * n_in);
        rc = nn_calib_run(c, x, k, 1, err);
    }
    free(x);
    data_free(&d);
    return rc;
}

/* DATA: a data set, or rows from a file of unlabelled rows (the form
 * before data sets: one time step per line, an empty line a new sequence),
 * through the calibration plan. */
static int calibrate_rows(struct nn_calib *c, const char *path, const char *labels,
                          const char *header_s, size_t max_rows, struct tv_error *err)
{
    struct tv_buf buf = {0};
    struct nn_state *s = NULL;
    const struct nn_plan *p = nn_calib_plan(c);
    size_t n_in = nn_plan_n_inputs(p);
    int header;
    if (cli_parse_header("--header", header_s, &header, err))
        return err->code;
    /* a data set unless a file whose first line is the network's inputs */
    int rows_file = !labels && header != DATA_HEADER_YES && strncmp(path, "fashion-mnist:", 14);
    if (rows_file && cli_read_file(path, CLI_FILE_MAX, &buf, err))
        return err->code;
    if (!rows_file || !unlabelled_rows(&buf, n_in)) {
        tv_buf_free(&buf);
        return calibrate_set(c, path, labels, header, max_rows, err);
    }
    float *in = malloc(n_in * sizeof *in);
    int rc = in ? 0 : tv_error_set(err, TV_ENOMEM, "out of memory");
    if (!rc)
        rc = nn_state_new(p, 1, &s, err);
    const char *t = (const char *)buf.data, *end = t + buf.len;
    size_t line = 0, rows = 0;
    while (!rc && t < end && rows < max_rows) {
        const char *e = memchr(t, '\n', (size_t)(end - t));
        size_t len = e ? (size_t)(e - t) : (size_t)(end - t);
        line++;
        size_t b = 0;
        while (b < len && (t[b] == ' ' || t[b] == '\t' || t[b] == '\r'))
            b++;
        if (b == len) {
            nn_state_reset(s);
        } else if ((rc = cli_row_parse(t, len, in, n_in, err))) {
            tv_error_prefix(err, "%s:%zu", path, line);
        } else {
            nn_step(s, in, NULL);
            rows++;
        }
        t += len + 1;
    }
    if (!rc && rows == 0)
        rc = tv_error_set(err, TV_EINVAL, "%s: no input rows", path);
    nn_state_free(s);
    free(in);
    tv_buf_free(&buf);
    return rc;
}

/* task:NAME: n evaluations of the task on the calibration plan, the task
 * opened with the [task] values of qa (config, sets). */
static int calibrate_task(struct nn_calib *c, const char *name, size_t n,
                          const struct cli_quant_args *qa, struct tv_error *err)
{
    struct master_config *cfg = calloc(1, sizeof *cfg);
    struct task_instance *t = NULL;
    int rc = cfg ? cli_task_open_args(*name ? name : NULL, qa->config, qa->config_text, qa->sets,
                                      qa->n_sets, cfg, &t, err)
                 : tv_error_set(err, TV_ENOMEM, "out of memory");
    free(cfg);
    if (rc)
        return *name ? tv_error_prefix(err, "--calibrate task:%s", name)
                     : tv_error_prefix(err, "calibration on the run's task");
    const struct nn_plan *p = nn_calib_plan(c);
    if (nn_plan_n_inputs(p) != t->n_inputs || nn_plan_n_outputs(p) != t->n_outputs)
        rc = tv_error_set(err, TV_EINVAL,
                          "--calibrate task:%s: the network has %zu inputs and %zu outputs; the "
                          "task takes %zu and %zu",
                          name, nn_plan_n_inputs(p), nn_plan_n_outputs(p), t->n_inputs,
                          t->n_outputs);
    for (size_t i = 0; !rc && i < n; i++) {
        struct tv_rng rng;
        tv_rng_init(&rng, i + 1, TASK_STREAM_EVAL, 0);
        struct task_result res;
        memset(&res, 0, sizeof res);
        /* classify: evaluation i draws the rows of generation i */
        rc = t->kind->evaluate_generation
                 ? t->kind->evaluate_generation(t, p, (int64_t)i, &rng, &res, err)
                 : t->kind->evaluate(t, p, &rng, &res, err);
    }
    task_close(t);
    return rc;
}

int cli_quantize_net(const struct genome *g, const struct cli_quant_args *qa, struct tv_error *err)
{
    if (cli_check_writable(qa->out, err)) /* before the calibration, not after */
        return err->code;
    const char *cal = qa->calibrate;
    int is_task = !strncmp(cal, "task:", 5);
    double n = is_task ? 16 : 1e15, percentile = 100;
    struct nn_quant_opts qo = {0};
    if ((qa->samples && cli_parse_whole("--samples", qa->samples, 1, 1e15, &n, err)) ||
        (qa->percentile &&
         cli_parse_real("--percentile", qa->percentile, 1, 0, 100, &percentile, err)))
        return err->code;
    if (is_task && (qa->labels || qa->header))
        return tv_error_set(err, TV_EINVAL, "%s: goes with --calibrate DATA, not %s",
                            qa->labels ? "--labels" : "--header", cal);
    qo.percentile = percentile;
    struct nn_calib *c = NULL;
    struct nn_qnet *q = NULL;
    struct tv_buf buf = {0};
    int rc = nn_calib_new(g, &qo, &c, err);
    if (!rc)
        rc = is_task ? calibrate_task(c, cal + 5, (size_t)n, qa, err)
                     : calibrate_rows(c, cal, qa->labels, qa->header, (size_t)n, err);
    if (!rc)
        rc = nn_quantize(c, &q, err);
    struct nn_cost cost;
    if (!rc)
        rc = nn_qnet_cost(q, &cost, err);
    const struct nn_cost *m = qa->limit;
    if (!rc && m && (cost.flash > m->flash || cost.ram > m->ram || cost.macs > m->macs))
        rc = tv_error_set(err, TV_ELIMIT,
                          "the quantized network does not fit the budget: flash %llu bytes, RAM "
                          "%llu bytes, %llu MACs",
                          (unsigned long long)cost.flash, (unsigned long long)cost.ram,
                          (unsigned long long)cost.macs);
    if (!rc)
        rc = qa->c_prefix ? nn_qnet_export_c(q, qa->c_prefix, &buf, err)
                          : nn_qnet_write(q, &buf, err);
    if (!rc)
        rc = cli_write_file(qa->out, buf.data, buf.len, err);
    if (!rc) {
        fprintf(stderr, "%s: %zu neurons, %zu edges, %zu tables, calibrated on %zu values\n",
                qa->out, q->n, q->n_edges, q->n_tables, nn_calib_n_observed(c));
        cli_print_cost(stderr, qa->out, &cost, 0);
    }
    tv_buf_free(&buf);
    nn_qnet_free(q);
    nn_calib_free(c);
    return rc;
}

int cli_cmd_net_quantize(int argc, char **argv)
{
    if (cli_help(argc, argv, quantize_usage))
        return 0;
    const char *net = NULL;
    struct cli_quant_args qa = {0};
    const char **sets = calloc((size_t)argc, sizeof *sets);
    if (!sets) {
        fprintf(stderr, "trevo: out of memory\n");
        return 1;
    }
    struct {
        const char *name, **value;
    } opts[] = {{"--calibrate", &qa.calibrate},   {"--labels", &qa.labels},
                {"--header", &qa.header},         {"--samples", &qa.samples},
                {"--percentile", &qa.percentile}, {"-o", &qa.out},
                {"--config", &qa.config}};
    const char *bad = NULL; /* the first argument refused */
    for (int i = 1; i < argc && !bad; i++) {
        size_t o = 0, n_opts = sizeof opts / sizeof opts[0];
        while (o < n_opts && strcmp(argv[i], opts[o].name))
            o++;
        if (i + 1 < argc && o < n_opts)
            *opts[o].value = argv[++i];
        else if (i + 1 < argc && !strcmp(argv[i], "--set"))
            sets[qa.n_sets++] = argv[++i];
        else if (argv[i][0] != '-' && !net)
            net = argv[i];
        else
            bad = argv[i];
    }
    qa.sets = sets;
    if (bad || !net || !qa.calibrate || !qa.out) {
        free(sets);
        return bad ? cli_refuse_arg("net quantize", bad, quantize_usage)
                   : cli_usage_error(quantize_usage);
    }
    struct tv_error err = {0};
    struct genome g;
    genome_init(&g);
    int rc = cli_load_net(net, &g, &err);
    if (!rc)
        rc = cli_quantize_net(&g, &qa, &err);
    genome_release(&g);
    free(sets);
    return rc ? cli_fail(&err) : 0;
}
