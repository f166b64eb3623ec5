/* classify.c -- classification of a data set (data/data.h), configured by
 * [task] keys alone: as many inputs as the data's features, as many outputs
 * (identity) as its classes, the predicted class the largest output (the
 * first of equal ones; NaN never wins).
 *
 * open() loads the training file once and splits it: a permutation of its
 * rows drawn from [task] seed puts the last `validation` share aside, and
 * when `test` is a share (a number in (0, 1) instead of a file) the last
 * `test` share after the validation rows: permuted positions [0, n_train)
 * train, the next n_val validate, the last n_test test. A `holdout` share
 * comes out of the training split's end (the next n_hold after n_train; the
 * validation and test rows stay the same rows): nothing trains on it nor
 * selects on it, and the champion test scores it instead of the validation
 * split, so that a generation's champion is reported on rows that selection
 * did not overfit. CSV files are read
 * with `header`; `classes` > 0 declares the classes (else the training
 * file's largest label + 1), and a label of train or test past them is
 * refused with its file and line. The
 * scale's statistics (minmax, zscore) come from the training split alone,
 * after pixels are divided by 255. With a scale, every genome the task
 * evaluates gets them as its input scaling (genome.h), x' = (x - shift) *
 * mul, so that the genomes a search stores, its champion among them, take
 * raw rows. A plan that scales its inputs (nn_plan_scales) is given raw
 * rows; one that does not (a network written without the scaling) is given
 * the rows scaled by the task, as before the scaling was stored. An evaluation of generation g
 * scores the `samples` rows at positions g * samples, g * samples + 1, ... (wrapping) of the
 * training split's permuted order: the same rows for every child of a generation, so that their
 * fitnesses compare, the next rows for the next generation (an epoch every n_train / samples
 * generations); with subset = fresh, `samples` rows drawn without repeats for each generation from
 * (seed, generation) instead (all rows when samples covers the split), trained children's
 * validation rows too. The champion test scores the validation split (all of it; the hold-out
 * when there is one), the final test the test file (never used for selection).
 *
 * Fitness: accuracy (the share right), or xent: minus the mean cross-entropy
 * of the softmax of the outputs, each sample's capped at CLASSIFY_XENT_CAP
 * (also a sample whose loss is NaN: a NaN or +inf output). The class and
 * the loss follow nn/train/train.h's nn_argmax and nn_softmax_xent.
 *
 * Training inside evaluation (train_steps > 0): the child is first trained
 * on the training split (tasks/fit.h: fit_run with a step budget of
 * train_steps optimizer steps of train_batch rows, the rows of each pass in
 * the order of a permutation of the split drawn from the child's seed, the
 * sparsity policies after each step and each pass but the last; softmax
 * cross-entropy, the optimizer and lr of the keys), then the trained
 * network is scored on the `samples` rows at positions g * samples, ... of
 * the validation split (wrapping; all of it when samples >= its rows), never
 * on rows it trained on. A genome with channels (a convolutional network)
 * is trained the same way as a CNN (nn/conv/cnn.h, fit_cnn_run of fit.h). The
 * seed of the permutations and the policies is the first tv_rng_u64 of the
 * evaluation stream (TASK_STREAM_EVAL) of the child's seed: a function of
 * the child alone, whichever rank trains it.
 * A child with hyper-parameter genes (genome.h) is trained with the lr
 * times its lr_scale, the steps times its steps_scale and the fraction of
 * each set and rigl policy times its regrow_scale (apply_hyper); the trained
 * network keeps the genes.
 * lamarckian 1: the trained network (its weights, biases and the topology
 * the policies left) replaces the child's genome; 0 (Baldwinian): the
 * genome stays as it was bred, only its fitness is the trained network's.
 * A genome the trainer does not take (nn_cnn_from_genome or nn_trainer_new
 * refuse its form) is TV_EGENOME: a search scores that child failed.
 * A training that diverges (a weight or bias not finite) leaves the genome
 * as it was bred and scores as if every sample were wrong (accuracy 0, xent
 * CLASSIFY_XENT_CAP), figure "diverged" 1.
 *
 * Connection cost: fitness = score - conn_cost * C, score the accuracy or
 * minus the xent above and C the connections of the network scored (the
 * trained one when training). The champion and final tests are accuracies,
 * without the cost. */
#include <stdlib.h>
#include <string.h>

#include "cnn.h"
#include "data.h"
#include "fit.h"
#include "tasks.h"

