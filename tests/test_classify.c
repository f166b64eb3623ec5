/* test_classify.c -- the classify task (experiments/classify.c) on small data
 * sets written here and hand-made networks whose outputs are worked out by
 * hand: the shape, accuracy and xent, the scales, the samples of a
 * generation, the champion and final tests, and every refusal with its
 * message. */
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
#include "task.h"
#include "testutil.h"

/* Writes text to the test directory's file name; returns its path (one of 8 static buffers). */
static const char *file(const char *name, const char *text)
{
    static char paths[8][256];
    static int next;
    char *p = paths[next++ % 8];
    snprintf(p, sizeof paths[0], "%s/%s", tu_tmpdir(), name);
    FILE *f = fopen(p, "w");
    assert_non_null(f);
    fputs(text, f);
    assert_int_equal(fclose(f), 0);
    return p;
}

/* [task] values: the defaults, then name=value pairs (NULL-terminated). */
static struct task_params params_of(const struct task_kind *k, ...)
{
    struct task_params p;
    task_params_defaults(k, &p);
    va_list ap;
    va_start(ap, k);
    for (const char *name; (name = va_arg(ap, const char *));) {
        int i = task_key_find(k, name);
        assert_true(i >= 0);
        const char *value = va_arg(ap, const char *);
        if (k->keys[i].type == TASK_KEY_STRING)
            snprintf(p.v[i].s, sizeof p.v[i].s, "%s", value);
        else if (k->keys[i].type == TASK_KEY_DOUBLE)
            p.v[i].d = atof(value);
        else if (k->keys[i].type == TASK_KEY_CHOICE)
            for (int c = 0; k->keys[i].choices[c]; c++)
                p.v[i].i = strcmp(k->keys[i].choices[c], value) ? p.v[i].i : c;
        else
            p.v[i].i = atoll(value);
    }
    va_end(ap);
    return p;
}

#define OPEN(t, ...) open_classify(t, params_of(task_find("classify"), __VA_ARGS__, NULL))

static void open_classify(struct task_instance **t, struct task_params p)
{
    struct tv_error err = {0};
    assert_ok(task_open(task_find("classify"), &p, t, &err), &err);
}

static int open_fails(struct tv_error *err, struct task_params p)
{
    struct task_instance *t = (struct task_instance *)1;
    int rc = task_open(task_find("classify"), &p, &t, err);
    if (t)
        fail_msg("opened: %s", err->msg);
    return rc;
}
#define REFUSED(err, ...) open_fails(err, params_of(task_find("classify"), __VA_ARGS__, NULL))

/* One input x, two identity outputs: class 0 gets b0, class 1 gets x + b1. */
static void net_x(struct genome *g, double b0, double b1)
{
    char text[256];
    snprintf(text, sizeof text,
             "trevo-net 1\ninputs 1\noutputs 2\nneuron 0 in 0 identity 0\n"
             "neuron 10 out 1 identity %.17g\nneuron 11 out 1 identity %.17g\nconn 0 11 1\n",
             b0, b1);
    struct tv_error err = {0};
    genome_init(g);
    assert_ok(genome_read_text(g, text, strlen(text), "net", NULL, &err), &err);
}

static double figure(const struct task_result *r, const char *name)
{
    for (size_t i = 0; i < r->n_figures; i++)
        if (!strcmp(r->figure_names[i], name))
            return r->figures[i];
    fail_msg("no figure %s", name);
    return 0;
}

/* log(1 + e^-d): the cross-entropy of outputs whose right one leads by d. */
static double ce(double d)
{
    return log1p(exp(-d));
}

static void test_classify_open_shape_from_the_data(void **state)
{
    (void)state;
    const char *csv = file("shape.csv", "a,b,c,y\n1,2,3,0\n4,5,6,4\n7,8,9,2\n");
    struct task_instance *t;
    OPEN(&t, "train", csv, "validation", "0");
    assert_int_equal(t->n_inputs, 3);
    assert_int_equal(t->n_outputs, 5);
    assert_int_equal(t->out_act, GENOME_ACT_IDENTITY);
    assert_true(t->max_fitness == 1.0);
    task_close(t);
    OPEN(&t, "train", csv, "fitness", "xent");
    assert_true(t->max_fitness == 0.0);
    task_close(t);
}

