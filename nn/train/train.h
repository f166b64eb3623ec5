/*
 * train.h -- sparse training in the engine: gradients through the compiled
 * plan, optimizers, losses, and the physical removal and addition of
 * connections that the sparsity policies (sparsify.h) drive.
 *
 * A trainer owns a compiled form of one genome (the dense order of nn.h:
 * inputs, then the others by (depth, id)) with every connection kind:
 * local and skip (feed-forward, this step's values) and recurrent (the last
 * step's values). Gradients exist only at existing connections and at the
 * biases. Its cost per sample is proportional to the connections.
 *
 * Exact semantics (so anyone can check a result):
 *   - a sample is a sequence of `steps` time steps from a reset state (all
 *     previous values 0); a non-sequence data set has steps = 1;
 *   - the loss of a batch is the mean over its samples of the sum over the
 *     steps that carry a target of the per-step loss:
 *       NN_LOSS_XENT: -log softmax(outputs)[label] over the output neurons'
 *                     values (after their activation);
 *       NN_LOSS_MSE:  sum over outputs of (value - target)^2 / n_outputs;
 *   - gradients are exact for that loss when the window covers the whole
 *     sequence, and truncated back-propagation through time otherwise
 *     (opts.bptt steps back from each step that carries a target);
 *   - NN_OPT_SGD:      w <- w - lr * g;
 *     NN_OPT_MOMENTUM: m <- momentum * m + g;  w <- w - lr * m;
 *     NN_OPT_ADAM:     m <- b1 m + (1-b1) g;  v <- b2 v + (1-b2) g^2;
 *                      w <- w - lr * (m / (1-b1^t)) / (sqrt(v / (1-b2^t)) + eps);
 *     the same for the biases (of hidden and output neurons).
 *
 * Deterministic: the same genome, options, data and calls give the same bits.
 * This module includes only genome/ and nn/ headers, libc and libm.
 */
#ifndef TREVO_NN_TRAIN_H
#define TREVO_NN_TRAIN_H

#include <stddef.h>
#include <stdint.h>

#include "genome.h"

/* Stored and printed: explicit values. */
enum nn_optimizer { NN_OPT_SGD = 0, NN_OPT_MOMENTUM = 1, NN_OPT_ADAM = 2 };
enum nn_loss { NN_LOSS_XENT = 0, NN_LOSS_MSE = 1 };

struct nn_train_opts {
    int optimizer;    /* enum nn_optimizer */
    int loss;         /* enum nn_loss */
    float lr;         /* learning rate */
    float momentum;   /* NN_OPT_MOMENTUM (default 0.9) */
    float beta1;      /* NN_OPT_ADAM (default 0.9) */
    float beta2;      /* NN_OPT_ADAM (default 0.999) */
    float eps;        /* NN_OPT_ADAM (default 1e-8) */
    size_t max_batch; /* the largest batch a call passes (default 128) */
    size_t bptt;      /* truncated BPTT window in steps (default 0: the whole sequence) */
};
/* The defaults above (optimizer SGD, loss XENT, lr 0.01). */
void nn_train_opts_default(struct nn_train_opts *o);

struct nn_trainer;

/* A trainer for genome g (copied: g may change or go afterwards). g must pass
 * genome_validate(); rate neurons only (TV_EINVAL naming the neuron
 * otherwise). TV_ENOMEM. *out is NULL on error. The trainer takes its
 * inputs as they are: g's input scaling (genome.h), if any, is not applied
 * (the caller scales, as fit_run does with fit_opts shift and mul) but
 * carried to nn_trainer_write_genome. */
int nn_trainer_new(const struct genome *g, const struct nn_train_opts *o, struct nn_trainer **out,
                   struct tv_error *err);
void nn_trainer_free(struct nn_trainer *t); /* NULL is a no-op */
size_t nn_trainer_n_inputs(const struct nn_trainer *t);
size_t nn_trainer_n_outputs(const struct nn_trainer *t);
size_t nn_trainer_n_conns(const struct nn_trainer *t);
/* Optimizer steps taken so far. */
uint64_t nn_trainer_steps(const struct nn_trainer *t);

/* One batch of `batch` samples of `steps` time steps each.
 *   x:       [steps][batch][n_inputs]
 *   labels:  NN_LOSS_XENT: [steps][batch] class indices, or UINT32_MAX where
 *            a step carries no target; NULL for MSE
 *   targets: NN_LOSS_MSE: [steps][batch][n_outputs]; NULL for XENT
 * nn_trainer_grad computes the loss (mean over the batch, *loss) and the
 * gradients of every weight and bias, without changing them;
 * nn_trainer_step does the same and then one optimizer step. TV_EINVAL for a
 * batch of 0 or above max_batch, a label out of range, a missing array. */
int nn_trainer_grad(struct nn_trainer *t, const float *x, const uint32_t *labels,
                    const float *targets, size_t steps, size_t batch, double *loss,
                    struct tv_error *err);
int nn_trainer_step(struct nn_trainer *t, const float *x, const uint32_t *labels,
                    const float *targets, size_t steps, size_t batch, double *loss,
                    struct tv_error *err);
