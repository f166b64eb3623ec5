/*
 * fit.h -- the training loop: epochs of mini-batches of a data set through a
 * trainer (nn/train/train.h), the sparsity policies (nn/train/sparsify.h) after each
 * step and each epoch, and the accuracy on a test set after each epoch.
 * What `trevo net train` runs; it never prints: a callback sees the progress.
 *
 * Exact semantics (so anyone can check a result):
 *   - each row of the data set is one sample of one time step (features as
 *     data_row gives them: pixels / 255), its label the class index, i.e.
 *     the rank of the output neuron by ascending id;
 *   - an epoch is ceil(n_rows / batch) optimizer steps (nn_trainer_step);
 *     the last batch is short when batch does not divide n_rows;
 *   - shuffle 0: the batches are consecutive rows in file order; shuffle 1:
 *     the rows in the order of a permutation made for each epoch e (1, 2,
 *     ...) by a Fisher-Yates shuffle of 0..n_rows-1 (tv_rng_shuffle_u32: i
 *     from n_rows-1 down to 1 swaps i with tv_rng_below(i + 1)) with
 *     tv_rng_init(seed, FIT_SHUFFLE, e): the order of epoch e depends on
 *     (seed, e) only;
 *   - after every step, nn_sparsifier_step; after the last step of every
 *     epoch but the last, nn_sparsifier_epoch (the sparsifier is made with
 *     `seed`): a regrowth (set, rigl) after the last epoch would leave
 *     connections that were never trained in the network the caller keeps,
 *     so training ends on the topology the last epoch trained (as SET keeps
 *     the topology of its last removal without growing);
 *   - the training loss and accuracy of an epoch are over its samples as the
 *     steps saw them: each sample's loss and argmax of the output values
 *     before its step's update (nn_argmax of train.h: ties the lower class,
 *     NaN never wins);
 *   - the test loss and accuracy (fit_evaluate) after the epoch's policies:
 *     a forward pass of every test row (nn_trainer_predict, batches of
 *     `batch` rows), mean softmax cross-entropy (nn_softmax_xent of
 *     train.h, the trainer's own, in double) and the share of rows whose
 *     argmax is the label.
 * Deterministic: the same trainer, data, options and seed give the same bits
 * (times aside).
 *
 * This module includes only nn/, genome/ and data/ headers, libc and libm.
 */
#ifndef TREVO_FIT_H
#define TREVO_FIT_H

#include <stddef.h>
#include <stdint.h>

#include "data.h"
#include "sparsify.h"
#include "train.h"

/* The second word of the shuffling stream, tv_rng_init(seed, FIT_SHUFFLE, epoch). */
#define FIT_SHUFFLE 0x7368756666ULL

struct fit_opts {
    size_t epochs;                      /* >= 1 */
    size_t batch;                       /* 1 .. the trainer's max_batch */
    uint64_t seed;                      /* shuffling and the sparsifier */
    int shuffle;                        /* 1: a permutation per epoch; 0: file order */
    const struct nn_sparsity *policies; /* [n_policies], may be NULL when 0 */
    size_t n_policies;
    /* A step budget (0: none): training stops after max_steps optimizer
     * steps in all, inside an epoch if need be; that epoch counts as the
     * last (no epoch policies after it, its report has done 1). */
    size_t max_steps;
    /* A view of the training set (all zero: the whole set as it is). With
     * rows, the data set's sample i is row rows[i] of train (i < n_rows,
     * which replaces train->n_rows); with shift and mul ([n_features]
     * each), feature j is (x_j - shift[j]) * mul[j] in float, x_j as
     * data_row gives it. The test set is read as it is, unless scale_test
     * is 1: then it is scaled the same way. */
    const uint32_t *rows;
    size_t n_rows;
    const float *shift, *mul;
    int scale_test;
    /* The learning rate's schedule (enum nn_lr_schedule of train.h): step s
     * of the run (0-based, over all epochs) is taken at nn_lr_at(lr, .., s,
     * S), lr the trainer's rate when fit_run starts, S the run's steps
     * (epochs x ceil(n_rows / batch), or max_steps when that is fewer);
     * the trainer's rate is lr again when fit_run returns. */
    int lr_schedule;
};
/* epochs 1, batch 128, seed 1, shuffle 1, no policies, no step budget, the
 * whole training set, a constant learning rate. */
void fit_opts_default(struct fit_opts *o);

/* What the callback sees: after every step (done 0) and once at the end of
 * every epoch, after its policies and the test pass (done 1). */
struct fit_report {
    int done;
    size_t epoch, epochs;          /* 1-based; of */
    size_t step, n_steps;          /* steps of this epoch taken; of */
    size_t rows;                   /* samples of this epoch so far */
    double loss, train_acc;        /* over those samples */
    double test_loss, test_acc;    /* done with a test set; NAN otherwise */
    size_t conns;                  /* the trainer's connections now */
    double seconds;                /* wall time of this epoch's steps and policies */
    struct nn_sparsifier_stats sp; /* the sparsifier's counts since the start */
};
/* Returning nonzero stops the loop: fit_run returns TV_ESTOP. */
typedef int (*fit_report_fn)(void *ctx, const struct fit_report *r);

