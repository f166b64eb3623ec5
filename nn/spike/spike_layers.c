/* spike_layers.c -- layered spiking networks run layer by layer or in
 * frustum tiles (nn.h, "layered spiking networks").
 *
 * State: v, I (one synaptic current) and the refractory count of every
 * neuron, [n_layers * width] each, layer after layer. Only spikes travel
 * between layers: each layer keeps the sorted lists of its neurons that
 * spiked in each of its last 2D steps (a ring of 2D slots), and layer l+1
 * reads layer l's list of step s - D at the start of its step s, adding the
 * weights into I of its targets (the neurons of a tile only, in frustum
 * order). A source i reaches targets (i + k - fanout/2) mod width, k in
 * [0, fanout): a local receptive field, so a tile's sources are a window of
 * the list, found by binary search.
 */
#include <stdlib.h>
#include <string.h>

#include "spike_impl.h"

struct nn_spike_layers {
    size_t n_layers, width, fanout, n, ring;
    uint32_t delay;
    double dm, ds, ce, threshold, ref_m1;
    double *v, *cur, *cnt, *rest; /* [n] */
    float *w;                     /* [n][fanout], the weights out of each neuron */
    uint32_t *list;               /* [n_layers][ring][width]: neurons that spiked, ascending */
    uint32_t *n_list;             /* [n_layers][ring] */
    uint8_t *flag;                /* [width + 8]: spiked in the step being made */
    uint64_t t, spikes, hash;
};

static uint64_t mix(uint64_t x)
{
    x += UINT64_C(0x9E3779B97F4A7C15);
    x = (x ^ (x >> 30)) * UINT64_C(0xBF58476D1CE4E5B9);
    x = (x ^ (x >> 27)) * UINT64_C(0x94D049BB133111EB);
    return x ^ (x >> 31);
}

void nn_spike_layers_free(struct nn_spike_layers *s)
{
    if (!s)
        return;
    TV_FREE_ALL(s->v, s->w, s->list, s->n_list, s->flag, s);
}

int nn_spike_layers_new(const struct nn_spike_layers_spec *sp, struct nn_spike_layers **out,
                        struct tv_error *err)
{
    *out = NULL;
    if (sp->n_layers < 1 || sp->width < 1 || sp->fanout < 1 || sp->fanout > sp->width ||
        sp->width > UINT32_MAX / 2 || sp->delay < 1 || sp->delay > NN_SPIKE_MAX_DELAY ||
        sp->n_layers > ((size_t)1 << 32) / sp->width)
        return tv_error_set(err, TV_EINVAL,
                            "layered spiking network: %zu layers of %zu neurons, fan-out %zu, "
                            "delay %u: need fan-out in [1, width] and delay in [1, %d]",
                            sp->n_layers, sp->width, sp->fanout, sp->delay, NN_SPIKE_MAX_DELAY);
    if (!(sp->tau_m > 0) || !(sp->tau_syn > 0) || !isfinite(sp->tau_m) || !isfinite(sp->tau_syn) ||
        !isfinite(sp->weight) || !isfinite(sp->threshold))
        return tv_error_set(err, TV_EINVAL,
                            "layered spiking network: a time constant not > 0 or a value not "
                            "finite");
    struct nn_spike_layers *s = calloc(1, sizeof *s);
    if (!s)
        return tv_error_set(err, TV_ENOMEM, "layered spiking network: out of memory");
    s->n_layers = sp->n_layers;
    s->width = sp->width;
    s->fanout = sp->fanout;
    s->n = sp->n_layers * sp->width;
    s->delay = sp->delay;
    s->ring = 2 * (size_t)sp->delay;
    s->dm = exp(-1.0 / sp->tau_m);
    nn_spike_coef(sp->tau_m, sp->tau_syn, &s->ds, &s->ce);
    s->threshold = sp->threshold;
    s->ref_m1 = sp->refractory ? (double)sp->refractory - 1 : 0;
    s->v = malloc(4 * s->n * sizeof *s->v);
    s->w = malloc(s->n * s->fanout * sizeof *s->w);
    s->list = malloc(s->n * s->ring * sizeof *s->list);
    s->n_list = calloc(s->n_layers * s->ring, sizeof *s->n_list);
    s->flag = calloc(s->width + 8, 1);
    if (!s->v || !s->w || !s->list || !s->n_list || !s->flag) {
        nn_spike_layers_free(s);
        return tv_error_set(err, TV_ENOMEM,
                            "layered spiking network: out of memory for %zu "
                            "neurons",
                            sp->n_layers * sp->width);
    }
    s->cur = s->v + s->n;
    s->cnt = s->cur + s->n;
    s->rest = s->cnt + s->n;
    struct tv_rng rng;
    tv_rng_init(&rng, sp->seed, 19, 0);
    /* layer 0 is driven by its rests (0.5 to 1.5 over a threshold of 1: some
     * neurons fire on their own); the others rest at 0 */
    for (size_t j = 0; j < s->n; j++)
        s->rest[j] = j < s->width ? 0.5 + tv_rng_uniform(&rng) : 0.0;
    for (size_t k = 0; k < s->n * s->fanout; k++)
        s->w[k] = (float)(sp->weight * (0.5 + tv_rng_uniform(&rng)));
    nn_spike_layers_reset(s);
    *out = s;
    return 0;
}

