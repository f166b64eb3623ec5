/* test_conv.c -- the convolution layer (nn/conv/conv.h): the sparse engine and the
 * dense layer against the plain-loop reference on random layers (strides,
 * padding, odd sizes, 1x1 to 5x5 kernels, empty filters, no coefficients,
 * batches of 1 to 64), forward and backward; the same bits on every SIMD
 * target; pooling, bias and activation; every error of nn_conv_new;
 * allocation failures. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "conv.h"
#include "failalloc.h"
#include "nn.h"
#include "testutil.h"

/* ---- random layers ------------------------------------------------------------ */

struct layer {
    struct nn_conv_shape s;
    struct nn_conv_coef *c;
    size_t n, batch, nx, ny;
    float *x, *dy;
};

/* A random layer of shape s, each coefficient present with probability
 * density (so whole filters are often absent), inputs and dL/dy normal. */
static void layer_make(struct layer *L, const struct nn_conv_shape *s, double density, size_t batch,
                       uint64_t seed)
{
    struct tv_rng rng = tu_rng(seed, 0xc0, 0);
    L->s = *s;
    L->batch = batch;
    size_t all = s->in_ch * s->out_ch * s->k_h * s->k_w;
    L->c = malloc((all ? all : 1) * sizeof *L->c);
    assert_non_null(L->c);
    L->n = 0;
    for (uint32_t o = 0; o < s->out_ch; o++)
        for (uint32_t i = 0; i < s->in_ch; i++)
            for (uint8_t ky = 0; ky < s->k_h; ky++)
                for (uint8_t kx = 0; kx < s->k_w; kx++)
                    if (tv_rng_chance(&rng, density))
                        L->c[L->n++] =
                            (struct nn_conv_coef){o, i, ky, kx, (float)tv_rng_normal(&rng)};
    L->nx = s->in_ch * s->in_h * s->in_w * batch;
    L->ny = s->out_ch * nn_conv_out_h(s) * nn_conv_out_w(s) * batch;
    L->x = malloc(L->nx * sizeof *L->x);
    L->dy = malloc(L->ny * sizeof *L->dy);
    assert_true(L->x && L->dy);
    for (size_t k = 0; k < L->nx; k++)
        L->x[k] = (float)tv_rng_normal(&rng);
    for (size_t k = 0; k < L->ny; k++)
        L->dy[k] = (float)tv_rng_normal(&rng);
}

/* A random layer of shape s at density 0.5, and the sparse layer of it. */
static struct nn_conv *layer_with_conv(struct layer *L, const struct nn_conv_shape *s, size_t batch,
                                       uint64_t seed)
{
    layer_make(L, s, 0.5, batch, seed);
    struct tv_error err = {0};
    struct nn_conv *l = NULL;
    assert_ok(nn_conv_new(s, L->c, L->n, batch, &l, &err), &err);
    return l;
}

static void layer_free(struct layer *L)
{
    TV_FREE_ALL(L->c, L->x, L->dy);
}

static float *fmalloc(size_t n)
{
    float *p = malloc((n ? n : 1) * sizeof *p);
    assert_non_null(p);
    return p;
}

static float *fabs_copy(const float *v, size_t n)
{
    float *p = fmalloc(n);
    for (size_t i = 0; i < n; i++)
        p[i] = fabsf(v[i]);
    return p;
}

/* |got - want| <= 1e-5 bound + 1e-6 for each of n values, bound the sum of
 * the absolute values of the terms (the reference on |w|, |x|, |dy|). */
static void assert_close(const char *what, const float *got, const float *want, const float *bound,
                         size_t n)
{
    for (size_t i = 0; i < n; i++)
        if (!(fabsf(got[i] - want[i]) <= 1e-5f * bound[i] + 1e-6f)) {
            print_error("%s[%zu]: got %.9g, want %.9g (terms' |sum| %.9g)\n", what, i,
                        (double)got[i], (double)want[i], (double)bound[i]);
            fail();
        }
}

/* The reference on L, and on the absolute values (for the bounds): y, dx,
 * dw and their bounds. */
struct expect {
    float *y, *dx, *dw, *by, *bdx, *bdw;
};

/* The reference on L's shape and batch with coefficients c, input x and
 * gradient dy: y, dx and dw, new. */
