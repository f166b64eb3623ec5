/* test_classify.c -- the classify task (tasks/classify.c) on small data
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
    struct genome *g = *state;
    const char *csv = file("sign.csv", "-1,0\n2,1\n-3,0\n0.5,1\n");
    net_x(g, 0, 0);
    struct tv_error err = {0};
    struct task_result r;
    struct task_instance *t;
    OPEN(&t, "train", csv, "validation", "0");
    assert_ok(task_evaluate(t, g, 1, &r, &err), &err);
    assert_true(r.fitness == 1.0);
    double want = (ce(1) + ce(2) + ce(3) + ce(0.5)) / 4;
    assert_true(fabs(figure(&r, "xent") - want) < 1e-6);
    task_close(t);
    OPEN(&t, "train", csv, "validation", "0", "fitness", "xent");
    assert_ok(task_evaluate(t, g, 1, &r, &err), &err);
    assert_true(fabs(r.fitness + want) < 1e-6);
    assert_true(figure(&r, "accuracy") == 1.0);
    task_close(t);
    /* class 1 leads by 2.5 everywhere: right on the two rows of class 1 */
    genome_release(g);
    net_x(g, -10, 0);
    OPEN(&t, "train", csv, "validation", "0");
    assert_ok(task_evaluate(t, g, 1, &r, &err), &err);
    assert_true(r.fitness == 0.5);
    task_close(t);
}

/* minmax maps the training split's [0, 10] onto [0, 1], zscore its mean 5
 * and deviation 5 onto -1, 1: the network x - 0.5 vs 0 then leads by 0.5
 * (minmax) or x vs 0 by 1 (zscore) on both rows. A test file's values (1000)
 * change nothing. */
static void test_classify_scale_from_the_training_split(void **state)
{
    struct genome *g = *state;
    const char *csv = file("scale.csv", "0,0\n10,1\n");
    const char *test = file("scale_test.csv", "1000,1\n-1000,0\n");
    struct tv_error err = {0};
    struct task_result r;
    struct task_instance *t;
    net_x(g, 0, -0.5);
    OPEN(&t, "train", csv, "validation", "0", "scale", "minmax", "test", test);
    assert_ok(task_evaluate(t, g, 1, &r, &err), &err);
    assert_true(fabs(figure(&r, "xent") - ce(0.5)) < 1e-6);
    task_close(t);
    OPEN(&t, "train", csv, "validation", "0", "scale", "none");
    assert_ok(task_evaluate(t, g, 1, &r, &err), &err);
    assert_true(fabs(figure(&r, "xent") - (ce(0.5) + ce(9.5)) / 2) < 1e-6);
    task_close(t);
    genome_release(g);
    net_x(g, 0, 0);
    OPEN(&t, "train", csv, "validation", "0", "scale", "zscore");
    assert_ok(task_evaluate(t, g, 1, &r, &err), &err);
    assert_true(fabs(figure(&r, "xent") - ce(1)) < 1e-6);
    task_close(t);
}

/* The network that always says class 0 scores the share of class 0 among
 * the rows it sees: the same rows for every child (seed) of a generation,
 * other rows in other generations, all of them over an epoch. */
static void test_classify_samples_per_generation(void **state)
{
    struct genome *g = *state;
    net_x(g, 1000, 0); /* class 0 always */
    char text[2048] = "";
    for (int i = 0; i < 40; i++)
        snprintf(text + strlen(text), sizeof text - strlen(text), "%d,%d\n", i, i % 3 == 0);
    const char *csv = file("gen.csv", text);
    struct tv_error err = {0};
    struct task_instance *t;
    OPEN(&t, "train", csv, "validation", "0", "samples", "4");
    double first[10], sum = 0;
    int differ = 0;
    for (int64_t gen = 0; gen < 10; gen++) {
        struct task_result a, b;
        assert_ok(task_evaluate_generation(t, g, 1, gen, &a, &err), &err);
        assert_ok(task_evaluate_generation(t, g, 99, gen, &b, &err), &err);
        assert_true(a.fitness == b.fitness);
        first[gen] = a.fitness;
        differ |= a.fitness != first[0];
        sum += a.fitness;
    }
    assert_true(differ);
    /* 10 generations of 4 rows: the 40 rows once, 26 of class 0 */
    assert_true(fabs(sum / 10 - 26.0 / 40) < 1e-12);
    struct task_result r;
    assert_ok(task_evaluate_generation(t, g, 1, 10, &r, &err), &err);
    assert_true(r.fitness == first[0]); /* the next epoch: the same order */
    task_close(t);
}

