/* fuzz_check.h -- the fuzz targets' one assertion: CHECK(cond) prints the
 * file, line, condition and the message of the `struct tv_error err` in scope,
 * then aborts, which libFuzzer reports as a crash with the input that made it.
 * Every target includes it; none defines its own. */
#ifndef TREVO_FUZZ_CHECK_H
#define TREVO_FUZZ_CHECK_H

#include <stdio.h>
#include <stdlib.h>

#define CHECK(cond)                                                                                \
    do {                                                                                           \
        if (!(cond)) {                                                                             \
            fprintf(stderr, "%s:%d: check failed: %s (%s)\n", __FILE__, __LINE__, #cond, err.msg); \
            abort();                                                                               \
        }                                                                                          \
    } while (0)

#endif