static void reference(const struct layer *L, const struct nn_conv_coef *c, const float *x,
                      const float *dy, float **y, float **dx, float **dw)
{
    struct tv_error err = {0};
    *y = fmalloc(L->ny);
    *dx = fmalloc(L->nx);
    *dw = fmalloc(L->n);
    assert_ok(nn_conv_ref_forward(&L->s, c, L->n, x, L->batch, *y, &err), &err);
    assert_ok(nn_conv_ref_backward(&L->s, c, L->n, x, dy, L->batch, *dx, *dw, &err), &err);
}

static void expect_make(const struct layer *L, struct expect *e)
{
    reference(L, L->c, L->x, L->dy, &e->y, &e->dx, &e->dw);
    struct nn_conv_coef *ac = malloc((L->n ? L->n : 1) * sizeof *ac);
    assert_non_null(ac);
    for (size_t k = 0; k < L->n; k++) {
        ac[k] = L->c[k];
        ac[k].w = fabsf(ac[k].w);
    }
    float *ax = fabs_copy(L->x, L->nx), *ady = fabs_copy(L->dy, L->ny);
    reference(L, ac, ax, ady, &e->by, &e->bdx, &e->bdw);
    TV_FREE_ALL(ac, ax, ady);
}

static void expect_free(struct expect *e)
{
    TV_FREE_ALL(e->y, e->dx, e->dw, e->by, e->bdx, e->bdw);
}

/* The sparse layer on L against the reference, forward and backward, with
 * max_batch larger than the batch; returns the layer for more checks. */
static struct nn_conv *check_sparse(const struct layer *L, const struct expect *e)
{
    struct tv_error err = {0};
    struct nn_conv *l = NULL;
    assert_ok(nn_conv_new(&L->s, L->c, L->n, L->batch + 2, &l, &err), &err);
    assert_int_equal(nn_conv_n_coefs(l), L->n);
    assert_true(nn_conv_bytes(l) > L->n * sizeof(struct nn_conv_coef));
    float *y = fmalloc(L->ny), *dx = fmalloc(L->nx), *dw = fmalloc(L->n);
    memset(y, 0x7f, L->ny * sizeof *y); /* overwritten, whatever was there */
    nn_conv_forward(l, L->x, L->batch, y);
    assert_close("y", y, e->y, e->by, L->ny);
    memset(dx, 0x7f, L->nx * sizeof *dx);
    nn_conv_backward(l, L->x, L->dy, L->batch, dx, dw);
    assert_close("dx", dx, e->dx, e->bdx, L->nx);
    assert_close("dw", dw, e->dw, e->bdw, L->n);
    /* dx alone and dw alone give the same */
    float *dx2 = fmalloc(L->nx), *dw2 = fmalloc(L->n);
    nn_conv_backward(l, L->x, L->dy, L->batch, dx2, NULL);
    nn_conv_backward(l, L->x, L->dy, L->batch, NULL, dw2);
    assert_memory_equal(dx2, dx, L->nx * sizeof *dx);
    if (L->n)
        assert_memory_equal(dw2, dw, L->n * sizeof *dw);
    TV_FREE_ALL(dx2, dw2, y, dx, dw);
    return l;
}

static void check_dense(const struct layer *L, const struct expect *e)
{
    struct tv_error err = {0};
    const struct nn_conv_shape *s = &L->s;
    size_t kk = s->in_ch * s->k_h * s->k_w;
    float *w = calloc(s->out_ch * kk, sizeof *w), *y = fmalloc(L->ny);
    assert_non_null(w);
    for (size_t k = 0; k < L->n; k++)
        w[L->c[k].out * kk + (L->c[k].in * s->k_h + L->c[k].ky) * s->k_w + L->c[k].kx] = L->c[k].w;
    struct nn_conv_dense *d = NULL;
    assert_ok(nn_conv_dense_new(s, w, L->batch, &d, &err), &err);
    nn_conv_dense_forward(d, L->x, L->batch, y);
    assert_close("dense y", y, e->y, e->by, L->ny);
    nn_conv_dense_free(d);
    TV_FREE_ALL(w, y);
}

struct conv_case {
    size_t in, out, h, w, kh, kw, stride, pad;
    double density;
    size_t batch;
};

static void run_case(const struct conv_case *k, uint64_t seed)
{
    struct nn_conv_shape s = {k->in, k->out, k->h, k->w, k->kh, k->kw, k->stride, k->pad};
    struct layer L;
    struct expect e;
    layer_make(&L, &s, k->density, k->batch, seed);
    expect_make(&L, &e);
    nn_conv_free(check_sparse(&L, &e));
    check_dense(&L, &e);
    expect_free(&e);
    layer_free(&L);
}

