/* state.c -- states and steps: nn_state_*, nn_step, nn_step_feature_major.
 *
 * A step walks its plan's ops (ops.c) in order, calling each op's kernel for
 * the state's batch (step1.c for batch 1, stepb.c for batches) and SIMD
 * target. What a step computes, neuron by neuron:
 *   v = ((bias + gather_ff) + gather_rec) + acc[j],  y[j] = act(v)
 * where acc[j] holds what scatter layers before it pushed into j this step,
 * and what the tiles into its chunk added (tiled plans: just before the
 * chunk's first layer, tile after tile, each in its order). Every sum has a
 * fixed order written in the kernels, so the compiler may vectorize but not
 * reorder (no -ffast-math, no FMA contraction), and every target gives the
 * same bits. A batched step reads feature-major inputs in place when their
 * rows have the state's stride, and a network without recurrent edges keeps
 * one buffer of values instead of swapping two (step_begin).
 */
#include <stdlib.h>
#include <string.h>

#include "nn_impl.h"
#include "spike.h"

/* Runs the ops of s's plan for one step. */
static void run_ops(struct nn_state *s)
{
    const struct nn_plan *p = s->plan;
    int b = s->batch > 1;
    for (size_t k = 0; k < p->n_ops; k++) {
        const struct nn_op *op = &p->ops[k];
        const struct nn_op_kind *kind = &nn_ops[op->kind];
        (b ? kind->forwardb : kind->forward1)[s->target](p, s, op);
    }
}

/* ---- states --------------------------------------------------------------- */

int nn_state_new(const struct nn_plan *p, size_t batch, struct nn_state **out, struct tv_error *err)
{
    *out = NULL;
    if (batch == 0)
        return tv_error_set(err, TV_EINVAL, "nn_state_new: batch must be at least 1");
    if (batch > ((size_t)1 << 24))
        return tv_error_set(err, TV_EINVAL, "nn_state_new: batch %zu is larger than %zu", batch,
                            (size_t)1 << 24);
    if (p->spike && batch != 1)
        return tv_error_set(err, TV_EINVAL, "nn_state_new: a spiking plan runs batch 1, not %zu",
                            batch);
    size_t stride = batch == 1 ? 1 : (batch + NN_LANES - 1) / NN_LANES * NN_LANES;
    size_t head = (sizeof(struct nn_state) + 63) & ~(size_t)63;
    if (p->n > SIZE_MAX / 16 / stride)
        return tv_error_set(err, TV_EINVAL, "nn_state_new: %zu neurons x batch %zu is too large",
                            p->n, batch);
    /* n + 1 rows: row n is the zero slot that slack entries read */
    size_t vals = (((p->n + 1) * stride * sizeof(float)) + 63) & ~(size_t)63;
    size_t bytes = head + 3 * vals + p->n_layers * sizeof(uint64_t);
    bytes = (bytes + 63) & ~(size_t)63;
    size_t at_extra = bytes;
    if (p->state_extra > SIZE_MAX - 64 - bytes)
        return tv_error_set(err, TV_EINVAL, "nn_state_new: %zu bytes of extra are too many",
                            p->state_extra);
    bytes += (p->state_extra + 63) & ~(size_t)63;
    size_t at_scaled = bytes; /* inputs scaled for an op that owns its io */
    if (p->in_shift && p->own_io)
        bytes += (batch * p->n_in * sizeof(float) + 63) & ~(size_t)63;
    unsigned char *m = aligned_alloc(64, bytes);
    if (!m)
        return tv_error_set(err, TV_ENOMEM, "nn_state_new: out of memory (%zu bytes)", bytes);
    struct nn_state *s = (struct nn_state *)m;
    s->plan = p;
    s->batch = batch;
    s->stride = stride;
    s->y = (float *)(m + head);
    s->y_prev = (float *)(m + head + vals);
    s->acc = (float *)(m + head + 2 * vals);
    s->nz = (uint64_t *)(m + head + 3 * vals);
    memset(m + head, 0, at_extra - head);
    s->extra = p->state_extra ? m + at_extra : NULL;
    s->in_scaled = p->in_shift && p->own_io ? (float *)(m + at_scaled) : NULL;
    s->extra_ready = 0;
    s->steps = 0;
    s->in_rows = s->y;
    s->spike = NULL;
    s->conv = NULL;
    if (p->conv) {
        int rc = nn_conv_state_new(p, stride, &s->conv, err);
        if (rc) {
            free(m);
            return rc;
        }
    }
    if (p->spike) {
        int rc = nn_spike_clone(p->spike, &s->spike, err);
        if (rc) {
            free(m);
            return rc;
        }
    }
    s->target = nn_target_best();
    *out = s;
    return 0;
}

