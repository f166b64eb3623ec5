/* test_fit.c -- the training loop of tasks/fit.h: the row order of an
 * epoch (file order, the Fisher-Yates shuffle written out again here), the
 * batches the steps see (consecutive, the last one short), one SGD step
 * computed by hand, the reports, determinism, the test pass on a network
 * whose outputs are its inputs, and the errors. Data sets are built in
 * memory (struct data_set with float features). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "cnn.h"
#include "failalloc.h"
#include "fit.h"
#include "testutil.h"
#include "trainutil.h"

/* A data set over caller-owned arrays (data_free is not called on it). */
static struct data_set dataset(const float *x, const uint16_t *labels, size_t rows, size_t features,
                               size_t classes)
{
    return (struct data_set){
        .n_rows = rows, .n_features = features, .n_classes = classes, .f32 = x, .labels = labels};
}

static void parse(struct genome *g, const char *text)
{
    struct tv_error err = {0};
    genome_init(g);
    assert_ok(genome_read_text(g, text, strlen(text), "test", NULL, &err), &err);
}

static struct nn_trainer *trainer(const struct genome *g, int optimizer, float lr, size_t max_batch)
{
    struct nn_train_opts o = tu_train_opts(optimizer, lr, max_batch);
    return tu_trainer(g, &o);
}

/* in 0 -> out 1 (w 0.5); out 2 unconnected. */
static const char ONE[] = "trevo-net 1\ninputs 1\noutputs 2\n"
                          "neuron 0 in 0 identity 0\nneuron 1 out 1 identity 0\n"
                          "neuron 2 out 1 identity 0\nconn 0 1 0.5\n";

/* Outputs equal the inputs: class = the larger input. */
static const char IDENT[] = "trevo-net 1\ninputs 2\noutputs 2\n"
                            "neuron 0 in 0 identity 0\nneuron 1 in 0 identity 0\n"
                            "neuron 2 out 1 identity 0\nneuron 3 out 1 identity 0\n"
                            "conn 0 2 1\nconn 1 3 1\n";

/* 3 inputs, 4 relu hidden, 3 outputs, every layer pair full. */
static void small_net(struct genome *g)
{
    const uint32_t sizes[] = {3, 4, 3};
    tu_layered_full(g, sizes, 3, 7, 0.5);
}

/* 23 rows of 3 features, class = argmax. */
#define ROWS 23
static float k_x[ROWS * 3];
static uint16_t k_y[ROWS];
static void make_rows(void)
{
    struct tv_rng rng = tu_rng(3, 0, 0);
    for (size_t r = 0; r < ROWS; r++) {
        size_t best = 0;
        for (size_t k = 0; k < 3; k++) {
            k_x[r * 3 + k] = (float)tv_rng_uniform(&rng);
            best = k_x[r * 3 + k] > k_x[r * 3 + best] ? k : best;
        }
        k_y[r] = (uint16_t)best;
    }
}

/* small_net, an SGD trainer (lr 0.1) for batches of up to `batch`, the 23
 * rows, options of that batch and `epochs` epochs. */
struct fixture {
    struct genome g;
    struct nn_trainer *t;
    struct data_set d;
    struct fit_opts o;
    struct nn_sparsity policy; /* o's one policy, when fixture_policy set it */
    struct tv_error err;
};

static void fixture_init(struct fixture *f, size_t batch, size_t epochs)
{
    memset(f, 0, sizeof *f);
    make_rows();
    small_net(&f->g);
    f->t = trainer(&f->g, NN_OPT_SGD, 0.1f, batch);
    f->d = dataset(k_x, k_y, ROWS, 3, 3);
    fit_opts_default(&f->o);
    f->o.batch = batch;
    f->o.epochs = epochs;
}

static void fixture_release(struct fixture *f)
{
    nn_trainer_free(f->t);
    genome_release(&f->g);
}

/* Training with one sparsity policy, spec. */
static void fixture_policy(struct fixture *f, const char *spec)
{
    assert_ok(nn_sparsity_parse(spec, &f->policy, &f->err), &f->err);
    f->o.policies = &f->policy;
    f->o.n_policies = 1;
}

