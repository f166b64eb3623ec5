/* fit.c -- the training loop (fit.h). */
#include "fit.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

void fit_opts_default(struct fit_opts *o)
{
    *o = (struct fit_opts){.epochs = 1, .batch = 128, .seed = 1, .shuffle = 1};
}

int fit_check_data(const struct data_set *d, size_t n_inputs, size_t n_outputs,
                   struct tv_error *err)
{
    if (d->n_rows == 0)
        return tv_error_set(err, TV_EINVAL, "the data set has no rows");
    if (d->n_features != n_inputs)
        return tv_error_set(err, TV_EINVAL,
                            "the data set has %zu features per row, the network %zu inputs",
                            d->n_features, n_inputs);
    if (d->n_classes > n_outputs)
        return tv_error_set(err, TV_EINVAL,
                            "the data set has %zu classes, the network only %zu outputs",
                            d->n_classes, n_outputs);
    return 0;
}

/* Rows rows[0..n) of d into x [n][n_features] and labels [n]. */
static void gather_rows(const struct data_set *d, const size_t *rows, size_t n, float *x,
                        uint32_t *labels)
{
    for (size_t s = 0; s < n; s++) {
        data_row(d, rows[s], x + s * d->n_features);
        labels[s] = d->labels[rows[s]];
    }
}

/* Buffers of one batch: x [batch][n_features], labels, the row numbers. */
struct batch_buf {
    float *x;
    uint32_t *labels;
    size_t *rows;
};

static int batch_buf_new(struct batch_buf *b, size_t batch, size_t n_features, struct tv_error *err)
{
    b->x = malloc(batch * n_features * sizeof *b->x);
    b->labels = malloc(batch * sizeof *b->labels);
    b->rows = malloc(batch * sizeof *b->rows);
    if (!b->x || !b->labels || !b->rows)
        return tv_error_set(err, TV_ENOMEM, "fit: out of memory for a batch of %zu rows", batch);
    return 0;
}

static void batch_buf_free(struct batch_buf *b)
{
    free(b->x);
    free(b->labels);
    free(b->rows);
}

/* fit_evaluate with feature j scaled to (x_j - shift[j]) * mul[j] (shift
 * NULL: as it is). */
static int evaluate_scaled(struct nn_trainer *t, const struct data_set *d, size_t batch,
                           const float *shift, const float *mul, double *loss, double *acc,
                           struct tv_error *err)
{
    size_t n_out = nn_trainer_n_outputs(t);
    int rc = fit_check_data(d, nn_trainer_n_inputs(t), n_out, err);
    if (rc)
        return rc;
    if (batch == 0)
        return tv_error_set(err, TV_EINVAL, "fit: a batch of 0 rows");
    struct batch_buf b;
    float *out = malloc(batch * n_out * sizeof *out);
    rc = batch_buf_new(&b, batch, d->n_features, err);
    if (!rc && !out)
        rc = tv_error_set(err, TV_ENOMEM, "fit: out of memory for the outputs of %zu rows", batch);
    double sum = 0;
    size_t correct = 0;
    for (size_t r0 = 0; r0 < d->n_rows && !rc; r0 += batch) {
        size_t n = d->n_rows - r0 < batch ? d->n_rows - r0 : batch;
        for (size_t s = 0; s < n; s++)
            b.rows[s] = r0 + s;
        gather_rows(d, b.rows, n, b.x, b.labels);
        for (size_t k = 0; shift && k < n * d->n_features; k++)
            b.x[k] = (b.x[k] - shift[k % d->n_features]) * mul[k % d->n_features];
        rc = nn_trainer_predict(t, b.x, 1, n, out, err);
        for (size_t s = 0; s < n && !rc; s++) {
            const float *z = out + s * n_out;
            sum += nn_softmax_xent(z, n_out, 1, b.labels[s], NULL, 0, 0.0);
            correct += nn_argmax(z, n_out, 1) == b.labels[s];
        }
    }
    batch_buf_free(&b);
    free(out);
    if (!rc) {
        *loss = sum / (double)d->n_rows;
        *acc = (double)correct / (double)d->n_rows;
    }
    return rc;
}

