/* test_spike.c -- spiking networks of cuba neurons: the event-driven engine
 * against the reference on random networks (local, skip, recurrent and
 * delayed connections, with inputs), the exact update against the closed
 * form, refractory periods and delays to the step, the plan of a cuba genome
 * through nn_step, the cuba model in both genome formats, and every failure
 * path (code and message). */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "genome.h"
#include "spike.h"
#include "testutil.h"

/* genome_read_text of text (named `name`) into g: refused with TV_EINVAL,
 * the message holding want. */
static void read_refused(struct genome *g, const char *text, const char *name, const char *want)
{
    struct tv_error err = {0};
    assert_error(genome_read_text(g, text, strlen(text), name, NULL, &err), &err, TV_EINVAL, want);
}

/* ---- helpers -------------------------------------------------------------- */

/* A neuron with tau_m, tau_exc, tau_inh, threshold 1, reset 0, rest 0, no
 * bias, refractory ref. */
static struct nn_spike_neuron unit(double tau_m, double tau_exc, double tau_inh, uint32_t ref)
{
    return (struct nn_spike_neuron){tau_m, tau_exc, tau_inh, 1.0, 0.0, 0.0, 0.0, ref};
}

/* Turns every non-input of a random NEAT-style graph into a cuba neuron with
 * random parameters (equal time constants now and then, for the limit). */
static void random_cuba_genome(struct genome *g, struct tv_rng *rng)
{
    struct tv_error err = {0};
    struct genome_graph_spec sp = tu_random_graph_spec(rng, 4, 3, 60, 6, 0.5);
    sp.weight_sd = 1.0;
    sp.hidden_act = GENOME_ACT_IDENTITY;
    sp.out_act = GENOME_ACT_IDENTITY;
    assert_ok(genome_build_graph(g, &sp, rng, &err), &err);
    for (size_t i = 0; i < g->n_neurons; i++) {
        struct genome_neuron *u = &g->neurons[i];
        if (u->kind == GENOME_INPUT)
            continue;
        genome_neuron_set_model(u, GENOME_MODEL_CUBA);
        u->param[GENOME_CUBA_TAU_M] = 2.0f + (float)tv_rng_below(rng, 20);
        u->param[GENOME_CUBA_TAU_EXC] = tv_rng_chance(rng, 0.2)
                                            ? u->param[GENOME_CUBA_TAU_M]
                                            : 1.0f + (float)tv_rng_below(rng, 10);
        u->param[GENOME_CUBA_TAU_INH] = 1.0f + (float)tv_rng_below(rng, 15);
        u->param[GENOME_CUBA_THRESHOLD] = 0.2f + (float)tv_rng_uniform(rng);
        u->param[GENOME_CUBA_RESET] = -0.5f * (float)tv_rng_uniform(rng);
        u->param[GENOME_CUBA_REFRACTORY] = (float)tv_rng_below(rng, 4);
        u->bias = 0.3f * (float)tv_rng_normal(rng);
    }
    assert_ok(genome_validate(g, NULL, &err), &err);
}

/* Gives connections of g that may have one (from a non-input into a cuba
 * neuron) a random delay of 1..max steps, as genes. Returns how many are not 1. */
static size_t random_delays(struct genome *g, struct tv_rng *rng, uint32_t max)
{
    struct tv_error err = {0};
    size_t n = 0;
    for (size_t k = 0; k < g->n_conns; k++) {
        const struct genome_neuron *f = &g->neurons[genome_find_neuron(g, g->conns[k].from)];
        if (f->kind == GENOME_INPUT)
            continue;
        uint32_t delay = 1 + tv_rng_below(rng, max);
        assert_ok(genome_set_delay(g, k, delay, &err), &err);
        n += delay > 1;
    }
    assert_ok(genome_validate(g, NULL, &err), &err);
    return n;
}

/* Runs the engine and the reference of d side by side for `steps` steps of
 * random inputs: the spikes of every step and every potential are the same
 * bits. Returns the spikes counted. */
