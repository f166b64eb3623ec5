/* bench_nn.c -- the nn/ benchmark table for BENCHMARKS.md.
 *
 * Every row is one run of the real command line, `trevo net bench ...`, so
 * the exact command is in the table and anyone can re-run one row. Each run
 * times the sparse engine and dense OpenBLAS on the same weights in the same
 * process, in alternating rounds, and reports medians; this program only
 * collects the figures and compares them with the targets of issue 3.
 * Last come two tables of kernels outside the engine (gather_floor.h): what
 * this machine allows at best on the rows that are hardest to meet.
 *
 * The trevo binary is $TREVO if set, else ../trevo beside this program's
 * folder (make puts both under the same build directory).
 */
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "gather_floor.h"

static char trevo[PATH_MAX + 16];

struct result {
    int ok;
    char text[16384];
    double sparse_ms, dense_ms, ratio, gps, gsps, compile_ns, bytes_per_conn, zero_skip;
    double gather_ms, scatter_ms, auto_ms;
    char auto_way[16];
    long conns;
    char dense_kind[16];
};

/* The number after `key` on the first line starting with `prefix`. */
static double field(const char *text, const char *prefix, const char *key)
{
    for (const char *l = text; l && *l; l = strchr(l, '\n') ? strchr(l, '\n') + 1 : NULL) {
        if (strncmp(l, prefix, strlen(prefix)))
            continue;
        const char *end = strchr(l, '\n');
        const char *k = strstr(l, key);
        if (!k || (end && k > end))
            return NAN;
        return strtod(k + strlen(key), NULL);
    }
    return NAN;
}

static void run(const char *args, struct result *r)
{
    char cmd[PATH_MAX + 600];
    snprintf(cmd, sizeof cmd, "%s net bench %s 2>&1", trevo, args);
    memset(r, 0, sizeof *r);
    fprintf(stderr, "bench_nn: trevo net bench %s\n", args);
    FILE *f = popen(cmd, "r");
    if (!f)
        return;
    size_t n = fread(r->text, 1, sizeof r->text - 1, f);
    r->text[n] = '\0';
    r->ok = pclose(f) == 0;
    r->sparse_ms = field(r->text, "sparse: ", "median ");
    r->gps = field(r->text, "sparse: ", "runs, ");
    r->gsps = field(r->text, "sparse: ", "per sample, ");
    r->dense_ms = field(r->text, "dense sgemv: ", "median ");
    snprintf(r->dense_kind, sizeof r->dense_kind, "sgemv");
    if (isnan(r->dense_ms)) {
        r->dense_ms = field(r->text, "dense sgemm: ", "median ");
        snprintf(r->dense_kind, sizeof r->dense_kind, "sgemm");
    }
    r->ratio = field(r->text, "ratio_vs_dense: ", "ratio_vs_dense: ");
    r->compile_ns = field(r->text, "compile: ", "ms, ");
    r->bytes_per_conn = field(r->text, "plan: ", "bytes, ");
    r->zero_skip = field(r->text, "zero_skip_speedup: ", "zero_skip_speedup: ");
    r->gather_ms = field(r->text, "sparse gather: ", "median ");
    r->scatter_ms = field(r->text, "sparse scatter: ", "median ");
    r->auto_ms = field(r->text, "sparse auto: ", "median ");
    const char *aw = strstr(r->text, "-> input layer ");
    snprintf(r->auto_way, sizeof r->auto_way, "%s",
             aw && !strncmp(aw + 15, "scatter", 7) ? "scatter" : "gather");
    r->conns = (long)field(r->text, "connections: ", "connections: ");
}

static const char *mark(int met)
{
    return met ? "yes" : "**no**";
}

/* One row of the ratio table; its dense median goes to *dense_ms if not NULL. */
static void ratio_row(const char *name, const char *args, double target, double *dense_ms)
{
    struct result r;
    run(args, &r);
    if (dense_ms)
        *dense_ms = r.ok ? r.dense_ms : NAN;
    if (!r.ok) {
        printf("| %s | `trevo net bench %s` | failed | | | >= %g x | **no** |\n", name, args,
               target);
        return;
    }
    printf("| %s | `trevo net bench %s` | %.4f ms | %.3f ms (%s) | %.1f x | >= %g x | %s |\n", name,
           args, r.sparse_ms, r.dense_ms, r.dense_kind, r.ratio, target, mark(r.ratio >= target));
}