int fit_evaluate(struct nn_trainer *t, const struct data_set *d, size_t batch, double *loss,
                 double *acc, struct tv_error *err)
{
    return evaluate_scaled(t, d, batch, NULL, NULL, loss, acc, err);
}

int fit_scale_stats(const struct data_set *d, const uint32_t *rows, size_t n_rows, int zscore,
                    float *shift, float *mul, struct tv_error *err)
{
    size_t nf = d->n_features;
    /* minmax: a = min, b = max; zscore: a = sum, b = sum of squares */
    double *a = malloc(nf * sizeof *a), *b = malloc(nf * sizeof *b);
    float *x = malloc(nf * sizeof *x);
    if (!a || !b || !x) {
        TV_FREE_ALL(a, b, x);
        return tv_error_set(err, TV_ENOMEM, "out of memory");
    }
    for (size_t k = 0; k < n_rows; k++) {
        data_row(d, rows ? rows[k] : k, x);
        for (size_t j = 0; j < nf; j++) {
            double v = x[j];
            if (!zscore) {
                a[j] = k == 0 || v < a[j] ? v : a[j];
                b[j] = k == 0 || v > b[j] ? v : b[j];
            } else {
                a[j] = (k ? a[j] : 0) + v;
                b[j] = (k ? b[j] : 0) + v * v;
            }
        }
    }
    double n = (double)n_rows;
    for (size_t j = 0; j < nf; j++) {
        double sh = n_rows ? a[j] : 0, width = n_rows ? b[j] - a[j] : 0; /* minmax */
        if (zscore && n_rows) {
            sh = a[j] / n;
            double var = b[j] / n - sh * sh;
            width = var > 0 ? sqrt(var) : 0;
        }
        shift[j] = (float)sh;
        mul[j] = width > 0 ? (float)(1.0 / width) : 1.0f; /* constant: 0 once shifted */
    }
    TV_FREE_ALL(a, b, x);
    return 0;
}

/* The dense indices of the output neurons by ascending id, into idx [n_out]. */
static void output_index(const struct nn_train_view *v, uint32_t *idx, size_t n_out)
{
    size_t n = 0;
    for (size_t j = 0; j < v->n_neurons && n < n_out; j++) {
        if (v->kind[j] != GENOME_OUTPUT)
            continue;
        size_t k = n++;
        for (; k > 0 && v->id[idx[k - 1]] > v->id[j]; k--) /* insertion, usually none */
            idx[k] = idx[k - 1];
        idx[k] = (uint32_t)j;
    }
}

/* Counts the batch's samples whose outputs (the view's values of the last
 * step, before its update; each sample's gathered into row [n_out]) have
 * their argmax (nn_argmax) at the label. */
static size_t batch_correct(struct nn_trainer *t, const uint32_t *labels, size_t n, uint32_t *idx,
                            float *row, size_t n_out)
{
    struct nn_train_view v;
    nn_trainer_view(t, &v);
    output_index(&v, idx, n_out);
    size_t correct = 0;
    for (size_t s = 0; s < n; s++) {
        for (size_t k = 0; k < n_out; k++)
            row[k] = v.value[(size_t)idx[k] * v.batch + s];
        correct += nn_argmax(row, n_out, 1) == labels[s];
    }
    return correct;
}

void fit_order(uint32_t *perm, size_t n, uint64_t seed, int shuffle, size_t epoch)
{
    for (size_t i = 0; i < n; i++)
        perm[i] = (uint32_t)i;
    if (!shuffle || n < 2)
        return;
    struct tv_rng rng;
    tv_rng_init(&rng, seed, FIT_SHUFFLE, epoch);
    tv_rng_shuffle_u32(&rng, perm, n);
}

struct fit_run {
    struct nn_trainer *t;
    const struct data_set *train, *test;
    const struct fit_opts *o;
    fit_report_fn report;
    void *ctx;
    struct nn_sparsifier *sp;
    struct batch_buf b;
    uint32_t *perm;
    uint32_t *out_idx;
    float *out_row; /* [n_out] one sample's outputs (batch_correct) */
    size_t n_out;
    size_t n_rows;      /* samples of an epoch: o->n_rows with a view of rows */
    size_t steps_taken; /* in all epochs, against o->max_steps */
    size_t total_steps; /* of the run, for the schedule (fit.h) */
    float lr;           /* the trainer's rate at the start */
};