static uint64_t compare_engine_reference(const struct nn_spike_desc *d, struct tv_rng *rng,
                                         size_t steps)
{
    struct tv_error err = {0};
    struct nn_spike *fast = NULL, *ref = NULL;
    assert_ok(nn_spike_new(d, &fast, &err), &err);
    assert_ok(nn_spike_new_reference(d, &ref, &err), &err);
    /* every target this CPU runs, in turn */
    static int target;
    target = (target + 1) % NN_TARGET_COUNT;
    while (nn_spike_set_target(fast, target, &err))
        target = (target + 1) % NN_TARGET_COUNT;
    float in[8] = {0};
    for (size_t t = 0; t < steps; t++) {
        for (size_t k = 0; k < d->n_in; k++)
            in[k] = (float)tv_rng_uniform(rng) * 2.0f;
        nn_spike_step(fast, in);
        nn_spike_step(ref, in);
        const uint32_t *a, *b;
        size_t na = nn_spike_fired(fast, &a), nb = nn_spike_fired(ref, &b);
        assert_int_equal(na, nb);
        assert_memory_equal(a, b, na * sizeof *a);
        assert_memory_equal(nn_spike_v(fast), nn_spike_v(ref), d->n * sizeof(double));
    }
    assert_int_equal(nn_spike_n_spikes(fast), nn_spike_n_spikes(ref));
    assert_int_equal(nn_spike_n_events(fast), nn_spike_n_events(ref));
    assert_int_equal(nn_spike_steps(fast), steps);
    uint64_t spikes = nn_spike_n_spikes(fast);
    nn_spike_free(fast);
    nn_spike_free(ref);
    return spikes;
}

/* ---- engine against reference -------------------------------------------- */

static void test_nn_spike_step_matches_reference_on_random_networks(void **state)
{
    (void)state;
    struct tv_rng rng = tu_rng(1901, 0, 0);
    struct genome g;
    genome_init(&g);
    uint64_t spikes = 0;
    size_t delayed = 0;
    for (int net = 0; net < 300; net++) {
        random_cuba_genome(&g, &rng);
        struct tv_error err = {0};
        struct nn_spike_desc d;
        /* half the networks get delays of 1..8 steps, as genes */
        size_t genes = net % 2 ? random_delays(&g, &rng, 8) : 0, n_delayed = 0;
        assert_ok(nn_spike_desc_from_genome(&g, &d, NULL, &err), &err);
        for (size_t k = 0; k < d.n_conns; k++)
            n_delayed += d.conns[k].delay > 1;
        assert_int_equal(n_delayed, genes); /* the description reads the genes */
        delayed += genes;
        spikes += compare_engine_reference(&d, &rng, 150);
        nn_spike_desc_free(&d);
    }
    genome_release(&g);
    /* the networks did spike, and delays were exercised */
    assert_true(spikes > 10000);
    assert_true(delayed > 1000);
}

/* Networks without inputs whose neurons share their parameters take the
 * engine's uniform path (constants in registers): the same bits again, with
 * a neuron count that is no multiple of the vector width. */
static void test_nn_spike_step_uniform_networks_match_reference(void **state)
{
    (void)state;
    struct tv_rng rng = tu_rng(1902, 0, 0);
    uint64_t spikes = 0;
    for (int net = 0; net < 40; net++) {
        size_t n = 5 + tv_rng_below(&rng, 300);
        struct nn_spike_neuron *nr = malloc(n * sizeof *nr);
        struct nn_spike_conn *cs = malloc(n * 20 * sizeof *cs);
        assert_non_null(nr);
        assert_non_null(cs);
        struct nn_spike_neuron u = {20, 5, 10, -50, -60, -49, 0, 1 + tv_rng_below(&rng, 30)};
        for (size_t j = 0; j < n; j++)
            nr[j] = u;
        size_t m = 0;
        for (uint32_t i = 0; i < n; i++)
            for (int k = 0; k < 10; k++) {
                double w = tv_rng_chance(&rng, 0.8) ? 1.5 : -8.0;
                uint32_t delay = net % 2 ? 1 + tv_rng_below(&rng, 5) : 1;
                cs[m++] = (struct nn_spike_conn){i, tv_rng_below(&rng, (uint32_t)n), w, delay};
            }
        struct nn_spike_desc d = {n, 0, nr, m, cs};
        spikes += compare_engine_reference(&d, &rng, 300);
        TV_FREE_ALL(nr, cs);
    }
    assert_true(spikes > 1000);
}

/* ---- the model ------------------------------------------------------------ */

/* One neuron driven by an input current x (held over each step) and by a
 * spike of weight w at step 0 (arriving through a driver neuron): v follows
 * the closed-form solution of the linear equations to rounding, not a
 * forward-Euler approximation of it. */