static const struct conv_case cases[] = {
    {3, 4, 7, 9, 3, 3, 1, 1, 0.5, 1},
    {2, 3, 11, 8, 3, 3, 2, 0, 0.7, 3},
    {4, 2, 9, 9, 5, 5, 2, 2, 0.3, 17},
    {5, 6, 6, 5, 1, 1, 1, 0, 0.8, 64},
    {3, 5, 13, 13, 3, 3, 2, 1, 0.4, 64},
    {2, 2, 5, 7, 5, 5, 1, 2, 0.6, 3},
    {3, 2, 8, 10, 3, 5, 1, 1, 0.5, 17},
    {2, 3, 10, 11, 3, 3, 3, 2, 0.6, 1},
    {6, 7, 12, 9, 3, 3, 1, 0, 0.1, 3},
    {1, 1, 1, 1, 1, 1, 1, 0, 1.0, 1},
    {2, 2, 4, 4, 3, 3, 1, 2, 0.9, 17},
    {4, 4, 7, 7, 5, 5, 2, 0, 0.5, 64},
    /* rows of 512 floats or more at batch 17: written in place */
    {2, 3, 5, 31, 3, 3, 1, 1, 0.5, 17},
    {2, 2, 6, 33, 3, 3, 2, 1, 0.5, 17},
    {2, 3, 7, 6, 3, 5, 1, 2, 0.5, 64},
    /* rows longer than one pass of columns (48 planes or maps, 13 x 64 floats a row) */
    {48, 48, 5, 13, 3, 3, 1, 1, 0.05, 64},
    /* stride 1, batches of a multiple of 16: read in place (the direct kernel),
     * with the borders' tests: pads up to k - 1 (rows and columns with no
     * input at all), maps narrower than the kernel, a 1-row kernel */
    {3, 4, 7, 9, 3, 3, 1, 1, 0.5, 16},
    {2, 3, 5, 2, 3, 3, 1, 2, 0.7, 32},
    {4, 3, 1, 6, 1, 3, 1, 0, 0.6, 16},
    {3, 2, 9, 4, 5, 5, 1, 2, 0.5, 48},
    {3, 3, 6, 6, 5, 5, 1, 4, 0.5, 16},
    {5, 4, 3, 3, 3, 3, 1, 1, 1.0, 32},
};

static void test_nn_conv_matches_reference(void **state)
{
    (void)state;
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++)
        run_case(&cases[i], i + 1);
}

static void test_nn_conv_no_coefficients_gives_zeros(void **state)
{
    (void)state;
    struct conv_case k = {3, 4, 6, 6, 3, 3, 1, 1, 0.0, 3};
    struct nn_conv_shape s = {3, 4, 6, 6, 3, 3, 1, 1};
    struct layer L;
    struct expect e;
    layer_make(&L, &s, k.density, k.batch, 7);
    assert_int_equal(L.n, 0);
    expect_make(&L, &e);
    for (size_t i = 0; i < L.ny; i++)
        assert_true(e.y[i] == 0.0f);
    nn_conv_free(check_sparse(&L, &e));
    expect_free(&e);
    layer_free(&L);
}

/* Every target the CPU has gives the same bits as the default one. */
/* The same bits on every target for the layer of shape s at `batch`; with
 * per_sample, also each sample's y and dL/dx are the bits of that sample
 * run alone (batch 1: the padded form, where the batch takes the direct
 * kernel). */
