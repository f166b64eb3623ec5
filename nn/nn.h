/*
 * nn.h -- the compact sparse engine: compile a genome into an execution plan
 * and run it one time step at a time, for one input or a batch of inputs.
 *
 * A plan (nn_plan_compile) is one allocation, immutable once made, and reads
 * the genome only while compiling (a trainable plan keeps its weights and
 * biases in a second, mutable block: see "trainable plans"). In it:
 *   - neurons are renumbered densely: inputs first (by ascending id), then the
 *     others by (depth, id); a *layer* is a run of equal depth (the inputs are
 *     always layer 0 on their own);
 *   - feed-forward edges (depth(from) < depth(to)) are stored once, either by
 *     destination (CSR, read by *gather*) or by source (read by *scatter*,
 *     which skips sources that are exactly zero), chosen per source layer;
 *   - recurrent edges (depth(from) >= depth(to)) are kept apart, by
 *     destination, and read the previous time step (0 after a reset);
 *   - indices are 16-bit when the network has fewer than 65536 neurons,
 *     32-bit otherwise; rows are sorted by the index they read, so memory is
 *     read in order; rows of 1 to 7 edges are padded to 8, longer ones are
 *     not (the batch-1 step reads a last short group of 8 entries whole and
 *     masks what is past the row);
 *   - in a large network, edges between distant neurons are kept in tiles
 *     instead (below). A plan takes at most 8 bytes per connection plus
 *     O(neurons) (a trainable plan 4 more: its map back to the genome);
 *   - what a step does is a list of layer operations (ops): compute a run of
 *     layers from their rows, scatter a layer, add the tiles into a chunk.
 *     Each kind of op is one row of one table (nn/ops.c) with one kernel per
 *     direction (batch 1, batched; backward reserved for training), so a new
 *     kind of layer is one more row, not a flag threaded through the kernels.
 * Compiling is O(neurons + connections), whatever the shape of the graph
 * (no path enumeration; nn_plan_compile_work counts it).
 *
 * Semantics: one time step t computes, in depth order,
 *   y_t[j] = act_j(bias_j + sum_ff w * y_t[i] + sum_rec w * y_{t-1}[i]),
 * inputs y_t[k] = x_t[k] (no bias, no activation).
 *
 * Two implementations: nn_reference_* is a plain loop over the triplets
 * (double accumulation, obviously correct, slow); nn_state/nn_step is the fast
 * path. They agree to a relative error of about 1e-5 (the order of the sums
 * differs). The fast path itself is deterministic: the same plan and inputs
 * give the same bits on every x86-64 machine, because every sum has a fixed
 * order written in the C source (lane-wise vector code and no fused
 * multiply-add); the kernels are built once per SIMD target (enum
 * nn_target), all giving the same bits, and a state runs the best one its CPU
 * has. Every batch sums in one order (step1.c's: a row's edges round-robin
 * into 8 partials, then a fixed tree), so a sample gives the same bits alone
 * and anywhere in a batch of any size; so do the trainer's forward pass
 * (train.h) and the float C export, on a plan compiled with default options
 * (a tiled plan adds the edges between its chunks in another, also fixed,
 * order). The activations call libm (expf, tanhf, sinf): bit-identity
 * across machines assumes the same libm.
 *
 * This module includes only genome/ headers, libc, libm and the compiler's
 * <immintrin.h> (the spiking update): never MPI, SQLite or BLAS.
 */
#ifndef TREVO_NN_H
#define TREVO_NN_H

#include <stddef.h>
#include <stdint.h>

#include "genome.h"

/* ---- activations -------------------------------------------------------- */

/* act_j(x) for an activation id (enum genome_act). Unknown ids give x. The
 * sigmoids and tanh are exact libm expressions: 1/(1+expf(-x)),
 * 1/(1+expf(-4.9x)), tanhf(x). */
float nn_act_apply(int act, float x);
/* 1 if the activation returns exactly 0 for a large share of its inputs
 * (relu, step): such layers are worth a zero-skipping scatter. */
int nn_act_makes_zeros(int act);

/* ---- plans ---------------------------------------------------------------- */

/* How the feed-forward edges leaving a layer are read. Stored in options:
 * explicit values. */
enum nn_way {
    NN_WAY_AUTO = 0,   /* per layer: from a measured density, else by activation */
    NN_WAY_GATHER = 1, /* every layer gathers (the dense path) */
    NN_WAY_SCATTER = 2 /* every layer scatters its non-zero sources */
};

/* Below this measured share of non-zero activations, AUTO scatters a layer.
 * A scatter costs about 1.5-2x a gather per edge it does (a read-modify-write
 * instead of a register sum): the break-even is near 0.35 (4096 x 4096 at
 * 10 %, `trevo net bench --zeros`), and 0.25 leaves a margin, so that what
 * AUTO picks is never slower than gathering. */
