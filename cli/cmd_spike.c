/* cmd_spike.c -- `trevo net bench --cuba`: the CUBA network (Vogels & Abbott
 * 2005, as in Brian2's examples) on trevo's event-driven spiking engine
 * against Brian2 on the same network, initial state and time step.
 *
 * When Brian2 is importable, experiments/cuba_brian2.py builds the network,
 * runs it (timed by Brian2 itself), and writes its connectivity, initial
 * potentials and spike trains; this command imports that file, runs the same
 * network, and compares spike counts, spike trains and synaptic events per
 * second. Without Brian2 it draws a network of the same statistics itself and
 * only times it. */
#include "bench.h"
#include "cli.h"
#include "cuba_file.h"

#include <errno.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "spike.h"

struct cuba_args {
    double seconds;
    uint64_t seed;
    const char *target; /* Brian2's code generation target */
    const char *file;   /* an existing output of cuba_brian2.py, or NULL */
    int brian2;         /* 0: --no-brian2 */
};

static const char cuba_usage[] =
    "usage: trevo net bench --cuba [--seconds S] [--seed N] [--brian2-target T]\n"
    "                       [--brian2-file FILE | --no-brian2]\n\n"
    "Runs the CUBA network (4000 neurons, 3200 excitatory, 800 inhibitory, p 0.02,\n"
    "dt 0.1 ms) on trevo's event-driven engine, one core, double precision, and\n"
    "prints `spikes: N` and the synaptic events per second. When Brian2 is\n"
    "importable (python3-brian; TREVO_PYTHON names the interpreter), it first runs\n"
    "experiments/cuba_brian2.py (TREVO_CUBA_SCRIPT overrides the path) on the\n"
    "same network and prints `brian2_spikes: M`, how long both spike trains stay\n"
    "identical, and `ratio_vs_brian2: R`: trevo's synaptic events per CPU second\n"
    "over Brian2's (the CPU time of Brian2's simulation loop alone, measured inside\n"
    "the program cpp_standalone generates; with numpy or cython, net.run's CPU time\n"
    "with code generation); ratio_vs_brian2_wall is the same in wall time.\n"
    "  --seconds S        biological time simulated (default 1)\n"
    "  --seed N           the network's draw (default 1)\n"
    "  --brian2-target T  cpp_standalone (default), cython or numpy\n"
    "  --brian2-file F    read a file cuba_brian2.py wrote instead of running it\n"
    "  --no-brian2        no comparison\n";

/* ---- the network without Brian2 ----------------------------------------------- */

/* The same statistics, drawn from seed: v0 uniform in [reset, threshold). */
static int cuba_draw(struct cli_cuba *c, double seconds, uint64_t seed, struct tv_error *err)
{
    struct tv_rng rng;
    tv_rng_init(&rng, seed, 19, 4000);
    c->n = 4000;
    c->n_exc = 3200;
    c->dt = 1e-4;
    c->steps = (size_t)llround(seconds / c->dt);
    c->unit = (struct nn_spike_neuron){200, 50, 100, -50e-3, -60e-3, -49e-3, 0, 50};
    c->w_exc = 60 * 0.27 / 10 * 1e-3;
    c->w_inh = -20 * 4.5 / 10 * 1e-3;
    size_t cap = 400000;
    c->v0 = malloc(c->n * sizeof *c->v0);
    c->conns = malloc(cap * sizeof *c->conns);
    if (!c->v0 || !c->conns)
        return tv_error_set(err, TV_ENOMEM, "out of memory");
    for (size_t j = 0; j < c->n; j++)
        c->v0[j] = c->unit.reset + tv_rng_uniform(&rng) * (c->unit.threshold - c->unit.reset);
    for (size_t i = 0; i < c->n; i++)
        for (size_t j = 0; j < c->n; j++) {
            if (!tv_rng_chance(&rng, 0.02))
                continue;
            if (c->n_conns == cap) {
                struct nn_spike_conn *g = realloc(c->conns, 2 * cap * sizeof *g);
                if (!g)
                    return tv_error_set(err, TV_ENOMEM, "out of memory");
                c->conns = g;
                cap *= 2;
            }
            c->conns[c->n_conns++] = (struct nn_spike_conn){(uint32_t)i, (uint32_t)j,
                                                            i < c->n_exc ? c->w_exc : c->w_inh, 1};
        }
    return 0;
}

/* ---- Brian2 --------------------------------------------------------------------- */

