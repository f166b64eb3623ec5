/*
 * sparsify.h -- sparsity induced while training: policies that remove
 * connections (and dead neurons) from a trainer and grow new ones.
 *
 * A policy is parsed from a short spec ("l1:1e-4", "set:0.3") into a
 * struct nn_sparsity; a struct nn_sparsifier holds a list of them and their
 * state (the lock set, scratch arrays) and drives a trainer only through
 * nn/train/train.h (nn_trainer_view, _remove, _add, _zero_neurons,
 * _remove_neurons). Removal is physical: the connection leaves the trainer
 * (its weight and optimizer state with it) and so the genome written back.
 * Policies touch weights only, never biases.
 *
 * The policies (D, P, T, F, S real numbers, K, N whole numbers):
 *
 *  Per step -- nn_sparsifier_step(), called after each optimizer step:
 *   l1:D        D > 0. Every weight w != 0 becomes w - sgn(w)*D (in float);
 *               a weight that is 0, or reaches 0 or changes sign, is removed
 *               (and set to 0).
 *   lp:D,P      D > 0, P > 0. w becomes (float)(w - sgn(w)*D*|w|^(P-1))
 *               (computed in double); removal as for l1. lp:D,1 is l1:D,
 *               lp:D,2 the classic weight decay w*(1-D).
 *   threshold:T T > 0. A weight with |w| < T is removed.
 *   round:K     K in 0..9. Every weight becomes round(w*10^K)/10^K (in
 *               double, halves away from 0, then to float); a weight rounded
 *               to 0 is removed. Note that an optimizer update smaller than
 *               half a unit of the K-th digit is rounded away.
 *   zero:P      P in [0, 1]. Each weight is removed with probability P: one
 *               uniform draw u per weight in view order, removed iff u < P.
 *   zero_prop:P P in [0, 1]. With M = max |w| over the weights and
 *               r_k = 1 - |w_k|/M, weight k is removed with probability
 *               p_k = min(1, P * n * r_k / sum_j r_j), so the mean of p_k is
 *               P (before the cap at 1) and p_k decreases as |w_k| grows: the
 *               largest weight is never removed, a weight of 0 the most
 *               likely. When all |w| are equal (sum r = 0), p_k = P. Draws as
 *               for zero (one per weight, u < p_k).
 *   neuron:N    N >= 1. Every N optimizer steps (when nn_trainer_steps() is
 *               a multiple of N), each hidden neuron whose value was exactly
 *               0 for every sample and time step of every grad/step call
 *               since the last such check (or since the trainer was made) is
 *               removed with all its connections (nn_trainer_zero_neurons +
 *               nn_trainer_remove_neurons): a ReLU with a very negative bias.
 *               A check with no optimizer step since the last one (or
 *               ever) does nothing.
 *
 *  Per epoch -- nn_sparsifier_epoch(), called at the end of each epoch:
 *   neuron      as neuron:N with the window one epoch (between two calls of
 *               nn_sparsifier_epoch).
 *   set:F[,S]   F in (0, 1), S >= 0 (SET). Connections are grouped by layer
 *               pair (layer(from), layer(to)) as nn_train_view gives layers.
 *               In each pair of m connections, the floor(F*m) with the
 *               smallest |w| are removed (ties: smaller (from, to) first).
 *               Then as many are grown in the same pair: from drawn
 *               uniformly among the pair's from-layer neurons, to among its
 *               to-layer non-input neurons; a draw that exists after the
 *               removal, was grown in this call or is locked (lock:N) is
 *               drawn again, at most 100
 *               times per connection, after which that connection is not
 *               grown (only when the pair is nearly full). New weights are
 *               N(0, sigma^2) with sigma = S, or without S the root mean
 *               square of the pair's weights before the removal.
 *   rigl:F      F in (0, 1) (RigL). Only feed-forward layer pairs
 *               (layer(from) < layer(to)); removal per pair as for set. The
 *               same number is grown in each pair where the gradient of an
 *               ABSENT connection is largest in magnitude, new weights 0.
 *               The gradient of an absent connection i -> j, from the last
 *               grad/step call's last time step (nn_train_view value and
 *               delta, [n_neurons][batch]), is
 *                   g_ij = sum over the batch b of value_i[b] * delta_j[b],
 *               exactly dL/dw_ij at w_ij = 0 for a one-step sample; for a
 *               sequence, the last step's term of it (the earlier steps
 *               are not seen). The candidates
 *               are the pairs absent after the removal (a connection just
 *               removed may come back, unless lock:N). g is computed
 *               destination by destination: for each non-input neuron j of
 *               the to-layer, g_ij for each from-layer neuron i (in float:
 *               8 interleaved partial sums added in a fixed order; exactly
 *               0 when i's values or j's deltas are all 0), each candidate
 *               that would enter a top-k min-heap (ties: smaller (from, to)
 *               first) checked absent and unlocked. Cost per call: time
 *               O(batch * n_from * n_to) per pair (one pass of the dense
 *               product, once an epoch: 2.3e8 multiply-adds for
 *               784-1000-1000-10 at batch 128; measured in BENCHMARKS.md),
 *               memory O(k + connections) -- never an n_from x n_to matrix.
 *               TV_ESTATE when the view has no value and delta: no grad/step
 *               call yet, or nn_trainer_keep_values(t, 0) (a training loop
 *               that turns them off for speed turns them on for the last
 *               step of an epoch when nn_sparsifier_needs_values()).
 *
 *  Either:
 *   lock:N      N >= 1. A connection removed by this sparsifier at step s
 *               (s = nn_trainer_steps() at the removal) cannot be grown by
 *               set or rigl at steps s .. s+N-1; from step s+N on it can. A
 *               hash set of (from, to) -> s.
 *
 * Policies run in the order given; removals of one call are collected in one
 * mask and applied at once (a weight changed by l1 is seen changed by a
 * threshold after it); neuron:N runs after them. At an epoch's end each
 * set and rigl runs in turn, each removing and growing before the next
 * looks, and then neuron (last: removing neurons renumbers them, after which
 * the trainer's view holds no values for rigl to read). Randomness: policy i's draws at trainer
 * step s come from tv_rng_init(seed, i, s), so a run is deterministic and the draws of a step do
 * not depend on earlier steps. lock and neuron may be given at most once each (neuron and neuron:N
 * count as one).
 *
 * This module includes only genome/ and nn/ headers, libc and libm.
 */