#define CLASSIFY_XENT_CAP 50.0
/* Rows run through the network at once (one nn_step of this batch). */
#define CLASSIFY_BATCH 32
/* The rng stream of the split's permutation, and of subset = fresh's draws. */
#define CLASSIFY_STREAM_SPLIT 11
#define CLASSIFY_STREAM_FRESH 12
/* Sparsity policies in [task] sparsity, at most. */
#define CLASSIFY_MAX_POLICIES 8

enum {
    K_TRAIN,
    K_TRAIN_LABELS,
    K_TEST,
    K_TEST_LABELS,
    K_VALIDATION,
    K_SCALE,
    K_SAMPLES,
    K_FITNESS,
    K_SEED,
    K_TRAIN_STEPS,
    K_TRAIN_BATCH,
    K_OPTIMIZER,
    K_LR,
    K_SPARSITY,
    K_LAMARCKIAN,
    K_CONN_COST,
    K_HEADER,
    K_CLASSES,
    K_HOLDOUT,
    K_SUBSET,
    N_KEYS
};
_Static_assert(N_KEYS <= TASK_MAX_KEYS, "classify has more [task] keys than TASK_MAX_KEYS");
enum { SCALE_NONE, SCALE_MINMAX, SCALE_ZSCORE };
enum { FIT_ACCURACY, FIT_XENT };
enum { SUBSET_WINDOW, SUBSET_FRESH };

static const char *const scales[] = {"none", "minmax", "zscore", NULL};
static const char *const fitnesses[] = {"accuracy", "xent", NULL};
static const char *const subsets[] = {"window", "fresh", NULL};
/* In the order of enum data_header. */
static const char *const headers[] = {"auto", "yes", "no", NULL};
/* In the order of enum nn_optimizer. */
static const char *const optimizers[] = {"sgd", "momentum", "adam", NULL};

static const struct task_key classify_keys[N_KEYS] = {
    [K_TRAIN] = {"train", TASK_KEY_STRING, 0, 0, 0,
                 "the training data: a CSV file (label 0..K-1 in the last column), an IDX "
                 "images file (gzipped or not; with train_labels) or fashion-mnist:train",
                 NULL, NULL},
    [K_TRAIN_LABELS] = {"train_labels", TASK_KEY_STRING, 0, 0, 0,
                        "the IDX labels file of an IDX train (empty for CSV)", NULL, NULL},
    [K_TEST] = {"test", TASK_KEY_STRING, 0, 0, 0,
                "the test data (as train; empty: none), or a share of train in (0, 1) set "
                "aside, disjoint from validation; scored once on the final champion, never "
                "used for selection",
                NULL, NULL},
    [K_TEST_LABELS] = {"test_labels", TASK_KEY_STRING, 0, 0, 0,
                       "the IDX labels file of an IDX test", NULL, NULL},
    [K_VALIDATION] = {"validation", TASK_KEY_DOUBLE, 0.1, 0, 0.9,
                      "share of train held out: the champion test of every generation (0: the "
                      "champion test scores the whole training split)",
                      NULL, NULL},
    [K_SCALE] = {"scale", TASK_KEY_CHOICE, SCALE_NONE, 0, 0,
                 "none, minmax or zscore, statistics from the training split only", scales, NULL},
    [K_SAMPLES] = {"samples", TASK_KEY_INT, 100, 1, 1e9,
                   "rows scored per evaluation, the same for every child of a generation: "
                   "training rows, or validation rows when train_steps > 0",
                   NULL, NULL},
    [K_FITNESS] = {"fitness", TASK_KEY_CHOICE, FIT_ACCURACY, 0, 0,
                   "accuracy, or xent (minus the mean cross-entropy of a softmax)", fitnesses,
                   NULL},
    [K_SEED] = {"seed", TASK_KEY_INT, 1, 0, 9007199254740992.0,
                "seed of the validation split and of the samples' order", NULL, NULL},
    [K_TRAIN_STEPS] = {"train_steps", TASK_KEY_INT, 0, 0, 1e9,
                       "optimizer steps each child is trained for before it is scored on "
                       "`samples` rows of the validation split (0: no training)",
                       NULL, NULL},
    [K_TRAIN_BATCH] = {"train_batch", TASK_KEY_INT, 128, 1, 65536,
                       "training rows per optimizer step", NULL, NULL},
    [K_OPTIMIZER] = {"optimizer", TASK_KEY_CHOICE, NN_OPT_SGD, 0, 0,
                     "sgd, momentum (0.9) or adam (0.9, 0.999, 1e-8), as trevo net train",
                     optimizers, NULL},
    [K_LR] = {"lr", TASK_KEY_DOUBLE, 0.01, 0, 10, "the training's learning rate", NULL, NULL},
    [K_SPARSITY] = {"sparsity", TASK_KEY_STRING, 0, 0, 0,
                    "sparsity policies while training, as trevo net train --sparsify takes "
                    "them, separated by spaces (set:0.1,0 l1:1e-5)",
                    NULL, NULL},
    [K_LAMARCKIAN] = {"lamarckian", TASK_KEY_BOOL, 1, 0, 1,
                      "1: the trained network replaces the child's genome; 0 (Baldwinian): "
                      "only its fitness is the trained network's",
                      NULL, NULL},
    [K_CONN_COST] = {"conn_cost", TASK_KEY_DOUBLE, 0, 0, 1,
                     "fitness minus this much per connection of the network scored", NULL, NULL},
    [K_HEADER] = {"header", TASK_KEY_CHOICE, DATA_HEADER_AUTO, 0, 0,
                  "a CSV file's first line: auto (a header when one of its cells is not a "
                  "number), yes (always a header) or no (always data)",
                  headers, NULL},
    [K_CLASSES] = {"classes", TASK_KEY_INT, 0, 0, 65536,
                   "the number of classes (0: the training file's largest label + 1); a label "
                   "of train or test past them is refused",
                   NULL, NULL},
    [K_HOLDOUT] = {"holdout", TASK_KEY_DOUBLE, 0, 0, 0.9,
                   "share of train held out from training and selection alike: the champion "
                   "test of every generation scores it instead of the validation split (0: none)",
                   NULL, NULL},
    [K_SUBSET] = {"subset", TASK_KEY_CHOICE, SUBSET_WINDOW, 0, 0,
                  "the `samples` rows of a generation: window (the next rows of the split's "
                  "order) or fresh (drawn anew from the split for each generation, from seed "
                  "and generation)",
                  subsets, NULL},
};

