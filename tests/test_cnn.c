/* test_cnn.c -- the trainer of sparse convolutional networks (nn/conv/cnn.h):
 * its gradients (coefficients, biases, the head) against central finite
 * differences of its own loss on a tiny network with padding, stride,
 * pooling and an empty filter; a few steps reduce the loss on a toy set;
 * pruning and growth change the layer physically; the same calls give the
 * same bits; its forward pass agrees with the inference engine on the same
 * genome; the error paths with their code and message. Also the two
 * functions it added to nn/train/train.h (nn_trainer_update, nn_trainer_input_grad). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "cnn.h"
#include "nn.h"
#include "testutil.h"
#include "trainutil.h"

/* A tiny network: layer 0 1 -> 2 channels, 3x3 pad 1 on 7x7, relu, pool 2
 * (3x3 out of 7x7: the last row and column dropped); layer 1 2 -> 3
 * channels, 2x2 stride 1 pad 0 on 3x3, identity, no pool (2x2); a dense
 * head 12 -> 4 hidden (relu) -> 3 outputs. Output channel 2 of layer 1 gets
 * coefficients from channel 0 only (the filter 1 -> 2 is empty). */
struct tiny {
    struct nn_conv_coef c0[18], c1[24];
    size_t n0, n1;
    float b0[2], b1[3];
    struct nn_cnn_layer layer[2];
    struct genome *head;
    struct nn_cnn_desc d;
    struct genome g, w; /* two empty genomes for the test, released with it */
};

static void tiny_init(struct tiny *t, uint64_t seed)
{
    struct tv_rng rng = tu_rng(seed, 11, 0);
    memset(t, 0, sizeof *t);
    for (uint32_t o = 0; o < 2; o++)
        for (uint8_t ky = 0; ky < 3; ky++)
            for (uint8_t kx = 0; kx < 3; kx++)
                if ((o + ky + kx) % 4 != 1) /* a sparse pattern */
                    t->c0[t->n0++] =
                        (struct nn_conv_coef){o, 0, ky, kx, (float)(0.6 * tv_rng_normal(&rng))};
    for (uint32_t o = 0; o < 3; o++)
        for (uint32_t i = 0; i < 2; i++)
            for (uint8_t ky = 0; ky < 2; ky++)
                for (uint8_t kx = 0; kx < 2; kx++)
                    if (!(o == 2 && i == 1))
                        t->c1[t->n1++] =
                            (struct nn_conv_coef){o, i, ky, kx, (float)(0.6 * tv_rng_normal(&rng))};
    t->b0[0] = 0.1f;
    t->b0[1] = -0.05f;
    t->b1[0] = 0.02f;
    t->b1[1] = 0.0f;
    t->b1[2] = -0.1f;
    t->layer[0] =
        (struct nn_cnn_layer){{1, 2, 7, 7, 3, 3, 1, 1}, t->c0, t->n0, t->b0, GENOME_ACT_RELU, 2};
    t->layer[1] = (struct nn_cnn_layer){{2, 3, 3, 3, 2, 2, 1, 0}, t->c1, t->n1, t->b1,
                                        GENOME_ACT_IDENTITY,      1};
    uint32_t sizes[3] = {12, 4, 3};
    struct genome_layered_spec sp = {0};
    sp.sizes = sizes;
    sp.n_layers = 3;
    sp.density = 1.0;
    sp.hidden_act = GENOME_ACT_RELU;
    sp.out_act = GENOME_ACT_IDENTITY;
    sp.weight_sd = 0.5;
    t->head = genome_new();
    struct tv_error err = {0};
    assert_non_null(t->head);
    assert_ok(genome_build_layered(t->head, &sp, &rng, &err), &err);
    for (size_t i = 0; i < t->head->n_neurons; i++)
        if (t->head->neurons[i].kind == GENOME_HIDDEN)
            t->head->neurons[i].bias = 0.1f; /* the hidden relus start alive */
    t->d = (struct nn_cnn_desc){2, t->layer, t->head};
}

static void tiny_release(struct tiny *t)
{
    genome_free(t->head);
    genome_release(&t->g);
    genome_release(&t->w);
}

/* The tests take a struct tiny to tiny_init, released after them. */
TU_FIXTURE(tiny, struct tiny, tiny_release)
#define TINY_TEST(test) cmocka_unit_test_setup_teardown(test, tiny_setup, tiny_teardown)

/* The test's fixture, made from seed. */
static struct tiny *tiny_at(void **state, uint64_t seed)
{
    struct tiny *t = *state;
    tiny_init(t, seed);
    return t;
}

static struct nn_cnn *tiny_cnn(struct tiny *t, int optimizer, float lr)
{
    struct nn_train_opts o = tu_train_opts(optimizer, lr, 8);
    struct nn_cnn *c = NULL;
    struct tv_error err = {0};
    assert_ok(nn_cnn_new(&t->d, &o, &c, &err), &err);
    return c;
}