/* The champion test scores the validation rows (none of the training
 * split's), the final test the test file. */
static void test_classify_champion_and_final_tests(void **state)
{
    struct genome *g = *state;
    char text[2048] = "";
    for (int i = 0; i < 20; i++)
        snprintf(text + strlen(text), sizeof text - strlen(text), "%d,%d\n", i - 10, i >= 10);
    const char *csv = file("ct.csv", text);
    const char *test = file("ct_test.csv", "5,1\n-5,1\n-6,1\n7,0\n");
    net_x(g, 0, 0.5); /* x >= 0 is class 1: right on every training row */
    struct tv_error err = {0};
    struct task_instance *t;
    struct task_result r;
    OPEN(&t, "train", csv, "validation", "0.25", "samples", "1000", "test", test);
    assert_ok(task_champion_test(t, g, &r, &err), &err);
    assert_true(r.fitness == 1.0);
    assert_false(r.solved);
    assert_ok(task_final_test(t, g, &r, &err), &err);
    assert_true(r.fitness == 0.25);
    assert_true(figure(&r, "accuracy") == 0.25);
    task_close(t);
    /* no test file: no final test */
    OPEN(&t, "train", csv);
    assert_ok(task_final_test(t, g, &r, &err), &err);
    assert_int_equal(r.n_figures, 0);
    task_close(t);
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
    snprintf(want, sizeof want,
             "[task] test: %s:2: label 2 out of range (a class number 0..1: the classes of "
             "[task] train)",
             range);
    assert_error(REFUSED(&err, "train", ok, "test", range), &err, TV_EINVAL, want);
    assert_error(REFUSED(&err, "train", ok, "validation", "0.9"), &err, TV_EINVAL,
                 "[task] validation: 0.9 of 3 rows leaves none to train on");
    snprintf(want, sizeof want, "[task] train: %s/none.csv: No such file", tu_tmpdir());
    char missing[300];
    snprintf(missing, sizeof missing, "%s/none.csv", tu_tmpdir());
    assert_error(REFUSED(&err, "train", missing), &err, TV_EIO, want);
}

/* [task] test = 0.2: the last share of the permuted training file, disjoint
 * from the validation and training splits: the rows each scores add up to
 * the file's, and the same seed draws the same split. */
static void test_classify_test_share_disjoint_from_validation(void **state)
{
    struct genome *g = *state;
    char text[4096] = "";
    size_t right = 0;
    for (int i = 0; i < 50; i++) { /* the net is right on row i when the label is i >= 25 */
        int label = i % 3 ? i >= 25 : i < 25;
        right += label == (i >= 25);
        snprintf(text + strlen(text), sizeof text - strlen(text), "%d,%d\n", i - 25, label);
    }
    const char *csv = file("share.csv", text);
    net_x(g, 0, 0.5); /* class 1 for x >= 0 */
    struct tv_error err = {0};
    struct task_instance *t;
    struct task_result tr, ct, ft;
    OPEN(&t, "train", csv, "validation", "0.2", "test", "0.3", "samples", "1000");
    assert_ok(task_evaluate_generation(t, g, 1, 0, &tr, &err), &err); /* 25 training rows */
    assert_ok(task_champion_test(t, g, &ct, &err), &err);             /* 10 validation rows */
    assert_ok(task_final_test(t, g, &ft, &err), &err);                /* 15 test rows */
    double sum =
        25 * figure(&tr, "accuracy") + 10 * figure(&ct, "accuracy") + 15 * figure(&ft, "accuracy");
    assert_true(fabs(sum - (double)right) < 1e-9);
    task_close(t);
    struct task_result again;
    OPEN(&t, "train", csv, "validation", "0.2", "test", "0.3", "samples", "1000");
    assert_ok(task_final_test(t, g, &again, &err), &err);
    assert_true(again.fitness == ft.fitness);
    task_close(t);
    /* without the test share, the same validation size: no final test */
    OPEN(&t, "train", csv, "validation", "0.2");
    assert_ok(task_final_test(t, g, &again, &err), &err);
    assert_int_equal(again.n_figures, 0);
    task_close(t);
}

