/* cmd_nn.c -- `trevo net eval` and `trevo net bench`: the sparse engine from
 * the command line.
 *
 * net bench compares the engine with dense OpenBLAS (sgemv / sgemm) on the
 * same weights in the same process. Debian's OpenBLAS picks its kernels when
 * the library is loaded, from OPENBLAS_CORETYPE if set, else from its own
 * CPU detection, which gets some CPUs wrong (FACTS.md) and then runs 2-4x
 * slower: every ratio would flatter us. So when OPENBLAS_CORETYPE is not set,
 * the command chooses it from the CPU's flags before loading the library,
 * and it prints the core OpenBLAS reports using, openblas_get_corename(),
 * beside the one asked for.
 *
 * OpenBLAS is loaded with dlopen() here only: linked into trevo, it would
 * start a thread pool of one thread per core in every MPI rank at start-up
 * (64 ranks on a 64-core node: 4,096 idle threads) for no use.
 */
#include "cli.h"

#include <cblas.h>
#include <dlfcn.h>
#include <errno.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>
#include <unistd.h>

#include "nn.h"

/* ---- net eval --------------------------------------------------------------- */

static void eval_usage(FILE *f)
{
    fprintf(f, "usage: trevo net eval NET\n\n"
               "Runs the network NET (text or msgpack) one time step per input row.\n"
               "Rows come from stdin: the network's inputs as comma-separated numbers, in\n"
               "the order of the input neurons' ids. An empty line starts a new sequence\n"
               "(the recurrent state is reset). Each row prints one line of comma-separated\n"
               "outputs (%%.9g), in the order of the output neurons' ids.\n");
}

int master_cmd_net_eval(int argc, char **argv)
{
    if (master_wants_help(argc, argv)) {
        eval_usage(stdout);
        return 0;
    }
    if (argc != 2 || argv[1][0] == '-') {
        eval_usage(stderr);
        return 2;
    }
    struct tv_error err = {0};
    struct genome g;
    genome_init(&g);
    struct nn_plan *plan = NULL;
    struct nn_state *st = NULL;
    float *in = NULL, *out = NULL;
    char *line = NULL;
    size_t cap = 0;
    int status = 1;
    if (master_load_net(argv[1], &g, &err) || nn_plan_compile(&g, NULL, &plan, &err) ||
        nn_state_new(plan, 1, &st, &err))
        goto done;
    size_t n_in = nn_plan_n_inputs(plan), n_out = nn_plan_n_outputs(plan);
    in = malloc(n_in * sizeof *in);
    out = malloc(n_out * sizeof *out);
    if (!in || !out) {
        tv_error_set(&err, TV_ENOMEM, "out of memory");
        goto done;
    }
    size_t lineno = 0;
    ssize_t len;
    while ((len = getline(&line, &cap, stdin)) >= 0) {
        lineno++;
        size_t n = (size_t)len;
        while (n > 0 && (line[n - 1] == '\n' || line[n - 1] == '\r' || line[n - 1] == ' ' ||
                         line[n - 1] == '\t'))
            n--;
        size_t b = 0;
        while (b < n && (line[b] == ' ' || line[b] == '\t'))
            b++;
        if (b == n) { /* an empty line: a new sequence */
            nn_state_reset(st);
            continue;
        }
        if (nn_row_parse(line + b, n - b, in, n_in, &err)) {
            tv_error_prefix(&err, "stdin:%zu", lineno);
            goto done;
        }
        nn_step(st, in, out);
        for (size_t k = 0; k < n_out; k++)
            printf(k ? ",%.9g" : "%.9g", (double)out[k]);
        putchar('\n');
    }
    if (ferror(stdin)) {
        tv_error_set(&err, TV_EIO, "stdin: read error: %s", strerror(errno));
        goto done;
    }
    if (fflush(stdout) || ferror(stdout)) {
        tv_error_set(&err, TV_EIO, "stdout: write error: %s", strerror(errno));
        goto done;
    }
    status = 0;
done:
    free(line);
    free(in);
    free(out);
    nn_state_free(st);
    nn_plan_free(plan);
    genome_release(&g);
    return status ? master_fail(&err) : 0;
}

/* ---- net bench: OpenBLAS core type --------------------------------------------- */