int main(void)
{
    const char *env = getenv("TREVO");
    if (env) {
        snprintf(trevo, sizeof trevo, "%s", env);
    } else {
        char self[PATH_MAX];
        ssize_t n = readlink("/proc/self/exe", self, sizeof self - 1);
        if (n <= 0) {
            fprintf(stderr, "bench_nn: cannot find myself; set TREVO\n");
            return 1;
        }
        self[n] = '\0';
        char *slash = strrchr(self, '/');
        *slash = '\0'; /* .../bench */
        snprintf(trevo, sizeof trevo, "%s/../trevo", self);
    }

    double dense16k = NAN;
    struct result core;
    run("--layer 256 --density 0.1 --seconds 0.05", &core);
    const char *oline = strstr(core.text, "openblas: ");
    char obuf[256] = "openblas: ?";
    if (oline)
        snprintf(obuf, sizeof obuf, "%.*s", (int)strcspn(oline, "\n"), oline);

    printf("### Sparse engine vs dense OpenBLAS: single core, float32\n\n");
    printf("Each row is one run of the command shown (from the build directory's `trevo`): "
           "it times one step of the sparse engine and the dense OpenBLAS call on the same "
           "weights in the same process, alternating the two in rounds, and reports medians; "
           "the ratio is the median over rounds of dense time / sparse time. Batches use "
           "feature-major buffers on both sides (`nn_step_feature_major`, the layout sgemm "
           "takes). Random N x N layers have identity outputs, weights N(0, 1/(density N)), "
           "inputs N(0, 1). Dense baseline: `%s`.\n\n",
           obuf + strlen("openblas: "));
    printf("| case | command | sparse | dense | ratio | target | met |\n");
    printf("|---|---|---|---|---|---|---|\n");
    ratio_row("4096², batch 1, density 10 %", "--layer 4096 --density 0.1 --batch 1", 4.5, NULL);
    ratio_row("4096², batch 1, density 1 %", "--layer 4096 --density 0.01 --batch 1", 40, NULL);
    ratio_row("4096², batch 1, density 0.1 %", "--layer 4096 --density 0.001 --batch 1", 150, NULL);
    ratio_row("4096², batch 64, density 10 %", "--layer 4096 --density 0.1 --batch 64", 4.5, NULL);
    ratio_row("4096², batch 64, density 1 %", "--layer 4096 --density 0.01 --batch 64", 45, NULL);
    ratio_row("4096², batch 64, density 0.1 %", "--layer 4096 --density 0.001 --batch 64", 250,
              NULL);
    ratio_row("16384², batch 1, density 1 %", "--layer 16384 --density 0.01 --batch 1", 70,
              &dense16k);

    printf("\n| NEAT-style graph (10 k neurons, 200 k connections, local + skip + 10 %% "
           "recurrent, ReLU hidden, tanh outputs) | command | sparse | throughput | target | "
           "met |\n|---|---|---|---|---|---|\n");
    struct result r;
    run("--graph 10000,200000 --batch 1", &r);
    printf("| batch 1 | `trevo net bench --graph 10000,200000 --batch 1` | %.4f ms | %.2f G "
           "connections/s per sample (%.0f x sgemv 10000²) | >= 1.0 G/s | %s |\n",
           r.sparse_ms, r.gps, r.ratio, mark(r.ok && r.gps >= 1.0));
    run("--graph 10000,200000 --batch 64", &r);
    printf("| batch 64 | `trevo net bench --graph 10000,200000 --batch 64` | %.4f ms | %.2f G "
           "connection-samples/s (%.0f x sgemm 10000²) | >= 10 G/s | %s |\n",
           r.sparse_ms, r.gsps, r.ratio, mark(r.ok && r.gsps >= 10.0));

    printf("\n| zero skipping (4096², density 10 %%, batch 1, a share of inputs exactly 0) | "
           "command | gather (dense path) | scatter (event-driven) | auto (measured density) | "
           "gather / auto | target | met |\n|---|---|---|---|---|---|---|---|\n");
    static const char *zeros[] = {"0.6", "0.9", "0.99"};
    for (int i = 0; i < 3; i++) {
        char args[128];
        snprintf(args, sizeof args, "--layer 4096 --density 0.1 --batch 1 --zeros %s --no-dense",
                 zeros[i]);
        run(args, &r);
        /* what AUTO chose against the dense path; 3 % of slack for noise */
        printf("| %s zeros | `trevo net bench %s` | %.4f ms | %.4f ms | %.4f ms (%s) | %.2f x | "
               "%s | %s |\n",
               zeros[i], args, r.gather_ms, r.scatter_ms, r.auto_ms, r.auto_way, r.zero_skip,
               i == 0 ? ">= 1.0 x" : "faster", mark(r.ok && r.zero_skip >= 0.97));
    }

    printf("\n| time vs connections (NEAT-style graphs, 20 connections per neuron, about 1000 "
           "neurons per level, batch 1) | "
           "command | sparse | ns per connection | vs median |\n|---|---|---|---|---|\n");
    static const long sizes[] = {10000, 100000, 1000000, 10000000};
    double ns[4], sorted[4];
    int all_ok = 1;
    for (int i = 0; i < 4; i++) {
        char args[128];
        long neurons = sizes[i] / 20, levels = neurons / 1000 > 8 ? neurons / 1000 : 8;
        snprintf(args, sizeof args, "--graph %ld,%ld --levels %ld --batch 1 --no-dense", neurons,
                 sizes[i], levels);
        run(args, &r);
        all_ok = all_ok && r.ok;
        ns[i] = sorted[i] = r.sparse_ms * 1e6 / (double)r.conns;
        printf("| %ld | `trevo net bench %s` | %.4f ms | %.3f | |\n", r.conns, args, r.sparse_ms,
               ns[i]);
    }
    for (int i = 0; i < 4; i++) /* sort 4 */
        for (int j = i + 1; j < 4; j++)
            if (sorted[j] < sorted[i]) {
                double t = sorted[i];
                sorted[i] = sorted[j];
                sorted[j] = t;
            }
    double med = 0.5 * (sorted[1] + sorted[2]), worst = 0;
    for (int i = 0; i < 4; i++)
        worst = fmax(worst, fabs(ns[i] / med - 1.0));
    printf("| linear within | | | median %.3f ns | worst %+.0f %% (target +-30 %%): %s |\n", med,
           100 * worst, mark(all_ok && worst <= 0.30));

    printf("\n| compile and memory | command | figure | target | met |\n|---|---|---|---|---|\n");
    run("--layer 4096 --density 0.1 --no-dense --seconds 0.05", &r);
    printf("| compile, 1.68 M connections | `trevo net bench --layer 4096 --density 0.1 "
           "--no-dense --seconds 0.05` | %.2f ns per connection (median of 7) | <= 10 ns | %s "
           "|\n",
           r.compile_ns, mark(r.ok && r.compile_ns <= 10.0));
    printf("| plan size, density 10 %% | same | %.2f bytes per connection | <= 10 + O(neurons) "
           "| %s |\n",
           r.bytes_per_conn, mark(r.ok && r.bytes_per_conn <= 10.0));
    run("--graph 10000,200000 --no-dense --seconds 0.05", &r);
    printf("| plan size, NEAT graph (short rows: padding to 8 per row is O(neurons)) | `trevo "
           "net bench --graph 10000,200000 --no-dense --seconds 0.05` | %.2f bytes per "
           "connection | <= 10 + O(neurons) | %s |\n",
           r.bytes_per_conn, mark(r.ok && r.bytes_per_conn <= 10.0 + 7 * 2 * 6 * 10000.0 / 2e5));

    gather_floor_table(dense16k, 70);
    tile_floor_table();
    return 0;
}
