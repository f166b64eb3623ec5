/* cmd_train.c -- `trevo net init`: a layered sparse random network;
 * `trevo net train`: a network trained on a classification data set
 * (tasks/fit.h over nn/train/train.h, with the policies of nn/train/sparsify.h);
 * `trevo net test`: a network's accuracy on a data set, by the engine of
 * `trevo net eval` (nn.h), not by the trainer. docs/training.md. */
#include "cli.h"
#include "cmd_cnn.h"
#include "data.h"
#include "fit.h"
#include "nn.h"
#include "spike.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static int parse_act(const char *opt, const char *s, int *act, struct tv_error *err)
{
    *act = genome_act_parse(s, strlen(s));
    if (*act < 0)
        return tv_error_set(err, TV_EINVAL, "%s: unknown activation '%s'", opt, s);
    return 0;
}

/* ---- net init ------------------------------------------------------------------- */

static const char init_usage[] =
    "usage: trevo net init --layers N0,N1,...,NL (--density D | --epsilon E)\n"
    "                      [--hidden ACT] [--outputs ACT] [--seed S]\n"
    "                      [--format text|msgpack] -o NET\n\n"
    "A layered sparse random network: N0 inputs, hidden layers N1.., NL outputs;\n"
    "each pair of adjacent layers an Erdos-Renyi graph, each of its pairs of\n"
    "neurons present with probability D, or with SET's\n"
    "min(1, E (N(l-1) + N(l)) / (N(l-1) N(l))), drawn sparse: never a dense\n"
    "network pruned. Weights N(0, g / k), k the connections the neuron they enter\n"
    "actually has, g 2 into a relu neuron (He) and 1 otherwise (LeCun); biases 0.\n"
    "  --layers     layer sizes, inputs first (at least 2)\n"
    "  --density    D in (0, 1], the same for every pair\n"
    "  --epsilon    E > 0: about E (N(l-1) + N(l)) connections per pair (SET)\n"
    "  --hidden     hidden activation (default relu)\n"
    "  --outputs    output activation (default identity: softmax is the loss's)\n"
    "  --seed       random seed (default 1)\n"
    "  --format     of NET (default msgpack)\n"
    "With --conv SPEC, a convolutional network: trevo net init --conv x --help.\n";

struct init_args {
    uint32_t sizes[CLI_MAX_LAYERS];
    size_t n_layers;
    double density, epsilon, seed; /* one of density, epsilon is 0 */
    int hidden, outputs;
    const char *out, *format;
};

static int parse_init_args(int argc, char **argv, void *args, struct tv_error *err)
{
    struct init_args *a = args;
    const char *layers = NULL, *density = NULL, *epsilon = NULL;
    a->hidden = GENOME_ACT_RELU;
    a->outputs = GENOME_ACT_IDENTITY;
    a->seed = 1;
    a->format = "msgpack";
    for (int i = 1; i < argc; i++) {
        const char *o = argv[i];
        if (o[0] != '-')
            return cli_arg_error(o, err);
        if (i + 1 >= argc)
            return tv_error_set(err, TV_EINVAL, "%s: expected a value", o);
        const char *v = argv[++i];
        int rc = 0;
        if (!strcmp(o, "--layers"))
            layers = v;
        else if (!strcmp(o, "--density"))
            density = v;
        else if (!strcmp(o, "--epsilon"))
            epsilon = v;
        else if (!strcmp(o, "--hidden"))
            rc = parse_act(o, v, &a->hidden, err);
        else if (!strcmp(o, "--outputs"))
            rc = parse_act(o, v, &a->outputs, err);
        else if (!strcmp(o, "--seed"))
            rc = cli_parse_whole(o, v, 0, 9007199254740992.0, &a->seed, err);
        else if (!strcmp(o, "--format"))
            a->format = v;
        else if (!strcmp(o, "-o"))
            a->out = v;
        else
            return tv_error_set(err, TV_EINVAL, "unknown option '%s'", o);
        if (rc)
            return rc;
    }
    if (!layers || !(density || epsilon) || !a->out)
        return tv_error_set(err, TV_EINVAL,
                            "--layers, --density (or --epsilon) and -o are required");
    if (density && epsilon)
        return tv_error_set(err, TV_EINVAL, "--density and --epsilon exclude each other");
    if (strcmp(a->format, "text") && strcmp(a->format, "msgpack"))
        return tv_error_set(err, TV_EINVAL, "--format: expected text or msgpack, got '%s'",
                            a->format);
    int rc = cli_parse_layers(layers, a->sizes, &a->n_layers, err);
    if (!rc && density)
        rc = cli_parse_real("--density", density, 0, 1, 1, &a->density, err);
    if (!rc && epsilon)
        rc = cli_parse_real("--epsilon", epsilon, 0, 1, 1e9, &a->epsilon, err);
    return rc;
}

