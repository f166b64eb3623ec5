/* spike_ref.c -- the reference step of a spiking network (nn.h): neuron by
 * neuron, then every connection of the network in the order given, each
 * step. Nothing is skipped; it shares with the engine only the network's
 * arrays and the coefficients (nn_spike_coef), and computes each expression
 * in the same order, so that the two give the same bits. */
#include "spike_impl.h"

void nn_spike_ref_step(struct nn_spike *s, const float *in)
{
    size_t n = s->n, np = s->n_pad, D = s->max_delay;
    double *ie = s->cur, *ii = s->cur + np;
    /* contributions due now */
    if (D > 1)
        for (size_t k = 0; k < 2 * np; k++) {
            double *b = &s->bins[(s->t % D) * 2 * np + k];
            s->cur[k] = s->cur[k] + *b;
            *b = 0;
        }
    /* input currents */
    for (size_t j = 0; j < n; j++)
        s->x[j] = 0;
    for (size_t k = 0; k < s->n_conns; k++)
        if (s->from[k] < s->n_in)
            s->x[s->slot[k]] = s->x[s->slot[k]] + s->w[k] * (double)in[s->from[k]];
    /* neurons */
    s->n_fired = 0;
    for (size_t j = 0; j < n; j++)
        s->flag[j] = 0;
    for (size_t j = s->n_in; j < n; j++) {
        double e = ie[j], i = ii[j];
        double eq = s->rest[j] + s->x[j];
        ie[j] = e * s->de[j];
        ii[j] = i * s->di[j];
        if (s->cnt[j] > 0) { /* refractory: v held */
            s->cnt[j] -= 1;
            continue;
        }
        s->v[j] = eq + (s->v[j] - eq) * s->dm[j] + e * s->ce[j] + i * s->ci[j];
        if (s->v[j] > s->th[j]) {
            s->v[j] = s->reset[j];
            s->cnt[j] = s->ref_m1[j];
            s->flag[j] = 1;
            s->fired[s->n_fired++] = (uint32_t)j;
        }
    }
    s->n_spikes += s->n_fired;
    /* every connection: those whose source spiked deliver */
    for (size_t k = 0; k < s->n_conns; k++) {
        uint32_t j = s->from[k];
        if (j < s->n_in || !s->flag[j])
            continue;
        size_t d = (size_t)s->delay[k] + 1;
        if (d == 1)
            s->cur[s->slot[k]] += s->w[k];
        else
            s->bins[((s->t + d) % D) * 2 * np + s->slot[k]] += s->w[k];
        s->n_events++;
    }
    s->t++;
}
