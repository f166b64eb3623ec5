/* bench_int8.c -- the int8 engine (nn/deploy/quant.h) against the float engine on
 * the cases of `trevo net bench`: the 4096 x 4096 layer at 1 % (batch 1 and
 * 64) and the NEAT-style graph of 10 k neurons and 200 k connections; and the
 * bytes per connection of the int8 plan and of an exported C file's data.
 * One process, one thread; the two engines alternate in rounds of about
 * 2 ms of this thread's CPU time (not wall time: the machine is shared) and
 * the ratio is the median over rounds of float time / int8 time. Prints a markdown section
 * (tests/bench/run.sh puts it into BENCHMARKS.md). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "bench_time.h"
#include "nn.h"
#include "quant.h"

struct run {
    struct nn_state *s;
    const float *in;
    float *out;
};

static void step(void *ctx)
{
    struct run *r = ctx;
    nn_step(r->s, r->in, r->out);
}

static void die(const struct tv_error *err)
{
    fprintf(stderr, "bench_int8: %s\n", err->msg);
    exit(1);
}

/* The README's Fashion-MNIST CNN, as committed (run from the repository's
 * top: make bench does). */
#define CNN_NET "experiments/results/fashion-cnn.net"

static void load_cnn(struct genome *g, struct tv_error *err)
{
    FILE *f = fopen(CNN_NET, "rb");
    struct tv_buf b = {0};
    char chunk[65536];
    size_t n;
    while (f && (n = fread(chunk, 1, sizeof chunk, f)) > 0)
        if (tv_buf_append(&b, chunk, n))
            break;
    if (!f || ferror(f)) {
        fprintf(stderr, "bench_int8: cannot read %s\n", CNN_NET);
        exit(1);
    }
    fclose(f);
    if (genome_decode(g, b.data, b.len, NULL, err))
        die(err);
    tv_buf_free(&b);
}

/* The 4096^2 layer at 1 % of `trevo net bench --layer 4096 --density 0.01`
 * (layer 1), the graph of `--graph 10000,200000` (0), or the CNN (2). */
static void build(struct genome *g, int layer, struct tv_error *err)
{
    struct tv_rng rng;
    tv_rng_init(&rng, 1, 0, 0);
    int rc;
    if (layer == 2) {
        load_cnn(g, err);
        return;
    }
    if (layer) {
        uint32_t sizes[2] = {4096, 4096};
        struct genome_layered_spec spec = {sizes,
                                           2,
                                           0.01,
                                           0.0,
                                           0.0,
                                           GENOME_ACT_RELU,
                                           GENOME_ACT_IDENTITY,
                                           1.0 / sqrt(0.01 * 4096)};
        rc = genome_build_layered(g, &spec, &rng, err);
    } else {
        struct genome_graph_spec spec = {
            10000,          101, 101, 200000, 32, 0.1, 1.0 / sqrt(20.0 + 1.0), GENOME_ACT_RELU,
            GENOME_ACT_TANH};
        rc = genome_build_graph(g, &spec, &rng, err);
    }
    if (rc)
        die(err);
}

/* Bytes of the data an exported C file holds (nn_qnet_export_c's arrays). */
static size_t export_bytes(const struct nn_qnet *q)
{
    size_t n = q->n, ib = 2 * (n + 1) <= 65536 ? 2 : 4;
    size_t b = (n + 1) * 4 + q->n_edges * (ib + 1) + n * (4 + 4 + 1 + 1 + 2) + q->n_tables * 256 +
               q->n_out * 4;
    if (q->n_recurrent)
        b += (q->n_layers + 1) * 4 + q->n_layers;
    return b + 2 * (n + 1); /* the values, this step and the last (RAM) */
}

struct pair {
    double int8_ms, float_ms, ratio;
};

/* CPU seconds of this thread: on a shared machine, time the process was
 * not running is not counted (cache sharing with other jobs still is). */
static double cpu_now(void)
{
    return bench_seconds(CLOCK_THREAD_CPUTIME_ID);
}

static double cpu_runs(struct run *r, int k)
{
    step(r); /* the other side may have flushed the caches */
    double t0 = cpu_now();
    for (int i = 0; i < k; i++)
        step(r);
    return (cpu_now() - t0) / k;
}

#define ROUNDS 201

/* Alternating rounds of about 2 ms CPU each side, ROUNDS of them (or 3 s
 * CPU): medians per step and the median over rounds of float / int8. */