/* SET's start: g holds the neurons of spec (built with density 0); adds
 * each adjacent pair (a, b) as a 2-layer Erdos-Renyi graph of probability
 * min(1, eps (n_a + n_b) / (n_a n_b)), with ids mapped as
 * genome_build_layered gives them (inputs, outputs, then hidden layers). */
static int add_epsilon_pairs(struct genome *g, const struct genome_layered_spec *spec, double eps,
                             struct tv_rng *rng, struct tv_error *err)
{
    size_t L = spec->n_layers;
    uint32_t first[CLI_MAX_LAYERS], next = spec->sizes[0] + spec->sizes[L - 1];
    first[0] = 0;
    first[L - 1] = spec->sizes[0];
    for (size_t l = 1; l + 1 < L; l++) {
        first[l] = next;
        next += spec->sizes[l];
    }
    struct genome pair;
    genome_init(&pair);
    int rc = 0;
    for (size_t l = 1; l < L && !rc; l++) {
        double na = spec->sizes[l - 1], nb = spec->sizes[l];
        struct genome_layered_spec two = *spec;
        two.sizes = spec->sizes + l - 1;
        two.n_layers = 2;
        two.density = fmin(1.0, eps * (na + nb) / (na * nb));
        rc = genome_build_layered(&pair, &two, rng, err);
        for (size_t k = 0; k < pair.n_conns && !rc; k++) {
            struct genome_conn c = {first[l - 1] + pair.conns[k].from,
                                    first[l] + (pair.conns[k].to - spec->sizes[l - 1]),
                                    pair.conns[k].weight};
            rc = genome_push_conn(g, &c, err);
        }
    }
    genome_release(&pair);
    return rc ? rc : genome_canonicalize(g, err);
}

int cli_cmd_net_init(int argc, char **argv)
{
    for (int i = 1; i < argc; i++)
        if (!strcmp(argv[i], "--conv")) /* a convolutional network: cmd_cnn.c */
            return cli_cmd_net_init_conv(argc, argv);
    struct init_args a = {0};
    int st = cli_front(argc, argv, "net init", init_usage, parse_init_args, &a);
    if (st >= 0)
        return st;
    struct tv_error err = {0};
    struct genome_layered_spec spec = {.sizes = a.sizes,
                                       .n_layers = a.n_layers,
                                       .density = a.density,
                                       .hidden_act = a.hidden,
                                       .out_act = a.outputs,
                                       .weight_sd = 1.0};
    struct tv_rng rng;
    tv_rng_init(&rng, (uint64_t)a.seed, 0x6e6574696e6974ULL, 0);
    struct genome *g = genome_new();
    int rc = g ? genome_build_layered(g, &spec, &rng, &err)
               : tv_error_set(&err, TV_ENOMEM, "out of memory");
    if (!rc && a.epsilon > 0)
        rc = add_epsilon_pairs(g, &spec, a.epsilon, &rng, &err);
    if (!rc)
        rc = genome_scale_fan_in(g, &err);
    if (!rc)
        rc = cli_write_net(g, a.format, NULL, a.out, &err);
    if (!rc)
        printf("%s: %zu neurons, %zu connections\n", a.out, g->n_neurons, g->n_conns);
    genome_free(g);
    return rc ? cli_fail(&err) : 0;
}

