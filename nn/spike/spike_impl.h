/*
 * spike_impl.h -- private to nn/spike/: the layout of a spiking network
 * (struct nn_spike), the coefficients the engine and the reference share so
 * that both hold the same bits, and the reference's step.
 */
#ifndef TREVO_NN_SPIKE_IMPL_H
#define TREVO_NN_SPIKE_IMPL_H

#include "nn_impl.h"
#include "spike.h"

/* ---- spiking networks (spike.c, spike_ref.c) ------------------------------ */

/* A spiking network: the engine or the reference (nn.h). Neuron arrays are
 * [n] by neuron index; the currents are one array [2n]: I_exc of j at j,
 * I_inh at n + j, so that a connection's target is one index (its slot). */
struct nn_spike {
    int reference; /* 1: steps go through nn_spike_ref_step */
    size_t n, n_in, max_delay;
    size_t n_pad; /* n rounded up to NN_SPIKE_PAD: the arrays' length */
    int uniform;  /* no inputs, every neuron with the same parameters (bitwise) */
    int target;   /* enum nn_target: whose update the steps call */
    uint64_t t, n_spikes, n_events;
    size_t bytes;         /* of this one allocation */
    double *v;            /* [n_pad] */
    double *cur;          /* [2 n_pad] I_exc of j at j, I_inh at n_pad + j */
    double *x;            /* [n_pad] input current of this step */
    double *rest;         /* [n_pad] rest + bias */
    double *dm, *de, *di; /* [n_pad] e^(-1/tau_m), e^(-1/tau_exc), e^(-1/tau_inh) */
    double *ce, *ci;      /* [n_pad] what I_exc, I_inh at the start of a step add to v */
    double *th, *reset;   /* [n_pad] (inputs and padding: th infinite, dm 1: never move) */
    double *ref_m1;       /* [n_pad] refractory - 1 (0 if refractory is 0), a whole number */
    double *cnt;          /* [n_pad] steps this neuron stays frozen, a whole number */
    uint8_t *flag;        /* [n_pad] spiked in the last step */
    uint32_t *fired;      /* [n_pad] the spikes of the last step, ascending */
    size_t n_fired;
    double *bins; /* [max_delay][2 n_pad] delayed contributions (max_delay > 1) */
    /* Connections by source: [row[j], row[j+1]) leave neuron j, in the order
     * given. The reference reads the same arrays as a plain list. */
    uint32_t *row;   /* [n + 1] */
    double *row_w;   /* [n] the one weight of row j, bitwise; NaN if they differ or none */
    uint32_t *from;  /* [n_conns] */
    uint32_t *slot;  /* [n_conns] target slot in cur (input edges: target neuron in x) */
    uint16_t *delay; /* [n_conns] delay - 1 */
    double *w;       /* [n_conns] */
    size_t n_conns;
};
#define NN_SPIKE_LANES 4 /* of the generic vector code */
#define NN_SPIKE_PAD 8   /* n_pad is a multiple of this */

/* The decay of a current of time constant tau_s over a step, and what a
 * current of 1 at the start of the step adds to v over it (tau_m dv/dt =
 * -v + I, tau_s dI/dt = -I, solved exactly). Shared by the engine and the
 * reference so that both hold the same bits. */
static inline void nn_spike_coef(double tau_m, double tau_s, double *decay_s, double *coef)
{
    double dm = exp(-1.0 / tau_m), ds = exp(-1.0 / tau_s);
    *decay_s = ds;
    if (fabs(tau_s - tau_m) <= 1e-9 * tau_m)
        *coef = dm / tau_m; /* the limit tau_s -> tau_m */
    else
        *coef = tau_s / (tau_s - tau_m) * (ds - dm);
}
/* The reference's step (spike_ref.c). */
void nn_spike_ref_step(struct nn_spike *s, const float *in);

#endif
