/* int8_impl.h -- private to nn/deploy/: the int8 engine's plan layout and
 * what its files share (int8_plan.c compiles a plan; int8_step.c, the
 * portable kernels, and int8_avx512.c, the AVX-512 ones, run its one op,
 * NN_OP_INT8 (nn/ops.c); int8_op.c holds the op's entries and the reads).
 *
 * An int8 plan is one allocation: a struct nn_plan header (so that
 * nn_state_new, nn_step and the tasks run it as any plan), the flat form of
 * quant_impl.h without its rows and slots, and its arrays: per non-input
 * neuron 12 bytes (folded bias, multiplier, shift, pre-activation zero point,
 * table), per edge 2 bytes (its source's offset in its window, its int8
 * weight), per entry 7 bytes, per chunk 8, per distinct table 256.
 *
 * The values a step reads (this step's, then last step's for recurrent
 * edges: 2 (n + 1) slots) are cut into windows of WIN = 256. Within each
 * layer the neurons are numbered by falling fan-in (the plan's own order;
 * out_map and every slot follow it), and each run of up to 16 of them is a
 * chunk. A chunk's edges are grouped by window: per window it touches, an
 * entry (or more, if a neuron has more than 7 edges there) holds how far the
 * window is past the last one (1 byte; a gap over 255 takes entries with no
 * edges) and how many edges each of its 16 neurons has there (3 bits each).
 * The entry's edges follow in two steps: first up to 4 of each neuron (the
 * neurons in order), then the rest; so a step is at most 64 edges, a
 * neuron's at most 4, the bytes of one vpdpbusd lane.
 *
 * A state of an int8 plan keeps u = q + 128 of every neuron in its scatter
 * buffer (s->acc, unused by int8 plans): this step's values [n + 1][stride]
 * then last step's [n + 1][stride]. A step quantizes the inputs, computes
 * the neurons layer by layer (the plan's order within a layer), and at
 * batch 1 or feature-major writes the dequantized outputs to s->y, where
 * nn_state_read (batch 1) and nn_step_feature_major find them. With recurrent edges, a step first
 * copies this step's values to last step's (or, after a reset, every layer's zero code).
 *
 * Paths: batch 1 on target avx512f of a CPU with AVX-512 VNNI, VBMI and
 * VBMI2 runs a chunk at a time: per entry the window's 256 values in four
 * registers, per step the edges expanded into their lanes (vpexpandb), the
 * values looked up (vpermi2b) and multiplied (vpdpbusd): no gathers. The
 * other paths (portable, and batches, 64 samples at a time with vpdpbusd on
 * VNNI) run a neuron at a time over its edge list, which each state lists
 * once from the entries (nn_int8_lists). At batches nn_step hands the op its
 * caller's rows (plan->own_io): they are quantized straight into the
 * values' columns (qcols), and nn_state_read dequantizes the outputs from
 * them (nn_int8_read), with no float copy in the state. The sums are exact
 * integers (|acc| < 2^31 by the limits of quant.h), so every path gives the
 * same bits.
 *
 * The files call down this list, never up: int8_op.c, int8_avx512.c,
 * int8_step.c; int8_plan.c calls none of them (they read the plan's layout
 * from this header).
 */
#ifndef TREVO_NN_INT8_IMPL_H
#define TREVO_NN_INT8_IMPL_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "quant_impl.h"

/* ---- channels (int8_conv.c) ------------------------------------------------
 * A plan of a network with channels (quant.h, struct nn_qchan) keeps each
 * layer's pixels after its other neurons (lend[l] .. lstart[l + 1]), so that
 * the neurons' kernels stop at lend[l] and never write a pixel; the step
 * computes every channel first (nn_qconv_run, right after nn_int8_begin),
 * in their order (a channel reads inputs and shallower channels only), in
 * blocks of up to 64 samples: its sum map (int32) from its segments (one per
 * layer of filters into it), requantized and looked up into a uint8 map,
 * max-pooled into its pixels. The maps are the state's scratch after the
 * edge lists (qp->scratch_at bytes into s->extra).
 *
 * At batch 1 a layer of filters of stride 1 runs on padded copies of its
 * sources: before the first channel of a layer, every source map of the
 * layers of filters into it is copied as int16 values u - zu, with pad
 * zeros around it (qp->pad_at bytes into s->extra), so that a coefficient
 * is one run over the map laid out in rows of the padded width (the
 * columns past the output's are computed and dropped): a long loop that
 * vectorizes. The same integers, the same bits. */
