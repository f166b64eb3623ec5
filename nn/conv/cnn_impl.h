/*
 * cnn_impl.h -- private to the CNN trainer of nn/conv/ (cnn.c, cnn_sparse.c,
 * cnn_genome.c): a trainer's layers and its parts. Every map is in conv.h's
 * feature-major layout [ch][h][w][batch].
 */
#ifndef TREVO_NN_CNN_IMPL_H
#define TREVO_NN_CNN_IMPL_H

#include <stddef.h>
#include <stdint.h>

#include "cnn.h"
#include "train_impl.h"

/* One convolution layer: its sparse convolution, per-coefficient gradient
 * and optimizer state, bias, and the maps of the last batch. */
struct cnn_layer {
    struct nn_conv_shape s;
    size_t oh, ow; /* conv output */
    size_t ph, pw; /* pooled output */
    int act;
    size_t pool, max_batch;
    size_t n_dense;             /* out_ch * in_ch * k_h * k_w: the most coefficients */
    struct nn_conv *conv;       /* the sparse layer (its weights are the parameters) */
    struct nn_conv_coef *coef;  /* [n_dense] keys of the current list (w stale) */
    float *dw, *m, *v;          /* [n_dense] per coefficient, list order */
    float *bias, *bg, *bm, *bv; /* [out_ch] */
    float *x;                   /* input map [in_ch][in_h][in_w][max_batch] (layer 0 only) */
    float *z;                   /* act(conv + bias) [out_ch][oh][ow][max_batch] */
    float *p;                   /* pooled [out_ch][ph][pw][max_batch] */
    uint32_t *arg;              /* [out_ch][ph][pw][max_batch] */
    float *gz, *gp;             /* dL/d of z and p */
};

/* The source genome of a trainer made by nn_cnn_from_genome (cnn_genome.c). */
struct cnn_src;

/* A trainer: the layers in front of the head (a plain trainer, train.h). */
struct nn_cnn {
    struct nn_train_opts o;
    struct cnn_src *src; /* the genome it was made from (nn_cnn_from_genome), or NULL */
    /* frees src, set with it: a pointer, so that cnn.c (nn_cnn_free) does
     * not call cnn_genome.c, which calls it (nn_cnn_new) */
    void (*src_free)(struct cnn_src *s);
    size_t n_layers, n_in, n_head_in, max_batch;
    size_t last_batch; /* of the last grad/step, 0 before */
    struct cnn_layer *l;
    struct nn_trainer *head;
    float *hx; /* [max_batch][n_head_in] the head's input rows */
};

#endif