/* ---- net train -------------------------------------------------------------------- */

static const char train_usage[] =
    "usage: trevo net train NET --data DATA [--labels FILE] [--test DATA\n"
    "                       [--test-labels FILE]] [--header auto|yes|no] [--epochs N]\n"
    "                       [--batch B] [--lr X]\n"
    "                       [--optimizer sgd|momentum|adam] [--momentum M]\n"
    "                       [--lr-schedule none|cosine] [--seed S] [--no-shuffle] "
    "[--sparsify SPEC]...\n"
    "                       [--regrow SPEC] [--scale none|zscore|minmax]\n"
    "                       [--format text|msgpack] -o OUT\n\n"
    "Trains the network NET to classify DATA (softmax cross-entropy over the\n"
    "output neurons' values, class k = the k-th output by id) and writes the\n"
    "trained weights and topology to OUT. One line per epoch on stdout (loss,\n"
    "training and test accuracy, connections, seconds); a progress bar on\n"
    "stderr when it is a terminal. docs/training.md says it exactly.\n"
    "  DATA            a CSV file (features, then the class 0..K-1 last), IDX\n"
    "                  images with --labels, or fashion-mnist:train|test\n"
    "  --header        a CSV file's first line: auto (default: a header when a\n"
    "                  cell is not a number), yes (always) or no (always data)\n"
    "  --epochs        passes over DATA (default 1)\n"
    "  --batch         samples per optimizer step (default 128)\n"
    "  --lr            learning rate (default 0.01)\n"
    "  --optimizer     sgd (default), momentum or adam\n"
    "  --momentum      of --optimizer momentum (default 0.9)\n"
    "  --lr-schedule   none (default): --lr throughout; cosine: step s of the\n"
    "                  run's S steps at lr (1 + cos(pi s / S)) / 2\n"
    "  --seed          shuffling and the policies' draws (default 1)\n"
    "  --no-shuffle    consecutive rows in file order, the last batch short\n"
    "  --sparsify SPEC a policy after each step: l1:D lp:D,P threshold:T\n"
    "                  round:K zero:P zero_prop:P neuron[:N] lock:N (repeatable)\n"
    "  --regrow SPEC   each epoch: set:F[,S] or rigl:F\n"
    "  --scale         none (default), zscore or minmax: statistics of DATA's\n"
    "                  features; trains on scaled rows and stores the scaling\n"
    "                  in OUT, which then takes raw rows (none: NET's own\n"
    "                  scaling, if any, is kept and applied)\n"
    "  --format        of OUT (default msgpack)\n";

struct train_args {
    const char *net, *data, *labels, *test, *test_labels, *out, *format, *header_s;
    int scale;  /* 0 none, 1 zscore, 2 minmax */
    int header; /* enum data_header */
    struct nn_train_opts opts;
    struct fit_opts fit;
    struct nn_sparsity policies[32];
    size_t n_policies;
};

static int parse_optimizer(const char *v, int *out, struct tv_error *err)
{
    static const char *const names[] = {"sgd", "momentum", "adam"};
    for (int k = 0; k < 3; k++)
        if (!strcmp(v, names[k]))
            return *out = k, 0;
    return tv_error_set(err, TV_EINVAL, "--optimizer: expected sgd, momentum or adam, got '%s'", v);
}