static void test_nn_spike_step_follows_exact_solution(void **state)
{
    (void)state;
    struct tv_error err = {0};
    const double tau_m = 10, tau_e = 4, x = 0.5, w = 0.8;
    struct nn_spike_neuron nr[3] = {{0}, unit(1, 1, 1, 1000), unit(tau_m, tau_e, 7, 0)};
    nr[1].bias = 5;        /* the driver spikes in step 0 */
    nr[2].threshold = 100; /* the target never spikes */
    struct nn_spike_conn cs[2] = {{0, 2, 1.0, 1}, {1, 2, w, 1}};
    struct nn_spike_desc d = {3, 1, nr, 2, cs};
    struct nn_spike *s = NULL;
    assert_ok(nn_spike_new(&d, &s, &err), &err);
    float in = (float)x;
    nn_spike_step(s, &in); /* step 0: v moves by x only, the driver spikes */
    const uint32_t *f;
    assert_int_equal(nn_spike_fired(s, &f), 1);
    assert_int_equal(f[0], 1);
    double v0 = x * (1 - exp(-1 / tau_m));
    assert_true(fabs(nn_spike_v(s)[2] - v0) < 1e-12);
    for (int k = 1; k <= 30; k++) {
        nn_spike_step(s, &in);
        /* after step 0: v(t) = x + (v0 - x) e^(-t/tau_m) + w tau_e/(tau_e - tau_m)
         * (e^(-t/tau_e) - e^(-t/tau_m)), t = k steps */
        double t = k;
        double want = x + (v0 - x) * exp(-t / tau_m) +
                      w * tau_e / (tau_e - tau_m) * (exp(-t / tau_e) - exp(-t / tau_m));
        assert_true(fabs(nn_spike_v(s)[2] - want) < 1e-12);
    }
    nn_spike_free(s);
}

/* With refractory R, a neuron driven far above threshold spikes every R
 * steps (every step for R = 0 or 1), and v stays at reset in between. */
static void test_nn_spike_step_refractory_period(void **state)
{
    (void)state;
    struct tv_error err = {0};
    for (uint32_t R = 0; R <= 5; R++) {
        struct nn_spike_neuron nr[1] = {unit(2, 2, 2, R)};
        nr[0].bias = 1000;
        nr[0].reset = -3;
        struct nn_spike_desc d = {1, 0, nr, 0, NULL};
        struct nn_spike *s = NULL;
        assert_ok(nn_spike_new(&d, &s, &err), &err);
        uint32_t period = R > 1 ? R : 1;
        for (uint32_t t = 0; t < 40; t++) {
            nn_spike_step(s, NULL);
            const uint32_t *f;
            assert_int_equal(nn_spike_fired(s, &f), t % period == 0);
            if (t % period)
                assert_true(nn_spike_v(s)[0] == -3);
        }
        nn_spike_free(s);
    }
}

/* A spike over a connection of delay D first moves its target in step
 * t + D: a huge weight makes the target spike in exactly that step. */
static void test_nn_spike_step_delay_to_the_step(void **state)
{
    (void)state;
    struct tv_error err = {0};
    for (uint32_t D = 1; D <= 6; D++) {
        struct nn_spike_neuron nr[2] = {unit(2, 2, 2, 1000), unit(2, 2, 2, 1000)};
        nr[0].bias = 1000; /* spikes at step 0, then refractory */
        struct nn_spike_conn cs[1] = {{0, 1, 1e6, D}};
        struct nn_spike_desc d = {2, 0, nr, 1, cs};
        struct nn_spike *s = NULL, *r = NULL;
        assert_ok(nn_spike_new(&d, &s, &err), &err);
        assert_ok(nn_spike_new_reference(&d, &r, &err), &err);
        for (uint32_t t = 0; t < 10; t++) {
            nn_spike_step(s, NULL);
            nn_spike_step(r, NULL);
            const uint32_t *f;
            size_t nf = nn_spike_fired(s, &f);
            size_t want = (t == 0) + (t == D);
            assert_int_equal(nf, want);
            if (t == D)
                assert_int_equal(f[nf - 1], 1);
            assert_int_equal(nn_spike_fired(r, &f), want);
        }
        assert_int_equal(nn_spike_n_events(s), 1);
        nn_spike_reset(s);
        assert_int_equal(nn_spike_n_events(s), 0);
        assert_int_equal(nn_spike_steps(s), 0);
        nn_spike_free(s);
        nn_spike_free(r);
    }
}

