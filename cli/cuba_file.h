/* cuba_file.h -- private to cli/: the file experiments/cuba_brian2.py writes
 * (`trevo net bench --cuba --brian2-file FILE`): the CUBA network Brian2 ran,
 * its initial potentials, its spike train and its timing. The format, one
 * item per line:
 *
 *   cuba-brian2 1
 *   target NAME
 *   n N n_exc NE
 *   dt DT steps S
 *   tau_m T tau_exc T tau_inh T                    (seconds)
 *   threshold V reset V rest V refractory_steps R
 *   w_exc W w_inh W
 *   v0 N          then N lines: a potential
 *   conns C       then C lines "I J", sorted by I, both < N
 *   spikes K      then K lines "STEP I", STEP <= S, I < N
 *   run_seconds X
 *   run_cpu_seconds X
 *
 * The arrays grow as their lines arrive: a count allocates nothing before
 * the lines that back it are read. */
#ifndef TREVO_CLI_CUBA_FILE_H
#define TREVO_CLI_CUBA_FILE_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "spike.h"
#include "tv.h"

/* The network and, from Brian2, its spike train and timing. */
struct cli_cuba {
    size_t n, n_exc, steps;
    double dt;
    struct nn_spike_neuron unit; /* every neuron's parameters */
    double w_exc, w_inh;
    double *v0;                  /* [n] */
    struct nn_spike_conn *conns; /* [n_conns] sorted by from */
    size_t n_conns;
    uint64_t *spikes; /* [n_spikes] step << 32 | neuron, sorted (Brian2's) */
    size_t n_spikes;
    double run_seconds, run_cpu; /* Brian2's loop: wall and CPU time (NaN: unknown) */
    char target[32];
};

/* Reads the file at path into *c (zeroed first; cli_cuba_free it, also after
 * an error). TV_EIO when it cannot be read; TV_EFORMAT naming the file, the
 * line and what was expected there. */
int cli_cuba_read(const char *path, struct cli_cuba *c, struct tv_error *err);
/* The same from an open stream, called name in messages. */
int cli_cuba_read_stream(FILE *f, const char *name, struct cli_cuba *c, struct tv_error *err);
void cli_cuba_free(struct cli_cuba *c);
/* qsort's order of uint64_t. */
int cli_cmp_u64(const void *a, const void *b);

#endif
