/*
 * delay.h -- inside genome/ only: how the functions that change a genome's
 * connection list keep its delays (genome.h, "synaptic delays") in step.
 * Each is a no-op, or next to one, on a genome without delays.
 */
#ifndef TREVO_GENOME_DELAY_H
#define TREVO_GENOME_DELAY_H

#include "genome.h"

/* Grows g->delays to g->cap_conns when g has delays. 0 or -1 (out of memory). */
int genome_delays_fit(struct genome *g);
/* Makes g's delay array (every delay 1) if it has none. 0 or TV_ENOMEM. */
int genome_delays_make(struct genome *g, struct tv_error *err);
/* Drops the delays: every delay 1 again. */
void genome_delays_drop(struct genome *g);
/* A connection was inserted at i (delay 1) or removed from i. */
void genome_delays_inserted(struct genome *g, size_t i);
void genome_delays_removed(struct genome *g, size_t i);
/* dst's delays become src's (dst->n_conns == src->n_conns). 0 or TV_ENOMEM. */
int genome_delays_copy(struct genome *dst, const struct genome *src, struct tv_error *err);
/* 1 when every connection has the same delay in a and b (same n_conns). */
int genome_delays_equal(const struct genome *a, const struct genome *b);
/* Sorts the connections by key, their delays with them. 0 or TV_ENOMEM. */
int genome_delays_sort(struct genome *g, struct tv_error *err);
/* Connection i's delay: in [1, GENOME_MAX_DELAY], and 1 unless it goes from
 * a non-input (from_kind) into a cuba neuron (to_model). TV_EINVAL naming it. */
int genome_delays_check(const struct genome *g, size_t i, int from_kind, int to_model,
                        struct tv_error *err);
/* The delay mutation of genome_mutate (cfg->delay_rate; draws nothing when
 * it is 0 or delay_max < 2). 0 or TV_ENOMEM. */
int genome_delays_mutate(struct genome *g, const struct genome_mutation *cfg, struct tv_rng *rng,
                         struct tv_error *err);

/* The msgpack of format version 3 (genome.h): appends the bin of g's
 * delays to out (0 or -1, out of memory); reads one, bin_len bytes at p,
 * into g (n_conns read already): 0, or -1 when it is not 2 bytes per
 * connection or out of memory. */
int genome_delays_encode(const struct genome *g, struct tv_buf *out);
int genome_delays_decode(struct genome *g, const uint8_t *p, size_t bin_len);

#endif
