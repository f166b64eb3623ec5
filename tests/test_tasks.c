/* test_tasks.c -- the tasks of experiments/: the pole physics step by step,
 * episodes of hand-built networks that fail at known steps, the dpnv damping
 * fitness and champion test, hand-designed controllers that solve the pole
 * tasks (LQR and an LQG observer built from identity neurons), and the
 * registry.
 *
 * Expected numbers are computed independently of experiments/: by hand where
 * the arithmetic is exact (single pole from rest, the fitness formulas, the
 * generalization grid), otherwise by the python3 script at the end of this
 * file, a second implementation of docs/protocols.md in plain python doubles
 * (classic RK4 written the textbook way, a network simulator of its own).
 * Run it from the repository's root (add --slow after the file name for the
 * generalization count, a few minutes):
 *   sed -n '/^#py-begin/,/^#py-end/p' tests/test_tasks.c | python3 - tests/test_tasks.c
 * Physics states agree to 1e-12 (the order of operations differs); episodes
 * of networks to about 1e-6 while the system moves, less once it is nearly at
 * rest (the networks run in float here: see the dpnv evaluate test). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "nn.h"
#include "tasks.h"
#include "testutil.h"

/* ---- networks ------------------------------------------------------------ */

/* Bang-bang LQR for the single pole: out = 0.5 - 0.1 K s written on pole1's
 * offset inputs (K from the discrete Riccati equation of the Euler model,
 * Q = I, R = 1). */
static const char LQR_POLE1[] = "trevo-net 1\ninputs 5\noutputs 1\n"
                                "neuron 0 in 0 identity 0\nneuron 1 in 0 identity 0\n"
                                "neuron 2 in 0 identity 0\nneuron 3 in 0 identity 0\n"
                                "neuron 4 in 0 identity 0\n"
                                "neuron 10 out 1 identity -1.30328512\n"
                                "conn 1 10 0.436860663\n"
                                "conn 2 10 0.319873204\n"
                                "conn 3 10 1.25437708\n"
                                "conn 4 10 1.5683011\n";

/* Full-state LQR for the double pole: F = -K s, out = 0.5 + F / 20 on dpv's
 * scaled inputs (Q = diag(0.1, 0.1, 10, 0.1, 10, 0.1), R = 1). */
static const char LQR_DPV[] = "trevo-net 1\ninputs 7\noutputs 1\n"
                              "neuron 0 in 0 identity 0\nneuron 1 in 0 identity 0\n"
                              "neuron 2 in 0 identity 0\nneuron 3 in 0 identity 0\n"
                              "neuron 4 in 0 identity 0\nneuron 5 in 0 identity 0\n"
                              "neuron 6 in 0 identity 0\n"
                              "neuron 10 out 1 identity 0.5\n"
                              "conn 0 10 -0.0541414047\n"
                              "conn 1 10 -0.0812028931\n"
                              "conn 2 10 -0.985471662\n"
                              "conn 3 10 -1.00552913\n"
                              "conn 4 10 0.924653025\n"
                              "conn 5 10 0.29233646\n";

/* The same LQR gain on a state estimate: hidden neurons 20..25 (depth 0.5)
 * hold a Kalman current estimate of [x, x', th1, th1', th2, th2'] from the
 * positions (x, th1, th2) and the last force (neuron 30 at depth 0.75, read
 * back through recurrent edges), u = -K s^ in neuron 30, out = 0.5 + u / 20.
 * Weights below 1e-3 dropped. */
static const char LQG_DPNV[] = "trevo-net 1\ninputs 4\noutputs 1\n"
                               "neuron 0 in 0 identity 0\nneuron 1 in 0 identity 0\n"
                               "neuron 2 in 0 identity 0\nneuron 3 in 0 identity 0\n"
                               "neuron 10 out 1 identity 0.5\n"
                               "neuron 20 hid 0.5 identity 0\nneuron 21 hid 0.5 identity 0\n"
                               "neuron 22 hid 0.5 identity 0\nneuron 23 hid 0.5 identity 0\n"
                               "neuron 24 hid 0.5 identity 0\nneuron 25 hid 0.5 identity 0\n"
                               "neuron 30 hid 0.75 identity 0\n"
                               "conn 0 20 3.2763\n"
                               "conn 20 20 0.317438\n"
                               "conn 21 20 0.00634876\n"
                               "conn 20 30 -0.225589\n"
                               "conn 0 21 27.044\n"
                               "conn 1 21 -0.00383741\n"
                               "conn 20 21 -5.63417\n"
                               "conn 21 21 0.887317\n"
                               "conn 22 21 -0.00611115\n"
                               "conn 30 21 0.0183658\n"
                               "conn 21 30 -0.812029\n"
                               "conn 1 22 0.355933\n"
                               "conn 22 22 0.316509\n"
                               "conn 23 22 0.00631691\n"
                               "conn 22 30 -37.9028\n"
                               "conn 0 23 -0.00743429\n"
                               "conn 1 23 3.03045\n"
                               "conn 2 23 0.0118116\n"
                               "conn 20 23 0.00154881\n"
                               "conn 22 23 -5.53045\n"
                               "conn 23 23 0.886476\n"
                               "conn 24 23 -0.021348\n"
                               "conn 30 23 -0.0274603\n"
                               "conn 23 30 -10.0553\n"
                               "conn 2 24 0.364878\n"
                               "conn 24 24 0.307185\n"
                               "conn 25 24 0.00602164\n"
                               "conn 24 30 35.5636\n"
                               "conn 0 25 -0.0016652\n"
                               "conn 1 25 0.0568101\n"
                               "conn 2 25 3.96151\n"
                               "conn 22 25 0.0907915\n"
                               "conn 24 25 -4.85596\n"
                               "conn 25 25 0.874748\n"
                               "conn 30 25 -0.272327\n"
                               "conn 25 30 2.92336\n"
                               "conn 30 10 0.05\n";

static struct nn_plan *plan_of_text(const char *text)
{
    struct tv_error err = {0};
    struct genome g;
    genome_init(&g);
    assert_ok(genome_read_text(&g, text, strlen(text), "net", NULL, &err), &err);
    struct nn_plan *p;
    assert_ok(nn_plan_compile(&g, NULL, &p, &err), &err);
    genome_release(&g);
    return p;
}

/* n_in inputs joined to nothing and one identity output of bias `out`: the
 * output is exactly `out` at every step, whatever the inputs. */