static int add_policy(struct train_args *a, const char *opt, const char *spec, struct tv_error *err)
{
    if (a->n_policies == sizeof a->policies / sizeof a->policies[0])
        return tv_error_set(err, TV_ELIMIT, "%s: at most %zu policies", opt,
                            sizeof a->policies / sizeof a->policies[0]);
    struct nn_sparsity *p = &a->policies[a->n_policies];
    if (nn_sparsity_parse(spec, p, err)) { /* "--sparsify l1:x: ..." (sparsify.h) */
        char msg[TV_ERROR_MSG_MAX];
        snprintf(msg, sizeof msg, "%s", err->msg);
        return tv_error_set(err, err->code, "%s %s", opt, msg);
    }
    int regrow = p->kind == NN_SPARSE_SET || p->kind == NN_SPARSE_RIGL;
    if (regrow != !strcmp(opt, "--regrow"))
        return tv_error_set(err, TV_EINVAL, "%s %s: %s", opt, spec,
                            regrow ? "set and rigl are given with --regrow"
                                   : "--regrow takes set:F[,S] or rigl:F");
    a->n_policies++;
    return 0;
}

/* One option of net train with its value. */
static int train_option(struct train_args *a, const char *o, const char *v, struct tv_error *err)
{
    const char **text[] = {&a->data, &a->labels, &a->test,    &a->test_labels,
                           &a->out,  &a->format, &a->header_s};
    static const char *const text_names[] = {"--data", "--labels", "--test",  "--test-labels",
                                             "-o",     "--format", "--header"};
    for (size_t k = 0; k < sizeof text / sizeof text[0]; k++)
        if (!strcmp(o, text_names[k]))
            return *text[k] = v, 0;
    if (!strcmp(o, "--optimizer"))
        return parse_optimizer(v, &a->opts.optimizer, err);
    if (!strcmp(o, "--scale")) {
        a->scale = !strcmp(v, "none")     ? 0
                   : !strcmp(v, "zscore") ? 1
                   : !strcmp(v, "minmax") ? 2
                                          : -1;
        return a->scale < 0 ? tv_error_set(err, TV_EINVAL,
                                           "--scale: expected none, zscore or minmax, got '%s'", v)
                            : 0;
    }
    if (!strcmp(o, "--sparsify") || !strcmp(o, "--regrow"))
        return add_policy(a, o, v, err);
    if (!strcmp(o, "--lr-schedule")) {
        a->fit.lr_schedule = nn_lr_schedule_parse(v);
        return a->fit.lr_schedule < 0 ? tv_error_set(err, TV_EINVAL,
                                                     "--lr-schedule: expected none or "
                                                     "cosine, got '%s'",
                                                     v)
                                      : 0;
    }
    double x;
    int rc;
    if (!strcmp(o, "--epochs")) {
        if (!(rc = cli_parse_whole(o, v, 1, 1e6, &x, err)))
            a->fit.epochs = (size_t)x;
    } else if (!strcmp(o, "--batch")) {
        if (!(rc = cli_parse_whole(o, v, 1, 65536, &x, err)))
            a->fit.batch = (size_t)x;
    } else if (!strcmp(o, "--seed")) {
        if (!(rc = cli_parse_whole(o, v, 0, 9007199254740992.0, &x, err)))
            a->fit.seed = (uint64_t)x;
    } else if (!strcmp(o, "--lr")) {
        if (!(rc = cli_parse_real(o, v, 0, 1, 1e6, &x, err)))
            a->opts.lr = (float)x;
    } else if (!strcmp(o, "--momentum")) {
        if (!(rc = cli_parse_real(o, v, 0, 0, 1, &x, err)))
            a->opts.momentum = (float)x;
    } else {
        rc = tv_error_set(err, TV_EINVAL, "unknown option '%s'", o);
    }
    return rc;
}

