/* observe.c -- the observing op of a calibration (NN_OP_OBSERVE, calib.h):
 * after each step of the float engine, the activations and pre-activations
 * of every neuron into the calibration's ranges. It is a kernel of the op
 * table (ops.c) and calls nothing of the engine back. */
#include "kernel.h"
#include "calib.h"

static void stat_add(struct calib_stat *st, float v, uint64_t salt)
{
    if (!(v - v == 0.0f)) /* NaN or infinite: nothing to calibrate on */
        return;
    if (st->seen == 0 || v < st->lo)
        st->lo = v;
    if (st->seen == 0 || v > st->hi)
        st->hi = v;
    st->seen++;
    if (!st->samp)
        return;
    if (st->n_samp < st->cap) {
        st->samp[st->n_samp++] = v;
        return;
    }
    uint64_t k = tv_mix64(st->seen ^ (salt << 40)) % st->seen;
    if (k < st->cap)
        st->samp[k] = v;
}

/* The value of neuron src for sample b this step. */
static inline float val_now(const struct nn_plan *p, const struct nn_state *s, uint32_t src,
                            size_t b)
{
    const float *rows = src < p->n_in && s->batch > 1 ? s->in_rows : s->y;
    return rows[(size_t)src * s->stride + b];
}

/* The pre-activations of the channels' maps (before pooling) of a
 * convolutional plan into their layers' ranges: their pixels have no rows,
 * so the loop below adds only their bias-free 0 for them. */
static void observe_channels(const struct nn_plan *p, struct nn_state *s, struct nn_calib *c)
{
    for (size_t i = 0; i < nn_conv_net_n_chans(p->conv); i++) {
        struct nn_conv_chan_view ch;
        nn_conv_net_chan(p->conv, i, &ch);
        const float *pre = nn_conv_pre(s, i);
        for (size_t k = 0; pre && k < ch.h * ch.w; k++)
            for (size_t b = 0; b < s->batch; b++)
                stat_add(&c->pre[ch.layer], pre[k * s->stride + b], 2 * ch.layer + 1);
    }
}

/* The observing op: the activations and pre-activations of every neuron of
 * every sample of this step into the calibration's ranges. */
static void observe(const struct nn_plan *p, struct nn_state *s, const struct nn_op *op)
{
    (void)op;
    struct nn_calib *c = (struct nn_calib *)(uintptr_t)p;
    size_t st = s->stride;
    for (size_t l = 0; l < p->n_layers; l++) {
        for (uint32_t j = p->layer_start[l]; j < p->layer_start[l + 1]; j++) {
            for (size_t b = 0; b < s->batch; b++) {
                stat_add(&c->post[l], val_now(p, s, j, b), 2 * l);
                if (l == 0)
                    continue;
                double v = p->bias[j];
                for (uint32_t k = p->g_row[j]; k < p->g_end[j]; k++)
                    v += (double)p->g_w[k] * val_now(p, s, nn_idx(p->g_idx, p->row_bits, k), b);
                for (uint32_t k = p->r_row[j]; k < p->r_end[j]; k++)
                    v += (double)p->r_w[k] *
                         s->y_prev[(size_t)nn_idx(p->r_idx, p->row_bits, k) * st + b];
                stat_add(&c->pre[l], (float)v, 2 * l + 1);
            }
        }
    }
    observe_channels(p, s, c);
    c->observed += p->n * s->batch;
}

nn_op_fn *const nn_observe[NN_TARGET_COUNT] = {observe, observe, observe};
