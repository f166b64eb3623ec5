/* spike.c -- spiking networks of cuba neurons, event-driven (nn.h).
 *
 * A step: fold this step's delay bin into the currents, gather the inputs'
 * currents, update every neuron (one branch-free pass the compiler
 * vectorises), collect the spikes into a queue, then add the weights of the
 * connections leaving the neurons that spiked (rows by source) into their
 * targets' currents, or into the bin of the step they are due. The reference
 * (spike_ref.c) computes the same expressions over every connection.
 */
#include <stdlib.h>
#include <string.h>

#include "nn_impl.h"

/* Carves aligned arrays out of one block: a first pass with base NULL
 * counts, the second points into the block. */
struct carve {
    unsigned char *base;
    size_t off;
};

static void *take(struct carve *c, size_t count, size_t size)
{
    size_t o = (c->off + 63) & ~(size_t)63;
    c->off = o + count * size;
    return c->base ? c->base + o : NULL;
}

static void lay_out(struct nn_spike *s, struct carve *c)
{
    size_t n = s->n, m = s->n_conns;
    s->v = take(c, n, sizeof *s->v);
    s->cur = take(c, 2 * n, sizeof *s->cur);
    s->x = take(c, n, sizeof *s->x);
    s->rest = take(c, n, sizeof *s->rest);
    s->dm = take(c, n, sizeof *s->dm);
    s->de = take(c, n, sizeof *s->de);
    s->di = take(c, n, sizeof *s->di);
    s->ce = take(c, n, sizeof *s->ce);
    s->ci = take(c, n, sizeof *s->ci);
    s->th = take(c, n, sizeof *s->th);
    s->reset = take(c, n, sizeof *s->reset);
    s->ref_m1 = take(c, n, sizeof *s->ref_m1);
    s->cnt = take(c, n, sizeof *s->cnt);
    s->flag = take(c, n, sizeof *s->flag);
    s->fired = take(c, n, sizeof *s->fired);
    s->bins = s->max_delay > 1 ? take(c, s->max_delay * 2 * n, sizeof *s->bins) : NULL;
    s->row = take(c, n + 1, sizeof *s->row);
    s->from = take(c, m, sizeof *s->from);
    s->slot = take(c, m, sizeof *s->slot);
    s->delay = take(c, m, sizeof *s->delay);
    s->w = take(c, m, sizeof *s->w);
}

static int positive_time(double tau)
{
    return isfinite(tau) && tau > 0;
}

static int check_desc(const struct nn_spike_desc *d, size_t *max_delay, struct tv_error *err)
{
    if (d->n_in > d->n || d->n >= UINT32_MAX / 2)
        return tv_error_set(err, TV_EINVAL, "spiking network: %zu inputs of %zu neurons", d->n_in,
                            d->n);
    if (d->n_conns >= UINT32_MAX)
        return tv_error_set(err, TV_EINVAL, "spiking network: %zu connections", d->n_conns);
    for (size_t j = d->n_in; j < d->n; j++) {
        const struct nn_spike_neuron *u = &d->neurons[j];
        if (!positive_time(u->tau_m) || !positive_time(u->tau_exc) || !positive_time(u->tau_inh))
            return tv_error_set(err, TV_EINVAL,
                                "spiking network: neuron %zu: a time constant is not > 0", j);
        if (!isfinite(u->threshold) || !isfinite(u->reset) || !isfinite(u->rest) ||
            !isfinite(u->bias))
            return tv_error_set(err, TV_EINVAL,
                                "spiking network: neuron %zu: a value is not finite", j);
    }
    *max_delay = 1;
    for (size_t k = 0; k < d->n_conns; k++) {
        const struct nn_spike_conn *c = &d->conns[k];
        if (c->from >= d->n || c->to >= d->n || c->to < d->n_in)
            return tv_error_set(err, TV_EINVAL,
                                "spiking network: connection %zu (%u -> %u): an end is out of "
                                "range or an input",
                                k, c->from, c->to);
        if (!isfinite(c->weight) || c->delay < 1 || c->delay > NN_SPIKE_MAX_DELAY)
            return tv_error_set(err, TV_EINVAL,
                                "spiking network: connection %zu (%u -> %u): weight not finite or "
                                "delay %u outside [1, %d]",
                                k, c->from, c->to, c->delay, NN_SPIKE_MAX_DELAY);
        if (k > 0 && c->from < d->conns[k - 1].from)
            return tv_error_set(err, TV_EINVAL,
                                "spiking network: connection %zu (%u -> %u): not sorted by from", k,
                                c->from, c->to);
        if (c->from >= d->n_in && c->delay > *max_delay)
            *max_delay = c->delay;
    }
    return 0;
}