/* ---- fit_order ------------------------------------------------------------- */

static void test_fit_order_no_shuffle_is_file_order(void **state)
{
    (void)state;
    uint32_t perm[10];
    fit_order(perm, 10, 5, 0, 3);
    for (size_t i = 0; i < 10; i++)
        assert_int_equal(perm[i], i);
}

static void test_fit_order_shuffle_is_the_fisher_yates_of_seed_and_epoch(void **state)
{
    (void)state;
    enum { N = 50 };
    uint32_t perm[N], want[N], other[N];
    for (size_t epoch = 1; epoch <= 3; epoch++) {
        fit_order(perm, N, 42, 1, epoch);
        struct tv_rng rng = tu_rng(42, FIT_SHUFFLE, epoch);
        for (size_t i = 0; i < N; i++)
            want[i] = (uint32_t)i;
        tu_fisher_yates(&rng, want, N);
        assert_memory_equal(perm, want, sizeof perm);
    }
    fit_order(perm, N, 42, 1, 1);
    fit_order(other, N, 42, 1, 2);
    assert_memory_not_equal(perm, other, sizeof perm);
    fit_order(other, N, 43, 1, 1);
    assert_memory_not_equal(perm, other, sizeof perm);
}

/* ---- fit_run --------------------------------------------------------------- */

struct seen {
    size_t reports, epochs, rows[16];
    struct fit_report last;
    int stop_at; /* stop at this report (1-based), 0 never */
};

static int record(void *ctx, const struct fit_report *r)
{
    struct seen *s = ctx;
    if (!r->done && r->step <= 16)
        s->rows[r->step - 1] = r->rows;
    s->epochs += r->done;
    s->last = *r;
    return ++s->reports == (size_t)s->stop_at;
}

static void test_fit_run_no_shuffle_consecutive_batches_last_short(void **state)
{
    (void)state;
    struct fixture f;
    fixture_init(&f, 8, 2);
    f.o.shuffle = 0;
    struct seen s = {0};
    assert_ok(fit_run(f.t, &f.d, NULL, &f.o, record, &s, &f.err), &f.err);
    /* 23 rows in batches of 8: 3 steps (8, 8, 7); reports after steps 1, 2, then the epoch */
    assert_int_equal(s.reports, 6);
    assert_int_equal(s.epochs, 2);
    assert_int_equal(s.rows[0], 8);
    assert_int_equal(s.rows[1], 16);
    assert_int_equal(s.last.step, 3);
    assert_int_equal(s.last.n_steps, 3);
    assert_int_equal(s.last.rows, ROWS);
    assert_int_equal(nn_trainer_steps(f.t), 6);
    assert_true(isnan(s.last.test_acc));

    /* the same steps by hand: consecutive rows, file order, 7 in the last */
    struct nn_trainer *u = trainer(&f.g, NN_OPT_SGD, 0.1f, 8);
    for (int e = 0; e < 2; e++)
        for (size_t r0 = 0; r0 < ROWS; r0 += 8) {
            size_t n = ROWS - r0 < 8 ? ROWS - r0 : 8;
            uint32_t lab[8];
            for (size_t k = 0; k < n; k++)
                lab[k] = k_y[r0 + k];
            double loss;
            assert_ok(nn_trainer_step(u, k_x + r0 * 3, lab, NULL, 1, n, &loss, &f.err), &f.err);
        }
    struct genome a, b;
    genome_init(&a);
    genome_init(&b);
    assert_ok(nn_trainer_write_genome(f.t, &a, &f.err), &f.err);
    assert_ok(nn_trainer_write_genome(u, &b, &f.err), &f.err);
    assert_true(genome_equal(&a, &b));
    genome_release(&a);
    genome_release(&b);
    nn_trainer_free(u);
    fixture_release(&f);
}