/* nn_spike_set_state: the state set is the one that evolves. */
static void test_nn_spike_set_state_sets_v_and_currents(void **state)
{
    (void)state;
    struct tv_error err = {0};
    struct nn_spike_neuron nr[2] = {unit(5, 3, 6, 0), unit(5, 3, 6, 0)};
    struct nn_spike_desc d = {2, 0, nr, 0, NULL};
    struct nn_spike *s = NULL;
    assert_ok(nn_spike_new(&d, &s, &err), &err);
    double v[2] = {0.5, 2.0}, ie[2] = {0.25, 0}, ii[2] = {0, -0.5};
    nn_spike_set_state(s, v, ie, ii);
    nn_spike_step(s, NULL);
    const uint32_t *f;
    assert_int_equal(nn_spike_fired(s, &f), 1); /* v = 2 decays, stays above 1 */
    assert_int_equal(f[0], 1);
    double dm = exp(-1 / 5.0);
    double want = 0.5 * dm + 0.25 * 3 / (3 - 5.0) * (exp(-1 / 3.0) - dm);
    assert_true(fabs(nn_spike_v(s)[0] - want) < 1e-15);
    nn_spike_free(s);
}

/* ---- plans ---------------------------------------------------------------- */

/* A cuba genome compiles to a spiking plan: nn_step's outputs are 1 exactly
 * when the output neuron spiked in the step, as the network run alone says. */
static void test_nn_plan_compile_cuba_genome_steps_spikes(void **state)
{
    (void)state;
    struct tv_rng rng = tu_rng(77, 0, 0);
    struct genome g;
    genome_init(&g);
    struct tv_error err = {0};
    size_t ones = 0;
    for (int net = 0; net < 40; net++) {
        random_cuba_genome(&g, &rng);
        struct nn_plan *p = NULL;
        assert_ok(nn_plan_compile(&g, NULL, &p, &err), &err);
        struct nn_state *st = NULL;
        assert_ok(nn_state_new(p, 1, &st, &err), &err);
        struct nn_spike_desc d;
        uint32_t *outs;
        assert_ok(nn_spike_desc_from_genome(&g, &d, &outs, &err), &err);
        struct nn_spike *s = NULL;
        assert_ok(nn_spike_new_reference(&d, &s, &err), &err);
        size_t n_in = nn_plan_n_inputs(p), n_out = nn_plan_n_outputs(p);
        assert_int_equal(n_in, d.n_in);
        float in[8], out[8];
        for (int rep = 0; rep < 2; rep++) {
            for (int t = 0; t < 60; t++) {
                for (size_t k = 0; k < n_in; k++)
                    in[k] = (float)tv_rng_uniform(&rng) * 2.0f;
                nn_step(st, in, out);
                nn_spike_step(s, in);
                const uint32_t *f;
                size_t nf = nn_spike_fired(s, &f);
                for (size_t k = 0; k < n_out; k++) {
                    float want = 0;
                    for (size_t q = 0; q < nf; q++)
                        want = f[q] == outs[k] ? 1.0f : want;
                    assert_true(out[k] == want);
                    ones += want == 1.0f;
                }
            }
            nn_state_reset(st); /* the second run starts from rest again */
            nn_spike_reset(s);
        }
        free(outs);
        nn_spike_desc_free(&d);
        nn_spike_free(s);
        nn_state_free(st);
        nn_plan_free(p);
    }
    genome_release(&g);
    assert_true(ones > 100);
}

static void test_nn_plan_compile_spiking_failures(void **state)
{
    struct genome *g = *state;
    struct tv_rng rng = tu_rng(5, 0, 0);
    random_cuba_genome(g, &rng);
    struct tv_error err = {0};
    struct nn_plan *p = NULL;
    struct nn_opts o = {0};
    o.trainable = 1;
    assert_error(nn_plan_compile(g, &o, &p, &err), &err, TV_EINVAL,
                 "nn_plan_compile: a spiking plan cannot be trainable");
    assert_null(p);
    assert_ok(nn_plan_compile(g, NULL, &p, &err), &err);
    struct nn_state *st = NULL;
    assert_error(nn_state_new(p, 4, &st, &err), &err, TV_EINVAL,
                 "nn_state_new: a spiking plan runs batch 1, not 4");
    assert_null(st);
    nn_plan_free(p);
    /* a rate neuron among cuba neurons */
    size_t i = g->n_neurons - 1;
    genome_neuron_set_model(&g->neurons[i], GENOME_MODEL_RATE);
    char msg[160];
    snprintf(msg, sizeof msg,
             "neuron %u: model rate is not run by the engine (a spiking network holds cuba "
             "neurons only)",
             g->neurons[i].id);
    assert_error(nn_plan_compile(g, NULL, &p, &err), &err, TV_EINVAL, msg);
    assert_null(p);
}