static int parse_train_args(int argc, char **argv, void *args, struct tv_error *err)
{
    struct train_args *a = args;
    nn_train_opts_default(&a->opts);
    fit_opts_default(&a->fit);
    a->format = "msgpack";
    for (int i = 1; i < argc; i++) {
        const char *o = argv[i];
        if (!strcmp(o, "--no-shuffle")) {
            a->fit.shuffle = 0;
            continue;
        }
        if (o[0] != '-') {
            if (a->net)
                return tv_error_set(err, TV_EINVAL, "one network expected, got '%s' and '%s'",
                                    a->net, o);
            a->net = o;
            continue;
        }
        if (i + 1 >= argc)
            return tv_error_set(err, TV_EINVAL, "%s: expected a value", o);
        int rc = train_option(a, o, argv[++i], err);
        if (rc)
            return rc;
    }
    if (!a->net || !a->data || !a->out)
        return tv_error_set(err, TV_EINVAL, "NET, --data and -o are required");
    if (a->test_labels && !a->test)
        return tv_error_set(err, TV_EINVAL, "--test-labels needs --test");
    if (strcmp(a->format, "text") && strcmp(a->format, "msgpack"))
        return tv_error_set(err, TV_EINVAL, "--format: expected text or msgpack, got '%s'",
                            a->format);
    if (cli_parse_header("--header", a->header_s, &a->header, err))
        return err->code;
    a->opts.max_batch = a->fit.batch;
    a->fit.policies = a->policies;
    a->fit.n_policies = a->n_policies;
    return 0;
}

struct progress {
    int tty;
    double last;
};

static int train_report(void *ctx, const struct fit_report *r)
{
    struct progress *p = ctx;
    if (!r->done) {
        double now = tv_now();
        if (!p->tty || now - p->last < 0.1)
            return 0;
        p->last = now;
        int fill = (int)(30.0 * (double)r->step / (double)r->n_steps);
        fprintf(stderr, "\repoch %zu/%zu [%.*s%*s] %3d%% loss %.4f acc %.4f", r->epoch, r->epochs,
                fill, "==============================", 30 - fill, "",
                (int)(100.0 * (double)r->step / (double)r->n_steps), r->loss, r->train_acc);
        fflush(stderr);
        return 0;
    }
    if (p->tty)
        fprintf(stderr, "\r%78s\r", "");
    printf("epoch %zu/%zu: loss %.6f train_acc %.4f", r->epoch, r->epochs, r->loss, r->train_acc);
    if (isnan(r->test_acc))
        printf(" test_acc -");
    else
        printf(" test_acc %.4f test_loss %.6f", r->test_acc, r->test_loss);
    printf(" connections %zu seconds %.3f", r->conns, r->seconds);
    if (r->sp.removed || r->sp.grown || r->sp.neurons)
        printf(" removed %llu grown %llu neurons_removed %llu", (unsigned long long)r->sp.removed,
               (unsigned long long)r->sp.grown, (unsigned long long)r->sp.neurons);
    printf("\n");
    fflush(stdout);
    return 0;
}

/* The scaling of the training (--scale, or NET's own): a->fit's shift and
 * mul, pointing into *scale (new statistics, owned by the caller) or into
 * g's scaling (g must outlive the training). */
static int train_scale(struct train_args *a, const struct genome *g, const struct data_set *train,
                       float **scale, struct tv_error *err)
{
    size_t nf = train->n_features;
    a->fit.scale_test = 1;
    if (!a->scale) {
        a->fit.shift = genome_scale_shift(g);
        a->fit.mul = genome_scale_mul(g);
        return 0;
    }
    *scale = malloc(2 * nf * sizeof **scale);
    if (!*scale)
        return tv_error_set(err, TV_ENOMEM, "out of memory");
    int rc = fit_scale_stats(train, NULL, train->n_rows, a->scale == 1, *scale, *scale + nf, err);
    if (!rc) {
        a->fit.shift = *scale;
        a->fit.mul = *scale + nf;
    }
    return rc ? tv_error_prefix(err, "--scale") : 0;
}