/* [task] holdout = 0.2: rows set aside from the training split's end,
 * which the champion test scores instead of the validation split: the
 * validation and test rows stay the same rows, and the training rows with
 * the hold-out's are the training rows without one. */
static void test_classify_holdout_from_the_training_split(void **state)
{
    struct genome *g = *state;
    char text[4096] = "";
    for (int i = 0; i < 50; i++) /* the net is right on row i when the label is i >= 25 */
        snprintf(text + strlen(text), sizeof text - strlen(text), "%d,%d\n", i - 25,
                 i % 3 ? i >= 25 : i < 25);
    const char *csv = file("hold.csv", text);
    net_x(g, 0, 0.5); /* class 1 for x >= 0 */
    struct tv_error err = {0};
    struct task_instance *t0, *t;
    struct task_result tr0, ct0, ft0, tr, ct, ft;
    OPEN(&t0, "train", csv, "validation", "0.2", "test", "0.3", "samples", "1000");
    OPEN(&t, "train", csv, "validation", "0.2", "test", "0.3", "samples", "1000", "holdout", "0.2");
    assert_ok(task_evaluate_generation(t0, g, 1, 0, &tr0, &err), &err); /* 25 training rows */
    assert_ok(task_champion_test(t0, g, &ct0, &err), &err);             /* 10 validation rows */
    assert_ok(task_final_test(t0, g, &ft0, &err), &err);                /* 15 test rows */
    assert_ok(task_evaluate_generation(t, g, 1, 0, &tr, &err), &err);   /* 15 training rows */
    assert_ok(task_champion_test(t, g, &ct, &err), &err);               /* 10 hold-out rows */
    assert_ok(task_final_test(t, g, &ft, &err), &err);
    assert_true(ft.fitness == ft0.fitness);
    double right0 = 25 * tr0.fitness, right = 15 * tr.fitness + 10 * ct.fitness;
    assert_true(fabs(right - right0) < 1e-9);
    assert_true(ct.fitness != ct0.fitness); /* (this seed's hold-out and validation differ) */
    task_close(t);
    task_close(t0);
    /* with training, the trained child is scored on the validation split
     * (not the hold-out) */
    OPEN(&t0, "train", csv, "validation", "0.2", "samples", "1000", "train_steps", "1", "lr", "0");
    OPEN(&t, "train", csv, "validation", "0.2", "samples", "1000", "train_steps", "1", "lr", "0",
         "holdout", "0.2");
    assert_ok(task_evaluate_generation(t0, g, 1, 0, &tr0, &err), &err);
    assert_ok(task_evaluate_generation(t, g, 1, 0, &tr, &err), &err);
    assert_ok(task_champion_test(t0, g, &ct0, &err), &err);
    assert_true(figure(&tr, "accuracy") == figure(&tr0, "accuracy"));
    assert_true(figure(&tr0, "accuracy") == ct0.fitness);
    task_close(t);
    task_close(t0);
    assert_error(REFUSED(&err, "train", csv, "holdout", "0.001"), &err, TV_EINVAL,
                 "task classify: [task] holdout: 0.001 of 50 rows is none");
    assert_error(REFUSED(&err, "train", csv, "validation", "0.5", "holdout", "0.5"), &err,
                 TV_EINVAL,
                 "[task] holdout: 0.5 with validation 0.5 and test 0 of 50 rows leaves none to "
                 "train on");
}

/* [task] subset = fresh: each generation's rows drawn anew from (seed,
 * generation), the same for every child of it, without repeats; all rows
 * (as window) when samples covers the split. */