/* The OpenBLAS core type for this CPU's flags, or NULL to leave OpenBLAS's
 * own detection. The AVX-512 kernels need F, BW, VL and DQ. */
static const char *coretype_from_flags(void)
{
#if defined(__x86_64__) && defined(__GNUC__)
    __builtin_cpu_init();
    if (__builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
        __builtin_cpu_supports("avx512vl") && __builtin_cpu_supports("avx512dq"))
        return __builtin_cpu_supports("avx512bf16") ? "Cooperlake" : "SkylakeX";
    if (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma"))
        return "Haswell";
    if (__builtin_cpu_supports("avx"))
        return "Sandybridge";
#endif
    return NULL;
}

/* Sets OPENBLAS_CORETYPE from the CPU's flags (unless the user set it) and
 * one thread, before the library is loaded. */
static void coretype_choose(void)
{
    if (!getenv("OPENBLAS_NUM_THREADS"))
        setenv("OPENBLAS_NUM_THREADS", "1", 1);
    if (getenv("OPENBLAS_CORETYPE"))
        return;
    const char *core = coretype_from_flags();
    if (!core)
        return;
    setenv("OPENBLAS_CORETYPE", core, 1);
    setenv("TREVO_CORETYPE_FROM", "CPU flags", 1);
}

/* OpenBLAS, loaded at run time (see the top of this file). */
static struct {
    void (*sgemv)(enum CBLAS_ORDER, enum CBLAS_TRANSPOSE, blasint, blasint, float, const float *,
                  blasint, const float *, blasint, float, float *, blasint);
    void (*sgemm)(enum CBLAS_ORDER, enum CBLAS_TRANSPOSE, enum CBLAS_TRANSPOSE, blasint, blasint,
                  blasint, float, const float *, blasint, const float *, blasint, float, float *,
                  blasint);
    void (*set_num_threads)(int);
    int (*get_num_threads)(void);
    char *(*get_corename)(void);
} blas;

static int load_blas(struct tv_error *err)
{
    static const char *const names[] = {"libopenblas.so.0", "libopenblas.so"};
    void *h = NULL;
    for (size_t i = 0; i < sizeof names / sizeof names[0] && !h; i++)
        h = dlopen(names[i], RTLD_NOW | RTLD_LOCAL);
    if (!h)
        return tv_error_set(err, TV_ENOTFOUND,
                            "cannot load OpenBLAS (%s): the dense baseline needs it "
                            "(Debian: apt-get install libopenblas0)",
                            dlerror());
    *(void **)&blas.sgemv = dlsym(h, "cblas_sgemv");
    *(void **)&blas.sgemm = dlsym(h, "cblas_sgemm");
    *(void **)&blas.set_num_threads = dlsym(h, "openblas_set_num_threads");
    *(void **)&blas.get_num_threads = dlsym(h, "openblas_get_num_threads");
    *(void **)&blas.get_corename = dlsym(h, "openblas_get_corename");
    if (!blas.sgemv || !blas.sgemm || !blas.set_num_threads || !blas.get_num_threads ||
        !blas.get_corename)
        return tv_error_set(err, TV_ENOTFOUND,
                            "the OpenBLAS found lacks cblas_sgemv, "
                            "cblas_sgemm or the openblas_* functions");
    return 0;
}

/* ---- net bench ------------------------------------------------------------------ */

struct bench_args {
    size_t layer, batch, graph_neurons, graph_conns, levels;
    double density, zeros;
    uint64_t seed;
    int way, act, dense;
    double seconds;      /* time budget per measurement */
    size_t tile_neurons; /* nn_opts.tile_neurons */
};

static void bench_usage(FILE *f)
{
    fprintf(f, "usage: trevo net bench (--layer N --density D | --graph NEURONS,CONNECTIONS)\n"
               "                       [--batch B] [--zeros Z] [--way auto|gather|scatter]\n"
               "                       [--levels L] [--act NAME] [--seed S] [--seconds T]\n"
               "                       [--tile N|off] [--no-dense]\n\n"
               "Times one step of the sparse engine, single core, float32, and dense OpenBLAS\n"
               "sgemv (batch 1) or sgemm (batch > 1) on the same weights in the same run; the\n"
               "last line is `ratio_vs_dense: R`: the median, over rounds that alternate the\n"
               "two, of dense time / sparse time (nan with --no-dense).\n"
               "  --layer N --density D  a random N x N layer, each weight present with\n"
               "                         probability D (identity outputs)\n"
               "  --graph N,C            a NEAT-style graph: N neurons, about C connections,\n"
               "                         local, skip and 10%% recurrent; dense baseline N x N\n"
               "  --batch B              samples per step (default 1)\n"
               "  --zeros Z              share of inputs that are exactly 0 (default 0); with\n"
               "                         Z > 0 also times gather, scatter and what auto chose\n"
               "  --way W                force a way for every layer (default auto)\n"
               "  --levels L             depths the hidden neurons of --graph spread over\n"
               "                         (default 32)\n"
               "  --act NAME             hidden activation of --graph (default relu)\n"
               "  --seconds T            time budget of each measurement (default 0.5)\n"
               "  --tile N|off           neurons per chunk of the tiled form (default: the\n"
               "                         engine's choice by network size)\n"
               "  --no-dense             skip the OpenBLAS baseline\n"
               "OPENBLAS_CORETYPE is set from the CPU's flags unless already set.\n");
}

static int parse_size(const char *s, size_t *out)
{
    char *end;
    errno = 0;
    double v = strtod(s, &end);
    if (end == s || *end || errno || !(v >= 0) || v > 1e12 || v != floor(v))
        return -1;
    *out = (size_t)v;
    return 0;
}

static int parse_bench_args(int argc, char **argv, struct bench_args *a, struct tv_error *err)
{
    *a = (struct bench_args){0, 1, 0, 0, 32, 0.0, 0.0, 1, NN_WAY_AUTO, GENOME_ACT_RELU, 1, 0.5, 0};
    int have_density = 0;
    for (int i = 1; i < argc; i++) {
        const char *o = argv[i];
        if (!strcmp(o, "--no-dense")) {
            a->dense = 0;
            continue;
        }
        if (i + 1 >= argc)
            return tv_error_set(err, TV_EINVAL, "%s: expected a value", o);
        const char *v = argv[++i];
        char *end;
        if (!strcmp(o, "--layer")) {
            if (parse_size(v, &a->layer) || a->layer == 0 || a->layer > 65536)
                return tv_error_set(err, TV_EINVAL, "--layer: expected 1..65536, got '%s'", v);
        } else if (!strcmp(o, "--density")) {
            a->density = strtod(v, &end);
            if (end == v || *end || !(a->density > 0 && a->density <= 1))
                return tv_error_set(err, TV_EINVAL, "--density: expected (0, 1], got '%s'", v);
            have_density = 1;
        } else if (!strcmp(o, "--batch")) {
            if (parse_size(v, &a->batch) || a->batch == 0 || a->batch > 4096)
                return tv_error_set(err, TV_EINVAL, "--batch: expected 1..4096, got '%s'", v);
        } else if (!strcmp(o, "--graph")) {
            const char *comma = strchr(v, ',');
            char head[64];
            if (!comma || (size_t)(comma - v) >= sizeof head)
                return tv_error_set(err, TV_EINVAL, "--graph: expected NEURONS,CONNECTIONS");
            memcpy(head, v, (size_t)(comma - v));
            head[comma - v] = '\0';
            if (parse_size(head, &a->graph_neurons) || parse_size(comma + 1, &a->graph_conns) ||
                a->graph_neurons < 16 || a->graph_neurons > ((size_t)1 << 24) ||
                a->graph_conns > ((size_t)1 << 27))
                return tv_error_set(err, TV_EINVAL,
                                    "--graph: expected NEURONS,CONNECTIONS (16..2^24 neurons, at "
                                    "most 2^27 connections), got '%s'",
                                    v);
        } else if (!strcmp(o, "--levels")) {
            if (parse_size(v, &a->levels) || a->levels == 0)
                return tv_error_set(err, TV_EINVAL, "--levels: expected a positive count, got '%s'",
                                    v);
        } else if (!strcmp(o, "--zeros")) {
            a->zeros = strtod(v, &end);
            if (end == v || *end || !(a->zeros >= 0 && a->zeros <= 1))
                return tv_error_set(err, TV_EINVAL, "--zeros: expected [0, 1], got '%s'", v);
        } else if (!strcmp(o, "--way")) {
            if (!strcmp(v, "auto"))
                a->way = NN_WAY_AUTO;
            else if (!strcmp(v, "gather"))
                a->way = NN_WAY_GATHER;
            else if (!strcmp(v, "scatter"))
                a->way = NN_WAY_SCATTER;
            else
                return tv_error_set(err, TV_EINVAL, "--way: expected auto, gather or scatter");
        } else if (!strcmp(o, "--act")) {
            a->act = genome_act_parse(v, strlen(v));
            if (a->act < 0)
                return tv_error_set(err, TV_EINVAL, "--act: unknown activation '%s'", v);
        } else if (!strcmp(o, "--seed")) {
            size_t s;
            if (parse_size(v, &s))
                return tv_error_set(err, TV_EINVAL, "--seed: expected an integer, got '%s'", v);
            a->seed = s;
        } else if (!strcmp(o, "--tile")) {
            if (!strcmp(v, "off"))
                a->tile_neurons = SIZE_MAX;
            else if (parse_size(v, &a->tile_neurons) || a->tile_neurons == 0)
                return tv_error_set(
                    err, TV_EINVAL,
                    "--tile: expected a positive number of neurons or off, got '%s'", v);
        } else if (!strcmp(o, "--seconds")) {
            a->seconds = strtod(v, &end);
            if (end == v || *end || !(a->seconds > 0 && a->seconds <= 600))
                return tv_error_set(err, TV_EINVAL, "--seconds: expected (0, 600], got '%s'", v);
        } else {
            return tv_error_set(err, TV_EINVAL, "unknown option '%s'", o);
        }
    }
    if (!a->layer == !a->graph_neurons)
        return tv_error_set(err, TV_EINVAL, "give either --layer N --density D or --graph N,C");
    if (a->layer && !have_density)
        return tv_error_set(err, TV_EINVAL, "--layer needs --density");
    return 0;
}

static double now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

#define BENCH_MAX_ROUNDS 1001

/* Something to time: fn(ctx) is one run. */
struct timed {
    void (*fn)(void *);
    void *ctx;
    double median; /* seconds per run */
    int runs;
};

static double median_of(double *t, int n)
{
    qsort(t, (size_t)n, sizeof *t, cmp_double);
    return n % 2 ? t[n / 2] : 0.5 * (t[n / 2 - 1] + t[n / 2]);
}

/* Seconds per run of k runs of x, after one untimed run (the other side of
 * a round may have flushed the caches: a 4096 x 4096 sgemv streams 64 MB). */
static double time_runs(const struct timed *x, int k)
{
    x->fn(x->ctx);
    double t0 = now();
    for (int i = 0; i < k; i++)
        x->fn(x->ctx);
    return (now() - t0) / k;
}

/* Times a and b (b may be NULL) in alternating rounds: each round runs each
 * often enough to take about as long as one run of the slower, so a load
 * that comes and goes on a shared machine hits both alike. Fills in the
 * medians; returns the median over rounds of (b time / a time). */
static double time_pair(struct timed *a, struct timed *b, double seconds)
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
    double start = now();
    int n = 0;
    while (n < BENCH_MAX_ROUNDS && (n < 5 || now() - start < seconds)) {
        ta[n] = time_runs(a, ka);
        tb[n] = b ? time_runs(b, kb) : 0.0;
        ratio[n] = tb[n] / ta[n];
        n++;
    }
    a->median = median_of(ta, n);
    a->runs = n * ka;
    if (b) {
        b->median = median_of(tb, n);
        b->runs = n * kb;
    }
    return median_of(ratio, n);
}

