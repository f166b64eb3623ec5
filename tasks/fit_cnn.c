/* fit_cnn.c -- the training loop of a convolutional network (fit.h,
 * nn/conv/cnn.h): fit_run's batches, view, budget and schedule, the sparsity
 * policies on the head, and the regrowth of the coefficients. */
#include <math.h>
#include <stdlib.h>

#include "cnn.h"
#include "fit.h"

int fit_cnn_evaluate(struct nn_cnn *c, const struct data_set *d, size_t batch, double *acc,
                     struct tv_error *err)
{
    size_t n_in = nn_cnn_n_inputs(c), n_out = nn_cnn_n_outputs(c), right = 0;
    float *x = malloc(batch * n_in * sizeof *x), *out = malloc(batch * n_out * sizeof *out);
    int rc = x && out ? 0 : tv_error_set(err, TV_ENOMEM, "out of memory for the test pass");
    for (size_t r0 = 0; r0 < d->n_rows && !rc; r0 += batch) {
        size_t nb = d->n_rows - r0 < batch ? d->n_rows - r0 : batch;
        for (size_t b = 0; b < nb; b++)
            data_row(d, r0 + b, x + b * n_in);
        if (!(rc = nn_cnn_predict(c, x, nb, out, err)))
            for (size_t b = 0; b < nb; b++)
                right += nn_argmax(out + b * n_out, n_out, 1) == d->labels[r0 + b];
    }
    free(x);
    free(out);
    *acc = rc ? 0 : (double)right / (double)d->n_rows;
    return rc;
}

/* The coefficients' regrowth at the end of epoch e of E: each layer of n
 * coefficients loses the floor(f n) smallest and grows as many (rigl: the
 * largest gradients of the epoch's last batch; set: at random), f = F/2
 * (1 + cos(pi e / E)), RigL's cosine decay. */
static int regrow(struct nn_cnn *c, const struct nn_sparsity *p, size_t e, size_t epochs,
                  uint64_t seed, struct tv_error *err)
{
    double f = p->a * 0.5 * (1.0 + cos(M_PI * (double)e / (double)epochs));
    struct tv_rng rng;
    tv_rng_init(&rng, seed, 0x636e6e67726f77ULL, e);
    for (size_t l = 0; l < nn_cnn_n_layers(c); l++) {
        struct nn_cnn_layer_view v;
        int rc = nn_cnn_layer(c, l, &v, err);
        size_t k = (size_t)floor(f * (double)v.n_coefs);
        float sigma = 0;
        if (p->kind == NN_SPARSE_SET) {
            double ss = 0;
            for (size_t j = 0; j < v.n_coefs; j++)
                ss += (double)v.w[j] * v.w[j];
            sigma = p->b >= 0 ? (float)p->b : (float)sqrt(ss / (double)(v.n_coefs + !v.n_coefs));
        }
        if (rc || (rc = nn_cnn_prune(c, l, k, err)) ||
            (rc =
                 nn_cnn_grow(c, l, k, p->kind == NN_SPARSE_SET ? NN_CNN_GROW_SET : NN_CNN_GROW_RIGL,
                             sigma, &rng, NULL, err)))
            return rc;
    }
    return 0;
}

/* Buffers and state of one run. */
struct cnn_run {
    struct nn_cnn *c;
    const struct data_set *train;
    const struct fit_opts *o;
    const struct nn_sparsity *grow; /* the set or rigl policy, or NULL */
    struct nn_sparsifier *sp;       /* every policy, on the head */
    uint32_t *perm;
    size_t *rows;
    float *x;
    uint32_t *labels;
    size_t n, taken, total; /* samples of an epoch; steps taken, of */
    float lr;               /* the head's rate at the start */
};

static int spent(const struct cnn_run *r)
{
    return r->o->max_steps && r->taken >= r->o->max_steps;
}