static void test_classify_fresh_subset_per_generation(void **state)
{
    struct genome *g = *state;
    net_x(g, 1000, 0); /* class 0 always */
    char text[2048] = "";
    for (int i = 0; i < 40; i++) /* one row of class 1 */
        snprintf(text + strlen(text), sizeof text - strlen(text), "%d,%d\n", i, i == 17);
    const char *csv = file("fresh.csv", text);
    struct tv_error err = {0};
    struct task_instance *tf, *tw, *again;
    OPEN(&tf, "train", csv, "validation", "0", "samples", "20", "subset", "fresh");
    OPEN(&tw, "train", csv, "validation", "0", "samples", "20");
    OPEN(&again, "train", csv, "validation", "0", "samples", "20", "subset", "fresh");
    int seen_all = 0, seen_less = 0, differ = 0;
    for (int64_t gen = 0; gen < 60; gen++) {
        struct task_result a, b, w, r;
        assert_ok(task_evaluate_generation(tf, g, 1, gen, &a, &err), &err);
        assert_ok(task_evaluate_generation(tf, g, 99, gen, &b, &err), &err);
        assert_ok(task_evaluate_generation(again, g, 5, gen, &r, &err), &err);
        assert_ok(task_evaluate_generation(tw, g, 1, gen, &w, &err), &err);
        assert_true(a.fitness == b.fitness && a.fitness == r.fitness);
        /* 20 distinct rows of 40: the class-1 row in them once, or not */
        assert_true(a.fitness == 1.0 || a.fitness == 19.0 / 20);
        seen_all |= a.fitness == 1.0;
        seen_less |= a.fitness < 1.0;
        differ |= a.fitness != w.fitness;
    }
    assert_true(seen_all && seen_less && differ);
    task_close(tf);
    task_close(tw);
    task_close(again);
    /* samples covering the split: every row, as window */
    OPEN(&tf, "train", csv, "validation", "0", "samples", "40", "subset", "fresh");
    struct task_result a;
    assert_ok(task_evaluate_generation(tf, g, 1, 3, &a, &err), &err);
    assert_true(a.fitness == 39.0 / 40);
    task_close(tf);
}

/* [task] header, classes, test as a share: what they take and refuse. */
static void test_classify_header_classes_and_share_keys(void **state)
{
    (void)state;
    struct tv_error err = {0};
    char want[512];
    const char *sk = file("sk.csv", "4,1,malignant,benign\n1,0\n2,1\n3,1\n4,0\n");
    const char *two = file("two.csv", "1,0\n2,1\n3,2\n");
    struct task_instance *t;
    OPEN(&t, "train", sk, "validation", "0");
    assert_int_equal(t->n_inputs, 1);
    assert_int_equal(t->n_outputs, 2);
    task_close(t);
    snprintf(want, sizeof want, "[task] train: %s:1: column 3: 'malignant' is not a number", sk);
    assert_error(REFUSED(&err, "train", sk, "header", "no"), &err, TV_EINVAL, want);
    OPEN(&t, "train", two, "validation", "0", "header", "yes"); /* its first row skipped */
    assert_int_equal(t->n_outputs, 3);
    task_close(t);
    OPEN(&t, "train", sk, "validation", "0", "classes", "5");
    assert_int_equal(t->n_outputs, 5);
    task_close(t);
    snprintf(want, sizeof want,
             "[task] train: %s:3: label 2 out of range (a class number 0..1: [task] classes = 2)",
             two);
    assert_error(REFUSED(&err, "train", two, "classes", "2"), &err, TV_EINVAL, want);
    assert_error(REFUSED(&err, "train", sk, "test", "1.5"), &err, TV_EINVAL,
                 "[task] test: 1.5: a share of train is in (0, 1) (a file named so: ./1.5)");
    assert_error(REFUSED(&err, "train", sk, "test", "0.2", "test_labels", "x.idx"), &err, TV_EINVAL,
                 "[task] test_labels: goes with a test file, and test is a share");
    assert_error(REFUSED(&err, "train", sk, "test", "0.1"), &err, TV_EINVAL,
                 "[task] test: 0.1 of 4 rows is none");
    assert_error(REFUSED(&err, "train", sk, "test", "0.5", "validation", "0.5"), &err, TV_EINVAL,
                 "[task] test: 0.5 and validation 0.5 of 4 rows leave none to train on");
}

/* ---- training inside evaluation, the connection cost ---------------------- */