void fit_gather(const struct data_set *train, const struct fit_opts *o, const uint32_t *perm,
                size_t n, size_t *rows, float *x, uint32_t *labels)
{
    const size_t nf = train->n_features;
    for (size_t s = 0; s < n; s++)
        rows[s] = o->rows ? o->rows[perm[s]] : perm[s];
    gather_rows(train, rows, n, x, labels);
    if (!o->shift)
        return;
    for (size_t s = 0; s < n; s++)
        for (size_t j = 0; j < nf; j++)
            x[s * nf + j] = (x[s * nf + j] - o->shift[j]) * o->mul[j];
}

/* Samples perm[0..n) of the training view into the batch buffers. */
static void gather_train(struct fit_run *f, const uint32_t *perm, size_t n)
{
    fit_gather(f->train, f->o, perm, n, f->b.rows, f->b.x, f->b.labels);
}

/* 1 once the step budget is spent. */
static int budget_spent(const struct fit_run *f)
{
    return f->o->max_steps && f->steps_taken >= f->o->max_steps;
}

static int stop(struct fit_run *f, const struct fit_report *r, struct tv_error *err)
{
    if (f->report && f->report(f->ctx, r))
        return tv_error_set(err, TV_ESTOP, "fit: stopped by the caller in epoch %zu", r->epoch);
    return 0;
}

static int one_epoch(struct fit_run *f, size_t epoch, struct tv_error *err)
{
    const size_t n_rows = f->n_rows;
    const size_t batch = f->o->batch;
    struct fit_report r = {.epoch = epoch,
                           .epochs = f->o->epochs,
                           .n_steps = (n_rows + batch - 1) / batch,
                           .test_loss = NAN,
                           .test_acc = NAN};
    fit_order(f->perm, n_rows, f->o->seed, f->o->shuffle, epoch);
    double t0 = tv_now(), loss_sum = 0;
    size_t correct = 0;
    int rc = 0;
    for (size_t r0 = 0; r0 < n_rows && !rc && !budget_spent(f); r0 += batch) {
        size_t n = n_rows - r0 < batch ? n_rows - r0 : batch;
        gather_train(f, f->perm + r0, n);
        if (!f->report && r0 + n == n_rows && nn_sparsifier_needs_values(f->sp))
            nn_trainer_keep_values(f->t, 1);
        double loss;
        rc = nn_trainer_set_lr(
            f->t, nn_lr_at(f->lr, f->o->lr_schedule, f->steps_taken, f->total_steps), err);
        if (!rc)
            rc = nn_trainer_step(f->t, f->b.x, f->b.labels, NULL, 1, n, &loss, err);
        if (rc)
            break;
        f->steps_taken++;
        if (f->report)
            correct += batch_correct(f->t, f->b.labels, n, f->out_idx, f->out_row, f->n_out);
        loss_sum += loss * (double)n;
        rc = nn_sparsifier_step(f->sp, f->t, err);
        r.step++;
        r.rows += n;
        r.loss = loss_sum / (double)r.rows;
        r.train_acc = (double)correct / (double)r.rows;
        r.conns = nn_trainer_n_conns(f->t);
        r.seconds = tv_now() - t0;
        if (!rc && r.step < r.n_steps && !budget_spent(f))
            rc = stop(f, &r, err);
    }
    /* fit.h: not after the last epoch, which the step budget may end */
    if (!rc && epoch < f->o->epochs && !budget_spent(f))
        rc = nn_sparsifier_epoch(f->sp, f->t, err);
    nn_trainer_keep_values(f->t, f->report != NULL);
    r.seconds = tv_now() - t0;
    if (!rc && f->test)
        rc = evaluate_scaled(f->t, f->test, batch, f->o->scale_test ? f->o->shift : NULL, f->o->mul,
                             &r.test_loss, &r.test_acc, err);
    if (rc)
        return rc;
    r.done = 1;
    r.conns = nn_trainer_n_conns(f->t);
    nn_sparsifier_stats(f->sp, &r.sp);
    return stop(f, &r, err);
}

