/*
 * cnn.h -- training a sparse convolutional network: sparse convolution
 * layers (conv.h) with their bias, activation and max pooling, in front of
 * a head of plain triplets trained by nn/train/train.h.
 *
 * The network: layer 0 reads a sample of in_ch x in_h x in_w pixels (a data
 * row, channel by channel, row by row); layer l computes
 *   y_l = pool_max(act(conv_l(x_l) + bias_l)), x_{l+1} = y_l,
 * and the head is a genome whose inputs, ids 0 .. F-1, are the pixels of the
 * last y in the same order (F = out_ch * (out_h / pool) * (out_w / pool)).
 * The loss is the head's (train.h: cross-entropy of a softmax over its
 * outputs, or MSE), its gradient flows back through the head
 * (nn_trainer_input_grad), the poolings, the activations and the
 * convolutions; the optimizer of train.h (SGD, momentum, Adam with the
 * head's step count) updates coefficients, biases and the head alike.
 *
 * Sparsity: a layer holds only its non-zero coefficients. nn_cnn_prune
 * removes coefficients physically (the layer is rebuilt without them, their
 * optimizer state goes), nn_cnn_grow adds absent ones: by the magnitude of
 * their gradient on the last batch (RigL: the dense gradient of the layer,
 * computed once per call) or at random (SET). The head's connections are
 * a trainer's (nn_cnn_head), so nn/train/sparsify.h's policies run on it as on
 * any trainer.
 *
 * Deterministic: the same description, options, data and calls give the
 * same bits. This module includes only genome/ and nn/ headers, libc and libm.
 */
#ifndef TREVO_NN_CNN_H
#define TREVO_NN_CNN_H

#include <stddef.h>
#include <stdint.h>

#include "conv.h"
#include "genome.h"
#include "train.h"

/* One convolution layer as given to nn_cnn_new (arrays borrowed for the call). */
struct nn_cnn_layer {
    struct nn_conv_shape s;
    const struct nn_conv_coef *coef; /* [n_coefs], sorted by (out, in, ky, kx) */
    size_t n_coefs;
    const float *bias; /* [s.out_ch] */
    int act;           /* GENOME_ACT_RELU or GENOME_ACT_IDENTITY */
    size_t pool;       /* max pooling p x p, stride p, after act (1: none) */
};

/* A whole network: layers, then the head (inputs: ids 0 .. F-1). */
struct nn_cnn_desc {
    size_t n_layers; /* >= 1 */
    const struct nn_cnn_layer *layer;
    const struct genome *head;
};

/* Pixels of layer l's pooled output (the input of l + 1 or of the head). */
size_t nn_cnn_layer_out_size(const struct nn_cnn_layer *l);

struct nn_cnn;

/* A trainer of d (copied). TV_EINVAL naming the layer and what does not fit
 * (shapes that do not chain, an activation other than relu or identity, a
 * pool of 0 or larger than the map, a head whose inputs are not ids 0 .. F-1,
 * or what nn_conv_new and nn_trainer_new reject); TV_ENOMEM. *out NULL on
 * error. o->max_batch bounds every call's batch. */
int nn_cnn_new(const struct nn_cnn_desc *d, const struct nn_train_opts *o, struct nn_cnn **out,
               struct tv_error *err);
void nn_cnn_free(struct nn_cnn *c); /* NULL is a no-op */
size_t nn_cnn_n_inputs(const struct nn_cnn *c);
size_t nn_cnn_n_outputs(const struct nn_cnn *c);
size_t nn_cnn_n_layers(const struct nn_cnn *c);

/* One batch: x [batch][n_inputs] (data rows), labels or targets as
 * nn_trainer_grad takes them with steps = 1. nn_cnn_grad computes the mean
 * loss and every gradient without changing anything; nn_cnn_step then takes
 * one optimizer step. TV_EINVAL for a batch of 0 or above max_batch, a
 * missing array, a label out of range. */
int nn_cnn_grad(struct nn_cnn *c, const float *x, const uint32_t *labels, const float *targets,
                size_t batch, double *loss, struct tv_error *err);
int nn_cnn_step(struct nn_cnn *c, const float *x, const uint32_t *labels, const float *targets,
                size_t batch, double *loss, struct tv_error *err);