struct qc_chan {
    uint32_t j;          /* plan index of its pooled pixel (0, 0) */
    uint32_t h, w, pool; /* its map before pooling */
    uint32_t seg0, seg1; /* its segments */
    uint32_t cv0, cv1;   /* the layers of filters whose sources to pad before it (batch 1) */
    int32_t bias, mult;
    uint32_t shift, tab;
    int32_t pzp;
};
struct qc_seg { /* the coefficients of one layer of filters into one channel */
    uint32_t in_h, in_w, k_h, k_w, stride, pad;
    uint32_t c0, c1; /* its coefficients in ccoefs */
};
struct qc_coef {
    uint32_t src; /* plan index of its source map's pixel (0, 0) */
    uint32_t pat; /* its padded copy in the pad scratch (int16 entries; batch 1) */
    uint8_t zu;   /* the source's zero code z + 128: a pixel outside the map */
    uint8_t ky, kx;
    int8_t w;
};
struct qc_conv { /* a layer of filters' sources, padded at batch 1 */
    uint32_t in_ch, in_h, in_w, pad;
    uint32_t src0; /* its sources in csrc */
    uint32_t at;   /* its first padded copy in the pad scratch (int16 entries) */
};
struct qc_src {
    uint32_t j;  /* plan index of the map's pixel (0, 0) */
    uint32_t zu; /* z + 128 of its layer */
};

struct nn_qplan {
    struct nn_plan plan;    /* first: the kernels get a struct nn_plan * */
    struct nn_qflat f;      /* row and idx unused; w: [n_edges + 64] in entry order */
    uint32_t *lend;         /* [n_layers] end of layer l's computed neurons (its pixels follow) */
    struct qc_chan *chans;  /* [n_chans] */
    struct qc_seg *segs;    /* [n_segs] */
    struct qc_coef *ccoefs; /* [n_ccoefs] */
    struct qc_conv *cconvs; /* [n_cconvs] */
    struct qc_src *csrc;    /* [n_csrc] */
    size_t n_chans, n_segs, n_ccoefs, n_cconvs, n_csrc, max_px, scratch_at;
    /* batch 1: the padded copies (pad_n int16) and the grid (int32) in s->extra */
    size_t pad_at, pad_n, grid_at;
    uint8_t *off;    /* [n_edges + 64] each edge's source: its offset in its window */
    uint8_t *ent;    /* [n_ents * ENT + 8] the windows' entries */
    uint32_t *cent;  /* [n_chunks + 1] each chunk's first entry */
    uint32_t *cedge; /* [n_chunks + 1] each chunk's first edge */
    size_t n_chunks, n_ents, n_edges;
    struct nn_op op;
};

#define CHUNK 16
#define WIN 256 /* values a window holds: source slot s is offset s % WIN of window s / WIN */
#define ENT 7   /* bytes of an entry: the window step, then 16 counts of 3 bits */
#define ENT_MAX 7

/* The lanes (neurons) of the chunk starting at neuron j0 of the layer that
 * ends at neuron `end`. */
static inline uint32_t chunk_lanes(uint32_t j0, uint32_t end)
{
    return end - j0 < CHUNK ? end - j0 : CHUNK;
}

/* Entry k of e: its window step (bits 0..7) and lane l's count at bits
 * 8 + 3 l (8 bytes read: the array has one of slack). */
static inline uint64_t entry(const uint8_t *e, size_t k)
{
    uint64_t x;
    memcpy(&x, e + k * ENT, sizeof x);
    return x & 0x00ffffffffffffffu;
}

static inline uint32_t ent_count(uint64_t x, uint32_t lane)
{
    return (uint32_t)(x >> (8 + 3 * lane)) & 7;
}

/* Edges of a lane of count c in the entry's step h (0 or 1): up to 4. */
static inline uint32_t step_count(uint32_t c, uint32_t h)
{
    return c <= 4 * h ? 0 : c - 4 * h > 4 ? 4 : c - 4 * h;
}

/* Entries of a state's edge lists (nn_int8_lists): every edge, and up to 3 of
 * padding a non-input neuron. */
static inline size_t list_cap(const struct nn_qplan *qp)
{
    return qp->n_edges + 3 * (qp->f.n - qp->f.n_in);
}

/* ---- a step: shared by every path -------------------------------------------- */

/* This step's values and last step's (stride bytes a neuron). */
static inline uint8_t *values(const struct nn_state *s)
{
    return (uint8_t *)s->acc;
}

/* Quantizes x[0..n) into u (nn_q_input), and dequantizes u[0..n) into y. */
typedef void qrow_fn(const float *x, size_t n, uint8_t *u, float scale, int32_t zp);
typedef void drow_fn(const uint8_t *u, size_t n, float *y, float scale, int32_t zp);
/* Quantizes a caller's rows in[batch][n_in] into the columns u[k * st + b]. */
typedef void qcols_fn(const float *in, size_t n_in, size_t batch, size_t st, uint8_t *u,
                      float scale, int32_t zp);

/* The portable dequantization of u[0..n) into y (every path's at batch 1). */
static inline void drow(const uint8_t *u, size_t n, float *y, float scale, int32_t zp)
{
    for (size_t i = 0; i < n; i++)
        y[i] = (float)((int32_t)u[i] - 128 - zp) * scale;
}