static int spike_new(const struct nn_spike_desc *d, int reference, struct nn_spike **out,
                     struct tv_error *err)
{
    *out = NULL;
    size_t max_delay = 1;
    int rc = check_desc(d, &max_delay, err);
    if (rc)
        return rc;
    struct nn_spike hd = {.reference = reference, .n = d->n, .n_in = d->n_in};
    hd.n_conns = d->n_conns;
    hd.max_delay = max_delay;
    struct carve c = {NULL, sizeof hd};
    lay_out(&hd, &c);
    unsigned char *block = calloc(1, c.off);
    if (!block)
        return tv_error_set(err, TV_ENOMEM, "spiking network: out of memory (%zu bytes)", c.off);
    struct nn_spike *s = (struct nn_spike *)block;
    *s = hd;
    s->bytes = c.off;
    c = (struct carve){block, sizeof hd};
    lay_out(s, &c);
    for (size_t j = d->n_in; j < d->n; j++) {
        const struct nn_spike_neuron *u = &d->neurons[j];
        s->rest[j] = u->rest + u->bias;
        s->dm[j] = exp(-1.0 / u->tau_m);
        nn_spike_coef(u->tau_m, u->tau_exc, &s->de[j], &s->ce[j]);
        nn_spike_coef(u->tau_m, u->tau_inh, &s->di[j], &s->ci[j]);
        s->th[j] = u->threshold;
        s->reset[j] = u->reset;
        s->ref_m1[j] = u->refractory ? u->refractory - 1 : 0;
    }
    for (size_t k = 0; k < d->n_conns; k++) {
        const struct nn_spike_conn *e = &d->conns[k];
        s->row[e->from + 1]++;
        s->from[k] = e->from;
        /* an input's connection feeds x, whatever its sign */
        s->slot[k] = e->to + (e->from >= d->n_in && e->weight < 0 ? (uint32_t)d->n : 0);
        s->delay[k] = (uint16_t)(e->delay - 1);
        s->w[k] = e->weight;
    }
    for (size_t j = 0; j < d->n; j++)
        s->row[j + 1] += s->row[j];
    nn_spike_reset(s);
    *out = s;
    return 0;
}

int nn_spike_new(const struct nn_spike_desc *d, struct nn_spike **out, struct tv_error *err)
{
    return spike_new(d, 0, out, err);
}

int nn_spike_new_reference(const struct nn_spike_desc *d, struct nn_spike **out,
                           struct tv_error *err)
{
    return spike_new(d, 1, out, err);
}

int nn_spike_clone(const struct nn_spike *src, struct nn_spike **out, struct tv_error *err)
{
    *out = NULL;
    struct nn_spike *s = malloc(src->bytes);
    if (!s)
        return tv_error_set(err, TV_ENOMEM, "spiking network: out of memory (%zu bytes)",
                            src->bytes);
    memcpy(s, src, src->bytes);
    struct carve c = {(unsigned char *)s, sizeof *s};
    lay_out(s, &c);
    *out = s;
    return 0;
}

void nn_spike_free(struct nn_spike *s)
{
    free(s);
}

void nn_spike_reset(struct nn_spike *s)
{
    size_t n = s->n;
    memcpy(s->v, s->rest, n * sizeof *s->v);
    memset(s->cur, 0, 2 * n * sizeof *s->cur);
    memset(s->cnt, 0, n * sizeof *s->cnt);
    if (s->bins)
        memset(s->bins, 0, s->max_delay * 2 * n * sizeof *s->bins);
    s->n_fired = 0;
    s->t = s->n_spikes = s->n_events = 0;
}

void nn_spike_set_state(struct nn_spike *s, const double *v, const double *i_exc,
                        const double *i_inh)
{
    if (v)
        memcpy(s->v + s->n_in, v + s->n_in, (s->n - s->n_in) * sizeof *v);
    if (i_exc)
        memcpy(s->cur, i_exc, s->n * sizeof *i_exc);
    if (i_inh)
        memcpy(s->cur + s->n, i_inh, s->n * sizeof *i_inh);
}