/* batch rows of 49 pixels in [0, 1), labels in 0..2 */
static void tiny_data(float *x, uint32_t *labels, size_t batch, uint64_t seed)
{
    struct tv_rng rng = tu_rng(seed, 12, 0);
    for (size_t k = 0; k < batch * 49; k++)
        x[k] = (float)tv_rng_uniform(&rng);
    for (size_t b = 0; b < batch; b++)
        labels[b] = tv_rng_below(&rng, 3);
}

/* a and b give the same outputs, bit for bit, on the 4 rows of x. */
static void expect_same_predictions(struct nn_cnn *a, struct nn_cnn *b, const float *x)
{
    struct tv_error err = {0};
    float oa[4 * 3], ob[4 * 3];
    assert_ok(nn_cnn_predict(a, x, 4, oa, &err), &err);
    assert_ok(nn_cnn_predict(b, x, 4, ob, &err), &err);
    assert_memory_equal(oa, ob, sizeof oa);
}

static double loss_of(struct nn_cnn *c, const float *x, const uint32_t *labels, size_t batch)
{
    double loss;
    struct tv_error err = {0};
    assert_ok(nn_cnn_grad(c, x, labels, NULL, batch, &loss, &err), &err);
    return loss;
}

/* |g - fd| within a tolerance of float sums and step 1e-3 */
static void check_fd(struct nn_cnn *c, float *p, double g, const float *x, const uint32_t *labels,
                     size_t batch, const char *what, size_t k)
{
    const float h = 1e-3f;
    float w = *p;
    *p = w + h;
    double lp = loss_of(c, x, labels, batch);
    *p = w - h;
    double lm = loss_of(c, x, labels, batch);
    *p = w;
    double fd = (lp - lm) / (2.0 * (double)h);
    if (fabs(fd - g) > 2e-3 + 2e-2 * fabs(fd)) {
        print_error("%s %zu: gradient %.6g, finite difference %.6g\n", what, k, g, fd);
        fail();
    }
}

static void test_nn_cnn_grad_matches_finite_differences(void **state)
{
    struct tiny *t = tiny_at(state, 1);
    struct nn_cnn *c = tiny_cnn(t, NN_OPT_SGD, 0.1f);
    float x[5 * 49];
    uint32_t labels[5];
    tiny_data(x, labels, 5, 2);
    loss_of(c, x, labels, 5);
    struct tv_error err = {0};
    for (size_t l = 0; l < 2; l++) {
        struct nn_cnn_layer_view v;
        assert_ok(nn_cnn_layer(c, l, &v, &err), &err);
        /* copies: the finite differences overwrite the view's gradients */
        size_t n = v.n_coefs, oc = v.s.out_ch;
        double g[32], bg[3];
        for (size_t k = 0; k < n; k++)
            g[k] = v.grad[k];
        for (size_t k = 0; k < oc; k++)
            bg[k] = v.bias_grad[k];
        size_t nonzero = 0;
        for (size_t k = 0; k < n; k++) {
            check_fd(c, &v.w[k], g[k], x, labels, 5, l ? "layer 1 coef" : "layer 0 coef", k);
            nonzero += g[k] != 0;
        }
        assert_true(nonzero > n / 2); /* a check of zeros would prove nothing */
        for (size_t k = 0; k < oc; k++)
            check_fd(c, &v.bias[k], bg[k], x, labels, 5, "bias", k);
    }
    /* the head's weights, through the same loss */
    struct nn_train_view hv;
    nn_trainer_view(nn_cnn_head(c), &hv);
    double hg[64];
    size_t m = hv.n_conns < 64 ? hv.n_conns : 64;
    for (size_t k = 0; k < m; k++)
        hg[k] = hv.grad[k];
    for (size_t k = 0; k < m; k++)
        check_fd(c, &hv.w[k], hg[k], x, labels, 5, "head weight", k);
    nn_cnn_free(c);
}

static void test_nn_trainer_input_grad_matches_finite_differences(void **state)
{
    struct tiny *t = tiny_at(state, 3);
    struct nn_train_opts o = tu_batch_opts(4);
    struct nn_trainer *tr = tu_trainer(t->head, &o);
    struct tv_error err = {0};
    float x[3 * 12], dx[12 * 3];
    uint32_t labels[3] = {0, 2, 1};
    struct tv_rng rng = tu_rng(4, 0, 0);
    for (size_t k = 0; k < 36; k++)
        x[k] = (float)tv_rng_uniform(&rng);
    double l0, lp, lm;
    assert_ok(nn_trainer_grad(tr, x, labels, NULL, 1, 3, &l0, &err), &err);
    assert_ok(nn_trainer_input_grad(tr, dx, &err), &err);
    for (size_t b = 0; b < 3; b++)
        for (size_t i = 0; i < 12; i++) {
            float v = x[b * 12 + i];
            x[b * 12 + i] = v + 1e-2f;
            assert_ok(nn_trainer_grad(tr, x, labels, NULL, 1, 3, &lp, &err), &err);
            x[b * 12 + i] = v - 1e-2f;
            assert_ok(nn_trainer_grad(tr, x, labels, NULL, 1, 3, &lm, &err), &err);
            x[b * 12 + i] = v;
            /* the loss is a mean over the batch, dx the gradient of it */
            double fd = (lp - lm) / 2e-2;
            assert_true(fabs(fd - dx[i * 3 + b]) < 1e-3 + 2e-2 * fabs(fd));
        }
    nn_trainer_free(tr);
}

