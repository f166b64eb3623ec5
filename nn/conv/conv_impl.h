/*
 * conv_impl.h -- private to nn/conv*.c: the checks shared by the sparse
 * layer, the reference and the dense layer, the coefficients' order (the
 * plan sorts by it), and the macro that builds a convolution kernel once
 * per SIMD target (as kernel.h does for the step kernels: the same C code,
 * so the same bits on every target).
 */
#ifndef TREVO_NN_CONV_IMPL_H
#define TREVO_NN_CONV_IMPL_H

#include "conv.h"
#include "kernel.h"

/* 0, or TV_EINVAL naming (after "fn: ") what of s does not make a map. */
int nn_conv_check_shape(const struct nn_conv_shape *s, const char *fn, struct tv_error *err);
/* 0, or TV_EINVAL naming the first coefficient of c[0..n) that is out of
 * range of s, out of order (nn_conv_coef_cmp), a duplicate, or not finite. */
int nn_conv_check_coefs(const struct nn_conv_shape *s, const struct nn_conv_coef *c, size_t n,
                        const char *fn, struct tv_error *err);
/* 0, or TV_EINVAL when a layer's max_batch is not in 1..65536. */
int nn_conv_check_batch(size_t max_batch, const char *fn, struct tv_error *err);
/* qsort's order of two struct nn_conv_coef, the order a layer's list keeps:
 * by (out, in, ky, kx). */
int nn_conv_coef_cmp(const void *a, const void *b);

/* CONV_TARGETS(name, body, T): static functions name_<target>(const T *j)
 * that call the always-inlined body(j), one per enum nn_target, and the
 * array name[NN_TARGET_COUNT] of them. */
#if defined(__x86_64__) && defined(__GNUC__)
#define CONV_TARGETS(name, body, T)                                                                \
    static void name##_default(const T *j)                                                         \
    {                                                                                              \
        body(j);                                                                                   \
    }                                                                                              \
    __attribute__((target("avx2"))) static void name##_avx2(const T *j)                            \
    {                                                                                              \
        body(j);                                                                                   \
    }                                                                                              \
    __attribute__((target("avx512f"))) static void name##_avx512f(const T *j)                      \
    {                                                                                              \
        body(j);                                                                                   \
    }                                                                                              \
    static void (*const name[NN_TARGET_COUNT])(const T *) = {name##_default, name##_avx2,          \
                                                             name##_avx512f};
#else
#define CONV_TARGETS(name, body, T)                                                                \
    static void name##_default(const T *j)                                                         \
    {                                                                                              \
        body(j);                                                                                   \
    }                                                                                              \
    static void (*const name[NN_TARGET_COUNT])(const T *) = {name##_default, name##_default,       \
                                                             name##_default};
#endif

/* Floats of one register block of the kernels: 4 vectors of 16. */
#define CONV_J 64

#endif
