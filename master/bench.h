/*
 * bench.h -- private to master/: timing for `trevo net bench`, medians of
 * rounds that alternate the two sides compared.
 */
#ifndef TREVO_MASTER_BENCH_H
#define TREVO_MASTER_BENCH_H

/* Something to time: fn(ctx) is one run. */
struct master_timed {
    void (*fn)(void *);
    void *ctx;
    double median; /* seconds per run, set by master_bench_time_pair */
    int runs;
};

/* Monotonic seconds. */
double master_bench_now(void);

/* The median of t[0..n), n >= 1 (sorts t). */
double master_bench_median(double *t, int n);

/* Times a and b (b may be NULL) in alternating rounds for about `seconds`
 * (at least 5 rounds, at most 1001). Fills in the medians; returns the
 * median over rounds of (b time / a time). */
double master_bench_time_pair(struct master_timed *a, struct master_timed *b, double seconds);

/* `trevo net bench --cuba` (cmd_spike.c): argv as master_cmd_net_bench got it. */
int master_cmd_net_bench_cuba(int argc, char **argv);
int master_cmd_net_bench_layers(int argc, char **argv); /* --spike-layers, cmd_spike.c */

#endif