void nn_spike_layers_reset(struct nn_spike_layers *s)
{
    struct tv_rng rng;
    tv_rng_init(&rng, 1, 20, 0);
    for (size_t j = 0; j < s->n; j++)
        s->v[j] = tv_rng_uniform(&rng); /* spread phases */
    memset(s->cur, 0, 2 * s->n * sizeof *s->cur);
    memset(s->n_list, 0, s->n_layers * s->ring * sizeof *s->n_list);
    s->t = s->spikes = s->hash = 0;
}

/* Layer l's sources in [lo, hi) that spiked at step `from` add their weights
 * into the currents of their targets in [a, b) of layer l + 1. */
static void deliver(struct nn_spike_layers *s, size_t l, const uint32_t *spk, size_t n_spk,
                    uint32_t lo, uint32_t hi, size_t a, size_t b)
{
    size_t W = s->width, F = s->fanout, half = F / 2;
    double *cur = s->cur + (l + 1) * W;
    for (size_t p = tv_lower_u32(spk, sizeof *spk, 0, 0, n_spk, lo); p < n_spk && spk[p] < hi;
         p++) {
        size_t i = spk[p];
        const float *w = s->w + (l * W + i) * F;
        size_t j = i >= half ? i - half : i + W - half; /* target of k = 0 */
        if (j >= a && j + F <= b) { /* the whole field in the tile: the common case */
            for (size_t k = 0; k < F; k++)
                cur[j + k] += w[k];
            continue;
        }
        for (size_t k = 0; k < F; k++, j = j + 1 == W ? 0 : j + 1)
            if (j >= a && j < b)
                cur[j] += w[k];
    }
}

/* Step t of neurons [a, b) of layer l: the spikes of layer l - 1 of step
 * t - D join the currents, then the exact update, the threshold, the reset;
 * the spikes go to the end of layer l's list of step t (ascending, as tiles
 * come in order). */