/* x > 0 is class 1: the network x vs 0 is always right; its xent is the
 * mean of log(1 + e^-|x|). */
static void test_classify_evaluate_accuracy_and_xent(void **state)
{
    (void)state;
    const char *csv = file("sign.csv", "-1,0\n2,1\n-3,0\n0.5,1\n");
    struct genome g;
    net_x(&g, 0, 0);
    struct tv_error err = {0};
    struct task_result r;
    struct task_instance *t;
    OPEN(&t, "train", csv, "validation", "0");
    assert_ok(task_evaluate(t, &g, 1, &r, &err), &err);
    assert_true(r.fitness == 1.0);
    double want = (ce(1) + ce(2) + ce(3) + ce(0.5)) / 4;
    assert_true(fabs(figure(&r, "xent") - want) < 1e-6);
    task_close(t);
    OPEN(&t, "train", csv, "validation", "0", "fitness", "xent");
    assert_ok(task_evaluate(t, &g, 1, &r, &err), &err);
    assert_true(fabs(r.fitness + want) < 1e-6);
    assert_true(figure(&r, "accuracy") == 1.0);
    task_close(t);
    /* class 1 leads by 2.5 everywhere: right on the two rows of class 1 */
    genome_release(&g);
    net_x(&g, -10, 0);
    OPEN(&t, "train", csv, "validation", "0");
    assert_ok(task_evaluate(t, &g, 1, &r, &err), &err);
    assert_true(r.fitness == 0.5);
    task_close(t);
    genome_release(&g);
}

/* minmax maps the training split's [0, 10] onto [0, 1], zscore its mean 5
 * and deviation 5 onto -1, 1: the network x - 0.5 vs 0 then leads by 0.5
 * (minmax) or x vs 0 by 1 (zscore) on both rows. A test file's values (1000)
 * change nothing. */
static void test_classify_scale_from_the_training_split(void **state)
{
    (void)state;
    const char *csv = file("scale.csv", "0,0\n10,1\n");
    const char *test = file("scale_test.csv", "1000,1\n-1000,0\n");
    struct tv_error err = {0};
    struct task_result r;
    struct task_instance *t;
    struct genome g;
    net_x(&g, 0, -0.5);
    OPEN(&t, "train", csv, "validation", "0", "scale", "minmax", "test", test);
    assert_ok(task_evaluate(t, &g, 1, &r, &err), &err);
    assert_true(fabs(figure(&r, "xent") - ce(0.5)) < 1e-6);
    task_close(t);
    OPEN(&t, "train", csv, "validation", "0", "scale", "none");
    assert_ok(task_evaluate(t, &g, 1, &r, &err), &err);
    assert_true(fabs(figure(&r, "xent") - (ce(0.5) + ce(9.5)) / 2) < 1e-6);
    task_close(t);
    genome_release(&g);
    net_x(&g, 0, 0);
    OPEN(&t, "train", csv, "validation", "0", "scale", "zscore");
    assert_ok(task_evaluate(t, &g, 1, &r, &err), &err);
    assert_true(fabs(figure(&r, "xent") - ce(1)) < 1e-6);
    task_close(t);
    genome_release(&g);
}

/* The network that always says class 0 scores the share of class 0 among
 * the rows it sees: the same rows for every child (seed) of a generation,
 * other rows in other generations, all of them over an epoch. */
static void test_classify_samples_per_generation(void **state)
{
    (void)state;
    char text[2048] = "";
    for (int i = 0; i < 40; i++)
        snprintf(text + strlen(text), sizeof text - strlen(text), "%d,%d\n", i, i % 3 == 0);
    const char *csv = file("gen.csv", text);
    struct genome g;
    net_x(&g, 1000, 0); /* class 0 always */
    struct tv_error err = {0};
    struct task_instance *t;
    OPEN(&t, "train", csv, "validation", "0", "samples", "4");
    double first[10], sum = 0;
    int differ = 0;
    for (int64_t gen = 0; gen < 10; gen++) {
        struct task_result a, b;
        assert_ok(task_evaluate_generation(t, &g, 1, gen, &a, &err), &err);
        assert_ok(task_evaluate_generation(t, &g, 99, gen, &b, &err), &err);
        assert_true(a.fitness == b.fitness);
        first[gen] = a.fitness;
        differ |= a.fitness != first[0];
        sum += a.fitness;
    }
    assert_true(differ);
    /* 10 generations of 4 rows: the 40 rows once, 26 of class 0 */
    assert_true(fabs(sum / 10 - 26.0 / 40) < 1e-12);
    struct task_result r;
    assert_ok(task_evaluate_generation(t, &g, 1, 10, &r, &err), &err);
    assert_true(r.fitness == first[0]); /* the next epoch: the same order */
    task_close(t);
    genome_release(&g);
}