static void test_fit_run_one_sgd_step_by_hand(void **state)
{
    (void)state;
    struct genome g;
    parse(&g, ONE);
    struct nn_trainer *t = trainer(&g, NN_OPT_SGD, 1.0f, 1);
    const float x[] = {1};
    const uint16_t y[] = {0};
    struct data_set d = dataset(x, y, 1, 1, 1);
    struct fit_opts o;
    fit_opts_default(&o);
    o.batch = 1;
    struct seen s = {0};
    struct tv_error err = {0};
    assert_ok(fit_run(t, &d, &d, &o, record, &s, &err), &err);
    /* z = (0.5, 0): L = log(1 + e^-0.5), 1 - p0 = 1 / (1 + e^0.5) */
    double d0 = 1 / (1 + exp(0.5));
    assert_float_equal(s.last.loss, log(1 + exp(-0.5)), 1e-6);
    assert_float_equal(s.last.train_acc, 1.0, 0);
    assert_int_equal(s.last.conns, 1);
    assert_true(s.last.done);
    struct genome out;
    genome_init(&out);
    assert_ok(nn_trainer_write_genome(t, &out, &err), &err);
    assert_int_equal(out.n_conns, 1);
    assert_float_equal(out.conns[0].weight, 0.5 + d0, 1e-6);
    assert_float_equal(out.neurons[1].bias, d0, 1e-6);
    assert_float_equal(out.neurons[2].bias, -d0, 1e-6);
    /* the test pass after the step: z = (0.5 + 2 d0, -d0) */
    double z0 = 0.5 + 2 * d0, z1 = -d0;
    assert_float_equal(s.last.test_loss, log(exp(z0) + exp(z1)) - z0, 1e-5);
    assert_float_equal(s.last.test_acc, 1.0, 0);
    genome_release(&out);
    nn_trainer_free(t);
    genome_release(&g);
}

static void train_bytes(const struct genome *g, uint64_t seed, struct genome *out)
{
    struct nn_trainer *t = trainer(g, NN_OPT_ADAM, 0.05f, 4);
    struct data_set d = dataset(k_x, k_y, ROWS, 3, 3);
    struct fit_opts o;
    fit_opts_default(&o);
    o.batch = 4;
    o.epochs = 3;
    o.seed = seed;
    struct tv_error err = {0};
    assert_ok(fit_run(t, &d, &d, &o, NULL, NULL, &err), &err);
    genome_init(out);
    assert_ok(nn_trainer_write_genome(t, out, &err), &err);
    nn_trainer_free(t);
}

static void test_fit_run_same_seed_same_network(void **state)
{
    (void)state;
    make_rows();
    struct genome g, a, b, c;
    small_net(&g);
    train_bytes(&g, 9, &a);
    train_bytes(&g, 9, &b);
    train_bytes(&g, 10, &c);
    assert_true(genome_equal(&a, &b));
    assert_false(genome_equal(&a, &c));
    genome_release(&a);
    genome_release(&b);
    genome_release(&c);
    genome_release(&g);
}

static void test_fit_run_stops_when_the_callback_asks(void **state)
{
    (void)state;
    struct fixture f;
    fixture_init(&f, 8, 5);
    struct seen s = {.stop_at = 4};
    assert_error(fit_run(f.t, &f.d, NULL, &f.o, record, &s, &f.err), &f.err, TV_ESTOP,
                 "fit: stopped by the caller in epoch 2");
    assert_int_equal(nn_trainer_steps(f.t), 4);
    fixture_release(&f);
}