/* ---- failure paths of nn_spike_new ------------------------------------------ */

static void test_nn_spike_new_bad_description_fails(void **state)
{
    (void)state;
    struct tv_error err = {0};
    struct nn_spike *s = NULL;
    struct nn_spike_neuron nr[3] = {unit(1, 1, 1, 0), unit(1, 1, 1, 0), unit(1, 1, 1, 0)};
    struct nn_spike_conn cs[2] = {{1, 2, 1.0, 1}, {2, 1, 1.0, 1}};
    struct nn_spike_desc d = {3, 1, nr, 2, cs};
    assert_ok(nn_spike_new(&d, &s, &err), &err);
    nn_spike_free(s);
    nr[2].tau_exc = 0;
    assert_error(nn_spike_new(&d, &s, &err), &err, TV_EINVAL,
                 "spiking network: neuron 2: a time constant is not > 0");
    assert_null(s);
    nr[2].tau_exc = 1;
    nr[1].threshold = NAN;
    assert_error(nn_spike_new_reference(&d, &s, &err), &err, TV_EINVAL,
                 "spiking network: neuron 1: a value is not finite");
    nr[1].threshold = 1;
    cs[1].to = 0;
    assert_error(nn_spike_new(&d, &s, &err), &err, TV_EINVAL,
                 "spiking network: connection 1 (2 -> 0): an end is out of range or an input");
    cs[1].to = 1;
    cs[1].delay = 0;
    assert_error(nn_spike_new(&d, &s, &err), &err, TV_EINVAL,
                 "spiking network: connection 1 (2 -> 1): weight not finite or delay 0 outside "
                 "[1, 1024]");
    cs[1].delay = 1;
    cs[1].from = 0;
    assert_error(nn_spike_new(&d, &s, &err), &err, TV_EINVAL,
                 "spiking network: connection 1 (0 -> 1): not sorted by from");
    d.n_in = 4;
    assert_error(nn_spike_new(&d, &s, &err), &err, TV_EINVAL,
                 "spiking network: 4 inputs of 3 neurons");
    assert_null(s);
    d.n_in = 1;
    cs[1].from = 2;
    assert_ok(nn_spike_new(&d, &s, &err), &err);
    assert_error(nn_spike_set_target(s, NN_TARGET_COUNT, &err), &err, TV_EINVAL,
                 "nn_spike_set_target: unknown target 3");
    assert_error(nn_spike_set_target(s, -1, &err), &err, TV_EINVAL,
                 "nn_spike_set_target: unknown target -1");
    nn_spike_free(s);
}

/* ---- the cuba model in the genome formats ------------------------------------ */

static void test_genome_cuba_round_trips_both_formats(void **state)
{
    TU_PAIR_GENOMES(g, back);
    struct tv_rng rng = tu_rng(19, 0, 0);
    random_cuba_genome(g, &rng);
    struct tv_error err = {0};
    assert_int_equal(genome_format_version(g), 2);
    size_t len;
    char *text = tu_text_of(g, &len);
    assert_non_null(strstr(text, " cuba tau_m="));
    assert_ok(genome_read_text(back, text, len, "c.txt", NULL, &err), &err);
    assert_true(genome_equal(g, back));
    free(text);
    struct tv_buf buf = {0};
    assert_ok(genome_encode(g, &buf, &err), &err);
    assert_ok(genome_decode(back, buf.data, buf.len, NULL, &err), &err);
    assert_true(genome_equal(g, back));
    tv_buf_free(&buf);
    /* a parameter out of its range is named */
    const char *bad = "trevo-net 2\ninputs 1\noutputs 1\nneuron 0 in 0 identity 0\n"
                      "neuron 1 out 1 identity 0 cuba tau_m=0.1\nconn 0 1 1\n";
    read_refused(back, bad, "c.txt", "c.txt:5: cuba tau_m 0.1 is outside [0.5, 1e+06]");
}

/* ---- delays as genes ----------------------------------------------------------- */

