/*
 * quant_arith.h -- the integer arithmetic of every int8 path, the one home of
 * its formulas: how an input is quantized, how a sum is requantized into a
 * table index, how an output is dequantized. The engine compiles it (through
 * quant_impl.h: quant.c, int8_*.c); the C export (export.c) writes its text
 * between the two marks below into every int8 file it makes, each name that
 * starts with nn_ given the file's prefix instead. The exported code is thus
 * the engine's code, line for line, and cannot drift from it.
 *
 * Why the build embeds this file's text, rather than the other ways to keep
 * one copy: an X-macro list, as the activations have (nn/act.def), would make
 * these functions of several statements into one-line macro arguments, harder
 * to read and written out as single lines; a generated copy committed beside
 * this file with a test that regenerates and compares it (SQLite's way) is a
 * second copy that only a test keeps in step. Here a Makefile rule turns this
 * file into $(BUILD)/gen/quant_arith.inc, one C string per line, which
 * export.c includes: the build itself reads the one copy. (Every build of
 * export.c needs that rule and -I$(BUILD)/gen: the Makefile gives them to the
 * normal, PIC and fuzz objects.)
 *
 * Rules for the text between the marks: C99 that needs nothing but
 * <stdint.h> (an export is freestanding: no libm, no libc); every function
 * static inline; a name of ours starts with nn_ (and only ours do).
 */
#ifndef TREVO_NN_QUANT_ARITH_H
#define TREVO_NN_QUANT_ARITH_H

#include <stdint.h>

/* ---- export: from here ---- */
/* The integer arithmetic of trevo's int8 engine (nn/deploy/quant_arith.h).
 * Values are kept as u = q + 128 (uint8_t). */

/* Rounds half away from zero, for |x| < 2^23 (callers clamp first). */
static inline int32_t nn_q_round(float x)
{
    int32_t t = (int32_t)x; /* toward zero */
    float f = x - (float)t; /* exact */
    if (f >= 0.5f)
        t++;
    else if (f <= -0.5f)
        t--;
    return t;
}

/* u = clamp(round(x / scale) + zp, -128, 127) + 128; NaN gives zp. */
static inline uint8_t nn_q_input(float x, float scale, int32_t zp)
{
    float t = x / scale;
    if (!(t == t))
        t = 0.0f;
    if (t > 1000.0f)
        t = 1000.0f;
    if (t < -1000.0f)
        t = -1000.0f;
    int32_t q = nn_q_round(t) + zp;
    q = q < -128 ? -128 : q > 127 ? 127 : q;
    return (uint8_t)(q + 128);
}

/* floor(x / 2^sh), without relying on the sign of >> on negative numbers. */
static inline int64_t nn_q_floor_shift(int64_t x, unsigned sh)
{
    return x >= 0 ? x >> sh : ~((~x) >> sh);
}

/* The requantized pre-activation as a table index u in [0, 255]:
 * clamp(floor((acc * mult + 2^(sh-1)) / 2^sh) + pzp, -128, 127) + 128. */
static inline uint32_t nn_q_requant(int32_t acc, int32_t mult, unsigned sh, int32_t pzp)
{
    int64_t t = (int64_t)acc * mult + (sh ? (int64_t)1 << (sh - 1) : 0);
    int64_t r = nn_q_floor_shift(t, sh) + pzp;
    r = r < -128 ? -128 : r > 127 ? 127 : r;
    return (uint32_t)(r + 128);
}

/* The value of u in a layer of scale `scale` and zero point zp:
 * (float)(q - zp) * scale. */
static inline float nn_q_output(uint8_t u, float scale, int32_t zp)
{
    return (float)((int32_t)u - 128 - zp) * scale;
}
/* ---- export: to here ---- */

#endif