static void test_fit_run_rejects_data_that_does_not_fit(void **state)
{
    (void)state;
    struct fixture f;
    fixture_init(&f, 8, 1);
    struct tv_error *err = &f.err;
    struct data_set wide = dataset(k_x, k_y, 5, 4, 3);
    assert_error(fit_run(f.t, &wide, NULL, &f.o, NULL, NULL, err), err, TV_EINVAL,
                 "training data: the data set has 4 features per row, the network 3 inputs");
    struct data_set many = dataset(k_x, k_y, ROWS, 3, 4);
    assert_error(fit_run(f.t, &f.d, &many, &f.o, NULL, NULL, err), err, TV_EINVAL,
                 "test data: the data set has 4 classes, the network only 3 outputs");
    struct data_set empty = dataset(k_x, k_y, 0, 3, 3);
    assert_error(fit_run(f.t, &empty, NULL, &f.o, NULL, NULL, err), err, TV_EINVAL,
                 "training data: the data set has no rows");
    f.o.epochs = 0;
    assert_error(fit_run(f.t, &f.d, NULL, &f.o, NULL, NULL, err), err, TV_EINVAL,
                 "fit: epochs must be at least 1");
    f.o.epochs = 1;
    f.o.batch = 9; /* over the trainer's max_batch: the trainer's own error */
    assert_int_equal(fit_run(f.t, &f.d, NULL, &f.o, NULL, NULL, err), TV_EINVAL);
    assert_int_equal(nn_trainer_steps(f.t), 0);
    fixture_release(&f);
}

static void test_fit_run_policies_remove_connections_and_report_them(void **state)
{
    (void)state;
    struct fixture f; /* 3*4 + 4*3 = 24 connections, weights N(0, 0.25) */
    fixture_init(&f, 8, 2);
    fixture_policy(&f, "threshold:0.3");
    struct seen s = {0};
    assert_ok(fit_run(f.t, &f.d, NULL, &f.o, record, &s, &f.err), &f.err);
    assert_true(s.last.sp.removed > 0);
    assert_int_equal(s.last.conns, 24 - s.last.sp.removed);
    assert_int_equal(nn_trainer_n_conns(f.t), s.last.conns);
    struct genome out;
    genome_init(&out);
    assert_ok(nn_trainer_write_genome(f.t, &out, &f.err), &f.err);
    assert_int_equal(out.n_conns, s.last.conns);
    for (size_t k = 0; k < out.n_conns; k++)
        assert_true(fabsf(out.conns[k].weight) >= 0.3f);
    genome_release(&out);
    fixture_release(&f);
}

/* set:0.5 runs after every epoch but the last: after 1 of 2 epochs, none of 1. */
static void test_fit_run_no_regrowth_after_the_last_epoch(void **state)
{
    (void)state;
    for (size_t epochs = 1; epochs <= 2; epochs++) {
        struct fixture f;
        fixture_init(&f, 8, epochs);
        fixture_policy(&f, "set:0.5");
        struct seen s = {0};
        assert_ok(fit_run(f.t, &f.d, NULL, &f.o, record, &s, &f.err), &f.err);
        /* the pairs have 12 connections each: 6 removed and regrown per pair */
        assert_int_equal(s.last.sp.grown, epochs == 1 ? 0 : 12);
        assert_int_equal(s.last.sp.removed, epochs == 1 ? 0 : 12);
        assert_int_equal(s.last.conns, 24);
        fixture_release(&f);
    }
}

/* A step budget ends training inside an epoch: 23 rows in batches of 8 are
 * 3 steps an epoch, so 4 steps are epoch 1 and one step of epoch 2, which
 * counts as the last (its report done, no set:0.5 after it); a budget of 3
 * ends exactly with epoch 1, with no regrowth after it either. */
static void test_fit_run_step_budget_stops_inside_an_epoch(void **state)
{
    (void)state;
    for (size_t budget = 3; budget <= 4; budget++) {
        struct fixture f;
        fixture_init(&f, 8, 5);
        fixture_policy(&f, "set:0.5");
        f.o.max_steps = budget;
        struct seen s = {0};
        assert_ok(fit_run(f.t, &f.d, NULL, &f.o, record, &s, &f.err), &f.err);
        assert_int_equal(nn_trainer_steps(f.t), budget);
        assert_int_equal(s.epochs, budget == 3 ? 1 : 2);
        assert_int_equal(s.reports, budget == 3 ? 3 : 4); /* 2 steps + done, then 1 done */
        assert_true(s.last.done);
        assert_int_equal(s.last.step, budget == 3 ? 3 : 1);
        assert_int_equal(s.last.sp.grown, budget == 3 ? 0 : 12);
        fixture_release(&f);
    }
}

