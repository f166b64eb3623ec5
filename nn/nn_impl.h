/*
 * nn_impl.h -- private to nn/: the layout of a compiled plan and of a state,
 * the op table and the activation table. No other folder includes this
 * header.
 */
#ifndef TREVO_NN_IMPL_H
#define TREVO_NN_IMPL_H

#include <math.h>
#include <stddef.h>
#include <stdint.h>

#include "nn.h"

/* ---- ops ------------------------------------------------------------------ */

/* The kinds of layer operation. A compiled plan is a list of ops
 * (nn_plan.ops) that a step runs in order; each kind is one row of nn_ops
 * (ops.c). A new kind of layer (a convolution, spiking neurons) is one more
 * id here, one more row there and its kernels. */
enum nn_op_id {
    NN_OP_ROWS = 0,       /* neurons of layers [l0, l1) from their by-destination rows */
    NN_OP_ROWS_LOCAL = 1, /* the same in a tiled plan: indices local to `chunk` */
    NN_OP_SCATTER = 2,    /* layer l0 pushes its non-zero sources to their destinations */
    NN_OP_TILES = 3,      /* the tiles into chunk `chunk` are added to its accumulators */
    NN_OP_INT8 = 4,       /* the whole step of an int8 plan (int8_op.c, quant.h) */
    NN_OP_OBSERVE = 5,    /* records the step's ranges for a calibration (quant.c) */
    NN_OP_SPIKE = 6,      /* one step of the plan's spiking network (spike_genome.c) */
    NN_OP_CONV = 7,       /* the channels of layer l0: filters, bias, act, pooling (conv_plan.c) */
    NN_OP_COUNT = 8
};

/* One op of a plan. */
struct nn_op {
    uint32_t kind;   /* enum nn_op_id */
    uint32_t l0, l1; /* layers [l0, l1) (SCATTER: l0 only) */
    uint32_t chunk;  /* ROWS_LOCAL, TILES: the chunk of the tiled form */
};

struct nn_plan;
struct nn_state;
/* One direction of one op on state s of plan p. */
typedef void nn_op_fn(const struct nn_plan *p, struct nn_state *s, const struct nn_op *op);

/* A row of the op table: its name and one function per direction. The
 * forward functions exist once per SIMD target (enum nn_target), all giving
 * the same bits; a state calls those of its target. */
struct nn_op_kind {
    const char *name;
    nn_op_fn *const *forward1; /* [NN_TARGET_COUNT] batch 1 (step1.c) */
    nn_op_fn *const *forwardb; /* [NN_TARGET_COUNT] batch > 1 (stepb.c) */
    nn_op_fn *backward;        /* NULL: reserved for training */
};
/* Indexed by enum nn_op_id; NN_OP_COUNT rows (ops.c). */
extern const struct nn_op_kind nn_ops[];

/* The kernels, one array of NN_TARGET_COUNT per op and direction (step1.c,
 * stepb.c, built by NN_KERNEL in kernel.h). */
extern nn_op_fn *const nn_rows1[], *const nn_rows1_local[], *const nn_scatter1[],
                                                                *const nn_tiles1[];
extern nn_op_fn *const nn_rowsb[], *const nn_rowsb_local[], *const nn_scatterb[],
                                                                *const nn_tilesb[];
extern nn_op_fn *const nn_int8_1[], *const nn_int8_b[], *const nn_observe[]; /* quant.h */
extern nn_op_fn *const nn_spike_op[]; /* both directions: a spiking state has batch 1 */
extern nn_op_fn *const nn_conv_op[];  /* both: the layers of nn/conv/conv.h take any batch */

/* Writes the op list of plan p (its layers, ways and chunks set) into ops,
 * or only counts it when ops is NULL; returns the number of ops. */
size_t nn_plan_ops(const struct nn_plan *p, struct nn_op *ops);

/* ---- plans and states ----------------------------------------------------- */

/* A compiled plan: this header and every array below live in one
 * allocation (except, in a trainable plan, the weights and biases: see
 * param). j is a neuron's dense index (inputs first, then by depth). */
