/* cmd_bench.c -- `trevo net bench`: the sparse engine against dense OpenBLAS
 * (sgemv / sgemm, blas.h) on the same weights in the same process; it
 * prints the core OpenBLAS reports using, openblas_get_corename(), beside the
 * one asked for. */
#include "bench.h"
#include "blas.h"
#include "cli.h"

#include <errno.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "nn.h"

/* ---- net bench ------------------------------------------------------------------ */

struct bench_args {
    size_t layer, batch, graph_neurons, graph_conns, levels;
    double density, zeros;
    uint64_t seed;
    int way, act, dense;
    double seconds;      /* time budget per measurement */
    size_t tile_neurons; /* nn_opts.tile_neurons */
};

static const char bench_usage[] =
    "usage: trevo net bench (--layer N --density D | --graph NEURONS,CONNECTIONS)\n"
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
    "                         local, skip and 10% recurrent; dense baseline N x N\n"
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
    "  --cuba                 the CUBA spiking network against Brian2 instead\n"
    "                         (trevo net bench --cuba --help)\n"
    "  --conv IN,OUT,K,H,W    a sparse convolution layer against im2col + sgemm\n"
    "                         instead (trevo net bench --conv --help)\n"
    "  --spike-layers L,N,F   a layered spiking network, frustum tiles against\n"
    "                         layer by layer (trevo net bench --spike-layers\n"
    "                         --help)\n"
    "OPENBLAS_CORETYPE is set from the CPU's flags unless already set.\n";

static int parse_bench_args(int argc, char **argv, void *args, struct tv_error *err)
{
    struct bench_args *a = args;
    *a = (struct bench_args){0, 1, 0, 0, 32, 0.0, 0.0, 1, NN_WAY_AUTO, GENOME_ACT_RELU, 1, 0.5, 0};
    int have_density = 0;
    for (int i = 1; i < argc; i++) {
        const char *o = argv[i];
        if (!strcmp(o, "--no-dense")) {
            a->dense = 0;
            continue;
        }
        if (o[0] != '-')
            return cli_arg_error(o, err);
        if (i + 1 >= argc)
            return tv_error_set(err, TV_EINVAL, "%s: expected a value", o);
        const char *v = argv[++i];
        if (!strcmp(o, "--layer")) {
            if (cli_parse_size(o, v, 1, 65536, &a->layer, err))
                return err->code;
        } else if (!strcmp(o, "--density")) {
            if (cli_parse_real(o, v, 0, 1, 1, &a->density, err))
                return err->code;
            have_density = 1;
        } else if (!strcmp(o, "--batch")) {
            if (cli_parse_size(o, v, 1, 4096, &a->batch, err))
                return err->code;
        } else if (!strcmp(o, "--graph")) {
            const char *comma = strchr(v, ',');
            char head[64];
            if (!comma || (size_t)(comma - v) >= sizeof head)
                return tv_error_set(err, TV_EINVAL, "--graph: expected NEURONS,CONNECTIONS");
            memcpy(head, v, (size_t)(comma - v));
            head[comma - v] = '\0';
            if (cli_parse_size(o, head, 16, (size_t)1 << 24, &a->graph_neurons, err) ||
                cli_parse_size(o, comma + 1, 0, (size_t)1 << 27, &a->graph_conns, err))
                return tv_error_set(err, TV_EINVAL,
                                    "--graph: expected NEURONS,CONNECTIONS (16..2^24 neurons, at "
                                    "most 2^27 connections), got '%s'",
                                    v);
        } else if (!strcmp(o, "--levels")) {
            if (cli_parse_size(o, v, 1, (size_t)1 << 24, &a->levels, err))
                return err->code;
        } else if (!strcmp(o, "--zeros")) {
            if (cli_parse_real(o, v, 0, 0, 1, &a->zeros, err))
                return err->code;
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
            uint64_t s;
            if (cli_parse_u64(o, v, UINT64_MAX, &s, err))
                return err->code;
            a->seed = s;
        } else if (!strcmp(o, "--tile")) {
            if (!strcmp(v, "off"))
                a->tile_neurons = SIZE_MAX;
            else if (cli_parse_size(o, v, 1, (size_t)1 << 24, &a->tile_neurons, err))
                return err->code;
        } else if (!strcmp(o, "--seconds")) {
            if (cli_parse_real(o, v, 0, 1, 600, &a->seconds, err))
                return err->code;
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

static void print_sparse(const char *label, const struct cli_timed *t, size_t conns, size_t batch)
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
        cli_blas.sgemv(CblasRowMajor, CblasNoTrans, n, n, 1.0f, c->w, n, c->x, 1, 0.0f, c->y, 1);
    else
        cli_blas.sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, n, b, n, 1.0f, c->w, n, c->x, b,
                       0.0f, c->y, b);
}

/* Builds the case's genome into g and says what it is; *n_dense: the side
 * of the dense matrix. */
static int bench_genome(const struct bench_args *a, struct tv_rng *rng, struct genome *g,
                        size_t *n_dense, struct tv_error *err)
{
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
        int rc = genome_build_layered(g, &spec, rng, err);
        *n_dense = a->layer;
        printf("case: layer %zux%zu, density %g, batch %zu, zeros %g, seed %llu\n", a->layer,
               a->layer, a->density, a->batch, a->zeros, (unsigned long long)a->seed);
        return rc;
    }
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
    int rc = genome_build_graph(g, &spec, rng, err);
    *n_dense = n;
    printf("case: graph %zu neurons, %zu connections asked, %zu levels, %s hidden, batch "
           "%zu, zeros %g, seed %llu\n",
           n, a->graph_conns, a->levels, genome_act_name(a->act), a->batch, a->zeros,
           (unsigned long long)a->seed);
    return rc;
}