#define NN_SCATTER_MAX_DENSITY 0.25f

struct nn_opts {
    int way;        /* enum nn_way */
    int index_bits; /* 0: 16 when it fits, else 32; or 16 / 32 to force */
    /* [n_density] measured share of non-zero activations per layer, as
     * nn_state_density() reports it for an earlier plan of the same genome;
     * NULL when not measured. */
    const float *density;
    size_t n_density;
    /* Neurons per chunk of the tiled form (see below): 0 picks
     * (NN_TILE_NEURONS for networks of more than NN_TILE_MIN_NEURONS, else
     * none); SIZE_MAX never tiles; any other value is raised to at least
     * sqrt(neurons), so that the plan stays O(neurons + connections). */
    size_t tile_neurons;
    /* 1: keep the map from the plan's entries back to the genome's
     * connections and neurons, and the weights and biases in a block of their
     * own that may be changed (nn_plan_params) and written back into the
     * genome (nn_plan_write_weights). 0 (the default): neither; the plan is
     * then exactly as large and as fast as without the option. */
    int trainable;
};

/* The tiled form, for networks whose values do not fit in the L2 cache. The
 * layers are cut into chunks of about tile_neurons neurons (whole layers, at
 * most 65536 neurons each); a gather or recurrent edge whose ends are in
 * different chunks leaves the rows and goes to the tile (target chunk,
 * source chunk) of a list of (16-bit source, 16-bit destination, weight)
 * within the two chunks, sorted by source. Just before the first layer of a
 * chunk, its tiles are added into the accumulators of its neurons, tile by
 * tile: every read and write then falls in two chunks that stay in cache,
 * instead of reading values at random over the whole network (uniform
 * long-range edges, as NEAT's add-connection makes them). */
#define NN_TILE_NEURONS 65536
#define NN_TILE_MIN_NEURONS 100000

struct nn_plan;

/* Compiles g into *out (owned by the caller, nn_plan_free). opts may be NULL
 * (defaults: AUTO, smallest indices). g should have passed genome_validate();
 * anything that would make the plan unsafe (unsorted or duplicate genes, a
 * missing end, an edge into an input, no input or output, a depth outside
 * [0, 1], an unknown activation) is refused with TV_EINVAL naming the gene.
 * TV_ENOMEM when out of memory; *out is NULL on any error. */
int nn_plan_compile(const struct genome *g, const struct nn_opts *opts, struct nn_plan **out,
                    struct tv_error *err);
void nn_plan_free(struct nn_plan *p); /* NULL is a no-op */
/* 1 when the plan scales its inputs (its genome has an input scaling,
 * genome.h): nn_step and nn_step_feature_major then take raw inputs and
 * give input k to the network as (x - shift[k]) * mul[k], in float, at
 * every batch with the same bits. 0 otherwise. */
int nn_plan_scales(const struct nn_plan *p);

size_t nn_plan_n_inputs(const struct nn_plan *p);
size_t nn_plan_n_outputs(const struct nn_plan *p);
size_t nn_plan_n_neurons(const struct nn_plan *p);
size_t nn_plan_n_layers(const struct nn_plan *p);
size_t nn_plan_n_conns(const struct nn_plan *p);
size_t nn_plan_n_recurrent(const struct nn_plan *p);
/* The plan's allocation (with a trainable plan's block of weights). */
size_t nn_plan_bytes(const struct nn_plan *p);
int nn_plan_index_bits(const struct nn_plan *p);
/* enum nn_way chosen for layer l (GATHER or SCATTER); -1 if l is out of range. */
int nn_plan_layer_way(const struct nn_plan *p, size_t l);
/* Chunks of the tiled form (0: not tiled) and the edges in its tiles. */
size_t nn_plan_n_chunks(const struct nn_plan *p);
size_t nn_plan_n_tiled(const struct nn_plan *p);
/* The iterations of the compile's loops that made p (every pass over the
 * neurons, the connections, the layers, the tiles, the id table, and each
 * step of a sort or search): what "O(neurons + connections)" counts, for
 * tests. */
size_t nn_plan_compile_work(const struct nn_plan *p);

/* ---- trainable plans ------------------------------------------------------ */

/* An entry that maps to no connection or neuron. */
#define NN_NONE UINT32_MAX

/* The mutable weights of a trainable plan, borrowed from it (valid until
 * nn_plan_free). The steps read them as they are at each step: change them
 * between steps, never during one. */
