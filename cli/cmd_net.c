/* cmd_net.c -- `trevo net import|export|validate`: network files between
 * their text form (for people) and msgpack form (what trevo stores and
 * sends); `trevo net eval`: a network run on input rows. */
#include "cli.h"
#include "quant.h"
#include "nn.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int cli_cmd_net_import(int argc, char **argv)
{
    static const char usage[] = "usage: trevo net import FILE.txt -o NET\n"
                                "Reads a network in text form and writes its msgpack form.\n";
    if (cli_help(argc, argv, usage))
        return 0;
    const char *in = NULL, *out = NULL;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "-o") && i + 1 < argc)
            out = argv[++i];
        else if (!in && (argv[i][0] != '-' || !strcmp(argv[i], "-")))
            in = argv[i];
        else
            return cli_refuse_arg("net import", argv[i], usage);
    }
    if (!in || !out)
        return cli_usage_error(usage);
    struct tv_error err = {0};
    struct genome *g = genome_new();
    struct tv_buf buf = {0};
    int rc = g ? cli_load_net(in, g, &err) : tv_error_set(&err, TV_ENOMEM, "out of memory");
    if (!rc)
        rc = genome_encode(g, &buf, &err);
    if (!rc)
        rc = cli_write_file(out, buf.data, buf.len, &err);
    tv_buf_free(&buf);
    genome_free(g);
    return rc ? cli_fail(&err) : 0;
}

int cli_cmd_net_export(int argc, char **argv)
{
    static const char usage[] =
        "usage: trevo net export NET [--format text|msgpack|dot|c] [-o FILE] [--prefix NAME]\n"
        "Writes a network (either form) as text (default), msgpack or\n"
        "a Graphviz drawing (dot),\n"
        "to FILE or standard output. --format c: one C99 file without\n"
        "libm, malloc or stdio (NET or an int8 NET.q; functions\n"
        "NAME_predict, NAME_predict_int8, NAME_reset; default\n"
        "trevo_net).\n";
    if (cli_help(argc, argv, usage))
        return 0;
    const char *in = NULL, *out = "-", *format = "text", *prefix = "trevo_net";
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "-o") && i + 1 < argc)
            out = argv[++i];
        else if (!strcmp(argv[i], "--prefix") && i + 1 < argc)
            prefix = argv[++i];
        else if (!strcmp(argv[i], "--format") && i + 1 < argc)
            format = argv[++i];
        else if (!in && (argv[i][0] != '-' || !strcmp(argv[i], "-")))
            in = argv[i];
        else
            return cli_refuse_arg("net export", argv[i], usage);
    }
    if (!in || (!cli_net_format_known(format) && strcmp(format, "c")))
        return cli_usage_error(usage);
    struct tv_error err = {0};
    if (!strcmp(format, "c")) /* cmd_quant.c */
        return cli_export_c(in, prefix, out, &err) ? cli_fail(&err) : 0;
    struct genome *g = genome_new();
    int rc = g ? cli_load_net(in, g, &err) : tv_error_set(&err, TV_ENOMEM, "out of memory");
    if (!rc)
        rc = cli_write_net(g, format, NULL, out, &err);
    genome_free(g);
    return rc ? cli_fail(&err) : 0;
}

/* `net validate` of an int8 NET.q: its sizes and exact device figures. */
static int validate_int8(const char *path, struct tv_error *err)
{
    struct nn_qnet *q = NULL;
    struct nn_cost c;
    int rc = cli_load_qnet(path, &q, err);
    if (!rc)
        rc = nn_qnet_cost(q, &c, err);
    if (!rc) {
        printf("%s: valid (int8)\nneurons: %zu (inputs %zu, outputs %zu)\n"
               "edges: %zu (recurrent %zu)\nlayers: %zu\ntables: %zu\n",
               path, q->n, q->n_in, q->n_out, q->n_edges, q->n_recurrent, q->n_layers, q->n_tables);
        if (q->n_chans)
            printf("channels: %zu (coefficients %zu)\n", q->n_chans, q->n_coefs);
        cli_print_cost(stdout, "device", &c, 0);
    }
    nn_qnet_free(q);
    return rc;
}