/* Compiles g seven times and reports the plan and the median time. */
static int bench_compile(const struct genome *g, const struct nn_opts *opts, struct nn_plan **out,
                         struct tv_error *err)
{
    struct nn_plan *p = NULL;
    double ct[7];
    int rc = 0;
    for (int i = 0; i < 7 && !rc; i++) {
        nn_plan_free(p);
        p = NULL;
        double t0 = cli_bench_now();
        rc = nn_plan_compile(g, opts, &p, err);
        ct[i] = cli_bench_now() - t0;
    }
    if (rc)
        return rc;
    double median = cli_bench_median(ct, 7);
    size_t m = nn_plan_n_conns(p);
    printf("connections: %zu (%zu recurrent), %zu neurons, %zu layers, %d-bit indices\n", m,
           nn_plan_n_recurrent(p), nn_plan_n_neurons(p), nn_plan_n_layers(p),
           nn_plan_index_bits(p));
    printf("plan: %zu bytes, %.2f bytes/connection\n", nn_plan_bytes(p),
           (double)nn_plan_bytes(p) / (double)(m ? m : 1));
    printf("compile: median %.3f ms, %.2f ns/connection\n", median * 1e3,
           median * 1e9 / (double)(m ? m : 1));
    *out = p;
    return 0;
}

/* The inputs: sample-major *in [batch][n_in] for the engine, zeros where
 * asked, and its copy *in_fm [n_in][batch], 64-byte aligned as a data set
 * kept for SIMD would be (the engine then reads it in place,
 * nn_step_feature_major). */
static int bench_inputs(const struct bench_args *a, struct tv_rng *rng, size_t n_in, float **in,
                        float **in_fm, struct tv_error *err)
{
    *in = malloc(a->batch * n_in * sizeof **in);
    *in_fm = *in ? aligned_alloc(64, (a->batch * n_in * sizeof **in_fm + 63) & ~(size_t)63) : NULL;
    if (!*in_fm)
        return tv_error_set(err, TV_ENOMEM, "out of memory");
    for (size_t i = 0; i < a->batch * n_in; i++)
        (*in)[i] = tv_rng_chance(rng, a->zeros) ? 0.0f : (float)tv_rng_normal(rng);
    for (size_t k = 0; k < n_in; k++)
        for (size_t s = 0; s < a->batch; s++)
            (*in_fm)[k * a->batch + s] = (*in)[s * n_in + k];
    return 0;
}

/* NN_WAY_AUTO with a measured density: a few steps of p, then opts points
 * to the densities (*dens, to free) for the recompilation. */