static void test_nn_trainer_update_after_grad_is_step(void **state)
{
    struct tiny *t = tiny_at(state, 5);
    struct nn_train_opts o = tu_train_opts(NN_OPT_ADAM, 0.01f, 4);
    struct nn_trainer *a = tu_trainer(t->head, &o), *b = tu_trainer(t->head, &o);
    struct tv_error err = {0};
    float x[2 * 12];
    uint32_t labels[2] = {1, 0};
    for (size_t k = 0; k < 24; k++)
        x[k] = (float)k / 24.0f;
    for (int s = 0; s < 3; s++) {
        assert_ok(nn_trainer_step(a, x, labels, NULL, 1, 2, NULL, &err), &err);
        assert_ok(nn_trainer_grad(b, x, labels, NULL, 1, 2, NULL, &err), &err);
        nn_trainer_update(b);
    }
    assert_int_equal(nn_trainer_steps(b), 3);
    struct nn_train_view va, vb;
    nn_trainer_view(a, &va);
    nn_trainer_view(b, &vb);
    assert_int_equal(va.n_conns, vb.n_conns);
    assert_memory_equal(va.w, vb.w, va.n_conns * sizeof *va.w);
    assert_memory_equal(va.bias, vb.bias, va.n_neurons * sizeof *va.bias);
    nn_trainer_free(a);
    nn_trainer_free(b);
}

/* Toy set: a bright horizontal (class 0) or vertical (class 1) bar at a
 * random place in a 7x7 image (class 2: both). */
static void bars(float *x, uint32_t *labels, size_t batch, struct tv_rng *rng)
{
    memset(x, 0, batch * 49 * sizeof *x);
    for (size_t b = 0; b < batch; b++) {
        uint32_t cls = tv_rng_below(rng, 3), pos = tv_rng_below(rng, 7);
        for (size_t k = 0; k < 7; k++) {
            if (cls != 1)
                x[b * 49 + pos * 7 + k] = 1;
            if (cls != 0)
                x[b * 49 + k * 7 + pos] = 1;
        }
        labels[b] = cls;
    }
}

static void test_nn_cnn_step_reduces_loss(void **state)
{
    struct tiny *t = tiny_at(state, 6);
    struct nn_cnn *c = tiny_cnn(t, NN_OPT_ADAM, 0.02f);
    struct tv_rng rng = tu_rng(7, 0, 0);
    float x[8 * 49], probe[8 * 49];
    uint32_t labels[8], probe_labels[8];
    bars(probe, probe_labels, 8, &rng);
    double before = loss_of(c, probe, probe_labels, 8);
    struct tv_error err = {0};
    for (int s = 0; s < 150; s++) {
        bars(x, labels, 8, &rng);
        assert_ok(nn_cnn_step(c, x, labels, NULL, 8, NULL, &err), &err);
    }
    double after = loss_of(c, probe, probe_labels, 8);
    assert_true(after < 0.5 * before);
    /* predict agrees with the loss: most of the probe right */
    float out[8 * 3];
    assert_ok(nn_cnn_predict(c, probe, 8, out, &err), &err);
    int right = 0;
    for (size_t b = 0; b < 8; b++) {
        size_t best = 0;
        for (size_t k = 1; k < 3; k++)
            if (out[b * 3 + k] > out[b * 3 + best])
                best = k;
        right += best == probe_labels[b];
    }
    assert_true(right >= 6);
    nn_cnn_free(c);
}