/* Training on a view (rows 5, 0, 22, 7, ... of the 23, each feature
 * (x - shift) * mul) gives the same bits as training on those rows scaled
 * and written out as a data set of their own. */
static void test_fit_run_view_of_rows_is_that_data_set(void **state)
{
    (void)state;
    make_rows();
    enum { N = 11 };
    const uint32_t rows[N] = {5, 0, 22, 7, 7, 13, 1, 2, 19, 11, 4};
    const float shift[3] = {0.5f, 0.25f, -1}, mul[3] = {2, 4, 0.5f};
    float x[N * 3];
    uint16_t y[N];
    for (size_t i = 0; i < N; i++) {
        y[i] = k_y[rows[i]];
        for (size_t j = 0; j < 3; j++)
            x[i * 3 + j] = (k_x[rows[i] * 3 + j] - shift[j]) * mul[j];
    }
    struct genome g, a, b;
    small_net(&g);
    struct tv_error err = {0};
    struct fit_opts o;
    fit_opts_default(&o);
    o.batch = 4;
    o.epochs = 3;
    o.seed = 5;
    struct data_set own = dataset(x, y, N, 3, 3), all = dataset(k_x, k_y, ROWS, 3, 3);
    struct nn_trainer *t = trainer(&g, NN_OPT_ADAM, 0.05f, 4);
    assert_ok(fit_run(t, &own, NULL, &o, NULL, NULL, &err), &err);
    genome_init(&a);
    assert_ok(nn_trainer_write_genome(t, &a, &err), &err);
    nn_trainer_free(t);
    o.rows = rows;
    o.n_rows = N;
    o.shift = shift;
    o.mul = mul;
    t = trainer(&g, NN_OPT_ADAM, 0.05f, 4);
    assert_ok(fit_run(t, &all, NULL, &o, NULL, NULL, &err), &err);
    genome_init(&b);
    assert_ok(nn_trainer_write_genome(t, &b, &err), &err);
    assert_true(genome_equal(&a, &b));
    assert_false(genome_equal(&a, &g));
    /* a view that does not fit the data set */
    const uint32_t past[2] = {1, 23};
    o.rows = past;
    o.n_rows = 2;
    assert_error(fit_run(t, &all, NULL, &o, NULL, NULL, &err), &err, TV_EINVAL,
                 "training data: row 1 of the view is 23, past its 23 rows");
    o.n_rows = 0;
    assert_error(fit_run(t, &all, NULL, &o, NULL, NULL, &err), &err, TV_EINVAL,
                 "training data: the view of rows has no rows");
    o.rows = NULL;
    o.mul = NULL;
    assert_error(fit_run(t, &all, NULL, &o, NULL, NULL, &err), &err, TV_EINVAL,
                 "fit: a scale needs both shift and mul");
    nn_trainer_free(t);
    genome_release(&a);
    genome_release(&b);
    genome_release(&g);
}

/* The cosine schedule: fit_run's steps equal steps taken by hand at
 * lr (1 + cos(pi s / S)) / 2, S = 2 epochs x 3 batches (no shuffle, batch 8
 * of 23 rows), computed here in double; the trainer's rate is lr again
 * afterwards; the rates of nn_lr_at, the names, the refusals. */