/* 80 rows of 2 features in [0, 1), class x1 > x2, as a CSV file. */
static const char *two_class_csv(void)
{
    static char text[4096];
    text[0] = 0;
    struct tv_rng rng = tu_rng(4, 0, 0);
    for (int i = 0; i < 80; i++) {
        double a = tv_rng_uniform(&rng), b = tv_rng_uniform(&rng);
        snprintf(text + strlen(text), sizeof text - strlen(text), "%.4f,%.4f,%d\n", a, b, a > b);
    }
    return file("two.csv", text);
}

/* 2 inputs, 8 relu hidden, 2 identity outputs, every adjacent pair full (32
 * connections). */
static void net_hidden(struct genome *g)
{
    const uint32_t sizes[] = {2, 8, 2};
    tu_layered_full(g, sizes, 3, 3, 0.5);
}

/* Opens classify with training on two.csv: 30 adam steps of 8 rows, a
 * per-step pruning (zero:0.02), the whole validation split scored. */
#define OPEN_TRAINED(t, ...)                                                                       \
    OPEN(t, "train", two_class_csv(), "validation", "0.25", "samples", "1000", "train_steps",      \
         "30", "train_batch", "8", "optimizer", "adam", "lr", "0.05", "sparsity", "zero:0.02",     \
         __VA_ARGS__)

/* A copy of g0 evaluated by task_evaluate_genome with seed: *g the result. */
static void evaluate_copy(const struct task_instance *t, const struct genome *g0, uint64_t seed,
                          struct genome *g, struct task_result *r)
{
    struct tv_error err = {0};
    genome_init(g);
    assert_ok(genome_copy(g, g0, &err), &err);
    assert_ok(task_evaluate_genome(t, g, seed, 0, NULL, r, &err), &err);
}

/* lamarckian 1: the child becomes the trained network (other weights, fewer
 * connections after zero:0.02), which scores on the validation split what
 * its fitness says; the same seed gives the same bits, another seed other
 * ones; task_evaluate_generation (a const genome) trains a copy. */
static void test_classify_lamarckian_writes_back_the_trained_network(void **state)
{
    (void)state;
    struct tv_error err = {0};
    struct task_instance *t;
    OPEN_TRAINED(&t, "lamarckian", "1");
    struct genome g0, g, again, other;
    net_hidden(&g0);
    struct task_result r, r2, untrained;
    evaluate_copy(t, &g0, 7, &g, &r);
    assert_false(genome_equal(&g, &g0));
    assert_true(g.n_conns < g0.n_conns);
    assert_int_equal(g.n_neurons, g0.n_neurons);
    assert_true(figure(&r, "connections") == (double)g.n_conns);
    assert_ok(genome_validate(&g, NULL, &err), &err);
    /* the stored child scores what its fitness says, without training again */
    struct task_result ct;
    assert_ok(task_champion_test(t, &g, &ct, &err), &err);
    assert_true(ct.fitness == r.fitness);
    evaluate_copy(t, &g0, 7, &again, &r2);
    assert_true(genome_equal(&g, &again));
    assert_true(r2.fitness == r.fitness);
    genome_release(&again);
    evaluate_copy(t, &g0, 8, &other, &r2);
    assert_false(genome_equal(&g, &other));
    genome_release(&other);
    assert_ok(task_evaluate_generation(t, &g0, 7, 0, &r2, &err), &err);
    assert_true(r2.fitness == r.fitness);
    /* training helps: the untrained network scores less */
    assert_ok(task_champion_test(t, &g0, &untrained, &err), &err);
    assert_true(r.fitness > untrained.fitness);
    task_close(t);
    genome_release(&g);
    genome_release(&g0);
}

/* lamarckian 0 (Baldwinian): the genome keeps its bytes, the fitness is the
 * trained network's, the same as the Lamarckian child's with that seed. */