/* Forward only: out [batch][n_outputs], the bits of the inference engine
 * (nn_plan_compile of the written genome, nn_step) at any batch when the
 * deepest level's channels have ids and first pixel ids that rise together
 * and every head neuron is deeper than those pixels, as net init and the
 * mutations make them (test_cnn.c). Otherwise the head numbers its inputs
 * or cuts its layers another way than the plan: the same network, agreeing
 * to float rounding. */
int nn_cnn_predict(struct nn_cnn *c, const float *x, size_t batch, float *out,
                   struct tv_error *err);

/* Layer l as it is now, valid until the next prune or grow of that layer. */
struct nn_cnn_layer_view {
    struct nn_conv_shape s;
    size_t n_coefs;
    const struct nn_conv_coef *coef; /* [n_coefs] keys (their w is stale: read w) */
    float *w;                        /* [n_coefs] */
    const float *grad;               /* [n_coefs] of the last grad/step */
    float *bias;                     /* [out_ch] */
    const float *bias_grad;          /* [out_ch] */
    int act;
    size_t pool;
};
/* TV_EINVAL for l out of range. */
int nn_cnn_layer(struct nn_cnn *c, size_t l, struct nn_cnn_layer_view *v, struct tv_error *err);
/* The head's trainer (borrowed, valid until nn_cnn_free): its view, its
 * sparsifier, its genome. Steps go through nn_cnn_step, not through it. */
struct nn_trainer *nn_cnn_head(struct nn_cnn *c);

/* Removes the k coefficients of layer l with the smallest |w| (ties: the
 * smaller key (out, in, ky, kx) first; k is capped at the layer's count).
 * TV_EINVAL for l out of range, TV_ENOMEM (the layer is then unchanged). */
int nn_cnn_prune(struct nn_cnn *c, size_t l, size_t k, struct tv_error *err);

enum nn_cnn_grow_mode {
    NN_CNN_GROW_RIGL = 0, /* largest |dL/dw| on the last grad/step batch, w = 0 */
    NN_CNN_GROW_SET = 1   /* uniformly among the absent, w ~ N(0, sigma^2) */
};
/* Adds up to k absent coefficients to layer l (optimizer state 0): fewer
 * when fewer are absent; *n_grown (may be NULL) says how many. RigL: ties
 * by the smaller key; TV_ESTATE before any grad/step. SET: draws from rng.
 * TV_EINVAL for l or mode out of range, TV_ENOMEM (layer unchanged). */
int nn_cnn_grow(struct nn_cnn *c, size_t l, size_t k, int mode, float sigma, struct tv_rng *rng,
                size_t *n_grown, struct tv_error *err);

/* The trained head written into g (nn_trainer_write_genome). */
int nn_cnn_write_head(const struct nn_cnn *c, struct genome *g, struct tv_error *err);

/* ---- genomes with channels and filters (genome.h) --------------------------
 * A trainer of g, which must be a chain: its input channels (all of one
 * size, their pixels the genome's inputs in order, channel by channel) are
 * level 0; its hidden channels grouped by depth are levels 1..L (within a
 * level: one size, one pooling, one activation, relu or identity; channels by
 * id); every filter goes from level l-1 to level l, all those into a level
 * with one kernel size, stride and padding; every connection starts at a
 * pixel of level L or at a neuron that is not an input (the head). Layer l of
 * the trainer is level l-1 -> l (filter (a, b) is the filter from the rank
 * of a in its level to the rank of b). TV_EINVAL naming what does not fit
 * (a neuron of a model the trainer does not run by its id in g); what
 * nn_cnn_new returns. */
#define NN_CNN_MAX_LAYERS 16
int nn_cnn_from_genome(const struct genome *g, const struct nn_train_opts *o, struct nn_cnn **out,
                       struct tv_error *err);
/* Writes the trained network into g: the genome the trainer was made from
 * with its channel biases, its filters (exactly the trainer's coefficients;
 * a filter left without any is absent) and its head (neurons, biases,
 * connections, ids as they were) as trained. g may be that genome.
 * TV_ESTATE for a trainer not made by nn_cnn_from_genome. */
int nn_cnn_write_genome(const struct nn_cnn *c, struct genome *g, struct tv_error *err);

#endif