static void test_genome_delays_round_trip_both_formats(void **state)
{
    TU_PAIR_GENOMES(g, back);
    struct tv_rng rng = tu_rng(1903, 0, 0);
    struct tv_error err = {0};
    for (int net = 0; net < 20; net++) {
        random_cuba_genome(g, &rng);
        size_t n = random_delays(g, &rng, net % 2 ? 3 : 1024);
        assert_int_equal(genome_format_version(g), n ? 3 : 2);
        size_t len;
        char *text = tu_text_of(g, &len);
        assert_true(!n || strstr(text, "trevo-net 3\n") != NULL);
        assert_true(!n || strstr(text, " delay=") != NULL);
        assert_ok(genome_read_text(back, text, len, "d.txt", NULL, &err), &err);
        assert_true(genome_equal(g, back));
        free(text);
        struct tv_buf buf = {0};
        assert_ok(genome_encode(g, &buf, &err), &err);
        for (int general = 0; general < 2; general++) {
            assert_ok(genome_decode_general(back, buf.data, buf.len, NULL, general, &err), &err);
            assert_true(genome_equal(g, back));
            for (size_t k = 0; k < g->n_conns; k++)
                assert_int_equal(genome_conn_delay(back, k), genome_conn_delay(g, k));
        }
        tv_buf_free(&buf);
    }
}

/* A genome whose delays are all 1 writes version 2, byte for byte as a
 * genome that never had a delay array; a version 2 file reads with delays 1. */
static void test_genome_delays_of_one_keep_version_2_bytes(void **state)
{
    TU_PAIR_GENOMES(g, with);
    struct tv_rng rng = tu_rng(1904, 0, 0);
    struct tv_error err = {0};
    random_cuba_genome(g, &rng);
    assert_ok(genome_copy(with, g, &err), &err);
    assert_true(with->n_conns > 0);
    assert_ok(genome_set_delay(with, 0, 5, &err), &err);
    assert_false(genome_equal(g, with));
    assert_ok(genome_set_delay(with, 0, 1, &err), &err);
    assert_non_null(with->delays);
    assert_true(genome_equal(g, with));
    assert_int_equal(genome_format_version(with), 2);
    struct tv_buf a = {0}, b = {0};
    assert_ok(genome_encode(g, &a, &err), &err);
    assert_ok(genome_encode(with, &b, &err), &err);
    assert_int_equal(a.len, b.len);
    assert_memory_equal(a.data, b.data, a.len);
    assert_ok(genome_decode(with, a.data, a.len, NULL, &err), &err);
    assert_null(with->delays);
    tv_buf_free(&a);
    tv_buf_free(&b);
    /* "delay=" is a version 3 word */
    const char *v2 = "trevo-net 2\ninputs 1\noutputs 1\nneuron 0 in 0 identity 0\n"
                     "neuron 1 out 1 identity 0 cuba\nconn 1 1 1 delay=2\n";
    read_refused(with, v2, "d.txt", "d.txt:6: expected 'conn FROM TO WEIGHT'");
}