struct nn_plan {
    size_t n, n_in, n_out, n_layers;
    size_t n_conns, n_recurrent;       /* connections of the genome */
    size_t n_gather, n_scatter, n_rec; /* entries of each kind */
    size_t bytes;                      /* the whole allocation (with param's) */
    size_t compile_work;               /* nn_plan_compile_work */
    size_t state_extra;                /* bytes of extra each state has for its ops (int8) */
    int own_io;          /* batch > 1: nn_step hands its op the caller's rows (s->in_sample) and
                          * nn_state_read asks nn_int8_read: an int8 plan quantizes and dequantizes
                          * them itself, with no float copy in the state */
    int index_bits;      /* 16 or 32 (8 in an int8 plan: offsets in windows) */
    int row_bits;        /* of g_idx and r_idx: index_bits, or 16 if tiled */
    int out_contiguous;  /* out_map[k] == out_map[0] + k */
    int rec_reads_input; /* some recurrent edge leaves an input */
    size_t n_ops;        /* of ops */
    struct nn_op *ops;   /* [n_ops] what a step runs, in order */
    uint32_t *out_map;   /* [n_out] dense index of the k-th output */
    /* The genome's input scaling (genome.h, "input scaling"), its own
     * allocation: input k enters as (x - in_shift[k]) * in_mul[k]; both NULL
     * when the genome has none. nn_step and nn_step_feature_major apply it
     * as they load the inputs (nn_plan_compile sets it, nn_plan_free frees). */
    float *in_shift; /* [2 * n_in]: shift[n_in] then mul */
    float *in_mul;   /* in_shift + n_in */
    /* A trainable plan (nn_opts.trainable): bias, g_w, r_w, s_w and t_w are
     * not in the plan's block but in param, a block of their own that the
     * caller may change (nn_plan_params); conn_of maps each float of it to
     * its genome connection (NN_NONE: padding, slack or a bias), neuron_of
     * each neuron to its genome neuron (NN_NONE: an input). All NULL and
     * n_param 0 otherwise. */
    int trainable;
    size_t n_param;        /* floats in param */
    float *param;          /* [n_param] a separate allocation */
    uint32_t *conn_of;     /* [n_param] */
    uint32_t *neuron_of;   /* [n] */
    uint32_t *layer_start; /* [n_layers + 1] layer l is [start[l], start[l+1]) */
    uint8_t *layer_way;    /* [n_layers] NN_WAY_GATHER or NN_WAY_SCATTER */
    float *bias;           /* [n] */
    uint8_t *act;          /* [n] enum genome_act */
    /* Feed-forward edges into j read by gather: [g_row[j], g_row[j+1]) of
     * g_idx (source; in a tiled plan, counted from the first neuron of j's
     * chunk, where every source of a row is) and g_w, sorted by source. A row of 1 to 7 edges is
     * padded to 8 with weight 0 and source n, a slot that always holds 0
     * (one group for the batch-1 step, no masking); longer rows are not
     * padded: the batch-1 step reads their last short group whole and masks
     * what is past the row. The arrays have NN_SLACK more entries (weight 0,
     * source n), so that such a read stays inside them. */
    uint32_t *g_row; /* [n + 1] */
    uint32_t *g_end; /* [n] end of the real edges of row j (the batched step
                      * skips the padding) */
    uint32_t *g_hid; /* [n] the first entry of row j whose source is not an
                      * input (the batched step reads inputs in place) */
    float *g_w;      /* [n_gather + NN_SLACK] */
    void *g_idx;     /* [n_gather + NN_SLACK] uint16_t or uint32_t */
    /* Recurrent edges into j, the same way; sources read the last step. A
     * tiled plan has none here: they are all in tiles. */
    uint32_t *r_row; /* [n + 1] */
    uint32_t *r_end; /* [n] */
    float *r_w;      /* [n_rec + NN_SLACK] */
    void *r_idx;     /* [n_rec + NN_SLACK] */
    /* Feed-forward edges out of j read by scatter: s_idx holds the
     * destination, sorted. Only sources in SCATTER layers have any. */
    uint32_t *s_row; /* [n + 1] */
    float *s_w;      /* [n_scatter] */
    void *s_idx;     /* [n_scatter] */
    /* The tiled form (nn.h), n_chunks == 0 when the plan has none. Chunk c is
     * layers [c_layer[c], c_layer[c+1]), neurons [c_start[c], c_start[c+1]).
     * The tiles into chunk T are, for q in [0, 2 n_chunks), the entries
     * [t_row[T * 2 n_chunks + q], t_row[T * 2 n_chunks + q + 1]) of t_sd and
     * t_w: q < n_chunks reads this step's values of chunk q, q >= n_chunks
     * last step's values of chunk q - n_chunks. An entry adds
     * t_w * value[c_start[src chunk] + (t_sd >> 16)] into
     * acc[c_start[T] + (t_sd & 0xffff)]; entries of a tile are sorted by
     * source. */
    size_t n_chunks, n_tiled;
    uint32_t *c_layer; /* [n_chunks + 1] */
    uint32_t *c_start; /* [n_chunks + 1] */
    uint32_t *t_row;   /* [2 n_chunks^2 + 1] */
    uint32_t *t_sd;    /* [n_tiled] */
    float *t_w;        /* [n_tiled] */
    /* A spiking plan (a genome of cuba neurons): its network, at rest, which
     * each state copies; the plan's one op is NN_OP_SPIKE. NULL otherwise. */
    struct nn_spike *spike;
    /* A convolutional plan (a genome with channels): its layers of filters
     * and channels (conv_plan.c), which NN_OP_CONV ops run. NULL otherwise. */
    struct nn_conv_net *conv;
};