/* Before a step: last step's values from this one's (or the zero codes
 * after a reset), then the inputs quantized: at batch 1 from s->y, at
 * batches from the rows s->in_rows ([n_in][stride]), or, when nn_step
 * leaves those NULL (plan->own_io), from its caller's s->in_sample
 * ([batch][n_in]). q and qc: the path's quantizers (int8_step.c). */
void nn_int8_begin(const struct nn_plan *p, const struct nn_qflat *f, struct nn_state *s,
                   qrow_fn *q, qcols_fn *qc);

/* After a step: the dequantized outputs into s->y. */
static inline void finish(const struct nn_qflat *f, struct nn_state *s, drow_fn *d)
{
    if (s->batch > 1 && !s->in_rows)
        return; /* nn_step's caller reads them with nn_int8_read */
    size_t st = s->stride;
    const uint8_t *cur = values(s);
    for (size_t k = 0; k < f->n_out; k++) {
        size_t j = f->out_map[k];
        d(cur + j * st, s->batch, s->y + j * st, f->out_scale, f->out_zp);
    }
}

/* The table entry of neuron j for the sum acc. */
static inline uint8_t neuron_out(const struct nn_qflat *f, uint32_t i, int32_t acc)
{
    uint32_t u = nn_q_requant(acc, f->mult[i], f->shift[i], f->pzp[i]);
    return f->tables[(size_t)f->tab[i] * 256 + u];
}

/* The channels of a step of a plan with channels (int8_conv.c): after
 * nn_int8_begin, before the neurons. */
void nn_qconv_run(const struct nn_qplan *qp, struct nn_state *s);

/* ---- edge lists (int8_step.c) ------------------------------------------------ */

/* The portable paths and the batches run a neuron at a time over its edges,
 * listed in the state's extra (plan->state_extra bytes) from the entries on
 * the first step that needs them: start[i] ([n - n_in + 1]: neuron j = n_in
 * + i has edges [start[i], start[i + 1])), then slot[] and w[], each list
 * padded to a multiple of 4 with slot 0 and weight 0 (so the VNNI kernel
 * takes 4 at a time with no tail): 5 bytes an edge and up to 19 a neuron,
 * in the state, not the plan; the vector batch-1 path reads the plan's
 * entries in place. */
struct nn_int8_lists {
    const uint32_t *start, *slot;
    const int8_t *w;
};

/* The lists of state s of plan qp (made on its first call, s->extra_ready). */
struct nn_int8_lists nn_int8_lists(const struct nn_qplan *qp, struct nn_state *s);

/* ---- the portable kernels (int8_step.c) -------------------------------------- */

void nn_int8_one(const struct nn_plan *p, struct nn_state *s, const struct nn_op *op);
void nn_int8_batch(const struct nn_plan *p, struct nn_state *s, const struct nn_op *op);

/* Samples [b0, b0 + nb) (nb <= 64) of neuron j, portably: its edges are
 * slot[0..len), w[0..len). */
static inline __attribute__((always_inline)) void
block_portable(const struct nn_qflat *f, uint8_t *v, size_t st, uint32_t j, const uint32_t *slot,
               const int8_t *w, uint32_t len, size_t b0, size_t nb)
{
    int32_t a[64];
    uint32_t i = j - (uint32_t)f->n_in;
    for (size_t b = 0; b < nb; b++)
        a[b] = f->fbias[i];
    for (uint32_t k = 0; k < len; k++) {
        const uint8_t *x = v + (size_t)slot[k] * st + b0;
        int32_t wk = w[k];
        for (size_t b = 0; b < nb; b++)
            a[b] += wk * x[b];
    }
    uint8_t *o = v + (size_t)j * st + b0;
    for (size_t b = 0; b < nb; b++)
        o[b] = neuron_out(f, i, a[b]);
}

/* ---- the AVX-512 kernels (int8_avx512.c) ------------------------------------- */

/* 1 if this CPU has AVX-512 VNNI and VBMI (0 off x86-64). */
int nn_int8_has_vnni(void);
#if defined(__x86_64__) && defined(__GNUC__)
/* The entries of target avx512f: the AVX-512 kernels where the CPU has
 * them (checked on every step: one cached load), else the portable ones. */
void nn_int8_one_avx512f(const struct nn_plan *p, struct nn_state *s, const struct nn_op *op);
void nn_int8_batch_avx512f(const struct nn_plan *p, struct nn_state *s, const struct nn_op *op);
/* The outputs out[batch][n_out] from the columns u[out_map[k] * st + b]
 * (nn_int8_read on a CPU with VNNI). */
void nn_int8_dcols_avx512(const uint8_t *u, const uint32_t *out_map, size_t n_out, size_t batch,
                          size_t st, float *out, float scale, int32_t zp);
#else
#define nn_int8_one_avx512f nn_int8_one
#define nn_int8_batch_avx512f nn_int8_batch
#endif

#endif