int cli_cmd_net_validate(int argc, char **argv)
{
    static const char usage[] =
        "usage: trevo net validate NET\n"
        "Checks a network file (text, msgpack or an int8 NET.q) and prints its\n"
        "sizes and what its int8 C file (net export --format c) costs on a device:\n"
        "flash bytes of constant arrays, RAM bytes of state, multiply-accumulates\n"
        "per inference; exact for a NET.q, at most that flash for a float network.\n";
    if (cli_help(argc, argv, usage))
        return 0;
    if (argc != 2)
        return argc < 2 ? cli_usage_error(usage) : cli_refuse_arg("net validate", argv[2], usage);
    struct tv_error err = {0};
    if (cli_net_is_int8(argv[1]))
        return validate_int8(argv[1], &err) ? cli_fail(&err) : 0;
    struct genome *g = genome_new();
    struct genome_stats st;
    int rc = g ? cli_load_net(argv[1], g, &err) : tv_error_set(&err, TV_ENOMEM, "out of memory");
    if (!rc)
        rc = genome_stats(g, &st, &err);
    if (!rc)
        printf("%s: valid\nneurons: %zu (inputs %zu, outputs %zu, hidden %zu)\n"
               "connections: %zu (local %zu, skip %zu, recurrent %zu)\nlayers: %zu\n",
               argv[1], st.n_neurons, st.n_inputs, st.n_outputs, st.n_hidden, st.n_conns,
               st.n_local, st.n_skip, st.n_recurrent, st.n_layers);
    if (!rc && g->n_scale) { /* genome.h, "input scaling": x' = (x - shift) * mul */
        printf("input scaling: raw inputs, input k entering as (x - shift) * mul%s\n",
               g->n_scale > 32 ? " (net export --format text lists them)" : ", k: shift mul");
        for (size_t k = 0; g->n_scale <= 32 && k < g->n_scale; k++)
            printf("  %zu: %.9g %.9g\n", k, (double)g->scale[k], (double)g->scale[g->n_scale + k]);
    }
    if (!rc && g->has_hyper) /* genome.h, "hyper-parameter genes" */
        printf("hyper-parameter genes (scales of a search's training): lr_scale %.9g, "
               "steps_scale %.9g, regrow_scale %.9g\n",
               (double)g->hyper[GENOME_HYPER_LR], (double)g->hyper[GENOME_HYPER_STEPS],
               (double)g->hyper[GENOME_HYPER_REGROW]);
    struct nn_cost c;
    struct tv_error why = {0};
    if (!rc && !nn_genome_cost(g, &c, &why))
        cli_print_cost(stdout, "device", &c, 1);
    else if (!rc) /* valid, but no int8 form: say why */
        printf("device: no int8 C file: %s\n", why.msg);
    genome_free(g);
    return rc ? cli_fail(&err) : 0;
}

int cli_cmd_net_eval(int argc, char **argv)
{
    static const char usage[] =
        "usage: trevo net eval NET\n\n"
        "Runs the network NET (text, msgpack or an int8 NET.q: trevo net quantize)\n"
        "one time step per input row.\n"
        "Rows come from stdin: the network's inputs as comma-separated numbers, in\n"
        "the order of the input neurons' ids. An empty line starts a new sequence\n"
        "(the recurrent state is reset). Each row prints one line of comma-separated\n"
        "outputs (%.9g), in the order of the output neurons' ids.\n";
    if (cli_help(argc, argv, usage))
        return 0;
    if (argc < 2)
        return cli_usage_error(usage);
    if (argc > 2 || argv[1][0] == '-')
        return cli_refuse_arg("net eval", argv[1][0] == '-' ? argv[1] : argv[2], usage);
    struct tv_error err = {0};
    struct genome g;
    genome_init(&g);
    struct nn_plan *plan = NULL;
    struct nn_state *st = NULL;
    float *in = NULL, *out = NULL;
    char *line = NULL;
    size_t cap = 0;
    int status = 1;
    if (cli_load_plan(argv[1], &plan, &err) || nn_state_new(plan, 1, &st, &err))
        goto done;
    size_t n_in = nn_plan_n_inputs(plan), n_out = nn_plan_n_outputs(plan);
    in = malloc(n_in * sizeof *in);
    out = malloc(n_out * sizeof *out);
    if (!in || !out) {
        tv_error_set(&err, TV_ENOMEM, "out of memory");
        goto done;
    }
    size_t lineno = 0;
    ssize_t len;
    while ((len = getline(&line, &cap, stdin)) >= 0) {
        lineno++;
        size_t n = (size_t)len;
        while (n > 0 && (line[n - 1] == '\n' || line[n - 1] == '\r' || line[n - 1] == ' ' ||
                         line[n - 1] == '\t'))
            n--;
        size_t b = 0;
        while (b < n && (line[b] == ' ' || line[b] == '\t'))
            b++;
        if (b == n) { /* an empty line: a new sequence */
            nn_state_reset(st);
            continue;
        }
        if (cli_row_parse(line + b, n - b, in, n_in, &err)) {
            tv_error_prefix(&err, "stdin:%zu", lineno);
            goto done;
        }
        nn_step(st, in, out);
        for (size_t k = 0; k < n_out; k++)
            printf(k ? ",%.9g" : "%.9g", (double)out[k]);
        putchar('\n');
    }
    if (ferror(stdin)) {
        tv_error_set(&err, TV_EIO, "stdin: read error: %s", strerror(errno));
        goto done;
    }
    if (fflush(stdout) || ferror(stdout)) {
        tv_error_set(&err, TV_EIO, "stdout: write error: %s", strerror(errno));
        goto done;
    }
    status = 0;
done:
    free(line);
    free(in);
    free(out);
    nn_state_free(st);
    nn_plan_free(plan);
    genome_release(&g);
    return status ? cli_fail(&err) : 0;
}
