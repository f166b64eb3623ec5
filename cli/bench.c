/* bench.c -- the timing harness of `trevo net bench` (bench.h). */
#include "bench.h"

#include <math.h>
#include <stdlib.h>

#include "tv.h"

int cli_bench_cpu_clock;

double cli_bench_now(void)
{
    return cli_bench_cpu_clock ? tv_cpu_now() : tv_now();
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

#define BENCH_MAX_ROUNDS 1001

double cli_bench_median(double *t, int n)
{
    qsort(t, (size_t)n, sizeof *t, cmp_double);
    return n % 2 ? t[n / 2] : 0.5 * (t[n / 2 - 1] + t[n / 2]);
}

/* Seconds per run of k runs of x, after one untimed run (the other side of
 * a round may have flushed the caches: a 4096 x 4096 sgemv streams 64 MB). */
static double time_runs(const struct cli_timed *x, int k)
{
    x->fn(x->ctx);
    double t0 = cli_bench_now();
    for (int i = 0; i < k; i++)
        x->fn(x->ctx);
    return (cli_bench_now() - t0) / k;
}

/* Each round runs each side often enough to take about as long as one run
 * of the slower, so a load that comes and goes on a shared machine hits
 * both alike. */
double cli_bench_time_pair(struct cli_timed *a, struct cli_timed *b, double seconds)
{
    static double ta[BENCH_MAX_ROUNDS], tb[BENCH_MAX_ROUNDS], ratio[BENCH_MAX_ROUNDS];
    time_runs(a, 1); /* first runs: page faults, library set-up */
    if (b)
        time_runs(b, 1);
    double one_a = time_runs(a, 5), one_b = b ? time_runs(b, 2) : one_a;
    double slow = one_a > one_b ? one_a : one_b;
    int ka = (int)fmin(1e6, fmax(1.0, slow / fmax(one_a, 1e-9)));
    int kb = (int)fmin(1e6, fmax(1.0, slow / fmax(one_b, 1e-9)));
    if (!b && slow < 1e-4) /* alone: rounds of about 0.1 ms */
        ka = (int)fmin(1e6, 1e-4 / fmax(one_a, 1e-9));
    double start = cli_bench_now();
    int n = 0;
    while (n < BENCH_MAX_ROUNDS && (n < 5 || cli_bench_now() - start < seconds)) {
        ta[n] = time_runs(a, ka);
        tb[n] = b ? time_runs(b, kb) : 0.0;
        ratio[n] = tb[n] / ta[n];
        n++;
    }
    a->median = cli_bench_median(ta, n);
    a->runs = n * ka;
    if (b) {
        b->median = cli_bench_median(tb, n);
        b->runs = n * kb;
    }
    return cli_bench_median(ratio, n);
}