static void test_nn_cnn_prune_removes_coefficients(void **state)
{
    struct tiny *t = tiny_at(state, 8);
    struct nn_cnn *c = tiny_cnn(t, NN_OPT_SGD, 0.1f);
    struct tv_error err = {0};
    struct nn_cnn_layer_view v;
    assert_ok(nn_cnn_layer(c, 1, &v, &err), &err);
    size_t n = v.n_coefs;
    float smallest = INFINITY, kept_min = INFINITY;
    for (size_t k = 0; k < n; k++)
        smallest = fminf(smallest, fabsf(v.w[k]));
    assert_ok(nn_cnn_prune(c, 1, 3, &err), &err);
    assert_ok(nn_cnn_layer(c, 1, &v, &err), &err);
    assert_int_equal(v.n_coefs, n - 3);
    for (size_t k = 0; k < v.n_coefs; k++)
        kept_min = fminf(kept_min, fabsf(v.w[k]));
    assert_true(kept_min > smallest);
    /* the same network built from the remaining list computes the same */
    struct nn_conv_coef left[24];
    for (size_t k = 0; k < v.n_coefs; k++) {
        left[k] = v.coef[k];
        left[k].w = v.w[k];
    }
    struct tiny u = *t;
    u.layer[1].coef = left;
    u.layer[1].n_coefs = v.n_coefs;
    u.d.layer = u.layer;
    struct nn_cnn *c2 = tiny_cnn(&u, NN_OPT_SGD, 0.1f);
    float x[4 * 49];
    uint32_t labels[4];
    tiny_data(x, labels, 4, 9);
    expect_same_predictions(c, c2, x);
    /* rigl grows k with weight 0: the outputs do not change */
    loss_of(c, x, labels, 4);
    size_t grown = 0;
    assert_ok(nn_cnn_grow(c, 1, 5, NN_CNN_GROW_RIGL, 0, NULL, &grown, &err), &err);
    assert_int_equal(grown, 5);
    assert_ok(nn_cnn_layer(c, 1, &v, &err), &err);
    assert_int_equal(v.n_coefs, n + 2);
    expect_same_predictions(c, c2, x);
    /* growth beyond the absent positions stops there */
    assert_ok(nn_cnn_grow(c, 1, 1000, NN_CNN_GROW_SET, 0.1f, &(struct tv_rng){0}, &grown, &err),
              &err);
    assert_int_equal(grown, 24 - (n + 2));
    assert_ok(nn_cnn_layer(c, 1, &v, &err), &err);
    assert_int_equal(v.n_coefs, 24);
    /* pruning more than there is empties the layer */
    assert_ok(nn_cnn_prune(c, 0, 100, &err), &err);
    assert_ok(nn_cnn_layer(c, 0, &v, &err), &err);
    assert_int_equal(v.n_coefs, 0);
    nn_cnn_free(c);
    nn_cnn_free(c2);
}

static void test_nn_cnn_grow_rigl_largest_gradient(void **state)
{
    struct tiny *t = tiny_at(state, 10);
    struct nn_cnn *c = tiny_cnn(t, NN_OPT_SGD, 0.1f);
    struct tv_error err = {0};
    float x[4 * 49];
    uint32_t labels[4];
    tiny_data(x, labels, 4, 11);
    /* the dense gradient: every coefficient of layer 1 present at weight 0 */
    struct nn_conv_coef all[24];
    size_t n = 0;
    struct nn_cnn_layer_view v;
    assert_ok(nn_cnn_layer(c, 1, &v, &err), &err);
    for (uint32_t o = 0; o < 3; o++)
        for (uint32_t i = 0; i < 2; i++)
            for (uint8_t ky = 0; ky < 2; ky++)
                for (uint8_t kx = 0; kx < 2; kx++) {
                    all[n] = (struct nn_conv_coef){o, i, ky, kx, 0};
                    for (size_t k = 0; k < v.n_coefs; k++)
                        if (v.coef[k].out == o && v.coef[k].in == i && v.coef[k].ky == ky &&
                            v.coef[k].kx == kx)
                            all[n].w = v.w[k];
                    n++;
                }
    struct tiny u = *t;
    u.layer[1].coef = all;
    u.layer[1].n_coefs = 24;
    u.d.layer = u.layer;
    struct nn_cnn *full = tiny_cnn(&u, NN_OPT_SGD, 0.1f);
    loss_of(full, x, labels, 4);
    struct nn_cnn_layer_view fv;
    assert_ok(nn_cnn_layer(full, 1, &fv, &err), &err);
    /* the absent ones are out 2 from in 1: 4 positions; the largest |g| */
    size_t best = 0;
    float best_g = -1;
    for (size_t k = 0; k < 24; k++)
        if (all[k].out == 2 && all[k].in == 1 && fabsf(fv.grad[k]) > best_g) {
            best_g = fabsf(fv.grad[k]);
            best = k;
        }
    assert_true(best_g > 0);
    loss_of(c, x, labels, 4);
    assert_ok(nn_cnn_grow(c, 1, 1, NN_CNN_GROW_RIGL, 0, NULL, NULL, &err), &err);
    assert_ok(nn_cnn_layer(c, 1, &v, &err), &err);
    int found = 0;
    for (size_t k = 0; k < v.n_coefs; k++)
        found |= v.coef[k].out == 2 && v.coef[k].in == 1 && v.coef[k].ky == all[best].ky &&
                 v.coef[k].kx == all[best].kx;
    assert_true(found);
    nn_cnn_free(c);
    nn_cnn_free(full);
}