int cli_cmd_net_train(int argc, char **argv)
{
    struct train_args a = {0};
    int st = cli_front(argc, argv, "net train", train_usage, parse_train_args, &a);
    if (st >= 0)
        return st;
    struct tv_error err = {0};
    struct genome g;
    genome_init(&g);
    struct nn_trainer *t = NULL;
    struct data_set train = {0}, test = {0};
    int rc = cli_check_writable(a.out, &err); /* before the training, not after */
    if (!rc)
        rc = cli_load_net(a.net, &g, &err);
    if (!rc && g.n_channels && (a.scale || g.n_scale))
        rc = tv_error_set(&err, TV_EINVAL,
                          "%s: a convolutional network is trained without an input scaling "
                          "(--scale none, and none in NET)",
                          a.net);
    if (!rc && g.n_channels) { /* a convolutional network: cmd_cnn.c */
        rc = cli_cnn_train_net(&g, &a.opts, &a.fit, a.data, a.labels, a.test, a.test_labels,
                               a.header, &err);
        if (!rc)
            rc = cli_write_net(&g, a.format, NULL, a.out, &err);
        if (!rc)
            printf("%s: %zu neurons, %zu connections, %zu filters, %zu coefficients\n", a.out,
                   g.n_neurons, g.n_conns, g.n_filters, g.n_coefs);
        genome_release(&g);
        return rc ? cli_fail(&err) : 0;
    }
    if (!rc)
        rc = nn_trainer_new(&g, &a.opts, &t, &err);
    size_t n_in = t ? nn_trainer_n_inputs(t) : 0, n_out = t ? nn_trainer_n_outputs(t) : 0;
    if (!rc)
        rc = cli_load_data(a.data, a.labels, a.header, n_in, n_out, &train, &err);
    if (!rc && a.test)
        rc = cli_load_data(a.test, a.test_labels, a.header, n_in, n_out, &test, &err);
    float *scale = NULL; /* shift [n_in] then mul [n_in] */
    if (!rc)
        rc = train_scale(&a, &g, &train, &scale, &err);
    struct progress p = {isatty(STDERR_FILENO), 0};
    if (!rc)
        rc = fit_run(t, &train, a.test ? &test : NULL, &a.fit, train_report, &p, &err);
    if (!rc)
        rc = nn_trainer_write_genome(t, &g, &err);
    if (!rc && a.scale) /* the new statistics replace NET's */
        rc = genome_set_scale(&g, scale, scale + n_in, n_in, &err);
    free(scale);
    if (!rc)
        rc = cli_write_net(&g, a.format, NULL, a.out, &err);
    if (!rc)
        printf("%s: %zu neurons, %zu connections\n", a.out, g.n_neurons, g.n_conns);
    data_free(&train);
    data_free(&test);
    nn_trainer_free(t);
    genome_release(&g);
    return rc ? cli_fail(&err) : 0;
}

/* ---- net test ------------------------------------------------------------------- */

/* Accuracy and loss of plan on d, batches of `batch` rows run by nn_step. */
static int plan_accuracy(const struct nn_plan *plan, const struct data_set *d, size_t batch,
                         size_t *correct, double *loss, struct tv_error *err)
{
    size_t n_in = nn_plan_n_inputs(plan), n_out = nn_plan_n_outputs(plan);
    struct nn_state *st = NULL;
    float *x = calloc(batch * n_in, sizeof *x), *out = malloc(batch * n_out * sizeof *out);
    int rc = x && out ? nn_state_new(plan, batch, &st, err)
                      : tv_error_set(err, TV_ENOMEM, "out of memory");
    *correct = 0;
    double sum = 0;
    for (size_t r0 = 0; r0 < d->n_rows && !rc; r0 += batch) {
        size_t n = d->n_rows - r0 < batch ? d->n_rows - r0 : batch;
        for (size_t s = 0; s < n; s++)
            data_row(d, r0 + s, x + s * n_in);
        nn_state_reset(st);
        nn_step(st, x, out);
        for (size_t s = 0; s < n; s++) {
            const float *z = out + s * n_out;
            size_t label = d->labels[r0 + s];
            sum += nn_softmax_xent(z, n_out, 1, label, NULL, 0, 0.0);
            *correct += nn_argmax(z, n_out, 1) == label;
        }
    }
    *loss = sum / (double)d->n_rows;
    nn_state_free(st);
    free(x);
    free(out);
    return rc;
}

