/*
 * blas.h -- private to cli/: OpenBLAS loaded at run time, for the dense
 * baseline of `trevo net bench` (blas.c says why not linked).
 */
#ifndef TREVO_MASTER_BLAS_H
#define TREVO_MASTER_BLAS_H

#include <cblas.h>

#include "genome.h"

/* The functions used, set by cli_blas_load(). */
struct cli_blas {
    void (*sgemv)(enum CBLAS_ORDER, enum CBLAS_TRANSPOSE, blasint, blasint, float, const float *,
                  blasint, const float *, blasint, float, float *, blasint);
    void (*sgemm)(enum CBLAS_ORDER, enum CBLAS_TRANSPOSE, enum CBLAS_TRANSPOSE, blasint, blasint,
                  blasint, float, const float *, blasint, const float *, blasint, float, float *,
                  blasint);
    void (*set_num_threads)(int);
    int (*get_num_threads)(void);
    char *(*get_corename)(void);
};
extern struct cli_blas cli_blas;

/* Sets OPENBLAS_CORETYPE from the CPU's flags (unless the user set it; then
 * TREVO_CORETYPE_FROM is left unset) and OPENBLAS_NUM_THREADS to 1 (unless
 * set), before the library is loaded. */
void cli_blas_coretype_choose(void);

/* Loads OpenBLAS into cli_blas. TV_ENOTFOUND if it or a function is
 * missing. */
int cli_blas_load(struct tv_error *err);

/* Loads OpenBLAS for a bench, one thread, and prints the core it uses.
 * 0, or the code of cli_blas_load with its message in err. */
int cli_blas_open(struct tv_error *err);

#endif
