/* cmd_conv.c -- `trevo net bench --conv`: the sparse convolution layer
 * (nn/conv/conv.h) against the dense one, im2col and OpenBLAS's sgemm, on the
 * same random layer in the same run; and against our own dense layer (im2col
 * and our GEMM), which stands in for OpenBLAS when it is not installed. */
#include "bench.h"
#include "blas.h"
#include "cli.h"

#include <errno.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "conv.h"

struct conv_args {
    struct nn_conv_shape s;
    double density;
    size_t batch;
    uint64_t seed;
    double seconds;
    int backward;
    int wall; /* time in wall-clock seconds, not CPU seconds */
};

static const char conv_usage[] =
    "usage: trevo net bench --conv IN,OUT,K,H,W --density D [--batch B] [--stride S]\n"
    "                       [--pad P] [--seed N] [--seconds T] [--no-backward]\n"
    "                       [--wall]\n\n"
    "Times a sparse convolution layer (IN -> OUT channels, K x K kernel, H x W input\n"
    "maps, each coefficient present with probability D), one core, float32, against\n"
    "the dense layer on the same weights in the same run: im2col then OpenBLAS\n"
    "sgemm, and im2col then our own GEMM (the only dense side without OpenBLAS).\n"
    "The last line is `ratio_vs_dense: R`: the median, over rounds that alternate\n"
    "the two, of dense (OpenBLAS) time / sparse time.\n"
    "  --batch B        samples per call (default 1), the batch innermost\n"
    "  --stride S       default 1\n"
    "  --pad P          default (K - 1) / 2\n"
    "  --seconds T      time budget of each comparison (default 0.5)\n"
    "  --no-backward    skip the backward pass (dL/dx and dL/dw; the dense side:\n"
    "                   im2col and two sgemm, the col2im not counted)\n"
    "  --wall           time in wall-clock seconds (default: the thread's CPU\n"
    "                   seconds, so that the work of others on a loaded machine\n"
    "                   is not counted; the budget of --seconds too)\n"
    "OPENBLAS_CORETYPE is set from the CPU's flags unless already set.\n";

static int parse_geometry(const char *v, struct nn_conv_shape *s, struct tv_error *err)
{
    size_t f[5];
    if (cli_parse_size_list("--conv", "IN,OUT,K,H,W", v, 5, 1, 65536, f, err))
        return err->code;
    *s = (struct nn_conv_shape){f[0], f[1], f[3], f[4], f[2], f[2], 1, (f[2] - 1) / 2};
    return 0;
}

static int parse_conv_args(int argc, char **argv, void *args, struct tv_error *err)
{
    struct conv_args *a = args;
    *a = (struct conv_args){.batch = 1, .seed = 1, .seconds = 0.5, .backward = 1, .density = -1};
    int have_conv = 0, have_pad = 0;
    size_t pad = 0;
    for (int i = 1; i < argc; i++) {
        const char *o = argv[i];
        if (!strcmp(o, "--no-backward")) {
            a->backward = 0;
            continue;
        }
        if (!strcmp(o, "--wall")) {
            a->wall = 1;
            continue;
        }
        if (o[0] != '-')
            return cli_arg_error(o, err);
        if (i + 1 >= argc)
            return tv_error_set(err, TV_EINVAL, "%s: expected a value", o);
        const char *v = argv[++i];
        if (!strcmp(o, "--conv")) {
            if (parse_geometry(v, &a->s, err))
                return err->code;
            have_conv = 1;
        } else if (!strcmp(o, "--density")) {
            if (cli_parse_real(o, v, 0, 0, 1, &a->density, err))
                return err->code;
        } else if (!strcmp(o, "--batch")) {
            if (cli_parse_size(o, v, 1, 4096, &a->batch, err))
                return err->code;
        } else if (!strcmp(o, "--stride")) {
            if (cli_parse_size(o, v, 1, NN_CONV_MAX_K, &a->s.stride, err))
                return err->code;
        } else if (!strcmp(o, "--pad")) {
            if (cli_parse_size(o, v, 0, NN_CONV_MAX_K, &pad, err))
                return err->code;
            have_pad = 1;
        } else if (!strcmp(o, "--seed")) {
            if (cli_parse_u64(o, v, UINT64_MAX, &a->seed, err))
                return err->code;
        } else if (!strcmp(o, "--seconds")) {
            if (cli_parse_real(o, v, 1e-3, 0, 600, &a->seconds, err))
                return err->code;
        } else {
            return tv_error_set(err, TV_EINVAL, "unknown option '%s'", o);
        }
    }
    if (!have_conv || a->density < 0)
        return tv_error_set(err, TV_EINVAL, "give --conv IN,OUT,K,H,W and --density D");
    size_t stride = a->s.stride ? a->s.stride : 1;
    a->s.stride = stride;
    if (have_pad)
        a->s.pad = pad;
    return 0;
}

/* ---- the layer and its three forms ---------------------------------------------- */