/* Trains t on `train` for o->epochs epochs; `test` may be NULL. report may
 * be NULL: then the training accuracy is not computed (0) and the trainer
 * keeps the view's values (nn_trainer_keep_values) only for the last step
 * of an epoch whose policies read them (nn_sparsifier_needs_values); they
 * are kept again when fit_run returns. TV_EINVAL when a data set does not
 * fit the network (features against inputs, classes against outputs, no rows) or an option is out
 * of range, naming which; the trainer's and the sparsifier's errors as they come; TV_ESTOP when the
 * callback asked. t keeps what was trained so far on error. */
int fit_run(struct nn_trainer *t, const struct data_set *train, const struct data_set *test,
            const struct fit_opts *o, fit_report_fn report, void *ctx, struct tv_error *err);

/* The checks fit_run makes before it trains, for a network of n_in inputs
 * and n_out outputs (the data sets, the options, the view of rows), with
 * fit_run's messages. */
int fit_check_opts(const struct data_set *train, const struct data_set *test, size_t n_in,
                   size_t n_out, const struct fit_opts *o, struct tv_error *err);
/* The optimizer steps of a run over a view of n_rows samples (the
 * schedule's S above). */
size_t fit_total_steps(const struct fit_opts *o, size_t n_rows);
/* Samples perm[0..n) of the view of train into x [n][n_features] and
 * labels [n] (scaled when o has shift and mul), rows [n] their row numbers. */
void fit_gather(const struct data_set *train, const struct fit_opts *o, const uint32_t *perm,
                size_t n, size_t *rows, float *x, uint32_t *labels);

/* ---- a convolutional network (nn/conv/cnn.h): fit_cnn.c ---- */

/* What the callback sees at the end of each epoch. */
struct fit_cnn_report {
    size_t epoch, epochs;
    double loss, test_acc; /* test_acc NAN without a test set */
    size_t coefs, conns;   /* convolution coefficients, head connections now */
    double seconds;        /* the epoch's steps and policies */
};
typedef int (*fit_cnn_report_fn)(void *ctx, const struct fit_cnn_report *r);

/* fit_run's loop for a CNN, with the same options and exact semantics
 * (order, view of rows and scale, step budget, learning-rate schedule on
 * the head's rate, which the convolutions share; the policies on the head
 * after each step and each epoch but the last); a set or rigl policy also
 * regrows each convolution layer at the end of each epoch but the last,
 * with the fraction F/2 (1 + cos(pi e / E)) at epoch e of E (RigL's decay).
 * report may be NULL. Errors as fit_run. */
struct nn_cnn;
int fit_cnn_run(struct nn_cnn *c, const struct data_set *train, const struct data_set *test,
                const struct fit_opts *o, fit_cnn_report_fn report, void *ctx,
                struct tv_error *err);
/* The share of d's rows whose argmax output is the label, forward passes of
 * `batch` rows. */
int fit_cnn_evaluate(struct nn_cnn *c, const struct data_set *d, size_t batch, double *acc,
                     struct tv_error *err);

/* The mean softmax cross-entropy and the accuracy of t on d (semantics
 * above), forward passes of `batch` rows (1 .. the trainer's max_batch; the
 * result does not depend on it beyond the last bits of the loss). TV_EINVAL
 * when d does not fit the network; TV_ENOMEM. */
/* The statistics of a scaling (`net train --scale`, classify's [task]
 * scale) over rows rows[0..n_rows) of d (rows NULL: rows 0..n_rows), each
 * as data_row gives it: shift and mul [n_features] such that (x - shift) *
 * mul is minmax's [0, 1] (zscore 0) or the z-score (zscore 1, the
 * population's standard deviation); a constant feature gets mul 1. Sums in
 * double. 0 or TV_ENOMEM. */
int fit_scale_stats(const struct data_set *d, const uint32_t *rows, size_t n_rows, int zscore,
                    float *shift, float *mul, struct tv_error *err);
int fit_evaluate(struct nn_trainer *t, const struct data_set *d, size_t batch, double *loss,
                 double *acc, struct tv_error *err);

/* The row order of epoch `epoch` (1-based) of n rows (n <= UINT32_MAX, as
 * fit_check_opts requires) into perm[n]: 0..n-1 without shuffle, else the
 * Fisher-Yates shuffle defined above (tv_rng_shuffle_u32 of tv/tv.h). */
void fit_order(uint32_t *perm, size_t n, uint64_t seed, int shuffle, size_t epoch);

/* 0 if d fits a network of n_inputs inputs and n_outputs outputs as a
 * classification data set; TV_EINVAL naming the mismatch otherwise. */
int fit_check_data(const struct data_set *d, size_t n_inputs, size_t n_outputs,
                   struct tv_error *err);

#endif
