/* cmd_quant.c -- int8 networks on the command line: `trevo net quantize`,
 * and what `net eval`, `net export --format c` and `task eval` need to take
 * a NET.q file (nn/deploy/quant.h). */
#include "cli.h"

#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "master.h"
#include "quant.h"
#include "task.h"

/* ---- trevo net quantize ------------------------------------------------------ */

static const char quantize_usage[] =
    "usage: trevo net quantize NET --calibrate DATA|task:NAME [--samples N]\n"
    "                          [--percentile P] [--config FILE] [--set KEY=VALUE]...\n"
    "                          -o NET.q\n\n"
    "Quantizes the float network NET (text or msgpack) to int8 and writes NET.q\n"
    "(nn/deploy/quant.h describes the format). The activation ranges come from running\n"
    "NET on calibration inputs:\n"
    "  DATA        a file of input rows, one time step per line: the network's inputs\n"
    "              as comma-separated numbers; an empty line starts a new sequence;\n"
    "              --samples N: the first N rows (default: all)\n"
    "  task:NAME   the inputs the task NAME gives the network: N evaluations with\n"
    "              the seeds 1..N and generations 0..N-1 (--samples, default 16), as\n"
    "              `trevo task eval --seed S --generation G` runs them, with the task's default "
    "[task] values, or FILE's\n"
    "              (--config FILE: a run's config) and --set's (as in task eval)\n"
    "  --percentile P   the central P per cent of the values set each range\n"
    "                   (default 100: min-max)\n";

/* DATA: rows from a file, through the calibration plan. */
static int calibrate_rows(struct nn_calib *c, const char *path, size_t max_rows,
                          struct tv_error *err)
{
    struct tv_buf buf = {0};
    struct nn_state *s = NULL;
    const struct nn_plan *p = nn_calib_plan(c);
    size_t n_in = nn_plan_n_inputs(p);
    float *in = malloc(n_in * sizeof *in);
    int rc = in ? cli_read_file(path, CLI_FILE_MAX, &buf, err)
                : tv_error_set(err, TV_ENOMEM, "out of memory");
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
    int rc = cfg ? cli_task_open_args(name, qa->config, qa->config_text, qa->sets, qa->n_sets, cfg,
                                      &t, err)
                 : tv_error_set(err, TV_ENOMEM, "out of memory");
    free(cfg);
    if (rc)
        return tv_error_prefix(err, "--calibrate task:%s", name);
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
    qo.percentile = percentile;
    struct nn_calib *c = NULL;
    struct nn_qnet *q = NULL;
    struct tv_buf buf = {0};
    int rc = nn_calib_new(g, &qo, &c, err);
    if (!rc)
        rc = is_task ? calibrate_task(c, cal + 5, (size_t)n, qa, err)
                     : calibrate_rows(c, cal, (size_t)n, err);
    if (!rc)
        rc = nn_quantize(c, &q, err);
    if (!rc)
        rc = nn_qnet_write(q, &buf, err);
    if (!rc)
        rc = cli_write_file(qa->out, buf.data, buf.len, err);
    if (!rc)
        fprintf(stderr, "%s: %zu neurons, %zu edges, %zu tables, calibrated on %zu values\n",
                qa->out, q->n, q->n_edges, q->n_tables, nn_calib_n_observed(c));
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
    } opts[] = {{"--calibrate", &qa.calibrate},
                {"--samples", &qa.samples},
                {"--percentile", &qa.percentile},
                {"-o", &qa.out},
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