#define NN_SLACK 8

/* Samples of a state are laid out batch-major: the values of neuron j are
 * y[j * stride .. j * stride + batch), so that the inner loop over a batch is
 * one vector operation. stride is 1 for batch 1, else batch rounded up to
 * NN_LANES (padding lanes hold harmless values and are never read out). */
#define NN_LANES 16

struct nn_state {
    const struct nn_plan *plan; /* borrowed */
    size_t batch, stride;
    int target;             /* enum nn_target: whose kernels the steps call */
    const float *in_rows;   /* batch > 1: the inputs' rows, [n_in][stride], for this step
                             * (y, or a caller's feature-major buffer read in place); NULL
                             * when the op reads in_sample (plan->own_io) */
    const float *in_sample; /* then: nn_step's inputs [batch][n_in] */
    float *in_scaled;       /* [batch][n_in] when the plan scales its inputs and owns its
                             * io: nn_step's inputs scaled, which in_sample then points to */
    float *y;               /* [n + 1][stride] this step (inputs at j < n_in; row n is 0) */
    float *y_prev;          /* [n + 1][stride] last step, 0 after a reset (row n is 0) */
    float *acc;             /* [n + 1][stride] scatter and tile contributions, 0 between steps */
    uint64_t *nz;           /* [n_layers] non-zero neurons counted since the reset */
    unsigned char *extra;   /* [plan->state_extra], NULL if 0: the ops' own (an int8 plan's
                             * edge lists), made from the plan alone: a reset keeps it */
    int extra_ready;        /* extra is made */
    uint64_t steps;
    struct nn_spike *spike;     /* a spiking plan's network, this state's own copy (else NULL) */
    struct nn_conv_state *conv; /* a convolutional plan's layers and scratch (else NULL) */
};

/* The outputs of an int8 plan's state of batch > 1, [batch][n_out],
 * dequantized from its values (int8_op.c; nn_state_read for plan->own_io). */
void nn_int8_read(const struct nn_state *s, float *out);

/* ---- convolutional plans (conv_plan.c) ------------------------------------ */

/* 0, or TV_EINVAL when g has channels, for the paths that run only plain
 * triplets ("fn: a genome with channels (convolutional) is not supported"). */
static inline int nn_no_channels(const struct genome *g, const char *fn, struct tv_error *err)
{
    return g->n_channels ? tv_error_set(err, TV_EINVAL,
                                        "%s: a genome with channels (convolutional) is not "
                                        "supported",
                                        fn)
                         : 0;
}

/* The plan of a genome with channels (nn_plan_compile calls it). */
int nn_conv_plan_compile(const struct genome *g, const struct nn_opts *o, struct nn_plan **out,
                         struct tv_error *err);
/* g with every pooled pixel of a hidden channel as a neuron gene (hidden,
 * identity, bias 0, the channel's depth) in gx (reset first): what the plan
 * and the reference lay out. 0, TV_ENOMEM or TV_EINVAL (a repeated id). */
int nn_conv_expand(const struct genome *g, struct genome *gx, struct tv_error *err);
void nn_conv_net_free(struct nn_conv_net *net);
/* 1 if an NN_OP_CONV runs after layer l's rows (net may be NULL). */
int nn_conv_net_has_layer(const struct nn_conv_net *net, size_t l);
/* A state's layers of plan p for rows of `stride` lanes; free with p. */
int nn_conv_state_new(const struct nn_plan *p, size_t stride, struct nn_conv_state **out,
                      struct tv_error *err);
void nn_conv_state_free(const struct nn_plan *p, struct nn_conv_state *cs);

/* What quantization (nn/deploy/) reads of a convolutional plan (conv_op.c):
 * its hidden channels and its layers of filters, borrowed from the plan. */
