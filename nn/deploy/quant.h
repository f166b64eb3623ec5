/*
 * quant.h -- int8 networks: calibration, quantization, the NET.q file, the
 * int8 engine and the export of a network as one dependency-free C file.
 *
 * Quantization, in three steps:
 *   1. Calibration (nn_calib_*): the float network runs on data (a caller's
 *      input rows, or a task that drives the plan nn_calib_plan() gives it);
 *      an extra op at the end of every step records, per layer (neurons of
 *      equal depth, as in nn.h), the range of the activations y and of the
 *      pre-activations v = bias + sum w y; min-max, or a percentile of a
 *      deterministic sample of at most NN_CALIB_SAMPLES values per layer.
 *   2. Quantization (nn_quantize): every layer L gets an activation scale
 *      s_L and zero point z_L (y ~ s_L (q - z_L), q int8), and every layer
 *      but the inputs a pre-activation scale P_L and zero point pz_L.
 *   3. The weights. Every product into one destination neuron j lands in
 *      ONE int32 accumulator scale A_j, whatever layer its source is in
 *      (local, skip or recurrent): the int8 weight of the edge i -> j is
 *          wq = round(w * s_L(i) / A_j),  so  w * y_i ~ A_j * wq * (q_i - z_L(i)),
 *      i.e. the weight's scale is A_j / s_L(i), one scale per (destination
 *      neuron, source layer). A_j = max |w| s_L(i) / 127 over j's edges, so
 *      the largest product takes the whole int8 range. The bias is the int32
 *      round(b / A_j). Then
 *          acc_j = bias_j + sum_edges wq (q_src - z_src)          (int32)
 *          p_j   = clamp(round(acc_j * A_j / P_L) + pz_L, -128, 127)
 *      with A_j / P_L a fixed-point multiplier mult_j / 2^shift_j (rounding
 *      half up: floor((acc * mult + 2^(shift-1)) / 2^shift)), and
 *          q_j   = table[p_j]
 *      where the 256-entry table folds dequantize -> activation ->
 *      requantize: table[p] = quantize_L(act(P_L (p - pz_L))). A table
 *      depends only on (P_L, pz_L, act, s_L, z_L): one per pair (pre-
 *      activation scale, destination layer) and activation; identical
 *      tables are stored once. Recurrent edges read last step's q (z_L,
 *      i.e. the value 0, after a reset). Inputs are quantized as
 *      q = clamp(round(x / s_0) + z_0) (float division, rounding half away
 *      from zero), outputs dequantized as (float)(q - z) * s.
 * A network with channels (genome.h, "channels and filters") has its
 * channels quantized as one neuron per channel: a per-channel accumulator
 * scale, int8 coefficients, the table of its layer and activation, and max
 * pooling on the table's values (struct nn_qchan below).
 * Everything after the input quantization is integer arithmetic, so every
 * path (batch 1, batched, portable, AVX-512 VNNI, an exported C file) gives
 * the same bits.
 *
 * The int8 engine (nn_qplan_compile) makes an ordinary struct nn_plan whose
 * op list is one op of kind NN_OP_INT8 (nn/ops.c; with channels, the op
 * computes them first, int8_conv.c): nn_state_new, nn_step,
 * nn_step_feature_major, nn_state_read and the tasks run it unchanged, with
 * float inputs and the dequantized outputs. Inside, the state keeps each
 * neuron's value as u = q + 128 (uint8) for this step and the last, in the
 * state's scatter buffer (which an int8 plan does not otherwise use); the
 * int8 plan is one allocation (see int8_impl.h for its layout).
 *
 * This module includes only genome/ headers, nn/, libc and libm.
 */
#ifndef TREVO_NN_QUANT_H
#define TREVO_NN_QUANT_H

#include <stddef.h>
#include <stdint.h>

#include "nn.h"

/* ---- calibration ----------------------------------------------------------- */

/* Values kept per layer for a percentile (a deterministic reservoir sample). */
#define NN_CALIB_SAMPLES 65536

struct nn_calib;

struct nn_quant_opts {
    /* 0 or 100: min-max; else the central `percentile` per cent of the
     * observed values (e.g. 99.99) sets each range. */
    double percentile;
};