static void test_fit_run_cosine_schedule_by_hand(void **state)
{
    (void)state;
    struct fixture f, g;
    fixture_init(&f, 8, 2);
    fixture_init(&g, 8, 2);
    f.o.shuffle = 0;
    f.o.lr_schedule = NN_LR_COSINE;
    assert_ok(fit_run(f.t, &f.d, NULL, &f.o, NULL, NULL, &f.err), &f.err);
    assert_true(nn_trainer_lr(f.t) == 0.1f);
    for (size_t s = 0; s < 6; s++) {
        size_t r0 = (s % 3) * 8, n = r0 + 8 <= ROWS ? 8 : ROWS - r0;
        float lr = (float)(0.1f * 0.5 * (1.0 + cos(M_PI * (double)s / 6.0)));
        assert_true(nn_lr_at(0.1f, NN_LR_COSINE, s, 6) == lr);
        assert_ok(nn_trainer_set_lr(g.t, lr, &g.err), &g.err);
        uint32_t lab[8];
        for (size_t k = 0; k < n; k++)
            lab[k] = k_y[r0 + k];
        double loss;
        assert_ok(nn_trainer_step(g.t, k_x + r0 * 3, lab, NULL, 1, n, &loss, &g.err), &g.err);
    }
    struct genome a, b;
    genome_init(&a);
    genome_init(&b);
    assert_ok(nn_trainer_write_genome(f.t, &a, &f.err), &f.err);
    assert_ok(nn_trainer_write_genome(g.t, &b, &g.err), &g.err);
    assert_true(genome_equal(&a, &b));
    /* the constant rate gives another network */
    fixture_release(&g);
    fixture_init(&g, 8, 2);
    g.o.shuffle = 0;
    assert_ok(fit_run(g.t, &g.d, NULL, &g.o, NULL, NULL, &g.err), &g.err);
    genome_release(&b);
    genome_init(&b);
    assert_ok(nn_trainer_write_genome(g.t, &b, &g.err), &g.err);
    assert_false(genome_equal(&a, &b));
    assert_true(nn_lr_at(0.1f, NN_LR_NONE, 5, 6) == 0.1f);
    assert_true(nn_lr_at(0.1f, NN_LR_COSINE, 0, 6) == 0.1f);
    assert_true(nn_lr_at(0.1f, NN_LR_COSINE, 3, 6) == 0.05f);
    assert_int_equal(nn_lr_schedule_parse("cosine"), NN_LR_COSINE);
    assert_int_equal(nn_lr_schedule_parse("none"), NN_LR_NONE);
    assert_int_equal(nn_lr_schedule_parse("Cosine"), -1);
    assert_string_equal(nn_lr_schedule_name(NN_LR_COSINE), "cosine");
    assert_string_equal(nn_lr_schedule_name(7), "?");
    assert_error(nn_trainer_set_lr(f.t, -1, &f.err), &f.err, TV_EINVAL,
                 "nn_trainer_set_lr: -1 is not a rate (finite, >= 0)");
    assert_error(nn_trainer_set_lr(f.t, NAN, &f.err), &f.err, TV_EINVAL, "is not a rate");
    f.o.lr_schedule = 2;
    assert_error(fit_run(f.t, &f.d, NULL, &f.o, NULL, NULL, &f.err), &f.err, TV_EINVAL,
                 "fit: unknown learning-rate schedule 2");
    genome_release(&a);
    genome_release(&b);
    fixture_release(&f);
    fixture_release(&g);
}

/* ---- fit_cnn_run ------------------------------------------------------------ */

/* A 4x4 image, one 3x3 filter (padding 1, relu, 2x2 pooling: pixels
 * 100..103), its four pooled pixels to two outputs. */
static const char CNN[] =
    "trevo-net 4\ninputs 16\noutputs 2\n"
    "neuron 0 in 0 identity 0\nneuron 1 in 0 identity 0\nneuron 2 in 0 identity 0\n"
    "neuron 3 in 0 identity 0\nneuron 4 in 0 identity 0\nneuron 5 in 0 identity 0\n"
    "neuron 6 in 0 identity 0\nneuron 7 in 0 identity 0\nneuron 8 in 0 identity 0\n"
    "neuron 9 in 0 identity 0\nneuron 10 in 0 identity 0\nneuron 11 in 0 identity 0\n"
    "neuron 12 in 0 identity 0\nneuron 13 in 0 identity 0\nneuron 14 in 0 identity 0\n"
    "neuron 15 in 0 identity 0\nneuron 16 out 1 identity 0\nneuron 17 out 1 identity 0\n"
    "conn 100 16 0.5\nconn 101 16 -0.25\nconn 102 16 0.75\nconn 103 16 0.1\n"
    "conn 100 17 -0.5\nconn 101 17 0.25\nconn 102 17 -0.3\nconn 103 17 0.6\n"
    "channel 0 in 4 4 1 0 identity 0 0\nchannel 1 hid 4 4 2 0.5 relu 0.1 100\n"
    "filter 0 1 3 3 1 1 0,0,0.3 0,2,-0.2 1,1,0.8 2,0,0.4 2,2,0.5\n";