struct nn_conv_shape;
struct nn_conv_coef;
struct nn_conv_chan_view {
    uint32_t j, layer; /* dense index of its pooled pixel (0, 0); the plan layer of its pixels */
    size_t h, w, pool; /* the map before pooling */
    float bias;
    int act; /* enum genome_act */
};
struct nn_conv_group_view {
    const struct nn_conv_shape *shape;
    uint32_t layer;                   /* of its targets */
    const uint32_t *in_j;             /* [in_ch] dense index of each source's pixel (0, 0) */
    const uint32_t *out;              /* [out_ch] each target's channel index */
    const struct nn_conv_coef *coefs; /* [n_coefs] sorted by (out, in, ky, kx) */
    size_t n_coefs;
};
size_t nn_conv_net_n_chans(const struct nn_conv_net *net); /* 0 for NULL */
size_t nn_conv_net_n_groups(const struct nn_conv_net *net);
void nn_conv_net_chan(const struct nn_conv_net *net, size_t i, struct nn_conv_chan_view *v);
void nn_conv_net_group(const struct nn_conv_net *net, size_t i, struct nn_conv_group_view *v);
/* The states made after this call keep each channel's pre-activation map
 * (the sum of its filters plus its bias, before the activation), which
 * nn_conv_pre reads after a step: calibration's view. */
void nn_conv_net_keep_pre(struct nn_conv_net *net);
/* Channel i's pre-activation map of state s's last step, [h][w][stride]
 * (borrowed), or NULL when its plan's net was not asked to keep it. */
const float *nn_conv_pre(const struct nn_state *s, size_t i);

/* One activation: the function on one value and on a row of values (the row
 * version exists so that cheap activations vectorize over a batch). */
struct nn_act_entry {
    float (*one)(float x);
    void (*row)(float *v, size_t n);
    int makes_zeros; /* exactly 0 for a large share of inputs */
};
/* Indexed by enum genome_act; GENOME_ACT_COUNT entries (act.c). */
extern const struct nn_act_entry nn_acts[];

/* 0 if `who` (the engine, the trainer) runs neuron u's model in a network of
 * rate neurons (spiking 0: rate neurons only) or in a spiking one (spiking 1:
 * cuba neurons, and inputs of any model), else TV_EINVAL naming the neuron
 * and its model ("neuron 1: model lif is not run by the engine (rate neurons
 * only)"). A genome whose non-inputs are cuba neurons is spiking
 * (nn_genome_spiking). */
static inline int nn_model_check(const struct genome_neuron *u, int spiking, const char *who,
                                 struct tv_error *err)
{
    if (spiking ? u->kind == GENOME_INPUT || u->model == GENOME_MODEL_CUBA
                : u->model == GENOME_MODEL_RATE)
        return 0;
    return tv_error_set(err, TV_EINVAL, "neuron %u: model %s is not run by %s (%s)", u->id,
                        u->model < GENOME_MODEL_COUNT ? genome_models[u->model].name : "?", who,
                        spiking ? "a spiking network holds cuba neurons only"
                                : "rate neurons only");
}
/* 1 if some non-input neuron of g is a cuba neuron: nn_plan_compile then
 * makes a spiking plan. */
int nn_genome_spiking(const struct genome *g);
/* 0, or TV_EINVAL when g is spiking (nn_genome_spiking), for the paths that
 * read the rows of a rate plan (int8 quantization, the C export), `what`
 * naming the path: "FN: the network is spiking (neuron 2 has model cuba);
 * WHAT runs rate neurons only". */
int nn_no_spiking(const struct genome *g, const char *fn, const char *what, struct tv_error *err);
/* The spiking plan of g (nn_genome_spiking(g) is 1). */
int nn_spike_plan_compile(const struct genome *g, const struct nn_opts *o, struct nn_plan **out,
                          struct tv_error *err);
/* A copy of src (its parameters and state) into *out; TV_ENOMEM. */
int nn_spike_clone(const struct nn_spike *src, struct nn_spike **out, struct tv_error *err);

/* The references' evaluation order (reference.c, for it and the reference
 * trainer): g's neuron indices into order[n_neurons], the inputs first,
 * each part by (depth, id). 0, or TV_ENOMEM ("fn: out of memory"). */
int nn_reference_order(const struct genome *g, uint32_t *order, const char *fn,
                       struct tv_error *err);

/* SIMD targets (target.c): 1 if this CPU runs target t's code; the best one
 * it runs; 0 or TV_EINVAL ("FN: unknown target 7", "FN: this CPU cannot run
 * avx512f code") for a target asked of function fn. */
int nn_target_supported(int t);
int nn_target_best(void);
int nn_target_check(int target, const char *fn, struct tv_error *err);
#endif