static void test_classify_baldwinian_keeps_the_genome(void **state)
{
    (void)state;
    struct task_instance *tl, *tb;
    OPEN_TRAINED(&tl, "lamarckian", "1");
    OPEN_TRAINED(&tb, "lamarckian", "0");
    struct genome g0, gl, gb;
    net_hidden(&g0);
    struct task_result rl, rb;
    evaluate_copy(tl, &g0, 11, &gl, &rl);
    evaluate_copy(tb, &g0, 11, &gb, &rb);
    assert_true(genome_equal(&gb, &g0));
    struct tv_buf a = {0}, b = {0};
    struct tv_error err = {0};
    assert_ok(genome_encode(&gb, &a, &err), &err);
    assert_ok(genome_encode(&g0, &b, &err), &err);
    assert_int_equal(a.len, b.len);
    assert_memory_equal(a.data, b.data, a.len);
    tv_buf_free(&a);
    tv_buf_free(&b);
    assert_true(rb.fitness == rl.fitness);
    assert_true(figure(&rb, "connections") == (double)gl.n_conns);
    task_close(tl);
    task_close(tb);
    genome_release(&g0);
    genome_release(&gl);
    genome_release(&gb);
}

/* A training that diverges (features of 1e30, sgd at lr 10) leaves the
 * genome as it was bred and scores 0, figure diverged 1. */
static void test_classify_diverged_training_scores_zero(void **state)
{
    (void)state;
    char text[1024] = "";
    for (int i = 0; i < 20; i++)
        snprintf(text + strlen(text), sizeof text - strlen(text), "%de30,%de30,%d\n", i % 5,
                 (i + 2) % 5, i % 5 > (i + 2) % 5);
    const char *csv = file("huge.csv", text);
    struct task_instance *t;
    OPEN(&t, "train", csv, "validation", "0.25", "train_steps", "5", "train_batch", "4", "lr",
         "10");
    struct genome g0, g;
    net_hidden(&g0);
    struct task_result r;
    evaluate_copy(t, &g0, 1, &g, &r);
    assert_true(genome_equal(&g, &g0));
    assert_true(r.fitness == 0);
    assert_true(figure(&r, "diverged") == 1);
    task_close(t);
    genome_release(&g);
    genome_release(&g0);
}

/* fitness = accuracy (or minus xent) - conn_cost * connections. */
static void test_classify_conn_cost(void **state)
{
    struct genome *g = *state;
    const char *csv = file("sign2.csv", "-1,0\n2,1\n-3,0\n0.5,1\n");
    net_x(g, 0, 0); /* right on every row, 1 connection */
    struct tv_error err = {0};
    struct task_result r;
    struct task_instance *t;
    OPEN(&t, "train", csv, "validation", "0", "conn_cost", "0.25");
    assert_ok(task_evaluate(t, g, 1, &r, &err), &err);
    assert_true(r.fitness == 1.0 - 0.25);
    assert_true(figure(&r, "connections") == 1);
    assert_true(figure(&r, "accuracy") == 1.0);
    task_close(t);
    OPEN(&t, "train", csv, "validation", "0", "conn_cost", "0.25", "fitness", "xent");
    assert_ok(task_evaluate(t, g, 1, &r, &err), &err);
    assert_true(r.fitness == -figure(&r, "xent") - 0.25);
    task_close(t);
    /* no cost: no connections figure, the fitness as before */
    OPEN(&t, "train", csv, "validation", "0");
    assert_ok(task_evaluate(t, g, 1, &r, &err), &err);
    assert_true(r.fitness == 1.0);
    assert_int_equal(r.n_figures, 2);
    task_close(t);
}

/* The hyper-parameter genes (genome.h) scale the task's training: a child
 * with lr_scale 2, steps_scale 0.5 and regrow_scale 2 under lr 0.05, 30
 * steps and set:0.1 is trained, bit for bit, as a child without genes under
 * lr 0.1, 15 steps and set:0.2, and keeps its genes; scales of 1 train as
 * no genes. */