/* The interpreter that imports brian2, or NULL. */
static const char *find_python(void)
{
    static const char *const tries[] = {"python3", "/usr/bin/python3"};
    const char *env = getenv("TREVO_PYTHON");
    char cmd[600];
    for (int k = env ? -1 : 0; k < 2; k++) {
        const char *py = k < 0 ? env : tries[k];
        snprintf(cmd, sizeof cmd, "'%s' -c 'import brian2' >/dev/null 2>&1", py);
        if (system(cmd) == 0)
            return py;
    }
    return NULL;
}

/* Runs cuba_brian2.py into path. 0, or a message in err. */
static int run_brian2(const char *py, const struct cuba_args *a, const char *path,
                      struct tv_error *err)
{
    const char *script = getenv("TREVO_CUBA_SCRIPT");
    if (!script)
        script = "experiments/cuba_brian2.py";
    if (access(script, R_OK))
        return tv_error_set(err, TV_EIO, "%s: %s (set TREVO_CUBA_SCRIPT)", script, strerror(errno));
    char cmd[2048];
    snprintf(cmd, sizeof cmd,
             "'%s' '%s' --out '%s' --seconds %.17g --seed %llu --target '%s' 2>&1 | "
             "grep -v -i warn >&2",
             py, script, path, a->seconds, (unsigned long long)a->seed, a->target);
    fflush(stdout);
    if (system(cmd) != 0 && access(path, R_OK))
        return tv_error_set(err, TV_EIO, "%s failed (command: %s)", script, cmd);
    return 0;
}

/* ---- the run ---------------------------------------------------------------------- */

struct cuba_run {
    struct nn_spike *net;
    const struct cli_cuba *c;
    uint64_t *spikes; /* [cap] step << 32 | neuron, as they come */
    size_t n_spikes, cap;
};

static void cuba_run_once(void *ctx)
{
    struct cuba_run *r = ctx;
    nn_spike_reset(r->net);
    nn_spike_set_state(r->net, r->c->v0, NULL, NULL);
    r->n_spikes = 0;
    for (size_t t = 0; t < r->c->steps; t++) {
        nn_spike_step(r->net, NULL);
        const uint32_t *f;
        size_t nf = nn_spike_fired(r->net, &f);
        for (size_t q = 0; q < nf && r->n_spikes < r->cap; q++)
            r->spikes[r->n_spikes++] = (uint64_t)t << 32 | f[q];
    }
}

/* Runs r at least 5 times and for about budget seconds: the medians of the
 * wall and CPU times of a run. */
static void time_runs(struct cuba_run *r, double budget, double *wall, double *cpu, int *runs)
{
    double w[101], c[101], start = cli_bench_now();
    int k = 0;
    while (k < 101 && (k < 5 || cli_bench_now() - start < budget)) {
        double w0 = cli_bench_now(), c0 = tv_cpu_now();
        cuba_run_once(r);
        c[k] = tv_cpu_now() - c0;
        w[k++] = cli_bench_now() - w0;
    }
    *wall = cli_bench_median(w, k);
    *cpu = cli_bench_median(c, k);
    *runs = k;
}

/* The first step whose spikes differ between a and b (sorted), or steps. */
static size_t first_difference(const uint64_t *a, size_t na, const uint64_t *b, size_t nb,
                               size_t steps)
{
    size_t k = 0;
    while (k < na && k < nb && a[k] == b[k])
        k++;
    if (k == na && k == nb)
        return steps;
    uint64_t x = k < na ? a[k] : UINT64_MAX, y = k < nb ? b[k] : UINT64_MAX;
    return (size_t)((x < y ? x : y) >> 32);
}