static void cnn_train(const struct genome *g, const struct data_set *d, const struct fit_opts *o,
                      struct genome *out)
{
    struct nn_train_opts to;
    nn_train_opts_default(&to);
    to.optimizer = NN_OPT_ADAM;
    to.lr = 0.05f;
    to.max_batch = o->batch;
    struct nn_cnn *c = NULL;
    struct tv_error err = {0};
    assert_ok(nn_cnn_from_genome(g, &to, &c, &err), &err);
    assert_ok(fit_cnn_run(c, d, NULL, o, NULL, NULL, &err), &err);
    assert_true(nn_trainer_lr(nn_cnn_head(c)) == 0.05f);
    genome_init(out);
    assert_ok(nn_cnn_write_genome(c, out, &err), &err);
    nn_cnn_free(c);
}

/* A CNN trained on a view of rows (scaled), with a step budget that ends
 * inside the second epoch and the cosine schedule, gives the same bits as
 * one trained on those rows written out as a data set of their own. */
static void test_fit_cnn_run_view_budget_schedule(void **state)
{
    (void)state;
    enum { ALL = 30, N = 9 };
    static float x[ALL * 16], own_x[N * 16];
    static uint16_t y[ALL], own_y[N];
    struct tv_rng rng = tu_rng(8, 0, 0);
    for (size_t r = 0; r < ALL; r++) {
        for (size_t j = 0; j < 16; j++)
            x[r * 16 + j] = (float)tv_rng_uniform(&rng);
        y[r] = x[r * 16 + 5] > x[r * 16 + 10];
    }
    const uint32_t rows[N] = {3, 29, 0, 17, 17, 8, 21, 5, 12};
    float shift[16], mul[16];
    for (size_t j = 0; j < 16; j++) {
        shift[j] = 0.5f;
        mul[j] = j % 2 ? 2 : 0.5f;
    }
    for (size_t i = 0; i < N; i++) {
        own_y[i] = y[rows[i]];
        for (size_t j = 0; j < 16; j++)
            own_x[i * 16 + j] = (x[rows[i] * 16 + j] - shift[j]) * mul[j];
    }
    struct genome g, a, b;
    parse(&g, CNN);
    struct fit_opts o;
    fit_opts_default(&o);
    o.batch = 4;
    o.epochs = 3;
    o.seed = 6;
    o.max_steps = 5; /* 3 steps an epoch: ends inside the second */
    o.lr_schedule = NN_LR_COSINE;
    struct data_set own = dataset(own_x, own_y, N, 16, 2), all = dataset(x, y, ALL, 16, 2);
    cnn_train(&g, &own, &o, &a);
    o.rows = rows;
    o.n_rows = N;
    o.shift = shift;
    o.mul = mul;
    cnn_train(&g, &all, &o, &b);
    assert_true(genome_equal(&a, &b));
    assert_false(genome_equal(&a, &g));
    assert_int_equal(a.n_channels, 2);
    genome_release(&b);
    o.max_steps = 6;
    cnn_train(&g, &all, &o, &b);
    assert_false(genome_equal(&a, &b));
    /* the checks fit_run makes */
    struct nn_train_opts to;
    nn_train_opts_default(&to);
    struct nn_cnn *c = NULL;
    struct tv_error err = {0};
    assert_ok(nn_cnn_from_genome(&g, &to, &c, &err), &err);
    o.mul = NULL;
    assert_error(fit_cnn_run(c, &all, NULL, &o, NULL, NULL, &err), &err, TV_EINVAL,
                 "fit: a scale needs both shift and mul");
    struct data_set narrow = dataset(x, y, ALL, 15, 2);
    assert_error(fit_cnn_run(c, &narrow, NULL, &o, NULL, NULL, &err), &err, TV_EINVAL,
                 "training data");
    nn_cnn_free(c);
    genome_release(&a);
    genome_release(&b);
    genome_release(&g);
}