static const char test_usage[] =
    "usage: trevo net test NET --data DATA [--labels FILE] [--header auto|yes|no]\n"
    "                      [--batch B]\n\n"
    "The accuracy of the network NET on the classification data set DATA (as\n"
    "for net train): each row one time step from a reset state, run by the\n"
    "engine of `trevo net eval` in batches of B rows (default 128; a spiking\n"
    "network runs one row at a time, batch 1); the class\n"
    "is the output of largest value (ties: the lower class; NaN never wins),\n"
    "k-th output by id. --header: a CSV file's first line, as for net train.\n"
    "Prints accuracy, mean softmax cross-entropy and connections.\n"
    "NET may be an int8 NET.q (`trevo net quantize`): its int8 engine runs it,\n"
    "the softmax over its dequantized outputs.\n";

int cli_cmd_net_test(int argc, char **argv)
{
    static const char usage[] = "usage: trevo net test NET --data DATA [--labels FILE] "
                                "[--header auto|yes|no] [--batch B]\n";
    if (cli_help(argc, argv, test_usage))
        return 0;
    const char *net = NULL, *spec = NULL, *labels = NULL, *batch_s = NULL, *header_s = NULL;
    const struct cli_opt opts[] = {
        {"--data", &spec}, {"--labels", &labels}, {"--batch", &batch_s}, {"--header", &header_s}};
    int st = cli_parse_args(argc, argv, "net test", opts, 4, &net, usage);
    if (st >= 0)
        return st;
    struct tv_error err = {0};
    double batch = 0;
    int header;
    if (!net || !spec)
        return cli_usage_error(usage);
    if ((batch_s && cli_parse_whole("--batch", batch_s, 1, 65536, &batch, &err)) ||
        cli_parse_header("--header", header_s, &header, &err)) {
        fprintf(stderr, "trevo net test: %s\n", err.msg);
        return 2;
    }
    struct genome g;
    genome_init(&g);
    struct nn_plan *plan = NULL;
    struct data_set d = {0};
    size_t correct = 0;
    double loss = 0;
    int int8 = cli_net_is_int8(net); /* an int8 NET.q: its int8 plan (cmd_quant.c) */
    int rc = int8 ? cli_load_plan(net, &plan, &err) : cli_load_net(net, &g, &err);
    if (!rc && !int8)
        rc = nn_plan_compile(&g, NULL, &plan, &err);
    if (!rc && !batch_s) /* the default: 128 rows, one for a spiking network */
        batch = nn_plan_spiking(plan) ? 1 : 128;
    else if (!rc && batch != 1 && nn_plan_spiking(plan))
        rc = tv_error_set(&err, TV_EINVAL,
                          "%s: a spiking network runs one row at a time: --batch 1, not %s", net,
                          batch_s);
    if (!rc)
        rc = cli_load_data(spec, labels, header, nn_plan_n_inputs(plan), nn_plan_n_outputs(plan),
                           &d, &err);
    if (!rc)
        rc = plan_accuracy(plan, &d, (size_t)batch, &correct, &loss, &err);
    if (!rc)
        printf("accuracy %.4f (%zu of %zu) loss %.6f connections %zu\n",
               (double)correct / (double)d.n_rows, correct, d.n_rows, loss,
               int8 ? nn_plan_n_conns(plan) : g.n_conns);
    data_free(&d);
    nn_plan_free(plan);
    genome_release(&g);
    return rc ? cli_fail(&err) : 0;
}