struct classify {
    struct data_set train, test;
    uint32_t *order; /* [train.n_rows]: the permutation; [0, n_train) trains */
    size_t n_train;  /* the next n_hold are the hold-out (none by default) */
    size_t n_hold;   /* the next n_val validate */
    size_t n_val;    /* the last n_test test (a share of train as the test set) */
    size_t n_test;
    int subset;       /* SUBSET_*: the rows a generation scores */
    uint64_t seed;    /* [task] seed: the split, and the fresh subsets */
    float *shift;     /* [n_features]: x' = (x - shift) * mul */
    float *mul;       /* [n_features] */
    int scale;        /* SCALE_*: not none: evaluate_genome sets shift and mul on the genome */
    size_t n_samples; /* per evaluation, at most n_train */
    int fitness;
    size_t n_val_samples; /* per evaluation of a trained child, at most the validation rows */
    double conn_cost;
    /* training inside evaluation (train_steps > 0) */
    size_t train_steps, train_batch;
    int lamarckian;
    struct nn_train_opts topts;
    struct nn_sparsity policies[CLASSIFY_MAX_POLICIES];
    size_t n_policies;
};

static int classify_fail(struct classify *c, int rc)
{
    if (c) {
        data_free(&c->train);
        data_free(&c->test);
        TV_FREE_ALL(c->order, c->shift, c->mul, c);
    }
    return rc;
}

static void classify_close(struct task_instance *t)
{
    classify_fail(t->data, 0);
    t->data = NULL;
}

/* Row r of d, divided by 255 if pixels, then scaled unless raw (for a plan
 * that scales its inputs itself). */
static void scaled_row(const struct classify *c, const struct data_set *d, size_t r, int raw,
                       float *x)
{
    data_row(d, r, x);
    for (size_t j = 0; j < d->n_features && !raw; j++)
        x[j] = (x[j] - c->shift[j]) * c->mul[j];
}

/* The scale's statistics over the training split (rows order[0, n_train)):
 * shift and mul so that (x - shift) * mul is the scaled value. */
static int fit_scale(struct classify *c, int scale, struct tv_error *err)
{
    size_t nf = c->train.n_features;
    for (size_t j = 0; j < nf; j++) {
        c->shift[j] = 0;
        c->mul[j] = 1;
    }
    if (scale == SCALE_NONE)
        return 0;
    return fit_scale_stats(&c->train, c->order, c->n_train, scale == SCALE_ZSCORE, c->shift, c->mul,
                           err);
}

/* Loads the key's file (and its labels key's) into d, with n_classes known
 * (0: from the data), which `why` names when a label is past them. */
static int load(const struct task_instance *t, int key, size_t n_classes, const char *why,
                struct data_set *d, struct tv_error *err)
{
    const char *labels = t->params.v[key + 1].s;
    struct data_opts o = {
        .n_classes = n_classes, .classes_from = why, .header = (int)t->params.v[K_HEADER].i};
    int rc = data_load_opts(t->params.v[key].s, *labels ? labels : NULL, &o, d, err);
    return rc ? tv_error_prefix(err, "[task] %s", classify_keys[key].name) : 0;
}