static void test_genome_validate_bad_delays_fail(void **state)
{
    struct genome *g = *state;
    struct tv_error err = {0};
    const char *net = "trevo-net 3\ninputs 1\noutputs 2\nneuron 0 in 0 identity 0\n"
                      "neuron 1 out 1 identity 0 cuba\nneuron 2 out 1 identity 0\n"
                      "conn 0 1 1\nconn 1 1 0.5 delay=3\nconn 1 2 1\n";
    assert_ok(genome_read_text(g, net, strlen(net), "d.txt", NULL, &err), &err);
    assert_int_equal(genome_conn_delay(g, 1), 3);
    assert_ok(genome_set_delay(g, 1, 1025, &err), &err);
    assert_error(genome_validate(g, NULL, &err), &err, TV_EINVAL,
                 "connection 1 (1 -> 1): delay 1025 is outside [1, 1024]");
    assert_ok(genome_set_delay(g, 1, 0, &err), &err);
    assert_error(genome_validate(g, NULL, &err), &err, TV_EINVAL,
                 "connection 1 (1 -> 1): delay 0 is outside [1, 1024]");
    assert_ok(genome_set_delay(g, 1, 1, &err), &err);
    assert_ok(genome_set_delay(g, 0, 2, &err), &err); /* from an input */
    assert_error(genome_validate(g, NULL, &err), &err, TV_EINVAL,
                 "connection 0 (0 -> 1): delay 2, but only a connection from a non-input into "
                 "a cuba neuron may have a delay other than 1");
    assert_ok(genome_set_delay(g, 0, 1, &err), &err);
    assert_ok(genome_set_delay(g, 2, 2, &err), &err); /* into a rate neuron */
    assert_error(genome_validate(g, NULL, &err), &err, TV_EINVAL, "connection 2 (1 -> 2): delay 2");
    const char *bad[] = {"conn 1 1 1 delay=0\n", "conn 1 1 1 delay=1025\n", "conn 1 1 1 delay=x\n",
                         "conn 1 1 1 lag=2\n"};
    for (size_t i = 0; i < 4; i++) {
        char text[512];
        snprintf(text, sizeof text,
                 "trevo-net 3\ninputs 1\noutputs 1\nneuron 0 in 0 identity 0\n"
                 "neuron 1 out 1 identity 0 cuba\n%s",
                 bad[i]);
        read_refused(g, text, "d.txt", "d.txt:6: expected delay=D with D in [1, 1024]");
    }
    /* a version 3 message must have its delay bin */
    assert_ok(genome_read_text(g, net, strlen(net), "d.txt", NULL, &err), &err);
    struct tv_buf buf = {0};
    assert_ok(genome_encode(g, &buf, &err), &err);
    assert_int_equal(buf.data[0], 0x95);
    buf.data[0] = 0x94;
    assert_error(genome_decode(g, buf.data, buf.len - 8, NULL, &err), &err, TV_EFORMAT,
                 "genome: format version 3 is an array of 5");
    tv_buf_free(&buf);
}

/* Mutation moves delays by one step within [1, delay_max], only where a
 * delay may be, and draws nothing at rate 0; crossover carries them; the
 * list operations keep them with their connections. */
static void test_genome_mutate_and_crossover_carry_delays(void **state)
{
    TU_TRIO_GENOMES(g, h, child);
    struct tv_rng rng, r1, r2;
    tv_rng_init(&rng, 1905, 0, 0);
    struct tv_error err = {0};
    random_cuba_genome(g, &rng);
    while (g->n_conns < 20)
        random_cuba_genome(g, &rng);
    struct genome_mutation m = {0};
    m.delay_max = 4;
    assert_ok(genome_copy(h, g, &err), &err);
    r1 = rng;
    assert_ok(genome_mutate(h, &m, &rng, &err), &err); /* rate 0 */
    assert_true(genome_equal(g, h));
    assert_memory_equal(&r1, &rng, sizeof rng);
    m.delay_rate = 1;
    size_t moved = 0;
    for (int round = 0; round < 30; round++) {
        assert_ok(genome_mutate(h, &m, &rng, &err), &err);
        assert_ok(genome_validate(h, NULL, &err), &err);
        for (size_t k = 0; k < h->n_conns; k++) {
            assert_true(genome_conn_delay(h, k) >= 1 && genome_conn_delay(h, k) <= 4);
            moved += genome_conn_delay(h, k) > 1;
        }
    }
    assert_true(moved > 0);
    assert_int_equal(genome_format_version(h), 3);
    /* crossover of h with a delay-free copy: each matching gene's delay is
     * h's or 1, and over many children both occur */
    size_t from_h = 0, from_g = 0;
    for (int c = 0; c < 20; c++) {
        r2 = rng;
        assert_ok(genome_crossover(child, h, g, &r2, &err), &err);
        rng = r2;
        assert_ok(genome_validate(child, NULL, &err), &err);
        for (size_t k = 0; k < child->n_conns; k++) {
            unsigned d = genome_conn_delay(child, k), dh = genome_conn_delay(h, k);
            assert_true(d == dh || d == 1);
            from_h += dh > 1 && d == dh;
            from_g += dh > 1 && d == 1;
        }
    }
    assert_true(from_h > 0 && from_g > 0);
    /* removing and adding connections keeps each delay with its connection */
    struct genome_conn last = h->conns[h->n_conns - 1];
    unsigned last_delay = genome_conn_delay(h, h->n_conns - 1);
    genome_remove_conn_at(h, 0);
    assert_int_equal(genome_conn_delay(h, h->n_conns - 1), last_delay);
    assert_int_equal(h->conns[h->n_conns - 1].to, last.to);
}

/* ---- layered networks in frustum tiles ------------------------------------------ */

/* Every window up to the delay and every tile, the edges and the wrap of the
 * receptive fields included, give the spikes and potentials of layer by
 * layer, bit for bit. */
