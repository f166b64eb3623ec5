/*
 * spike.h -- nn/spike/: spiking networks of cuba neurons, run event-driven
 * (one vectorised update of every neuron a step, then only the connections
 * of the neurons that spiked), their plain reference, the plan a genome of
 * cuba neurons compiles into (nn_plan_compile makes it; nn_step runs it, as
 * any plan), and layered networks run in frustum tiles. The rate engine is
 * nn.h; this header adds what only spiking networks have.
 */
#ifndef TREVO_NN_SPIKE_H
#define TREVO_NN_SPIKE_H

#include "nn.h"

/* ---- spiking networks ------------------------------------------------------
 * Networks of "cuba" neurons (genome.h: leaky integrate-and-fire with
 * current-based synapses, time in steps, exact integration over a step), run
 * event-driven: each step updates every neuron's state (one vectorised pass),
 * collects the neurons that spiked into a queue, and adds the weights of
 * only their outgoing connections (rows by source) into the currents of the
 * targets, directly or through a ring of D delay bins. Cost per step: about
 * neurons + spikes x fan-out, whatever the number of connections.
 *
 * A spike of step t over a connection of delay d (1..NN_SPIKE_MAX_DELAY)
 * reaches its target's current at the end of step t + d - 1, so that it first
 * moves the potential in the update of step t + d (Brian2's synapses with a
 * delay of d - 1 steps do exactly this). Every connection takes at least one
 * step, feed-forward or recurrent: depth plays no part in a spiking network.
 * Neurons [0, n_in) are inputs: they never spike; input k's value x_k of a
 * step, times the weight, is held as a current into each target for that
 * step (the x of the equation in genome.h). State is double precision, so
 * that a network imported from Brian2 follows the same trajectory.
 *
 * Compiled from a genome, neurons are numbered inputs first, then the others,
 * each by ascending id; every non-input must be a cuba neuron; a
 * connection's delay is its gene (genome.h, "synaptic delays"; 1 when the
 * genome has none). Through nn_plan_compile,
 * such a genome gives a plan of one NN_OP_SPIKE op, and nn_step's out[k] is
 * 1 if output k spiked in that step, else 0 (batch 1 only).
 *
 * Two implementations behind one type: nn_spike_new, the event-driven
 * engine, and nn_spike_new_reference, a plain loop over every connection at
 * every step (O(connections) per step, for tests). Both compute the same
 * expressions in the same order: their spike trains and states are
 * identical, bit for bit. */
#define NN_SPIKE_MAX_DELAY 1024

struct nn_spike_neuron {
    double tau_m, tau_exc, tau_inh; /* in steps, > 0 */
    double threshold, reset, rest;  /* v > threshold spikes; v <- reset */
    double bias;                    /* a constant current: adds to rest */
    uint32_t refractory;            /* steps after a spike before it integrates again */
};
struct nn_spike_conn {
    uint32_t from, to; /* neuron indices, to >= n_in */
    double weight;     /* > 0 into I_exc, < 0 into I_inh */
    uint32_t delay;    /* 1..NN_SPIKE_MAX_DELAY steps */
};
struct nn_spike_desc {
    size_t n, n_in;                        /* neurons; the first n_in are inputs */
    const struct nn_spike_neuron *neurons; /* [n] (the inputs' entries are not read) */
    size_t n_conns;
    const struct nn_spike_conn *conns; /* [n_conns] sorted by from (ties keep their order) */
};
struct nn_spike;

/* A network for d (copied: d may go after the call), at rest: v = rest +
 * bias, currents 0, no spike pending. TV_EINVAL naming the bad neuron or
 * connection (a time constant not > 0 or not finite, an index out of range,
 * a connection into an input, a delay out of range, conns not sorted by
 * from), TV_ENOMEM. *out is NULL on error. */
int nn_spike_new(const struct nn_spike_desc *d, struct nn_spike **out, struct tv_error *err);
int nn_spike_new_reference(const struct nn_spike_desc *d, struct nn_spike **out,
                           struct tv_error *err);
/* The description of genome g (validated first) into *d, its arrays
 * malloc'd (nn_spike_desc_free); out_idx (may be NULL) receives a malloc'd
 * [n_outputs] neuron index of each output, by ascending id. TV_EINVAL names
 * a non-input neuron that is not a cuba neuron. */
int nn_spike_desc_from_genome(const struct genome *g, struct nn_spike_desc *d, uint32_t **out_idx,
                              struct tv_error *err);
void nn_spike_desc_free(struct nn_spike_desc *d);
/* 1 when p is the plan of a spiking network (nn_plan_compile of a genome
 * with cuba neurons), else 0. */
int nn_plan_spiking(const struct nn_plan *p);
void nn_spike_free(struct nn_spike *s); /* NULL is a no-op */
/* Back to rest: v = rest + bias, currents 0, no pending spike, no
 * refractory neuron, counters 0. */