/* [task] test as a share of train: 1 and *share when it is a number (then
 * in (0, 1), and no test_labels), 0 for a file name (or none), or the error
 * code. */
static int test_share(const union task_value *v, double *share, struct tv_error *err)
{
    char *end;
    *share = strtod(v[K_TEST].s, &end);
    if (!v[K_TEST].s[0] || *end)
        return 0;
    if (!(*share > 0 && *share < 1))
        return tv_error_set(err, TV_EINVAL,
                            "[task] test: %s: a share of train is in (0, 1) (a file named so: "
                            "./%s)",
                            v[K_TEST].s, v[K_TEST].s);
    if (v[K_TEST_LABELS].s[0])
        return tv_error_set(err, TV_EINVAL,
                            "[task] test_labels: goes with a test file, and test is a share "
                            "(%s) of train",
                            v[K_TEST].s);
    return 1;
}

/* The training file and the test set: a file, loaded with train's classes,
 * or a share of train (*share > 0, its rows counted by the split). */
static int load_sets(struct task_instance *t, struct classify *c, double *share,
                     struct tv_error *err)
{
    const union task_value *v = t->params.v;
    char why[64];
    size_t declared = (size_t)v[K_CLASSES].i;
    snprintf(why, sizeof why, "[task] classes = %zu", declared);
    int rc = load(t, K_TRAIN, declared, declared ? why : NULL, &c->train, err);
    if (rc)
        return rc;
    if (c->train.n_classes < 2)
        return declared
                   ? tv_error_set(err, TV_EINVAL, "[task] classes: 1 (classify needs 2 or more)")
                   : tv_error_set(err, TV_EINVAL,
                                  "[task] train: %s: every label is 0 (one class; classify "
                                  "needs 2 or more)",
                                  v[K_TRAIN].s);
    int is_share = test_share(v, share, err);
    if (is_share < 0)
        return is_share;
    if (!is_share)
        *share = 0;
    if (is_share || !v[K_TEST].s[0])
        return 0;
    if (!declared)
        snprintf(why, sizeof why, "the classes of [task] train");
    if ((rc = load(t, K_TEST, c->train.n_classes, why, &c->test, err)))
        return rc;
    if (c->test.n_features != c->train.n_features)
        return tv_error_set(err, TV_EINVAL, "[task] test: %s has %zu features, train %s %zu",
                            v[K_TEST].s, c->test.n_features, v[K_TRAIN].s, c->train.n_features);
    return 0;
}

/* The policies of [task] sparsity, separated by spaces, into c. */
static int parse_policies(struct classify *c, const char *text, struct tv_error *err)
{
    char spec[TASK_STRING_MAX];
    for (const char *p = text; *p;) {
        size_t n = strcspn(p, " \t");
        if (n && c->n_policies == CLASSIFY_MAX_POLICIES)
            return tv_error_set(err, TV_EINVAL, "[task] sparsity: more than %d policies",
                                CLASSIFY_MAX_POLICIES);
        if (n) {
            memcpy(spec, p, n);
            spec[n] = 0;
            if (nn_sparsity_parse(spec, &c->policies[c->n_policies++], err))
                return tv_error_prefix(err, "[task] sparsity");
        }
        p += n + strspn(p + n, " \t");
    }
    /* what only the sparsifier checks (lock or neuron twice) */
    struct nn_sparsifier *sp;
    int rc = nn_sparsifier_new(c->policies, c->n_policies, 1, &sp, err);
    nn_sparsifier_free(sp);
    return rc ? tv_error_prefix(err, "[task] sparsity") : 0;
}

/* The keys of training inside evaluation and of the connection cost. */
static int open_training(struct classify *c, const union task_value *v, size_t n_val,
                         struct tv_error *err)
{
    c->conn_cost = v[K_CONN_COST].d;
    c->train_steps = (size_t)v[K_TRAIN_STEPS].i;
    c->train_batch = (size_t)v[K_TRAIN_BATCH].i;
    c->lamarckian = (int)v[K_LAMARCKIAN].i;
    c->n_val_samples = (size_t)v[K_SAMPLES].i < n_val ? (size_t)v[K_SAMPLES].i : n_val;
    nn_train_opts_default(&c->topts);
    c->topts.optimizer = (int)v[K_OPTIMIZER].i;
    c->topts.loss = NN_LOSS_XENT;
    c->topts.lr = (float)v[K_LR].d;
    c->topts.max_batch = c->train_batch;
    if (c->train_steps && !n_val)
        return tv_error_set(err, TV_EINVAL,
                            "[task] train_steps: a trained child is scored on the validation "
                            "split, and [task] validation leaves none");
    return parse_policies(c, v[K_SPARSITY].s, err);
}