static void test_classify_hyper_genes_scale_the_training(void **state)
{
    (void)state;
    struct tv_error err = {0};
    struct task_instance *ta, *tb;
    const char *csv = two_class_csv();
#define OPEN_SET(t, lr, steps, set)                                                                \
    OPEN(t, "train", csv, "validation", "0.25", "samples", "1000", "train_steps", steps,           \
         "train_batch", "8", "optimizer", "adam", "lr", lr, "sparsity", set)
    OPEN_SET(&ta, "0.05", "30", "set:0.1");
    OPEN_SET(&tb, "0.1", "15", "set:0.2");
#undef OPEN_SET
    struct genome g0, h0, ga, gb, gone;
    net_hidden(&g0);
    genome_init(&h0);
    assert_ok(genome_copy(&h0, &g0, &err), &err);
    const float scales[GENOME_N_HYPER] = {2.0f, 0.5f, 2.0f};
    genome_set_hyper(&h0, scales);
    struct task_result ra, rb, rone, rplain;
    evaluate_copy(ta, &h0, 5, &ga, &ra);
    evaluate_copy(tb, &g0, 5, &gb, &rb);
    assert_true(ga.has_hyper && !memcmp(ga.hyper, scales, sizeof scales));
    assert_true(ra.fitness == rb.fitness);
    genome_set_hyper(&ga, NULL);
    assert_true(genome_equal(&ga, &gb));
    genome_release(&ga);
    /* scales of 1 change nothing but the genome's genes */
    const float ones[GENOME_N_HYPER] = {1.0f, 1.0f, 1.0f};
    genome_set_hyper(&h0, ones);
    evaluate_copy(ta, &h0, 5, &gone, &rone);
    evaluate_copy(ta, &g0, 5, &ga, &rplain);
    assert_true(rone.fitness == rplain.fitness);
    genome_set_hyper(&gone, NULL);
    assert_true(genome_equal(&gone, &ga));
    assert_false(genome_equal(&ga, &gb)); /* (the scales of 2 did change the training) */
    task_close(ta);
    task_close(tb);
    genome_release(&g0);
    genome_release(&h0);
    genome_release(&ga);
    genome_release(&gb);
    genome_release(&gone);
}

static void test_classify_training_keys_refused(void **state)
{
    (void)state;
    struct tv_error err = {0};
    const char *ok = file("ok2.csv", "1,0\n2,1\n3,1\n4,0\n");
    assert_error(REFUSED(&err, "train", ok, "sparsity", "set:0.1 set:x"), &err, TV_EINVAL,
                 "task classify: [task] sparsity: set:x: ");
    assert_error(REFUSED(&err, "train", ok, "sparsity", "lock:2  lock:3"), &err, TV_EINVAL,
                 "task classify: [task] sparsity: ");
    assert_error(REFUSED(&err, "train", ok, "sparsity",
                         "l1:1 l1:1 l1:1 l1:1 l1:1 l1:1 l1:1 "
                         "l1:1 l1:1"),
                 &err, TV_EINVAL, "task classify: [task] sparsity: more than 8 policies");
    assert_error(REFUSED(&err, "train", ok, "validation", "0", "train_steps", "5"), &err, TV_EINVAL,
                 "task classify: [task] train_steps: a trained child is scored on the validation "
                 "split, and [task] validation leaves none");
    /* spaces around and between policies are fine */
    struct task_instance *t;
    OPEN(&t, "train", ok, "sparsity", " set:0.1,0   l1:1e-4 ");
    task_close(t);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_classify_open_shape_from_the_data),
        TU_GENOME_TEST(test_classify_evaluate_accuracy_and_xent),
        TU_GENOME_TEST(test_classify_scale_from_the_training_split),
        TU_GENOME_TEST(test_classify_samples_per_generation),
        TU_GENOME_TEST(test_classify_champion_and_final_tests),
        TU_GENOME_TEST(test_classify_test_share_disjoint_from_validation),
        TU_GENOME_TEST(test_classify_header_classes_and_share_keys),
        cmocka_unit_test(test_classify_open_refusals),
        cmocka_unit_test(test_classify_lamarckian_writes_back_the_trained_network),
        cmocka_unit_test(test_classify_baldwinian_keeps_the_genome),
        cmocka_unit_test(test_classify_diverged_training_scores_zero),
        TU_GENOME_TEST(test_classify_conn_cost),
        cmocka_unit_test(test_classify_training_keys_refused),
        cmocka_unit_test(test_classify_hyper_genes_scale_the_training),
        TU_GENOME_TEST(test_classify_holdout_from_the_training_split),
        TU_GENOME_TEST(test_classify_fresh_subset_per_generation),
    };
    return cmocka_run_group_tests(tests, tu_tmpdir_setup, tu_tmpdir_teardown);
}