/* The optimizer step of nn_trainer_step alone, on the gradients of the last
 * nn_trainer_grad: grad, then what needs those gradients (such as
 * nn_trainer_input_grad, which reads the weights before the step), then
 * update is exactly nn_trainer_step. */
void nn_trainer_update(struct nn_trainer *t);
/* dx [n_inputs][batch] (overwritten; the view's layout, inputs by id) =
 * dL/d(input value at the last time step) of the last grad/step call: the
 * sum over the feed-forward connections leaving the input of weight times
 * the view's delta (of the last step) of their destination. That is the
 * whole derivative (nothing reads the last step's inputs later), and for
 * one-step samples the gradient a layer in front of the trainer, such as a
 * convolution, needs; the inputs of earlier steps get none. Batch as in the
 * view. TV_ESTATE when the view holds no deltas (no grad/step call yet, or
 * nn_trainer_keep_values(t, 0)). */
int nn_trainer_input_grad(const struct nn_trainer *t, float *dx, struct tv_error *err);
/* Forward only, from a reset state: out [steps][batch][n_outputs]. Every
 * sum in the inference engine's order (nn.h), so the outputs have the bits
 * of nn_step on the written genome compiled with default options (not tiled:
 * networks under NN_TILE_MIN_NEURONS), at any batch. */
int nn_trainer_predict(struct nn_trainer *t, const float *x, size_t steps, size_t batch, float *out,
                       struct tv_error *err);

/* How the backward pass reads W transposed (the dL/dy of a source from the
 * deltas of its destinations); every way gives the same bits.
 *   NN_TRANSPOSE_MAP:     a gather through the index map (per source, the
 *                         positions of its connections in the by-destination
 *                         arrays: 4 bytes per connection, no copy of W);
 *   NN_TRANSPOSE_SCATTER: a scatter over the by-destination rows;
 *   NN_TRANSPOSE_BUILD:   a by-source copy of W (weights and destinations)
 *                         built at each backward pass, then a gather.
 * The default is the fastest, SCATTER: as fast as the map at 2 % density
 * and faster at 10 %, where the map's reads of the weights and destinations
 * at random positions leave the cache while the scatter reads the rows in
 * order (BENCHMARKS.md, "the transposed product three ways"). */
enum nn_transpose { NN_TRANSPOSE_MAP = 0, NN_TRANSPOSE_SCATTER = 1, NN_TRANSPOSE_BUILD = 2 };
/* TV_EINVAL for an unknown way. */
int nn_trainer_set_transpose(struct nn_trainer *t, int way, struct tv_error *err);
/* The learning rate of the steps that follow (the options' lr at first):
 * what a schedule (nn_lr_at) changes between steps. TV_EINVAL for a rate
 * that is negative or not finite. */
int nn_trainer_set_lr(struct nn_trainer *t, float lr, struct tv_error *err);
float nn_trainer_lr(const struct nn_trainer *t);
/* Learning-rate schedules over a run of `total` optimizer steps; stored and
 * printed as their names ("none", "cosine"). */
enum nn_lr_schedule { NN_LR_NONE = 0, NN_LR_COSINE = 1 };
/* The rate of the 0-based step `step` of `total` (step < total): lr for
 * NN_LR_NONE; lr (1 + cos(pi step / total)) / 2 for NN_LR_COSINE (SGDR's
 * cosine annealing, Loshchilov & Hutter 2017, one cycle, no restart), in
 * double, then rounded to float: lr at the first step, lr (1 + cos(pi (T-1)
 * / T)) / 2 > 0 at the last. */
float nn_lr_at(float lr, int schedule, uint64_t step, uint64_t total);
/* "none" or "cosine" into enum nn_lr_schedule; -1 for anything else. */
int nn_lr_schedule_parse(const char *s);
const char *nn_lr_schedule_name(int schedule); /* "?" when unknown */
/* The kernels of another SIMD target (enum nn_target of nn.h; a new trainer
 * runs the best its CPU has); every target gives the same bits. TV_EINVAL
 * for an unknown target or one this CPU cannot run. */
int nn_trainer_set_target(struct nn_trainer *t, int target, struct tv_error *err);

/* The trainer's connections and neurons, as aligned arrays, valid until the
 * next nn_trainer_remove / nn_trainer_add / nn_trainer_remove_neurons. The
 * order of connections is the trainer's own (not the genome's). */
