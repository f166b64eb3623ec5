/*
 * train_impl.h -- private to the trainer of nn/ (train.c, train_edit.c,
 * train_kern.c, and the CNN trainer of nn/conv/, cnn_impl.h): the compiled
 * training form of a genome.
 *
 * Neurons are in the engine's dense order (inputs by id, then the rest by
 * (depth, id); order.c). Connections are kept once, by destination (CSR):
 * row j is [row[j], row[j+1]), its feed-forward entries [row[j], rec[j])
 * (this step's values) then its recurrent ones [rec[j], row[j+1]) (the last
 * step's), each part sorted by source. Every per-connection array (src, dst,
 * w, grad, om, ov) is aligned with these positions: the position is the
 * connection's index k in nn_train_view.
 *
 * The transposed product (dL/dy of a source from the deltas of its
 * destinations) is by default a scatter over these rows; it can also read
 * the same arrays through the index map (nn_trainer_set_transpose): the
 * positions of the connections leaving source i are t_pos[t_row[i] ..
 * t_row[i+1]), feed-forward ones first (up to t_rec[i]), in increasing
 * position. 4 bytes per connection, no copy of the weights.
 *
 * Values are batch-major per neuron, in blocks of up to TR_BLOCK samples:
 * the values of neuron j at step s are y[(s * n + j) * TR_BLOCK ...], so
 * the work per connection is a vector multiply-add over the block.
 */
#ifndef TREVO_NN_TRAIN_IMPL_H
#define TREVO_NN_TRAIN_IMPL_H

#include <stddef.h>
#include <stdint.h>

#include "compile.h"
#include "nn_impl.h"
#include "train.h"

/* Samples per block (4 vectors of 16 lanes). */
#define TR_BLOCK 64

/* How the backward pass does the transposed product (nn_trainer_set_transpose). */
enum tr_transpose {
    TR_T_MAP = NN_TRANSPOSE_MAP,
    TR_T_SCATTER = NN_TRANSPOSE_SCATTER,
    TR_T_BUILD = NN_TRANSPOSE_BUILD
};

struct nn_trainer {
    struct nn_train_opts o;
    struct genome scale; /* only its input scaling: the genome's, carried to
                          * nn_trainer_write_genome, never applied (train.h) */
    int target;          /* enum nn_target of the kernels */
    int transpose;       /* enum nn_transpose */
    uint64_t n_steps;
    /* neurons [n], dense order */
    size_t n, n_in, n_out, n_layers;
    uint32_t *id;
    uint8_t *kind, *act;
    uint32_t *layer;
    float *depth;
    float *bias, *bias_grad, *bias_m, *bias_v;
    uint32_t *run_end; /* [n] the first dense index deeper than j */
    uint32_t *oslot;   /* [n] k if j is the k-th output, else NN_NONE */
    uint32_t *out_map; /* [n_out] dense index of the k-th output */
    float *out_row;    /* [n_out] one sample's output values (the loss's row) */
    uint32_t *by_id;   /* [n] dense indices in id order */
    uint8_t *seen;     /* [n] 1 if j was non-zero since nn_trainer_zero_neurons */
    uint8_t *scat;     /* [n] 1 if the engine scatters j's feed-forward edges by
                        * default (nn_compile_default_way of j's layer) */
    /* connections: CSR by destination, [cap_m] arrays */
    size_t m, cap_m;
    uint32_t *row; /* [n + 1] */
    uint32_t *rec; /* [n] */
    uint32_t *src, *dst;
    float *w, *grad, *om, *ov;
    /* the index map */
    uint32_t *t_row; /* [n + 1] */
    uint32_t *t_rec; /* [n] */
    uint32_t *t_pos; /* [cap_m] */
    uint32_t *t_cur; /* [2n] scratch of the by-source layouts */
    /* the forward's order (the engine's): row j's feed-forward connections
     * from gathered sources, f_pos[row[j] .. f_split[j]), then those from
     * scattered sources, f_pos[f_split[j] .. rec[j]), each by source */
    uint32_t *f_pos;   /* [cap_m] */
    uint32_t *f_split; /* [n] */
    /* NN_TRANSPOSE_BUILD's copy, made at each backward pass: [cap_m] */
    float *wt_w;
    uint32_t *wt_dst;
    uint32_t *wt_row, *wt_rec; /* [n + 1], [n] like t_row, t_rec */
    /* the view's arrays */
    uint32_t *v_from, *v_to;  /* [cap_m] */
    float *v_value, *v_delta; /* [n][batch] */
    size_t v_batch;
    int keep_values; /* nn_trainer_keep_values */
    /* work for one block, for up to cap_steps steps */
    size_t cap_steps;
    float *z, *y; /* [cap_steps][n][TR_BLOCK] pre-activation sums, values */
    float *lossg; /* [cap_steps][n_out][TR_BLOCK] dL/d(output value) */
    float *delta; /* [2][n][TR_BLOCK] */
    float *dy;    /* [2][n][TR_BLOCK] (scatter) */
    uint8_t *tgt; /* [cap_steps] 1 if some sample of the block has a target */
};

/* One block of samples [b0, b0 + nb) for a kernel call. */
struct tr_block {
    size_t b0, nb, nv; /* nv vectors of 16 lanes (nb <= 16 nv) */
    size_t steps, batch;
    const float *x;
    const uint32_t *labels;
    const float *targets;
    int backward; /* 0: forward only (predict) */
    double loss;  /* out: the block's summed loss */
    float *out;   /* predict: [steps][batch][n_out] */
};

typedef void tr_fn(struct nn_trainer *t, struct tr_block *b);
/* The kernels, one per enum nn_target (train_kern.c): forward over the
 * block's steps, its loss, and (b->backward) the backward pass adding into
 * grad and bias_grad. */
extern tr_fn *const nn_tr_run[NN_TARGET_COUNT];
/* One optimizer step on parameters p[0, n) with gradients g and state m, v
 * (c1, c2: Adam's bias corrections 1 - b1^t, 1 - b2^t), per target. */
typedef void tr_update_fn(const struct nn_train_opts *o, float c1, float c2, float *p,
                          const float *g, float *m, float *v, size_t n);
extern tr_update_fn *const nn_tr_update[NN_TARGET_COUNT];

/* Rebuilds the index map and the forward's order from the rows (O(n + m)). */
void nn_tr_index_map(struct nn_trainer *t);

/* 1 if an edge from dense i to dense j reads the last step (compile.h). */
static inline int nn_tr_is_rec(const struct nn_trainer *t, uint32_t i, uint32_t j)
{
    return nn_compile_is_recurrent(t->run_end[i], j);
}

/* New connections for a layout: dense ends and weights. */
struct tr_extra {
    size_t n;
    const uint32_t *src, *dst;
    const float *w;
};
/* Lays out the trainer's m1 connections (keeping their weights, gradients
 * and optimizer state) and the extra ones (state 0) into fresh arrays, rows
 * sorted by source, and rebuilds the index map. The trainer is unchanged on
 * error (TV_ENOMEM naming who). O(n + m). */
int nn_tr_layout(struct nn_trainer *t, size_t m1, const struct tr_extra *x, const char *who,
                 struct tv_error *err);
/* The per-neuron facts that follow from the depths (layers and run_end, by
 * genome.h's cut, as the compile has them) and the outputs' slots. */
void nn_tr_neuron_layers(struct nn_trainer *t);

#endif