static void layer_step(struct nn_spike_layers *s, size_t l, uint64_t t, size_t a, size_t b)
{
    size_t W = s->width;
    if (l > 0 && t >= s->delay) {
        size_t F = s->fanout, half = F / 2;
        size_t slot = (t - s->delay) % s->ring;
        const uint32_t *spk = s->list + ((l - 1) * s->ring + slot) * W;
        size_t n_spk = s->n_list[(l - 1) * s->ring + slot];
        /* sources reaching [a, b): [a - (F - 1 - half), b + half), cyclic, in
         * ascending order of source */
        long long lo = (long long)a - (long long)(F - 1 - half), hi = (long long)(b + half);
        if (hi - lo >= (long long)W) {
            deliver(s, l - 1, spk, n_spk, 0, (uint32_t)W, a, b);
        } else if (lo < 0) {
            deliver(s, l - 1, spk, n_spk, 0, (uint32_t)hi, a, b);
            deliver(s, l - 1, spk, n_spk, (uint32_t)(lo + (long long)W), (uint32_t)W, a, b);
        } else if (hi > (long long)W) {
            deliver(s, l - 1, spk, n_spk, 0, (uint32_t)(hi - (long long)W), a, b);
            deliver(s, l - 1, spk, n_spk, (uint32_t)lo, (uint32_t)W, a, b);
        } else {
            deliver(s, l - 1, spk, n_spk, (uint32_t)lo, (uint32_t)hi, a, b);
        }
    }
    size_t slot = t % s->ring;
    uint32_t *out = s->list + (l * s->ring + slot) * W;
    uint32_t *n_out = &s->n_list[l * s->ring + slot];
    if (a == 0)
        *n_out = 0;
    size_t base = l * W, nf = *n_out;
    double *restrict v = s->v + base, *restrict cur = s->cur + base, *restrict cnt = s->cnt + base;
    const double *restrict rest = s->rest + base;
    const double dm = s->dm, ds = s->ds, ce = s->ce, th = s->threshold, ref = s->ref_m1;
    uint8_t *restrict flag = s->flag;
    /* one branch-free pass the compiler vectorises, then the rare spikes */
    for (size_t j = a; j < b; j++) {
        double e = cur[j], vj = v[j], c = cnt[j];
        double vn = rest[j] + (vj - rest[j]) * dm + e * ce;
        cur[j] = e * ds;
        int frozen = c > 0;
        double vv = frozen ? vj : vn;
        int spk = !frozen && vv > th;
        v[j] = spk ? 0.0 : vv;
        cnt[j] = spk ? ref : frozen ? c - 1 : c;
        flag[j] = (uint8_t)spk;
    }
    for (size_t j = a; j < b; j++) {
        if (j + 8 <= b) { /* eight at a time while they are silent */
            uint64_t word;
            memcpy(&word, flag + j, 8);
            if (!word) {
                j += 7;
                continue;
            }
        }
        if (flag[j]) {
            out[nf++] = (uint32_t)j;
            s->hash += mix((uint64_t)(base + j) << 32 ^ t);
        }
    }
    s->spikes += nf - *n_out;
    *n_out = (uint32_t)nf;
}

int nn_spike_layers_run(struct nn_spike_layers *s, size_t steps, size_t window, size_t tile,
                        struct tv_error *err)
{
    if (window < 1 || window > s->delay || steps % window)
        return tv_error_set(err, TV_EINVAL,
                            "layered spiking network: window %zu must be in [1, delay %u] and "
                            "divide the %zu steps",
                            window, s->delay, steps);
    if (tile == 0 || tile > s->width)
        tile = s->width;
    for (size_t t0 = 0; t0 < steps; t0 += window) {
        uint64_t t = s->t + t0;
        for (size_t a = 0; a < s->width; a += tile) {
            size_t b = a + tile < s->width ? a + tile : s->width;
            for (size_t l = 0; l < s->n_layers; l++)
                for (size_t k = 0; k < window; k++)
                    layer_step(s, l, t + k, a, b);
        }
    }
    s->t += steps;
    return 0;
}

uint64_t nn_spike_layers_spikes(const struct nn_spike_layers *s)
{
    return s->spikes;
}

uint64_t nn_spike_layers_hash(const struct nn_spike_layers *s)
{
    return s->hash;
}

const double *nn_spike_layers_v(const struct nn_spike_layers *s)
{
    return s->v;
}

size_t nn_spike_layers_state_bytes(const struct nn_spike_layers *s)
{
    return s->n * 3 * sizeof(double);
}