static int bench_auto_density(const struct bench_args *a, const struct nn_plan *p, const float *in,
                              struct nn_opts *opts, float **dens, struct tv_error *err)
{
    struct nn_state *st = NULL;
    size_t L = nn_plan_n_layers(p);
    *dens = malloc(L * sizeof **dens);
    int rc =
        *dens ? nn_state_new(p, a->batch, &st, err) : tv_error_set(err, TV_ENOMEM, "out of memory");
    for (int t = 0; t < 3 && !rc; t++)
        nn_step(st, in, NULL);
    if (!rc)
        rc = nn_state_density(st, *dens, err);
    nn_state_free(st);
    if (!rc) {
        opts->density = *dens;
        opts->n_density = L;
        printf("auto: measured input density %.3f -> input layer %s\n", (double)(*dens)[0],
               (*dens)[0] <= NN_SCATTER_MAX_DENSITY ? "scatter" : "gather");
    }
    return rc;
}

/* With zeros in the input: the gather and scatter ways apart, interleaved,
 * and the way auto chose (sp) against gather. */
static int bench_ways(const struct bench_args *a, const struct genome *g, struct sparse_ctx *sp,
                      const float *in, const float *in_fm, size_t m, struct tv_error *err)
{
    struct sparse_ctx sg = {0}, ss = {0};
    struct nn_opts og = {.way = NN_WAY_GATHER, .tile_neurons = a->tile_neurons},
                   os = {.way = NN_WAY_SCATTER, .tile_neurons = a->tile_neurons};
    int rc = sparse_open(&sg, g, &og, in, in_fm, a->batch, err);
    if (!rc)
        rc = sparse_open(&ss, g, &os, in, in_fm, a->batch, err);
    if (!rc) {
        struct cli_timed tg = {sparse_run, &sg, 0, 0}, tsc = {sparse_run, &ss, 0, 0};
        double r = cli_bench_time_pair(&tsc, &tg, a->seconds);
        print_sparse("sparse gather", &tg, m, a->batch);
        print_sparse("sparse scatter", &tsc, m, a->batch);
        printf("scatter_speedup: %.3f (gather time / scatter time)\n", r);
        struct cli_timed tau = {sparse_run, sp, 0, 0};
        r = cli_bench_time_pair(&tau, &tg, a->seconds);
        print_sparse("sparse auto", &tau, m, a->batch);
        printf("zero_skip_speedup: %.3f (gather time / time of the way auto chose)\n", r);
    }
    sparse_close(&sg);
    sparse_close(&ss);
    return rc;
}

/* The plan sp against dense OpenBLAS on the same weights (n x n, row =
 * destination, column = source, by id position: layer inputs 0..N-1,
 * outputs N..2N-1); for a layer, which is linear, a check that both agree.
 * *ratio: dense time / sparse time. */
static int bench_dense(const struct bench_args *a, const struct genome *g, struct sparse_ctx *sp,
                       size_t n, size_t m, double *ratio, struct tv_error *err)
{
    size_t b = a->batch, n_in = nn_plan_n_inputs(sp->plan), n_out = nn_plan_n_outputs(sp->plan);
    float *w = calloc(n * n, sizeof *w), *x = malloc(n * b * sizeof *x);
    float *y = malloc(n * b * sizeof *y);
    int rc = 0;
    if (!w || !x || !y)
        rc = tv_error_set(err, TV_ENOMEM, "out of memory for the dense baseline");
    if (!rc) {
        for (size_t c = 0; c < g->n_conns; c++)
            w[(g->conns[c].to % n) * n + g->conns[c].from % n] = g->conns[c].weight;
        for (size_t k = 0; k < n; k++)
            for (size_t s = 0; s < b; s++)
                x[k * b + s] = k < n_in ? sp->in[s * n_in + k] : 0.0f;
        struct dense_ctx dc = {n, b, w, x, y};
        struct cli_timed ts = {sparse_run, sp, 0, 0}, td = {dense_run, &dc, 0, 0};
        *ratio = cli_bench_time_pair(&ts, &td, a->seconds);
        print_sparse("sparse", &ts, m, a->batch);
        printf("dense %s: median %.6f ms over %d runs (%zu x %zu, batch %zu)\n",
               b == 1 ? "sgemv" : "sgemm", td.median * 1e3, td.runs, n, n, b);
        if (a->layer) {
            dense_run(&dc);
            nn_state_reset(sp->st);
            nn_step(sp->st, sp->in, sp->out);
            double worst = 0;
            for (size_t k = 0; k < n_out; k++)
                for (size_t s = 0; s < b; s++) {
                    double d = fabs((double)sp->out[s * n_out + k] - (double)y[k * b + s]);
                    d /= 1.0 + fabs((double)y[k * b + s]);
                    worst = d > worst ? d : worst;
                }
            printf("check: max |sparse - dense| / (1 + |dense|) = %.3g\n", worst);
        }
    }
    free(w);
    free(x);
    free(y);
    return rc;
}