static int cuba_bench(const struct cli_cuba *c, int with_brian2, double budget,
                      struct tv_error *err)
{
    struct nn_spike_neuron *neurons = malloc(c->n * sizeof *neurons);
    size_t *fan = calloc(c->n, sizeof *fan);
    if (!neurons || !fan) {
        free(neurons);
        free(fan);
        return tv_error_set(err, TV_ENOMEM, "out of memory");
    }
    for (size_t j = 0; j < c->n; j++)
        neurons[j] = c->unit;
    for (size_t k = 0; k < c->n_conns; k++)
        fan[c->conns[k].from]++;
    struct nn_spike_desc d = {c->n, 0, neurons, c->n_conns, c->conns};
    struct cuba_run r = {NULL, c, NULL, 0, 0};
    int rc = nn_spike_new(&d, &r.net, err);
    r.cap = 64 * c->steps + 1024;
    r.spikes = rc ? NULL : malloc(r.cap * sizeof *r.spikes);
    if (!rc && !r.spikes)
        rc = tv_error_set(err, TV_ENOMEM, "out of memory");
    if (!rc) {
        double wall, cpu;
        int runs;
        time_runs(&r, budget, &wall, &cpu, &runs);
        uint64_t events = nn_spike_n_events(r.net), spikes = nn_spike_n_spikes(r.net);
        double eps = (double)events / cpu;
        printf("network: %zu neurons (%zu excitatory), %zu synapses, dt %g ms, %zu steps "
               "(%g s)\n",
               c->n, c->n_exc, c->n_conns, c->dt * 1e3, c->steps, (double)c->steps * c->dt);
        printf("spikes: %llu\n", (unsigned long long)spikes);
        printf("synaptic_events: %llu\n", (unsigned long long)events);
        printf("trevo_seconds: cpu %.6f, wall %.6f (medians of %d runs)\n", cpu, wall, runs);
        printf("trevo_events_per_second: %.4g (cpu time)\n", eps);
        if (with_brian2) {
            uint64_t b_events = 0;
            for (size_t k = 0; k < c->n_spikes; k++)
                b_events += fan[c->spikes[k] & 0xffffffffu];
            int by_cpu = isfinite(c->run_cpu) && c->run_cpu > 0;
            double b_eps = (double)b_events / (by_cpu ? c->run_cpu : c->run_seconds);
            qsort(r.spikes, r.n_spikes, sizeof *r.spikes, cli_cmp_u64);
            size_t same = first_difference(r.spikes, r.n_spikes, c->spikes, c->n_spikes, c->steps);
            printf("brian2_target: %s\n", c->target);
            printf("brian2_spikes: %zu\n", c->n_spikes);
            printf("spike_count_difference: %+.3f %%\n",
                   100.0 * ((double)spikes - (double)c->n_spikes) / (double)c->n_spikes);
            if (same == c->steps)
                printf("identical_spike_trains: the whole run (%g ms)\n",
                       (double)c->steps * c->dt * 1e3);
            else
                printf("identical_spike_trains: the first %g ms (first difference in step %zu)\n",
                       (double)same * c->dt * 1e3, same);
            printf("brian2_seconds: cpu %.6f, wall %.6f (its simulation loop)\n", c->run_cpu,
                   c->run_seconds);
            printf("brian2_events_per_second: %.4g (%s time)\n", b_eps, by_cpu ? "cpu" : "wall");
            printf("ratio_vs_brian2_wall: %.2f\n",
                   (double)events / wall / ((double)b_events / c->run_seconds));
            printf("ratio_vs_brian2: %.2f\n", by_cpu ? eps / b_eps : (double)events / wall / b_eps);
        }
    }
    nn_spike_free(r.net);
    free(r.spikes);
    free(neurons);
    free(fan);
    return rc;
}

static int parse_cuba_args(int argc, char **argv, void *args, struct tv_error *err)
{
    struct cuba_args *a = args;
    *a = (struct cuba_args){1.0, 1, "cpp_standalone", NULL, 1};
    for (int i = 1; i < argc; i++) {
        const char *o = argv[i];
        if (!strcmp(o, "--cuba"))
            continue;
        if (!strcmp(o, "--no-brian2")) {
            a->brian2 = 0;
            continue;
        }
        if (o[0] != '-')
            return cli_arg_error(o, err);
        if (strcmp(o, "--seconds") && strcmp(o, "--seed") && strcmp(o, "--brian2-target") &&
            strcmp(o, "--brian2-file"))
            return tv_error_set(err, TV_EINVAL, "unknown option '%s'", o);
        if (i + 1 >= argc)
            return tv_error_set(err, TV_EINVAL, "%s: expected a value", o);
        const char *v = argv[++i];
        if (!strcmp(o, "--seconds")) {
            if (cli_parse_real(o, v, 0, 1, 1000, &a->seconds, err))
                return err->code;
        } else if (!strcmp(o, "--seed")) {
            if (cli_parse_u64(o, v, UINT64_MAX, &a->seed, err))
                return err->code;
        } else if (!strcmp(o, "--brian2-target")) {
            if (strcmp(v, "cpp_standalone") && strcmp(v, "cython") && strcmp(v, "numpy"))
                return tv_error_set(err, TV_EINVAL,
                                    "--brian2-target: expected cpp_standalone, cython or numpy, "
                                    "got '%s'",
                                    v);
            a->target = v;
        } else {
            a->file = v;
        }
    }
    return 0;
}