static void check_targets(const struct nn_conv_shape *s, size_t batch, uint64_t seed,
                          int per_sample)
{
    struct layer L;
    struct tv_error err = {0};
    struct nn_conv *l = layer_with_conv(&L, s, batch, seed);
    float *y0 = fmalloc(L.ny), *dx0 = fmalloc(L.nx), *dw0 = fmalloc(L.n);
    float *y = fmalloc(L.ny), *dx = fmalloc(L.nx), *dw = fmalloc(L.n);
    assert_ok(nn_conv_set_target(l, NN_TARGET_DEFAULT, &err), &err);
    assert_int_equal(nn_conv_target(l), NN_TARGET_DEFAULT);
    nn_conv_forward(l, L.x, L.batch, y0);
    nn_conv_backward(l, L.x, L.dy, L.batch, dx0, dw0);
    for (int t = 1; t < NN_TARGET_COUNT; t++) {
        if (nn_conv_set_target(l, t, &err))
            continue; /* not on this CPU */
        nn_conv_forward(l, L.x, L.batch, y);
        nn_conv_backward(l, L.x, L.dy, L.batch, dx, dw);
        assert_memory_equal(y, y0, L.ny * sizeof *y);
        assert_memory_equal(dx, dx0, L.nx * sizeof *dx);
        assert_memory_equal(dw, dw0, L.n * sizeof *dw);
    }
    assert_error(nn_conv_set_target(l, NN_TARGET_COUNT, &err), &err, TV_EINVAL,
                 "nn_conv_set_target: unknown target 3");
    size_t px = L.nx / batch, py = L.ny / batch; /* floats per sample */
    for (size_t b = 0; per_sample && b < batch; b++) {
        float *x1 = fmalloc(px), *dy1 = fmalloc(py), *y1 = fmalloc(py), *dx1 = fmalloc(px);
        for (size_t i = 0; i < px; i++)
            x1[i] = L.x[i * batch + b];
        for (size_t i = 0; i < py; i++)
            dy1[i] = L.dy[i * batch + b];
        nn_conv_forward(l, x1, 1, y1);
        nn_conv_backward(l, x1, dy1, 1, dx1, NULL);
        for (size_t i = 0; i < py; i++)
            assert_memory_equal(&y1[i], &y0[i * batch + b], sizeof *y1);
        for (size_t i = 0; i < px; i++)
            assert_memory_equal(&dx1[i], &dx0[i * batch + b], sizeof *dx1);
        TV_FREE_ALL(x1, dy1, y1, dx1);
    }
    nn_conv_free(l);
    TV_FREE_ALL(y0, dx0, dw0, y, dx, dw);
    layer_free(&L);
}

static void test_nn_conv_targets_same_bits(void **state)
{
    (void)state;
    struct nn_conv_shape padded = {5, 6, 11, 9, 3, 3, 2, 1};
    check_targets(&padded, 17, 11, 0);
    /* the direct kernel: rows of 15 pixels x 32 floats, 7 blocks, pads 1 and 2 */
    struct nn_conv_shape direct = {5, 6, 7, 15, 3, 3, 1, 1}, wide = {3, 4, 6, 13, 5, 5, 1, 2};
    check_targets(&direct, 32, 12, 1);
    check_targets(&wide, 64, 13, 1);
}

/* One layer, batches of changing size in turn (its scratch is laid out per
 * batch size, rows written in place or not), each against the reference. */
static void test_nn_conv_batch_sizes_alternate(void **state)
{
    (void)state;
    struct nn_conv_shape s = {3, 4, 9, 8, 3, 3, 1, 1};
    static const size_t batches[] = {64, 3, 64, 1, 17, 17, 64};
    static const size_t kinds[] = {64, 3, 1, 17};
    struct layer L[4];
    struct expect e[4];
    for (int i = 0; i < 4; i++) {
        layer_make(&L[i], &s, 0.5, kinds[i], 21);
        expect_make(&L[i], &e[i]);
    }
    struct tv_error err = {0};
    struct nn_conv *l = NULL;
    assert_ok(nn_conv_new(&s, L[0].c, L[0].n, 64, &l, &err), &err);
    for (size_t t = 0; t < sizeof batches / sizeof batches[0]; t++) {
        int i = 0;
        while (kinds[i] != batches[t])
            i++;
        const struct layer *P = &L[i];
        const struct expect *E = &e[i];
        float *y = fmalloc(P->ny), *dx = fmalloc(P->nx), *dw = fmalloc(P->n);
        nn_conv_backward(l, P->x, P->dy, P->batch, dx, dw);
        assert_close("dx", dx, E->dx, E->bdx, P->nx);
        assert_close("dw", dw, E->dw, E->bdw, P->n);
        nn_conv_forward(l, P->x, P->batch, y);
        assert_close("y", y, E->y, E->by, P->ny);
        TV_FREE_ALL(y, dx, dw);
    }
    nn_conv_free(l);
    for (int i = 0; i < 4; i++) {
        expect_free(&e[i]);
        layer_free(&L[i]);
    }
}