int nn_state_set_target(struct nn_state *s, int target, struct tv_error *err)
{
    int rc = nn_target_check(target, "nn_state_set_target", err);
    if (rc)
        return rc;
    s->target = target;
    return 0;
}

int nn_state_target(const struct nn_state *s)
{
    return s->target;
}

void nn_state_free(struct nn_state *s)
{
    if (s) {
        nn_spike_free(s->spike);
        nn_conv_state_free(s->plan, s->conv);
    }
    free(s);
}

size_t nn_state_batch(const struct nn_state *s)
{
    return s->batch;
}

void nn_state_reset(struct nn_state *s)
{
    size_t nv = (s->plan->n + 1) * s->stride;
    memset(s->y, 0, nv * sizeof *s->y);
    memset(s->y_prev, 0, nv * sizeof *s->y_prev);
    memset(s->acc, 0, nv * sizeof *s->acc);
    memset(s->nz, 0, s->plan->n_layers * sizeof *s->nz);
    s->steps = 0;
    if (s->spike)
        nn_spike_reset(s->spike);
}

/* This step's values go where the last step's were, which become y_prev; a
 * network without recurrent edges never reads y_prev, so it keeps writing
 * the same buffer (half the memory a step touches). */
static void step_begin(struct nn_state *s)
{
    if (s->plan->n_recurrent) { /* in rows or in tiles */
        float *t = s->y;
        s->y = s->y_prev;
        s->y_prev = t;
    }
}

/* The input scaling (nn_plan_scales): the one expression of every engine. */
static inline float scale_in(float x, float shift, float mul)
{
    return (x - shift) * mul;
}

void nn_step(struct nn_state *s, const float *in, float *out)
{
    const struct nn_plan *p = s->plan;
    const float *sh = p->in_shift, *mu = p->in_mul;
    step_begin(s);
    if (s->batch == 1) {
        memcpy(s->y, in, p->n_in * sizeof *in);
        for (size_t k = 0; sh && k < p->n_in; k++)
            s->y[k] = scale_in(s->y[k], sh[k], mu[k]);
        run_ops(s);
    } else if (p->own_io) { /* the op reads the caller's rows itself */
        if (sh) {
            for (size_t b = 0; b < s->batch; b++)
                for (size_t k = 0; k < p->n_in; k++)
                    s->in_scaled[b * p->n_in + k] = scale_in(in[b * p->n_in + k], sh[k], mu[k]);
            in = s->in_scaled;
        }
        s->in_rows = NULL;
        s->in_sample = in;
        run_ops(s);
    } else if (sh) { /* as below, scaled on the way */
        size_t st = s->stride;
        for (size_t b = 0; b < s->batch; b++)
            for (size_t k = 0; k < p->n_in; k++)
                s->y[k * st + b] = scale_in(in[b * p->n_in + k], sh[k], mu[k]);
        s->in_rows = s->y;
        run_ops(s);
    } else {
        /* [batch][n_in] -> [n_in][stride] in tiles of 8 samples x 16 inputs:
         * rows of `in` a multiple of 4 KB apart share one L1 set, so no more
         * than 8 of them at a time */
        size_t st = s->stride, b_n = s->batch, n_in = p->n_in;
        for (size_t b0 = 0; b0 < b_n; b0 += 8) {
            size_t b1 = b0 + 8 < b_n ? b0 + 8 : b_n;
            for (size_t k0 = 0; k0 < n_in; k0 += 16) {
                size_t k1 = k0 + 16 < n_in ? k0 + 16 : n_in;
                for (size_t b = b0; b < b1; b++)
                    for (size_t k = k0; k < k1; k++)
                        s->y[k * st + b] = in[b * n_in + k];
            }
        }
        s->in_rows = s->y;
        run_ops(s);
    }
    s->steps++;
    if (out)
        nn_state_read(s, out);
}