/* The split of the training file's n rows (classify.c's header) into c's
 * counts: validation, the test share (share > 0) and the hold-out, each
 * rounded, the rest to train on. */
static int split_counts(struct classify *c, const union task_value *v, double share, size_t n,
                        struct tv_error *err)
{
    size_t n_val = (size_t)(v[K_VALIDATION].d * (double)n + 0.5);
    size_t n_test = (size_t)(share * (double)n + 0.5);
    size_t n_hold = (size_t)(v[K_HOLDOUT].d * (double)n + 0.5);
    if (share > 0 && !n_test)
        return tv_error_set(err, TV_EINVAL, "[task] test: %g of %zu rows is none", share, n);
    if (v[K_HOLDOUT].d > 0 && !n_hold)
        return tv_error_set(err, TV_EINVAL, "[task] holdout: %g of %zu rows is none",
                            v[K_HOLDOUT].d, n);
    if (n_val + n_test + n_hold >= n && n_hold)
        return tv_error_set(err, TV_EINVAL,
                            "[task] holdout: %g with validation %g and test %g of %zu rows leaves "
                            "none to train on",
                            v[K_HOLDOUT].d, v[K_VALIDATION].d, share, n);
    if (n_val + n_test >= n)
        return n_test ? tv_error_set(err, TV_EINVAL,
                                     "[task] test: %g and validation %g of %zu rows leave none "
                                     "to train on",
                                     share, v[K_VALIDATION].d, n)
                      : tv_error_set(err, TV_EINVAL,
                                     "[task] validation: %g of %zu rows leaves none to "
                                     "train on",
                                     v[K_VALIDATION].d, n);
    c->n_train = n - n_val - n_test - n_hold;
    c->n_hold = n_hold;
    c->n_val = n_val;
    c->n_test = n_test;
    return 0;
}

static int classify_open(struct task_instance *t, struct tv_error *err)
{
    const union task_value *v = t->params.v;
    if (!v[K_TRAIN].s[0])
        return tv_error_set(err, TV_EINVAL,
                            "[task] train: required (a CSV file, an IDX images file with "
                            "train_labels, or fashion-mnist:train)");
    struct classify *c = calloc(1, sizeof *c);
    if (!c)
        return tv_error_set(err, TV_ENOMEM, "out of memory");
    double share;
    int rc = load_sets(t, c, &share, err);
    size_t n = c->train.n_rows, nf = c->train.n_features;
    if (!rc)
        rc = split_counts(c, v, share, n, err);
    if (rc)
        return classify_fail(c, rc);
    c->order = malloc(n * sizeof *c->order);
    c->shift = malloc(nf * sizeof *c->shift);
    c->mul = malloc(nf * sizeof *c->mul);
    if (!c->order || !c->shift || !c->mul)
        return classify_fail(c, tv_error_set(err, TV_ENOMEM, "out of memory"));
    /* Fisher-Yates from the task's seed: the same split on every rank */
    struct tv_rng rng;
    c->seed = (uint64_t)v[K_SEED].i;
    tv_rng_init(&rng, c->seed, CLASSIFY_STREAM_SPLIT, 0);
    for (size_t i = 0; i < n; i++)
        c->order[i] = (uint32_t)i;
    tv_rng_shuffle_u32(&rng, c->order, n);
    c->scale = (int)v[K_SCALE].i;
    rc = fit_scale(c, c->scale, err);
    if (rc)
        return classify_fail(c, rc);
    c->n_samples = (size_t)v[K_SAMPLES].i < c->n_train ? (size_t)v[K_SAMPLES].i : c->n_train;
    c->fitness = (int)v[K_FITNESS].i;
    c->subset = (int)v[K_SUBSET].i;
    if ((rc = open_training(c, v, c->n_val, err)))
        return classify_fail(c, rc);
    t->data = c;
    t->trains_channels = c->train_steps > 0;
    return task_open_shape(t, nf, c->train.n_classes, GENOME_ACT_IDENTITY,
                           c->fitness == FIT_ACCURACY ? 1.0 : 0.0);
}

/* The validation split's rows (after the training split and the hold-out). */
static const uint32_t *val_rows(const struct classify *c)
{
    return c->order + c->n_train + c->n_hold;
}