static void run_some(struct nn_cnn *c)
{
    struct tv_rng rng = tu_rng(13, 0, 0);
    float x[8 * 49];
    uint32_t labels[8];
    struct tv_error err = {0};
    for (int s = 0; s < 10; s++) {
        bars(x, labels, 8, &rng);
        assert_ok(nn_cnn_step(c, x, labels, NULL, 8, NULL, &err), &err);
        if (s == 4) {
            assert_ok(nn_cnn_prune(c, 0, 2, &err), &err);
            assert_ok(nn_cnn_grow(c, 0, 2, NN_CNN_GROW_RIGL, 0, NULL, NULL, &err), &err);
            assert_ok(nn_cnn_grow(c, 1, 2, NN_CNN_GROW_SET, 0.1f, &rng, NULL, &err), &err);
        }
    }
}

static void test_nn_cnn_deterministic(void **state)
{
    struct tiny *t = tiny_at(state, 14);
    struct nn_cnn *a = tiny_cnn(t, NN_OPT_ADAM, 0.01f), *b = tiny_cnn(t, NN_OPT_ADAM, 0.01f);
    run_some(a);
    run_some(b);
    struct tv_error err = {0};
    for (size_t l = 0; l < 2; l++) {
        struct nn_cnn_layer_view va, vb;
        assert_ok(nn_cnn_layer(a, l, &va, &err), &err);
        assert_ok(nn_cnn_layer(b, l, &vb, &err), &err);
        assert_int_equal(va.n_coefs, vb.n_coefs);
        for (size_t k = 0; k < va.n_coefs; k++)
            assert_true(va.coef[k].out == vb.coef[k].out && va.coef[k].in == vb.coef[k].in &&
                        va.coef[k].ky == vb.coef[k].ky && va.coef[k].kx == vb.coef[k].kx);
        assert_memory_equal(va.w, vb.w, va.n_coefs * sizeof *va.w);
        assert_memory_equal(va.bias, vb.bias, va.s.out_ch * sizeof *va.bias);
    }
    struct genome *ga = &t->g, *gb = &t->w;
    assert_ok(nn_cnn_write_head(a, ga, &err), &err);
    assert_ok(nn_cnn_write_head(b, gb, &err), &err);
    assert_true(genome_equal(ga, gb));
    assert_false(genome_equal(ga, t->head)); /* it did train */
    nn_cnn_free(a);
    nn_cnn_free(b);
}

static void test_nn_cnn_new_errors(void **state)
{
    struct tiny *t = tiny_at(state, 15);
    struct nn_train_opts o = tu_batch_opts(4);
    struct nn_cnn *c = (struct nn_cnn *)&o;
    struct tv_error err = {0};
    struct tiny u = *t;
    u.d.layer = u.layer;
    u.layer[1].s.in_h = 4;
    assert_error(nn_cnn_new(&u.d, &o, &c, &err), &err, TV_EINVAL,
                 "layer 1 reads 2x4x3 but layer 0 gives 2x3x3");
    assert_null(c);
    u = *t;
    u.d.layer = u.layer;
    u.layer[0].act = GENOME_ACT_TANH;
    assert_error(nn_cnn_new(&u.d, &o, &c, &err), &err, TV_EINVAL, "layer 0: activation 2");
    u = *t;
    u.d.layer = u.layer;
    u.layer[1].pool = 3;
    assert_error(nn_cnn_new(&u.d, &o, &c, &err), &err, TV_EINVAL,
                 "layer 1: pool 3 does not fit its 2x2 map");
    u = *t;
    u.d.layer = u.layer;
    u.layer[1].s.k_h = 5;
    assert_error(nn_cnn_new(&u.d, &o, &c, &err), &err, TV_EINVAL, "makes no map");
    u = *t;
    u.d.layer = u.layer;
    u.d.n_layers = 1; /* the head then reads 12 of 18 pixels */
    assert_error(nn_cnn_new(&u.d, &o, &c, &err), &err, TV_EINVAL,
                 "head: 12 inputs, but the last layer gives 18 pixels");
    u = *t;
    u.d.layer = u.layer;
    struct nn_conv_coef bad[2] = {{0, 0, 0, 0, 1}, {0, 0, 0, 0, 1}};
    u.layer[0].coef = bad;
    u.layer[0].n_coefs = 2;
    assert_error(nn_cnn_new(&u.d, &o, &c, &err), &err, TV_EINVAL, "nn_cnn_new: layer 0");
    assert_null(c);
}