void nn_step_feature_major(struct nn_state *s, const float *in, float *out)
{
    const struct nn_plan *p = s->plan;
    if (s->batch == 1) {
        nn_step(s, in, out);
        return;
    }
    step_begin(s);
    size_t st = s->stride, b_n = s->batch;
    /* Rows of `in` that have the state's stride and alignment are read in
     * place, unless the next step needs them as last step's inputs (a row
     * read at an unaligned address costs two lines). */
    const float *yin = in;
    if (p->in_shift) { /* scaled into the state's rows */
        for (size_t k = 0; k < p->n_in; k++)
            for (size_t b = 0; b < b_n; b++)
                s->y[k * st + b] = scale_in(in[k * b_n + b], p->in_shift[k], p->in_mul[k]);
        yin = s->y;
    } else if (b_n != st || p->rec_reads_input || ((uintptr_t)in & 63)) {
        for (size_t k = 0; k < p->n_in; k++)
            memcpy(s->y + k * st, in + k * b_n, b_n * sizeof *in);
        yin = s->y;
    }
    s->in_rows = yin;
    run_ops(s);
    s->steps++;
    if (out && b_n == st && p->out_contiguous) /* one block, not n_out small copies */
        memcpy(out, s->y + (size_t)p->out_map[0] * st, p->n_out * st * sizeof *out);
    else if (out)
        for (size_t k = 0; k < p->n_out; k++)
            memcpy(out + k * b_n, s->y + (size_t)p->out_map[k] * st, b_n * sizeof *out);
}

void nn_state_read(const struct nn_state *s, float *out)
{
    const struct nn_plan *p = s->plan;
    if (s->batch == 1 && p->out_contiguous) {
        memcpy(out, s->y + p->out_map[0], p->n_out * sizeof *out);
        return;
    }
    if (s->batch == 1) {
        for (size_t k = 0; k < p->n_out; k++)
            out[k] = s->y[p->out_map[k]];
        return;
    }
    if (p->own_io) {
        nn_int8_read(s, out);
        return;
    }
    size_t n_out = p->n_out, st = s->stride;
    for (size_t b0 = 0; b0 < s->batch; b0 += 8) { /* tiles, as for the inputs */
        size_t b1 = b0 + 8 < s->batch ? b0 + 8 : s->batch;
        for (size_t k0 = 0; k0 < n_out; k0 += 16) {
            size_t k1 = k0 + 16 < n_out ? k0 + 16 : n_out;
            for (size_t b = b0; b < b1; b++)
                for (size_t k = k0; k < k1; k++)
                    out[b * n_out + k] = s->y[(size_t)p->out_map[k] * st + b];
        }
    }
}

int nn_state_density(const struct nn_state *s, float *density, struct tv_error *err)
{
    const struct nn_plan *p = s->plan;
    if (s->steps == 0)
        return tv_error_set(err, TV_ESTATE, "nn_state_density: no step was run since the reset");
    double steps = (double)(s->steps < NN_DENSITY_STEPS ? s->steps : NN_DENSITY_STEPS);
    for (size_t l = 0; l < p->n_layers; l++) {
        double size = (double)(p->layer_start[l + 1] - p->layer_start[l]);
        density[l] = (float)((double)s->nz[l] / (steps * size));
    }
    return 0;
}