/* Weights changed through nn_conv_weights are the ones the next call uses. */
static void test_nn_conv_weights_written_are_used(void **state)
{
    (void)state;
    struct nn_conv_shape s = {2, 3, 6, 7, 3, 3, 1, 1};
    struct layer L;
    struct tv_error err = {0};
    struct nn_conv *l = layer_with_conv(&L, &s, 3, 5);
    float *w = nn_conv_weights(l);
    for (size_t k = 0; k < L.n; k++) {
        assert_true(w[k] == L.c[k].w);
        w[k] = L.c[k].w = (float)k * 0.25f - 1.0f;
    }
    nn_conv_free(l);
    struct expect e;
    expect_make(&L, &e);
    /* a fresh layer with the new list against one whose weights were written */
    assert_ok(nn_conv_new(&s, L.c, L.n, L.batch, &l, &err), &err);
    float *y = fmalloc(L.ny);
    nn_conv_forward(l, L.x, L.batch, y);
    assert_close("y", y, e.y, e.by, L.ny);
    free(y);
    nn_conv_free(l);
    expect_free(&e);
    layer_free(&L);
}

/* ---- errors -------------------------------------------------------------------- */

static void expect_new_error(const struct nn_conv_shape *s, const struct nn_conv_coef *c, size_t n,
                             size_t max_batch, const char *msg)
{
    struct tv_error err = {0};
    struct nn_conv *l = (struct nn_conv *)&err; /* set to NULL on error */
    assert_error(nn_conv_new(s, c, n, max_batch, &l, &err), &err, TV_EINVAL, msg);
    assert_null(l);
}

static void test_nn_conv_new_bad_shape(void **state)
{
    (void)state;
    const struct nn_conv_shape ok = {2, 3, 8, 8, 3, 3, 1, 1};
    static const struct {
        struct nn_conv_shape s; /* in, out, h, w, k_h, k_w, stride, pad */
        const char *msg;
    } bad[] = {
        {{0, 3, 8, 8, 3, 3, 1, 1}, "nn_conv_new: 0 input and 3 output channels"},
        {{2, 70000, 8, 8, 3, 3, 1, 1}, "2 input and 70000 output channels: expected 1..65536"},
        {{2, 3, 8, 0, 3, 3, 1, 1}, "nn_conv_new: input map 8 x 0"},
        {{2, 3, 8, 8, 17, 3, 1, 1}, "nn_conv_new: kernel 17 x 3: expected 1..16"},
        {{2, 3, 8, 8, 3, 0, 1, 1}, "nn_conv_new: kernel 3 x 0"},
        {{2, 3, 8, 8, 3, 3, 0, 1}, "nn_conv_new: stride 0: expected 1..16"},
        {{2, 3, 8, 8, 3, 3, 1, 3}, "nn_conv_new: padding 3: expected less than the kernel"},
        {{2, 3, 2, 8, 5, 3, 1, 0},
         "nn_conv_new: a 5 x 3 kernel with padding 0 does not fit the 2 x 8 map"},
    };
    expect_new_error(NULL, NULL, 0, 1, "nn_conv_new: no shape (NULL)");
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++)
        expect_new_error(&bad[i].s, NULL, 0, 1, bad[i].msg);
    expect_new_error(&ok, NULL, 0, 0, "nn_conv_new: max_batch 0: expected 1..65536");
    expect_new_error(&ok, NULL, 2, 1, "nn_conv_new: no coefficients (NULL) for n = 2");
}

static void test_nn_conv_new_bad_coefficients(void **state)
{
    (void)state;
    const struct nn_conv_shape s = {2, 3, 8, 8, 3, 3, 1, 1};
    struct nn_conv_coef c[2] = {{0, 1, 0, 0, 1.0f}, {2, 0, 2, 2, -1.0f}};
    c[1].out = 3;
    expect_new_error(&s, c, 2, 1,
                     "nn_conv_new: coefficient 1: channels 0 -> 3 out of range (2 input, 3 output");
    c[1].out = 2, c[1].in = 2;
    expect_new_error(&s, c, 2, 1, "coefficient 1: channels 2 -> 2 out of range");
    c[1].in = 0, c[1].kx = 3;
    expect_new_error(&s, c, 2, 1, "nn_conv_new: coefficient 1: offset (2, 3) out of the 3 x 3");
    c[1].kx = 2, c[1].w = NAN;
    expect_new_error(&s, c, 2, 1, "nn_conv_new: coefficient 1: weight nan is not finite");
    c[1].w = INFINITY;
    expect_new_error(&s, c, 2, 1, "coefficient 1: weight inf is not finite");
    c[1] = c[0];
    expect_new_error(&s, c, 2, 1, "coefficient 1 (1 -> 0 at 0, 0) is a duplicate of coefficient 0");
    c[1].out = 0, c[1].in = 0;
    expect_new_error(&s, c, 2, 1,
                     "coefficient 1 (0 -> 0 at 0, 0) comes after coefficient 0: the list must be "
                     "sorted by (out, in, ky, kx)");
}

