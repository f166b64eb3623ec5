/*
 * kernel.h -- private to the kernel files of nn/ (step1.c, stepb.c): vector
 * types, index reads and the macro that builds one function per SIMD target.
 *
 * Every kernel is an always-inlined function compiled once per target
 * (NN_KERNEL): the same C code, so the same order of every sum and the same
 * bits on every target (no fused multiply-add: -ffp-contract=off). A state
 * picks the best target the CPU has (nn_state_new), or the one
 * nn_state_set_target() names.
 */
#ifndef TREVO_NN_KERNEL_H
#define TREVO_NN_KERNEL_H

#include <stdint.h>
#include <string.h>

#include "nn_impl.h"

#define NN_INLINE static inline __attribute__((always_inline))

/* The helpers that pass vectors by value are always inlined, so the warning
 * that their ABI differs without AVX does not apply. */
#pragma GCC diagnostic ignored "-Wpsabi"

/* NN_KERNEL(name, body): static functions name_<target>(p, s, op) that call
 * body(p, s, op), one per enum nn_target, and the array
 *   nn_op_fn *const name[NN_TARGET_COUNT]
 * that the op table (ops.c) points to. Off x86-64 every entry is the plain
 * build. */
#define NN_KERNEL_FN(attr, name, body)                                                             \
    attr static void name(const struct nn_plan *p, struct nn_state *s, const struct nn_op *op)     \
    {                                                                                              \
        body(p, s, op);                                                                            \
    }
#if defined(__x86_64__) && defined(__GNUC__)
#define NN_KERNEL(name, body)                                                                      \
    NN_KERNEL_FN(, name##_default, body)                                                           \
    NN_KERNEL_FN(__attribute__((target("avx2"))), name##_avx2, body)                               \
    NN_KERNEL_FN(__attribute__((target("avx512f"))), name##_avx512f, body)                         \
    nn_op_fn *const name[NN_TARGET_COUNT] = {name##_default, name##_avx2, name##_avx512f};
#else
#define NN_KERNEL(name, body)                                                                      \
    NN_KERNEL_FN(, name##_default, body)                                                           \
    nn_op_fn *const name[NN_TARGET_COUNT] = {name##_default, name##_default, name##_default};
#endif

/* Prefetch distances in a tiled plan (one too large for the caches), in
 * entries of the rows' weights, the rows' 16-bit indices and the tiles; 0:
 * none. The hardware prefetchers stop at each 4 KB page; these gain a few
 * per cent at 10^7 connections. */
#ifndef NN_PF_W
#define NN_PF_W 512
#define NN_PF_I 1024
#define NN_PF_T 256
#endif

/* 16 lanes of a batched row; the same, for rows that may be only
 * float-aligned (a caller's inputs). */
typedef float v16f __attribute__((vector_size(64), may_alias));
typedef int32_t v16i __attribute__((vector_size(64), may_alias));
typedef float v16fu __attribute__((vector_size(64), aligned(4), may_alias));
typedef int32_t v16iu __attribute__((vector_size(64), aligned(4), may_alias));

/* Entry k of an index array of `bits` (16 or 32) bits. */
NN_INLINE uint32_t nn_idx(const void *base, int bits, size_t k)
{
    return bits == 16 ? (uint32_t)((const uint16_t *)base)[k] : ((const uint32_t *)base)[k];
}

/* 1 if the layers of op measure their density this step (the first
 * NN_DENSITY_STEPS steps after a reset). */
NN_INLINE int nn_measuring(const struct nn_state *s)
{
    return s->steps < NN_DENSITY_STEPS;
}

#endif