#ifndef TREVO_NN_SPARSIFY_H
#define TREVO_NN_SPARSIFY_H

#include <stddef.h>
#include <stdint.h>

#include "genome.h"
#include "train.h"

/* Stored and printed: explicit values, grow only at the end. */
enum nn_sparsity_kind {
    NN_SPARSE_L1 = 0,        /* a = D */
    NN_SPARSE_LP = 1,        /* a = D, b = P */
    NN_SPARSE_THRESHOLD = 2, /* a = T */
    NN_SPARSE_ROUND = 3,     /* a = K */
    NN_SPARSE_ZERO = 4,      /* a = P */
    NN_SPARSE_ZERO_PROP = 5, /* a = P */
    NN_SPARSE_NEURON = 6,    /* a = N, 0 for once an epoch */
    NN_SPARSE_SET = 7,       /* a = F, b = S, or -1 for the pair's RMS */
    NN_SPARSE_RIGL = 8,      /* a = F */
    NN_SPARSE_LOCK = 9,      /* a = N */
    NN_SPARSE_COUNT
};

/* One parsed policy. */
struct nn_sparsity {
    int kind; /* enum nn_sparsity_kind */
    double a, b;
};

/* Parses one spec (see above). TV_EINVAL with a message that starts with the
 * spec, such as "l1:x: 'x' is not a number" or "zero:2: P must be in
 * [0, 1]"; the caller puts the option in front ("--sparsify "). */
int nn_sparsity_parse(const char *spec, struct nn_sparsity *out, struct tv_error *err);
/* Writes the spec of p (as parse reads it) into buf[size]; snprintf's result. */
int nn_sparsity_format(const struct nn_sparsity *p, char *buf, size_t size);

/* ---- the sparsifier ------------------------------------------------------ */

struct nn_sparsifier;

/* A sparsifier running policies p[0..n) (copied) with the given seed.
 * TV_EINVAL for a policy out of range or given twice where it may not be,
 * TV_ENOMEM. *out is NULL on error. n may be 0 (a sparsifier that does
 * nothing). */
int nn_sparsifier_new(const struct nn_sparsity *p, size_t n, uint64_t seed,
                      struct nn_sparsifier **out, struct tv_error *err);