static void test_nn_conv_ref_bad_arguments(void **state)
{
    (void)state;
    const struct nn_conv_shape s = {1, 1, 3, 3, 3, 3, 1, 1}, bad = {1, 1, 3, 3, 3, 3, 1, 3};
    struct nn_conv_coef c = {0, 0, 1, 1, 2.0f};
    float x[9] = {0}, y[9], dx[9], dw[1];
    struct tv_error err = {0};
    assert_error(nn_conv_ref_forward(&s, &c, 1, x, 0, y, &err), &err, TV_EINVAL,
                 "nn_conv_ref_forward: batch is 0");
    assert_error(nn_conv_ref_backward(&bad, &c, 1, x, y, 1, dx, dw, &err), &err, TV_EINVAL,
                 "nn_conv_ref_backward: padding 3");
    c.ky = 3;
    assert_error(nn_conv_ref_forward(&s, &c, 1, x, 1, y, &err), &err, TV_EINVAL,
                 "nn_conv_ref_forward: coefficient 0: offset (3, 1)");
    struct nn_conv_dense *d = (struct nn_conv_dense *)&err;
    assert_error(nn_conv_dense_new(&s, NULL, 1, &d, &err), &err, TV_EINVAL,
                 "nn_conv_dense_new: no weights (NULL)");
    assert_null(d);
    assert_error(nn_conv_dense_new(&s, x, 0, &d, &err), &err, TV_EINVAL,
                 "nn_conv_dense_new: max_batch 0");
    assert_error(nn_conv_dense_new(&bad, x, 1, &d, &err), &err, TV_EINVAL,
                 "nn_conv_dense_new: padding 3");
}

static void test_nn_conv_alloc_aligned(void **state)
{
    (void)state;
    static const size_t sizes[] = {0, 1, 15, 16, 17, 1000};
    for (size_t i = 0; i < sizeof sizes / sizeof sizes[0]; i++) {
        float *p = nn_conv_alloc(sizes[i]);
        assert_non_null(p);
        assert_int_equal((uintptr_t)p % 64, 0);
        for (size_t k = 0; k < sizes[i]; k++) /* writable to its end (ASan) */
            p[k] = (float)k;
        free(p);
    }
    assert_null(nn_conv_alloc(SIZE_MAX / 4)); /* its size does not wrap */
}

static void test_nn_conv_out_size(void **state)
{
    (void)state;
    struct nn_conv_shape s = {1, 1, 28, 27, 3, 3, 2, 1};
    assert_int_equal(nn_conv_out_h(&s), 14); /* (28 + 2 - 3) / 2 + 1 */
    assert_int_equal(nn_conv_out_w(&s), 14); /* (27 + 2 - 3) / 2 + 1 */
    s.in_h = 1, s.pad = 0;
    assert_int_equal(nn_conv_out_h(&s), 0);
    s.stride = 0;
    assert_int_equal(nn_conv_out_w(&s), 0);
}

static void test_nn_conv_prefer_dense_at_threshold(void **state)
{
    (void)state;
    struct nn_conv_shape s = {10, 10, 8, 8, 1, 1, 1, 0}; /* 100 coefficients dense */
    size_t at = (size_t)(NN_CONV_DENSE_ABOVE * 100.0);
    assert_false(nn_conv_prefer_dense(&s, at));
    assert_true(nn_conv_prefer_dense(&s, at + 1));
    assert_true(nn_conv_prefer_dense(&s, 100));
    assert_false(nn_conv_prefer_dense(&s, 0));
}

/* ---- allocation failures ------------------------------------------------------ */