static struct nn_plan *plan_constant(size_t n_in, float out)
{
    struct tv_error err = {0};
    struct genome g;
    genome_init(&g);
    for (uint32_t i = 0; i < n_in; i++)
        assert_ok(genome_add_neuron(&g, i, GENOME_INPUT, GENOME_ACT_IDENTITY, 0, 0, &err), &err);
    assert_ok(genome_add_neuron(&g, 100, GENOME_OUTPUT, GENOME_ACT_IDENTITY, out, 1, &err), &err);
    assert_ok(genome_validate(&g, NULL, &err), &err);
    struct nn_plan *p;
    assert_ok(nn_plan_compile(&g, NULL, &p, &err), &err);
    genome_release(&g);
    return p;
}

#define assert_near(got, want, rel) near_((got), (want), (rel), #got, __FILE__, __LINE__)

static void near_(double got, double want, double rel, const char *what, const char *file, int line)
{
    double tol = rel * (fabs(want) > 1e-3 ? fabs(want) : 1e-3);
    if (!(fabs(got - want) <= tol)) {
        print_error("%s:%d: %s = %.17g, want %.17g (tolerance %.3g)\n", file, line, what, got, want,
                    tol);
        _fail(file, line);
    }
}

static double figure(const struct task_result *r, const char *name)
{
    for (size_t i = 0; i < r->n_figures; i++)
        if (!strcmp(r->figure_names[i], name))
            return r->figures[i];
    print_error("no figure '%s'\n", name);
    fail();
    return NAN;
}

/* Task name opened with its default [task] values (task_close() it). */
static struct task_instance *open_task(const char *name)
{
    const struct task_kind *k = task_find(name);
    assert_non_null(k);
    struct task_params params;
    task_params_defaults(k, &params);
    struct task_instance *t;
    struct tv_error err = {0};
    assert_ok(task_open(k, &params, &t, &err), &err);
    assert_ptr_equal(t->kind, k);
    return t;
}

/* The kind's evaluate() on a plan, with the rng (seed, stream 0). */
static void evaluate_on(const struct task_instance *t, const struct nn_plan *p, uint64_t seed,
                        struct task_result *r)
{
    struct tv_error err = {0};
    struct tv_rng rng = tu_rng(seed, 0, 0);
    memset(r, 0, sizeof *r);
    assert_ok(t->kind->evaluate(t, p, &rng, r, &err), &err);
}

/* The same on task name with its default [task] values; with champion 1,
 * the kind's champion test instead. */
static void evaluate(const char *name, const struct nn_plan *p, uint64_t seed,
                     struct task_result *r, int champion)
{
    struct task_instance *t = open_task(name);
    if (champion) {
        struct tv_error err = {0};
        memset(r, 0, sizeof *r);
        assert_non_null(t->kind->champion_test);
        assert_ok(t->kind->champion_test(t, p, r, &err), &err);
    } else {
        evaluate_on(t, p, seed, r);
    }
    task_close(t);
}

/* evaluate() of the network of `text` (plan_of_text), freed after. */
static struct task_result evaluate_text(const char *name, const char *text, uint64_t seed,
                                        int champion)
{
    struct nn_plan *p = plan_of_text(text);
    struct task_result r;
    evaluate(name, p, seed, &r, champion);
    nn_plan_free(p);
    return r;
}

/* evaluate() of plan_constant(n_in, out), freed after. */
static struct task_result evaluate_constant(const char *name, size_t n_in, float out, uint64_t seed,
                                            int champion)
{
    struct nn_plan *p = plan_constant(n_in, out);
    struct task_result r;
    evaluate(name, p, seed, &r, champion);
    nn_plan_free(p);
    return r;
}

/* ---- single pole physics --------------------------------------------------- */

/* From rest under +10 N, by hand: sin 0 = 0, cos 0 = 1, so
 *   temp = 10 / 1.1 = 100/11;
 *   thetaacc = (0 - 100/11) / (0.5 (4/3 - 0.1/1.1)) = -(100/11) / (41/66) = -600/41;
 *   xacc = 100/11 - 0.05 (-600/41) / 1.1 = 100/11 + 300/451 = 400/41.
 * Step 1 (Euler reads the old velocities): x = 0, x' = 0.02 * 400/41 = 8/41,
 * theta = 0, theta' = -12/41. Step 2: theta is still 0, so the accelerations
 * are the same: x = 0.02 * 8/41, x' = 16/41, theta = 0.02 * (-12/41),
 * theta' = -24/41. */
static void test_task_cart1_step_from_rest_by_hand(void **state)
{
    (void)state;
    struct task_cart1 s = {0, 0, 0, 0};
    task_cart1_step(&s, 10.0);
    assert_near(s.x, 0, 1e-15);
    assert_near(s.x_dot, 8.0 / 41, 1e-15);
    assert_near(s.theta, 0, 1e-15);
    assert_near(s.theta_dot, -12.0 / 41, 1e-15);
    task_cart1_step(&s, 10.0);
    assert_near(s.x, 0.16 / 41, 1e-15);
    assert_near(s.x_dot, 16.0 / 41, 1e-15);
    assert_near(s.theta, -0.24 / 41, 1e-15);
    assert_near(s.theta_dot, -24.0 / 41, 1e-15);
}

/* python: "cart1 general" */
static void test_task_cart1_step_general_state(void **state)
{
    (void)state;
    struct task_cart1 s = {0.1, -0.2, 0.05, 0.3};
    task_cart1_step(&s, -10.0);
    assert_near(s.x, 0.096000000000000002, 1e-12);
    assert_near(s.x_dot, -0.3957976546439626, 1e-12);
    assert_near(s.theta, 0.056000000000000001, 1e-12);
    assert_near(s.theta_dot, 0.60802331360615147, 1e-12);
}

static void test_task_cart1_failed_bounds_are_strict(void **state)
{
    (void)state;
    struct task_cart1 s = {2.4, 0, 0.2094384, 0};
    assert_false(task_cart1_failed(&s));
    s.x = -2.4;
    s.theta = -0.2094384;
    assert_false(task_cart1_failed(&s));
    s.x = nextafter(2.4, 3);
    assert_true(task_cart1_failed(&s));
    s.x = nextafter(-2.4, -3);
    assert_true(task_cart1_failed(&s));
    s.x = 0;
    s.theta = nextafter(0.2094384, 1);
    assert_true(task_cart1_failed(&s));
    s.theta = nextafter(-0.2094384, -1);
    assert_true(task_cart1_failed(&s));
}

/* ---- double pole physics --------------------------------------------------- */

/* python: "derivs F=0". By hand, theta2 = 0 so pole 2 adds no force and
 * m~2 = 0.01 (1 - 0.75) = 0.0025; th2'' = -0.75 xacc / 0.05 = -15 xacc. */