struct conv_bench {
    struct conv_args a;
    size_t n, kk, ncol, nx, ny; /* coefficients; kk = IN K K; ncol = out pixels * batch */
    struct nn_conv_coef *c;
    float *w; /* dense [OUT][kk] */
    float *x, *dy, *y_sparse, *y_dense, *y_own, *dx, *dw, *col, *dcol, *dwd;
    struct nn_conv *sparse;
    struct nn_conv_dense *own;
    int blas; /* OpenBLAS loaded */
};

static void conv_bench_free(struct conv_bench *b)
{
    TV_FREE_ALL(b->c, b->w, b->x, b->dy, b->y_sparse, b->y_dense, b->y_own, b->dx, b->dw, b->col,
                b->dcol, b->dwd);
    nn_conv_free(b->sparse);
    nn_conv_dense_free(b->own);
}

static int conv_bench_make(struct conv_bench *b, struct tv_error *err)
{
    const struct nn_conv_shape *s = &b->a.s;
    size_t B = b->a.batch;
    b->kk = s->in_ch * s->k_h * s->k_w;
    b->ncol = nn_conv_out_h(s) * nn_conv_out_w(s) * B;
    b->nx = s->in_ch * s->in_h * s->in_w * B;
    b->ny = s->out_ch * b->ncol;
    size_t all = s->out_ch * b->kk;
    b->c = malloc(all * sizeof *b->c);
    b->w = calloc(all, sizeof *b->w);
    /* every side's maps 64-byte aligned, as a caller of nn_conv_alloc has
     * them (BENCHMARKS.md: what 16-byte aligned maps cost at batch 64) */
    b->x = nn_conv_alloc(b->nx);
    b->dy = nn_conv_alloc(b->ny);
    b->y_sparse = nn_conv_alloc(b->ny);
    b->y_dense = nn_conv_alloc(b->ny);
    b->y_own = nn_conv_alloc(b->ny);
    b->dx = nn_conv_alloc(b->nx);
    b->dw = malloc(all * sizeof *b->dw);
    b->dwd = malloc(all * sizeof *b->dwd);
    b->col = nn_conv_alloc(b->kk * b->ncol);
    b->dcol = nn_conv_alloc(b->kk * b->ncol);
    if (!b->c || !b->w || !b->x || !b->dy || !b->y_sparse || !b->y_dense || !b->y_own || !b->dx ||
        !b->dw || !b->dwd || !b->col || !b->dcol)
        return tv_error_set(err, TV_ENOMEM, "out of memory for the layer");
    struct tv_rng rng;
    tv_rng_init(&rng, b->a.seed, 0xc0c0, 0);
    double sd = 1.0 / sqrt(fmax(1.0, b->a.density * (double)b->kk));
    for (uint32_t o = 0; o < s->out_ch; o++)
        for (uint32_t i = 0; i < s->in_ch; i++)
            for (uint8_t ky = 0; ky < s->k_h; ky++)
                for (uint8_t kx = 0; kx < s->k_w; kx++)
                    if (tv_rng_chance(&rng, b->a.density)) {
                        float w = (float)(sd * tv_rng_normal(&rng));
                        b->c[b->n++] = (struct nn_conv_coef){o, i, ky, kx, w};
                        b->w[o * b->kk + (i * s->k_h + ky) * s->k_w + kx] = w;
                    }
    for (size_t k = 0; k < b->nx; k++)
        b->x[k] = (float)tv_rng_normal(&rng);
    for (size_t k = 0; k < b->ny; k++)
        b->dy[k] = (float)tv_rng_normal(&rng);
    int rc = nn_conv_new(s, b->c, b->n, B, &b->sparse, err);
    if (!rc)
        rc = nn_conv_dense_new(s, b->w, B, &b->own, err);
    return rc;
}

static void run_sparse(void *p)
{
    struct conv_bench *b = p;
    nn_conv_forward(b->sparse, b->x, b->a.batch, b->y_sparse);
}

static void run_sparse_backward(void *p)
{
    struct conv_bench *b = p;
    nn_conv_backward(b->sparse, b->x, b->dy, b->a.batch, b->dx, b->dw);
}

static void run_own(void *p)
{
    struct conv_bench *b = p;
    nn_conv_dense_forward(b->own, b->x, b->a.batch, b->y_own);
}

/* y [OUT][ncol] = w [OUT][kk] col [kk][ncol] */
static void run_blas(void *p)
{
    struct conv_bench *b = p;
    int m = (int)b->a.s.out_ch, n = (int)b->ncol, k = (int)b->kk;
    nn_conv_im2col(&b->a.s, b->x, b->a.batch, b->col);
    cli_blas.sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, m, n, k, 1.0f, b->w, k, b->col, n,
                   0.0f, b->y_dense, n);
}