/* The contributions due at this step join the currents; the inputs' currents
 * of this step are summed into x. */
static void begin_step(struct nn_spike *s, const float *in)
{
    size_t n2 = 2 * s->n;
    if (s->bins) {
        double *restrict b = s->bins + (s->t % s->max_delay) * n2;
        double *restrict cur = s->cur;
        for (size_t k = 0; k < n2; k++) {
            cur[k] += b[k];
            b[k] = 0;
        }
    }
    if (s->n_in == 0)
        return;
    memset(s->x, 0, s->n * sizeof *s->x);
    for (size_t k = 0; k < s->n_in; k++) {
        double xk = in[k];
        for (uint32_t e = s->row[k]; e < s->row[k + 1]; e++)
            s->x[s->slot[e]] += s->w[e] * xk;
    }
}

/* Every neuron's exact update over the step, the threshold, the reset and
 * the refractory count, written without branches so that it vectorises. */
static void update(struct nn_spike *s)
{
    size_t n = s->n;
    double *restrict v = s->v, *restrict ie = s->cur, *restrict ii = s->cur + n;
    const double *restrict x = s->x, *restrict rest = s->rest, *restrict dm = s->dm;
    const double *restrict ce = s->ce, *restrict ci = s->ci, *restrict de = s->de;
    const double *restrict di = s->di, *restrict th = s->th, *restrict reset = s->reset;
    const uint32_t *restrict ref_m1 = s->ref_m1;
    uint32_t *restrict cnt = s->cnt;
    uint8_t *restrict flag = s->flag;
    for (size_t j = s->n_in; j < n; j++) {
        double e = ie[j], i = ii[j], eq = rest[j] + x[j];
        double vn = eq + (v[j] - eq) * dm[j] + e * ce[j] + i * ci[j];
        ie[j] = e * de[j];
        ii[j] = i * di[j];
        uint32_t c = cnt[j];
        uint32_t frozen = c != 0;
        double vv = frozen ? v[j] : vn;
        uint32_t spk = !frozen & (vv > th[j]);
        v[j] = spk ? reset[j] : vv;
        cnt[j] = spk ? ref_m1[j] : c - frozen;
        flag[j] = (uint8_t)spk;
    }
}

void nn_spike_step(struct nn_spike *s, const float *in)
{
    if (s->reference) {
        nn_spike_ref_step(s, in);
        return;
    }
    begin_step(s, in);
    update(s);
    size_t nf = 0, n = s->n;
    for (size_t j = s->n_in; j < n; j++)
        if (s->flag[j])
            s->fired[nf++] = (uint32_t)j;
    s->n_fired = nf;
    s->n_spikes += nf;
    /* the scatter: only the rows of the neurons that spiked */
    double *restrict cur = s->cur;
    const uint32_t *restrict slot = s->slot;
    const double *restrict w = s->w;
    uint64_t events = 0;
    if (!s->bins) {
        for (size_t f = 0; f < nf; f++) {
            uint32_t j = s->fired[f], e0 = s->row[j], e1 = s->row[j + 1];
            for (uint32_t e = e0; e < e1; e++)
                cur[slot[e]] += w[e];
            events += e1 - e0;
        }
    } else {
        size_t n2 = 2 * n, D = s->max_delay;
        for (size_t f = 0; f < nf; f++) {
            uint32_t j = s->fired[f], e0 = s->row[j], e1 = s->row[j + 1];
            for (uint32_t e = e0; e < e1; e++) {
                size_t d = s->delay[e];
                if (d == 0)
                    cur[slot[e]] += w[e];
                else
                    s->bins[((s->t + d + 1) % D) * n2 + slot[e]] += w[e];
            }
            events += e1 - e0;
        }
    }
    s->n_events += events;
    s->t++;
}

size_t nn_spike_fired(const struct nn_spike *s, const uint32_t **idx)
{
    *idx = s->fired;
    return s->n_fired;
}

const double *nn_spike_v(const struct nn_spike *s)
{
    return s->v;
}

uint64_t nn_spike_steps(const struct nn_spike *s)
{
    return s->t;
}

uint64_t nn_spike_n_spikes(const struct nn_spike *s)
{
    return s->n_spikes;
}

uint64_t nn_spike_n_events(const struct nn_spike *s)
{
    return s->n_events;
}