int cli_cmd_net_bench_cuba(int argc, char **argv)
{
    struct cuba_args a;
    int st = cli_front(argc, argv, "net bench --cuba", cuba_usage, parse_cuba_args, &a);
    if (st >= 0)
        return st;
    struct tv_error err = {0};
    struct cli_cuba c = {0};
    char tmp[] = "/tmp/trevo-cuba-XXXXXX";
    const char *path = a.file;
    int rc = 0, made = 0;
    if (!path && a.brian2) {
        const char *py = find_python();
        if (!py) {
            printf("brian2: not installed (Debian: python3-brian); the comparison is skipped\n");
        } else {
            int fd = mkstemp(tmp);
            if (fd < 0) {
                rc = tv_error_set(&err, TV_EIO, "%s: %s", tmp, strerror(errno));
            } else {
                close(fd);
                made = 1;
                printf("brian2: running %s --target %s (%s)\n", "experiments/cuba_brian2.py",
                       a.target, py);
                rc = run_brian2(py, &a, tmp, &err);
                path = tmp;
            }
        }
    }
    if (!a.brian2)
        printf("brian2: not asked (--no-brian2); the comparison is skipped\n");
    if (!rc)
        rc = path ? cli_cuba_read(path, &c, &err) : cuba_draw(&c, a.seconds, a.seed, &err);
    if (!rc)
        rc = cuba_bench(&c, path != NULL, 2.0, &err);
    if (made)
        unlink(tmp);
    cli_cuba_free(&c);
    return rc ? cli_fail(&err) : 0;
}

/* ---- trevo net bench --spike-layers: frustum tiles against layer by layer --- */

static const char layers_usage[] =
    "usage: trevo net bench --spike-layers L,N,FANOUT [--delay D] [--window W]\n"
    "                       [--tile T] [--steps S] [--seed N]\n"
    "A layered spiking network (nn.h, \"layered spiking networks\": L layers of N\n"
    "cuba neurons, each reaching FANOUT neighbours of the next layer with delay D)\n"
    "run S steps layer by layer and in frustum tiles (T neurons of every layer for\n"
    "W <= D steps at a time); checks that both give the same spikes and potentials\n"
    "and prints their times, the speed-up and a model of the bytes moved.\n"
    "Defaults: D 8, W = D, T so that a column's state fills half the L2 cache,\n"
    "S 400 (a multiple of W).\n";

struct layers_args {
    struct nn_spike_layers_spec sp;
    size_t window, tile, steps;
};

static int parse_layers_args(int argc, char **argv, void *args, struct tv_error *err)
{
    struct layers_args *a = args;
    a->sp = (struct nn_spike_layers_spec){
        .delay = 8, .weight = 0.4, .tau_m = 10, .tau_syn = 5, .threshold = 1, .refractory = 2};
    a->sp.seed = 1;
    a->window = 0;
    a->tile = 0;
    a->steps = 400;
    int have = 0;
    for (int i = 1; i < argc; i++) {
        const char *o = argv[i];
        if (o[0] != '-')
            return cli_arg_error(o, err);
        if (i + 1 >= argc)
            return tv_error_set(err, TV_EINVAL, "%s: expected a value", o);
        const char *v = argv[++i];
        size_t x[3];
        if (!strcmp(o, "--spike-layers")) {
            if (cli_parse_size_list(o, "L,N,FANOUT", v, 3, 1, (size_t)1 << 31, x, err))
                return err->code;
            a->sp.n_layers = x[0];
            a->sp.width = x[1];
            a->sp.fanout = x[2];
            have = 1;
        } else if (!strcmp(o, "--delay") || !strcmp(o, "--window") || !strcmp(o, "--tile") ||
                   !strcmp(o, "--steps") || !strcmp(o, "--seed")) {
            if (cli_parse_size(o, v, 1, (size_t)1 << 31, x, err))
                return err->code;
            if (!strcmp(o, "--delay"))
                a->sp.delay = (uint32_t)(x[0] > NN_SPIKE_MAX_DELAY ? 0 : x[0]);
            else if (!strcmp(o, "--window"))
                a->window = x[0];
            else if (!strcmp(o, "--tile"))
                a->tile = x[0];
            else if (!strcmp(o, "--steps"))
                a->steps = x[0];
            else
                a->sp.seed = x[0];
        } else {
            return tv_error_set(err, TV_EINVAL, "unknown option '%s'", o);
        }
    }
    if (!have)
        return tv_error_set(err, TV_EINVAL, "--spike-layers L,N,FANOUT is required");
    if (!a->window)
        a->window = a->sp.delay;
    if (!a->tile) { /* a column's state (24 bytes a neuron) in half the L2 */
        long l2 = sysconf(_SC_LEVEL2_CACHE_SIZE);
        size_t half = (l2 > 0 ? (size_t)l2 : 1u << 20) / 2;
        a->tile = half / (24 * a->sp.n_layers);
        a->tile = a->tile < 64 ? 64 : a->tile / 64 * 64;
    }
    return 0;
}