static void test_task_cart2_derivs_standard_start(void **state)
{
    (void)state;
    double st[6] = {0, 0, 0.07, 0, 0, 0}, d[6];
    task_cart2_derivs(st, 0.0, d);
    assert_near(d[0], 0, 1e-15);
    assert_near(d[1], -0.049891765776941537, 1e-12);
    assert_near(d[2], 0, 1e-15);
    assert_near(d[3], 1.1028142271445174, 1e-12);
    assert_near(d[4], 0, 1e-15);
    assert_near(d[5], -15 * d[1], 1e-15);
    assert_near(d[5], 0.74837648665412293, 1e-12);
}

/* python: "rk4 F=0", "step F=0", "step2 F=0", "step F=5", "step2 F=5",
 * "step general F=-3" */
static void test_task_cart2_rk4_and_steps(void **state)
{
    (void)state;
    double st[6] = {0, 0, 0.07, 0, 0, 0};
    task_cart2_rk4(st, 0.0, 0.01);
    const double rk4[6] = {-2.4949280932231121e-06, -0.00049905399293443905, 0.070055147944568977,
                           0.011031037274709126,    3.7462276830819459e-05,  0.0075018945877069121};
    for (int i = 0; i < 6; i++)
        assert_near(st[i], rk4[i], 1e-12);

    const double f0[2][6] = {{-9.9838245669711169e-06, -0.00099893147070649721,
                              0.070220678734088507, 0.022079472277230793, 0.00015043182472776782,
                              0.015122033536002971},
                             {-4.0001304590969633e-05, -0.0020044719140551561, 0.070884107949432298,
                              0.044298334675858038, 0.00061136428661695379, 0.031218504966480275}};
    const double f5[2][6] = {{0.00096297448835612183, 0.096303989032092904, 0.068764083605383289,
                              -0.12366387457253875, -0.014509590288939767, -1.4578482848577019},
                             {0.003852679100254326, 0.19268556241397561, 0.065047667700909723,
                              -0.24819393898517939, -0.058877413192114217, -3.0002455829457078}};
    double a[6] = {0, 0, 0.07, 0, 0, 0}, b[6] = {0, 0, 0.07, 0, 0, 0};
    for (int k = 0; k < 2; k++) {
        task_cart2_step(a, 0.0);
        task_cart2_step(b, 5.0);
        for (int i = 0; i < 6; i++) {
            assert_near(a[i], f0[k][i], 1e-12);
            assert_near(b[i], f5[k][i], 1e-12);
        }
    }
    double g[6] = {0.1, -0.2, 0.05, 0.3, -0.02, 0.4};
    task_cart2_step(g, -3.0);
    const double gw[6] = {0.095409015383269777, -0.25911768184162304,   0.057038583127565184,
                          0.404225900443417,    -0.0036133452252457374, 1.2468374529473421};
    for (int i = 0; i < 6; i++)
        assert_near(g[i], gw[i], 1e-12);
}

static void test_task_cart2_failed_bounds_are_strict(void **state)
{
    (void)state;
    double st[6] = {2.4, 0, 0.628329, 0, -0.628329, 0};
    assert_false(task_cart2_failed(st));
    st[0] = nextafter(-2.4, -3);
    assert_true(task_cart2_failed(st));
    st[0] = 0;
    st[2] = nextafter(0.628329, 1);
    assert_true(task_cart2_failed(st));
    st[2] = 0;
    st[4] = nextafter(-0.628329, -1);
    assert_true(task_cart2_failed(st));
    st[4] = 0;
    st[1] = st[3] = st[5] = 1e9; /* velocities are never a failure */
    assert_false(task_cart2_failed(st));
}

/* ---- pole1 ----------------------------------------------------------------- */

/* Constant outputs: python "pole1 rest +10" (8: the 9th push brings the pole
 * past 12 degrees), "pole1 theta 0.1 +10", "pole1 theta 0.1 -10". An output
 * of exactly 0.5 is not > 0.5: it pushes left. */
static void test_task_pole1_run_constant_output_fails_at_known_step(void **state)
{
    (void)state;
    struct tv_error err = {0};
    const float outs[3] = {1.0f, 0.0f, 0.5f};
    const struct task_cart1 starts[2] = {{0, 0, 0, 0}, {0, 0, 0.1, 0}}; /* at rest, tilted */
    /* the output, the start, the step limit (the last run: max_steps caps
     * the episode), the steps */
    static const struct {
        int out, start;
        size_t max_steps, steps;
    } runs[] = {{0, 0, 100000, 8}, {1, 0, 100000, 8}, {0, 1, 100000, 11},
                {1, 1, 100000, 6}, {2, 1, 100000, 6}, {0, 1, 5, 5}};
    for (size_t i = 0; i < sizeof runs / sizeof runs[0]; i++) {
        struct nn_plan *p = plan_constant(5, outs[runs[i].out]);
        size_t steps;
        assert_ok(task_pole1_run(p, &starts[runs[i].start], runs[i].max_steps, &steps, &err), &err);
        if (steps != runs[i].steps)
            fail_msg("run %zu: output %g: %zu steps, want %zu", i, (double)outs[runs[i].out], steps,
                     runs[i].steps);
        nn_plan_free(p);
    }
}

/* python: "pole1 lqr" balances 100,000 steps. */
static void test_task_pole1_run_lqr_network_balances(void **state)
{
    (void)state;
    struct tv_error err = {0};
    struct nn_plan *p = plan_of_text(LQR_POLE1);
    struct task_cart1 start = {0.5, 0.05, 0.05, 0.05};
    size_t steps;
    assert_ok(task_pole1_run(p, &start, 100000, &steps, &err), &err);
    assert_int_equal(steps, 100000);
    nn_plan_free(p);
}

static void test_task_pole1_start_ranges_and_grid(void **state)
{
    (void)state;
    struct tv_rng rng = tu_rng(7, 0, 0);
    double lo[4] = {1e9, 1e9, 1e9, 1e9}, hi[4] = {-1e9, -1e9, -1e9, -1e9};
    for (int i = 0; i < 20000; i++) {
        struct task_cart1 s;
        task_pole1_start(&rng, &s);
        double v[4] = {s.x, s.x_dot, s.theta, s.theta_dot};
        for (int k = 0; k < 4; k++) {
            lo[k] = fmin(lo[k], v[k]);
            hi[k] = fmax(hi[k], v[k]);
            /* on NEAT's 0.001 grid */
            assert_near(v[k] * 1000, round(v[k] * 1000), 1e-9);
        }
        assert_false(task_cart1_failed(&s));
    }
    /* [-2.4, 2.4), [-1, 1), [-0.2, 0.2), [-1.5, 1.5): ends reached, never passed */
    const double want_lo[4] = {-2.4, -1, -0.2, -1.5}, want_hi[4] = {2.399, 0.999, 0.199, 1.499};
    for (int k = 0; k < 4; k++) {
        assert_near(lo[k], want_lo[k], 1e-12);
        assert_near(hi[k], want_hi[k], 1e-12);
    }
}