struct nn_train_view {
    size_t n_conns;
    const uint32_t *from, *to; /* [n_conns] genome neuron ids */
    float *w;                  /* [n_conns] the weights (may be changed between steps) */
    const float *grad;         /* [n_conns] dL/dw of the last grad/step */
    size_t n_neurons;          /* dense order */
    const uint32_t *id;        /* [n_neurons] genome id */
    const uint8_t *kind;       /* [n_neurons] enum genome_kind */
    const uint32_t *layer;     /* [n_neurons] layer (rank of its depth; inputs 0) */
    size_t n_layers;
    float *bias;            /* [n_neurons] (inputs: unused) */
    const float *bias_grad; /* [n_neurons] */
    /* The last grad/step's last time step (step steps - 1, whatever the
     * number of steps), [n_neurons][batch]: each neuron's value and dL/d(its
     * pre-activation sum) at that step (inputs: 0). The delta is the loss of
     * the last step back-propagated into it: whole for any bptt (no window
     * cuts a path into the last step), 0 when the last step carries no
     * target. NULL (and batch 0) when nn_trainer_keep_values(t, 0) turned
     * them off. */
    size_t batch;
    const float *value, *delta;
};
void nn_trainer_view(struct nn_trainer *t, struct nn_train_view *v);
/* on = 1 (the default): grad and step keep the view's value and delta;
 * 0: they do not (copying them costs about a tenth of a step at batch 128
 * on 784-1000-1000-10, 2 %), until turned on again. */
void nn_trainer_keep_values(struct nn_trainer *t, int on);

/* Physically removes the connections k with remove[k] != 0 (k as in the
 * view): from the compiled form, the weights and the optimizer state. */
int nn_trainer_remove(struct nn_trainer *t, const uint8_t *remove, struct tv_error *err);
/* Adds connections between existing neurons (weights as given, optimizer
 * state 0). TV_EINVAL naming the first that exists already, has a missing
 * end or ends in an input. Nothing is added on error. */
int nn_trainer_add(struct nn_trainer *t, const struct genome_conn *c, size_t n,
                   struct tv_error *err);
/* dead[j] (dense index, [n_neurons]) = 1 for every hidden neuron whose value
 * was exactly 0 for every sample of every step since the last call (or since
 * the trainer was made), else 0; restarts the count. */
void nn_trainer_zero_neurons(struct nn_trainer *t, uint8_t *dead);
/* Removes the hidden neurons with dead[j] != 0 and all their connections. */
int nn_trainer_remove_neurons(struct nn_trainer *t, const uint8_t *dead, struct tv_error *err);

/* Writes the trained network into g: its neurons (with the trained biases)
 * and exactly the trainer's connections with their weights, in canonical
 * order, and the input scaling of the genome the trainer was made from. g
 * may be that genome. */
int nn_trainer_write_genome(const struct nn_trainer *t, struct genome *g, struct tv_error *err);

/* ---- softmax cross-entropy and argmax (loss.c) -----------------------------
 * The one home of scoring a row of outputs against a class: the trainer's
 * loss and gradient, fit's test pass (tasks/fit.h), classify's fitness and
 * `trevo net test` call these two, so that they agree on every value. A row
 * is v[k * stride], k in [0, n).
 *
 * nn_argmax: the index of the largest value. Ties: the first (the lowest
 * index; -0 and +0 are equal). NaN is never the largest (it is skipped);
 * +inf and -inf are ordinary values (+inf beats everything, -inf nothing).
 * n when n is 0 or every value is NaN: no class, never a label. */
size_t nn_argmax(const float *v, size_t n, size_t stride);
/* nn_softmax_xent: -log softmax(z)[label] (label < n), in double, exactly
 * as the trainer computes it (its bits are the reference):
 *   mx   = the largest value, NaN skipped (-inf when there is none),
 *   sum  = exp(z_0 - mx) + exp(z_1 - mx) + ..., k in increasing order,
 *   loss = (mx + log(sum)) - z_label;
 * and when g is not NULL, the gradient of the loss times scale into
 * g[k * gstride] = (float)((exp(z_k - mx) / sum - [k == label]) * scale).
 * Non-finite values: a NaN or a +inf anywhere, or -inf everywhere, gives a
 * NaN loss (and NaN in every g); a -inf among finite values counts as
 * probability 0 (at the label: loss +inf). */
double nn_softmax_xent(const float *z, size_t n, size_t stride, size_t label, float *g,
                       size_t gstride, double scale);

/* The reference trainer: a plain loop over g's triplets in double, obviously
 * correct and slow, with the loss and semantics above. grad: [g->n_conns]
 * in g's connection order; bias_grad: [g->n_neurons] in g's neuron order. */
int nn_reference_grad(const struct genome *g, int loss, const float *x, const uint32_t *labels,
                      const float *targets, size_t steps, size_t batch, size_t bptt,
                      double *loss_out, double *grad, double *bias_grad, struct tv_error *err);
/* The reference of the view's value and delta and of nn_trainer_input_grad,
 * by the same plain loops: for sample b, at the last step (steps - 1),
 * value[i * batch + b] = the value of g's neuron i and delta[i * batch + b]
 * = dL/d(its pre-activation sum), summed over the windows of the steps that
 * carry a target (inputs: 0); dx[k * batch + b] = dL/d(the value of the
 * k-th input of g), summed likewise. value and delta: [g->n_neurons][batch]
 * in g's neuron order; dx: [n_inputs][batch]; any may be NULL. The
 * arguments and errors of nn_reference_grad. */
int nn_reference_last_step(const struct genome *g, int loss, const float *x, const uint32_t *labels,
                           const float *targets, size_t steps, size_t batch, size_t bptt,
                           double *value, double *delta, double *dx, struct tv_error *err);

#endif