/* Runs s for `steps` in the given schedule from its reset: the median CPU
 * time of `reps` runs (CPU time, not wall: the machine is shared, and a
 * stall on memory is CPU time too). */
static int time_layers(struct nn_spike_layers *s, size_t steps, size_t window, size_t tile,
                       int reps, double *wall, struct tv_error *err)
{
    double w[9];
    for (int r = 0; r < reps; r++) {
        nn_spike_layers_reset(s);
        double t0 = tv_cpu_now();
        int rc = nn_spike_layers_run(s, steps, window, tile, err);
        if (rc)
            return rc;
        w[r] = tv_cpu_now() - t0;
    }
    *wall = cli_bench_median(w, reps);
    return 0;
}

int cli_cmd_net_bench_layers(int argc, char **argv)
{
    struct layers_args a;
    int st = cli_front(argc, argv, "net bench --spike-layers", layers_usage, parse_layers_args, &a);
    if (st >= 0)
        return st;
    struct tv_error err = {0};
    struct nn_spike_layers *s = NULL;
    int rc = nn_spike_layers_new(&a.sp, &s, &err);
    size_t n = a.sp.n_layers * a.sp.width;
    double w_layer = 0, w_frustum = 0;
    const int reps = 3;
    if (!rc)
        rc = time_layers(s, a.steps, 1, 0, reps, &w_layer, &err);
    uint64_t spikes = s ? nn_spike_layers_spikes(s) : 0, hash = s ? nn_spike_layers_hash(s) : 0;
    double *v = rc ? NULL : malloc(n * sizeof *v);
    if (!rc && !v)
        rc = tv_error_set(&err, TV_ENOMEM, "out of memory");
    if (!rc) {
        memcpy(v, nn_spike_layers_v(s), n * sizeof *v);
        rc = time_layers(s, a.steps, a.window, a.tile, reps, &w_frustum, &err);
    }
    if (!rc) {
        int same = nn_spike_layers_spikes(s) == spikes && nn_spike_layers_hash(s) == hash &&
                   !memcmp(v, nn_spike_layers_v(s), n * sizeof *v);
        size_t state = nn_spike_layers_state_bytes(s);
        /* the model: layer by layer reads and writes the whole state every
         * step; frustum tiles once a window (a column fits in the cache);
         * both read the weights of every spike */
        double weights = (double)spikes * (double)a.sp.fanout * 4;
        double m_layer = 2.0 * (double)state * (double)a.steps + weights;
        double m_frustum = 2.0 * (double)state * (double)a.steps / (double)a.window + weights;
        long l2 = sysconf(_SC_LEVEL2_CACHE_SIZE);
        printf("network: %zu layers x %zu neurons, fan-out %zu, delay %u; %zu steps\n",
               a.sp.n_layers, a.sp.width, a.sp.fanout, a.sp.delay, a.steps);
        printf("state: %.1f MiB (v, I, count); L2 %.1f MiB; column tile %zu neurons x %zu "
               "layers = %.0f KiB, window %zu steps\n",
               (double)state / 1048576.0, l2 > 0 ? (double)l2 / 1048576.0 : 0.0, a.tile,
               a.sp.n_layers, (double)(a.tile * a.sp.n_layers * 24) / 1024.0, a.window);
        printf("spikes: %llu (%.4f per neuron-step)\n", (unsigned long long)spikes,
               (double)spikes / ((double)n * (double)a.steps));
        printf("identical: %s\n", same ? "yes" : "NO");
        printf("layer_by_layer_cpu_s: %.4f\nfrustum_cpu_s: %.4f\nspeedup: %.2f\n", w_layer,
               w_frustum, w_layer / w_frustum);
        printf("model_bytes_layer_by_layer: %.0f\nmodel_bytes_frustum: %.0f\n"
               "model_traffic_saved: %.1f%%\n",
               m_layer, m_frustum, 100.0 * (1 - m_frustum / m_layer));
        if (!same)
            rc = tv_error_set(&err, TV_ESTATE, "frustum tiles and layer by layer differ");
    }
    free(v);
    nn_spike_layers_free(s);
    return rc ? cli_fail(&err) : 0;
}