/* dW = dy col^T, dcol = W^T dy (col2im not counted). */
static void run_blas_backward(void *p)
{
    struct conv_bench *b = p;
    int m = (int)b->a.s.out_ch, n = (int)b->ncol, k = (int)b->kk;
    nn_conv_im2col(&b->a.s, b->x, b->a.batch, b->col);
    cli_blas.sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, m, k, n, 1.0f, b->dy, n, b->col, n,
                   0.0f, b->dwd, k);
    cli_blas.sgemm(CblasRowMajor, CblasTrans, CblasNoTrans, k, n, m, 1.0f, b->w, k, b->dy, n, 0.0f,
                   b->dcol, n);
}

/* max |a - b| / (1 + |b|) */
static double worst_diff(const float *a, const float *b, size_t n)
{
    double worst = 0;
    for (size_t i = 0; i < n; i++) {
        double d = fabs((double)a[i] - (double)b[i]) / (1.0 + fabs((double)b[i]));
        worst = d > worst ? d : worst;
    }
    return worst;
}

static void print_side(const char *label, const struct cli_timed *t, const struct conv_bench *b)
{
    double macs = (double)b->n * (double)b->ncol; /* multiply-adds the sparse layer does */
    printf("%s: median %.6f ms over %d runs, %.3f ns per output, %.3f ns per coefficient "
           "and sample, %.3f G useful multiply-adds/s\n",
           label, t->median * 1e3, t->runs, t->median * 1e9 / (double)b->ny,
           t->median * 1e9 / ((double)(b->n ? b->n : 1) * (double)b->a.batch),
           macs / t->median * 1e-9);
}

static int run_conv_bench(struct conv_bench *b, struct tv_error *err)
{
    const struct nn_conv_shape *s = &b->a.s;
    int rc = conv_bench_make(b, err);
    if (rc)
        return rc;
    size_t all = s->out_ch * b->kk;
    printf("case: conv %zu -> %zu, %zu x %zu kernel, %zu x %zu maps -> %zu x %zu, stride %zu, "
           "pad %zu, density %g (%zu of %zu coefficients), batch %zu, seed %llu\n",
           s->in_ch, s->out_ch, s->k_h, s->k_w, s->in_h, s->in_w, nn_conv_out_h(s),
           nn_conv_out_w(s), s->stride, s->pad, b->a.density, b->n, all, b->a.batch,
           (unsigned long long)b->a.seed);
    printf("layer: %zu bytes (sparse, with scratch); target %d; times in %s seconds\n",
           nn_conv_bytes(b->sparse), nn_conv_target(b->sparse),
           b->a.wall ? "wall-clock" : "thread CPU");
    cli_bench_cpu_clock = !b->a.wall;
    struct cli_timed ts = {run_sparse, b, 0, 0}, to = {run_own, b, 0, 0}, td = {run_blas, b, 0, 0};
    double r_own = cli_bench_time_pair(&ts, &to, b->a.seconds), ratio = r_own;
    print_side("sparse", &ts, b);
    print_side("dense ours (im2col + GEMM)", &to, b);
    printf("ratio_vs_own_dense: %.3f\n", r_own);
    run_sparse(b);
    run_own(b);
    printf("check: max |sparse - ours| / (1 + |ours|) = %.3g\n",
           worst_diff(b->y_sparse, b->y_own, b->ny));
    if (b->blas) {
        ratio = cli_bench_time_pair(&ts, &td, b->a.seconds);
        print_side("sparse", &ts, b);
        print_side("dense openblas (im2col + sgemm)", &td, b);
        run_blas(b);
        printf("check: max |sparse - openblas| / (1 + |openblas|) = %.3g\n",
               worst_diff(b->y_sparse, b->y_dense, b->ny));
    }
    if (b->a.backward) {
        struct cli_timed tsb = {run_sparse_backward, b, 0, 0}, tdb = {run_blas_backward, b, 0, 0};
        double rb = cli_bench_time_pair(&tsb, b->blas ? &tdb : NULL, b->a.seconds);
        print_side("sparse backward (dx, dw)", &tsb, b);
        if (b->blas) {
            print_side("dense openblas backward (im2col + 2 sgemm)", &tdb, b);
            printf("backward_ratio_vs_dense: %.3f\n", rb);
        }
    }
    printf("ratio_vs_dense: %.3f%s\n", ratio, b->blas ? "" : " (our dense GEMM: no OpenBLAS)");
    return 0;
}

int cli_cmd_net_bench_conv(int argc, char **argv)
{
    struct conv_bench b = {0};
    int st = cli_front(argc, argv, "net bench", conv_usage, parse_conv_args, &b.a);
    if (st >= 0)
        return st;
    struct tv_error err = {0};
    if (nn_conv_shape_check(&b.a.s, &err)) {
        fprintf(stderr, "trevo net bench: %s\n", err.msg);
        return 2;
    }
    b.blas = !cli_blas_open(&err);
    if (!b.blas)
        printf("openblas: not found (%s); the dense side is our own GEMM\n", err.msg);
    int rc = run_conv_bench(&b, &err);
    conv_bench_free(&b);
    return rc ? cli_fail(&err) : 0;
}