size_t fit_total_steps(const struct fit_opts *o, size_t n_rows)
{
    size_t total = o->epochs * ((n_rows + o->batch - 1) / o->batch);
    return o->max_steps && o->max_steps < total ? o->max_steps : total;
}

int fit_check_opts(const struct data_set *train, const struct data_set *test, size_t n_in,
                   size_t n_out, const struct fit_opts *o, struct tv_error *err)
{
    int rc = fit_check_data(train, n_in, n_out, err);
    if (rc)
        return tv_error_prefix(err, "training data");
    if (test && (rc = fit_check_data(test, n_in, n_out, err)))
        return tv_error_prefix(err, "test data");
    if (o->epochs == 0 || o->batch == 0)
        return tv_error_set(err, TV_EINVAL, "fit: %s must be at least 1",
                            o->epochs == 0 ? "epochs" : "batch");
    size_t n_rows = o->rows ? o->n_rows : train->n_rows;
    if (n_rows == 0)
        return tv_error_set(err, TV_EINVAL, "training data: the view of rows has no rows");
    if (n_rows > UINT32_MAX)
        return tv_error_set(err, TV_ELIMIT, "fit: %zu rows, more than %u", n_rows, UINT32_MAX);
    if (!o->shift != !o->mul)
        return tv_error_set(err, TV_EINVAL, "fit: a scale needs both shift and mul");
    if (o->lr_schedule != NN_LR_NONE && o->lr_schedule != NN_LR_COSINE)
        return tv_error_set(err, TV_EINVAL, "fit: unknown learning-rate schedule %d",
                            o->lr_schedule);
    for (size_t i = 0; o->rows && i < n_rows; i++)
        if (o->rows[i] >= train->n_rows)
            return tv_error_set(err, TV_EINVAL,
                                "training data: row %zu of the view is %u, past its %zu rows", i,
                                (unsigned)o->rows[i], train->n_rows);
    return 0;
}

int fit_run(struct nn_trainer *t, const struct data_set *train, const struct data_set *test,
            const struct fit_opts *o, fit_report_fn report, void *ctx, struct tv_error *err)
{
    size_t n_out = nn_trainer_n_outputs(t);
    int rc = fit_check_opts(train, test, nn_trainer_n_inputs(t), n_out, o, err);
    if (rc)
        return rc;
    size_t n_rows = o->rows ? o->n_rows : train->n_rows;
    struct fit_run f = {.t = t,
                        .train = train,
                        .test = test,
                        .o = o,
                        .report = report,
                        .ctx = ctx,
                        .n_out = n_out,
                        .n_rows = n_rows,
                        .lr = nn_trainer_lr(t)};
    f.total_steps = fit_total_steps(o, n_rows);
    rc = nn_sparsifier_new(o->policies, o->n_policies, o->seed, &f.sp, err);
    if (!rc)
        rc = batch_buf_new(&f.b, o->batch, train->n_features, err);
    f.perm = malloc(n_rows * sizeof *f.perm);
    f.out_idx = malloc(n_out * sizeof *f.out_idx);
    f.out_row = malloc(n_out * sizeof *f.out_row);
    if (!rc && (!f.perm || !f.out_idx || !f.out_row))
        rc = tv_error_set(err, TV_ENOMEM, "fit: out of memory for %zu rows", n_rows);
    /* The view's values cost about a tenth of a step: kept for the
     * training accuracy of the reports, else only for the last step of an
     * epoch when an epoch policy reads them (rigl). */
    nn_trainer_keep_values(t, report != NULL);
    for (size_t e = 1; e <= o->epochs && !rc && !budget_spent(&f); e++)
        rc = one_epoch(&f, e, err);
    nn_trainer_keep_values(t, 1);
    nn_trainer_set_lr(t, f.lr, NULL);
    nn_sparsifier_free(f.sp);
    batch_buf_free(&f.b);
    free(f.perm);
    free(f.out_idx);
    free(f.out_row);
    return rc;
}