void nn_spike_reset(struct nn_spike *s);
/* Sets the state of every neuron: v, I_exc, I_inh ([n] each; NULL leaves
 * that variable as it is). */
void nn_spike_set_state(struct nn_spike *s, const double *v, const double *i_exc,
                        const double *i_inh);
/* The engine's update runs the best SIMD target this CPU has (enum
 * nn_target, below); this picks another, for tests and benchmarks. Every
 * target gives the same bits. TV_EINVAL as nn_state_set_target. */
int nn_spike_set_target(struct nn_spike *s, int target, struct tv_error *err);
/* One step. in: [n_in] input values (may be NULL when n_in is 0). */
void nn_spike_step(struct nn_spike *s, const float *in);
/* The neurons that spiked in the last step, ascending, into *idx (borrowed
 * until the next step or reset); returns their count. */
size_t nn_spike_fired(const struct nn_spike *s, const uint32_t **idx);
/* Membrane potentials [n] (borrowed, valid while s lives). */
const double *nn_spike_v(const struct nn_spike *s);
/* Since the last reset: steps, spikes, and synaptic events (connections a
 * spike travelled). */
uint64_t nn_spike_steps(const struct nn_spike *s);
uint64_t nn_spike_n_spikes(const struct nn_spike *s);
uint64_t nn_spike_n_events(const struct nn_spike *s);

/* ---- layered spiking networks in frustum tiles -----------------------------
 * A benchmark-sized layered network of cuba neurons (one synaptic current,
 * tau_syn) too large for the caches: n_layers layers of `width` neurons;
 * neuron i of layer l connects to the `fanout` neurons (i + k - fanout/2) mod
 * width, k in [0, fanout), of layer l + 1 (a local receptive field), each
 * with its own weight, all with the same delay D. Layer 0 is driven by its
 * rest potentials. Only spikes travel between layers: layer l keeps the
 * sorted list of its neurons that spiked at each of its last 2D steps, and
 * layer l + 1 adds the weights of layer l's list of step t - D into its
 * currents at the start of its step t.
 *
 * Two schedules of the same steps. Layer by layer (window 1, one tile):
 * every step updates every layer in turn, streaming the whole state through
 * the caches once a step. Frustum tiles (window W, tile T): for each window
 * of W steps, for each tile of T neurons, for each layer, the W steps of that
 * tile of that layer -- a column of the network stays in cache for W steps.
 * The exact condition that makes this valid: every connection from layer l
 * to l + 1 has delay D >= W (here: one delay D for all, 1 <= W <= D). Then
 * layer l + 1 over steps t..t+W-1 reads only layer l's spikes of steps
 * <= t + W - 1 - D <= t - 1, all made in earlier windows; within a window the
 * layers do not depend on one another, and the lists of steps being written
 * (t..t+W-1) and read (t-D..t+W-1-D) never share a slot of the ring of 2D.
 * Both schedules add the weights into each current in the same order
 * (ascending source, one step's list at a time): the spike trains and the
 * potentials are the same bits (tests/test_spike.c), whatever W and T. */
struct nn_spike_layers_spec {
    size_t n_layers, width, fanout;
    uint32_t delay;                   /* D, 1..NN_SPIKE_MAX_DELAY */
    double weight;                    /* each weight uniform in [0.5, 1.5] x weight */
    double tau_m, tau_syn, threshold; /* steps; reset 0 */
    uint32_t refractory;              /* steps */
    uint64_t seed;
};
struct nn_spike_layers;
/* TV_EINVAL naming the bad size, TV_ENOMEM. */
int nn_spike_layers_new(const struct nn_spike_layers_spec *sp, struct nn_spike_layers **out,
                        struct tv_error *err);
void nn_spike_layers_free(struct nn_spike_layers *s); /* NULL is a no-op */
/* Back to the starting state (potentials spread over [0, 1), no spikes). */
void nn_spike_layers_reset(struct nn_spike_layers *s);
/* Runs `steps` steps in windows of `window` steps and tiles of `tile`
 * neurons (0 or width: one tile); window 1 with one tile is layer by layer.
 * TV_EINVAL when window is not in [1, D] or does not divide steps. */
int nn_spike_layers_run(struct nn_spike_layers *s, size_t steps, size_t window, size_t tile,
                        struct tv_error *err);
/* Spikes since the reset; an order-free hash of their (neuron, step). */
uint64_t nn_spike_layers_spikes(const struct nn_spike_layers *s);
uint64_t nn_spike_layers_hash(const struct nn_spike_layers *s);
/* Potentials [n_layers * width] (borrowed). */
const double *nn_spike_layers_v(const struct nn_spike_layers *s);
/* Bytes of the per-neuron state the update streams: v, I and the count. */
size_t nn_spike_layers_state_bytes(const struct nn_spike_layers *s);

#endif