struct sparse_ctx {
    struct nn_plan *plan;
    struct nn_state *st;
    const float *in;    /* [batch][n_in] */
    const float *in_fm; /* [n_in][batch], what the dense side gets too */
    float *out;
};

/* Batch 1: nn_step. Batches: nn_step_feature_major, on the layout sgemm is
 * given, so that neither side pays for a transposition. */
static void sparse_run(void *p)
{
    struct sparse_ctx *c = p;
    if (nn_state_batch(c->st) == 1)
        nn_step(c->st, c->in, c->out);
    else
        nn_step_feature_major(c->st, c->in_fm, c->out);
}

static int sparse_open(struct sparse_ctx *c, const struct genome *g, const struct nn_opts *o,
                       const float *in, const float *in_fm, size_t batch, struct tv_error *err)
{
    memset(c, 0, sizeof *c);
    c->in = in;
    c->in_fm = in_fm;
    int rc = nn_plan_compile(g, o, &c->plan, err);
    if (!rc)
        rc = nn_state_new(c->plan, batch, &c->st, err);
    if (!rc && !(c->out = malloc(batch * nn_plan_n_outputs(c->plan) * sizeof *c->out)))
        rc = tv_error_set(err, TV_ENOMEM, "out of memory");
    return rc;
}

static void sparse_close(struct sparse_ctx *c)
{
    free(c->out);
    nn_state_free(c->st);
    nn_plan_free(c->plan);
}