/* The champion test scores the validation rows (none of the training
 * split's), the final test the test file. */
static void test_classify_champion_and_final_tests(void **state)
{
    (void)state;
    char text[2048] = "";
    for (int i = 0; i < 20; i++)
        snprintf(text + strlen(text), sizeof text - strlen(text), "%d,%d\n", i - 10, i >= 10);
    const char *csv = file("ct.csv", text);
    const char *test = file("ct_test.csv", "5,1\n-5,1\n-6,1\n7,0\n");
    struct genome g;
    net_x(&g, 0, 0.5); /* x >= 0 is class 1: right on every training row */
    struct tv_error err = {0};
    struct task_instance *t;
    struct task_result r;
    OPEN(&t, "train", csv, "validation", "0.25", "samples", "1000", "test", test);
    assert_ok(task_champion_test(t, &g, &r, &err), &err);
    assert_true(r.fitness == 1.0);
    assert_false(r.solved);
    assert_ok(task_final_test(t, &g, &r, &err), &err);
    assert_true(r.fitness == 0.25);
    assert_true(figure(&r, "accuracy") == 0.25);
    task_close(t);
    /* no test file: no final test */
    OPEN(&t, "train", csv);
    assert_ok(task_final_test(t, &g, &r, &err), &err);
    assert_int_equal(r.n_figures, 0);
    task_close(t);
    genome_release(&g);
}

static void test_classify_open_refusals(void **state)
{
    (void)state;
    struct tv_error err = {0};
    char want[512];
    const char *ok = file("ok.csv", "1,0\n2,1\n3,1\n");
    const char *bad = file("bad.csv", "1,0\n2,x\n");
    const char *one = file("one.csv", "1,0\n2,0\n");
    const char *wide = file("wide.csv", "1,2,0\n");
    const char *range = file("range.csv", "1,0\n1,2\n");
    assert_error(REFUSED(&err, "validation", "0"), &err, TV_EINVAL,
                 "task classify: [task] train: required");
    snprintf(want, sizeof want, "task classify: [task] train: %s:2: column 2: 'x' is not a number",
             bad);
    assert_error(REFUSED(&err, "train", bad), &err, TV_EINVAL, want);
    snprintf(want, sizeof want, "[task] train: %s: every label is 0", one);
    assert_error(REFUSED(&err, "train", one), &err, TV_EINVAL, want);
    snprintf(want, sizeof want, "[task] test: %s has 2 features, train %s 1", wide, ok);
    assert_error(REFUSED(&err, "train", ok, "test", wide), &err, TV_EINVAL, want);
    snprintf(want, sizeof want, "[task] test: %s:2: label 2 out of range (a class number 0..1)",
             range);
    assert_error(REFUSED(&err, "train", ok, "test", range), &err, TV_EINVAL, want);
    assert_error(REFUSED(&err, "train", ok, "validation", "0.9"), &err, TV_EINVAL,
                 "[task] validation: 0.9 of 3 rows leaves none to train on");
    snprintf(want, sizeof want, "[task] train: %s/none.csv: No such file", tu_tmpdir());
    char missing[300];
    snprintf(missing, sizeof missing, "%s/none.csv", tu_tmpdir());
    assert_error(REFUSED(&err, "train", missing), &err, TV_EIO, want);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_classify_open_shape_from_the_data),
        cmocka_unit_test(test_classify_evaluate_accuracy_and_xent),
        cmocka_unit_test(test_classify_scale_from_the_training_split),
        cmocka_unit_test(test_classify_samples_per_generation),
        cmocka_unit_test(test_classify_champion_and_final_tests),
        cmocka_unit_test(test_classify_open_refusals),
    };
    return cmocka_run_group_tests(tests, tu_tmpdir_setup, tu_tmpdir_teardown);
}