static void test_nn_conv_new_out_of_memory(void **state)
{
    (void)state;
    struct nn_conv_shape s = {2, 3, 6, 6, 3, 3, 2, 1};
    struct layer L;
    layer_make(&L, &s, 0.5, 3, 3);
    float *w = calloc(3 * 2 * 9, sizeof *w), *y = fmalloc(L.ny), *dx = fmalloc(L.nx),
          *dw = fmalloc(L.n);
    assert_non_null(w);
    for (int which = 0; which < 4; which++) {
        for (unsigned long k = 1;; k++) {
            struct tv_error err = {0};
            struct nn_conv *l = NULL;
            struct nn_conv_dense *d = NULL;
            failalloc_track(1);
            size_t live = failalloc_live();
            failalloc_arm(k);
            int rc = which == 0   ? nn_conv_new(&s, L.c, L.n, 3, &l, &err)
                     : which == 1 ? nn_conv_dense_new(&s, w, 3, &d, &err)
                     : which == 2 ? nn_conv_ref_forward(&s, L.c, L.n, L.x, 3, y, &err)
                                  : nn_conv_ref_backward(&s, L.c, L.n, L.x, L.dy, 3, dx, dw, &err);
            failalloc_disarm();
            int fired = failalloc_fired();
            if (fired) {
                assert_error(rc, &err, TV_ENOMEM, "out of memory");
                assert_null(l);
                assert_null(d);
            } else {
                assert_ok(rc, &err);
            }
            nn_conv_free(l);
            nn_conv_dense_free(d);
            assert_int_equal(failalloc_live(), live);
            failalloc_track(0);
            if (!fired)
                break;
        }
    }
    TV_FREE_ALL(w, y, dx, dw);
    layer_free(&L);
}

/* ---- around a convolution ----------------------------------------------------- */

static void test_nn_conv_bias_act_relu(void **state)
{
    (void)state;
    /* 2 channels of 1 x 2 pixels, batch 2 */
    float y[8] = {1, -2, 0.5f, -0.25f, -1, 3, 0, 2};
    const float bias[2] = {0.5f, -1};
    nn_conv_bias_act(y, 2, 1, 2, 2, bias, GENOME_ACT_RELU);
    const float want[8] = {1.5f, 0, 1, 0.25f, 0, 2, 0, 1};
    assert_memory_equal(y, want, sizeof y);
    float z[2] = {-1, 2};
    nn_conv_bias_act(z, 1, 1, 1, 2, NULL, GENOME_ACT_IDENTITY);
    assert_true(z[0] == -1 && z[1] == 2);
    nn_conv_bias_act(z, 1, 1, 1, 2, NULL, GENOME_ACT_TANH);
    assert_true(z[0] == tanhf(-1) && z[1] == tanhf(2));
}

/* Bias + relu, relu's gradient and max pooling on maps of a batch of 37
 * (vectors of 16 and a tail), with ties, -0, NaN and values of both signs,
 * against the plain per-value formulas, bit for bit. */
static void test_nn_conv_row_kernels_match_plain_loops(void **state)
{
    (void)state;
    enum { CH = 3, H = 5, W = 6, B = 37, N = CH * H * W * B };
    struct tv_rng rng = tu_rng(21, 0, 0);
    float *x = fmalloc(N), *y = fmalloc(N), *g = fmalloc(N), *want = fmalloc(N);
    for (size_t i = 0; i < N; i++) {
        uint32_t r = tv_rng_below(&rng, 20);
        x[i] = r == 0 ? -0.0f : r == 1 ? NAN : r < 5 ? 1.0f : (float)tv_rng_normal(&rng);
        g[i] = (float)tv_rng_normal(&rng);
    }
    const float bias[CH] = {0.25f, -0.5f, 0.0f};
    memcpy(y, x, N * sizeof *y);
    nn_conv_bias_act(y, CH, H, W, B, bias, GENOME_ACT_RELU);
    for (size_t i = 0; i < N; i++) {
        float s = x[i] + bias[i / (H * W * B)];
        want[i] = s > 0.0f ? s : 0.0f;
    }
    assert_memory_equal(y, want, N * sizeof *y);
    memcpy(y, g, N * sizeof *y);
    nn_conv_relu_grad(y, x, N);
    for (size_t i = 0; i < N; i++)
        want[i] = x[i] > 0.0f ? g[i] : 0.0f;
    assert_memory_equal(y, want, N * sizeof *y);
    /* 2 x 2 pooling (the last row dropped): the first maximum in row order */
    enum { OH = H / 2, OW = W / 2, NO = CH * OH * OW * B };
    float *p = fmalloc(NO), *pw = fmalloc(NO);
    uint32_t arg[NO], aw[NO];
    nn_conv_pool_max(x, CH, H, W, B, 2, p, arg);
    for (size_t c = 0; c < CH; c++)
        for (size_t oy = 0; oy < OH; oy++)
            for (size_t ox = 0; ox < OW; ox++)
                for (size_t b = 0; b < B; b++) {
                    size_t o = ((c * OH + oy) * OW + ox) * B + b, best = SIZE_MAX;
                    for (size_t dy = 0; dy < 2; dy++)
                        for (size_t dx = 0; dx < 2; dx++) {
                            size_t i = ((c * H + 2 * oy + dy) * W + 2 * ox + dx) * B + b;
                            if (best == SIZE_MAX || x[i] > x[best])
                                best = i;
                        }
                    pw[o] = x[best];
                    aw[o] = (uint32_t)best;
                }
    assert_memory_equal(p, pw, NO * sizeof *p);
    assert_memory_equal(arg, aw, sizeof arg);
    TV_FREE_ALL(x, y, g, want, p, pw);
}