/* A calibration of g (read only here): compiles g (gather rows, no tiles)
 * with an observing op at the end of every step. o may be NULL (min-max).
 * *out owned by the caller. TV_EINVAL for a percentile outside [0, 100] or
 * a spiking genome (cuba neurons: int8 runs rate neurons only), else as
 * nn_plan_compile. A genome with channels is observed as its plan runs it:
 * the pooled pixels' activations with their layer's, and each channel's
 * pre-activation map (before pooling) with its layer's pre-activations. */
int nn_calib_new(const struct genome *g, const struct nn_quant_opts *o, struct nn_calib **out,
                 struct tv_error *err);
void nn_calib_free(struct nn_calib *c); /* NULL is a no-op */
/* The plan to run (nn_state_new, nn_step, or a task's evaluate): every step
 * of every state of it is recorded. Borrowed until nn_calib_free. */
const struct nn_plan *nn_calib_plan(const struct nn_calib *c);
/* Runs rows [n_rows][n_inputs] through the calibration plan, one time step
 * per row, resetting the state every reset_every rows (0: one sequence). */
int nn_calib_run(struct nn_calib *c, const float *rows, size_t n_rows, size_t reset_every,
                 struct tv_error *err);
/* Values observed so far (activations of every neuron, every sample). */
size_t nn_calib_n_observed(const struct nn_calib *c);

/* ---- quantized networks (the content of NET.q) ----------------------------- */

struct nn_qlayer {
    uint32_t start, end; /* neurons [start, end) in the dense order */
    float scale;         /* s_L: y ~ scale * (q - zp) */
    int32_t zp;          /* z_L in [-128, 127] */
    float pscale;        /* P_L, the pre-activation scale (0 for the inputs) */
    int32_t pzp;         /* pz_L */
};

struct nn_qneuron {
    uint32_t table;  /* index of its table */
    int32_t bias;    /* round(b / A_j) */
    int32_t mult;    /* [0, 2^31): A_j / P_L = mult / 2^shift */
    uint32_t shift;  /* [0, 62] */
    float acc_scale; /* A_j, for reports */
};

/* One edge into a neuron: its source (dense index) and int8 weight. */
struct nn_qedge {
    uint32_t src;
    int8_t w;
};

/* A hidden channel of a network with channels (conv/conv.h, genome.h): its
 * pooled pixels are the neurons [j, j + (h / pool) (w / pool)) of one layer,
 * which have no edges: the filters into the channel compute them. Its
 * integer sum at a pixel of its h x w map is
 *     acc = bias + sum over coefficients (ky, kx, w) into it of
 *                  w * (q_src - z_src)       (a source pixel outside its map: 0)
 * with one accumulator scale A_c for the channel (per output channel:
 * A_c = max |w| s_src / 127 over its coefficients), requantized to its
 * layer's pre-activation scale and looked up in its table as a neuron's
 * sum is; then max pooling of the table's values (quantization is monotone,
 * so max of the quantized values = quantized max). */
struct nn_qchan {
    uint32_t j;          /* dense index of its pooled pixel (0, 0) */
    uint32_t h, w, pool; /* the map before pooling; pool x pool windows */
    uint32_t table;      /* its table */
    int32_t bias;        /* round(b / A_c) */
    int32_t mult;        /* A_c / P_L = mult / 2^shift */
    uint32_t shift;
    float acc_scale; /* A_c, for reports */
};

/* A layer of filters (conv/conv.h's geometry): in_ch source maps of in_h x
 * in_w pixels (an input channel's or a hidden channel's pooled pixels, map k
 * from the dense index conv_src[src0 + k]) into the out_ch channels
 * chans[conv_dst[dst0 + k]], whose maps it makes exactly. */
struct nn_qconv {
    uint32_t in_ch, out_ch, in_h, in_w, k_h, k_w, stride, pad;
    uint32_t src0, dst0;   /* its sources and targets in conv_src and conv_dst */
    size_t coef0, n_coefs; /* coefs[coef0, coef0 + n_coefs), sorted by (out, in, ky, kx) */
};

/* One int8 coefficient of a layer of filters: from its source `in` to its
 * target `out` (indices in the layer's lists) at kernel offset (ky, kx). */
struct nn_qcoef {
    uint32_t out, in;
    uint8_t ky, kx;
    int8_t w;
};