static void print_sparse(const char *label, const struct timed *t, size_t conns, size_t batch)
{
    printf("%s: median %.6f ms over %d runs, %.3f G connections/s per sample, %.3f G "
           "connection-samples/s\n",
           label, t->median * 1e3, t->runs, (double)conns / t->median * 1e-9,
           (double)conns * (double)batch / t->median * 1e-9);
}

struct dense_ctx {
    size_t n, batch;
    const float *w, *x; /* w [n][n] (row = destination), x [n][batch] */
    float *y;           /* [n][batch] */
};

static void dense_run(void *p)
{
    struct dense_ctx *c = p;
    int n = (int)c->n, b = (int)c->batch;
    if (b == 1)
        blas.sgemv(CblasRowMajor, CblasNoTrans, n, n, 1.0f, c->w, n, c->x, 1, 0.0f, c->y, 1);
    else
        blas.sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, n, b, n, 1.0f, c->w, n, c->x, b, 0.0f,
                   c->y, b);
}

static int run_bench(const struct bench_args *a, struct tv_error *err)
{
    struct tv_rng rng;
    tv_rng_init(&rng, a->seed, 0x6e6e, 0);
    struct genome g;
    genome_init(&g);
    int rc;
    size_t n_dense; /* the dense matrix is n_dense x n_dense */
    if (a->layer) {
        uint32_t sizes[2] = {(uint32_t)a->layer, (uint32_t)a->layer};
        struct genome_layered_spec spec = {sizes,
                                           2,
                                           a->density,
                                           0.0,
                                           0.0,
                                           GENOME_ACT_RELU,
                                           GENOME_ACT_IDENTITY,
                                           1.0 / sqrt(a->density * (double)a->layer)};
        rc = genome_build_layered(&g, &spec, &rng, err);
        n_dense = a->layer;
        printf("case: layer %zux%zu, density %g, batch %zu, zeros %g, seed %llu\n", a->layer,
               a->layer, a->density, a->batch, a->zeros, (unsigned long long)a->seed);
    } else {
        size_t n = a->graph_neurons;
        struct genome_graph_spec spec = {n,
                                         n / 100 + 1,
                                         n / 100 + 1,
                                         a->graph_conns,
                                         a->levels,
                                         0.1,
                                         1.0 / sqrt((double)a->graph_conns / (double)n + 1.0),
                                         a->act,
                                         GENOME_ACT_TANH};
        rc = genome_build_graph(&g, &spec, &rng, err);
        n_dense = n;
        printf("case: graph %zu neurons, %zu connections asked, %zu levels, %s hidden, batch "
               "%zu, zeros %g, seed %llu\n",
               n, a->graph_conns, a->levels, genome_act_name(a->act), a->batch, a->zeros,
               (unsigned long long)a->seed);
    }
    if (rc) {
        genome_release(&g);
        return rc;
    }

    /* compile: the median of a few */
    struct nn_opts opts = {.way = a->way, .tile_neurons = a->tile_neurons};
    struct nn_plan *p = NULL;
    double ct[7];
    for (int i = 0; i < 7 && !rc; i++) {
        nn_plan_free(p);
        p = NULL;
        double t0 = now();
        rc = nn_plan_compile(&g, &opts, &p, err);
        ct[i] = now() - t0;
    }
    if (rc) {
        genome_release(&g);
        return rc;
    }
    qsort(ct, 7, sizeof *ct, cmp_double);
    size_t m = nn_plan_n_conns(p), n_in = nn_plan_n_inputs(p), n_out = nn_plan_n_outputs(p);
    printf("connections: %zu (%zu recurrent), %zu neurons, %zu layers, %d-bit indices\n", m,
           nn_plan_n_recurrent(p), nn_plan_n_neurons(p), nn_plan_n_layers(p),
           nn_plan_index_bits(p));
    printf("plan: %zu bytes, %.2f bytes/connection\n", nn_plan_bytes(p),
           (double)nn_plan_bytes(p) / (double)(m ? m : 1));
    printf("compile: median %.3f ms, %.2f ns/connection\n", ct[3] * 1e3,
           ct[3] * 1e9 / (double)(m ? m : 1));

    /* inputs, sample-major for the engine; zeros where asked */
    float *in = malloc(a->batch * n_in * sizeof *in);
    if (!in) {
        nn_plan_free(p);
        genome_release(&g);
        return tv_error_set(err, TV_ENOMEM, "out of memory");
    }
    for (size_t i = 0; i < a->batch * n_in; i++)
        in[i] = tv_rng_chance(&rng, a->zeros) ? 0.0f : (float)tv_rng_normal(&rng);
    /* [n_in][batch], 64-byte aligned as a data set kept for SIMD would be (the
     * engine then reads it in place, nn_step_feature_major) */
    float *in_fm = aligned_alloc(64, (a->batch * n_in * sizeof *in_fm + 63) & ~(size_t)63);
    if (!in_fm) {
        free(in);
        nn_plan_free(p);
        genome_release(&g);
        return tv_error_set(err, TV_ENOMEM, "out of memory");
    }
    for (size_t k = 0; k < n_in; k++)
        for (size_t s = 0; s < a->batch; s++)
            in_fm[k * a->batch + s] = in[s * n_in + k];

    /* AUTO with a measured density: a few steps, then recompile */
    float *dens = NULL;
    if (a->way == NN_WAY_AUTO) {
        struct nn_state *st = NULL;
        size_t L = nn_plan_n_layers(p);
        dens = malloc(L * sizeof *dens);
        rc = dens ? nn_state_new(p, a->batch, &st, err) : TV_ENOMEM;
        for (int t = 0; t < 3 && !rc; t++)
            nn_step(st, in, NULL);
        if (!rc)
            rc = nn_state_density(st, dens, err);
        nn_state_free(st);
        if (!rc) {
            opts.density = dens;
            opts.n_density = L;
            printf("auto: measured input density %.3f -> input layer %s\n", (double)dens[0],
                   dens[0] <= NN_SCATTER_MAX_DENSITY ? "scatter" : "gather");
        }
    }
    struct sparse_ctx sp = {0}, sg = {0}, ss = {0};
    struct dense_ctx dc = {0};
    struct timed ts = {sparse_run, &sp, 0, 0}, td = {dense_run, &dc, 0, 0};
    double ratio = NAN;
    if (!rc)
        rc = sparse_open(&sp, &g, &opts, in, in_fm, a->batch, err);
    if (!rc) { /* the plan timed */
        size_t n_scatter = 0, L = nn_plan_n_layers(sp.plan);
        for (size_t l = 0; l < L; l++)
            n_scatter += nn_plan_layer_way(sp.plan, l) == NN_WAY_SCATTER;
        printf("timed plan: %zu of %zu layers scatter; %zu tile chunks, %zu connections tiled\n",
               n_scatter, L, nn_plan_n_chunks(sp.plan), nn_plan_n_tiled(sp.plan));
    }
    if (!rc && a->zeros > 0) { /* the two ways apart, interleaved */
        struct nn_opts og = {.way = NN_WAY_GATHER, .tile_neurons = a->tile_neurons},
                       os = {.way = NN_WAY_SCATTER, .tile_neurons = a->tile_neurons};
        rc = sparse_open(&sg, &g, &og, in, in_fm, a->batch, err);
        if (!rc)
            rc = sparse_open(&ss, &g, &os, in, in_fm, a->batch, err);
        if (!rc) {
            struct timed tg = {sparse_run, &sg, 0, 0}, tsc = {sparse_run, &ss, 0, 0};
            double r = time_pair(&tsc, &tg, a->seconds);
            print_sparse("sparse gather", &tg, m, a->batch);
            print_sparse("sparse scatter", &tsc, m, a->batch);
            printf("scatter_speedup: %.3f (gather time / scatter time)\n", r);
            struct timed tau = {sparse_run, &sp, 0, 0};
            r = time_pair(&tau, &tg, a->seconds);
            print_sparse("sparse auto", &tau, m, a->batch);
            printf("zero_skip_speedup: %.3f (gather time / time of the way auto chose)\n", r);
        }
    }
    float *w = NULL, *x = NULL, *y = NULL;
    if (!rc && a->dense && n_dense > 20000) {
        printf("dense: skipped (%zu x %zu floats is too large)\n", n_dense, n_dense);
    } else if (!rc && a->dense) {
        size_t n = n_dense, b = a->batch;
        w = calloc(n * n, sizeof *w);
        x = malloc(n * b * sizeof *x);
        y = malloc(n * b * sizeof *y);
        if (!w || !x || !y)
            rc = tv_error_set(err, TV_ENOMEM, "out of memory for the dense baseline");
    }
    if (!rc && w) {
        size_t n = n_dense, b = a->batch;
        /* the same weights: row = destination, column = source, by id
         * position (layer: inputs 0..N-1, outputs N..2N-1) */
        for (size_t c = 0; c < g.n_conns; c++)
            w[(g.conns[c].to % n) * n + g.conns[c].from % n] = g.conns[c].weight;
        for (size_t k = 0; k < n; k++)
            for (size_t s = 0; s < b; s++)
                x[k * b + s] = k < n_in ? in[s * n_in + k] : 0.0f;
        dc = (struct dense_ctx){n, b, w, x, y};
        ratio = time_pair(&ts, &td, a->seconds);
        print_sparse("sparse", &ts, m, a->batch);
        printf("dense %s: median %.6f ms over %d runs (%zu x %zu, batch %zu)\n",
               b == 1 ? "sgemv" : "sgemm", td.median * 1e3, td.runs, n, n, b);
        if (a->layer) { /* the layer is linear: both must agree */
            dense_run(&dc);
            nn_state_reset(sp.st);
            nn_step(sp.st, in, sp.out);
            double worst = 0;
            for (size_t k = 0; k < n_out; k++)
                for (size_t s = 0; s < b; s++) {
                    double d = fabs((double)sp.out[s * n_out + k] - (double)y[k * b + s]);
                    d /= 1.0 + fabs((double)y[k * b + s]);
                    worst = d > worst ? d : worst;
                }
            printf("check: max |sparse - dense| / (1 + |dense|) = %.3g\n", worst);
        }
    } else if (!rc) {
        time_pair(&ts, NULL, a->seconds);
        print_sparse("sparse", &ts, m, a->batch);
    }
    free(w);
    free(x);
    free(y);
    sparse_close(&sp);
    sparse_close(&sg);
    sparse_close(&ss);
    free(dens);
    if (!rc)
        printf("ratio_vs_dense: %.3f\n", ratio);
    free(in);
    free(in_fm);
    nn_plan_free(p);
    genome_release(&g);
    return rc;
}

int master_cmd_net_bench(int argc, char **argv)
{
    if (master_wants_help(argc, argv)) {
        bench_usage(stdout);
        return 0;
    }
    struct tv_error err = {0};
    struct bench_args a;
    if (parse_bench_args(argc, argv, &a, &err)) {
        fprintf(stderr, "trevo net bench: %s\n", err.msg);
        bench_usage(stderr);
        return 2;
    }
    coretype_choose();
    if (load_blas(&err))
        return master_fail(&err);
    blas.set_num_threads(1);
    const char *asked = getenv("OPENBLAS_CORETYPE");
    const char *used = blas.get_corename();
    const char *from = getenv("TREVO_CORETYPE_FROM");
    printf("openblas: core %s (OPENBLAS_CORETYPE=%s, %s), %d thread\n", used ? used : "?",
           asked ? asked : "unset",
           asked ? (from ? "set from the CPU flags" : "set by the user")
                 : "OpenBLAS's own detection",
           blas.get_num_threads());
    if (asked && used && strcasecmp(asked, used))
        printf("warning: OpenBLAS uses core %s, not the %s asked for\n", used, asked);
    if (run_bench(&a, &err))
        return master_fail(&err);
    return 0;
}