static void test_nn_conv_pool_max_forward_backward(void **state)
{
    (void)state;
    /* one channel 4 x 5 (the last column dropped), batch 2: sample 0 then 1 per pixel */
    float x[40];
    for (int i = 0; i < 20; i++) {
        x[2 * i] = (float)((i * 7) % 11);
        x[2 * i + 1] = 1.0f; /* all tied: the first in row order wins */
    }
    float y[8];
    uint32_t arg[8];
    nn_conv_pool_max(x, 1, 4, 5, 2, 2, y, arg);
    /* sample 0: window (0,0): pixels 0,1,5,6 -> values 0,7,2,9 -> 9 at pixel 6 */
    assert_true(y[0] == 9.0f);
    assert_int_equal(arg[0], 12);
    assert_int_equal(arg[1], 1); /* sample 1, tie: pixel 0 */
    /* window (0,1): pixels 2,3,7,8 -> 3,10,5,1 -> 10 at pixel 3 */
    assert_true(y[2] == 10.0f);
    assert_int_equal(arg[2], 6);
    assert_int_equal(arg[3], 2 * 2 + 1);
    /* window (1,0): pixels 10,11,15,16 -> 4,0,6,2 -> 6 at pixel 15 */
    assert_true(y[4] == 6.0f);
    assert_int_equal(arg[4], 30);
    /* window (1,1): pixels 12,13,17,18 -> 7,3,9,5 -> 9 at pixel 17 */
    assert_true(y[6] == 9.0f);
    assert_int_equal(arg[6], 34);
    float dy[8] = {1, 2, 3, 4, 5, 6, 7, 8}, dx[40];
    memset(dx, 0x7f, sizeof dx);
    nn_conv_pool_max_backward(dy, arg, 8, dx, 40);
    float sum = 0;
    for (int i = 0; i < 40; i++)
        sum += dx[i];
    assert_true(sum == 36.0f);
    assert_true(dx[12] == 1 && dx[1] == 2 && dx[6] == 3 && dx[5] == 4 && dx[30] == 5 &&
                dx[34] == 7);
    /* p = 1 copies */
    float c[40];
    nn_conv_pool_max(x, 1, 4, 5, 2, 1, c, NULL);
    assert_memory_equal(c, x, sizeof c);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_nn_conv_matches_reference),
        cmocka_unit_test(test_nn_conv_no_coefficients_gives_zeros),
        cmocka_unit_test(test_nn_conv_targets_same_bits),
        cmocka_unit_test(test_nn_conv_weights_written_are_used),
        cmocka_unit_test(test_nn_conv_batch_sizes_alternate),
        cmocka_unit_test(test_nn_conv_new_bad_shape),
        cmocka_unit_test(test_nn_conv_new_bad_coefficients),
        cmocka_unit_test(test_nn_conv_ref_bad_arguments),
        cmocka_unit_test(test_nn_conv_alloc_aligned),
        cmocka_unit_test(test_nn_conv_out_size),
        cmocka_unit_test(test_nn_conv_prefer_dense_at_threshold),
        cmocka_unit_test(test_nn_conv_new_out_of_memory),
        cmocka_unit_test(test_nn_conv_bias_act_relu),
        cmocka_unit_test(test_nn_conv_row_kernels_match_plain_loops),
        cmocka_unit_test(test_nn_conv_pool_max_forward_backward),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