/* The fitness is a pure function of (genome, seed): the start is the rng's
 * first four draws (reported as figures), and the same seed gives the same
 * result. */
static void test_task_pole1_evaluate_uses_the_rng_start(void **state)
{
    (void)state;
    struct tv_error err = {0};
    struct nn_plan *p = plan_of_text(LQR_POLE1);
    double x0[6];
    for (uint64_t seed = 1; seed <= 6; seed++) {
        struct task_result a, b;
        evaluate("pole1", p, seed, &a, 0);
        evaluate("pole1", p, seed, &b, 0);
        assert_memory_equal(&a.fitness, &b.fitness, sizeof a.fitness);
        assert_int_equal(a.solved, b.solved);
        struct tv_rng rng = tu_rng(seed, 0, 0);
        struct task_cart1 s;
        task_pole1_start(&rng, &s);
        assert_true(figure(&a, "x0") == s.x && figure(&a, "x_dot0") == s.x_dot);
        assert_true(figure(&a, "theta0") == s.theta && figure(&a, "theta_dot0") == s.theta_dot);
        size_t steps;
        assert_ok(task_pole1_run(p, &s, 100000, &steps, &err), &err);
        assert_true(a.fitness == (double)steps);
        assert_true(figure(&a, "steps") == (double)steps);
        assert_int_equal(a.solved, steps == 100000);
        x0[seed - 1] = s.x;
    }
    int differ = 0;
    for (int i = 1; i < 6; i++)
        differ |= x0[i] != x0[0];
    assert_true(differ); /* different seeds, different starts */
    nn_plan_free(p);
}

/* ---- dpv ----------------------------------------------------------------- */

/* python "dp const 0.75": 6 steps, "dp const 0.5": 22 (F = 0: the poles just
 * fall). */
static void test_task_dpv_constant_output_fails_at_known_step(void **state)
{
    (void)state;
    struct task_result r = evaluate_constant("dpv", 7, 0.75f, 1, 0);
    assert_true(r.fitness == 6);
    assert_false(r.solved);
    assert_true(figure(&r, "steps") == 6);
    r = evaluate_constant("dpv", 7, 0.5f, 1, 0);
    assert_true(r.fitness == 22);
    assert_false(r.solved);
}

/* python: "dpv lqr" balances 100,000 steps. */
static void test_task_dpv_lqr_network_solves(void **state)
{
    (void)state;
    struct task_result r = evaluate_text("dpv", LQR_DPV, 1, 0);
    assert_true(r.fitness == 100000);
    assert_true(r.solved);
    assert_true(figure(&r, "steps") == 100000);
}

/* python "dpv lqr 300": 300 steps and the jiggle of steps 201..300. */
static void test_task_pole2_run_jiggle_of_last_100_steps(void **state)
{
    (void)state;
    struct tv_error err = {0};
    struct nn_plan *p = plan_of_text(LQR_DPV);
    double start[6] = {0, 0, 0.07, 0, 0, 0}, jiggle = -1;
    size_t steps;
    assert_ok(task_pole2_run(p, 1, start, 300, &steps, &jiggle, &err), &err);
    assert_int_equal(steps, 300);
    assert_near(jiggle, 53.899834438146605, 1e-5);
    /* without velocities, the LQG network: python "dpnv lqg 300" */
    struct nn_plan *q = plan_of_text(LQG_DPNV);
    assert_ok(task_pole2_run(q, 0, start, 300, &steps, &jiggle, &err), &err);
    assert_int_equal(steps, 300);
    assert_near(jiggle, 16.985566951748883, 1e-5);
    nn_plan_free(q);
    /* fewer than 100 steps: 0 */
    assert_ok(task_pole2_run(p, 1, start, 99, &steps, &jiggle, &err), &err);
    assert_int_equal(steps, 99);
    assert_true(jiggle == 0);
    nn_plan_free(p);
}

/* ---- dpnv ------------------------------------------------------------------ */

/* By hand: 0.1 t / 1000 + 0.9 * 0.75 / jiggle, f2 only from t = 100 on. */
static void test_task_dpnv_fitness_formula(void **state)
{
    (void)state;
    assert_near(task_dpnv_fitness(0, 5), 0, 1e-15);
    assert_near(task_dpnv_fitness(99, 0.001), 0.0099, 1e-15);
    assert_near(task_dpnv_fitness(100, 3), 0.01 + 0.9 * 0.25, 1e-15);
    assert_near(task_dpnv_fitness(500, 7.5), 0.05 + 0.09, 1e-15);
    assert_near(task_dpnv_fitness(1000, 0.75), 1.0, 1e-15);
    /* a zero sum cannot happen once the poles moved: no division by zero */
    assert_near(task_dpnv_fitness(1000, 0), 0.1, 1e-15);
}

/* By hand: v = 0.05 gives x = 0.216 - 2.16, x' = 0.135 - 1.35, th1 =
 * 0.006283152 - 0.06283152, th1' = 0.015009752 - 0.15009752; v = 0.5 gives
 * 0 exactly; x outermost, th1' innermost. */
static void test_task_dpnv_grid_start_order_and_values(void **state)
{
    (void)state;
    double s[6];
    task_dpnv_grid_start(0, s);
    const double lo[6] = {-1.944, -1.215, -0.056548368, -0.135087768, 0, 0};
    for (int i = 0; i < 6; i++)
        assert_near(s[i], lo[i], 1e-12);
    task_dpnv_grid_start(624, s);
    for (int i = 0; i < 6; i++)
        assert_near(s[i], -lo[i], 1e-12);
    task_dpnv_grid_start(312, s);
    for (int i = 0; i < 6; i++)
        assert_true(s[i] == 0);
    task_dpnv_grid_start(1, s); /* th1' moves first: v = 0.25 */
    assert_near(s[3], 0.25 * 0.30019504 - 0.15009752, 1e-12);
    assert_near(s[0], -1.944, 1e-12);
    task_dpnv_grid_start(125, s); /* x moves last */
    assert_near(s[0], 0.25 * 4.32 - 2.16, 1e-12);
    assert_near(s[3], -0.135087768, 1e-12);
    task_dpnv_grid_start(5 + 25, s);
    assert_near(s[1], 0.25 * 2.70 - 1.35, 1e-12);
    assert_near(s[2], 0.25 * 0.12566304 - 0.06283152, 1e-12);
}

/* python "dp const 0.5": 22 steps; t < 100, so f2 = 0 and the fitness is
 * 0.1 * 22 / 1000. */