/* Every allocation of fit_run (with a policy, a test pass) failed in turn:
 * TV_ENOMEM (or the trainer's or sparsifier's out of memory), nothing
 * leaked, and the trainer still usable. */
static void test_fit_run_allocation_failures_leak_nothing(void **state)
{
    (void)state;
    unsigned long k = 1;
    for (;; k++) {
        failalloc_track(1);
        size_t live = failalloc_live();
        struct fixture f;
        fixture_init(&f, 8, 2);
        fixture_policy(&f, "set:0.5");
        failalloc_arm(k);
        int rc = fit_run(f.t, &f.d, &f.d, &f.o, NULL, NULL, &f.err);
        int fired = failalloc_fired();
        failalloc_disarm();
        if (fired) {
            assert_int_equal(rc, TV_ENOMEM);
            assert_true(strstr(f.err.msg, "out of memory") != NULL);
        } else {
            assert_ok(rc, &f.err);
        }
        fixture_release(&f);
        assert_int_equal(failalloc_live(), live);
        failalloc_track(0);
        if (!fired)
            break;
    }
    assert_true(k > 5);
}

/* ---- fit_evaluate ------------------------------------------------------------- */

static void test_fit_evaluate_identity_network_exact(void **state)
{
    (void)state;
    struct genome g;
    parse(&g, IDENT);
    struct nn_trainer *t = trainer(&g, NN_OPT_SGD, 0.1f, 3);
    const float x[] = {1, 0, 0, 1, 0, 1, 0.5f, 0.5f};
    const uint16_t y[] = {0, 1, 0, 0};
    struct data_set d = dataset(x, y, 4, 2, 2);
    double loss, acc;
    struct tv_error err = {0};
    /* batches of 3 and 1; the tie (0.5, 0.5) goes to class 0 */
    assert_ok(fit_evaluate(t, &d, 3, &loss, &acc, &err), &err);
    assert_float_equal(acc, 0.75, 0);
    double want = (2 * log(1 + exp(-1.0)) + log(1 + exp(1.0)) + log(2.0)) / 4;
    assert_float_equal(loss, want, 1e-6);
    assert_error(fit_evaluate(t, &d, 0, &loss, &acc, &err), &err, TV_EINVAL,
                 "fit: a batch of 0 rows");
    nn_trainer_free(t);
    genome_release(&g);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_fit_order_no_shuffle_is_file_order),
        cmocka_unit_test(test_fit_order_shuffle_is_the_fisher_yates_of_seed_and_epoch),
        cmocka_unit_test(test_fit_run_no_shuffle_consecutive_batches_last_short),
        cmocka_unit_test(test_fit_run_one_sgd_step_by_hand),
        cmocka_unit_test(test_fit_run_same_seed_same_network),
        cmocka_unit_test(test_fit_run_stops_when_the_callback_asks),
        cmocka_unit_test(test_fit_run_rejects_data_that_does_not_fit),
        cmocka_unit_test(test_fit_run_policies_remove_connections_and_report_them),
        cmocka_unit_test(test_fit_run_no_regrowth_after_the_last_epoch),
        cmocka_unit_test(test_fit_run_step_budget_stops_inside_an_epoch),
        cmocka_unit_test(test_fit_run_view_of_rows_is_that_data_set),
        cmocka_unit_test(test_fit_run_cosine_schedule_by_hand),
        cmocka_unit_test(test_fit_cnn_run_view_budget_schedule),
        cmocka_unit_test(test_fit_run_allocation_failures_leak_nothing),
        cmocka_unit_test(test_fit_evaluate_identity_network_exact),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