/* A quantized network: dense order as nn.h (inputs first, then by (depth,
 * id)). Neuron j >= n_in has edges [row[j], row[j+1]) of edges, the
 * feed-forward ones first ([row[j], rec[j])), then the recurrent ones.
 * A network with channels has n_chans > 0: their pixels are neurons without
 * edges or a neuron entry (zero), computed by the layers of filters convs,
 * in their order (by the layer of their targets) before the neurons. */
struct nn_qnet {
    size_t n, n_in, n_out, n_layers, n_tables, n_edges, n_recurrent;
    size_t n_chans, n_convs, n_coefs, n_conv_src, n_conv_dst;
    struct nn_qchan *chans;    /* [n_chans] by j */
    struct nn_qconv *convs;    /* [n_convs] */
    uint32_t *conv_src;        /* [n_conv_src] */
    uint32_t *conv_dst;        /* [n_conv_dst] */
    struct nn_qcoef *coefs;    /* [n_coefs] */
    uint32_t *out_map;         /* [n_out] dense index of the k-th output */
    struct nn_qlayer *layers;  /* [n_layers] (layer 0: the inputs) */
    uint32_t *layer_of;        /* [n] */
    struct nn_qneuron *neuron; /* [n] (inputs: unused, zero) */
    uint32_t *row;             /* [n + 1] */
    uint32_t *rec;             /* [n] first recurrent edge of j */
    struct nn_qedge *edges;    /* [n_edges] */
    int8_t *tables;            /* [n_tables][256], entry p + 128 */
    /* The input scaling of the genome it was quantized from (genome.h),
     * NULL when none: shift [n_in] then mul [n_in]. The float inputs of its
     * plan and of the exported C's predict are scaled, (x - shift) * mul in
     * float, before they are quantized; int8 inputs are taken as they are. */
    float *in_scale;
};

/* Quantizes the network c was made of from what c observed: TV_ESTATE if
 * nothing was observed; TV_ELIMIT if a neuron has more than NN_QUANT_MAX_FANIN
 * edges (its int32 sum could overflow). *out owned by the caller. */
#define NN_QUANT_MAX_FANIN 32768
int nn_quantize(const struct nn_calib *c, struct nn_qnet **out, struct tv_error *err);
void nn_qnet_free(struct nn_qnet *q); /* NULL is a no-op */

/* The NET.q text format (version 1, or 2 for a network with an input
 * scaling, or 3 for a network with channels), written by nn_qnet_write and
 * read by nn_qnet_read:
 *   trevo-qnet 1
 *   size N N_IN N_OUT N_LAYERS N_TABLES N_EDGES
 *   convs N_CHANS N_CONVS N_COEFS SCALED        (version 3 only; SCALED 0 or 1:
 *                                                the scale lines follow or not)
 *   scale K SHIFT MUL                           (version 2: N_IN lines, k = 0..)
 *   layer START END SCALE ZP PSCALE PZP        (N_LAYERS lines, in order)
 *   out J                                       (N_OUT lines)
 *   table HEX                                   (N_TABLES lines, 512 hex digits)
 *   chan J H W POOL TABLE BIAS MULT SHIFT ACC_SCALE   (version 3: N_CHANS lines by J)
 *   conv IN_CH OUT_CH IN_H IN_W K_H K_W STRIDE PAD N   (version 3: N_CONVS of these,
 *   src J      (IN_CH lines: a source map's pixel (0, 0))   each with its lines)
 *   dst C      (OUT_CH lines: a target channel's index)
 *   c OUT IN KY KX W                            (N lines)
 *   neuron J TABLE BIAS MULT SHIFT ACC_SCALE N_FF N_REC   (j = N_IN .. N-1 but pixels)
 *   e SRC W                                     (N_FF then N_REC lines after it)
 *   end
 * Floats are %.9g (they read back to the same bits). Every value is checked
 * (ranges, layers contiguous and covering the neurons, feed-forward sources
 * earlier in a shallower layer, recurrent sources in a layer at least as
 * deep; a channel's pooled pixels in one layer between the inputs and the
 * outputs, apart from the other channels'; a layer of filters' sources N_IN
 * inputs or a channel's pooled map of IN_H x IN_W, its targets channels of
 * one layer deeper than every source, whose maps it makes exactly, the
 * layers of filters in the order of their targets' layers; at most
 * NN_QUANT_MAX_FANIN coefficients into a channel); errors name the file
 * (name) and line. A network without channels is written as version 1 or
 * 2, the bytes it always had. */
