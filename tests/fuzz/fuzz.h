/* fuzz.h -- what the libFuzzer targets share: the entry point's prototype
 * and CHECK, which aborts (a crash libFuzzer keeps) with the condition and
 * the message of the `err` in scope. */
#ifndef TREVO_FUZZ_H
#define TREVO_FUZZ_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "genome.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define CHECK(cond)                                                                                \
    do {                                                                                           \
        if (!(cond)) {                                                                             \
            fprintf(stderr, "%s:%d: check failed: %s (%s)\n", __FILE__, __LINE__, #cond, err.msg); \
            abort();                                                                               \
        }                                                                                          \
    } while (0)

/* An exact-size copy of data (NULL when out of memory), so that ASan sees
 * any read past the input. */
static inline uint8_t *fuzz_copy(const uint8_t *data, size_t size)
{
    uint8_t *p = malloc(size ? size : 1);
    if (p && size)
        memcpy(p, data, size);
    return p;
}

/* 1 if p[0..n) is NULL or lies inside data[0..size). */
static inline int fuzz_inside(const uint8_t *p, size_t n, const uint8_t *data, size_t size)
{
    return !p || (p >= data && n <= size && p - data <= (ptrdiff_t)(size - n));
}

/* Decodes a genome carried in a message as its receiver would (small limits):
 * 0 or an error with a message. */
static inline void fuzz_decode_genome(const uint8_t *p, size_t n)
{
    static const struct genome_limits small = {64, 256};
    struct tv_error err = {0};
    struct genome g;
    genome_init(&g);
    if (p) {
        int rc = genome_decode(&g, p, n, &small, &err);
        CHECK(rc == 0 || (err.code == rc && err.msg[0]));
    }
    genome_release(&g);
}

#endif