static struct pair time_rounds(struct run *q, struct run *f)
{
    static double tq[ROUNDS], tf[ROUNDS], ratio[ROUNDS];
    double one_q = cpu_runs(q, 3), one_f = cpu_runs(f, 3);
    int kq = (int)fmax(1.0, 2e-3 / fmax(one_q, 1e-9)),
        kf = (int)fmax(1.0, 2e-3 / fmax(one_f, 1e-9));
    double start = cpu_now();
    int n = 0;
    while (n < ROUNDS && (n < 9 || cpu_now() - start < 3.0)) {
        tq[n] = cpu_runs(q, kq);
        tf[n] = cpu_runs(f, kf);
        ratio[n] = tf[n] / tq[n];
        n++;
    }
    double r = median(ratio, n);
    return (struct pair){median(tq, n) * 1e3, median(tf, n) * 1e3, r};
}

static struct pair time_pair(const struct nn_plan *fp, const struct nn_plan *qp, size_t batch,
                             int target)
{
    struct tv_error err = {0};
    struct tv_rng rng;
    tv_rng_init(&rng, 2, 0, 0);
    size_t n_in = nn_plan_n_inputs(fp), n_out = nn_plan_n_outputs(fp);
    float *in = malloc(batch * n_in * sizeof *in), *o1 = malloc(batch * n_out * sizeof *o1);
    float *o2 = malloc(batch * n_out * sizeof *o2);
    if (!in || !o1 || !o2)
        exit(1);
    for (size_t i = 0; i < batch * n_in; i++)
        in[i] = (float)(2.0 * tv_rng_uniform(&rng) - 1.0);
    struct run rf = {NULL, in, o1}, rq = {NULL, in, o2};
    if (nn_state_new(fp, batch, &rf.s, &err) || nn_state_new(qp, batch, &rq.s, &err) ||
        (target >= 0 && nn_state_set_target(rq.s, target, &err)))
        die(&err);
    struct pair pr = time_rounds(&rq, &rf);
    nn_state_free(rf.s);
    nn_state_free(rq.s);
    free(in);
    free(o1);
    free(o2);
    return pr;
}

static const char *mark(int met)
{
    return met ? "yes" : "**no**";
}

/* A case's genome, its float plan, and its int8 network and plan
 * (calibrated on 64 random input rows in [-1, 1], min-max). */
struct case_plans {
    struct genome g;
    struct nn_qnet *q;
    struct nn_plan *fp, *qp;
};

static void case_open(struct case_plans *k, int layer)
{
    struct tv_error err = {0};
    genome_init(&k->g);
    build(&k->g, layer, &err);
    struct nn_calib *c;
    if (nn_calib_new(&k->g, NULL, &c, &err))
        die(&err);
    size_t n_in = nn_plan_n_inputs(nn_calib_plan(c)), rows = 64;
    float *cal = malloc(rows * n_in * sizeof *cal);
    struct tv_rng rng;
    tv_rng_init(&rng, 3, 0, 0);
    for (size_t i = 0; cal && i < rows * n_in; i++)
        cal[i] = (float)(2.0 * tv_rng_uniform(&rng) - 1.0);
    if (!cal || nn_calib_run(c, cal, rows, 0, &err) || nn_quantize(c, &k->q, &err) ||
        nn_plan_compile(&k->g, NULL, &k->fp, &err) || nn_qplan_compile(k->q, &k->qp, &err))
        die(&err);
    free(cal);
    nn_calib_free(c);
}

static void case_close(struct case_plans *k)
{
    nn_plan_free(k->fp);
    nn_plan_free(k->qp);
    nn_qnet_free(k->q);
    genome_release(&k->g);
}

static void bench_case(const char *name, int layer, const size_t *batches, const double *targets,
                       size_t n_batches)
{
    struct case_plans k;
    case_open(&k, layer);
    struct nn_qnet *q = k.q;
    struct nn_plan *fp = k.fp, *qp = k.qp;
    size_t conns = nn_plan_n_conns(qp);
    for (size_t i = 0; i < n_batches; i++) {
        struct pair p = time_pair(fp, qp, batches[i], -1);
        printf("| %s, batch %zu | %.4f ms | %.4f ms | %.2f x | >= %g x | %s |\n", name, batches[i],
               p.int8_ms, p.float_ms, p.ratio, targets[i], mark(p.ratio >= targets[i]));
        if (nn_int8_uses_vnni(NN_TARGET_AVX512F)) {
            struct pair d = time_pair(fp, qp, batches[i], NN_TARGET_DEFAULT);
            printf(
                "| %s, batch %zu, portable int8 path (no AVX-512) | %.4f ms | %.4f ms | %.2f x | "
                "| |\n",
                name, batches[i], d.int8_ms, d.float_ms, d.ratio);
        }
    }
    if (layer == 2) { /* pixels and coefficients: bytes per connection say little */
        case_close(&k);
        return;
    }
    printf("| %s: bytes per connection | int8 plan %.2f (%d-bit offsets in windows of 256; "
           "float plan %.2f) | export data %.2f | | <= 3.5 (int8 plan) | %s |\n",
           name, (double)nn_plan_bytes(qp) / (double)conns, nn_plan_index_bits(qp),
           (double)nn_plan_bytes(fp) / (double)nn_plan_n_conns(fp),
           (double)export_bytes(q) / (double)conns,
           mark((double)nn_plan_bytes(qp) / (double)conns <= 3.5));
    case_close(&k);
}