/* What a set of rows scores: the share right and the mean capped
 * cross-entropy. */
struct score {
    double accuracy, xent;
};

/* One sample's outputs y[0..k) against its label: adds to *right (its
 * nn_argmax is the label) and *ce (its nn_softmax_xent, capped at
 * CLASSIFY_XENT_CAP; a NaN loss scores the cap). */
static void score_one(const float *y, size_t k, size_t label, size_t *right, double *ce)
{
    *right += nn_argmax(y, k, 1) == label;
    double loss = nn_softmax_xent(y, k, 1, label, NULL, 0, 0.0);
    *ce += loss < CLASSIFY_XENT_CAP ? loss : CLASSIFY_XENT_CAP;
}

/* Scores plan on count rows of d: row order[(start + i) % n_order] (order
 * NULL: row (start + i) % n_order). */
static int score_rows(const struct classify *c, const struct data_set *d, const uint32_t *order,
                      size_t n_order, size_t start, size_t count, const struct nn_plan *plan,
                      struct score *out, struct tv_error *err)
{
    size_t nf = d->n_features, k = d->n_classes;
    size_t batch = count < CLASSIFY_BATCH ? count : CLASSIFY_BATCH;
    struct nn_state *s;
    int rc = nn_state_new(plan, batch, &s, err);
    if (rc)
        return rc;
    float *in = malloc(batch * nf * sizeof *in), *y = malloc(batch * k * sizeof *y);
    if (!in || !y) {
        free(in);
        free(y);
        nn_state_free(s);
        return tv_error_set(err, TV_ENOMEM, "out of memory");
    }
    size_t right = 0;
    double ce = 0;
    int raw = nn_plan_scales(plan);
    for (size_t done = 0; done < count;) {
        size_t m = count - done < batch ? count - done : batch;
        size_t rows[CLASSIFY_BATCH];
        for (size_t b = 0; b < batch; b++) { /* a short last batch repeats its last row */
            size_t i = (start + done + (b < m ? b : m - 1)) % n_order;
            rows[b] = order ? order[i] : i;
            scaled_row(c, d, rows[b], raw, in + b * nf);
        }
        nn_state_reset(s);
        nn_step(s, in, y);
        for (size_t b = 0; b < m; b++)
            score_one(y + b * k, k, d->labels[rows[b]], &right, &ce);
        done += m;
    }
    free(in);
    free(y);
    nn_state_free(s);
    out->accuracy = (double)right / (double)count;
    out->xent = ce / (double)count;
    return 0;
}

static void put_score(struct task_result *out, const struct score *sc, double fitness)
{
    out->fitness = fitness;
    task_result_figure(out, "accuracy", sc->accuracy);
    task_result_figure(out, "xent", sc->xent);
}

/* Scores plan on `count` rows drawn without repeats from the n_order rows
 * of order for generation g (tv_rng_sample_u32 on (seed,
 * CLASSIFY_STREAM_FRESH, g)). */
static int score_fresh(const struct classify *c, const uint32_t *order, size_t n_order,
                       size_t count, uint64_t g, const struct nn_plan *plan, struct score *sc,
                       struct tv_error *err)
{
    uint32_t *rows = malloc(count * sizeof *rows);
    struct tv_rng rng;
    tv_rng_init(&rng, c->seed, CLASSIFY_STREAM_FRESH, g);
    if (!rows || tv_rng_sample_u32(&rng, (uint32_t)n_order, count, rows)) {
        free(rows);
        return tv_error_set(err, TV_ENOMEM, "out of memory");
    }
    for (size_t i = 0; i < count; i++)
        rows[i] = order[rows[i]];
    int rc = score_rows(c, &c->train, rows, count, 0, count, plan, sc, err);
    free(rows);
    return rc;
}

/* Scores plan on the `count` rows of generation `generation` among the
 * n_order rows of order: positions g * count, g * count + 1, ... (wrapping),
 * or with subset fresh (count below n_order) score_fresh's. */
static int score_generation(const struct classify *c, const uint32_t *order, size_t n_order,
                            size_t count, int64_t generation, const struct nn_plan *plan,
                            struct score *sc, struct tv_error *err)
{
    uint64_t g = generation > 0 ? (uint64_t)generation : 0;
    if (c->subset == SUBSET_FRESH && count < n_order)
        return score_fresh(c, order, n_order, count, g, plan, sc, err);
    size_t start = (size_t)((g % n_order) * (count % n_order) % n_order);
    return score_rows(c, &c->train, order, n_order, start, count, plan, sc, err);
}

/* The fitness of a score (before the connection cost). */
static double score_fitness(const struct classify *c, const struct score *sc)
{
    return c->fitness == FIT_ACCURACY ? sc->accuracy : -sc->xent;
}