/* Epoch e's steps; *loss_sum and *seen over its samples. */
static int cnn_epoch(struct cnn_run *r, size_t e, double *loss_sum, size_t *seen,
                     struct tv_error *err)
{
    const size_t batch = r->o->batch;
    struct nn_trainer *head = nn_cnn_head(r->c);
    int rc = 0;
    fit_order(r->perm, r->n, r->o->seed, r->o->shuffle, e);
    for (size_t r0 = 0; r0 < r->n && !rc && !spent(r); r0 += batch) {
        size_t nb = r->n - r0 < batch ? r->n - r0 : batch;
        fit_gather(r->train, r->o, r->perm + r0, nb, r->rows, r->x, r->labels);
        double loss = 0;
        rc = nn_trainer_set_lr(head, nn_lr_at(r->lr, r->o->lr_schedule, r->taken, r->total), err);
        if (!rc && !(rc = nn_cnn_step(r->c, r->x, r->labels, NULL, nb, &loss, err)))
            rc = nn_sparsifier_step(r->sp, head, err);
        r->taken++;
        *loss_sum += loss * (double)nb;
        *seen += nb;
    }
    /* fit.h: no policies after the last epoch, which the budget may end */
    int last = e == r->o->epochs || spent(r);
    if (!rc && !last && r->grow)
        rc = regrow(r->c, r->grow, e, r->o->epochs, r->o->seed, err);
    if (!rc && !last)
        rc = nn_sparsifier_epoch(r->sp, head, err);
    return rc;
}

int fit_cnn_run(struct nn_cnn *c, const struct data_set *train, const struct data_set *test,
                const struct fit_opts *o, fit_cnn_report_fn report, void *ctx, struct tv_error *err)
{
    int rc = fit_check_opts(train, test, nn_cnn_n_inputs(c), nn_cnn_n_outputs(c), o, err);
    if (rc)
        return rc;
    struct cnn_run r = {.c = c, .train = train, .o = o, .lr = nn_trainer_lr(nn_cnn_head(c))};
    r.n = o->rows ? o->n_rows : train->n_rows;
    r.total = fit_total_steps(o, r.n);
    for (size_t k = 0; k < o->n_policies; k++)
        if (o->policies[k].kind == NN_SPARSE_SET || o->policies[k].kind == NN_SPARSE_RIGL)
            r.grow = &o->policies[k];
    r.perm = malloc(r.n * sizeof *r.perm);
    r.rows = malloc(o->batch * sizeof *r.rows);
    r.x = malloc(o->batch * train->n_features * sizeof *r.x);
    r.labels = malloc(o->batch * sizeof *r.labels);
    if (!r.perm || !r.rows || !r.x || !r.labels)
        rc = tv_error_set(err, TV_ENOMEM, "fit: out of memory for %zu rows", r.n);
    if (!rc)
        rc = nn_sparsifier_new(o->policies, o->n_policies, o->seed, &r.sp, err);
    for (size_t e = 1; e <= o->epochs && !rc && !spent(&r); e++) {
        struct fit_cnn_report rep = {.epoch = e, .epochs = o->epochs, .test_acc = NAN};
        double t0 = tv_now(), loss_sum = 0;
        size_t seen = 0;
        rc = cnn_epoch(&r, e, &loss_sum, &seen, err);
        rep.seconds = tv_now() - t0;
        rep.loss = seen ? loss_sum / (double)seen : 0;
        if (!rc && test)
            rc = fit_cnn_evaluate(c, test, o->batch, &rep.test_acc, err);
        for (size_t l = 0; l < nn_cnn_n_layers(c) && !rc; l++) {
            struct nn_cnn_layer_view v;
            nn_cnn_layer(c, l, &v, NULL);
            rep.coefs += v.n_coefs;
        }
        rep.conns = nn_trainer_n_conns(nn_cnn_head(c));
        if (!rc && report && report(ctx, &rep))
            rc = tv_error_set(err, TV_ESTOP, "fit: stopped by the caller in epoch %zu", e);
    }
    nn_trainer_set_lr(nn_cnn_head(c), r.lr, NULL);
    nn_sparsifier_free(r.sp);
    free(r.perm);
    free(r.rows);
    free(r.x);
    free(r.labels);
    return rc;
}