struct nn_params {
    /* [n_w] the plan's weights and biases in one block. w[k] is the weight of
     * genome connection conn_of[k], or, where conn_of[k] is NN_NONE, a bias,
     * padding or slack: padding and slack must stay 0. A connection has
     * exactly one entry. */
    float *w;
    const uint32_t *conn_of; /* [n_w] */
    size_t n_w;
    /* [n_bias] the bias of each neuron of the plan (inside w), and its genome
     * neuron index (NN_NONE for an input, whose bias is not used). */
    float *bias;
    const uint32_t *neuron_of; /* [n_bias] */
    size_t n_bias;
};

/* Fills *out for plan p. TV_ESTATE if p was not compiled trainable. */
int nn_plan_params(struct nn_plan *p, struct nn_params *out, struct tv_error *err);
/* Writes the plan's weights and biases into g, which must be the genome p
 * was compiled from (or a copy with the same genes in the same order; only
 * the counts are checked: TV_EINVAL if they differ). TV_ESTATE if p was not
 * compiled trainable. g is unchanged on error. */
int nn_plan_write_weights(const struct nn_plan *p, struct genome *g, struct tv_error *err);

/* ---- running: state and steps --------------------------------------------- */

/* The values of every neuron for `batch` samples, this step and the last.
 * Borrows the plan, which must outlive the state. */
struct nn_state;

/* A zeroed state for `batch` >= 1 samples (TV_EINVAL for 0 or a batch that
 * would overflow; TV_ENOMEM). Steps then allocate nothing. */
int nn_state_new(const struct nn_plan *p, size_t batch, struct nn_state **out,
                 struct tv_error *err);
void nn_state_free(struct nn_state *s); /* NULL is a no-op */
size_t nn_state_batch(const struct nn_state *s);
/* Starts a new sequence: every previous value becomes 0 (and the density
 * counters restart). */
void nn_state_reset(struct nn_state *s);
/* One time step. in: [batch][n_inputs], sample after sample; out (may be
 * NULL): [batch][n_outputs]. */
void nn_step(struct nn_state *s, const float *in, float *out);
/* The same with feature-major buffers, the layout the state keeps inside:
 * in: [n_inputs][batch] (input k of sample b at in[k * batch + b]); out (may
 * be NULL): [n_outputs][batch]. No transposition: for data sets stored this
 * way (as a dense sgemm takes them). Same bits as nn_step. When batch is a
 * multiple of 16 and `in` is 64-byte aligned, the step reads the inputs where
 * they are instead of copying them (unless a recurrent edge leaves an input). */
void nn_step_feature_major(struct nn_state *s, const float *in, float *out);
/* The outputs of the last step, [batch][n_outputs] (0 after a reset). */
void nn_state_read(const struct nn_state *s, float *out);
/* Steps after a reset over which nn_state_density() measures (counting costs
 * a pass over the neurons, so it stops after these). */
#define NN_DENSITY_STEPS 64

/* The measured share of non-zero activations per layer over the first
 * NN_DENSITY_STEPS steps since the last reset (batch > 1: the share of
 * neurons that were non-zero in at least one sample of the batch, which is
 * what a scatter can skip). density: [n_layers].
 * TV_ESTATE if no step was run yet. Feed it to nn_opts.density and recompile
 * to let AUTO choose gather or scatter per layer. */
int nn_state_density(const struct nn_state *s, float *density, struct tv_error *err);

/* The SIMD targets the kernels are built for, once each (explicit values).
 * Every target gives the same bits. */
enum nn_target {
    NN_TARGET_DEFAULT = 0, /* plain x86-64 (or whatever the compiler targets) */
    NN_TARGET_AVX2 = 1,
    NN_TARGET_AVX512F = 2,
    NN_TARGET_COUNT = 3
};
/* A new state runs the best target this CPU has; this picks another (for
 * tests and benchmarks). TV_EINVAL for an unknown target or one this CPU
 * cannot run ("nn_state_set_target: this CPU cannot run avx512f code"). */
int nn_state_set_target(struct nn_state *s, int target, struct tv_error *err);
int nn_state_target(const struct nn_state *s); /* enum nn_target */

/* ---- the reference ------------------------------------------------------- */

/* A plain loop over the triplets of g (borrowed: it must outlive the
 * reference and stay unchanged), for `batch` samples: for each neuron in depth
 * order, every connection into it, in canonical order, summed in double. Cost
 * O(neurons * connections) per step: for tests only. */
struct nn_reference;
int nn_reference_new(const struct genome *g, size_t batch, struct nn_reference **out,
                     struct tv_error *err);
void nn_reference_free(struct nn_reference *r); /* NULL is a no-op */
void nn_reference_reset(struct nn_reference *r);
/* Same layout as nn_step. */
void nn_reference_step(struct nn_reference *r, const float *in, float *out);

/* The spiking networks' own API (cuba neurons, events, frustum tiles) is
 * nn/spike/spike.h, which includes this header. */

#endif