static void test_task_dpnv_evaluate_constant_output(void **state)
{
    (void)state;
    struct task_result r = evaluate_constant("dpnv", 4, 0.5f, 1, 0);
    assert_near(r.fitness, 0.0022, 1e-15);
    assert_false(r.solved);
    assert_true(figure(&r, "steps") == 22);
}

/* python "dpnv lqg": the whole 1,000 steps, the jiggle of steps 901..1000
 * and the damping fitness. evaluate() never says solved. The network runs in
 * float, which leaves an absolute difference of about 4e-7 per step in the
 * jiggle terms; by step 900 the system is nearly at rest (terms of about
 * 7e-4), hence a relative tolerance of 1e-3 (a window shifted by one step
 * moves the sum by about 0.7 %). */
static void test_task_dpnv_evaluate_lqg_network(void **state)
{
    (void)state;
    struct task_result r = evaluate_text("dpnv", LQG_DPNV, 1, 0);
    assert_true(figure(&r, "steps") == 1000);
    assert_near(figure(&r, "jiggle"), 0.066875699360259833, 1e-3);
    assert_near(r.fitness, 10.19335239043663, 1e-3);
    assert_false(r.solved);
}

/* A network that cannot balance fails (a), so (b) never runs. */
static void test_task_dpnv_champion_test_constant_fails_long_run(void **state)
{
    (void)state;
    struct task_result r = evaluate_constant("dpnv", 4, 0.5f, 0, 1);
    assert_false(r.solved);
    assert_true(r.fitness == 0);
    assert_true(figure(&r, "steps_100k") == 22);
    assert_true(figure(&r, "generalization") == 0);
}

/* The LQG network holds the poles 100,000 steps and generalizes to far more
 * than the 200 of 625 starts needed: python "dpnv lqg generalization" (with
 * --slow) counts 467, and no start ends between 900 and 999 steps, so float
 * rounding cannot move the count. */
static void test_task_dpnv_champion_test_lqg_solves(void **state)
{
    (void)state;
    struct nn_plan *p = plan_of_text(LQG_DPNV);
    struct task_result r;
    evaluate("dpnv", p, 0, &r, 1);
    assert_true(figure(&r, "steps_100k") == 100000);
    double g = figure(&r, "generalization");
    assert_true(g == 467);
    assert_true(r.fitness == g);
    assert_true(r.solved);
    /* the same count start by start, each run on a state of its own */
    struct tv_error err = {0};
    size_t count = 0;
    for (size_t i = 0; i < 625; i++) {
        double start[6];
        size_t steps;
        task_dpnv_grid_start(i, start);
        assert_ok(task_pole2_run(p, 0, start, 1000, &steps, NULL, &err), &err);
        count += steps == 1000;
    }
    assert_true(g == (double)count);
    nn_plan_free(p);
}

/* ---- spiking tasks ----------------------------------------------------------- */

/* XOR by hand in cuba neurons: the output integrates x1 and x2 (weight 1.2
 * each: one input crosses the threshold at step 18 of 20); a fast hidden
 * neuron (tau_m 1) spikes only when both are on, and inhibits the output
 * over a connection of delay 3 before it gets there. */
static const char SPIKE_XOR[] = "trevo-net 3\ninputs 3\noutputs 1\n"
                                "neuron 0 in 0 identity 0\nneuron 1 in 0 identity 0\n"
                                "neuron 2 in 0 identity 0\nneuron 3 out 1 identity 0 cuba\n"
                                "neuron 4 hid 0.5 identity 0 cuba tau_m=1\n"
                                "conn 1 3 1.2\nconn 2 3 1.2\nconn 1 4 1\nconn 2 4 1\n"
                                "conn 4 3 -30 delay=3\n";

/* pole1's bang-bang LQR as one fast cuba neuron (tau_m 0.5): its potential
 * follows bias + sum w x within the 5 steps of an action, so it spikes
 * exactly when the rate network's output is above 0.5, its threshold. */
static const char SPIKE_LQR_POLE1[] = "trevo-net 2\ninputs 5\noutputs 1\n"
                                      "neuron 0 in 0 identity 0\nneuron 1 in 0 identity 0\n"
                                      "neuron 2 in 0 identity 0\nneuron 3 in 0 identity 0\n"
                                      "neuron 4 in 0 identity 0\n"
                                      "neuron 10 out 1 identity -1.30328512 cuba tau_m=0.5 "
                                      "threshold=0.5 refractory=0\n"
                                      "conn 1 10 0.436860663\nconn 2 10 0.319873204\n"
                                      "conn 3 10 1.25437708\nconn 4 10 1.5683011\n";

static void test_task_spike_xor_hand_network_solves(void **state)
{
    (void)state;
    struct task_result r = evaluate_text("spike_xor", SPIKE_XOR, 1, 0);
    assert_true(r.solved);
    assert_true(figure(&r, "spikes_00") == 0 && figure(&r, "spikes_11") == 0);
    assert_true(figure(&r, "spikes_01") == 1 && figure(&r, "spikes_10") == 1);
    assert_near(r.fitness, (4 - 4.0 / 3) * (4 - 4.0 / 3), 1e-12); /* 1 spike of 3 each */
    /* a window too short for the output to reach its threshold: silent */
    struct task_instance *t = open_task("spike_xor");
    t->params.v[task_key_find(t->kind, "window")].i = 10;
    struct nn_plan *p = plan_of_text(SPIKE_XOR);
    evaluate_on(t, p, 1, &r);
    assert_false(r.solved);
    assert_true(figure(&r, "spikes_01") == 0);
    nn_plan_free(p);
    task_close(t);
}

static void test_task_spike_pole1_lqr_network_balances(void **state)
{
    (void)state;
    struct tv_error err = {0};
    struct nn_plan *p = plan_of_text(SPIKE_LQR_POLE1), *zero = plan_constant(5, 0.0f);
    struct task_instance *t = open_task("spike_pole1");
    assert_int_equal(t->n_inputs, 5);
    assert_true(t->max_fitness == 100000);
    size_t solved = 0;
    for (uint64_t seed = 1; seed <= 10; seed++) {
        struct task_result r;
        evaluate_on(t, p, seed, &r);
        solved += r.solved;
        assert_true(r.solved == (r.fitness == 100000));
    }
    assert_true(solved >= 3); /* the starts near the ends of the track are lost */
    /* a silent network pushes left at every action, as pole1's output 0 does */
    const char *silent = "trevo-net 2\ninputs 5\noutputs 1\nneuron 0 in 0 identity 0\n"
                         "neuron 1 in 0 identity 0\nneuron 2 in 0 identity 0\n"
                         "neuron 3 in 0 identity 0\nneuron 4 in 0 identity 0\n"
                         "neuron 10 out 1 identity 0 cuba\n";
    nn_plan_free(p);
    p = plan_of_text(silent);
    for (uint64_t seed = 1; seed <= 5; seed++) {
        struct task_result r;
        struct tv_rng rng = tu_rng(seed, 0, 0);
        struct task_cart1 start;
        task_pole1_start(&rng, &start);
        size_t steps;
        assert_ok(task_pole1_run(zero, &start, 100000, &steps, &err), &err);
        evaluate_on(t, p, seed, &r);
        assert_true(r.fitness == (double)steps);
        assert_true(figure(&r, "output_spikes") == 0);
    }
    nn_plan_free(p);
    nn_plan_free(zero);
    task_close(t);
}

