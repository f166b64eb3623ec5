/*
 * bench.h -- private to cli/: timing for `trevo net bench`, medians of
 * rounds that alternate the two sides compared.
 */
#ifndef TREVO_MASTER_BENCH_H
#define TREVO_MASTER_BENCH_H

/* Something to time: fn(ctx) is one run. */
struct cli_timed {
    void (*fn)(void *);
    void *ctx;
    double median; /* seconds per run, set by cli_bench_time_pair */
    int runs;
};

/* Monotonic seconds; with cli_bench_cpu_clock set, the calling thread's
 * CPU seconds instead (on a loaded machine, the time others took the core
 * for is then not counted). */
double cli_bench_now(void);
extern int cli_bench_cpu_clock;

/* The median of t[0..n), n >= 1 (sorts t). */
double cli_bench_median(double *t, int n);

/* Times a and b (b may be NULL) in alternating rounds for about `seconds`
 * (at least 5 rounds, at most 1001). Fills in the medians; returns the
 * median over rounds of (b time / a time). */
double cli_bench_time_pair(struct cli_timed *a, struct cli_timed *b, double seconds);

/* `trevo net bench --cuba` (cmd_spike.c): argv as cli_cmd_net_bench got it. */
int cli_cmd_net_bench_cuba(int argc, char **argv);
int cli_cmd_net_bench_layers(int argc, char **argv); /* --spike-layers, cmd_spike.c */

/* `trevo net bench --conv` (cmd_conv.c): argv as cli_cmd_net_bench got it. */
int cli_cmd_net_bench_conv(int argc, char **argv);

#endif
