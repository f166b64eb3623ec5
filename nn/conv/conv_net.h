/*
 * conv_net.h -- private to nn/conv/ (conv_plan.c, conv_op.c): the
 * convolutional part of a plan (struct nn_conv_net: its channels and its
 * layers of filters) and of a state (struct nn_conv_state: the layers with
 * their scratch). conv_plan.c builds the net while compiling; conv_op.c runs
 * it as the NN_OP_CONV op and makes and frees the states' part.
 */
#ifndef TREVO_NN_CONV_NET_H
#define TREVO_NN_CONV_NET_H

#include "compile.h"
#include "conv.h"

/* A hidden channel of the plan. */
struct conv_chan {
    uint32_t first;    /* id of pooled pixel (0, 0) */
    uint32_t j;        /* its dense index (after the order phase) */
    uint32_t layer;    /* the plan layer of its pixels */
    float depth;       /* of the genome */
    size_t h, w, pool; /* map before pooling */
    float bias;        /* one per channel */
    int act;           /* enum genome_act */
    size_t acc;        /* offset of its map in the state's acc, in pixels */
};

/* One layer of nn/conv/conv.h. */
struct conv_group {
    struct nn_conv_shape shape;
    float depth; /* of its targets */
    uint32_t layer;
    uint32_t *in_first;         /* [in_ch] id of each source's pixel (0, 0) */
    uint32_t *in_j;             /* [in_ch] its dense index */
    uint32_t *out;              /* [out_ch] its targets, indices in chans */
    struct nn_conv_coef *coefs; /* [n_coefs] sorted by (out, in, ky, kx) */
    size_t n_coefs;
    int dense;  /* 1: run im2col + GEMM */
    int direct; /* 1: the sources are consecutive rows of the state: no copy */
};

struct nn_conv_net {
    size_t n_chans, n_groups, n_layers;
    int keep_pre;                /* 1: states keep the pre-activation maps (calibration) */
    struct conv_chan *chans;     /* [n_chans] */
    struct conv_group *groups;   /* [n_groups] in order of layer */
    uint8_t *layer_has;          /* [n_layers] 1: an NN_OP_CONV runs after this layer's rows */
    size_t acc_px, max_x, max_y; /* pixels of the state's scratch */
};

struct nn_conv_state {
    struct nn_conv **sparse;      /* [n_groups] */
    struct nn_conv_dense **dense; /* [n_groups] */
    float *x, *y, *acc;           /* [max_x | max_y | acc_px][stride] */
    float *pre;                   /* [acc_px][stride] when net->keep_pre, else NULL */
};

#endif