static int run_bench(const struct bench_args *a, struct tv_error *err)
{
    struct tv_rng rng;
    tv_rng_init(&rng, a->seed, 0x6e6e, 0);
    struct genome g;
    genome_init(&g);
    size_t n_dense; /* the dense matrix is n_dense x n_dense */
    struct nn_opts opts = {.way = a->way, .tile_neurons = a->tile_neurons};
    struct nn_plan *p = NULL;
    float *in = NULL, *in_fm = NULL, *dens = NULL;
    struct sparse_ctx sp = {0};
    double ratio = NAN;
    int rc = bench_genome(a, &rng, &g, &n_dense, err);
    if (!rc)
        rc = bench_compile(&g, &opts, &p, err);
    if (!rc)
        rc = bench_inputs(a, &rng, nn_plan_n_inputs(p), &in, &in_fm, err);
    if (!rc && a->way == NN_WAY_AUTO)
        rc = bench_auto_density(a, p, in, &opts, &dens, err);
    if (!rc)
        rc = sparse_open(&sp, &g, &opts, in, in_fm, a->batch, err);
    size_t m = p ? nn_plan_n_conns(p) : 0;
    if (!rc) { /* the plan timed */
        size_t n_scatter = 0, L = nn_plan_n_layers(sp.plan);
        for (size_t l = 0; l < L; l++)
            n_scatter += nn_plan_layer_way(sp.plan, l) == NN_WAY_SCATTER;
        printf("timed plan: %zu of %zu layers scatter; %zu tile chunks, %zu connections tiled\n",
               n_scatter, L, nn_plan_n_chunks(sp.plan), nn_plan_n_tiled(sp.plan));
    }
    if (!rc && a->zeros > 0)
        rc = bench_ways(a, &g, &sp, in, in_fm, m, err);
    if (!rc && a->dense && n_dense > 20000) {
        printf("dense: skipped (%zu x %zu floats is too large)\n", n_dense, n_dense);
    } else if (!rc && a->dense) {
        rc = bench_dense(a, &g, &sp, n_dense, m, &ratio, err);
    } else if (!rc) {
        struct cli_timed ts = {sparse_run, &sp, 0, 0};
        cli_bench_time_pair(&ts, NULL, a->seconds);
        print_sparse("sparse", &ts, m, a->batch);
    }
    sparse_close(&sp);
    free(dens);
    if (!rc)
        printf("ratio_vs_dense: %.3f\n", ratio);
    free(in);
    free(in_fm);
    nn_plan_free(p);
    genome_release(&g);
    return rc;
}

int cli_cmd_net_bench(int argc, char **argv)
{
    for (int i = 1; i < argc; i++)
        if (!strcmp(argv[i], "--cuba"))
            return cli_cmd_net_bench_cuba(argc, argv);
        else if (!strcmp(argv[i], "--spike-layers"))
            return cli_cmd_net_bench_layers(argc, argv);
        else if (!strcmp(argv[i], "--conv"))
            return cli_cmd_net_bench_conv(argc, argv);
    struct bench_args a;
    int st = cli_front(argc, argv, "net bench", bench_usage, parse_bench_args, &a);
    if (st >= 0)
        return st;
    struct tv_error err = {0};
    if (cli_blas_open(&err))
        return cli_fail(&err);
    if (run_bench(&a, &err))
        return cli_fail(&err);
    return 0;
}