/* A rate network on a spiking task is refused, naming the key to set. */
static void test_task_spiking_tasks_refuse_rate_networks(void **state)
{
    (void)state;
    static const char *const names[] = {"spike_xor", "spike_pole1"};
    for (size_t i = 0; i < 2; i++) {
        struct task_instance *t = open_task(names[i]);
        struct nn_plan *p = plan_constant(t->n_inputs, 1.0f);
        struct tv_error err = {0};
        struct tv_rng rng = tu_rng(1, 0, 0);
        struct task_result r;
        memset(&r, 0, sizeof r);
        assert_error(t->kind->evaluate(t, p, &rng, &r, &err), &err, TV_EINVAL, names[i]);
        assert_msg_has(&err, ": the network has no spiking neuron (start the search from cuba "
                             "neurons: [genome] init_model = cuba)");
        nn_plan_free(p);
        task_close(t);
    }
}

/* ---- the registry ---------------------------------------------------------- */

static void test_task_find_every_name(void **state)
{
    (void)state;
    static const char *const names[] = {"xor",  "null",     "spin",      "pole1",      "dpv",
                                        "dpnv", "classify", "spike_xor", "spike_pole1"};
    size_t n;
    const struct task_kind *const *all = task_all(&n);
    assert_int_equal(n, sizeof names / sizeof names[0]);
    for (size_t i = 0; i < n; i++) {
        const struct task_kind *k = task_find(names[i]);
        assert_non_null(k);
        assert_string_equal(k->name, names[i]);
        assert_ptr_equal(all[i], k);
        assert_int_equal(k->abi_version, TASK_ABI_VERSION);
        assert_non_null(k->open);
        assert_true(k->evaluate || k->evaluate_generation);
        assert_true(k->summary && k->summary[0]);
        assert_true(k->n_keys <= TASK_MAX_KEYS);
    }
    assert_null(task_find("pole"));
    assert_null(task_find("DPV"));
    assert_null(task_find(""));
}

static void test_task_pole_inputs_outputs_and_hooks(void **state)
{
    (void)state;
    const struct {
        const char *name;
        size_t n_in;
        int has_champion_test;
    } want[] = {{"pole1", 5, 0}, {"dpv", 7, 0}, {"dpnv", 4, 1}};
    for (size_t i = 0; i < 3; i++) {
        struct task_instance *t = open_task(want[i].name);
        assert_int_equal(t->n_inputs, want[i].n_in);
        assert_int_equal(t->n_outputs, 1);
        assert_int_equal(t->out_act, GENOME_ACT_NEAT_SIGMOID);
        assert_int_equal(t->kind->champion_test != NULL, want[i].has_champion_test);
        if (i < 2)
            assert_true(t->max_fitness == 100000);
        else
            assert_true(isinf(t->max_fitness));
        task_close(t);
    }
}

/* ---- instances, [task] keys, the one evaluation path ---------------------- */

/* pole1 and dpv declare max_steps (default 100,000, today's value): the
 * episode's length, the fitness that solves, and the instance's best. */
static void test_task_open_max_steps_key(void **state)
{
    (void)state;
    struct tv_error err = {0};
    static const char *const names[] = {"pole1", "dpv"};
    static const char *const nets[] = {LQR_POLE1, LQR_DPV};
    for (size_t i = 0; i < 2; i++) {
        const struct task_kind *k = task_find(names[i]);
        int key = task_key_find(k, "max_steps");
        assert_int_equal(key, 0);
        assert_int_equal(task_key_find(k, "max_step"), -1);
        struct task_params params;
        task_params_defaults(k, &params);
        assert_true(params.v[key].i == 100000);
        params.v[key].i = 50;
        struct task_instance *t;
        assert_ok(task_open(k, &params, &t, &err), &err);
        assert_true(t->max_fitness == 50);
        struct nn_plan *p = plan_of_text(nets[i]);
        struct task_result r;
        evaluate_on(t, p, 1, &r);
        assert_true(r.fitness == 50);
        assert_true(r.solved);
        nn_plan_free(p);
        task_close(t);
    }
}

/* task_open(k) with its defaults must fail with TV_EINVAL and want, and
 * leave *out NULL. */
static void open_refused(const struct task_kind *k, const char *want)
{
    struct tv_error err = {0};
    struct task_params params;
    task_params_defaults(k, &params);
    struct task_instance dummy, *t = &dummy;
    assert_error(task_open(k, &params, &t, &err), &err, TV_EINVAL, want);
    assert_null(t);
}

/* A row built against another version of the struct is refused, by name. */
static void test_task_open_other_abi_version_refused(void **state)
{
    (void)state;
    struct task_kind k = *task_find("xor");
    k.abi_version = TASK_ABI_VERSION + 1;
    char want[80];
    snprintf(want, sizeof want, "task xor: built for task ABI version %d, not %d",
             TASK_ABI_VERSION + 1, TASK_ABI_VERSION);
    open_refused(&k, want);
    task_close(NULL); /* a no-op */
}

/* open() may refuse its values: the code and message come back prefixed by
 * the task's name, and nothing is left open. */
static int refusing_open(struct task_instance *t, struct tv_error *err)
{
    (void)t;
    return tv_error_set(err, TV_EINVAL, "max_steps: too long for this task");
}

static void test_task_open_refused_by_the_kind(void **state)
{
    (void)state;
    struct task_kind k = *task_find("pole1");
    k.open = refusing_open;
    open_refused(&k, "task pole1: max_steps: too long for this task");
}

/* A minimal genome of n_in inputs and n_out outputs. */
static void minimal_genome(struct genome *g, uint32_t n_in, uint32_t n_out)
{
    struct tv_error err = {0};
    struct tv_rng rng = tu_rng(7, 0, 0);
    genome_init(g);
    assert_ok(genome_build_minimal(g, n_in, n_out, GENOME_ACT_NEAT_SIGMOID, 1.0, &rng, &err), &err);
}