static int classify_evaluate(const struct task_instance *t, const struct nn_plan *plan,
                             int64_t generation, struct tv_rng *rng, struct task_result *out,
                             struct tv_error *err)
{
    (void)rng;
    const struct classify *c = t->data;
    struct score sc;
    int rc = score_generation(c, c->order, c->n_train, c->n_samples, generation, plan, &sc, err);
    if (!rc)
        put_score(out, &sc, score_fitness(c, &sc));
    return rc;
}

/* 1 if every weight and bias of g is finite. */
static int genome_finite(const struct genome *g)
{
    for (size_t i = 0; i < g->n_neurons; i++)
        if (!isfinite(g->neurons[i].bias))
            return 0;
    for (size_t i = 0; i < g->n_conns; i++)
        if (!isfinite(g->conns[i].weight))
            return 0;
    return 1;
}

/* A trainer's refusal of the genome itself (TV_EINVAL: a form it does not
 * take; TV_ELIMIT: more channel depths than it has): TV_EGENOME, a child a
 * search scores failed. Other codes (memory) as they are. */
static int refused(int rc, struct tv_error *err)
{
    if (rc != TV_EINVAL && rc != TV_ELIMIT)
        return rc;
    if (err)
        err->code = TV_EGENOME;
    return TV_EGENOME;
}

/* A genome with channels: trained as a CNN (nn/conv/cnn.h, fit_cnn_run). */
static int train_cnn(const struct genome *g, const struct nn_train_opts *topts,
                     const struct data_set *train, const struct fit_opts *o, struct genome *out,
                     struct tv_error *err)
{
    struct nn_cnn *cnn;
    int rc = nn_cnn_from_genome(g, topts, &cnn, err);
    if (rc)
        return refused(rc, err);
    rc = fit_cnn_run(cnn, train, NULL, o, NULL, NULL, err);
    if (!rc)
        rc = nn_cnn_write_genome(cnn, out, err);
    nn_cnn_free(cnn);
    return rc;
}

/* The training a genome's hyper-parameter genes (genome.h) ask for: the
 * learning rate times lr_scale (in double, rounded to float), the steps
 * times steps_scale (rounded, at least 1), the fraction of each set and
 * rigl policy times regrow_scale (held below 1). Scales of 1 change nothing. */
static void apply_hyper(const struct genome *g, struct nn_train_opts *topts, size_t *steps,
                        struct nn_sparsity *policies, size_t n_policies)
{
    if (!g->has_hyper)
        return;
    topts->lr = (float)((double)topts->lr * g->hyper[GENOME_HYPER_LR]);
    double s = round((double)*steps * g->hyper[GENOME_HYPER_STEPS]);
    *steps = s < 1 ? 1 : (size_t)s;
    for (size_t i = 0; i < n_policies; i++)
        if (policies[i].kind == NN_SPARSE_SET || policies[i].kind == NN_SPARSE_RIGL) {
            double f = policies[i].a * g->hyper[GENOME_HYPER_REGROW];
            policies[i].a = f < 1 ? f : nextafter(1.0, 0.0);
        }
}

/* Trains a copy of g (classify.c's header) into *out, seeded by seed, with
 * the training its hyper-parameter genes ask for. */
static int train_child(const struct classify *c, const struct genome *g, uint64_t seed,
                       struct genome *out, struct tv_error *err)
{
    struct nn_train_opts topts = c->topts;
    struct nn_sparsity policies[CLASSIFY_MAX_POLICIES];
    size_t steps = c->train_steps;
    if (c->n_policies)
        memcpy(policies, c->policies, c->n_policies * sizeof *policies);
    apply_hyper(g, &topts, &steps, policies, c->n_policies);
    struct fit_opts o;
    fit_opts_default(&o);
    size_t per_pass = (c->n_train + c->train_batch - 1) / c->train_batch;
    o.epochs = (steps + per_pass - 1) / per_pass;
    o.batch = c->train_batch;
    o.seed = seed;
    o.policies = policies;
    o.n_policies = c->n_policies;
    o.max_steps = steps;
    o.rows = c->order;
    o.n_rows = c->n_train;
    o.shift = c->shift;
    o.mul = c->mul;
    if (g->n_channels)
        return train_cnn(g, &topts, &c->train, &o, out, err);
    struct nn_trainer *tr;
    int rc = nn_trainer_new(g, &topts, &tr, err);
    if (rc)
        return refused(rc, err);
    rc = fit_run(tr, &c->train, NULL, &o, NULL, NULL, err);
    if (!rc)
        rc = nn_trainer_write_genome(tr, out, err);
    nn_trainer_free(tr);
    return rc;
}