static void test_nn_cnn_call_errors(void **state)
{
    struct tiny *t = tiny_at(state, 16);
    struct nn_cnn *c = tiny_cnn(t, NN_OPT_SGD, 0.1f);
    struct tv_error err = {0};
    float x[9 * 49] = {0}, out[9 * 3];
    uint32_t labels[9] = {0};
    assert_error(nn_cnn_step(c, x, labels, NULL, 9, NULL, &err), &err, TV_EINVAL,
                 "nn_cnn_grad: batch 9 (1 .. max_batch 8)");
    assert_error(nn_cnn_step(c, x, labels, NULL, 0, NULL, &err), &err, TV_EINVAL, "batch 0");
    assert_error(nn_cnn_predict(c, NULL, 2, out, &err), &err, TV_EINVAL,
                 "nn_cnn_predict: no input array");
    assert_error(nn_cnn_predict(c, x, 2, NULL, &err), &err, TV_EINVAL, "no output array");
    labels[1] = 7;
    assert_error(nn_cnn_step(c, x, labels, NULL, 2, NULL, &err), &err, TV_EINVAL, "nn_cnn_grad");
    assert_error(nn_cnn_grow(c, 0, 1, NN_CNN_GROW_RIGL, 0, NULL, NULL, &err), &err, TV_ESTATE,
                 "rigl needs the gradient of a batch");
    assert_error(nn_trainer_input_grad(nn_cnn_head(c), out, &err), &err, TV_ESTATE,
                 "nn_trainer_input_grad: no deltas kept");
    struct nn_cnn_layer_view v;
    assert_error(nn_cnn_layer(c, 2, &v, &err), &err, TV_EINVAL, "nn_cnn_layer: layer 2 of 2");
    assert_error(nn_cnn_prune(c, 5, 1, &err), &err, TV_EINVAL, "nn_cnn_prune: layer 5 of 2");
    assert_error(nn_cnn_grow(c, 0, 1, 9, 0, NULL, NULL, &err), &err, TV_EINVAL, "unknown mode 9");
    nn_cnn_free(c);
    nn_cnn_free(NULL);
}

/* The tiny network as a genome with channels: inputs 0..48 (input channel
 * 0), level 1 channels 1, 2 (pixels 100.., 109..), level 2 channels 3, 4, 5
 * (pixels 200.., 204.., 208..), the head's neurons as ids 49.. */
static void tiny_genome(const struct tiny *t, struct genome *g)
{
    struct tv_error err = {0};
    genome_reset(g);
    for (uint32_t i = 0; i < 49; i++)
        assert_ok(genome_add_neuron(g, i, GENOME_INPUT, GENOME_ACT_IDENTITY, 0, 0, &err), &err);
    for (size_t i = 0; i < t->head->n_neurons; i++) {
        struct genome_neuron n = t->head->neurons[i];
        if (n.kind == GENOME_INPUT)
            continue;
        n.id = 49 + n.id - 12;
        assert_ok(genome_push_neuron(g, &n, &err), &err);
    }
    struct genome_channel ch[6] = {
        {0, GENOME_CHANNEL_INPUT, GENOME_ACT_IDENTITY, 1, 7, 7, 0, 0, 0},
        {1, GENOME_CHANNEL_HIDDEN, GENOME_ACT_RELU, 2, 7, 7, t->b0[0], 0.2f, 100},
        {2, GENOME_CHANNEL_HIDDEN, GENOME_ACT_RELU, 2, 7, 7, t->b0[1], 0.2f, 109},
        {3, GENOME_CHANNEL_HIDDEN, GENOME_ACT_IDENTITY, 1, 2, 2, t->b1[0], 0.4f, 200},
        {4, GENOME_CHANNEL_HIDDEN, GENOME_ACT_IDENTITY, 1, 2, 2, t->b1[1], 0.4f, 204},
        {5, GENOME_CHANNEL_HIDDEN, GENOME_ACT_IDENTITY, 1, 2, 2, t->b1[2], 0.4f, 208}};
    for (size_t i = 0; i < 6; i++)
        assert_ok(genome_add_channel(g, &ch[i], &err), &err);
    const struct nn_cnn_layer *ls[2] = {&t->layer[0], &t->layer[1]};
    uint32_t base[2] = {0, 1};
    for (size_t l = 0; l < 2; l++) {
        const struct nn_cnn_layer *d = ls[l];
        for (size_t a = 0; a < d->n_coefs;) {
            struct genome_coef gc[16];
            size_t b = a;
            for (; b < d->n_coefs && d->coef[b].out == d->coef[a].out &&
                   d->coef[b].in == d->coef[a].in;
                 b++)
                gc[b - a] = (struct genome_coef){d->coef[b].ky, d->coef[b].kx, d->coef[b].w};
            struct genome_filter f = {base[l] + d->coef[a].in,
                                      base[l] + (uint32_t)d->s.in_ch + d->coef[a].out,
                                      (uint8_t)d->s.k_h,
                                      (uint8_t)d->s.k_w,
                                      (uint8_t)d->s.stride,
                                      (uint8_t)d->s.pad,
                                      0,
                                      0};
            assert_ok(genome_add_filter(g, &f, gc, b - a, &err), &err);
            a = b;
        }
    }
    for (size_t k = 0; k < t->head->n_conns; k++) {
        struct genome_conn c = t->head->conns[k];
        c.from = c.from < 12 ? 200 + c.from : 49 + c.from - 12;
        c.to = 49 + c.to - 12;
        assert_ok(genome_push_conn(g, &c, &err), &err);
    }
    assert_ok(genome_canonicalize(g, &err), &err);
    assert_ok(genome_validate(g, NULL, &err), &err);
}