/* Defect 1 of issue 14: a valid network of another shape must be refused
 * before it runs (nn_step takes no lengths: it would read and write past the
 * task's buffers), by task_evaluate and by the champion test alike. */
static void test_task_evaluate_wrong_shape_refused(void **state)
{
    (void)state;
    struct tv_error err = {0};
    struct task_instance *tx = open_task("xor"), *dpnv = open_task("dpnv");
    struct genome g;
    minimal_genome(&g, 5, 2);
    struct task_result r;
    r.fitness = 42;
    assert_error(task_evaluate(tx, &g, 1, &r, &err), &err, TV_EINVAL,
                 "the network has 5 inputs and 2 outputs; task xor takes 3 inputs and 1 output");
    assert_true(r.fitness == 0); /* zeroed */
    assert_error(task_check_shape(dpnv, &g, &err), &err, TV_EINVAL,
                 "the network has 5 inputs and 2 outputs; task dpnv takes 4 inputs and 1 output");
    assert_error(task_champion_test(dpnv, &g, &r, &err), &err, TV_EINVAL,
                 "task dpnv takes 4 inputs and 1 output");
    genome_release(&g);
    minimal_genome(&g, 1, 1);
    assert_error(task_evaluate(tx, &g, 1, &r, &err), &err, TV_EINVAL,
                 "the network has 1 input and 1 output; task xor takes 3 inputs");
    genome_release(&g);
    /* the right shape passes; xor has no champion test: 0, an empty result */
    minimal_genome(&g, 3, 1);
    r.solved = 1;
    assert_ok(task_champion_test(tx, &g, &r, &err), &err);
    assert_int_equal(r.solved, 0);
    assert_int_equal(r.n_figures, 0);
    genome_release(&g);
    task_close(tx);
    task_close(dpnv);
}

/* task_evaluate is the worker's evaluation: the kind's evaluate() on the
 * compiled genome, its rng seeded with (seed, TASK_STREAM_EVAL). pole1 draws
 * its start from it, so another stream would give other starts. */
static void test_task_evaluate_seeds_the_evaluation_stream(void **state)
{
    (void)state;
    struct tv_error err = {0};
    struct task_instance *t = open_task("pole1");
    struct genome g;
    genome_init(&g);
    assert_ok(genome_read_text(&g, LQR_POLE1, strlen(LQR_POLE1), "net", NULL, &err), &err);
    struct nn_plan *p = plan_of_text(LQR_POLE1);
    int differ = 0;
    for (uint64_t seed = 1; seed <= 4; seed++) {
        struct task_result got, want, stream0;
        assert_ok(task_evaluate(t, &g, seed, &got, &err), &err);
        struct tv_rng rng = tu_rng(seed, TASK_STREAM_EVAL, 0);
        memset(&want, 0, sizeof want);
        assert_ok(t->kind->evaluate(t, p, &rng, &want, &err), &err);
        assert_memory_equal(&got.fitness, &want.fitness, sizeof got.fitness);
        assert_int_equal(got.n_figures, want.n_figures);
        assert_memory_equal(got.figures, want.figures, got.n_figures * sizeof got.figures[0]);
        evaluate_on(t, p, seed, &stream0);
        differ |= figure(&got, "x0") != figure(&stream0, "x0");
    }
    assert_true(differ);
    nn_plan_free(p);
    genome_release(&g);
    task_close(t);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_task_cart1_step_from_rest_by_hand),
        cmocka_unit_test(test_task_cart1_step_general_state),
        cmocka_unit_test(test_task_cart1_failed_bounds_are_strict),
        cmocka_unit_test(test_task_cart2_derivs_standard_start),
        cmocka_unit_test(test_task_cart2_rk4_and_steps),
        cmocka_unit_test(test_task_cart2_failed_bounds_are_strict),
        cmocka_unit_test(test_task_pole1_run_constant_output_fails_at_known_step),
        cmocka_unit_test(test_task_pole1_run_lqr_network_balances),
        cmocka_unit_test(test_task_pole1_start_ranges_and_grid),
        cmocka_unit_test(test_task_pole1_evaluate_uses_the_rng_start),
        cmocka_unit_test(test_task_dpv_constant_output_fails_at_known_step),
        cmocka_unit_test(test_task_dpv_lqr_network_solves),
        cmocka_unit_test(test_task_pole2_run_jiggle_of_last_100_steps),
        cmocka_unit_test(test_task_dpnv_fitness_formula),
        cmocka_unit_test(test_task_dpnv_grid_start_order_and_values),
        cmocka_unit_test(test_task_dpnv_evaluate_constant_output),
        cmocka_unit_test(test_task_dpnv_evaluate_lqg_network),
        cmocka_unit_test(test_task_dpnv_champion_test_constant_fails_long_run),
        cmocka_unit_test(test_task_dpnv_champion_test_lqg_solves),
        cmocka_unit_test(test_task_spike_xor_hand_network_solves),
        cmocka_unit_test(test_task_spike_pole1_lqr_network_balances),
        cmocka_unit_test(test_task_spiking_tasks_refuse_rate_networks),
        cmocka_unit_test(test_task_find_every_name),
        cmocka_unit_test(test_task_pole_inputs_outputs_and_hooks),
        cmocka_unit_test(test_task_open_max_steps_key),
        cmocka_unit_test(test_task_open_other_abi_version_refused),
        cmocka_unit_test(test_task_open_refused_by_the_kind),
        cmocka_unit_test(test_task_evaluate_wrong_shape_refused),
        cmocka_unit_test(test_task_evaluate_seeds_the_evaluation_stream),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}