/* `bench_int8 one layer|graph|cnn BATCH int8|float SECONDS`: one side of
 * one case stepped alone for SECONDS of CPU time (for perf and A/B of a
 * change); prints ms per step. */
static int one_side(char **argv)
{
    int layer = strcmp(argv[2], "layer") == 0 ? 1 : strcmp(argv[2], "cnn") == 0 ? 2 : 0;
    int q8 = strcmp(argv[4], "int8") == 0;
    size_t batch = (size_t)atoi(argv[3]);
    double secs = atof(argv[5]);
    if ((!layer && strcmp(argv[2], "graph")) || (!q8 && strcmp(argv[4], "float")) || batch < 1 ||
        !(secs > 0)) {
        fprintf(stderr, "usage: bench_int8 one layer|graph|cnn BATCH int8|float SECONDS\n");
        return 2;
    }
    struct case_plans k;
    case_open(&k, layer);
    struct tv_error err = {0};
    struct tv_rng rng;
    tv_rng_init(&rng, 2, 0, 0); /* time_pair's inputs */
    size_t n_in = nn_plan_n_inputs(k.fp), n_out = nn_plan_n_outputs(k.fp);
    float *in = malloc(batch * n_in * sizeof *in), *out = malloc(batch * n_out * sizeof *out);
    if (!in || !out)
        exit(1);
    for (size_t i = 0; i < batch * n_in; i++)
        in[i] = (float)(2.0 * tv_rng_uniform(&rng) - 1.0);
    struct run r = {NULL, in, out};
    if (nn_state_new(q8 ? k.qp : k.fp, batch, &r.s, &err))
        die(&err);
    double t0 = cpu_now();
    long n = 0;
    for (; cpu_now() - t0 < secs; n += 20)
        for (int i = 0; i < 20; i++)
            step(&r);
    printf("%s %s batch %zu: %.4f ms a step (%ld steps)\n", argv[2], argv[4], batch,
           (cpu_now() - t0) / (double)n * 1e3, n);
    nn_state_free(r.s);
    free(in);
    free(out);
    case_close(&k);
    return 0;
}

int main(int argc, char **argv)
{
    if (argc == 6 && strcmp(argv[1], "one") == 0)
        return one_side(argv);
    printf("### int8 engine vs float engine: single core\n\n"
           "`build/bench/bench_int8` (made and run by `make bench`): each case is quantized "
           "(calibrated on 64 random input rows in [-1, 1], min-max) and both engines step the "
           "same random inputs in alternating rounds of about 2 ms of the thread's CPU time "
           "(CLOCK_THREAD_CPUTIME_ID; up to 3 s a case); times are medians per step, the ratio "
           "the median over rounds of float / int8. The cases are those of "
           "`trevo net bench --layer 4096 --density 0.01` and `--graph 10000,200000` (seed 1), "
           "and the README's Fashion-MNIST CNN (" CNN_NET ": 32 then 64 sparse 3x3 channels, "
           "a head of 128), its int8 channels against the float engine's conv layers. "
           "The int8 state runs its CPU's best path (AVX-512 window lookups at batch 1, VNNI "
           "for batches, when present); the portable rows force the plain path.");
    double load[3];
    bench_loadavg(load);
    printf(" Load average when measured: %.2f, %.2f, %.2f (1, 5, 15 minutes).\n\n", load[0],
           load[1], load[2]);
    printf("| case | int8 | float | float / int8 | target | met |\n|---|---|---|---|---|---|\n");
    static const size_t b2[] = {1, 64};
    static const double t2[] = {1.5, 3.0};
    bench_case("4096², density 1 %", 1, b2, t2, 2);
    bench_case("graph 10 k neurons, 200 k connections", 0, b2, t2, 2);
    static const size_t b1[] = {1};
    static const double t1[] = {1.5};
    bench_case("Fashion-MNIST CNN (" CNN_NET ")", 2, b1, t1, 1);
    return 0;
}
