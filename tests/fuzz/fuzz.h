/* fuzz.h -- what the libFuzzer targets share: the entry point's prototype
 * and CHECK, which aborts (a crash libFuzzer keeps) with the condition and
 * the message of the `err` in scope. */
#ifndef TREVO_FUZZ_H
#define TREVO_FUZZ_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define CHECK(cond)                                                                                \
    do {                                                                                           \
        if (!(cond)) {                                                                             \
            fprintf(stderr, "%s:%d: check failed: %s (%s)\n", __FILE__, __LINE__, #cond, err.msg); \
            abort();                                                                               \
        }                                                                                          \
    } while (0)

#endif