#define NN_QNET_VERSION 3 /* the newest; 1 and 2 are written for networks without channels */
#define NN_QNET_MAX_NEURONS (1u << 24)
#define NN_QNET_MAX_EDGES (1u << 27)
int nn_qnet_write(const struct nn_qnet *q, struct tv_buf *out, struct tv_error *err);
int nn_qnet_read(const char *text, size_t len, const char *name, struct nn_qnet **out,
                 struct tv_error *err);
/* 1 if the bytes start like a NET.q file. */
int nn_qnet_sniff(const void *data, size_t len);

/* ---- device figures -------------------------------------------------------- */

/* What a network costs on a device, as the C export (below) writes it:
 *   flash  bytes of every constant array the file holds (weights, indices,
 *          biases, requantization, tables, output map, input scaling; with
 *          channels their coefficients, geometry, biases, requantization):
 *          what `size -A` gives for its .rodata sections (the code, a few
 *          hundred bytes of loops, is not counted);
 *   ram    bytes of its mutable arrays (the values of one step, last step's
 *          too when the network is recurrent; a flag; with channels the
 *          int32 sums of the largest map before pooling);
 *   macs   multiply-accumulates of one inference: one per edge, and per
 *          coefficient one per pixel of its channel's map before pooling. */
struct nn_cost {
    uint64_t flash, ram, macs;
};
/* The exact figures of q's exported C. TV_ELIMIT as nn_qnet_export_c. */
int nn_qnet_cost(const struct nn_qnet *q, struct nn_cost *c, struct tv_error *err);
/* The figures of the int8 C of float genome g before calibration (with
 * channels too): ram and macs exact, flash exact except that two layers
 * whose tables come out identical share one (256 bytes less): an upper
 * bound, what a budget checks. TV_EINVAL as nn_calib_new (spiking), else as
 * nn_plan_compile. */
int nn_genome_cost(const struct genome *g, struct nn_cost *c, struct tv_error *err);

/* ---- the int8 engine ------------------------------------------------------- */

/* An int8 plan of q: an ordinary struct nn_plan (nn_plan_free frees it) that
 * nn_state_new/nn_step run. Its steps never read q again. */
int nn_qplan_compile(const struct nn_qnet *q, struct nn_plan **out, struct tv_error *err);
/* 1 if p is an int8 plan. */
int nn_plan_is_int8(const struct nn_plan *p);
/* 1 if a state of target `target` (enum nn_target) runs the batched int8
 * kernel with AVX-512 VNNI on this CPU (else the portable one). */
int nn_int8_uses_vnni(int target);
/* The int8 values of the last step's outputs, [batch][n_out] (state of an
 * int8 plan; the bits trevo_net_predict_int8 of an export gives). */
void nn_qstate_read_int8(const struct nn_state *s, int8_t *out);

/* ---- export as C ----------------------------------------------------------- */

/* One C99 file without libm, malloc or stdio (module prefix `prefix`, e.g.
 * "trevo_net", a C identifier): static const tables and weights,
 * PREFIX_N_INPUTS / PREFIX_N_OUTPUTS (upper case), and
 *   int PREFIX_predict_int8(const int8_t *in, int8_t *out);
 *   int PREFIX_predict(const float *in, float *out);
 *   void PREFIX_reset(void);
 * each predict one time step; the outputs are bit for bit those of the int8
 * engine (a network with channels too: its channels first, in their order,
 * then the neurons). TV_EINVAL for a prefix that is not an identifier. */
int nn_qnet_export_c(const struct nn_qnet *q, const char *prefix, struct tv_buf *out,
                     struct tv_error *err);
/* The same for a float genome: float weights, the engine's sums in the
 * canonical order of the reference (so the bits may differ from nn_step's in
 * the last place). Only activations that need no libm (identity, relu, abs,
 * step): any other is TV_EINVAL naming the neuron (quantize it instead); a
 * spiking genome (cuba neurons) is TV_EINVAL too, nothing written. */
int nn_net_export_c(const struct genome *g, const char *prefix, struct tv_buf *out,
                    struct tv_error *err);

#endif