static void test_nn_cnn_from_genome_same_network(void **state)
{
    struct tiny *t = tiny_at(state, 17);
    struct genome *g = &t->g, *w = &t->w;
    tiny_genome(t, g);
    struct nn_train_opts o = tu_batch_opts(8);
    struct nn_cnn *a = tiny_cnn(t, NN_OPT_SGD, 0.01f), *b = NULL;
    struct tv_error err = {0};
    assert_ok(nn_cnn_from_genome(g, &o, &b, &err), &err);
    float x[4 * 49];
    uint32_t labels[4];
    tiny_data(x, labels, 4, 18);
    expect_same_predictions(a, b, x);
    /* untrained, it writes back the genome it was made from */
    assert_ok(nn_cnn_write_genome(b, w, &err), &err);
    assert_true(genome_equal(g, w));
    /* trained, pruned and grown: a valid genome that makes the same network */
    assert_ok(nn_cnn_step(b, x, labels, NULL, 4, NULL, &err), &err);
    assert_ok(nn_cnn_prune(b, 1, 5, &err), &err);
    assert_ok(nn_cnn_grow(b, 0, 2, NN_CNN_GROW_RIGL, 0, NULL, NULL, &err), &err);
    assert_ok(nn_cnn_write_genome(b, w, &err), &err);
    assert_ok(genome_validate(w, NULL, &err), &err);
    assert_int_equal(w->n_coefs, g->n_coefs - 3);
    struct nn_cnn *c = NULL;
    assert_ok(nn_cnn_from_genome(w, &o, &c, &err), &err);
    expect_same_predictions(b, c, x);
    /* w may be the genome itself */
    assert_ok(nn_cnn_write_genome(c, w, &err), &err);
    assert_ok(genome_validate(w, NULL, &err), &err);
    nn_cnn_free(a);
    nn_cnn_free(b);
    nn_cnn_free(c);
}

/* The trainer's forward pass (nn_cnn_predict) and the inference engine
 * (nn_plan_compile of the genome with channels, nn_step: what net eval, net
 * test and a search run) compute the same network: at batch 1 and 4, and
 * before and after training, the outputs have the same bits (one order of
 * every sum: the conv kernel's, then the engine's for the head). */
static void test_nn_cnn_predict_matches_engine(void **state)
{
    struct tiny *t = tiny_at(state, 23);
    struct genome *g = &t->g, *w = &t->w;
    tiny_genome(t, g);
    struct nn_train_opts o = tu_batch_opts(8);
    struct nn_cnn *c = NULL;
    struct tv_error err = {0};
    assert_ok(nn_cnn_from_genome(g, &o, &c, &err), &err);
    float x[4 * 49], oc[4 * 3], oe[4 * 3];
    uint32_t labels[4];
    tiny_data(x, labels, 4, 24);
    for (int trained = 0; trained < 2; trained++) {
        if (trained) { /* a few steps move every weight away from the start */
            for (int k = 0; k < 5; k++)
                assert_ok(nn_cnn_step(c, x, labels, NULL, 4, NULL, &err), &err);
            assert_ok(nn_cnn_write_genome(c, w, &err), &err);
        }
        assert_ok(nn_cnn_predict(c, x, 4, oc, &err), &err);
        for (size_t batch = 1; batch <= 4; batch += 3) {
            struct nn_plan *p = NULL;
            struct nn_state *st = NULL;
            assert_ok(nn_plan_compile(trained ? w : g, NULL, &p, &err), &err);
            assert_ok(nn_state_new(p, batch, &st, &err), &err);
            for (size_t r = 0; r < 4; r += batch) {
                nn_state_reset(st);
                nn_step(st, x + r * 49, oe + r * 3);
            }
            for (size_t k = 0; k < 4 * 3; k++)
                if (memcmp(&oc[k], &oe[k], sizeof oc[k])) {
                    print_error("trained %d batch %zu output %zu: cnn %.9g, engine %.9g\n", trained,
                                batch, k, (double)oc[k], (double)oe[k]);
                    fail();
                }
            nn_state_free(st);
            nn_plan_free(p);
        }
    }
    nn_cnn_free(c);
}