static void test_nn_spike_layers_run_frustum_matches_layer_by_layer(void **state)
{
    (void)state;
    struct tv_error err = {0};
    struct nn_spike_layers_spec sp = {.n_layers = 4,
                                      .width = 301,
                                      .fanout = 9,
                                      .delay = 4,
                                      .weight = 0.5,
                                      .tau_m = 10,
                                      .tau_syn = 5,
                                      .threshold = 1,
                                      .refractory = 2,
                                      .seed = 7};
    struct nn_spike_layers *s = NULL;
    assert_ok(nn_spike_layers_new(&sp, &s, &err), &err);
    size_t n = sp.n_layers * sp.width, steps = 96;
    assert_ok(nn_spike_layers_run(s, steps, 1, 0, &err), &err);
    uint64_t spikes = nn_spike_layers_spikes(s), hash = nn_spike_layers_hash(s);
    double *v = malloc(n * sizeof *v);
    assert_non_null(v);
    memcpy(v, nn_spike_layers_v(s), n * sizeof *v);
    assert_true(spikes > 500);
    double top = 0; /* the last layer gets spikes: its potentials leave rest */
    for (size_t j = n - sp.width; j < n; j++)
        top = v[j] > top ? v[j] : top;
    assert_true(top > 0.1);
    static const size_t windows[] = {1, 2, 3, 4}, tiles[] = {1, 5, 64, 300, 301, 1000};
    for (size_t w = 0; w < 4; w++)
        for (size_t k = 0; k < 6; k++) {
            nn_spike_layers_reset(s);
            assert_ok(nn_spike_layers_run(s, steps, windows[w], tiles[k], &err), &err);
            assert_int_equal(nn_spike_layers_spikes(s), spikes);
            assert_int_equal(nn_spike_layers_hash(s), hash);
            assert_memory_equal(nn_spike_layers_v(s), v, n * sizeof *v);
        }
    /* in two halves, the second continuing the first */
    nn_spike_layers_reset(s);
    assert_ok(nn_spike_layers_run(s, 48, 4, 30, &err), &err);
    assert_ok(nn_spike_layers_run(s, 48, 2, 100, &err), &err);
    assert_int_equal(nn_spike_layers_hash(s), hash);
    assert_error(nn_spike_layers_run(s, 40, 5, 0, &err), &err, TV_EINVAL,
                 "layered spiking network: window 5 must be in [1, delay 4] and divide the 40 "
                 "steps");
    assert_error(nn_spike_layers_run(s, 10, 4, 0, &err), &err, TV_EINVAL, "divide the 10 steps");
    free(v);
    nn_spike_layers_free(s);
    sp.fanout = 302;
    assert_error(nn_spike_layers_new(&sp, &s, &err), &err, TV_EINVAL,
                 "layered spiking network: 4 layers of 301 neurons, fan-out 302, delay 4: need "
                 "fan-out in [1, width] and delay in [1, 1024]");
    assert_null(s);
    sp.fanout = 9;
    sp.tau_m = 0;
    assert_error(nn_spike_layers_new(&sp, &s, &err), &err, TV_EINVAL, "a time constant not > 0");
    nn_spike_layers_free(NULL);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_nn_spike_step_matches_reference_on_random_networks),
        cmocka_unit_test(test_nn_spike_step_uniform_networks_match_reference),
        cmocka_unit_test(test_nn_spike_step_follows_exact_solution),
        cmocka_unit_test(test_nn_spike_step_refractory_period),
        cmocka_unit_test(test_nn_spike_step_delay_to_the_step),
        cmocka_unit_test(test_nn_spike_set_state_sets_v_and_currents),
        cmocka_unit_test(test_nn_plan_compile_cuba_genome_steps_spikes),
        TU_GENOME_TEST(test_nn_plan_compile_spiking_failures),
        cmocka_unit_test(test_nn_spike_new_bad_description_fails),
        TU_PAIR_TEST(test_genome_cuba_round_trips_both_formats),
        TU_PAIR_TEST(test_genome_delays_round_trip_both_formats),
        TU_PAIR_TEST(test_genome_delays_of_one_keep_version_2_bytes),
        TU_GENOME_TEST(test_genome_validate_bad_delays_fail),
        TU_TRIO_TEST(test_genome_mutate_and_crossover_carry_delays),
        cmocka_unit_test(test_nn_spike_layers_run_frustum_matches_layer_by_layer),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
