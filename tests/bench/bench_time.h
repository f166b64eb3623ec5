/* bench_time.h -- clocks and the median of repeated timings, for the
 * benchmarks that include it. */
#ifndef TREVO_BENCH_TIME_H
#define TREVO_BENCH_TIME_H

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

/* Seconds on clock c (CLOCK_MONOTONIC, or a CPU-time clock). */
static inline double bench_seconds(clockid_t c)
{
    struct timespec ts;
    clock_gettime(c, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static inline int bench_cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

/* Sorts v[0..n) and returns its middle element (n odd; the upper middle
 * otherwise). */
static inline double median(double *v, int n)
{
    qsort(v, (size_t)n, sizeof *v, bench_cmp_double);
    return v[n / 2];
}

/* The load averages of the last 1, 5 and 15 minutes (/proc/loadavg), NAN
 * where they cannot be read: printed beside a benchmark's ratios. */
static inline void bench_loadavg(double load[3])
{
    load[0] = load[1] = load[2] = NAN;
    FILE *f = fopen("/proc/loadavg", "r");
    if (!f)
        return;
    if (fscanf(f, "%lf %lf %lf", &load[0], &load[1], &load[2]) != 3)
        load[0] = load[1] = load[2] = NAN;
    fclose(f);
}

#endif