/* The evaluation of a child (task.h: evaluate_genome): trained first when
 * train_steps > 0, then scored, the connection cost taken off. */
static int classify_evaluate_genome(const struct task_instance *t, struct genome *g,
                                    int64_t generation, struct tv_rng *rng, struct task_result *out,
                                    struct tv_error *err)
{
    const struct classify *c = t->data;
    struct genome trained;
    genome_init(&trained);
    int diverged = 0, rc = 0;
    const struct genome *scored = g;
    size_t nf = c->train.n_features;
    if (c->scale != SCALE_NONE && (rc = genome_set_scale(g, c->shift, c->mul, nf, err)))
        return rc;
    if (c->train_steps) {
        rc = train_child(c, g, tv_rng_u64(rng), &trained, err);
        if (!rc && c->scale != SCALE_NONE)
            rc = genome_set_scale(&trained, c->shift, c->mul, nf, err);
        if (!rc) /* the trained child keeps its genes */
            genome_set_hyper(&trained, g->has_hyper ? g->hyper : NULL);
        if (rc) {
            genome_release(&trained);
            return tv_error_prefix(err, "training");
        }
        diverged = !genome_finite(&trained);
        if (!diverged && c->lamarckian) { /* the trained network becomes the child */
            struct genome bred = *g;
            *g = trained;
            trained = bred;
        } else if (!diverged) {
            scored = &trained;
        }
    }
    struct score sc = {0, CLASSIFY_XENT_CAP};
    struct nn_plan *plan = NULL;
    if (!diverged)
        rc = nn_plan_compile(scored, NULL, &plan, err);
    if (!rc && !diverged)
        rc = c->train_steps ? score_generation(c, val_rows(c), c->n_val, c->n_val_samples,
                                               generation, plan, &sc, err)
                            : score_generation(c, c->order, c->n_train, c->n_samples, generation,
                                               plan, &sc, err);
    nn_plan_free(plan);
    if (!rc) {
        double fitness = score_fitness(c, &sc);
        if (c->conn_cost != 0)
            fitness -= c->conn_cost * (double)scored->n_conns;
        put_score(out, &sc, fitness);
        if (c->train_steps || c->conn_cost != 0)
            task_result_figure(out, "connections", (double)scored->n_conns);
        if (diverged)
            task_result_figure(out, "diverged", 1);
    }
    genome_release(&trained);
    return rc;
}

/* The hold-out when there is one, else the validation split (else the
 * whole training split). */
static int classify_champion_test(const struct task_instance *t, const struct nn_plan *plan,
                                  struct task_result *out, struct tv_error *err)
{
    const struct classify *c = t->data;
    size_t n_val = c->n_val, n_hold = c->n_hold;
    struct score sc;
    int rc =
        n_hold  ? score_rows(c, &c->train, c->order + c->n_train, n_hold, 0, n_hold, plan, &sc, err)
        : n_val ? score_rows(c, &c->train, val_rows(c), n_val, 0, n_val, plan, &sc, err)
                : score_rows(c, &c->train, c->order, c->n_train, 0, c->n_train, plan, &sc, err);
    if (!rc)
        put_score(out, &sc, sc.accuracy);
    return rc;
}

/* The test set's accuracy (the test file, or the test share of train); no
 * figures when there is none. */
static int classify_final_test(const struct task_instance *t, const struct nn_plan *plan,
                               struct task_result *out, struct tv_error *err)
{
    const struct classify *c = t->data;
    if (!c->test.n_rows && !c->n_test)
        return 0;
    struct score sc;
    int rc = c->n_test
                 ? score_rows(c, &c->train, val_rows(c) + c->n_val, c->n_test, 0, c->n_test, plan,
                              &sc, err)
                 : score_rows(c, &c->test, NULL, c->test.n_rows, 0, c->test.n_rows, plan, &sc, err);
    if (!rc)
        put_score(out, &sc, sc.accuracy);
    return rc;
}

const struct task_kind task_classify = {
    .abi_version = TASK_ABI_VERSION,
    .name = "classify",
    .summary = "classification of a data set ([task] train, ...): an input per feature, an "
               "identity output per class, fitness accuracy or xent on `samples` rows",
    .keys = classify_keys,
    .n_keys = N_KEYS,
    .open = classify_open,
    .champion_test = classify_champion_test,
    .close = classify_close,
    .evaluate_generation = classify_evaluate,
    .final_test = classify_final_test,
    .evaluate_genome = classify_evaluate_genome,
};
