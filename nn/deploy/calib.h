/*
 * calib.h -- private to nn/deploy/ (observe.c, calib.c, quant.c): a
 * calibration's state. The observing op (observe.c) fills it while the float
 * engine steps the calibration's plan (calib.c); quantization (quant.c)
 * reads the ranges it kept.
 */
#ifndef TREVO_NN_DEPLOY_CALIB_H
#define TREVO_NN_DEPLOY_CALIB_H

#include "quant_impl.h"

/* The range of one kind of value (activations or pre-activations) of one
 * layer: min, max, and a deterministic reservoir sample for percentiles. */
struct calib_stat {
    float lo, hi;
    uint64_t seen;
    float *samp; /* [cap] NULL when no percentile was asked */
    size_t n_samp, cap;
};

/* The calibration plan's header comes first, so that the observing op can
 * find the calibration from the plan it is given. */
struct nn_calib {
    struct nn_plan plan;           /* a copy of fp's header with one more op */
    struct nn_plan *fp;            /* the float plan (owned) */
    struct nn_op *ops;             /* [fp->n_ops + 1] */
    struct calib_stat *post, *pre; /* [n_layers] */
    double percentile;
    uint64_t observed;
};

#endif
