/*
 * compile.h -- private to the compile of nn/ (plan.c, order.c, tile.c): the
 * state of one nn_plan_compile and its phases.
 *
 * The compile runs in phases, each one pass over the neurons (n) or the
 * connections (m), so that it is O(n + m) whatever the graph's shape:
 *   1. order (order.c): check the neurons; inputs by id, the rest by
 *      (depth, id) with a stable radix sort on the depth's bits; cut layers;
 *   2. ways and chunks (plan.c, tile.c): gather or scatter per layer; the
 *      chunks of the tiled form;
 *   3. classify (plan.c): map every connection's ends to dense indices and
 *      put it in a category (gather, recurrent, scatter, tile); count rows;
 *   4. place (plan.c): lay out the plan and put every edge in its row or
 *      tile, source by source in dense order, so that rows and tiles come
 *      out sorted.
 */
#ifndef TREVO_NN_COMPILE_H
#define TREVO_NN_COMPILE_H

#include <stddef.h>
#include <stdint.h>

#include "nn_impl.h"

/* An edge's category, kept in the top bits of its dense destination. */
#define NN_CAT_GATHER 0u
#define NN_CAT_REC 1u
#define NN_CAT_SCATTER 2u
#define NN_CAT_TILE 3u
#define NN_CAT_SHIFT 30
#define NN_IDX_MASK ((1u << NN_CAT_SHIFT) - 1)

/* id -> neuron index: a direct table when ids are compact (the usual case
 * for genomes built from scratch), else open addressing. After the order
 * phase it gives dense indices. */
struct nn_id_table {
    uint32_t *slot_id;  /* hash: [cap]; unused for direct */
    uint32_t *slot_idx; /* [cap] index + 1, 0 for empty */
    uint32_t mask, max_id;
    int direct;
};

/* One compile: its inputs, the plan's header while sizes are counted, and
 * scratch freed as a whole (nn_compile_free). "old" indices are positions in
 * g->neurons, "dense" ones the plan's. */
struct nn_compile;
/* A phase a capability adds after the order phase (nn_compile_run). */
typedef int nn_place_fn(struct nn_conv_net *net, const struct nn_compile *c);

struct nn_compile {
    const struct genome *g;
    const struct nn_opts *o;
    struct tv_error *err;
    struct nn_plan hd; /* sizes first; copied into the plan once they are known */
    struct nn_id_table ids;
    uint32_t *old_of, *new_of;       /* [n] dense -> old, old -> dense */
    uint32_t *layer_of;              /* [n] by dense index */
    uint32_t *run_end;               /* [n] the first dense index deeper than j */
    uint32_t *tmp;                   /* [n] */
    float *depth;                    /* [n] by dense index */
    uint32_t *layer_start;           /* [n + 1] (n_layers + 1 used) */
    uint8_t *way;                    /* [n + 1] (n_layers used) */
    uint32_t *conn_start;            /* [n + 1] by old index: the first connection from it */
    uint32_t *cd;                    /* [m] dense destination | category << NN_CAT_SHIFT */
    uint32_t *row_g, *row_r, *row_s; /* [n + 1] counts, then starts, then cursors */
    uint32_t *sd_row;                /* [n + 1] scatter edges by destination */
    uint32_t *sd_src, *sd_conn;      /* [n_scatter] (sd_conn: trainable plans) */
    float *sd_w;                     /* [n_scatter] */
    uint32_t *c_layer;               /* [n_layers + 1] chunks of the tiled form */
    uint32_t *chunk_of;              /* [n] by dense index (tiled plans) */
    uint32_t *t_cur;                 /* [2 n_chunks^2 + 1] tile counts, starts, cursors */
    size_t work;                     /* inner-loop iterations, for nn_plan_compile_work */
    struct nn_conv_net *conv;        /* a convolutional plan's layers (else NULL) */
    nn_place_fn *place;              /* conv's phase after the order (when conv is not NULL) */
};

void nn_compile_free(struct nn_compile *c);
/* Compiles g with options o (checked): the plain compile, which knows no
 * capability by name. conv (may be NULL) is placed by `place` after the
 * order phase and owned by the plan on success: the convolutional compile
 * (conv/conv_plan.c) passes its nn_conv_net_place, so that compile.c and
 * conv_plan.c do not call each other. */
int nn_compile_run(const struct genome *g, const struct nn_opts *o, struct nn_conv_net *conv,
                   nn_place_fn *place, struct nn_plan **out, struct tv_error *err);
/* After the order phase: the dense indices and layers of conv's channels. */
int nn_conv_net_place(struct nn_conv_net *net, const struct nn_compile *c);
void nn_id_table_free(struct nn_id_table *t);

static inline uint32_t nn_id_hash(uint32_t id, uint32_t mask)
{
    return (uint32_t)(((uint64_t)id * 0x9E3779B97F4A7C15ull) >> 32) & mask;
}

/* The dense index of neuron `id` (after the order phase), or -1. */
static inline int64_t nn_id_find(const struct nn_id_table *t, uint32_t id)
{
    if (t->direct)
        return id <= t->max_id ? (int64_t)t->slot_idx[id] - 1 : -1;
    for (uint32_t h = nn_id_hash(id, t->mask); t->slot_idx[h]; h = (h + 1) & t->mask)
        if (t->slot_id[h] == id)
            return (int64_t)t->slot_idx[h] - 1;
    return -1;
}

/* The classification of an edge from dense sj to dense dj: 1 if it is
 * recurrent (depth(dj) <= depth(sj): it reads the last step), 0 if it is
 * feed-forward. run_end_sj is run_end[sj], the first dense index deeper than
 * sj (the dense order is by depth; an input and a hidden neuron at depth 0
 * are equally deep). The one place the engine decides it: genome.h's
 * definition (genome_conn_class: depth(from) >= depth(to) is recurrent) as
 * one integer compare on the dense order, which sorts by depth. */
static inline int nn_compile_is_recurrent(uint32_t run_end_sj, uint32_t dj)
{
    return dj < run_end_sj;
}

/* The way of layer l in a plan compiled with default options (no way, no
 * densities): scatter when l > 0 and every neuron of the layer makes zeros
 * (nn_act_makes_zeros: most of its values are 0, which scatter skips), else
 * gather. The trainer's forward sums in the order this gives (train_kern.c),
 * so that it has the engine's bits. */
static inline int nn_compile_default_way(size_t l, int all_make_zeros)
{
    return l > 0 && all_make_zeros ? NN_WAY_SCATTER : NN_WAY_GATHER;
}

/* Checks the neurons (ids ascending, kinds, activations, depths) and counts
 * inputs and outputs into hd. 0 or TV_EINVAL naming the neuron. */
int nn_compile_check(struct nn_compile *c);

/* Phase 1 (order.c), after nn_compile_check: orders the neurons; fills hd.n_in,
 * n_out, n_layers, old_of, new_of, depth, layer_start, layer_of, run_end,
 * and the id table (dense indices). 0 or TV_ENOMEM. */
int nn_compile_order(struct nn_compile *c);

/* Phase 2 (tile.c): cuts the layers into the chunks of the tiled form when
 * the options and the size call for it; fills hd.n_chunks, c_layer,
 * chunk_of and t_cur (zeroed). 0 or TV_ENOMEM. */
int nn_compile_chunks(struct nn_compile *c);
/* After the counts: tile starts from counts (t_cur), hd.n_tiled. */
void nn_compile_tile_starts(struct nn_compile *c);
/* Into plan p: the chunks and tile starts. */
void nn_compile_tile_copy(const struct nn_compile *c, struct nn_plan *p);

#endif