static void test_nn_cnn_from_genome_errors(void **state)
{
    struct tiny *t = tiny_at(state, 19);
    struct genome *g = &t->g;
    struct nn_train_opts o = tu_batch_opts(8);
    struct nn_cnn *c = NULL;
    struct tv_error err = {0};
    /* a genome without channels */
    assert_error(nn_cnn_from_genome(t->head, &o, &c, &err), &err, TV_EINVAL,
                 "nn_cnn_from_genome: no input channel");
    assert_null(c);
    /* channels at one depth that differ */
    tiny_genome(t, g);
    g->channels[4].act = GENOME_ACT_RELU;
    assert_error(nn_cnn_from_genome(g, &o, &c, &err), &err, TV_EINVAL,
                 "channels 3 and 4 are at one depth but differ");
    /* a filter that skips a level (from the inputs into level 2) */
    tiny_genome(t, g);
    struct genome_coef one = {0, 0, 0.5f};
    struct genome_filter f = {0, 5, 6, 6, 1, 0, 0, 0};
    assert_ok(genome_add_filter(g, &f, &one, 1, &err), &err);
    assert_error(nn_cnn_from_genome(g, &o, &c, &err), &err, TV_EINVAL,
                 "filter (0, 5) skips a level");
    /* a connection from a pixel of level 1 into the head */
    tiny_genome(t, g);
    assert_ok(genome_push_conn(g, &(struct genome_conn){100, 49, 1}, &err), &err);
    assert_ok(genome_canonicalize(g, &err), &err);
    assert_error(nn_cnn_from_genome(g, &o, &c, &err), &err, TV_EINVAL,
                 "connection 100 -> 49: the head starts at the deepest channels' pixels");
    /* a spiking neuron of the head, named by the genome's id (not the head's) */
    tiny_genome(t, g);
    size_t k = g->n_neurons - 1;
    genome_neuron_set_model(&g->neurons[k], GENOME_MODEL_CUBA);
    char want[128];
    snprintf(want, sizeof want,
             "nn_cnn_from_genome: neuron %u: model cuba is not run by the trainer (rate neurons "
             "only)",
             g->neurons[k].id);
    assert_error(nn_cnn_from_genome(g, &o, &c, &err), &err, TV_EINVAL, want);
    assert_null(c);
    /* write_genome of a trainer made from a description */
    struct nn_cnn *d = tiny_cnn(t, NN_OPT_SGD, 0.1f);
    assert_error(nn_cnn_write_genome(d, g, &err), &err, TV_ESTATE, "not made from a genome");
    nn_cnn_free(d);
}

/* join_levels (a search that trains its children with this trainer): new
 * channels join an existing level (its depth and activation, never
 * hidden_act), new filters take their level's geometry, and the trainer
 * takes every child. */
static void test_genome_mutate_conv_join_levels_trainable(void **state)
{
    struct tiny *t = tiny_at(state, 23);
    struct genome *g = &t->g;
    struct genome_mutation m = {0};
    m.weight_init_sd = 0.5;
    m.hidden_act = GENOME_ACT_SIGMOID;
    m.conv.add_channel_rate = 1;
    m.conv.add_filter_rate = 1;
    m.conv.join_levels = 1;
    struct nn_train_opts o = tu_batch_opts(8);
    struct tv_error err = {0};
    size_t added = 0;
    for (uint64_t seed = 0; seed < 12; seed++) {
        tiny_genome(t, g);
        struct tv_rng rng = tu_rng(seed, 3, 4);
        for (int k = 0; k < 4; k++) {
            size_t before = g->n_channels;
            assert_ok(genome_mutate(g, &m, &rng, &err), &err);
            assert_ok(genome_validate(g, NULL, &err), &err);
            for (size_t i = 6; i < g->n_channels; i++) { /* the new ones */
                const struct genome_channel *c = &g->channels[i];
                int level1 = c->depth == 0.2f, level2 = c->depth == 0.4f;
                assert_true(level1 || level2);
                assert_int_equal(c->act, level1 ? GENOME_ACT_RELU : GENOME_ACT_IDENTITY);
                assert_int_equal(c->pool, level1 ? 2 : 1);
            }
            added += g->n_channels - before;
            struct nn_cnn *c = NULL;
            assert_ok(nn_cnn_from_genome(g, &o, &c, &err), &err);
            nn_cnn_free(c);
        }
    }
    assert_true(added >= 12);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        TINY_TEST(test_nn_cnn_grad_matches_finite_differences),
        TINY_TEST(test_nn_trainer_input_grad_matches_finite_differences),
        TINY_TEST(test_nn_trainer_update_after_grad_is_step),
        TINY_TEST(test_nn_cnn_step_reduces_loss),
        TINY_TEST(test_nn_cnn_prune_removes_coefficients),
        TINY_TEST(test_nn_cnn_grow_rigl_largest_gradient),
        TINY_TEST(test_nn_cnn_deterministic),
        TINY_TEST(test_nn_cnn_new_errors),
        TINY_TEST(test_nn_cnn_call_errors),
        TINY_TEST(test_nn_cnn_from_genome_same_network),
        TINY_TEST(test_nn_cnn_predict_matches_engine),
        TINY_TEST(test_nn_cnn_from_genome_errors),
        TINY_TEST(test_genome_mutate_conv_join_levels_trainable),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