void nn_sparsifier_free(struct nn_sparsifier *s); /* NULL is a no-op */

/* After each optimizer step: l1, lp, threshold, round, zero, zero_prop,
 * neuron:N. Weights may be changed in place (l1, lp, round) even when the
 * call then fails (TV_ENOMEM, or the trainer's error). */
int nn_sparsifier_step(struct nn_sparsifier *s, struct nn_trainer *t, struct tv_error *err);
/* At the end of each epoch: set and rigl, then neuron (once an epoch). */
int nn_sparsifier_epoch(struct nn_sparsifier *s, struct nn_trainer *t, struct tv_error *err);

/* 1 if nn_sparsifier_epoch reads the view's value and delta (rigl), else 0. */
int nn_sparsifier_needs_values(const struct nn_sparsifier *s);

/* What the sparsifier did since it was made. */
struct nn_sparsifier_stats {
    uint64_t removed; /* connections removed by the weight rules, set and rigl */
    uint64_t grown;   /* connections grown by set and rigl */
    uint64_t neurons; /* hidden neurons removed by neuron (their connections
                         are not counted in removed) */
};
void nn_sparsifier_stats(const struct nn_sparsifier *s, struct nn_sparsifier_stats *st);

/* ---- the rules, as pure functions (what the policies above run) ---------
 * Each works on w[0..n) and sets remove[k] = 1 for each weight it removes,
 * leaving the other entries of remove as they were; returns how many it set
 * (entries already 1 are not counted). */
size_t nn_sparsify_l1(float *w, size_t n, float d, uint8_t *remove);
size_t nn_sparsify_lp(float *w, size_t n, double d, double p, uint8_t *remove);
size_t nn_sparsify_threshold(const float *w, size_t n, float t, uint8_t *remove);
size_t nn_sparsify_round(float *w, size_t n, int k, uint8_t *remove);
size_t nn_sparsify_zero(size_t n, double p, struct tv_rng *rng, uint8_t *remove);
size_t nn_sparsify_zero_prop(const float *w, size_t n, double p, struct tv_rng *rng,
                             uint8_t *remove);

/* The lock set of lock:N: (from, to) -> the step it was removed at. */
struct nn_sparsify_lock {
    uint64_t *key;  /* [cap]: (from << 32 | to) + 1, 0 for an empty slot */
    uint64_t *step; /* [cap] */
    size_t n, cap;  /* cap a power of two or 0 */
    uint64_t n_steps;
};
/* An empty set for lock:n_steps (no allocation). n_steps 0: entries never
 * run out (a plain set of pairs, which set and rigl use for the existing
 * connections). */
void nn_sparsify_lock_init(struct nn_sparsify_lock *l, uint64_t n_steps);
void nn_sparsify_lock_release(struct nn_sparsify_lock *l);
/* Records that (from, to) was removed at step. Entries whose lock has run
 * out by `step` are dropped when the set grows. 0 or TV_ENOMEM (set
 * unchanged). */
int nn_sparsify_lock_add(struct nn_sparsify_lock *l, uint32_t from, uint32_t to, uint64_t step,
                         struct tv_error *err);
/* 1 if (from, to) may be grown at `step`, 0 while it is locked. */
int nn_sparsify_lock_allows(const struct nn_sparsify_lock *l, uint32_t from, uint32_t to,
                            uint64_t step);

/* rigl's selection for one layer pair: the k absent connections i -> j
 * (i over from_idx[0..n_from), j over to_idx[0..n_to), dense indices into
 * value and delta, [n_neurons][batch]) with the largest |g_ij|, g_ij as
 * above, in decreasing |g| (ties: smaller (from id, to id) first). absent(ctx,
 * from id, to id) says whether a pair is a candidate; id[] maps dense
 * indices to genome ids. out[k] gets (from, to, g) in weight; *n_out the
 * number found (< k when fewer candidates). 0 or TV_ENOMEM. */
int nn_sparsify_rigl_top(const float *value, const float *delta, size_t batch, const uint32_t *id,
                         const uint32_t *from_idx, size_t n_from, const uint32_t *to_idx,
                         size_t n_to, size_t k,
                         int (*absent)(void *ctx, uint32_t from, uint32_t to), void *ctx,
                         struct genome_conn *out, size_t *n_out, struct tv_error *err);

#endif