/* The independent calculation (see the top of the file).
#py-begin
import re, sys
from math import sin, cos
src = open(sys.argv[1] if len(sys.argv) > 1 else "tests/test_tasks.c").read()
def net(name):  # a network string of this file, as (neurons, conns)
    body = re.search(r"static const char %s\[\] =(.*?);" % name, src, re.S).group(1)
    text = "".join(re.findall(r'"((?:[^"\\]|\\.)*)"', body)).replace("\\n", "\n")
    ns, cs = {}, []
    for ln in text.splitlines():
        f = ln.split()
        if f and f[0] == "neuron": ns[int(f[1])] = (f[2], float(f[3]), f[4], float(f[5]))
        if f and f[0] == "conn": cs.append((int(f[1]), int(f[2]), float(f[3])))
    return ns, cs
class Net:  # docs/architecture.md semantics, identity activations only
    def __init__(s, name):
        s.ns, s.cs = net(name)
        s.ins = sorted(i for i in s.ns if s.ns[i][0] == "in")
        s.outs = sorted(i for i in s.ns if s.ns[i][0] == "out")
        s.order = sorted((i for i in s.ns if s.ns[i][0] != "in"), key=lambda i: (s.ns[i][1], i))
        s.prev = {i: 0.0 for i in s.ns}
    def step(s, x):
        y = dict(zip(s.ins, x))
        for j in s.order:
            v = s.ns[j][3]
            for a, b, w in s.cs:
                if b == j:
                    v += w * (y[a] if s.ns[a][1] < s.ns[j][1] else s.prev[a])
            y[j] = v
        s.prev = y
        return [y[o] for o in s.outs]
def cart1(s, F):  # docs/protocols.md single pole, Euler
    x, xd, th, thd = s
    g, mc, mp, l = 9.8, 1.0, 0.1, 0.5
    temp = (F + mp * l * thd * thd * sin(th)) / (mc + mp)
    tha = (g * sin(th) - cos(th) * temp) / (l * (4 / 3 - mp * cos(th) ** 2 / (mc + mp)))
    xa = temp - mp * l * tha * cos(th) / (mc + mp)
    return [x + 0.02 * xd, xd + 0.02 * xa, th + 0.02 * thd, thd + 0.02 * tha]
def fail1(s):
    return abs(s[0]) > 2.4 or abs(s[2]) > 0.2094384
def deriv2(s, F):  # docs/protocols.md double pole (Wieland)
    g, mu, m, l = -9.8, 0.000002, (0.1, 0.01), (0.5, 0.05)
    th, thd, Ft, mt, t = (s[2], s[4]), (s[3], s[5]), [], [], []
    for i in range(2):
        t.append(mu * thd[i] / (l[i] * m[i]))
        Ft.append(l[i] * m[i] * thd[i] ** 2 * sin(th[i])
                  + 0.75 * m[i] * cos(th[i]) * (t[i] + g * sin(th[i])))
        mt.append(m[i] * (1 - 0.75 * cos(th[i]) ** 2))
    xa = (F + Ft[0] + Ft[1]) / (1.0 + mt[0] + mt[1])
    a = [-0.75 * (xa * cos(th[i]) + g * sin(th[i]) + t[i]) / l[i] for i in range(2)]
    return [s[1], xa, s[3], a[0], s[5], a[1]]
def rk4(s, F, h):
    k1 = deriv2(s, F)
    k2 = deriv2([s[i] + h / 2 * k1[i] for i in range(6)], F)
    k3 = deriv2([s[i] + h / 2 * k2[i] for i in range(6)], F)
    k4 = deriv2([s[i] + h * k3[i] for i in range(6)], F)
    return [s[i] + h / 6 * (k1[i] + 2 * k2[i] + 2 * k3[i] + k4[i]) for i in range(6)]
def step2(s, F):
    return rk4(rk4(s, F, 0.01), F, 0.01)
def fail2(s):
    return abs(s[0]) > 2.4 or abs(s[2]) > 0.628329 or abs(s[4]) > 0.628329
def pole1(policy, s, n):  # steps balanced
    t = 0
    while t < n:
        s = cart1(s, policy(s))
        if fail1(s): break
        t += 1
    return t
def pole2(policy, s, n):  # steps balanced, jiggle of the last 100
    t, jig = 0, []
    while t < n:
        s = step2(s, policy(s))
        if fail2(s): break
        t += 1
        jig.append(abs(s[0]) + abs(s[1]) + abs(s[2]) + abs(s[3]))
    return t, (sum(jig[-100:]) if t >= 100 else 0.0)
def netpolicy(name, inputs, bang):
    n = Net(name)
    def p(s):
        out = n.step(inputs(s))[0]
        return (10.0 if out > 0.5 else -10.0) if bang else 20 * (out - 0.5)
    return p
pr = lambda *a: print(*["%.17g" % v if isinstance(v, float) else v for v in a])
pr("cart1 general", *cart1([0.1, -0.2, 0.05, 0.3], -10.0))
const = lambda F: (lambda s: F)
pr("pole1 rest +10", pole1(const(10.0), [0.0] * 4, 100000))
pr("pole1 theta 0.1 +10", pole1(const(10.0), [0, 0, 0.1, 0], 100000))
pr("pole1 theta 0.1 -10", pole1(const(-10.0), [0, 0, 0.1, 0], 100000))
in1 = lambda s: [1.0, (s[0] + 2.4) / 4.8, (s[1] + 0.75) / 1.5, (s[2] + 0.2094384) / 0.41,
                 (s[3] + 1) / 2]
pr("pole1 lqr", pole1(netpolicy("LQR_POLE1", in1, True), [0.5, 0.05, 0.05, 0.05], 100000))
st = [0, 0, 0.07, 0, 0, 0]
pr("derivs F=0", *deriv2(st, 0.0))
pr("rk4 F=0", *rk4(st, 0.0, 0.01))
for F in (0.0, 5.0):
    s1 = step2(st, F)
    pr("step F=%g" % F, *s1)
    pr("step2 F=%g" % F, *step2(s1, F))
pr("step general F=-3", *step2([0.1, -0.2, 0.05, 0.3, -0.02, 0.4], -3.0))
for out in (0.75, 0.5):
    pr("dp const %g" % out, *pole2(const(20 * (out - 0.5)), st, 100000))
inv = lambda s: [s[0] / 4.8, s[1] / 2, s[2] / 0.52, s[3] / 2, s[4] / 0.52, s[5] / 2, 0.5]
pr("dpv lqr 300", *pole2(netpolicy("LQR_DPV", inv, False), st, 300))
pr("dpv lqr", pole2(netpolicy("LQR_DPV", inv, False), st, 100000)[0])
innv = lambda s: [s[0] / 4.8, s[2] / 0.52, s[4] / 0.52, 0.5]
pr("dpnv lqg 300", *pole2(netpolicy("LQG_DPNV", innv, False), st, 300))
t, j = pole2(netpolicy("LQG_DPNV", innv, False), st, 1000)
pr("dpnv lqg", t, j, 0.1 * t / 1000 + 0.9 * 0.75 / j)
if "--slow" in sys.argv:  # the generalization grid, a few minutes
    v, count, near = [0.05, 0.25, 0.5, 0.75, 0.95], 0, []
    for i in range(625):
        s = [v[i // 125 % 5] * 4.32 - 2.16, v[i // 25 % 5] * 2.70 - 1.35,
             v[i // 5 % 5] * 0.12566304 - 0.06283152, v[i % 5] * 0.30019504 - 0.15009752, 0, 0]
        t = pole2(netpolicy("LQG_DPNV", innv, False), s, 1000)[0]
        count += t >= 1000
        near += [(i, t)] if 900 <= t < 1000 else []
    pr("dpnv lqg generalization", count, "ended in 900..999:", near)
#py-end
*/
